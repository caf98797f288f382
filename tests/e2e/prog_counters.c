/* Workloads for the measured-counter tests (test_counters.py):
 *   prog_counters launch MS [DEVICE]   one-block kernels back to back on
 *                                      DEVICE (default 0) for MS ms
 *   prog_counters tensor MS            132-block kernels named gemm_tc
 *   prog_counters fixed N              N one-block kernels (a trace whose
 *                                      records do not depend on timing)
 *   prog_counters idle MS              the device idle for 400 ms after the
 *                                      first CUDA call, then the launch loop
 *                                      for MS ms
 *   prog_counters fork MS              sets up CUDA, forks; the child runs
 *                                      the launch loop for MS ms, then the
 *                                      parent does
 * Every mode touches device 0 first (an allocation), so that a run on
 * DEVICE 1 uses both devices. Exits with status 3, so that a test can
 * tell the exit status is the program's. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile int sink;
void k_one(void) {
  sink = 1;
}
void gemm_tc(void) {
  sink = 2;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s launch|tensor MS [DEVICE]\n", argv[0]);
    return 2;
  }
  int tensor = strcmp(argv[1], "tensor") == 0;
  int fixed = strcmp(argv[1], "fixed") == 0;
  double ms = atof(argv[2]);
  int dev = argc > 3 ? atoi(argv[3]) : 0;
  void *p = NULL;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) return 1;
  if (cudaSetDevice(dev) != cudaSuccess) return 1;
  if (strcmp(argv[1], "idle") == 0) {
    struct timespec idle = {0, 400000000L};
    nanosleep(&idle, NULL);
  }
  if (strcmp(argv[1], "fork") == 0) {
    pid_t c = fork();
    if (c < 0) return 1;
    if (c > 0) {
      int st = 0;
      if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 3) return 1;
    }
  }
  dim3 g = {tensor ? 132u : 1u, 1, 1}, b = {32, 1, 1};
  const void *k = tensor ? (const void *)gemm_tc : (const void *)k_one;
  double end = now_ms() + ms;
  unsigned long n = 0;
  while (fixed ? n < (unsigned long)ms : now_ms() < end) {
    if (cudaLaunchKernel(k, g, b, NULL, 0, 0) != cudaSuccess) return 1;
    if (++n % 256 == 0 && cudaDeviceSynchronize() != cudaSuccess) return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  cudaSetDevice(0);
  cudaFree(p);
  if (!fixed) printf("%lu kernels\n", n);
  return 3;
}
