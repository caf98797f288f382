/* Simulated driver: memory copies and memsets. The direction is always
 * inferred from where the pointers live (unified addressing), whatever
 * entry point was used; no byte is moved. */
#include <string.h>

#include "drv.h"

static bool on_device(int kind) {
  return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
}

/* Device-side ranges must lie inside one live allocation. */
static bool range_ok(uintptr_t p, sim_where w, uint64_t extent) {
  if (!on_device(w.kind)) return p != 0;
  const sim_alloc *a = gp_find_alloc(p);
  return a && extent <= a->base + a->size - p;
}

static void memcpy_record(const sim_copy *q, const sim_op *op, int kind,
                          sim_where ws, sim_where wd) {
  if (!gp_activity_on(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
  CUpti_ActivityMemcpy6 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = (uint8_t)kind;
  m.srcKind = (uint8_t)ws.kind;
  m.dstKind = (uint8_t)wd.kind;
  m.flags = q->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
  m.bytes = q->bytes;
  m.start = gp_ts(op->start);
  m.end = gp_ts(op->end);
  m.deviceId = (uint32_t)op->dev;
  m.contextId = op->ctx_id;
  m.streamId = op->stream_id;
  m.correlationId = gp_corr();
  m.runtimeCorrelationId = gp_runtime_corr();
  m.copyCount = 1;
  m.graphId = op->graph_id;
  m.graphNodeId = op->graph_node_id;
  gp_emit(&m, sizeof m);
}

static void peer_record(const sim_copy *q, const sim_op *op, sim_where ws,
                        sim_where wd) {
  if (!gp_activity_on(CUPTI_ACTIVITY_KIND_MEMCPY2)) return;
  CUpti_ActivityMemcpyPtoP4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = (uint8_t)ws.kind;
  m.dstKind = (uint8_t)wd.kind;
  m.flags = q->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
  m.bytes = q->bytes;
  m.start = gp_ts(op->start);
  m.end = gp_ts(op->end);
  m.deviceId = (uint32_t)op->dev;
  m.contextId = op->ctx_id;
  m.streamId = op->stream_id;
  m.srcDeviceId = (uint32_t)ws.dev;
  m.srcContextId = gp_dev[ws.dev].ctx.id;
  m.dstDeviceId = (uint32_t)wd.dev;
  m.dstContextId = gp_dev[wd.dev].ctx.id;
  m.correlationId = gp_corr();
  m.graphId = op->graph_id;
  m.graphNodeId = op->graph_node_id;
  gp_emit(&m, sizeof m);
}

static int copy_kind(sim_where ws, sim_where wd) {
  bool sd = on_device(ws.kind), dd = on_device(wd.kind);
  bool sa = ws.kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  bool da = wd.kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  if (sd && dd && ws.dev != wd.dev) return CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  if (sa || da) {
    if (sa && da) return CUPTI_ACTIVITY_MEMCPY_KIND_ATOA;
    if (sa) return dd ? CUPTI_ACTIVITY_MEMCPY_KIND_ATOD
                      : CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
    return sd ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOA
              : CUPTI_ACTIVITY_MEMCPY_KIND_HTOA;
  }
  if (sd && dd) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (sd) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  return dd ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

int gp_copy_plan(const sim_copy *q, sim_where *ws, sim_where *wd,
                 uint64_t *dur) {
  *ws = gp_where(q->src);
  *wd = gp_where(q->dst);
  int kind = copy_kind(*ws, *wd);
  bool hbm = on_device(ws->kind) && on_device(wd->kind);
  *dur = gp_copy_ns(q->bytes, hbm ? gp_cfg.hbm_mbps : gp_cfg.pcie_mbps);
  return kind;
}

void gp_copy_record(const sim_copy *q, const sim_op *op, int kind, sim_where ws,
                    sim_where wd) {
  gp_counters_copy(kind, op, q->bytes);
  if (kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP)
    peer_record(q, op, ws, wd);
  else
    memcpy_record(q, op, kind, ws, wd);
}

static bool is_host(int kind) {
  return kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

static bool is_dev(int kind) {
  return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
}

/* Schedules the copy (or captures it); synchronous copies (but from
 * device memory to device memory: CUDA's do not synchronise with the
 * host), copies touching pageable memory and copies from host memory to
 * host memory (CUDA's are synchronous, even the Async ones) return only
 * once the simulated copy has ended. */
static CUresult do_copy(const sim_copy *q) {
  return gp_copy(q);
}

CUresult gp_copy(const sim_copy *q) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (q->bytes == 0) return CUDA_SUCCESS;
  sim_stream *s;
  sim_op op;
  sim_where ws, wd;
  uint64_t dur;
  bool run = false;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(q->stream, q->pt, &s);
  int kind = gp_copy_plan(q, &ws, &wd, &dur);
  if (r == CUDA_SUCCESS && (!range_ok(q->src, ws, q->src_extent) ||
                            !range_ok(q->dst, wd, q->dst_extent)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->capture && !q->async) {
    gp_capture_break(s); /* a synchronous copy cannot be captured */
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (r == CUDA_SUCCESS && !q->async &&
             (r = gp_capture_unsafe()) != CUDA_SUCCESS) {
    /* forbidden while a capture is active (drv_graph.c) */
  } else if (r == CUDA_SUCCESS && s->capture) {
    sim_node n = {.kind = NODE_COPY, .u.c = *q};
    r = gp_capture(s, &n);
  } else if (r == CUDA_SUCCESS) {
    /* a peer copy of cudaMemcpyPeer: after the three devices' work, and
     * before any of theirs issued later (their barrier) */
    const int devs[3] = {s->dev, ws.dev, wd.dev};
    for (int i = 0; q->serial && i < 3; i++)
      if (devs[i] >= 0) {
        uint64_t t = gp_device_tail(devs[i]);
        if (t > s->tail) s->tail = t;
      }
    gp_schedule(s, dur, &op);
    for (int i = 0; q->serial && i < 3; i++)
      if (devs[i] >= 0)
        if (op.end > gp_dev[devs[i]].barrier) gp_dev[devs[i]].barrier = op.end;
    run = true;
  }
  pthread_mutex_unlock(&gp_lock);
  if (!run) return r;
  gp_copy_record(q, &op, kind, ws, wd);
  if ((!q->async && !q->serial && !(is_dev(ws.kind) && is_dev(wd.kind))) ||
      ws.kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
      wd.kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
      (is_host(ws.kind) && is_host(wd.kind)))
    gp_sleep_until(op.end);
  return CUDA_SUCCESS;
}

static CUresult copy1d(CUdeviceptr dst, const void *srcp, CUdeviceptr src,
                       size_t n, CUstream h, bool pt, bool async) {
  uintptr_t s = srcp ? (uintptr_t)srcp : (uintptr_t)src;
  sim_copy q = {(uintptr_t)dst, s, n, n, n, h, pt, async, false};
  return do_copy(&q);
}

#define HOSTPTR(p) ((CUdeviceptr)(uintptr_t)(p))

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src,
                                        size_t n) {
  DRV_ENTER(cuMemcpy, dst, src, n);
  DRV_RETURN(copy1d(dst, NULL, src, n, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src,
                                             size_t n) {
  DRV_ENTER(cuMemcpy_ptds, dst, src, n);
  DRV_RETURN(copy1d(dst, NULL, src, n, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                             size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyAsync, dst, src, n, h);
  DRV_RETURN(copy1d(dst, NULL, src, n, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst,
                                                  CUdeviceptr src, size_t n,
                                                  CUstream h) {
  DRV_ENTER(cuMemcpyAsync_ptsz, dst, src, n, h);
  DRV_RETURN(copy1d(dst, NULL, src, n, h, true, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                               size_t n) {
  DRV_ENTER(cuMemcpyHtoD_v2, dst, src, n);
  DRV_RETURN(copy1d(dst, src, 0, n, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst,
                                                    const void *src, size_t n) {
  DRV_ENTER(cuMemcpyHtoD_v2_ptds, dst, src, n);
  DRV_RETURN(copy1d(dst, src, 0, n, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src,
                                               size_t n) {
  DRV_ENTER(cuMemcpyDtoH_v2, dst, src, n);
  DRV_RETURN(copy1d(HOSTPTR(dst), NULL, src, n, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src,
                                                    size_t n) {
  DRV_ENTER(cuMemcpyDtoH_v2_ptds, dst, src, n);
  DRV_RETURN(copy1d(HOSTPTR(dst), NULL, src, n, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
                                               size_t n) {
  DRV_ENTER(cuMemcpyDtoD_v2, dst, src, n);
  DRV_RETURN(copy1d(dst, NULL, src, n, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst,
                                                    CUdeviceptr src, size_t n) {
  DRV_ENTER(cuMemcpyDtoD_v2_ptds, dst, src, n);
  DRV_RETURN(copy1d(dst, NULL, src, n, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst,
                                                    const void *src, size_t n,
                                                    CUstream h) {
  DRV_ENTER(cuMemcpyHtoDAsync_v2, dst, src, n, h);
  DRV_RETURN(copy1d(dst, src, 0, n, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst,
                                                         const void *src,
                                                         size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyHtoDAsync_v2_ptsz, dst, src, n, h);
  DRV_RETURN(copy1d(dst, src, 0, n, h, true, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
                                                    size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyDtoHAsync_v2, dst, src, n, h);
  DRV_RETURN(copy1d(HOSTPTR(dst), NULL, src, n, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dst,
                                                         CUdeviceptr src,
                                                         size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyDtoHAsync_v2_ptsz, dst, src, n, h);
  DRV_RETURN(copy1d(HOSTPTR(dst), NULL, src, n, h, true, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst,
                                                    CUdeviceptr src, size_t n,
                                                    CUstream h) {
  DRV_ENTER(cuMemcpyDtoDAsync_v2, dst, src, n, h);
  DRV_RETURN(copy1d(dst, NULL, src, n, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst,
                                                         CUdeviceptr src,
                                                         size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyDtoDAsync_v2_ptsz, dst, src, n, h);
  DRV_RETURN(copy1d(dst, NULL, src, n, h, true, true));
}

/* Peer copies: the contexts only name the devices, which the pointers
 * already identify. */
static CUresult peer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                     CUcontext sc, size_t n, CUstream h, bool pt, bool async) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!gp_ctx_lookup(dc) || !gp_ctx_lookup(sc))
    return CUDA_ERROR_INVALID_CONTEXT;
  sim_copy q = {(uintptr_t)dst, (uintptr_t)src, n, n, n, h, pt, async, !async};
  return do_copy(&q);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc,
                                            CUdeviceptr src, CUcontext sc,
                                            size_t n) {
  DRV_ENTER(cuMemcpyPeer, dst, dc, src, sc, n);
  DRV_RETURN(peer(dst, dc, src, sc, n, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dc,
                                                 CUdeviceptr src, CUcontext sc,
                                                 size_t n) {
  DRV_ENTER(cuMemcpyPeer_ptds, dst, dc, src, sc, n);
  DRV_RETURN(peer(dst, dc, src, sc, n, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc,
                                                 CUdeviceptr src, CUcontext sc,
                                                 size_t n, CUstream h) {
  DRV_ENTER(cuMemcpyPeerAsync, dst, dc, src, sc, n, h);
  DRV_RETURN(peer(dst, dc, src, sc, n, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst,
                                                      CUcontext dc,
                                                      CUdeviceptr src,
                                                      CUcontext sc, size_t n,
                                                      CUstream h) {
  DRV_ENTER(cuMemcpyPeerAsync_ptsz, dst, dc, src, sc, n, h);
  DRV_RETURN(peer(dst, dc, src, sc, n, h, true, true));
}

/* Address of one side of a pitched copy; arrays are not simulated. */
/* One end of a pitched copy; an array brings its own row pitch and rows
 * per slice. */
static CUresult side(CUmemorytype t, const void *host, CUdeviceptr dev,
                     CUarray arr, uintptr_t *out, size_t *pitch, size_t *rows,
                     size_t *bytes) {
  *bytes = 0;
  if (t == CU_MEMORYTYPE_HOST)
    *out = (uintptr_t)host;
  else if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED)
    *out = (uintptr_t)dev;
  else if (t == CU_MEMORYTYPE_ARRAY)
    return gp_array_span(arr, out, pitch, rows, bytes)
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_HANDLE;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static uint64_t extent(size_t pitch, size_t width, size_t rows) {
  return rows ? (uint64_t)(rows - 1) * pitch + width : 0;
}

/* An array end must stay inside the array's own bytes. */
static bool in_array(uintptr_t base, size_t bytes, uintptr_t p,
                     uint64_t extent) {
  return !bytes || (p - base <= bytes && extent <= bytes - (p - base));
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream h, bool pt,
                       bool async) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  sim_copy q = {0,  0,    (uint64_t)p->WidthInBytes * p->Height, 0, 0, h,
                pt, async, false};
  size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  size_t rows, sb, db;
  CUresult r = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                    &q.src, &sp, &rows, &sb);
  if (r == CUDA_SUCCESS)
    r = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &q.dst,
             &dp, &rows, &db);
  if (r != CUDA_SUCCESS) return r;
  uintptr_t s0 = q.src, d0 = q.dst;
  /* one row of an array is a linear run across its rows (the runtime's
   * 1D array copies); it must still lie inside the array */
  bool run = p->Height == 1;
  if ((sp < p->WidthInBytes && !(run && sb)) ||
      (dp < p->WidthInBytes && !(run && db)))
    return CUDA_ERROR_INVALID_VALUE;
  q.src += p->srcY * sp + p->srcXInBytes;
  q.dst += p->dstY * dp + p->dstXInBytes;
  q.src_extent = extent(sp, p->WidthInBytes, p->Height);
  q.dst_extent = extent(dp, p->WidthInBytes, p->Height);
  if (!in_array(s0, sb, q.src, q.src_extent) ||
      !in_array(d0, db, q.dst, q.dst_extent))
    return CUDA_ERROR_INVALID_VALUE;
  return do_copy(&q);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) {
  DRV_ENTER(cuMemcpy2D_v2, pCopy);
  DRV_RETURN(copy2d(pCopy, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
  DRV_ENTER(cuMemcpy2D_v2_ptds, pCopy);
  DRV_RETURN(copy2d(pCopy, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
  DRV_ENTER(cuMemcpy2DUnaligned_v2, pCopy);
  DRV_RETURN(copy2d(pCopy, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
  DRV_ENTER(cuMemcpy2DUnaligned_v2_ptds, pCopy);
  DRV_RETURN(copy2d(pCopy, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy,
                                                  CUstream h) {
  DRV_ENTER(cuMemcpy2DAsync_v2, pCopy, h);
  DRV_RETURN(copy2d(pCopy, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream h) {
  DRV_ENTER(cuMemcpy2DAsync_v2_ptsz, pCopy, h);
  DRV_RETURN(copy2d(pCopy, h, true, true));
}

/* The copy a CUDA_MEMCPY3D describes (also a graph memcpy node's). */
CUresult gp_copy3d_params(const CUDA_MEMCPY3D *p, sim_copy *out) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  uint64_t bytes = (uint64_t)p->WidthInBytes * p->Height * p->Depth;
  sim_copy q = {0, 0, bytes, 0, 0, NULL, false, true, false};
  size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  size_t sh = p->srcHeight ? p->srcHeight : p->Height;
  size_t dh = p->dstHeight ? p->dstHeight : p->Height;
  size_t sb, db;
  CUresult r = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                    &q.src, &sp, &sh, &sb);
  if (r == CUDA_SUCCESS)
    r = side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &q.dst,
             &dp, &dh, &db);
  if (r != CUDA_SUCCESS) return r;
  uintptr_t s0 = q.src, d0 = q.dst;
  if (sp < p->WidthInBytes || dp < p->WidthInBytes || sh < p->Height ||
      dh < p->Height)
    return CUDA_ERROR_INVALID_VALUE;
  q.src += (p->srcZ * sh + p->srcY) * sp + p->srcXInBytes;
  q.dst += (p->dstZ * dh + p->dstY) * dp + p->dstXInBytes;
  q.src_extent = extent(sp, p->WidthInBytes,
                        p->Depth ? (p->Depth - 1) * sh + p->Height : 0);
  q.dst_extent = extent(dp, p->WidthInBytes,
                        p->Depth ? (p->Depth - 1) * dh + p->Height : 0);
  if (!in_array(s0, sb, q.src, q.src_extent) ||
      !in_array(d0, db, q.dst, q.dst_extent))
    return CUDA_ERROR_INVALID_VALUE;
  *out = q;
  return CUDA_SUCCESS;
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream h, bool pt,
                       bool async) {
  sim_copy q;
  CUresult r = gp_copy3d_params(p, &q);
  if (r != CUDA_SUCCESS) return r;
  q.stream = h;
  q.pt = pt;
  q.async = async;
  return do_copy(&q);
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) {
  DRV_ENTER(cuMemcpy3D_v2, pCopy);
  DRV_RETURN(copy3d(pCopy, NULL, false, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) {
  DRV_ENTER(cuMemcpy3D_v2_ptds, pCopy);
  DRV_RETURN(copy3d(pCopy, NULL, true, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy,
                                                  CUstream h) {
  DRV_ENTER(cuMemcpy3DAsync_v2, pCopy, h);
  DRV_RETURN(copy3d(pCopy, h, false, true));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream h) {
  DRV_ENTER(cuMemcpy3DAsync_v2_ptsz, pCopy, h);
  DRV_RETURN(copy3d(pCopy, h, true, true));
}

/* ---- memset ---- */

void gp_set_record(const sim_set *q, const sim_op *op, int kind) {
  gp_counters_set(op, q->bytes);
  if (!gp_activity_on(CUPTI_ACTIVITY_KIND_MEMSET)) return;
  CUpti_ActivityMemset4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = q->value;
  m.bytes = q->bytes;
  m.start = gp_ts(op->start);
  m.end = gp_ts(op->end);
  m.deviceId = (uint32_t)op->dev;
  m.contextId = op->ctx_id;
  m.streamId = op->stream_id;
  m.correlationId = gp_corr();
  m.flags = q->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
  m.memoryKind = (uint16_t)kind;
  m.graphId = op->graph_id;
  m.graphNodeId = op->graph_node_id;
  gp_emit(&m, sizeof m);
}

/* Memsets run at the device-to-device rate; they block the caller only
 * where CUDA's do (below). Pageable memory is refused. */
static CUresult do_memset(const sim_set *q) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (q->bytes == 0) return CUDA_SUCCESS;
  sim_stream *s;
  sim_op op;
  bool run = false;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(q->stream, q->pt, &s);
  sim_where w = gp_where(q->dst);
  if (r == CUDA_SUCCESS && (w.kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
                            !range_ok(q->dst, w, q->extent)))
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->capture) {
    sim_node n = {.kind = NODE_MEMSET, .u.m = *q};
    r = gp_capture(s, &n);
  } else if (r == CUDA_SUCCESS) {
    gp_schedule(s, gp_copy_ns(q->bytes, gp_cfg.hbm_mbps), &op);
    run = true;
  }
  pthread_mutex_unlock(&gp_lock);
  if (run) gp_set_record(q, &op, w.kind);
  /* a synchronous memset of pinned host or managed memory is synchronous
   * with the host, as CUDA's; of device memory it is not */
  if (run && !q->async && (w.kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ||
                           w.kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED))
    gp_sleep_until(op.end);
  return r;
}

static CUresult set1d(CUdeviceptr d, uint32_t v, size_t n, unsigned elem,
                      CUstream h, bool pt, bool async) {
  uint64_t bytes = (uint64_t)n * elem;
  sim_set q = {(uintptr_t)d, v, bytes, bytes, h, pt, async};
  return do_memset(&q);
}

static CUresult set2d(CUdeviceptr d, size_t pitch, uint32_t v, size_t w,
                      size_t rows, unsigned elem, CUstream h, bool pt,
                      bool async) {
  uint64_t wb = (uint64_t)w * elem;
  if (rows > 1 && pitch < wb) return CUDA_ERROR_INVALID_VALUE;
  sim_set q = {(uintptr_t)d, v,    wb * rows, extent(pitch, wb, rows), h,
               pt,           async};
  return do_memset(&q);
}

/* One exported memset entry point: name, extra parameters, call. */
#define SET1(name, T, elem, pt, async)                                         \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUdeviceptr d, T v, size_t n) {          \
    DRV_ENTER(name, d, v, n);                                                  \
    DRV_RETURN(set1d(d, v, n, elem, NULL, pt, async));                         \
  }
#define SET1A(name, T, elem, pt)                                               \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUdeviceptr d, T v, size_t n,            \
                                      CUstream h) {                            \
    DRV_ENTER(name, d, v, n, h);                                               \
    DRV_RETURN(set1d(d, v, n, elem, h, pt, true));                             \
  }
#define SET2(name, T, elem, pt)                                                \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUdeviceptr d, size_t p, T v, size_t w,  \
                                      size_t rows) {                           \
    DRV_ENTER(name, d, p, v, w, rows);                                         \
    DRV_RETURN(set2d(d, p, v, w, rows, elem, NULL, pt, false));                \
  }
#define SET2A(name, T, elem, pt)                                               \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUdeviceptr d, size_t p, T v, size_t w,  \
                                      size_t rows, CUstream h) {               \
    DRV_ENTER(name, d, p, v, w, rows, h);                                      \
    DRV_RETURN(set2d(d, p, v, w, rows, elem, h, pt, true));                    \
  }

SET1(cuMemsetD8_v2, unsigned char, 1, false, false)
SET1(cuMemsetD8_v2_ptds, unsigned char, 1, true, false)
SET1(cuMemsetD16_v2, unsigned short, 2, false, false)
SET1(cuMemsetD16_v2_ptds, unsigned short, 2, true, false)
SET1(cuMemsetD32_v2, unsigned int, 4, false, false)
SET1(cuMemsetD32_v2_ptds, unsigned int, 4, true, false)
SET1A(cuMemsetD8Async, unsigned char, 1, false)
SET1A(cuMemsetD8Async_ptsz, unsigned char, 1, true)
SET1A(cuMemsetD16Async, unsigned short, 2, false)
SET1A(cuMemsetD16Async_ptsz, unsigned short, 2, true)
SET1A(cuMemsetD32Async, unsigned int, 4, false)
SET1A(cuMemsetD32Async_ptsz, unsigned int, 4, true)
SET2(cuMemsetD2D8_v2, unsigned char, 1, false)
SET2(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
SET2(cuMemsetD2D16_v2, unsigned short, 2, false)
SET2(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
SET2(cuMemsetD2D32_v2, unsigned int, 4, false)
SET2(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
SET2A(cuMemsetD2D8Async, unsigned char, 1, false)
SET2A(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
SET2A(cuMemsetD2D16Async, unsigned short, 2, false)
SET2A(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
SET2A(cuMemsetD2D32Async, unsigned int, 4, false)
SET2A(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)
