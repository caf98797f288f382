// Ground truth for the measured counters on a real GPU (validate.py
// check_counters): a loop of one-block kernels, each spinning 1 ms on
// %globaltimer, with a 1 ms host sleep after each, for about 2.4 s, so
// that the device is busy about half the time and one SM of all is
// active while it is. Prints the loop's figures as JSON.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gp_gpu.cuh"

GP_SPIN_KERNEL(gp_spin1)

int main() {
  const int iters = 1200;
  const struct timespec gap = {0, 1000000}; // 1 ms
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  gp_spin1<<<1, 1>>>(1000); // warm-up: module load, clocks
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < iters; i++) {
    gp_spin1<<<1, 1>>>(1000000);
    CK(cudaDeviceSynchronize());
    nanosleep(&gap, NULL);
  }
  printf("{\"iterations\": %d, \"sms\": %d}\n", iters, sms);
  return 0;
}
