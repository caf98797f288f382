/* One handler per record kind, and the tables they look things up in. */
#include "attr_steps.h"

#include <stdlib.h>
#include <string.h>

int gp_attr_grow(struct gp_attr *a, void **v, size_t *cap, size_t need,
                 size_t elt) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 8;
  while (ncap < need)
    ncap *= 2;
  void *p = realloc(*v, ncap * elt);
  if (!p) {
    a->oom = 1;
    return -1;
  }
  *v = p;
  *cap = ncap;
  return 0;
}

#define POOL_GET(a, pool, out)                                                 \
  do {                                                                         \
    if ((pool).free) {                                                         \
      out = (pool).free - 1;                                                   \
      (pool).free = (pool).v[out].next_free;                                   \
    } else if (GROW(a, (pool).v, (pool).cap, (pool).n + 1) == 0) {             \
      out = (uint32_t)(pool).n++;                                              \
      memset(&(pool).v[out], 0, sizeof *(pool).v);                             \
    } else {                                                                   \
      out = UINT32_MAX;                                                        \
    }                                                                          \
  } while (0)

const char *gp_attr_str(const struct gp_attr *a, uint64_t id) {
  uint32_t i;
  return gp_idx_get(&a->str_map, id, &i) ? a->strs[i] : NULL;
}

static int put_index(struct gp_attr *a, struct gp_u64map *m, uint64_t k,
                     size_t i) {
  if (gp_u64map_put(m, k, i) == 0) return 0;
  a->oom = 1;
  return -1;
}

static int put_idx(struct gp_attr *a, struct gp_idx *x, uint64_t k, size_t i) {
  if (gp_idx_put(x, k, (uint32_t)i) == 0) return 0;
  a->oom = 1;
  return -1;
}

struct dev *gp_attr_dev_add(struct gp_attr *a, int64_t id) {
  if (GROW(a, a->dev, a->capdev, a->ndev + 1) < 0) return NULL;
  /* A device first seen now was idle until now, exactly like the "any
   * device" timeline: start from a copy of it. */
  struct dev *w = &a->dev[WSLOT], *d = &a->dev[a->ndev];
  gp_flush_dev(a, w, a->T);
  *d = *w;
  d->id = id;
  d->win = NULL;
  d->capwin = 0;
  d->kq = NULL;
  d->kq_head = d->kq_n = d->kq_cap = 0;
  if (w->capwin) {
    if (!gp_win_at(a, d, w->capwin - 1)) return NULL;
    memcpy(d->win, w->win, w->capwin * sizeof *w->win);
  }
  uint32_t slot = (uint32_t)a->ndev;
  for (size_t p = 0; p < a->nph; p++) {
    /* the destination first: growing the column moves the source */
    struct gp_phase_dev *dst = gp_attr_pd(a, &a->ph[p], slot);
    if (dst) *dst = a->ph[p].pd[WSLOT];
  }
  for (size_t c = 0; c < a->calls.n; c++) { /* copied provisional time */
    struct acall *ac = &a->calls.v[c];
    for (size_t l = 0, n = ac->nled; ac->live && l < n; l++) {
      if (ac->led[l].dev != WSLOT) continue;
      if (GROW(a, ac->led, ac->capled, ac->nled + 1) < 0) return NULL;
      ac->led[ac->nled] = ac->led[l];
      ac->led[ac->nled++].dev = slot;
    }
  }
  if (put_idx(a, &a->dev_map, (uint64_t)id, a->ndev) < 0) return NULL;
  a->ndev++;
  gp_cs_dev_added(a->cs, slot);
  /* the windows' budget is shared by one more device */
  if (a->started) gp_win_fit(a);
  return d;
}

struct thr *gp_attr_thr_add(struct gp_attr *a, uint64_t index) {
  if (GROW(a, a->thr, a->capthr, a->nthr + 1) < 0) return NULL;
  struct thr *t = &a->thr[a->nthr];
  memset(t, 0, sizeof *t);
  t->index = index;
  t->pend_t = UINT64_MAX;
  t->seg_t = a->wstart; /* not in CUDA since the window began */
  if (put_idx(a, &a->thr_map, index, a->nthr) < 0) return NULL;
  a->nthr++;
  return t;
}

struct gp_phase_dev *gp_attr_pd(struct gp_attr *a, struct phase *p,
                                uint32_t slot) {
  if (slot >= p->npd) {
    size_t old = p->npd, cap = p->npd;
    if (GROW(a, p->pd, cap, a->capdev > slot ? a->capdev : slot + 1) < 0)
      return NULL;
    memset(p->pd + old, 0, (cap - old) * sizeof *p->pd);
    p->npd = cap;
  }
  return &p->pd[slot];
}

/* apidef.cl0 and .mem: what on_api would find out from cls and
 * graph_role for every call (call_class's tests without the record's) */
static void api_derive(struct apidef *d) {
  uint64_t cls = d->cls;
  if (cls & GPUPHASE_API_SYNC)
    d->cl0 = CALL_BLK;
  else if ((cls & GPUPHASE_API_FREE) && !(cls & GPUPHASE_API_ASYNC))
    d->cl0 = CALL_BLK;
  else if (!(cls & GPUPHASE_API_COPY))
    d->cl0 = cls & (GPUPHASE_API_LAUNCH | GPUPHASE_API_MEMSET |
                    GPUPHASE_API_WAIT | GPUPHASE_API_ASYNC)
                 ? CALL_NB
                 : CALL_OTHER;
  else if (!(cls & GPUPHASE_API_ASYNC))
    d->cl0 = CALL_BLK;
  else
    d->cl0 = CALL_N;
  d->ends_steps = cls & GPUPHASE_API_QUERY ? 0
                 : cls & GPUPHASE_API_SYNC  ? 1
                 : cls & GPUPHASE_API_COPY  ? 2
                                            : 0;
  d->mem = (cls & (GPUPHASE_API_ALLOC | GPUPHASE_API_FREE |
                   GPUPHASE_API_RESET)) ||
           d->graph_role;
}

static struct apidef *api_add(struct gp_attr *a, uint64_t id) {
  if (GROW(a, a->api, a->capapi, a->napi + 1) < 0) return NULL;
  struct apidef *d = &a->api[a->napi];
  memset(d, 0, sizeof *d);
  d->id = id;
  api_derive(d);
  if (put_idx(a, &a->api_map, id, a->napi) < 0) return NULL;
  a->napi++;
  return d;
}

/* The entry of API id, added when first seen; NULL: no memory. */
static inline struct apidef *api_get(struct gp_attr *a, uint64_t id) {
  uint32_t i;
  return gp_idx_get(&a->api_map, id, &i) ? &a->api[i] : api_add(a, id);
}

static uint32_t phase_get(struct gp_attr *a, uint64_t name) {
  uint32_t i;
  if (gp_idx_get(&a->ph_map, name, &i)) return i;
  if (GROW(a, a->ph, a->capph, a->nph + 1) < 0) return NOPHASE;
  struct phase *p = &a->ph[a->nph];
  memset(p, 0, sizeof *p);
  p->name = name;
  if (put_idx(a, &a->ph_map, name, a->nph) < 0) return NOPHASE;
  return (uint32_t)a->nph++;
}

gp_attr *gp_attr_new(const struct gp_report_opts *o) {
  struct gp_attr *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  if (o) a->o = *o;
  if (!a->o.window_ns) a->o.window_ns = GP_DEFAULT_WINDOW_NS;
  a->win_asked = a->o.window_ns;
  if (!a->o.hold_ns) a->o.hold_ns = 1000000000ull;
  a->hold_t = UINT64_MAX;
  a->due_t = UINT64_MAX;
  /* Slot 0: the timeline of "some device", fed only by calls made while
   * the current device was unknown; new devices start as a copy of it. */
  if (GROW(a, a->dev, a->capdev, 1) < 0) {
    free(a);
    return NULL;
  }
  memset(a->dev, 0, sizeof *a->dev);
  a->dev[WSLOT].id = -1;
  a->ndev = 1;
  if (gp_steps_init(a) < 0 || !(a->cs = gp_cs_new())) {
    gp_steps_free(a);
    free(a->dev);
    free(a);
    return NULL;
  }
  return a;
}

void gp_attr_free(gp_attr *a) {
  if (!a) return;
  struct gp_idx *idx[] = {&a->str_map, &a->thr_map, &a->api_map,
                          &a->dev_map, &a->k_map,   &a->ph_map};
  for (size_t i = 0; i < sizeof idx / sizeof *idx; i++)
    gp_idx_free(idx[i]);
  gp_u64map_free(&a->corr);
  gp_u64map_free(&a->sdev);
  gp_u64map_free(&a->edev);
  gp_u64map_free(&a->allocs);
  gp_u64map_free(&a->ranges);
  free(a->gnodes);
  free(a->gexecs);
  for (size_t i = 0; i < a->nstrs; i++)
    free(a->strs[i]);
  for (size_t i = 0; i < a->nthr; i++)
    free(a->thr[i].stk);
  for (size_t i = 0; i < a->ndev; i++)
    free(a->dev[i].win), free(a->dev[i].kq);
  for (size_t i = 0; i < a->nk; i++) {
    gp_hist_free(&a->k[i].dur);
    free(a->k[i].seen_more);
  }
  for (size_t i = 0; i < a->nph; i++) {
    gp_hist_free(&a->ph[i].dur);
    free(a->ph[i].pd);
  }
  for (size_t i = 0; i < a->calls.n; i++)
    free(a->calls.v[i].led);
  free(a->strs);
  free(a->thr);
  free(a->api);
  free(a->dev);
  free(a->k);
  free(a->ph);
  free(a->active);
  free(a->und);
  free(a->calls.v);
  free(a->waits.v);
  free(a->blks.v);
  free(a->ropens.v);
  free(a->heap);
  free(a->hold);
  gp_steps_free(a);
  gp_cs_free(a->cs);
  free(a);
}

/* ---- the window and the clock of the sweep ---- */

/* Prepares the sweep for a timed record starting at s and ending at end:
 * returns the start clipped to the sweep time, or UINT64_MAX when the record
 * lies before the window (nothing to account). */
static uint64_t __attribute__((noinline))
timed_full(struct gp_attr *a, uint64_t s, uint64_t end, int opens_window) {
  if (!a->started) {
    if (!opens_window) return UINT64_MAX;
    gp_sweep_start(a, s);
  }
  a->wend = end > a->wend ? end : a->wend;
  if (a->wend >= a->wlimit) gp_win_fit(a);
  if (s < a->T) {
    a->diag.late++;
    return a->T;
  }
  if (a->due_t <= s)
    gp_sweep_advance(a, s);
  else
    a->T = s;
  return s;
}

/* timed_full, inline for a record that leaves the windows as they are in
 * a sweep under way: wlimit is 0 until the sweep starts, so that one test
 * stands for both. Always inline: every timed record comes here, and out
 * of line it cost a call and its saved registers each time. */
static inline __attribute__((always_inline)) uint64_t
timed(struct gp_attr *a, uint64_t s, uint64_t end, int opens_window) {
  /* diag.timed: the records that do not come here are counted instead
   * (untimed, in feed_other), not the many that do */
  /* every caller's end is >= s; a store either way, so no branch on
   * which record ends last */
  uint64_t wend = end > a->wend ? end : a->wend;
  if (__builtin_expect(wend >= a->wlimit, 0))
    return timed_full(a, s, end, opens_window);
  a->wend = wend;
  if (s < a->T) {
    a->diag.late++;
    return a->T;
  }
  /* the usual record has no end due (they wait on their threads and
   * devices): no call */
  if (a->due_t <= s)
    gp_sweep_advance(a, s);
  else
    a->T = s;
  return s;
}

/* ---- phases ---- */

void gp_phase_open(struct gp_attr *a, uint32_t pi, uint64_t t) {
  struct phase *p = &a->ph[pi];
  if (p->active++) return; /* already open: the union is unchanged */
  gp_epoch_end(a, t);
  if (GROW(a, a->active, a->capactive, a->nactive + 1) < 0) return;
  p->apos = (uint32_t)a->nactive;
  a->active[a->nactive++] = pi;
  for (size_t d = 0; d < a->ndev; d++) {
    struct gp_phase_dev *pd = gp_attr_pd(a, p, (uint32_t)d);
    if (pd && a->dev[d].mem_cur > pd->mem_peak)
      pd->mem_peak = a->dev[d].mem_cur;
  }
}

void gp_phase_close(struct gp_attr *a, uint32_t pi, uint64_t start,
                    uint64_t t) {
  struct phase *p = &a->ph[pi];
  uint64_t dur = t > start ? t - start : 0;
  gp_hist_add(&p->dur, dur);
  p->count++;
  p->inst_ns += dur;
  if (--p->active) return;
  gp_epoch_end(a, t);
  uint32_t last = a->active[--a->nactive];
  a->active[p->apos] = last;
  a->ph[last].apos = p->apos;
}

static void on_range(struct gp_attr *a, const struct gpuphase_range *r) {
  uint64_t s = timed(a, r->start, r->start, 0);
  if (!a->started) s = r->start; /* before the window (not UINT64_MAX: a
                                    * sweep may legitimately stand there) */
  struct thr *th = gp_attr_thr(a, r->thread);
  if (!th) return;
  if (r->op == GPUPHASE_RANGE_PUSH || r->op == GPUPHASE_RANGE_START) {
    uint32_t pi = phase_get(a, r->name);
    if (pi == NOPHASE) return;
    if (r->op == GPUPHASE_RANGE_PUSH) {
      if (GROW(a, th->stk, th->capstk, th->nstk + 1) < 0) return;
      struct rframe *f = &th->stk[th->nstk++];
      *f = (struct rframe){pi, 0, r->start, r->domain};
      /* a step opens at a top-level push, or at the outermost push of
       * --step's or ProfilerStep#N's ranges whatever encloses it */
      f->step = (uint32_t)gp_steps_range(a, pi, r->thread,
                                         th->nstk == 1 ? 1 : 2, s);
    } else {
      uint64_t *old = gp_u64map_get(&a->ranges, r->id);
      uint32_t ri;
      if (old) { /* an id reused before its END: the first one ends here */
        ri = (uint32_t)*old;
        a->diag.unmatched_end++;
        gp_phase_close(a, a->ropens.v[ri].phase, a->ropens.v[ri].start, s);
      } else {
        POOL_GET(a, a->ropens, ri);
        if (ri == UINT32_MAX || put_index(a, &a->ranges, r->id, ri) < 0) return;
      }
      a->ropens.v[ri].phase = pi;
      a->ropens.v[ri].start = r->start;
    }
    gp_phase_open(a, pi, s);
    return;
  }
  if (r->op == GPUPHASE_RANGE_POP) {
    /* the innermost push of its domain (NVTX keeps a stack per domain) */
    size_t i = th->nstk;
    while (i > 0 && th->stk[i - 1].domain != r->domain)
      i--;
    if (!i) {
      a->diag.unmatched_end++;
      return;
    }
    struct rframe f = th->stk[--i];
    memmove(&th->stk[i], &th->stk[i + 1], (--th->nstk - i) * sizeof *th->stk);
    gp_phase_close(a, f.phase, f.start, s);
    /* the range that opened a step at its push ended */
    if (f.step) gp_steps_range(a, f.phase, r->thread, 0, s);
  } else if (r->op == GPUPHASE_RANGE_END) {
    uint64_t ri;
    if (!gp_u64map_del(&a->ranges, r->id, &ri)) {
      a->diag.unmatched_end++;
      return;
    }
    struct ropen *o = &a->ropens.v[ri];
    gp_phase_close(a, o->phase, o->start, s);
    o->next_free = a->ropens.free;
    a->ropens.free = (uint32_t)ri + 1;
  }
}

/* ---- memory ---- */

/* Windows between the last change and this one held the old level. */
void gp_mem_fill(struct gp_attr *a, struct dev *d, size_t upto) {
  for (size_t w = d->mem_widx; w <= upto; w++) {
    struct gp_win *x = gp_win_at(a, d, w);
    if (x && d->mem_cur > x->mem_peak) x->mem_peak = d->mem_cur;
  }
  d->mem_widx = upto;
}

static void mem_change(struct gp_attr *a, uint32_t slot, uint64_t size, int add,
                       uint64_t t) {
  if (slot == NODEV) {
    a->host_cur = add ? a->host_cur + size : a->host_cur - size;
    if (a->host_cur > a->host_peak) a->host_peak = a->host_cur;
    return;
  }
  struct dev *d = &a->dev[slot];
  d->mem_area += (double)d->mem_cur * (double)(t - d->mem_t);
  d->mem_t = t;
  gp_mem_fill(a, d, gp_win_idx(a, t));
  d->mem_cur = add ? d->mem_cur + size : d->mem_cur - size;
  if (d->mem_cur > d->mem_peak) d->mem_peak = d->mem_cur;
  gp_mem_fill(a, d, gp_win_idx(a, t));
  for (size_t i = 0; i < a->nactive; i++) {
    struct gp_phase_dev *pd = gp_attr_pd(a, &a->ph[a->active[i]], slot);
    if (pd && d->mem_cur > pd->mem_peak) pd->mem_peak = d->mem_cur;
  }
}

static void free_blk(struct gp_attr *a, uint64_t ptr, uint64_t t) {
  uint64_t bi;
  if (!gp_u64map_del(&a->allocs, ptr, &bi)) {
    a->diag.unknown_free++;
    return;
  }
  struct mblk *b = &a->blks.v[bi];
  mem_change(a, b->dev, b->size, 0, t);
  b->next_free = a->blks.free;
  a->blks.free = (uint32_t)bi + 1;
}

static void add_blk(struct gp_attr *a, uint64_t ptr, uint64_t bytes,
                    int64_t device, int host, uint64_t t) {
  uint32_t slot = NODEV;
  if (!host) {
    /* unknown current device: CUDA's default device is 0 */
    struct dev *d = gp_attr_dev(a, device >= 0 ? device : 0);
    if (!d) return;
    slot = (uint32_t)(d - a->dev);
  }
  if (gp_u64map_get(&a->allocs, ptr)) free_blk(a, ptr, t);
  uint32_t bi;
  POOL_GET(a, a->blks, bi);
  if (bi == UINT32_MAX || put_index(a, &a->allocs, ptr, bi) < 0) return;
  a->blks.v[bi].size = bytes;
  a->blks.v[bi].dev = slot;
  mem_change(a, slot, bytes, 1, t);
}

/* dev: the call's device (call_device): a stream-ordered allocation
 * comes from its stream's device's pool, any other from the current
 * device. */
static void on_mem(struct gp_attr *a, const struct gpuphase_api *r,
                   uint64_t cls, uint64_t t, int64_t dev) {
  if (r->ret != 0 || !r->ptr) return;
  if (cls & GPUPHASE_API_FREE) {
    free_blk(a, r->ptr, t);
    return;
  }
  add_blk(a, r->ptr, r->bytes, cls & GPUPHASE_API_ASYNC ? dev : r->device,
          (cls & GPUPHASE_API_HOSTMEM) != 0, t);
}

/* Graph memory (docs/attribution.md): an alloc node's memory counts from
 * the first launch of an executable graph made from its graph until that
 * executable graph is destroyed, or the address is freed by a free call;
 * a free node does not end it (the graph's memory pool keeps it). */
static void *grow(void *v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return v;
  size_t c = *cap ? *cap * 2 : 8;
  void *w = realloc(v, c * size);
  if (w) *cap = c;
  return w;
}

int gp_graph_role(const char *n) {
  static const struct {
    const char *name;
    int role;
  } t[] = {{"cudaGraphAddMemAllocNode", GP_GR_ALLOC_NODE},
           {"cuGraphAddMemAllocNode", GP_GR_ALLOC_NODE},
           {"cudaGraphInstantiate", GP_GR_INSTANTIATE},
           {"cudaGraphInstantiateWithFlags", GP_GR_INSTANTIATE},
           {"cuGraphInstantiateWithFlags", GP_GR_INSTANTIATE},
           {"cudaGraphLaunch", GP_GR_LAUNCH},
           {"cudaGraphLaunch_ptsz", GP_GR_LAUNCH},
           {"cuGraphLaunch", GP_GR_LAUNCH},
           {"cuGraphLaunch_ptsz", GP_GR_LAUNCH},
           {"cudaGraphExecDestroy", GP_GR_EXEC_DESTROY},
           {"cuGraphExecDestroy", GP_GR_EXEC_DESTROY},
           {"cudaGraphAddMemFreeNode", GP_GR_FREE_NODE},
           {"cuGraphAddMemFreeNode", GP_GR_FREE_NODE}};
  for (size_t i = 0; n && i < sizeof t / sizeof *t; i++)
    if (!strcmp(n, t[i].name)) return t[i].role;
  return 0;
}

int gp_event_role(const char *n) {
  static const struct {
    const char *name;
    int role;
  } t[] = {{"cudaEventRecord", GP_ER_RECORD},
           {"cudaEventRecordWithFlags", GP_ER_RECORD},
           {"cuEventRecord", GP_ER_RECORD},
           {"cuEventRecordWithFlags", GP_ER_RECORD},
           {"cudaEventSynchronize", GP_ER_WAIT},
           {"cudaEventQuery", GP_ER_WAIT},
           {"cuEventSynchronize", GP_ER_WAIT},
           {"cuEventQuery", GP_ER_WAIT},
           {"cudaStreamDestroy", GP_ER_STREAM_DESTROY},
           {"cuStreamDestroy", GP_ER_STREAM_DESTROY},
           {"cuStreamDestroy_v2", GP_ER_STREAM_DESTROY}};
  if (!n) return 0;
  size_t len = strlen(n);
  /* the per-thread default stream variants: the same call */
  if (len > 5 && (!strcmp(n + len - 5, "_ptsz") || !strcmp(n + len - 5, "_ptds")))
    len -= 5;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (strlen(t[i].name) == len && !strncmp(n, t[i].name, len))
      return t[i].role;
  return 0;
}

/* ---- Streams' devices ----
 * A call's device is the thread's current device (API.device), except for
 * a call on an application stream (a handle above 2: 0, 1 and 2 are the
 * current device's default streams) whose device the trace has shown, and
 * for an event wait whose event was recorded on a stream: their device is
 * that stream's. A stream's device is learned from the first kernel
 * launched on it that succeeded (CUDA launches a kernel only on a stream
 * of the current device), and from the device record of the first work
 * launched on it (a kernel, copy or memset: its device is the one that ran
 * it; it has the last word), which names the call by its correlation id;
 * lring keeps the stream of the last 1,024 calls by that id, which is
 * enough to learn each stream once. A stream destroyed forgets its device
 * (CUDA may give its handle to a new stream of another device). */
static inline struct sdslot *sd_slot(struct gp_attr *a, uint64_t stream) {
  return &a->sdc[(stream >> 4 ^ stream >> 10) & 63];
}

static void learn_stream_is(struct gp_attr *a, uint64_t stream,
                            uint64_t device) {
  if (gp_u64map_put(&a->sdev, stream, device) < 0) {
    a->oom = 1;
    return;
  }
  *sd_slot(a, stream) = (struct sdslot){stream, (int64_t)device};
}

static void __attribute__((noinline))
learn_stream_slow(struct gp_attr *a, struct lslot *l, uint64_t device) {
  l->corr = 0;
  a->nlring--;
  learn_stream_is(a, l->stream, device);
}

/* A kernel launched (a grid), made on the stream, not captured into a
 * graph: its stream is the current device's, which the call names. */
static int launched_on(const struct apidef *def,
                       const struct gpuphase_api *r) {
  return (def->cls & GPUPHASE_API_LAUNCH) && r->grid && r->ret == 0 &&
         r->device >= 0 && !(r->flags & GPUPHASE_OP_CAPTURED);
}

static inline void learn_stream(struct gp_attr *a, uint64_t corr,
                                uint64_t device) {
  if (__builtin_expect(!a->nlring, 1)) return; /* every stream known */
  struct lslot *l = &a->lring[corr & 1023];
  if (__builtin_expect(l->corr == corr && corr, 0))
    learn_stream_slow(a, l, device);
}

/* The device of call r (API.device unless the rules above say otherwise);
 * the stream looked up in the cache first (call_device_fast). */
static int64_t __attribute__((noinline))
call_device(struct gp_attr *a, const struct apidef *def,
            const struct gpuphase_api *r) {
  int64_t d = r->device;
  if (def->ev_role == GP_ER_WAIT) {
    uint64_t *v = r->ptr ? gp_u64map_get(&a->edev, r->ptr) : NULL;
    return v ? (int64_t)*v : d;
  }
  if (r->stream > 2) {
    struct sdslot *c = sd_slot(a, r->stream);
    uint64_t *v = c->stream == r->stream ? NULL
                                         : gp_u64map_get(&a->sdev, r->stream);
    if (c->stream == r->stream) {
      d = c->dev;
    } else if (v) {
      *c = (struct sdslot){r->stream, (int64_t)*v};
      d = (int64_t)*v;
    } else {
      /* not known yet: from a kernel launched on it at once, and from the
       * call's work when its device record comes (which has the last word) */
      if (launched_on(def, r)) learn_stream_is(a, r->stream, (uint64_t)r->device);
      if (r->corr) {
        struct lslot *l = &a->lring[r->corr & 1023];
        a->nlring += !l->corr;
        *l = (struct lslot){r->corr, r->stream};
      }
    }
    if (def->ev_role == GP_ER_STREAM_DESTROY && r->ret == 0) {
      gp_u64map_del(&a->sdev, r->stream, NULL);
      if (c->stream == r->stream) c->stream = 0;
    }
  }
  if (def->ev_role == GP_ER_RECORD && r->ptr && r->ret == 0 &&
      gp_u64map_put(&a->edev, r->ptr, (uint64_t)d) < 0)
    a->oom = 1;
  return d;
}

/* call_device, with the usual case inline: a call on a stream whose device
 * is in the cache, or a call on none of the current device's. */
static inline int64_t call_device_fast(struct gp_attr *a,
                                       const struct apidef *def,
                                       const struct gpuphase_api *r) {
  if (__builtin_expect(!def->ev_role, 1)) {
    if (r->stream <= 2) return r->device;
    const struct sdslot *c = sd_slot(a, r->stream);
    if (c->stream == r->stream) return c->dev;
  }
  return call_device(a, def, r);
}

static void on_graph_mem(struct gp_attr *a, const struct apidef *def,
                         const struct gpuphase_api *r, uint64_t t) {
  if (r->ret != 0 || (r->flags & GPUPHASE_OP_CAPTURED)) return;
  if (def->graph_role == GP_GR_ALLOC_NODE && r->ptr) {
    struct gnode *v = grow(a->gnodes, &a->gnodes_cap, a->ngnodes, sizeof *v);
    if (!v) return;
    a->gnodes = v;
    v[a->ngnodes++] = (struct gnode){r->stream, r->ptr, r->bytes, r->device, 0};
  } else if (def->graph_role == GP_GR_FREE_NODE && r->ptr) {
    for (size_t k = 0; k < a->ngnodes; k++)
      if (a->gnodes[k].graph == r->stream && a->gnodes[k].ptr == r->ptr)
        a->gnodes[k].pooled = 1;
  } else if (def->graph_role == GP_GR_INSTANTIATE && r->ptr) {
    struct gexec *v = grow(a->gexecs, &a->gexecs_cap, a->ngexecs, sizeof *v);
    if (!v) return;
    a->gexecs = v;
    v[a->ngexecs++] = (struct gexec){r->ptr, r->stream, 0};
  } else if (def->graph_role == GP_GR_LAUNCH ||
             def->graph_role == GP_GR_EXEC_DESTROY) {
    uint64_t x = def->graph_role == GP_GR_LAUNCH ? r->func : r->ptr;
    for (size_t i = 0; i < a->ngexecs; i++) {
      struct gexec *e = &a->gexecs[i];
      if (e->exec != x) continue;
      int launch = def->graph_role == GP_GR_LAUNCH;
      for (size_t k = 0; k < a->ngnodes && (launch || e->launched); k++) {
        const struct gnode *n = &a->gnodes[k];
        if (n->graph != e->graph) continue;
        int live = gp_u64map_get(&a->allocs, n->ptr) != NULL;
        /* each launch allocates what is not live (an allocation the
         * program freed since: CUDA refuses to relaunch before); the
         * destruction gives back the pool's, not what the program must
         * free itself */
        if (launch && !live)
          add_blk(a, n->ptr, n->bytes, n->device, 0, t);
        else if (!launch && live && n->pooled)
          free_blk(a, n->ptr, t);
      }
      e->launched |= launch;
      if (def->graph_role == GP_GR_EXEC_DESTROY) *e = a->gexecs[--a->ngexecs];
      break;
    }
  }
}

/* A device or primary-context reset (class RESET) frees every allocation
 * of the device that is still live. Rare: the live table is scanned. */
static void reset_mem(struct gp_attr *a, const struct gpuphase_api *r,
                      uint64_t t) {
  if (r->ret != 0) return;
  struct dev *d = gp_attr_dev(a, r->device >= 0 ? r->device : 0);
  if (!d) return;
  uint32_t slot = (uint32_t)(d - a->dev);
  size_t n = 0;
  uint64_t *ptrs = NULL;
  for (size_t i = 0; i < a->allocs.cap; i++) {
    if (!a->allocs.used[i] || a->blks.v[a->allocs.vals[i]].dev != slot)
      continue;
    if (!ptrs && !(ptrs = malloc(a->allocs.n * sizeof *ptrs))) return;
    ptrs[n++] = a->allocs.keys[i];
  }
  for (size_t i = 0; i < n; i++) free_blk(a, ptrs[i], t);
  free(ptrs);
}

/* ---- host API calls ---- */

enum { CORR_CALL = 1, CORR_WAIT = 2 };

static int new_async(struct gp_attr *a, const struct gpuphase_api *r,
                     uint32_t th, uint32_t dev, uint32_t api, uint64_t end,
                     uint32_t sver) {
  uint32_t ci;
  POOL_GET(a, a->calls, ci);
  if (ci == UINT32_MAX) return -1;
  struct acall *c = &a->calls.v[ci];
  c->start = r->start;
  c->end = end;
  c->corr = r->corr;
  c->thread = th;
  c->dev = dev;
  c->api = api;
  c->sver = sver;
  c->smeas = (uint8_t)gp_steps_last_measured(a);
  c->stack = r->stack;
  c->state = CALL_UND;
  c->open = c->live = 1;
  if (put_index(a, &a->corr, r->corr, ((uint64_t)CORR_CALL << 32) | ci) < 0 ||
      GROW(a, a->und, a->capund, a->nund + 1) < 0)
    return -1;
  gp_call_count(a, th, dev, CALL_UND, 1);
  a->und[a->nund++] = ci;
  return gp_sweep_push(a, end, HEV_ACALL, 0, ci, 0, 0);
}

/* The class of a call (docs/attribution.md section 2): blocking
 * (synchronising: explicitly, or implicitly as a free of memory does),
 * non-blocking enqueue, undecided (an async copy whose device record
 * decides), or other. */
static int call_class(struct gp_attr *a, const struct gpuphase_api *r,
                      uint64_t cls, uint64_t end) {
  if (cls & GPUPHASE_API_SYNC) return CALL_BLK;
  /* captured into a graph: enqueued nothing, no device record to wait for */
  if (r->flags & GPUPHASE_OP_CAPTURED) return CALL_NB;
  if ((cls & GPUPHASE_API_FREE) && !(cls & GPUPHASE_API_ASYNC))
    return CALL_BLK;
  if (!(cls & GPUPHASE_API_COPY))
    return cls & (GPUPHASE_API_LAUNCH | GPUPHASE_API_MEMSET |
                  GPUPHASE_API_WAIT | GPUPHASE_API_ASYNC)
               ? CALL_NB
               : CALL_OTHER;
  if (!(cls & GPUPHASE_API_ASYNC)) return CALL_BLK;
  if (!r->corr) return CALL_NB;
  uint64_t *v = gp_u64map_get(&a->corr, r->corr);
  if (!v || (*v >> 32) != CORR_WAIT) return CALL_UND;
  uint32_t wi = (uint32_t)*v;
  struct cwait *w = &a->waits.v[wi];
  int blk = w->pageable || end >= w->end;
  gp_u64map_del(&a->corr, r->corr, NULL);
  gp_wait_release(a, wi);
  return blk ? CALL_BLK : CALL_NB;
}

/* The slot of a table's entry for key, added when first seen (add returns
 * the entry or NULL), as an index: no pointer difference to divide. */
#define IDX_OF(a, map, tab, key, add, out)                                     \
  do {                                                                         \
    if (!gp_idx_get(&(a)->map, (key), &(out))) {                               \
      const void *e_ = (add);                                                  \
      if (!e_) return;                                                         \
      (out) = (uint32_t)((a)->n##tab - 1);                                     \
    }                                                                          \
  } while (0)

static void on_api(struct gp_attr *a, const struct gpuphase_api *r) {
  uint32_t api;
  IDX_OF(a, api_map, api, r->api, api_add(a, r->api), api);
  struct apidef *def = &a->api[api];
  uint64_t end = r->end >= r->start ? r->end : r->start;
  if (r->end < r->start) a->diag.bad_interval++;
  def->count++;
  def->total += end - r->start;
  def->errors += r->ret != 0;
  if ((r->flags & GPUPHASE_OP_CAPTURED) && (def->cls & GPUPHASE_API_LAUNCH))
    a->diag.captured++;
  int is_cuda = def->layer != GPUPHASE_LAYER_NVTX;
  uint64_t s = timed(a, r->start, end, is_cuda);
  if (!is_cuda || !a->started) return;
  /* indices, not pointers: on_mem may add a device and move the table */
  uint32_t ti, dev = NODEV;
  IDX_OF(a, thr_map, thr, r->thread, gp_attr_thr_add(a, r->thread), ti);
  int64_t rdev = call_device_fast(a, def, r);
  if (rdev >= 0)
    IDX_OF(a, dev_map, dev, (uint64_t)rdev, gp_attr_dev_add(a, rdev), dev);
  a->thr[ti].calls++;
  if (def->mem) { /* one test for the three, which most calls skip */
    if (def->cls & (GPUPHASE_API_ALLOC | GPUPHASE_API_FREE))
      on_mem(a, r, def->cls, s, rdev);
    if (def->cls & GPUPHASE_API_RESET) reset_mem(a, r, s);
    if (def->graph_role) on_graph_mem(a, def, r, s);
  }
  /* the class by the API's alone, unless the record can change it */
  int cl = def->cl0;
  if (cl == CALL_N || (r->flags & GPUPHASE_OP_CAPTURED))
    cl = call_class(a, r, def->cls, end);
  uint32_t sver = gp_steps_call(a, def, r, cl, s, end);
  int launch = (def->cls & GPUPHASE_API_LAUNCH) != 0;
  if (end <= s) { /* nothing left to account after clipping */
    if (r->start < s) a->diag.late_dropped++;
    if (cl == CALL_BLK) def->blocked += end - r->start, def->nblocked++;
    if (r->stack || a->cs_on)
      gp_cs_call(a->cs, r->stack, api, dev, r->start, end, cl == CALL_BLK,
                 launch, 0, s);
    return;
  }
  if (cl == CALL_UND) {
    new_async(a, r, ti, dev, api, end, sver);
    if (r->stack || a->cs_on)
      gp_cs_call(a->cs, r->stack, api, dev, r->start, end, 0, launch, 1, s);
    return;
  }
  if (cl == CALL_BLK) def->blocked += end - r->start, def->nblocked++;
  struct thr *t = &a->thr[ti];
  if (dev != NODEV && a->dev[dev].busy_end >= end && end != UINT64_MAX &&
      (t->pend_t == UINT64_MAX || t->pend_t <= a->T)) {
    /* The device runs a kernel or a copy past the call's end: the call
     * changes neither its category nor its counters' meaning, only the
     * thread's (its end: gp_thr_settle). */
    gp_call_count_thr(a, t, cl, 1);
    t->pend_t = end;
    t->pend_cl = (uint32_t)cl;
  } else {
    gp_call_count(a, ti, dev, cl, 1);
    gp_sweep_push(a, end, HEV_CALL, 0, ti, dev, (uint32_t)cl);
  }
  if (r->stack || a->cs_on)
    gp_cs_call(a->cs, r->stack, api, dev, r->start, end, cl == CALL_BLK,
               launch, 1, s);
}

/* ---- device activity ---- */

/* Theoretical occupancy (0..1) of a kernel, or -1 when the device limits are
 * unknown. Formula: docs/attribution.md. */
static double occupancy(const struct dev *d, uint64_t threads, uint64_t regs,
                        uint64_t smem) {
  const struct gpuphase_device *p = &d->props;
  /* Values no GPU has (a damaged or hostile trace) make it unknown, and
   * keep the arithmetic below from overflowing to a zero divisor. */
  if (!d->has_props || !p->warp_size || p->warp_size > 1024 || !threads ||
      threads > (1ull << 31) || regs > 65536 || smem > (1ull << 40))
    return -1;
  uint64_t max_warps = p->max_threads_per_sm / p->warp_size;
  uint64_t wpb = (threads + p->warp_size - 1) / p->warp_size;
  if (!max_warps) return -1;
  uint64_t blocks = max_warps / wpb;
  if (p->max_blocks_per_sm && p->max_blocks_per_sm < blocks)
    blocks = p->max_blocks_per_sm;
  if (regs && p->regs_per_sm) {
    uint64_t per_warp = (regs * p->warp_size + 255) / 256 * 256;
    uint64_t by_regs = p->regs_per_sm / per_warp / wpb;
    if (by_regs < blocks) blocks = by_regs;
  }
  if (smem && p->smem_per_sm) {
    uint64_t by_smem = p->smem_per_sm / ((smem + 127) / 128 * 128);
    if (by_smem < blocks) blocks = by_smem;
  }
  double occ = (double)(blocks * wpb) / (double)max_warps;
  return occ > 1 ? 1 : occ;
}

/* The entry of a kernel name first seen; NULL: no memory. */
static struct kst *kst_add(struct gp_attr *a, uint64_t name) {
  if (GROW(a, a->k, a->capk, a->nk + 1) < 0) return NULL;
  struct kst *k = &a->k[a->nk];
  memset(k, 0, sizeof *k);
  k->name = name;
  k->c_dev = -2; /* no configuration cached yet */
  const char *s = gp_attr_str(a, name);
  k->comm = s && strncmp(s, "nccl", 4) == 0;
  if (put_idx(a, &a->k_map, name, a->nk) < 0) return NULL;
  a->nk++;
  return k;
}

/* grid: blocks of the launch; block: threads per block */
static void kernel_stats(struct kst *k, const struct gpuphase_kernel *r,
                         uint64_t grid, uint64_t block, uint64_t dur,
                         uint64_t f, double occ) {
  if (!k->count) {
    k->grid = grid;
    k->block = block;
    k->regs = r->regs;
    k->smem = r->smem_static + r->smem_dynamic;
  }
  /* once set they stay set; or-ed in without a branch, since whether a
   * kernel's grid varies goes with its name, and the names of successive
   * kernels are as good as random to a branch predictor */
  k->grid_varies |= k->grid != grid;
  k->block_varies |= k->block != block;
  k->count++;
  k->total += dur;
  gp_hist_add(&k->dur, dur);
  if (f != UINT64_MAX) {
    /* f < 2^21 (see on_kernel): a signed conversion, the same double */
    k->cov_wsum += (double)dur * (double)(int64_t)f / FIX_ONE;
    k->cov_ns += dur;
  }
  if (occ >= 0) {
    k->occ_wsum += (double)dur * occ;
    k->occ_ns += dur;
  }
}

/* Doubles the ring of queued kernel ends, unwrapping it. */
static int kq_grow(struct gp_attr *a, struct dev *d) {
  size_t cap = d->kq_cap ? 2 * d->kq_cap : 16;
  struct kend *v = malloc(cap * sizeof *v);
  if (!v) {
    a->oom = 1;
    return -1;
  }
  for (size_t i = 0; i < d->kq_n; i++)
    v[i] = d->kq[(d->kq_head + i) & (d->kq_cap - 1)];
  free(d->kq);
  d->kq = v;
  d->kq_cap = cap;
  d->kq_head = 0;
  return 0;
}

static void on_kernel(struct gp_attr *a, const struct gpuphase_kernel *r) {
  uint64_t end = r->end >= r->start ? r->end : r->start;
  a->n_devrec++;
  learn_stream(a, r->corr, r->device);
  uint64_t s = timed(a, r->start, end, 1);
  uint32_t di, ki; /* indices: no pointer to test */
  IDX_OF(a, dev_map, dev, r->device, gp_attr_dev_add(a, (int64_t)r->device),
         di);
  IDX_OF(a, k_map, k, r->name, kst_add(a, r->name), ki);
  struct dev *d = &a->dev[di];
  struct kst *k = &a->k[ki];
  /* A kernel still running at s: the device is accounted up to s first,
   * while little else is live (the statistics below read nothing that
   * accounting changes, and accounting nothing they change). */
  int runs = end > s;
  if (runs) { /* gp_flush_dev_on, the kernel ends settled inline */
    if (gp_dev_due(d, s)) gp_dev_settle_in(a, d, s);
    if (s > d->seg_t) gp_flush_dev_to(a, d, s);
  }
  uint64_t blocks = r->grid_x * r->grid_y * r->grid_z;
  uint64_t threads = r->block_x * r->block_y * r->block_z;
  uint64_t smem = r->smem_static + r->smem_dynamic;
  uint64_t sms = d->sms;
  if (k->c_dev != d->id || k->c_threads != threads || k->c_regs != r->regs ||
      k->c_smem != smem) {
    k->c_dev = d->id;
    k->c_threads = threads;
    k->c_regs = r->regs;
    k->c_smem = smem;
    k->c_occ = occupancy(d, threads, r->regs, smem);
  }
  uint64_t f = UINT64_MAX; /* SM count unknown */
  if (d->sms_inv) { /* min(blocks, sms) x FIX_ONE / sms, without a division */
    uint64_t x = blocks < sms ? blocks : sms;
    f = (uint64_t)(((unsigned __int128)(x * FIX_ONE) * d->sms_inv) >> 64);
  } else if (sms < (1ull << 43)) { /* min(blocks, sms) x FIX_ONE fits */
    if (sms) f = (blocks < sms ? blocks : sms) * FIX_ONE / sms;
  } else {
    f = blocks >= sms ? FIX_ONE : blocks * FIX_ONE / sms;
  }
  double occ = k->c_occ;
  kernel_stats(k, r, blocks, threads, end - r->start, f, occ);
  gp_steps_device(a, r->corr, k, end - r->start, 0, -1, 0);
  d->kernels++;
  if (!runs) {
    if (r->start < s) a->diag.late_dropped++;
    return;
  }
  uint32_t cov = 0, occ_fix = 0, has_occ = 0;
  d->n_kern++;
  if (f != UINT64_MAX) {
    cov = (uint32_t)f;
    d->cov_rate += f;
  }
  /* without branches (the grids of successive kernels vary) */
  /* (comm is 0 or 1; with sms 0 nothing is small) */
  uint32_t comm = (uint32_t)k->comm, small = blocks * 2 < sms;
  d->n_comm += comm;
  d->n_small += small;
  if (occ >= 0) {
    has_occ = 1;
    occ_fix = (uint32_t)(occ * FIX_ONE + 0.5);
    d->n_occ++;
    d->occ_rate += occ_fix;
  }
  if (end > d->busy_end) d->busy_end = end;
  /* kernels of one stream end in order: their ends wait on the device
   * (with call-site records, gp_cs_seg wants each stretch in time) */
  if (!a->cs_on &&
      (!d->kq_n || end >= d->kq_last)) {
    if (d->kq_n == d->kq_cap && kq_grow(a, d) < 0) return;
    struct kend *q = &d->kq[(d->kq_head + d->kq_n++) & (d->kq_cap - 1)];
    d->kq_last = end;
    q->t = end;
    q->cov = cov;
    q->occ = occ_fix;
    q->comm = (uint8_t)comm;
    q->small = (uint8_t)small;
    q->has_occ = (uint8_t)has_occ;
    return;
  }
  uint16_t flags =
      (uint16_t)(comm * HF_COMM | small * HF_SMALL | has_occ * HF_OCC);
  gp_sweep_push(a, end, HEV_KERNEL, flags, (uint32_t)(d - a->dev), cov,
                occ_fix);
}

static int is_host(uint64_t m) {
  return m == GPUPHASE_MEM_PAGEABLE || m == GPUPHASE_MEM_PINNED;
}

static int xfer_of(const struct gpuphase_memcpy *r) {
  switch (r->copy_kind) {
  case GPUPHASE_COPY_HTOD:
    return GP_XFER_H2D;
  case GPUPHASE_COPY_DTOH:
    return GP_XFER_D2H;
  case GPUPHASE_COPY_DTOD:
    return GP_XFER_D2D;
  case GPUPHASE_COPY_PTOP:
    return GP_XFER_P2P;
  case GPUPHASE_COPY_HTOH:
    return GP_XFER_OTHER;
  }
  /* default/unknown: inferred from the memory on either side */
  int sh = is_host(r->src_mem), dh = is_host(r->dst_mem);
  int sd =
      r->src_mem == GPUPHASE_MEM_DEVICE || r->src_mem == GPUPHASE_MEM_ARRAY;
  int dd =
      r->dst_mem == GPUPHASE_MEM_DEVICE || r->dst_mem == GPUPHASE_MEM_ARRAY;
  if (sh && dd) return GP_XFER_H2D;
  if (sd && dh) return GP_XFER_D2H;
  if (sd && dd)
    return r->peer_device >= 0 && (uint64_t)r->peer_device != r->device
               ? GP_XFER_P2P
               : GP_XFER_D2D;
  return GP_XFER_OTHER;
}

/* Books a device copy or memset into the timeline. */
static void xfer_begin(struct gp_attr *a, struct dev *d, int x, uint64_t s,
                       uint64_t end) {
  if (end <= s) return;
  gp_flush_dev_on(a, d, s);
  d->n_xfer++;
  d->n_xk[x]++;
  if (end > d->busy_end) d->busy_end = end;
  gp_sweep_push(a, end, HEV_XFER, 0, (uint32_t)(d - a->dev), (uint32_t)x, 0);
}

/* Links a device copy to its async API call, or waits for the call. */
static void link_copy(struct gp_attr *a, const struct gpuphase_memcpy *r,
                      uint64_t end, int pageable) {
  uint64_t *v = gp_u64map_get(&a->corr, r->corr);
  if (v && (*v >> 32) == CORR_CALL) {
    uint32_t ci = (uint32_t)*v;
    struct acall *c = &a->calls.v[ci];
    gp_u64map_del(&a->corr, r->corr, NULL);
    gp_decide(a, ci, pageable || c->end >= end);
    if (!c->open) gp_call_release(a, ci);
    return;
  }
  if (v) return; /* a second copy with the same id: keep the first */
  uint32_t wi;
  POOL_GET(a, a->waits, wi);
  if (wi == UINT32_MAX) return;
  struct cwait *w = &a->waits.v[wi];
  w->end = end;
  w->corr = r->corr;
  w->pageable = (uint8_t)pageable;
  w->live = 1;
  if (put_index(a, &a->corr, r->corr, ((uint64_t)CORR_WAIT << 32) | wi) < 0)
    return;
  gp_hold_push(
      a, (struct hev){end + a->o.hold_ns, wi, w->gen, 0, HEV_HOLD_COPY, 0});
}

static void on_memcpy(struct gp_attr *a, const struct gpuphase_memcpy *r) {
  uint64_t end = r->end >= r->start ? r->end : r->start;
  a->n_devrec++;
  learn_stream(a, r->corr, r->device);
  uint64_t s = timed(a, r->start, end, 1);
  struct dev *d = gp_attr_dev(a, (int64_t)r->device);
  if (!d) return;
  int x = xfer_of(r);
  int pageable = r->src_mem == GPUPHASE_MEM_PAGEABLE ||
                 r->dst_mem == GPUPHASE_MEM_PAGEABLE;
  struct gp_copy_row *row = &d->copies[x];
  row->count++;
  row->bytes += r->bytes;
  row->ns += end - r->start;
  row->pageable += pageable;
  row->pinned += !pageable && (r->src_mem == GPUPHASE_MEM_PINNED ||
                               r->dst_mem == GPUPHASE_MEM_PINNED);
  if (r->corr) link_copy(a, r, end, pageable);
  gp_steps_device(a, r->corr, NULL, end - r->start, pageable, x, r->bytes);
  if (end <= s && r->start < s) a->diag.late_dropped++;
  xfer_begin(a, d, x, s, end);
  /* A peer copy occupies both devices: the other one books it too (its
   * transfer time and its P2P row), without a second link to the call. */
  if (x == GP_XFER_P2P && r->peer_device >= 0 &&
      (uint64_t)r->peer_device != r->device) {
    struct dev *p = gp_attr_dev(a, r->peer_device); /* may move a->dev */
    if (!p) return;
    struct gp_copy_row *prow = &p->copies[x];
    prow->count++;
    prow->bytes += r->bytes;
    prow->ns += end - r->start;
    xfer_begin(a, p, x, s, end);
  }
}

static void on_memset(struct gp_attr *a, const struct gpuphase_memset *r) {
  uint64_t end = r->end >= r->start ? r->end : r->start;
  a->n_devrec++;
  learn_stream(a, r->corr, r->device);
  uint64_t s = timed(a, r->start, end, 1);
  struct dev *d = gp_attr_dev(a, (int64_t)r->device);
  if (!d) return;
  struct gp_copy_row *row = &d->copies[GP_XFER_MEMSET];
  row->count++;
  row->bytes += r->bytes;
  row->ns += end - r->start;
  gp_steps_device(a, r->corr, NULL, end - r->start, 0, -1, 0);
  if (end <= s && r->start < s) a->diag.late_dropped++;
  xfer_begin(a, d, GP_XFER_MEMSET, s, end);
}

/* ---- metadata and bookkeeping records ---- */

static void on_string(struct gp_attr *a, const struct gpuphase_string *r) {
  if (GROW(a, a->strs, a->capstrs, a->nstrs + 1) < 0) return;
  char *s = malloc(r->text.len + 1);
  if (!s) {
    a->oom = 1;
    return;
  }
  memcpy(s, r->text.data, r->text.len);
  s[r->text.len] = 0;
  uint32_t old;
  if (gp_idx_get(&a->str_map, r->id, &old)) { /* redefined: latest wins */
    free(a->strs[old]);
    a->strs[old] = s;
    return;
  }
  a->strs[a->nstrs] = s;
  if (put_idx(a, &a->str_map, r->id, a->nstrs) == 0)
    a->nstrs++;
  else
    free(s);
}

/* m = floor((2^64 - 1) / sms) + 1 is 2^64 / sms rounded up: m sms = 2^64 + e
 * with 0 <= e < sms. For n <= sms 2^20 (a coverage's numerator) and sms <
 * 2^22, n e < 2^64, so n m / 2^64 = n / sms + n e / (sms 2^64) lies below
 * the next multiple of 1 / sms after n / sms, and (n m) >> 64 is n / sms
 * rounded down, as dividing gives it. sms 1 would need m = 2^64. */
static uint64_t gp_sms_inv(uint64_t sms) {
  return sms >= 2 && sms < (1u << 22) ? UINT64_MAX / sms + 1 : 0;
}

static void on_device(struct gp_attr *a, const struct gpuphase_device *r) {
  struct dev *d = gp_attr_dev(a, (int64_t)r->device);
  if (!d) return;
  d->props = *r;
  d->has_props = 1;
  d->sms_inv = gp_sms_inv(r->sms);
  d->sms = r->sms;
  for (size_t i = 0; i < a->nk; i++)
    a->k[i].c_dev = -2; /* recompute */
}

static void on_state(struct gp_attr *a, const struct gpuphase_state *r) {
  (void)timed(a, r->start, r->start, 0); /* the window; times are r->start */
  if (r->state && !a->state_on) {
    a->state_on = 1;
    a->saw_state1 = 1;
    a->state_since = r->start;
    a->state_reason = r->reason;
  } else if (!r->state && a->state_on) {
    a->state_on = 0;
    if (!a->deg_spans++) {
      a->deg_first = a->state_since;
      a->deg_first_end = r->start;
      a->deg_first_reason = a->state_reason;
    }
    a->deg_ns += r->start - a->state_since;
  }
}

uint64_t gp_attr_records(const gp_attr *a) {
  return a->diag.records;
}

uint64_t gp_attr_unwritten(const gp_attr *a) {
  return a->unwritten;
}

uint64_t gp_attr_meas_records(const gp_attr *a) {
  return a->meas_records;
}

/* on_kernel and on_api with feed's result: feed ends in a jump to them,
 * so that the two kinds nearly every record is pass through no frame of
 * feed's own (it saved and restored three registers per record) */
static int __attribute__((noinline))
feed_kernel(gp_attr *a, const struct gpuphase_kernel *r) {
  on_kernel(a, r);
  return a->oom ? -1 : 0;
}

static int __attribute__((noinline))
feed_api(gp_attr *a, const struct gpuphase_api *r) {
  on_api(a, r);
  return a->oom ? -1 : 0;
}

/* The other kinds, out of line: inline in feed, the registers they need
 * were saved ahead of the two jumps as well. */
static int __attribute__((noinline))
feed_other(gp_attr *a, const struct gpuphase_record *rec) {
  switch (rec->kind) {
  case GPUPHASE_REC_STRING:
    a->untimed++;
    on_string(a, &rec->u.string);
    break;
  case GPUPHASE_REC_THREAD: {
    a->untimed++;
    struct thr *t = gp_attr_thr(a, rec->u.thread.thread);
    if (t) t->tid = rec->u.thread.tid, t->name = rec->u.thread.name;
    break;
  }
  case GPUPHASE_REC_API_DEF: {
    a->untimed++;
    struct apidef *d = api_get(a, rec->u.api_def.api);
    if (d) {
      d->name = rec->u.api_def.name;
      d->cls = rec->u.api_def.cls;
      d->layer = rec->u.api_def.layer;
      d->graph_role = gp_graph_role(gp_attr_str(a, d->name));
      d->ev_role = gp_event_role(gp_attr_str(a, d->name));
      d->sc_ones = gp_steps_ones(d->cls);
      api_derive(d);
    }
    break;
  }
  case GPUPHASE_REC_DEVICE:
    a->untimed++;
    on_device(a, &rec->u.device);
    break;
  case GPUPHASE_REC_API:
    return feed_api(a, &rec->u.api);
  case GPUPHASE_REC_KERNEL:
    return feed_kernel(a, &rec->u.kernel);
  case GPUPHASE_REC_MEMCPY:
    on_memcpy(a, &rec->u.memcpy);
    break;
  case GPUPHASE_REC_MEMSET:
    on_memset(a, &rec->u.memset);
    break;
  case GPUPHASE_REC_SYNC: {
    const struct gpuphase_sync *r = &rec->u.sync;
    a->n_devrec++;
    timed(a, r->start, r->end > r->start ? r->end : r->start, 1);
    break;
  }
  case GPUPHASE_REC_RANGE:
    on_range(a, &rec->u.range);
    break;
  case GPUPHASE_REC_ITEMS:
    timed(a, rec->u.items.start, rec->u.items.start, 0);
    if (a->started) gp_steps_items(a, rec->u.items.thread, rec->u.items.count);
    break;
  case GPUPHASE_REC_LOST:
    timed(a, rec->u.lost.start, rec->u.lost.start, 0);
    a->lost += rec->u.lost.count;
    if (rec->u.lost.source == 2) a->unwritten += rec->u.lost.count;
    break;
  case GPUPHASE_REC_METRIC:
  case GPUPHASE_REC_SAMPLER:
    a->untimed++;
    a->meas_records++;
    break;
  case GPUPHASE_REC_STATE:
    on_state(a, &rec->u.state);
    break;
  case GPUPHASE_REC_MODULE:
  case GPUPHASE_REC_PYCODE:
  case GPUPHASE_REC_FRAME:
    a->untimed++;
    if (rec->kind == GPUPHASE_REC_FRAME && !a->cs_on) {
      /* from here on the accounting tells call sites the time of each
       * stretch: what ended by now is booked, the rest waits in the heap */
      for (size_t i = 0; i < a->ndev; i++)
        if (gp_dev_due(&a->dev[i], a->T)) gp_dev_settle(a, &a->dev[i], a->T);
      gp_dev_unqueue(a);
    }
    if (gp_cs_meta(a->cs, rec) < 0) a->oom = 1;
    a->cs_on |= rec->kind == GPUPHASE_REC_FRAME;
    break;
  case GPUPHASE_REC_SUMMARY:
    a->untimed++;
    a->has_summary = 1;
    if (rec->u.summary.lost > a->lost) a->lost = rec->u.summary.lost;
    break;
  default:
    a->untimed++;
    break;
  }
  return a->oom ? -1 : 0;
}

/* gp_attr_feed's body, inline in it and in gp_attr_feed_cb */
static inline __attribute__((always_inline)) int
feed(gp_attr *a, const struct gpuphase_record *rec) {
  if (a->oom) return -1;
  a->diag.records++;
  /* the two kinds nearly every record is, first */
  if (rec->kind == GPUPHASE_REC_KERNEL) return feed_kernel(a, &rec->u.kernel);
  if (rec->kind == GPUPHASE_REC_API) return feed_api(a, &rec->u.api);
  return feed_other(a, rec);
}

int gp_attr_feed(gp_attr *a, const struct gpuphase_record *rec) {
  return feed(a, rec);
}

int gp_attr_feed_cb(void *a, const struct gpuphase_record *rec) {
  return feed(a, rec);
}

int gp_attr_feed_n(gp_attr *a, const struct gpuphase_record *recs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (feed(a, &recs[i]) < 0) return -1;
  return 0;
}
