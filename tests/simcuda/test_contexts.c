/* Self-test: the runtime in contexts the driver API made current, with two
 * devices (README, "The runtime reaches the driver like the real one"):
 * cudaGetDevice gives the current context's device and runtime calls work
 * in it; with none current, the runtime binds the primary context of the
 * device cudaSetDevice chose; cudaSetDevice replaces the current context.
 * A kernel is launched only on a stream of the current device; a copy may
 * use another device's stream. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "test_util.h"

void ctx_kernel(void);
void ctx_kernel(void) {}

static int rt_device(void) {
  int d = -1;
  CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
  return d;
}

static CUcontext current(void) {
  CUcontext c = NULL;
  CHECK_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
  return c;
}

static int device_of(const void *p) {
  struct cudaPointerAttributes at;
  CHECK_EQ(cudaPointerGetAttributes(&at, p), cudaSuccess);
  return at.device;
}

int main(void) {
  CUcontext c0, c1, popped = NULL;
  void *p = NULL, *q = NULL;
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
  CHECK_EQ(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
  CHECK(current() == NULL);
  CHECK_EQ(rt_device(), 0); /* nothing current: the default device */
  /* GPU 1 made current by the driver API: the runtime works there */
  CHECK_EQ(cuCtxSetCurrent(c1), CUDA_SUCCESS);
  CHECK_EQ(rt_device(), 1);
  CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
  CHECK_EQ(device_of(p), 1);
  CHECK(current() == c1); /* not replaced by the runtime */
  /* GPU 0 pushed over it, then popped */
  CHECK_EQ(cuCtxPushCurrent(c0), CUDA_SUCCESS);
  CHECK_EQ(rt_device(), 0);
  CHECK_EQ(cudaMalloc(&q, 4096), cudaSuccess);
  CHECK_EQ(device_of(q), 0);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK(current() == c0);
  CHECK_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  CHECK(popped == c0);
  CHECK(current() == c1);
  CHECK_EQ(rt_device(), 1);
  CHECK_EQ(cudaFree(p), cudaSuccess);
  /* cudaSetDevice replaces the current context with its device's primary */
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK(current() == c0);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK(current() == c1);
  /* none current: the device cudaSetDevice chose last */
  CHECK_EQ(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
  CHECK(current() == NULL);
  CHECK_EQ(rt_device(), 1);
  CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
  CHECK_EQ(device_of(p), 1);
  CHECK(current() == c1);
  CHECK_EQ(cudaFree(p), cudaSuccess);
  /* a kernel only on a stream of the current device; a copy on any */
  cudaStream_t s1;
  static char host[4096];
  dim3 one = {1, 1, 1};
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess); /* GPU 1's */
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaLaunchKernel((const void *)ctx_kernel, one, one, NULL, 0, s1),
           cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaMemcpyAsync(q, host, sizeof host, cudaMemcpyHostToDevice, s1),
           cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaLaunchKernel((const void *)ctx_kernel, one, one, NULL, 0, s1),
           cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s1), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaFree(q), cudaSuccess);
  CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  CHECK_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  return test_result("test_contexts");
}
