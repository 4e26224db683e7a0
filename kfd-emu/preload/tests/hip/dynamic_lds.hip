// Dynamic shared memory (extern __shared__, sized at launch) next to a static array: each block
// reverses its slice of the input through LDS, and a block-wide sum uses both arrays.
#include "hip_check.h"

__global__ void reverse_and_sum(const int* in, int* out, int* sums, int n) {
    extern __shared__ int dyn[];
    __shared__ int partial[256];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    int v = base + t < n ? in[base + t] : 0;
    dyn[t] = v;
    partial[t] = v;
    __syncthreads();
    int r = blockDim.x - 1 - t;
    if (base + t < n) out[base + t] = dyn[r];
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = partial[0];
}

int main(void) {
    unbuffered();
    const int block = 256, blocks = 40, n = block * blocks;
    int *in, *out, *sums;
    int* h = (int*)malloc(n * sizeof(int));
    int* r = (int*)malloc(n * sizeof(int));
    int hs[blocks];
    EXPECT(h && r, "malloc");
    for (int i = 0; i < n; i++) h[i] = i * 3 + 1;
    CHECK(hipMalloc(&in, n * sizeof(int)));
    CHECK(hipMalloc(&out, n * sizeof(int)));
    CHECK(hipMalloc(&sums, blocks * sizeof(int)));
    CHECK(hipMemcpy(in, h, n * sizeof(int), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(reverse_and_sum, dim3(blocks), dim3(block), block * sizeof(int), 0, in,
                       out, sums, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(r, out, n * sizeof(int), hipMemcpyDeviceToHost));
    CHECK(hipMemcpy(hs, sums, sizeof hs, hipMemcpyDeviceToHost));
    for (int bI = 0; bI < blocks; bI++) {
        int sum = 0;
        for (int t = 0; t < block; t++) {
            int i = bI * block + t;
            int want = h[bI * block + block - 1 - t];
            EXPECT(r[i] == want, "out[%d] = %d, expected %d", i, r[i], want);
            sum += h[i];
        }
        EXPECT(hs[bI] == sum, "block %d sum %d, expected %d", bI, hs[bI], sum);
    }
    ok("dynamic LDS");
    CHECK(hipFree(in));
    CHECK(hipFree(out));
    CHECK(hipFree(sums));
    free(h);
    free(r);
    ok("done");
    return 0;
}
