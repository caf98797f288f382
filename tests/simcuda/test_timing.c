/* Self-test: the timing model, observed through CUPTI records and CUDA
 * events. Expected durations are hand-computed from the README's model
 * with default parameters (132 SMs, 10000 ns per wave, 25 and 3000 B/ns,
 * 2000 ns copy latency). */
#include <cuda_runtime_api.h>
#include <math.h>

#include "test_records.h"

/* Kernels are host functions named by their dynamic symbol (-rdynamic).
 * Distinct bodies keep the compiler from folding them together. */
volatile int sink;
void k_big(void) {
  sink = 1;
}
void k_small(void) {
  sink = 2;
}
void k_other(void) {
  sink = 3;
}

/* Not declared by cuda_runtime_api.h without the per-thread compile flag. */
cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t,
                                  cudaStream_t);

static cudaError_t launch(void (*k)(void), dim3 grid, unsigned threads,
                          cudaStream_t s) {
  dim3 block = {threads, 1, 1};
  return cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s);
}

static cudaError_t launch1(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 grid = {blocks, 1, 1};
  return launch(k, grid, 128, s);
}

static uint64_t dur(const CUpti_ActivityKernel10 *k) {
  return k->end - k->start;
}

static void test_kernel_durations(cudaStream_t s) {
  rec_clear();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(launch1(k_small, 1, s), cudaSuccess);   /* 1 wave */
  CHECK_EQ(launch1(k_small, 132, s), cudaSuccess); /* 1 wave */
  CHECK_EQ(launch1(k_small, 133, s), cudaSuccess); /* 2 waves */
  CHECK_EQ(launch1(k_small, 265, s), cudaSuccess); /* 3 waves */
  dim3 g2 = {11, 12, 1};                           /* 132 blocks: 1 wave */
  dim3 g3 = {2, 2, 34};                            /* 136 blocks: 2 waves */
  CHECK_EQ(launch(k_other, g2, 1024, s), cudaSuccess);
  CHECK_EQ(launch(k_other, g3, 1, s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  static const uint64_t want[] = {BIG_NS, 10000, 10000, 20000,
                                  30000,  10000, 20000};
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 7);
  for (int i = 0; i < 7; i++) {
    CHECK_EQ(dur(KERNEL(i)), want[i]);
    if (i > 0) /* FIFO: each starts when the previous one ends */
      CHECK_EQ(KERNEL(i)->start, KERNEL(i - 1)->end);
  }
  CHECK(strcmp(KERNEL(0)->name, "k_big") == 0);
  CHECK(strcmp(KERNEL(5)->name, "k_other") == 0);
  CHECK_EQ(KERNEL(5)->gridX, 11);
  CHECK_EQ(KERNEL(5)->gridY, 12);
  CHECK_EQ(KERNEL(5)->blockX, 1024);
  CHECK_EQ(KERNEL(6)->gridZ, 34);
  CHECK_EQ(KERNEL(0)->registersPerThread, 32);
  CHECK_EQ(KERNEL(0)->deviceId, 0);
  CHECK_EQ(KERNEL(0)->contextId, 1);
}

/* Recording behind a long kernel pins the events to simulated times, so
 * the elapsed time is exactly the 2-wave kernel between them. */
static void test_event_elapsed(cudaStream_t s) {
  cudaEvent_t a, b;
  CHECK_EQ(cudaEventCreate(&a), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&b), cudaSuccess);
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(cudaEventRecord(a, s), cudaSuccess);
  CHECK_EQ(launch1(k_small, 264, s), cudaSuccess); /* 2 waves */
  CHECK_EQ(cudaEventRecord(b, s), cudaSuccess);
  float ms = -1;
  CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
  CHECK_EQ(cudaEventQuery(b), cudaErrorNotReady);
  CHECK_EQ(cudaEventSynchronize(b), cudaSuccess);
  CHECK_EQ(cudaEventQuery(b), cudaSuccess);
  CHECK_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  CHECK(fabsf(ms - 0.020f) < 1e-6f);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

/* cudaFree returns once the device's work is done, as CUDA's (an
 * implicit synchronisation); cudaFreeAsync does not wait. */
static void test_free_waits(cudaStream_t s) {
  cudaEvent_t e;
  void *p = NULL, *q = NULL;
  CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
  CHECK_EQ(cudaMalloc(&p, 256), cudaSuccess);
  CHECK_EQ(cudaMallocAsync(&q, 256, s), cudaSuccess);
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
  CHECK_EQ(cudaFreeAsync(q, s), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
  CHECK_EQ(cudaFree(p), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaSuccess);
  CHECK_EQ(cudaFree(p), cudaErrorInvalidValue); /* freed already */
  cudaEventDestroy(e);
}

/* CUDA's event flags only; interprocess needs timing disabled; an event
 * without timing has no elapsed time */
static void test_event_flags(cudaStream_t s) {
  cudaEvent_t e = NULL, t;
  CHECK_EQ(cudaEventCreateWithFlags(&e, 0x80), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventInterprocess),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaEventCreateWithFlags(
               &e, cudaEventInterprocess | cudaEventDisableTiming),
           cudaSuccess);
  CHECK_EQ(cudaEventCreateWithFlags(&t, cudaEventBlockingSync), cudaSuccess);
  CHECK_EQ(cudaEventRecordWithFlags(t, s, 0x10), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventRecordWithFlags(t, s, cudaEventRecordExternal),
           cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
  float ms;
  CHECK_EQ(cudaEventElapsedTime(&ms, t, e), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(e);
  cudaEventDestroy(t);
}

static void test_overlap(void) {
  cudaStream_t n1, n2;
  CHECK_EQ(cudaStreamCreateWithFlags(&n1, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&n2, cudaStreamNonBlocking), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, n1), cudaSuccess);
  uint64_t before = mono_ns();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, n2), cudaSuccess);
  uint64_t after = mono_ns();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 2);
  /* The idle stream starts at issue time, inside the launch call. */
  CHECK(KERNEL(1)->start >= before && KERNEL(1)->start <= after);
  CHECK(KERNEL(1)->start < KERNEL(0)->end);
  CHECK(KERNEL(0)->streamId != KERNEL(1)->streamId);
  cudaStreamDestroy(n1);
  cudaStreamDestroy(n2);
}

/* Blocking streams (the per-thread default streams among them, as
 * CUDA's) and the legacy stream wait for each other; the non-blocking
 * streams wait for neither. */
static void test_legacy_stream(void) {
  cudaStream_t b1, n1;
  CHECK_EQ(cudaStreamCreate(&b1), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&n1, cudaStreamNonBlocking), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, b1), cudaSuccess); /* 0 */
  CHECK_EQ(launch1(k_small, 1, 0), cudaSuccess);         /* 1: waits for 0 */
  CHECK_EQ(launch1(k_small, 1, b1), cudaSuccess);        /* 2: waits for 1 */
  CHECK_EQ(launch1(k_other, 1, n1), cudaSuccess);        /* 3: no wait */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, n1), cudaSuccess);        /* 4 */
  CHECK_EQ(launch1(k_small, 1, cudaStreamLegacy), cudaSuccess); /* 5 */
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, 0), cudaSuccess);         /* 6 */
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, cudaStreamPerThread),
           cudaSuccess); /* 7 */
  dim3 one = {1, 1, 1}, blk = {32, 1, 1};
  CHECK_EQ(cudaLaunchKernel_ptsz((const void *)k_small, one, blk, NULL, 0, 0),
           cudaSuccess); /* 8: the per-thread stream again */
  CHECK_EQ(launch1(k_small, 1, 0), cudaSuccess); /* 9: legacy after 8 */
  CHECK_EQ(launch1(k_other, 1, n1), cudaSuccess); /* 10: no wait */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 11);
  CHECK_EQ(KERNEL(9)->start, KERNEL(8)->end);
  CHECK(KERNEL(10)->start < KERNEL(9)->start);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  CHECK_EQ(KERNEL(2)->start, KERNEL(1)->end);
  CHECK(KERNEL(3)->start < KERNEL(0)->end);
  CHECK(KERNEL(5)->start < KERNEL(4)->end);
  CHECK_EQ(KERNEL(7)->start, KERNEL(6)->end); /* per-thread after legacy */
  CHECK_EQ(KERNEL(8)->start, KERNEL(7)->end);
  CHECK_EQ(KERNEL(8)->streamId, KERNEL(7)->streamId);
  CHECK(KERNEL(7)->streamId != KERNEL(6)->streamId);
  CHECK_EQ(KERNEL(5)->streamId, KERNEL(6)->streamId);
  cudaStreamDestroy(b1);
  cudaStreamDestroy(n1);
}

/* An event record and an event wait on the legacy stream are actions of
 * that stream like a launch: they wait for the blocking streams, which
 * then wait for them, so a blocking stream's next kernel waits for
 * another blocking stream's earlier one. */
static void test_legacy_actions(void) {
  cudaStream_t b1, b2, n1;
  cudaEvent_t e, f;
  CHECK_EQ(cudaStreamCreate(&b1), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&b2), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&n1, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&f), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, b1), cudaSuccess); /* 0 */
  CHECK_EQ(cudaEventRecord(e, 0), cudaSuccess);
  CHECK_EQ(launch1(k_small, 1, b2), cudaSuccess); /* 1: waits for 0 */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(cudaEventRecord(f, n1), cudaSuccess); /* nothing before it */
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, b1), cudaSuccess); /* 2 */
  CHECK_EQ(cudaStreamWaitEvent(0, f, 0), cudaSuccess);
  CHECK_EQ(launch1(k_small, 1, b2), cudaSuccess); /* 3: waits for 2 */
  CHECK_EQ(launch1(k_other, 1, n1), cudaSuccess); /* 4: waits for none */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 5);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  CHECK_EQ(KERNEL(3)->start, KERNEL(2)->end);
  CHECK(KERNEL(4)->start < KERNEL(2)->end);
  cudaEventDestroy(e);
  cudaEventDestroy(f);
  cudaStreamDestroy(b1);
  cudaStreamDestroy(b2);
  cudaStreamDestroy(n1);
}

static void test_wait_event(void) {
  cudaStream_t n1, n2;
  cudaEvent_t e;
  CHECK_EQ(cudaStreamCreateWithFlags(&n1, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&n2, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch1(k_big, BIG_BLOCKS, n1), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, n1), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(n2, e, 0), cudaSuccess);
  CHECK_EQ(launch1(k_small, 1, n2), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(n2), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 2);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  const rec *w = rec_nth(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 0);
  REQUIRE(w);
  CHECK_EQ(w->u.y.type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
  CHECK_EQ(w->u.y.streamId, KERNEL(1)->streamId);
  const rec *y = rec_nth(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 1);
  REQUIRE(y);
  CHECK_EQ(y->u.y.type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  CHECK(y->u.y.end >= KERNEL(1)->end);
  CHECK(y->u.y.end <= KERNEL(1)->end + WALL_TOLERANCE_NS);
  float ms;
  CHECK_EQ(cudaEventElapsedTime(&ms, e, e), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(e);
  cudaStreamDestroy(n1);
  cudaStreamDestroy(n2);
}

int main(void) {
  rec_start();
  REQUIRE(cudaFree(0) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  test_kernel_durations(s);
  test_event_elapsed(s);
  test_event_flags(s);
  test_free_waits(s);
  test_overlap();
  test_legacy_stream();
  test_legacy_actions();
  test_wait_event();
  cudaStreamDestroy(s);
  return test_result("test_timing");
}
