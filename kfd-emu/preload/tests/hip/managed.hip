// Managed memory and its range queries (ROCr's SVM attributes through libhsakmt): advice set on
// hipMallocManaged memory reads back through hipMemRangeGetAttribute (read-mostly asks the
// driver for the flags every range has and the flags none has together), a prefetch to the
// GPU, a kernel writing the memory in place and the host reading it.
#include "hip_check.h"

__global__ void add_one(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

int main(void) {
    unbuffered();
    const int n = 1 << 18;
    const size_t bytes = n * sizeof(int);
    int* m = NULL;
    CHECK(hipMallocManaged((void**)&m, bytes, hipMemAttachGlobal));
    for (int i = 0; i < n; i++) m[i] = i;
    ok("hipMallocManaged");

    CHECK(hipMemAdvise(m, bytes, hipMemAdviseSetPreferredLocation, 0));
    int loc = -5;
    CHECK(hipMemRangeGetAttribute(&loc, sizeof(loc), hipMemRangeAttributePreferredLocation, m,
                                  bytes));
    EXPECT(loc == 0, "preferred location %d, expected device 0", loc);
    ok("preferred location");

    int mostly = -5;
    CHECK(hipMemRangeGetAttribute(&mostly, sizeof(mostly), hipMemRangeAttributeReadMostly, m,
                                  bytes));
    EXPECT(mostly == 0, "read-mostly %d before any advice", mostly);
    CHECK(hipMemAdvise(m, bytes, hipMemAdviseSetReadMostly, 0));
    CHECK(hipMemRangeGetAttribute(&mostly, sizeof(mostly), hipMemRangeAttributeReadMostly, m,
                                  bytes));
    EXPECT(mostly == 1, "read-mostly %d after the advice", mostly);
    CHECK(hipMemAdvise(m, bytes, hipMemAdviseUnsetReadMostly, 0));
    ok("read mostly");

    CHECK(hipMemPrefetchAsync(m, bytes, 0, 0));
    add_one<<<n / 256, 256>>>(m, n);
    CHECK(hipGetLastError());
    CHECK(hipDeviceSynchronize());
    for (int i = 0; i < n; i++) EXPECT(m[i] == i + 1, "m[%d] = %d", i, m[i]);
    ok("kernel on managed memory");

    CHECK(hipFree(m));
    ok("done");
    return 0;
}
