/* Statistics of the CI gate (docs/compare.md, "The statistics"): a seeded
 * generator, order statistics, bootstrap intervals of a ratio, and the
 * verdict rule. Nothing here knows about traces: the tests feed it known
 * samples. */
#ifndef GP_STATS_H
#define GP_STATS_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: the same seed gives the same
 * intervals on every machine, so a verdict can be reproduced. */
struct gp_rng {
  uint64_t s[4];
};

void gp_rng_seed(struct gp_rng *r, uint64_t seed);
uint64_t gp_rng_next(struct gp_rng *r);
/* Uniform in [0, n), n >= 1, without modulo bias. */
uint64_t gp_rng_below(struct gp_rng *r, uint64_t n);

/* The statistic a sample is summarised by. */
enum gp_stat {
  GP_STAT_MEDIAN,
  GP_STAT_MEAN,
  GP_STAT_P95,
  GP_STAT_P99,
  GP_STAT_MAX
};

/* The statistic of v[0..n) (n >= 1); v is reordered. Median of an even
 * count: the mean of the two middle values; pNN: nearest rank. */
double gp_stat_of(enum gp_stat st, double *v, size_t n);
/* The q-quantile (0..1) of sorted v[0..n), linear between order
 * statistics (R's type 7): what the percentile interval reads. */
double gp_quantile_sorted(const double *v, size_t n, double q);

/* The moving block length used for n consecutive steps: ceil(n^(1/3)), the
 * rate that balances bias and variance for a median (Hall, Horowitz & Jing
 * 1995). */
size_t gp_block_len(size_t n);

struct gp_boot {
  size_t resamples; /* 0: 10000 */
  uint64_t seed;
  double level; /* 0: 0.95 */
  enum gp_stat stat;
  int blocks; /* 0: resample values independently (one value per run);
                1: circular blocks of gp_block_len(n) consecutive steps,
                which keeps the correlation of neighbouring steps */
};

/* ratio = stat(cand) / stat(base); lo and hi bound its `level` percentile
 * interval. When stat(base) is 0 the ratio is 1 if stat(cand) is 0 too,
 * else +inf (the absolute delta decides then). */
struct gp_interval {
  double ratio, lo, hi;
  size_t resamples;
};

/* Bootstraps the ratio of the statistic of cand to that of base, each side
 * resampled on its own. Returns 0, or -1 when a side is empty or memory
 * runs out. */
int gp_boot_ratio(const double *base, size_t nb, const double *cand, size_t nc,
                  const struct gp_boot *o, struct gp_interval *out);

/* The verdict rule. Slowdowns are relative (ratio - 1, oriented so that
 * positive is worse); deltas are absolute, in the metric's unit, same
 * orientation. */
struct gp_rule {
  double noise;     /* the lower bound must clear this (0.02) */
  double threshold; /* the estimate must reach this (0.05) */
  double min_delta; /* and the absolute delta this (0: no absolute rule) */
  int advisory;     /* the interval ignores between-run variance */
  double large;     /* advisory: a regression needs lo >= large */
};

enum gp_verdict { GP_PASS, GP_REGRESSION, GP_INCONCLUSIVE };

/* Why a verdict was reached: compare.c words it. */
enum gp_why {
  GP_WHY_REGRESSION,  /* lo > noise, est >= threshold, delta >= min */
  GP_WHY_UNDER,       /* hi < threshold */
  GP_WHY_TINY,        /* the delta's upper bound < min_delta */
  GP_WHY_VARIANCE,    /* the interval spans the noise floor and threshold */
  GP_WHY_SMALL,       /* above the noise, estimate under the threshold */
  GP_WHY_UNDER_DELTA, /* relative rule met, delta under min_delta */
  GP_WHY_ADVISORY,    /* advisory interval, change not large */
  GP_WHY_FLOOR,       /* lo >= threshold, but not above a higher noise floor */
};

struct gp_slow {
  double est, lo, hi; /* relative slowdown */
  double d_est, d_hi; /* absolute delta, in the metric's unit */
};

enum gp_verdict gp_judge(const struct gp_rule *r, const struct gp_slow *s,
                         enum gp_why *why);
const char *gp_verdict_key(enum gp_verdict v); /* "pass", ... */

/* A relative change as text: "+12.3%", "-0.4%", "+inf%". Returns b. */
const char *gp_fmt_change(char *b, size_t n, double x);

#endif
