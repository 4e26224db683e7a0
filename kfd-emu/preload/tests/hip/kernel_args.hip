// Kernel arguments of many kinds: pointers, scalars of 1, 2, 4 and 8 bytes (signed, unsigned,
// floating point), structs by value (small, with padding, large with an array), a vector type,
// and many arguments at once. Each kernel writes what it received; the host compares.
#include "hip_check.h"
#include <stdint.h>

struct Small {
    int8_t a;
    int32_t b; // after 3 bytes of padding
};

struct Mixed {
    double d;
    uint16_t h;
    float f;
    uint64_t q;
};

struct Big {
    int32_t v[40];
    int64_t tail;
};

__global__ void scalars(int64_t* out, int8_t i8, uint8_t u8, int16_t i16, uint16_t u16,
                        int32_t i32, uint32_t u32, int64_t i64, uint64_t u64, float f, double d,
                        bool flag) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    out[0] = i8;
    out[1] = u8;
    out[2] = i16;
    out[3] = u16;
    out[4] = i32;
    out[5] = u32;
    out[6] = i64;
    out[7] = (int64_t)u64;
    out[8] = (int64_t)(f * 1000.0f);
    out[9] = (int64_t)(d * 1000000.0);
    out[10] = flag;
}

__global__ void structs(int64_t* out, Small s, Mixed m, Big b, float4 v, const int32_t* in) {
    int t = threadIdx.x;
    if (t < 40) out[t] = (int64_t)b.v[t] + in[t];
    if (t == 0) {
        out[40] = s.a;
        out[41] = s.b;
        out[42] = (int64_t)(m.d * 4.0);
        out[43] = m.h;
        out[44] = (int64_t)(m.f * 8.0f);
        out[45] = (int64_t)m.q;
        out[46] = b.tail;
        out[47] = (int64_t)(v.x + 10 * v.y + 100 * v.z + 1000 * v.w);
    }
}

__global__ void many(int64_t* out, int a0, int a1, int a2, int a3, int a4, int a5, int a6,
                     int a7, int a8, int a9, int a10, int a11, int a12, int a13, int a14,
                     int a15, int64_t a16, char a17, short a18, double a19) {
    if (threadIdx.x != 0) return;
    out[0] = (int64_t)a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 +
             a14 + a15;
    out[1] = a16;
    out[2] = a17;
    out[3] = a18;
    out[4] = (int64_t)a19;
}

int main(void) {
    unbuffered();
    int64_t* out;
    CHECK(hipMalloc(&out, 64 * sizeof(int64_t)));
    int64_t h[64];

    // Zeroed by a copy (hipMemset would run HIP's fill kernel before the ones under test).
    memset(h, 0, sizeof h);
    CHECK(hipMemcpy(out, h, sizeof h, hipMemcpyHostToDevice));
    scalars<<<1, 64>>>(out, -5, 250, -30000, 65000, -2000000000, 4000000000u,
                       -9000000000000000000ll, 18000000000000000000ull, 1.5f, -2.25, true);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost));
    const int64_t want[] = {-5,         250,         -30000,  65000,   -2000000000,
                            4000000000, -9000000000000000000ll, (int64_t)18000000000000000000ull,
                            1500,       -2250000,    1};
    for (int i = 0; i < 11; i++) EXPECT(h[i] == want[i], "scalar %d: %lld, expected %lld", i,
                                        (long long)h[i], (long long)want[i]);
    ok("scalars");

    Small s = {-7, 123456};
    Mixed m = {2.5, 0xABCD, 0.25f, 0x0123456789ABCDEFull};
    Big b;
    for (int i = 0; i < 40; i++) b.v[i] = i * 1000;
    b.tail = -42;
    float4 v = make_float4(1, 2, 3, 4);
    int32_t hin[40];
    for (int i = 0; i < 40; i++) hin[i] = i;
    int32_t* in;
    CHECK(hipMalloc(&in, sizeof hin));
    CHECK(hipMemcpy(in, hin, sizeof hin, hipMemcpyHostToDevice));
    structs<<<1, 64>>>(out, s, m, b, v, in);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost));
    for (int i = 0; i < 40; i++) EXPECT(h[i] == i * 1001, "Big.v[%d]+in: %lld", i, (long long)h[i]);
    EXPECT(h[40] == -7 && h[41] == 123456, "Small: %lld %lld", (long long)h[40], (long long)h[41]);
    EXPECT(h[42] == 10 && h[43] == 0xABCD && h[44] == 2 && h[45] == 0x0123456789ABCDEFll,
           "Mixed: %lld %lld %lld %llx", (long long)h[42], (long long)h[43], (long long)h[44],
           (unsigned long long)h[45]);
    EXPECT(h[46] == -42, "Big.tail %lld", (long long)h[46]);
    EXPECT(h[47] == 4321, "float4 %lld", (long long)h[47]);
    ok("structs by value");

    many<<<1, 1>>>(out, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                   0x7000000000000001ll, 'x', -300, 12345.0);
    CHECK(hipGetLastError());
    CHECK(hipMemcpy(h, out, 5 * sizeof(int64_t), hipMemcpyDeviceToHost));
    EXPECT(h[0] == 136 && h[1] == 0x7000000000000001ll && h[2] == 'x' && h[3] == -300 &&
               h[4] == 12345,
           "many: %lld %llx %lld %lld %lld", (long long)h[0], (unsigned long long)h[1],
           (long long)h[2], (long long)h[3], (long long)h[4]);
    ok("many arguments");

    CHECK(hipFree(in));
    CHECK(hipFree(out));
    ok("done");
    return 0;
}
