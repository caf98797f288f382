/* Simulated runtime: loading the driver, per-thread device and error
 * state, the CUPTI frame of every API call. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rt.h"

rt_driver gp_drv;
rt_driver gp_drv_pt;

static struct {
  void *handle;
  cudaError_t status;
  const gpusim_config *cfg;
  void (*enter)(gpusim_api_frame *, CUpti_CallbackDomain, CUpti_CallbackId,
                const char *, const void *, const char *);
  void (*exit)(gpusim_api_frame *, void *);
  CUfunction (*function)(const char *);
  const char *(*function_name)(const void *);
  int (*current_device)(void);
  CUresult(CUDAAPI *proc)(const char *, void **, int, cuuint64_t,
                          CUdriverProcAddressQueryResult *);
  cudaError_t started;
} drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[GPUSIM_MAX_DEVICES];

/* the device cudaSetDevice chose (0 by default): its primary context is
 * made current when a call needs one and none is */
static __thread int tls_device;
static __thread cudaError_t tls_error;

typedef CUresult(CUDAAPI *proc_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);

static bool resolve_all(proc_fn proc, rt_driver *t, cuuint64_t flags) {
  CUdriverProcAddressQueryResult st;
#define X(field, name, decl)                                                   \
  if (proc(#name, (void **)&t->field, CUDA_VERSION, flags, &st) !=             \
      CUDA_SUCCESS)                                                            \
    return false;
  RT_DRIVER_FUNCS(X)
#undef X
  return true;
}

/* Like the real runtime: dlopen the driver (by soname, see sim_open.c)
 * and find the resolver with dlsym. No driver API call happens here, so that
 * loading (also from nvcc's static registration code) costs no correlation id.
 */
static void load(void) {
  drv.status = cudaErrorInsufficientDriver;
  drv.handle = gp_sim_open_driver();
  if (!drv.handle) return;
  drv.proc = (proc_fn)dlsym(drv.handle, "cuGetProcAddress_v2");
  const gpusim_config *(*cfg)(void) =
      (const gpusim_config *(*)(void))dlsym(drv.handle, "gpusim_get_config");
  drv.enter = (__typeof__(drv.enter))dlsym(drv.handle, "gpusim_api_enter");
  drv.exit = (__typeof__(drv.exit))dlsym(drv.handle, "gpusim_api_exit");
  drv.function = (__typeof__(drv.function))dlsym(drv.handle, "gpusim_function");
  drv.function_name =
      (__typeof__(drv.function_name))dlsym(drv.handle, "gpusim_function_name");
  drv.current_device = (__typeof__(drv.current_device))dlsym(
      drv.handle, "gpusim_current_device");
  if (!drv.proc || !cfg || !drv.enter || !drv.exit || !drv.function ||
      !drv.function_name || !drv.current_device) {
    fprintf(stderr, "gpusim: libcuda.so.1 is not the simulated driver\n");
    return;
  }
  drv.cfg = cfg();
  drv.status = cudaSuccess;
}

/* Every other entry point comes through cuGetProcAddress, inside the
 * first API call's frame (so those driver calls share its correlation
 * id), followed by cuInit. */
static void start(void) {
  if (!resolve_all(drv.proc, &gp_drv, CU_GET_PROC_ADDRESS_DEFAULT) ||
      !resolve_all(drv.proc, &gp_drv_pt,
                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    drv.started = cudaErrorInsufficientDriver;
  else if (gp_drv.init(0) != CUDA_SUCCESS)
    drv.started = cudaErrorInitializationError;
  else
    drv.started = cudaSuccess;
}

cudaError_t gp_rt_load(void) {
  pthread_once(&load_once, load);
  return drv.status;
}

cudaError_t gp_rt_failure(void) {
  return drv.status != cudaSuccess ? drv.status : drv.started;
}

CUfunction gp_rt_named(const char *name) {
  return gp_rt_load() == cudaSuccess ? drv.function(name) : NULL;
}

const char *gp_rt_handle_name(const void *p) {
  return gp_rt_load() == cudaSuccess ? drv.function_name(p) : NULL;
}

static void spin(uint64_t ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
               (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec <
           ns);
}

bool gp_rt_enter(gpusim_api_frame *f, CUpti_CallbackId cbid, const char *name,
                 const void *params, const char *symbol) {
  if (gp_rt_load() != cudaSuccess) return false;
  drv.enter(f, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, name, params, symbol);
  pthread_once(&start_once, start);
  if (drv.started == cudaSuccess) return true;
  cudaError_t e = drv.started;
  drv.exit(f, &e);
  return false;
}

/* Every runtime call costs GPUSIM_API_NS of busy CPU before returning;
 * errors other than "not ready" become the thread's last error. */
cudaError_t gp_rt_exit(gpusim_api_frame *f, cudaError_t e) {
  if (drv.cfg->api_ns) spin(drv.cfg->api_ns);
  if (e != cudaSuccess && e != cudaErrorNotReady) tls_error = e;
  drv.exit(f, &e);
  return e;
}

cudaError_t gp_rt_error(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS:
    return cudaSuccess;
  case CUDA_ERROR_INVALID_VALUE:
    return cudaErrorInvalidValue;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return cudaErrorMemoryAllocation;
  case CUDA_ERROR_NOT_INITIALIZED:
    return cudaErrorInitializationError;
  case CUDA_ERROR_INVALID_DEVICE:
    return cudaErrorInvalidDevice;
  case CUDA_ERROR_INVALID_CONTEXT:
    return cudaErrorDeviceUninitialized;
  case CUDA_ERROR_INVALID_HANDLE:
    return cudaErrorInvalidResourceHandle;
  case CUDA_ERROR_NOT_READY:
    return cudaErrorNotReady;
  case CUDA_ERROR_NOT_SUPPORTED:
    return cudaErrorNotSupported;
  case CUDA_ERROR_NOT_FOUND:
    return cudaErrorSymbolNotFound;
  case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    return cudaErrorHostMemoryAlreadyRegistered;
  case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
    return cudaErrorHostMemoryNotRegistered;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    return cudaErrorStreamCaptureUnsupported;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    return cudaErrorStreamCaptureInvalidated;
  case CUDA_ERROR_ILLEGAL_STATE:
    return cudaErrorIllegalState;
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    return cudaErrorStreamCaptureUnjoined;
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    return cudaErrorStreamCaptureIsolation;
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    return cudaErrorStreamCaptureUnmatched;
  case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
    return cudaErrorGraphExecUpdateFailure;
  default:
    return cudaErrorUnknown;
  }
}

/* As the real runtime does with a context the driver API made current
 * (cuCtxSetCurrent, cuCtxPushCurrent, cuCtxCreate): the thread's device is
 * that context's, and the runtime works in it. */
int gp_rt_device(void) {
  int cur = gp_rt_load() == cudaSuccess ? drv.current_device() : -1;
  if (cur >= 0) tls_device = cur;
  return tls_device;
}

/* The primary context of a device, retained for the process. The driver
 * is called without the lock held: it may call back into CUPTI clients. */
CUcontext gp_rt_primary(int dev) {
  if (dev < 0 || dev >= GPUSIM_MAX_DEVICES) return NULL;
  pthread_mutex_lock(&ctx_lock);
  CUcontext c = primary[dev];
  pthread_mutex_unlock(&ctx_lock);
  if (c) return c;
  if (gp_drv.primary_retain(&c, dev) != CUDA_SUCCESS) return NULL;
  pthread_mutex_lock(&ctx_lock);
  primary[dev] = c; /* the same context whichever thread got here first */
  pthread_mutex_unlock(&ctx_lock);
  return c;
}

/* Makes dev's primary context the thread's current one (replacing the
 * current context, as cuCtxSetCurrent does) unless it already is. */
static cudaError_t bind(int dev) {
  if (drv.current_device() == dev) return cudaSuccess;
  CUcontext c = gp_rt_primary(dev);
  if (!c) return cudaErrorInvalidDevice;
  return gp_rt_error(gp_drv.ctx_set(c));
}

/* cudaSetDevice: the device chosen, its primary context current. */
cudaError_t gp_rt_set_device(int dev) {
  tls_device = dev;
  return bind(dev);
}

/* Before a call that needs a context: the current one, whichever API made
 * it current; with none, the primary context of the chosen device. */
cudaError_t gp_rt_ctx(void) {
  int cur = drv.current_device();
  if (cur >= 0) {
    tls_device = cur;
    return cudaSuccess;
  }
  return bind(tls_device);
}

RT_API cudaError_t CUDARTAPI cudaGetLastError(void) {
  RT_ENTER0(cudaGetLastError, v3020);
  cudaError_t e = gp_rt_exit(&fr_, tls_error);
  tls_error = cudaSuccess;
  return e;
}

RT_API cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  RT_ENTER0(cudaPeekAtLastError, v3020);
  RT_RETURN(tls_error);
}

/* Body of every rt_unsupported.c entry point. GPUSIM_VERBOSE=1 names the
 * call, which is the quickest way to see what a program is missing (a
 * repeated call is named once). */
int gp_rt_unsupported(const char *name);
int gp_rt_unsupported(const char *name) {
  static __thread const char *last;
  const char *v = getenv("GPUSIM_VERBOSE");
  if (v && *v == '1' && last != name)
    fprintf(stderr, "gpusim: %s is not simulated\n", name);
  last = name;
  tls_error = cudaErrorNotSupported;
  return cudaErrorNotSupported;
}
