/* The runtime API inside contexts the driver API made current (run with
 * GPUSIM_DEVICES=2), as code does that mixes the two (a driver-API
 * framework handing its context to runtime code):
 *   1. GPU 1's primary context retained and made current with
 *      cuCtxSetCurrent: cudaMalloc of 1 MiB, two kernels of 20 waves
 *      launched with the runtime, cudaDeviceSynchronize;
 *   2. GPU 0's primary context pushed (cuCtxPushCurrent_v2): one kernel of
 *      10 waves, cudaStreamSynchronize of the default stream; popped;
 *   3. GPU 1's context current again: cudaFree, one kernel of 20 waves,
 *      cudaDeviceSynchronize;
 *   4. cudaSetDevice(0), which replaces the current context with GPU 0's
 *      primary one: one kernel of 10 waves, cudaDeviceSynchronize.
 * Prints the device cudaGetDevice gives in each stage ("devices 1 0 1 0")
 * and fails if a runtime call changed the driver's current context.
 * Model figures (test_fidelity.py ctxmix): 132 SMs, blocks of 128 threads,
 * 10 us a wave: GPU 1 runs three kernels of 200 us, GPU 0 two of 100 us;
 * the memory peak is 1 MiB on GPU 1 and none on GPU 0. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

void ctxmix_work(void);
void ctxmix_work(void) {}

static int launch(unsigned waves) {
  dim3 grid = {132u * waves, 1, 1}, block = {128, 1, 1};
  return cudaLaunchKernel((const void *)ctxmix_work, grid, block, NULL, 0,
                          0) != cudaSuccess;
}

/* cudaGetDevice, and the driver's current context still `want` */
static int stage_device(CUcontext want) {
  int dev = -1;
  CUcontext cur = NULL;
  if (cudaGetDevice(&dev) != cudaSuccess || cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
    return -1;
  if (cur != want) {
    fprintf(stderr, "the current context changed under a runtime call\n");
    return -1;
  }
  return dev;
}

int main(void) {
  CUdevice d0, d1;
  CUcontext c0, c1, popped = NULL;
  int n = 0, dev[4];
  void *p = NULL;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 2) {
    fprintf(stderr, "needs 2 GPUs, found %d\n", n);
    return 1;
  }
  if (cuDeviceGet(&d0, 0) != CUDA_SUCCESS || cuDeviceGet(&d1, 1) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&c0, d0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&c1, d1) != CUDA_SUCCESS)
    return 1;
  /* 1 */
  if (cuCtxSetCurrent(c1) != CUDA_SUCCESS || cudaMalloc(&p, 1 << 20) != cudaSuccess ||
      launch(20) || launch(20) || cudaDeviceSynchronize() != cudaSuccess ||
      (dev[0] = stage_device(c1)) < 0)
    return 2;
  /* 2 */
  if (cuCtxPushCurrent(c0) != CUDA_SUCCESS || launch(10) ||
      cudaStreamSynchronize(0) != cudaSuccess || (dev[1] = stage_device(c0)) < 0 ||
      cuCtxPopCurrent(&popped) != CUDA_SUCCESS || popped != c0)
    return 3;
  /* 3 */
  if (cudaFree(p) != cudaSuccess || launch(20) ||
      cudaDeviceSynchronize() != cudaSuccess || (dev[2] = stage_device(c1)) < 0)
    return 4;
  /* 4 */
  if (cudaSetDevice(0) != cudaSuccess || launch(10) ||
      cudaDeviceSynchronize() != cudaSuccess || (dev[3] = stage_device(c0)) < 0)
    return 5;
  printf("devices %d %d %d %d\n", dev[0], dev[1], dev[2], dev[3]);
  cuDevicePrimaryCtxRelease(d0);
  cuDevicePrimaryCtxRelease(d1);
  return 0;
}
