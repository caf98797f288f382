/* Simulated driver: correlation ids, API callbacks and activity records.
 * This is the state behind libcupti.so.13, which only forwards to
 * gpusim_cupti(). User code (callbacks, buffer functions) is never called
 * with a lock held. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drv.h"

static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t corr_counter;

/* The calling thread's API calls in flight, innermost last. */
#define FRAMES 16
static __thread gpusim_api_frame *frames[FRAMES];
static __thread int nframes;
static __thread bool in_callback;

static struct {
  bool active;
  CUpti_CallbackFunc fn;
  void *ud;
  uint8_t rt[CUPTI_RUNTIME_TRACE_CBID_SIZE];
  uint8_t drv[CUPTI_DRIVER_TRACE_CBID_SIZE];
} sub;

static struct {
  uint8_t on[CUPTI_ACTIVITY_KIND_COUNT];
  bool ever_enabled;
  int64_t ts_offset;
  CUpti_TimestampCallbackFunc tsfn;
  CUpti_BuffersCallbackRequestFunc req;
  CUpti_BuffersCallbackCompleteFunc done;
  uint8_t *buf;
  size_t size, used, nrec, maxrec;
  size_t dropped;
} act;

/* ---- callback statistics (gpusim_cupti_stats, GPUSIM_CUPTI_STATS) ----
 * Per callback id: API calls made and ENTER callbacks delivered, counted
 * per subscription epoch (0 = before the first successful cuptiSubscribe,
 * n = while or after the nth; the last slot also takes later ones). */
#define EPOCHS 8
#define NIDS (CUPTI_RUNTIME_TRACE_CBID_SIZE + CUPTI_DRIVER_TRACE_CBID_SIZE)
static struct {
  int epoch;
  uint64_t calls[EPOCHS][NIDS], callbacks[EPOCHS][NIDS];
  const char *names[NIDS];
} stats;

static int stat_index(CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
    return (int)cbid;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
    return CUPTI_RUNTIME_TRACE_CBID_SIZE + (int)cbid;
  return -1;
}

static void stat_add(uint64_t (*table)[NIDS], const gpusim_api_frame *f) {
  int i = stat_index(f->domain, f->cbid);
  if (i < 0 || f->cbid == 0) return;
  int e = __atomic_load_n(&stats.epoch, __ATOMIC_RELAXED);
  __atomic_add_fetch(&table[e][i], 1, __ATOMIC_RELAXED);
  if (!__atomic_load_n(&stats.names[i], __ATOMIC_RELAXED))
    __atomic_store_n(&stats.names[i], f->name, __ATOMIC_RELAXED);
}

GPUSIM_EXPORT int gpusim_cupti_stats(int epoch, CUpti_CallbackDomain d,
                                     CUpti_CallbackId cbid,
                                     unsigned long long *calls,
                                     unsigned long long *callbacks) {
  int i = stat_index(d, cbid);
  unsigned long long n = 0, c = 0;
  for (int e = 0; i >= 0 && e < EPOCHS; e++) {
    if (epoch >= 0 && e != epoch) continue;
    n += __atomic_load_n(&stats.calls[e][i], __ATOMIC_RELAXED);
    c += __atomic_load_n(&stats.callbacks[e][i], __ATOMIC_RELAXED);
  }
  if (calls) *calls = n;
  if (callbacks) *callbacks = c;
  return __atomic_load_n(&stats.epoch, __ATOMIC_RELAXED);
}

/* GPUSIM_CUPTI_STATS=FILE: at exit, one line per epoch and callback id
 * that saw a call, "pid epoch domain name calls callbacks", appended to
 * FILE with a single write. */
__attribute__((destructor)) static void stats_write(void) {
  const char *path = getenv("GPUSIM_CUPTI_STATS");
  if (!path || !*path) return;
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  if (!out) return;
  for (int e = 0; e < EPOCHS; e++) {
    for (int i = 0; i < NIDS; i++) {
      uint64_t n = __atomic_load_n(&stats.calls[e][i], __ATOMIC_RELAXED);
      uint64_t c = __atomic_load_n(&stats.callbacks[e][i], __ATOMIC_RELAXED);
      const char *name = __atomic_load_n(&stats.names[i], __ATOMIC_RELAXED);
      if (!n && !c) continue;
      if (cap - len < 256) {
        char *more = realloc(out, cap * 2);
        if (!more) break;
        out = more, cap *= 2;
      }
      len += (size_t)snprintf(
          out + len, cap - len, "%ld %d %s %.160s %llu %llu\n", (long)getpid(),
          e, i < CUPTI_RUNTIME_TRACE_CBID_SIZE ? "runtime" : "driver",
          name ? name : "?", (unsigned long long)n, (unsigned long long)c);
    }
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (write(fd, out, len) != (ssize_t)len)
      fprintf(stderr, "gpusim: GPUSIM_CUPTI_STATS: short write to %s\n", path);
    close(fd);
  }
  free(out);
}

/* ---- correlation and API callbacks ---- */

uint32_t gp_corr(void) {
  return nframes > 0 ? frames[nframes > FRAMES ? FRAMES - 1 : nframes - 1]->corr
                     : 0;
}

uint32_t gp_runtime_corr(void) {
  for (int i = (nframes > FRAMES ? FRAMES : nframes) - 1; i >= 0; i--)
    if (frames[i]->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
      return frames[i]->corr;
  return 0;
}

/* The enabled flag of one callback id; NULL for an id the domain does not
 * have (0 is CUPTI_*_TRACE_CBID_INVALID in both). */
static uint8_t *enabled_slot(CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  if (cbid == 0) return NULL;
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
    return &sub.rt[cbid];
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
    return &sub.drv[cbid];
  return NULL;
}

static bool wants(const gpusim_api_frame *f, CUpti_CallbackFunc *fn,
                  void **ud) {
  pthread_mutex_lock(&cupti_lock);
  uint8_t *slot = enabled_slot(f->domain, f->cbid);
  bool yes = sub.active && slot && *slot;
  *fn = sub.fn;
  *ud = sub.ud;
  pthread_mutex_unlock(&cupti_lock);
  return yes && *fn;
}

/* API calls made from inside a callback are not reported again. */
static void notify(gpusim_api_frame *f, CUpti_ApiCallbackSite site, void *ret) {
  CUpti_CallbackFunc fn;
  void *ud;
  if (in_callback || !wants(f, &fn, &ud)) return;
  sim_ctx *c = gp_current_ctx();
  CUpti_CallbackData d = {site,          f->name,       f->params,
                          ret,           f->symbol,     (CUcontext)c,
                          c ? c->id : 0, &f->corr_data, f->corr};
  if (site == CUPTI_API_ENTER) stat_add(stats.callbacks, f);
  in_callback = true;
  fn(ud, f->domain, f->cbid, &d);
  in_callback = false;
  if (site == CUPTI_API_ENTER) f->notify = 1;
}

/* Runtime calls and top-level driver calls get a fresh correlation id;
 * driver calls made inside a runtime call share the runtime call's. */
GPUSIM_EXPORT void gpusim_api_enter(gpusim_api_frame *f,
                                    CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const char *name,
                                    const void *params, const char *symbol) {
  f->domain = domain;
  f->cbid = cbid;
  f->name = name;
  f->params = params;
  f->symbol = symbol;
  f->notify = 0;
  f->corr_data = 0;
  uint32_t outer = gp_runtime_corr();
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || !outer)
    f->corr = __atomic_add_fetch(&corr_counter, 1, __ATOMIC_RELAXED);
  else
    f->corr = outer;
  if (nframes < FRAMES) frames[nframes] = f;
  nframes++;
  stat_add(stats.calls, f);
  notify(f, CUPTI_API_ENTER, NULL);
}

GPUSIM_EXPORT void gpusim_api_exit(gpusim_api_frame *f, void *retval) {
  if (f->notify) notify(f, CUPTI_API_EXIT, retval);
  if (nframes > 0) nframes--;
}

/* ---- activity buffers ---- */

bool gp_activity_on(CUpti_ActivityKind kind) {
  return (unsigned)kind < CUPTI_ACTIVITY_KIND_COUNT &&
         __atomic_load_n(&act.on[kind], __ATOMIC_RELAXED);
}

uint64_t gp_ts(uint64_t mono) {
  return mono + (uint64_t)__atomic_load_n(&act.ts_offset, __ATOMIC_RELAXED);
}

static void complete(CUpti_BuffersCallbackCompleteFunc done, uint8_t *b,
                     size_t size, size_t valid) {
  if (done) done(NULL, 0, b, size, valid);
}

/* Gets a fresh buffer from the client; false when it gave none that can
 * hold `need` bytes. */
static bool refill(size_t need) {
  pthread_mutex_lock(&cupti_lock);
  CUpti_BuffersCallbackRequestFunc req = act.req;
  CUpti_BuffersCallbackCompleteFunc done = act.done;
  pthread_mutex_unlock(&cupti_lock);
  uint8_t *b = NULL;
  size_t size = 0, maxrec = 0;
  if (req) req(&b, &size, &maxrec);
  if (!b || size < need) {
    if (b) complete(done, b, size, 0);
    return false;
  }
  pthread_mutex_lock(&cupti_lock);
  bool raced = act.buf != NULL;
  if (!raced) {
    act.buf = b;
    act.size = size;
    act.used = act.nrec = 0;
    act.maxrec = maxrec;
  }
  pthread_mutex_unlock(&cupti_lock);
  if (raced) complete(done, b, size, 0);
  return true;
}

void gp_emit(const void *rec, size_t size) {
  size_t need = (size + 7) & ~(size_t)7;
  for (;;) {
    pthread_mutex_lock(&cupti_lock);
    if (act.buf && act.size - act.used >= need &&
        (act.maxrec == 0 || act.nrec < act.maxrec)) {
      memcpy(act.buf + act.used, rec, size);
      memset(act.buf + act.used + size, 0, need - size);
      act.used += need;
      act.nrec++;
      pthread_mutex_unlock(&cupti_lock);
      return;
    }
    uint8_t *full = act.buf;
    size_t fsize = act.size, fvalid = act.used;
    CUpti_BuffersCallbackCompleteFunc done = act.done;
    act.buf = NULL;
    pthread_mutex_unlock(&cupti_lock);
    if (full) {
      complete(done, full, fsize, fvalid);
    } else if (!refill(need)) {
      pthread_mutex_lock(&cupti_lock);
      act.dropped++;
      pthread_mutex_unlock(&cupti_lock);
      return;
    }
  }
}

void gp_emit_sync(CUpti_ActivitySynchronizationType type, uint64_t start,
                  uint64_t end, uint32_t ctx_id, uint32_t stream_id,
                  uint32_t event_id, CUresult ret) {
  if (!gp_activity_on(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) return;
  CUpti_ActivitySynchronization2 s;
  memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = gp_ts(start);
  s.end = gp_ts(end);
  s.correlationId = gp_corr();
  s.contextId = ctx_id;
  s.streamId = stream_id;
  s.cudaEventId = event_id;
  s.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.returnValue = (uint32_t)ret;
  gp_emit(&s, sizeof s);
}

/* ---- the CUPTI entry points ---- */

static CUptiResult c_subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc fn,
                               void *ud) {
  if (!h) return CUPTI_ERROR_INVALID_PARAMETER;
  gp_config_load();
  if (gp_cfg.cupti_busy) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  pthread_mutex_lock(&cupti_lock);
  bool busy = sub.active;
  if (!busy) {
    memset(&sub, 0, sizeof sub);
    sub.active = true;
    sub.fn = fn;
    sub.ud = ud;
    if (stats.epoch < EPOCHS - 1)
      __atomic_add_fetch(&stats.epoch, 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&cupti_lock);
  if (busy) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  *h = (CUpti_SubscriberHandle)&sub;
  return CUPTI_SUCCESS;
}

static bool sub_ok(CUpti_SubscriberHandle h) {
  return h == (CUpti_SubscriberHandle)&sub && sub.active;
}

static CUptiResult c_unsubscribe(CUpti_SubscriberHandle h) {
  pthread_mutex_lock(&cupti_lock);
  bool ok = sub_ok(h);
  if (ok) sub.active = false;
  pthread_mutex_unlock(&cupti_lock);
  return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* Domains other than runtime and driver are accepted and never fire. */
static CUptiResult c_enable_callback(uint32_t en, CUpti_SubscriberHandle h,
                                     CUpti_CallbackDomain d,
                                     CUpti_CallbackId cbid) {
  CUptiResult r = CUPTI_SUCCESS;
  pthread_mutex_lock(&cupti_lock);
  uint8_t *slot = enabled_slot(d, cbid);
  if (!sub_ok(h))
    r = CUPTI_ERROR_INVALID_PARAMETER;
  else if (slot)
    *slot = en != 0;
  else if (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API)
    r = CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_unlock(&cupti_lock);
  return r;
}

static CUptiResult c_enable_domain(uint32_t en, CUpti_SubscriberHandle h,
                                   CUpti_CallbackDomain d) {
  pthread_mutex_lock(&cupti_lock);
  bool ok = sub_ok(h);
  if (ok && d == CUPTI_CB_DOMAIN_RUNTIME_API)
    memset(sub.rt, en != 0, sizeof sub.rt);
  if (ok && d == CUPTI_CB_DOMAIN_DRIVER_API)
    memset(sub.drv, en != 0, sizeof sub.drv);
  pthread_mutex_unlock(&cupti_lock);
  return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult c_callback_state(uint32_t *en, CUpti_SubscriberHandle h,
                                    CUpti_CallbackDomain d,
                                    CUpti_CallbackId cbid) {
  if (!en) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&cupti_lock);
  uint8_t *slot = enabled_slot(d, cbid);
  bool ok = sub_ok(h) && slot;
  *en = ok ? *slot : 0;
  pthread_mutex_unlock(&cupti_lock);
  return ok ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult c_register_timestamp(CUpti_TimestampCallbackFunc fn) {
  pthread_mutex_lock(&cupti_lock);
  bool late = act.ever_enabled;
  pthread_mutex_unlock(&cupti_lock);
  if (late) return CUPTI_ERROR_INVALID_OPERATION;
  /* The offset between f's clock and CLOCK_MONOTONIC: f() read between two
   * monotonic reads, the tightest of a few tries (a preempted try would
   * skew every timestamp of the process). */
  int64_t off = 0;
  uint64_t best = UINT64_MAX;
  for (int i = 0; fn && i < 8; i++) {
    uint64_t a = gp_now(), f = fn(), b = gp_now();
    if (b - a < best) {
      best = b - a;
      off = (int64_t)(f - (a + (b - a) / 2));
    }
  }
  pthread_mutex_lock(&cupti_lock);
  act.tsfn = fn;
  __atomic_store_n(&act.ts_offset, off, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&cupti_lock);
  return CUPTI_SUCCESS;
}

static CUptiResult c_register_buffers(CUpti_BuffersCallbackRequestFunc req,
                                      CUpti_BuffersCallbackCompleteFunc done) {
  if (!req || !done) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&cupti_lock);
  act.req = req;
  act.done = done;
  pthread_mutex_unlock(&cupti_lock);
  return CUPTI_SUCCESS;
}

static CUptiResult c_activity_enable(CUpti_ActivityKind kind, int enable) {
  if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT ||
      kind == CUPTI_ACTIVITY_KIND_INVALID)
    return CUPTI_ERROR_INVALID_KIND;
  pthread_mutex_lock(&cupti_lock);
  __atomic_store_n(&act.on[kind], (uint8_t)(enable != 0), __ATOMIC_RELAXED);
  if (enable) act.ever_enabled = true;
  pthread_mutex_unlock(&cupti_lock);
  return CUPTI_SUCCESS;
}

static CUptiResult c_flush_all(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&cupti_lock);
  uint8_t *b = act.buf;
  size_t size = act.size, valid = act.used;
  CUpti_BuffersCallbackCompleteFunc done = act.done;
  act.buf = NULL;
  pthread_mutex_unlock(&cupti_lock);
  if (b) complete(done, b, size, valid);
  return CUPTI_SUCCESS;
}

static CUptiResult c_dropped(size_t *n) {
  if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&cupti_lock);
  *n = act.dropped;
  pthread_mutex_unlock(&cupti_lock);
  return CUPTI_SUCCESS;
}

static CUptiResult c_timestamp(uint64_t *t) {
  if (!t) return CUPTI_ERROR_INVALID_PARAMETER;
  *t = gp_ts(gp_now());
  return CUPTI_SUCCESS;
}

/* Detaches everything: the partial buffer is completed, activities are
 * disabled, the subscriber and registered functions are forgotten. */
static CUptiResult c_finalize(void) {
  c_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&cupti_lock);
  for (size_t i = 0; i < CUPTI_ACTIVITY_KIND_COUNT; i++)
    __atomic_store_n(&act.on[i], 0, __ATOMIC_RELAXED);
  act.ever_enabled = false;
  act.req = NULL;
  act.done = NULL;
  act.tsfn = NULL;
  __atomic_store_n(&act.ts_offset, 0, __ATOMIC_RELAXED);
  sub.active = false;
  pthread_mutex_unlock(&cupti_lock);
  return CUPTI_SUCCESS;
}

static sim_ctx *ctx_or_current(CUcontext c) {
  return c ? gp_ctx_lookup(c) : gp_current_ctx();
}

static CUptiResult c_context_id(CUcontext c, uint32_t *id) {
  sim_ctx *x = ctx_or_current(c);
  if (!id || !x)
    return !id ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_ERROR_INVALID_CONTEXT;
  *id = x->id;
  return CUPTI_SUCCESS;
}

static CUptiResult c_device_id(CUcontext c, uint32_t *id) {
  sim_ctx *x = ctx_or_current(c);
  if (!id || !x)
    return !id ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_ERROR_INVALID_CONTEXT;
  *id = (uint32_t)x->dev;
  return CUPTI_SUCCESS;
}

static CUptiResult c_stream_id(CUcontext c, CUstream h, int pt, uint32_t *id) {
  (void)c;
  if (!id) return CUPTI_ERROR_INVALID_PARAMETER;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt != 0, &s);
  if (r == CUDA_SUCCESS) *id = s->id;
  pthread_mutex_unlock(&gp_lock);
  return r == CUDA_SUCCESS ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_STREAM;
}

static const gpusim_cupti_ops ops = {
    c_subscribe,        c_unsubscribe,     c_enable_callback,
    c_enable_domain,    c_callback_state,  c_register_timestamp,
    c_register_buffers, c_activity_enable, c_flush_all,
    c_dropped,          c_timestamp,       c_finalize,
    c_context_id,       c_device_id,       c_stream_id,
};

GPUSIM_EXPORT const gpusim_cupti_ops *gpusim_cupti(void) {
  return &ops;
}
