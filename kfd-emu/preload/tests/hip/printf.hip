// HIP's own device printf (ROCclr's hostcall listener) on the emulated device: one line per
// work-item of a small launch, and one work-item's countdown in program order.
#include "hip_check.h"

__global__ void greet(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("device says %d of %d (%.1f)\n", i, n, 0.5 * i);
}

__global__ void countdown(int n) {
    if (threadIdx.x == 0)
        for (int k = n; k > 0; --k) printf("device step %d\n", k);
}

int main(void) {
    unbuffered();
    greet<<<2, 64>>>(100);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    ok("greet");
    countdown<<<1, 64>>>(5);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    ok("countdown");
    ok("done");
    return 0;
}
