/* Simulated runtime: streams, events, kernel launches and host functions.
 * Stream and event handles are the driver's (cudaStream_t == CUstream). */
#include "rt.h"

#define DECL(ret, name, args) RT_API ret CUDARTAPI name args;
DECL(cudaError_t, cudaStreamSynchronize_ptsz, (cudaStream_t))
DECL(cudaError_t, cudaStreamQuery_ptsz, (cudaStream_t))
DECL(cudaError_t, cudaStreamWaitEvent_ptsz,
     (cudaStream_t, cudaEvent_t, unsigned))
DECL(cudaError_t, cudaStreamGetFlags_ptsz, (cudaStream_t, unsigned *))
DECL(cudaError_t, cudaStreamGetPriority_ptsz, (cudaStream_t, int *))
DECL(cudaError_t, cudaStreamGetId_ptsz, (cudaStream_t, unsigned long long *))
DECL(cudaError_t, cudaStreamGetDevice_ptsz, (cudaStream_t, int *))
DECL(cudaError_t, cudaStreamAddCallback_ptsz,
     (cudaStream_t, cudaStreamCallback_t, void *, unsigned))
DECL(cudaError_t, cudaLaunchHostFunc_ptsz, (cudaStream_t, cudaHostFn_t, void *))
DECL(cudaError_t, cudaEventRecord_ptsz, (cudaEvent_t, cudaStream_t))
DECL(cudaError_t, cudaEventRecordWithFlags_ptsz,
     (cudaEvent_t, cudaStream_t, unsigned))
DECL(cudaError_t, cudaLaunchKernel_ptsz,
     (const void *, dim3, dim3, void **, size_t, cudaStream_t))
DECL(cudaError_t, cudaLaunchCooperativeKernel_ptsz,
     (const void *, dim3, dim3, void **, size_t, cudaStream_t))
DECL(cudaError_t, cudaLaunchKernelExC_ptsz,
     (const cudaLaunchConfig_t *, const void *, void **))
DECL(cudaError_t, __cudaLaunchKernel,
     (cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t))
DECL(cudaError_t, __cudaLaunchKernel_ptsz,
     (cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t))
DECL(cudaError_t, cudaGetDriverEntryPoint_ptsz,
     (const char *, void **, unsigned long long,
      enum cudaDriverEntryPointQueryResult *))
DECL(cudaError_t, cudaGetDriverEntryPointByVersion_ptsz,
     (const char *, void **, unsigned, unsigned long long,
      enum cudaDriverEntryPointQueryResult *))

/* ---- streams ---- */

static cudaError_t stream_create(cudaStream_t *s, unsigned flags, int prio) {
  if (!s) return cudaErrorInvalidValue;
  return DRV(gp_drv, stream_create, (CUstream *)s, flags, prio);
}

RT_API cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream) {
  RT_ENTER(cudaStreamCreate, v3020, pStream);
  RT_NEED_CTX();
  RT_RETURN(stream_create(pStream, 0, 0));
}

RT_API cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *pStream,
                                                       unsigned int flags) {
  RT_ENTER(cudaStreamCreateWithFlags, v5000, pStream, flags);
  RT_NEED_CTX();
  RT_RETURN(stream_create(pStream, flags, 0));
}

RT_API cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t *pStream,
                                                          unsigned int flags,
                                                          int priority) {
  RT_ENTER(cudaStreamCreateWithPriority, v5050, pStream, flags, priority);
  RT_NEED_CTX();
  RT_RETURN(stream_create(pStream, flags, priority));
}

RT_API cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  RT_ENTER(cudaStreamDestroy, v5050, stream);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, stream_destroy, stream));
}

TWIN(cudaStreamSynchronize, v3020, v7000, (cudaStream_t stream), (stream),
     DRV((*d), stream_sync, stream))
TWIN(cudaStreamQuery, v3020, v7000, (cudaStream_t stream), (stream),
     DRV((*d), stream_query, stream))
TWIN(cudaStreamWaitEvent, v3020, v7000,
     (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
     (stream, event, flags), DRV((*d), stream_wait, stream, event, flags))
TWIN(cudaStreamGetFlags, v5050, v7000,
     (cudaStream_t hStream, unsigned int *flags), (hStream, flags),
     DRV((*d), stream_flags, hStream, flags))
TWIN(cudaStreamGetPriority, v5050, v7000, (cudaStream_t hStream, int *priority),
     (hStream, priority), DRV((*d), stream_prio, hStream, priority))
TWIN(cudaStreamGetId, v12000, v12000,
     (cudaStream_t hStream, unsigned long long *streamId), (hStream, streamId),
     DRV((*d), stream_id, hStream, streamId))

TWIN(cudaStreamGetDevice, v12080, v12080, (cudaStream_t hStream, int *device),
     (hStream, device), DRV((*d), stream_device, hStream, device))
TWIN(cudaStreamAddCallback, v5000, v7000,
     (cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
      unsigned int flags),
     (stream, callback, userData, flags),
     DRV((*d), add_callback, stream, (CUstreamCallback)(void *)callback,
         userData, flags))
TWIN(cudaLaunchHostFunc, v10000, v10000,
     (cudaStream_t stream, cudaHostFn_t fn, void *userData),
     (stream, fn, userData), DRV((*d), host_func, stream, fn, userData))

/* ---- events ---- */

RT_API cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event) {
  RT_ENTER(cudaEventCreate, v3020, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_create, (CUevent *)event, 0));
}

RT_API cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event,
                                                      unsigned int flags) {
  RT_ENTER(cudaEventCreateWithFlags, v3020, event, flags);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_create, (CUevent *)event, flags));
}

TWIN(cudaEventRecord, v3020, v7000, (cudaEvent_t event, cudaStream_t stream),
     (event, stream), DRV((*d), event_record, event, stream, 0))
TWIN(cudaEventRecordWithFlags, v11010, v11010,
     (cudaEvent_t event, cudaStream_t stream, unsigned int flags),
     (event, stream, flags), DRV((*d), event_record, event, stream, flags))

RT_API cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event) {
  RT_ENTER(cudaEventQuery, v3020, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_query, event));
}

RT_API cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
  RT_ENTER(cudaEventSynchronize, v3020, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_sync, event));
}

RT_API cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                                  cudaEvent_t end) {
  RT_ENTER(cudaEventElapsedTime, v12080, ms, start, end);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_elapsed, ms, start, end));
}

RT_API cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
  RT_ENTER(cudaEventDestroy, v3020, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, event_destroy, event));
}

/* ---- launches ---- */

/* The runtime rejects bad configurations itself, before any device work:
 * an empty grid or block, or more than 1024 threads per block. */
static bool config_ok(dim3 g, dim3 b) {
  uint64_t threads = (uint64_t)b.x * b.y * b.z;
  return (uint64_t)g.x * g.y * g.z != 0 && threads != 0 && threads <= 1024;
}

static cudaError_t launch(const rt_driver *d, CUfunction f, dim3 g, dim3 b,
                          void **args, size_t shmem, cudaStream_t s,
                          bool coop) {
  if (!f) return cudaErrorInvalidDeviceFunction;
  if (!config_ok(g, b)) return cudaErrorInvalidConfiguration;
  if (coop)
    return DRV((*d), launch_coop, f, g.x, g.y, g.z, b.x, b.y, b.z,
               (unsigned)shmem, s, args);
  return DRV((*d), launch, f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, s,
             args, NULL);
}

/* Like RT_ENTER, with the kernel's name as the callback's symbolName. */
#define LAUNCH_ENTER(name, ver, func, f, ...)                                  \
  name##_##ver##_params prm_ = {__VA_ARGS__};                                  \
  gpusim_api_frame fr_;                                                        \
  CUfunction f = gp_rt_function(func);                                         \
  if (!gp_rt_enter(&fr_, CUPTI_RUNTIME_TRACE_CBID_##name##_##ver, #name,       \
                   &prm_, gp_rt_handle_name(f)))                               \
  return gp_rt_failure()

RT_API cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim,
                                              dim3 blockDim, void **args,
                                              size_t sharedMem,
                                              cudaStream_t stream) {
  LAUNCH_ENTER(cudaLaunchKernel, v7000, func, f, func, gridDim, blockDim, args,
               sharedMem, stream);
  RT_NEED_CTX();
  RT_RETURN(
      launch(&gp_drv, f, gridDim, blockDim, args, sharedMem, stream, false));
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void *func,
                                                   dim3 gridDim, dim3 blockDim,
                                                   void **args,
                                                   size_t sharedMem,
                                                   cudaStream_t stream) {
  LAUNCH_ENTER(cudaLaunchKernel_ptsz, v7000, func, f, func, gridDim, blockDim,
               args, sharedMem, stream);
  RT_NEED_CTX();
  RT_RETURN(
      launch(&gp_drv_pt, f, gridDim, blockDim, args, sharedMem, stream, false));
}

RT_API cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(
    const void *func, dim3 gridDim, dim3 blockDim, void **args,
    size_t sharedMem, cudaStream_t stream) {
  LAUNCH_ENTER(cudaLaunchCooperativeKernel, v9000, func, f, func, gridDim,
               blockDim, args, sharedMem, stream);
  RT_NEED_CTX();
  RT_RETURN(
      launch(&gp_drv, f, gridDim, blockDim, args, sharedMem, stream, true));
}

RT_API cudaError_t CUDARTAPI cudaLaunchCooperativeKernel_ptsz(
    const void *func, dim3 gridDim, dim3 blockDim, void **args,
    size_t sharedMem, cudaStream_t stream) {
  LAUNCH_ENTER(cudaLaunchCooperativeKernel_ptsz, v9000, func, f, func, gridDim,
               blockDim, args, sharedMem, stream);
  RT_NEED_CTX();
  RT_RETURN(
      launch(&gp_drv_pt, f, gridDim, blockDim, args, sharedMem, stream, true));
}

static cudaError_t launch_ex(const rt_driver *d, const cudaLaunchConfig_t *c,
                             CUfunction f, void **args) {
  if (!c) return cudaErrorInvalidValue;
  bool coop = false;
  for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
    if (c->attrs[i].id == cudaLaunchAttributeCooperative &&
        c->attrs[i].val.cooperative)
      coop = true;
  return launch(d, f, c->gridDim, c->blockDim, args, c->dynamicSmemBytes,
                c->stream, coop);
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernelExC(
    const cudaLaunchConfig_t *config, const void *func, void **args) {
  LAUNCH_ENTER(cudaLaunchKernelExC, v11060, func, f, config, func, args);
  RT_NEED_CTX();
  RT_RETURN(launch_ex(&gp_drv, config, f, args));
}

RT_API cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(
    const cudaLaunchConfig_t *config, const void *func, void **args) {
  LAUNCH_ENTER(cudaLaunchKernelExC_ptsz, v11060, func, f, config, func, args);
  RT_NEED_CTX();
  RT_RETURN(launch_ex(&gp_drv_pt, config, f, args));
}

/* nvcc 13's launch path: the handle comes from __cudaGetKernel. There is
 * no generated parameter struct for these entry points. */
static cudaError_t nv_launch(const rt_driver *d, CUpti_CallbackId cbid,
                             const char *name, cudaKernel_t k, dim3 g, dim3 b,
                             void **args, size_t shmem, cudaStream_t s) {
  gpusim_api_frame fr_;
  CUfunction f = gp_rt_function(k);
  if (!gp_rt_enter(&fr_, cbid, name, NULL, gp_rt_handle_name(f)))
    return gp_rt_failure();
  RT_NEED_CTX();
  RT_RETURN(launch(d, f, g, b, args, shmem, s, false));
}

RT_API cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 g,
                                                dim3 b, void **args,
                                                size_t shmem, cudaStream_t s) {
  return nv_launch(&gp_drv, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                   "__cudaLaunchKernel", kernel, g, b, args, shmem, s);
}

RT_API cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel,
                                                     dim3 g, dim3 b,
                                                     void **args, size_t shmem,
                                                     cudaStream_t s) {
  return nv_launch(&gp_drv_pt,
                   CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                   "__cudaLaunchKernel_ptsz", kernel, g, b, args, shmem, s);
}

/* ---- function handles ---- */

RT_API cudaError_t CUDARTAPI cudaFuncGetName(const char **name,
                                             const void *func) {
  RT_ENTER(cudaFuncGetName, v12030, name, func);
  const char *n = gp_rt_handle_name(gp_rt_function(func));
  if (!name) RT_RETURN(cudaErrorInvalidValue);
  *name = n;
  RT_RETURN(n ? cudaSuccess : cudaErrorInvalidDeviceFunction);
}

RT_API cudaError_t CUDARTAPI cudaGetFuncBySymbol(cudaFunction_t *functionPtr,
                                                 const void *symbolPtr) {
  RT_ENTER(cudaGetFuncBySymbol, v11000, functionPtr, symbolPtr);
  CUfunction f = gp_rt_function(symbolPtr);
  if (!functionPtr) RT_RETURN(cudaErrorInvalidValue);
  *functionPtr = (cudaFunction_t)f;
  RT_RETURN(f ? cudaSuccess : cudaErrorInvalidDeviceFunction);
}

RT_API cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t *kernelPtr,
                                           const void *entryFuncAddr) {
  RT_ENTER(cudaGetKernel, v12000, kernelPtr, entryFuncAddr);
  CUfunction f = gp_rt_function(entryFuncAddr);
  if (!kernelPtr) RT_RETURN(cudaErrorInvalidValue);
  *kernelPtr = (cudaKernel_t)f;
  RT_RETURN(f ? cudaSuccess : cudaErrorInvalidDeviceFunction);
}

/* Attributes of the simulated kernels, from the driver (32 registers and
 * no static shared memory unless GPUSIM_KERNEL_ATTRS says otherwise). */
RT_API cudaError_t CUDARTAPI
cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
  RT_ENTER(cudaFuncGetAttributes, v3020, attr, func);
  if (!attr) RT_RETURN(cudaErrorInvalidValue);
  CUfunction f = gp_rt_function(func);
  if (!f) RT_RETURN(cudaErrorInvalidDeviceFunction);
  struct cudaFuncAttributes a = {0};
  int v = 0;
#define FA(field, id)                                                          \
  if (gp_drv.func_attr(&v, id, f) == CUDA_SUCCESS) a.field = v
  FA(maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  FA(numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS);
  FA(ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION);
  FA(binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  FA(maxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  FA(preferredShmemCarveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
#undef FA
  if (gp_drv.func_attr(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) ==
      CUDA_SUCCESS)
    a.sharedSizeBytes = (size_t)v;
  *attr = a;
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaFuncSetAttribute(const void *func,
                                                  enum cudaFuncAttribute attr,
                                                  int value) {
  RT_ENTER(cudaFuncSetAttribute, v9000, func, attr, value);
  RT_RETURN(gp_rt_function(func) ? cudaSuccess
                                 : cudaErrorInvalidDeviceFunction);
}

RT_API cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void *func,
                                                    enum cudaFuncCache config) {
  RT_ENTER(cudaFuncSetCacheConfig, v3020, func, config);
  RT_RETURN(gp_rt_function(func) ? cudaSuccess
                                 : cudaErrorInvalidDeviceFunction);
}

/* ---- driver entry points: straight through cuGetProcAddress ---- */

static cudaError_t entry(const char *sym, void **fn, unsigned ver,
                         unsigned long long flags,
                         enum cudaDriverEntryPointQueryResult *st, bool pt) {
  CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
  if (pt && flags == cudaEnableDefault)
    flags = cudaEnablePerThreadDefaultStream;
  CUresult r = gp_drv.proc_address(sym, fn, (int)ver, flags, &q);
  if (st) *st = (enum cudaDriverEntryPointQueryResult)q;
  return r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : gp_rt_error(r);
}

RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st) {
  RT_ENTER(cudaGetDriverEntryPointByVersion, v12050, symbol, funcPtr,
           cudaVersion, flags, st);
  RT_RETURN(entry(symbol, funcPtr, cudaVersion, flags, st, false));
}

RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st) {
  RT_ENTER(cudaGetDriverEntryPointByVersion_ptsz, v12050, symbol, funcPtr,
           cudaVersion, flags, st);
  RT_RETURN(entry(symbol, funcPtr, cudaVersion, flags, st, true));
}

RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPoint(
    const char *symbol, void **funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st) {
  RT_ENTER(cudaGetDriverEntryPoint, v11030, symbol, funcPtr, flags, st);
  RT_RETURN(entry(symbol, funcPtr, CUDART_VERSION, flags, st, false));
}

RT_API cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(
    const char *symbol, void **funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st) {
  RT_ENTER(cudaGetDriverEntryPoint_ptsz, v11030, symbol, funcPtr, flags, st);
  RT_RETURN(entry(symbol, funcPtr, CUDART_VERSION, flags, st, true));
}

RT_API cudaError_t CUDARTAPI cudaProfilerStart(void) {
  RT_ENTER0(cudaProfilerStart, v4000);
  RT_RETURN(cudaSuccess);
}

RT_API cudaError_t CUDARTAPI cudaProfilerStop(void) {
  RT_ENTER0(cudaProfilerStop, v4000);
  RT_RETURN(cudaSuccess);
}
