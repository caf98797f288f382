/* Result helpers: derived figures, freeing, and adding processes together. */
#include "report.h"

#include "callsites.h"
#include "demangle.h"
#include "html_timeline.h"
#include "measured.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define GP_X(U, k, l) #k,
const char *const gp_cat_key[GP_CAT_N] = {GP_CATEGORIES(GP_X)};
const char *const gp_xfer_key[GP_XFER_N] = {GP_XFERS(GP_X)};
#undef GP_X
#define GP_X(U, k, l) l,
const char *const gp_cat_label[GP_CAT_N] = {GP_CATEGORIES(GP_X)};
const char *const gp_xfer_label[GP_XFER_N] = {GP_XFERS(GP_X)};
#undef GP_X

void gp_breakdown_add(struct gp_breakdown *d, const struct gp_breakdown *s) {
  for (int i = 0; i < GP_CAT_N; i++)
    d->cat[i] += s->cat[i];
  for (int i = 0; i < GP_SUB_N; i++)
    d->sub[i] += s->sub[i];
  d->kernel_xfer_overlap += s->kernel_xfer_overlap;
  d->comm_overlap += s->comm_overlap;
  d->kernel_nsum += s->kernel_nsum;
  d->small_nsum += s->small_nsum;
  d->occ_nsum += s->occ_nsum;
  d->occ_wsum += s->occ_wsum;
  d->cov_ns += s->cov_ns;
}

uint64_t gp_breakdown_total(const struct gp_breakdown *b) {
  uint64_t t = 0;
  for (int i = 0; i < GP_CAT_N; i++)
    t += b->cat[i];
  return t;
}

struct gp_util gp_util_of(const struct gp_breakdown *b, uint64_t span,
                          int sms_known) {
  struct gp_util u = {0, -1, -1, -1};
  if (!span) return u;
  u.busy_pct = 100.0 * (double)b->cat[GP_CAT_KERNEL] / (double)span;
  if (sms_known) {
    u.cov_pct = 100.0 * b->cov_ns / (double)span;
    if (u.cov_pct > 100) u.cov_pct = 100;
    if (b->kernel_nsum)
      u.small_pct = 100.0 * (double)b->small_nsum / (double)b->kernel_nsum;
  }
  if (b->occ_nsum) u.occ_pct = 100.0 * b->occ_wsum / (double)b->occ_nsum;
  return u;
}

int gp_res_note(struct gp_proc_res *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gp_strlist_vadd(&r->notes, &r->nnotes, fmt, ap);
  va_end(ap);
  return rc;
}

void gp_res_free(struct gp_proc_res *r) {
  if (!r) return;
  gp_cs_res_free(r->callsites);
  gp_meas_free(r->meas);
  for (size_t i = 0; i < r->ndev; i++) {
    free(r->dev[i].host);
    free(r->dev[i].name);
    free(r->dev[i].win);
  }
  for (size_t i = 0; i < r->nthreads; i++)
    free(r->threads[i].name);
  for (size_t i = 0; i < r->nphases; i++) {
    free(r->phases[i].name);
    free(r->phases[i].dev);
    gp_hist_free(&r->phases[i].dur);
  }
  for (size_t i = 0; i < r->nkernels; i++) {
    free(r->kernels[i].name);
    free(r->kernels[i].demangled);
    gp_hist_free(&r->kernels[i].dur);
  }
  for (size_t i = 0; i < r->napis; i++)
    free(r->apis[i].name);
  for (size_t i = 0; i < r->nnotes; i++)
    free(r->notes[i]);
  for (size_t i = 0; i < r->nfindings; i++)
    free(r->findings[i].text);
  free(r->dev);
  free(r->threads);
  free(r->phases);
  free(r->kernels);
  free(r->apis);
  free(r->notes);
  free(r->findings);
  free(r->file);
  free(r->host);
  free(r->cmdline);
  free(r->run_id);
  free(r->steps.v);
  free(r->steps.name);
  free(r->steps.how);
  free(r->steps.why);
  gp_htl_free(r->timeline);
  free(r);
}

/* ---- derived figures ---- */

static int cmp_dbl(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double nearest_rank(const double *v, size_t n, double p) {
  size_t rank = (size_t)ceil(p / 100.0 * (double)n);
  return v[(rank ? rank : 1) - 1];
}

/* Percentiles of busy per window, and the longest run above 90%. */
static int derive_windows(struct gp_device_res *d) {
  if (!d->nwin) return 0;
  double *busy = malloc(d->nwin * sizeof *busy);
  if (!busy) return -1;
  uint64_t run = 0;
  for (size_t i = 0; i < d->nwin; i++) {
    uint64_t len = d->window_ns - i * d->win_ns;
    if (len > d->win_ns) len = d->win_ns;
    busy[i] = len ? 100.0 * (double)d->win[i].cat[GP_CAT_KERNEL] / len : 0;
    run = busy[i] > 90.0 ? run + 1 : 0;
    if (run > d->busy_run) {
      d->busy_run = run;
      d->busy_run_at = i + 1 - run;
    }
  }
  if (d->busy_run) {
    uint64_t from = d->busy_run_at * d->win_ns,
             to = (d->busy_run_at + d->busy_run) * d->win_ns;
    d->busy_run_ns = (to < d->window_ns ? to : d->window_ns) - from;
  }
  qsort(busy, d->nwin, sizeof *busy, cmp_dbl);
  d->busy_p5 = nearest_rank(busy, d->nwin, 5);
  d->busy_p50 = nearest_rank(busy, d->nwin, 50);
  d->busy_p95 = nearest_rank(busy, d->nwin, 95);
  d->busy_p99 = nearest_rank(busy, d->nwin, 99);
  free(busy);
  return 0;
}

/* Host<->device peak: --link-gbps, else by compute capability (PCIe 5.0,
 * 4.0, 3.0 x16); device memory: double data rate x bus width. */
static void derive_peaks(struct gp_device_res *d,
                         const struct gp_report_opts *o) {
  if (o && o->link_gbps > 0)
    d->link_gbps = o->link_gbps;
  else
    d->link_gbps = d->cc_major >= 9 ? 64 : d->cc_major == 8 ? 32 : 16;
  d->d2d_gbps = 2.0 * (double)d->mem_clock_khz * 1000.0 *
                (double)d->mem_bus_width / 8.0 / 1e9;
}

static void derive_dev(struct gp_proc_res *r, struct gp_device_res *d,
                       const struct gp_report_opts *o) {
  d->util = gp_util_of(&d->bd, d->window_ns, d->sms > 0 && !r->degraded);
  d->mem_mean = d->window_ns ? d->mem_area / (double)d->window_ns : 0;
  d->mem_peak_pct = d->mem_mean_pct = -1;
  if (d->mem_total) {
    d->mem_peak_pct = 100.0 * (double)d->mem_peak / (double)d->mem_total;
    d->mem_mean_pct = 100.0 * d->mem_mean / (double)d->mem_total;
  }
  derive_peaks(d, o);
}

static int cmp_phase(const void *x, const void *y) {
  const struct gp_phase_res *a = x, *b = y;
  if (a->union_ns != b->union_ns) return a->union_ns < b->union_ns ? 1 : -1;
  return strcmp(a->name, b->name);
}

static int cmp_kernel(const void *x, const void *y) {
  const struct gp_kernel_res *a = x, *b = y;
  if (a->total != b->total) return a->total < b->total ? 1 : -1;
  return strcmp(a->name, b->name);
}

static int cmp_api(const void *x, const void *y) {
  const struct gp_api_res *a = x, *b = y;
  if (a->total != b->total) return a->total < b->total ? 1 : -1;
  return strcmp(a->name, b->name);
}

int gp_res_derive(struct gp_proc_res *r, const struct gp_report_opts *o) {
  int sms_known = r->ndev > 0 && !r->degraded;
  for (size_t i = 0; i < r->ndev; i++) {
    derive_dev(r, &r->dev[i], o);
    if (!r->dev[i].sms) sms_known = 0;
    r->dev[i].busy_run = r->dev[i].busy_run_at = r->dev[i].busy_run_ns = 0;
    if (derive_windows(&r->dev[i]) < 0) return -1;
  }
  for (size_t i = 0; i < r->nphases; i++) {
    struct gp_phase_res *p = &r->phases[i];
    memset(&p->all, 0, sizeof p->all);
    p->span_ns = 0;
    for (size_t d = 0; d < r->ndev; d++) {
      gp_breakdown_add(&p->all, &p->dev[d].bd);
      /* a process: each of its devices over the phase's union; a sum
       * keeps what gp_res_merge added up, each process's own union */
      if (r->nprocs <= 1) p->dev[d].span_ns = p->union_ns;
      p->span_ns += p->dev[d].span_ns;
    }
    if (!r->ndev) p->span_ns = p->union_ns;
    p->util = gp_util_of(&p->all, p->span_ns, sms_known);
  }
  /* (a sum may hold no array at all, and qsort wants one) */
  if (r->nphases) qsort(r->phases, r->nphases, sizeof *r->phases, cmp_phase);
  if (r->nkernels)
    qsort(r->kernels, r->nkernels, sizeof *r->kernels, cmp_kernel);
  for (size_t i = 0; i < r->nkernels; i++)
    if (!r->kernels[i].demangled)
      r->kernels[i].demangled = gp_demangle(r->kernels[i].name);
  if (r->napis) qsort(r->apis, r->napis, sizeof *r->apis, cmp_api);
  for (size_t i = 0; i < r->nfindings; i++)
    free(r->findings[i].text);
  free(r->findings);
  r->findings = NULL;
  r->nfindings = 0;
  return gp_findings_run(r);
}

/* ---- sums over processes ---- */

struct gp_proc_res *gp_res_new_sum(void) {
  struct gp_proc_res *r = calloc(1, sizeof *r);
  if (r) r->pid = r->ppid = r->rank = -1;
  return r;
}

static int same(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static char *dup0(const char *s) {
  return s ? strdup(s) : NULL;
}

/* GPUs of one host are told apart by ordinal, hosts by name. */
static long merge_dev(struct gp_proc_res *d, const struct gp_proc_res *s,
                      const struct gp_device_res *x) {
  size_t i = 0;
  while (i < d->ndev &&
         !(d->dev[i].id == x->id && same(d->dev[i].host, s->host)))
    i++;
  if (i == d->ndev) {
    struct gp_device_res *v = realloc(d->dev, (d->ndev + 1) * sizeof *v);
    if (!v) return -1;
    d->dev = v;
    struct gp_device_res *n = &v[d->ndev++];
    *n = *x;
    memset(&n->bd, 0, sizeof n->bd);
    memset(n->copies, 0, sizeof n->copies);
    n->window_ns = n->mem_peak = n->kernels = 0;
    n->mem_area = 0;
    n->nwin = 0;
    n->win = NULL;
    n->idle_longest = n->idle_longest_at = 0;
    n->host = dup0(s->host);
    n->name = dup0(x->name);
    for (size_t p = 0; p < d->nphases; p++) {
      struct gp_phase_dev *pd = realloc(d->phases[p].dev, d->ndev * sizeof *pd);
      if (!pd) return -1;
      memset(&pd[d->ndev - 1], 0, sizeof *pd);
      d->phases[p].dev = pd;
    }
  }
  struct gp_device_res *t = &d->dev[i];
  gp_breakdown_add(&t->bd, &x->bd);
  t->window_ns += x->window_ns;
  t->mem_peak += x->mem_peak; /* an upper bound of the joint peak */
  t->mem_area += x->mem_area;
  t->kernels += x->kernels;
  for (int k = 0; k < GP_XFER_N; k++) {
    t->copies[k].count += x->copies[k].count;
    t->copies[k].bytes += x->copies[k].bytes;
    t->copies[k].ns += x->copies[k].ns;
    t->copies[k].pageable += x->copies[k].pageable;
    t->copies[k].pinned += x->copies[k].pinned;
  }
  return (long)i;
}

static int merge_phase(struct gp_proc_res *d, const struct gp_phase_res *x,
                       const long *map, size_t nmap) {
  size_t i = 0;
  while (i < d->nphases && strcmp(d->phases[i].name, x->name))
    i++;
  if (i == d->nphases) {
    struct gp_phase_res *v = realloc(d->phases, (d->nphases + 1) * sizeof *v);
    if (!v) return -1;
    d->phases = v;
    memset(&v[i], 0, sizeof *v);
    v[i].name = strdup(x->name);
    v[i].dev = calloc(d->ndev ? d->ndev : 1, sizeof *v[i].dev);
    d->nphases++;
    if (!v[i].name || !v[i].dev) return -1;
  }
  struct gp_phase_res *p = &d->phases[i];
  p->count += x->count;
  p->inst_ns += x->inst_ns;
  p->union_ns += x->union_ns;
  gp_hist_merge(&p->dur, &x->dur);
  for (size_t k = 0; k < nmap; k++) {
    gp_breakdown_add(&p->dev[map[k]].bd, &x->dev[k].bd);
    p->dev[map[k]].mem_peak += x->dev[k].mem_peak;
    p->dev[map[k]].span_ns += x->dev[k].span_ns;
  }
  return 0;
}

static int merge_kernel(struct gp_proc_res *d, const struct gp_kernel_res *x) {
  size_t i = 0;
  while (i < d->nkernels && strcmp(d->kernels[i].name, x->name))
    i++;
  if (i == d->nkernels) {
    struct gp_kernel_res *v = realloc(d->kernels, (i + 1) * sizeof *v);
    if (!v) return -1;
    d->kernels = v;
    v[i] = *x;
    gp_hist_init(&v[i].dur);
    v[i].count = v[i].total = v[i].cov_ns = v[i].occ_ns = 0;
    v[i].cov_wsum = v[i].occ_wsum = 0;
    v[i].name = strdup(x->name);
    v[i].demangled = NULL; /* derived again for the sum */
    d->nkernels++;
    if (!v[i].name) return -1;
  }
  struct gp_kernel_res *k = &d->kernels[i];
  k->grid_varies |= x->grid_varies || k->grid != x->grid;
  k->block_varies |= x->block_varies || k->block != x->block;
  k->count += x->count;
  k->total += x->total;
  k->cov_wsum += x->cov_wsum;
  k->cov_ns += x->cov_ns;
  k->occ_wsum += x->occ_wsum;
  k->occ_ns += x->occ_ns;
  gp_hist_merge(&k->dur, &x->dur);
  return 0;
}

static int merge_api(struct gp_proc_res *d, const struct gp_api_res *x) {
  size_t i = 0;
  while (i < d->napis && strcmp(d->apis[i].name, x->name))
    i++;
  if (i == d->napis) {
    struct gp_api_res *v = realloc(d->apis, (i + 1) * sizeof *v);
    if (!v) return -1;
    d->apis = v;
    memset(&v[i], 0, sizeof *v);
    v[i].name = strdup(x->name);
    d->napis++;
    if (!v[i].name) return -1;
  }
  d->apis[i].count += x->count;
  d->apis[i].total += x->total;
  d->apis[i].blocked += x->blocked;
  d->apis[i].errors += x->errors;
  return 0;
}

static void merge_diag(struct gp_diag *d, const struct gp_diag *s) {
  d->records += s->records;
  d->timed += s->timed;
  d->late += s->late;
  d->late_dropped += s->late_dropped;
  d->unmatched_end += s->unmatched_end;
  d->open_at_end += s->open_at_end;
  d->unknown_free += s->unknown_free;
  d->unresolved_copies += s->unresolved_copies;
  d->bad_interval += s->bad_interval;
  d->captured += s->captured;
}

int gp_res_merge(struct gp_proc_res *d, const struct gp_proc_res *s) {
  long map[s->ndev ? s->ndev : 1];
  for (size_t i = 0; i < s->ndev; i++)
    if ((map[i] = merge_dev(d, s, &s->dev[i])) < 0) return -1;
  for (size_t i = 0; i < s->nphases; i++)
    if (merge_phase(d, &s->phases[i], map, s->ndev) < 0) return -1;
  for (size_t i = 0; i < s->nkernels; i++)
    if (merge_kernel(d, &s->kernels[i]) < 0) return -1;
  for (size_t i = 0; i < s->napis; i++)
    if (merge_api(d, &s->apis[i]) < 0) return -1;
  merge_diag(&d->diag, &s->diag);
  if (s->callsites) {
    if (!d->callsites && !(d->callsites = calloc(1, sizeof *d->callsites)))
      return -1;
    if (gp_cs_res_merge(d->callsites, s->callsites) < 0) return -1;
  }
  d->started |= s->started;
  /* a sum is degraded only if every process in it is */
  d->degraded = d->nprocs ? d->degraded && s->degraded : s->degraded;
  d->truncated |= s->truncated;
  d->lost += s->lost;
  d->nprocs += s->nprocs;
  d->ndegraded += s->ndegraded;
  d->window_ns += s->window_ns;
  d->win_ns = s->win_ns;
  d->host_pinned_peak += s->host_pinned_peak;
  return 0;
}

double gp_kernel_cov_pct(const struct gp_kernel_res *k) {
  if (!k->cov_ns) return -1;
  /* at most 100: a sum of durations near 2^64 (a hostile trace) can wrap */
  double v = 100 * k->cov_wsum / (double)k->cov_ns;
  return v > 100 ? 100 : v < 0 ? 0 : v;
}
