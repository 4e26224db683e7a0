// gfx94x FP8/BF8 matrix-core GEMMs, one wave each (tests/kernels_more.rs checks them against the
// CPU). Built by regen.sh with clang-16 (clang-15 has no FP8 builtins). A[16][K] and B[K][16]
// row-major bytes, C[16][16] f32; each lane holds 8 consecutive k values of a row of A and of
// a column of B, as AMD documents the 16x16x32 FP8 layout.
#define __global__ __attribute__((global))
typedef float f32x4 __attribute__((ext_vector_type(4)));

static __attribute__((device)) long gather(const unsigned char* p, int stride) {
  long v = 0;
  for (int e = 0; e < 8; e++) v |= (long)p[e * stride] << (8 * e);
  return v;
}

#define GEMM(NAME, BUILTIN)                                                              \
  extern "C" __global__ void NAME(const unsigned char* A, const unsigned char* B,        \
                                  float* C, int K) {                                     \
    int lane = __builtin_amdgcn_workitem_id_x();                                          \
    f32x4 acc = {0};                                                                      \
    for (int k0 = 0; k0 < K; k0 += 32) {                                                  \
      int k = k0 + 8 * (lane / 16);                                                       \
      long a = gather(A + (lane % 16) * K + k, 1);                                        \
      long b = gather(B + k * 16 + lane % 16, 16);                                        \
      acc = BUILTIN(a, b, acc, 0, 0, 0);                                                  \
    }                                                                                     \
    for (int r = 0; r < 4; r++) C[(4 * (lane / 16) + r) * 16 + lane % 16] = acc[r];      \
  }

GEMM(mfma_f32_16x16x32_fp8_fp8, __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8)
GEMM(mfma_f32_16x16x32_bf8_bf8, __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8)
GEMM(mfma_f32_16x16x32_fp8_bf8, __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8)
