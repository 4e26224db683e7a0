// kfd-emu's sanitizer on a HIP program (run with KFDRT_EMU_SANITIZE=1): a kernel writes past
// the end of one hipMalloc into the next. ROCr carves both out of one 2 MiB block; the preload
// registers each allocation, so the write is reported. The program itself sees nothing wrong,
// as on hardware.
#include "hip_check.h"

__global__ void fill_past_end(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = i;
}

int main(void) {
    unbuffered();
    int *a, *b;
    CHECK(hipMalloc(&a, 4096));
    CHECK(hipMalloc(&b, 4096));
    printf("ok allocated a=%p b=%p\n", (void *)a, (void *)b);
    // 1024 ints fit; 1100 do not. Groups of 100 put the end of `a` inside a wave.
    fill_past_end<<<11, 100>>>(a, 1100);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    ok("overran");
    CHECK(hipFree(a));
    CHECK(hipFree(b));
    ok("done");
    return 0;
}
