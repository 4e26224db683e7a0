// The classic: a kernel adds two vectors, launched with <<<>>> and with hipLaunchKernelGGL, then
// hipDeviceSynchronize; the result is checked on the host.
#include "hip_check.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float* c, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] *= k;
}

int main(void) {
    unbuffered();
    const int n = 100003; // not a multiple of the block size
    size_t bytes = n * sizeof(float);
    float* ha = (float*)malloc(bytes);
    float* hb = (float*)malloc(bytes);
    float* hc = (float*)malloc(bytes);
    EXPECT(ha && hb && hc, "malloc");
    for (int i = 0; i < n; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f * (float)(n - i);
    }
    float *a, *b, *c;
    CHECK(hipMalloc(&a, bytes));
    CHECK(hipMalloc(&b, bytes));
    CHECK(hipMalloc(&c, bytes));
    CHECK(hipMemcpy(a, ha, bytes, hipMemcpyHostToDevice));
    CHECK(hipMemcpy(b, hb, bytes, hipMemcpyHostToDevice));
    vector_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CHECK(hipGetLastError());
    hipLaunchKernelGGL(scale, dim3((n + 127) / 128), dim3(128), 0, 0, c, 2.0f, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    CHECK(hipMemcpy(hc, c, bytes, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = 2.0f * (ha[i] + hb[i]);
        EXPECT(hc[i] == want, "c[%d] = %f, expected %f", i, hc[i], want);
    }
    ok("vector_add");
    CHECK(hipFree(a));
    CHECK(hipFree(b));
    CHECK(hipFree(c));
    free(ha);
    free(hb);
    free(hc);
    ok("done");
    return 0;
}
