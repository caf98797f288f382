/* Simulated runtime: managed memory prefetch, advice, range attributes
 * and stream attachment, through the driver (README.md, "Managed
 * memory"). cudaMemLocation and CUmemLocation share their layout and
 * values. */
#include <string.h>

#include "rt.h"

RT_API cudaError_t CUDARTAPI cudaMemPrefetchAsync_ptsz(const void *, size_t,
                                                       struct cudaMemLocation,
                                                       unsigned int,
                                                       cudaStream_t);
RT_API cudaError_t CUDARTAPI cudaMemPrefetchBatchAsync_ptsz(
    void **, size_t *, size_t, struct cudaMemLocation *, size_t *, size_t,
    unsigned long long, cudaStream_t);
RT_API cudaError_t CUDARTAPI cudaStreamAttachMemAsync_ptsz(cudaStream_t, void *,
                                                           size_t,
                                                           unsigned int);

static CUmemLocation loc(struct cudaMemLocation l) {
  CUmemLocation c;
  memcpy(&c, &l, sizeof c);
  return c;
}

TWIN(cudaMemPrefetchAsync, v12020, v12020,
     (const void *devPtr, size_t count, struct cudaMemLocation location,
      unsigned int flags, cudaStream_t stream),
     (devPtr, count, location, flags, stream),
     DRV((*d), prefetch, (CUdeviceptr)devPtr, count, loc(location), flags,
         stream))

TWIN(cudaMemPrefetchBatchAsync, v13000, v13000,
     (void **dptrs, size_t *sizes, size_t count,
      struct cudaMemLocation *prefetchLocs, size_t *prefetchLocIdxs,
      size_t numPrefetchLocs, unsigned long long flags, cudaStream_t stream),
     (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
      flags, stream),
     DRV((*d), prefetch_batch, (CUdeviceptr *)dptrs, sizes, count,
         (CUmemLocation *)prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
         stream))

TWIN(cudaStreamAttachMemAsync, v6000, v7000,
     (cudaStream_t stream, void *devPtr, size_t length, unsigned int flags),
     (stream, devPtr, length, flags),
     DRV((*d), attach, stream, (CUdeviceptr)devPtr, length, flags))

RT_API cudaError_t CUDARTAPI cudaMemAdvise(const void *devPtr, size_t count,
                                           enum cudaMemoryAdvise advice,
                                           struct cudaMemLocation location) {
  RT_ENTER(cudaMemAdvise, v12020, devPtr, count, advice, location);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, advise, (CUdeviceptr)devPtr, count,
                (CUmem_advise)advice, loc(location)));
}

RT_API cudaError_t CUDARTAPI cudaMemRangeGetAttribute(
    void *data, size_t dataSize, enum cudaMemRangeAttribute attribute,
    const void *devPtr, size_t count) {
  RT_ENTER(cudaMemRangeGetAttribute, v8000, data, dataSize, attribute, devPtr,
           count);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, range_attr, data, dataSize,
                (CUmem_range_attribute)attribute, (CUdeviceptr)devPtr, count));
}

RT_API cudaError_t CUDARTAPI cudaMemRangeGetAttributes(
    void **data, size_t *dataSizes, enum cudaMemRangeAttribute *attributes,
    size_t numAttributes, const void *devPtr, size_t count) {
  RT_ENTER(cudaMemRangeGetAttributes, v8000, data, dataSizes, attributes,
           numAttributes, devPtr, count);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, range_attrs, data, dataSizes,
                (CUmem_range_attribute *)attributes, numAttributes,
                (CUdeviceptr)devPtr, count));
}
