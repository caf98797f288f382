/* Simulated driver: configuration, clock, devices and the per-thread
 * context stack. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "drv.h"

pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;
gpusim_config gp_cfg;
sim_device gp_dev[GPUSIM_MAX_DEVICES];
bool gp_inited;

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static uint32_t stream_ids;

/* A thread's context stack: the top is the current context. */
#define CTX_STACK 16
static __thread sim_ctx *ctx_stack[CTX_STACK];
static __thread int ctx_depth;

static uint64_t env_u64(const char *name, uint64_t def, uint64_t min,
                        uint64_t max) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-' || v < min || v > max) {
    fprintf(stderr, "gpusim: ignoring invalid %s=%s\n", name, s);
    return def;
  }
  return v;
}

/* Decimal with up to three fractional digits, returned x1000, so that
 * rates like 12.5 GB/s stay exact integers. */
static uint64_t env_milli(const char *name, uint64_t def_milli) {
  const char *s = getenv(name);
  if (!s || !*s) return def_milli;
  uint64_t v = 0, frac = 0;
  int fd = -1;
  const char *p = s;
  for (; *p; p++) {
    if (*p == '.' && fd < 0) {
      fd = 0;
    } else if (*p >= '0' && *p <= '9' && fd < 3 && v < 1000000000ull) {
      if (fd < 0)
        v = v * 10 + (uint64_t)(*p - '0');
      else
        frac = frac * 10 + (uint64_t)(*p - '0'), fd++;
    } else {
      break;
    }
  }
  for (int i = fd < 0 ? 0 : fd; i < 3; i++)
    frac *= 10;
  uint64_t r = v * 1000 + frac;
  if (*p || r == 0) {
    fprintf(stderr, "gpusim: ignoring invalid %s=%s\n", name, s);
    return def_milli;
  }
  return r;
}

static void config_read(void) {
  gp_cfg.devices = (int)env_u64("GPUSIM_DEVICES", 1, 1, GPUSIM_MAX_DEVICES);
  gp_cfg.sms = (int)env_u64("GPUSIM_SMS", 132, 1, 1u << 20);
  gp_cfg.mem_bytes =
      env_u64("GPUSIM_MEM_BYTES", 141000000000ull, 1, 1ull << 46);
  gp_cfg.wave_ns = env_u64("GPUSIM_WAVE_NS", 10000, 0, 1ull << 40);
  gp_cfg.pcie_mbps = env_milli("GPUSIM_PCIE_GBPS", 25000);
  gp_cfg.hbm_mbps = env_milli("GPUSIM_HBM_GBPS", 3000000);
  gp_cfg.copy_latency_ns =
      env_u64("GPUSIM_COPY_LATENCY_NS", 2000, 0, 1ull << 40);
  gp_cfg.api_ns = env_u64("GPUSIM_API_NS", 0, 0, 1ull << 40);
  gp_cfg.launch_queue = env_u64("GPUSIM_LAUNCH_QUEUE", 1024, 0, 1u << 20);
  const char *c = getenv("GPUSIM_CUPTI");
  gp_cfg.cupti_busy = c && strcmp(c, "busy") == 0;
}

void gp_config_load(void) {
  pthread_once(&config_once, config_read);
}

GPUSIM_EXPORT const gpusim_config *gpusim_get_config(void) {
  gp_config_load();
  return &gp_cfg;
}

uint64_t gp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gp_sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* latency + ceil(bytes / rate), rate in bytes per microsecond (= GB/s
 * x 1000), i.e. ceil(bytes * 1000 / mbps) ns. */
uint64_t gp_copy_ns(uint64_t bytes, uint64_t mbps) {
  unsigned __int128 num = (unsigned __int128)bytes * 1000u;
  uint64_t xfer = (uint64_t)((num + mbps - 1) / mbps);
  return gp_cfg.copy_latency_ns + xfer;
}

uint64_t gp_kernel_ns(uint64_t blocks) {
  uint64_t sms = (uint64_t)gp_cfg.sms;
  return (blocks + sms - 1) / sms * gp_cfg.wave_ns;
}

uint32_t gp_next_stream_id(void) {
  return ++stream_ids;
}

/* Each device gets a PROT_NONE reservation so that its fake addresses can
 * never alias real memory and any host access to them faults. */
static CUresult device_setup(int d) {
  sim_device *dev = &gp_dev[d];
  size_t gib = 1ull << 30;
  size_t span = (gp_cfg.mem_bytes + 2 * gib - 1) / gib * gib;
  void *hint = (void *)(uintptr_t)(0x200000000000ull + (uint64_t)d * span);
  void *p = mmap(hint, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  dev->ordinal = d;
  dev->va_base = (uintptr_t)p;
  dev->va_size = span;
  dev->ctx.dev = d;
  dev->ctx.id = (uint32_t)d + 1;
  dev->legacy.dev = d;
  dev->legacy.kind = STREAM_LEGACY;
  dev->legacy.id = gp_next_stream_id();
  return CUDA_SUCCESS;
}

static CUresult init_locked(void) {
  if (gp_inited) return CUDA_SUCCESS;
  for (int d = 0; d < gp_cfg.devices; d++) {
    CUresult r = device_setup(d);
    if (r != CUDA_SUCCESS) return r;
  }
  __atomic_store_n(&gp_inited, true, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  DRV_ENTER(cuInit, Flags);
  gp_config_load();
  if (Flags != 0) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  CUresult r = init_locked();
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

sim_ctx *gp_current_ctx(void) {
  return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

GPUSIM_EXPORT int gpusim_current_device(void) {
  sim_ctx *c = gp_current_ctx();
  return c ? c->dev : -1;
}

CUresult gp_need_ctx(sim_ctx **out) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  *out = gp_current_ctx();
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* Contexts are validated by identity: only the per-device primary
 * contexts exist in the simulation. */
static sim_ctx *ctx_check(CUcontext c) {
  for (int d = 0; d < gp_cfg.devices; d++)
    if ((CUcontext)&gp_dev[d].ctx == c) return &gp_dev[d].ctx;
  return NULL;
}

static CUresult dev_check(CUdevice d) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  return d >= 0 && d < gp_cfg.devices ? CUDA_SUCCESS
                                      : CUDA_ERROR_INVALID_DEVICE;
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  DRV_ENTER(cuCtxSetCurrent, ctx);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  sim_ctx *c = ctx ? ctx_check(ctx) : NULL;
  if (ctx && !c) DRV_RETURN(CUDA_ERROR_INVALID_CONTEXT);
  if (ctx_depth == 0 && c)
    ctx_stack[ctx_depth++] = c;
  else if (ctx_depth > 0 && c)
    ctx_stack[ctx_depth - 1] = c;
  else if (ctx_depth > 0)
    ctx_depth--;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  DRV_ENTER(cuCtxGetCurrent, pctx);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pctx) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  *pctx = (CUcontext)gp_current_ctx();
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  DRV_ENTER(cuCtxPushCurrent_v2, ctx);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  sim_ctx *c = ctx_check(ctx);
  if (!c) DRV_RETURN(CUDA_ERROR_INVALID_CONTEXT);
  if (ctx_depth == CTX_STACK) DRV_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  ctx_stack[ctx_depth++] = c;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx) {
  DRV_ENTER(cuCtxPopCurrent_v2, pctx);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (ctx_depth == 0) DRV_RETURN(CUDA_ERROR_INVALID_CONTEXT);
  sim_ctx *c = ctx_stack[--ctx_depth];
  if (pctx) *pctx = (CUcontext)c;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx,
                                                        CUdevice dev) {
  DRV_ENTER(cuDevicePrimaryCtxRetain, pctx, dev);
  CUresult r = dev_check(dev);
  if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&gp_lock);
    gp_dev[dev].ctx.refs++;
    pthread_mutex_unlock(&gp_lock);
    *pctx = (CUcontext)&gp_dev[dev].ctx;
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  DRV_ENTER(cuDevicePrimaryCtxRelease_v2, dev);
  CUresult r = dev_check(dev);
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&gp_lock);
    if (gp_dev[dev].ctx.refs > 0)
      gp_dev[dev].ctx.refs--;
    else
      r = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&gp_lock);
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev,
                                                          unsigned int *flags,
                                                          int *active) {
  DRV_ENTER(cuDevicePrimaryCtxGetState, dev, flags, active);
  CUresult r = dev_check(dev);
  if (r == CUDA_SUCCESS && (!flags || !active)) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&gp_lock);
    *flags = 0;
    *active = gp_dev[dev].ctx.refs > 0;
    pthread_mutex_unlock(&gp_lock);
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev,
                                                             unsigned int f) {
  DRV_ENTER(cuDevicePrimaryCtxSetFlags_v2, dev, f);
  DRV_RETURN(dev_check(dev));
}

/* Resetting waits for the device's work, then frees what the context
 * owned: device allocations, user streams and events. */
GPUSIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  DRV_ENTER(cuDevicePrimaryCtxReset_v2, dev);
  CUresult r = dev_check(dev);
  if (r != CUDA_SUCCESS) DRV_RETURN(r);
  pthread_mutex_lock(&gp_lock);
  uint64_t until = gp_device_tail(dev);
  pthread_mutex_unlock(&gp_lock);
  gp_sleep_until(until);
  pthread_mutex_lock(&gp_lock);
  gp_device_reset_modules(dev);
  gp_device_reset_mem(dev);
  gp_device_reset_streams(dev);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(CUDA_SUCCESS);
}

/* cuCtxCreate hands out the device's primary context (documented
 * simplification: one context per device). */
GPUSIM_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx,
                                              CUctxCreateParams *params,
                                              unsigned int flags,
                                              CUdevice dev) {
  DRV_ENTER(cuCtxCreate_v4, pctx, params, flags, dev);
  CUresult r = dev_check(dev);
  if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && ctx_depth == CTX_STACK) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&gp_lock);
    gp_dev[dev].ctx.refs++;
    pthread_mutex_unlock(&gp_lock);
    *pctx = (CUcontext)&gp_dev[dev].ctx;
    ctx_stack[ctx_depth++] = &gp_dev[dev].ctx;
  }
  DRV_RETURN(r);
}

/* The older versions, which real drivers still export (CUDA 13's cuda.h
 * does not declare them). */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
                                CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params,
                                int numParams, unsigned int flags,
                                CUdevice dev);
GPUSIM_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx,
                                              unsigned int flags,
                                              CUdevice dev) {
  return cuCtxCreate_v4(pctx, NULL, flags, dev);
}
GPUSIM_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx,
                                              CUexecAffinityParam *params,
                                              int numParams,
                                              unsigned int flags,
                                              CUdevice dev) {
  (void)params;
  (void)numParams;
  return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  DRV_ENTER(cuCtxDestroy_v2, ctx);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  sim_ctx *c = ctx_check(ctx);
  if (!c) DRV_RETURN(CUDA_ERROR_INVALID_CONTEXT);
  pthread_mutex_lock(&gp_lock);
  if (c->refs > 0) c->refs--;
  pthread_mutex_unlock(&gp_lock);
  if (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == c) ctx_depth--;
  DRV_RETURN(CUDA_SUCCESS);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  DRV_ENTER(cuCtxGetDevice, device);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *device = c->dev;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device,
                                                 CUcontext ctx) {
  DRV_ENTER(cuCtxGetDevice_v2, device, ctx);
  sim_ctx *c = NULL;
  CUresult r = ctx ? (gp_ready() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED)
                   : gp_need_ctx(&c);
  if (r == CUDA_SUCCESS && ctx && !(c = ctx_check(ctx)))
    r = CUDA_ERROR_INVALID_CONTEXT;
  if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *device = c->dev;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxGetId(CUcontext ctx,
                                          unsigned long long *ctxId) {
  DRV_ENTER(cuCtxGetId, ctx, ctxId);
  sim_ctx *c = NULL;
  CUresult r = ctx ? (gp_ready() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED)
                   : gp_need_ctx(&c);
  if (r == CUDA_SUCCESS && ctx && !(c = ctx_check(ctx)))
    r = CUDA_ERROR_INVALID_CONTEXT;
  if (r == CUDA_SUCCESS && !ctxId) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) *ctxId = c->id;
  DRV_RETURN(r);
}

sim_ctx *gp_ctx_lookup(CUcontext c) {
  return gp_ready() ? ctx_check(c) : NULL;
}
