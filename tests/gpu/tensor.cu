// Ground truth for measured tensor-pipe activity on a real GPU (validate.py
// check_tensor): a period of 1 s in which kernels of 2 x SMs blocks spin
// 2 ms each on %globaltimer (every SM busy, no tensor instruction
// anywhere), then half-precision
// cuBLAS GEMMs of 8192 x 8192 x 8192 (cublasGemmEx, fp16 in and out, fp32
// accumulation, tensor operations allowed: cuBLAS's default) back to back
// for about 2.5 s, timed with CUDA events, so that the FLOP rate they
// achieved is known (2 n^3 per GEMM). Prints it, and what the tensor peak
// is computed from (SMs, compute capability, the peak SM clock), as JSON.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gp_gpu.cuh"

#define CB(x)                                                                  \
  do {                                                                         \
    cublasStatus_t s_ = (x);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      fprintf(stderr, "%s: %s\n", #x, cublasGetStatusString(s_));              \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

GP_SPIN_KERNEL(gp_tc_spin)

// Small values (multiples of 1/64 in [-1/8, 1/8]): 8192 products of them
// sum to at most 128, well inside half precision.
__global__ void gp_tc_fill(__half *p, size_t n, unsigned seed) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = __float2half(
        (float)((int)((unsigned)(i * 2654435761u + seed) % 17u) - 8) / 64.0f);
}

int main() {
  const int n = 8192, spin_kernels = 500;
  const unsigned long long spin_ns = 2000000; // 2 ms each: 1 s
  const double target_ns = 2.5e9;
  int dev = 0, sms = 0, major = 0, minor = 0, clock_khz = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));

  const size_t elems = (size_t)n * n;
  __half *a, *b, *c;
  CK(cudaMalloc(&a, elems * sizeof(__half)));
  CK(cudaMalloc(&b, elems * sizeof(__half)));
  CK(cudaMalloc(&c, elems * sizeof(__half)));
  gp_tc_fill<<<4 * sms, 256>>>(a, elems, 1);
  gp_tc_fill<<<4 * sms, 256>>>(b, elems, 7);
  CK(cudaGetLastError());
  CK(cudaMemset(c, 0, elems * sizeof(__half)));

  cublasHandle_t h;
  CB(cublasCreate(&h));
  const float one = 1.0f, zero = 0.0f;
#define GEMM()                                                                 \
  CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F,  \
                  n, b, CUDA_R_16F, n, &zero, c, CUDA_R_16F, n,                \
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))

  // Warm-up (cuBLAS picks and loads its kernel), then the time of one
  // GEMM, for the loop's length.
  GEMM();
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, 0));
  for (int i = 0; i < 5; i++)
    GEMM();
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  double per_ns = ms * 1e6 / 5;
  long gemms = per_ns > 0 ? (long)ceil(target_ns / per_ns) : 10000;
  if (gemms < 10)
    gemms = 10;
  if (gemms > 10000)
    gemms = 10000;

  // The spin period: every SM busy, the tensor pipes idle.
  for (int i = 0; i < spin_kernels; i++)
    gp_tc_spin<<<2 * sms, 256>>>(spin_ns);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  CK(cudaEventRecord(e0, 0));
  for (long i = 0; i < gemms; i++)
    GEMM();
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  CK(cudaEventElapsedTime(&ms, e0, e1));
  printf("{\"sms\": %d, \"cc\": %d, \"clock_khz\": %d, \"n\": %d, "
         "\"gemms\": %ld, \"flops\": %.0f, \"loop_ns\": %.0f, "
         "\"spin_kernels\": %d}\n",
         sms, major * 10 + minor, clock_khz, n, gemms,
         2.0 * n * (double)n * n * (double)gemms, ms * 1e6, spin_kernels);
  CB(cublasDestroy(h));
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  return 0;
}
