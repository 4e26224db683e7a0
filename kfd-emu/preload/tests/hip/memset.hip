// hipMemset and its 8/16/32-bit forms, synchronous and on a stream, at odd offsets and sizes
// (HIP fills device memory with its own fill kernel).
#include "hip_check.h"

int main(void) {
    unbuffered();
    const size_t n = (1 << 20) + 13;
    unsigned char* d = NULL;
    unsigned char* h = (unsigned char*)malloc(n + 64);
    EXPECT(h, "malloc");
    CHECK(hipMalloc(&d, n + 64));

    CHECK(hipMemset(d, 0x11, n + 64));
    CHECK(hipMemset(d + 3, 0xA5, n));
    CHECK(hipMemcpy(h, d, n + 64, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n + 64; i++) {
        unsigned char want = (i >= 3 && i < n + 3) ? 0xA5 : 0x11;
        EXPECT(h[i] == want, "hipMemset: byte %zu is %#x, expected %#x", i, h[i], want);
    }
    ok("hipMemset");

    CHECK(hipMemsetD8((hipDeviceptr_t)(d + 1), 0x5A, 1001));
    CHECK(hipMemcpy(h, d, 1100, hipMemcpyDeviceToHost));
    for (size_t i = 1; i < 1002; i++) EXPECT(h[i] == 0x5A, "hipMemsetD8 byte %zu: %#x", i, h[i]);
    EXPECT(h[0] == 0x11 && h[1002] == 0xA5, "hipMemsetD8 wrote outside");
    ok("hipMemsetD8");

    unsigned short* d16 = (unsigned short*)(d + 2);
    CHECK(hipMemsetD16((hipDeviceptr_t)d16, 0xBEEF, 777));
    unsigned short h16[800];
    CHECK(hipMemcpy(h16, d16, sizeof h16, hipMemcpyDeviceToHost));
    for (int i = 0; i < 777; i++) EXPECT(h16[i] == 0xBEEF, "hipMemsetD16 [%d]: %#x", i, h16[i]);
    EXPECT(h16[777] != 0xBEEF, "hipMemsetD16 wrote past the end");
    ok("hipMemsetD16");

    unsigned* d32 = (unsigned*)(d + 4096);
    CHECK(hipMemsetD32((hipDeviceptr_t)d32, 0xDEADBEEF, 65537));
    unsigned* h32 = (unsigned*)malloc(65538 * 4);
    EXPECT(h32, "malloc");
    CHECK(hipMemcpy(h32, d32, 65538 * 4, hipMemcpyDeviceToHost));
    for (int i = 0; i < 65537; i++)
        EXPECT(h32[i] == 0xDEADBEEF, "hipMemsetD32 [%d]: %#x", i, h32[i]);
    EXPECT(h32[65537] != 0xDEADBEEF, "hipMemsetD32 wrote past the end");
    ok("hipMemsetD32");

    hipStream_t s;
    CHECK(hipStreamCreate(&s));
    CHECK(hipMemsetAsync(d, 0x3C, n, s));
    CHECK(hipMemcpyAsync(h, d, n, hipMemcpyDeviceToHost, s));
    CHECK(hipStreamSynchronize(s));
    for (size_t i = 0; i < n; i++) EXPECT(h[i] == 0x3C, "hipMemsetAsync byte %zu: %#x", i, h[i]);
    ok("hipMemsetAsync");

    CHECK(hipStreamDestroy(s));
    CHECK(hipFree(d));
    free(h);
    free(h32);
    ok("done");
    return 0;
}
