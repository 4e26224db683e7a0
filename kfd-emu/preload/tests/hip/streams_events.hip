// Streams and events without kernels: streams of every kind, events of every kind recorded on
// them around asynchronous copies, cross-stream waits, queries, elapsed times, stream and
// device synchronisation, and stream callbacks.
#include "hip_check.h"

static volatile int callback_ran = 0;

static void callback(hipStream_t stream, hipError_t status, void* user) {
    (void)stream;
    if (status == hipSuccess) callback_ran = *(int*)user;
}

int main(void) {
    unbuffered();
    int lo = 0, hi = 0;
    CHECK(hipDeviceGetStreamPriorityRange(&lo, &hi));
    hipStream_t s[4];
    CHECK(hipStreamCreate(&s[0]));
    CHECK(hipStreamCreateWithFlags(&s[1], hipStreamNonBlocking));
    CHECK(hipStreamCreateWithPriority(&s[2], hipStreamDefault, hi));
    CHECK(hipStreamCreateWithPriority(&s[3], hipStreamNonBlocking, lo));
    unsigned flags = 0;
    CHECK(hipStreamGetFlags(s[1], &flags));
    EXPECT(flags == hipStreamNonBlocking, "stream flags %u", flags);
    int prio = 0;
    CHECK(hipStreamGetPriority(s[2], &prio));
    EXPECT(prio == hi, "stream priority %d, expected %d", prio, hi);
    ok("streams created");

    hipEvent_t start, mid, stop, nt, blocking;
    CHECK(hipEventCreate(&start));
    CHECK(hipEventCreate(&mid));
    CHECK(hipEventCreate(&stop));
    CHECK(hipEventCreateWithFlags(&nt, hipEventDisableTiming));
    CHECK(hipEventCreateWithFlags(&blocking, hipEventBlockingSync));
    ok("events created");

    // An unrecorded event is complete.
    CHECK(hipEventQuery(nt));

    const size_t n = 4 << 20;
    unsigned char *h0, *h1, *d0, *d1;
    CHECK(hipHostMalloc((void**)&h0, n, hipHostMallocDefault));
    CHECK(hipHostMalloc((void**)&h1, n, hipHostMallocDefault));
    CHECK(hipMalloc(&d0, n));
    CHECK(hipMalloc(&d1, n));
    fill_pattern(h0, n, 1);
    memset(h1, 0, n);

    // Stream 0 uploads; stream 1 waits for that (an event) before downloading into h1.
    CHECK(hipEventRecord(start, s[0]));
    CHECK(hipMemcpyAsync(d0, h0, n, hipMemcpyHostToDevice, s[0]));
    CHECK(hipEventRecord(mid, s[0]));
    CHECK(hipStreamWaitEvent(s[1], mid, 0));
    CHECK(hipMemcpyAsync(h1, d0, n, hipMemcpyDeviceToHost, s[1]));
    CHECK(hipEventRecord(stop, s[1]));
    CHECK(hipEventSynchronize(stop));
    CHECK(hipEventQuery(stop));
    EXPECT_PATTERN(h1, n, 1, "copy ordered by an event");
    float ms = -1;
    CHECK(hipEventElapsedTime(&ms, start, mid));
    EXPECT(ms >= 0, "elapsed start..mid %f ms", ms);
    CHECK(hipEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0, "elapsed start..stop %f ms", ms);
    EXPECT(hipEventElapsedTime(&ms, start, nt) != hipSuccess,
           "elapsed time of an event without timing");
    (void)hipGetLastError();
    ok("cross-stream event wait");

    // Work on every stream, with a no-timing and a blocking-sync event, then stream and device
    // synchronisation.
    for (int i = 0; i < 4; i++) {
        fill_pattern(h0 + i * (n / 4), n / 4, 10 + i);
        CHECK(hipMemcpyAsync(d1 + i * (n / 4), h0 + i * (n / 4), n / 4, hipMemcpyHostToDevice,
                             s[i]));
    }
    CHECK(hipEventRecord(nt, s[2]));
    CHECK(hipEventRecord(blocking, s[3]));
    CHECK(hipEventSynchronize(blocking));
    CHECK(hipStreamSynchronize(s[2]));
    CHECK(hipEventQuery(nt));
    CHECK(hipDeviceSynchronize());
    for (int i = 0; i < 4; i++) CHECK(hipStreamQuery(s[i]));
    memset(h1, 0, n);
    CHECK(hipMemcpy(h1, d1, n, hipMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++) EXPECT_PATTERN(h1 + i * (n / 4), n / 4, 10 + i, "per-stream copy");
    ok("stream and device synchronisation");

    // The null stream orders with blocking streams.
    fill_pattern(h0, n, 20);
    CHECK(hipMemcpyAsync(d0, h0, n, hipMemcpyHostToDevice, 0));
    memset(h1, 0, n);
    CHECK(hipMemcpyAsync(h1, d0, n, hipMemcpyDeviceToHost, s[0]));
    CHECK(hipStreamSynchronize(s[0]));
    EXPECT_PATTERN(h1, n, 20, "null stream then a blocking stream");
    ok("null stream");

    int token = 1234;
    CHECK(hipStreamAddCallback(s[1], callback, &token, 0));
    CHECK(hipStreamSynchronize(s[1]));
    for (int i = 0; i < 1000 && callback_ran != 1234; i++) usleep(1000);
    EXPECT(callback_ran == 1234, "stream callback did not run");
    ok("stream callback");

    // Many records and waits in a row.
    for (int i = 0; i < 200; i++) {
        CHECK(hipEventRecord(mid, s[i % 4]));
        CHECK(hipStreamWaitEvent(s[(i + 1) % 4], mid, 0));
    }
    CHECK(hipDeviceSynchronize());
    ok("200 record/wait pairs");

    hipEvent_t events[] = {start, mid, stop, nt, blocking};
    for (unsigned i = 0; i < sizeof events / sizeof events[0]; i++) CHECK(hipEventDestroy(events[i]));
    for (int i = 0; i < 4; i++) CHECK(hipStreamDestroy(s[i]));
    CHECK(hipFree(d0));
    CHECK(hipFree(d1));
    CHECK(hipHostFree(h0));
    CHECK(hipHostFree(h1));
    ok("done");
    return 0;
}
