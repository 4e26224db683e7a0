// gfx94x sparse (SMFMAC) and xf32 matrix-core GEMMs, one wave each (tests/kernels_more.rs checks
// them against the CPU). Built by regen.sh with clang-16. A sparse A[16][K] comes compressed: its
// two kept values of every group of four k (AV[16][K/2], in k order) and one byte per group
// whose bits [1:0] and [3:2] give those values' places in the group (AI[16][K/4]); B[K][16] is
// dense and row-major, C[16][16] f32 or i32. Each lane holds the groups of 8 (16-bit) or 16
// (8-bit) consecutive k of a row of A, and B's column over the same k, as AMD's matrix
// instruction calculator lays them out.
#define __global__ __attribute__((global))
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef short i16x8 __attribute__((ext_vector_type(8)));

// The index bits of `groups` consecutive groups, four bits each, moved up to index set `set`.
static __attribute__((device)) int index_bits(const unsigned char* ai, int groups, int set) {
  int v = 0;
  for (int g = 0; g < groups; g++) v |= (ai[g] & 15) << (4 * g);
  return v << (4 * groups * set);
}

// 16-bit inputs: K advances 32 per instruction; lane = row + 16 * (eighth of the 32 k).
#define GEMM16(NAME, T4, T8, E, BUILTIN, SET)                                              \
  extern "C" __global__ void NAME(const E* AV, const unsigned char* AI, const E* B,          \
                                  float* C, int K) {                                         \
    int lane = __builtin_amdgcn_workitem_id_x(), i = lane % 16, q = lane / 16;              \
    f32x4 acc = {0};                                                                        \
    for (int k0 = 0; k0 < K; k0 += 32) {                                                    \
      T4 a;                                                                                 \
      T8 b;                                                                                 \
      for (int e = 0; e < 4; e++) a[e] = AV[i * (K / 2) + k0 / 2 + 4 * q + e];             \
      for (int e = 0; e < 8; e++) b[e] = B[(k0 + 8 * q + e) * 16 + i];                      \
      int idx = index_bits(AI + i * (K / 4) + k0 / 4 + 2 * q, 2, SET);                      \
      acc = BUILTIN(a, b, acc, idx, 0, SET);                                                \
    }                                                                                       \
    for (int r = 0; r < 4; r++) C[(4 * q + r) * 16 + i] = acc[r];                           \
  }

GEMM16(smfmac_f32_16x16x32_f16, f16x4, f16x8, _Float16, __builtin_amdgcn_smfmac_f32_16x16x32_f16, 0)
GEMM16(smfmac_f32_16x16x32_f16_set3, f16x4, f16x8, _Float16, __builtin_amdgcn_smfmac_f32_16x16x32_f16, 3)
GEMM16(smfmac_f32_16x16x32_bf16, i16x4, i16x8, short, __builtin_amdgcn_smfmac_f32_16x16x32_bf16, 0)

// 8-bit inputs: K advances 64 per instruction; lane = row + 16 * (quarter of the 64 k).
extern "C" __global__ void smfmac_i32_16x16x64_i8(const signed char* AV, const unsigned char* AI,
                                                  const signed char* B, int* C, int K) {
  int lane = __builtin_amdgcn_workitem_id_x(), i = lane % 16, q = lane / 16;
  i32x4 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 64) {
    i32x2 a = {0};
    i32x4 b = {0};
    for (int e = 0; e < 8; e++)
      a[e / 4] |= (AV[i * (K / 2) + k0 / 2 + 8 * q + e] & 255) << (8 * (e % 4));
    for (int e = 0; e < 16; e++) b[e / 4] |= (B[(k0 + 16 * q + e) * 16 + i] & 255) << (8 * (e % 4));
    int idx = index_bits(AI + i * (K / 4) + k0 / 4 + 4 * q, 4, 1);
    acc = __builtin_amdgcn_smfmac_i32_16x16x64_i8(a, b, acc, idx, 0, 1);
  }
  for (int r = 0; r < 4; r++) C[(4 * q + r) * 16 + i] = acc[r];
}

// xf32, dense: K advances 8 per instruction; lane = row + 16 * (pair of the 8 k).
extern "C" __global__ void mfma_f32_16x16x8_xf32(const float* A, const float* B, float* C, int K) {
  int lane = __builtin_amdgcn_workitem_id_x(), i = lane % 16, q = lane / 16;
  f32x4 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 8) {
    f32x2 a = {A[i * K + k0 + 2 * q], A[i * K + k0 + 2 * q + 1]};
    f32x2 b = {B[(k0 + 2 * q) * 16 + i], B[(k0 + 2 * q + 1) * 16 + i]};
    acc = __builtin_amdgcn_mfma_f32_16x16x8_xf32(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; r++) C[(4 * q + r) * 16 + i] = acc[r];
}

// 32x32 16-bit: K advances 16 per instruction; lane = row + 32 * (half of the 16 k).
extern "C" __global__ void smfmac_f32_32x32x16_f16(const _Float16* AV, const unsigned char* AI,
                                                   const _Float16* B, float* C, int K) {
  typedef float f32x16 __attribute__((ext_vector_type(16)));
  int lane = __builtin_amdgcn_workitem_id_x(), i = lane % 32, q = lane / 32;
  f32x16 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 16) {
    f16x4 a;
    f16x8 b;
    for (int e = 0; e < 4; e++) a[e] = AV[i * (K / 2) + k0 / 2 + 4 * q + e];
    for (int e = 0; e < 8; e++) b[e] = B[(k0 + 8 * q + e) * 32 + i];
    int idx = index_bits(AI + i * (K / 4) + k0 / 4 + 2 * q, 2, 0);
    acc = __builtin_amdgcn_smfmac_f32_32x32x16_f16(a, b, acc, idx, 0, 0);
  }
  for (int r = 0; r < 16; r++) C[(8 * (r / 4) + 4 * q + r % 4) * 32 + i] = acc[r];
}

// FP8 x BF8: as i8, with gfx94x's 8-bit floats.
extern "C" __global__ void smfmac_f32_16x16x64_fp8_bf8(const unsigned char* AV,
                                                       const unsigned char* AI,
                                                       const unsigned char* B, float* C, int K) {
  int lane = __builtin_amdgcn_workitem_id_x(), i = lane % 16, q = lane / 16;
  f32x4 acc = {0};
  for (int k0 = 0; k0 < K; k0 += 64) {
    i32x2 a = {0};
    i32x4 b = {0};
    for (int e = 0; e < 8; e++) a[e / 4] |= AV[i * (K / 2) + k0 / 2 + 8 * q + e] << (8 * (e % 4));
    for (int e = 0; e < 16; e++) b[e / 4] |= B[(k0 + 16 * q + e) * 16 + i] << (8 * (e % 4));
    int idx = index_bits(AI + i * (K / 4) + k0 / 4 + 4 * q, 4, 0);
    acc = __builtin_amdgcn_smfmac_f32_16x16x64_fp8_bf8(a, b, acc, idx, 0, 0);
  }
  for (int r = 0; r < 4; r++) C[(4 * q + r) * 16 + i] = acc[r];
}
