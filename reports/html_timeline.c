/* The timeline of the HTML report (timeline.h). One more sorted read of the
 * trace feeds two things: an aggregated view of the whole run (per row and
 * column: the share of time busy and the name that took most of it) and
 * the events of a detail window, kept up to a budget. Memory: rows x
 * columns cells, the budget's events and the names they use, whatever the
 * length of the trace. */
#include "html_timeline.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpuphase/trace.h"
#include "job_par.h"
#include "jsonw.h"
#include "reader_ext.h"
#include "render.h"
#include "report.h"
#include "u64map.h"
#include "util.h"

/* names that are not strings of the trace */
#define SID_COPY ((1ull << 63) | 1)
#define SID_MEMSET ((1ull << 63) | 2)

/* The dominant name of a cell is tracked with two counters (the leader
 * and a challenger that replaces it once ahead): exact when at most two
 * names share a cell, an estimate otherwise. */
struct cell {
  uint64_t busy, dom_ns, run_ns, dom, run;
};

struct row {
  int stream;      /* 0: a host thread, 1: a GPU stream */
  int64_t a;       /* thread index, or device */
  uint64_t b;      /* tid (0 unknown), or stream */
  uint64_t events; /* all of the row's events in the trace */
  struct cell *cells;
  struct frame {
    uint64_t name, start, domain;
  } * stk; /* open push/pop ranges of a thread (domain: the NVTX domain) */
  size_t nstk, capstk;
  uint64_t deep; /* pushes past MAX_DEPTH not yet popped */
  uint32_t out;  /* position in the output */
};

struct ev {
  uint64_t start, end, corr, a, b, name;
  uint32_t row;
  uint8_t kind;
};

struct aopen { /* an open start/end range */
  uint64_t id, name, start;
  uint32_t row;
};

struct gp_timeline {
  uint64_t t0, span, bw, budget;
  size_t nb;
  struct row *rows;
  size_t nrows, caprows;
  uint64_t rows_left, rows_left_events; /* rows past GP_HTL_MAX_ROWS */
  struct gp_idx thr_row, thr_name, api_name;
  struct gp_u64map str_row;
  struct ev *ev;
  size_t nev, capev;
  struct aopen *ao;
  size_t nao, capao;
  struct gp_u64map ao_map; /* range id -> index in ao */
  uint64_t from, to, cut;
  int cutting, oom;
  const char *why; /* how the detail window was chosen */
  uint64_t step_lo, step_hi;
  uint64_t total[GP_HTL_KIND_N], kept[GP_HTL_KIND_N];
  uint64_t *steps; /* start, end, index triples in the window */
  size_t nsteps;
  char **names; /* output names, cleaned; index = JSON name id */
  size_t nnames, capnames;
  struct gp_u64map name_idx; /* sid -> output name index + 1 */
  uint64_t *thr_label;       /* per row: thread name's output index + 1 */
};

static int grow(struct gp_timeline *t, void **v, size_t *cap, size_t need,
                size_t elt) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need)
    n *= 2;
  void *p = realloc(*v, n * elt);
  if (!p) {
    t->oom = 1;
    return -1;
  }
  *v = p;
  *cap = n;
  return 0;
}
#define GROW(t, v, cap, need)                                                  \
  grow((t), (void **)&(v), &(cap), (need), sizeof *(v))

void gp_htl_free(struct gp_timeline *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nrows; i++) {
    free(t->rows[i].cells);
    free(t->rows[i].stk);
  }
  free(t->rows);
  gp_idx_free(&t->thr_row);
  gp_idx_free(&t->thr_name);
  gp_idx_free(&t->api_name);
  gp_u64map_free(&t->str_row);
  gp_u64map_free(&t->ao_map);
  gp_u64map_free(&t->name_idx);
  free(t->ev);
  free(t->ao);
  free(t->steps);
  for (size_t i = 0; i < t->nnames; i++)
    free(t->names[i]);
  free(t->names);
  free(t->thr_label);
  free(t);
}

/* ---- rows ---- */

static struct row *row_new(struct gp_timeline *t, int stream, int64_t a,
                           uint64_t b) {
  if (t->nrows >= GP_HTL_MAX_ROWS) {
    t->rows_left++;
    return NULL;
  }
  if (GROW(t, t->rows, t->caprows, t->nrows + 1) < 0) return NULL;
  struct row *r = &t->rows[t->nrows];
  memset(r, 0, sizeof *r);
  r->stream = stream, r->a = a, r->b = b;
  if (!(r->cells = calloc(t->nb, sizeof *r->cells))) {
    t->oom = 1;
    return NULL;
  }
  t->nrows++;
  return r;
}

/* Index of a thread's row; UINT32_MAX when it has none (too many rows). */
static uint32_t thread_row(struct gp_timeline *t, uint64_t thread) {
  /* "no row" is kept as UINT32_MAX - 1: the index stores val + 1, and
   * UINT32_MAX + 1 would read as never seen (a row counted left out at
   * every call of the thread) */
  uint32_t i;
  if (gp_idx_get(&t->thr_row, thread, &i))
    return i == UINT32_MAX - 1 ? UINT32_MAX : i;
  struct row *r = row_new(t, 0, (int64_t)thread, 0);
  i = r ? (uint32_t)(r - t->rows) : UINT32_MAX;
  if (gp_idx_put(&t->thr_row, thread, r ? i : UINT32_MAX - 1) < 0) t->oom = 1;
  return i;
}

static uint32_t stream_row(struct gp_timeline *t, uint64_t dev,
                           uint64_t stream) {
  uint64_t key = (dev << 48) ^ stream, *v = gp_u64map_get(&t->str_row, key);
  if (v && (*v == UINT32_MAX ||
            (t->rows[*v].a == (int64_t)dev && t->rows[*v].b == stream)))
    return (uint32_t)*v;
  for (size_t i = 0; v && i < t->nrows; i++) /* a key collision */
    if (t->rows[i].stream && t->rows[i].a == (int64_t)dev &&
        t->rows[i].b == stream)
      return (uint32_t)i;
  struct row *r = row_new(t, 1, (int64_t)dev, stream);
  uint32_t i = r ? (uint32_t)(r - t->rows) : UINT32_MAX;
  if (!v && gp_u64map_put(&t->str_row, key, i) < 0) t->oom = 1;
  return i;
}

/* ---- the aggregated view ---- */

static void cell_add(struct cell *c, uint64_t ns, uint64_t name) {
  c->busy += ns;
  if (name == c->dom) {
    c->dom_ns += ns;
  } else if (name == c->run) {
    c->run_ns += ns;
  } else if (!c->dom) {
    c->dom = name, c->dom_ns = ns;
  } else {
    c->run = name, c->run_ns = ns;
  }
  if (c->run_ns > c->dom_ns) {
    uint64_t n = c->dom, v = c->dom_ns;
    c->dom = c->run, c->dom_ns = c->run_ns;
    c->run = n, c->run_ns = v;
  }
}

/* Books [s, e) of row ri to the columns it covers. */
static void agg(struct gp_timeline *t, uint32_t ri, uint64_t s, uint64_t e,
                uint64_t name) {
  uint64_t lo = t->t0, hi = t->t0 + t->span;
  if (s < lo) s = lo;
  if (e > hi) e = hi;
  if (e <= s) return;
  struct cell *cells = t->rows[ri].cells;
  for (uint64_t b = (s - lo) / t->bw; b < t->nb && s < e; b++) {
    uint64_t end = lo + (b + 1) * t->bw;
    uint64_t x = e < end ? e : end;
    cell_add(&cells[b], x - s, name);
    s = x;
  }
}

/* ---- the detail ---- */

static int in_window(const struct gp_timeline *t, uint64_t s, uint64_t e) {
  return s < t->to && (e > t->from || s >= t->from);
}

static void keep(struct gp_timeline *t, uint32_t ri, int kind, uint64_t s,
                 uint64_t e, uint64_t corr, uint64_t a, uint64_t b,
                 uint64_t name) {
  t->total[kind]++;
  if (ri == UINT32_MAX) {
    t->rows_left_events++;
    return;
  }
  t->rows[ri].events++;
  if (!in_window(t, s, e)) return;
  /* Past the budget, the detail ends at the earliest start left out
   * (device records can arrive a little out of order: cut_back() drops
   * what was kept past it). Kept beyond the budget: what began at or
   * before the window's start (in flight or open then), and ranges begun
   * before the cut (they are reported at their end): both bounded by what
   * was open at one instant. */
  if (s > t->from &&
      (t->cutting ? s >= t->cut || kind != GP_HTL_RANGE : t->nev >= t->budget)) {
    if (!t->cutting || s < t->cut) t->cut = s;
    t->cutting = 1;
    return;
  }
  if (GROW(t, t->ev, t->capev, t->nev + 1) < 0) return;
  t->ev[t->nev++] = (struct ev){s, e, corr, a, b, name, ri, (uint8_t)kind};
  t->kept[kind]++;
}

/* ---- ranges ---- */

/* Open ranges followed, at most: a trace that only opens ranges must not
 * grow the memory. Those past these are counted as left out. */
#define MAX_DEPTH 64  /* push/pop ranges open on one thread */
#define MAX_OPEN 4096 /* start/end ranges open */

static void range_push(struct gp_timeline *t, uint32_t ri, uint64_t name,
                       uint64_t at, uint64_t domain) {
  struct row *r = &t->rows[ri];
  if (r->nstk >= MAX_DEPTH) {
    r->deep++;
    t->total[GP_HTL_RANGE]++;
    return;
  }
  if (GROW(t, r->stk, r->capstk, r->nstk + 1) < 0) return;
  r->stk[r->nstk++] = (struct frame){name, at, domain};
}

/* Closes the innermost push of domain (NVTX keeps a stack per domain). */
static void range_pop(struct gp_timeline *t, uint32_t ri, uint64_t at,
                      uint64_t domain) {
  struct row *r = &t->rows[ri];
  if (r->deep) {
    r->deep--;
    return;
  }
  size_t i = r->nstk;
  while (i > 0 && r->stk[i - 1].domain != domain)
    i--;
  if (!i) return; /* a pop without its push: nothing to show */
  struct frame f = r->stk[--i];
  memmove(&r->stk[i], &r->stk[i + 1], (--r->nstk - i) * sizeof *r->stk);
  keep(t, ri, GP_HTL_RANGE, f.start, at, 0, i, 0, f.name);
}

static void range_start(struct gp_timeline *t, uint32_t ri, uint64_t id,
                        uint64_t name, uint64_t at) {
  uint64_t *old = gp_u64map_get(&t->ao_map, id);
  if (!old && t->nao >= MAX_OPEN) {
    t->total[GP_HTL_RANGE]++;
    return;
  }
  if (GROW(t, t->ao, t->capao, t->nao + 1) < 0) return;
  if (old) { /* the id reused before its end: the first is forgotten */
    t->ao[*old].start = at, t->ao[*old].name = name, t->ao[*old].row = ri;
    return;
  }
  t->ao[t->nao] = (struct aopen){id, name, at, ri};
  if (gp_u64map_put(&t->ao_map, id, t->nao) < 0) t->oom = 1;
  t->nao++;
}

static void range_end(struct gp_timeline *t, uint64_t id, uint64_t at) {
  uint64_t i;
  if (!gp_u64map_del(&t->ao_map, id, &i)) return;
  struct aopen o = t->ao[i];
  if (i != --t->nao) {
    t->ao[i] = t->ao[t->nao];
    if (gp_u64map_put(&t->ao_map, t->ao[i].id, i) < 0) t->oom = 1;
  }
  /* depth: below the push/pop ranges of the thread it started on */
  keep(t, o.row, GP_HTL_RANGE, o.start, at, 0, 0, 1, o.name);
}

static void on_range(struct gp_timeline *t, const struct gpuphase_range *g) {
  uint32_t ri = thread_row(t, g->thread);
  if (ri == UINT32_MAX) {
    if (g->op == GPUPHASE_RANGE_POP || g->op == GPUPHASE_RANGE_END)
      t->total[GP_HTL_RANGE]++, t->rows_left_events++;
    return;
  }
  switch (g->op) {
  case GPUPHASE_RANGE_PUSH:
    range_push(t, ri, g->name, g->start, g->domain);
    break;
  case GPUPHASE_RANGE_POP:
    range_pop(t, ri, g->start, g->domain);
    break;
  case GPUPHASE_RANGE_START:
    range_start(t, ri, g->id, g->name, g->start);
    break;
  case GPUPHASE_RANGE_END:
    range_end(t, g->id, g->start);
    break;
  }
}

/* Ranges still open at the end of the trace end there. */
static void close_open(struct gp_timeline *t, uint64_t at) {
  for (size_t i = 0; i < t->nrows; i++)
    while (t->rows[i].nstk) {
      uint64_t s = t->rows[i].stk[t->rows[i].nstk - 1].start;
      range_pop(t, (uint32_t)i, at > s ? at : s,
                t->rows[i].stk[t->rows[i].nstk - 1].domain);
    }
  while (t->nao) {
    uint64_t s = t->ao[t->nao - 1].start;
    range_end(t, t->ao[t->nao - 1].id, at > s ? at : s);
  }
}

/* ---- one record ---- */

static uint64_t api_name(const struct gp_timeline *t, uint64_t api) {
  uint32_t v;
  return gp_idx_get(&t->api_name, api, &v) ? v : 0;
}

static void feed(struct gp_timeline *t, const struct gpuphase_record *rec) {
  const struct gpuphase_kernel *k;
  uint32_t ri;
  switch (rec->kind) {
  case GPUPHASE_REC_THREAD:
    if (gp_idx_put(&t->thr_name, rec->u.thread.thread,
                   (uint32_t)rec->u.thread.name) < 0)
      t->oom = 1;
    break;
  case GPUPHASE_REC_API_DEF:
    if (gp_idx_put(&t->api_name, rec->u.api_def.api,
                   (uint32_t)rec->u.api_def.name) < 0)
      t->oom = 1;
    break;
  case GPUPHASE_REC_API: {
    const struct gpuphase_api *c = &rec->u.api;
    uint64_t name = api_name(t, c->api),
             e = c->end > c->start ? c->end : c->start;
    ri = thread_row(t, c->thread);
    if (ri != UINT32_MAX) agg(t, ri, c->start, e, name);
    keep(t, ri, GP_HTL_API, c->start, e, c->corr, c->bytes, (uint64_t)c->ret,
         name);
    break;
  }
  case GPUPHASE_REC_KERNEL:
    k = &rec->u.kernel;
    ri = stream_row(t, k->device, k->stream);
    if (ri != UINT32_MAX) agg(t, ri, k->start, k->end, k->name);
    keep(t, ri, GP_HTL_KERNEL, k->start, k->end, k->corr,
         k->grid_x * k->grid_y * k->grid_z,
         k->block_x * k->block_y * k->block_z, k->name);
    break;
  case GPUPHASE_REC_MEMCPY: {
    const struct gpuphase_memcpy *m = &rec->u.memcpy;
    ri = stream_row(t, m->device, m->stream);
    if (ri != UINT32_MAX) agg(t, ri, m->start, m->end, SID_COPY);
    keep(t, ri, GP_HTL_MEMCPY, m->start, m->end, m->corr, m->bytes, m->copy_kind,
         SID_COPY);
    break;
  }
  case GPUPHASE_REC_MEMSET: {
    const struct gpuphase_memset *m = &rec->u.memset;
    ri = stream_row(t, m->device, m->stream);
    if (ri != UINT32_MAX) agg(t, ri, m->start, m->end, SID_MEMSET);
    keep(t, ri, GP_HTL_MEMSET, m->start, m->end, m->corr, m->bytes, 0,
         SID_MEMSET);
    break;
  }
  case GPUPHASE_REC_SYNC: {
    const struct gpuphase_sync *y = &rec->u.sync;
    ri = stream_row(t, y->device, y->stream);
    keep(t, ri, GP_HTL_SYNC, y->start, y->end, y->corr, y->type, 0, 0);
    break;
  }
  case GPUPHASE_REC_RANGE:
    on_range(t, &rec->u.range);
    break;
  default:
    break;
  }
}

/* Drops the events kept that start at or after the cut. */
static void cut_back(struct gp_timeline *t) {
  if (!t->cutting) return;
  size_t n = 0;
  for (size_t i = 0; i < t->nev; i++)
    if (t->ev[i].start < t->cut)
      t->ev[n++] = t->ev[i];
    else
      t->kept[t->ev[i].kind]--;
  t->nev = n;
}

/* ---- the detail window ---- */

/* Events a step is expected to hold, from its counters: each counted
 * call, each kernel, copy and memset, a CUPTI record per synchronising
 * call, and a few ranges. An estimate (calls that are counted nowhere are
 * missing): the budget itself is enforced while reading. */
static uint64_t step_events(const struct gp_step *s) {
  const uint64_t *c = s->c;
  uint64_t xfer = c[GP_SC_h2d_copies] + c[GP_SC_d2h_copies] +
                  c[GP_SC_d2d_copies] + c[GP_SC_p2p_copies] + c[GP_SC_memsets];
  return c[GP_SC_launches] + c[GP_SC_kernels] + 2 * xfer + 2 * c[GP_SC_syncs] +
         c[GP_SC_allocations] + c[GP_SC_frees] + 4;
}

/* The busiest measured step (most kernel time), then its neighbours
 * (warm-up steps too), the busier side first, while the estimate stays
 * within 90% of the budget. */
static void busiest_steps(struct gp_timeline *t,
                          const struct gp_steps_res *st) {
  size_t best = st->warmup;
  for (size_t i = st->warmup; i < st->n; i++)
    if (st->v[i].cat[GP_CAT_KERNEL] > st->v[best].cat[GP_CAT_KERNEL]) best = i;
  size_t lo = best, hi = best;
  uint64_t est = step_events(&st->v[best]);
  for (;;) {
    int can_lo = lo > 0, can_hi = hi + 1 < st->n;
    if (!can_lo && !can_hi) break;
    int take_lo = can_lo && (!can_hi || st->v[lo - 1].cat[GP_CAT_KERNEL] >=
                                            st->v[hi + 1].cat[GP_CAT_KERNEL]);
    size_t i = take_lo ? lo - 1 : hi + 1;
    uint64_t e = step_events(&st->v[i]);
    if (est + e > t->budget / 10 * 9) break;
    est += e;
    take_lo ? lo-- : hi++;
  }
  t->from = st->v[lo].start;
  t->to = st->v[hi].end;
  t->step_lo = lo, t->step_hi = hi;
  t->why = "steps";
}

static void choose(struct gp_timeline *t, const struct gp_proc_res *r,
                   const struct gp_htl_opts *o) {
  const struct gp_steps_res *st = &r->steps;
  t->from = t->t0;
  t->to = t->t0 + t->span + 1; /* the last event ends at the window's end */
  t->why = "run";
  if (o->window) {
    t->from = t->t0 + o->from;
    t->to = t->t0 + o->to;
    t->why = "asked";
  } else if (r->diag.records <= t->budget) {
    /* all of it fits */
  } else if (st->measured && st->v) {
    busiest_steps(t, st);
  } else if (r->diag.records > t->budget && r->ndev && r->dev[0].nwin) {
    /* too many for all of it: from the busiest over-time window on */
    const struct gp_device_res *d = &r->dev[0];
    size_t best = 0;
    for (size_t i = 1; i < d->nwin; i++)
      if (d->win[i].cat[GP_CAT_KERNEL] > d->win[best].cat[GP_CAT_KERNEL])
        best = i;
    t->from = t->t0 + best * d->win_ns;
    t->why = "busiest";
  }
}

static void window_steps(struct gp_timeline *t, const struct gp_steps_res *st) {
  size_t n = 0;
  for (size_t i = 0; i < st->n; i++)
    n += in_window(t, st->v[i].start, st->v[i].end);
  if (n > t->budget) n = t->budget;
  if (!n || !(t->steps = malloc(3 * n * sizeof *t->steps))) {
    if (n) t->oom = 1;
    return;
  }
  for (size_t i = 0; i < st->n && t->nsteps < n; i++)
    if (in_window(t, st->v[i].start, st->v[i].end)) {
      uint64_t *p = t->steps + 3 * t->nsteps++;
      p[0] = st->v[i].start, p[1] = st->v[i].end, p[2] = i;
    }
}

/* ---- names ---- */

/* s with control characters and invalid UTF-8 as U+FFFD (as the rest of
 * the page shows them). */
static char *clean(const char *s, size_t len) {
  char *out = malloc(3 * len + 1), *o = out;
  if (!out) return NULL;
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t k = gp_utf8_seq(p + i, len - i, &cp);
    if (!k || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      memcpy(o, "\xef\xbf\xbd", 3), o += 3;
      i += k ? k : 1;
      continue;
    }
    memcpy(o, p + i, k), o += k, i += k;
  }
  *o = 0;
  return out;
}

/* Output index + 1 of the name of sid; 0: none. */
static uint64_t name_of(struct gp_timeline *t, const gpuphase_reader *rd,
                        uint64_t sid) {
  if (!sid) return 0;
  uint64_t *v = gp_u64map_get(&t->name_idx, sid);
  if (v) return *v;
  gpuphase_blob b = {"", 0};
  if (sid == SID_COPY)
    b = (gpuphase_blob){"memcpy", 6};
  else if (sid == SID_MEMSET)
    b = (gpuphase_blob){"memset", 6};
  else if (!gp_reader_string_blob(rd, sid, &b))
    return 0;
  if (GROW(t, t->names, t->capnames, t->nnames + 1) < 0) return 0;
  char *s = clean(b.data, b.len);
  if (!s) {
    t->oom = 1;
    return 0;
  }
  t->names[t->nnames++] = s;
  if (gp_u64map_put(&t->name_idx, sid, t->nnames) < 0) t->oom = 1;
  return t->nnames;
}

static int row_cmp(const void *x, const void *y) {
  const struct row *a = *(struct row *const *)x, *b = *(struct row *const *)y;
  if (a->stream != b->stream) return a->stream - b->stream;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : a->b > b->b;
}

/* Names into output indices (the reader still open), rows into order. */
static void finish(struct gp_timeline *t, const gpuphase_reader *rd) {
  for (size_t i = 0; i < t->nev; i++)
    t->ev[i].name = name_of(t, rd, t->ev[i].name);
  for (size_t i = 0; i < t->nrows; i++)
    for (size_t b = 0; b < t->nb; b++)
      t->rows[i].cells[b].dom = name_of(t, rd, t->rows[i].cells[b].dom);
  if (t->nrows && !(t->thr_label = calloc(t->nrows, sizeof *t->thr_label))) {
    t->oom = 1;
    return;
  }
  struct row **ord = malloc((t->nrows + 1) * sizeof *ord);
  if (!ord) {
    t->oom = 1;
    return;
  }
  for (size_t i = 0; i < t->nrows; i++) {
    uint32_t sid;
    struct row *r = &t->rows[i];
    if (!r->stream && gp_idx_get(&t->thr_name, (uint64_t)r->a, &sid))
      t->thr_label[i] = name_of(t, rd, sid);
    ord[i] = r;
  }
  qsort(ord, t->nrows, sizeof *ord, row_cmp);
  for (size_t i = 0; i < t->nrows; i++)
    ord[i]->out = (uint32_t)i;
  free(ord);
}

struct gp_timeline *gp_htl_collect(const char *path, const struct gp_proc_res *r,
                                  const struct gp_htl_opts *o, char *err,
                                  size_t errlen) {
  static const struct gp_htl_opts defaults = {0};
  if (!o) o = &defaults;
  struct gp_timeline *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "%s: out of memory", path);
    return NULL;
  }
  t->budget = o->budget ? o->budget : GP_HTL_BUDGET;
  t->t0 = r->wstart;
  t->span = r->window_ns;
  t->nb = GP_HTL_BUCKETS;
  t->bw = t->span / t->nb + 1;
  choose(t, r, o);
  window_steps(t, &r->steps);
  int code = 0;
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, errlen);
  if (!rd) {
    gp_htl_free(t);
    return NULL;
  }
  const struct gpuphase_record *rec;
  int rc;
  while (!t->oom && (rc = gp_reader_next_ref(rd, &rec)) == 1)
    feed(t, rec);
  if (!t->oom && rc < 0) {
    const char *m = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: %s", path, m && *m ? m : gpuphase_strerror(rc));
  } else {
    close_open(t, t->t0 + t->span);
    cut_back(t);
    if (!t->oom) finish(t, rd);
    if (t->oom) snprintf(err, errlen, "%s: out of memory", path);
  }
  gpuphase_reader_close(rd);
  if (t->oom || rc < 0) {
    gp_htl_free(t);
    return NULL;
  }
  return t;
}

/* ---- output ---- */

static const char *const kind_key[GP_HTL_KIND_N] = {"api",    "kernel", "memcpy",
                                                   "memset", "sync",   "range"};

static int64_t off(const struct gp_timeline *t, uint64_t at) {
  return (int64_t)(at - t->t0);
}

static void row_label(FILE *f, const struct gp_timeline *t, size_t i) {
  const struct row *r = &t->rows[i];
  char b[96];
  if (r->stream) {
    /* a synchronisation of no one stream (a device or context
     * synchronize): the exports' "synchronization" row */
    if (r->b == GPUPHASE_SYNC_NO_STREAM)
      snprintf(b, sizeof b, "GPU %" PRId64 " synchronization", r->a);
    else
      snprintf(b, sizeof b, "GPU %" PRId64 " stream %" PRIu64, r->a, r->b);
    gp_json_quote(f, b);
    return;
  }
  snprintf(b, sizeof b, "thread #%" PRId64, r->a);
  uint64_t n = t->thr_label ? t->thr_label[i] : 0;
  if (n && *t->names[n - 1]) {
    char *s = malloc(strlen(b) + strlen(t->names[n - 1]) + 2);
    if (s) {
      sprintf(s, "%s %s", b, t->names[n - 1]);
      gp_json_quote(f, s);
      free(s);
      return;
    }
  }
  gp_json_quote(f, b);
}

static void rows_json(FILE *f, const struct gp_timeline *t) {
  size_t *by = malloc((t->nrows + 1) * sizeof *by);
  if (!by) return;
  for (size_t i = 0; i < t->nrows; i++)
    by[t->rows[i].out] = i;
  fputs("\"rows\":[", f);
  for (size_t j = 0; j < t->nrows; j++) {
    size_t i = by[j];
    fprintf(f, "%s[\"%s\",", j ? "," : "",
            t->rows[i].stream ? "stream" : "thread");
    row_label(f, t, i);
    fprintf(f, ",%" PRIu64 "]", t->rows[i].events);
  }
  /* per row and column: busy per mille, the dominant name (-1: none) */
  fprintf(f, "],\n\"agg\":{\"w\":%" PRIu64 ",\"n\":%zu,\"busy\":[", t->bw,
          t->nb);
  for (size_t j = 0; j < t->nrows; j++) {
    const struct cell *c = t->rows[by[j]].cells;
    fputs(j ? ",[" : "[", f);
    for (size_t b = 0; b < t->nb; b++) {
      uint64_t len = b + 1 < t->nb ? t->bw : t->span - b * t->bw;
      uint64_t pm = len ? (c[b].busy * 1000 + len / 2) / len : 0;
      fprintf(f, "%s%" PRIu64, b ? "," : "", pm > 1000 ? 1000 : pm);
    }
    fputs("]", f);
  }
  fputs("],\"dom\":[", f);
  for (size_t j = 0; j < t->nrows; j++) {
    const struct cell *c = t->rows[by[j]].cells;
    fputs(j ? ",[" : "[", f);
    for (size_t b = 0; b < t->nb; b++)
      fprintf(f, "%s%" PRId64, b ? "," : "", (int64_t)c[b].dom - 1);
    fputs("]", f);
  }
  fputs("]},\n", f);
  free(by);
}

void gp_htl_json(FILE *f, const struct gp_timeline *t) {
  fprintf(f, "{\"v\":1,\"span\":%" PRIu64 ",\"budget\":%" PRIu64 ",\n", t->span,
          t->budget);
  fputs("\"names\":[", f);
  for (size_t i = 0; i < t->nnames; i++) {
    if (i) fputc(',', f);
    gp_json_quote(f, t->names[i]);
  }
  fputs("],\n", f);
  rows_json(f, t);
  uint64_t to = t->cutting ? t->cut : t->to;
  if (to > t->t0 + t->span) to = t->t0 + t->span;
  if (to < t->from) to = t->from; /* asked after the end: empty, not reversed */
  fprintf(f,
          "\"detail\":{\"from\":%" PRId64 ",\"to\":%" PRId64
          ",\"cut\":%s,\"why\":\"%s\"},\n",
          off(t, t->from), off(t, to), t->cutting ? "true" : "false", t->why);
  fputs("\"counts\":{", f);
  for (int k = 0; k < GP_HTL_KIND_N; k++)
    fprintf(f, "%s\"%s\":[%" PRIu64 ",%" PRIu64 "]", k ? "," : "", kind_key[k],
            t->total[k], t->kept[k]);
  fprintf(f, "},\"rows_left\":%" PRIu64 ",\"rows_left_events\":%" PRIu64 ",\n",
          t->rows_left, t->rows_left_events);
  /* events: row, kind, start, duration, name (-1 none), corr, a, b */
  fputs("\"ev\":[", f);
  for (size_t i = 0; i < t->nev; i++) {
    const struct ev *e = &t->ev[i];
    fprintf(f,
            "%s%u,%u,%" PRId64 ",%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64
            ",%" PRId64 "%s",
            i ? "," : "", t->rows[e->row].out, e->kind, off(t, e->start),
            e->end - e->start, (int64_t)e->name - 1, e->corr, e->a,
            (int64_t)e->b, i % 8 == 7 ? "\n" : "");
  }
  fputs("],\n\"steps\":[", f);
  for (size_t i = 0; i < t->nsteps; i++) {
    const uint64_t *p = t->steps + 3 * i;
    fprintf(f, "%s%" PRId64 ",%" PRIu64 ",%" PRIu64, i ? "," : "", off(t, p[0]),
            p[1] - p[0], p[2]);
  }
  fputs("]}", f);
}

void gp_htl_summary(const struct gp_timeline *t, char *buf, size_t n) {
  char a[32], b[32], c[32];
  uint64_t to = t->cutting ? t->cut : t->to, tot = 0, kept = 0;
  if (to > t->t0 + t->span) to = t->t0 + t->span;
  uint64_t from = t->from < t->t0 ? t->t0 : t->from;
  for (int k = 0; k < GP_HTL_KIND_N; k++)
    tot += t->total[k], kept += t->kept[k];
  size_t len = 0;
#define ADD(...)                                                               \
  do {                                                                         \
    if (len < n) len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__);     \
  } while (0)
  ADD("Full detail from +%s to +%s", gp_fmt_dur(a, sizeof a, from - t->t0),
      gp_fmt_dur(b, sizeof b, to > from ? to - t->t0 : from - t->t0));
  if (!strcmp(t->why, "steps")) {
    if (t->step_lo == t->step_hi)
      ADD(" (step #%" PRIu64 ", the busiest)", t->step_lo);
    else
      ADD(" (steps #%" PRIu64 "..#%" PRIu64 " around the busiest)", t->step_lo,
          t->step_hi);
  } else if (!strcmp(t->why, "asked") && t->from >= t->t0 + t->span) {
    ADD(" (--html-detail: after the end of the run)");
  } else if (!strcmp(t->why, "asked"))
    ADD(" (--html-detail)");
  else if (!strcmp(t->why, "busiest"))
    ADD(" (from the busiest window on)");
  else
    ADD(" (the whole run)");
  ADD(": %" PRIu64 " of %" PRIu64 " events", kept, tot);
  if (t->cutting)
    ADD("; the budget of %" PRIu64 " events ran out at +%s", t->budget,
        gp_fmt_dur(c, sizeof c, t->cut - t->t0));
  if (kept < tot) {
    ADD("; left out:");
    int first = 1;
    for (int k = 0; k < GP_HTL_KIND_N; k++)
      if (t->total[k] > t->kept[k]) {
        ADD("%s %" PRIu64 " %s", first ? "" : ",", t->total[k] - t->kept[k],
            kind_key[k]);
        first = 0;
      }
  }
  if (t->rows_left)
    ADD("; %" PRIu64 " rows past the first %d not shown (%" PRIu64 " events)",
        t->rows_left, GP_HTL_MAX_ROWS, t->rows_left_events);
  ADD(". The aggregated view covers the whole run, %s per column.",
      gp_fmt_dur(a, sizeof a, t->bw));
#undef ADD
}

struct shown_task {
  struct gp_proc_res **procs;
  char *const *paths;
  const size_t *idx;
  const struct gp_htl_opts *o;
  char (*err)[512];
};

static int collect_one(void *ctx, size_t i) {
  struct shown_task *t = ctx;
  struct gp_proc_res *p = t->procs[t->idx[i]];
  if (p->timeline) return 0;
  p->timeline = gp_htl_collect(t->paths[t->idx[i]], p, t->o, t->err[i],
                               sizeof t->err[i]);
  return !p->timeline;
}

int gp_htl_collect_shown(const struct gp_report_set *s,
                         const struct gp_render_opts *ro, char *const *paths,
                         const struct gp_htl_opts *o, int threads, char *err,
                         size_t errlen) {
  size_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
  char(*e)[512] = calloc(s->n ? s->n : 1, sizeof *e);
  if (!idx || !e) {
    free(idx);
    free(e);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t show = gp_render_shown(s, ro, idx, NULL);
  struct shown_task t = {s->procs, paths, idx, o, e};
  size_t bad = gp_par_until(show, threads, collect_one, &t);
  if (bad < show) snprintf(err, errlen, "%s", e[bad]);
  free(idx);
  free(e);
  return bad < show ? -1 : 0;
}
