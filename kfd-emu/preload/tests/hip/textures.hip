// HIP texture reads (tex2D on texture objects over a 2D array, image_sample on the GPU): point
// sampling at texel centres in texel coordinates, normalised coordinates with clamping and with
// wrapping, and bilinear filtering halfway between texels, each checked against the CPU.
#include "hip_check.h"

static const int W = 16, H = 8;

__global__ void fetch(hipTextureObject_t t, float* out, float dx, float dy, float scale) {
    int x = threadIdx.x, y = blockIdx.x;
    out[y * blockDim.x + x] = tex2D<float>(t, (x + dx) * scale, (y + dy) * scale);
}

static hipTextureObject_t make_texture(hipArray_t a, hipTextureAddressMode mode, hipTextureFilterMode f,
                                  int normalized) {
    hipResourceDesc rd;
    memset(&rd, 0, sizeof rd);
    rd.resType = hipResourceTypeArray;
    rd.res.array.array = a;
    hipTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = mode;
    td.filterMode = f;
    td.readMode = hipReadModeElementType;
    td.normalizedCoords = normalized;
    hipTextureObject_t t = 0;
    CHECK(hipCreateTextureObject(&t, &rd, &td, NULL));
    return t;
}

static float texel(const float* in, int x, int y) { return in[y * W + x]; }

int main(void) {
    unbuffered();
    hipChannelFormatDesc desc = hipCreateChannelDesc<float>();
    hipArray_t a = NULL;
    CHECK(hipMallocArray(&a, &desc, W, H, hipArrayDefault));
    float in[W * H];
    for (int i = 0; i < W * H; i++) in[i] = (float)(i * 2);
    CHECK(hipMemcpy2DToArray(a, 0, 0, in, W * sizeof(float), W * sizeof(float), H,
                             hipMemcpyHostToDevice));
    float* d = NULL;
    const int n = 2 * W * 2 * H;
    CHECK(hipMalloc(&d, n * sizeof(float)));
    float out[n];

    // Point sampling at texel centres, in texels.
    hipTextureObject_t t = make_texture(a, hipAddressModeClamp, hipFilterModePoint, 0);
    hipLaunchKernelGGL(fetch, dim3(H), dim3(W), 0, 0, t, d, 0.5f, 0.5f, 1.0f);
    CHECK(hipMemcpy(out, d, W * H * sizeof(float), hipMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            EXPECT(out[y * W + x] == texel(in, x, y), "point %d,%d: %g", x, y, out[y * W + x]);
    ok("point sampling");
    CHECK(hipDestroyTextureObject(t));

    // Normalised coordinates over twice the image: clamped to the last texel...
    t = make_texture(a, hipAddressModeClamp, hipFilterModePoint, 1);
    hipLaunchKernelGGL(fetch, dim3(2 * H), dim3(2 * W), 0, 0, t, d, 0.5f, 0.5f, 1.0f / W);
    CHECK(hipMemcpy(out, d, n * sizeof(float), hipMemcpyDeviceToHost));
    for (int y = 0; y < 2 * H; y++)
        for (int x = 0; x < 2 * W; x++) {
            // x texels of W per unit in x; y runs at the same scale (1/W per texel row).
            float u = (x + 0.5f) / W, v = (y + 0.5f) / W;
            int tx = (int)(u * W), ty = (int)(v * H);
            tx = tx < W ? tx : W - 1;
            ty = ty < H ? ty : H - 1;
            EXPECT(out[y * 2 * W + x] == texel(in, tx, ty), "clamp %d,%d: %g, want %g", x, y,
                   out[y * 2 * W + x], texel(in, tx, ty));
        }
    ok("normalised, clamped");
    CHECK(hipDestroyTextureObject(t));

    // ...and wrapped.
    t = make_texture(a, hipAddressModeWrap, hipFilterModePoint, 1);
    hipLaunchKernelGGL(fetch, dim3(2 * H), dim3(2 * W), 0, 0, t, d, 0.5f, 0.5f, 1.0f / W);
    CHECK(hipMemcpy(out, d, n * sizeof(float), hipMemcpyDeviceToHost));
    for (int y = 0; y < 2 * H; y++)
        for (int x = 0; x < 2 * W; x++) {
            float u = (x + 0.5f) / W, v = (y + 0.5f) / W;
            int tx = ((int)(u * W)) % W, ty = ((int)(v * H)) % H;
            EXPECT(out[y * 2 * W + x] == texel(in, tx, ty), "wrap %d,%d: %g, want %g", x, y,
                   out[y * 2 * W + x], texel(in, tx, ty));
        }
    ok("normalised, wrapped");
    CHECK(hipDestroyTextureObject(t));

    // Bilinear, halfway between texel centres in x (on a centre in y): the mean of the two.
    t = make_texture(a, hipAddressModeClamp, hipFilterModeLinear, 0);
    hipLaunchKernelGGL(fetch, dim3(H), dim3(W - 1), 0, 0, t, d, 1.0f, 0.5f, 1.0f);
    CHECK(hipMemcpy(out, d, (W - 1) * H * sizeof(float), hipMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W - 1; x++) {
            float want = (texel(in, x, y) + texel(in, x + 1, y)) / 2;
            EXPECT(out[y * (W - 1) + x] == want, "bilinear %d,%d: %g, want %g", x, y,
                   out[y * (W - 1) + x], want);
        }
    ok("bilinear");
    CHECK(hipDestroyTextureObject(t));

    CHECK(hipFree(d));
    CHECK(hipFreeArray(a));
    ok("done");
    return 0;
}
