/* Simulated driver: streams, events and synchronisation. Nothing runs in
 * the background: every operation's start and end are computed when it
 * is issued, and waiting means sleeping until a computed time. */
#include <stdlib.h>

#include "drv.h"

static sim_event *events;
static uint32_t event_ids;

/* Per-thread default streams, one per device, created on first use and
 * retired when the thread exits. */
static __thread sim_stream *pt_streams[GPUSIM_MAX_DEVICES];
static pthread_key_t pt_key;
static pthread_once_t pt_once = PTHREAD_ONCE_INIT;

/* Destroyed streams' memory, handed out again last-in first-out (under
 * gp_lock): a new stream gets the handle of the stream destroyed last, as
 * a real driver's allocator may, so the handle alone never tells two
 * streams apart. At most FREE_MAX are kept. */
#define FREE_MAX 64
static sim_stream *free_streams[FREE_MAX];
static int nfree;

static uint64_t max64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* Streams that synchronise with the legacy stream both ways: user streams
 * but the non-blocking ones, and the per-thread default streams (CUDA's
 * "not a non-blocking stream"). */
static bool blocking(const sim_stream *s) {
  return (s->kind == STREAM_USER && !(s->flags & CU_STREAM_NON_BLOCKING)) ||
         s->kind == STREAM_PER_THREAD;
}

static void retire(sim_stream *s) {
  sim_device *dev = &gp_dev[s->dev];
  for (sim_stream **pp = &dev->streams; *pp; pp = &(*pp)->next) {
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  }
  dev->retired_all = max64(dev->retired_all, s->tail);
  if (blocking(s))
    dev->retired_blocking = max64(dev->retired_blocking, s->tail);
  gp_capture_drop(s);
  if (nfree < FREE_MAX)
    free_streams[nfree++] = s;
  else
    free(s);
}

static void pt_exit(void *unused) {
  (void)unused;
  pthread_mutex_lock(&gp_lock);
  for (int d = 0; d < GPUSIM_MAX_DEVICES; d++) {
    if (pt_streams[d]) retire(pt_streams[d]);
    pt_streams[d] = NULL;
  }
  pthread_mutex_unlock(&gp_lock);
}

static void pt_key_create(void) {
  pthread_key_create(&pt_key, pt_exit);
}

static sim_stream *new_stream(int dev, int kind, unsigned flags, int prio) {
  sim_stream *s = nfree ? free_streams[--nfree] : malloc(sizeof *s);
  if (!s) return NULL;
  *s = (sim_stream){0};
  s->dev = dev;
  s->kind = kind;
  s->flags = flags;
  s->priority = prio;
  s->id = gp_next_stream_id();
  s->next = gp_dev[dev].streams;
  gp_dev[dev].streams = s;
  return s;
}

static sim_stream *per_thread(int dev) {
  if (!pt_streams[dev]) {
    pthread_once(&pt_once, pt_key_create);
    pt_streams[dev] = new_stream(dev, STREAM_PER_THREAD, 0, 0);
    pthread_setspecific(pt_key, (void *)1);
  }
  return pt_streams[dev];
}

CUresult gp_stream_get(CUstream h, bool pt, sim_stream **out) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!h) h = pt ? GP_STREAM_PER_THREAD_HANDLE : GP_STREAM_LEGACY_HANDLE;
  if (h == GP_STREAM_LEGACY_HANDLE || h == GP_STREAM_PER_THREAD_HANDLE) {
    sim_ctx *c;
    CUresult r = gp_need_ctx(&c);
    if (r != CUDA_SUCCESS) return r;
    *out = h == GP_STREAM_LEGACY_HANDLE ? &gp_dev[c->dev].legacy
                                        : per_thread(c->dev);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (int d = 0; d < gp_cfg.devices; d++) {
    for (sim_stream *s = gp_dev[d].streams; s; s = s->next) {
      if ((CUstream)s == h && s->kind == STREAM_USER) {
        *out = s;
        return CUDA_SUCCESS;
      }
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

/* Earliest time new work on s may start: its own tail, plus the legacy
 * stream's implicit synchronisation with blocking streams both ways. */
uint64_t gp_stream_ready(const sim_stream *s) {
  const sim_device *dev = &gp_dev[s->dev];
  uint64_t t = s->tail;
  if (s->kind == STREAM_LEGACY) {
    for (const sim_stream *x = dev->streams; x; x = x->next)
      if (blocking(x)) t = max64(t, x->tail);
    t = max64(t, dev->retired_blocking);
  } else if (blocking(s)) {
    t = max64(t, dev->legacy.tail);
  }
  return max64(t, dev->barrier);
}

uint64_t gp_device_tail(int d) {
  const sim_device *dev = &gp_dev[d];
  uint64_t t = max64(max64(dev->legacy.tail, dev->retired_all), dev->barrier);
  for (const sim_stream *x = dev->streams; x; x = x->next)
    t = max64(t, x->tail);
  return t;
}

void gp_schedule(sim_stream *s, uint64_t dur, sim_op *op) {
  op->start = max64(gp_now(), gp_stream_ready(s));
  op->end = op->start + dur;
  s->tail = op->end;
  op->dev = s->dev;
  op->ctx_id = gp_dev[s->dev].ctx.id;
  op->stream_id = s->id;
  op->graph_id = 0;
  op->graph_node_id = 0;
}

/* Calls that a capture cannot record (synchronisation, events, host
 * functions) fail on a capturing stream and invalidate its capture, as
 * real CUDA does for the calls it does not allow during capture. */
static CUresult capture_refuses(sim_stream *s) {
  gp_capture_break(s);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* What a stream synchronisation waits for: the stream's work, and for
 * the legacy stream also what it implicitly waits for. */
static uint64_t stream_done(const sim_stream *s) {
  return s->kind == STREAM_LEGACY ? gp_stream_ready(s) : s->tail;
}

void gp_device_reset_streams(int d) {
  for (sim_stream *s = gp_dev[d].streams, *next; s; s = next) {
    next = s->next;
    if (s->kind == STREAM_USER) retire(s);
  }
  for (sim_event **pp = &events; *pp;) {
    sim_event *e = *pp;
    if (e->dev == d) {
      *pp = e->next;
      gp_event_forget(e);
      free(e);
    } else {
      pp = &e->next;
    }
  }
}

CUresult gp_event_get(CUevent h, sim_event **out) {
  for (sim_event *e = events; e; e = e->next) {
    if ((CUevent)e == h) {
      *out = e;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

/* ---- streams ---- */

static CUresult stream_create(CUstream *ph, unsigned flags, int prio) {
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  prio = prio > 0 ? 0 : prio < -5 ? -5 : prio;
  pthread_mutex_lock(&gp_lock);
  sim_stream *s = new_stream(c->dev, STREAM_USER, flags, prio);
  pthread_mutex_unlock(&gp_lock);
  *ph = (CUstream)s;
  return s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream,
                                              unsigned int Flags) {
  DRV_ENTER(cuStreamCreate, phStream, Flags);
  DRV_RETURN(stream_create(phStream, Flags, 0));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream,
                                                          unsigned int flags,
                                                          int priority) {
  DRV_ENTER(cuStreamCreateWithPriority, phStream, flags, priority);
  DRV_RETURN(stream_create(phStream, flags, priority));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  DRV_ENTER(cuStreamDestroy_v2, hStream);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r =
      hStream ? gp_stream_get(hStream, false, &s) : CUDA_ERROR_INVALID_HANDLE;
  if (r == CUDA_SUCCESS && s->kind != STREAM_USER)
    r = CUDA_ERROR_INVALID_HANDLE;
  if (r == CUDA_SUCCESS) retire(s);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* Reads one property of a stream under the lock. */
static CUresult stream_prop(CUstream h, bool pt, int which, void *out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && which == 0)
    *(unsigned *)out = s->flags;
  else if (r == CUDA_SUCCESS && which == 1)
    *(int *)out = s->priority;
  else if (r == CUDA_SUCCESS && which == 3)
    *(CUdevice *)out = s->dev;
  else if (r == CUDA_SUCCESS)
    *(unsigned long long *)out = s->id;
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream h, unsigned *flags) {
  DRV_ENTER(cuStreamGetFlags, h, flags);
  DRV_RETURN(stream_prop(h, false, 0, flags));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream h,
                                                     unsigned *flags) {
  DRV_ENTER(cuStreamGetFlags_ptsz, h, flags);
  DRV_RETURN(stream_prop(h, true, 0, flags));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream h, int *prio) {
  DRV_ENTER(cuStreamGetPriority, h, prio);
  DRV_RETURN(stream_prop(h, false, 1, prio));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream h, int *prio) {
  DRV_ENTER(cuStreamGetPriority_ptsz, h, prio);
  DRV_RETURN(stream_prop(h, true, 1, prio));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetId(CUstream h,
                                             unsigned long long *id) {
  DRV_ENTER(cuStreamGetId, h, id);
  DRV_RETURN(stream_prop(h, false, 2, id));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetId_ptsz(CUstream h,
                                                  unsigned long long *id) {
  DRV_ENTER(cuStreamGetId_ptsz, h, id);
  DRV_RETURN(stream_prop(h, true, 2, id));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetDevice(CUstream h, CUdevice *dev) {
  DRV_ENTER(cuStreamGetDevice, h, dev);
  DRV_RETURN(stream_prop(h, false, 3, dev));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream h,
                                                      CUdevice *dev) {
  DRV_ENTER(cuStreamGetDevice_ptsz, h, dev);
  DRV_RETURN(stream_prop(h, true, 3, dev));
}

static CUresult stream_sync(CUstream h, bool pt) {
  uint64_t begin = gp_now();
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && s->capture)
    r = capture_refuses(s);
  else if (r == CUDA_SUCCESS)
    r = gp_capture_unsafe();
  uint64_t until = r == CUDA_SUCCESS ? stream_done(s) : 0;
  uint32_t sid = r == CUDA_SUCCESS ? s->id : 0;
  uint32_t cid = r == CUDA_SUCCESS ? gp_dev[s->dev].ctx.id : 0;
  pthread_mutex_unlock(&gp_lock);
  if (r != CUDA_SUCCESS) return r;
  gp_sleep_until(until);
  gp_emit_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, begin,
               gp_now(), cid, sid, CUPTI_SYNCHRONIZATION_INVALID_VALUE, r);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  DRV_ENTER(cuStreamSynchronize, hStream);
  DRV_RETURN(stream_sync(hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) {
  DRV_ENTER(cuStreamSynchronize_ptsz, hStream);
  DRV_RETURN(stream_sync(hStream, true));
}

static CUresult stream_query(CUstream h, bool pt) {
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && s->capture)
    r = capture_refuses(s);
  else if (r == CUDA_SUCCESS && gp_now() < stream_done(s))
    r = CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  DRV_ENTER(cuStreamQuery, hStream);
  DRV_RETURN(stream_query(hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream) {
  DRV_ENTER(cuStreamQuery_ptsz, hStream);
  DRV_RETURN(stream_query(hStream, true));
}

/* The wait is folded into the stream's tail: later work on the stream
 * starts no earlier than the event's time. On the legacy stream the wait
 * is an action like any other: it first waits for the blocking streams,
 * and they then wait for it. */
static CUresult stream_wait(CUstream h, CUevent ev, bool pt) {
  uint64_t begin = gp_now();
  sim_stream *s;
  sim_event *e = NULL;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS) r = gp_event_get(ev, &e);
  bool captured = false;
  if (r == CUDA_SUCCESS && (s->capture || e->cap_id))
    r = gp_capture_wait(s, e, &captured);
  if (r == CUDA_SUCCESS && !captured) {
    if (s->kind == STREAM_LEGACY) s->tail = gp_stream_ready(s);
    if (e->recorded) s->tail = max64(s->tail, e->time);
  }
  uint32_t sid = r == CUDA_SUCCESS ? s->id : 0;
  uint32_t cid = r == CUDA_SUCCESS ? gp_dev[s->dev].ctx.id : 0;
  uint32_t eid = r == CUDA_SUCCESS ? e->id : 0;
  pthread_mutex_unlock(&gp_lock);
  if (r == CUDA_SUCCESS && !captured) /* a captured wait is an edge */
    gp_emit_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, begin,
                 gp_now(), cid, sid, eid, r);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream,
                                                 CUevent hEvent,
                                                 unsigned int Flags) {
  DRV_ENTER(cuStreamWaitEvent, hStream, hEvent, Flags);
  DRV_RETURN(stream_wait(hStream, hEvent, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream,
                                                      CUevent hEvent,
                                                      unsigned int Flags) {
  DRV_ENTER(cuStreamWaitEvent_ptsz, hStream, hEvent, Flags);
  DRV_RETURN(stream_wait(hStream, hEvent, true));
}

static CUresult ctx_sync(sim_ctx *c) {
  uint64_t begin = gp_now();
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_capture_unsafe();
  uint64_t until = gp_device_tail(c->dev);
  pthread_mutex_unlock(&gp_lock);
  if (r != CUDA_SUCCESS) return r;
  gp_sleep_until(until);
  gp_emit_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, begin,
               gp_now(), c->id, CUPTI_SYNCHRONIZATION_INVALID_VALUE,
               CUPTI_SYNCHRONIZATION_INVALID_VALUE, CUDA_SUCCESS);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  DRV_ENTER0(cuCtxSynchronize);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  DRV_RETURN(r == CUDA_SUCCESS ? ctx_sync(c) : r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  DRV_ENTER(cuCtxSynchronize_v2, ctx);
  sim_ctx *c = NULL;
  CUresult r = ctx ? CUDA_SUCCESS : gp_need_ctx(&c);
  if (r == CUDA_SUCCESS && ctx && !(c = gp_ctx_lookup(ctx)))
    r = CUDA_ERROR_INVALID_CONTEXT;
  DRV_RETURN(r == CUDA_SUCCESS ? ctx_sync(c) : r);
}

/* ---- events ---- */

GPUSIM_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent,
                                             unsigned int Flags) {
  DRV_ENTER(cuEventCreate, phEvent, Flags);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  /* CUDA's flags: blocking sync, disable timing, interprocess (which
   * needs timing disabled) */
  const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                         CU_EVENT_INTERPROCESS;
  if (r == CUDA_SUCCESS &&
      (!phEvent || (Flags & ~known) ||
       ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))))
    r = CUDA_ERROR_INVALID_VALUE;
  sim_event *e = r == CUDA_SUCCESS ? calloc(1, sizeof *e) : NULL;
  if (r == CUDA_SUCCESS && !e) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    e->dev = c->dev;
    e->flags = Flags;
    pthread_mutex_lock(&gp_lock);
    e->id = ++event_ids;
    e->next = events;
    events = e;
    pthread_mutex_unlock(&gp_lock);
    *phEvent = (CUevent)e;
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
  DRV_ENTER(cuEventDestroy_v2, hEvent);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  for (sim_event **pp = &events; *pp; pp = &(*pp)->next) {
    if ((CUevent)*pp == hEvent) {
      sim_event *e = *pp;
      *pp = e->next;
      gp_event_forget(e);
      free(e);
      r = CUDA_SUCCESS;
      break;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* An event record is a zero-length operation: it completes when all
 * earlier work of its stream has, or at the record call if that is
 * later. On the legacy stream it is an action like any other: the
 * blocking streams' later work waits for it (and so for what it waited
 * for). */
static CUresult event_record(CUevent ev, CUstream h, bool pt) {
  sim_stream *s;
  sim_event *e;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS) r = gp_event_get(ev, &e);
  if (r == CUDA_SUCCESS && s->capture) {
    r = gp_capture_record(s, e);
  } else if (r == CUDA_SUCCESS) {
    gp_event_forget(e);
    e->time = max64(gp_now(), gp_stream_ready(s));
    e->recorded = true;
    if (s->kind == STREAM_LEGACY) s->tail = max64(s->tail, e->time);
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  DRV_ENTER(cuEventRecord, hEvent, hStream);
  DRV_RETURN(event_record(hEvent, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent,
                                                  CUstream hStream) {
  DRV_ENTER(cuEventRecord_ptsz, hEvent, hStream);
  DRV_RETURN(event_record(hEvent, hStream, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent,
                                                      CUstream hStream,
                                                      unsigned int flags) {
  DRV_ENTER(cuEventRecordWithFlags, hEvent, hStream, flags);
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  DRV_RETURN(event_record(hEvent, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent,
                                                           CUstream hStream,
                                                           unsigned flags) {
  DRV_ENTER(cuEventRecordWithFlags_ptsz, hEvent, hStream, flags);
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  DRV_RETURN(event_record(hEvent, hStream, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  DRV_ENTER(cuEventQuery, hEvent);
  sim_event *e;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_event_get(hEvent, &e);
  if (r == CUDA_SUCCESS && e->recorded && gp_now() < e->time)
    r = CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  DRV_ENTER(cuEventSynchronize, hEvent);
  uint64_t begin = gp_now();
  sim_event *e;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_event_get(hEvent, &e);
  if (r == CUDA_SUCCESS) r = gp_capture_unsafe();
  uint64_t until = r == CUDA_SUCCESS && e->recorded ? e->time : 0;
  uint32_t eid = r == CUDA_SUCCESS ? e->id : 0;
  uint32_t cid = r == CUDA_SUCCESS ? gp_dev[e->dev].ctx.id : 0;
  pthread_mutex_unlock(&gp_lock);
  if (r != CUDA_SUCCESS) DRV_RETURN(r);
  gp_sleep_until(until);
  gp_emit_sync(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, begin,
               gp_now(), cid, CUPTI_SYNCHRONIZATION_INVALID_VALUE, eid, r);
  DRV_RETURN(r);
}

static CUresult elapsed(float *ms, CUevent a, CUevent b) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  sim_event *s, *e;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_event_get(a, &s);
  if (r == CUDA_SUCCESS) r = gp_event_get(b, &e);
  if (r == CUDA_SUCCESS && (!s->recorded || !e->recorded ||
                            ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING)))
    r = CUDA_ERROR_INVALID_HANDLE;
  uint64_t now = gp_now();
  if (r == CUDA_SUCCESS && (now < s->time || now < e->time))
    r = CUDA_ERROR_NOT_READY;
  if (r == CUDA_SUCCESS)
    *ms = (float)(((double)e->time - (double)s->time) / 1e6);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

/* cuda.h maps cuEventElapsedTime to _v2; the original symbol is still
 * exported for old binaries and cuGetProcAddress with old versions. */
GPUSIM_EXPORT CUresult CUDAAPI gp_cuEventElapsedTime_v1(
    float *ms, CUevent a, CUevent b) __asm__("cuEventElapsedTime");
CUresult CUDAAPI gp_cuEventElapsedTime_v1(float *ms, CUevent a, CUevent b) {
  gpusim_api_frame fr_;
  cuEventElapsedTime_params prm_ = {ms, a, b};
  gpusim_api_enter(&fr_, CUPTI_CB_DOMAIN_DRIVER_API,
                   CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime,
                   "cuEventElapsedTime", &prm_, NULL);
  DRV_RETURN(elapsed(ms, a, b));
}

GPUSIM_EXPORT CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a,
                                                     CUevent b) {
  DRV_ENTER(cuEventElapsedTime_v2, ms, a, b);
  DRV_RETURN(elapsed(ms, a, b));
}
