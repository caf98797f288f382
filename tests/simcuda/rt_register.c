/* Simulated runtime: kernels and symbols. nvcc-built programs register
 * their kernels and variables from static constructors; C programs launch
 * by host function pointer and the kernel is named after that function's
 * dynamic symbol (dladdr; link with -rdynamic). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "rt.h"

typedef struct rt_module {
  void *fatbin; /* the handle given to nvcc's code points here */
  struct rt_module *next;
} rt_module;

typedef struct rt_kernel {
  const void *host;
  CUfunction f;
} rt_kernel;

typedef struct rt_var {
  const void *host;
  void **module;
  size_t size;
  CUdeviceptr dev;
  void **managed; /* host slot nvcc reads a managed variable through */
} rt_var;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_module *modules;
static rt_kernel *kernels;
static size_t nkernels, capkernels;
static rt_var *vars;
static size_t nvars, capvars;

static bool grow(void **v, size_t n, size_t *cap, size_t elem) {
  if (n < *cap) return true;
  size_t c = *cap ? *cap * 2 : 32;
  void *p = realloc(*v, c * elem);
  if (!p) return false;
  *v = p;
  *cap = c;
  return true;
}

static CUfunction kernel_find(const void *host) {
  for (size_t i = 0; i < nkernels; i++)
    if (kernels[i].host == host) return kernels[i].f;
  return NULL;
}

static void kernel_add(const void *host, CUfunction f) {
  pthread_mutex_lock(&reg_lock);
  size_t i = 0;
  while (i < nkernels && kernels[i].host != host)
    i++;
  if (i < nkernels ||
      grow((void **)&kernels, nkernels, &capkernels, sizeof *kernels)) {
    kernels[i].host = host;
    kernels[i].f = f;
    nkernels += i == nkernels;
  }
  pthread_mutex_unlock(&reg_lock);
}

/* Registered host stub, else a CUfunction/cudaKernel_t handle itself,
 * else the dynamic symbol the pointer is the start of. */
CUfunction gp_rt_function(const void *func) {
  if (!func) return NULL;
  pthread_mutex_lock(&reg_lock);
  CUfunction f = kernel_find(func);
  pthread_mutex_unlock(&reg_lock);
  if (f) return f;
  if (gp_rt_handle_name(func)) return (CUfunction)func;
  Dl_info di;
  if (!dladdr(func, &di) || !di.dli_sname || di.dli_saddr != func) return NULL;
  f = gp_rt_named(di.dli_sname);
  if (f) kernel_add(func, f);
  return f;
}

static rt_var *var_find(const void *host) {
  for (size_t i = 0; i < nvars; i++)
    if (vars[i].host == host) return &vars[i];
  return NULL;
}

/* A variable's device copy is allocated on first use, in the calling
 * thread's current context (outside the lock: the driver may call back
 * into CUPTI clients). */
cudaError_t gp_rt_symbol(const void *symbol, CUdeviceptr *addr, size_t *size) {
  pthread_mutex_lock(&reg_lock);
  rt_var *v = var_find(symbol);
  rt_var copy = v ? *v : (rt_var){0};
  pthread_mutex_unlock(&reg_lock);
  if (!v) return cudaErrorInvalidSymbol;
  if (copy.managed && *copy.managed) copy.dev = (CUdeviceptr)*copy.managed;
  if (!copy.dev) {
    cudaError_t e =
        gp_rt_error(gp_drv.mem_alloc(&copy.dev, copy.size ? copy.size : 1));
    if (e != cudaSuccess) return e;
    pthread_mutex_lock(&reg_lock);
    v = var_find(symbol);
    CUdeviceptr lost = copy.dev;
    if (v && !v->dev)
      v->dev = copy.dev, lost = 0;
    else if (v)
      copy.dev = v->dev;
    pthread_mutex_unlock(&reg_lock);
    if (lost) gp_drv.mem_free(lost);
  }
  *addr = copy.dev;
  *size = copy.size;
  return cudaSuccess;
}

static void var_add(void **module, const void *host, size_t size,
                    void **managed) {
  pthread_mutex_lock(&reg_lock);
  rt_var *v = var_find(host);
  if (!v && grow((void **)&vars, nvars, &capvars, sizeof *vars))
    v = &vars[nvars++];
  if (v) {
    rt_var nv = {host, module, size, 0, managed};
    *v = nv;
  }
  pthread_mutex_unlock(&reg_lock);
}

RT_API void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin) {
  rt_module *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->fatbin = fatCubin;
  pthread_mutex_lock(&reg_lock);
  m->next = modules;
  modules = m;
  pthread_mutex_unlock(&reg_lock);
  return &m->fatbin;
}

RT_API void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {
  (void)fatCubinHandle;
}

/* Modules stay known until exit: nvcc unregisters from atexit, after
 * which nothing launches any more. */
RT_API void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle) {
  (void)fatCubinHandle;
}

RT_API void CUDARTAPI __cudaRegisterFunction(
    void **fatCubinHandle, const char *hostFun, char *deviceFun,
    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
    dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid;
  (void)bid, (void)bDim, (void)gDim, (void)wSize;
  CUfunction f = gp_rt_named(deviceName);
  if (f) kernel_add(hostFun, f);
}

RT_API void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
                                        char *deviceAddress,
                                        const char *deviceName, int ext,
                                        size_t size, int constant, int global) {
  (void)deviceAddress, (void)deviceName, (void)ext, (void)constant;
  (void)global;
  var_add(fatCubinHandle, hostVar, size, NULL);
}

RT_API void CUDARTAPI __cudaRegisterManagedVar(
    void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
    const char *deviceName, int ext, size_t size, int constant, int global) {
  (void)deviceAddress, (void)deviceName, (void)ext, (void)constant;
  (void)global;
  var_add(fatCubinHandle, hostVarPtrAddress, size, hostVarPtrAddress);
}

/* Gives the module's managed variables their (host-accessible) managed
 * memory, which nvcc's code then reads through the registered slot. */
RT_API char CUDARTAPI __cudaInitModule(void **fatCubinHandle) {
  gpusim_api_frame fr_;
  if (!gp_rt_enter(&fr_, CUPTI_RUNTIME_TRACE_CBID___cudaInitModule_v13000,
                   "__cudaInitModule", NULL, NULL))
    return 0;
  cudaError_t e = gp_rt_ctx();
  for (size_t i = 0; e == cudaSuccess; i++) {
    pthread_mutex_lock(&reg_lock);
    rt_var v = i < nvars ? vars[i] : (rt_var){0};
    pthread_mutex_unlock(&reg_lock);
    if (!v.host) break;
    if (v.module != fatCubinHandle || !v.managed || *v.managed) continue;
    CUdeviceptr p = 0;
    e = gp_rt_error(gp_drv.mem_managed(&p, v.size ? v.size : 1, 1));
    *v.managed = (void *)p;
  }
  return gp_rt_exit(&fr_, e) == cudaSuccess;
}

/* <<<...>>> configurations, pushed and popped by nvcc's launch stubs. */
typedef struct call_config {
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
} call_config;

#define MAX_CONFIGS 16
static __thread call_config configs[MAX_CONFIGS];
static __thread int nconfigs;

RT_API unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim,
                                                      dim3 blockDim,
                                                      size_t sharedMem,
                                                      struct CUstream_st *s) {
  if (nconfigs == MAX_CONFIGS) return 1;
  call_config c = {gridDim, blockDim, sharedMem, s};
  configs[nconfigs++] = c;
  return 0;
}

RT_API cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim,
                                                        dim3 *blockDim,
                                                        size_t *sharedMem,
                                                        void *stream) {
  if (nconfigs == 0) return cudaErrorMissingConfiguration;
  call_config c = configs[--nconfigs];
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shmem;
  *(cudaStream_t *)stream = c.stream;
  return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel,
                                             const void *fun) {
  CUfunction f = gp_rt_function(fun);
  if (kernel) *kernel = (cudaKernel_t)f;
  return f ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

RT_API cudaError_t CUDARTAPI cudaGetSymbolAddress(void **devPtr,
                                                  const void *symbol) {
  RT_ENTER(cudaGetSymbolAddress, v3020, devPtr, symbol);
  RT_NEED_CTX();
  CUdeviceptr a = 0;
  size_t size;
  cudaError_t e = gp_rt_symbol(symbol, &a, &size);
  if (e == cudaSuccess && devPtr) *devPtr = (void *)a;
  RT_RETURN(devPtr ? e : cudaErrorInvalidValue);
}

RT_API cudaError_t CUDARTAPI cudaGetSymbolSize(size_t *size,
                                               const void *symbol) {
  RT_ENTER(cudaGetSymbolSize, v3020, size, symbol);
  if (!size) RT_RETURN(cudaErrorInvalidValue);
  pthread_mutex_lock(&reg_lock);
  rt_var *v = var_find(symbol);
  if (v) *size = v->size;
  pthread_mutex_unlock(&reg_lock);
  RT_RETURN(v ? cudaSuccess : cudaErrorInvalidSymbol);
}
