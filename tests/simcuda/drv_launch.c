/* Simulated driver: kernels (named CUfunctions), launches and host
 * functions in streams. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static sim_function *functions;
static int64_t grid_ids;

/* Functions are interned by name and never freed, so that the name
 * pointers handed to CUPTI records stay valid for the process lifetime. */
GPUSIM_EXPORT CUfunction gpusim_function(const char *name) {
  if (!name || !*name) return NULL;
  pthread_mutex_lock(&gp_lock);
  sim_function *f = functions;
  while (f && (f->mod || strcmp(f->name, name) != 0))
    f = f->next;
  if (!f && (f = calloc(1, sizeof *f))) {
    if ((f->name = strdup(name))) {
      gp_function_init(f);
      gp_function_attrs(f); /* GPUSIM_KERNEL_ATTRS */
      f->next = functions;
      functions = f;
    } else {
      free(f);
      f = NULL;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return (CUfunction)f;
}

/* Defaults of a kernel whose image is not known (gpusim_function, and
 * what a module's image does not say). */
void gp_function_init(sim_function *f) {
  f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
  f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] = 32;
  f->attr[CU_FUNC_ATTRIBUTE_PTX_VERSION] = 90;
  f->attr[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = 90;
  f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = 49152;
  f->attr[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
  f->cache = CU_FUNC_CACHE_PREFER_NONE;
}

void gp_function_link(sim_function *f) {
  f->next = functions;
  functions = f;
}

void gp_function_unlink(sim_function *f) {
  for (sim_function **pp = &functions; *pp; pp = &(*pp)->next)
    if (*pp == f) {
      *pp = f->next;
      return;
    }
}

sim_function *gp_function_find(const void *p) {
  for (sim_function *f = functions; f; f = f->next)
    if ((const void *)f == p) return f;
  return NULL;
}

/* The function of handle `f` (NULL if none), with what its records
 * need. */
void gp_launch_bind(sim_launch *l, const void *f) {
  const sim_function *fn = gp_function_find(f);
  l->f = fn;
  l->name = fn ? fn->name : NULL;
  l->regs = fn ? fn->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] : 0;
  l->static_shmem = fn ? fn->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] : 0;
}

GPUSIM_EXPORT const char *gpusim_function_name(const void *maybe_function) {
  pthread_mutex_lock(&gp_lock);
  sim_function *f = gp_function_find(maybe_function);
  pthread_mutex_unlock(&gp_lock);
  return f ? f->name : NULL;
}

GPUSIM_EXPORT CUresult CUDAAPI cuFuncGetName(const char **name,
                                             CUfunction hfunc) {
  DRV_ENTER(cuFuncGetName, name, hfunc);
  const char *n = gpusim_function_name(hfunc);
  if (!name) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *name = n;
  DRV_RETURN(n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

uint64_t gp_launch_ns(const sim_launch *l) {
  return gp_kernel_ns((uint64_t)l->grid[0] * l->grid[1] * l->grid[2]);
}

int64_t gp_grid_id(void) {
  return ++grid_ids;
}

void gp_kernel_record(const sim_launch *l, const sim_op *op, int64_t gid) {
  gp_counters_kernel(l, op);
  CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (!gp_activity_on(kind)) {
    kind = CUPTI_ACTIVITY_KIND_KERNEL;
    if (!gp_activity_on(kind)) return;
  }
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = kind;
  k.registersPerThread = (uint16_t)l->regs;
  k.staticSharedMemory = (int32_t)l->static_shmem;
  k.start = gp_ts(op->start);
  k.end = gp_ts(op->end);
  k.completed = k.end;
  k.deviceId = (uint32_t)op->dev;
  k.contextId = op->ctx_id;
  k.streamId = op->stream_id;
  k.gridX = (int32_t)l->grid[0];
  k.gridY = (int32_t)l->grid[1];
  k.gridZ = (int32_t)l->grid[2];
  k.blockX = (int32_t)l->block[0];
  k.blockY = (int32_t)l->block[1];
  k.blockZ = (int32_t)l->block[2];
  k.dynamicSharedMemory = (int32_t)l->shmem;
  k.sharedMemoryExecuted = l->shmem;
  k.correlationId = gp_corr();
  k.gridId = gid;
  k.graphId = op->graph_id;
  k.graphNodeId = op->graph_node_id;
  k.name = l->name;
  k.launchType = l->type;
  gp_emit(&k, sizeof k);
}

/* A launch into a capturing stream becomes a graph node: no device work,
 * no record. */
static CUresult do_launch(const sim_launch *l) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
  uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
  if (!l->f) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks == 0 || threads == 0 || threads > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  sim_op op;
  int64_t gid = 0;
  bool run = false;
again:
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(l->stream, l->pt, &s);
  if (r == CUDA_SUCCESS && s->kind == STREAM_USER) {
    /* as CUDA's: a kernel is launched only on a stream of the current
     * context's device (copies may use another device's stream) */
    sim_ctx *c;
    r = gp_need_ctx(&c);
    if (r == CUDA_SUCCESS && c->dev != s->dev) r = CUDA_ERROR_INVALID_HANDLE;
  }
  if (r == CUDA_SUCCESS && s->capture) {
    sim_node n = {.kind = NODE_KERNEL, .u.k = *l};
    r = gp_capture(s, &n);
  } else if (r == CUDA_SUCCESS) {
    /* as a real launch queue: with launch_queue kernels of the device
     * unfinished, the call waits for the oldest to end */
    sim_device *dev = &gp_dev[s->dev];
    uint64_t q = gp_cfg.launch_queue;
    if (q && !dev->qends && !(dev->qends = calloc(q, sizeof *dev->qends)))
      q = 0;
    uint64_t oldest = q ? dev->qends[dev->nlaunch % q] : 0;
    if (oldest > gp_now()) {
      pthread_mutex_unlock(&gp_lock);
      gp_sleep_until(oldest);
      goto again; /* the stream may be gone; the queue taken again */
    }
    gp_schedule(s, gp_launch_ns(l), &op);
    if (q) dev->qends[dev->nlaunch++ % q] = op.end;
    gid = gp_grid_id();
    run = true;
  }
  pthread_mutex_unlock(&gp_lock);
  if (run) gp_kernel_record(l, &op, gid);
  return r;
}

/* Resolves the handle before the CUPTI enter callback so that the
 * callback can report the kernel's name as symbolName. */
#define LAUNCH_ENTER(fn, func, ...)                                            \
  fn##_params prm_ = {__VA_ARGS__};                                            \
  gpusim_api_frame fr_;                                                        \
  const char *sym_ = gpusim_function_name(func);                               \
  gpusim_api_enter(&fr_, CUPTI_CB_DOMAIN_DRIVER_API,                           \
                   CUPTI_DRIVER_TRACE_CBID_##fn, #fn, &prm_, sym_)

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shmem, CUstream h, bool pt,
                              uint8_t type) {
  sim_launch l = {.grid = {gx, gy, gz},
                  .block = {bx, by, bz},
                  .shmem = shmem,
                  .stream = h,
                  .pt = pt,
                  .type = type};
  pthread_mutex_lock(&gp_lock);
  gp_launch_bind(&l, f);
  pthread_mutex_unlock(&gp_lock);
  return do_launch(&l);
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchKernel(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream h, void **kernelParams, void **extra) {
  LAUNCH_ENTER(cuLaunchKernel, f, f, gx, gy, gz, bx, by, bz, shmem, h,
               kernelParams, extra);
  DRV_RETURN(launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, h, false,
                           CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchKernel_ptsz(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream h, void **kernelParams, void **extra) {
  LAUNCH_ENTER(cuLaunchKernel_ptsz, f, f, gx, gy, gz, bx, by, bz, shmem, h,
               kernelParams, extra);
  DRV_RETURN(launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, h, true,
                           CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream h, void **kernelParams) {
  LAUNCH_ENTER(cuLaunchCooperativeKernel, f, f, gx, gy, gz, bx, by, bz, shmem,
               h, kernelParams);
  DRV_RETURN(
      launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, h, false,
                    CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
    CUstream h, void **kernelParams) {
  LAUNCH_ENTER(cuLaunchCooperativeKernel_ptsz, f, f, gx, gy, gz, bx, by, bz,
               shmem, h, kernelParams);
  DRV_RETURN(
      launch_kernel(f, gx, gy, gz, bx, by, bz, shmem, h, true,
                    CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE));
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, bool pt) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  uint8_t type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
  for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
        c->attrs[i].value.cooperative)
      type = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
  return launch_kernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                       c->blockDimY, c->blockDimZ, c->sharedMemBytes,
                       c->hStream, pt, type);
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config,
                                                CUfunction f,
                                                void **kernelParams,
                                                void **extra) {
  LAUNCH_ENTER(cuLaunchKernelEx, f, config, f, kernelParams, extra);
  DRV_RETURN(launch_ex(config, f, false));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                      void **kernelParams, void **extra) {
  LAUNCH_ENTER(cuLaunchKernelEx_ptsz, f, config, f, kernelParams, extra);
  DRV_RETURN(launch_ex(config, f, true));
}

/* Host functions run at once on the calling thread (documented) and
 * take no device time; later work on the stream starts no earlier than
 * their return. */
static CUresult host_fn(CUstream h, bool pt, CUhostFn fn, void *ud,
                        CUstreamCallback cb) {
  if (!fn && !cb) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  bool captured = false;
  if (r == CUDA_SUCCESS && s->capture && cb) {
    gp_capture_break(s); /* stream callbacks cannot be captured */
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (r == CUDA_SUCCESS && s->capture) {
    sim_node n = {.kind = NODE_HOST, .u.h = {fn, ud}};
    r = gp_capture(s, &n);
    captured = true;
  }
  pthread_mutex_unlock(&gp_lock);
  if (r != CUDA_SUCCESS || captured) return r;
  if (fn)
    fn(ud);
  else
    cb(h, CUDA_SUCCESS, ud);
  pthread_mutex_lock(&gp_lock);
  /* The stream may have been destroyed by the callback. */
  if (gp_stream_get(h, pt, &s) == CUDA_SUCCESS) {
    uint64_t ready = gp_stream_ready(s), now = gp_now();
    s->tail = ready > now ? ready : now;
  }
  pthread_mutex_unlock(&gp_lock);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn,
                                                void *userData) {
  DRV_ENTER(cuLaunchHostFunc, hStream, fn, userData);
  DRV_RETURN(host_fn(hStream, false, fn, userData, NULL));
}

GPUSIM_EXPORT CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream,
                                                     CUhostFn fn,
                                                     void *userData) {
  DRV_ENTER(cuLaunchHostFunc_ptsz, hStream, fn, userData);
  DRV_RETURN(host_fn(hStream, true, fn, userData, NULL));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamAddCallback(CUstream hStream,
                                                   CUstreamCallback callback,
                                                   void *userData,
                                                   unsigned int flags) {
  DRV_ENTER(cuStreamAddCallback, hStream, callback, userData, flags);
  DRV_RETURN(host_fn(hStream, false, NULL, userData, callback));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                         void *userData, unsigned int flags) {
  DRV_ENTER(cuStreamAddCallback_ptsz, hStream, callback, userData, flags);
  DRV_RETURN(host_fn(hStream, true, NULL, userData, callback));
}
