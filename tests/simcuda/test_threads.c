/* Self-test: many application threads using the runtime at once, each on
 * its own non-blocking stream and its per-thread default stream. Run
 * under the sanitizers this is also the data-race and leak check of the
 * simulation's locking. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "test_records.h"

volatile int sink;
void k_thread(void) {
  sink = 1;
}

#define THREADS 8
#define LAUNCHES 50

static void *worker(void *arg) {
  (void)arg;
  cudaStream_t s;
  void *d;
  CHECK_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  dim3 g = {133, 1, 1}, b = {64, 1, 1}; /* 2 waves: 20000 ns */
  for (int i = 0; i < LAUNCHES; i++) {
    CHECK_EQ(cudaLaunchKernel((const void *)k_thread, g, b, NULL, 0, s),
             cudaSuccess);
    CHECK_EQ(cudaMemsetAsync(d, 0, 4096, cudaStreamPerThread), cudaSuccess);
  }
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  CHECK_EQ(cudaFree(d), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  return NULL;
}

static int by_stream_then_start(const void *pa, const void *pb) {
  const CUpti_ActivityKernel10 *a = pa, *b = pb;
  if (a->streamId != b->streamId) return a->streamId < b->streamId ? -1 : 1;
  return a->start < b->start ? -1 : a->start > b->start;
}

int main(void) {
  rec_buffer_size = 4096; /* many buffer hand-overs between threads */
  rec_start();
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    REQUIRE(pthread_create(&t[i], NULL, worker, NULL) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
           THREADS * LAUNCHES);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMSET), THREADS * LAUNCHES);
  /* Per stream, kernels never overlap: FIFO holds under contention.
   * Buffers complete in any order, so sort by stream and start first. */
  static CUpti_ActivityKernel10 k[THREADS * LAUNCHES];
  int n = 0;
  for (int i = 0; i < nrecs && n < THREADS * LAUNCHES; i++)
    if (recs[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      k[n++] = recs[i].u.k;
  qsort(k, (size_t)n, sizeof k[0], by_stream_then_start);
  int checked = 0;
  for (int i = 0; i < n; i++) {
    CHECK_EQ(k[i].end - k[i].start, 20000);
    if (i > 0 && k[i].streamId == k[i - 1].streamId) {
      CHECK(k[i].start >= k[i - 1].end);
      checked++;
    }
  }
  CHECK_EQ(checked, THREADS * (LAUNCHES - 1));
  size_t dropped = 1;
  CHECK_EQ(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
  CHECK_EQ(dropped, 0);
  return test_result("test_threads");
}
