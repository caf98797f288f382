/* Work on GPU 1 waited for from GPU 0 (run with GPUSIM_DEVICES=2): the
 * program makes GPU 1 current, creates a stream and an event there and
 * launches kernels on that stream, then makes GPU 0 current and waits for
 * them, once with cudaStreamSynchronize on GPU 1's stream and once with
 * cudaEventSynchronize on an event recorded on it; GPU 0 runs nothing.
 * Then, GPU 0 current, it allocates 1 MiB stream-ordered on GPU 1's stream
 * (cudaMallocAsync: from that stream's device's pool), frees it there and
 * waits: a memory peak of 1 MiB on GPU 1, none on GPU 0.
 * Last, a wait that begins before the device record of the stream's first
 * work: GPU 1 current, a new stream s3 waits for an event recorded behind
 * a kernel of 100 waves (1 ms) on another new stream s2, and one kernel is
 * launched on s3; then, GPU 0 current, s3 is synchronised. s3's kernel
 * starts only when the long one ends, after the wait began.
 * Model figures (test_fidelity.py): 2 x 5 kernels on GPU 1 of 20 waves
 * each, then one of 100 waves and one of 20 (132 SMs, 2,640 blocks of 128 threads: 200 us at the default 10 us
 * a wave), none on GPU 0; the two waits block on GPU 1's work, so no
 * thread is ever blocked on GPU 0. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void xstream_work(void);
void xstream_work(void) {}

static int launch_n(cudaStream_t s, int n, unsigned waves) {
  dim3 grid = {132u * waves, 1, 1}, block = {128, 1, 1};
  for (int i = 0; i < n; i++)
    if (cudaLaunchKernel((const void *)xstream_work, grid, block, NULL, 0, s) !=
        cudaSuccess)
      return 1;
  return 0;
}

static int launches(cudaStream_t s) {
  return launch_n(s, 5, 20);
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
  cudaStream_t s2, s3;
  cudaEvent_t e2;
  if (cudaSetDevice(1) != cudaSuccess || cudaStreamCreate(&s2) != cudaSuccess ||
      cudaStreamCreate(&s3) != cudaSuccess || cudaEventCreate(&e2) != cudaSuccess ||
      launch_n(s2, 1, 100) || cudaEventRecord(e2, s2) != cudaSuccess ||
      cudaStreamWaitEvent(s3, e2, 0) != cudaSuccess || launch_n(s3, 1, 20) ||
      cudaSetDevice(0) != cudaSuccess || cudaStreamSynchronize(s3) != cudaSuccess)
    return 1;
  if (cudaSetDevice(1) != cudaSuccess || cudaEventDestroy(e1) != cudaSuccess ||
      cudaEventDestroy(e2) != cudaSuccess || cudaStreamDestroy(s1) != cudaSuccess ||
      cudaStreamDestroy(s2) != cudaSuccess || cudaStreamDestroy(s3) != cudaSuccess)
    return 1;
  puts("done");
  return 0;
}
