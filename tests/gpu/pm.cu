// Ground truth for PM sampling (GPUPHASE_PM=1) on a real GPU: two phases
// of 200 ms each, kernels spinning 2 ms on %globaltimer, queued back to
// back on one stream: first one block of 256 threads (one SM busy: SM
// active 1/SMs), then 2 x SMs blocks of 256 threads (every SM busy). The
// program waits 500 ms first: sampling starts on its own thread after the
// first CUDA call. Prints the SM count and kernel counts as JSON.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gp_gpu.cuh"

GP_SPIN_KERNEL(gp_pm_one)

GP_SPIN_KERNEL(gp_pm_full)

int main() {
  const int n = 100;
  const unsigned long long spin_ns = 2000000; // 2 ms each
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct timespec wait = {0, 500000000};
  nanosleep(&wait, NULL);
  for (int i = 0; i < n; i++) gp_pm_one<<<1, 256, 0, s>>>(spin_ns);
  CK(cudaStreamSynchronize(s));
  for (int i = 0; i < n; i++) gp_pm_full<<<2 * sms, 256, 0, s>>>(spin_ns);
  CK(cudaStreamSynchronize(s));
  printf("{\"sms\": %d, \"one_kernels\": %d, \"full_kernels\": %d}\n", sms, n,
         n);
  return 0;
}
