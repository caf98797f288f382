// Self-test: a program built by nvcc 13 against the simulated runtime.
// nvcc's host code registers kernels and variables from static
// constructors and launches <<<...>>> through __cudaPushCallConfiguration,
// __cudaGetKernel and __cudaLaunchKernel; records carry the mangled
// device name, as on real hardware.
#include <cuda_runtime_api.h>

#include "test_records.h"

__global__ void nv_kernel(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__device__ int dev_table[16];
__managed__ int managed_counter;

#define NV_KERNEL_NAME "_Z9nv_kernelPfi"

static void test_launch(float *d) {
  rec_clear();
  nv_kernel<<<264, 128>>>(d, 264 * 128); // 2 waves: 20000 ns
  cudaStream_t s;
  CHECK_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  nv_kernel<<<1, 32, 64, s>>>(d, 32); // 1 wave: 10000 ns
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 2);
  CHECK(strcmp(KERNEL(0)->name, NV_KERNEL_NAME) == 0);
  CHECK_EQ(KERNEL(0)->end - KERNEL(0)->start, 20000);
  CHECK_EQ(KERNEL(0)->gridX, 264);
  CHECK_EQ(KERNEL(0)->blockX, 128);
  CHECK_EQ(KERNEL(1)->end - KERNEL(1)->start, 10000);
  CHECK_EQ(KERNEL(1)->dynamicSharedMemory, 64);
  CHECK(KERNEL(1)->streamId != KERNEL(0)->streamId);
  const char *name = NULL;
  CHECK_EQ(cudaFuncGetName(&name, (const void *)nv_kernel), cudaSuccess);
  CHECK(name && strcmp(name, NV_KERNEL_NAME) == 0);
  nv_kernel<<<0, 32>>>(d, 0);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// A __device__ variable is device memory of its registered size:
// 64 bytes, 2000 + ceil(64 / 25) = 2003 ns each way.
static void test_symbols(void) {
  rec_clear();
  int host[16] = {0};
  size_t size = 0;
  CHECK_EQ(cudaGetSymbolSize(&size, dev_table), cudaSuccess);
  CHECK_EQ(size, sizeof host);
  CHECK_EQ(cudaMemcpyToSymbol(dev_table, host, sizeof host), cudaSuccess);
  CHECK_EQ(cudaMemcpyFromSymbol(host, dev_table, sizeof host), cudaSuccess);
  CHECK_EQ(cudaMemcpyToSymbol(dev_table, host, sizeof host, 4),
           cudaErrorInvalidValue);
  cudaGetLastError();
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 2);
  const CUpti_ActivityMemcpy6 *to =
      &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 0)->u.m;
  const CUpti_ActivityMemcpy6 *from =
      &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 1)->u.m;
  CHECK_EQ(to->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK_EQ(from->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
  CHECK_EQ(to->bytes, 64);
  CHECK_EQ(to->end - to->start, 2003);
}

// Managed variables live in (real, host-accessible) managed memory.
static void test_managed(void) {
  managed_counter = 41;
  managed_counter++;
  CHECK_EQ(managed_counter, 42);
  cudaPointerAttributes a;
  CHECK_EQ(cudaPointerGetAttributes(&a, &managed_counter), cudaSuccess);
  CHECK_EQ(a.type, cudaMemoryTypeManaged);
}

int main() {
  rec_start();
  float *d = NULL;
  REQUIRE(cudaMalloc((void **)&d, 264 * 128 * sizeof(float)) == cudaSuccess);
  test_launch(d);
  test_symbols();
  test_managed();
  CHECK_EQ(cudaFree(d), cudaSuccess);
  return test_result("test_nvcc");
}
