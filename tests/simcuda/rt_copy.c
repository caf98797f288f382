/* Simulated runtime: copies and memsets, each mapped to the driver entry
 * point the real runtime would use. Every entry point exists in a legacy
 * and a per-thread-default-stream (_ptds/_ptsz) flavour that differ only
 * in the driver table they use. */
#include "rt.h"

typedef enum cudaMemcpyKind kind_t;

static bool kind_ok(kind_t k) {
  return k >= cudaMemcpyHostToHost && k <= cudaMemcpyDefault;
}

/* 1D copy; s == (cudaStream_t)-1 marks the synchronous call. */
#define SYNC ((cudaStream_t)(intptr_t)-1)

static cudaError_t copy(const rt_driver *d, void *dst, const void *src,
                        size_t n, kind_t k, cudaStream_t s) {
  CUdeviceptr cd = (CUdeviceptr)dst, cs = (CUdeviceptr)src;
  bool sync = s == SYNC;
  if (!kind_ok(k)) return cudaErrorInvalidMemcpyDirection;
  switch (k) {
  case cudaMemcpyHostToDevice:
    return gp_rt_error(sync ? d->htod(cd, src, n)
                            : d->htod_async(cd, src, n, s));
  case cudaMemcpyDeviceToHost:
    return gp_rt_error(sync ? d->dtoh(dst, cs, n)
                            : d->dtoh_async(dst, cs, n, s));
  case cudaMemcpyDeviceToDevice:
    return gp_rt_error(sync ? d->dtod(cd, cs, n) : d->dtod_async(cd, cs, n, s));
  default:
    return gp_rt_error(sync ? d->memcpy(cd, cs, n)
                            : d->memcpy_async(cd, cs, n, s));
  }
}

#define DECL(ret, name, args) RT_API ret CUDARTAPI name args;
DECL(cudaError_t, cudaMemcpy_ptds, (void *, const void *, size_t, kind_t))
DECL(cudaError_t, cudaMemcpyAsync_ptsz,
     (void *, const void *, size_t, kind_t, cudaStream_t))
DECL(cudaError_t, cudaMemcpy2D_ptds,
     (void *, size_t, const void *, size_t, size_t, size_t, kind_t))
DECL(cudaError_t, cudaMemcpy2DAsync_ptsz,
     (void *, size_t, const void *, size_t, size_t, size_t, kind_t,
      cudaStream_t))
DECL(cudaError_t, cudaMemcpy3D_ptds, (const struct cudaMemcpy3DParms *))
DECL(cudaError_t, cudaMemcpy3DAsync_ptsz,
     (const struct cudaMemcpy3DParms *, cudaStream_t))
DECL(cudaError_t, cudaMemcpyToSymbol_ptds,
     (const void *, const void *, size_t, size_t, kind_t))
DECL(cudaError_t, cudaMemcpyFromSymbol_ptds,
     (void *, const void *, size_t, size_t, kind_t))
DECL(cudaError_t, cudaMemcpyToSymbolAsync_ptsz,
     (const void *, const void *, size_t, size_t, kind_t, cudaStream_t))
DECL(cudaError_t, cudaMemcpyFromSymbolAsync_ptsz,
     (void *, const void *, size_t, size_t, kind_t, cudaStream_t))
DECL(cudaError_t, cudaMemset_ptds, (void *, int, size_t))
DECL(cudaError_t, cudaMemsetAsync_ptsz, (void *, int, size_t, cudaStream_t))
DECL(cudaError_t, cudaMemset2D_ptds, (void *, size_t, int, size_t, size_t))
DECL(cudaError_t, cudaMemset2DAsync_ptsz,
     (void *, size_t, int, size_t, size_t, cudaStream_t))
DECL(cudaError_t, cudaMemset3D_ptds,
     (struct cudaPitchedPtr, int, struct cudaExtent))
DECL(cudaError_t, cudaMemset3DAsync_ptsz,
     (struct cudaPitchedPtr, int, struct cudaExtent, cudaStream_t))

RT_API cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src,
                                        size_t count, kind_t kind) {
  RT_ENTER(cudaMemcpy, v3020, dst, src, count, kind);
  RT_NEED_CTX();
  RT_RETURN(copy(&gp_drv, dst, src, count, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src,
                                             size_t count, kind_t kind) {
  RT_ENTER(cudaMemcpy_ptds, v7000, dst, src, count, kind);
  RT_NEED_CTX();
  RT_RETURN(copy(&gp_drv_pt, dst, src, count, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src,
                                             size_t count, kind_t kind,
                                             cudaStream_t stream) {
  RT_ENTER(cudaMemcpyAsync, v3020, dst, src, count, kind, stream);
  RT_NEED_CTX();
  RT_RETURN(copy(&gp_drv, dst, src, count, kind, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *dst, const void *src,
                                                  size_t count, kind_t kind,
                                                  cudaStream_t stream) {
  RT_ENTER(cudaMemcpyAsync_ptsz, v7000, dst, src, count, kind, stream);
  RT_NEED_CTX();
  RT_RETURN(copy(&gp_drv_pt, dst, src, count, kind, stream));
}

/* Memory types of a cudaMemcpyKind, for the driver's 2D/3D structs. */
static void kind_types(kind_t k, CUmemorytype *src, CUmemorytype *dst) {
  *src = k == cudaMemcpyHostToHost || k == cudaMemcpyHostToDevice
             ? CU_MEMORYTYPE_HOST
         : k == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                                  : CU_MEMORYTYPE_DEVICE;
  *dst = k == cudaMemcpyHostToHost || k == cudaMemcpyDeviceToHost
             ? CU_MEMORYTYPE_HOST
         : k == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED
                                  : CU_MEMORYTYPE_DEVICE;
}

static cudaError_t copy2d(const rt_driver *d, void *dst, size_t dpitch,
                          const void *src, size_t spitch, size_t w, size_t h,
                          kind_t k, cudaStream_t s) {
  if (!kind_ok(k)) return cudaErrorInvalidMemcpyDirection;
  if (w > dpitch || w > spitch) return cudaErrorInvalidPitchValue;
  CUDA_MEMCPY2D p = {0};
  kind_types(k, &p.srcMemoryType, &p.dstMemoryType);
  p.srcHost = src;
  p.srcDevice = (CUdeviceptr)src;
  p.srcPitch = spitch;
  p.dstHost = dst;
  p.dstDevice = (CUdeviceptr)dst;
  p.dstPitch = dpitch;
  p.WidthInBytes = w;
  p.Height = h;
  return gp_rt_error(s == SYNC ? d->copy2d(&p) : d->copy2d_async(&p, s));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch,
                                          const void *src, size_t spitch,
                                          size_t width, size_t height,
                                          kind_t kind) {
  RT_ENTER(cudaMemcpy2D, v3020, dst, dpitch, src, spitch, width, height, kind);
  RT_NEED_CTX();
  RT_RETURN(
      copy2d(&gp_drv, dst, dpitch, src, spitch, width, height, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2D_ptds(void *dst, size_t dpitch,
                                               const void *src, size_t spitch,
                                               size_t width, size_t height,
                                               kind_t kind) {
  RT_ENTER(cudaMemcpy2D_ptds, v7000, dst, dpitch, src, spitch, width, height,
           kind);
  RT_NEED_CTX();
  RT_RETURN(
      copy2d(&gp_drv_pt, dst, dpitch, src, spitch, width, height, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch,
                                               const void *src, size_t spitch,
                                               size_t width, size_t height,
                                               kind_t kind,
                                               cudaStream_t stream) {
  RT_ENTER(cudaMemcpy2DAsync, v3020, dst, dpitch, src, spitch, width, height,
           kind, stream);
  RT_NEED_CTX();
  RT_RETURN(
      copy2d(&gp_drv, dst, dpitch, src, spitch, width, height, kind, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch,
                                                    const void *src,
                                                    size_t spitch, size_t width,
                                                    size_t height, kind_t kind,
                                                    cudaStream_t stream) {
  RT_ENTER(cudaMemcpy2DAsync_ptsz, v7000, dst, dpitch, src, spitch, width,
           height, kind, stream);
  RT_NEED_CTX();
  RT_RETURN(copy2d(&gp_drv_pt, dst, dpitch, src, spitch, width, height, kind,
                   stream));
}

/* With an array at either end, positions and the extent's width count
 * that array's elements. */
static cudaError_t copy3d(const rt_driver *d, const struct cudaMemcpy3DParms *q,
                          cudaStream_t s) {
  if (!q) return cudaErrorInvalidValue;
  if (!kind_ok(q->kind)) return cudaErrorInvalidMemcpyDirection;
  size_t se = 1, de = 1;
  if (q->srcArray && gp_rt_array_elem(q->srcArray, &se) != cudaSuccess)
    return cudaErrorInvalidResourceHandle;
  if (q->dstArray && gp_rt_array_elem(q->dstArray, &de) != cudaSuccess)
    return cudaErrorInvalidResourceHandle;
  CUDA_MEMCPY3D p = {0};
  kind_types(q->kind, &p.srcMemoryType, &p.dstMemoryType);
  if (q->srcArray)
    p.srcMemoryType = CU_MEMORYTYPE_ARRAY, p.srcArray = (CUarray)q->srcArray;
  if (q->dstArray)
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY, p.dstArray = (CUarray)q->dstArray;
  p.srcXInBytes = q->srcPos.x * se;
  p.srcY = q->srcPos.y;
  p.srcZ = q->srcPos.z;
  p.srcHost = q->srcPtr.ptr;
  p.srcDevice = (CUdeviceptr)q->srcPtr.ptr;
  p.srcPitch = q->srcPtr.pitch;
  p.srcHeight = q->srcPtr.ysize;
  p.dstXInBytes = q->dstPos.x * de;
  p.dstY = q->dstPos.y;
  p.dstZ = q->dstPos.z;
  p.dstHost = q->dstPtr.ptr;
  p.dstDevice = (CUdeviceptr)q->dstPtr.ptr;
  p.dstPitch = q->dstPtr.pitch;
  p.dstHeight = q->dstPtr.ysize;
  p.WidthInBytes = q->extent.width * (q->srcArray ? se : de);
  p.Height = q->extent.height;
  p.Depth = q->extent.depth;
  return gp_rt_error(s == SYNC ? d->copy3d(&p) : d->copy3d_async(&p, s));
}

RT_API cudaError_t CUDARTAPI cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
  RT_ENTER(cudaMemcpy3D, v3020, p);
  RT_NEED_CTX();
  RT_RETURN(copy3d(&gp_drv, p, SYNC));
}

RT_API cudaError_t CUDARTAPI
cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) {
  RT_ENTER(cudaMemcpy3D_ptds, v7000, p);
  RT_NEED_CTX();
  RT_RETURN(copy3d(&gp_drv_pt, p, SYNC));
}

RT_API cudaError_t CUDARTAPI
cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  RT_ENTER(cudaMemcpy3DAsync, v3020, p, stream);
  RT_NEED_CTX();
  RT_RETURN(copy3d(&gp_drv, p, stream));
}

RT_API cudaError_t CUDARTAPI
cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
  RT_ENTER(cudaMemcpy3DAsync_ptsz, v7000, p, stream);
  RT_NEED_CTX();
  RT_RETURN(copy3d(&gp_drv_pt, p, stream));
}

static cudaError_t peer(void *dst, int dd, const void *src, int sd, size_t n,
                        cudaStream_t s) {
  CUcontext dc = gp_rt_primary(dd), sc = gp_rt_primary(sd);
  if (!dc || !sc) return cudaErrorInvalidDevice;
  CUdeviceptr d = (CUdeviceptr)dst, c = (CUdeviceptr)src;
  return gp_rt_error(s == SYNC ? gp_drv.peer(d, dc, c, sc, n)
                               : gp_drv.peer_async(d, dc, c, sc, n, s));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyPeer(void *dst, int dstDevice,
                                            const void *src, int srcDevice,
                                            size_t count) {
  RT_ENTER(cudaMemcpyPeer, v4000, dst, dstDevice, src, srcDevice, count);
  RT_NEED_CTX();
  RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyPeerAsync(void *dst, int dstDevice,
                                                 const void *src, int srcDevice,
                                                 size_t count,
                                                 cudaStream_t stream) {
  RT_ENTER(cudaMemcpyPeerAsync, v4000, dst, dstDevice, src, srcDevice, count,
           stream);
  RT_NEED_CTX();
  RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, stream));
}

/* Symbols are device memory of their registered size (see rt_register.c);
 * the copy is an ordinary copy to or from that address. */
static cudaError_t to_symbol(const rt_driver *d, const void *sym,
                             const void *src, size_t n, size_t off, kind_t k,
                             cudaStream_t s) {
  CUdeviceptr a;
  size_t size;
  cudaError_t e = gp_rt_symbol(sym, &a, &size);
  if (e != cudaSuccess) return e;
  if (off > size || n > size - off) return cudaErrorInvalidValue;
  if (k != cudaMemcpyHostToDevice && k != cudaMemcpyDeviceToDevice &&
      k != cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  return copy(d, (void *)(a + off), src, n, k, s);
}

static cudaError_t from_symbol(const rt_driver *d, void *dst, const void *sym,
                               size_t n, size_t off, kind_t k, cudaStream_t s) {
  CUdeviceptr a;
  size_t size;
  cudaError_t e = gp_rt_symbol(sym, &a, &size);
  if (e != cudaSuccess) return e;
  if (off > size || n > size - off) return cudaErrorInvalidValue;
  if (k != cudaMemcpyDeviceToHost && k != cudaMemcpyDeviceToDevice &&
      k != cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  return copy(d, dst, (const void *)(a + off), n, k, s);
}

RT_API cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void *symbol,
                                                const void *src, size_t count,
                                                size_t offset, kind_t kind) {
  RT_ENTER(cudaMemcpyToSymbol, v3020, symbol, src, count, offset, kind);
  RT_NEED_CTX();
  RT_RETURN(to_symbol(&gp_drv, symbol, src, count, offset, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyToSymbol_ptds(const void *symbol,
                                                     const void *src,
                                                     size_t count,
                                                     size_t offset,
                                                     kind_t kind) {
  RT_ENTER(cudaMemcpyToSymbol_ptds, v7000, symbol, src, count, offset, kind);
  RT_NEED_CTX();
  RT_RETURN(to_symbol(&gp_drv_pt, symbol, src, count, offset, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void *symbol,
                                                     const void *src,
                                                     size_t count,
                                                     size_t offset, kind_t kind,
                                                     cudaStream_t stream) {
  RT_ENTER(cudaMemcpyToSymbolAsync, v3020, symbol, src, count, offset, kind,
           stream);
  RT_NEED_CTX();
  RT_RETURN(to_symbol(&gp_drv, symbol, src, count, offset, kind, stream));
}

RT_API cudaError_t CUDARTAPI
cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count,
                             size_t offset, kind_t kind, cudaStream_t stream) {
  RT_ENTER(cudaMemcpyToSymbolAsync_ptsz, v7000, symbol, src, count, offset,
           kind, stream);
  RT_NEED_CTX();
  RT_RETURN(to_symbol(&gp_drv_pt, symbol, src, count, offset, kind, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void *dst, const void *symbol,
                                                  size_t count, size_t offset,
                                                  kind_t kind) {
  RT_ENTER(cudaMemcpyFromSymbol, v3020, dst, symbol, count, offset, kind);
  RT_NEED_CTX();
  RT_RETURN(from_symbol(&gp_drv, dst, symbol, count, offset, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyFromSymbol_ptds(
    void *dst, const void *symbol, size_t count, size_t offset, kind_t kind) {
  RT_ENTER(cudaMemcpyFromSymbol_ptds, v7000, dst, symbol, count, offset, kind);
  RT_NEED_CTX();
  RT_RETURN(from_symbol(&gp_drv_pt, dst, symbol, count, offset, kind, SYNC));
}

RT_API cudaError_t CUDARTAPI
cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count,
                          size_t offset, kind_t kind, cudaStream_t stream) {
  RT_ENTER(cudaMemcpyFromSymbolAsync, v3020, dst, symbol, count, offset, kind,
           stream);
  RT_NEED_CTX();
  RT_RETURN(from_symbol(&gp_drv, dst, symbol, count, offset, kind, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(
    void *dst, const void *symbol, size_t count, size_t offset, kind_t kind,
    cudaStream_t stream) {
  RT_ENTER(cudaMemcpyFromSymbolAsync_ptsz, v7000, dst, symbol, count, offset,
           kind, stream);
  RT_NEED_CTX();
  RT_RETURN(from_symbol(&gp_drv_pt, dst, symbol, count, offset, kind, stream));
}

/* ---- memset: byte values through cuMemsetD8 / cuMemsetD2D8 ---- */

static cudaError_t set2d(const rt_driver *d, void *p, size_t pitch, int v,
                         size_t w, size_t h, cudaStream_t s) {
  CUdeviceptr dp = (CUdeviceptr)p;
  unsigned char b = (unsigned char)v;
  if (h == 1 && s == SYNC) return gp_rt_error(d->set8(dp, b, w));
  if (h == 1) return gp_rt_error(d->set8_async(dp, b, w, s));
  if (s == SYNC) return gp_rt_error(d->set2d8(dp, pitch, b, w, h));
  return gp_rt_error(d->set2d8_async(dp, pitch, b, w, h, s));
}

/* A 3D memset whose slices are not back to back is one 2D memset per
 * slice. */
static cudaError_t set3d(const rt_driver *d, struct cudaPitchedPtr p, int v,
                         struct cudaExtent e, cudaStream_t s) {
  if (p.ysize == e.height || e.depth <= 1)
    return set2d(d, p.ptr, p.pitch, v, e.width, e.height * e.depth, s);
  for (size_t z = 0; z < e.depth; z++) {
    char *slice = (char *)p.ptr + z * p.pitch * p.ysize;
    cudaError_t r = set2d(d, slice, p.pitch, v, e.width, e.height, s);
    if (r != cudaSuccess) return r;
  }
  return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value, size_t count) {
  RT_ENTER(cudaMemset, v3020, devPtr, value, count);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv, devPtr, count, value, count, 1, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value,
                                             size_t count) {
  RT_ENTER(cudaMemset_ptds, v7000, devPtr, value, count);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv_pt, devPtr, count, value, count, 1, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value,
                                             size_t count,
                                             cudaStream_t stream) {
  RT_ENTER(cudaMemsetAsync, v3020, devPtr, value, count, stream);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv, devPtr, count, value, count, 1, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void *devPtr, int value,
                                                  size_t count,
                                                  cudaStream_t stream) {
  RT_ENTER(cudaMemsetAsync_ptsz, v7000, devPtr, value, count, stream);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv_pt, devPtr, count, value, count, 1, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemset2D(void *devPtr, size_t pitch, int value,
                                          size_t width, size_t height) {
  RT_ENTER(cudaMemset2D, v3020, devPtr, pitch, value, width, height);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv, devPtr, pitch, value, width, height, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemset2D_ptds(void *devPtr, size_t pitch,
                                               int value, size_t width,
                                               size_t height) {
  RT_ENTER(cudaMemset2D_ptds, v7000, devPtr, pitch, value, width, height);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv_pt, devPtr, pitch, value, width, height, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemset2DAsync(void *devPtr, size_t pitch,
                                               int value, size_t width,
                                               size_t height,
                                               cudaStream_t stream) {
  RT_ENTER(cudaMemset2DAsync, v3020, devPtr, pitch, value, width, height,
           stream);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv, devPtr, pitch, value, width, height, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch,
                                                    int value, size_t width,
                                                    size_t height,
                                                    cudaStream_t stream) {
  RT_ENTER(cudaMemset2DAsync_ptsz, v7000, devPtr, pitch, value, width, height,
           stream);
  RT_NEED_CTX();
  RT_RETURN(set2d(&gp_drv_pt, devPtr, pitch, value, width, height, stream));
}

RT_API cudaError_t CUDARTAPI cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr,
                                          int value, struct cudaExtent extent) {
  RT_ENTER(cudaMemset3D, v3020, pitchedDevPtr, value, extent);
  RT_NEED_CTX();
  RT_RETURN(set3d(&gp_drv, pitchedDevPtr, value, extent, SYNC));
}

RT_API cudaError_t CUDARTAPI cudaMemset3D_ptds(
    struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent) {
  RT_ENTER(cudaMemset3D_ptds, v7000, pitchedDevPtr, value, extent);
  RT_NEED_CTX();
  RT_RETURN(set3d(&gp_drv_pt, pitchedDevPtr, value, extent, SYNC));
}

RT_API cudaError_t CUDARTAPI
cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value,
                  struct cudaExtent extent, cudaStream_t stream) {
  RT_ENTER(cudaMemset3DAsync, v3020, pitchedDevPtr, value, extent, stream);
  RT_NEED_CTX();
  RT_RETURN(set3d(&gp_drv, pitchedDevPtr, value, extent, stream));
}

RT_API cudaError_t CUDARTAPI
cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value,
                       struct cudaExtent extent, cudaStream_t stream) {
  RT_ENTER(cudaMemset3DAsync_ptsz, v7000, pitchedDevPtr, value, extent, stream);
  RT_NEED_CTX();
  RT_RETURN(set3d(&gp_drv_pt, pitchedDevPtr, value, extent, stream));
}
