// Runtime bring-up without kernels: device count and properties, attributes, allocation and
// freeing of device memory, memory info and device synchronisation on every GPU.
// Usage: device <expected GPU count>
#include "hip_check.h"

int main(int argc, char** argv) {
    unbuffered();
    int expected = argc > 1 ? atoi(argv[1]) : 1;
    int version = 0;
    CHECK(hipRuntimeGetVersion(&version));
    EXPECT(version > 0, "runtime version %d", version);
    CHECK(hipDriverGetVersion(&version));
    int count = 0;
    CHECK(hipGetDeviceCount(&count));
    EXPECT(count == expected, "%d devices, expected %d", count, expected);
    ok("device count");

    for (int d = 0; d < count; d++) {
        CHECK(hipSetDevice(d));
        int current = -1;
        CHECK(hipGetDevice(&current));
        EXPECT(current == d, "current device %d, expected %d", current, d);
        hipDeviceProp_t p;
        CHECK(hipGetDeviceProperties(&p, d));
        printf("device %d: %s, %s, %d CUs, wave %d, %zu MiB, LDS %zu KiB, clock %d kHz\n", d,
               p.name, p.gcnArchName, p.multiProcessorCount, p.warpSize,
               p.totalGlobalMem >> 20, p.sharedMemPerBlock >> 10, p.clockRate);
        EXPECT(strncmp(p.gcnArchName, "gfx90a", 6) == 0, "arch %s", p.gcnArchName);
        EXPECT(p.gcnArch == 910, "gcnArch %d", p.gcnArch);
        EXPECT(p.major == 9 && p.minor == 0, "compute capability %d.%d", p.major, p.minor);
        EXPECT(p.multiProcessorCount == 104, "%d CUs", p.multiProcessorCount);
        EXPECT(p.warpSize == 64, "wave size %d", p.warpSize);
        EXPECT(p.totalGlobalMem == (64ull << 30), "%zu bytes of VRAM", p.totalGlobalMem);
        EXPECT(p.sharedMemPerBlock == 64 * 1024, "LDS %zu", p.sharedMemPerBlock);
        EXPECT(p.maxThreadsPerBlock == 1024, "max threads %d", p.maxThreadsPerBlock);
        EXPECT(p.clockRate == 1700000, "clock %d kHz", p.clockRate);
        EXPECT(p.isMultiGpuBoard == 0 || p.isMultiGpuBoard == 1, "multi-GPU board flag");
        int attr = 0;
        CHECK(hipDeviceGetAttribute(&attr, hipDeviceAttributeMultiprocessorCount, d));
        EXPECT(attr == 104, "attribute CU count %d", attr);
        CHECK(hipDeviceGetAttribute(&attr, hipDeviceAttributeWarpSize, d));
        EXPECT(attr == 64, "attribute wave size %d", attr);
        char bus[64] = {0};
        CHECK(hipDeviceGetPCIBusId(bus, sizeof bus, d));
        EXPECT(bus[0] != 0, "empty PCI bus id");
        printf("device %d: PCI %s\n", d, bus);

        size_t free0 = 0, total = 0;
        CHECK(hipMemGetInfo(&free0, &total));
        EXPECT(total == (64ull << 30), "hipMemGetInfo total %zu", total);
        EXPECT(free0 > 0 && free0 <= total, "free %zu of %zu", free0, total);

        const size_t sizes[] = {1, 4096, 4097, 1 << 20, (256u << 20) + 12345};
        void* ptrs[sizeof sizes / sizeof sizes[0]];
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            CHECK(hipMalloc(&ptrs[i], sizes[i]));
            EXPECT(ptrs[i] != NULL, "hipMalloc(%zu) gave NULL", sizes[i]);
            EXPECT(((uintptr_t)ptrs[i] & 255) == 0, "hipMalloc(%zu) = %p is misaligned",
                   sizes[i], ptrs[i]);
            hipPointerAttribute_t a;
            CHECK(hipPointerGetAttributes(&a, ptrs[i]));
            EXPECT(a.memoryType == hipMemoryTypeDevice, "memory type %d", (int)a.memoryType);
            EXPECT(a.device == d, "pointer's device %d", a.device);
        }
        size_t free1 = 0;
        CHECK(hipMemGetInfo(&free1, &total));
        EXPECT(free1 + (256u << 20) <= free0, "free memory went from %zu to %zu", free0, free1);
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) CHECK(hipFree(ptrs[i]));
        CHECK(hipFree(NULL));
        void* big = NULL;
        EXPECT(hipMalloc(&big, 1ull << 40) == hipErrorOutOfMemory, "1 TiB hipMalloc succeeded");
        (void)hipGetLastError();
        CHECK(hipDeviceSynchronize());
        printf("ok device %d\n", d);
    }
    CHECK(hipSetDevice(0));
    EXPECT(hipSetDevice(count) == hipErrorInvalidDevice, "hipSetDevice past the last GPU");
    (void)hipGetLastError();
    CHECK(hipDeviceReset());
    ok("done");
    return 0;
}
