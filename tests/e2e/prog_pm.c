/* Two phases for the PM sampling tests (test_pm.py): N full-grid kernels
 * (pm_full: 132 blocks of 256 threads, one wave) queued back to back on one
 * stream, a synchronise, then N one-block kernels (pm_one: 1 block of 256
 * threads) the same way. With GPUSIM_WAVE_NS=1000000 every kernel takes
 * 1 ms, so each phase keeps the device busy for N ms (without a gap
 * unless the host falls behind). PM sampling starts on a thread of its own
 * after the first CUDA call: the program waits 300 ms before the phases.
 * usage: e2e-prog-pm N [DEVICE] (first cudaSetDevice(DEVICE) when given);
 * prints "phases N" when every call succeeded. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile int pm_sink;
void pm_full(void) {
  pm_sink = 1;
}
void pm_one(void) {
  pm_sink = 2;
}

static int phase(void (*k)(void), unsigned blocks, long n) {
  for (long i = 0; i < n; i++)
    if (cudaLaunchKernel((const void *)k, (dim3){blocks, 1, 1},
                         (dim3){256, 1, 1}, NULL, 0, 0) != cudaSuccess)
      return -1;
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100;
  struct timespec wait = {0, 300000000};
  if ((argc > 2 && cudaSetDevice(atoi(argv[2])) != cudaSuccess) ||
      cudaFree(0) != cudaSuccess || nanosleep(&wait, NULL) != 0 ||
      phase(pm_full, 132, n) != 0 || phase(pm_one, 1, n) != 0) {
    fprintf(stderr, "prog_pm: a CUDA call failed\n");
    return 1;
  }
  printf("phases %ld\n", n);
  return 0;
}
