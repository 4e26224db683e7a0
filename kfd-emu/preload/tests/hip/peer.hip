// Two GPUs: peer capability both ways, enabling (and refusing to enable twice) peer access,
// memory on each GPU, and copies between host and each GPU with the current device switched.
// GPU-to-GPU copies (hipMemcpyPeer, and hipMemcpy across devices), and with `kernel`, a kernel
// on GPU 1 reading GPU 0's memory through peer access.
// Usage: peer [kernel]
#include "hip_check.h"

// Runs on GPU 1 and reads `src` in GPU 0's memory.
__global__ void add_peer(unsigned char* dst, const unsigned char* src, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] + 1;
}

int main(int argc, char** argv) {
    unbuffered();
    int kernel = argc > 1 && strcmp(argv[1], "kernel") == 0;
    int count = 0;
    CHECK(hipGetDeviceCount(&count));
    EXPECT(count == 2, "%d devices, expected 2", count);
    int can01 = 0, can10 = 0, can00 = 1;
    CHECK(hipDeviceCanAccessPeer(&can01, 0, 1));
    CHECK(hipDeviceCanAccessPeer(&can10, 1, 0));
    CHECK(hipDeviceCanAccessPeer(&can00, 0, 0));
    EXPECT(can01 == 1 && can10 == 1, "peer access 0->1 %d, 1->0 %d", can01, can10);
    EXPECT(can00 == 0, "a device is its own peer");
    ok("can access peer");

    CHECK(hipSetDevice(0));
    CHECK(hipDeviceEnablePeerAccess(1, 0));
    EXPECT(hipDeviceEnablePeerAccess(1, 0) == hipErrorPeerAccessAlreadyEnabled,
           "enabling peer access twice");
    (void)hipGetLastError();
    CHECK(hipSetDevice(1));
    CHECK(hipDeviceEnablePeerAccess(0, 0));
    ok("peer access enabled");

    const size_t n = (2 << 20) + 5;
    unsigned char *d0, *d1, *h;
    CHECK(hipSetDevice(0));
    CHECK(hipMalloc(&d0, n));
    CHECK(hipSetDevice(1));
    CHECK(hipMalloc(&d1, n));
    CHECK(hipHostMalloc((void**)&h, n, hipHostMallocPortable));
    hipPointerAttribute_t a;
    CHECK(hipPointerGetAttributes(&a, d0));
    EXPECT(a.device == 0, "d0 is on device %d", a.device);
    CHECK(hipPointerGetAttributes(&a, d1));
    EXPECT(a.device == 1, "d1 is on device %d", a.device);

    // Each GPU's memory from the host, with the other GPU current.
    fill_pattern(h, n, 1);
    CHECK(hipSetDevice(1));
    CHECK(hipMemcpy(d0, h, n, hipMemcpyHostToDevice));
    CHECK(hipSetDevice(0));
    fill_pattern(h, n, 2);
    CHECK(hipMemcpy(d1, h, n, hipMemcpyHostToDevice));
    memset(h, 0, n);
    CHECK(hipMemcpy(h, d0, n, hipMemcpyDeviceToHost));
    EXPECT_PATTERN(h, n, 1, "GPU 0 memory");
    CHECK(hipSetDevice(1));
    memset(h, 0, n);
    CHECK(hipMemcpy(h, d1, n, hipMemcpyDeviceToHost));
    EXPECT_PATTERN(h, n, 2, "GPU 1 memory");
    ok("host copies on both GPUs");

    {
        CHECK(hipMemcpyPeer(d1, 1, d0, 0, n));
        memset(h, 0, n);
        CHECK(hipMemcpy(h, d1, n, hipMemcpyDeviceToHost));
        EXPECT_PATTERN(h, n, 1, "hipMemcpyPeer 0->1");
        fill_pattern(h, n, 3);
        CHECK(hipMemcpy(d1, h, n, hipMemcpyHostToDevice));
        CHECK(hipSetDevice(0));
        CHECK(hipMemcpy(d0, d1, n, hipMemcpyDeviceToDevice));
        memset(h, 0, n);
        CHECK(hipMemcpy(h, d0, n, hipMemcpyDeviceToHost));
        EXPECT_PATTERN(h, n, 3, "hipMemcpy 1->0");
        hipStream_t s;
        CHECK(hipStreamCreate(&s));
        CHECK(hipMemcpyPeerAsync(d1 + 1, 1, d0 + 2, 0, n - 2, s));
        CHECK(hipStreamSynchronize(s));
        CHECK(hipStreamDestroy(s));
        memset(h, 0, n);
        CHECK(hipMemcpy(h, d1 + 1, n - 2, hipMemcpyDeviceToHost));
        for (size_t i = 0; i < n - 2; i++)
            EXPECT(h[i] == pattern(i + 2, 3), "hipMemcpyPeerAsync byte %zu", i);
        ok("peer copies");
    }

    if (kernel) {
        // d0 holds pattern 3 shifted by 2 bytes' worth of copies above; rewrite it plainly.
        fill_pattern(h, n, 4);
        CHECK(hipMemcpy(d0, h, n, hipMemcpyHostToDevice));
        CHECK(hipSetDevice(1));
        hipLaunchKernelGGL(add_peer, dim3((n + 255) / 256), dim3(256), 0, 0, d1, d0, n);
        CHECK(hipGetLastError());
        CHECK(hipDeviceSynchronize());
        memset(h, 0, n);
        CHECK(hipMemcpy(h, d1, n, hipMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            EXPECT(h[i] == (unsigned char)(pattern(i, 4) + 1), "peer kernel byte %zu", i);
        ok("kernel reading peer memory");
    }

    CHECK(hipSetDevice(0));
    CHECK(hipDeviceDisablePeerAccess(1));
    CHECK(hipSetDevice(1));
    CHECK(hipDeviceDisablePeerAccess(0));
    ok("peer access disabled");
    CHECK(hipFree(d0));
    CHECK(hipFree(d1));
    CHECK(hipHostFree(h));
    ok("done");
    return 0;
}
