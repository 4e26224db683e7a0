// Test kernels for the kfd-emu-isa interpreter. Compiled by regen.sh for gfx90a and gfx940
// (relabelled gfx942); the tests run them on the interpreter and check the results on the CPU.
#include <hip/hip_runtime.h>

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(float alpha, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}

// Sum of `n` ints per work-group of 256: a tree in LDS, then one atomic per group.
extern "C" __global__ void reduce_sum(const int* in, int* out, int n) {
  __shared__ int part[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  part[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, part[0]);
}

// Per-group float sums with cross-lane shuffles (DPP / ds_swizzle / bpermute in the code).
extern "C" __global__ void reduce_shfl(const float* in, float* out, int n) {
  __shared__ float warp_sums[16];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  float v = i < n ? in[i] : 0.0f;
  for (int off = 32; off > 0; off >>= 1) v += __shfl_down(v, off);
  if ((t & 63) == 0) warp_sums[t >> 6] = v;
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
    for (int w = 0; w < (int)(blockDim.x + 63) / 64; ++w) s += warp_sums[w];
    out[blockIdx.x] = s;
  }
}

#define TILE 16
// C = A * B for n x n row-major matrices, 16x16 tiles in LDS.
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    As[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < n && k0 + ty < n) ? B[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

// Global and LDS atomics of every common kind, 32- and 64-bit.
extern "C" __global__ void atomics(const int* in, int* g32, unsigned long long* g64, float* gf,
                                   int* hist, int n) {
  __shared__ int lds_hist[16];
  __shared__ unsigned lds_max;
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  if (t < 16) lds_hist[t] = 0;
  if (t == 0) lds_max = 0;
  __syncthreads();
  if (i < n) {
    int v = in[i];
    atomicAdd(&g32[0], v);
    atomicSub(&g32[1], v);
    atomicMax(&g32[2], v);
    atomicMin(&g32[3], v);
    atomicAnd(&g32[4], ~(1 << (v & 31)));
    atomicOr(&g32[5], 1 << (v & 31));
    atomicXor(&g32[6], v);
    atomicInc((unsigned*)&g32[7], 1000u);
    atomicExch(&g32[8], v);  // any value of `in` may win
    int old = g32[9];
    while (true) {  // compare-and-swap loop: g32[9] += 2 * v
      int prev = atomicCAS(&g32[9], old, old + 2 * v);
      if (prev == old) break;
      old = prev;
    }
    atomicAdd(&g64[0], (unsigned long long)(v & 0xff) << 32 | 1ull);
    atomicMax(&g64[1], (unsigned long long)v * 0x100000001ull);
    atomicAdd(gf, (float)(v & 7) * 0.5f);
    atomicAdd(&lds_hist[v & 15], 1);
    atomicMax(&lds_max, (unsigned)v);
  }
  __syncthreads();
  if (t < 16) atomicAdd(&hist[t], lds_hist[t]);
  if (t == 0) atomicMax(&g32[10], (int)lds_max);
}

// Divergent loops: each lane runs its own Collatz sequence, with a data-dependent break.
extern "C" __global__ void divergent(const unsigned* in, unsigned* steps, unsigned* peak, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = in[i], s = 0, p = x;
  while (x != 1 && x != 0) {
    if (x & 1) {
      x = 3 * x + 1;
    } else {
      x >>= 1;
    }
    p = x > p ? x : p;
    if (++s > 1000) break;
  }
  steps[i] = s;
  peak[i] = (i & 1) ? p : p ^ 0x5a5a;
}

// Device-library math: sqrtf, expf, sinf, a division and a double-precision path.
extern "C" __global__ void math(const float* x, float* out, double* outd, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    out[4 * i + 0] = sqrtf(fabsf(v));
    out[4 * i + 1] = expf(v * 0.25f);
    out[4 * i + 2] = sinf(v);
    out[4 * i + 3] = v / (1.0f + v * v);
    outd[i] = sqrt((double)fabsf(v)) / ((double)v + 3.0);
  }
}

// A private array indexed by data: forces scratch (and on gfx90a maybe AGPR spills).
extern "C" __global__ void scratch_array(const int* idx, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  volatile int priv[64];
  for (int k = 0; k < 64; ++k) priv[k] = k * i + 7;
  int acc = 0;
  if (i < n) {
    for (int k = 0; k < 8; ++k) acc += priv[(idx[i] + k * 5) & 63];
    out[i] = acc;
  }
}

// Dynamic shared memory: each group reverses its block through LDS sized at launch.
extern "C" __global__ void dyn_shared_reverse(const int* in, int* out, int n) {
  extern __shared__ int buf[];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  int i = base + t;
  buf[t] = i < n ? in[i] : -1;
  __syncthreads();
  int src = blockDim.x - 1 - t;
  if (i < n) out[i] = buf[src];
}

// 3-D ids: every work-item writes its packed ids, so the test checks the start registers.
extern "C" __global__ void ids3d(unsigned* out) {
  unsigned gx = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned gy = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned gz = blockIdx.z * blockDim.z + threadIdx.z;
  unsigned w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
  unsigned lin = (gz * h + gy) * w + gx;
  out[2 * lin] = threadIdx.x | threadIdx.y << 10 | threadIdx.z << 20;
  out[2 * lin + 1] = blockIdx.x | blockIdx.y << 10 | blockIdx.z << 20;
}

// Lane intrinsics: ballot, popcount, readfirstlane-style broadcast, mbcnt (lane id).
extern "C" __global__ void lanes(const int* in, unsigned long long* ballots, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  unsigned long long b = __ballot(v > 0);
  int lane = __lane_id();
  int first = __shfl(v, 0);
  int x = __shfl_xor(v, 5);
  if (i < n) {
    out[i] = __popcll(b) + lane * 1000 + first * 7 + x * 3;
    if (lane == 0) ballots[i / 64] = b;
  }
}

// 16-bit floats and integer conversions.
extern "C" __global__ void halfs(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    _Float16 h = (_Float16)in[i];
    _Float16 g = h * (_Float16)1.5f + (_Float16)0.25f;
    int k = (int)(in[i] * 3.0f);
    out[i] = (float)g + (float)(k % 7) + (float)((unsigned)k >> 3);
  }
}

// A private array indexed by data that does not fit in registers: the compiler places it in
// scratch (MUBUF with the private segment buffer on gfx90a, scratch_* on gfx940).
extern "C" __global__ void scratch_spill(const int* idx, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int priv[200];
  for (int k = 0; k < 200; ++k) priv[k] = k * (i + 1);
  if (i < n) {
    int j = idx[i];
    priv[j % 200] += 1000;
    priv[(j * 7) % 200] ^= 0x55;
    int acc = 0;
    for (int k = 0; k < 200; k += 13) acc += priv[(j + k) % 200];
    out[i] = acc;
  }
}

// Double-precision device-library math; large arguments take the Payne-Hanek reduction
// (v_trig_preop_f64).
extern "C" __global__ void math_f64(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v = x[i];
    out[3 * i + 0] = sin(v);
    out[3 * i + 1] = cos(v);
    out[3 * i + 2] = exp(v * 1e-3);
  }
}
