// cuBLAS reaches the driver through its own private runtime: gpuphase must
// still see every kernel. Prints the loop's time from CUDA events as JSON.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

int main() {
  const int n = 4096, iters = 20;
  float *a, *b, *c;
  if (cudaMalloc(&a, sizeof(float) * n * n) || cudaMalloc(&b, sizeof(float) * n * n) ||
      cudaMalloc(&c, sizeof(float) * n * n))
    return 1;
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const float one = 1, zero = 0;
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  cudaDeviceSynchronize(); // warm-up outside the timed loop
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0, 0);
  for (int i = 0; i < iters; i++)
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  cudaEventRecord(e1, 0);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  printf("{\"gemms\": %d, \"loop_ns\": %.0f}\n", iters + 1, ms * 1e6);
  cublasDestroy(h);
  return 0;
}
