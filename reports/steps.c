/* Statistics of the measured steps (after the warm-up): the distribution
 * of step times, rates, per-step medians and means, the slowest steps. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

const char *const gp_step_source_key[GP_STEPS_SOURCE_N] = {
#define GP_X(U, k) #k,
    GP_STEP_SOURCES(GP_X)
#undef GP_X
};

const char *const gp_step_counter_key[GP_SC_N] = {
#define GP_X(k, d) #k,
    GP_STEP_COUNTERS(GP_X)
#undef GP_X
};

const char *const gp_step_counter_doc[GP_SC_N] = {
#define GP_X(k, d) d,
    GP_STEP_COUNTERS(GP_X)
#undef GP_X
};

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of sorted v[0..n), n >= 1. */
static uint64_t pct(const uint64_t *v, size_t n, double p) {
  size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

/* The median of sorted v: the mean of the two middle values when n is
 * even (so that two runs of equal steps compare equal). */
static uint64_t median(const uint64_t *v, size_t n) {
  if (!n) return 0;
  return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2 +
                                (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2;
}

static uint64_t dur(const struct gp_step *s) {
  return s->end > s->start ? s->end - s->start : 0;
}

/* Reorders v[0..n) (k < n) so that v[k] is the k-th smallest (from 0),
 * nothing before it larger and nothing after it smaller; returns it.
 * Hoare's FIND (Wirth's form): linear on average, and what was sorted
 * already (the common case of a counter) splits in the middle. */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k) {
  ptrdiff_t l = 0, r = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
  while (l < r) {
    uint64_t x = v[kk];
    ptrdiff_t i = l, j = r;
    do {
      while (v[i] < x)
        i++;
      while (x < v[j])
        j--;
      if (i <= j) {
        uint64_t t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    } while (i <= j);
    if (j < kk) l = i;
    if (kk < i) r = j;
  }
  return v[k];
}

/* The median as median() gives it of the sorted v, without sorting: v is
 * reordered. */
static uint64_t median_unsorted(uint64_t *v, size_t n) {
  if (!n) return 0;
  uint64_t hi = select_kth(v, n, n / 2);
  if (n % 2) return hi;
  uint64_t lo = v[0]; /* the largest of v[0 .. n/2): the one below hi */
  for (size_t i = 1; i < n / 2; i++)
    if (v[i] > lo) lo = v[i];
  return lo / 2 + hi / 2 + (lo % 2 + hi % 2) / 2;
}

/* Median and mean of one field over the measured steps, through buf. */
static void field_stats(const struct gp_steps_res *s, uint64_t *buf,
                        size_t off, uint64_t *med, double *mean) {
  size_t m = s->measured;
  double sum = 0;
  for (size_t i = 0; i < m; i++) {
    buf[i] = *(const uint64_t *)((const char *)&s->v[s->warmup + i] + off);
    sum += (double)buf[i];
  }
  *med = median_unsorted(buf, m);
  *mean = m ? sum / (double)m : 0;
}

static void slowest(struct gp_steps_res *s) {
  s->nslow = 0;
  size_t want = sizeof s->slow / sizeof *s->slow;
  for (size_t i = s->warmup; i < s->n; i++) {
    uint64_t d = dur(&s->v[i]);
    size_t j = s->nslow < want ? s->nslow++ : want;
    if (j == want && d <= dur(&s->v[s->slow[want - 1]])) continue;
    if (j == want) j = want - 1;
    while (j > 0 && dur(&s->v[s->slow[j - 1]]) < d) {
      s->slow[j] = s->slow[j - 1];
      j--;
    }
    s->slow[j] = i;
  }
}

void gp_steps_warmup_span(const struct gp_steps_res *s, uint64_t *total,
                          uint64_t *longest) {
  uint64_t tot = 0, mx = 0;
  for (size_t i = 0; i < s->warmup && i < s->n; i++) {
    uint64_t x = s->v[i].end - s->v[i].start;
    tot += x;
    mx = x > mx ? x : mx;
  }
  *total = tot;
  *longest = mx;
}

int gp_steps_derive(struct gp_steps_res *s) {
  s->measured = s->n > s->warmup ? s->n - s->warmup : 0;
  s->items_per_s = s->per_busy_s = s->items_per_busy_s = -1;
  s->per_s = 0;
  size_t m = s->measured;
  if (!m) return 0;
  uint64_t *buf = malloc(m * sizeof *buf);
  if (!buf) return -1;
  const struct gp_step *first = &s->v[s->warmup], *last = &s->v[s->n - 1];
  double sum = 0, items = 0, busy = 0;
  for (size_t i = 0; i < m; i++) {
    const struct gp_step *st = &s->v[s->warmup + i];
    buf[i] = dur(st);
    sum += (double)buf[i];
    items += (double)st->c[GP_SC_items];
    busy += (double)st->cat[GP_CAT_KERNEL];
  }
  qsort(buf, m, sizeof *buf, cmp_u64);
  s->min_ns = buf[0];
  s->max_ns = buf[m - 1];
  s->median_ns = median(buf, m);
  s->p95_ns = pct(buf, m, 95);
  s->p99_ns = pct(buf, m, 99);
  s->mean_ns = (uint64_t)(sum / (double)m + 0.5);
  s->span_ns = last->end > first->start ? last->end - first->start : 0;
  double span_s = (double)s->span_ns / 1e9;
  s->busy_ns = busy;
  if (span_s > 0) {
    s->per_s = (double)m / span_s;
    if (s->items_known) s->items_per_s = items / span_s;
  }
  if (busy > 0) {
    s->per_busy_s = (double)m / (busy / 1e9);
    if (s->items_known) s->items_per_busy_s = items / (busy / 1e9);
  }
  for (int k = 0; k < GP_CAT_N; k++)
    field_stats(s, buf, offsetof(struct gp_step, cat) + k * sizeof(uint64_t),
                &s->cat_med[k], &s->cat_mean[k]);
  for (int k = 0; k < GP_SC_N; k++)
    field_stats(s, buf, offsetof(struct gp_step, c) + k * sizeof(uint64_t),
                &s->c_med[k], &s->c_mean[k]);
  free(buf);
  slowest(s);
  return 0;
}

int gp_step_excess(const struct gp_steps_res *s, size_t i, uint64_t *ns) {
  int best = -1;
  uint64_t most = 0;
  for (int k = 0; k < GP_CAT_N && i < s->n; k++) {
    /* per GPU, so that the excess reads as wall time */
    uint64_t v = s->v[i].cat[k] / s->ndev, med = s->cat_med[k] / s->ndev;
    if (v > med && v - med > most) {
      most = v - med;
      best = k;
    }
  }
  *ns = most;
  return best;
}

const char *gp_step_why(const struct gp_steps_res *s, size_t i, char *buf,
                        size_t n) {
  uint64_t ns;
  int k = gp_step_excess(s, i, &ns);
  char d[32];
  if (k < 0)
    snprintf(buf, n, "no category above its median");
  else
    snprintf(buf, n, "+%s %s", gp_fmt_sdur(d, sizeof d, ns), gp_cat_label[k]);
  return buf;
}

const struct gp_proc_res *gp_steps_pick(struct gp_proc_res *const *procs,
                                        size_t n) {
  if (n == 1) return procs[0]; /* its "none" says why, as its own does */
  const struct gp_proc_res *best = NULL;
  for (size_t i = 0; i < n; i++) {
    const struct gp_proc_res *r = procs[i];
    if (r->steps.source == GP_STEPS_NONE) continue;
    if (!best || (r->rank == 0 && best->rank != 0) ||
        ((r->rank == 0) == (best->rank == 0) &&
         r->steps.measured > best->steps.measured))
      best = r;
  }
  return best;
}
