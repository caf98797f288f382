// Real __global__ kernels built by nvcc and launched with <<<>>>: nvcc 13
// registers them from static constructors and launches through
// __cudaPushCallConfiguration / __cudaLaunchKernel (the launch the shim
// wraps). One C++ kernel (mangled name) and one extern "C" kernel.
#include <cuda_runtime_api.h>
#include <stdio.h>

__global__ void paths_scale(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

extern "C" __global__ void paths_axpy(float a, const float *x, float *y,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

// 3 x paths_scale with 264 blocks on the legacy stream, then 2 x
// paths_axpy with 132 blocks on a stream of its own.
int main() {
  const int n = 264 * 128;
  float *x, *y;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  for (int i = 0; i < 3; i++) paths_scale<<<264, 128>>>(x, n);
  CK(cudaGetLastError());
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 2; i++) paths_axpy<<<132, 128, 0, s>>>(2.0f, x, y, n);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaStreamDestroy(s));
  CK(cudaFree(x));
  CK(cudaFree(y));
  return 0;
}
