// HIP arrays: a 2D array of float4 and one of uchar4 filled from host rows with a pitch
// (hipMemcpy2DToArray) and read back (hipMemcpy2DFromArray), and through device memory into a
// second array (HIP 5.2 has no array-to-array copy). HIP
// runs these through ROCr's image blit kernels (image_load and image_store).
#include "hip_check.h"

int main(void) {
    unbuffered();
    const size_t w = 37, h = 19;
    // float4 texels.
    {
        hipChannelFormatDesc desc = hipCreateChannelDesc<float4>();
        hipArray_t a = NULL, b = NULL;
        CHECK(hipMallocArray(&a, &desc, w, h, hipArrayDefault));
        CHECK(hipMallocArray(&b, &desc, w, h, hipArrayDefault));
        const size_t pitch = (w + 3) * sizeof(float4);
        float4* in = (float4*)malloc(pitch * h);
        float4* out = (float4*)calloc(w * h, sizeof(float4));
        EXPECT(in && out, "malloc");
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w + 3; x++)
                in[y * (w + 3) + x] = make_float4(x, y, x * 0.5f, -1.0f * y);
        CHECK(hipMemcpy2DToArray(a, 0, 0, in, pitch, w * sizeof(float4), h, hipMemcpyHostToDevice));
        CHECK(hipMemcpy2DFromArray(out, w * sizeof(float4), a, 0, 0, w * sizeof(float4), h,
                                   hipMemcpyDeviceToHost));
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                float4 g = out[y * w + x], e = in[y * (w + 3) + x];
                EXPECT(g.x == e.x && g.y == e.y && g.z == e.z && g.w == e.w,
                       "float4 texel %zu,%zu: %g %g %g %g", x, y, g.x, g.y, g.z, g.w);
            }
        ok("float4 array round trip");
        memset(out, 0, w * h * sizeof(float4));
        float4* dev = NULL;
        CHECK(hipMalloc(&dev, w * h * sizeof(float4)));
        CHECK(hipMemcpy2DFromArray(dev, w * sizeof(float4), a, 0, 0, w * sizeof(float4), h,
                                   hipMemcpyDeviceToDevice));
        CHECK(hipMemcpy2DToArray(b, 0, 0, dev, w * sizeof(float4), w * sizeof(float4), h,
                                 hipMemcpyDeviceToDevice));
        CHECK(hipMemcpy2DFromArray(out, w * sizeof(float4), b, 0, 0, w * sizeof(float4), h,
                                   hipMemcpyDeviceToHost));
        for (size_t i = 0; i < w * h; i++)
            EXPECT(out[i].x == in[(i / w) * (w + 3) + i % w].x, "array-to-array texel %zu", i);
        CHECK(hipFree(dev));
        ok("array through device memory to array");
        CHECK(hipFreeArray(a));
        CHECK(hipFreeArray(b));
        free(in);
        free(out);
    }
    // uchar4 texels.
    {
        hipChannelFormatDesc desc = hipCreateChannelDesc<uchar4>();
        hipArray_t a = NULL;
        CHECK(hipMallocArray(&a, &desc, w, h, hipArrayDefault));
        uchar4* in = (uchar4*)malloc(w * h * sizeof(uchar4));
        uchar4* out = (uchar4*)calloc(w * h, sizeof(uchar4));
        EXPECT(in && out, "malloc");
        for (size_t i = 0; i < w * h; i++) in[i] = make_uchar4(i, i >> 8, 255 - i, 7);
        CHECK(hipMemcpy2DToArray(a, 0, 0, in, w * sizeof(uchar4), w * sizeof(uchar4), h,
                                 hipMemcpyHostToDevice));
        CHECK(hipMemcpy2DFromArray(out, w * sizeof(uchar4), a, 0, 0, w * sizeof(uchar4), h,
                                   hipMemcpyDeviceToHost));
        for (size_t i = 0; i < w * h; i++)
            EXPECT(out[i].x == in[i].x && out[i].y == in[i].y && out[i].z == in[i].z &&
                       out[i].w == in[i].w,
                   "uchar4 texel %zu", i);
        ok("uchar4 array round trip");
        CHECK(hipFreeArray(a));
        free(in);
        free(out);
    }
    ok("done");
    return 0;
}
