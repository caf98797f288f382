/* Reading the measured counters: one more pass over a trace that has
 * METRIC or SAMPLER records, after the analysis has fixed the window, the
 * steps and the phases. Each (device, quantity, source) keeps one pending
 * piece (a value and the interval it holds) and books it, time-weighted,
 * into the window's total, the time buckets, the steps and the phases open
 * meanwhile; memory grows with devices x quantities x (steps + phases),
 * never with samples. Rules: docs/counters.md ("Report"). */
#include "measured.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuphase/trace.h"
#include "reader_ext.h"
#include "u64map.h"
#include "util.h"

const char *const gp_mq_name[GP_MQ_N] = {
#define GP_X(U, n, u, j) n,
    GP_MQS(GP_X)
#undef GP_X
};
const char *const gp_mq_json[GP_MQ_N] = {
#define GP_X(U, n, u, j) j,
    GP_MQS(GP_X)
#undef GP_X
};
static const int mq_unit[GP_MQ_N] = {
#define GP_X(U, n, u, j) GPUPHASE_UNIT_##u,
    GP_MQS(GP_X)
#undef GP_X
};

#define MAX_DEV 64      /* devices with counters */
#define MAX_SLOTS 1024  /* (device, quantity, source) triples */
#define HOLD UINT64_MAX /* an instant's value holds until the next one */
size_t gp_meas_part_budget = (size_t)256 << 20;
#define MEAS_PART_BUDGET gp_meas_part_budget

double gp_magg_mean(const struct gp_magg *a) {
  return a->ns > 0 ? a->wsum / a->ns : -1;
}

const char *gp_msrc_name(int s) {
  static const char *const n[] = {"?", "nvml", "gpm", "pm"};
  return s >= 1 && s <= 3 ? n[s] : "?";
}

const char *gp_mstat_name(int s) {
  static const char *const n[] = {"ok",           "missing",     "denied",
                                  "busy",         "unsupported", "failed",
                                  "samples lost", "not enabled"};
  return s >= 0 && s <= 7 ? n[s] : "unknown";
}

struct slot {
  uint32_t dev; /* index into m->dev */
  int q, source;
  uint64_t samples, last_start;
  struct gp_magg total, bucket[GP_MEAS_BUCKETS], *step, *phase;
  int has;       /* a pending piece */
  double v;      /* its value */
  uint64_t a, b; /* booked up to a; holds until b (HOLD: an instant) */
  /* energy: the last reading, the step edges passed */
  int e_has;
  uint64_t e_t;
  double e_v;
  size_t e_edge;
  double e_first, e_last, e_t0, e_t1; /* NAN: unknown */
  double *e_at;                       /* [2 x nsteps]: start, end */
  int thr[3];                         /* clock_events: THR_* slots, -1 */
};

struct metric {
  int slot; /* -1: ignored (unknown name or unit, scale 0) */
  double scale;
};

struct edge {
  uint64_t t;
  size_t i; /* 2 x step + (1: end) */
};

struct rstack {
  int *v;           /* phases of the open pushes */
  uint64_t *domain; /* and their NVTX domains: a pop closes its own */
  size_t n, cap;
};

struct mr {
  struct gp_proc_res *r;
  const gpuphase_reader *rd;
  struct gp_meas_res *m;
  uint64_t t0, t1, bw;
  struct slot *slots;
  size_t nslots;
  struct metric *metrics;
  size_t nmetrics, capmetrics;
  struct gp_u64map metric_map; /* metric id -> index in metrics */
  /* phases */
  struct gp_u64map name_phase; /* string id -> phase index + 1, 0: none */
  struct gp_u64map name_hash;  /* hash of a phase name -> index + 1 */
  struct gp_u64map thr_map;    /* thread -> index in stacks */
  struct rstack *stacks;
  size_t nstacks;
  struct gp_u64map open_ids; /* START id -> phase index + 1 */
  uint32_t *open;            /* [nphases] instances open */
  size_t *active, nactive;
  struct edge *edges;
  size_t nedges;
  uint64_t now;
  size_t part_bytes; /* per-step and per-phase aggregates allocated */
  int oom;
};

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static void *zalloc(struct mr *x, size_t n, size_t sz) {
  void *p = n ? calloc(n, sz) : NULL;
  if (n && !p) x->oom = 1;
  return p;
}

static int dev_get(struct mr *x, int64_t id) {
  struct gp_meas_res *m = x->m;
  for (size_t i = 0; i < m->ndev; i++)
    if (m->dev[i].id == id) return (int)i;
  if (m->ndev >= MAX_DEV) return -1;
  struct gp_meas_dev *d = &m->dev[m->ndev];
  memset(d, 0, sizeof *d);
  d->id = id;
  d->energy_j = -1;
  return (int)m->ndev++;
}

static int slot_get(struct mr *x, int dev, int q, int source) {
  for (size_t i = 0; i < x->nslots; i++)
    if ((int)x->slots[i].dev == dev && x->slots[i].q == q &&
        x->slots[i].source == source)
      return (int)i;
  if (x->nslots >= MAX_SLOTS) return -1;
  struct slot *s = &x->slots[x->nslots];
  memset(s, 0, sizeof *s);
  s->dev = (uint32_t)dev;
  s->q = q;
  s->source = source;
  s->thr[0] = s->thr[1] = s->thr[2] = -1;
  s->e_first = s->e_last = s->e_t0 = s->e_t1 = NAN;
  if (x->oom) return -1;
  return (int)x->nslots++;
}

static void agg(struct gp_magg *g, double v, double dt) {
  if (g->ns <= 0 || v > g->peak) g->peak = v;
  g->wsum += v * dt;
  g->ns += dt;
}

/* The value v held over [a, e): into the total, buckets, steps, phases. */
static void book(struct mr *x, struct slot *s, uint64_t a, uint64_t e,
                 double v) {
  if (a < x->t0) a = x->t0;
  if (e > x->t1) e = x->t1;
  if (e <= a) return;
  agg(&s->total, v, (double)(e - a));
  for (uint64_t b = (a - x->t0) / x->bw;
       b < GP_MEAS_BUCKETS && x->t0 + b * x->bw < e; b++) {
    uint64_t lo = x->t0 + b * x->bw, hi = lo + x->bw;
    lo = lo > a ? lo : a;
    hi = hi < e ? hi : e;
    if (hi > lo) agg(&s->bucket[b], v, (double)(hi - lo));
  }
  const struct gp_steps_res *st = &x->r->steps;
  /* steps are in start order and do not overlap: the last that starts
   * before e, and back while they end after a */
  size_t lo = 0, hi = st->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (st->v[mid].start < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = s->step ? lo : 0; i-- > 0;) {
    uint64_t s0 = st->v[i].start > a ? st->v[i].start : a;
    uint64_t s1 = st->v[i].end < e ? st->v[i].end : e;
    if (s1 > s0) agg(&s->step[i], v, (double)(s1 - s0));
    if (st->v[i].end <= a) break;
  }
  for (size_t i = 0; s->phase && i < x->nactive; i++)
    agg(&s->phase[x->active[i]], v, (double)(e - a));
}

/* Books slot s's pending piece up to t. */
static void flush(struct mr *x, struct slot *s, uint64_t t) {
  if (!s->has || t <= s->a) return;
  uint64_t e = s->b < t ? s->b : t;
  book(x, s, s->a, e, s->v);
  s->a = e;
  if (s->b != HOLD && s->a >= s->b) s->has = 0;
}

static void flush_all(struct mr *x, uint64_t t) {
  for (size_t i = 0; i < x->nslots; i++)
    flush(x, &x->slots[i], t);
}

/* The per-step and per-phase aggregates of a slot, at its first sample,
 * within a budget for all slots together (a trace that defines thousands
 * of metrics on a run of many steps keeps their totals and buckets only). */
static void per_part(struct mr *x, struct slot *s) {
  size_t need = (x->m->nsteps + x->m->nphases) * sizeof(struct gp_magg);
  if (s->samples || !need) return;
  if (need > MEAS_PART_BUDGET - x->part_bytes) {
    x->m->over_budget++;
    return;
  }
  s->step = zalloc(x, x->m->nsteps, sizeof *s->step);
  s->phase = zalloc(x, x->m->nphases, sizeof *s->phase);
  x->part_bytes += need;
}

static void put(struct mr *x, struct slot *s, uint64_t start, uint64_t end,
                double v) {
  per_part(x, s);
  flush(x, s, start);
  s->has = 1;
  s->v = v;
  s->a = start;
  s->b = end > start ? end : HOLD;
  s->samples++;
  s->last_start = start;
}

static double interp(uint64_t t0, double v0, uint64_t t1, double v1,
                     uint64_t t) {
  if (t1 == t0) return v1;
  return v0 + (v1 - v0) * ((double)(t - t0) / (double)(t1 - t0));
}

/* A reading of the cumulative energy counter: the step edges and the
 * window's edges since the last reading are interpolated. */
static void energy(struct mr *x, struct slot *s, uint64_t t, double v) {
  size_t need = 2 * x->m->nsteps * sizeof *s->e_at;
  if (!s->e_has && need) { /* the steps' edges, within the budget */
    if (need > MEAS_PART_BUDGET - x->part_bytes) {
      x->m->over_budget++;
    } else if ((s->e_at = malloc(need))) {
      x->part_bytes += need;
      for (size_t i = 0; i < 2 * x->m->nsteps; i++)
        s->e_at[i] = NAN;
    } else {
      x->oom = 1;
      return;
    }
  }
  if (t >= x->t0 && t <= x->t1) {
    if (isnan(s->e_first)) s->e_first = v;
    s->e_last = v;
  }
  if (s->e_has) {
    for (; s->e_edge < x->nedges && x->edges[s->e_edge].t <= t; s->e_edge++)
      if (x->edges[s->e_edge].t >= s->e_t && s->e_at)
        s->e_at[x->edges[s->e_edge].i] =
            interp(s->e_t, s->e_v, t, v, x->edges[s->e_edge].t);
    if (s->e_t <= x->t0 && x->t0 <= t)
      s->e_t0 = interp(s->e_t, s->e_v, t, v, x->t0);
    if (s->e_t <= x->t1 && x->t1 <= t)
      s->e_t1 = interp(s->e_t, s->e_v, t, v, x->t1);
  } else {
    while (s->e_edge < x->nedges && x->edges[s->e_edge].t < t)
      s->e_edge++; /* before the first reading: unknown */
    if (t == x->t0) s->e_t0 = v;
  }
  s->e_has = 1;
  s->e_t = t;
  s->e_v = v;
}

static void on_metric(struct mr *x, const struct gpuphase_metric *r) {
  if (x->nmetrics == x->capmetrics) {
    size_t cap = x->capmetrics ? 2 * x->capmetrics : 32;
    struct metric *v = realloc(x->metrics, cap * sizeof *v);
    if (!v) {
      x->oom = 1;
      return;
    }
    x->metrics = v;
    x->capmetrics = cap;
  }
  struct metric *mt = &x->metrics[x->nmetrics];
  mt->slot = -1;
  mt->scale = (double)r->scale;
  gpuphase_blob b;
  int q = -1;
  if (gp_reader_string_blob(x->rd, r->name, &b))
    for (int k = 0; k < GP_MQ_N; k++)
      if (gp_mq_name[k] && strlen(gp_mq_name[k]) == b.len &&
          !memcmp(gp_mq_name[k], b.data, b.len))
        q = k;
  if (q >= 0 && (int)r->unit == mq_unit[q] && r->scale >= 1 &&
      r->source >= GPUPHASE_MSRC_NVML && r->source <= GPUPHASE_MSRC_PM) {
    int d = dev_get(x, r->device);
    if (d >= 0) {
      x->m->dev[d].src[r->source].seen = 1;
      mt->slot = slot_get(x, d, q, (int)r->source);
      if (q == GP_MQ_CLOCK_EV && mt->slot >= 0)
        for (int k = 0; k < 3; k++) {
          int t = slot_get(x, d, GP_MQ_THR_POWER + k, (int)r->source);
          x->slots[mt->slot].thr[k] = t;
        }
    }
  } else if (q >= 0) {
    x->m->rejected_defs++;
  }
  if (x->oom) return;
  if (gp_u64map_put(&x->metric_map, r->metric, x->nmetrics) < 0) {
    x->oom = 1;
    return;
  }
  x->nmetrics++;
}

static void on_sample(struct mr *x, const struct gpuphase_sample *r) {
  uint64_t *mi = gp_u64map_get(&x->metric_map, r->metric);
  if (!mi) {
    x->m->undefined++;
    return;
  }
  const struct metric *mt = &x->metrics[*mi];
  if (mt->slot < 0) return; /* a quantity the report does not use */
  struct slot *s = &x->slots[mt->slot];
  if (r->end < r->start) {
    x->m->rejected++;
    return;
  }
  if (s->samples && r->start < s->last_start) {
    x->m->late++;
    return;
  }
  double v = (double)r->value / mt->scale;
  int unit = mq_unit[s->q];
  if (unit == GPUPHASE_UNIT_PERCENT) {
    if (v < 0 || v > 101) {
      x->m->rejected++;
      return;
    }
    if (v > 100) v = 100;
  } else if (unit != GPUPHASE_UNIT_CELSIUS && r->value < 0) {
    x->m->rejected++;
    return;
  }
  if (s->q == GP_MQ_ENERGY) {
    if (r->end != r->start) {
      x->m->rejected++; /* a counter is read at an instant */
      return;
    }
    s->samples++;
    s->last_start = r->start;
    energy(x, s, r->start, v);
    if (r->start >= x->t0 && r->start <= x->t1) agg(&s->total, v, 0);
    return;
  }
  if (s->q == GP_MQ_CLOCK_EV) {
    uint64_t mask = (uint64_t)r->value; /* a mask: scale does not apply */
    static const uint64_t bits[3] = {GP_CLK_POWER, GP_CLK_THERMAL,
                                     GP_CLK_HW_SLOWDOWN};
    for (int k = 0; k < 3; k++)
      if (s->thr[k] >= 0)
        put(x, &x->slots[s->thr[k]], r->start, r->end,
            mask & bits[k] ? 100.0 : 0.0);
    v = (double)mask;
  }
  put(x, s, r->start, r->end, v);
}

static void on_sampler(struct mr *x, const struct gpuphase_sampler *r) {
  if (r->source < GPUPHASE_MSRC_NVML || r->source > GPUPHASE_MSRC_PM) return;
  int d = dev_get(x, r->device);
  if (d < 0) return;
  struct gp_msrc_state *s = &x->m->dev[d].src[r->source];
  s->seen = 1;
  s->status = (int)(r->status > 7 ? 99 : r->status);
  if (r->status == GPUPHASE_MSTAT_OK) {
    s->ok_once = 1;
    return;
  }
  s->bad = 1;
  s->bad_status = s->status;
  s->bad_after_ok = s->ok_once;
  gpuphase_blob b;
  free(s->reason);
  s->reason = NULL;
  if (r->reason && gp_reader_string_blob(x->rd, r->reason, &b)) {
    size_t n = b.len < 200 ? b.len : 200;
    if ((s->reason = malloc(n + 1))) {
      memcpy(s->reason, b.data, n);
      s->reason[n] = 0;
      for (size_t i = 0; i < n; i++)
        if (!s->reason[i]) s->reason[i] = ' ';
    } else {
      x->oom = 1;
    }
  }
}

/* ---- phases, as the attribution opens and closes them ---- */

static int phase_of(struct mr *x, uint64_t name) {
  uint64_t *c = gp_u64map_get(&x->name_phase, name);
  if (c) return (int)*c - 1;
  int p = -1;
  gpuphase_blob b;
  if (gp_reader_string_blob(x->rd, name, &b)) {
    uint64_t *h = gp_u64map_get(&x->name_hash, fnv(b.data, b.len));
    const char *pn = h ? x->r->phases[*h - 1].name : NULL;
    if (pn && strlen(pn) == b.len && !memcmp(pn, b.data, b.len))
      p = (int)*h - 1;
    for (size_t i = 0; p < 0 && h && i < x->r->nphases; i++) { /* collision */
      pn = x->r->phases[i].name;
      if (pn && strlen(pn) == b.len && !memcmp(pn, b.data, b.len)) p = (int)i;
    }
  }
  if (gp_u64map_put(&x->name_phase, name, (uint64_t)(p + 1)) < 0) x->oom = 1;
  return p;
}

static void phase_edge(struct mr *x, int p, int open) {
  if (p < 0) return;
  if (open) {
    if (x->open[p]++) return;
    x->active[x->nactive++] = (size_t)p;
    return;
  }
  if (!x->open[p] || --x->open[p]) return;
  for (size_t i = 0; i < x->nactive; i++)
    if (x->active[i] == (size_t)p) {
      x->active[i] = x->active[--x->nactive];
      break;
    }
}

static struct rstack *stack_of(struct mr *x, uint64_t thread) {
  uint64_t *i = gp_u64map_get(&x->thr_map, thread);
  if (i) return &x->stacks[*i];
  struct rstack *v = realloc(x->stacks, (x->nstacks + 1) * sizeof *v);
  if (!v) {
    x->oom = 1;
    return NULL;
  }
  x->stacks = v;
  if (gp_u64map_put(&x->thr_map, thread, x->nstacks) < 0) {
    x->oom = 1;
    return NULL;
  }
  memset(&v[x->nstacks], 0, sizeof *v);
  return &v[x->nstacks++];
}

static void on_range(struct mr *x, const struct gpuphase_range *r) {
  uint64_t t = r->start > x->now ? r->start : x->now;
  flush_all(x, t);
  if (r->op == GPUPHASE_RANGE_PUSH) {
    struct rstack *s = stack_of(x, r->thread);
    if (!s) return;
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 8;
      int *v = realloc(s->v, cap * sizeof *v);
      if (v) s->v = v;
      uint64_t *dm = v ? realloc(s->domain, cap * sizeof *dm) : NULL;
      if (dm) s->domain = dm;
      if (!v || !dm) {
        x->oom = 1;
        return;
      }
      s->cap = cap;
    }
    int p = phase_of(x, r->name);
    s->domain[s->n] = r->domain;
    s->v[s->n++] = p;
    phase_edge(x, p, 1);
  } else if (r->op == GPUPHASE_RANGE_POP) {
    struct rstack *s = stack_of(x, r->thread);
    size_t i = s ? s->n : 0;
    while (i > 0 && s->domain[i - 1] != r->domain)
      i--;
    if (i) {
      int p = s->v[--i];
      memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
      memmove(&s->domain[i], &s->domain[i + 1],
              (s->n - i - 1) * sizeof *s->domain);
      s->n--;
      phase_edge(x, p, 0);
    }
  } else if (r->op == GPUPHASE_RANGE_START) {
    int p = phase_of(x, r->name);
    uint64_t old;
    if (gp_u64map_del(&x->open_ids, r->id, &old))
      phase_edge(x, (int)old - 1, 0);
    if (gp_u64map_put(&x->open_ids, r->id, (uint64_t)(p + 1)) < 0) x->oom = 1;
    phase_edge(x, p, 1);
  } else if (r->op == GPUPHASE_RANGE_END) {
    uint64_t old;
    if (gp_u64map_del(&x->open_ids, r->id, &old))
      phase_edge(x, (int)old - 1, 0);
  }
}

static int cmp_edge(const void *a, const void *b) {
  const struct edge *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t ? 1 : x->i < y->i ? -1 : x->i > y->i;
}

/* ---- the result ---- */

static void finish_dev(struct mr *x, size_t di) {
  struct gp_meas_dev *d = &x->m->dev[di];
  for (int q = 0; q < GP_MQ_N; q++) {
    struct slot *best = NULL;
    for (size_t i = 0; i < x->nslots; i++) {
      struct slot *s = &x->slots[i];
      if (s->dev != di || s->q != q || !s->samples) continue;
      /* PM over GPM over NVML: the sources' numbers */
      if (!best || s->source > best->source) best = s;
    }
    if (!best) continue;
    struct gp_mq_res *o = &d->q[q];
    o->source = best->source;
    o->samples = best->samples;
    o->total = best->total;
    memcpy(o->bucket, best->bucket, sizeof o->bucket);
    o->step = best->step;
    o->phase = best->phase;
    best->step = best->phase = NULL;
    if (q == GP_MQ_ENERGY) {
      double a = !isnan(best->e_t0) ? best->e_t0 : best->e_first;
      double b = !isnan(best->e_t1) ? best->e_t1 : best->e_last;
      d->energy_j = !isnan(a) && !isnan(b) && b >= a ? b - a : -1;
      d->step_energy = zalloc(x, x->m->nsteps, sizeof *d->step_energy);
      for (size_t i = 0; d->step_energy && i < x->m->nsteps; i++) {
        double s0 = best->e_at ? best->e_at[2 * i] : NAN;
        double s1 = best->e_at ? best->e_at[2 * i + 1] : NAN;
        d->step_energy[i] = !isnan(s0) && !isnan(s1) && s1 >= s0 ? s1 - s0 : -1;
      }
    }
  }
  d->other_procs = d->q[GP_MQ_PROCS].source && d->q[GP_MQ_PROCS].total.peak > 1;
  const struct gp_mq_res *mu = &d->q[GP_MQ_MEM_USED];
  if (mu->source && mu->total.ns > 0) {
    const struct gp_mq_res *pm = &d->q[GP_MQ_PROC_MEM];
    double ours = 0, slack = 2.0 * (1 << 30);
    if (pm->source && pm->total.ns > 0) {
      ours = pm->total.peak;
      slack = 1.0 * (1 << 30);
    } else {
      for (size_t i = 0; i < x->r->ndev; i++)
        if (x->r->dev[i].id == d->id) ours = (double)x->r->dev[i].mem_peak;
    }
    d->mem_other_bytes = mu->total.peak > ours ? mu->total.peak - ours : 0;
    d->other_mem = d->mem_other_bytes > slack;
  }
}

void gp_meas_free(struct gp_meas_res *m) {
  if (!m) return;
  for (size_t i = 0; i < m->ndev; i++) {
    for (int q = 0; q < GP_MQ_N; q++) {
      free(m->dev[i].q[q].step);
      free(m->dev[i].q[q].phase);
    }
    for (int s = 0; s < 4; s++)
      free(m->dev[i].src[s].reason);
    free(m->dev[i].step_energy);
  }
  free(m->dev);
  free(m->phase_name);
  free(m);
}

const struct gp_meas_dev *gp_meas_dev(const struct gp_proc_res *r, int64_t id) {
  if (!r || !r->meas) return NULL;
  for (size_t i = 0; i < r->meas->ndev; i++)
    if (r->meas->dev[i].id == id && gp_meas_any(&r->meas->dev[i]))
      return &r->meas->dev[i];
  return NULL;
}

int gp_meas_any(const struct gp_meas_dev *m) {
  for (int q = 0; q < GP_MQ_N; q++)
    if (m->q[q].source) return 1;
  return 0;
}

static void mr_free(struct mr *x) {
  for (size_t i = 0; i < x->nslots; i++) {
    free(x->slots[i].step);
    free(x->slots[i].phase);
    free(x->slots[i].e_at);
  }
  free(x->slots);
  free(x->metrics);
  gp_u64map_free(&x->metric_map);
  gp_u64map_free(&x->name_phase);
  gp_u64map_free(&x->name_hash);
  gp_u64map_free(&x->thr_map);
  gp_u64map_free(&x->open_ids);
  for (size_t i = 0; i < x->nstacks; i++) {
    free(x->stacks[i].v);
    free(x->stacks[i].domain);
  }
  free(x->stacks);
  free(x->open);
  free(x->active);
  free(x->edges);
}

static int setup(struct mr *x, struct gp_proc_res *r) {
  struct gp_meas_res *m = x->m;
  m->nsteps = r->steps.n;
  m->nphases = r->nphases;
  x->t0 = r->wstart;
  x->t1 = r->wstart + r->window_ns;
  x->bw = (r->window_ns + GP_MEAS_BUCKETS - 1) / GP_MEAS_BUCKETS;
  if (!x->bw) x->bw = 1;
  m->t0 = x->t0;
  m->bucket_ns = x->bw;
  m->nbuckets = r->window_ns ? (size_t)((r->window_ns + x->bw - 1) / x->bw) : 0;
  m->dev = zalloc(x, MAX_DEV, sizeof *m->dev);
  x->slots = zalloc(x, MAX_SLOTS, sizeof *x->slots);
  m->phase_name = zalloc(x, r->nphases, sizeof *m->phase_name);
  x->open = zalloc(x, r->nphases, sizeof *x->open);
  x->active = zalloc(x, r->nphases, sizeof *x->active);
  x->edges = zalloc(x, 2 * r->steps.n, sizeof *x->edges);
  if (x->oom) return -1;
  for (size_t i = 0; i < r->nphases; i++) {
    m->phase_name[i] = r->phases[i].name;
    const char *n = r->phases[i].name ? r->phases[i].name : "";
    uint64_t h = fnv(n, strlen(n));
    if (!gp_u64map_get(&x->name_hash, h) &&
        gp_u64map_put(&x->name_hash, h, i + 1) < 0)
      return -1;
  }
  for (size_t i = 0; i < r->steps.n; i++) {
    x->edges[2 * i] = (struct edge){r->steps.v[i].start, 2 * i};
    x->edges[2 * i + 1] = (struct edge){r->steps.v[i].end, 2 * i + 1};
  }
  x->nedges = 2 * r->steps.n;
  if (x->nedges) qsort(x->edges, x->nedges, sizeof *x->edges, cmp_edge);
  return 0;
}

static int rerun_findings(struct gp_proc_res *r) {
  for (size_t i = 0; i < r->nfindings; i++)
    free(r->findings[i].text);
  free(r->findings);
  r->findings = NULL;
  r->nfindings = 0;
  return gp_findings_run(r);
}

int gp_meas_read(struct gp_proc_res *r, const char *path, char *err,
                 size_t errlen) {
  if (!r->meas_records || !r->started) return 0;
  int code = 0;
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, errlen);
  if (!rd) return -1;
  /* the file was read whole before: only the kinds read here are decoded */
  gp_reader_only(rd, (uint64_t)1 << GPUPHASE_REC_METRIC |
                         (uint64_t)1 << GPUPHASE_REC_SAMPLE |
                         (uint64_t)1 << GPUPHASE_REC_SAMPLER |
                         (uint64_t)1 << GPUPHASE_REC_RANGE);
  struct mr x = {.r = r, .rd = rd};
  x.m = calloc(1, sizeof *x.m);
  int rc = 0;
  if (!x.m || setup(&x, r) < 0) x.oom = 1;
  const struct gpuphase_record *rec;
  while (!x.oom && (rc = gp_reader_next_ref(rd, &rec)) == 1) {
    switch (rec->kind) {
    case GPUPHASE_REC_METRIC:
      on_metric(&x, &rec->u.metric);
      break;
    case GPUPHASE_REC_SAMPLE:
      if (rec->u.sample.start > x.now) x.now = rec->u.sample.start;
      on_sample(&x, &rec->u.sample);
      break;
    case GPUPHASE_REC_SAMPLER:
      on_sampler(&x, &rec->u.sampler);
      break;
    case GPUPHASE_REC_RANGE:
      on_range(&x, &rec->u.range);
      if (rec->u.range.start > x.now) x.now = rec->u.range.start;
      break;
    default:
      break;
    }
  }
  if (!x.oom && rc < 0) {
    const char *msg = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: reading the measured counters: %s", path,
             msg && *msg ? msg : gpuphase_strerror(rc));
    mr_free(&x);
    gp_meas_free(x.m);
    gpuphase_reader_close(rd);
    return -1;
  }
  if (!x.oom) {
    flush_all(&x, x.t1);
    for (size_t i = 0; i < x.m->ndev; i++)
      finish_dev(&x, i);
  }
  mr_free(&x);
  gpuphase_reader_close(rd);
  if (x.oom) {
    gp_meas_free(x.m);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  r->meas = x.m;
  struct gp_meas_res *m = x.m;
  if (m->undefined &&
      gp_res_note(r,
                  "%llu measured samples name a metric id no METRIC "
                  "record defines: ignored",
                  (unsigned long long)m->undefined) < 0)
    return -1;
  for (size_t i = 0; i < m->ndev; i++) {
    const struct gp_meas_dev *d = &m->dev[i];
    for (int k = 1; k <= 3 && !gp_meas_any(d); k++) {
      const struct gp_msrc_state *st = &d->src[k];
      if (!st->bad || st->bad_status == GPUPHASE_MSTAT_OFF) continue;
      char clean[256];
      gp_text_clean(st->reason ? st->reason : "no reason given", clean,
                    sizeof clean, 160);
      if (gp_res_note(r, "GPU %lld: no measured counters: %s %s: %s",
                      (long long)d->id, gp_msrc_name(k),
                      gp_mstat_name(st->bad_status), clean) < 0)
        return -1;
    }
  }
  if (m->over_budget &&
      gp_res_note(r,
                  "measured counters: %llu metrics have no per-step or "
                  "per-phase values (too many metrics for the steps and "
                  "phases; their totals and time buckets are kept)",
                  (unsigned long long)m->over_budget) < 0)
    return -1;
  if ((m->rejected || m->late || m->rejected_defs) &&
      gp_res_note(r,
                  "measured counters: %llu samples out of range, %llu out of "
                  "time order and %llu metric definitions with a wrong unit "
                  "or scale 0 were ignored",
                  (unsigned long long)m->rejected, (unsigned long long)m->late,
                  (unsigned long long)m->rejected_defs) < 0)
    return -1;
  return rerun_findings(r);
}
