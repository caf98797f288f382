/* A fixed sequence of CUDA runtime calls whose recording the end-to-end
 * test checks against the simulated GPU's timing model. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

void k_big(void) {}
void k_small(void) {}

#define MB (1u << 20)
#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  void *d1, *d2, *pinned;
  char *pageable = calloc(1, MB);
  if (!pageable) return 1;
  CHECK(cudaMalloc(&d1, MB));
  CHECK(cudaMalloc(&d2, MB));
  CHECK(cudaMallocHost(&pinned, MB));
  CHECK(cudaMemcpy(d1, pageable, MB, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  dim3 big = {264, 1, 1}, small = {1, 1, 1}, block = {128, 1, 1};
  for (int i = 0; i < 10; i++)
    CHECK(cudaLaunchKernel((const void *)k_big, big, block, NULL, 0, s));
  for (int i = 0; i < 5; i++)
    CHECK(cudaLaunchKernel((const void *)k_small, small, block, NULL, 0, s));
  CHECK(cudaMemsetAsync(d2, 0, MB, s));
  CHECK(cudaMemcpyAsync(pinned, d1, MB, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
  CHECK(cudaFreeHost(pinned));
  /* Failures pass through unchanged: 2^62 bytes cannot be allocated. */
  void *huge;
  if (cudaMalloc(&huge, (size_t)1 << 62) != cudaErrorMemoryAllocation) return 2;
  free(pageable);
  return 0;
}
