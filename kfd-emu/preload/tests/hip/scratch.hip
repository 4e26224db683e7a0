// A kernel whose per-thread array is indexed at run time, so it lives in private (scratch)
// memory: the runtime must give the dispatch a scratch area.
#include "hip_check.h"

__global__ void private_array(const int* idx, int* out, int n) {
    volatile int local[512]; // volatile and dynamically indexed: kept in scratch
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < 512; i++) local[i] = i * t;
    if (t < n) out[t] = local[idx[t] & 511] + local[(idx[t] * 7) & 511];
}

int main(void) {
    unbuffered();
    const int n = 4096;
    int *idx, *out;
    int* h = (int*)malloc(n * sizeof(int));
    int* r = (int*)malloc(n * sizeof(int));
    EXPECT(h && r, "malloc");
    for (int i = 0; i < n; i++) h[i] = (i * 37) ^ (i >> 3);
    CHECK(hipMalloc(&idx, n * sizeof(int)));
    CHECK(hipMalloc(&out, n * sizeof(int)));
    CHECK(hipMemcpy(idx, h, n * sizeof(int), hipMemcpyHostToDevice));
    hipFuncAttributes attr;
    CHECK(hipFuncGetAttributes(&attr, (const void*)private_array));
    printf("private segment: %zu bytes per thread\n", attr.localSizeBytes);
    EXPECT(attr.localSizeBytes >= 2048, "the kernel does not use scratch (%zu bytes)",
           attr.localSizeBytes);
    private_array<<<n / 64, 64>>>(idx, out, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(r, out, n * sizeof(int), hipMemcpyDeviceToHost));
    for (int t = 0; t < n; t++) {
        int want = (h[t] & 511) * t + ((h[t] * 7) & 511) * t;
        EXPECT(r[t] == want, "out[%d] = %d, expected %d", t, r[t], want);
    }
    ok("scratch");
    CHECK(hipFree(idx));
    CHECK(hipFree(out));
    free(h);
    free(r);
    ok("done");
    return 0;
}
