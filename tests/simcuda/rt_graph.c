/* Simulated runtime: stream capture and CUDA graphs, straight through to
 * the driver's (drv_graph.c). Graph handles are the driver's. */
#include "rt.h"

#define DECL(ret, name, args) RT_API ret CUDARTAPI name args;
DECL(cudaError_t, cudaStreamBeginCapture_ptsz,
     (cudaStream_t, enum cudaStreamCaptureMode))
DECL(cudaError_t, cudaStreamEndCapture_ptsz, (cudaStream_t, cudaGraph_t *))
DECL(cudaError_t, cudaStreamIsCapturing_ptsz,
     (cudaStream_t, enum cudaStreamCaptureStatus *))
DECL(cudaError_t, cudaGraphLaunch_ptsz, (cudaGraphExec_t, cudaStream_t))

/* The runtime's capture modes and statuses have the driver's values. */
_Static_assert((int)cudaStreamCaptureModeRelaxed ==
                   (int)CU_STREAM_CAPTURE_MODE_RELAXED,
               "capture modes");
_Static_assert((int)cudaStreamCaptureStatusInvalidated ==
                   (int)CU_STREAM_CAPTURE_STATUS_INVALIDATED,
               "capture statuses");

TWIN(cudaStreamBeginCapture, v10000, v10000,
     (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode),
     DRV((*d), begin_capture, stream, (CUstreamCaptureMode)mode))
TWIN(cudaStreamEndCapture, v10000, v10000,
     (cudaStream_t stream, cudaGraph_t *pGraph), (stream, pGraph),
     DRV((*d), end_capture, stream, (CUgraph *)pGraph))
TWIN(cudaStreamIsCapturing, v10000, v10000,
     (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
     (stream, pCaptureStatus),
     DRV((*d), is_capturing, stream, (CUstreamCaptureStatus *)pCaptureStatus))
TWIN(cudaGraphLaunch, v10000, v10000,
     (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream),
     DRV((*d), graph_launch, (CUgraphExec)graphExec, stream))

RT_API cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *pGraphExec,
                                                  cudaGraph_t graph,
                                                  unsigned long long flags) {
  RT_ENTER(cudaGraphInstantiate, v12000, pGraphExec, graph, flags);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, graph_inst, (CUgraphExec *)pGraphExec, (CUgraph)graph,
                flags));
}

RT_API cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(
    cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  RT_ENTER(cudaGraphInstantiateWithFlags, v11040, pGraphExec, graph, flags);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, graph_inst, (CUgraphExec *)pGraphExec, (CUgraph)graph,
                flags));
}

RT_API cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  RT_ENTER(cudaGraphExecDestroy, v10000, graphExec);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, graph_exec_destroy, (CUgraphExec)graphExec));
}

RT_API cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  RT_ENTER(cudaGraphDestroy, v10000, graph);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, graph_destroy, (CUgraph)graph));
}

/* ---- explicit construction ---- */

DECL(cudaError_t, cudaGraphUpload_ptsz, (cudaGraphExec_t, cudaStream_t))
DECL(cudaError_t, cudaStreamGetCaptureInfo_ptsz,
     (cudaStream_t, enum cudaStreamCaptureStatus *, unsigned long long *,
      cudaGraph_t *, const cudaGraphNode_t **, const cudaGraphEdgeData **,
      size_t *))

_Static_assert(sizeof(cudaGraphExecUpdateResultInfo) ==
                   sizeof(CUgraphExecUpdateResultInfo),
               "update result info");

TWIN(cudaGraphUpload, v10000, v10000,
     (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream),
     DRV((*d), graph_upload, (CUgraphExec)graphExec, stream))
TWIN(cudaStreamGetCaptureInfo, v12030, v12030,
     (cudaStream_t stream, enum cudaStreamCaptureStatus *status,
      unsigned long long *id, cudaGraph_t *graph, const cudaGraphNode_t **deps,
      const cudaGraphEdgeData **edges, size_t *ndeps),
     (stream, status, id, graph, deps, edges, ndeps),
     DRV((*d), capture_info, stream, (CUstreamCaptureStatus *)status,
         (cuuint64_t *)id, (CUgraph *)graph, (const CUgraphNode **)deps,
         (const CUgraphEdgeData **)edges, ndeps))

#define NODE_ARGS                                                              \
  (CUgraphNode *)pGraphNode, (CUgraph)graph,                                   \
      (const CUgraphNode *)pDependencies, numDependencies

RT_API cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph,
                                             unsigned int flags) {
  RT_ENTER(cudaGraphCreate, v10000, pGraph, flags);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, graph_create, (CUgraph *)pGraph, flags));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddKernelNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies,
    const struct cudaKernelNodeParams *pNodeParams) {
  RT_ENTER(cudaGraphAddKernelNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies, pNodeParams);
  RT_NEED_CTX();
  if (!pNodeParams) RT_RETURN(cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p = {0};
  if (!(p.func = gp_rt_function(pNodeParams->func)))
    RT_RETURN(cudaErrorInvalidDeviceFunction);
  p.gridDimX = pNodeParams->gridDim.x;
  p.gridDimY = pNodeParams->gridDim.y;
  p.gridDimZ = pNodeParams->gridDim.z;
  p.blockDimX = pNodeParams->blockDim.x;
  p.blockDimY = pNodeParams->blockDim.y;
  p.blockDimZ = pNodeParams->blockDim.z;
  p.sharedMemBytes = pNodeParams->sharedMemBytes;
  p.kernelParams = pNodeParams->kernelParams;
  p.extra = pNodeParams->extra;
  cudaError_t e = DRV(gp_drv, add_kernel, NODE_ARGS, &p);
  RT_RETURN(e == cudaErrorInvalidValue ? cudaErrorInvalidConfiguration : e);
}

/* Both sides are given as unified addresses: the driver tells host from
 * device memory by the address, as for cudaMemcpyDefault. */
static cudaError_t memcpy_node(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                               const cudaGraphNode_t *pDependencies,
                               size_t numDependencies,
                               const struct cudaMemcpy3DParms *q) {
  if (!q) return cudaErrorInvalidValue;
  if (q->srcArray || q->dstArray) return cudaErrorNotSupported;
  if ((unsigned)q->kind > (unsigned)cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  CUDA_MEMCPY3D p = {0};
  p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  p.srcXInBytes = q->srcPos.x;
  p.srcY = q->srcPos.y;
  p.srcZ = q->srcPos.z;
  p.srcDevice = (CUdeviceptr)q->srcPtr.ptr;
  p.srcPitch = q->srcPtr.pitch;
  p.srcHeight = q->srcPtr.ysize;
  p.dstXInBytes = q->dstPos.x;
  p.dstY = q->dstPos.y;
  p.dstZ = q->dstPos.z;
  p.dstDevice = (CUdeviceptr)q->dstPtr.ptr;
  p.dstPitch = q->dstPtr.pitch;
  p.dstHeight = q->dstPtr.ysize;
  p.WidthInBytes = q->extent.width;
  p.Height = q->extent.height;
  p.Depth = q->extent.depth;
  return DRV(gp_drv, add_memcpy, NODE_ARGS, &p, gp_rt_primary(gp_rt_device()));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddMemcpyNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies,
    const struct cudaMemcpy3DParms *pCopyParams) {
  RT_ENTER(cudaGraphAddMemcpyNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies, pCopyParams);
  RT_NEED_CTX();
  RT_RETURN(memcpy_node(pGraphNode, graph, pDependencies, numDependencies,
                        pCopyParams));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddMemcpyNode1D(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
    const void *src, size_t count, enum cudaMemcpyKind kind) {
  RT_ENTER(cudaGraphAddMemcpyNode1D, v11010, pGraphNode, graph, pDependencies,
           numDependencies, dst, src, count, kind);
  RT_NEED_CTX();
  struct cudaMemcpy3DParms q = {0};
  q.srcPtr = (struct cudaPitchedPtr){(void *)src, count, count, 1};
  q.dstPtr = (struct cudaPitchedPtr){dst, count, count, 1};
  q.extent = (struct cudaExtent){count, 1, 1};
  q.kind = kind;
  RT_RETURN(memcpy_node(pGraphNode, graph, pDependencies, numDependencies, &q));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddMemsetNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies,
    const struct cudaMemsetParams *pMemsetParams) {
  RT_ENTER(cudaGraphAddMemsetNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies, pMemsetParams);
  RT_NEED_CTX();
  if (!pMemsetParams) RT_RETURN(cudaErrorInvalidValue);
  CUDA_MEMSET_NODE_PARAMS p = {0};
  p.dst = (CUdeviceptr)pMemsetParams->dst;
  p.pitch = pMemsetParams->pitch;
  p.value = pMemsetParams->value;
  p.elementSize = pMemsetParams->elementSize;
  p.width = pMemsetParams->width;
  p.height = pMemsetParams->height;
  RT_RETURN(
      DRV(gp_drv, add_memset, NODE_ARGS, &p, gp_rt_primary(gp_rt_device())));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddHostNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies,
    const struct cudaHostNodeParams *pNodeParams) {
  RT_ENTER(cudaGraphAddHostNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies, pNodeParams);
  RT_NEED_CTX();
  if (!pNodeParams) RT_RETURN(cudaErrorInvalidValue);
  CUDA_HOST_NODE_PARAMS p = {pNodeParams->fn, pNodeParams->userData};
  RT_RETURN(DRV(gp_drv, add_host, NODE_ARGS, &p));
}

RT_API cudaError_t CUDARTAPI
cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                            const cudaGraphNode_t *pDependencies,
                            size_t numDependencies, cudaEvent_t event) {
  RT_ENTER(cudaGraphAddEventRecordNode, v11010, pGraphNode, graph,
           pDependencies, numDependencies, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_ev_record, NODE_ARGS, (CUevent)event));
}

RT_API cudaError_t CUDARTAPI
cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                          const cudaGraphNode_t *pDependencies,
                          size_t numDependencies, cudaEvent_t event) {
  RT_ENTER(cudaGraphAddEventWaitNode, v11010, pGraphNode, graph, pDependencies,
           numDependencies, event);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_ev_wait, NODE_ARGS, (CUevent)event));
}

RT_API cudaError_t CUDARTAPI
cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                           const cudaGraphNode_t *pDependencies,
                           size_t numDependencies, cudaGraph_t childGraph) {
  RT_ENTER(cudaGraphAddChildGraphNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies, childGraph);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_child, NODE_ARGS, (CUgraph)childGraph));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddEmptyNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies) {
  RT_ENTER(cudaGraphAddEmptyNode, v10000, pGraphNode, graph, pDependencies,
           numDependencies);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_empty, NODE_ARGS));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies,
    struct cudaMemAllocNodeParams *nodeParams) {
  RT_ENTER(cudaGraphAddMemAllocNode, v11040, pGraphNode, graph, pDependencies,
           numDependencies, nodeParams);
  RT_NEED_CTX();
  if (!nodeParams) RT_RETURN(cudaErrorInvalidValue);
  CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type =
      (CUmemLocationType)nodeParams->poolProps.location.type;
  p.poolProps.location.id = nodeParams->poolProps.location.id;
  p.bytesize = nodeParams->bytesize;
  cudaError_t e = DRV(gp_drv, add_alloc, NODE_ARGS, &p);
  if (e == cudaSuccess) nodeParams->dptr = (void *)p.dptr;
  RT_RETURN(e);
}

RT_API cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(
    cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
    const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dptr) {
  RT_ENTER(cudaGraphAddMemFreeNode, v11040, pGraphNode, graph, pDependencies,
           numDependencies, dptr);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_free, NODE_ARGS, (CUdeviceptr)dptr));
}

RT_API cudaError_t CUDARTAPI cudaGraphAddDependencies(
    cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
    const cudaGraphEdgeData *edgeData, size_t numDependencies) {
  RT_ENTER(cudaGraphAddDependencies, v12030, graph, from, to, edgeData,
           numDependencies);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, add_deps, (CUgraph)graph, (const CUgraphNode *)from,
                (const CUgraphNode *)to, (const CUgraphEdgeData *)edgeData,
                numDependencies));
}

RT_API cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph,
                                               cudaGraphNode_t *nodes,
                                               size_t *numNodes) {
  RT_ENTER(cudaGraphGetNodes, v10000, graph, nodes, numNodes);
  RT_NEED_CTX();
  RT_RETURN(
      DRV(gp_drv, get_nodes, (CUgraph)graph, (CUgraphNode *)nodes, numNodes));
}

RT_API cudaError_t CUDARTAPI cudaGraphClone(cudaGraph_t *pGraphClone,
                                            cudaGraph_t originalGraph) {
  RT_ENTER(cudaGraphClone, v10000, pGraphClone, originalGraph);
  RT_NEED_CTX();
  RT_RETURN(
      DRV(gp_drv, graph_clone, (CUgraph *)pGraphClone, (CUgraph)originalGraph));
}

RT_API cudaError_t CUDARTAPI cudaGraphExecKernelNodeSetParams(
    cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
    const struct cudaKernelNodeParams *pNodeParams) {
  RT_ENTER(cudaGraphExecKernelNodeSetParams, v10010, hGraphExec, node,
           pNodeParams);
  RT_NEED_CTX();
  if (!pNodeParams) RT_RETURN(cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS p = {0};
  if (!(p.func = gp_rt_function(pNodeParams->func)))
    RT_RETURN(cudaErrorInvalidDeviceFunction);
  p.gridDimX = pNodeParams->gridDim.x;
  p.gridDimY = pNodeParams->gridDim.y;
  p.gridDimZ = pNodeParams->gridDim.z;
  p.blockDimX = pNodeParams->blockDim.x;
  p.blockDimY = pNodeParams->blockDim.y;
  p.blockDimZ = pNodeParams->blockDim.z;
  p.sharedMemBytes = pNodeParams->sharedMemBytes;
  p.kernelParams = pNodeParams->kernelParams;
  p.extra = pNodeParams->extra;
  RT_RETURN(DRV(gp_drv, exec_kernel_set, (CUgraphExec)hGraphExec,
                (CUgraphNode)node, &p));
}

RT_API cudaError_t CUDARTAPI
cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                    cudaGraphExecUpdateResultInfo *resultInfo) {
  RT_ENTER(cudaGraphExecUpdate, v10020, hGraphExec, hGraph, resultInfo);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, exec_update, (CUgraphExec)hGraphExec, (CUgraph)hGraph,
                (CUgraphExecUpdateResultInfo *)resultInfo));
}
