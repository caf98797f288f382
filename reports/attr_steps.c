/* Steps: cutting the run into the iterations of the user's loop while the
 * sweep goes. Every way the run could be cut is a candidate: each top-level
 * range name (all ProfilerStep#N names together, or the --step glob alone)
 * and each synchronising call (a step ends where it returns). All of them
 * are followed at once, since which one is the step is known only at the
 * end (docs/attribution.md, "Steps"); a candidate costs something only
 * while one of its steps is open.
 *
 * What a step holds:
 * - its categories: the device timeline inside its wall interval, from
 *   snapshots of the device totals at its two ends;
 * - host counters: the API calls that start inside it, on any thread,
 *   from running totals: a call adds to them once, however many steps
 *   are open, and a step takes the difference between its two ends;
 * - device work by correlation: each call remembers the set of open steps
 *   (a version number, in a ring indexed by correlation id), and the
 *   kernels and copies it launched are added to those steps when their
 *   device records arrive, wherever they ran: gathered per version
 *   (the device records of a version arrive together as a rule) and
 *   handed to its steps when another version takes the slot, so each
 *   device record is added once. */
#include "attr_steps.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gp_steps_init(struct gp_attr *a) {
  a->st = calloc(1, sizeof *a->st);
  if (!a->st) return -1;
  /* the measured steps are known from the start only with the step and
   * the warm-up given; otherwise their detail is gathered by version */
  int fixed = a->o.step || a->o.step_api || a->o.step_func;
  int known = a->o.warmup >= 0 && fixed;
  a->st->fixed = a->o.step_detail != 0;
  a->st->gather = a->o.step_detail && !known;
  a->st->warmup = a->o.warmup >= 0 ? (uint64_t)a->o.warmup : 0;
  a->st->capped = !fixed;
  a->st->launch_on = !a->o.step && !a->o.step_api;
  a->st->lead = UINT32_MAX;
  a->st->a = a;
  return 0;
}

void gp_steps_free(struct gp_attr *a) {
  struct gp_stepper *st = a->st;
  if (!st) return;
  for (size_t i = 0; i < st->nc; i++) {
    free(st->c[i].v);
    gp_hist_free(&st->c[i].dur);
  }
  free(st->c);
  free(st->open);
  free(st->voff);
  free(st->pairs);
  free(st->ring);
  free(st->glog);
  gp_u64map_free(&st->lmap);
  free(st);
  a->st = NULL;
}

static uint32_t cand_new(struct gp_attr *a, int kind, uint64_t key) {
  struct gp_stepper *st = a->st;
  if (GROW(a, st->c, st->capc, st->nc + 1) < 0) return UINT32_MAX;
  struct scand *c = &st->c[st->nc];
  memset(c, 0, sizeof *c);
  gp_hist_init(&c->dur);
  c->kind = (uint8_t)kind;
  c->key = key;
  /* launch candidates keep no steps while they are looked for: they are
   * many, and rarely chosen (a second pass keeps the chosen one's) */
  c->dropped = (kind == SC_SYNC && st->sync_off) ||
               (kind == SC_LAUNCH && !a->o.step_func);
  return (uint32_t)st->nc++;
}

/* 1 when a range name is --step's (given) or ProfilerStep#N's (no
 * --step), 0 otherwise. */
static int shared_name(const struct gp_attr *a, const char *s) {
  if (a->o.step)
    return a->o.step_exact ? !strcmp(a->o.step, s) : !fnmatch(a->o.step, s, 0);
  return !strncmp(s, "ProfilerStep#", 13);
}

/* The candidate of a range name: --step alone when given, all
 * ProfilerStep#N together, else one per name. UINT32_MAX: none. */
static uint32_t range_cand(struct gp_attr *a, uint64_t name) {
  struct gp_stepper *st = a->st;
  const char *s = gp_attr_str(a, name);
  if (!s) s = "";
  uint32_t *shared = NULL;
  if (a->o.step_api || a->o.step_func || a->o.step_launches)
    return UINT32_MAX;
  if (shared_name(a, s))
    shared = a->o.step ? &st->named : &st->ps;
  else if (a->o.step)
    return UINT32_MAX;
  if (shared && *shared) return *shared - 1;
  uint32_t ci = cand_new(a, SC_RANGE, shared ? 0 : name);
  if (shared && ci != UINT32_MAX) *shared = ci + 1;
  return ci;
}

/* Device totals at t: over the real devices, and of the "any device"
 * timeline that devices not seen yet still follow. */
static void snapshot(struct gp_attr *a, uint64_t t, uint64_t *real,
                     uint64_t *w, uint64_t *n) {
  gp_flush_devs(a, NODEV, t);
  memset(real, 0, GP_CAT_N * sizeof *real);
  for (size_t i = 1; i < a->ndev; i++)
    for (int k = 0; k < GP_CAT_N; k++)
      real[k] += a->dev[i].tot.cat[k];
  memcpy(w, a->dev[WSLOT].tot.cat, GP_CAT_N * sizeof *w);
  *n = a->ndev - 1;
}

static void open_add(struct gp_attr *a, uint32_t ci) {
  struct gp_stepper *st = a->st;
  if (GROW(a, st->open, st->capopen, st->nopen + 1) < 0) return;
  st->c[ci].apos = (uint32_t)st->nopen;
  st->open[st->nopen++] = ci;
  st->dirty = 1;
}

static void open_remove(struct gp_attr *a, uint32_t ci) {
  struct gp_stepper *st = a->st;
  struct scand *c = &st->c[ci];
  if (c->apos >= st->nopen || st->open[c->apos] != ci) return;
  uint32_t last = st->open[--st->nopen];
  st->open[c->apos] = last;
  st->c[last].apos = c->apos;
  st->dirty = 1;
}

/* Frees the steps of a candidate (its count, span and spread stay, for
 * the choice at the end). */
static void drop(struct gp_attr *a, size_t i) {
  struct gp_stepper *st = a->st;
  struct scand *c = &st->c[i];
  if (c->dropped) return;
  if (c->open) open_remove(a, (uint32_t)i);
  if (i != st->lead) st->others -= c->n;
  free(c->v);
  c->v = NULL;
  c->n = c->cap = 0;
  c->dropped = 1;
}

static size_t best_range(const struct gp_stepper *st, uint64_t end);
static size_t best_range_of(const struct gp_stepper *st, uint64_t end,
                            int judge);
static size_t best_sync(const struct gp_stepper *st, uint64_t end);

/* Past STEP_CAP steps kept by the others: the candidate that would be
 * chosen if the trace ended at t becomes the lead, and the others' largest
 * are dropped until they keep STEP_CAP at most. */
static void over_cap(struct gp_attr *a, uint64_t t) {
  struct gp_stepper *st = a->st;
  size_t lead = st->ps && st->c[st->ps - 1].count ? st->ps - 1
                                                  : best_range_of(st, t, 0);
  if (lead == SIZE_MAX) lead = best_sync(st, t);
  if (lead != SIZE_MAX && st->c[lead].dropped) lead = SIZE_MAX;
  st->lead = lead == SIZE_MAX ? UINT32_MAX : (uint32_t)lead;
  st->others = 0;
  for (size_t i = 0; i < st->nc; i++)
    if (i != lead) st->others += st->c[i].n;
  while (st->others > STEP_CAP) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < st->nc; i++)
      if (i != lead && !st->c[i].dropped &&
          (best == SIZE_MAX || st->c[i].n > st->c[best].n))
        best = i;
    if (best == SIZE_MAX) break;
    drop(a, best);
  }
}

/* Once a top-level range has repeated 5 times, a synchronising call is
 * unlikely to be chosen (only when no range qualifies at the end): their
 * steps are dropped, which halves the cost of the usual traces, and a
 * second pass settles the rare trace where one is chosen after all. */
static void sync_off(struct gp_attr *a) {
  struct gp_stepper *st = a->st;
  st->sync_off = 1;
  /* launches likewise, which are many: not followed further (if no range
   * qualifies at the end, a pass following them alone decides) */
  if (st->launch_on && !a->o.step_func) {
    st->launch_on = 0;
    st->launch_frozen = 1;
  }
  for (size_t i = 0; i < st->nc; i++)
    if (st->c[i].kind == SC_SYNC) drop(a, i);
}

static void step_open(struct gp_attr *a, uint32_t ci, uint64_t thread,
                      uint64_t t) {
  struct gp_stepper *st = a->st;
  struct scand *c = &st->c[ci];
  c->open = 1;
  c->othread = thread;
  c->ostart = t;
  if (c->dropped) return;
  if (!st->ring) {
    st->ring = calloc(RING_MASK + 1, sizeof *st->ring);
    if (!st->ring) {
      a->oom = 1;
      return;
    }
  }
  if (GROW(a, c->v, c->cap, c->n + 1) < 0) return;
  struct sstep *x = &c->v[c->n++];
  memset(x, 0, sizeof *x);
  x->s.start = t;
  x->s.thread = thread;
  snapshot(a, t, x->creal, x->wd, &x->nreal);
  memcpy(c->hc0, st->hc, sizeof c->hc0);
  open_add(a, ci);
  if (st->capped && ci != st->lead && ++st->others > STEP_CAP)
    over_cap(a, t);
}

/* What [open, close) added, in a form that stays right when devices first
 * seen later join the sum (gp_steps_finish): creal over the devices known
 * at the close (a device first seen inside the step followed the "any
 * device" timeline until then), wd the "any device" timeline's own delta. */
static void snap_delta(struct sstep *x, const uint64_t *real,
                       const uint64_t *w, uint64_t n) {
  for (int k = 0; k < GP_CAT_N; k++) {
    x->creal[k] = real[k] - x->creal[k] - (n - x->nreal) * x->wd[k];
    x->wd[k] = w[k] - x->wd[k];
  }
  x->nreal = n;
}

static void step_close(struct gp_attr *a, uint32_t ci, uint64_t t) {
  struct gp_stepper *st = a->st;
  struct scand *c = &st->c[ci];
  uint64_t dur = t > c->ostart ? t - c->ostart : 0;
  if (!c->count) c->first = c->ostart;
  c->count++;
  c->sum += dur;
  gp_hist_add(&c->dur, dur);
  c->last = t;
  c->open = 0;
  if (c->kind == SC_RANGE && c->count >= 5 && st->capped && !st->sync_off)
    sync_off(a);
  if (c->dropped || !c->n) return;
  struct sstep *x = &c->v[c->n - 1];
  uint64_t real[GP_CAT_N], w[GP_CAT_N], n;
  x->s.end = t > x->s.start ? t : x->s.start;
  snapshot(a, t, real, w, &n);
  snap_delta(x, real, w, n);
  for (int k = 0; k < GP_SC_N; k++) x->s.c[k] += st->hc[k] - c->hc0[k];
  open_remove(a, ci);
}

/* open 1: a top-level push; 2: a nested push, a step only for the shared
 * candidate of --step or ProfilerStep#N (its outermost occurrence on the
 * thread); 0: the pop of a push that opened a step. 1 when a step
 * opened. */
int gp_steps_range(struct gp_attr *a, uint32_t pi, uint64_t th, int open,
                   uint64_t t) {
  struct phase *p = &a->ph[pi];
  struct gp_stepper *st = a->st;
  if (open == 2) {
    /* a pass fixed on the repeated range a first pass chose: its steps are
     * the top-level occurrences it counted */
    if (a->o.step_exact) return 0;
    if (!p->shared) {
      const char *s = gp_attr_str(a, p->name);
      p->shared = shared_name(a, s ? s : "") ? 1 : 2;
    }
    if (p->shared != 1) return 0;
  }
  if (!p->cand) {
    uint32_t ci = range_cand(a, p->name);
    p->cand = ci == UINT32_MAX ? UINT32_MAX : ci + 1;
  }
  if (p->cand == UINT32_MAX) return 0;
  uint32_t ci = p->cand - 1;
  struct scand *c = &st->c[ci];
  if (open) {
    if (c->open) {
      /* open on another thread already: not a step; on this one, an
       * occurrence inside the step's own range */
      if (c->othread != th || open == 1) st->overlap++;
      return 0;
    }
    step_open(a, ci, th, t);
    return 1;
  }
  if (c->open && c->othread == th) step_close(a, ci, t);
  return 0;
}

void gp_steps_boundary(struct gp_attr *a, uint32_t ci, uint64_t thread,
                       uint64_t t) {
  if (!a->st || ci >= a->st->nc) return;
  if (a->st->c[ci].open) step_close(a, ci, t);
  step_open(a, ci, thread, t);
}

uint32_t gp_steps_new_version(struct gp_attr *a) {
  struct gp_stepper *st = a->st;
  if (GROW(a, st->voff, st->capver, st->nver + 1) < 0 ||
      GROW(a, st->pairs, st->cappairs, st->npairs + st->nopen) < 0)
    return 0;
  for (size_t i = 0; i < st->nopen; i++) {
    st->pairs[st->npairs][0] = st->open[i];
    st->pairs[st->npairs++][1] = (uint32_t)(st->c[st->open[i]].n - 1);
  }
  st->voff[st->nver++] = (uint32_t)st->npairs;
  st->dirty = 0;
  return st->ver = (uint32_t)st->nver;
}

void gp_steps_sync(struct gp_attr *a, struct apidef *def,
                          const struct gpuphase_api *r, uint64_t end) {
  if (a->o.step || a->o.step_func || a->o.step_launches) return;
  if (a->o.step_api) {
    const char *n = gp_attr_str(a, def->name);
    if (!n || strcmp(n, a->o.step_api)) return;
  }
  if (!def->sync_cand) {
    uint32_t ci = cand_new(a, SC_SYNC, def->id);
    if (ci == UINT32_MAX) return;
    def->sync_cand = ci + 1;
  }
  gp_sweep_push(a, end, HEV_STEP, 0, def->sync_cand - 1,
                (uint32_t)r->thread, 0);
}

/* A launch call: a step of the candidate of the function (or graph) it
 * launches starts at t, its start. */
void gp_steps_launch(struct gp_attr *a, const struct apidef *def,
                     const struct gpuphase_api *r, uint64_t t) {
  struct gp_stepper *st = a->st;
  int graph = def->graph_role == GP_GR_LAUNCH;
  if (!r->func || r->ret != 0) return; /* a failed launch ran nothing */
  st->nlcalls++; /* every one counts in the sequences (the other passes
                    see the same) */
  uint64_t key = graph ? r->func | LAUNCH_GRAPH : r->func;
  if (a->o.step_func && key != a->o.step_func) return;
  uint64_t *v = gp_u64map_get(&st->lmap, key);
  uint32_t ci;
  if (v) {
    ci = (uint32_t)*v;
  } else {
    if (st->nlaunch >= LAUNCH_CANDS) return;
    ci = cand_new(a, SC_LAUNCH, key);
    if (ci == UINT32_MAX) return;
    if (gp_u64map_put(&st->lmap, key, ci) < 0) {
      a->oom = 1;
      return;
    }
    st->nlaunch++;
    if (graph) {
      st->c[ci].kname = def->name;
      st->c[ci].named = 1;
    }
  }
  struct scand *c = &st->c[ci];
  /* a kernel's name comes with its device record (by correlation id) */
  if (!c->named && !c->dropped && r->corr) {
    st->want_corr = r->corr;
    st->want_ci = ci;
  }
  /* the launches since its last one: a repeating sequence keeps them
   * equal, whatever the timing */
  if (c->open) {
    uint64_t len = st->nlcalls - c->lpos;
    if (len != c->rlen) {
      c->rlen = len;
      c->run = 0;
      c->rstart = c->ostart;
    }
    if (++c->run > c->brun) {
      c->brun = c->run;
      c->blen = len;
      c->bstart = c->rstart;
      c->bend = t;
    }
  }
  c->lpos = st->nlcalls;
  gp_steps_boundary(a, ci, r->thread, t);
}

void gp_steps_kname(struct gp_stepper *st, const struct kst *k) {
  struct scand *c = &st->c[st->want_ci];
  c->kname = k->name;
  c->named = 1;
  st->want_corr = 0;
}

static int xfer_of_kind(uint64_t k) {
  switch (k) {
  case GPUPHASE_COPY_HTOD: return GP_SC_h2d_copies;
  case GPUPHASE_COPY_DTOH: return GP_SC_d2h_copies;
  case GPUPHASE_COPY_DTOD: return GP_SC_d2d_copies;
  case GPUPHASE_COPY_PTOP: return GP_SC_p2p_copies;
  }
  return -1;
}

_Static_assert(GP_SC_N <= 32, "apidef.sc_ones holds a bit per step counter");

uint32_t gp_steps_ones(uint64_t cls) {
  uint32_t m = 0;
  if (cls & GPUPHASE_API_LAUNCH) m |= 1u << GP_SC_launches;
  if ((cls & GPUPHASE_API_SYNC) && !(cls & GPUPHASE_API_QUERY))
    m |= 1u << GP_SC_syncs;
  if (cls & GPUPHASE_API_MEMSET) m |= 1u << GP_SC_memsets;
  if (cls & GPUPHASE_API_ALLOC) m |= 1u << GP_SC_allocations;
  if (cls & GPUPHASE_API_FREE) m |= 1u << GP_SC_frees;
  return m;
}

int gp_steps_copy(uint64_t *c, const struct gpuphase_api *r) {
  int x = xfer_of_kind(r->copy_kind);
  if (x < 0) return r->copy_kind == GPUPHASE_COPY_HTOH; /* no counter */
  c[x]++;
  /* the bytes counters follow the copy counters in the same order */
  c[x + GP_SC_h2d_bytes - GP_SC_h2d_copies] += r->bytes;
  return 1;
}

/* An entry of the detail log; past glog_cap entries (or out of memory)
 * the log is given up, and the detail comes from a second pass
 * (pipeline.c). */
static size_t glog_cap = GLOG_CAP;

void gp_steps_glog_cap(size_t n) {
  glog_cap = n ? n : GLOG_CAP;
}

static void glog_give_up(struct gp_stepper *st) {
  free(st->glog);
  st->glog = NULL;
  st->nglog = st->capglog = 0;
  st->glost = 1;
}

static void glog_add(struct gp_stepper *st, uint32_t ver, uint32_t idx,
                     uint64_t count, uint64_t ns, uint64_t blocked) {
  if (st->glost) return;
  if (st->nglog >= glog_cap) {
    glog_give_up(st);
    return;
  }
  if (st->nglog == st->capglog) {
    size_t cap = st->capglog ? 2 * st->capglog : 1024;
    if (cap > glog_cap) cap = glog_cap;
    struct gent *v = realloc(st->glog, cap * sizeof *v);
    if (!v) {
      glog_give_up(st);
      return;
    }
    st->glog = v;
    st->capglog = cap;
  }
  st->glog[st->nglog++] = (struct gent){ver, idx, count, ns, blocked};
}

static void gflush_api(struct gp_attr *a, struct apidef *def) {
  if (def->g_ver)
    glog_add(a->st, def->g_ver, GLOG_API | (uint32_t)(def - a->api),
             def->g_count, def->g_total, def->g_blocked);
  def->g_ver = 0;
  def->g_count = def->g_total = def->g_blocked = 0;
}

/* Gathered: what kernel k's version last_ver added, to the log. */
static void gflush_k(struct gp_attr *a, struct kst *k) {
  if (k->last_ver && k->step_count)
    glog_add(a->st, k->last_ver, (uint32_t)(k - a->k), k->step_count,
             k->step_ns, 0);
  k->step_count = k->step_ns = 0;
}

/* Gathered: the call adds to its API's share of the version it is made
 * in (the one gp_steps_call then returns). */
static void __attribute__((noinline))
gather_call(struct gp_stepper *st, struct apidef *def, int cl, uint64_t dur) {
  uint32_t ver = st->dirty ? gp_steps_new_version(st->a) : st->ver;
  if (!ver) return;
  if (def->g_ver != ver) {
    gflush_api(st->a, def);
    def->g_ver = ver;
  }
  def->g_count++;
  def->g_total += dur;
  if (cl == CALL_BLK) def->g_blocked += dur;
}

/* Per-step detail: the call's API counts in the measured steps' detail
 * (fixed steps), or in its version's (gathered). */
void gp_steps_fixed_call(struct gp_stepper *st, struct apidef *def, int cl,
                         uint64_t dur) {
  if (st->gather) {
    gather_call(st, def, cl, dur);
    return;
  }
  if (st->c[st->open[0]].n <= st->warmup) return;
  st->last_meas = 1;
  def->step_count++;
  def->step_total += dur;
  if (cl == CALL_BLK) def->step_blocked += dur;
}

int gp_steps_last_measured(const struct gp_attr *a) {
  return a->st && a->st->last_meas;
}

static int kernel_seen(struct kst *k, uint32_t ci, uint32_t si) {
  uint32_t *e;
  if (__builtin_expect(ci < 4, 1)) {
    e = k->seen[ci];
  } else {
    if (!k->seen_more &&
        !(k->seen_more = calloc(GP_SEEN_MORE, sizeof *k->seen_more)))
      return 0; /* out of memory: counted as distinct */
    e = k->seen_more[(ci - 4) % GP_SEEN_MORE];
  }
  if (e[0] == ci + 1 && e[1] == si + 1) return 1;
  e[0] = ci + 1;
  e[1] = si + 1;
  return 0;
}

/* Adds the device work gathered for a version to its steps, and empties
 * the slot. */
static void vacc_flush(struct gp_stepper *st, struct vacc *v) {
  if (!v->ver) return;
  uint32_t from = gp_steps_vfrom(st, v->ver);
  for (uint32_t p = from; p < st->voff[v->ver - 1]; p++) {
    struct scand *c = &st->c[st->pairs[p][0]];
    uint32_t si = st->pairs[p][1];
    if (c->dropped || si >= c->n) continue;
    uint64_t *x = c->v[si].s.c;
    x[GP_SC_kernels] += v->kernels;
    x[GP_SC_kernel_ns] += v->kernel_ns;
    x[GP_SC_xfer_ns] += v->xfer_ns;
    x[GP_SC_pageable_copies] += v->pageable;
    for (int d = 0; d < 4; d++) {
      x[GP_SC_h2d_copies + d] += v->copies[d];
      x[GP_SC_h2d_bytes + d] += v->bytes[d];
    }
  }
  memset(v, 0, sizeof *v);
}

struct vacc *gp_steps_vacc_take(struct gp_stepper *st, struct vacc *v,
                                 uint32_t ver) {
  vacc_flush(st, v);
  v->ver = ver;
  /* fixed steps: one candidate, so one pair; gathered: every version with
   * a pair, sorted out at the end */
  uint32_t from = gp_steps_vfrom(st, ver);
  v->meas = st->fixed && from < st->voff[ver - 1] &&
            (st->gather || st->pairs[from][1] >= st->warmup);
  return v;
}

/* ns: the duration of the kernel that brings version ver, already in
 * k's step fields when ver has steps (gp_steps_device) */
void gp_steps_distinct(struct gp_stepper *st, struct kst *k, uint32_t ver,
                       uint64_t ns) {
  if (st->gather) { /* that kernel starts the new version's share */
    int in = gp_steps_vfrom(st, ver) < st->voff[ver - 1];
    k->step_count -= (uint64_t)in;
    k->step_ns -= in ? ns : 0;
    gflush_k(st->a, k);
    k->step_count = (uint64_t)in;
    k->step_ns = in ? ns : 0;
  }
  k->last_ver = ver;
  uint32_t from = gp_steps_vfrom(st, ver);
  for (uint32_t p = from; p < st->voff[ver - 1]; p++) {
    uint32_t ci = st->pairs[p][0], si = st->pairs[p][1];
    struct scand *c = &st->c[ci];
    if (c->dropped || si >= c->n) continue;
    if (!kernel_seen(k, ci, si)) c->v[si].s.c[GP_SC_distinct_kernels]++;
  }
}

void gp_steps_blocked(struct gp_attr *a, const struct acall *cl) {
  struct gp_stepper *st = a->st;
  if (!st || !cl->sver || cl->sver > st->nver) return;
  uint64_t dur = cl->end - cl->start;
  uint32_t from = gp_steps_vfrom(st, cl->sver);
  for (uint32_t p = from; p < st->voff[cl->sver - 1]; p++) {
    struct scand *c = &st->c[st->pairs[p][0]];
    uint32_t si = st->pairs[p][1];
    if (!c->dropped && si < c->n) c->v[si].s.c[GP_SC_sync_ns] += dur;
  }
  if (st->gather)
    glog_add(st, cl->sver, GLOG_API | cl->api, 0, 0, dur);
  else if (cl->smeas)
    a->api[cl->api].step_blocked += dur;
}

void gp_steps_items(struct gp_attr *a, uint64_t thread, uint64_t count) {
  struct gp_stepper *st = a->st;
  (void)thread; /* like API calls: whatever thread counts them */
  if (!st) return;
  st->items_seen = 1;
  if (st->nopen) st->hc[GP_SC_items] += count;
}

/* ---- the choice, at the end ---- */

/* Interquartile range over the median: robust to the few long intervals
 * a busy machine makes (a preempted thread), unlike the standard
 * deviation. */
static double spread(const struct scand *c) {
  uint64_t med = gp_hist_pct(&c->dur, 50);
  if (c->count < 2 || !med) return INFINITY;
  uint64_t q1 = gp_hist_pct(&c->dur, 25), q3 = gp_hist_pct(&c->dur, 75);
  return (double)(q3 - q1) / (double)med;
}

/* Whether a candidate's steps stretch over at least half of the rest of
 * the window from its first step on: a loop that runs to the end, however
 * long the start-up before it (loading a model, a slow first call), and
 * not something repeated early and then over. */
static int covers(const struct scand *c, uint64_t end) {
  uint64_t rest = end > c->first ? end - c->first : 0;
  return 2 * (c->last - c->first) >= rest;
}

static uint64_t clamp_cat(uint64_t real, uint64_t wd, uint64_t add);

/* The kernel time inside a range candidate's whole kept steps, and the
 * kernel time launched from them (by correlation), in *in and *out. */
static void range_work(const struct gp_stepper *st, const struct scand *c,
                       double *in, double *out) {
  uint64_t nf = st->a->ndev > 1 ? st->a->ndev - 1 : 0;
  size_t n = c->n; /* whole ones: gp_steps_finish left the open one out */
  /* the measured ones: a warm-up step that waits for its kernels (a first
   * iteration that synchronises) says nothing of the others */
  long wo = st->a->o.warmup;
  size_t w = wo >= 0 ? (size_t)wo : (n / 10 > 3 ? n / 10 : 3);
  *in = *out = 0;
  for (size_t i = w < n ? w : 0; !c->dropped && i < n; i++) {
    const struct sstep *x = &c->v[i];
    *in += (double)(nf ? clamp_cat(x->creal[GP_CAT_KERNEL],
                                   x->wd[GP_CAT_KERNEL], nf - x->nreal)
                       : x->wd[GP_CAT_KERNEL]);
    *out += (double)x->s.c[GP_SC_kernel_ns];
  }
}

/* Whether a range holds its GPU work: the kernels running inside its
 * occurrences take at least a tenth of the time of the kernels launched
 * from them. A range around the launches alone, whose kernels run after
 * it ends, times the launch calls, not the steps. (Kernels of several
 * streams at once count once inside and once each launched: a tenth
 * leaves room for ten.) Without steps kept, or nothing launched: held. */
static int holds_work(const struct gp_stepper *st, const struct scand *c) {
  double in, out;
  range_work(st, c, &in, &out);
  return !(out > 0) || in * 10 >= out;
}

/* A top-level range is a step when it repeats at least 5 times, covers()
 * and holds_work(); of those, the one whose occurrences cover most time.
 * (judge 0: holds_work() aside.) */
static size_t best_range_of(const struct gp_stepper *st, uint64_t end,
                            int judge) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < st->nc; i++) {
    const struct scand *c = &st->c[i];
    if (c->kind != SC_RANGE || c->count < 5 || !covers(c, end) ||
        (judge && !holds_work(st, c)))
      continue;
    if (best == SIZE_MAX || c->sum > st->c[best].sum ||
        (c->sum == st->c[best].sum && c->count > st->c[best].count))
      best = i;
  }
  return best;
}

static size_t best_range(const struct gp_stepper *st, uint64_t end) {
  return best_range_of(st, end, 1);
}

/* A synchronising call delimits steps when at least 5 intervals between
 * its returns satisfy covers() and are regular (their interquartile range
 * at most half their median); of those, the most regular. */
static size_t best_sync(const struct gp_stepper *st, uint64_t end) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < st->nc; i++) {
    const struct scand *c = &st->c[i];
    if (c->kind != SC_SYNC || c->count < 5 || !covers(c, end) ||
        spread(c) > 0.5)
      continue;
    if (best == SIZE_MAX || spread(c) < spread(&st->c[best])) best = i;
  }
  return best;
}

/* A launched function (or graph) delimits steps, first by the sequence
 * of launches: launched every L >= 2 launches (of any function) at least
 * 5 times in a row, over at least half of the rest of the window from its
 * first launch on. A function launched once a step keeps the same L from
 * step to step; one launched several times a step (a layer's kernel) does
 * not, whatever its timing, and L = 1 (a function launched twice in a
 * row) tells nothing. Of those, the longest run (the shortest period),
 * then the most launched, then the first launched: the first kernel of
 * the repeating sequence. Failing that, by timing, as a synchronising
 * call: at least 5 intervals between its launches that satisfy covers()
 * and are regular; of those, the ones within 0.1 of the most regular
 * spread, the most launched, then the first launched. */
static size_t best_launch(const struct gp_stepper *st, uint64_t end,
                          int *by_sequence) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < st->nc; i++) {
    const struct scand *c = &st->c[i];
    uint64_t rest = end > c->first ? end - c->first : 0;
    if (c->kind != SC_LAUNCH || c->brun < 5 || c->blen < 2 ||
        2 * (c->bend - c->bstart) < rest)
      continue;
    const struct scand *b = best == SIZE_MAX ? NULL : &st->c[best];
    if (!b || c->brun > b->brun ||
        (c->brun == b->brun &&
         (c->count > b->count ||
          (c->count == b->count && c->first < b->first))))
      best = i;
  }
  *by_sequence = best != SIZE_MAX;
  if (best != SIZE_MAX) return best;
  double least = INFINITY;
  for (size_t i = 0; i < st->nc; i++) {
    const struct scand *c = &st->c[i];
    if (c->kind != SC_LAUNCH || c->count < 5 || !covers(c, end)) continue;
    double sp = spread(c);
    if (sp <= 0.5 && sp < least) least = sp;
  }
  for (size_t i = 0; i < st->nc && least <= 0.5; i++) {
    const struct scand *c = &st->c[i];
    if (c->kind != SC_LAUNCH || c->count < 5 || !covers(c, end) ||
        spread(c) > least + 0.1)
      continue;
    const struct scand *b = best == SIZE_MAX ? NULL : &st->c[best];
    if (!b || c->count > b->count ||
        (c->count == b->count && c->first < b->first))
      best = i;
  }
  return best;
}

static const char *api_name(struct gp_attr *a, uint64_t id) {
  uint32_t i;
  if (!gp_idx_get(&a->api_map, id, &i)) return NULL;
  return gp_attr_str(a, a->api[i].name);
}

/* The name of a launch candidate: its kernel's (or for a graph, the
 * launching call's), else the function's address. */
static const char *launch_name(struct gp_attr *a, const struct scand *c,
                               char *buf, size_t len) {
  const char *n = c->named ? gp_attr_str(a, c->kname) : NULL;
  if (n && *n) return n;
  snprintf(buf, len, "function 0x%llx",
           (unsigned long long)(c->key & ~LAUNCH_GRAPH));
  return buf;
}

static int describe(struct gp_attr *a, struct gp_steps_res *s,
                    const struct scand *c, uint64_t window) {
  char how[512];
  const char *nm = s->name ? s->name : "";
  switch (s->source) {
  case GP_STEPS_NAMED:
    snprintf(how, sizeof how,
             c && c->count ? "each outermost '%s' range is a step (--step)"
                           : "no range matches --step '%s': no steps",
             nm);
    break;
  case GP_STEPS_PROFILER_STEP:
    snprintf(how, sizeof how, "PyTorch profiler's ProfilerStep#N ranges");
    break;
  case GP_STEPS_REPEATED_RANGE:
    snprintf(how, sizeof how,
             "the top-level range '%s' repeats %llu times and covers %.0f%% "
             "of the window",
             nm, (unsigned long long)c->count,
             window ? 100.0 * (double)c->sum / (double)window : 0.0);
    break;
  case GP_STEPS_HEURISTIC:
    if (c && c->kind == SC_LAUNCH) {
      int graph = (c->key & LAUNCH_GRAPH) != 0;
      char why[128];
      if (a->st->by_seq)
        snprintf(why, sizeof why,
                 "launched every %llu launches, %llu times in a row",
                 (unsigned long long)c->blen, (unsigned long long)c->brun);
      else
        snprintf(why, sizeof why, "%llu intervals, spread %.0f%%",
                 (unsigned long long)c->count, 100 * spread(c));
      snprintf(how, sizeof how,
               "heuristic: no step range and no synchronising call that "
               "repeats regularly, so a step starts at each launch of %s "
               "'%s' (%s), the first of the launches that repeat; mark "
               "steps with NVTX or gpuphase_range_push and --step for "
               "certainty",
               graph ? "the same CUDA graph, by" : "the kernel", nm, why);
      break;
    }
    snprintf(how, sizeof how,
             "heuristic: no step range, so a step ends at each return from "
             "%s (%llu intervals, spread %.0f%%); mark steps with NVTX or "
             "gpuphase_range_push and --step for certainty",
             nm, (unsigned long long)c->count, 100 * spread(c));
    break;
  default:
    snprintf(how, sizeof how,
             "no steps found: no range repeats at top level (5 times or "
             "more), and no synchronising call and no kernel launch repeats "
             "regularly; mark steps with NVTX or gpuphase_range_push "
             "(--step NAME)");
  }
  s->how = strdup(how);
  return s->how ? 0 : -1;
}

/* A range that repeats and stretches over the window but does not hold
 * its GPU work (holds_work): said after how the steps were found. */
static int why_not_range(struct gp_attr *a, struct gp_steps_res *s) {
  const struct gp_stepper *st = a->st;
  size_t i = best_range_of(st, a->wend, 0);
  const char *why = a->o.step_why; /* an earlier pass found it */
  if (!why && i != SIZE_MAX && !a->o.step_api && !a->o.step_func &&
      !a->o.step_launches) {
    double in, out;
    range_work(st, &st->c[i], &in, &out);
    const char *nm = gp_attr_str(a, st->c[i].key);
    if (asprintf(&s->why,
                 "the top-level range '%s' repeats %llu times, but the "
                 "kernels run inside it for %.1f%% of the time of those it "
                 "launches: it times the launch calls, not the steps "
                 "(--step '%s' takes it all the same)",
                 nm ? nm : "", (unsigned long long)st->c[i].count,
                 out > 0 ? 100 * in / out : 0.0, nm ? nm : "") < 0) {
      s->why = NULL;
      return -1;
    }
    why = s->why;
  } else if (!why && i == SIZE_MAX && !a->o.step_api && !a->o.step_func &&
             !a->o.step_launches) {
    /* a range that repeats, but not over the window */
    size_t r = SIZE_MAX;
    for (size_t k = 0; k < st->nc; k++) {
      const struct scand *c = &st->c[k];
      if (c->kind == SC_RANGE && c->count >= 5 &&
          (r == SIZE_MAX || c->count > st->c[r].count))
        r = k;
    }
    if (r != SIZE_MAX) {
      const struct scand *c = &st->c[r];
      const char *nm = gp_attr_str(a, c->key);
      uint64_t rest = a->wend > c->first ? a->wend - c->first : 0;
      if (asprintf(&s->why,
                   "the top-level range '%s' repeats %llu times, but its "
                   "occurrences stretch over only %.0f%% of the window from "
                   "the first one on, not half (the GPU runs on long after "
                   "the loop, or the loop ends early; --step '%s' takes it "
                   "all the same)",
                   nm ? nm : "", (unsigned long long)c->count,
                   rest ? 100.0 * (double)(c->last - c->first) / (double)rest
                        : 0.0,
                   nm ? nm : "") < 0) {
        s->why = NULL;
        return -1;
      }
      why = s->why;
    }
  }
  if (!why) return 0;
  char *how = NULL;
  if (s->source == GP_STEPS_NONE
          ? asprintf(&how,
                     "no steps found: %s; and no synchronising call and no "
                     "kernel launch repeats regularly; mark steps with NVTX "
                     "or gpuphase_range_push",
                     why) < 0
          : asprintf(&how, "%s; %s", s->how, why) < 0)
    return -1;
  free(s->how);
  s->how = how;
  return 0;
}

static uint64_t clamp_cat(uint64_t real, uint64_t wd, uint64_t add) {
  int64_t v = (int64_t)(real + add * wd);
  return v > 0 ? (uint64_t)v : 0; /* rebooked time may overshoot a little */
}

/* Moves the candidate's steps into s, their categories over the devices of
 * the result. */
static int move_steps(struct gp_attr *a, struct gp_steps_res *s,
                      struct scand *c, int degraded) {
  uint64_t nf = a->ndev > 1 ? a->ndev - 1 : 0;
  s->ndev = nf ? nf : 1;
  s->n = c->n;
  s->v = calloc(c->n ? c->n : 1, sizeof *s->v);
  if (!s->v) return -1;
  for (size_t i = 0; i < c->n; i++) {
    struct sstep *x = &c->v[i];
    struct gp_step *o = &s->v[i];
    *o = x->s;
    for (int k = 0; k < GP_CAT_N; k++)
      o->cat[k] = nf ? clamp_cat(x->creal[k], x->wd[k], nf - x->nreal)
                     : x->wd[k];
    if (degraded) {
      o->cat[GP_CAT_KERNEL] += o->cat[GP_CAT_SYNC_IDLE];
      o->cat[GP_CAT_SYNC_IDLE] = 0;
    }
    if (!o->c[GP_SC_items] && a->o.step_items)
      o->c[GP_SC_items] = a->o.step_items;
  }
  return 0;
}

/* Gather: the detail of the chosen candidate's measured steps (index
 * warmup on, the open one at the end included, as a pass with the steps
 * fixed counts them), from the log, into the result's kernels and API
 * calls (built already: kernel i is a->k[i], the API calls those of a->api
 * that were called, in order). 1: done; 0: the log was given up; -1: out
 * of memory. */
static int gather_sum(struct gp_attr *a, struct gp_proc_res *r,
                      uint32_t pick, size_t warmup) {
  struct gp_stepper *st = a->st;
  /* the kernels' fields held the last version's share (gp_steps_finish
   * cleared the result's copy): in the log too */
  for (size_t i = 0; i < a->nk; i++) gflush_k(a, &a->k[i]);
  for (size_t i = 0; i < a->napi; i++) gflush_api(a, &a->api[i]);
  if (st->glost) return 0;
  uint8_t *meas = calloc(st->nver + 1, 1);
  size_t *ai = calloc(a->napi ? a->napi : 1, sizeof *ai);
  if (!meas || !ai) {
    free(meas);
    free(ai);
    return -1;
  }
  for (uint32_t v = 1; v <= st->nver; v++)
    for (uint32_t p = gp_steps_vfrom(st, v); p < st->voff[v - 1]; p++)
      if (st->pairs[p][0] == pick && st->pairs[p][1] >= warmup) meas[v] = 1;
  for (size_t i = 0, n = 0; i < a->napi; i++)
    ai[i] = a->api[i].count ? n++ : SIZE_MAX;
  for (size_t i = 0; i < st->nglog; i++) {
    const struct gent *g = &st->glog[i];
    if (g->ver > st->nver || !meas[g->ver]) continue;
    if (g->idx & GLOG_API) {
      size_t j = g->idx & ~GLOG_API;
      if (j >= a->napi || ai[j] == SIZE_MAX) continue;
      struct gp_api_res *o = &r->apis[ai[j]];
      o->step_count += g->count;
      o->step_total += g->ns;
      o->step_blocked += g->blocked;
    } else if (g->idx < r->nkernels) {
      r->kernels[g->idx].step_count += g->count;
      r->kernels[g->idx].step_ns += g->ns;
    }
  }
  free(meas);
  free(ai);
  return 1;
}

int gp_steps_finish(struct gp_attr *a, struct gp_proc_res *r) {
  struct gp_stepper *st = a->st;
  struct gp_steps_res *s = &r->steps;
  uint64_t window = a->wend - a->wstart;
  size_t pick = SIZE_MAX;
  char fbuf[40];
  s->source = GP_STEPS_NONE;
  if (!st) return describe(a, s, NULL, window);
  /* gathering, the kernels' step fields are the last version's share, not
   * a detail: none unless gather_sum makes it */
  for (size_t i = 0; st->gather && i < r->nkernels; i++)
    r->kernels[i].step_count = r->kernels[i].step_ns = 0;
  for (size_t i = 0; i < VACC_N; i++) vacc_flush(st, &st->acc[i]);
  for (size_t i = 0; i < st->nc; i++) /* an open step is not a whole one */
    if (st->c[i].open && !st->c[i].dropped && st->c[i].n) st->c[i].n--;
  if (a->o.step) {
    s->source = GP_STEPS_NAMED;
    pick = st->named ? st->named - 1 : SIZE_MAX;
  } else if (a->o.step_api || a->o.step_func) {
    st->by_seq = a->o.step_by_seq;
    s->source = GP_STEPS_HEURISTIC;
    pick = st->nc ? 0 : SIZE_MAX;
  } else if (st->ps && st->c[st->ps - 1].count) {
    s->source = GP_STEPS_PROFILER_STEP;
    pick = st->ps - 1;
  } else if ((pick = best_range(st, a->wend)) != SIZE_MAX) {
    s->source = GP_STEPS_REPEATED_RANGE;
  } else if ((pick = best_sync(st, a->wend)) != SIZE_MAX) {
    s->source = GP_STEPS_HEURISTIC;
  } else if (st->launch_frozen) {
    s->relaunch = 1; /* a pass following the launches alone decides */
  } else if ((pick = best_launch(st, a->wend, &st->by_seq)) != SIZE_MAX) {
    s->source = GP_STEPS_HEURISTIC;
  }
  if (a->o.step_source && s->source != GP_STEPS_NONE)
    s->source = (enum gp_step_source)a->o.step_source;
  struct scand *c = pick != SIZE_MAX ? &st->c[pick] : NULL;
  const char *nm = NULL;
  if (a->o.step && s->source != GP_STEPS_NONE) nm = a->o.step; /* also a
                                                  second pass's fixed name */
  else if (s->source == GP_STEPS_PROFILER_STEP) nm = "ProfilerStep#*";
  else if (c && c->kind == SC_RANGE) nm = gp_attr_str(a, c->key);
  else if (c && c->kind == SC_LAUNCH) nm = launch_name(a, c, fbuf, sizeof fbuf);
  else if (c) nm = api_name(a, c->key);
  if (c && c->kind == SC_LAUNCH) {
    s->func = c->key;
    s->by_seq = st->by_seq;
  }
  if (nm && !(s->name = strdup(nm))) return -1;
  if (describe(a, s, c, window) < 0) return -1;
  if (!a->o.step && (s->source == GP_STEPS_HEURISTIC ||
                     s->source == GP_STEPS_NONE) &&
      why_not_range(a, s) < 0)
    return -1;
  s->items_fixed = a->o.step_items;
  s->items_known = st->items_seen || a->o.step_items;
  s->ndev = a->ndev > 1 ? a->ndev - 1 : 1;
  if (!c) return 0;
  uint64_t n = c->dropped ? c->count : c->n;
  s->warmup = a->o.warmup >= 0 ? (size_t)a->o.warmup
                                : (size_t)(n / 10 > 3 ? n / 10 : 3);
  if (s->warmup > n) s->warmup = (size_t)n;
  if (c->dropped) {
    s->incomplete = 1;
    s->n = (size_t)n;
    return 0;
  }
  s->detail = st->gather ? gather_sum(a, r, (uint32_t)pick, s->warmup)
                         : st->fixed;
  if (s->detail < 0) return -1;
  if (move_steps(a, s, c, r->degraded) < 0) return -1;
  if (st->overlap)
    gp_res_note(r,
                "%llu ranges opened while the same step was open on another "
                "thread were not counted as steps",
                (unsigned long long)st->overlap);
  return gp_steps_derive(s);
}
