/* The time-ordered walk behind the exports (timeline.h). Held in memory:
 * per thread, the calls waiting for their device records (at most hold_ns
 * of them, and at most QCAP) and a stack of open ranges; per stream, the
 * end of each lane; the open start/end ranges; the correlation map of the
 * waiting calls. Nothing grows with the number of events. */
#include "timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuphase/trace.h"
#include "measured.h"
#include "reader_ext.h"
#include "u64map.h"
#include "util.h"

const char *const gp_tl_arg_name[GP_TL_A_N] = {
#define GP_X(E, s) s,
    GP_TL_ARGS(GP_X)
#undef GP_X
};
const char *const gp_tl_strval[GP_TL_V_N] = {
#define GP_X(E, s) s,
    GP_TL_STRVALS(GP_X)
#undef GP_X
};

enum {
  QCAP = 1 << 16, /* calls held per thread */
  MAX_THREADS = 1 << 16,
  MAX_STREAMS = 4096, /* per process */
  MAX_LANES = 64,     /* per stream, and start/end range lanes per thread */
  MAX_DEPTH = 256,    /* nested ranges and nested calls per thread */
  MAX_GPUS = 256,
  MAX_OPEN = 4096 /* open start/end ranges */
};
#define ID_MASK ((1ull << 40) - 1)

/* name keys: one space per kind of name */
#define KEY_API(api) ((api) + 1)
#define KEY_KERNEL(sid) ((1ull << 40) | (sid))
#define KEY_COPY(k) ((2ull << 40) | (k))
#define KEY_MEMSET (3ull << 40)
#define KEY_SYNC(t) ((4ull << 40) | (t))
#define KEY_RANGE(sid) ((5ull << 40) | (sid))

struct pend { /* a call waiting for its device records */
  struct gpuphase_api a;
  uint64_t *flows;
  size_t nflows, cap;
  int expect; /* device records to wait for; -1 unknown (graph launch) */
  int got;
};

struct rng {
  uint64_t start, name;
  int shown; /* begin() written */
  uint64_t domain;
};

struct thr {
  uint64_t index, tid, name;
  uint64_t uuid, ranges_uuid, steps_uuid; /* 0: not declared */
  uint64_t lane_uuid[MAX_LANES];          /* start/end range lanes 1.. */
  unsigned char lane_open[MAX_LANES];
  struct rng *stack;
  size_t depth;
  uint64_t ends[MAX_DEPTH]; /* open API slices (nesting) */
  size_t nends;
  uint64_t step_end; /* end of the last step on this thread */
  struct pend *q;    /* ring of held calls */
  size_t qhead, qn, qcap;
  uint64_t qfirst; /* id of q[qhead] */
};

struct strm {
  int64_t device;
  uint64_t stream;
  unsigned nlanes;
  uint64_t lane_end[MAX_LANES], lane_uuid[MAX_LANES];
};

struct gpu {
  int64_t id;
  uint64_t uuid, name, sms;
  int has_props;
};

struct metric { /* a measured counter (METRIC), its track once sampled */
  uint64_t name, source, unit, scale, uuid;
  int64_t device;
};

struct openr { /* a start/end range */
  uint64_t id, start, name;
  uint32_t thr, lane;
  int shown;
};

struct walk {
  const struct gp_tl_opts *o;
  const struct gp_tl_sink *k;
  const struct gp_proc_res *r;
  struct gp_tl_stats *st;
  gpuphase_reader *rd;
  size_t proc;
  int64_t pid, bias;
  uint64_t uuid_next, flow_next, hold, from, to;
  uint64_t proc_uuid;
  int in_window, degraded, failed, oom;
  struct gp_idx thr_ix, api_ix;
  struct thr *thr;
  size_t nthr;
  struct {
    uint64_t name, cls;
  } * api;
  size_t napi;
  struct strm *str;
  size_t nstr;
  struct gp_u64map str_ix, corr, open_ix;
  struct gpu gpu[MAX_GPUS];
  size_t ngpu;
  struct openr *open;
  size_t nopen;
  size_t next_step;
  struct gp_idx met_ix; /* METRIC id -> met[] */
  struct metric *met;
  size_t nmet;
};

static uint64_t new_uuid(struct walk *w) {
  return ((uint64_t)(w->proc + 1) << 40) | ++w->uuid_next;
}

static const char *str(const struct walk *w, uint64_t id) {
  const char *s = gpuphase_reader_string(w->rd, id);
  return s ? s : "";
}

static int emit_track(struct walk *w, struct gp_tl_track *t) {
  t->proc = w->proc;
  t->pid = w->pid;
  if (w->k->track(w->k->ctx, t) < 0) return w->failed = 1, -1;
  return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 8;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, n * size);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* ---- threads */

static struct thr *thread_of(struct walk *w, uint64_t index) {
  uint32_t i;
  if (gp_idx_get(&w->thr_ix, index, &i)) return &w->thr[i];
  if (w->nthr >= MAX_THREADS) return NULL;
  struct thr *t = realloc(w->thr, (w->nthr + 1) * sizeof *t);
  if (!t) return w->oom = 1, NULL;
  w->thr = t;
  if (gp_idx_put(&w->thr_ix, index, (uint32_t)w->nthr) < 0)
    return w->oom = 1, NULL;
  t = &w->thr[w->nthr++];
  memset(t, 0, sizeof *t);
  t->index = index;
  t->tid = index;
  return t;
}

static int declare_thread(struct walk *w, struct thr *t) {
  if (t->uuid) return 0;
  char name[160];
  const char *n = str(w, t->name);
  if (*n)
    snprintf(name, sizeof name, "%s", n);
  else
    snprintf(name, sizeof name, "thread %llu", (unsigned long long)t->tid);
  t->uuid = new_uuid(w);
  struct gp_tl_track d = {.uuid = t->uuid,
                          .parent = w->proc_uuid,
                          .kind = GP_TL_THREAD,
                          .name = name,
                          .tid = (int64_t)(t->tid + (uint64_t)w->bias),
                          .order = (int)(t - w->thr)};
  return emit_track(w, &d);
}

static uint64_t sub_track(struct walk *w, struct thr *t, enum gp_tl_kind kind,
                          unsigned lane) {
  if (declare_thread(w, t) < 0) return 0;
  char key[64];
  snprintf(key, sizeof key, "p%zu-t%llu-ranges", w->proc,
           (unsigned long long)t->index);
  struct gp_tl_track d = {.uuid = new_uuid(w),
                          .parent = t->uuid,
                          .kind = kind,
                          .tid = (int64_t)(t->tid + (uint64_t)w->bias),
                          .lane = lane};
  d.name = kind == GP_TL_STEPS ? "steps" : "ranges";
  d.order = kind == GP_TL_STEPS ? 0 : 1;
  if (kind == GP_TL_RANGES) d.merge_key = key;
  return emit_track(w, &d) < 0 ? 0 : d.uuid;
}

/* ---- GPUs and streams */

static struct gpu *gpu_of(struct walk *w, int64_t id) {
  for (size_t i = 0; i < w->ngpu; i++)
    if (w->gpu[i].id == id) return &w->gpu[i];
  if (w->ngpu >= MAX_GPUS) return NULL;
  struct gpu *g = &w->gpu[w->ngpu++];
  memset(g, 0, sizeof *g);
  g->id = id;
  return g;
}

static int declare_gpu(struct walk *w, struct gpu *g) {
  if (g->uuid) return 0;
  char name[256], sms[32] = "";
  if (g->has_props)
    snprintf(sms, sizeof sms, ", %llu SMs", (unsigned long long)g->sms);
  const char *n = str(w, g->name);
  snprintf(name, sizeof name, "GPU %lld%s%s%s%s", (long long)g->id,
           *n || *sms ? " (" : "", n, sms, *n || *sms ? ")" : "");
  if (*n && !*sms) name[strlen(name) - 1] = ')';
  g->uuid = new_uuid(w);
  struct gp_tl_track d = {.uuid = g->uuid,
                          .parent = w->proc_uuid,
                          .kind = GP_TL_GPU,
                          .name = name,
                          .device = g->id,
                          .order = 1000 + (int)(g - w->gpu)};
  return emit_track(w, &d);
}

/* The lane of (device, stream) free at start (its last work ended by
 * then), declared when new; 0 when past the limits. */
static uint64_t lane_for(struct walk *w, int64_t device, uint64_t stream,
                         uint64_t start, uint64_t end) {
  uint64_t key = ((uint64_t)device << 48) ^ stream, *v;
  struct strm *s;
  if ((v = gp_u64map_get(&w->str_ix, key))) {
    s = &w->str[*v];
  } else {
    if (w->nstr >= MAX_STREAMS) return 0;
    s = realloc(w->str, (w->nstr + 1) * sizeof *s);
    if (!s) return w->oom = 1, 0;
    w->str = s;
    if (gp_u64map_put(&w->str_ix, key, w->nstr) < 0) return w->oom = 1, 0;
    s = &w->str[w->nstr++];
    memset(s, 0, sizeof *s);
    s->device = device;
    s->stream = stream;
  }
  unsigned l = 0;
  while (l < s->nlanes && s->lane_end[l] > start)
    l++;
  if (l == s->nlanes) {
    if (l >= MAX_LANES) return 0;
    struct gpu *g = gpu_of(w, device);
    if (!g || declare_gpu(w, g) < 0) return 0;
    char name[64], key2[80];
    if (stream == 0 || stream == GPUPHASE_SYNC_NO_STREAM)
      snprintf(name, sizeof name, "synchronization");
    else
      snprintf(name, sizeof name, "stream %llu", (unsigned long long)stream);
    snprintf(key2, sizeof key2, "p%zu-gpu%lld-s%llu", w->proc,
             (long long)device, (unsigned long long)stream);
    s->lane_uuid[l] = new_uuid(w);
    struct gp_tl_track d = {.uuid = s->lane_uuid[l],
                            .parent = g->uuid,
                            .kind = GP_TL_STREAM,
                            .name = name,
                            .device = device,
                            .stream = stream,
                            .lane = l,
                            .merge_key = key2,
                            .order = (int)(s - w->str) * MAX_LANES + (int)l};
    if (emit_track(w, &d) < 0) return 0;
    s->nlanes++;
  }
  s->lane_end[l] = end;
  return s->lane_uuid[l];
}

/* ---- slices */

static void arg_u(struct gp_tl_slice *s, enum gp_tl_arg_name n, uint64_t v) {
  if (s->nargs < GP_TL_MAXARGS)
    s->args[s->nargs++] = (struct gp_tl_arg){n, GP_TL_ARG_U, v, 0};
}
static void arg_i(struct gp_tl_slice *s, enum gp_tl_arg_name n, int64_t v) {
  if (s->nargs < GP_TL_MAXARGS)
    s->args[s->nargs++] = (struct gp_tl_arg){n, GP_TL_ARG_I, 0, v};
}
static void arg_s(struct gp_tl_slice *s, enum gp_tl_arg_name n, unsigned v) {
  if (v >= GP_TL_V_N) v = GP_TL_V_UNKNOWN;
  if (s->nargs < GP_TL_MAXARGS)
    s->args[s->nargs++] = (struct gp_tl_arg){n, GP_TL_ARG_S, v, 0};
}

static unsigned copy_val(uint64_t k) {
  return k <= GPUPHASE_COPY_DEFAULT ? (unsigned)k : GP_TL_V_UNKNOWN;
}
static unsigned mem_val(uint64_t m) {
  static const unsigned v[] = {GP_TL_V_UNKNOWN, GP_TL_V_PAGEABLE,
                               GP_TL_V_PINNED,  GP_TL_V_DEVMEM,
                               GP_TL_V_MANAGED, GP_TL_V_ARRAY};
  return m < sizeof v / sizeof *v ? v[m] : GP_TL_V_UNKNOWN;
}

static int put_slice(struct walk *w, struct gp_tl_slice *s) {
  if (s->end < s->start) s->end = s->start;
  if (s->end > w->st->last_ts) w->st->last_ts = s->end;
  w->st->slices++;
  if (w->k->slice(w->k->ctx, s) < 0) return w->failed = 1, -1;
  return 0;
}

static void api_slice(struct walk *w, struct thr *t, struct pend *p) {
  const struct gpuphase_api *a = &p->a;
  uint32_t ai;
  uint64_t cls = 0;
  const char *name = "?";
  if (gp_idx_get(&w->api_ix, a->api, &ai)) {
    cls = w->api[ai].cls;
    name = str(w, w->api[ai].name);
  }
  uint64_t end = a->end < a->start ? a->start : a->end;
  /* nest in the open calls of the thread, else shorten to fit */
  while (t->nends && t->ends[t->nends - 1] <= a->start)
    t->nends--;
  if (t->nends && end > t->ends[t->nends - 1]) {
    end = t->ends[t->nends - 1];
    w->st->clamped++;
  }
  if (t->nends >= MAX_DEPTH) {
    w->st->dropped++;
    return;
  }
  t->ends[t->nends++] = end;
  if (declare_thread(w, t) < 0) return;
  struct gp_tl_slice s = {.track = t->uuid,
                          .start = a->start,
                          .end = end,
                          .name = name,
                          .name_key = KEY_API(a->api),
                          .cat = "api"};
  if (a->ret) arg_i(&s, GP_TL_A_RESULT, a->ret); /* absent: success */
  if (a->bytes) arg_u(&s, GP_TL_A_BYTES, a->bytes);
  if (cls & (GPUPHASE_API_LAUNCH | GPUPHASE_API_COPY | GPUPHASE_API_MEMSET |
             GPUPHASE_API_ASYNC | GPUPHASE_API_WAIT) ||
      a->stream)
    arg_u(&s, GP_TL_A_STREAM, a->stream);
  if (a->device >= 0) arg_i(&s, GP_TL_A_DEVICE, a->device);
  if (cls & GPUPHASE_API_COPY)
    arg_s(&s, GP_TL_A_COPY_KIND, copy_val(a->copy_kind));
  if ((cls & GPUPHASE_API_LAUNCH) && a->grid) {
    arg_u(&s, GP_TL_A_GRID, a->grid);
    arg_u(&s, GP_TL_A_BLOCK, a->block);
  }
  s.flows_out = p->flows;
  s.nflows_out = p->nflows;
  w->st->flows += p->nflows;
  put_slice(w, &s);
}

/* Writes the held calls of t that are settled or waited long enough (all
 * when now is UINT64_MAX). */
static void release(struct walk *w, struct thr *t, uint64_t now) {
  while (t->qn && !w->failed) {
    struct pend *p = &t->q[t->qhead];
    int settled = p->expect >= 0 && p->got >= p->expect;
    if (!settled && t->qn <= QCAP && now != UINT64_MAX &&
        p->a.start + w->hold > now)
      break;
    api_slice(w, t, p);
    uint64_t *v;
    if (p->a.corr && (v = gp_u64map_get(&w->corr, p->a.corr)) &&
        (*v & ID_MASK) == (t->qfirst & ID_MASK) &&
        (*v >> 40) == (uint64_t)(t - w->thr))
      gp_u64map_del(&w->corr, p->a.corr, NULL);
    free(p->flows);
    t->qhead = (t->qhead + 1) % t->qcap;
    t->qn--;
    t->qfirst++;
  }
}

static int expected(const struct walk *w, const struct gpuphase_api *a,
                    uint64_t cls, const char *name) {
  if (w->degraded || a->ret != 0 || !a->corr) return 0;
  if (a->flags & GPUPHASE_OP_CAPTURED) return 0; /* became a graph node */
  if (cls & GPUPHASE_API_LAUNCH) return strstr(name, "GraphLaunch") ? -1 : 1;
  if (cls & (GPUPHASE_API_COPY | GPUPHASE_API_MEMSET)) return a->bytes ? 1 : 0;
  if (cls & (GPUPHASE_API_SYNC | GPUPHASE_API_WAIT)) return 1;
  return 0;
}

static void on_api(struct walk *w, const struct gpuphase_api *a) {
  struct thr *t = thread_of(w, a->thread);
  if (!t) {
    w->st->dropped++;
    return;
  }
  release(w, t, a->start);
  if (t->qn == t->qcap) {
    size_t n = t->qcap ? t->qcap * 2 : 64;
    struct pend *q = malloc(n * sizeof *q);
    if (!q) {
      w->oom = 1;
      return;
    }
    for (size_t i = 0; i < t->qn; i++)
      q[i] = t->q[(t->qhead + i) % t->qcap];
    free(t->q);
    t->q = q;
    t->qcap = n;
    t->qhead = 0;
  }
  struct pend *p = &t->q[(t->qhead + t->qn) % t->qcap];
  memset(p, 0, sizeof *p);
  p->a = *a;
  uint32_t ai;
  uint64_t cls = 0;
  const char *name = "";
  if (gp_idx_get(&w->api_ix, a->api, &ai)) {
    cls = w->api[ai].cls;
    name = str(w, w->api[ai].name);
  }
  p->expect = expected(w, a, cls, name);
  uint64_t id = t->qfirst + t->qn;
  t->qn++;
  /* the first call of a correlation id keeps it */
  if (p->expect && !gp_u64map_get(&w->corr, a->corr) &&
      gp_u64map_put(&w->corr, a->corr,
                    ((uint64_t)(t - w->thr) << 40) | (id & ID_MASK)) < 0)
    w->oom = 1;
  release(w, t, a->start);
}

/* The flow from the held call of corr to a device record: its id, or 0. */
static uint64_t link(struct walk *w, uint64_t corr) {
  uint64_t *v = corr ? gp_u64map_get(&w->corr, corr) : NULL;
  if (!v) {
    w->st->unlinked += corr != 0;
    return 0;
  }
  struct thr *t = &w->thr[*v >> 40];
  uint64_t off = ((*v & ID_MASK) - (t->qfirst & ID_MASK)) & ID_MASK;
  if (off >= t->qn) {
    w->st->unlinked++;
    return 0;
  }
  struct pend *p = &t->q[(t->qhead + off) % t->qcap];
  if (p->nflows == p->cap &&
      grow((void **)&p->flows, &p->cap, p->nflows + 1, sizeof *p->flows) < 0) {
    w->oom = 1;
    return 0;
  }
  uint64_t id = ((uint64_t)(w->proc + 1) << 40) | ++w->flow_next;
  p->flows[p->nflows++] = id;
  p->got++;
  return id;
}

static void device_slice(struct walk *w, int64_t device, uint64_t stream,
                         struct gp_tl_slice *s, uint64_t corr) {
  if (s->end < s->start) s->end = s->start;
  s->track = lane_for(w, device, stream, s->start, s->end);
  if (!s->track) {
    w->st->dropped++;
    return;
  }
  s->flow_in = link(w, corr);
  if (corr) arg_u(s, GP_TL_A_CORR, corr);
  w->st->device++;
  put_slice(w, s);
}

static void on_kernel(struct walk *w, const struct gpuphase_kernel *k) {
  struct gp_tl_slice s = {.start = k->start,
                          .end = k->end,
                          .name = str(w, k->name),
                          .name_key = KEY_KERNEL(k->name),
                          .cat = "kernel"};
  arg_u(&s, GP_TL_A_GRID, k->grid_x * k->grid_y * k->grid_z);
  arg_u(&s, GP_TL_A_BLOCK, k->block_x * k->block_y * k->block_z);
  arg_u(&s, GP_TL_A_REGS, k->regs);
  if (k->smem_static + k->smem_dynamic)
    arg_u(&s, GP_TL_A_SMEM, k->smem_static + k->smem_dynamic);
  if (k->graph_id) arg_u(&s, GP_TL_A_GRAPH, k->graph_id);
  device_slice(w, (int64_t)k->device, k->stream, &s, k->corr);
}

static void on_memcpy(struct walk *w, const struct gpuphase_memcpy *m) {
  static const char *const names[] = {
      "memcpy",      "memcpy HtoD", "memcpy DtoH", "memcpy DtoD",
      "memcpy HtoH", "memcpy PtoP", "memcpy"};
  uint64_t ck = copy_val(m->copy_kind);
  struct gp_tl_slice s = {.start = m->start,
                          .end = m->end,
                          .name = names[ck],
                          .name_key = KEY_COPY(ck),
                          .cat = "memcpy"};
  arg_u(&s, GP_TL_A_BYTES, m->bytes);
  arg_s(&s, GP_TL_A_COPY_KIND, (unsigned)ck);
  arg_s(&s, GP_TL_A_SRC, mem_val(m->src_mem));
  arg_s(&s, GP_TL_A_DST, mem_val(m->dst_mem));
  if (m->copy_kind == GPUPHASE_COPY_PTOP)
    arg_i(&s, GP_TL_A_PEER, m->peer_device);
  device_slice(w, (int64_t)m->device, m->stream, &s, m->corr);
}

static void on_memset(struct walk *w, const struct gpuphase_memset *m) {
  struct gp_tl_slice s = {.start = m->start,
                          .end = m->end,
                          .name = "memset",
                          .name_key = KEY_MEMSET,
                          .cat = "memset"};
  arg_u(&s, GP_TL_A_BYTES, m->bytes);
  arg_u(&s, GP_TL_A_VALUE, m->value);
  device_slice(w, (int64_t)m->device, m->stream, &s, m->corr);
}

static void on_sync(struct walk *w, const struct gpuphase_sync *y) {
  static const char *const names[] = {"sync", "sync event",
                                      "sync stream wait event", "sync stream",
                                      "sync context"};
  static const unsigned vals[] = {GP_TL_V_UNKNOWN, GP_TL_V_SYNC_EVENT,
                                  GP_TL_V_SYNC_WAIT, GP_TL_V_SYNC_STREAM,
                                  GP_TL_V_SYNC_CONTEXT};
  uint64_t ty = y->type <= GPUPHASE_SYNC_CONTEXT ? y->type : 0;
  struct gp_tl_slice s = {.start = y->start,
                          .end = y->end,
                          .name = names[ty],
                          .name_key = KEY_SYNC(ty),
                          .cat = "sync"};
  arg_s(&s, GP_TL_A_SYNC_TYPE, vals[ty]);
  device_slice(w, (int64_t)y->device, y->stream, &s, y->corr);
}

/* ---- ranges and steps */

static uint64_t clampf(const struct walk *w, uint64_t t) {
  return t < w->from ? w->from : t;
}

static int range_begin(struct walk *w, uint64_t track, uint64_t ts,
                       uint64_t name) {
  w->st->ranges++;
  if (ts > w->st->last_ts) w->st->last_ts = ts; /* where open ones close */
  if (w->k->begin(w->k->ctx, track, ts, str(w, name), KEY_RANGE(name)) < 0)
    return w->failed = 1, -1;
  return 0;
}

static int range_end(struct walk *w, uint64_t track, uint64_t ts,
                     uint64_t start, uint64_t name) {
  if (ts > w->st->last_ts) w->st->last_ts = ts;
  if (w->k->end(w->k->ctx, track, ts, start, str(w, name)) < 0)
    return w->failed = 1, -1;
  return 0;
}

static uint64_t ranges_track(struct walk *w, struct thr *t) {
  if (!t->ranges_uuid) t->ranges_uuid = sub_track(w, t, GP_TL_RANGES, 0);
  return t->ranges_uuid;
}

static void show_push(struct walk *w, struct thr *t, struct rng *g) {
  uint64_t tr = ranges_track(w, t);
  if (tr && !range_begin(w, tr, clampf(w, g->start), g->name)) g->shown = 1;
}

static uint64_t lane_track(struct walk *w, struct thr *t, unsigned l) {
  if (!t->lane_uuid[l]) t->lane_uuid[l] = sub_track(w, t, GP_TL_RANGES, l + 1);
  return t->lane_uuid[l];
}

static void show_open(struct walk *w, struct openr *o) {
  uint64_t tr = lane_track(w, &w->thr[o->thr], o->lane);
  if (tr && !range_begin(w, tr, clampf(w, o->start), o->name)) o->shown = 1;
}

static void on_range(struct walk *w, const struct gpuphase_range *g) {
  struct thr *t = thread_of(w, g->thread);
  if (!t) {
    w->st->dropped++;
    return;
  }
  uint64_t *v;
  switch (g->op) {
  case GPUPHASE_RANGE_PUSH:
    if (t->depth >= MAX_DEPTH) {
      t->depth++; /* counted, so that its pop matches */
      w->st->dropped++;
      return;
    }
    if (!t->stack && !(t->stack = calloc(MAX_DEPTH, sizeof *t->stack))) {
      w->oom = 1;
      return;
    }
    t->stack[t->depth] = (struct rng){g->start, g->name, 0, g->domain};
    if (w->in_window) show_push(w, t, &t->stack[t->depth]);
    t->depth++;
    break;
  case GPUPHASE_RANGE_POP: {
    if (!t->depth) return;
    if (t->depth > MAX_DEPTH) { /* past the limit: not stored */
      t->depth--;
      return;
    }
    /* the innermost push of its domain; ranges above it on the track end
     * with it (a track's slices nest) and begin again after it */
    size_t i = t->depth;
    while (i > 0 && t->stack[i - 1].domain != g->domain)
      i--;
    if (!i) return;
    i--;
    for (size_t k = t->depth; k-- > i;)
      if (t->stack[k].shown)
        range_end(w, t->ranges_uuid, g->start, clampf(w, t->stack[k].start),
                  t->stack[k].name);
    memmove(&t->stack[i], &t->stack[i + 1],
            (t->depth - i - 1) * sizeof *t->stack);
    t->depth--;
    for (size_t k = i; k < t->depth; k++)
      if (t->stack[k].shown) {
        t->stack[k].shown = 0;
        t->stack[k].start = g->start;
        if (w->in_window) show_push(w, t, &t->stack[k]);
      }
    break;
  }
  case GPUPHASE_RANGE_START: {
    if (w->nopen >= MAX_OPEN || gp_u64map_get(&w->open_ix, g->id)) {
      w->st->dropped++;
      return;
    }
    unsigned l = 0;
    while (l < MAX_LANES && t->lane_open[l])
      l++;
    if (l == MAX_LANES) {
      w->st->dropped++;
      return;
    }
    struct openr *o = realloc(w->open, (w->nopen + 1) * sizeof *o);
    if (!o || gp_u64map_put(&w->open_ix, g->id, w->nopen) < 0) {
      if (o) w->open = o;
      w->oom = 1;
      return;
    }
    w->open = o;
    o = &w->open[w->nopen++];
    *o = (struct openr){g->id, g->start, g->name, (uint32_t)(t - w->thr), l, 0};
    t->lane_open[l] = 1;
    if (w->in_window) show_open(w, o);
    break;
  }
  case GPUPHASE_RANGE_END: {
    uint64_t i;
    if (!(v = gp_u64map_get(&w->open_ix, g->id))) return;
    i = *v;
    struct openr *o = &w->open[i];
    struct thr *ot = &w->thr[o->thr];
    if (o->shown)
      range_end(w, ot->lane_uuid[o->lane], g->start, clampf(w, o->start),
                o->name);
    ot->lane_open[o->lane] = 0;
    gp_u64map_del(&w->open_ix, g->id, NULL);
    if (i != w->nopen - 1) {
      w->open[i] = w->open[w->nopen - 1];
      gp_u64map_put(&w->open_ix, w->open[i].id, i);
    }
    w->nopen--;
    break;
  }
  }
}

/* Steps that start by `now` (all when now is UINT64_MAX), cut to the
 * window. */
static void steps_until(struct walk *w, uint64_t now) {
  const struct gp_steps_res *sr = w->r ? &w->r->steps : NULL;
  if (!sr || !sr->v) return;
  uint64_t to = w->to ? w->to : UINT64_MAX;
  while (w->next_step < sr->n && !w->failed) {
    const struct gp_step *x = &sr->v[w->next_step];
    if (x->start > now || x->start >= to) break;
    size_t i = w->next_step++;
    if (x->end <= w->from && x->end != x->start) continue;
    struct thr *t = thread_of(w, x->thread);
    if (!t) continue;
    if (!t->steps_uuid && !(t->steps_uuid = sub_track(w, t, GP_TL_STEPS, 0)))
      continue;
    uint64_t s0 = clampf(w, x->start), e = x->end < to ? x->end : to;
    if (s0 < t->step_end) { /* steps of one thread never overlap */
      w->st->clamped++;
      s0 = t->step_end;
    }
    if (e < s0) e = s0;
    t->step_end = e;
    char name[48];
    snprintf(name, sizeof name, "step #%zu", i);
    struct gp_tl_slice s = {.track = t->steps_uuid,
                            .start = s0,
                            .end = e,
                            .name = name,
                            .cat = "step"};
    arg_u(&s, GP_TL_A_DURATION, x->end - x->start);
    if (i < sr->warmup) arg_u(&s, GP_TL_A_WARMUP, 1);
    put_slice(w, &s);
  }
}

/* The window opens: ranges already open are shown from its start. */
static void enter_window(struct walk *w) {
  w->in_window = 1;
  for (size_t i = 0; i < w->nthr; i++)
    for (size_t d = 0; d < w->thr[i].depth && d < MAX_DEPTH; d++)
      if (!w->thr[i].stack[d].shown)
        show_push(w, &w->thr[i], &w->thr[i].stack[d]);
  for (size_t i = 0; i < w->nopen; i++)
    if (!w->open[i].shown) show_open(w, &w->open[i]);
}

/* The walk ends at `at`: open ranges are closed there, innermost first. */
static void close_all(struct walk *w, uint64_t at) {
  for (size_t i = 0; i < w->nthr; i++) {
    struct thr *t = &w->thr[i];
    for (size_t d = t->depth < MAX_DEPTH ? t->depth : MAX_DEPTH; d-- > 0;)
      if (t->stack[d].shown)
        range_end(w, t->ranges_uuid, at, clampf(w, t->stack[d].start),
                  t->stack[d].name);
    t->depth = 0;
  }
  for (size_t i = 0; i < w->nopen; i++)
    if (w->open[i].shown)
      range_end(w, w->thr[w->open[i].thr].lane_uuid[w->open[i].lane], at,
                clampf(w, w->open[i].start), w->open[i].name);
  w->nopen = 0;
}

/* ---- counters: the report's over-time windows */

static void counters(struct walk *w) {
  if (!w->r) return;
  uint64_t to = w->to ? w->to : UINT64_MAX;
  for (size_t d = 0; d < w->r->ndev && !w->failed; d++) {
    const struct gp_device_res *dv = &w->r->dev[d];
    if (dv->id < 0 || !dv->nwin || !dv->win_ns) continue;
    struct gpu *g = gpu_of(w, dv->id);
    if (!g || declare_gpu(w, g) < 0) continue;
    uint64_t uu[2] = {new_uuid(w), new_uuid(w)};
    static const char *const names[2] = {"busy %", "memory allocated"};
    for (int c = 0; c < 2; c++) {
      struct gp_tl_track t = {.uuid = uu[c],
                              .parent = g->uuid,
                              .kind = GP_TL_COUNTER,
                              .name = names[c],
                              .device = dv->id,
                              .unit = c,
                              .order = c - 2};
      if (emit_track(w, &t) < 0) return;
    }
    uint64_t wend = w->r->wstart + w->r->window_ns;
    for (size_t i = 0; i < dv->nwin && !w->failed; i++) {
      uint64_t ws = w->r->wstart + i * dv->win_ns;
      uint64_t len = wend - ws < dv->win_ns ? wend - ws : dv->win_ns;
      if (ws >= to || ws >= wend) break;
      if (ws + len <= w->from) continue;
      double busy =
          len ? 100.0 * (double)dv->win[i].cat[GP_CAT_KERNEL] / (double)len : 0;
      uint64_t ts = clampf(w, ws);
      if (w->k->counter(w->k->ctx, uu[0], ts, busy) < 0 ||
          w->k->counter(w->k->ctx, uu[1], ts, (double)dv->win[i].mem_peak) < 0)
        w->failed = 1;
      w->st->counters += 2;
    }
  }
}

/* ---- measured counters (METRIC and SAMPLE records): a counter track per
 * metric under its GPU, declared at its first sample in the window */

static void on_metric(struct walk *w, const struct gpuphase_metric *m) {
  uint32_t i;
  if (!gp_idx_get(&w->met_ix, m->metric, &i)) {
    if (w->nmet >= 4096) return; /* more than any device has: ignored */
    void *p = realloc(w->met, (w->nmet + 1) * sizeof *w->met);
    if (!p || gp_idx_put(&w->met_ix, m->metric, (uint32_t)w->nmet) < 0) {
      if (p) w->met = p;
      w->oom = 1;
      return;
    }
    w->met = p;
    i = (uint32_t)w->nmet++;
  }
  w->met[i] = (struct metric){m->name, m->source, m->unit,
                              m->scale ? m->scale : 1, 0, m->device};
}

static void on_sample(struct walk *w, const struct gpuphase_sample *x) {
  uint32_t i;
  if (x->start < w->from || (w->to && x->start >= w->to) ||
      !gp_idx_get(&w->met_ix, x->metric, &i))
    return;
  struct metric *m = &w->met[i];
  if (!m->uuid) {
    struct gpu *g = gpu_of(w, m->device);
    if (!g || declare_gpu(w, g) < 0) return;
    static const char *const unit[] = {"",  "%",  "B",    "B/s", "MHz",
                                       "J", "W",  "degC", "mask", "count"};
    const char *u = m->unit < sizeof unit / sizeof *unit ? unit[m->unit] : "";
    char name[160];
    snprintf(name, sizeof name, "%.100s (%s)", str(w, m->name),
             gp_msrc_name((int)m->source));
    m->uuid = new_uuid(w);
    struct gp_tl_track t = {.uuid = m->uuid,
                            .parent = g->uuid,
                            .kind = GP_TL_COUNTER,
                            .name = name,
                            .device = m->device,
                            .unit = m->unit == GPUPHASE_UNIT_PERCENT ? GP_TL_UNIT_PERCENT
                                    : m->unit == GPUPHASE_UNIT_BYTES ? GP_TL_UNIT_BYTES
                                                                     : GP_TL_UNIT_OTHER,
                            .unit_name = u,
                            .order = 16 + (int)i};
    if (emit_track(w, &t) < 0) return;
  }
  if (w->k->counter(w->k->ctx, m->uuid, clampf(w, x->start),
                    (double)x->value / (double)m->scale) < 0)
    w->failed = 1;
  w->st->counters++;
}

/* ---- the walk */

static int declare_process(struct walk *w) {
  const struct gpuphase_header *h = gpuphase_reader_header(w->rd);
  char name[256], rank[32] = "";
  if (h->rank >= 0)
    snprintf(rank, sizeof rank, "rank %lld: ", (long long)h->rank);
  snprintf(name, sizeof name, "%s%.160s (pid %lld%s%.40s)", rank,
           h->cmdline && *h->cmdline ? h->cmdline : "?", (long long)h->pid,
           h->host && *h->host ? " on " : "", h->host ? h->host : "");
  w->proc_uuid = new_uuid(w);
  struct gp_tl_track t = {.uuid = w->proc_uuid,
                          .kind = GP_TL_PROCESS,
                          .name = name,
                          .order = (int)w->proc};
  return emit_track(w, &t);
}

static void on_meta(struct walk *w, const struct gpuphase_record *rec) {
  if (rec->kind == GPUPHASE_REC_THREAD) {
    struct thr *t = thread_of(w, rec->u.thread.thread);
    if (t) t->tid = rec->u.thread.tid, t->name = rec->u.thread.name;
  } else if (rec->kind == GPUPHASE_REC_API_DEF) {
    uint32_t i;
    if (!gp_idx_get(&w->api_ix, rec->u.api_def.api, &i)) {
      void *p = realloc(w->api, (w->napi + 1) * sizeof *w->api);
      if (!p ||
          gp_idx_put(&w->api_ix, rec->u.api_def.api, (uint32_t)w->napi) < 0) {
        if (p) w->api = p;
        w->oom = 1;
        return;
      }
      w->api = p;
      i = (uint32_t)w->napi++;
    }
    w->api[i].name = rec->u.api_def.name;
    w->api[i].cls = rec->u.api_def.cls;
  } else if (rec->kind == GPUPHASE_REC_DEVICE) {
    struct gpu *g = gpu_of(w, (int64_t)rec->u.device.device);
    if (g && !g->uuid) {
      g->name = rec->u.device.name;
      g->sms = rec->u.device.sms;
      g->has_props = 1;
    }
  } else if (rec->kind == GPUPHASE_REC_STATE) {
    w->degraded = rec->u.state.state == 1;
  } else if (rec->kind == GPUPHASE_REC_METRIC) {
    on_metric(w, &rec->u.metric);
  } else if (rec->kind == GPUPHASE_REC_SAMPLE) {
    on_sample(w, &rec->u.sample);
  }
}

/* The start of a timed record, or 0 for metadata. */
static int timed(const struct gpuphase_record *rec, uint64_t *t) {
  switch (rec->kind) {
#define GP_X(k, f)                                                             \
  case GPUPHASE_REC_##k:                                                       \
    *t = rec->u.f.start;                                                       \
    return 1;
    GP_X(API, api)
    GP_X(KERNEL, kernel)
    GP_X(MEMCPY, memcpy)
    GP_X(MEMSET, memset) GP_X(SYNC, sync) GP_X(RANGE, range)
#undef GP_X
        default : return 0;
  }
}

static void sweep(struct walk *w, uint64_t now) {
  for (size_t i = 0; i < w->nthr && !w->failed; i++)
    release(w, &w->thr[i], now);
}

static int run(struct walk *w) {
  const struct gpuphase_record *rec;
  uint64_t n = 0, to = w->to ? w->to : UINT64_MAX, t = 0, stop = 0;
  int rc;
  if (declare_process(w) < 0) return 0;
  w->degraded =
      (gpuphase_reader_header(w->rd)->flags & GPUPHASE_FLAG_DEGRADED) != 0;
  while (!w->failed && !w->oom && (rc = gp_reader_next_ref(w->rd, &rec)) == 1) {
    if (!timed(rec, &t)) {
      on_meta(w, rec);
      continue;
    }
    if (t >= to) {
      stop = to;
      break;
    }
    steps_until(w, t);
    if (t >= w->from && !w->in_window) enter_window(w);
    if ((++n & 1023) == 0) sweep(w, t);
    if (rec->kind == GPUPHASE_REC_RANGE) {
      on_range(w, &rec->u.range);
      continue;
    }
    if (t < w->from) continue;
    switch (rec->kind) {
    case GPUPHASE_REC_API:
      on_api(w, &rec->u.api);
      break;
    case GPUPHASE_REC_KERNEL:
      on_kernel(w, &rec->u.kernel);
      break;
    case GPUPHASE_REC_MEMCPY:
      on_memcpy(w, &rec->u.memcpy);
      break;
    case GPUPHASE_REC_MEMSET:
      on_memset(w, &rec->u.memset);
      break;
    case GPUPHASE_REC_SYNC:
      on_sync(w, &rec->u.sync);
      break;
    }
  }
  if (w->failed || w->oom) return 0;
  if (rc < 0 && !stop) return rc;
  if (!w->in_window && (stop || w->st->last_ts >= w->from)) enter_window(w);
  sweep(w, UINT64_MAX);
  steps_until(w, UINT64_MAX);
  uint64_t at = stop ? stop : w->st->last_ts;
  if (at < w->from) at = w->from;
  close_all(w, at);
  counters(w);
  return 0;
}

int gp_timeline_walk(const char *path, size_t proc, const struct gp_proc_res *r,
                     const struct gp_tl_opts *o, const struct gp_tl_sink *sink,
                     struct gp_tl_stats *st, char *err, size_t errlen) {
  int code = 0;
  *err = 0;
  memset(st, 0, sizeof *st);
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, errlen);
  if (!rd) return -1;
  struct walk *w = calloc(1, sizeof *w);
  if (!w) {
    gpuphase_reader_close(rd);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  w->o = o;
  w->k = sink;
  w->r = r;
  w->st = st;
  w->rd = rd;
  w->proc = proc;
  w->pid = (int64_t)((uint64_t)gpuphase_reader_header(rd)->pid +
                     (uint64_t)o->id_bias);
  w->bias = o->id_bias;
  w->hold = o->hold_ns ? o->hold_ns : 1000000000ull;
  w->from = o->from;
  w->to = o->to;
  int rc = run(w);
  if (w->oom)
    snprintf(err, errlen, "%s: out of memory", path);
  else if (rc < 0) {
    const char *m = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: corrupt trace at byte %llu: %s", path,
             (unsigned long long)gpuphase_reader_offset(rd),
             m && *m ? m : gpuphase_strerror(rc));
  }
  int bad = w->oom || w->failed || rc < 0;
  for (size_t i = 0; i < w->nthr; i++) {
    struct thr *t = &w->thr[i];
    for (size_t j = 0; j < t->qn; j++)
      free(t->q[(t->qhead + j) % t->qcap].flows);
    free(t->q);
    free(t->stack);
  }
  free(w->thr);
  free(w->api);
  free(w->str);
  free(w->open);
  gp_idx_free(&w->thr_ix);
  gp_idx_free(&w->api_ix);
  gp_idx_free(&w->met_ix);
  free(w->met);
  gp_u64map_free(&w->str_ix);
  gp_u64map_free(&w->corr);
  gp_u64map_free(&w->open_ix);
  free(w);
  gpuphase_reader_close(rd);
  return bad ? -1 : 0;
}
