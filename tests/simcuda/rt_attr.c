/* Simulated runtime: stream attributes, default memory pool attributes
 * and peer attributes (README.md, "Attributes"). cudaStreamAttrValue and
 * CUstreamAttrValue, cudaMemPoolAttr and CUmemPool_attribute share their
 * layout and values. */
#include "rt.h"

RT_API cudaError_t CUDARTAPI cudaStreamGetAttribute_ptsz(cudaStream_t,
                                                         cudaStreamAttrID,
                                                         cudaStreamAttrValue *);
RT_API cudaError_t CUDARTAPI cudaStreamSetAttribute_ptsz(
    cudaStream_t, cudaStreamAttrID, const cudaStreamAttrValue *);
RT_API cudaError_t CUDARTAPI cudaStreamCopyAttributes_ptsz(cudaStream_t,
                                                           cudaStream_t);

TWIN(cudaStreamGetAttribute, v11000, v11000,
     (cudaStream_t hStream, cudaStreamAttrID attr,
      cudaStreamAttrValue *value_out),
     (hStream, attr, value_out),
     DRV((*d), stream_get_attr, hStream, (CUstreamAttrID)attr,
         (CUstreamAttrValue *)value_out))

TWIN(cudaStreamSetAttribute, v11000, v11000,
     (cudaStream_t hStream, cudaStreamAttrID attr,
      const cudaStreamAttrValue *value),
     (hStream, attr, value),
     DRV((*d), stream_set_attr, hStream, (CUstreamAttrID)attr,
         (const CUstreamAttrValue *)value))

TWIN(cudaStreamCopyAttributes, v11000, v11000,
     (cudaStream_t dst, cudaStream_t src), (dst, src),
     DRV((*d), stream_copy_attrs, dst, src))

RT_API cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool,
                                                     enum cudaMemPoolAttr attr,
                                                     void *value) {
  RT_ENTER(cudaMemPoolGetAttribute, v11020, memPool, attr, value);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, pool_get_attr, (CUmemoryPool)memPool,
                (CUmemPool_attribute)attr, value));
}

RT_API cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool,
                                                     enum cudaMemPoolAttr attr,
                                                     void *value) {
  RT_ENTER(cudaMemPoolSetAttribute, v11020, memPool, attr, value);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, pool_set_attr, (CUmemoryPool)memPool,
                (CUmemPool_attribute)attr, value));
}

RT_API cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool,
                                               size_t minBytesToKeep) {
  RT_ENTER(cudaMemPoolTrimTo, v11020, memPool, minBytesToKeep);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, pool_trim, (CUmemoryPool)memPool, minBytesToKeep));
}

RT_API cudaError_t CUDARTAPI cudaDeviceGetP2PAttribute(
    int *value, enum cudaDeviceP2PAttr attr, int srcDevice, int dstDevice) {
  RT_ENTER(cudaDeviceGetP2PAttribute, v8000, value, attr, srcDevice, dstDevice);
  cudaError_t e = gp_rt_load();
  if (e != cudaSuccess) RT_RETURN(e);
  RT_RETURN(DRV(gp_drv, p2p_attr, value, (CUdevice_P2PAttribute)attr, srcDevice,
                dstDevice));
}
