/* Work on GPU 1 waited for from GPU 0 (run with GPUSIM_DEVICES=2): the
 * program makes GPU 1 current, creates a stream and an event there and
 * launches kernels on that stream, then makes GPU 0 current and waits for
 * them, once with cudaStreamSynchronize on GPU 1's stream and once with
 * cudaEventSynchronize on an event recorded on it; GPU 0 runs nothing.
 * Then, GPU 0 current, it allocates 1 MiB stream-ordered on GPU 1's stream
 * (cudaMallocAsync: from that stream's device's pool), frees it there and
 * waits: a memory peak of 1 MiB on GPU 1, none on GPU 0.
 * Model figures (test_fidelity.py): 2 x 5 kernels on GPU 1 of 20 waves
 * each (132 SMs, 2,640 blocks of 128 threads: 200 us at the default 10 us
 * a wave), none on GPU 0; the two waits block on GPU 1's work, so no
 * thread is ever blocked on GPU 0. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void xstream_work(void);
void xstream_work(void) {}

static int launches(cudaStream_t s) {
  dim3 grid = {132u * 20u, 1, 1}, block = {128, 1, 1};
  for (int i = 0; i < 5; i++)
    if (cudaLaunchKernel((const void *)xstream_work, grid, block, NULL, 0, s) !=
        cudaSuccess)
      return 1;
  return 0;
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {
    fprintf(stderr, "needs 2 GPUs, found %d\n", n);
    return 1;
  }
  cudaStream_t s1;
  cudaEvent_t e1;
  if (cudaSetDevice(1) != cudaSuccess || cudaStreamCreate(&s1) != cudaSuccess ||
      cudaEventCreate(&e1) != cudaSuccess || launches(s1) ||
      cudaSetDevice(0) != cudaSuccess || cudaStreamSynchronize(s1) != cudaSuccess)
    return 1;
  if (cudaSetDevice(1) != cudaSuccess || launches(s1) ||
      cudaEventRecord(e1, s1) != cudaSuccess || cudaSetDevice(0) != cudaSuccess ||
      cudaEventSynchronize(e1) != cudaSuccess)
    return 1;
  void *p = NULL;
  if (cudaMallocAsync(&p, 1u << 20, s1) != cudaSuccess ||
      cudaFreeAsync(p, s1) != cudaSuccess || cudaStreamSynchronize(s1) != cudaSuccess)
    return 1;
  if (cudaSetDevice(1) != cudaSuccess || cudaEventDestroy(e1) != cudaSuccess ||
      cudaStreamDestroy(s1) != cudaSuccess)
    return 1;
  puts("done");
  return 0;
}
