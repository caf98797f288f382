/* Simulated runtime: allocation, host memory and pointer queries. */
#include "rt.h"

/* Per-thread-default-stream entry points: same prototypes as the plain
 * ones, which the header only declares under a compile flag. */
RT_API cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **, size_t,
                                                  cudaStream_t);
RT_API cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **, size_t,
                                                          cudaMemPool_t,
                                                          cudaStream_t);
RT_API cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *, cudaStream_t);

RT_API cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size) {
  RT_ENTER(cudaMalloc, v3020, devPtr, size);
  RT_NEED_CTX();
  if (!devPtr) RT_RETURN(cudaErrorInvalidValue);
  *devPtr = NULL;
  if (size == 0) RT_RETURN(cudaSuccess);
  RT_RETURN(DRV(gp_drv, mem_alloc, (CUdeviceptr *)devPtr, size));
}

/* cudaFree(NULL) is the customary way to initialise the context. */
RT_API cudaError_t CUDARTAPI cudaFree(void *devPtr) {
  RT_ENTER(cudaFree, v3020, devPtr);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, mem_free, (CUdeviceptr)devPtr));
}

RT_API cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size,
                                               unsigned int flags) {
  RT_ENTER(cudaMallocManaged, v6000, devPtr, size, flags);
  RT_NEED_CTX();
  if (!devPtr || !size) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, mem_managed, (CUdeviceptr *)devPtr, size, flags));
}

RT_API cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch,
                                             size_t width, size_t height) {
  RT_ENTER(cudaMallocPitch, v3020, devPtr, pitch, width, height);
  RT_NEED_CTX();
  if (!devPtr || !pitch) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, mem_alloc_pitch, (CUdeviceptr *)devPtr, pitch, width,
                height, 4));
}

RT_API cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr,
                                          struct cudaExtent extent) {
  RT_ENTER(cudaMalloc3D, v3020, pitchedDevPtr, extent);
  RT_NEED_CTX();
  if (!pitchedDevPtr) RT_RETURN(cudaErrorInvalidValue);
  size_t pitch = 0;
  CUdeviceptr p = 0;
  cudaError_t e = DRV(gp_drv, mem_alloc_pitch, &p, &pitch, extent.width,
                      extent.height * extent.depth, 4);
  pitchedDevPtr->ptr = (void *)p;
  pitchedDevPtr->pitch = pitch;
  pitchedDevPtr->xsize = extent.width;
  pitchedDevPtr->ysize = extent.height;
  RT_RETURN(e);
}

static cudaError_t alloc_async(const rt_driver *d, void **p, size_t size,
                               cudaStream_t s) {
  if (!p) return cudaErrorInvalidValue;
  *p = NULL;
  return size ? DRV((*d), mem_alloc_async, (CUdeviceptr *)p, size, s)
              : cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size,
                                             cudaStream_t hStream) {
  RT_ENTER(cudaMallocAsync, v11020, devPtr, size, hStream);
  RT_NEED_CTX();
  RT_RETURN(alloc_async(&gp_drv, devPtr, size, hStream));
}

RT_API cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size,
                                                  cudaStream_t hStream) {
  RT_ENTER(cudaMallocAsync_ptsz, v11020, devPtr, size, hStream);
  RT_NEED_CTX();
  RT_RETURN(alloc_async(&gp_drv_pt, devPtr, size, hStream));
}

static cudaError_t alloc_pool(const rt_driver *d, void **p, size_t size,
                              cudaMemPool_t pool, cudaStream_t s) {
  if (!p) return cudaErrorInvalidValue;
  *p = NULL;
  return size ? DRV((*d), mem_alloc_pool, (CUdeviceptr *)p, size,
                    (CUmemoryPool)pool, s)
              : cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size,
                                                     cudaMemPool_t memPool,
                                                     cudaStream_t stream) {
  RT_ENTER(cudaMallocFromPoolAsync, v11020, ptr, size, memPool, stream);
  RT_NEED_CTX();
  RT_RETURN(alloc_pool(&gp_drv, ptr, size, memPool, stream));
}

RT_API cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **ptr,
                                                          size_t size,
                                                          cudaMemPool_t memPool,
                                                          cudaStream_t stream) {
  RT_ENTER(cudaMallocFromPoolAsync_ptsz, v11020, ptr, size, memPool, stream);
  RT_NEED_CTX();
  RT_RETURN(alloc_pool(&gp_drv_pt, ptr, size, memPool, stream));
}

RT_API cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
  RT_ENTER(cudaFreeAsync, v11020, devPtr, hStream);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, mem_free_async, (CUdeviceptr)devPtr, hStream));
}

RT_API cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr,
                                                cudaStream_t hStream) {
  RT_ENTER(cudaFreeAsync_ptsz, v11020, devPtr, hStream);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv_pt, mem_free_async, (CUdeviceptr)devPtr, hStream));
}

RT_API cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size) {
  RT_ENTER(cudaMallocHost, v3020, ptr, size);
  RT_NEED_CTX();
  if (!ptr) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, host_alloc, ptr, size, 0));
}

RT_API cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size,
                                           unsigned int flags) {
  RT_ENTER(cudaHostAlloc, v3020, pHost, size, flags);
  RT_NEED_CTX();
  if (!pHost) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, host_alloc, pHost, size, flags));
}

RT_API cudaError_t CUDARTAPI cudaFreeHost(void *ptr) {
  RT_ENTER(cudaFreeHost, v3020, ptr);
  RT_NEED_CTX();
  if (!ptr) RT_RETURN(cudaSuccess);
  RT_RETURN(DRV(gp_drv, host_free, ptr));
}

RT_API cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size,
                                              unsigned int flags) {
  RT_ENTER(cudaHostRegister, v4000, ptr, size, flags);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, host_register, ptr, size, flags));
}

RT_API cudaError_t CUDARTAPI cudaHostUnregister(void *ptr) {
  RT_ENTER(cudaHostUnregister, v4000, ptr);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, host_unregister, ptr));
}

RT_API cudaError_t CUDARTAPI cudaHostGetDevicePointer(void **pDevice,
                                                      void *pHost,
                                                      unsigned int flags) {
  RT_ENTER(cudaHostGetDevicePointer, v3020, pDevice, pHost, flags);
  RT_NEED_CTX();
  if (!pDevice) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(DRV(gp_drv, host_devptr, (CUdeviceptr *)pDevice, pHost, flags));
}

/* Unknown (pageable) pointers are not an error: they are reported as
 * cudaMemoryTypeUnregistered, as by the real runtime. */
static cudaError_t pointer_attrs(struct cudaPointerAttributes *a,
                                 const void *ptr) {
  unsigned type = 0, managed = 0;
  int ordinal = 0;
  CUpointer_attribute ids[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                               CU_POINTER_ATTRIBUTE_IS_MANAGED,
                               CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *data[] = {&type, &managed, &ordinal};
  cudaError_t e = DRV(gp_drv, ptr_attrs, 3, ids, data, (CUdeviceptr)ptr);
  if (e != cudaSuccess) return e;
  a->device = ordinal;
  a->devicePointer = type ? (void *)ptr : NULL;
  a->hostPointer = type != CU_MEMORYTYPE_DEVICE || managed ? (void *)ptr : NULL;
  if (managed)
    a->type = cudaMemoryTypeManaged;
  else if (type == CU_MEMORYTYPE_DEVICE)
    a->type = cudaMemoryTypeDevice;
  else if (type == CU_MEMORYTYPE_HOST)
    a->type = cudaMemoryTypeHost, a->device = gp_rt_device();
  else
    a->type = cudaMemoryTypeUnregistered, a->device = -2;
  return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaPointerGetAttributes(
    struct cudaPointerAttributes *attributes, const void *ptr) {
  RT_ENTER(cudaPointerGetAttributes, v4000, attributes, ptr);
  RT_NEED_CTX();
  if (!attributes) RT_RETURN(cudaErrorInvalidValue);
  RT_RETURN(pointer_attrs(attributes, ptr));
}
