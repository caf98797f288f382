/* Self-test: the launch queue, set by meson to GPUSIM_LAUNCH_QUEUE=3: a
 * device holds 3 kernels unfinished; the next launch, on any of its
 * streams, waits for the oldest to end, as a real launch queue makes the
 * launch call block once it is full. */
#include <cuda_runtime_api.h>

#include "test_records.h"

volatile int sink;
void k_q(void) {
  sink = 1;
}

/* 100 ms: ceil(1320000 / 132) waves of 10000 ns */
static cudaError_t launch_big(cudaStream_t s) {
  dim3 g = {BIG_BLOCKS, 1, 1}, b = {32, 1, 1};
  return cudaLaunchKernel((const void *)k_q, g, b, NULL, 0, s);
}

int main(void) {
  rec_start();
  REQUIRE(cudaFree(0) == cudaSuccess);
  cudaStream_t s1, s2;
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) ==
          cudaSuccess);
  rec_clear();
  /* kernels 0, 1, 2 on s1: 0 runs [t, t + 100 ms), 1 and 2 after it */
  for (int i = 0; i < 3; i++) CHECK_EQ(launch_big(s1), cudaSuccess);
  uint64_t third = mono_ns();
  /* kernel 3, on the idle s2: the queue is full, so the call returns only
   * once kernel 0 has ended; then kernel 3 starts at once, beside 1 */
  CHECK_EQ(launch_big(s2), cudaSuccess);
  uint64_t fourth = mono_ns();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 4);
  CHECK(third < KERNEL(0)->end);
  CHECK(fourth >= KERNEL(0)->end);
  CHECK(fourth <= KERNEL(0)->end + WALL_TOLERANCE_NS);
  CHECK(KERNEL(3)->start >= KERNEL(0)->end);
  CHECK(KERNEL(3)->start < KERNEL(1)->end);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  return test_result("test_queue");
}
