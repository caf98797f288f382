/* compare: the verdict. The primary metric (median step time, or the window
 * without steps) and every metric the user gated get an interval and a
 * verdict (stats.h); counters are compared exactly; the explanation sets
 * the two sides' categories, kernels, API calls and findings side by side.
 * The rules and their defaults: docs/compare.md. */
#include "compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MIN_STEPS 10         /* a side, when its steps are the samples */
#define MIN_RUNS 3           /* a side, for runs to be the samples */
#define STEP_WORK 50000000.0 /* resamples x steps, at most (~0.2 s) */

void gp_cmp_opts_init(struct gp_cmp_opts *o) {
  memset(o, 0, sizeof *o);
  o->noise = 0.02;
  o->threshold = 0.05;
  o->resamples = 10000;
  o->seed = 0x67707068617365ull; /* "gpphase" */
  o->inconclusive = 3;
  o->warmup = -1;
}

static void note(struct gp_cmp_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct gp_cmp_result *res, const char *fmt, ...) {
  if (res->nnotes >= sizeof res->notes / sizeof *res->notes) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->notes[res->nnotes++], sizeof *res->notes, fmt, ap);
  va_end(ap);
}

static double median_of(double *v, size_t n) {
  return n ? gp_stat_of(GP_STAT_MEDIAN, v, n) : 0;
}

static size_t with_steps(const struct gp_cmp_side *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    k += s->v[i].has_steps;
  return k;
}

/* "+10.2%" for a relative change; "+inf%" from nothing. */
/* A value of metric m in its unit. */
static const char *fmt_val(char *b, size_t n, int m, double v) {
  enum gp_mkind k = gp_metric_kind(m);
  char t[32];
  if (k == GP_MK_DUR || k == GP_MK_CAT)
    snprintf(b, n, "%s%s", v < 0 ? "-" : "",
             gp_fmt_dur(t, sizeof t, (uint64_t)fabs(v)));
  else if (k == GP_MK_BYTES || k == GP_MK_MEM)
    snprintf(b, n, "%s%s", v < 0 ? "-" : "",
             gp_fmt_bytes(t, sizeof t, fabs(v)));
  else if (k == GP_MK_RATE)
    snprintf(b, n, "%s/s", gp_fmt_num(t, sizeof t, v));
  else if (k == GP_MK_PCT)
    snprintf(b, n, "%.1f%%", v);
  else
    gp_fmt_num(b, n, v);
  return b;
}

/* A threshold or noise floor as given (a fraction): its percent with the
 * decimals it has, up to four ("7.45", "5", "0.4"), never rounded into a
 * reason that contradicts itself ("+7.4%: under the 7% threshold"). */
static const char *pct_set(char *b, size_t n, double frac) {
  snprintf(b, n, "%.4f", 100 * frac);
  char *dot = strchr(b, '.');
  if (dot) {
    char *end = b + strlen(b);
    while (end > dot + 1 && end[-1] == '0')
      *--end = 0;
    if (end == dot + 1) *dot = 0;
  }
  return b;
}

/* The words for a verdict (stats.h's gp_why). */
static void word(struct gp_cmp_metric *x, enum gp_why why) {
  char e[24], lo[24], hi[24], d[40], dh[40], md[40], big[24], nf[32], th[32];
  const struct gp_rule *r = &x->rule;
  pct_set(nf, sizeof nf, r->noise);
  pct_set(th, sizeof th, r->threshold);
  gp_fmt_change(e, sizeof e, x->slow.est);
  gp_fmt_change(lo, sizeof lo, x->slow.lo);
  gp_fmt_change(hi, sizeof hi, x->slow.hi);
  fmt_val(d, sizeof d, x->metric, x->slow.d_est);
  fmt_val(dh, sizeof dh, x->metric, x->slow.d_hi);
  fmt_val(md, sizeof md, x->metric, r->min_delta);
  gp_fmt_change(big, sizeof big, r->large);
  char *o = x->reason;
  size_t n = sizeof x->reason;
  switch (why) {
  case GP_WHY_REGRESSION:
    if (r->advisory)
      snprintf(o, n,
               "%s [%s, %s]: from the steps of fewer than %d runs a side, the "
               "lower bound is at or over %s%s%s",
               e, lo, hi, MIN_RUNS, big, r->min_delta > 0 ? "; delta " : "",
               r->min_delta > 0 ? d : "");
    else
      snprintf(o, n,
               "%s [%s, %s]: above the %s%% noise floor and at or over the "
               "%s%% threshold%s%s",
               e, lo, hi, nf, th,
               r->min_delta > 0 ? "; delta " : "", r->min_delta > 0 ? d : "");
    break;
  case GP_WHY_UNDER:
    snprintf(o, n, "%s [%s, %s]: the upper bound is under the %s%% threshold",
             e, lo, hi, th);
    break;
  case GP_WHY_TINY:
    snprintf(o, n, "%s [%s, %s]: %s a step at most, under the %s minimum delta",
             e, lo, hi, dh, md);
    break;
  case GP_WHY_VARIANCE:
    snprintf(o, n,
             "%s [%s, %s]: the interval spans the %s%% noise floor and the "
             "%s%% threshold: too much variance, add runs",
             e, lo, hi, nf, th);
    break;
  case GP_WHY_FLOOR:
    snprintf(o, n,
             "%s [%s, %s]: at or over the %s%% threshold, not above the "
             "higher %s%% noise floor (lower --noise-floor to judge it)",
             e, lo, hi, th, nf);
    break;
  case GP_WHY_SMALL:
    snprintf(o, n,
             "%s [%s, %s]: above the noise floor but under the %s%% "
             "threshold, which the interval reaches: add runs",
             e, lo, hi, th);
    break;
  case GP_WHY_UNDER_DELTA:
    snprintf(o, n,
             "%s [%s, %s]: but %s, under the %s minimum delta that the "
             "interval reaches",
             e, lo, hi, d, md);
    break;
  case GP_WHY_ADVISORY:
    snprintf(o, n,
             "%s [%s, %s] (advisory: from the steps of fewer than %d runs a "
             "side, blind to between-run variance; a regression needs a lower "
             "bound of %s)",
             e, lo, hi, MIN_RUNS, big);
    break;
  }
}

static enum gp_stat stat_of_metric(int m) {
  switch (m) {
  case GP_M_STEP_MEAN:
    return GP_STAT_MEAN;
  case GP_M_STEP_P95:
    return GP_STAT_P95;
  case GP_M_STEP_P99:
    return GP_STAT_P99;
  case GP_M_STEP_MAX:
    return GP_STAT_MAX;
  case GP_M_STEP_MEDIAN:
    return GP_STAT_MEDIAN;
  default:
    return GP_STAT_MEAN; /* categories: their mean per step */
  }
}

static int step_metric(int m) {
  return (m >= GP_M_STEP_MEDIAN && m <= GP_M_STEP_MAX) ||
         (m >= GP_M_CAT0 && m < GP_M_SC0);
}

/* The per-run values of metric m; NULL with *why when a run lacks it. */
static double *run_values(const struct gp_cmp_side *s, int m, const char **why,
                          int *oom) {
  double *v = malloc((s->n ? s->n : 1) * sizeof *v);
  if (!v) {
    *oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < s->n; i++)
    if (gp_cmp_run_value(&s->v[i], m, 0, &v[i], why) < 0) {
      free(v);
      return NULL;
    }
  return v;
}

/* Every measured step of a side, one after the other: durations, or the
 * category's time when m is one. */
static double *pooled(const struct gp_cmp_side *s, int m, size_t *n) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    k += s->v[i].measured;
  double *v = malloc((k ? k : 1) * sizeof *v);
  if (!v) return NULL;
  k = 0;
  for (size_t i = 0; i < s->n; i++) {
    const struct gp_cmp_run *r = &s->v[i];
    for (size_t j = 0; j < r->measured; j++)
      v[k++] = m >= GP_M_CAT0 ? r->cat_ns[j * GP_CAT_N + (m - GP_M_CAT0)]
                              : r->step_ns[j];
  }
  *n = k;
  return v;
}

/* The rule for metric m: the primary metric's from the global options,
 * others' from --max-slowdown M= and --min-delta M=. A duration other than
 * the primary must also move by the noise floor's share of the base step
 * (2% of it), so that a category growing from 10 us to 20 us is no
 * regression of a 10 ms step. */
static struct gp_rule rule_for(int m, int primary, const struct gp_cmp_opts *o,
                               double base_step) {
  struct gp_rule r = {o->noise, o->threshold, primary ? o->min_delta : 0, 0, 0};
  enum gp_mkind k = gp_metric_kind(m);
  if (o->m_set[m] & 1) r.threshold = o->m_slow[m];
  if (o->m_set[m] & 2)
    r.min_delta = o->m_delta[m];
  else if (!primary && (k == GP_MK_DUR || k == GP_MK_CAT) && base_step > 0)
    r.min_delta = o->noise * base_step;
  r.large = 2 * r.threshold;
  return r;
}

/* Base and candidate statistics of the per-run values, and the interval. */
static int sample_runs(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                       struct gp_cmp_metric *x, const struct gp_cmp_opts *o) {
  const char *why = "";
  int oom = 0, hb = gp_metric_higher_better(x->metric);
  x->sb = run_values(b, x->metric, &why, &oom);
  x->sc = x->sb ? run_values(c, x->metric, &why, &oom) : NULL;
  if (!x->sc) {
    free(x->sb);
    x->sb = NULL;
    /* in how many runs of both sides the value is missing */
    size_t miss = 0, all = b->n + c->n;
    double t;
    const char *w2;
    for (size_t i = 0; i < all; i++)
      miss += gp_cmp_run_value(i < b->n ? &b->v[i] : &c->v[i - b->n],
                               x->metric, 0, &t, &w2) < 0;
    if (miss >= all)
      snprintf(x->reason, sizeof x->reason, "%s in any run", why);
    else
      snprintf(x->reason, sizeof x->reason, "%s in %zu of %zu runs", why,
               miss, all);
    return oom ? -1 : 1;
  }
  x->mode = GP_MODE_RUNS;
  x->nb = b->n;
  x->nc = c->n;
  double *t = malloc((b->n > c->n ? b->n : c->n) * sizeof *t);
  if (!t) return -1;
  memcpy(t, x->sb, b->n * sizeof *t);
  x->base = median_of(t, b->n);
  memcpy(t, x->sc, c->n * sizeof *t);
  x->cand = median_of(t, c->n);
  free(t);
  struct gp_boot bo = {o->resamples, o->seed, 0.95, GP_STAT_MEDIAN, 0};
  return hb ? gp_boot_ratio(x->sc, c->n, x->sb, b->n, &bo, &x->iv)
            : gp_boot_ratio(x->sb, b->n, x->sc, c->n, &bo, &x->iv);
}

/* Fewer runs: the steps are the samples, resampled in blocks. */
static int sample_steps(const struct gp_cmp_side *b,
                        const struct gp_cmp_side *c, struct gp_cmp_metric *x,
                        const struct gp_cmp_opts *o) {
  size_t nb = 0, nc = 0;
  double *pb = pooled(b, x->metric, &nb),
         *pc = pb ? pooled(c, x->metric, &nc) : NULL;
  int rc = 1;
  if (!pc)
    rc = -1;
  else if (nb < MIN_STEPS || nc < MIN_STEPS)
    snprintf(x->reason, sizeof x->reason,
             "too few steps: %zu base, %zu new (%d a side with fewer than %d "
             "runs a side)",
             nb, nc, MIN_STEPS, MIN_RUNS);
  else {
    enum gp_stat st = stat_of_metric(x->metric);
    size_t reps = (size_t)(STEP_WORK / (double)(nb + nc));
    struct gp_boot bo = {reps < 2000 ? 2000 : reps, o->seed, 0.95, st, 1};
    if (bo.resamples > o->resamples) bo.resamples = o->resamples;
    x->mode = GP_MODE_STEPS;
    x->nb = nb;
    x->nc = nc;
    rc = gp_boot_ratio(pb, nb, pc, nc, &bo, &x->iv);
    x->base = gp_stat_of(st, pb, nb);
    x->cand = gp_stat_of(st, pc, nc);
  }
  free(pb);
  free(pc);
  return rc;
}

static int sample(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                  struct gp_cmp_metric *x, const struct gp_cmp_opts *o) {
  if (b->n >= MIN_RUNS && c->n >= MIN_RUNS) return sample_runs(b, c, x, o);
  if (step_metric(x->metric) && with_steps(b) == b->n && with_steps(c) == c->n)
    return sample_steps(b, c, x, o);
  snprintf(x->reason, sizeof x->reason,
           "too few runs: %zu base, %zu new (%s needs %d a side)", b->n, c->n,
           gp_metric_name(x->metric), MIN_RUNS);
  return 1;
}

static void slowdown(struct gp_cmp_metric *x) {
  const struct gp_interval *iv = &x->iv;
  double b = x->base, c = x->cand;
  x->slow.est = iv->ratio - 1;
  x->slow.lo = iv->lo - 1;
  x->slow.hi = iv->hi - 1;
  if (!gp_metric_higher_better(x->metric)) {
    x->slow.d_est = c - b;
    x->slow.d_hi = b > 0 && isfinite(iv->hi) ? b * (iv->hi - 1) : c - b;
  } else {
    x->slow.d_est = b - c;
    x->slow.d_hi = iv->hi > 0 && isfinite(iv->hi) ? b - b / iv->hi : b;
  }
}

static int judge_metric(const struct gp_cmp_side *b,
                        const struct gp_cmp_side *c,
                        const struct gp_cmp_opts *o, double base_step,
                        const char *forced, struct gp_cmp_metric *x) {
  x->rule = rule_for(x->metric, x->primary, o, base_step);
  x->v = GP_INCONCLUSIVE;
  x->mode = GP_MODE_NONE;
  if (forced && step_metric(x->metric)) {
    snprintf(x->reason, sizeof x->reason, "%s", forced);
    return 0;
  }
  int rc = sample(b, c, x, o);
  if (rc) return rc < 0 ? -1 : 0;
  x->rule.advisory = x->mode == GP_MODE_STEPS;
  slowdown(x);
  enum gp_why why;
  x->v = gp_judge(&x->rule, &x->slow, &why);
  word(x, why);
  return 0;
}

/* Why step metrics cannot be compared at all, or NULL. */
static const char *steps_unfit(const struct gp_cmp_side *b,
                               const struct gp_cmp_side *c, char *buf,
                               size_t n) {
  size_t sb = with_steps(b), sc = with_steps(c);
  if (sb != b->n || sc != c->n) {
    snprintf(buf, n,
             "steps found in %zu of %zu base runs and %zu of %zu new runs: "
             "name them with --step",
             sb, b->n, sc, c->n);
    return buf;
  }
  const char *nb = b->v[0].step_name ? b->v[0].step_name : "";
  for (size_t i = 0; i < b->n + c->n; i++) {
    const struct gp_cmp_run *r = i < b->n ? &b->v[i] : &c->v[i - b->n];
    const char *nr = r->step_name ? r->step_name : "";
    if (strcmp(nb, nr)) {
      snprintf(
          buf, n,
          "the runs' steps differ ('%.40s' and '%.40s'): name them with --step",
          nb, nr);
      return buf;
    }
  }
  return NULL;
}

static double base_step_of(const struct gp_cmp_side *b) {
  if (with_steps(b) != b->n || !b->n) return 0;
  double *v = malloc(b->n * sizeof *v), m = 0;
  if (!v) return 0;
  for (size_t i = 0; i < b->n; i++)
    v[i] = b->v[i].median;
  m = median_of(v, b->n);
  free(v);
  return m;
}

/* With --step or --warmup given, why some runs of b (NULL: none) and c
 * have no measured step (the name matches no range, or the warm-up takes
 * them all), or NULL: the window must not stand in for the steps the user
 * named. */
static const char *steps_missing(const struct gp_cmp_side *b,
                                 const struct gp_cmp_side *c,
                                 const struct gp_cmp_opts *o, char *buf,
                                 size_t n) {
  if (!o->step && o->warmup < 0) return NULL;
  size_t runs = 0, none = 0, unfound = 0;
  for (int k = 0; k < 2; k++) {
    const struct gp_cmp_side *s = k ? c : b;
    for (size_t i = 0; s && i < s->n; i++, runs++) {
      none += !s->v[i].has_steps;
      unfound += !s->v[i].has_steps && !s->v[i].found;
    }
  }
  if (!none) return NULL;
  if (unfound == none && o->step)
    snprintf(buf, n, "no range matches --step '%.60s' in %zu of %zu runs",
             o->step, none, runs);
  else if (unfound == none)
    snprintf(buf, n, "no steps found in %zu of %zu runs (--warmup %ld given)",
             none, runs, o->warmup);
  else
    snprintf(buf, n,
             "no step is left after the warm-up in %zu of %zu runs "
             "(--warmup %ld)",
             none - unfound, runs, o->warmup < 0 ? -1 : o->warmup);
  return buf;
}

/* The median step ignores steps that got slower while most did not (an
 * extra kernel every third step: the median +0.6%, the run 26% longer).
 * Without a gate of its own, the mean step is judged aside with the
 * primary's rules, and a note says so when it alone would fail. */
static int mean_aside(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                      const struct gp_cmp_opts *o, double step,
                      const char *forced, int primary,
                      struct gp_cmp_result *res) {
  if (primary != GP_M_STEP_MEDIAN || o->m_set[GP_M_STEP_MEAN] || forced ||
      res->m[0].v == GP_REGRESSION)
    return 0;
  struct gp_cmp_metric x = {.metric = GP_M_STEP_MEAN};
  int rc = judge_metric(b, c, o, step, NULL, &x);
  if (!rc && x.v == GP_REGRESSION) {
    char e[24], lo[24], hi[24], m[24], th[32];
    note(res,
         "step_mean %s [%s, %s] would fail where step_median (%s) does not: "
         "some steps got slower (--max-slowdown step_mean=%s%% gates it)",
         gp_fmt_change(e, sizeof e, x.slow.est),
         gp_fmt_change(lo, sizeof lo, x.slow.lo),
         gp_fmt_change(hi, sizeof hi, x.slow.hi),
         gp_fmt_change(m, sizeof m, res->m[0].slow.est),
         pct_set(th, sizeof th, o->threshold));
  }
  free(x.sb);
  free(x.sc);
  return rc;
}

static int judge_metrics(const struct gp_cmp_side *b,
                         const struct gp_cmp_side *c,
                         const struct gp_cmp_opts *o,
                         struct gp_cmp_result *res) {
  char buf[200], miss[200];
  const char *missing = steps_missing(b, c, o, miss, sizeof miss);
  int any = with_steps(b) || with_steps(c) || missing;
  int primary = any ? GP_M_STEP_MEDIAN : GP_M_WINDOW;
  const char *forced =
      missing ? missing : any ? steps_unfit(b, c, buf, sizeof buf) : NULL;
  if (missing) note(res, "%s", missing);
  if (o->noise > o->threshold) {
    char nf[32], th[32];
    pct_set(nf, sizeof nf, o->noise);
    pct_set(th, sizeof th, o->threshold);
    note(res,
         "the %s%% noise floor is above the %s%% threshold: only changes "
         "past %s%% can fail",
         nf, th, nf);
  }
  size_t n = 1;
  for (int m = 0; m < GP_M_N; m++)
    n += o->m_set[m] && m != primary;
  if (!(res->m = calloc(n, sizeof *res->m))) return -1;
  double step = base_step_of(b);
  res->m[0].metric = primary;
  res->m[0].primary = 1;
  for (int m = 0, k = 1; m < GP_M_N; m++)
    if (o->m_set[m] && m != primary) res->m[k++].metric = m;
  res->nm = n;
  for (size_t i = 0; i < n; i++)
    if (judge_metric(b, c, o, step, forced, &res->m[i]) < 0) return -1;
  return mean_aside(b, c, o, step, forced, primary, res);
}

static void range_of(const double *v, size_t n, double *lo, double *hi) {
  *lo = *hi = v[0];
  for (size_t i = 1; i < n; i++) {
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
}

/* A side's per-step value of counter sc: the median over its runs, and
 * whether every run agrees. */
static double counter_side(const struct gp_cmp_side *s, int sc, double *t,
                           double *lo, double *hi) {
  for (size_t i = 0; i < s->n; i++)
    t[i] = s->v[i].c_med[sc];
  range_of(t, s->n, lo, hi);
  return median_of(t, s->n);
}

static const char *fmt_count(char *b, size_t n, int sc, double v) {
  if (gp_metric_kind(GP_M_SC0 + sc) == GP_MK_BYTES)
    return gp_fmt_bytes(b, n, v);
  snprintf(b, n, "%.6g", v);
  return b;
}

/* The change in words: "+1 pageable_copies per step (0 -> 1): ...". */
static void counter_words(struct gp_cmp_counter *x, double blo, double bhi,
                          double clo, double chi) {
  char d[32], b[32], c[32], r1[32], r2[32];
  double delta = x->cand - x->base;
  const char *name = gp_metric_name(GP_M_SC0 + x->sc);
  fmt_count(d, sizeof d, x->sc, fabs(delta));
  fmt_count(b, sizeof b, x->sc, x->base);
  fmt_count(c, sizeof c, x->sc, x->cand);
  if (x->exact && delta != 0)
    snprintf(x->text, sizeof x->text, "%s%s %s per step (%s -> %s): %s",
             delta > 0 ? "+" : "-", d, name, b, c,
             gp_metric_doc(GP_M_SC0 + x->sc));
  else if (!x->exact)
    snprintf(x->text, sizeof x->text,
             "%s varies between runs: base %s..%s, new %s..%s per step", name,
             fmt_count(r1, sizeof r1, x->sc, blo),
             fmt_count(b, sizeof b, x->sc, bhi),
             fmt_count(r2, sizeof r2, x->sc, clo),
             fmt_count(c, sizeof c, x->sc, chi));
}

static void counter(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                    int sc, const struct gp_cmp_opts *o, double *t,
                    struct gp_cmp_counter *x) {
  double blo, bhi, clo, chi;
  x->sc = sc;
  x->gated = o->exact[sc];
  x->base = counter_side(b, sc, t, &blo, &bhi);
  x->cand = counter_side(c, sc, t, &clo, &chi);
  x->exact = blo == bhi && clo == chi;
  counter_words(x, blo, bhi, clo, chi);
  /* more of a counter is worse, but for items */
  int worse = sc == GP_SC_items ? x->cand < x->base : x->cand > x->base;
  if (!x->gated || (x->exact && !worse))
    x->v = GP_PASS;
  else
    x->v = x->exact ? GP_REGRESSION : GP_INCONCLUSIVE;
}

static int judge_counters(const struct gp_cmp_side *b,
                          const struct gp_cmp_side *c,
                          const struct gp_cmp_opts *o,
                          struct gp_cmp_result *res) {
  int steps = b->n && c->n && with_steps(b) == b->n && with_steps(c) == c->n;
  double *t = malloc((b->n > c->n ? b->n : c->n) * sizeof *t + 1);
  if (!t) return -1;
  for (int sc = 0; sc < GP_SC_N; sc++) {
    struct gp_cmp_counter *x = &res->ctr[sc];
    x->sc = -1; /* not compared */
    if (!gp_counter_exact(sc)) continue;
    if (steps) {
      counter(b, c, sc, o, t, x);
    } else if (o->exact[sc]) {
      x->sc = sc;
      x->gated = 1;
      x->v = GP_INCONCLUSIVE;
      snprintf(x->text, sizeof x->text, "%s: not every run has steps",
               gp_metric_name(GP_M_SC0 + sc));
    }
  }
  free(t);
  return 0;
}

/* A run's category k: mean per step, per GPU; whole: over the run, per
 * GPU. */
static double cat_of(const struct gp_cmp_run *r, int k, int whole) {
  if (!whole) return r->cat[k];
  return r->wndev ? r->wcat[k] / (double)r->wndev : 0;
}

static void categories(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                       double *t, struct gp_cmp_result *res, int whole) {
  double sb = 0, sc = 0;
  for (int k = 0; k < GP_CAT_N; k++) {
    for (size_t i = 0; i < b->n; i++)
      t[i] = cat_of(&b->v[i], k, whole);
    res->cat_b[k] = median_of(t, b->n);
    for (size_t i = 0; i < c->n; i++)
      t[i] = cat_of(&c->v[i], k, whole);
    res->cat_c[k] = median_of(t, c->n);
    sb += res->cat_b[k];
    sc += res->cat_c[k];
  }
  for (int k = 0; k < GP_CAT_N; k++) {
    res->share_b[k] = sb > 0 ? 100 * res->cat_b[k] / sb : 0;
    res->share_c[k] = sc > 0 ? 100 * res->cat_c[k] / sc : 0;
  }
  res->have_cats = 1;
}

struct ent {
  const char *name;
  size_t side, run; /* side: 0 base, 1 candidate */
  double v;
};

static int cmp_ent(const void *a, const void *b) {
  const struct ent *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : x->side != y->side ? (x->side > y->side ? 1 : -1) : 0;
}

static int cmp_row(const void *a, const void *b) {
  const struct gp_cmp_row *x = a, *y = b;
  double dx = fabs(x->cand - x->base), dy = fabs(y->cand - y->base);
  return dx != dy ? (dx < dy ? 1 : -1) : strcmp(x->name, y->name);
}

static size_t ents_of(const struct gp_cmp_side *s, size_t side, int api,
                      struct ent *e, int whole) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    const struct gp_cmp_run *r = &s->v[i];
    const struct gp_cmp_name *v = whole ? (api ? r->wapi : r->wkern)
                                        : (api ? r->api : r->kern);
    size_t n = whole ? (api ? r->nwapi : r->nwkern)
                     : (api ? r->napi : r->nkern);
    for (size_t j = 0; j < n; j++)
      if (e)
        e[k++] = (struct ent){v[j].name, side, i, v[j].per_step};
      else
        k++;
  }
  return k;
}

/* One row from the entries of one name: the median per step of each side
 * (0 in the runs without it). */
static void row_of(const struct ent *e, size_t n, double *tb, size_t nb,
                   double *tc, size_t nc, struct gp_cmp_row *row) {
  memset(tb, 0, nb * sizeof *tb);
  memset(tc, 0, nc * sizeof *tc);
  int in_b = 0, in_c = 0;
  for (size_t i = 0; i < n; i++) {
    if (e[i].side)
      tc[e[i].run] += e[i].v, in_c = 1;
    else
      tb[e[i].run] += e[i].v, in_b = 1;
  }
  row->name = e[0].name;
  row->base = median_of(tb, nb);
  row->cand = median_of(tc, nc);
  row->added = !in_b;
  row->gone = !in_c;
}

/* Kernels (api 0) or API calls by their per-step change, largest first. */
static int rows(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                int api, struct gp_cmp_row **out, size_t *nout, int whole) {
  size_t n = ents_of(b, 0, api, NULL, whole) + ents_of(c, 1, api, NULL, whole),
         k = 0;
  struct ent *e = malloc((n ? n : 1) * sizeof *e);
  struct gp_cmp_row *r = malloc((n ? n : 1) * sizeof *r);
  double *tb = malloc((b->n + c->n) * sizeof *tb);
  if (!e || !r || !tb) {
    free(e), free(r), free(tb);
    return -1;
  }
  ents_of(c, 1, api, e + ents_of(b, 0, api, e, whole), whole);
  qsort(e, n, sizeof *e, cmp_ent);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && !strcmp(e[j].name, e[i].name); j++)
      ;
    row_of(e + i, j - i, tb, b->n, tb + b->n, c->n, &r[k++]);
  }
  qsort(r, k, sizeof *r, cmp_row);
  free(e);
  free(tb);
  *out = r;
  *nout = k;
  return 0;
}

/* A finding counts for a side when more than half of its runs have it. */
static const struct gp_cmp_finding *present(const struct gp_cmp_side *s,
                                            const char *rule) {
  const struct gp_cmp_finding *first = NULL;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t j = 0; j < s->v[i].nfind; j++)
      if (!strcmp(s->v[i].find[j].rule, rule)) {
        if (!first) first = &s->v[i].find[j];
        k++;
      }
  return 2 * k > s->n ? first : NULL;
}

/* The findings of `in` (present there, not in `other`), each once. */
static int changed_findings(const struct gp_cmp_side *in,
                            const struct gp_cmp_side *other,
                            const struct gp_cmp_finding ***out, size_t *nout) {
  size_t total = 0, k = 0;
  for (size_t i = 0; i < in->n; i++)
    total += in->v[i].nfind;
  const struct gp_cmp_finding **v = malloc((total ? total : 1) * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < in->n; i++)
    for (size_t j = 0; j < in->v[i].nfind; j++) {
      const struct gp_cmp_finding *f = present(in, in->v[i].find[j].rule);
      int seen = 0;
      for (size_t q = 0; q < k && !seen; q++)
        seen = !strcmp(v[q]->rule, in->v[i].find[j].rule);
      if (f && !seen && !present(other, f->rule)) v[k++] = f;
    }
  *out = v;
  *nout = k;
  return 0;
}

static int explain(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                   struct gp_cmp_result *res) {
  int steps = b->n && c->n && with_steps(b) == b->n && with_steps(c) == c->n;
  /* no run with steps: the whole runs compared (the window gate's) */
  int whole = b->n && c->n && !with_steps(b) && !with_steps(c);
  double *t = malloc((b->n > c->n ? b->n : c->n) * sizeof *t + 1);
  if (!t) return -1;
  if (steps || whole) categories(b, c, t, res, whole);
  free(t);
  res->whole = whole;
  int detail = steps || whole;
  for (size_t i = 0; steps && detail && i < b->n + c->n; i++)
    detail = i < b->n ? b->v[i].detail : c->v[i - b->n].detail;
  if (detail && (rows(b, c, 0, &res->kern, &res->nkern, whole) < 0 ||
                 rows(b, c, 1, &res->api, &res->napi, whole) < 0))
    return -1;
  if (changed_findings(c, b, &res->appeared, &res->nappeared) < 0 ||
      changed_findings(b, c, &res->gone, &res->ngone) < 0)
    return -1;
  return 0;
}

static int same_device(const struct gp_cmp_run *a, const struct gp_cmp_run *b) {
  return !strcmp(a->device ? a->device : "", b->device ? b->device : "") &&
         a->sms == b->sms && a->mem_total == b->mem_total;
}

static const char *device_words(char *buf, size_t n,
                                const struct gp_cmp_run *r) {
  char mem[32];
  snprintf(buf, n, "'%.40s' (%llu SMs, %s)", r->device ? r->device : "unknown",
           (unsigned long long)r->sms,
           gp_fmt_bytes(mem, sizeof mem, (double)r->mem_total));
  return buf;
}

static const struct gp_cmp_run *run_at(const struct gp_cmp_side *b,
                                       const struct gp_cmp_side *c, size_t i) {
  return i < b->n ? &b->v[i] : &c->v[i - b->n];
}

/* A run that recorded no CUDA call (a process killed at once, a file cut
 * before its first events): it names no GPU and no versions, so it takes no
 * part in their comparison (preflight says why it holds nothing). */
static int empty_run(const struct gp_cmp_run *r) {
  return !r->device && r->wend <= r->wstart;
}

/* The first run, from i on, that recorded something; NULL when none. */
static const struct gp_cmp_run *next_full(const struct gp_cmp_side *b,
                                          const struct gp_cmp_side *c,
                                          size_t *i) {
  for (; *i < b->n + c->n; ++*i)
    if (!empty_run(run_at(b, c, *i))) return run_at(b, c, *i);
  return NULL;
}

static void preflight_devices(const struct gp_cmp_side *b,
                              const struct gp_cmp_side *c,
                              const struct gp_cmp_opts *o,
                              struct gp_cmp_result *res) {
  size_t i = 0;
  const struct gp_cmp_run *ref = next_full(b, c, &i), *odd = NULL, *r;
  if (!ref) return;
  for (i++; !odd && (r = next_full(b, c, &i)); i++)
    if (!same_device(ref, r)) odd = r;
  if (!odd) return;
  char d1[96], d2[96];
  res->devices_differ = !o->allow_different_devices;
  note(res, "different GPUs: %s and %s: %s", device_words(d1, sizeof d1, ref),
       device_words(d2, sizeof d2, odd),
       o->allow_different_devices
           ? "compared anyway (--allow-different-devices)"
           : "the comparison is inconclusive "
             "(--allow-different-devices to compare "
             "anyway)");
}

static void preflight_versions(const struct gp_cmp_side *b,
                               const struct gp_cmp_side *c,
                               struct gp_cmp_result *res) {
  size_t i = 0;
  const struct gp_cmp_run *ref = next_full(b, c, &i), *r;
  if (!ref) return;
  for (i++; (r = next_full(b, c, &i)); i++) {
    if (r->driver == ref->driver && r->runtime == ref->runtime) continue;
    note(res,
         "CUDA versions differ: driver %lld, runtime %lld in %.60s; driver "
         "%lld, runtime %lld in %.60s",
         (long long)ref->driver, (long long)ref->runtime, ref->id,
         (long long)r->driver, (long long)r->runtime, r->id);
    return;
  }
}

/* At most 80 bytes of s from byte `from` (moved back to a character's
 * start), "..." before and after where s is cut. */
static void excerpt(char *out, size_t n, const char *s, size_t from) {
  size_t len = strlen(s);
  if (from > len) from = len;
  while (from > 0 && ((unsigned char)s[from] & 0xc0) == 0x80)
    from--;
  size_t take = len - from > 80 ? 80 : len - from;
  while (take > 0 && from + take < len &&
         ((unsigned char)s[from + take] & 0xc0) == 0x80)
    take--; /* end before a character's continuation */
  snprintf(out, n, "%s%.*s%s", from ? "..." : "", (int)take, s + from,
           from + take < len ? "..." : "");
}

/* The command lines where they differ: from 30 bytes before the first
 * difference, so that a difference past 80 bytes shows. */
static void note_cmdlines(struct gp_cmp_result *res, const char *cb,
                          const char *cc) {
  size_t k = 0;
  while (cb[k] && cb[k] == cc[k])
    k++;
  size_t from = k > 30 ? k - 30 : 0;
  char eb[100], ec[100];
  excerpt(eb, sizeof eb, cb, from);
  excerpt(ec, sizeof ec, cc, from);
  note(res, "command lines differ: base '%s', new '%s'", eb, ec);
}

static void preflight(const struct gp_cmp_side *b, const struct gp_cmp_side *c,
                      const struct gp_cmp_opts *o, struct gp_cmp_result *res) {
  preflight_devices(b, c, o, res);
  preflight_versions(b, c, res);
  const char *cb = b->v[0].cmdline ? b->v[0].cmdline : "";
  const char *cc = c->v[0].cmdline ? c->v[0].cmdline : "";
  if (strcmp(cb, cc))
    note_cmdlines(res, cb, cc);
  size_t deg = 0, lost = 0, cut = 0, nodetail = 0, empty = 0;
  const char *first_empty = NULL;
  for (size_t i = 0; i < b->n + c->n; i++) {
    const struct gp_cmp_run *r = run_at(b, c, i);
    if (empty_run(r) && !empty++) first_empty = r->id;
    deg += r->degraded != 0;
    lost += r->lost != 0;
    cut += r->truncated != 0;
    nodetail += r->has_steps && !r->detail;
  }
  if (deg)
    note(res,
         "%zu runs are degraded (no device records): their kernel time is "
         "the host's view",
         deg);
  if (lost) note(res, "%zu runs lost events: their figures are short", lost);
  if (cut)
    note(res, "%zu runs are truncated (process killed or file cut)", cut);
  if (nodetail)
    note(res, "%zu runs have no per-step kernels and API calls", nodetail);
  if (empty)
    note(res,
         "%zu run%s recorded no CUDA call (%.80s%s): nothing of %s to "
         "compare",
         empty, empty > 1 ? "s" : "", first_empty ? first_empty : "?",
         empty > 1 ? ", ..." : "", empty > 1 ? "them" : "it");
  /* the same run on both sides (the same files given twice, or one run id
   * shared by the runs of both) compares a run with itself */
  for (size_t i = 0; i < b->n; i++)
    for (size_t j = 0; j < c->n; j++)
      if (b->v[i].id && c->v[j].id && !strcmp(b->v[i].id, c->v[j].id)) {
        note(res,
             "run %.80s is on both sides: the same files given twice, or "
             "runs that share a run id (GPUPHASE_RUN_ID)",
             b->v[i].id);
        return;
      }
}

/* A budget's value over the candidate's runs: the median, but the worst
 * run for lost events and memory (one run short of data, or out of memory,
 * is what the budget guards against). */
static void budget(const struct gp_cmp_side *c, const struct gp_budget *bu,
                   const char *missing, double *t, struct gp_cmp_budget *x) {
  const char *why = "no runs";
  size_t k = 0;
  x->b = bu;
  /* busy is per step where there are steps: not the window instead */
  if (missing && (step_metric(bu->metric) || bu->metric == GP_M_BUSY ||
                  bu->metric >= GP_M_SC0 || bu->metric == GP_M_STEPS_PER_S ||
                  bu->metric == GP_M_ITEMS_PER_S)) {
    x->v = GP_INCONCLUSIVE;
    snprintf(x->reason, sizeof x->reason, "%s", missing);
    return;
  }
  for (size_t i = 0; i < c->n; i++)
    if (gp_cmp_run_value(&c->v[i], bu->metric, bu->pct, &t[k], &why) == 0) k++;
  if (!k) {
    x->v = GP_INCONCLUSIVE;
    snprintf(x->reason, sizeof x->reason, "%s", why);
    return;
  }
  int worst = bu->metric == GP_M_LOST_EVENTS || bu->metric == GP_M_MEM_PEAK;
  double lo, hi;
  range_of(t, k, &lo, &hi);
  x->known = 1;
  x->value = worst ? hi : median_of(t, k);
  x->v = gp_budget_holds(bu, x->value) ? GP_PASS : GP_REGRESSION;
  char v[40];
  if (bu->pct)
    snprintf(v, sizeof v, "%.1f%%", x->value);
  else
    fmt_val(v, sizeof v, bu->metric, x->value);
  const char *verb = x->v == GP_PASS ? "meets it" : "misses it";
  if (k == 1)
    snprintf(x->reason, sizeof x->reason, "%s %s (one run)", v, verb);
  else
    snprintf(x->reason, sizeof x->reason, "%s %s (%s of %zu runs)", v, verb,
             worst ? "worst" : "median", k);
}

static int budgets(const struct gp_cmp_side *c, const struct gp_cmp_opts *o,
                   struct gp_cmp_result *res) {
  const struct gp_budgets *bs = o->budgets;
  if (!bs || !bs->n) return 0;
  res->bud = calloc(bs->n, sizeof *res->bud);
  double *t = malloc((c->n ? c->n : 1) * sizeof *t);
  if (!res->bud || !t) {
    free(t);
    return -1;
  }
  res->nbud = bs->n;
  char miss[200];
  const char *missing = steps_missing(NULL, c, o, miss, sizeof miss);
  if (missing && !res->has_base) note(res, "%s", missing);
  for (size_t i = 0; i < bs->n; i++) {
    budget(c, &bs->v[i], missing, t, &res->bud[i]);
    res->nbud_failed += res->bud[i].v == GP_REGRESSION;
  }
  free(t);
  return 0;
}

/* Different GPUs: no comparison can pass or fail. */
static void void_gates(struct gp_cmp_result *res) {
  char buf[sizeof res->m->reason];
  for (size_t i = 0; i < res->nm; i++) {
    struct gp_cmp_metric *x = &res->m[i];
    snprintf(buf, sizeof buf, "different GPUs; %.230s", x->reason);
    memcpy(x->reason, buf, sizeof buf);
    x->v = GP_INCONCLUSIVE;
  }
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (res->ctr[sc].sc >= 0 && res->ctr[sc].gated)
      res->ctr[sc].v = GP_INCONCLUSIVE;
}

/* The first gate with verdict v, in words. */
static int first_with(const struct gp_cmp_result *res, enum gp_verdict v,
                      char *out, size_t n) {
  for (size_t i = 0; i < res->nm; i++)
    if (res->m[i].v == v)
      return snprintf(out, n, "%s: %s", gp_metric_name(res->m[i].metric),
                      res->m[i].reason),
             1;
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (res->ctr[sc].sc >= 0 && res->ctr[sc].gated && res->ctr[sc].v == v)
      return snprintf(out, n, "%s", res->ctr[sc].text), 1;
  for (size_t i = 0; i < res->nbud; i++)
    if (res->bud[i].v == v)
      return snprintf(out, n, "budget %s: %s", res->bud[i].b->text,
                      res->bud[i].reason),
             1;
  return 0;
}

static void overall(struct gp_cmp_result *res, const struct gp_cmp_opts *o) {
  if (res->devices_differ) void_gates(res);
  if (first_with(res, GP_REGRESSION, res->reason, sizeof res->reason))
    res->verdict = GP_REGRESSION;
  else if (first_with(res, GP_INCONCLUSIVE, res->reason, sizeof res->reason))
    res->verdict = GP_INCONCLUSIVE;
  else {
    res->verdict = GP_PASS;
    if (res->nm)
      snprintf(res->reason, sizeof res->reason, "%s: %s",
               gp_metric_name(res->m[0].metric), res->m[0].reason);
    else
      snprintf(res->reason, sizeof res->reason, "every budget is met");
  }
  res->exit_code = res->verdict == GP_PASS         ? 0
                   : res->verdict == GP_REGRESSION ? 1
                                                   : o->inconclusive;
}

int gp_cmp_judge(const struct gp_cmp_side *base, const struct gp_cmp_side *cand,
                 const struct gp_cmp_opts *o, struct gp_cmp_result *res) {
  memset(res, 0, sizeof *res);
  for (int sc = 0; sc < GP_SC_N; sc++)
    res->ctr[sc].sc = -1;
  res->has_base = base != NULL;
  if (base && base->n && cand->n) {
    preflight(base, cand, o, res);
    if (judge_metrics(base, cand, o, res) < 0 ||
        judge_counters(base, cand, o, res) < 0 || explain(base, cand, res) < 0)
      return -1;
  }
  if (budgets(cand, o, res) < 0) return -1;
  overall(res, o);
  return 0;
}

void gp_cmp_result_free(struct gp_cmp_result *res) {
  for (size_t i = 0; i < res->nm; i++) {
    free(res->m[i].sb);
    free(res->m[i].sc);
  }
  free(res->m);
  free(res->kern);
  free(res->api);
  free(res->appeared);
  free(res->gone);
  free(res->bud);
  memset(res, 0, sizeof *res);
}
