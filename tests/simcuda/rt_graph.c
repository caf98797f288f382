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
