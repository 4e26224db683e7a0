// HIP's lane-level built-ins where the hardware's exact rules show: __syncthreads_and in a
// work-group that is not a multiple of the wave size (its DPP reduction must not read the
// disabled lanes), and __clzll of 0 (a saturating add with the clamp bit).
#include "hip_check.h"

__global__ void lane_ops(int* out, const unsigned long long* z) {
    out[threadIdx.x] = __syncthreads_and(1) + 2 * __syncthreads_or(threadIdx.x == 7);
    if (threadIdx.x == 0) out[1000] = __clzll(z[0]);
    if (threadIdx.x == 1) out[1001] = __clzll(z[1]);
}

int main(void) {
    unbuffered();
    int* out = NULL;
    unsigned long long* z = NULL;
    CHECK(hipMalloc((void**)&out, 1024 * sizeof(int)));
    CHECK(hipMalloc((void**)&z, 2 * sizeof(unsigned long long)));
    unsigned long long hz[2] = {0, 1ull << 40};
    CHECK(hipMemcpy(z, hz, sizeof(hz), hipMemcpyHostToDevice));
    CHECK(hipMemset(out, 0xff, 1024 * sizeof(int)));
    hipLaunchKernelGGL(lane_ops, dim3(1), dim3(100), 0, 0, out, z);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    int h[1002];
    CHECK(hipMemcpy(h, out, sizeof(h), hipMemcpyDeviceToHost));
    for (int i = 0; i < 100; i++)
        EXPECT(h[i] == 3, "work-item %d: __syncthreads_and/or gave %d, expected 1 + 2", i, h[i]);
    ok("__syncthreads_and and _or in a partial wave");
    EXPECT(h[1000] == 64, "__clzll(0) = %d", h[1000]);
    EXPECT(h[1001] == 23, "__clzll(1 << 40) = %d", h[1001]);
    ok("__clzll");
    CHECK(hipFree(out));
    CHECK(hipFree(z));
    ok("done");
    return 0;
}
