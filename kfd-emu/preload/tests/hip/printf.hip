// HIP's own device printf (ROCclr's hostcall listener) on the emulated device: one line per
// work-item of a small launch, one work-item's countdown in program order, and a crowd of 2048
// work-items printing strings, doubles and 64-bit integers (issue 27's printf fault, which did
// not show up here at either size).
#include "hip_check.h"

__global__ void greet(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("device says %d of %d (%.1f)\n", i, n, 0.5 * i);
}

__global__ void countdown(int n) {
    if (threadIdx.x == 0)
        for (int k = n; k > 0; --k) printf("device step %d\n", k);
}

__global__ void crowd(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("crowd %d: %s %.1f %lld\n", i, "hello", 0.5 * i, (long long)i << 33);
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
    crowd<<<8, 256>>>(2048);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    ok("crowd");
    ok("done");
    return 0;
}
