/* Simulated driver: CUDA arrays and mipmapped arrays. An array is a
 * device allocation of Width x max(Height,1) x max(Depth,1) elements
 * (rows contiguous, no padding), rounded up to 512 bytes like every
 * allocation; copies to and from it are timed like copies of that many
 * bytes and carry the ARRAY memory kind. A mipmapped array is one such
 * array per level. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

#define ARRAY_MAGIC 0x61727279u
#define MIPMAP_MAGIC 0x6d69706du

struct sim_mipmap;

typedef struct sim_array {
  uint32_t magic;
  struct sim_array *next;
  int dev;
  uintptr_t base;
  CUDA_ARRAY3D_DESCRIPTOR desc;
  size_t row, rows, bytes;
  struct sim_mipmap *owner; /* the mipmap it is a level of, or NULL */
} sim_array;

typedef struct sim_mipmap {
  uint32_t magic;
  struct sim_mipmap *next;
  int dev;
  unsigned levels;
  sim_array **level;
} sim_mipmap;

static sim_array *arrays;   /* under gp_lock */
static sim_mipmap *mipmaps; /* under gp_lock */

static size_t format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
    return 4;
  default:
    return 0; /* block-compressed, planar ... are not simulated */
  }
}

/* Element size, bytes per row, rows per slice and total bytes, or false
 * for a descriptor the simulation rejects. */
static bool layout(const CUDA_ARRAY3D_DESCRIPTOR *d, size_t *row, size_t *rows,
                   size_t *bytes) {
  size_t e = format_bytes(d->Format);
  if (!e || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
    return false;
  if (!d->Width || (d->Depth && !d->Height)) return false;
  if (d->Width > 1u << 20 || d->Height > 1u << 20 || d->Depth > 1u << 20)
    return false;
  *row = d->Width * e * d->NumChannels;
  *rows = d->Height ? d->Height : 1;
  *bytes = *row * *rows * (d->Depth ? d->Depth : 1);
  return true;
}

static sim_array *find_array(CUarray h) {
  for (sim_array *a = arrays; a; a = a->next)
    if ((CUarray)a == h) return a;
  return NULL;
}

static sim_mipmap *find_mipmap(CUmipmappedArray h) {
  for (sim_mipmap *m = mipmaps; m; m = m->next)
    if ((CUmipmappedArray)m == h) return m;
  return NULL;
}

/* Under gp_lock. */
static CUresult array_new(int dev, const CUDA_ARRAY3D_DESCRIPTOR *d,
                          sim_mipmap *owner, sim_array **out) {
  size_t row, rows, bytes;
  if (!layout(d, &row, &rows, &bytes)) return CUDA_ERROR_INVALID_VALUE;
  sim_array *a = calloc(1, sizeof *a);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = gp_dev_alloc(dev, bytes, true, &a->base);
  if (r != CUDA_SUCCESS) {
    free(a);
    return r;
  }
  a->magic = ARRAY_MAGIC;
  a->dev = dev;
  a->desc = *d;
  a->row = row, a->rows = rows, a->bytes = bytes;
  a->owner = owner;
  a->next = arrays;
  arrays = a;
  *out = a;
  return CUDA_SUCCESS;
}

static void array_unlink(sim_array *a, bool release) {
  for (sim_array **p = &arrays; *p; p = &(*p)->next) {
    if (*p == a) {
      *p = a->next;
      break;
    }
  }
  if (release) gp_dev_free_array(a->dev, a->base);
  a->magic = 0;
  free(a);
}

static void mipmap_free(sim_mipmap *m, bool release) {
  for (sim_mipmap **p = &mipmaps; *p; p = &(*p)->next) {
    if (*p == m) {
      *p = m->next;
      break;
    }
  }
  for (unsigned i = 0; i < m->levels; i++)
    if (m->level[i]) array_unlink(m->level[i], release);
  free(m->level);
  m->magic = 0;
  free(m);
}

void gp_device_reset_arrays(int dev) {
  for (sim_mipmap *m = mipmaps, *n; m; m = n) {
    n = m->next;
    if (m->dev == dev) mipmap_free(m, false);
  }
  for (sim_array *a = arrays, *n; a; a = n) {
    n = a->next;
    if (a->dev == dev) array_unlink(a, false);
  }
}

bool gp_array_span(CUarray h, uintptr_t *base, size_t *row, size_t *rows,
                   size_t *bytes) {
  pthread_mutex_lock(&gp_lock);
  sim_array *a = find_array(h);
  if (a) *base = a->base, *row = a->row, *rows = a->rows, *bytes = a->bytes;
  pthread_mutex_unlock(&gp_lock);
  return a != NULL;
}

static CUresult create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d) {
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!out || !d) return CUDA_ERROR_INVALID_VALUE;
  sim_array *a = NULL;
  pthread_mutex_lock(&gp_lock);
  r = array_new(c->dev, d, NULL, &a);
  pthread_mutex_unlock(&gp_lock);
  *out = r == CUDA_SUCCESS ? (CUarray)a : NULL;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *p) {
  DRV_ENTER(cuArrayCreate_v2, pHandle, p);
  if (!p) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY3D_DESCRIPTOR d = {p->Width,  p->Height,      0,
                               p->Format, p->NumChannels, 0};
  DRV_RETURN(create(pHandle, &d));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *p) {
  DRV_ENTER(cuArray3DCreate_v2, pHandle, p);
  DRV_RETURN(create(pHandle, p));
}

/* Levels of a mipmap are destroyed with it, not on their own. */
GPUSIM_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray) {
  DRV_ENTER(cuArrayDestroy, hArray);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_array *a = find_array(hArray);
  CUresult r = !a         ? CUDA_ERROR_INVALID_HANDLE
               : a->owner ? CUDA_ERROR_INVALID_VALUE
                          : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) array_unlink(a, true);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

static CUresult descriptor(CUDA_ARRAY3D_DESCRIPTOR *out, CUarray h) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&gp_lock);
  sim_array *a = find_array(h);
  if (a) *out = a->desc;
  pthread_mutex_unlock(&gp_lock);
  return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *p, CUarray hArray) {
  DRV_ENTER(cuArray3DGetDescriptor_v2, p, hArray);
  DRV_RETURN(descriptor(p, hArray));
}

GPUSIM_EXPORT CUresult CUDAAPI cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *p,
                                                       CUarray hArray) {
  DRV_ENTER(cuArrayGetDescriptor_v2, p, hArray);
  CUDA_ARRAY3D_DESCRIPTOR d;
  CUresult r = descriptor(p ? &d : NULL, hArray);
  if (r == CUDA_SUCCESS) {
    p->Width = d.Width, p->Height = d.Height;
    p->Format = d.Format, p->NumChannels = d.NumChannels;
  }
  DRV_RETURN(r);
}

/* Level l has each non-zero extent halved l times (at least 1). */
static size_t halve(size_t v, unsigned l) {
  if (!v) return 0;
  v >>= l;
  return v ? v : 1;
}

static CUresult mipmap_create(CUmipmappedArray *out,
                              const CUDA_ARRAY3D_DESCRIPTOR *d,
                              unsigned levels) {
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!out || !d || !levels) return CUDA_ERROR_INVALID_VALUE;
  size_t biggest = d->Width > d->Height ? d->Width : d->Height;
  if (d->Depth > biggest) biggest = d->Depth;
  unsigned max_levels = 1;
  while (biggest >> max_levels)
    max_levels++;
  if (levels > max_levels) return CUDA_ERROR_INVALID_VALUE;
  sim_mipmap *m = calloc(1, sizeof *m);
  if (!m || !(m->level = calloc(levels, sizeof *m->level))) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->magic = MIPMAP_MAGIC;
  m->dev = c->dev;
  m->levels = levels;
  pthread_mutex_lock(&gp_lock);
  m->next = mipmaps;
  mipmaps = m;
  for (unsigned l = 0; l < levels && r == CUDA_SUCCESS; l++) {
    CUDA_ARRAY3D_DESCRIPTOR ld = *d;
    ld.Width = halve(d->Width, l);
    ld.Height = halve(d->Height, l);
    ld.Depth = halve(d->Depth, l);
    r = array_new(c->dev, &ld, m, &m->level[l]);
  }
  if (r != CUDA_SUCCESS) mipmap_free(m, true);
  pthread_mutex_unlock(&gp_lock);
  *out = r == CUDA_SUCCESS ? (CUmipmappedArray)m : NULL;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                       const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                       unsigned int numMipmapLevels) {
  DRV_ENTER(cuMipmappedArrayCreate, pHandle, pMipmappedArrayDesc,
            numMipmapLevels);
  DRV_RETURN(mipmap_create(pHandle, pMipmappedArrayDesc, numMipmapLevels));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                         unsigned int level) {
  DRV_ENTER(cuMipmappedArrayGetLevel, pLevelArray, hMipmappedArray, level);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pLevelArray) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  sim_mipmap *m = find_mipmap(hMipmappedArray);
  CUresult r = !m                   ? CUDA_ERROR_INVALID_HANDLE
               : level >= m->levels ? CUDA_ERROR_INVALID_VALUE
                                    : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS) *pLevelArray = (CUarray)m->level[level];
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  DRV_ENTER(cuMipmappedArrayDestroy, hMipmappedArray);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  sim_mipmap *m = find_mipmap(hMipmappedArray);
  if (m) mipmap_free(m, true);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

/* ---- copies between arrays and linear memory (byte offsets into the
 * array's rows, which are contiguous) ---- */

static CUresult array_end(CUarray h, size_t off, size_t n, uintptr_t *p) {
  uintptr_t base;
  size_t row, rows, bytes;
  if (!gp_array_span(h, &base, &row, &rows, &bytes))
    return CUDA_ERROR_INVALID_HANDLE;
  if (off > bytes || n > bytes - off) return CUDA_ERROR_INVALID_VALUE;
  *p = base + off;
  return CUDA_SUCCESS;
}

/* dst/src: a linear address, or (when the array handle is set) an array
 * and the byte offset in it. */
static CUresult acopy(CUarray da, uintptr_t dst, CUarray sa, uintptr_t src,
                      size_t n, CUstream h, bool pt, bool async) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = CUDA_SUCCESS;
  if (da) r = array_end(da, dst, n, &dst);
  if (r == CUDA_SUCCESS && sa) r = array_end(sa, src, n, &src);
  if (r != CUDA_SUCCESS) return r;
  sim_copy q = {dst, src, n, n, n, h, pt, async, false};
  return gp_copy(&q);
}

#define HP(p) ((uintptr_t)(p))

/* Synchronous copies and their _ptds twins. */
#define ACOPY_SYNC(name, params, args, da, dst, sa, src, n)                    \
  GPUSIM_EXPORT CUresult CUDAAPI name params {                                 \
    DRV_ENTER(name, UNPAREN_A args);                                           \
    DRV_RETURN(acopy(da, dst, sa, src, n, NULL, false, false));                \
  }                                                                            \
  GPUSIM_EXPORT CUresult CUDAAPI name##_ptds params;                           \
  GPUSIM_EXPORT CUresult CUDAAPI name##_ptds params {                          \
    DRV_ENTER(name##_ptds, UNPAREN_A args);                                    \
    DRV_RETURN(acopy(da, dst, sa, src, n, NULL, true, false));                 \
  }
#define ACOPY_ASYNC(name, params, args, da, dst, sa, src, n, h)                \
  GPUSIM_EXPORT CUresult CUDAAPI name params {                                 \
    DRV_ENTER(name, UNPAREN_A args);                                           \
    DRV_RETURN(acopy(da, dst, sa, src, n, h, false, true));                    \
  }                                                                            \
  GPUSIM_EXPORT CUresult CUDAAPI name##_ptsz params;                           \
  GPUSIM_EXPORT CUresult CUDAAPI name##_ptsz params {                          \
    DRV_ENTER(name##_ptsz, UNPAREN_A args);                                    \
    DRV_RETURN(acopy(da, dst, sa, src, n, h, true, true));                     \
  }
#define UNPAREN_A(...) __VA_ARGS__

ACOPY_SYNC(cuMemcpyHtoA_v2,
           (CUarray dstArray, size_t dstOffset, const void *srcHost,
            size_t ByteCount),
           (dstArray, dstOffset, srcHost, ByteCount), dstArray, dstOffset, NULL,
           HP(srcHost), ByteCount)
ACOPY_SYNC(cuMemcpyAtoH_v2,
           (void *dstHost, CUarray srcArray, size_t srcOffset,
            size_t ByteCount),
           (dstHost, srcArray, srcOffset, ByteCount), NULL, HP(dstHost),
           srcArray, srcOffset, ByteCount)
ACOPY_SYNC(cuMemcpyDtoA_v2,
           (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
            size_t ByteCount),
           (dstArray, dstOffset, srcDevice, ByteCount), dstArray, dstOffset,
           NULL, HP(srcDevice), ByteCount)
ACOPY_SYNC(cuMemcpyAtoD_v2,
           (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
            size_t ByteCount),
           (dstDevice, srcArray, srcOffset, ByteCount), NULL, HP(dstDevice),
           srcArray, srcOffset, ByteCount)
ACOPY_SYNC(cuMemcpyAtoA_v2,
           (CUarray dstArray, size_t dstOffset, CUarray srcArray,
            size_t srcOffset, size_t ByteCount),
           (dstArray, dstOffset, srcArray, srcOffset, ByteCount), dstArray,
           dstOffset, srcArray, srcOffset, ByteCount)
ACOPY_ASYNC(cuMemcpyHtoAAsync_v2,
            (CUarray dstArray, size_t dstOffset, const void *srcHost,
             size_t ByteCount, CUstream hStream),
            (dstArray, dstOffset, srcHost, ByteCount, hStream), dstArray,
            dstOffset, NULL, HP(srcHost), ByteCount, hStream)
ACOPY_ASYNC(cuMemcpyAtoHAsync_v2,
            (void *dstHost, CUarray srcArray, size_t srcOffset,
             size_t ByteCount, CUstream hStream),
            (dstHost, srcArray, srcOffset, ByteCount, hStream), NULL,
            HP(dstHost), srcArray, srcOffset, ByteCount, hStream)
