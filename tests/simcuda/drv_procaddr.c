/* Simulated driver: cuGetProcAddress. Like the real one it takes base
 * names ("cuMemAlloc") and picks the versioned entry point for the
 * requested CUDA version, and the _ptds/_ptsz variant when asked for
 * per-thread default stream semantics. Exact exported names are accepted
 * too (a simulation convenience, see README). */
#include <string.h>

#include "drv.h"

/* Entry points whose symbol differs from what cuda.h maps the name to. */
CUresult CUDAAPI gp_cuEventElapsedTime_v1(float *, CUevent, CUevent) __asm__(
    "cuEventElapsedTime");
CUresult CUDAAPI gp_cuGetProcAddress_v1(const char *, void **, int,
                                        cuuint64_t) __asm__("cuGetProcAddress");

/* Prototypes cuda.h only declares for its own internal build. */
#define PT(ret, name, args) ret CUDAAPI name args;
PT(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr *, size_t, CUstream))
PT(CUresult, cuMemAllocFromPoolAsync_ptsz,
   (CUdeviceptr *, size_t, CUmemoryPool, CUstream))
PT(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr, CUstream))
PT(CUresult, cuMemcpy_ptds, (CUdeviceptr, CUdeviceptr, size_t))
PT(CUresult, cuMemcpyAsync_ptsz, (CUdeviceptr, CUdeviceptr, size_t, CUstream))
PT(CUresult, cuMemcpyHtoD_v2_ptds, (CUdeviceptr, const void *, size_t))
PT(CUresult, cuMemcpyDtoH_v2_ptds, (void *, CUdeviceptr, size_t))
PT(CUresult, cuMemcpyDtoD_v2_ptds, (CUdeviceptr, CUdeviceptr, size_t))
PT(CUresult, cuMemcpyHtoDAsync_v2_ptsz,
   (CUdeviceptr, const void *, size_t, CUstream))
PT(CUresult, cuMemcpyDtoHAsync_v2_ptsz, (void *, CUdeviceptr, size_t, CUstream))
PT(CUresult, cuMemcpyDtoDAsync_v2_ptsz,
   (CUdeviceptr, CUdeviceptr, size_t, CUstream))
PT(CUresult, cuMemcpyPeer_ptds,
   (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t))
PT(CUresult, cuMemcpyPeerAsync_ptsz,
   (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))
PT(CUresult, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *))
PT(CUresult, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *))
PT(CUresult, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *, CUstream))
PT(CUresult, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *))
PT(CUresult, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *, CUstream))
PT(CUresult, cuMemsetD8_v2_ptds, (CUdeviceptr, unsigned char, size_t))
PT(CUresult, cuMemsetD16_v2_ptds, (CUdeviceptr, unsigned short, size_t))
PT(CUresult, cuMemsetD32_v2_ptds, (CUdeviceptr, unsigned int, size_t))
PT(CUresult, cuMemsetD2D8_v2_ptds,
   (CUdeviceptr, size_t, unsigned char, size_t, size_t))
PT(CUresult, cuMemsetD2D16_v2_ptds,
   (CUdeviceptr, size_t, unsigned short, size_t, size_t))
PT(CUresult, cuMemsetD2D32_v2_ptds,
   (CUdeviceptr, size_t, unsigned int, size_t, size_t))
PT(CUresult, cuMemsetD8Async_ptsz,
   (CUdeviceptr, unsigned char, size_t, CUstream))
PT(CUresult, cuMemsetD16Async_ptsz,
   (CUdeviceptr, unsigned short, size_t, CUstream))
PT(CUresult, cuMemsetD32Async_ptsz,
   (CUdeviceptr, unsigned int, size_t, CUstream))
PT(CUresult, cuMemsetD2D8Async_ptsz,
   (CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream))
PT(CUresult, cuMemsetD2D16Async_ptsz,
   (CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream))
PT(CUresult, cuMemsetD2D32Async_ptsz,
   (CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream))
PT(CUresult, cuLaunchKernel_ptsz,
   (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
    unsigned, CUstream, void **, void **))
PT(CUresult, cuLaunchKernelEx_ptsz,
   (const CUlaunchConfig *, CUfunction, void **, void **))
PT(CUresult, cuLaunchCooperativeKernel_ptsz,
   (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
    unsigned, CUstream, void **))
PT(CUresult, cuLaunchHostFunc_ptsz, (CUstream, CUhostFn, void *))
PT(CUresult, cuStreamAddCallback_ptsz,
   (CUstream, CUstreamCallback, void *, unsigned))
PT(CUresult, cuStreamGetFlags_ptsz, (CUstream, unsigned *))
PT(CUresult, cuStreamGetPriority_ptsz, (CUstream, int *))
PT(CUresult, cuStreamGetId_ptsz, (CUstream, unsigned long long *))
PT(CUresult, cuStreamGetDevice_ptsz, (CUstream, CUdevice *))
PT(CUresult, cuStreamSynchronize_ptsz, (CUstream))
PT(CUresult, cuStreamQuery_ptsz, (CUstream))
PT(CUresult, cuStreamWaitEvent_ptsz, (CUstream, CUevent, unsigned))
PT(CUresult, cuEventRecord_ptsz, (CUevent, CUstream))
PT(CUresult, cuEventRecordWithFlags_ptsz, (CUevent, CUstream, unsigned))
PT(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream, CUstreamCaptureMode))
PT(CUresult, cuStreamEndCapture_ptsz, (CUstream, CUgraph *))
PT(CUresult, cuStreamIsCapturing_ptsz, (CUstream, CUstreamCaptureStatus *))
PT(CUresult, cuGraphLaunch_ptsz, (CUgraphExec, CUstream))
PT(CUresult, cuGraphUpload_ptsz, (CUgraphExec, CUstream))
PT(CUresult, cuStreamGetCaptureInfo_v3_ptsz,
   (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
    const CUgraphNode **, const CUgraphEdgeData **, size_t *))
PT(CUresult, cuMemcpyHtoA_v2_ptds, (CUarray, size_t, const void *, size_t))
PT(CUresult, cuMemcpyAtoH_v2_ptds, (void *, CUarray, size_t, size_t))
PT(CUresult, cuMemcpyDtoA_v2_ptds, (CUarray, size_t, CUdeviceptr, size_t))
PT(CUresult, cuMemcpyAtoD_v2_ptds, (CUdeviceptr, CUarray, size_t, size_t))
PT(CUresult, cuMemcpyAtoA_v2_ptds, (CUarray, size_t, CUarray, size_t, size_t))
PT(CUresult, cuMemcpyHtoAAsync_v2_ptsz,
   (CUarray, size_t, const void *, size_t, CUstream))
PT(CUresult, cuMemPrefetchAsync_v2_ptsz,
   (CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream))
PT(CUresult, cuMemPrefetchBatchAsync_ptsz,
   (CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
    unsigned long long, CUstream))
PT(CUresult, cuStreamAttachMemAsync_ptsz,
   (CUstream, CUdeviceptr, size_t, unsigned))
PT(CUresult, cuStreamGetAttribute_ptsz,
   (CUstream, CUstreamAttrID, CUstreamAttrValue *))
PT(CUresult, cuStreamSetAttribute_ptsz,
   (CUstream, CUstreamAttrID, const CUstreamAttrValue *))
PT(CUresult, cuStreamCopyAttributes_ptsz, (CUstream, CUstream))
PT(CUresult, cuMemcpyAtoHAsync_v2_ptsz,
   (void *, CUarray, size_t, size_t, CUstream))

typedef struct proc {
  const char *base;
  int minver;
  const char *sym;
  void *fn, *ptfn;
} proc;

#define FN(f) ((void *)(uintptr_t)(f))
/* base name, first CUDA version, entry point, per-thread variant */
#define P(base, ver, f, ptf) {#base, ver, #f, FN(f), FN(ptf)},
#define P1(base, ver, f) {#base, ver, #f, FN(f), NULL},

/* Occupancy, managed memory, arrays, stream and pool attributes. */
#define GP_PROCS_SIMRT \
    P1(cuOccupancyMaxActiveBlocksPerMultiprocessor, 0, \
       cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    P1(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 0, \
       cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
    P1(cuOccupancyMaxPotentialBlockSize, 0, cuOccupancyMaxPotentialBlockSize) \
    P1(cuOccupancyMaxPotentialBlockSizeWithFlags, 0, \
       cuOccupancyMaxPotentialBlockSizeWithFlags) \
    P1(cuOccupancyAvailableDynamicSMemPerBlock, 0, \
       cuOccupancyAvailableDynamicSMemPerBlock) \
    P1(cuArrayCreate, 0, cuArrayCreate_v2) \
    P1(cuArray3DCreate, 0, cuArray3DCreate_v2) \
    P1(cuArrayDestroy, 0, cuArrayDestroy) \
    P1(cuArrayGetDescriptor, 0, cuArrayGetDescriptor_v2) \
    P1(cuArray3DGetDescriptor, 0, cuArray3DGetDescriptor_v2) \
    P1(cuMipmappedArrayCreate, 0, cuMipmappedArrayCreate) \
    P1(cuMipmappedArrayGetLevel, 0, cuMipmappedArrayGetLevel) \
    P1(cuMipmappedArrayDestroy, 0, cuMipmappedArrayDestroy) \
    P(cuMemcpyHtoA, 0, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds) \
    P(cuMemcpyAtoH, 0, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds) \
    P(cuMemcpyDtoA, 0, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds) \
    P(cuMemcpyAtoD, 0, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds) \
    P(cuMemcpyAtoA, 0, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds) \
    P(cuMemcpyHtoAAsync, 0, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz) \
    P(cuMemcpyAtoHAsync, 0, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz) \
    P(cuMemPrefetchAsync, 12020, cuMemPrefetchAsync_v2, \
      cuMemPrefetchAsync_v2_ptsz) \
    P(cuMemPrefetchBatchAsync, 0, cuMemPrefetchBatchAsync, \
      cuMemPrefetchBatchAsync_ptsz) \
    P1(cuMemAdvise, 12020, cuMemAdvise_v2) \
    P1(cuMemRangeGetAttribute, 0, cuMemRangeGetAttribute) \
    P1(cuMemRangeGetAttributes, 0, cuMemRangeGetAttributes) \
    P(cuStreamAttachMemAsync, 0, cuStreamAttachMemAsync, \
      cuStreamAttachMemAsync_ptsz) \
    P(cuStreamGetAttribute, 0, cuStreamGetAttribute, \
      cuStreamGetAttribute_ptsz) \
    P(cuStreamSetAttribute, 0, cuStreamSetAttribute, \
      cuStreamSetAttribute_ptsz) \
    P(cuStreamCopyAttributes, 0, cuStreamCopyAttributes, \
      cuStreamCopyAttributes_ptsz) \
    P1(cuMemPoolGetAttribute, 0, cuMemPoolGetAttribute) \
    P1(cuMemPoolSetAttribute, 0, cuMemPoolSetAttribute) \
    P1(cuMemPoolTrimTo, 0, cuMemPoolTrimTo) \
    P1(cuDeviceGetP2PAttribute, 0, cuDeviceGetP2PAttribute)

/* clang-format off */
static const proc table[] = {
    P1(cuInit, 0, cuInit)
    P1(cuDriverGetVersion, 0, cuDriverGetVersion)
    P1(cuDeviceGet, 0, cuDeviceGet)
    P1(cuDeviceGetCount, 0, cuDeviceGetCount)
    P1(cuDeviceGetName, 0, cuDeviceGetName)
    P1(cuDeviceTotalMem, 0, cuDeviceTotalMem_v2)
    P1(cuDeviceGetAttribute, 0, cuDeviceGetAttribute)
    P1(cuDeviceGetUuid, 0, cuDeviceGetUuid_v2)
    P1(cuDeviceGetPCIBusId, 0, cuDeviceGetPCIBusId)
    P1(cuDeviceCanAccessPeer, 0, cuDeviceCanAccessPeer)
    P1(cuDevicePrimaryCtxRetain, 0, cuDevicePrimaryCtxRetain)
    P1(cuDevicePrimaryCtxRelease, 0, cuDevicePrimaryCtxRelease_v2)
    P1(cuDevicePrimaryCtxReset, 0, cuDevicePrimaryCtxReset_v2)
    P1(cuDevicePrimaryCtxSetFlags, 0, cuDevicePrimaryCtxSetFlags_v2)
    P1(cuDevicePrimaryCtxGetState, 0, cuDevicePrimaryCtxGetState)
    P1(cuDeviceGetDefaultMemPool, 0, cuDeviceGetDefaultMemPool)
    P1(cuDeviceGetMemPool, 0, cuDeviceGetMemPool)
    P1(cuCtxCreate, 0, cuCtxCreate_v4)
    P1(cuCtxDestroy, 0, cuCtxDestroy_v2)
    P1(cuCtxSetCurrent, 0, cuCtxSetCurrent)
    P1(cuCtxGetCurrent, 0, cuCtxGetCurrent)
    P1(cuCtxPushCurrent, 0, cuCtxPushCurrent_v2)
    P1(cuCtxPopCurrent, 0, cuCtxPopCurrent_v2)
    P1(cuCtxGetDevice, 0, cuCtxGetDevice)
    P1(cuCtxGetDevice, 13000, cuCtxGetDevice_v2)
    P1(cuCtxSynchronize, 0, cuCtxSynchronize)
    P1(cuCtxSynchronize, 13000, cuCtxSynchronize_v2)
    P1(cuCtxGetId, 0, cuCtxGetId)
    P1(cuCtxGetStreamPriorityRange, 0, cuCtxGetStreamPriorityRange)
    P1(cuGetErrorString, 0, cuGetErrorString)
    P1(cuGetErrorName, 0, cuGetErrorName)
    P1(cuGetProcAddress, 0, gp_cuGetProcAddress_v1)
    P1(cuGetProcAddress, 12000, cuGetProcAddress_v2)
    P1(cuMemGetInfo, 0, cuMemGetInfo_v2)
    P1(cuMemAlloc, 0, cuMemAlloc_v2)
    P1(cuMemAllocPitch, 0, cuMemAllocPitch_v2)
    P1(cuMemFree, 0, cuMemFree_v2)
    P1(cuMemAllocManaged, 0, cuMemAllocManaged)
    P(cuMemAllocAsync, 0, cuMemAllocAsync, cuMemAllocAsync_ptsz)
    P(cuMemAllocFromPoolAsync, 0, cuMemAllocFromPoolAsync,
      cuMemAllocFromPoolAsync_ptsz)
    P(cuMemFreeAsync, 0, cuMemFreeAsync, cuMemFreeAsync_ptsz)
    P1(cuMemAllocHost, 0, cuMemAllocHost_v2)
    P1(cuMemHostAlloc, 0, cuMemHostAlloc)
    P1(cuMemFreeHost, 0, cuMemFreeHost)
    P1(cuMemHostRegister, 0, cuMemHostRegister_v2)
    P1(cuMemHostUnregister, 0, cuMemHostUnregister)
    P1(cuMemHostGetDevicePointer, 0, cuMemHostGetDevicePointer_v2)
    P1(cuMemGetAddressRange, 0, cuMemGetAddressRange_v2)
    P1(cuPointerGetAttribute, 0, cuPointerGetAttribute)
    P1(cuPointerGetAttributes, 0, cuPointerGetAttributes)
    P(cuMemcpy, 0, cuMemcpy, cuMemcpy_ptds)
    P(cuMemcpyAsync, 0, cuMemcpyAsync, cuMemcpyAsync_ptsz)
    P(cuMemcpyHtoD, 0, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)
    P(cuMemcpyDtoH, 0, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)
    P(cuMemcpyDtoD, 0, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)
    P(cuMemcpyHtoDAsync, 0, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz)
    P(cuMemcpyDtoHAsync, 0, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz)
    P(cuMemcpyDtoDAsync, 0, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz)
    P(cuMemcpyPeer, 0, cuMemcpyPeer, cuMemcpyPeer_ptds)
    P(cuMemcpyPeerAsync, 0, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz)
    P(cuMemcpy2D, 0, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds)
    P(cuMemcpy2DUnaligned, 0, cuMemcpy2DUnaligned_v2,
      cuMemcpy2DUnaligned_v2_ptds)
    P(cuMemcpy2DAsync, 0, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz)
    P(cuMemcpy3D, 0, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds)
    P(cuMemcpy3DAsync, 0, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz)
    P(cuMemsetD8, 0, cuMemsetD8_v2, cuMemsetD8_v2_ptds)
    P(cuMemsetD16, 0, cuMemsetD16_v2, cuMemsetD16_v2_ptds)
    P(cuMemsetD32, 0, cuMemsetD32_v2, cuMemsetD32_v2_ptds)
    P(cuMemsetD2D8, 0, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds)
    P(cuMemsetD2D16, 0, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds)
    P(cuMemsetD2D32, 0, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds)
    P(cuMemsetD8Async, 0, cuMemsetD8Async, cuMemsetD8Async_ptsz)
    P(cuMemsetD16Async, 0, cuMemsetD16Async, cuMemsetD16Async_ptsz)
    P(cuMemsetD32Async, 0, cuMemsetD32Async, cuMemsetD32Async_ptsz)
    P(cuMemsetD2D8Async, 0, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz)
    P(cuMemsetD2D16Async, 0, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz)
    P(cuMemsetD2D32Async, 0, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz)
    P(cuLaunchKernel, 0, cuLaunchKernel, cuLaunchKernel_ptsz)
    P(cuLaunchKernelEx, 0, cuLaunchKernelEx, cuLaunchKernelEx_ptsz)
    P(cuLaunchCooperativeKernel, 0, cuLaunchCooperativeKernel,
      cuLaunchCooperativeKernel_ptsz)
    P(cuLaunchHostFunc, 0, cuLaunchHostFunc, cuLaunchHostFunc_ptsz)
    P(cuStreamAddCallback, 0, cuStreamAddCallback, cuStreamAddCallback_ptsz)
    P1(cuFuncGetName, 0, cuFuncGetName)
    P1(cuFuncGetAttribute, 0, cuFuncGetAttribute)
    P1(cuFuncSetAttribute, 0, cuFuncSetAttribute)
    P1(cuFuncSetCacheConfig, 0, cuFuncSetCacheConfig)
    P1(cuFuncGetModule, 0, cuFuncGetModule)
    P1(cuModuleLoad, 0, cuModuleLoad)
    P1(cuModuleLoadData, 0, cuModuleLoadData)
    P1(cuModuleLoadDataEx, 0, cuModuleLoadDataEx)
    P1(cuModuleLoadFatBinary, 0, cuModuleLoadFatBinary)
    P1(cuModuleUnload, 0, cuModuleUnload)
    P1(cuModuleGetFunction, 0, cuModuleGetFunction)
    P1(cuModuleGetGlobal, 0, cuModuleGetGlobal_v2)
    P1(cuModuleGetLoadingMode, 0, cuModuleGetLoadingMode)
    P1(cuModuleGetFunctionCount, 0, cuModuleGetFunctionCount)
    P1(cuModuleEnumerateFunctions, 0, cuModuleEnumerateFunctions)
    P1(cuLibraryLoadData, 0, cuLibraryLoadData)
    P1(cuLibraryLoadFromFile, 0, cuLibraryLoadFromFile)
    P1(cuLibraryUnload, 0, cuLibraryUnload)
    P1(cuLibraryGetKernel, 0, cuLibraryGetKernel)
    P1(cuLibraryGetModule, 0, cuLibraryGetModule)
    P1(cuLibraryGetKernelCount, 0, cuLibraryGetKernelCount)
    P1(cuLibraryEnumerateKernels, 0, cuLibraryEnumerateKernels)
    P1(cuKernelGetFunction, 0, cuKernelGetFunction)
    P1(cuKernelGetName, 0, cuKernelGetName)
    P1(cuStreamCreate, 0, cuStreamCreate)
    P1(cuStreamCreateWithPriority, 0, cuStreamCreateWithPriority)
    P1(cuStreamDestroy, 0, cuStreamDestroy_v2)
    P(cuStreamGetFlags, 0, cuStreamGetFlags, cuStreamGetFlags_ptsz)
    P(cuStreamGetPriority, 0, cuStreamGetPriority, cuStreamGetPriority_ptsz)
    P(cuStreamGetId, 0, cuStreamGetId, cuStreamGetId_ptsz)
    P(cuStreamGetDevice, 0, cuStreamGetDevice, cuStreamGetDevice_ptsz)
    P(cuStreamSynchronize, 0, cuStreamSynchronize, cuStreamSynchronize_ptsz)
    P(cuStreamQuery, 0, cuStreamQuery, cuStreamQuery_ptsz)
    P(cuStreamWaitEvent, 0, cuStreamWaitEvent, cuStreamWaitEvent_ptsz)
    P1(cuEventCreate, 0, cuEventCreate)
    P(cuEventRecord, 0, cuEventRecord, cuEventRecord_ptsz)
    P(cuEventRecordWithFlags, 0, cuEventRecordWithFlags,
      cuEventRecordWithFlags_ptsz)
    P1(cuEventQuery, 0, cuEventQuery)
    P1(cuEventSynchronize, 0, cuEventSynchronize)
    P1(cuEventElapsedTime, 0, gp_cuEventElapsedTime_v1)
    P1(cuEventElapsedTime, 12080, cuEventElapsedTime_v2)
    P1(cuEventDestroy, 0, cuEventDestroy_v2)
    P(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2,
      cuStreamBeginCapture_v2_ptsz)
    P(cuStreamEndCapture, 0, cuStreamEndCapture, cuStreamEndCapture_ptsz)
    P(cuStreamIsCapturing, 0, cuStreamIsCapturing, cuStreamIsCapturing_ptsz)
    P1(cuGraphInstantiate, 12000, cuGraphInstantiateWithFlags)
    P1(cuGraphInstantiateWithFlags, 0, cuGraphInstantiateWithFlags)
    P(cuGraphLaunch, 0, cuGraphLaunch, cuGraphLaunch_ptsz)
    P1(cuGraphExecDestroy, 0, cuGraphExecDestroy)
    P1(cuGraphDestroy, 0, cuGraphDestroy)
    P(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3,
      cuStreamGetCaptureInfo_v3_ptsz)
    P1(cuGraphCreate, 0, cuGraphCreate)
    P1(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2)
    P1(cuGraphAddMemcpyNode, 0, cuGraphAddMemcpyNode)
    P1(cuGraphAddMemsetNode, 0, cuGraphAddMemsetNode)
    P1(cuGraphAddHostNode, 0, cuGraphAddHostNode)
    P1(cuGraphAddEventRecordNode, 0, cuGraphAddEventRecordNode)
    P1(cuGraphAddEventWaitNode, 0, cuGraphAddEventWaitNode)
    P1(cuGraphAddChildGraphNode, 0, cuGraphAddChildGraphNode)
    P1(cuGraphAddEmptyNode, 0, cuGraphAddEmptyNode)
    P1(cuGraphAddMemAllocNode, 0, cuGraphAddMemAllocNode)
    P1(cuGraphAddMemFreeNode, 0, cuGraphAddMemFreeNode)
    P1(cuGraphAddDependencies, 12030, cuGraphAddDependencies_v2)
    P1(cuGraphGetNodes, 0, cuGraphGetNodes)
    P1(cuGraphClone, 0, cuGraphClone)
    P1(cuGraphExecKernelNodeSetParams, 12000,
       cuGraphExecKernelNodeSetParams_v2)
    P1(cuGraphExecUpdate, 12000, cuGraphExecUpdate_v2)
    P(cuGraphUpload, 0, cuGraphUpload, cuGraphUpload_ptsz)
    GP_PROCS_SIMRT
};
/* clang-format on */

static unsigned long long resolved;

GPUSIM_EXPORT unsigned long long gpusim_procaddr_count(void) {
  return __atomic_load_n(&resolved, __ATOMIC_RELAXED);
}

/* The newest entry for base `name` that `version` allows; failing that,
 * an exactly matching exported symbol name, whatever the version. */
static const proc *lookup(const char *name, int version, bool *too_old) {
  const proc *best = NULL;
  size_t n = sizeof table / sizeof table[0];
  *too_old = false;
  for (size_t i = 0; i < n; i++) {
    const proc *p = &table[i];
    if (strcmp(p->base, name) != 0) continue;
    if (p->minver > version)
      *too_old = true;
    else if (!best || p->minver > best->minver)
      best = p;
  }
  for (size_t i = 0; !best && !*too_old && i < n; i++)
    if (strcmp(table[i].sym, name) == 0) best = &table[i];
  if (best) *too_old = false;
  return best;
}

static CUresult resolve(const char *symbol, void **pfn, int version,
                        cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  bool too_old;
  const proc *p = lookup(symbol, version, &too_old);
  *pfn = NULL;
  if (status)
    *status = p         ? CU_GET_PROC_ADDRESS_SUCCESS
              : too_old ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!p) return CUDA_ERROR_NOT_FOUND;
  bool pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = pt && p->ptfn ? p->ptfn : p->fn;
  __atomic_add_fetch(&resolved, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                    cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  DRV_ENTER(cuGetProcAddress_v2, symbol, pfn, cudaVersion, flags, status);
  DRV_RETURN(resolve(symbol, pfn, cudaVersion, flags, status));
}

GPUSIM_EXPORT CUresult CUDAAPI gp_cuGetProcAddress_v1(const char *symbol,
                                                      void **pfn,
                                                      int cudaVersion,
                                                      cuuint64_t flags) {
  cuGetProcAddress_params prm_ = {symbol, pfn, cudaVersion, flags};
  gpusim_api_frame fr_;
  gpusim_api_enter(&fr_, CUPTI_CB_DOMAIN_DRIVER_API,
                   CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, "cuGetProcAddress",
                   &prm_, NULL);
  DRV_RETURN(resolve(symbol, pfn, cudaVersion, flags, NULL));
}
