// Copies that need no kernel of HIP's own: host to device and back from pageable, pinned
// (hipHostMalloc) and registered (hipHostRegister) memory, synchronous and on a stream, at odd
// sizes and offsets, and host to host. Every byte is checked.
#include "hip_check.h"

static const size_t SIZES[] = {1, 3, 4096, 4099, (1 << 20) + 7, 16 << 20};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])

// Host -> device -> host through `src` and `dst` host buffers of at least n + 64 bytes, at byte
// offsets that are not multiples of 4.
static void round_trip(const char* what, unsigned char* src, unsigned char* dst, size_t n,
                       unsigned seed, hipStream_t stream) {
    unsigned char* dev = NULL;
    CHECK(hipMalloc(&dev, n + 64));
    fill_pattern(src + 5, n, seed);
    memset(dst, 0xEE, n + 64);
    if (stream) {
        CHECK(hipMemcpyAsync(dev + 3, src + 5, n, hipMemcpyHostToDevice, stream));
        CHECK(hipMemcpyAsync(dst + 1, dev + 3, n, hipMemcpyDeviceToHost, stream));
        CHECK(hipStreamSynchronize(stream));
    } else {
        CHECK(hipMemcpy(dev + 3, src + 5, n, hipMemcpyHostToDevice));
        CHECK(hipMemcpy(dst + 1, dev + 3, n, hipMemcpyDeviceToHost));
    }
    EXPECT_PATTERN(dst + 1, n, seed, what);
    EXPECT(dst[0] == 0xEE && dst[n + 1] == 0xEE, "%s: a copy of %zu bytes wrote outside", what,
           n);
    CHECK(hipFree(dev));
}

int main(void) {
    unbuffered();
    const size_t max = SIZES[NSIZES - 1] + 64;
    unsigned char* a = (unsigned char*)malloc(max);
    unsigned char* b = (unsigned char*)malloc(max);
    EXPECT(a && b, "malloc");
    for (unsigned i = 0; i < NSIZES; i++) round_trip("pageable", a, b, SIZES[i], i, NULL);
    ok("pageable H2D/D2H");

    unsigned char *pa = NULL, *pb = NULL;
    CHECK(hipHostMalloc((void**)&pa, max, hipHostMallocDefault));
    CHECK(hipHostMalloc((void**)&pb, max, hipHostMallocDefault));
    hipPointerAttribute_t attr;
    CHECK(hipPointerGetAttributes(&attr, pa));
    EXPECT(attr.memoryType == hipMemoryTypeHost, "hipHostMalloc memory type %d",
           (int)attr.memoryType);
    void* dev_view = NULL;
    CHECK(hipHostGetDevicePointer(&dev_view, pa, 0));
    EXPECT(dev_view != NULL, "no device pointer for pinned memory");
    for (unsigned i = 0; i < NSIZES; i++) round_trip("pinned", pa, pb, SIZES[i], 10 + i, NULL);
    ok("pinned H2D/D2H");

    hipStream_t s;
    CHECK(hipStreamCreate(&s));
    for (unsigned i = 0; i < NSIZES; i++) round_trip("pinned async", pa, pb, SIZES[i], 20 + i, s);
    ok("pinned async H2D/D2H");

    CHECK(hipHostRegister(a, max, hipHostRegisterDefault));
    CHECK(hipHostRegister(b, max, hipHostRegisterDefault));
    for (unsigned i = 0; i < NSIZES; i++)
        round_trip("registered", a, b, SIZES[i], 30 + i, i % 2 ? s : NULL);
    CHECK(hipHostUnregister(a));
    CHECK(hipHostUnregister(b));
    ok("registered H2D/D2H");

    // Host to host: pageable to pinned and pinned to pageable.
    fill_pattern(a, max, 40);
    CHECK(hipMemcpy(pb, a, max, hipMemcpyHostToHost));
    EXPECT_PATTERN(pb, max, 40, "H2H pageable->pinned");
    fill_pattern(pa, max, 41);
    CHECK(hipMemcpy(b, pa, max, hipMemcpyHostToHost));
    EXPECT_PATTERN(b, max, 41, "H2H pinned->pageable");
    fill_pattern(a, 1000, 42);
    CHECK(hipMemcpyAsync(b, a, 1000, hipMemcpyHostToHost, s));
    CHECK(hipStreamSynchronize(s));
    EXPECT_PATTERN(b, 1000, 42, "H2H async");
    ok("H2H");

    // hipMemcpyDefault infers the direction from the pointers (unified addressing).
    unsigned char* dev = NULL;
    CHECK(hipMalloc(&dev, 8192));
    fill_pattern(pa, 8192, 43);
    CHECK(hipMemcpy(dev, pa, 8192, hipMemcpyDefault));
    memset(pb, 0, 8192);
    CHECK(hipMemcpy(pb, dev, 8192, hipMemcpyDefault));
    EXPECT_PATTERN(pb, 8192, 43, "hipMemcpyDefault");
    CHECK(hipFree(dev));
    ok("hipMemcpyDefault");

    CHECK(hipStreamDestroy(s));
    CHECK(hipHostFree(pa));
    CHECK(hipHostFree(pb));
    free(a);
    free(b);
    ok("done");
    return 0;
}
