/* Simulated driver: device, managed and pinned host memory. Device
 * addresses come from a PROT_NONE reservation per device and are never
 * backed: the simulation moves no data. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "drv.h"

static sim_ranges managed; /* real host memory, counted on its device */
static sim_ranges pinned;  /* cuMemAllocHost/cuMemHostAlloc/registered */

/* Index of the first range whose base is > p. */
static size_t upper(const sim_ranges *r, uintptr_t p) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->v[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static sim_alloc *containing(const sim_ranges *r, uintptr_t p) {
  size_t i = upper(r, p);
  if (i == 0) return NULL;
  sim_alloc *a = &r->v[i - 1];
  return p - a->base < a->size ? a : NULL;
}

static bool insert_at(sim_ranges *r, size_t i, sim_alloc a) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    sim_alloc *v = realloc(r->v, cap * sizeof *v);
    if (!v) return false;
    r->v = v;
    r->cap = cap;
  }
  memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
  r->v[i] = a;
  r->n++;
  return true;
}

static void remove_at(sim_ranges *r, size_t i) {
  memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof *r->v);
  r->n--;
}

/* Exact base match, as cuMemFree and friends require. */
static ptrdiff_t find_base(const sim_ranges *r, uintptr_t p) {
  size_t i = upper(r, p);
  return i > 0 && r->v[i - 1].base == p ? (ptrdiff_t)i - 1 : -1;
}

static size_t round_up(size_t n) {
  return (n + GP_ALIGN - 1) / GP_ALIGN * GP_ALIGN;
}

/* First fit in the device's reservation, so freed addresses are reused. */
static CUresult dev_alloc(int d, size_t bytes, uintptr_t *out) {
  return gp_dev_alloc(d, bytes, false, out);
}

CUresult gp_dev_alloc(int d, size_t bytes, bool array, uintptr_t *out) {
  sim_device *dev = &gp_dev[d];
  size_t size = round_up(bytes);
  if (size < bytes || size > gp_cfg.mem_bytes - dev->used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t cand = dev->va_base;
  size_t i = 0;
  for (; i < dev->allocs.n; i++) {
    if (cand + size <= dev->allocs.v[i].base) break;
    cand = dev->allocs.v[i].base + dev->allocs.v[i].size;
  }
  if (cand + size > dev->va_base + dev->va_size)
    return CUDA_ERROR_OUT_OF_MEMORY;
  sim_alloc a = {.base = cand, .size = size, .dev = d, .owned = true,
                 .array = array};
  if (!insert_at(&dev->allocs, i, a)) return CUDA_ERROR_OUT_OF_MEMORY;
  dev->used += size;
  *out = cand;
  return CUDA_SUCCESS;
}

static CUresult managed_alloc(int d, size_t bytes, uintptr_t *out) {
  size_t size = round_up(bytes);
  if (size < bytes || size > gp_cfg.mem_bytes - gp_dev[d].used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_alloc a = {.base = (uintptr_t)p, .size = size, .dev = d, .owned = true};
  if (!insert_at(&managed, upper(&managed, a.base), a)) {
    munmap(p, size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  gp_dev[d].used += size;
  *out = (uintptr_t)p;
  return CUDA_SUCCESS;
}

static int dev_of(uintptr_t p) {
  for (int d = 0; d < gp_cfg.devices; d++)
    if (p - gp_dev[d].va_base < gp_dev[d].va_size) return d;
  return -1;
}

/* Frees p; *dev gets its device. */
static CUresult mem_free(uintptr_t p, int *dev) {
  int d = dev_of(p);
  *dev = d;
  if (d >= 0) {
    ptrdiff_t i = find_base(&gp_dev[d].allocs, p);
    if (i < 0 || gp_dev[d].allocs.v[i].array) return CUDA_ERROR_INVALID_VALUE;
    if (gp_graph_mem_is(p)) { /* unmapped; the range stays reserved */
      if (!gp_graph_mem_live(p)) return CUDA_ERROR_INVALID_VALUE;
      gp_graph_mem_unmap(p);
      return CUDA_SUCCESS;
    }
    gp_dev[d].used -= gp_dev[d].allocs.v[i].size;
    if (gp_dev[d].allocs.v[i].pooled)
      gp_dev[d].pool.used -= gp_dev[d].allocs.v[i].size;
    remove_at(&gp_dev[d].allocs, (size_t)i);
    return CUDA_SUCCESS;
  }
  ptrdiff_t i = find_base(&managed, p);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  sim_alloc a = managed.v[i];
  *dev = a.dev;
  gp_dev[a.dev].used -= a.size;
  munmap((void *)a.base, a.size);
  remove_at(&managed, (size_t)i);
  return CUDA_SUCCESS;
}

void gp_dev_free_array(int d, uintptr_t p) {
  ptrdiff_t i = find_base(&gp_dev[d].allocs, p);
  if (i < 0 || !gp_dev[d].allocs.v[i].array) return;
  gp_dev[d].used -= gp_dev[d].allocs.v[i].size;
  remove_at(&gp_dev[d].allocs, (size_t)i);
}

sim_where gp_where(uintptr_t p) {
  sim_where w = {CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, -1};
  sim_alloc *a;
  if ((w.dev = dev_of(p)) >= 0) {
    a = containing(&gp_dev[w.dev].allocs, p);
    w.kind = a && a->array ? CUPTI_ACTIVITY_MEMORY_KIND_ARRAY
                           : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  }
  else if ((a = containing(&managed, p)))
    w.kind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, w.dev = a->dev;
  else if (containing(&pinned, p))
    w.kind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  return w;
}

sim_alloc *gp_find_managed(uintptr_t p) {
  return containing(&managed, p);
}

const sim_alloc *gp_find_alloc(uintptr_t p) {
  int d = dev_of(p);
  if (d >= 0) return containing(&gp_dev[d].allocs, p);
  const sim_alloc *a = containing(&managed, p);
  return a ? a : containing(&pinned, p);
}

/* Graph allocations: the range is carved at node creation (an entry of
 * the device's allocations, so nothing else gets its addresses) and kept
 * for the process, or until a device reset; only while mapped (live)
 * does it count against the device. */
typedef struct graph_range {
  uintptr_t base;
  size_t size;
  int dev;
  bool live;
} graph_range;

static graph_range *granges;
static size_t ngranges, granges_cap;

CUresult gp_graph_mem_reserve(int d, size_t bytes, uintptr_t *out) {
  if (ngranges == granges_cap) {
    size_t cap = granges_cap ? granges_cap * 2 : 8;
    graph_range *v = realloc(granges, cap * sizeof *v);
    if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
    granges = v;
    granges_cap = cap;
  }
  CUresult r = dev_alloc(d, bytes, out);
  if (r != CUDA_SUCCESS) return r;
  size_t size = containing(&gp_dev[d].allocs, *out)->size;
  gp_dev[d].used -= size;
  granges[ngranges++] = (graph_range){*out, size, d, false};
  return CUDA_SUCCESS;
}

static graph_range *grange(uintptr_t p) {
  for (size_t i = 0; i < ngranges; i++)
    if (granges[i].base == p) return &granges[i];
  return NULL;
}

bool gp_graph_mem_is(uintptr_t p) {
  return grange(p) != NULL;
}

bool gp_graph_mem_live(uintptr_t p) {
  const graph_range *a = grange(p);
  return a && a->live;
}

CUresult gp_graph_mem_map(uintptr_t p) {
  graph_range *a = grange(p);
  if (!a || a->live) return CUDA_ERROR_INVALID_VALUE;
  if (a->size > gp_cfg.mem_bytes - gp_dev[a->dev].used)
    return CUDA_ERROR_OUT_OF_MEMORY;
  a->live = true;
  gp_dev[a->dev].used += a->size;
  return CUDA_SUCCESS;
}

void gp_graph_mem_unmap(uintptr_t p) {
  graph_range *a = grange(p);
  if (!a || !a->live) return;
  a->live = false;
  gp_dev[a->dev].used -= a->size;
}

CUresult gp_dev_free(uintptr_t p) {
  int d;
  return mem_free(p, &d);
}

void gp_device_reset_mem(int d) {
  gp_device_reset_arrays(d);
  gp_dev[d].allocs.n = 0;
  for (size_t i = ngranges; i-- > 0;)
    if (granges[i].dev == d) granges[i] = granges[--ngranges];
  gp_dev[d].pool.used = 0;
  gp_dev[d].used = 0;
  for (size_t i = managed.n; i-- > 0;) {
    if (managed.v[i].dev == d) {
      munmap((void *)managed.v[i].base, managed.v[i].size);
      remove_at(&managed, i);
    }
  }
}

static CUresult host_alloc(size_t bytes, void **out) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_alloc a = {.base = (uintptr_t)p, .size = bytes ? bytes : 1, .dev = -1,
                 .owned = true};
  if (!insert_at(&pinned, upper(&pinned, a.base), a)) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = p;
  return CUDA_SUCCESS;
}

static CUresult host_free(void *p, bool owned) {
  ptrdiff_t i = find_base(&pinned, (uintptr_t)p);
  if (i < 0 || pinned.v[i].owned != owned)
    return owned ? CUDA_ERROR_INVALID_VALUE
                 : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  remove_at(&pinned, (size_t)i);
  if (owned) free(p);
  return CUDA_SUCCESS;
}

static CUresult host_register(void *p, size_t bytes) {
  uintptr_t b = (uintptr_t)p;
  if (!p || !bytes || b + bytes < b) return CUDA_ERROR_INVALID_VALUE;
  size_t i = upper(&pinned, b);
  if ((i > 0 && b - pinned.v[i - 1].base < pinned.v[i - 1].size) ||
      (i < pinned.n && pinned.v[i].base < b + bytes))
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  sim_alloc a = {.base = b, .size = bytes, .dev = -1};
  return insert_at(&pinned, i, a) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ---- exported entry points ---- */

/* Allocation on the current context's device, under the lock. */
static CUresult alloc_current(CUdeviceptr *dptr, size_t bytes, bool mgd) {
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || !bytes) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  pthread_mutex_lock(&gp_lock);
  r = mgd ? managed_alloc(c->dev, bytes, &p) : dev_alloc(c->dev, bytes, &p);
  pthread_mutex_unlock(&gp_lock);
  *dptr = r == CUDA_SUCCESS ? (CUdeviceptr)p : 0;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  DRV_ENTER(cuMemAlloc_v2, dptr, bytes);
  DRV_RETURN(alloc_current(dptr, bytes, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr,
                                                 size_t bytes,
                                                 unsigned int flags) {
  DRV_ENTER(cuMemAllocManaged, dptr, bytes, flags);
  DRV_RETURN(alloc_current(dptr, bytes, true));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                   size_t Height, unsigned int ElementSizeBytes) {
  DRV_ENTER(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height,
            ElementSizeBytes);
  if (!pPitch || !WidthInBytes || !Height ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
       ElementSizeBytes != 16))
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  size_t pitch = round_up(WidthInBytes);
  if (Height > SIZE_MAX / pitch) DRV_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
  CUresult r = alloc_current(dptr, pitch * Height, false);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  DRV_ENTER(cuMemFree_v2, dptr);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!dptr) DRV_RETURN(CUDA_SUCCESS);
  /* as CUDA's: the call returns once the device's work is done */
  int d = -1;
  pthread_mutex_lock(&gp_lock);
  CUresult r = mem_free((uintptr_t)dptr, &d);
  uint64_t until = r == CUDA_SUCCESS && d >= 0 ? gp_device_tail(d) : 0;
  pthread_mutex_unlock(&gp_lock);
  gp_sleep_until(until);
  DRV_RETURN(r);
}

/* Stream-ordered allocation is immediate in the simulation: the memory
 * exists from the call on and is released at the free call. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream h,
                            bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptr || !bytes) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  uintptr_t p = 0;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS) r = dev_alloc(s->dev, bytes, &p);
  if (r == CUDA_SUCCESS) {
    sim_device *dev = &gp_dev[s->dev];
    sim_alloc *a = containing(&dev->allocs, p);
    a->pooled = true;
    dev->pool.used += a->size;
    if (dev->pool.used > dev->pool.used_high)
      dev->pool.used_high = dev->pool.used;
    if (dev->pool.used > dev->pool.reserved_high)
      dev->pool.reserved_high = dev->pool.used;
  }
  pthread_mutex_unlock(&gp_lock);
  *dptr = (CUdeviceptr)p;
  return r;
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  int d;
  if (r == CUDA_SUCCESS) r = mem_free((uintptr_t)dptr, &d);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr,
                                               size_t bytesize,
                                               CUstream hStream) {
  DRV_ENTER(cuMemAllocAsync, dptr, bytesize, hStream);
  DRV_RETURN(alloc_async(dptr, bytesize, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
                                                    size_t bytesize,
                                                    CUstream hStream) {
  DRV_ENTER(cuMemAllocAsync_ptsz, dptr, bytesize, hStream);
  DRV_RETURN(alloc_async(dptr, bytesize, hStream, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
                                                       size_t bytesize,
                                                       CUmemoryPool pool,
                                                       CUstream hStream) {
  DRV_ENTER(cuMemAllocFromPoolAsync, dptr, bytesize, pool, hStream);
  DRV_RETURN(alloc_async(dptr, bytesize, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
                                                            size_t bytesize,
                                                            CUmemoryPool pool,
                                                            CUstream hStream) {
  DRV_ENTER(cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, hStream);
  DRV_RETURN(alloc_async(dptr, bytesize, hStream, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr,
                                              CUstream hStream) {
  DRV_ENTER(cuMemFreeAsync, dptr, hStream);
  DRV_RETURN(free_async(dptr, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr,
                                                   CUstream hStream) {
  DRV_ENTER(cuMemFreeAsync_ptsz, dptr, hStream);
  DRV_RETURN(free_async(dptr, hStream, true));
}

/* Memory pools are not simulated beyond a per-device handle that
 * cuMemAllocFromPoolAsync accepts. */
static int pool_tokens[GPUSIM_MAX_DEVICES];

int gp_pool_device(CUmemoryPool pool) {
  for (int d = 0; d < gp_cfg.devices; d++)
    if (pool == (CUmemoryPool)&pool_tokens[d]) return d;
  return -1;
}

static CUresult pool_of(CUmemoryPool *pool, CUdevice dev) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= gp_cfg.devices) return CUDA_ERROR_INVALID_DEVICE;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  *pool = (CUmemoryPool)&pool_tokens[dev];
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool,
                                                         CUdevice dev) {
  DRV_ENTER(cuDeviceGetDefaultMemPool, pool, dev);
  DRV_RETURN(pool_of(pool, dev));
}

GPUSIM_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool,
                                                  CUdevice dev) {
  DRV_ENTER(cuDeviceGetMemPool, pool, dev);
  DRV_RETURN(pool_of(pool, dev));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_, size_t *total) {
  DRV_ENTER(cuMemGetInfo_v2, free_, total);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) DRV_RETURN(r);
  if (!free_ || !total) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  *free_ = gp_cfg.mem_bytes - gp_dev[c->dev].used;
  *total = gp_cfg.mem_bytes;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(CUDA_SUCCESS);
}

static CUresult host_op(int op, void *p, size_t n, void **out) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  CUresult r;
  switch (op) {
  case 0:
    r = host_alloc(n, out);
    break;
  case 1:
    r = host_free(p, true);
    break;
  case 2:
    r = host_register(p, n);
    break;
  default:
    r = host_free(p, false);
    break;
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize) {
  DRV_ENTER(cuMemAllocHost_v2, pp, bytesize);
  if (!pp) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  DRV_RETURN(host_op(0, NULL, bytesize, pp));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize,
                                              unsigned int Flags) {
  DRV_ENTER(cuMemHostAlloc, pp, bytesize, Flags);
  if (!pp) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  DRV_RETURN(host_op(0, NULL, bytesize, pp));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
  DRV_ENTER(cuMemFreeHost, p);
  DRV_RETURN(host_op(1, p, 0, NULL));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize,
                                                    unsigned int Flags) {
  DRV_ENTER(cuMemHostRegister_v2, p, bytesize, Flags);
  DRV_RETURN(host_op(2, p, bytesize, NULL));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p) {
  DRV_ENTER(cuMemHostUnregister, p);
  DRV_RETURN(host_op(3, p, 0, NULL));
}

/* Unified addressing: pinned memory is device-accessible at its host
 * address. */
GPUSIM_EXPORT CUresult CUDAAPI
cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
  DRV_ENTER(cuMemHostGetDevicePointer_v2, pdptr, p, Flags);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!pdptr || Flags) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  bool ok = containing(&pinned, (uintptr_t)p) != NULL;
  pthread_mutex_unlock(&gp_lock);
  *pdptr = ok ? (CUdeviceptr)p : 0;
  DRV_RETURN(ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase,
                                                       size_t *psize,
                                                       CUdeviceptr dptr) {
  DRV_ENTER(cuMemGetAddressRange_v2, pbase, psize, dptr);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  int d = dev_of((uintptr_t)dptr);
  const sim_alloc *a =
      d >= 0 ? containing(&gp_dev[d].allocs, dptr) : containing(&managed, dptr);
  if (a && pbase) *pbase = a->base;
  if (a && psize) *psize = a->size;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(a ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND);
}

/* Answers one pointer attribute; false when the pointer is unknown to the
 * simulation (pageable host memory) or the attribute is not modelled. */
static bool pointer_attr(void *data, CUpointer_attribute attr, uintptr_t p) {
  int d = dev_of(p);
  const sim_alloc *a = d >= 0 ? containing(&gp_dev[d].allocs, p) : NULL;
  bool mgd = false, host = false;
  if (d < 0 && (a = containing(&managed, p)))
    mgd = true, d = a->dev;
  else if (d < 0 && (a = containing(&pinned, p)))
    host = true;
  if (!a && d < 0) return false;
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = host ? NULL : (CUcontext)&gp_dev[d].ctx;
    return true;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    return true;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    *(CUdeviceptr *)data = (CUdeviceptr)p;
    return true;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)data = host || mgd ? (void *)p : NULL;
    return host || mgd;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(unsigned *)data = mgd;
    return true;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = host ? 0 : d;
    return true;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = a ? (CUdeviceptr)a->base : 0;
    return a != NULL;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = a ? a->size : 0;
    return a != NULL;
  case CU_POINTER_ATTRIBUTE_MAPPED:
    *(unsigned *)data = a != NULL;
    return true;
  default:
    return false;
  }
}

GPUSIM_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data,
                                                     CUpointer_attribute attr,
                                                     CUdeviceptr ptr) {
  DRV_ENTER(cuPointerGetAttribute, data, attr, ptr);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!data) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  bool ok = pointer_attr(data, attr, (uintptr_t)ptr);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* Like the real driver, unknown pointers are not an error here: their
 * attributes read as zero. Every modelled attribute is at most 8 bytes. */
GPUSIM_EXPORT CUresult CUDAAPI cuPointerGetAttributes(
    unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
    CUdeviceptr ptr) {
  DRV_ENTER(cuPointerGetAttributes, numAttributes, attributes, data, ptr);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!attributes || !data) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  for (unsigned i = 0; i < numAttributes; i++) {
    uint64_t v = 0;
    if (!data[i]) continue;
    if (!pointer_attr(&v, attributes[i], (uintptr_t)ptr)) v = 0;
    switch (attributes[i]) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_MAPPED:
      memcpy(data[i], &v, sizeof(unsigned));
      break;
    default:
      memcpy(data[i], &v, sizeof(void *));
      break;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(CUDA_SUCCESS);
}
