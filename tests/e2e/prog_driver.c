/* A program that uses only the driver API (no libcudart in the process):
 * cuInit, the primary context, an allocation, N synchronous host-to-device
 * copies of 1 MiB and a context synchronisation. test_record.py runs it to
 * see which CUPTI the shim picks when no runtime says where CUDA lives:
 * the one the dynamic loader would load for the program (LD_LIBRARY_PATH,
 * the program's RUNPATH), before the toolkit's. Prints "copies=N". */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                  \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  static char host[1 << 20];
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuMemAlloc(&p, sizeof host));
  for (int i = 0; i < n; i++) CK(cuMemcpyHtoD(p, host, sizeof host));
  CK(cuCtxSynchronize());
  CK(cuMemFree(p));
  CK(cuDevicePrimaryCtxRelease(dev));
  printf("copies=%d\n", n);
  return 0;
}
