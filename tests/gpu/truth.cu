// Ground truth for gpuphase on a real GPU: work of known size, timed with
// CUDA events, printed as JSON for compare.py.
//   spin kernels: one block spins on %globaltimer for a set time
//   copies: pinned and pageable host-to-device copies of known size
//   host sleeps: the GPU idles while the host sleeps
// Each timed spin is an NVTX range "step" (header-only NVTX 3, recorded by
// gpuphase through NVTX_INJECTION64_PATH), so that the report shows steps:
// 50 of 1 ms of kernel time each.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gp_gpu.cuh"

GP_SPIN_KERNEL(gp_spin)

static double timed(cudaStream_t s, cudaEvent_t a, cudaEvent_t b) {
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  (void)s;
  return ms * 1e6;
}

int main() {
  const int spins = 50, copies = 5, sleeps = 5;
  const unsigned long long spin_ns = 1000000; // 1 ms each
  const size_t pinned_bytes = 256u << 20, pageable_bytes = 64u << 20;
  const long sleep_ns = 100000000; // 100 ms
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  void *dev, *pinned;
  CK(cudaMalloc(&dev, pinned_bytes));
  CK(cudaMallocHost(&pinned, pinned_bytes));
  char *pageable = (char *)calloc(1, pageable_bytes);
  gp_spin<<<1, 1, 0, s>>>(1000); // warm-up: module load, clocks
  CK(cudaStreamSynchronize(s));
  double kernel_ns = 0, pinned_ns = 0, pageable_ns = 0;
  for (int i = 0; i < spins; i++) {
    nvtxRangePushA("step");
    CK(cudaEventRecord(a, s));
    gp_spin<<<1, 1, 0, s>>>(spin_ns);
    CK(cudaEventRecord(b, s));
    kernel_ns += timed(s, a, b);
    nvtxRangePop();
  }
  for (int i = 0; i < copies; i++) {
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dev, pinned, pinned_bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(b, s));
    pinned_ns += timed(s, a, b);
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dev, pageable, pageable_bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(b, s));
    pageable_ns += timed(s, a, b);
  }
  struct timespec sl = {0, sleep_ns};
  for (int i = 0; i < sleeps; i++) nanosleep(&sl, NULL);
  gp_spin<<<1, 1, 0, s>>>(1000); // the window ends after the sleeps
  CK(cudaStreamSynchronize(s));
  printf("{\"spin_kernels\": %d, \"spin_kernel_ns\": %.0f, "
         "\"pinned_copies\": %d, \"pinned_bytes\": %zu, \"pinned_ns\": %.0f, "
         "\"pageable_copies\": %d, \"pageable_bytes\": %zu, \"pageable_ns\": %.0f, "
         "\"sleep_ns\": %ld}\n",
         spins, kernel_ns, copies, copies * pinned_bytes, pinned_ns, copies,
         copies * pageable_bytes, pageable_ns, sleeps * sleep_ns);
  return 0;
}
