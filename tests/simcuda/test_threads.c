/* Self-test: many application threads using the runtime at once, each on
 * its own non-blocking stream and its per-thread default stream. Run
 * under the sanitizers this is also the data-race and leak check of the
 * simulation's locking. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "test_records.h"

volatile int sink;
void k_thread(void) { sink = 1; }

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
  /* Per stream, kernels are back to back: FIFO holds under contention. */
  int checked = 0;
  for (int i = 0; i < nrecs; i++) {
    const CUpti_ActivityKernel10 *a = &recs[i].u.k;
    if (recs[i].kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      continue;
    CHECK_EQ(a->end - a->start, 20000);
    for (int j = i + 1; j < nrecs; j++) {
      const CUpti_ActivityKernel10 *b = &recs[j].u.k;
      if (recs[j].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          b->streamId == a->streamId) {
        CHECK(b->start >= a->end);
        checked++;
        break;
      }
    }
  }
  CHECK_EQ(checked, THREADS * (LAUNCHES - 1));
  size_t dropped = 1;
  CHECK_EQ(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped),
           CUPTI_SUCCESS);
  CHECK_EQ(dropped, 0);
  return test_result("test_threads");
}
