/* A program that uses only the driver API, written like the CUDA
 * samples' vectorAddDrv: it never links libcudart and gets its kernels
 * from a module file.
 *
 *   prog FATBIN [N [LAUNCHES]]
 *
 * cuInit, cuDeviceGet, cuCtxCreate, cuModuleLoad(FATBIN),
 * cuModuleGetFunction, three N-float allocations, two host-to-device
 * copies, LAUNCHES (default 3) cuLaunchKernel of VecAdd_kernel with 256
 * threads per block and ceil(N / 256) blocks, one cuLaunchKernelEx of
 * Scale_kernel (same grid, 512 B of dynamic shared memory),
 * cuCtxSynchronize, a device-to-host copy, cuMemFree, cuModuleUnload,
 * cuCtxDestroy. Prints one line saying what ran. (The simulated device
 * moves no data, so, unlike the sample, it checks no result.) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                  \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *s_ = NULL;                                                   \
      cuGetErrorName(r_, &s_);                                                 \
      fprintf(stderr, "prog_drvmodule: %s failed: %s\n", #x,                   \
              s_ ? s_ : "unknown error");                                      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: prog_drvmodule FATBIN [N [LAUNCHES]]\n");
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 50000;
  int launches = argc > 3 ? atoi(argv[3]) : 3;
  if (n <= 0 || launches < 0) {
    fprintf(stderr, "prog_drvmodule: N must be > 0, LAUNCHES >= 0\n");
    return 2;
  }
  size_t bytes = (size_t)n * sizeof(float);
  float *h_a = calloc((size_t)n, sizeof(float));
  float *h_b = calloc((size_t)n, sizeof(float));
  float *h_c = calloc((size_t)n, sizeof(float));
  if (!h_a || !h_b || !h_c) {
    fprintf(stderr, "prog_drvmodule: out of memory\n");
    return 1;
  }
  for (int i = 0; i < n; i++) {
    h_a[i] = (float)i;
    h_b[i] = 2.0f * (float)i;
  }

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction vecadd, scale;
  char name[256];
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDeviceGetName(name, sizeof name, dev));
  CK(cuCtxCreate(&ctx, NULL, 0, dev));
  CK(cuModuleLoad(&mod, argv[1]));
  CK(cuModuleGetFunction(&vecadd, mod, "VecAdd_kernel"));
  CK(cuModuleGetFunction(&scale, mod, "Scale_kernel"));

  CUdeviceptr d_a, d_b, d_c;
  CK(cuMemAlloc(&d_a, bytes));
  CK(cuMemAlloc(&d_b, bytes));
  CK(cuMemAlloc(&d_c, bytes));
  CK(cuMemcpyHtoD(d_a, h_a, bytes));
  CK(cuMemcpyHtoD(d_b, h_b, bytes));

  unsigned threads = 256, blocks = (unsigned)((n + 255) / 256);
  void *args[] = {&d_a, &d_b, &d_c, &n};
  for (int i = 0; i < launches; i++)
    CK(cuLaunchKernel(vecadd, blocks, 1, 1, threads, 1, 1, 0, NULL, args,
                      NULL));
  float s = 0.5f;
  void *sargs[] = {&d_c, &s, &n};
  CUlaunchConfig cfg = {.gridDimX = blocks,
                        .gridDimY = 1,
                        .gridDimZ = 1,
                        .blockDimX = threads,
                        .blockDimY = 1,
                        .blockDimZ = 1,
                        .sharedMemBytes = 512};
  CK(cuLaunchKernelEx(&cfg, scale, sargs, NULL));
  CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(h_c, d_c, bytes));

  CK(cuMemFree(d_a));
  CK(cuMemFree(d_b));
  CK(cuMemFree(d_c));
  CK(cuModuleUnload(mod));
  CK(cuCtxDestroy(ctx));
  free(h_a);
  free(h_b);
  free(h_c);
  printf("%s: VecAdd_kernel x%d, Scale_kernel x1, %u blocks of %u threads\n",
         name, launches, blocks, threads);
  return 0;
}
