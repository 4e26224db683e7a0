// The kernels of examples/mlp.rs: a small MLP forward pass (dense layers, bias + ReLU, a
// row-wise softmax and a layer norm), in plain HIP C++. They keep their C++ (mangled) names, so
// the example finds them by the names written here. Built by build.sh into mlp-gfx90a.co and
// mlp-gfx942.co, which are checked in.
#include <hip/hip_runtime.h>

constexpr int TILE = 16;

// out[m][n] = sum_k a[m][k] * w[k][n], tiled through LDS; 16x16 work-groups.
__global__ void matmul(const float* a, const float* w, float* out, int m, int n, int k) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tw[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    int ka = t + threadIdx.x, kw = t + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? a[row * k + ka] : 0.0f;
    tw[threadIdx.y][threadIdx.x] = (kw < k && col < n) ? w[kw * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += ta[threadIdx.y][i] * tw[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) out[row * n + col] = acc;
}

// x[r][c] = max(x[r][c] + bias[c], 0).
__global__ void bias_relu(float* x, const float* bias, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) x[i] = fmaxf(x[i] + bias[i % cols], 0.0f);
}

// x[r][c] += bias[c] (the last layer: no activation).
__global__ void bias_add(float* x, const float* bias, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) x[i] += bias[i % cols];
}

// The same in double precision: an overload, so "bias_add" alone names two kernels.
__global__ void bias_add(double* x, const double* bias, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) x[i] += bias[i % cols];
}

// Block-wide reductions over 256 work-items (one row per work-group).
__device__ float block_sum(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  float r = scratch[0];
  __syncthreads();
  return r;
}

__device__ float block_max(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  float r = scratch[0];
  __syncthreads();
  return r;
}

// y = layer_norm(x) * gamma + beta, per row; one 256-wide work-group per row.
__global__ void layernorm(const float* x, float* y, const float* gamma, const float* beta,
                          int cols, float eps) {
  __shared__ float scratch[256];
  const float* in = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += in[c];
  float mean = block_sum(s, scratch) / cols;
  float v = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) v += (in[c] - mean) * (in[c] - mean);
  float inv = rsqrtf(block_sum(v, scratch) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += 256) out[c] = (in[c] - mean) * inv * gamma[c] + beta[c];
}

// y = softmax(x), per row; one 256-wide work-group per row.
__global__ void softmax(const float* x, float* y, int cols) {
  __shared__ float scratch[256];
  const float* in = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, in[c]);
  m = block_max(m, scratch);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += expf(in[c] - m);
  s = block_sum(s, scratch);
  for (int c = threadIdx.x; c < cols; c += 256) out[c] = expf(in[c] - m) / s;
}
