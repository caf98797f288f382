/* Internal interfaces of the simulated runtime (libcudart.so.13). The
 * runtime holds no simulation state: it reaches the driver like the real
 * one, through dlopen("libcuda.so.1") and cuGetProcAddress. */
#ifndef GPUSIM_RT_H
#define GPUSIM_RT_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include "gpusim.h"

#define RT_API GPUSIM_EXPORT

/* Driver entry points used by the runtime: field, name given to
 * cuGetProcAddress, the cuda.h declaration that fixes its type. */
#define RT_DRIVER_FUNCS(X)                                                     \
  X(init, cuInit, cuInit)                                                      \
  X(device_count, cuDeviceGetCount, cuDeviceGetCount)                          \
  X(device_name, cuDeviceGetName, cuDeviceGetName)                             \
  X(device_mem, cuDeviceTotalMem, cuDeviceTotalMem_v2)                         \
  X(device_attr, cuDeviceGetAttribute, cuDeviceGetAttribute)                   \
  X(device_uuid, cuDeviceGetUuid, cuDeviceGetUuid_v2)                          \
  X(device_peer, cuDeviceCanAccessPeer, cuDeviceCanAccessPeer)                 \
  X(device_pci, cuDeviceGetPCIBusId, cuDeviceGetPCIBusId)                      \
  X(device_pool, cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool)         \
  X(primary_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)        \
  X(primary_reset, cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2)        \
  X(ctx_set, cuCtxSetCurrent, cuCtxSetCurrent)                                 \
  X(ctx_sync, cuCtxSynchronize, cuCtxSynchronize_v2)                           \
  X(ctx_prio, cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange)        \
  X(mem_info, cuMemGetInfo, cuMemGetInfo_v2)                                   \
  X(mem_alloc, cuMemAlloc, cuMemAlloc_v2)                                      \
  X(mem_alloc_pitch, cuMemAllocPitch, cuMemAllocPitch_v2)                      \
  X(mem_free, cuMemFree, cuMemFree_v2)                                         \
  X(mem_managed, cuMemAllocManaged, cuMemAllocManaged)                         \
  X(mem_alloc_async, cuMemAllocAsync, cuMemAllocAsync)                         \
  X(mem_alloc_pool, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync)          \
  X(mem_free_async, cuMemFreeAsync, cuMemFreeAsync)                            \
  X(host_alloc, cuMemHostAlloc, cuMemHostAlloc)                                \
  X(host_free, cuMemFreeHost, cuMemFreeHost)                                   \
  X(host_register, cuMemHostRegister, cuMemHostRegister_v2)                    \
  X(host_unregister, cuMemHostUnregister, cuMemHostUnregister)                 \
  X(host_devptr, cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2)      \
  X(ptr_attrs, cuPointerGetAttributes, cuPointerGetAttributes)                 \
  X(memcpy, cuMemcpy, cuMemcpy)                                                \
  X(memcpy_async, cuMemcpyAsync, cuMemcpyAsync)                                \
  X(htod, cuMemcpyHtoD, cuMemcpyHtoD_v2)                                       \
  X(dtoh, cuMemcpyDtoH, cuMemcpyDtoH_v2)                                       \
  X(dtod, cuMemcpyDtoD, cuMemcpyDtoD_v2)                                       \
  X(htod_async, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)                       \
  X(dtoh_async, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)                       \
  X(dtod_async, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2)                       \
  X(peer, cuMemcpyPeer, cuMemcpyPeer)                                          \
  X(peer_async, cuMemcpyPeerAsync, cuMemcpyPeerAsync)                          \
  X(copy2d, cuMemcpy2D, cuMemcpy2D_v2)                                         \
  X(copy2d_async, cuMemcpy2DAsync, cuMemcpy2DAsync_v2)                         \
  X(copy3d, cuMemcpy3D, cuMemcpy3D_v2)                                         \
  X(copy3d_async, cuMemcpy3DAsync, cuMemcpy3DAsync_v2)                         \
  X(set8, cuMemsetD8, cuMemsetD8_v2)                                           \
  X(set8_async, cuMemsetD8Async, cuMemsetD8Async)                              \
  X(set2d8, cuMemsetD2D8, cuMemsetD2D8_v2)                                     \
  X(set2d8_async, cuMemsetD2D8Async, cuMemsetD2D8Async)                        \
  X(launch, cuLaunchKernel, cuLaunchKernel)                                    \
  X(launch_ex, cuLaunchKernelEx, cuLaunchKernelEx)                             \
  X(launch_coop, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel)         \
  X(host_func, cuLaunchHostFunc, cuLaunchHostFunc)                             \
  X(add_callback, cuStreamAddCallback, cuStreamAddCallback)                    \
  X(stream_create, cuStreamCreateWithPriority, cuStreamCreateWithPriority)     \
  X(stream_destroy, cuStreamDestroy, cuStreamDestroy_v2)                       \
  X(stream_sync, cuStreamSynchronize, cuStreamSynchronize)                     \
  X(stream_query, cuStreamQuery, cuStreamQuery)                                \
  X(stream_wait, cuStreamWaitEvent, cuStreamWaitEvent)                         \
  X(stream_flags, cuStreamGetFlags, cuStreamGetFlags)                          \
  X(stream_prio, cuStreamGetPriority, cuStreamGetPriority)                     \
  X(stream_id, cuStreamGetId, cuStreamGetId)                                   \
  X(stream_device, cuStreamGetDevice, cuStreamGetDevice)                       \
  X(event_create, cuEventCreate, cuEventCreate)                                \
  X(event_record, cuEventRecordWithFlags, cuEventRecordWithFlags)              \
  X(event_sync, cuEventSynchronize, cuEventSynchronize)                        \
  X(event_query, cuEventQuery, cuEventQuery)                                   \
  X(event_elapsed, cuEventElapsedTime, cuEventElapsedTime_v2)                  \
  X(event_destroy, cuEventDestroy, cuEventDestroy_v2)                          \
  X(begin_capture, cuStreamBeginCapture, cuStreamBeginCapture_v2)              \
  X(end_capture, cuStreamEndCapture, cuStreamEndCapture)                       \
  X(is_capturing, cuStreamIsCapturing, cuStreamIsCapturing)                    \
  X(graph_inst, cuGraphInstantiate, cuGraphInstantiateWithFlags)               \
  X(graph_launch, cuGraphLaunch, cuGraphLaunch)                                \
  X(graph_exec_destroy, cuGraphExecDestroy, cuGraphExecDestroy)                \
  X(graph_destroy, cuGraphDestroy, cuGraphDestroy)                             \
  X(capture_info, cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_v3)           \
  X(graph_create, cuGraphCreate, cuGraphCreate)                                \
  X(add_kernel, cuGraphAddKernelNode, cuGraphAddKernelNode_v2)                 \
  X(add_memcpy, cuGraphAddMemcpyNode, cuGraphAddMemcpyNode)                    \
  X(add_memset, cuGraphAddMemsetNode, cuGraphAddMemsetNode)                    \
  X(add_host, cuGraphAddHostNode, cuGraphAddHostNode)                          \
  X(add_ev_record, cuGraphAddEventRecordNode, cuGraphAddEventRecordNode)       \
  X(add_ev_wait, cuGraphAddEventWaitNode, cuGraphAddEventWaitNode)             \
  X(add_child, cuGraphAddChildGraphNode, cuGraphAddChildGraphNode)             \
  X(add_empty, cuGraphAddEmptyNode, cuGraphAddEmptyNode)                       \
  X(add_alloc, cuGraphAddMemAllocNode, cuGraphAddMemAllocNode)                 \
  X(add_free, cuGraphAddMemFreeNode, cuGraphAddMemFreeNode)                    \
  X(add_deps, cuGraphAddDependencies, cuGraphAddDependencies_v2)               \
  X(get_nodes, cuGraphGetNodes, cuGraphGetNodes)                               \
  X(graph_clone, cuGraphClone, cuGraphClone)                                   \
  X(exec_kernel_set, cuGraphExecKernelNodeSetParams,                           \
    cuGraphExecKernelNodeSetParams_v2)                                         \
  X(exec_update, cuGraphExecUpdate, cuGraphExecUpdate_v2)                      \
  X(graph_upload, cuGraphUpload, cuGraphUpload)                                \
  X(proc_address, cuGetProcAddress, cuGetProcAddress_v2)                      \
  RT_DRIVER_FUNCS_SIMRT(X)

/* Occupancy, managed memory, arrays, stream and pool attributes. */
#define RT_DRIVER_FUNCS_SIMRT(X)                                               \
  X(func_attr, cuFuncGetAttribute, cuFuncGetAttribute)                         \
  X(occ_active, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,          \
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)                      \
  X(occ_smem, cuOccupancyAvailableDynamicSMemPerBlock,                         \
    cuOccupancyAvailableDynamicSMemPerBlock)                                   \
  X(arr_create, cuArray3DCreate, cuArray3DCreate_v2)                           \
  X(arr_destroy, cuArrayDestroy, cuArrayDestroy)                               \
  X(arr_desc, cuArray3DGetDescriptor, cuArray3DGetDescriptor_v2)               \
  X(mip_create, cuMipmappedArrayCreate, cuMipmappedArrayCreate)                \
  X(mip_level, cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel)             \
  X(mip_destroy, cuMipmappedArrayDestroy, cuMipmappedArrayDestroy)             \
  X(prefetch, cuMemPrefetchAsync, cuMemPrefetchAsync_v2)                       \
  X(prefetch_batch, cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync)          \
  X(advise, cuMemAdvise, cuMemAdvise_v2)                                       \
  X(range_attr, cuMemRangeGetAttribute, cuMemRangeGetAttribute)                \
  X(range_attrs, cuMemRangeGetAttributes, cuMemRangeGetAttributes)             \
  X(attach, cuStreamAttachMemAsync, cuStreamAttachMemAsync)                    \
  X(stream_get_attr, cuStreamGetAttribute, cuStreamGetAttribute)               \
  X(stream_set_attr, cuStreamSetAttribute, cuStreamSetAttribute)               \
  X(stream_copy_attrs, cuStreamCopyAttributes, cuStreamCopyAttributes)         \
  X(pool_get_attr, cuMemPoolGetAttribute, cuMemPoolGetAttribute)               \
  X(pool_set_attr, cuMemPoolSetAttribute, cuMemPoolSetAttribute)               \
  X(pool_trim, cuMemPoolTrimTo, cuMemPoolTrimTo)                               \
  X(p2p_attr, cuDeviceGetP2PAttribute, cuDeviceGetP2PAttribute)

typedef struct rt_driver {
#define X(field, name, decl) __typeof__(&decl) field;
  RT_DRIVER_FUNCS(X)
#undef X
} rt_driver;

/* rt_core.c */
extern rt_driver gp_drv;    /* legacy default stream semantics */
extern rt_driver gp_drv_pt; /* per-thread default stream semantics */
cudaError_t gp_rt_load(void);
cudaError_t gp_rt_failure(void);
CUfunction gp_rt_named(const char *name);
const char *gp_rt_handle_name(const void *p);
cudaError_t gp_rt_ctx(void);
cudaError_t gp_rt_error(CUresult r);
int gp_rt_device(void);
cudaError_t gp_rt_set_device(int dev);
CUcontext gp_rt_primary(int dev);
bool gp_rt_enter(gpusim_api_frame *f, CUpti_CallbackId cbid, const char *name,
                 const void *params, const char *symbol);
cudaError_t gp_rt_exit(gpusim_api_frame *f, cudaError_t e);

/* rt_array.c: bytes per element of an array */
cudaError_t gp_rt_array_elem(cudaArray_const_t a, size_t *elem);

/* rt_register.c */
CUfunction gp_rt_function(const void *func);
cudaError_t gp_rt_symbol(const void *symbol, CUdeviceptr *addr, size_t *size);

/* Opens a runtime API call: the generated parameter struct and cbid of
 * `fn_ver` (e.g. cudaMalloc_v3020), reported under the plain name. */
#define RT_ENTER(name, ver, ...)                                               \
  name##_##ver##_params prm_ = {__VA_ARGS__};                                  \
  gpusim_api_frame fr_;                                                        \
  if (!gp_rt_enter(&fr_, CUPTI_RUNTIME_TRACE_CBID_##name##_##ver, #name,       \
                   &prm_, NULL))                                               \
  return gp_rt_failure()
#define RT_ENTER0(name, ver)                                                   \
  gpusim_api_frame fr_;                                                        \
  if (!gp_rt_enter(&fr_, CUPTI_RUNTIME_TRACE_CBID_##name##_##ver, #name, NULL, \
                   NULL))                                                      \
  return gp_rt_failure()
#define RT_RETURN(expr) return gp_rt_exit(&fr_, (expr))
/* Bind the thread's device context first, or fail the call. */
#define RT_NEED_CTX()                                                          \
  do {                                                                         \
    cudaError_t e_ = gp_rt_ctx();                                              \
    if (e_ != cudaSuccess) RT_RETURN(e_);                                      \
  } while (0)
/* Driver call through the table, mapped to a runtime error. */
#define DRV(tab, fn, ...) gp_rt_error(tab.fn(__VA_ARGS__))

/* One exported entry point and its _ptsz twin, which only differ in the
 * driver table `d` used by `call`. */
#define TWIN(name, ver, ptver, params, args, call)                             \
  RT_API cudaError_t CUDARTAPI name params {                                   \
    RT_ENTER(name, ver, UNPAREN args);                                         \
    RT_NEED_CTX();                                                             \
    const rt_driver *d = &gp_drv;                                              \
    RT_RETURN(call);                                                           \
  }                                                                            \
  RT_API cudaError_t CUDARTAPI name##_ptsz params {                            \
    RT_ENTER(name##_ptsz, ptver, UNPAREN args);                                \
    RT_NEED_CTX();                                                             \
    const rt_driver *d = &gp_drv_pt;                                           \
    RT_RETURN(call);                                                           \
  }
#define UNPAREN(...) __VA_ARGS__

#endif
