// The cost gpuphase adds to a CUDA call on a real GPU: a loop of launches of
// an empty one-block kernel (the cheapest call a program makes often), timed
// on the host, then the same number of cudaGetDevice calls (a call gpuphase
// does not wrap, and for which it enables no CUPTI callback: with gpuphase
// it should cost what it costs without). Prints JSON with ns per call;
// validate.py runs it with and without gpuphase.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void gp_empty() {}

static double now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  for (int i = 0; i < 1000; i++) gp_empty<<<1, 32, 0, s>>>();  // warm up
  cudaStreamSynchronize(s);
  double t0 = now_ns();
  for (int i = 0; i < n; i++) gp_empty<<<1, 32, 0, s>>>();
  double t1 = now_ns();
  if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
  int dev;
  double t2 = now_ns();
  for (int i = 0; i < n; i++) cudaGetDevice(&dev);
  double t3 = now_ns();
  printf("{\"calls\": %d, \"launch_ns\": %.1f, \"get_device_ns\": %.1f}\n", n,
         (t1 - t0) / n, (t3 - t2) / n);
  return 0;
}
