// Device-to-device copies on one GPU (HIP copies VRAM to VRAM with its own blit kernels):
// synchronous, on a stream, at odd offsets and sizes, and a 2D copy.
#include "hip_check.h"

int main(void) {
    unbuffered();
    const size_t sizes[] = {1, 4095, 65536 + 3, 8 << 20};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *x = NULL, *y = NULL;
        unsigned char* h = (unsigned char*)malloc(n + 16);
        EXPECT(h, "malloc");
        CHECK(hipMalloc(&x, n + 16));
        CHECK(hipMalloc(&y, n + 16));
        fill_pattern(h, n, i);
        CHECK(hipMemcpy(x + 1, h, n, hipMemcpyHostToDevice));
        CHECK(hipMemcpy(y + 7, x + 1, n, hipMemcpyDeviceToDevice));
        memset(h, 0, n);
        CHECK(hipMemcpy(h, y + 7, n, hipMemcpyDeviceToHost));
        EXPECT_PATTERN(h, n, i, "D2D");
        CHECK(hipFree(x));
        CHECK(hipFree(y));
        free(h);
    }
    ok("D2D");

    hipStream_t s;
    CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    const size_t n = 1 << 20;
    unsigned char *x = NULL, *y = NULL, *h = NULL;
    CHECK(hipMalloc(&x, n));
    CHECK(hipMalloc(&y, n));
    CHECK(hipHostMalloc((void**)&h, n, hipHostMallocDefault));
    fill_pattern(h, n, 7);
    CHECK(hipMemcpyAsync(x, h, n, hipMemcpyHostToDevice, s));
    CHECK(hipMemcpyAsync(y, x, n, hipMemcpyDeviceToDevice, s));
    CHECK(hipStreamSynchronize(s));
    memset(h, 0, n);
    CHECK(hipMemcpyAsync(h, y, n, hipMemcpyDeviceToHost, s));
    CHECK(hipStreamSynchronize(s));
    EXPECT_PATTERN(h, n, 7, "D2D async");
    ok("D2D async");

    // 2D: a 100 x 37 byte window of a pitched allocation into a packed one.
    size_t pitch = 0;
    unsigned char* p2 = NULL;
    CHECK(hipMallocPitch((void**)&p2, &pitch, 100, 37));
    EXPECT(pitch >= 100, "pitch %zu", pitch);
    fill_pattern(h, 100 * 37, 8);
    CHECK(hipMemcpy2D(p2, pitch, h, 100, 100, 37, hipMemcpyHostToDevice));
    CHECK(hipMemcpy2D(y, 100, p2, pitch, 100, 37, hipMemcpyDeviceToDevice));
    memset(h, 0, 100 * 37);
    CHECK(hipMemcpy(h, y, 100 * 37, hipMemcpyDeviceToHost));
    EXPECT_PATTERN(h, 100 * 37, 8, "2D copy");
    ok("2D copy");

    CHECK(hipFree(p2));
    CHECK(hipFree(x));
    CHECK(hipFree(y));
    CHECK(hipHostFree(h));
    CHECK(hipStreamDestroy(s));
    ok("done");
    return 0;
}
