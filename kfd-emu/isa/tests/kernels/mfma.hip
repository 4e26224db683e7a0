// Matrix-core GEMMs, one wave each, through the compiler's MFMA builtins (tests/kernels_more.rs
// checks them against the CPU). Built by regen.sh. Row-major A[32|16][K], B[K][32|16],
// C[32|16][32|16]; each kernel loads its operands in the layout AMD documents for the
// instruction and stores the accumulator from it.
#include <hip/hip_runtime.h>

typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef int i32x16 __attribute__((ext_vector_type(16)));
typedef double f64x4 __attribute__((ext_vector_type(4)));

// The row of a 32x32 accumulator element r of this lane.
__device__ static int row32(int r, int lane) { return (r % 4) + 4 * (lane / 32) + 8 * (r / 4); }

extern "C" __global__ void mfma_f32_32x32x2f32(const float* A, const float* B, float* C, int K) {
  int lane = threadIdx.x;
  f32x16 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 2) {
    float a = A[(lane % 32) * K + k0 + lane / 32];
    float b = B[(k0 + lane / 32) * 32 + lane % 32];
    acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 16; r++) C[row32(r, lane) * 32 + lane % 32] = acc[r];
}

extern "C" __global__ void mfma_f32_32x32x8f16(const _Float16* A, const _Float16* B, float* C,
                                               int K) {
  int lane = threadIdx.x;
  f32x16 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 8) {
    f16x4 a, b;
    for (int e = 0; e < 4; e++) {
      int k = k0 + 4 * (lane / 32) + e;
      a[e] = A[(lane % 32) * K + k];
      b[e] = B[k * 32 + lane % 32];
    }
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 16; r++) C[row32(r, lane) * 32 + lane % 32] = acc[r];
}

extern "C" __global__ void mfma_f32_16x16x16f16(const _Float16* A, const _Float16* B, float* C,
                                                int K) {
  int lane = threadIdx.x;
  f32x4 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 16) {
    f16x4 a, b;
    for (int e = 0; e < 4; e++) {
      int k = k0 + 4 * (lane / 16) + e;
      a[e] = A[(lane % 16) * K + k];
      b[e] = B[k * 16 + lane % 16];
    }
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; r++) C[(4 * (lane / 16) + r) * 16 + lane % 16] = acc[r];
}

// bf16 as its 16 bits (the high half of an f32).
extern "C" __global__ void mfma_f32_32x32x8bf16_1k(const short* A, const short* B, float* C,
                                                   int K) {
  int lane = threadIdx.x;
  f32x16 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 8) {
    i16x4 a, b;
    for (int e = 0; e < 4; e++) {
      int k = k0 + 4 * (lane / 32) + e;
      a[e] = A[(lane % 32) * K + k];
      b[e] = B[k * 32 + lane % 32];
    }
    acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 16; r++) C[row32(r, lane) * 32 + lane % 32] = acc[r];
}

extern "C" __global__ void mfma_f64_16x16x4f64(const double* A, const double* B, double* C,
                                               int K) {
  int lane = threadIdx.x;
  f64x4 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 4) {
    double a = A[(lane % 16) * K + k0 + lane / 16];
    double b = B[(k0 + lane / 16) * 16 + lane % 16];
    acc = __builtin_amdgcn_mfma_f64_16x16x4f64(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; r++) C[(4 * r + lane / 16) * 16 + lane % 16] = acc[r];
}

#if !defined(__gfx940__)
// gfx940 has no 32x32x8 i8 form (its i8 MFMAs take 8 values per lane).
extern "C" __global__ void mfma_i32_32x32x8i8(const signed char* A, const signed char* B, int* C,
                                              int K) {
  int lane = threadIdx.x;
  i32x16 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 8) {
    int a = 0, b = 0;
    for (int e = 0; e < 4; e++) {
      int k = k0 + 4 * (lane / 32) + e;
      a |= (A[(lane % 32) * K + k] & 0xff) << (8 * e);
      b |= (B[k * 32 + lane % 32] & 0xff) << (8 * e);
    }
    acc = __builtin_amdgcn_mfma_i32_32x32x8i8(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 16; r++) C[row32(r, lane) * 32 + lane % 32] = acc[r];
}
#endif
