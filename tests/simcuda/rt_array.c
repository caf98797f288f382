/* Simulated runtime: CUDA arrays, mipmapped arrays and copies to and
 * from them, through the driver's cuArray*, cuMipmappedArray* and
 * cuMemcpy2D (README.md, "Arrays"). */
#include "rt.h"

typedef enum cudaMemcpyKind kind_t;

/* A channel descriptor as a driver format and channel count: 1, 2 or 4
 * channels of equal width, signed, unsigned or float. */
static cudaError_t to_format(const struct cudaChannelFormatDesc *c,
                             CUarray_format *f, unsigned *channels) {
  if (!c) return cudaErrorInvalidValue;
  int bits[4] = {c->x, c->y, c->z, c->w};
  unsigned n = 0;
  while (n < 4 && bits[n] > 0)
    n++;
  for (unsigned i = n; i < 4; i++)
    if (bits[i]) return cudaErrorInvalidChannelDescriptor;
  for (unsigned i = 1; i < n; i++)
    if (bits[i] != bits[0]) return cudaErrorInvalidChannelDescriptor;
  if (n == 0 || n == 3) return cudaErrorInvalidChannelDescriptor;
  *channels = n;
  switch (c->f) {
  case cudaChannelFormatKindSigned:
    *f = bits[0] == 8    ? CU_AD_FORMAT_SIGNED_INT8
         : bits[0] == 16 ? CU_AD_FORMAT_SIGNED_INT16
         : bits[0] == 32 ? CU_AD_FORMAT_SIGNED_INT32
                         : 0;
    break;
  case cudaChannelFormatKindUnsigned:
    *f = bits[0] == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
         : bits[0] == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
         : bits[0] == 32 ? CU_AD_FORMAT_UNSIGNED_INT32
                         : 0;
    break;
  case cudaChannelFormatKindFloat:
    *f = bits[0] == 16   ? CU_AD_FORMAT_HALF
         : bits[0] == 32 ? CU_AD_FORMAT_FLOAT
                         : 0;
    break;
  default:
    *f = 0;
    break;
  }
  return *f ? cudaSuccess : cudaErrorInvalidChannelDescriptor;
}

static cudaError_t descriptor(CUDA_ARRAY3D_DESCRIPTOR *d,
                              const struct cudaChannelFormatDesc *c,
                              struct cudaExtent e, unsigned flags) {
  CUarray_format f;
  unsigned n;
  cudaError_t err = to_format(c, &f, &n);
  if (err != cudaSuccess) return err;
  *d = (CUDA_ARRAY3D_DESCRIPTOR){e.width, e.height, e.depth, f, n, flags};
  return cudaSuccess;
}

RT_API cudaError_t CUDARTAPI
cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                size_t width, size_t height, unsigned int flags) {
  RT_ENTER(cudaMallocArray, v3020, array, desc, width, height, flags);
  RT_NEED_CTX();
  if (!array) RT_RETURN(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  cudaError_t e =
      descriptor(&d, desc, (struct cudaExtent){width, height, 0}, flags);
  if (e != cudaSuccess) RT_RETURN(e);
  RT_RETURN(DRV(gp_drv, arr_create, (CUarray *)array, &d));
}

RT_API cudaError_t CUDARTAPI
cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                  struct cudaExtent extent, unsigned int flags) {
  RT_ENTER(cudaMalloc3DArray, v3020, array, desc, extent, flags);
  RT_NEED_CTX();
  if (!array) RT_RETURN(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  cudaError_t e = descriptor(&d, desc, extent, flags);
  if (e != cudaSuccess) RT_RETURN(e);
  RT_RETURN(DRV(gp_drv, arr_create, (CUarray *)array, &d));
}

RT_API cudaError_t CUDARTAPI cudaMallocMipmappedArray(
    cudaMipmappedArray_t *mipmappedArray,
    const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
    unsigned int numLevels, unsigned int flags) {
  RT_ENTER(cudaMallocMipmappedArray, v5000, mipmappedArray, desc, extent,
           numLevels, flags);
  RT_NEED_CTX();
  if (!mipmappedArray) RT_RETURN(cudaErrorInvalidValue);
  CUDA_ARRAY3D_DESCRIPTOR d;
  cudaError_t e = descriptor(&d, desc, extent, flags);
  if (e != cudaSuccess) RT_RETURN(e);
  RT_RETURN(DRV(gp_drv, mip_create, (CUmipmappedArray *)mipmappedArray, &d,
                numLevels));
}

RT_API cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array) {
  RT_ENTER(cudaFreeArray, v3020, array);
  RT_NEED_CTX();
  if (!array) RT_RETURN(cudaSuccess);
  RT_RETURN(DRV(gp_drv, arr_destroy, (CUarray)array));
}

RT_API cudaError_t CUDARTAPI
cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  RT_ENTER(cudaFreeMipmappedArray, v5000, mipmappedArray);
  RT_NEED_CTX();
  if (!mipmappedArray) RT_RETURN(cudaSuccess);
  RT_RETURN(DRV(gp_drv, mip_destroy, (CUmipmappedArray)mipmappedArray));
}

RT_API cudaError_t CUDARTAPI cudaGetMipmappedArrayLevel(
    cudaArray_t *levelArray, cudaMipmappedArray_const_t mipmappedArray,
    unsigned int level) {
  RT_ENTER(cudaGetMipmappedArrayLevel, v5000, levelArray, mipmappedArray,
           level);
  RT_NEED_CTX();
  RT_RETURN(DRV(gp_drv, mip_level, (CUarray *)levelArray,
                (CUmipmappedArray)mipmappedArray, level));
}

static unsigned format_bits(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return 8;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 16;
  default:
    return 32;
  }
}

cudaError_t gp_rt_array_elem(cudaArray_const_t a, size_t *elem) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  cudaError_t e = DRV(gp_drv, arr_desc, &d, (CUarray)a);
  if (e == cudaSuccess) *elem = format_bits(d.Format) / 8 * d.NumChannels;
  return e;
}

RT_API cudaError_t CUDARTAPI
cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent,
                 unsigned int *flags, cudaArray_t array) {
  RT_ENTER(cudaArrayGetInfo, v4010, desc, extent, flags, array);
  RT_NEED_CTX();
  CUDA_ARRAY3D_DESCRIPTOR d;
  cudaError_t e = DRV(gp_drv, arr_desc, &d, (CUarray)array);
  if (e != cudaSuccess) RT_RETURN(e);
  if (desc) {
    int b = (int)format_bits(d.Format);
    *desc = (struct cudaChannelFormatDesc){
        b, d.NumChannels > 1 ? b : 0, d.NumChannels > 2 ? b : 0,
        d.NumChannels > 3 ? b : 0,
        d.Format == CU_AD_FORMAT_HALF || d.Format == CU_AD_FORMAT_FLOAT
            ? cudaChannelFormatKindFloat
        : d.Format == CU_AD_FORMAT_SIGNED_INT8 ||
                d.Format == CU_AD_FORMAT_SIGNED_INT16 ||
                d.Format == CU_AD_FORMAT_SIGNED_INT32
            ? cudaChannelFormatKindSigned
            : cudaChannelFormatKindUnsigned};
  }
  if (extent) *extent = (struct cudaExtent){d.Width, d.Height, d.Depth};
  if (flags) *flags = d.Flags;
  RT_RETURN(cudaSuccess);
}

/* ---- copies: one pitched driver copy each, the array side given by its
 * handle (its rows are contiguous), the other side's direction inferred
 * from the pointer ---- */

#define SYNC ((cudaStream_t)(intptr_t)-1)

typedef struct end {
  cudaArray_const_t array;
  const void *ptr;
  size_t pitch, x, y;
} end;

static void set_end(const end *e, CUmemorytype *t, const void **host,
                    CUdeviceptr *dev, CUarray *arr, size_t *pitch, size_t *x,
                    size_t *y) {
  *t = e->array ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_UNIFIED;
  *host = e->ptr;
  *dev = (CUdeviceptr)e->ptr;
  *arr = (CUarray)e->array;
  *pitch = e->pitch;
  *x = e->x;
  *y = e->y;
}

static cudaError_t acopy(const rt_driver *d, end dst, end src, size_t width,
                         size_t height, kind_t k, cudaStream_t s) {
  if (k < cudaMemcpyHostToHost || k > cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  if (!width || !height) return cudaSuccess;
  CUDA_MEMCPY2D p = {0};
  set_end(&src, &p.srcMemoryType, &p.srcHost, &p.srcDevice, &p.srcArray,
          &p.srcPitch, &p.srcXInBytes, &p.srcY);
  set_end(&dst, &p.dstMemoryType, (const void **)&p.dstHost, &p.dstDevice,
          &p.dstArray, &p.dstPitch, &p.dstXInBytes, &p.dstY);
  p.WidthInBytes = width;
  p.Height = height;
  return gp_rt_error(s == SYNC ? d->copy2d(&p) : d->copy2d_async(&p, s));
}

#define AR(a, x, y) ((end){(a), NULL, 0, (x), (y)})
/* (w, h) of an array as a byte offset from its start, for the 1D forms */
#define LINAR(a, w, h) AR(a, linear(a, w, h), 0)

static size_t linear(cudaArray_const_t a, size_t w, size_t h) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  size_t e;
  if (!h || gp_rt_array_elem(a, &e) != cudaSuccess ||
      gp_drv.arr_desc(&d, (CUarray)a) != CUDA_SUCCESS)
    return w;
  return h * d.Width * e + w;
}
#define LIN(p, pitch) ((end){NULL, (p), (pitch), 0, 0})

/* An entry point and its per-thread twin (ptver: _ptds for synchronous
 * copies, _ptsz for async ones), which differ in the driver table. */
#define ACOPY(name, ver, tw, twver, params, args, call)                        \
  RT_API cudaError_t CUDARTAPI name params {                                   \
    RT_ENTER(name, ver, UNPAREN args);                                         \
    RT_NEED_CTX();                                                             \
    const rt_driver *d = &gp_drv;                                              \
    RT_RETURN(call);                                                           \
  }                                                                            \
  RT_API cudaError_t CUDARTAPI name##tw params;                                \
  RT_API cudaError_t CUDARTAPI name##tw params {                               \
    RT_ENTER(name##tw, twver, UNPAREN args);                                   \
    RT_NEED_CTX();                                                             \
    const rt_driver *d = &gp_drv_pt;                                           \
    RT_RETURN(call);                                                           \
  }

ACOPY(cudaMemcpy2DToArray, v3020, _ptds, v7000,
      (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
       size_t spitch, size_t width, size_t height, kind_t kind),
      (dst, wOffset, hOffset, src, spitch, width, height, kind),
      acopy(d, AR(dst, wOffset, hOffset), LIN(src, spitch), width, height, kind,
            SYNC))
ACOPY(cudaMemcpy2DToArrayAsync, v3020, _ptsz, v7000,
      (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
       size_t spitch, size_t width, size_t height, kind_t kind,
       cudaStream_t stream),
      (dst, wOffset, hOffset, src, spitch, width, height, kind, stream),
      acopy(d, AR(dst, wOffset, hOffset), LIN(src, spitch), width, height, kind,
            stream))
ACOPY(cudaMemcpy2DFromArray, v3020, _ptds, v7000,
      (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
       size_t hOffset, size_t width, size_t height, kind_t kind),
      (dst, dpitch, src, wOffset, hOffset, width, height, kind),
      acopy(d, LIN(dst, dpitch), AR(src, wOffset, hOffset), width, height, kind,
            SYNC))
ACOPY(cudaMemcpy2DFromArrayAsync, v3020, _ptsz, v7000,
      (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
       size_t hOffset, size_t width, size_t height, kind_t kind,
       cudaStream_t stream),
      (dst, dpitch, src, wOffset, hOffset, width, height, kind, stream),
      acopy(d, LIN(dst, dpitch), AR(src, wOffset, hOffset), width, height, kind,
            stream))
ACOPY(cudaMemcpy2DArrayToArray, v3020, _ptds, v7000,
      (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
       cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
       size_t width, size_t height, kind_t kind),
      (dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height,
       kind),
      acopy(d, AR(dst, wOffsetDst, hOffsetDst), AR(src, wOffsetSrc, hOffsetSrc),
            width, height, kind, SYNC))
/* The deprecated 1D forms copy `count` bytes from (wOffset, hOffset) on,
 * across rows: one row of `count` bytes in the array's linear layout. */
ACOPY(cudaMemcpyToArray, v3020, _ptds, v7000,
      (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
       size_t count, kind_t kind),
      (dst, wOffset, hOffset, src, count, kind),
      acopy(d, LINAR(dst, wOffset, hOffset), LIN(src, 0), count, 1, kind, SYNC))
ACOPY(cudaMemcpyToArrayAsync, v3020, _ptsz, v7000,
      (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
       size_t count, kind_t kind, cudaStream_t stream),
      (dst, wOffset, hOffset, src, count, kind, stream),
      acopy(d, LINAR(dst, wOffset, hOffset), LIN(src, 0), count, 1, kind,
            stream))
ACOPY(cudaMemcpyFromArray, v3020, _ptds, v7000,
      (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
       size_t count, kind_t kind),
      (dst, src, wOffset, hOffset, count, kind),
      acopy(d, LIN(dst, 0), LINAR(src, wOffset, hOffset), count, 1, kind, SYNC))
ACOPY(cudaMemcpyFromArrayAsync, v3020, _ptsz, v7000,
      (void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
       size_t count, kind_t kind, cudaStream_t stream),
      (dst, src, wOffset, hOffset, count, kind, stream),
      acopy(d, LIN(dst, 0), LINAR(src, wOffset, hOffset), count, 1, kind,
            stream))
ACOPY(cudaMemcpyArrayToArray, v3020, _ptds, v7000,
      (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
       cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
       size_t count, kind_t kind),
      (dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, count, kind),
      acopy(d, LINAR(dst, wOffsetDst, hOffsetDst),
            LINAR(src, wOffsetSrc, hOffsetSrc), count, 1, kind, SYNC))
