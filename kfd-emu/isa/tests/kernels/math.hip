// The device math library (ROCm's ocml, through HIP's math functions) applied element-wise:
// real library code for the decoder and interpreter to meet. math_f32 / math_f64 apply
// function `f` (an index into the lists below) to x (and y) for n elements.
#include <hip/hip_runtime.h>
extern "C" __global__ void math_f32(const float* x, const float* y, float* out, int n, int f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i], r = 0;
  switch (f) {
    case 0: r = sinf(a); break;
    case 1: r = cosf(a); break;
    case 2: r = tanf(a); break;
    case 3: r = asinf(a); break;
    case 4: r = acosf(a); break;
    case 5: r = atanf(a); break;
    case 6: r = sinhf(a); break;
    case 7: r = coshf(a); break;
    case 8: r = tanhf(a); break;
    case 9: r = asinhf(a); break;
    case 10: r = acoshf(a); break;
    case 11: r = atanhf(a); break;
    case 12: r = expf(a); break;
    case 13: r = exp2f(a); break;
    case 14: r = exp10f(a); break;
    case 15: r = expm1f(a); break;
    case 16: r = logf(a); break;
    case 17: r = log2f(a); break;
    case 18: r = log10f(a); break;
    case 19: r = log1pf(a); break;
    case 20: r = sqrtf(a); break;
    case 21: r = cbrtf(a); break;
    case 22: r = rsqrtf(a); break;
    case 23: r = erff(a); break;
    case 24: r = erfcf(a); break;
    case 25: r = tgammaf(a); break;
    case 26: r = lgammaf(a); break;
    case 27: r = floorf(a); break;
    case 28: r = ceilf(a); break;
    case 29: r = truncf(a); break;
    case 30: r = roundf(a); break;
    case 31: r = rintf(a); break;
    case 32: r = fabsf(a); break;
    case 33: r = logbf(a); break;
    case 34: r = sinpif(a); break;
    case 35: r = cospif(a); break;
    case 36: r = powf(a, b); break;
    case 37: r = atan2f(a, b); break;
    case 38: r = hypotf(a, b); break;
    case 39: r = fmodf(a, b); break;
    case 40: r = remainderf(a, b); break;
    case 41: r = fminf(a, b); break;
    case 42: r = fmaxf(a, b); break;
    case 43: r = fdimf(a, b); break;
    case 44: r = copysignf(a, b); break;
  }
  out[i] = r;
}

extern "C" __global__ void math_f64(const double* x, const double* y, double* out, int n, int f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i], r = 0;
  switch (f) {
    case 0: r = sin(a); break;
    case 1: r = cos(a); break;
    case 2: r = tan(a); break;
    case 3: r = asin(a); break;
    case 4: r = acos(a); break;
    case 5: r = atan(a); break;
    case 6: r = sinh(a); break;
    case 7: r = cosh(a); break;
    case 8: r = tanh(a); break;
    case 9: r = asinh(a); break;
    case 10: r = acosh(a); break;
    case 11: r = atanh(a); break;
    case 12: r = exp(a); break;
    case 13: r = exp2(a); break;
    case 14: r = exp10(a); break;
    case 15: r = expm1(a); break;
    case 16: r = log(a); break;
    case 17: r = log2(a); break;
    case 18: r = log10(a); break;
    case 19: r = log1p(a); break;
    case 20: r = sqrt(a); break;
    case 21: r = cbrt(a); break;
    case 22: r = erf(a); break;
    case 23: r = erfc(a); break;
    case 24: r = tgamma(a); break;
    case 25: r = lgamma(a); break;
    case 26: r = floor(a); break;
    case 27: r = ceil(a); break;
    case 28: r = trunc(a); break;
    case 29: r = round(a); break;
    case 30: r = rint(a); break;
    case 31: r = fabs(a); break;
    case 32: r = logb(a); break;
    case 33: r = sinpi(a); break;
    case 34: r = cospi(a); break;
    case 35: r = rsqrt(a); break;
    case 36: r = pow(a, b); break;
    case 37: r = atan2(a, b); break;
    case 38: r = hypot(a, b); break;
    case 39: r = fmod(a, b); break;
    case 40: r = remainder(a, b); break;
    case 41: r = fmin(a, b); break;
    case 42: r = fmax(a, b); break;
    case 43: r = fdim(a, b); break;
    case 44: r = copysign(a, b); break;
  }
  out[i] = r;
}

// Function order (the test's table): f32: sinf cosf tanf asinf acosf atanf sinhf coshf tanhf asinhf acoshf atanhf expf exp2f exp10f expm1f logf log2f log10f log1pf sqrtf cbrtf rsqrtf erff erfcf tgammaf lgammaf floorf ceilf truncf roundf rintf fabsf logbf sinpif cospif powf atan2f hypotf fmodf remainderf fminf fmaxf fdimf copysignf
// f64: sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log log2 log10 log1p sqrt cbrt erf erfc tgamma lgamma floor ceil trunc round rint fabs logb sinpi cospi rsqrt pow atan2 hypot fmod remainder fmin fmax fdim copysign
