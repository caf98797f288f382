// Ground truth for measured DRAM bandwidth on a real GPU (validate.py
// check_dram): a grid-stride copy between two device buffers of 2 GiB each
// (well beyond any L2), every SM full of blocks, repeated for about 2.5 s
// and timed with CUDA events, so that the bandwidth it achieved is known:
// each copy reads and writes the buffer once, 2 x its bytes. Before it, for
// 1 s, kernels of 2 x SMs blocks spin 2 ms each on %globaltimer: every SM
// busy, no DRAM traffic. Prints the copy's figures, and what the peak
// bandwidth is computed from (the memory clock and bus width attributes),
// as JSON.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gp_gpu.cuh"

// Four loads in flight per thread before their stores: enough bytes in
// flight to keep HBM busy with one resident wave of blocks.
__device__ __forceinline__ void gp_copy_body(const float4 *__restrict__ src,
                                             float4 *__restrict__ dst,
                                             size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride],
           d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride)
    dst[i] = src[i];
}

// The same copy under two names: the calibration copies are told apart
// from the timed loop's by kernel name.
__global__ void gp_copy_warm(const float4 *__restrict__ src,
                             float4 *__restrict__ dst, size_t n) {
  gp_copy_body(src, dst, n);
}

__global__ void gp_copy_loop(const float4 *__restrict__ src,
                             float4 *__restrict__ dst, size_t n) {
  gp_copy_body(src, dst, n);
}

GP_SPIN_KERNEL(gp_copy_spin)

int main() {
  const int threads = 256, spin_kernels = 500;
  const unsigned long long spin_ns = 2000000; // 2 ms each: 1 s
  const double target_ns = 2.5e9;
  int dev = 0, sms = 0, mem_khz = 0, bus_bits = 0, per_sm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
  CK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gp_copy_loop,
                                                   threads, 0));
  if (per_sm < 1)
    per_sm = 1;
  const int blocks = sms * per_sm;

  // 2 GiB per buffer, less where the device has less free memory (a
  // quarter of it each), never under 256 MiB: far beyond the L2.
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  size_t bytes = (size_t)2 << 30;
  if (bytes > free_b / 4)
    bytes = free_b / 4 / 4096 * 4096;
  if (bytes < ((size_t)256 << 20)) {
    fprintf(stderr, "copy: %zu bytes free on the device, too few\n", free_b);
    return 1;
  }
  const size_t n = bytes / sizeof(float4);
  float4 *src, *dst;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  CK(cudaMemset(src, 1, bytes));
  CK(cudaMemset(dst, 0, bytes));

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // Calibration: the time of one copy, for the loop's length.
  gp_copy_warm<<<blocks, threads>>>(src, dst, n);
  CK(cudaGetLastError());
  CK(cudaEventRecord(e0, 0));
  for (int i = 0; i < 4; i++)
    gp_copy_warm<<<blocks, threads>>>(src, dst, n);
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  double per_ns = ms * 1e6 / 4;
  long copies = per_ns > 0 ? (long)ceil(target_ns / per_ns) : 100000;
  if (copies < 10)
    copies = 10;
  if (copies > 100000)
    copies = 100000;

  // The spin period: the SMs busy, DRAM not.
  for (int i = 0; i < spin_kernels; i++)
    gp_copy_spin<<<2 * sms, 256>>>(spin_ns);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  CK(cudaEventRecord(e0, 0));
  for (long i = 0; i < copies; i++)
    gp_copy_loop<<<blocks, threads>>>(src, dst, n);
  CK(cudaGetLastError());
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  CK(cudaEventElapsedTime(&ms, e0, e1));
  printf("{\"sms\": %d, \"blocks\": %d, \"buffer_bytes\": %zu, "
         "\"copies\": %ld, \"bytes_moved\": %.0f, \"loop_ns\": %.0f, "
         "\"mem_clock_khz\": %d, \"bus_bits\": %d, \"spin_kernels\": %d}\n",
         sms, blocks, bytes, copies, 2.0 * (double)bytes * (double)copies,
         ms * 1e6, mem_khz, bus_bits, spin_kernels);
  CK(cudaFree(src));
  CK(cudaFree(dst));
  return 0;
}
