/* The ways a CUDA program reaches the driver and runtime, one mode each
 * (test_paths.py runs them under the shim and counts the records):
 *
 *   blas            the runtime for setup, kernels from libfakeblas, which
 *                   reaches the driver on its own (cuGetProcAddress, dlsym)
 *   entrypoint      driver functions from cudaGetDriverEntryPoint[ByVersion]
 *   runtime-nested  cudaLaunchKernel, which calls the driver's
 *                   cuLaunchKernel through the pointer it resolved
 *   graph           3 kernels captured into a graph, launched 4 times
 *   multidevice     launches on devices 0 and 1 and a peer copy, then a
 *                   cudaSetDevice(7) that fails
 *   dlsym-next      dlsym(RTLD_NEXT, ...) and dlsym(libcudart handle, ...)
 *   next-lib        a plain cudaMalloc, through a preloaded interposer
 *   hostfn          host functions: the runtime's and the driver's two ways
 *
 * Built with -DPATHS_NEXT_LIB the file is instead that interposer: a tiny
 * preloaded library that defines cudaMalloc itself and forwards it to
 * dlsym(RTLD_NEXT, "cudaMalloc"), as other tools do. Lines "key=value" on
 * stdout tell the test what the program saw. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PATHS_EXPORT __attribute__((visibility("default")))

/* Shared library whose object holds p, or "?". */
static const char *where(const void *p) {
  Dl_info i;
  return p && dladdr(p, &i) && i.dli_fname ? i.dli_fname : "?";
}

#ifdef PATHS_NEXT_LIB

typedef cudaError_t (*malloc_fn)(void **, size_t);
static malloc_fn next_malloc;
static int calls;

PATHS_EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
  if (!next_malloc) next_malloc = (malloc_fn)dlsym(RTLD_NEXT, "cudaMalloc");
  calls++;
  return next_malloc ? next_malloc(p, n) : cudaErrorUnknown;
}

PATHS_EXPORT const char *paths_next_target(int *ncalls) {
  *ncalls = calls;
  return where((const void *)(uintptr_t)next_malloc);
}

#else

#define MB (1u << 20)
#define CK(call)                                                               \
  do {                                                                         \
    int e_ = (int)(call);                                                      \
    if (e_ != 0) {                                                             \
      fprintf(stderr, "%s failed: %d\n", #call, e_);                           \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* libfakeblas (fakeblas.c) */
int fakeblas_create(void);
void fakeblas_set_stream(CUstream s);
void *fakeblas_pointer(int which);
CUresult fakeblas_gemm(int n, CUdeviceptr c);

/* Kernels launched by host pointer are named by their dynamic symbol
 * (the program links with -rdynamic; tests/simcuda/README.md). */
PATHS_EXPORT void paths_ep_kernel(void) {}
PATHS_EXPORT void paths_rt_kernel(void) {}
PATHS_EXPORT void paths_graph_a(void) {}
PATHS_EXPORT void paths_graph_b(void) {}
PATHS_EXPORT void paths_graph_c(void) {}
PATHS_EXPORT void paths_dev0(void) {}
PATHS_EXPORT void paths_dev1(void) {}

static cudaError_t launch(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 g = {blocks, 1, 1}, b = {128, 1, 1};
  return cudaLaunchKernel((const void *)k, g, b, NULL, 0, s);
}

#define BLAS_N 10

static int mode_blas(void) {
  void *c;
  cudaStream_t s;
  CK(cudaMalloc(&c, MB));
  CK(cudaStreamCreate(&s));
  CK(fakeblas_create());
  fakeblas_set_stream((CUstream)s);
  CK(fakeblas_gemm(BLAS_N, (CUdeviceptr)(uintptr_t)c));
  CK(cudaStreamSynchronize(s));
  printf("by_proc=%s\nby_dlsym=%s\n", where(fakeblas_pointer(0)),
         where(fakeblas_pointer(1)));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(c));
  return 0;
}

/* cudaGetDriverEntryPoint is deprecated, still exported, and still used. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int entry(const char *name, void **old, void **byver) {
  enum cudaDriverEntryPointQueryResult q1, q2;
  CK(cudaGetDriverEntryPoint(name, old, cudaEnableDefault, &q1));
  CK(cudaGetDriverEntryPointByVersion(name, byver, 13000, cudaEnableDefault,
                                      &q2));
  CK(q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess);
  printf("%s=%s %s\n", name, where(*old), where(*byver));
  return 0;
}
#pragma GCC diagnostic pop

/* Each driver function through both resolvers, each pointer used: two
 * allocations, four launches (2 x 132 blocks each), two synchronisations. */
static int mode_entrypoint(void) {
  CK(cudaFree(NULL)); /* the customary context initialisation */
  cudaFunction_t f;
  CK(cudaGetFuncBySymbol(&f, (const void *)paths_ep_kernel));
  void *alloc[2], *launchp[2], *sync[2];
  CK(entry("cuMemAlloc", &alloc[0], &alloc[1]));
  CK(entry("cuLaunchKernel", &launchp[0], &launchp[1]));
  CK(entry("cuCtxSynchronize", &sync[0], &sync[1]));
  CUdeviceptr d[2];
  for (int i = 0; i < 2; i++) {
    __typeof__(&cuMemAlloc_v2) a = (__typeof__(&cuMemAlloc_v2))alloc[i];
    __typeof__(&cuLaunchKernel) l = (__typeof__(&cuLaunchKernel))launchp[i];
    CK(a(&d[i], MB));
    void *args[] = {&d[i]};
    for (int j = 0; j < 2; j++)
      CK(l((CUfunction)f, 264, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  }
  for (int i = 0; i < 2; i++)
    CK(((__typeof__(&cuCtxSynchronize_v2))sync[i])(NULL));
  CK(cudaFree((void *)(uintptr_t)d[0]));
  CK(cudaFree((void *)(uintptr_t)d[1]));
  return 0;
}

/* The runtime resolved cuLaunchKernel the way this lookup does
 * (dlsym(libcuda, "cuGetProcAddress_v2"), then the base name), so under
 * the shim each cudaLaunchKernel calls the shim's cuLaunchKernel. */
static int mode_runtime_nested(void) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int i = 0; i < 5; i++)
    CK(launch(paths_rt_kernel, 264, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamDestroy(s));
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CK(h == NULL);
  CUresult (*gpa)(const char *, void **, int, cuuint64_t,
                  CUdriverProcAddressQueryResult *) =
      (__typeof__(gpa))dlsym(h, "cuGetProcAddress_v2");
  CK(gpa == NULL);
  void *p = NULL;
  CK(gpa("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
  printf("driver_launch=%s\n", where(p));
  /* the CUDA 11.3-12.x resolver, looked up by its own name */
  CUresult (*gpa1)(const char *, void **, int, cuuint64_t) =
      (__typeof__(gpa1))dlsym(h, "cuGetProcAddress");
  CK(gpa1 == NULL);
  printf("gpa_v1=%s\n", where((void *)gpa1));
  void *p1 = NULL;
  CK(gpa1("cuLaunchKernel", &p1, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
  printf("driver_launch_v1=%s\n", where(p1));
  dlclose(h);
  return 0;
}

static int mode_graph(void) {
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t x;
  CK(cudaStreamCreate(&s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(launch(paths_graph_a, 132, s));
  CK(launch(paths_graph_b, 264, s));
  CK(launch(paths_graph_c, 1, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&x, g, 0));
  for (int i = 0; i < 4; i++)
    CK(cudaGraphLaunch(x, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaGraphExecDestroy(x));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  return 0;
}

/* Device 0: 3 kernels of 264 blocks; device 1: 2 of 132 blocks; then 1 MiB
 * from device 0 to device 1. All on the legacy streams. */
static int mode_multidevice(void) {
  int n = 0;
  void *a0, *a1;
  CK(cudaGetDeviceCount(&n));
  CK(n != 2);
  CK(cudaSetDevice(0));
  CK(cudaMalloc(&a0, MB));
  for (int i = 0; i < 3; i++)
    CK(launch(paths_dev0, 264, 0));
  /* device 0 idle before the peer copy: it is then all transfer there */
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&a1, MB));
  for (int i = 0; i < 2; i++)
    CK(launch(paths_dev1, 132, 0));
  CK(cudaMemcpyPeer(a1, 1, a0, 0, MB));
  CK(cudaDeviceSynchronize());
  CK(cudaFree(a1));
  CK(cudaSetDevice(0));
  CK(cudaDeviceSynchronize());
  CK(cudaFree(a0));
  /* a device that does not exist: the call fails and device 0 stays */
  CK(cudaSetDevice(7) == cudaSuccess);
  return 0;
}

static int hostfn_calls;
static void CUDART_CB hostfn(void *arg) { hostfn_calls += arg != NULL; }
static void CUDART_CB stream_cb(cudaStream_t s, cudaError_t e, void *arg) {
  (void)s;
  hostfn_calls += e == cudaSuccess && arg != NULL;
}
static void CUDA_CB drv_stream_cb(CUstream s, CUresult e, void *arg) {
  (void)s;
  hostfn_calls += e == CUDA_SUCCESS && arg != NULL;
}

/* Host functions in a stream, every way: runtime cudaLaunchHostFunc and
 * cudaStreamAddCallback, driver cuLaunchHostFunc and cuStreamAddCallback
 * (through cudaGetDriverEntryPoint), each once, between two kernels. */
static int mode_hostfn(void) {
  cudaStream_t s;
  int tag = 1;
  CK(cudaStreamCreate(&s));
  CK(launch(paths_rt_kernel, 132, s));
  CK(cudaLaunchHostFunc(s, hostfn, &tag));
  CK(cudaStreamAddCallback(s, stream_cb, &tag, 0));
  void *lh = NULL, *ac = NULL;
  enum cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuLaunchHostFunc", &lh, 13000,
                                      cudaEnableDefault, &q));
  CK(cudaGetDriverEntryPointByVersion("cuStreamAddCallback", &ac, 13000,
                                      cudaEnableDefault, &q));
  CK(((__typeof__(&cuLaunchHostFunc))lh)((CUstream)s, hostfn, &tag));
  CK(((__typeof__(&cuStreamAddCallback))ac)((CUstream)s, drv_stream_cb, &tag,
                                            0));
  CK(launch(paths_rt_kernel, 132, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamDestroy(s));
  printf("hostfn_calls=%d\n", hostfn_calls);
  return 0;
}

typedef cudaError_t (*malloc_fn)(void **, size_t);

/* Allocation sizes tell the calls apart in the trace. */
static int mode_dlsym_next(void) {
  malloc_fn next = (malloc_fn)dlsym(RTLD_NEXT, "cudaMalloc");
  void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  CK(h == NULL);
  malloc_fn byhandle = (malloc_fn)dlsym(h, "cudaMalloc");
  printf("next=%s\nhandle=%s\n", where((const void *)(uintptr_t)next),
         where((const void *)(uintptr_t)byhandle));
  void *a, *b;
  CK(next == NULL || byhandle == NULL);
  CK(next(&a, 1111));
  CK(byhandle(&b, 2222));
  CK(cudaFree(a));
  CK(cudaFree(b));
  dlclose(h);
  return 0;
}

static int mode_next_lib(void) {
  const char *(*target)(int *) =
      (__typeof__(target))dlsym(RTLD_DEFAULT, "paths_next_target");
  CK(target == NULL);
  void *a;
  CK(cudaMalloc(&a, 3333));
  int calls = 0;
  printf("lib_next=%s\n", target(&calls));
  printf("lib_calls=%d\n", calls);
  CK(cudaFree(a));
  return 0;
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*run)(void);
  } modes[] = {
      {"blas", mode_blas},
      {"entrypoint", mode_entrypoint},
      {"runtime-nested", mode_runtime_nested},
      {"graph", mode_graph},
      {"multidevice", mode_multidevice},
      {"dlsym-next", mode_dlsym_next},
      {"next-lib", mode_next_lib},
      {"hostfn", mode_hostfn},
  };
  for (size_t i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp(argv[1], modes[i].name) == 0) return modes[i].run();
  fprintf(stderr, "usage: %s MODE\n", argv[0]);
  return 2;
}

#endif
