/* The timeline sweep: every device and host thread is accounted lazily, from
 * the time it was last accounted (seg_t) to the time one of its counters is
 * about to change, so that each stretch of constant state is booked once, to
 * one category, into the device total, the open phases and the fixed
 * windows it crosses. */
#include "attr_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- heap of pending ends, ordered by time ---- */

int gp_heap_grow(struct gp_attr *a) {
  return GROW(a, a->heap, a->capheap, a->nheap + 1);
}

int gp_hold_push(struct gp_attr *a, struct hev ev) {
  if (a->nhold == a->caphold) { /* grow the ring, unwrapping it */
    size_t cap = a->caphold ? 2 * a->caphold : 64;
    struct hev *v = malloc(cap * sizeof *v);
    if (!v) {
      a->oom = 1;
      return -1;
    }
    for (size_t i = 0; i < a->nhold; i++)
      v[i] = a->hold[(a->hhead + i) % a->caphold];
    free(a->hold);
    a->hold = v;
    a->caphold = cap;
    a->hhead = 0;
  }
  if (!a->nhold) {
    a->hold_t = ev.t;
    if (ev.t < a->due_t) a->due_t = ev.t;
  }
  a->hold[(a->hhead + a->nhold++) % a->caphold] = ev;
  return 0;
}

static struct hev pop(struct gp_attr *a) {
  struct hev top = a->heap[0], last = a->heap[--a->nheap];
  size_t i = 0, n = a->nheap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && a->heap[c + 1].t < a->heap[c].t) c++;
    if (a->heap[c].t >= last.t) break;
    a->heap[i] = a->heap[c];
    i = c;
  }
  if (n) a->heap[i] = last;
  return top;
}

/* ---- what one stretch of constant state is ---- */

struct seg {
  int cat, sub, prov, idle, idle_deg, xover, cover;
  uint32_t n_kern, n_small, n_occ;
  double cov, occ; /* cov: min(1, sum blocks/SMs); occ: sum of occupancies */
};

static struct seg seg_of(const struct gp_attr *a, const struct dev *d) {
  struct seg s = {0};
  uint32_t blk = d->n_call[CALL_BLK] + a->w_call[CALL_BLK];
  uint32_t nb = d->n_call[CALL_NB] + a->w_call[CALL_NB];
  uint32_t und = d->n_call[CALL_UND] + a->w_call[CALL_UND];
  uint32_t other = d->n_call[CALL_OTHER] + a->w_call[CALL_OTHER];
  s.sub = -1;
  if (d->n_kern) {
    s.cat = GP_CAT_KERNEL;
    s.sub = d->n_kern > d->n_comm ? GP_SUB_COMPUTE : GP_SUB_COMMUNICATION;
    s.xover = d->n_xfer > 0;
    s.cover = d->n_comm && d->n_kern > d->n_comm;
    s.n_kern = d->n_kern;
    s.n_small = d->n_small;
    s.n_occ = d->n_occ;
    s.cov = gp_cov_of(d->cov_rate);
    s.occ = (double)d->occ_rate / FIX_ONE;
  } else if (d->n_xfer) {
    s.cat = GP_CAT_TRANSFER;
    for (int x = 0; x < GP_XFER_N && s.sub < 0; x++)
      if (d->n_xk[x]) s.sub = GP_SUB_XFER + x;
  } else if (blk) {
    s.cat = GP_CAT_SYNC_IDLE;
  } else if (nb || und) {
    s.cat = GP_CAT_LAUNCH;
    s.prov = und > 0; /* becomes sync_idle if that copy turns out blocking */
  } else {
    s.cat = GP_CAT_HOST_WAIT;
    /* the host is inside a CUDA call that neither enqueues nor waits */
    if (other) s.sub = GP_SUB_HOST_API;
  }
  s.idle = s.cat >= GP_CAT_LAUNCH;
  s.idle_deg = s.idle && s.cat != GP_CAT_SYNC_IDLE;
  return s;
}

static void bd_add(struct gp_breakdown *b, const struct seg *s, uint64_t len) {
  b->cat[s->cat] += len;
  if (s->sub >= 0) b->sub[s->sub] += len;
  if (s->cat != GP_CAT_KERNEL) return;
  if (s->xover) b->kernel_xfer_overlap += len;
  if (s->cover) b->comm_overlap += len;
  b->kernel_nsum += len * s->n_kern;
  b->small_nsum += len * s->n_small;
  b->occ_nsum += len * s->n_occ;
  b->occ_wsum += (double)len * s->occ;
  b->cov_ns += (double)len * s->cov;
}

/* ---- fixed windows ---- */

size_t gp_win_idx(const struct gp_attr *a, uint64_t t) {
  return t <= a->wstart ? 0 : (size_t)((t - a->wstart) / a->o.window_ns);
}

/* End of window idx, saturated (a hostile trace may hold times near 2^64). */
uint64_t gp_win_end(const struct gp_attr *a, size_t idx) {
  uint64_t len, end;
  if (__builtin_mul_overflow((uint64_t)idx + 1, a->o.window_ns, &len) ||
      __builtin_add_overflow(a->wstart, len, &end))
    return UINT64_MAX;
  return end;
}

/* Windows each device may have now: GP_MAX_WINDOWS, fewer when many
 * devices share GP_MAX_WINDOW_CELLS. */
static uint64_t max_windows(const struct gp_attr *a) {
  uint64_t per = GP_MAX_WINDOW_CELLS / (a->ndev ? a->ndev : 1);
  return per > GP_MAX_WINDOWS ? GP_MAX_WINDOWS : per ? per : 1;
}

static void win_limit(struct gp_attr *a) {
  uint64_t len, lim;
  a->wlimit = __builtin_mul_overflow(max_windows(a), a->o.window_ns, &len) ||
                      __builtin_add_overflow(a->wstart, len, &lim)
                  ? UINT64_MAX
                  : lim;
}

/* Merges the windows of every device pairwise and doubles their length,
 * until the window holds wend within GP_MAX_WINDOWS windows. Every stored
 * window index is halved with them (floor(t / 2L) = floor(floor(t / L) / 2)
 * from the same origin), so it is safe wherever no caller holds an index. */
void gp_win_fit(struct gp_attr *a) {
  uint64_t most = max_windows(a);
  /* what the queued kernel ends up to now book goes to the windows as
   * they were (the sums of a merged window are taken in the same order) */
  for (size_t i = 0; i < a->ndev; i++)
    if (gp_dev_due(&a->dev[i], a->T)) gp_dev_settle(a, &a->dev[i], a->T);
  while (a->wend > a->wstart &&
         (a->wend - a->wstart) / a->o.window_ns >= most &&
         a->o.window_ns <= UINT64_MAX / 2) {
    for (size_t i = 0; i < a->ndev; i++) {
      struct dev *d = &a->dev[i];
      size_t n = d->capwin, m = (n + 1) / 2;
      for (size_t w = 0; w < m; w++) {
        struct gp_win x = d->win[2 * w];
        if (2 * w + 1 < n) {
          const struct gp_win *y = &d->win[2 * w + 1];
          for (int c = 0; c < GP_CAT_N; c++)
            x.cat[c] += y->cat[c];
          x.cov_ns += y->cov_ns;
          if (y->mem_peak > x.mem_peak) x.mem_peak = y->mem_peak;
        }
        d->win[w] = x;
      }
      if (n > m) memset(d->win + m, 0, (n - m) * sizeof *d->win);
      d->wcur /= 2;
      d->wcur_end = 0; /* recomputed at the next accounting */
      d->mem_widx /= 2;
    }
    for (size_t c = 0; c < a->calls.n; c++)
      for (size_t l = 0; l < a->calls.v[c].nled; l++)
        a->calls.v[c].led[l].win /= 2;
    a->o.window_ns *= 2;
    a->win_widened = 1;
  }
  /* give back what a device no longer needs (more devices, fewer windows) */
  for (size_t i = 0; i < a->ndev; i++) {
    struct dev *d = &a->dev[i];
    if (d->capwin <= 2 * most) continue;
    struct gp_win *v = realloc(d->win, most * sizeof *v);
    if (!v) continue;
    d->win = v;
    d->capwin = most;
    if (d->wcur >= most) d->wcur = 0, d->wcur_end = 0;
  }
  win_limit(a);
}

struct gp_win *gp_win_grow(struct gp_attr *a, struct dev *d, size_t idx) {
  size_t old = d->capwin;
  if (GROW(a, d->win, d->capwin, idx + 1) < 0) return NULL;
  memset(d->win + old, 0, (d->capwin - old) * sizeof *d->win);
  return &d->win[idx];
}

/* ---- provisional time of undecided async copies ---- */

static struct acall *oldest_und(struct gp_attr *a, int by_thread, uint32_t k) {
  for (size_t i = 0; i < a->nund; i++) {
    struct acall *c = &a->calls.v[a->und[i]];
    if (by_thread ? c->thread == k
                  : (c->dev == NODEV || (k != WSLOT && c->dev == k)))
      return c;
  }
  return NULL;
}

static void led_add(struct gp_attr *a, struct acall *c, uint32_t dev,
                    uint32_t phase, uint64_t win, uint64_t ns) {
  for (size_t i = c->nled; i-- > 0;) {
    struct lent *l = &c->led[i];
    if (l->dev == dev && l->phase == phase && l->win == win &&
        l->epoch == a->epoch) {
      l->ns += ns;
      return;
    }
  }
  if (GROW(a, c->led, c->capled, c->nled + 1) < 0) return;
  c->led[c->nled++] = (struct lent){dev, phase, win, a->epoch, ns};
}

static void run_add(struct run *r, int idle, uint64_t from) {
  if (idle && !r->in) {
    r->in = 1;
    r->start = from;
  } else if (!idle && r->in) {
    gp_run_close(r, from);
  }
}

void gp_run_close(struct run *r, uint64_t t) {
  if (!r->in) return;
  r->in = 0;
  if (t - r->start > r->best) {
    r->best = t - r->start;
    r->best_at = r->start;
  }
}

/* gp_book_windows past its one-window case (attr_int.h). */
int gp_book_windows_run(struct gp_attr *a, struct dev *d, uint64_t from,
                        uint64_t to, int cat, double cov, struct acall *c,
                        uint32_t slot) {
  uint64_t t = from;
  while (t < to) {
    if (t >= d->wcur_end) {
      d->wcur = gp_win_idx(a, t);
      d->wcur_end = gp_win_end(a, d->wcur);
    }
    uint64_t end = d->wcur_end < to ? d->wcur_end : to;
    struct gp_win *w = gp_win_at(a, d, d->wcur);
    if (!w) return 0;
    w->cat[cat] += end - t;
    if (cat == GP_CAT_KERNEL) w->cov_ns += (double)(end - t) * cov;
    if (c) led_add(a, c, slot, NOPHASE, d->wcur, end - t);
    t = end;
  }
  return 1;
}

/* Books [from, to) of device d, whose state has been constant since from. */
static void account(struct gp_attr *a, struct dev *d, uint64_t from,
                    uint64_t to) {
  struct seg s = seg_of(a, d);
  uint32_t slot = (uint32_t)(d - a->dev);
  struct acall *c = s.prov ? oldest_und(a, 0, slot) : NULL;
  bd_add(&d->tot, &s, to - from);
  for (size_t i = 0; c && i < a->nactive; i++)
    led_add(a, c, slot, a->active[i], 0, to - from);
  if (!gp_book_windows(a, d, from, to, s.cat, s.cov, c, slot)) return;
  run_add(&d->idle[0], s.idle, from);
  run_add(&d->idle[1], s.idle_deg, from);
  if (a->cs_on) gp_cs_seg(a->cs, slot, s.cat, from, to, a->T);
}

static void bd_delta(struct gp_breakdown *d, const struct gp_breakdown *now,
                     const struct gp_breakdown *then) {
  for (int i = 0; i < GP_CAT_N; i++)
    d->cat[i] += now->cat[i] - then->cat[i];
  for (int i = 0; i < GP_SUB_N; i++)
    d->sub[i] += now->sub[i] - then->sub[i];
  d->kernel_xfer_overlap +=
      now->kernel_xfer_overlap - then->kernel_xfer_overlap;
  d->comm_overlap += now->comm_overlap - then->comm_overlap;
  d->kernel_nsum += now->kernel_nsum - then->kernel_nsum;
  d->small_nsum += now->small_nsum - then->small_nsum;
  d->occ_nsum += now->occ_nsum - then->occ_nsum;
  d->occ_wsum += now->occ_wsum - then->occ_wsum;
  d->cov_ns += now->cov_ns - then->cov_ns;
}

/* The set of open phases is about to change at t: credit each open phase
 * with what every device accumulated since the epoch began. */
void gp_epoch_end(struct gp_attr *a, uint64_t t) {
  gp_flush_devs(a, NODEV, t);
  for (size_t i = 0; i < a->ndev; i++) {
    struct dev *d = &a->dev[i];
    for (size_t p = 0; p < a->nactive; p++) {
      struct gp_phase_dev *pd =
          gp_attr_pd(a, &a->ph[a->active[p]], (uint32_t)i);
      if (pd) bd_delta(&pd->bd, &d->tot, &d->snap);
    }
    d->snap = d->tot;
  }
  a->epoch++;
}

void gp_flush_dev_to(struct gp_attr *a, struct dev *d, uint64_t t) {
  account(a, d, d->seg_t, t);
  d->seg_t = t;
}

static void kend_apply(struct dev *d, uint32_t cov, uint32_t occ,
                       uint32_t flags) {
  /* without branches: the flags follow the kernels' sizes and names, which
   * a branch predictor cannot tell (occ is 0 without HF_OCC) */
  d->n_kern--;
  d->cov_rate -= cov;
  d->n_comm -= (flags & HF_COMM) != 0;
  d->n_small -= (flags & HF_SMALL) != 0;
  d->n_occ -= (flags & HF_OCC) != 0;
  d->occ_rate -= occ;
}

void gp_dev_settle(struct gp_attr *a, struct dev *d, uint64_t t) {
  gp_dev_settle_in(a, d, t);
}

void gp_dev_unqueue(struct gp_attr *a) {
  for (size_t i = 0; i < a->ndev; i++) {
    struct dev *d = &a->dev[i];
    for (; d->kq_n; d->kq_n--) {
      const struct kend *k = &d->kq[d->kq_head];
      uint16_t flags = (uint16_t)(k->comm * HF_COMM | k->small * HF_SMALL |
                                  k->has_occ * HF_OCC);
      if (gp_sweep_push(a, k->t, HEV_KERNEL, flags, (uint32_t)i, k->cov,
                        k->occ) < 0)
        return;
      d->kq_head = (d->kq_head + 1) & (d->kq_cap - 1);
    }
  }
}

/* slot NODEV: every device, the "any device" timeline included */
void gp_flush_devs(struct gp_attr *a, uint32_t slot, uint64_t t) {
  if (slot != NODEV) {
    gp_flush_dev(a, &a->dev[slot], t);
    return;
  }
  for (size_t i = 0; i < a->ndev; i++)
    gp_flush_dev(a, &a->dev[i], t);
}

/* The undecided copy of thread th that the stretch just booked as submit
 * time belongs to, if it is still open. */
void gp_thr_und(struct gp_attr *a, struct thr *th, uint64_t len) {
  struct acall *c = oldest_und(a, 1, (uint32_t)(th - a->thr));
  if (c) c->thread_ns += len;
}

void gp_sweep_start(struct gp_attr *a, uint64_t t) {
  a->started = 1;
  a->wstart = a->wend = a->T = t;
  win_limit(a);
  for (size_t i = 0; i < a->ndev; i++) {
    a->dev[i].seg_t = a->dev[i].mem_t = t;
    a->dev[i].wcur_end = 0;
  }
  for (size_t i = 0; i < a->nthr; i++)
    a->thr[i].seg_t = t;
}

/* ---- host calls ---- */

static void und_remove(struct gp_attr *a, uint32_t ci) {
  for (size_t i = 0; i < a->nund; i++) {
    if (a->und[i] != ci) continue;
    memmove(a->und + i, a->und + i + 1, (a->nund - i - 1) * sizeof *a->und);
    a->nund--;
    return;
  }
}

static void move_launch(uint64_t *cat, uint64_t ns) {
  cat[GP_CAT_LAUNCH] -= ns;
  cat[GP_CAT_SYNC_IDLE] += ns;
}

/* The provisional launch time of a copy that turned out blocking was
 * time a thread waited in a blocking call: rebook it where it went. */
/* The provisional launch time of a copy that turned out blocking was
 * time a thread waited in a blocking call: rebook it where it went. Time
 * booked in the current epoch reaches the open phases through the device
 * totals; older time is moved in the phases directly and kept out of the
 * current epoch by moving the snapshot too. */
static void ledger_move(struct gp_attr *a, struct acall *c) {
  for (size_t i = 0; i < c->nled; i++) {
    struct lent *l = &c->led[i];
    struct dev *d = &a->dev[l->dev];
    if (l->phase == NOPHASE) {
      move_launch(d->tot.cat, l->ns);
      move_launch(d->win[l->win].cat, l->ns);
      if (l->epoch != a->epoch) move_launch(d->snap.cat, l->ns);
    } else if (l->epoch != a->epoch) {
      struct gp_phase_dev *pd = gp_attr_pd(a, &a->ph[l->phase], l->dev);
      if (pd) move_launch(pd->bd.cat, l->ns);
    }
  }
  struct thr *th = &a->thr[c->thread];
  th->submit -= c->thread_ns;
  th->blocked += c->thread_ns;
}

/* Settles an undecided copy at the current sweep time. */
void gp_decide(struct gp_attr *a, uint32_t ci, int blocking) {
  struct acall *c = &a->calls.v[ci];
  if (c->state != CALL_UND) return;
  if (c->open) {
    gp_call_count(a, c->thread, c->dev, CALL_UND, -1);
    gp_call_count(a, c->thread, c->dev, blocking ? CALL_BLK : CALL_NB, 1);
    und_remove(a, ci);
  }
  c->state = blocking ? CALL_BLK : CALL_NB;
  if (blocking) {
    uint64_t idle[2] = {0, 0}; /* the sync idle it explained meanwhile */
    for (size_t i = 0; i < c->nled; i++)
      if (c->led[i].phase == NOPHASE) idle[c->led[i].dev != WSLOT] += c->led[i].ns;
    gp_cs_late_block(a->cs, c->stack, c->api, c->dev, c->start, c->end, a->T,
                     c->open, idle[0], idle[1]);
    ledger_move(a, c);
    a->api[c->api].blocked += c->end - c->start;
    a->api[c->api].nblocked++;
    gp_steps_blocked(a, c);
  }
  free(c->led);
  c->led = NULL;
  c->nled = c->capled = 0;
}

void gp_call_release(struct gp_attr *a, uint32_t ci) {
  struct acall *c = &a->calls.v[ci];
  free(c->led);
  uint32_t gen = c->gen + 1;
  memset(c, 0, sizeof *c);
  c->gen = gen;
  c->next_free = a->calls.free;
  a->calls.free = ci + 1;
}

void gp_wait_release(struct gp_attr *a, uint32_t wi) {
  struct cwait *w = &a->waits.v[wi];
  w->live = 0;
  w->gen++;
  w->next_free = a->waits.free;
  a->waits.free = wi + 1;
}

/* ---- pending ends ---- */

static inline __attribute__((always_inline)) void
kernel_end(struct gp_attr *a, const struct hev *e) {
  struct dev *d = &a->dev[e->slot];
  gp_flush_dev_on(a, d, e->t);
  kend_apply(d, e->a, e->b, e->flags);
}

static void acall_end(struct gp_attr *a, const struct hev *e) {
  struct acall *c = &a->calls.v[e->slot];
  gp_call_count(a, c->thread, c->dev, c->state, -1);
  c->open = 0;
  if (c->state != CALL_UND) {
    gp_call_release(a, e->slot);
    return;
  }
  /* Still undecided: its device copy may yet show it pageable. */
  und_remove(a, e->slot);
  struct hev h = {c->end + a->o.hold_ns, e->slot, c->gen, 0, HEV_HOLD_CALL, 0};
  gp_hold_push(a, h);
}

static void process(struct gp_attr *a, const struct hev *e) {
  switch (e->kind) {
  case HEV_KERNEL:
    kernel_end(a, e);
    break;
  case HEV_XFER: {
    struct dev *d = &a->dev[e->slot];
    gp_flush_dev_on(a, d, e->t);
    d->n_xfer--;
    d->n_xk[e->a]--;
    break;
  }
  case HEV_CALL:
    gp_call_count(a, e->slot, e->a, (int)e->b, -1);
    break;
  case HEV_ACALL:
    acall_end(a, e);
    break;
  case HEV_HOLD_CALL: {
    struct acall *c = &a->calls.v[e->slot];
    if (!c->live || c->gen != e->a || c->state != CALL_UND) break;
    gp_u64map_del(&a->corr, c->corr, NULL);
    gp_decide(a, e->slot, 0);
    a->diag.unresolved_copies++;
    gp_call_release(a, e->slot);
    break;
  }
  case HEV_STEP:
    gp_steps_boundary(a, e->slot, e->a, e->t);
    break;
  case HEV_HOLD_COPY: {
    struct cwait *w = &a->waits.v[e->slot];
    if (!w->live || w->gen != e->a) break;
    gp_u64map_del(&a->corr, w->corr, NULL);
    gp_wait_release(a, e->slot);
    break;
  }
  }
}

void gp_sweep_advance(struct gp_attr *a, uint64_t t) {
  while (a->hold_t <= t && a->nhold) { /* t may be UINT64_MAX */
    struct hev e = a->hold[a->hhead];
    a->hhead = (a->hhead + 1) % a->caphold;
    a->nhold--;
    a->hold_t = a->nhold ? a->hold[a->hhead].t : UINT64_MAX;
    process(a, &e);
  }
  while (a->nheap && a->heap[0].t <= t) {
    struct hev e = pop(a);
    a->T = e.t > a->T ? e.t : a->T;
    /* the two ends nearly every record brings, here; the rest in process */
    if (e.kind == HEV_KERNEL)
      kernel_end(a, &e);
    else if (e.kind == HEV_CALL)
      gp_call_count(a, e.slot, e.a, (int)e.b, -1);
    else
      process(a, &e);
  }
  if (t > a->T) a->T = t;
  uint64_t top = a->nheap ? a->heap[0].t : UINT64_MAX;
  a->due_t = top < a->hold_t ? top : a->hold_t;
}
