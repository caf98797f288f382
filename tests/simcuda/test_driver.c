/* Self-test: the simulated driver used on its own (this program links
 * libcuda.so.1 only), its cuGetProcAddress, and the runtime reaching it
 * through dlopen + cuGetProcAddress. */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "gpusim.h"
#include "test_util.h"

typedef CUresult (*proc_v2)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static void *sym(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  REQUIRE(p);
  return p;
}

/* Base name + version + flags -> the exported symbol expected. */
static void expect_proc(const char *base, int ver, cuuint64_t flags,
                        const char *want) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CHECK_EQ(cuGetProcAddress_v2(base, &fn, ver, flags, &st), CUDA_SUCCESS);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
  if (fn != sym(want)) {
    fprintf(stderr, "%s@%d: not %s\n", base, ver, want);
    test_failures++;
  }
}

static void test_proc_address(void) {
  unsigned long long before = gpusim_procaddr_count();
  const cuuint64_t def = CU_GET_PROC_ADDRESS_DEFAULT;
  const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  expect_proc("cuLaunchKernel", 13000, def, "cuLaunchKernel");
  expect_proc("cuLaunchKernel", 13000, pt, "cuLaunchKernel_ptsz");
  expect_proc("cuMemAlloc", 13000, def, "cuMemAlloc_v2");
  expect_proc("cuMemcpyHtoD", 13000, pt, "cuMemcpyHtoD_v2_ptds");
  expect_proc("cuMemcpyHtoDAsync", 13000, pt, "cuMemcpyHtoDAsync_v2_ptsz");
  expect_proc("cuCtxSynchronize", 12000, def, "cuCtxSynchronize");
  expect_proc("cuCtxSynchronize", 13000, def, "cuCtxSynchronize_v2");
  expect_proc("cuEventElapsedTime", 12000, def, "cuEventElapsedTime");
  expect_proc("cuEventElapsedTime", 12080, def, "cuEventElapsedTime_v2");
  expect_proc("cuStreamSynchronize", 13000, pt, "cuStreamSynchronize_ptsz");
  expect_proc("cuInit", 13000, pt, "cuInit"); /* no per-thread variant */
  CHECK_EQ(gpusim_procaddr_count() - before, 11);
  void *fn = &fn;
  CUdriverProcAddressQueryResult st;
  CHECK_EQ(cuGetProcAddress_v2("cuNoSuchFunction", &fn, 13000, def, &st),
           CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(fn == NULL);
  CHECK_EQ(gpusim_procaddr_count() - before, 11);
  CUresult (*v1)(const char *, void **, int, cuuint64_t) = (CUresult(*)(
      const char *, void **, int, cuuint64_t))sym("cuGetProcAddress");
  CHECK_EQ(v1("cuMemFree", &fn, 13000, def), CUDA_SUCCESS);
  CHECK(fn == sym("cuMemFree_v2"));
}

static void test_context(void) {
  int n;
  CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  CHECK_EQ(n, 1);
  CUdevice d;
  char name[64];
  size_t total;
  CHECK_EQ(cuDeviceGet(&d, 0), CUDA_SUCCESS);
  CHECK_EQ(cuDeviceGetName(name, sizeof name, d), CUDA_SUCCESS);
  CHECK(strcmp(name, "gpuphase-sim") == 0);
  CHECK_EQ(cuDeviceTotalMem(&total, d), CUDA_SUCCESS);
  CHECK_EQ(total, 141000000000ull);
  CUdeviceptr p;
  CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx, cur = NULL;
  CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, d), CUDA_SUCCESS);
  CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CHECK_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  CHECK(cur == ctx);
  unsigned long long id = 0;
  CHECK_EQ(cuCtxGetId(ctx, &id), CUDA_SUCCESS);
  CHECK_EQ(id, 1);
}

/* 1 MiB from pageable memory: 2000 + ceil(1048576 / 25) = 43944 ns, and
 * cuMemcpyHtoD returns only after it. */
static void test_copy(void) {
  CUdeviceptr p;
  char *host = malloc(1 << 20);
  REQUIRE(host);
  CHECK_EQ(cuMemAlloc(&p, 1 << 20), CUDA_SUCCESS);
  uint64_t t0 = mono_ns();
  CHECK_EQ(cuMemcpyHtoD(p, host, 1 << 20), CUDA_SUCCESS);
  uint64_t t = mono_ns() - t0;
  CHECK(t >= 43944);
  CHECK(t <= 43944 + WALL_TOLERANCE_NS);
  CHECK_EQ(cuMemcpyHtoD(p + 1, host, 1 << 20), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemFree(p), CUDA_SUCCESS);
  free(host);
}

static void test_launch(void) {
  CUfunction f = gpusim_function("drv_kernel"), fn2 = NULL;
  REQUIRE(f);
  CHECK(gpusim_function("drv_kernel") == f);
  const char *name = NULL;
  CHECK_EQ(cuFuncGetName(&name, f), CUDA_SUCCESS);
  CHECK(name && strcmp(name, "drv_kernel") == 0);
  CUevent a, b;
  CHECK_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  /* a 100 ms kernel keeps the stream busy; 132 x 2 blocks = 2 waves */
  CHECK_EQ(cuLaunchKernel(f, BIG_BLOCKS, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
           CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(a, NULL), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(f, 132, 2, 1, 32, 1, 1, 0, NULL, NULL, NULL),
           CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(b, NULL), CUDA_SUCCESS);
  CHECK_EQ(cuEventSynchronize(b), CUDA_SUCCESS);
  float ms = 0;
  CHECK_EQ(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
  CHECK(fabsf(ms - 0.020f) < 1e-6f);
  CHECK_EQ(
      cuLaunchKernel((CUfunction)&fn2, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
      CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
           CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  cuEventDestroy(a);
  cuEventDestroy(b);
}

/* The runtime, loaded afterwards, finds this same driver: its
 * allocation shows in the driver's accounting, and it resolved its
 * entry points through cuGetProcAddress. */
static void test_runtime_path(void) {
  unsigned long long before = gpusim_procaddr_count();
  void *rt = dlopen(SIMCUDA_DIR "/libcudart.so.13", RTLD_NOW);
  REQUIRE(rt);
  int (*rt_malloc)(void **, size_t) =
      (int (*)(void **, size_t))dlsym(rt, "cudaMalloc");
  REQUIRE(rt_malloc);
  size_t f0, f1, total;
  CHECK_EQ(cuMemGetInfo(&f0, &total), CUDA_SUCCESS);
  void *p = NULL;
  CHECK_EQ(rt_malloc(&p, 4096), 0);
  CHECK_EQ(cuMemGetInfo(&f1, &total), CUDA_SUCCESS);
  CHECK_EQ(f0 - f1, 4096);
  CHECK(gpusim_procaddr_count() > before);
  CHECK_EQ(cuMemFree((CUdeviceptr)p), CUDA_SUCCESS);
}

int main(void) {
  test_proc_address();
  test_context();
  test_copy();
  test_launch();
  test_runtime_path();
  return test_result("test_driver");
}
