// WMMA GEMMs for gfx1100 (wave32): C[32x32] = A[32xK] * B[Kx32] (+ C), one wave per 16x16
// tile of C, K in steps of 16. Operand layouts as AMD's RDNA3 WMMA guide describes them:
// lane l (and l + 16, a copy) holds row l % 16 of the A tile and column l % 16 of the B tile,
// K along the register; the accumulator's element ele of lane l is row 2 * ele + l / 16,
// column l % 16.
#include <hip/hip_runtime.h>

typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef float float8 __attribute__((ext_vector_type(8)));
typedef short short16 __attribute__((ext_vector_type(16)));
typedef int int8v __attribute__((ext_vector_type(8)));
typedef int int4v __attribute__((ext_vector_type(4)));
typedef int int2v __attribute__((ext_vector_type(2)));

#define N 32

extern "C" __global__ void wmma_f32_f16(const _Float16* a, const _Float16* b, float* c, int k) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  float8 acc;
  for (int e = 0; e < 8; ++e) acc[e] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    half16 fa, fb;
    for (int i = 0; i < 16; ++i) {
      fa[i] = a[(r0 + lane % 16) * k + k0 + i];
      fb[i] = b[(k0 + i) * N + c0 + lane % 16];
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(fa, fb, acc);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[e];
}

extern "C" __global__ void wmma_f32_bf16(const short* a, const short* b, float* c, int k) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  float8 acc;
  for (int e = 0; e < 8; ++e) acc[e] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    short16 fa, fb;
    for (int i = 0; i < 16; ++i) {
      fa[i] = a[(r0 + lane % 16) * k + k0 + i];
      fb[i] = b[(k0 + i) * N + c0 + lane % 16];
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(fa, fb, acc);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[e];
}

// f16 accumulator: the results in the low halves (OPSEL 0) or high halves (OPSEL 1).
extern "C" __global__ void wmma_f16_f16(const _Float16* a, const _Float16* b, _Float16* c, int k, int hi) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  half16 acc;
  for (int e = 0; e < 16; ++e) acc[e] = 0;
  for (int e = 0; e < 8; ++e) acc[2 * e + (hi ? 1 : 0)] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    half16 fa, fb;
    for (int i = 0; i < 16; ++i) {
      fa[i] = a[(r0 + lane % 16) * k + k0 + i];
      fb[i] = b[(k0 + i) * N + c0 + lane % 16];
    }
    if (hi)
      acc = __builtin_amdgcn_wmma_f16_16x16x16_f16_w32(fa, fb, acc, true);
    else
      acc = __builtin_amdgcn_wmma_f16_16x16x16_f16_w32(fa, fb, acc, false);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[2 * e + (hi ? 1 : 0)];
}

// Signed 8-bit A and B (four to a register, K in byte order), i32 accumulator, saturating.
extern "C" __global__ void wmma_i32_iu8(const signed char* a, const signed char* b, int* c, int k) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  int8v acc;
  for (int e = 0; e < 8; ++e) acc[e] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    int4v fa, fb;
    for (int r = 0; r < 4; ++r) {
      unsigned wa = 0, wb = 0;
      for (int j = 0; j < 4; ++j) {
        wa |= (unsigned)(unsigned char)a[(r0 + lane % 16) * k + k0 + 4 * r + j] << (8 * j);
        wb |= (unsigned)(unsigned char)b[(k0 + 4 * r + j) * N + c0 + lane % 16] << (8 * j);
      }
      fa[r] = wa;
      fb[r] = wb;
    }
    acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, fa, true, fb, acc, true);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[e];
}

// Unsigned 4-bit A, signed 4-bit B (eight to a register), i32 accumulator, wrapping.
extern "C" __global__ void wmma_i32_iu4(const unsigned char* a, const signed char* b, int* c, int k) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  int8v acc;
  for (int e = 0; e < 8; ++e) acc[e] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    int2v fa, fb;
    for (int r = 0; r < 2; ++r) {
      unsigned wa = 0, wb = 0;
      for (int j = 0; j < 8; ++j) {
        wa |= (unsigned)(a[(r0 + lane % 16) * k + k0 + 8 * r + j] & 15) << (4 * j);
        wb |= (unsigned)(b[(k0 + 8 * r + j) * N + c0 + lane % 16] & 15) << (4 * j);
      }
      fa[r] = wa;
      fb[r] = wb;
    }
    acc = __builtin_amdgcn_wmma_i32_16x16x16_iu4_w32(false, fa, true, fb, acc, false);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[e];
}

// bf16 accumulator, in the low or high halves as wmma_f16_f16.
extern "C" __global__ void wmma_bf16_bf16(const short* a, const short* b, short* c, int k, int hi) {
  int lane = threadIdx.x, r0 = blockIdx.y * 16, c0 = blockIdx.x * 16;
  short16 acc;
  for (int e = 0; e < 16; ++e) acc[e] = 0;
  for (int e = 0; e < 8; ++e) acc[2 * e + (hi ? 1 : 0)] = c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16];
  for (int k0 = 0; k0 < k; k0 += 16) {
    short16 fa, fb;
    for (int i = 0; i < 16; ++i) {
      fa[i] = a[(r0 + lane % 16) * k + k0 + i];
      fb[i] = b[(k0 + i) * N + c0 + lane % 16];
    }
    if (hi)
      acc = __builtin_amdgcn_wmma_bf16_16x16x16_bf16_w32(fa, fb, acc, true);
    else
      acc = __builtin_amdgcn_wmma_bf16_16x16x16_bf16_w32(fa, fb, acc, false);
  }
  for (int e = 0; e < 8; ++e) c[(r0 + 2 * e + lane / 16) * N + c0 + lane % 16] = acc[2 * e + (hi ? 1 : 0)];
}
