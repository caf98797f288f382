/* compare: what a run keeps of its processes' results (compare.h). Each
 * result is reduced as soon as it is read and then freed by the caller, so
 * a side of many 10 M-event traces costs its names and steps only. */
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *dup0(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

static void free_names(struct gp_cmp_name *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i].name);
  free(v);
}

/* Forgets the steps of the run's critical process. */
static void drop_steps(struct gp_cmp_run *r) {
  free(r->step_name);
  free(r->step_ns);
  free(r->cat_ns);
  free_names(r->kern, r->nkern);
  free_names(r->api, r->napi);
  r->step_name = NULL;
  r->step_ns = r->cat_ns = NULL;
  r->kern = r->api = NULL;
  r->nkern = r->napi = 0;
  r->has_steps = 0;
  r->measured = 0;
}

static void free_run(struct gp_cmp_run *r) {
  drop_steps(r);
  free_names(r->wkern, r->nwkern);
  free_names(r->wapi, r->nwapi);
  for (size_t i = 0; i < r->nfind; i++) {
    free(r->find[i].rule);
    free(r->find[i].text);
  }
  free(r->find);
  free(r->id);
  free(r->file);
  free(r->device);
  free(r->cmdline);
  free(r->host);
}

void gp_cmp_side_free(struct gp_cmp_side *s) {
  for (size_t i = 0; i < s->n; i++)
    free_run(&s->v[i]);
  free(s->v);
  s->v = NULL;
  s->n = 0;
}

/* The run r belongs to, created when its id is new (or it has none). */
static struct gp_cmp_run *run_for(struct gp_cmp_side *s,
                                  const struct gp_proc_res *r) {
  if (r->run_id && *r->run_id)
    for (size_t i = 0; i < s->n; i++)
      if (!strcmp(s->v[i].id, r->run_id)) return &s->v[i];
  struct gp_cmp_run *v = realloc(s->v, (s->n + 1) * sizeof *v);
  if (!v) return NULL;
  s->v = v;
  struct gp_cmp_run *run = &v[s->n];
  memset(run, 0, sizeof *run);
  int oom = 0;
  const char *id = r->run_id && *r->run_id ? r->run_id
                   : r->file               ? r->file
                                           : "?";
  run->id = dup0(id, &oom);
  run->file = dup0(r->file ? r->file : "?", &oom);
  run->mem_peak_pct = -1;
  if (oom) {
    free(run->id);
    free(run->file);
    return NULL;
  }
  s->n++;
  return run;
}

static size_t measured_of(const struct gp_steps_res *st) {
  if (st->source == GP_STEPS_NONE || !st->v || st->n <= st->warmup) return 0;
  size_t avail = st->n - st->warmup;
  return st->measured < avail ? st->measured : avail;
}

/* Kernels (which == 0) or API calls launched by the measured steps. */
static int take_names(struct gp_cmp_run *run, const struct gp_proc_res *r,
                      int which, size_t m) {
  size_t n = which ? r->napis : r->nkernels, k = 0;
  struct gp_cmp_name *v = calloc(n ? n : 1, sizeof *v);
  if (!v) return -1;
  int oom = 0;
  for (size_t i = 0; i < n && !oom; i++) {
    const struct gp_kernel_res *kr = which ? NULL : &r->kernels[i];
    const struct gp_api_res *ar = which ? &r->apis[i] : NULL;
    uint64_t count = kr ? kr->step_count : ar->step_count;
    if (!count) continue;
    const char *name =
        kr ? (kr->demangled ? kr->demangled : kr->name) : ar->name;
    v[k].name = dup0(name ? name : "?", &oom);
    v[k].per_step = (double)(kr ? kr->step_ns : ar->step_blocked) / (double)m;
    v[k++].count = (double)count / (double)m;
  }
  if (which)
    run->api = v, run->napi = k;
  else
    run->kern = v, run->nkern = k;
  return oom ? -1 : 0;
}

static void step_figures(struct gp_cmp_run *run, const struct gp_steps_res *st,
                         size_t m) {
  double ndev = st->ndev ? (double)st->ndev : 1;
  for (size_t i = 0; i < m; i++) {
    const struct gp_step *s = &st->v[st->warmup + i];
    run->step_ns[i] = s->end > s->start ? (double)(s->end - s->start) : 0;
    for (int c = 0; c < GP_CAT_N; c++)
      run->cat_ns[i * GP_CAT_N + c] = (double)s->cat[c] / ndev;
  }
  run->median = (double)st->median_ns;
  run->mean = (double)st->mean_ns;
  run->p95 = (double)st->p95_ns;
  run->p99 = (double)st->p99_ns;
  run->max = (double)st->max_ns;
  run->per_s = st->per_s;
  run->items_per_s = st->items_known ? st->items_per_s : -1;
  for (int c = 0; c < GP_CAT_N; c++)
    run->cat[c] = st->cat_mean[c] / ndev;
  for (int c = 0; c < GP_SC_N; c++)
    run->c_med[c] = (double)st->c_med[c];
  run->source = (int)st->source;
  run->detail = st->detail;
}

/* Keeps r's steps when r is the run's critical process so far. */
static int take_steps(struct gp_cmp_run *run, const struct gp_proc_res *r) {
  const struct gp_steps_res *st = &r->steps;
  size_t m = measured_of(st);
  if (st->source != GP_STEPS_NONE) run->found += st->n;
  if (!m || (run->has_steps && (double)st->median_ns <= run->median)) return 0;
  drop_steps(run);
  int oom = 0;
  run->step_name = dup0(st->name, &oom);
  run->step_ns = malloc(m * sizeof *run->step_ns);
  run->cat_ns = malloc(m * GP_CAT_N * sizeof *run->cat_ns);
  if (oom || !run->step_ns || !run->cat_ns) goto fail;
  run->measured = m;
  step_figures(run, st, m);
  if (st->detail &&
      (take_names(run, r, 0, m) < 0 || take_names(run, r, 1, m) < 0))
    goto fail;
  run->has_steps = 1;
  /* the run's command is its critical process's, whose steps it compares
   * (a launcher's ranks differ by their arguments) */
  if (r->cmdline && (!run->cmdline || strcmp(run->cmdline, r->cmdline))) {
    char *c = dup0(r->cmdline, &oom);
    if (oom) goto fail;
    free(run->cmdline);
    run->cmdline = c;
  }
  return 0;
fail:
  drop_steps(run);
  return -1;
}

static int take_finding(struct gp_cmp_run *run, const struct gp_finding *f) {
  const char *rule = f->rule ? f->rule : "?";
  for (size_t i = 0; i < run->nfind; i++)
    if (!strcmp(run->find[i].rule, rule)) return 0;
  struct gp_cmp_finding *v = realloc(run->find, (run->nfind + 1) * sizeof *v);
  if (!v) return -1;
  run->find = v;
  int oom = 0;
  v[run->nfind].rule = dup0(rule, &oom);
  v[run->nfind].text = dup0(f->text ? f->text : "", &oom);
  run->nfind++;
  return oom ? -1 : 0;
}

/* Memory, busy time and coverage of every GPU of the process. */
static void take_devices(struct gp_cmp_run *run, const struct gp_proc_res *r,
                         int *oom) {
  for (size_t i = 0; i < r->ndev; i++) {
    const struct gp_device_res *d = &r->dev[i];
    if (d->mem_peak > run->mem_peak) run->mem_peak = d->mem_peak;
    if (d->mem_peak_pct > run->mem_peak_pct)
      run->mem_peak_pct = d->mem_peak_pct;
    run->kern_ns += (double)d->bd.cat[GP_CAT_KERNEL];
    run->dev_ns += (double)d->window_ns;
    if (d->has_props && d->sms) {
      run->cov_ns += d->bd.cov_ns;
      run->cov_dev_ns += (double)d->window_ns;
    }
    if (!run->device && d->name) {
      run->device = dup0(d->name, oom);
      run->sms = d->has_props ? d->sms : 0;
      run->mem_total = d->has_props ? d->mem_total : 0;
    }
  }
  if (r->ndev > run->ndev) run->ndev = r->ndev;
}

/* A name's totals over the run (the whole-run explanation, for runs
 * without steps): added to its entry, or a new one. */
static int add_total(struct gp_cmp_name **v, size_t *n, size_t *cap,
                     const char *name, double ns, double count) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*v)[i].name, name)) {
      (*v)[i].per_step += ns;
      (*v)[i].count += count;
      return 0;
    }
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    struct gp_cmp_name *g = realloc(*v, c * sizeof *g);
    if (!g) return -1;
    *v = g;
    *cap = c;
  }
  int oom = 0;
  (*v)[*n] = (struct gp_cmp_name){dup0(name, &oom), ns, count};
  if (oom) return -1;
  (*n)++;
  return 0;
}

static int take_totals(struct gp_cmp_run *run, const struct gp_proc_res *r) {
  for (size_t i = 0; i < r->nkernels; i++) {
    const struct gp_kernel_res *k = &r->kernels[i];
    const char *name = k->demangled ? k->demangled : k->name;
    if (k->count && add_total(&run->wkern, &run->nwkern, &run->capwkern,
                              name ? name : "?", (double)k->total,
                              (double)k->count) < 0)
      return -1;
  }
  for (size_t i = 0; i < r->napis; i++) {
    const struct gp_api_res *a = &r->apis[i];
    if (a->count && add_total(&run->wapi, &run->nwapi, &run->capwapi,
                              a->name ? a->name : "?", (double)a->blocked,
                              (double)a->count) < 0)
      return -1;
  }
  for (size_t i = 0; i < r->ndev; i++) {
    for (int c = 0; c < GP_CAT_N; c++)
      run->wcat[c] += (double)r->dev[i].bd.cat[c];
    run->wndev++;
  }
  return 0;
}

static int take_process(struct gp_cmp_run *run, const struct gp_proc_res *r) {
  int oom = 0;
  if (take_totals(run, r) < 0) return -1;
  run->nfiles++;
  if (r->started && r->window_ns) {
    uint64_t end = r->wstart + r->window_ns;
    if (!run->wend || r->wstart < run->wstart) run->wstart = r->wstart;
    if (end > run->wend) run->wend = end;
  }
  run->lost += r->lost;
  run->degraded |= r->degraded || r->ndegraded;
  run->truncated |= r->truncated;
  take_devices(run, r, &oom);
  if (!run->driver) run->driver = r->driver_version;
  if (!run->runtime) run->runtime = r->runtime_version;
  if (!run->cmdline) run->cmdline = dup0(r->cmdline, &oom);
  if (!run->host) run->host = dup0(r->host, &oom);
  for (size_t i = 0; i < r->nfindings && !oom; i++)
    if (take_finding(run, &r->findings[i]) < 0) oom = 1;
  return oom ? -1 : 0;
}

int gp_cmp_side_add(struct gp_cmp_side *s, const struct gp_proc_res *r) {
  struct gp_cmp_run *run = run_for(s, r);
  if (!run) return -1;
  if (take_process(run, r) < 0) return -1;
  return take_steps(run, r);
}

static int unknown(const char **why, const char *w) {
  if (why) *why = w;
  return -1;
}

static double cat_sum(const struct gp_cmp_run *r) {
  double s = 0;
  for (int c = 0; c < GP_CAT_N; c++)
    s += r->cat[c];
  return s;
}

static int step_value(const struct gp_cmp_run *r, int m, int as_pct, double *v,
                      const char **why) {
  if (!r->has_steps) return unknown(why, "no steps found");
  if (m >= GP_M_SC0) {
    *v = r->c_med[m - GP_M_SC0];
    return 0;
  }
  if (m >= GP_M_CAT0) {
    double sum = cat_sum(r), x = r->cat[m - GP_M_CAT0];
    if (as_pct && sum <= 0) return unknown(why, "steps of no length");
    *v = as_pct ? 100 * x / sum : x;
    return 0;
  }
  switch (m) {
  case GP_M_STEP_MEDIAN:
    *v = r->median;
    return 0;
  case GP_M_STEP_MEAN:
    *v = r->mean;
    return 0;
  case GP_M_STEP_P95:
    *v = r->p95;
    return 0;
  case GP_M_STEP_P99:
    *v = r->p99;
    return 0;
  case GP_M_STEP_MAX:
    *v = r->max;
    return 0;
  case GP_M_STEPS_PER_S:
    *v = r->per_s;
    return r->per_s > 0 ? 0 : unknown(why, "steps of no length");
  default:
    *v = r->items_per_s;
    return r->items_per_s >= 0
               ? 0
               : unknown(why, "no items counted (gpuphase_step_items or "
                              "GPUPHASE_STEP_ITEMS)");
  }
}

static int run_value(const struct gp_cmp_run *r, int m, int as_pct, double *v,
                     const char **why) {
  if (m == GP_M_BUSY && r->has_steps)
    return step_value(r, GP_M_CAT0 + GP_CAT_KERNEL, 1, v, why);
  switch (m) {
  case GP_M_BUSY:
    *v = r->dev_ns > 0 ? 100 * r->kern_ns / r->dev_ns : 0;
    return r->dev_ns > 0 ? 0 : unknown(why, "no GPU was used");
  case GP_M_SM_COVERAGE:
    *v = r->cov_dev_ns > 0 ? 100 * r->cov_ns / r->cov_dev_ns : 0;
    return r->cov_dev_ns > 0 ? 0
                             : unknown(why, "the GPU's SM count is unknown");
  case GP_M_MEM_PEAK:
    *v = as_pct ? r->mem_peak_pct : (double)r->mem_peak;
    return *v >= 0 ? 0 : unknown(why, "the GPU's memory size is unknown");
  case GP_M_LOST_EVENTS:
    *v = (double)r->lost;
    return 0;
  case GP_M_WINDOW:
    *v = (double)(r->wend - r->wstart);
    return r->wend > r->wstart ? 0 : unknown(why, "no CUDA call was recorded");
  default:
    return step_value(r, m, as_pct, v, why);
  }
}

int gp_cmp_run_value(const struct gp_cmp_run *r, int m, int as_pct, double *v,
                     const char **why) {
  if (m < 0 || m >= GP_M_N) return unknown(why, "unknown metric");
  if (run_value(r, m, as_pct, v, why) < 0) return -1;
  /* a hostile trace may make a rate infinite: no sample then */
  return isfinite(*v) ? 0 : unknown(why, "a value out of range");
}
