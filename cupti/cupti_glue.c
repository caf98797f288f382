/* CUPTI, loaded with dlopen at the first CUDA call so that processes which
 * never use CUDA never touch it, and so that a missing or busy CUPTI only
 * degrades the trace. */
#include <cupti.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "gp_cupti.h"
#include "gp_cupti_ids.h"
#include "gpuphase/trace_records.h"

#define BUF_BYTES (4u << 20)

/* Activity buffers are mapped, not malloc'ed: CUPTI asks for them on
 * application threads and the writer thread frees them, and glibc keeps
 * such blocks in the allocating thread's arena (its mmap threshold rises
 * to 4 MiB after the first free), so a run whose threads come and go grew
 * by buffers it no longer used. A mapping goes back when unmapped. */
static void *buf_alloc(void) {
  void *p = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void buf_free(void *p) {
  if (p) munmap(p, BUF_BYTES);
}
#define MAX_BUFS 32 /* 128 MiB at most held for CUPTI */

/* The CUPTI entry points we use, declared once. */
#define CUPTI_FUNCS(X)                                                         \
  X(cuptiGetResultString, (CUptiResult, const char **))                        \
  X(cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))   \
  X(cuptiUnsubscribe, (CUpti_SubscriberHandle))                                \
  X(cuptiEnableCallback, (uint32_t, CUpti_SubscriberHandle,                    \
                          CUpti_CallbackDomain, CUpti_CallbackId))             \
  X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc))     \
  X(cuptiActivityRegisterCallbacks,                                            \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))     \
  X(cuptiActivityEnable, (CUpti_ActivityKind))                                 \
  X(cuptiActivityDisable, (CUpti_ActivityKind))                                \
  X(cuptiActivityFlushAll, (uint32_t))                                         \
  X(cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))        \
  X(cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))

#define DECL(name, args) static CUptiResult(CUPTIAPI *p_##name) args;
CUPTI_FUNCS(DECL)
#undef DECL

/* Device activity we record; never KERNEL, which serialises kernels. */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static void *lib;
static CUpti_SubscriberHandle subscriber;
static const struct gp_cupti_hooks *hooks;
static _Atomic int active; /* read by the writer thread unlocked */
static CUpti_SubscriberHandle stale_subscriber; /* inherited through fork */

/* Completed buffers waiting for the consumer. */
struct done_buf {
  uint8_t *buf;
  size_t valid;
};
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static struct done_buf queue[MAX_BUFS];
static size_t q_len;
static size_t bufs_out; /* handed to CUPTI or queued */
static uint64_t dropped_by_us;
static int discard; /* records still buffered from before a fork */

/* Sharing CUPTI (one subscriber per process) with a tool that subscribes
 * inside our process: we step aside and come back when it leaves. */
static pthread_mutex_t hand_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int wanted; /* CUPTI was opened: we want device records */
static int handed_over; /* another tool holds CUPTI now */
static CUpti_SubscriberHandle other;
static int ts_registered; /* our clock is CUPTI's */
/* Another tool's use of the activity API, which has one pair of buffer
 * callbacks per process (a tool may use it without subscribing): its
 * callbacks, and the kinds it has enabled, each with its context (NULL:
 * cuptiActivityEnable, for all of them); past O_MAX pairs, o_full keeps
 * the tool counted present for good. */
static CUpti_BuffersCallbackRequestFunc o_req;
static CUpti_BuffersCallbackCompleteFunc o_comp;
#define O_MAX 64
static struct {
  CUcontext ctx;
  CUpti_ActivityKind kind;
} o_on[O_MAX];
static unsigned o_n, o_full;

/* hand_lock is taken by the functions a tool calls and by ours; CUPTI
 * may call a tool's buffer callback while we flush under it, and that
 * callback may call an interposed function again (disable its kind, say):
 * on the thread that holds the lock, such a nested call goes straight to
 * CUPTI with its bookkeeping only. */
static __thread unsigned hand_depth;

static void hand_enter(void) {
  if (hand_depth++ == 0) pthread_mutex_lock(&hand_lock);
}

static void hand_leave(void) {
  if (--hand_depth == 0) pthread_mutex_unlock(&hand_lock);
}

static int hand_nested(void) {
  return hand_depth > 1;
}

static uint64_t CUPTIAPI timestamp_cb(void) {
  return hooks->now_ns();
}

/* Called by CUPTI only for the ids enable_callbacks() enabled: the calls
 * gpuphase records (and those nested in them). */
static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom,
                                 CUpti_CallbackId cbid, const void *data) {
  (void)ud;
  (void)cbid;
  if ((dom != CUPTI_CB_DOMAIN_RUNTIME_API &&
       dom != CUPTI_CB_DOMAIN_DRIVER_API) ||
      !data)
    return;
  const CUpti_CallbackData *cb = data;
  if (cb->callbackSite == CUPTI_API_ENTER)
    hooks->on_api_enter(cb->correlationId);
}

/* Enables our callbacks on subscriber `s`: the runtime and driver API ids
 * of the functions gpuphase records (cupti_ids.c), never whole domains,
 * so that the calls it does not record pay nothing for it. An id this
 * CUPTI rejects (one older than the headers gpuphase was built with) is
 * skipped: its function does not exist there to be called. Fails only if
 * CUPTI takes none of a domain's ids. */
static CUptiResult enable_callbacks(CUpti_SubscriberHandle s) {
  static const CUpti_CallbackDomain doms[] = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                              CUPTI_CB_DOMAIN_DRIVER_API};
  for (size_t d = 0; d < sizeof doms / sizeof doms[0]; d++) {
    const CUpti_CallbackId *ids;
    size_t n = gp_cupti_ids(doms[d], &ids), taken = 0;
    CUptiResult err = CUPTI_SUCCESS;
    for (size_t i = 0; i < n; i++) {
      CUptiResult r = p_cuptiEnableCallback(1, s, doms[d], ids[i]);
      if (r == CUPTI_SUCCESS)
        taken++;
      else if (err == CUPTI_SUCCESS)
        err = r;
    }
    if (n && !taken) return err;
  }
  return CUPTI_SUCCESS;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  *buf = NULL;
  *size = 0;
  *max_records = 0;
  pthread_mutex_lock(&q_lock);
  int ok = bufs_out < MAX_BUFS;
  if (ok) bufs_out++;
  pthread_mutex_unlock(&q_lock);
  if (!ok) return; /* CUPTI drops and counts; we never block it */
  void *p = buf_alloc();
  if (!p) {
    pthread_mutex_lock(&q_lock);
    bufs_out--;
    pthread_mutex_unlock(&q_lock);
    return;
  }
  *buf = p;
  *size = BUF_BYTES;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buf, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  if (!buf) return;
  if (discard) { /* the parent's records: the parent delivers them */
    buf_free(buf);
    return;
  }
  pthread_mutex_lock(&q_lock);
  if (q_len < MAX_BUFS) {
    queue[q_len].buf = buf;
    queue[q_len].valid = valid;
    q_len++;
    buf = NULL;
  }
  pthread_mutex_unlock(&q_lock);
  if (buf) { /* cannot happen while bufs_out <= MAX_BUFS; stay safe */
    buf_free(buf);
    pthread_mutex_lock(&q_lock);
    bufs_out--;
    dropped_by_us++;
    pthread_mutex_unlock(&q_lock);
  }
  hooks->wake();
}

static void *open_first(const char *const *paths, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!paths[i] || !paths[i][0]) continue;
    void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  return NULL;
}

/* The first of names that the dynamic loader would find for the program
 * itself: in the search path of the main executable (its RPATH, then
 * LD_LIBRARY_PATH, then its RUNPATH, then the system directories, as
 * RTLD_DI_SERINFO lists them: a dlopen from this library would not look in
 * the program's RUNPATH), then by name alone (ld.so.cache). Writer thread,
 * once: may allocate. */
static void *load_as_program(const char *const *names, size_t nnames) {
  void *prog = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  Dl_serinfo size, *si = NULL;
  if (prog && dlinfo(prog, RTLD_DI_SERINFOSIZE, &size) == 0 &&
      size.dls_size >= sizeof size && (si = malloc(size.dls_size)) != NULL) {
    *si = size;
    if (dlinfo(prog, RTLD_DI_SERINFOSIZE, si) != 0 ||
        dlinfo(prog, RTLD_DI_SERINFO, si) != 0) {
      free(si);
      si = NULL;
    }
  }
  void *h = NULL;
  for (size_t k = 0; k < nnames && !h; k++) {
    for (unsigned i = 0; si && i < si->dls_cnt && !h; i++) {
      const char *d = si->dls_serpath[i].dls_name;
      if (!d || !*d) continue;
      char path[PATH_MAX + 64];
      if ((size_t)snprintf(path, sizeof path, "%s/%s", d, names[k]) >=
          sizeof path)
        continue;
      h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) h = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
  }
  free(si);
  if (prog) dlclose(prog);
  return h;
}

static void *load_cupti(const void *cudart_addr, const char *override_path,
                        const char *cuda_home) {
  if (override_path && *override_path)
    return dlopen(override_path, RTLD_NOW | RTLD_LOCAL);
  /* A CUPTI the process already loaded (PyTorch's libtorch_cuda links one)
   * comes first: a second, different CUPTI in one process would fight the
   * first over the driver's profiling interface. */
  static const char *const loaded[] = {"libcupti.so.13", "libcupti.so.12",
                                       "libcupti.so"};
  for (size_t i = 0; i < 3; i++) {
    void *h = dlopen(loaded[i], RTLD_NOW | RTLD_NOLOAD);
    if (h) return h;
  }
  char dir[PATH_MAX] = "", up3[PATH_MAX] = "";
  Dl_info info;
  if (cudart_addr && dladdr(cudart_addr, &info) && info.dli_fname) {
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else dir[0] = 0;
    /* pip wheels: nvidia/cuda_runtime/lib beside nvidia/cuda_cupti/lib */
    snprintf(up3, sizeof up3, "%s", dir);
    for (int k = 0; k < 2; k++) {
      slash = strrchr(up3, '/');
      if (slash) *slash = 0;
    }
  }
  char cand[6][PATH_MAX + 64];
  size_t n = 0;
  static const char *const names[] = {"libcupti.so.13", "libcupti.so.12",
                                      "libcupti.so"};
  for (size_t i = 0; i < 3 && dir[0]; i++)
    snprintf(cand[n++], sizeof cand[0], "%s/%s", dir, names[i]);
  if (up3[0])
    snprintf(cand[n++], sizeof cand[0], "%s/cuda_cupti/lib/libcupti.so.12",
             up3);
  const char *ptrs[6];
  for (size_t i = 0; i < n; i++) ptrs[i] = cand[i];
  void *h = open_first(ptrs, n);
  if (h) return h;
  /* Then the one the dynamic loader would load for the program. */
  h = load_as_program(names, 3);
  if (h) return h;
  /* Then the toolkit gpuphase was built against. */
  n = 0;
  if (cuda_home && *cuda_home) {
    snprintf(cand[n++], sizeof cand[0], "%s/extras/CUPTI/lib64/libcupti.so",
             cuda_home);
    snprintf(cand[n++], sizeof cand[0], "%s/lib64/libcupti.so", cuda_home);
  }
  for (size_t i = 0; i < n; i++) ptrs[i] = cand[i];
  return open_first(ptrs, n);
}

static const char *result_text(CUptiResult r) {
  const char *s = NULL;
  if (p_cuptiGetResultString && p_cuptiGetResultString(r, &s) ==
                                    CUPTI_SUCCESS && s)
    return s;
  return "unknown CUPTI error";
}

int gp_cupti_open(const struct gp_cupti_hooks *h, const void *cudart_addr,
                  const char *override_path, const char *cuda_home,
                  const char **why) {
  static char reason[256];
  hooks = h;
  *why = NULL;
  lib = load_cupti(cudart_addr, override_path, cuda_home);
  if (!lib) {
    snprintf(reason, sizeof reason, "CUPTI library not found (%s)",
             override_path && *override_path ? override_path
                                              : "set GPUPHASE_CUPTI_LIB");
    goto degraded;
  }
#define LOAD(name, args)                                                       \
  p_##name = (CUptiResult(CUPTIAPI *) args)dlsym(lib, #name);                 \
  if (!p_##name) {                                                             \
    snprintf(reason, sizeof reason, "CUPTI lacks %s", #name);                  \
    goto degraded;                                                             \
  }
  CUPTI_FUNCS(LOAD)
#undef LOAD
  wanted = 1;
  int forked_child = stale_subscriber != NULL;
  if (stale_subscriber) {
    /* A forked child: drop the parent's buffered records and undo the
     * parent's setup that the fork copied. */
    discard = 1;
    p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    discard = 0;
    for (size_t i = 0; i < NKINDS; i++) p_cuptiActivityDisable(kinds[i]);
    p_cuptiUnsubscribe(stale_subscriber);
    stale_subscriber = NULL;
  }
  hand_enter();
  int held = o_n || o_full;
  hand_leave();
  if (held) {
    /* a tool's activity records are under way (it enabled them before the
     * first CUDA call): ours would take its buffers; we come in when it
     * has disabled them all */
    snprintf(reason, sizeof reason,
             "CUPTI's activity buffers are held by another tool");
    goto degraded;
  }
  CUptiResult r = p_cuptiSubscribe(&subscriber, on_callback, NULL);
  if (r != CUPTI_SUCCESS) {
    subscriber = NULL;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      snprintf(reason, sizeof reason,
               "CUPTI is held by another tool (%s)", result_text(r));
    else
      snprintf(reason, sizeof reason, "CUPTI subscribe failed (%s)",
               result_text(r));
    goto degraded;
  }
  /* Our clock before any activity is enabled, so device and host times
   * share CLOCK_MONOTONIC. */
  r = p_cuptiActivityRegisterTimestampCallback(timestamp_cb);
  /* In a forked child CUPTI refuses a second registration, but the one the
   * parent made (this same function) came along with the fork. */
  if (r == CUPTI_ERROR_INVALID_OPERATION && forked_child) r = CUPTI_SUCCESS;
  if (r == CUPTI_SUCCESS) ts_registered = 1;
  if (r != CUPTI_SUCCESS ||
      (r = p_cuptiActivityRegisterCallbacks(buffer_requested,
                                            buffer_completed)) !=
          CUPTI_SUCCESS ||
      (r = enable_callbacks(subscriber)) != CUPTI_SUCCESS) {
    snprintf(reason, sizeof reason, "CUPTI setup failed (%s)",
             result_text(r));
    goto unsubscribe;
  }
  for (size_t i = 0; i < NKINDS; i++) {
    r = p_cuptiActivityEnable(kinds[i]);
    if (r != CUPTI_SUCCESS) {
      snprintf(reason, sizeof reason, "CUPTI activity %d unavailable (%s)",
               (int)kinds[i], result_text(r));
      for (size_t j = 0; j < i; j++) p_cuptiActivityDisable(kinds[j]);
      goto unsubscribe;
    }
  }
  active = 1;
  return 0;
unsubscribe:
  p_cuptiUnsubscribe(subscriber);
  subscriber = NULL;
degraded:
  *why = reason;
  hooks->degraded(hooks->now_ns(), 1, reason);
  return -1;
}

void gp_cupti_flush_buffers(int forced) {
  hand_enter();
  if (active)
    p_cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  hand_leave();
}

/* Hands CUPTI over: our records so far are flushed to our queue, then we
 * unsubscribe. hand_lock held. */
static void step_aside(void) {
  p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (size_t i = 0; i < NKINDS; i++) p_cuptiActivityDisable(kinds[i]);
  p_cuptiUnsubscribe(subscriber);
  subscriber = NULL;
  active = 0;
  handed_over = 1;
  hooks->degraded(hooks->now_ns(), 1,
                  "CUPTI handed over to another tool in this process");
  hooks->wake();
}

/* Subscribes and enables our callbacks and activity kinds; 0 when done.
 * hand_lock held. */
static int attach(void) {
  /* Device times must be in our clock; if CUPTI no longer accepts our
   * timestamp source (the other tool enabled activity first), stay
   * host-only rather than record misaligned times. */
  if (!ts_registered) {
    if (p_cuptiActivityRegisterTimestampCallback(timestamp_cb) != CUPTI_SUCCESS)
      return -1;
    ts_registered = 1;
  }
  if (p_cuptiSubscribe(&subscriber, on_callback, NULL) != CUPTI_SUCCESS) {
    subscriber = NULL;
    return -1; /* still held by someone: stay degraded */
  }
  /* A fresh subscription has no callback enabled: the same ids as at the
   * start again. */
  if (p_cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) !=
          CUPTI_SUCCESS ||
      enable_callbacks(subscriber) != CUPTI_SUCCESS) {
    p_cuptiUnsubscribe(subscriber);
    subscriber = NULL;
    return -1;
  }
  for (size_t i = 0; i < NKINDS; i++) p_cuptiActivityEnable(kinds[i]);
  active = 1;
  return 0;
}

/* Takes CUPTI back once the other tool unsubscribed: its last records go
 * to its own callbacks first. hand_lock held. */
static void come_back(void) {
  p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (attach() != 0) return;
  handed_over = 0;
  hooks->degraded(hooks->now_ns(), 0, "CUPTI back from the other tool");
}

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *,
                                    CUpti_CallbackFunc, void *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);

static void *real_cupti(const char *name) {
  void *f = lib ? dlsym(lib, name) : NULL;
  return f ? f : dlsym(RTLD_NEXT, name);
}

/* cuptiSubscribe_v2 (CUPTI 12.? on, recommended by CUPTI 13), with its
 * parameters as an opaque pointer: the headers of older toolkits do not
 * declare it (cupti_sub_v2.c exports it under its name). */
typedef CUptiResult (*subscribe_v2_fn)(CUpti_SubscriberHandle *,
                                       CUpti_CallbackFunc, void *, void *);

/* A tool (torch.profiler, Nsight) subscribing in our process, through
 * cuptiSubscribe (v2 0) or cuptiSubscribe_v2 (params): we step aside for
 * it, and come back when it unsubscribes (or now, if it was refused). */
static CUptiResult subscribe_other(int v2, CUpti_SubscriberHandle *sub,
                                   CUpti_CallbackFunc cb, void *ud,
                                   void *params) {
  void *real = real_cupti(v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe");
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  hand_enter();
  int stepped = 0;
  if (active && subscriber && !hand_nested()) {
    step_aside();
    stepped = 1;
  }
  CUptiResult r = v2 ? ((subscribe_v2_fn)real)(sub, cb, ud, params)
                     : ((subscribe_fn)real)(sub, cb, ud);
  if (r == CUPTI_SUCCESS && sub) other = *sub;
  else if (stepped) come_back();
  hand_leave();
  return r;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud) {
  return subscribe_other(0, sub, cb, ud, NULL);
}

int gp_cupti_subscribe_v2(void *sub, void *cb, void *ud, void *params) {
  return (int)subscribe_other(1, (CUpti_SubscriberHandle *)sub,
                              (CUpti_CallbackFunc)cb, ud, params);
}

/* Whether the other tool is done with CUPTI: no subscription, no
 * activity kind enabled. hand_lock held. */
static int other_gone(void) {
  return !other && !o_n && !o_full;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiUnsubscribe(CUpti_SubscriberHandle h) {
  unsubscribe_fn real = (unsubscribe_fn)real_cupti("cuptiUnsubscribe");
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  hand_enter();
  CUptiResult r = real(h);
  if (r == CUPTI_SUCCESS && h == other) {
    other = NULL;
    /* back after a hand-over, or first time if CUPTI was busy at start */
    if (wanted && !active && lib && other_gone() && !hand_nested()) come_back();
  }
  hand_leave();
  return r;
}

/* A tool using the activity API without subscribing (CUPTI's own
 * activity samples do): its buffer callbacks would replace ours, and
 * CUPTI would hand it our buffers (which it frees as its own) and our
 * records. While we hold CUPTI, its callbacks are kept, not registered;
 * when it enables a kind, we step aside as for a subscription (our
 * records so far flushed to us, our kinds disabled) and register them;
 * once it has disabled every kind it enabled, its last records are
 * flushed to it and we come back. A tool that enables a kind again later,
 * without registering again, gets its callbacks back the same way. */
typedef CUptiResult (*register_fn)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*ctx_kind_fn)(CUcontext, CUpti_ActivityKind);

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                               CUpti_BuffersCallbackCompleteFunc comp) {
  register_fn real = (register_fn)real_cupti("cuptiActivityRegisterCallbacks");
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!req || !comp) return real(req, comp); /* CUPTI's own answer */
  hand_enter();
  CUptiResult r = CUPTI_SUCCESS;
  /* ours stay registered while we hold CUPTI and the tool enables nothing */
  if (!(active && subscriber)) r = real(req, comp);
  if (r == CUPTI_SUCCESS) {
    o_req = req;
    o_comp = comp;
  }
  hand_leave();
  return r;
}

static int o_find(CUcontext ctx, CUpti_ActivityKind k) {
  for (unsigned i = 0; i < o_n; i++)
    if (o_on[i].ctx == ctx && o_on[i].kind == k) return (int)i;
  return -1;
}

static void o_kind_set(CUcontext ctx, CUpti_ActivityKind k, int on) {
  int i = o_find(ctx, k);
  if (on && i < 0) {
    if (o_n < O_MAX) {
      o_on[o_n].ctx = ctx;
      o_on[o_n].kind = k;
      o_n++;
    } else {
      o_full = 1;
    }
  } else if (!on && i >= 0) {
    o_on[i] = o_on[--o_n];
  }
}

static CUptiResult other_enable(const char *name, CUpti_ActivityKind k,
                                CUcontext ctx, int by_ctx) {
  void *f = real_cupti(name);
  if (!f) return CUPTI_ERROR_NOT_INITIALIZED;
  hand_enter();
  if (active && subscriber && o_req && !hand_nested()) {
    /* we held CUPTI: the tool's callbacks in place of ours */
    step_aside();
    register_fn reg = (register_fn)real_cupti("cuptiActivityRegisterCallbacks");
    if (reg) reg(o_req, o_comp);
  }
  CUptiResult r = by_ctx ? ((ctx_kind_fn)f)(ctx, k) : ((kind_fn)f)(k);
  if (r == CUPTI_SUCCESS) o_kind_set(by_ctx ? ctx : NULL, k, 1);
  hand_leave();
  return r;
}

static int our_kind(CUpti_ActivityKind k) {
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i] == k) return 1;
  return 0;
}

static CUptiResult other_disable(const char *name, CUpti_ActivityKind k,
                                 CUcontext ctx, int by_ctx) {
  void *f = real_cupti(name);
  if (!f) return CUPTI_ERROR_NOT_INITIALIZED;
  hand_enter();
  if (active && subscriber && our_kind(k)) {
    /* a kind of ours, which the tool has not enabled while we hold CUPTI:
     * kept on for us, and off as far as the tool can tell */
    o_kind_set(by_ctx ? ctx : NULL, k, 0);
    hand_leave();
    return CUPTI_SUCCESS;
  }
  CUptiResult r = by_ctx ? ((ctx_kind_fn)f)(ctx, k) : ((kind_fn)f)(k);
  if (r == CUPTI_SUCCESS) {
    o_kind_set(by_ctx ? ctx : NULL, k, 0);
    if (wanted && !active && lib && other_gone() && !hand_nested()) come_back();
  }
  hand_leave();
  return r;
}

/* Another tool tearing CUPTI down (PyTorch's profiler does once it has
 * stopped): CUPTI forgets every subscriber, callback, kind and the clock.
 * Our records so far are flushed to us first; then, where we held CUPTI,
 * we attach again at once (the trace is marked degraded only if that
 * fails), and where we had stepped aside, we come back if the tool is
 * gone. */
typedef CUptiResult (*finalize_fn)(void);

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiFinalize(void) {
  finalize_fn real = (finalize_fn)real_cupti("cuptiFinalize");
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  hand_enter();
  if (hand_nested()) {
    /* from a tool's callback during one of our flushes: CUPTI is gone
     * under the operation in progress, which is not redone here */
    CUptiResult r = real();
    if (r == CUPTI_SUCCESS) ts_registered = 0;
    hand_leave();
    return r;
  }
  int held = active && subscriber;
  if (held) p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CUptiResult r = real();
  if (r == CUPTI_SUCCESS) {
    ts_registered = 0;
    other = NULL;
    o_req = NULL;
    o_comp = NULL;
    o_n = o_full = 0;
    if (held) {
      subscriber = NULL;
      active = 0;
      if (attach() != 0) {
        handed_over = 1;
        hooks->degraded(hooks->now_ns(), 1,
                        "CUPTI finalized by another tool in this process");
        hooks->wake();
      }
    } else if (wanted && !active && lib) {
      come_back();
    }
  }
  hand_leave();
  return r;
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiActivityEnable(CUpti_ActivityKind k) {
  return other_enable("cuptiActivityEnable", k, NULL, 0);
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiActivityDisable(CUpti_ActivityKind k) {
  return other_disable("cuptiActivityDisable", k, NULL, 0);
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiActivityEnableContext(CUcontext ctx, CUpti_ActivityKind k) {
  return other_enable("cuptiActivityEnableContext", k, ctx, 1);
}

__attribute__((visibility("default"))) CUptiResult CUPTIAPI
cuptiActivityDisableContext(CUcontext ctx, CUpti_ActivityKind k) {
  return other_disable("cuptiActivityDisableContext", k, ctx, 1);
}

static uint32_t copy_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return GPUPHASE_COPY_HTOD;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return GPUPHASE_COPY_DTOH;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return GPUPHASE_COPY_DTOD;
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return GPUPHASE_COPY_HTOH;
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return GPUPHASE_COPY_PTOP;
  default: return GPUPHASE_COPY_UNKNOWN;
  }
}

static uint32_t mem_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return GPUPHASE_MEM_PAGEABLE;
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return GPUPHASE_MEM_PINNED;
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return GPUPHASE_MEM_DEVICE;
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return GPUPHASE_MEM_MANAGED;
  case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return GPUPHASE_MEM_ARRAY;
  default: return GPUPHASE_MEM_UNKNOWN;
  }
}

/* The activity record fields gpuphase reads sit at the same offsets, with
 * the same sizes, in every record version that CUPTI 12.0 to 13.x delivers
 * (Kernel7..10, Memcpy4..6, MemcpyPtoP3..4, Memset3..4, Synchronization and
 * Synchronization2; newer versions append fields). They are read by offset,
 * so one build serves CUPTI 12 and 13 and builds with either toolkit; the
 * offsets are checked against the toolkit's own structs below. */
enum {
  K_REGS = 6, K_START = 16, K_END = 24, K_DEVICE = 40, K_STREAM = 48,
  K_GRID = 52, K_BLOCK = 64, K_SMEM_STATIC = 76, K_SMEM_DYNAMIC = 80,
  K_CORR = 92, K_NAME = 104, K_GRAPH = 156,
  M_COPY_KIND = 4, M_SRC_KIND = 5, M_DST_KIND = 6, M_FLAGS = 7, M_BYTES = 8,
  M_START = 16, M_END = 24, M_DEVICE = 32, M_STREAM = 40, M_CORR = 44,
  P_SRC_DEVICE = 44, P_DST_DEVICE = 52, P_CORR = 60,
  S_VALUE = 4, S_FLAGS = 48,
  Y_TYPE = 4, Y_START = 8, Y_END = 16, Y_CORR = 24, Y_STREAM = 32
};

#define OFFSET_IS(T, f, off)                                                   \
  _Static_assert(offsetof(T, f) == (off), #T "." #f " moved")
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000 &&              \
    CUPTI_API_VERSION < 130100
#define GP_KERNEL_T CUpti_ActivityKernel10
#elif defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 19 &&                \
    CUPTI_API_VERSION < 100
#define GP_KERNEL_T CUpti_ActivityKernel9
#endif
#ifdef GP_KERNEL_T
OFFSET_IS(GP_KERNEL_T, registersPerThread, K_REGS);
OFFSET_IS(GP_KERNEL_T, start, K_START);
OFFSET_IS(GP_KERNEL_T, end, K_END);
OFFSET_IS(GP_KERNEL_T, deviceId, K_DEVICE);
OFFSET_IS(GP_KERNEL_T, streamId, K_STREAM);
OFFSET_IS(GP_KERNEL_T, gridX, K_GRID);
OFFSET_IS(GP_KERNEL_T, blockX, K_BLOCK);
OFFSET_IS(GP_KERNEL_T, staticSharedMemory, K_SMEM_STATIC);
OFFSET_IS(GP_KERNEL_T, dynamicSharedMemory, K_SMEM_DYNAMIC);
OFFSET_IS(GP_KERNEL_T, correlationId, K_CORR);
OFFSET_IS(GP_KERNEL_T, name, K_NAME);
OFFSET_IS(GP_KERNEL_T, graphId, K_GRAPH);
#endif
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000 &&              \
    CUPTI_API_VERSION < 130100
OFFSET_IS(CUpti_ActivityMemcpy6, copyKind, M_COPY_KIND);
OFFSET_IS(CUpti_ActivityMemcpy6, flags, M_FLAGS);
OFFSET_IS(CUpti_ActivityMemcpy6, bytes, M_BYTES);
OFFSET_IS(CUpti_ActivityMemcpy6, deviceId, M_DEVICE);
OFFSET_IS(CUpti_ActivityMemcpy6, streamId, M_STREAM);
OFFSET_IS(CUpti_ActivityMemcpy6, correlationId, M_CORR);
OFFSET_IS(CUpti_ActivityMemcpyPtoP4, srcDeviceId, P_SRC_DEVICE);
OFFSET_IS(CUpti_ActivityMemcpyPtoP4, dstDeviceId, P_DST_DEVICE);
OFFSET_IS(CUpti_ActivityMemcpyPtoP4, correlationId, P_CORR);
OFFSET_IS(CUpti_ActivityMemset4, value, S_VALUE);
OFFSET_IS(CUpti_ActivityMemset4, flags, S_FLAGS);
OFFSET_IS(CUpti_ActivitySynchronization2, type, Y_TYPE);
OFFSET_IS(CUpti_ActivitySynchronization2, end, Y_END);
OFFSET_IS(CUpti_ActivitySynchronization2, correlationId, Y_CORR);
OFFSET_IS(CUpti_ActivitySynchronization2, streamId, Y_STREAM);
#endif

static uint64_t rd64(const void *rec, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)rec + off, sizeof v);
  return v;
}

static uint32_t rd32(const void *rec, size_t off) {
  uint32_t v;
  memcpy(&v, (const char *)rec + off, sizeof v);
  return v;
}

static uint8_t rd8(const void *rec, size_t off) {
  return ((const uint8_t *)rec)[off];
}

static uint16_t rd16(const void *rec, size_t off) {
  uint16_t v;
  memcpy(&v, (const char *)rec + off, sizeof v);
  return v;
}

/* A signed 32-bit count (grid and block sizes, shared memory); < 0 is 0. */
static uint32_t rdpos(const void *rec, size_t off) {
  int32_t v = (int32_t)rd32(rec, off);
  return v < 0 ? 0 : (uint32_t)v;
}

/* One activity record to the neutral form; 0 if not one we keep. */
static int convert(const CUpti_Activity *rec, struct gp_dev_activity *a) {
  memset(a, 0, sizeof *a);
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    a->kind = GP_DA_KERNEL;
    a->device = rd32(rec, K_DEVICE), a->stream = rd32(rec, K_STREAM);
    a->corr = rd32(rec, K_CORR);
    a->start = rd64(rec, K_START), a->end = rd64(rec, K_END);
    a->name = (const char *)(uintptr_t)rd64(rec, K_NAME);
    for (int i = 0; i < 3; i++) {
      a->grid[i] = rdpos(rec, K_GRID + 4 * (size_t)i);
      a->block[i] = rdpos(rec, K_BLOCK + 4 * (size_t)i);
    }
    a->regs = rd16(rec, K_REGS);
    a->smem_static = rdpos(rec, K_SMEM_STATIC);
    a->smem_dynamic = rdpos(rec, K_SMEM_DYNAMIC);
    a->graph_id = rd32(rec, K_GRAPH);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    a->kind = GP_DA_MEMCPY;
    a->device = rd32(rec, M_DEVICE), a->stream = rd32(rec, M_STREAM);
    a->corr = rd32(rec, M_CORR);
    a->start = rd64(rec, M_START), a->end = rd64(rec, M_END);
    a->bytes = rd64(rec, M_BYTES);
    a->copy_kind = copy_kind(rd8(rec, M_COPY_KIND));
    a->src_mem = mem_kind(rd8(rec, M_SRC_KIND));
    a->dst_mem = mem_kind(rd8(rec, M_DST_KIND));
    a->peer_device = -1;
    a->flags = (rd8(rec, M_FLAGS) & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
                   ? GPUPHASE_OP_ASYNC
                   : 0;
    return 1;
  case CUPTI_ACTIVITY_KIND_MEMCPY2:
    a->kind = GP_DA_MEMCPY;
    a->device = rd32(rec, P_SRC_DEVICE), a->stream = rd32(rec, M_STREAM);
    a->corr = rd32(rec, P_CORR);
    a->start = rd64(rec, M_START), a->end = rd64(rec, M_END);
    a->bytes = rd64(rec, M_BYTES);
    a->copy_kind = GPUPHASE_COPY_PTOP;
    a->src_mem = GPUPHASE_MEM_DEVICE, a->dst_mem = GPUPHASE_MEM_DEVICE;
    a->peer_device = (int32_t)rd32(rec, P_DST_DEVICE);
    a->flags = (rd8(rec, M_FLAGS) & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
                   ? GPUPHASE_OP_ASYNC
                   : 0;
    return 1;
  case CUPTI_ACTIVITY_KIND_MEMSET:
    a->kind = GP_DA_MEMSET;
    a->device = rd32(rec, M_DEVICE), a->stream = rd32(rec, M_STREAM);
    a->corr = rd32(rec, M_CORR);
    a->start = rd64(rec, M_START), a->end = rd64(rec, M_END);
    a->bytes = rd64(rec, M_BYTES), a->value = rd32(rec, S_VALUE);
    a->flags = (rd16(rec, S_FLAGS) & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC)
                   ? GPUPHASE_OP_ASYNC
                   : 0;
    return 1;
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
    uint32_t type = rd32(rec, Y_TYPE);
    a->kind = GP_DA_SYNC;
    a->stream = rd32(rec, Y_STREAM), a->corr = rd32(rec, Y_CORR);
    a->start = rd64(rec, Y_START), a->end = rd64(rec, Y_END);
    a->sync_type = type <= 4 ? type : 0;
    return 1;
  }
  default: return 0;
  }
}

size_t gp_cupti_consume(gp_dev_activity_cb cb, void *ctx) {
  struct done_buf local[MAX_BUFS];
  pthread_mutex_lock(&q_lock);
  size_t n = q_len;
  memcpy(local, queue, n * sizeof local[0]);
  q_len = 0;
  pthread_mutex_unlock(&q_lock);
  for (size_t i = 0; i < n; i++) {
    CUpti_Activity *rec = NULL;
    struct gp_dev_activity a;
    while (p_cuptiActivityGetNextRecord(local[i].buf, local[i].valid, &rec) ==
           CUPTI_SUCCESS)
      if (convert(rec, &a)) cb(&a, ctx);
    buf_free(local[i].buf);
  }
  if (n) {
    pthread_mutex_lock(&q_lock);
    bufs_out -= n;
    pthread_mutex_unlock(&q_lock);
  }
  return n;
}

int gp_cupti_wanted(void) {
  hand_enter();
  int w = wanted;
  hand_leave();
  return w;
}

uint64_t gp_cupti_dropped(void) {
  size_t d = 0;
  if (active && p_cuptiActivityGetNumDroppedRecords(NULL, 0, &d) != CUPTI_SUCCESS)
    d = 0;
  pthread_mutex_lock(&q_lock);
  uint64_t ours = dropped_by_us;
  pthread_mutex_unlock(&q_lock);
  return d + ours;
}

void gp_cupti_close(void) {
  hand_enter();
  wanted = 0;
  hand_leave();
  if (!active) return;
  active = 0;
  for (size_t i = 0; i < NKINDS; i++)
    p_cuptiActivityDisable(kinds[i]);
  if (subscriber) p_cuptiUnsubscribe(subscriber);
  subscriber = NULL;
}

void *gp_cupti_handle(void) {
  return lib;
}

void gp_cupti_forget(void) {
  /* The child inherits a copy of the parent's subscription state; CUDA
   * itself does not survive fork, so start over without calling CUPTI. */
  active = 0;
  wanted = 0;
  handed_over = 0;
  other = NULL;
  o_req = NULL;
  o_comp = NULL;
  o_n = o_full = 0;
  ts_registered = 0;
  hand_depth = 0;
  pthread_mutex_init(&hand_lock, NULL);
  stale_subscriber = subscriber;
  subscriber = NULL;
  pthread_mutex_init(&q_lock, NULL);
  q_len = 0;
  bufs_out = 0;
}
