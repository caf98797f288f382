/* A stand-in for a library with a private CUDA runtime (cuBLAS, cuDNN,
 * NCCL): it does not link libcudart or libcuda. At creation it dlopens
 * the driver, finds cuGetProcAddress_v2 with dlsym on that handle, and
 * resolves cuLaunchKernel twice, once through cuGetProcAddress_v2 and
 * once through dlsym directly, the two ways such libraries reach the
 * driver. Its "GEMM" launches kernels alternating the two pointers. */
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#define FB_EXPORT __attribute__((visibility("default")))

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);
typedef CUfunction (*function_fn)(const char *);

static struct {
  void *driver;
  launch_fn by_proc, by_dlsym;
  CUfunction kernel;
  CUstream stream;
} fb;

/* The grid of one GEMM tile launch: 264 blocks of 256 threads, two waves
 * of the simulated 132-SM device (tests/simcuda/README.md). */
#define FB_GRID 264u
#define FB_BLOCK 256u
#define FB_KERNEL "fakeblas_sgemm_128x64_nn"

/* 0 on success; a negative step number saying what failed otherwise. */
FB_EXPORT int fakeblas_create(void) {
  fb.driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!fb.driver) return -1;
  gpa_fn gpa = (gpa_fn)dlsym(fb.driver, "cuGetProcAddress_v2");
  if (!gpa) return -2;
  CUdriverProcAddressQueryResult st;
  void *p = NULL;
  if (gpa("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
          CUDA_SUCCESS ||
      !p)
    return -3;
  fb.by_proc = (launch_fn)p;
  fb.by_dlsym = (launch_fn)dlsym(fb.driver, "cuLaunchKernel");
  if (!fb.by_dlsym) return -4;
  /* no modules in the simulation: the driver's private kernel lookup */
  function_fn fn = (function_fn)dlsym(fb.driver, "gpusim_function");
  if (!fn || !(fb.kernel = fn(FB_KERNEL))) return -5;
  return 0;
}

FB_EXPORT void fakeblas_set_stream(CUstream s) {
  fb.stream = s;
}

/* Where each of the two launch pointers lives, for the test to show. */
FB_EXPORT void *fakeblas_pointer(int which) {
  return which ? (void *)(uintptr_t)fb.by_dlsym : (void *)(uintptr_t)fb.by_proc;
}

/* n launches on the library's stream: even ones through the pointer from
 * cuGetProcAddress_v2, odd ones through the one from dlsym. */
FB_EXPORT CUresult fakeblas_gemm(int n, CUdeviceptr c) {
  for (int i = 0; i < n; i++) {
    void *args[] = {&c};
    launch_fn f = i % 2 ? fb.by_dlsym : fb.by_proc;
    CUresult r =
        f(fb.kernel, FB_GRID, 1, 1, FB_BLOCK, 1, 1, 0, fb.stream, args, NULL);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}
