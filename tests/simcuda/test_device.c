/* Self-test: device description, memory accounting and pointer kinds with
 * the default configuration (one device, 132 SMs, 141000000000 bytes). */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_util.h"

#define TOTAL 141000000000ull

static void test_properties(void) {
  int n = 0, v = 0;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  CHECK_EQ(n, 1);
  struct cudaDeviceProp p;
  CHECK_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  CHECK(strcmp(p.name, "gpuphase-sim") == 0);
  CHECK_EQ(p.multiProcessorCount, 132);
  CHECK_EQ(p.major, 9);
  CHECK_EQ(p.minor, 0);
  CHECK_EQ(p.totalGlobalMem, TOTAL);
  CHECK_EQ(p.warpSize, 32);
  CHECK_EQ(p.maxThreadsPerBlock, 1024);
  CHECK_EQ(p.maxThreadsPerMultiProcessor, 2048);
  CHECK_EQ(p.maxBlocksPerMultiProcessor, 32);
  CHECK_EQ(p.regsPerMultiprocessor, 65536);
  CHECK_EQ(p.sharedMemPerMultiprocessor, 233472);
  CHECK_EQ(p.memoryBusWidth, 6144);
  static const struct {
    enum cudaDeviceAttr a;
    int want;
  } attrs[] = {
      {cudaDevAttrMultiProcessorCount, 132},
      {cudaDevAttrComputeCapabilityMajor, 9},
      {cudaDevAttrComputeCapabilityMinor, 0},
      {cudaDevAttrMaxThreadsPerMultiProcessor, 2048},
      {cudaDevAttrMaxBlocksPerMultiprocessor, 32},
      {cudaDevAttrMaxRegistersPerMultiprocessor, 65536},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, 233472},
      {cudaDevAttrWarpSize, 32},
      {cudaDevAttrClockRate, 1980000},
      {cudaDevAttrMemoryClockRate, 2619000},
      {cudaDevAttrGlobalMemoryBusWidth, 6144},
      {cudaDevAttrMaxThreadsPerBlock, 1024},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    CHECK_EQ(cudaDeviceGetAttribute(&v, attrs[i].a, 0), cudaSuccess);
    CHECK_EQ(v, attrs[i].want);
  }
  CHECK_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 1),
           cudaErrorInvalidDevice);
  CHECK_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  cudaGetLastError();
  int version = 0;
  CHECK_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  CHECK_EQ(version, 13000);
  CHECK_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  CHECK_EQ(version, 13000);
}

static size_t free_bytes(void) {
  size_t f = 0, t = 0;
  CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  CHECK_EQ(t, TOTAL);
  return f;
}

/* Allocations are 512-byte aligned, disjoint, count rounded up to 512
 * bytes, and fail once the live total would exceed the device. */
static void test_memory(void) {
  CHECK_EQ(free_bytes(), TOTAL);
  char *a, *b, *c;
  CHECK_EQ(cudaMalloc((void **)&a, 1000), cudaSuccess);
  CHECK_EQ(cudaMalloc((void **)&b, 512), cudaSuccess);
  CHECK_EQ(cudaMallocAsync((void **)&c, 1, 0), cudaSuccess);
  CHECK_EQ((uintptr_t)a % 512, 0);
  CHECK_EQ((uintptr_t)b % 512, 0);
  CHECK_EQ((uintptr_t)c % 512, 0);
  CHECK(b >= a + 1024 || a >= b + 512);
  CHECK(c >= b + 512 || b >= c + 512);
  CHECK(c >= a + 1024 || a >= c + 512);
  CHECK_EQ(free_bytes(), TOTAL - 1024 - 512 - 512);
  void *huge = NULL;
  CHECK_EQ(cudaMalloc(&huge, TOTAL), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaMalloc(&huge, TOTAL - 2048), cudaSuccess);
  CHECK_EQ(free_bytes(), 0);
  void *more;
  CHECK_EQ(cudaMalloc(&more, 1), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaFree(huge), cudaSuccess);
  CHECK_EQ(cudaFreeAsync(c, 0), cudaSuccess);
  CHECK_EQ(cudaFree(b), cudaSuccess);
  CHECK_EQ(free_bytes(), TOTAL - 1024);
  CHECK_EQ(cudaFree(b), cudaErrorInvalidValue); /* double free */
  cudaGetLastError();
  size_t pitch = 0;
  void *pp;
  CHECK_EQ(cudaMallocPitch(&pp, &pitch, 1000, 3), cudaSuccess);
  CHECK_EQ(pitch, 1024);
  CHECK_EQ(free_bytes(), TOTAL - 1024 - 3072);
  CHECK_EQ(cudaFree(pp), cudaSuccess);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(cudaFree(NULL), cudaSuccess);
  CHECK_EQ(free_bytes(), TOTAL);
}

static enum cudaMemoryType kind_of(const void *p) {
  struct cudaPointerAttributes a;
  CHECK_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess);
  return a.type;
}

static void test_pointer_kinds(void) {
  void *dev, *pinned, *mgd;
  char *heap = malloc(4096);
  REQUIRE(heap);
  CHECK_EQ(cudaMalloc(&dev, 64), cudaSuccess);
  CHECK_EQ(cudaHostAlloc(&pinned, 64, cudaHostAllocDefault), cudaSuccess);
  CHECK_EQ(cudaMallocManaged(&mgd, 100, cudaMemAttachGlobal), cudaSuccess);
  memset(pinned, 1, 64); /* host memory is real */
  memset(mgd, 2, 100);   /* so is managed memory */
  CHECK_EQ(kind_of(dev), cudaMemoryTypeDevice);
  CHECK_EQ(kind_of(pinned), cudaMemoryTypeHost);
  CHECK_EQ(kind_of(mgd), cudaMemoryTypeManaged);
  CHECK_EQ(kind_of(heap), cudaMemoryTypeUnregistered);
  CHECK_EQ(free_bytes(), TOTAL - 512 - 512);
  CHECK_EQ(cudaHostRegister(heap, 4096, cudaHostRegisterDefault), cudaSuccess);
  CHECK_EQ(kind_of(heap + 100), cudaMemoryTypeHost);
  CHECK_EQ(cudaHostRegister(heap + 10, 10, 0),
           cudaErrorHostMemoryAlreadyRegistered);
  void *mapped = NULL;
  CHECK_EQ(cudaHostGetDevicePointer(&mapped, pinned, 0), cudaSuccess);
  CHECK(mapped == pinned);
  CHECK_EQ(cudaHostUnregister(heap), cudaSuccess);
  CHECK_EQ(kind_of(heap), cudaMemoryTypeUnregistered);
  CHECK_EQ(cudaHostUnregister(heap), cudaErrorHostMemoryNotRegistered);
  CHECK_EQ(cudaFreeHost(heap), cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK_EQ(cudaFreeHost(pinned), cudaSuccess);
  CHECK_EQ(cudaFree(mgd), cudaSuccess);
  CHECK_EQ(cudaFree(dev), cudaSuccess);
  free(heap);
}

/* Resetting frees the device's allocations. */
static void test_reset(void) {
  void *p;
  CHECK_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
  CHECK_EQ(free_bytes(), TOTAL - (1 << 20));
  CHECK_EQ(cudaDeviceReset(), cudaSuccess);
  CHECK_EQ(free_bytes(), TOTAL);
}

static void test_unsupported(void) {
  cudaIpcMemHandle_t h;
  CHECK_EQ(cudaIpcGetMemHandle(&h, NULL), cudaErrorNotSupported);
  CHECK_EQ(cudaGetLastError(), cudaErrorNotSupported);
  CHECK(strcmp(cudaGetErrorName(cudaErrorNotSupported),
               "cudaErrorNotSupported") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation),
               "out of memory") == 0);
}

int main(void) {
  test_properties();
  test_memory();
  test_pointer_kinds();
  test_reset();
  test_unsupported();
  return test_result("test_device");
}
