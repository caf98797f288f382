/* Simulated driver: managed memory hints and migration (README.md,
 * "Managed memory"). Residence is not tracked: every prefetch moves its
 * whole range, as one host<->device copy on the stream. Advice and
 * attachment are kept per allocation and read back by
 * cuMemRangeGetAttribute. */
#include <string.h>

#include "drv.h"

/* A location as sim_alloc stores it (0 none, 1 host, 2 + d device d), or
 * -1 for one the simulation does not have. */
static int loc_code(CUmemLocation l) {
  switch (l.type) {
  case CU_MEM_LOCATION_TYPE_DEVICE:
    return l.id >= 0 && l.id < gp_cfg.devices ? 2 + l.id : -1;
  case CU_MEM_LOCATION_TYPE_HOST:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA:
  case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
    return 1;
  default:
    return -1;
  }
}

/* The managed allocation holding [p, p + n), under gp_lock. */
static sim_alloc *managed_range(CUdeviceptr p, size_t n) {
  sim_alloc *a = gp_find_managed((uintptr_t)p);
  if (!a || !n || n > a->base + a->size - (uintptr_t)p) return NULL;
  return a;
}

/* One prefetch, under gp_lock: schedules its copy on s and fills what its
 * record needs. */
static CUresult prefetch_one(sim_stream *s, CUdeviceptr p, size_t n,
                             CUmemLocation loc, sim_copy *q, sim_op *op,
                             int *kind) {
  sim_alloc *a = managed_range(p, n);
  int code = loc_code(loc);
  if (!a || code < 0) return CUDA_ERROR_INVALID_VALUE;
  a->last_prefetch = (uint8_t)code;
  *q = (sim_copy){(uintptr_t)p, (uintptr_t)p, n, n, n, NULL, false, true, false};
  *kind = code == 1 ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
                    : CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  gp_schedule(s, gp_copy_ns(n, gp_cfg.pcie_mbps), op);
  return CUDA_SUCCESS;
}

static void prefetch_record(const sim_copy *q, const sim_op *op, int kind,
                            int dev) {
  sim_where w = {CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, dev};
  gp_copy_record(q, op, kind, w, w);
}

/* n ranges; range i goes to locs[k] for the last k with idx[k] <= i
 * (idx NULL: locs[0] for all). Records are emitted after the lock. */
static CUresult prefetch(CUdeviceptr *ptrs, size_t *sizes, size_t n,
                         CUmemLocation *locs, size_t *idx, size_t nlocs,
                         unsigned long long flags, CUstream h, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ptrs || !sizes || !n || !locs || !nlocs || flags ||
      (nlocs > 1 && !idx) || (idx && idx[0] != 0))
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 1; idx && k < nlocs; k++)
    if (idx[k] <= idx[k - 1] || idx[k] >= n) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && s->capture) {
    gp_capture_break(s);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  /* all ranges are checked before any is issued */
  for (size_t i = 0, k = 0; r == CUDA_SUCCESS && i < n; i++) {
    while (idx && k + 1 < nlocs && idx[k + 1] <= i)
      k++;
    if (!managed_range(ptrs[i], sizes[i]) || loc_code(locs[k]) < 0)
      r = CUDA_ERROR_INVALID_VALUE;
  }
  pthread_mutex_unlock(&gp_lock);
  for (size_t i = 0, k = 0; r == CUDA_SUCCESS && i < n; i++) {
    while (idx && k + 1 < nlocs && idx[k + 1] <= i)
      k++;
    sim_copy q;
    sim_op op;
    int kind;
    pthread_mutex_lock(&gp_lock);
    r = gp_stream_get(h, pt, &s);
    if (r == CUDA_SUCCESS)
      r = prefetch_one(s, ptrs[i], sizes[i], locs[k], &q, &op, &kind);
    pthread_mutex_unlock(&gp_lock);
    if (r == CUDA_SUCCESS) prefetch_record(&q, &op, kind, op.dev);
  }
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr,
                                                     size_t count,
                                                     CUmemLocation location,
                                                     unsigned int flags,
                                                     CUstream hStream) {
  DRV_ENTER(cuMemPrefetchAsync_v2, devPtr, count, location, flags, hStream);
  DRV_RETURN(
      prefetch(&devPtr, &count, 1, &location, NULL, 1, flags, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(
    CUdeviceptr devPtr, size_t count, CUmemLocation location,
    unsigned int flags, CUstream hStream);
GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(
    CUdeviceptr devPtr, size_t count, CUmemLocation location,
    unsigned int flags, CUstream hStream) {
  DRV_ENTER(cuMemPrefetchAsync_v2_ptsz, devPtr, count, location, flags,
            hStream);
  DRV_RETURN(
      prefetch(&devPtr, &count, 1, &location, NULL, 1, flags, hStream, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync(
    CUdeviceptr *dptrs, size_t *sizes, size_t count,
    CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
    size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  DRV_ENTER(cuMemPrefetchBatchAsync, dptrs, sizes, count, prefetchLocs,
            prefetchLocIdxs, numPrefetchLocs, flags, hStream);
  DRV_RETURN(prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
                      numPrefetchLocs, flags, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync_ptsz(
    CUdeviceptr *dptrs, size_t *sizes, size_t count,
    CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
    size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
GPUSIM_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync_ptsz(
    CUdeviceptr *dptrs, size_t *sizes, size_t count,
    CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
    size_t numPrefetchLocs, unsigned long long flags, CUstream hStream) {
  DRV_ENTER(cuMemPrefetchBatchAsync_ptsz, dptrs, sizes, count, prefetchLocs,
            prefetchLocIdxs, numPrefetchLocs, flags, hStream);
  DRV_RETURN(prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
                      numPrefetchLocs, flags, hStream, true));
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise adv,
                       CUmemLocation loc) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  bool needs_loc = adv == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
                   adv == CU_MEM_ADVISE_SET_ACCESSED_BY ||
                   adv == CU_MEM_ADVISE_UNSET_ACCESSED_BY;
  int code = loc_code(loc);
  if (needs_loc && code < 0) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&gp_lock);
  sim_alloc *a = managed_range(p, n);
  CUresult r = a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  uint32_t bit = code > 0 ? 1u << (code - 1) : 0;
  if (a) {
    switch (adv) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
      a->read_mostly = true;
      break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      a->read_mostly = false;
      break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      a->preferred = (uint8_t)code;
      break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      a->preferred = 0;
      break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
      a->accessed_by |= bit;
      break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      a->accessed_by &= ~bit;
      break;
    default:
      r = CUDA_ERROR_INVALID_VALUE;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr devPtr, size_t count,
                                              CUmem_advise advice,
                                              CUmemLocation location) {
  DRV_ENTER(cuMemAdvise_v2, devPtr, count, advice, location);
  DRV_RETURN(advise(devPtr, count, advice, location));
}

/* Location codes as CUDA reports them: device ordinal, -1 (host) or -2
 * (none); and as type + id. */
static int loc_id(uint8_t code) {
  return code == 0 ? -2 : code == 1 ? -1 : code - 2;
}

static int loc_type(uint8_t code) {
  return code == 0   ? CU_MEM_LOCATION_TYPE_INVALID
         : code == 1 ? CU_MEM_LOCATION_TYPE_HOST
                     : CU_MEM_LOCATION_TYPE_DEVICE;
}

static CUresult range_attr(void *data, size_t size, CUmem_range_attribute at,
                           CUdeviceptr p, size_t n) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  sim_alloc *a = managed_range(p, n);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  int v;
  switch (at) {
  case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
    v = a->read_mostly;
    break;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
    v = loc_id(a->preferred);
    break;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
    v = loc_type(a->preferred);
    break;
  case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
    v = a->preferred >= 2 ? a->preferred - 2 : 0;
    break;
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
    v = loc_id(a->last_prefetch);
    break;
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
    v = loc_type(a->last_prefetch);
    break;
  case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
    v = a->last_prefetch >= 2 ? a->last_prefetch - 2 : 0;
    break;
  case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
    /* the devices (and -1 for the host) with the advice, then -2 */
    if (size % 4 || !size) return CUDA_ERROR_INVALID_VALUE;
    int *out = data;
    size_t k = 0, cap = size / 4;
    for (int b = 0; b < 1 + gp_cfg.devices && k < cap; b++)
      if (a->accessed_by & (1u << b)) out[k++] = b == 0 ? -1 : b - 1;
    while (k < cap)
      out[k++] = -2;
    return CUDA_SUCCESS;
  }
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (size != 4) return CUDA_ERROR_INVALID_VALUE;
  memcpy(data, &v, 4);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemRangeGetAttribute(
    void *data, size_t dataSize, CUmem_range_attribute attribute,
    CUdeviceptr devPtr, size_t count) {
  DRV_ENTER(cuMemRangeGetAttribute, data, dataSize, attribute, devPtr, count);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  CUresult r = range_attr(data, dataSize, attribute, devPtr, count);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemRangeGetAttributes(
    void **data, size_t *dataSizes, CUmem_range_attribute *attributes,
    size_t numAttributes, CUdeviceptr devPtr, size_t count) {
  DRV_ENTER(cuMemRangeGetAttributes, data, dataSizes, attributes, numAttributes,
            devPtr, count);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!data || !dataSizes || !attributes || !numAttributes)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&gp_lock);
  for (size_t i = 0; i < numAttributes && r == CUDA_SUCCESS; i++)
    r = range_attr(data[i], dataSizes[i], attributes[i], devPtr, count);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* Attachment is stream-ordered in CUDA; here it takes effect at the call
 * and costs no device time. length 0 means the whole allocation, which
 * dptr must then start. */
static CUresult attach(CUstream h, CUdeviceptr p, size_t n, unsigned flags,
                       bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
      flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  sim_alloc *a = gp_find_managed((uintptr_t)p);
  if (r == CUDA_SUCCESS && s->capture) {
    gp_capture_break(s);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (r == CUDA_SUCCESS &&
             (!a || (n == 0 ? a->base != (uintptr_t)p : !managed_range(p, n))))
    r = CUDA_ERROR_INVALID_VALUE;
  else if (r == CUDA_SUCCESS && flags == CU_MEM_ATTACH_SINGLE &&
           s->kind == STREAM_LEGACY)
    r = CUDA_ERROR_INVALID_VALUE; /* single needs a stream of its own */
  if (r == CUDA_SUCCESS) a->attach = (uint8_t)flags;
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream,
                                                      CUdeviceptr dptr,
                                                      size_t length,
                                                      unsigned int flags) {
  DRV_ENTER(cuStreamAttachMemAsync, hStream, dptr, length, flags);
  DRV_RETURN(attach(hStream, dptr, length, flags, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream hStream,
                                                           CUdeviceptr dptr,
                                                           size_t length,
                                                           unsigned int flags);
GPUSIM_EXPORT CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream hStream,
                                                           CUdeviceptr dptr,
                                                           size_t length,
                                                           unsigned int flags) {
  DRV_ENTER(cuStreamAttachMemAsync_ptsz, hStream, dptr, length, flags);
  DRV_RETURN(attach(hStream, dptr, length, flags, true));
}
