/* End of the sweep, and the move from engine state to a gp_proc_res. */
#include "attr_int.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixed windows covering [wstart, t): at most GP_MAX_WINDOWS once wend has
 * been fitted (t <= wend). */
static size_t win_count(const struct gp_attr *a, uint64_t t) {
  uint64_t x = t > a->wstart ? t - a->wstart : 0;
  return (size_t)(x / a->o.window_ns + (x % a->o.window_ns != 0));
}

static char *dupstr(const char *s) {
  return s ? strdup(s) : NULL;
}

static char *name_or(const struct gp_attr *a, uint64_t id, const char *what) {
  const char *s = gp_attr_str(a, id);
  if (s && *s) return strdup(s);
  char buf[64];
  snprintf(buf, sizeof buf, "(%s #%llu)", what, (unsigned long long)id);
  return strdup(buf);
}

static void close_ranges(struct gp_attr *a, uint64_t t) {
  for (size_t i = 0; i < a->nthr; i++) {
    struct thr *th = &a->thr[i];
    while (th->nstk) {
      struct rframe f = th->stk[--th->nstk];
      gp_phase_close(a, f.phase, f.start, t);
      a->diag.open_at_end++;
    }
  }
  for (size_t i = 0; i < a->ranges.cap; i++) {
    if (!a->ranges.used[i]) continue;
    struct ropen *o = &a->ropens.v[a->ranges.vals[i]];
    gp_phase_close(a, o->phase, o->start, t);
    a->diag.open_at_end++;
  }
}

static void end_sweep(struct gp_attr *a) {
  uint64_t t = a->wend;
  gp_sweep_advance(a, t);
  for (size_t i = 0; i < a->nthr; i++) /* the call ends the heap left out */
    if (a->thr[i].pend_t <= t) gp_thr_settle(a, &a->thr[i]);
  close_ranges(a, t);
  gp_flush_devs(a, NODEV, t);
  for (size_t i = 0; i < a->nthr; i++)
    gp_flush_thr(a, &a->thr[i], t);
  /* Copies still waiting for their device record never got one: what
   * they were booked as (launch) stands. */
  for (size_t i = 0; i < a->calls.n; i++) {
    if (!a->calls.v[i].live || a->calls.v[i].state != CALL_UND) continue;
    gp_decide(a, (uint32_t)i, 0);
    a->diag.unresolved_copies++;
  }
  size_t nwin = win_count(a, t);
  for (size_t i = 0; i < a->ndev; i++) {
    struct dev *d = &a->dev[i];
    d->mem_area += (double)d->mem_cur * (double)(t - d->mem_t);
    if (nwin) gp_mem_fill(a, d, nwin - 1);
    gp_run_close(&d->idle[0], t);
    gp_run_close(&d->idle[1], t);
  }
  if (a->state_on) {
    if (!a->deg_spans++) {
      a->deg_first = a->state_since;
      a->deg_first_end = t;
      a->deg_first_reason = a->state_reason;
    }
    a->deg_ns += t > a->state_since ? t - a->state_since : 0;
  }
}

/* A trace without any device record cannot tell a blocking call waiting
 * for the GPU from the GPU itself: the time in blocking calls is shown as
 * the device being busy, as the host saw it. */
static void fold_degraded(uint64_t *cat) {
  cat[GP_CAT_KERNEL] += cat[GP_CAT_SYNC_IDLE];
  cat[GP_CAT_SYNC_IDLE] = 0;
}

static void degrade(struct gp_attr *a) {
  for (size_t i = 0; i < a->ndev; i++) {
    struct dev *d = &a->dev[i];
    fold_degraded(d->tot.cat);
    for (size_t w = 0; w < d->capwin; w++)
      fold_degraded(d->win[w].cat);
    d->idle[0] = d->idle[1];
  }
  for (size_t p = 0; p < a->nph; p++)
    for (size_t i = 0; i < a->ph[p].npd; i++)
      fold_degraded(a->ph[p].pd[i].bd.cat);
}

static void fill_dev(struct gp_attr *a, struct dev *d, struct gp_device_res *o,
                     size_t nwin) {
  const struct gpuphase_device *p = &d->props;
  o->id = d->id;
  o->name = d->has_props ? dupstr(gp_attr_str(a, p->name)) : NULL;
  o->has_props = d->has_props;
  o->sms = p->sms;
  o->mem_total = p->mem_total;
  o->cc_major = p->cc_major;
  o->cc_minor = p->cc_minor;
  o->max_threads_per_sm = p->max_threads_per_sm;
  o->max_blocks_per_sm = p->max_blocks_per_sm;
  o->regs_per_sm = p->regs_per_sm;
  o->smem_per_sm = p->smem_per_sm;
  o->warp_size = p->warp_size;
  o->clock_khz = p->clock_khz;
  o->mem_clock_khz = p->mem_clock_khz;
  o->mem_bus_width = p->mem_bus_width;
  o->window_ns = a->wend - a->wstart;
  o->bd = d->tot;
  o->mem_peak = d->mem_peak;
  o->mem_area = d->mem_area;
  memcpy(o->copies, d->copies, sizeof o->copies);
  o->kernels = d->kernels;
  o->win_ns = a->o.window_ns;
  if (nwin && gp_win_at(a, d, nwin - 1)) {
    o->win = d->win; /* the result takes the series over */
    o->nwin = nwin;
    d->win = NULL;
    d->capwin = 0;
  }
  o->idle_longest = d->idle[0].best;
  o->idle_longest_at = d->idle[0].best ? d->idle[0].best_at - a->wstart : 0;
}

/* Devices in the result: the real ones by ordinal; the "any device"
 * timeline only when no call or record ever named a device. Returns the
 * engine slot of each result device in *slots. */
static int build_devs(struct gp_attr *a, struct gp_proc_res *r,
                      uint32_t **slots) {
  size_t first = a->ndev > 1 ? 1 : 0;
  size_t n = a->started || a->ndev > 1 ? a->ndev - first : 0;
  size_t nwin = a->started ? win_count(a, a->wend) : 0;
  r->dev = calloc(n ? n : 1, sizeof *r->dev);
  *slots = calloc(n ? n : 1, sizeof **slots);
  if (!r->dev || !*slots) return -1;
  for (size_t i = 0; i < n; i++) {
    fill_dev(a, &a->dev[first + i], &r->dev[i], a->started ? nwin : 0);
    (*slots)[i] = (uint32_t)(first + i);
  }
  r->ndev = n;
  /* by ordinal; few devices, and the slots must follow */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && r->dev[j - 1].id > r->dev[j].id; j--) {
      struct gp_device_res t = r->dev[j];
      r->dev[j] = r->dev[j - 1];
      r->dev[j - 1] = t;
      uint32_t s = (*slots)[j];
      (*slots)[j] = (*slots)[j - 1];
      (*slots)[j - 1] = s;
    }
  return 0;
}

static int build_phases(struct gp_attr *a, struct gp_proc_res *r,
                        const uint32_t *slots) {
  r->phases = calloc(a->nph ? a->nph : 1, sizeof *r->phases);
  if (!r->phases) return -1;
  for (size_t i = 0; i < a->nph; i++) {
    struct phase *p = &a->ph[i];
    struct gp_phase_res *o = &r->phases[r->nphases++];
    o->name = name_or(a, p->name, "phase");
    o->count = p->count;
    o->inst_ns = p->inst_ns;
    o->dur = p->dur;
    gp_hist_init(&p->dur); /* moved */
    o->dev = calloc(r->ndev ? r->ndev : 1, sizeof *o->dev);
    if (!o->name || !o->dev) return -1;
    struct gp_phase_dev *w = gp_attr_pd(a, p, WSLOT);
    o->union_ns = w ? gp_breakdown_total(&w->bd) : 0;
    for (size_t d = 0; d < r->ndev; d++) {
      struct gp_phase_dev *pd = gp_attr_pd(a, p, slots[d]);
      if (pd) o->dev[d] = *pd;
    }
  }
  return 0;
}

static int build_kernels(struct gp_attr *a, struct gp_proc_res *r) {
  r->kernels = calloc(a->nk ? a->nk : 1, sizeof *r->kernels);
  if (!r->kernels) return -1;
  for (size_t i = 0; i < a->nk; i++) {
    struct kst *k = &a->k[i];
    struct gp_kernel_res *o = &r->kernels[r->nkernels++];
    o->name = name_or(a, k->name, "kernel");
    o->count = k->count;
    o->total = k->total;
    o->dur = k->dur;
    gp_hist_init(&k->dur);
    o->grid = k->grid;
    o->block = k->block;
    o->grid_varies = k->grid_varies;
    o->block_varies = k->block_varies;
    o->regs = k->regs;
    o->smem = k->smem;
    o->cov_wsum = k->cov_wsum;
    o->cov_ns = k->cov_ns;
    o->occ_wsum = k->occ_wsum;
    o->occ_ns = k->occ_ns;
    o->communication = k->comm;
    o->step_count = k->step_count;
    o->step_ns = k->step_ns;
    if (!o->name) return -1;
  }
  return 0;
}

static int build_host(struct gp_attr *a, struct gp_proc_res *r) {
  r->apis = calloc(a->napi ? a->napi : 1, sizeof *r->apis);
  r->threads = calloc(a->nthr ? a->nthr : 1, sizeof *r->threads);
  if (!r->apis || !r->threads) return -1;
  for (size_t i = 0; i < a->napi; i++) {
    struct apidef *d = &a->api[i];
    if (!d->count) continue;
    struct gp_api_res *o = &r->apis[r->napis++];
    o->name = name_or(a, d->name, "api");
    o->count = d->count;
    o->total = d->total;
    o->blocked = d->blocked;
    o->errors = d->errors;
    o->step_count = d->step_count;
    o->step_total = d->step_total;
    o->step_blocked = d->step_blocked;
    if (!o->name) return -1;
  }
  for (size_t i = 0; i < a->nthr; i++) {
    struct thr *t = &a->thr[i];
    struct gp_thread_res *o = &r->threads[r->nthreads++];
    o->index = t->index;
    o->tid = t->tid;
    o->name = t->name ? dupstr(gp_attr_str(a, t->name)) : NULL;
    o->submit = t->submit;
    o->blocked = t->blocked;
    o->calls = t->calls;
    /* Its lifetime, as far as the trace shows it: from its first call to
     * its last (to the window's end while a call is still open), inside
     * the window; CPU work is the rest of it. A thread without calls
     * (ranges only) is measured over the window. */
    o->life = a->wend > a->wstart ? a->wend - a->wstart : 0;
    o->cpu = t->cpu;
    if (t->seen) {
      uint64_t from = t->first > a->wstart ? t->first : a->wstart;
      int open = 0;
      for (int k = 0; k < CALL_N; k++) open |= t->n_call[k] != 0;
      uint64_t to = open ? a->wend : t->last;
      if (to > a->wend) to = a->wend;
      uint64_t life = to > from ? to - from : 0;
      uint64_t busy = t->submit + t->blocked;
      if (life < busy) life = busy;
      o->life = life;
      o->cpu = life - busy;
    }
  }
  return 0;
}

static void add_notes(struct gp_attr *a, struct gp_proc_res *r) {
  if (r->degraded) {
    const char *why = gp_attr_str(a, a->state_reason);
    gp_res_note(r,
                "DEGRADED: no device activity was recorded (%s); the "
                "breakdown is the host's view: time in blocking CUDA calls "
                "counts as kernel",
                why && *why ? why : "reason unknown");
  } else if (a->deg_spans) {
    const char *why = gp_attr_str(a, a->deg_first_reason);
    uint64_t from = a->deg_first > a->wstart ? a->deg_first - a->wstart : 0;
    char len[32], at[32];
    gp_res_note(r,
                "device recording was degraded %llu time(s) for %s in "
                "all, first at +%s (%s): device activity there is missing",
                (unsigned long long)a->deg_spans,
                gp_fmt_dur(len, sizeof len, a->deg_ns),
                gp_fmt_dur(at, sizeof at, from),
                why && *why ? why : "reason unknown");
  }
  if (a->win_widened) {
    char asked[32], got[32];
    gp_res_note(r,
                "the run is long: fixed windows of %s instead of %s, so that "
                "there are at most %d per GPU",
                gp_fmt_dur(got, sizeof got, a->o.window_ns),
                gp_fmt_dur(asked, sizeof asked, a->win_asked), GP_MAX_WINDOWS);
  }
  if (a->lost)
    gp_res_note(r, "%llu events were lost while recording: totals are low",
                (unsigned long long)a->lost);
  if (a->diag.late)
    gp_res_note(r,
                "%llu records started before records already accounted "
                "(out of order) and were clipped",
                (unsigned long long)a->diag.late);
  if (a->diag.open_at_end)
    gp_res_note(r, "%llu phase instances were still open at the end",
                (unsigned long long)a->diag.open_at_end);
  if (!a->started)
    gp_res_note(r, "no CUDA call or device activity in this trace");
}

static const char *cs_str(void *ctx, uint64_t id) {
  return gp_attr_str(ctx, id);
}

static const char *cs_api(void *ctx, uint64_t i) {
  const struct gp_attr *a = ctx;
  return i < a->napi ? gp_attr_str(a, a->api[i].name) : NULL;
}

static int build_callsites(struct gp_attr *a, struct gp_proc_res *r) {
  struct gp_cs_totals t = {0};
  for (size_t i = 0; i < r->ndev && !r->degraded; i++) {
    t.sync_idle += r->dev[i].bd.cat[GP_CAT_SYNC_IDLE];
    t.host_wait += r->dev[i].bd.cat[GP_CAT_HOST_WAIT];
  }
  for (size_t i = 0; i < a->napi; i++) {
    const struct apidef *d = &a->api[i];
    t.blocked += d->blocked;
    t.calls += d->nblocked;
    if ((d->cls & GPUPHASE_API_LAUNCH) && d->layer != GPUPHASE_LAYER_NVTX)
      t.launches += d->count;
  }
  r->callsites = gp_cs_finish(a->cs, a->o.frames_all, a->ndev > 1, &t, cs_str,
                              cs_api, a);
  if (!r->callsites) return -1;
  /* degraded: the device's idle time is not known, nor what explains it */
  for (size_t i = 0; i < r->callsites->n && r->degraded; i++) {
    struct gp_cs_site *s = &r->callsites->v[i];
    s->idle_ns = s->gap_ns = s->after_ns = s->gaps = 0;
  }
  return 0;
}

struct gp_proc_res *gp_attr_finish(gp_attr *a) {
  if (a->oom) return NULL;
  struct gp_proc_res *r = calloc(1, sizeof *r);
  uint32_t *slots = NULL;
  if (!r) return NULL;
  if (a->started) end_sweep(a);
  r->degraded = a->saw_state1 && !a->n_devrec;
  if (r->degraded) degrade(a);
  r->started = a->started;
  r->wstart = a->wstart;
  r->window_ns = a->wend - a->wstart;
  r->win_ns = a->o.window_ns;
  r->has_summary = a->has_summary;
  r->lost = a->lost;
  r->nprocs = 1;
  r->ndegraded = (uint64_t)r->degraded;
  r->host_pinned_peak = a->host_peak;
  a->diag.timed = a->diag.records - a->untimed;
  r->diag = a->diag;
  r->pid = r->ppid = r->rank = -1;
  for (size_t i = 0; i < a->ndev; i++) { /* the same for every device */
    if (a->dev[i].props.driver_version > (uint64_t)r->driver_version)
      r->driver_version = (int64_t)a->dev[i].props.driver_version;
    if (a->dev[i].props.runtime_version > (uint64_t)r->runtime_version)
      r->runtime_version = (int64_t)a->dev[i].props.runtime_version;
  }
  int bad = a->oom || build_devs(a, r, &slots) < 0 ||
            build_phases(a, r, slots) < 0 || build_kernels(a, r) < 0 ||
            build_host(a, r) < 0 || gp_steps_finish(a, r) < 0 ||
            build_callsites(a, r) < 0;
  free(slots);
  add_notes(a, r);
  if (bad || a->oom || gp_res_derive(r, &a->o) < 0) {
    gp_res_free(r);
    return NULL;
  }
  return r;
}
