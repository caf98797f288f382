/* The gate's statistics (reports/stats.c) on samples whose answers are
 * known: order statistics, the seeded generator, bootstrap intervals
 * (worked out by hand for three runs a side, and their coverage over many
 * simulated comparisons), and every branch of the verdict rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "check.h"


#define NEAR(a, b, e)                                                          \
  do {                                                                         \
    double a_ = (a), b_ = (b);                                                 \
    if (!(fabs(a_ - b_) <= (e))) {                                             \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: FAIL %s = %.9g, expected %.9g\n", __FILE__,      \
              __LINE__, #a, a_, b_);                                           \
    }                                                                          \
  } while (0)

static double stat(enum gp_stat st, const double *v, size_t n) {
  double t[64];
  memcpy(t, v, n * sizeof *t);
  return gp_stat_of(st, t, n);
}

static void test_order_statistics(void) {
  const double odd[] = {5, 1, 4, 2, 3}, even[] = {4, 1, 3, 2};
  NEAR(stat(GP_STAT_MEDIAN, odd, 5), 3, 0);
  NEAR(stat(GP_STAT_MEDIAN, even, 4), 2.5, 0);
  NEAR(stat(GP_STAT_MEAN, even, 4), 2.5, 0);
  NEAR(stat(GP_STAT_MAX, odd, 5), 5, 0);
  NEAR(stat(GP_STAT_MEDIAN, odd, 1), 5, 0);
  /* nearest rank: ceil(0.95 x 20) = 19th smallest */
  double twenty[20];
  for (int i = 0; i < 20; i++)
    twenty[i] = 20 - i;
  NEAR(stat(GP_STAT_P95, twenty, 20), 19, 0);
  NEAR(stat(GP_STAT_P99, twenty, 20), 20, 0);
  const double same[] = {7, 7, 7, 7, 7, 7};
  NEAR(stat(GP_STAT_MEDIAN, same, 6), 7, 0);
  /* large inputs in hostile orders: sorted, reversed, organ pipe, few
   * distinct values; the median must be exact and the call quick */
  size_t n = 200001;
  double *v = malloc(n * sizeof *v);
  for (int shape = 0; shape < 4; shape++) {
    for (size_t i = 0; i < n; i++)
      v[i] = shape == 0   ? (double)i
             : shape == 1 ? (double)(n - i)
             : shape == 2 ? (double)(i < n / 2 ? i : n - i)
                          : (double)(i % 3);
    double m = gp_stat_of(GP_STAT_MEDIAN, v, n);
    double want = shape == 0   ? 100000
                  : shape == 1 ? 100001
                  : shape == 2 ? 50000
                               : 1;
    NEAR(m, want, 0);
  }
  free(v);
  const double q[] = {1, 2, 3, 4, 5};
  NEAR(gp_quantile_sorted(q, 5, 0.5), 3, 0);
  NEAR(gp_quantile_sorted(q, 5, 0.1), 1.4, 1e-12);
  NEAR(gp_quantile_sorted(q, 5, 1), 5, 0);
  NEAR(gp_quantile_sorted(q, 5, 0), 1, 0);
  CHECK(gp_block_len(1) == 1 && gp_block_len(8) == 2 && gp_block_len(27) == 3);
  CHECK(gp_block_len(28) == 4 && gp_block_len(1000) == 10);
}

static void test_rng(void) {
  struct gp_rng a, b;
  gp_rng_seed(&a, 42);
  gp_rng_seed(&b, 42);
  for (int i = 0; i < 100; i++)
    CHECK(gp_rng_next(&a) == gp_rng_next(&b));
  gp_rng_seed(&b, 43);
  CHECK(gp_rng_next(&a) != gp_rng_next(&b));
  /* below(n): in range and near uniform (6 cells, 60000 draws: each
   * within 3% of 10000, about 10 standard deviations) */
  unsigned cnt[6] = {0};
  for (int i = 0; i < 60000; i++) {
    uint64_t x = gp_rng_below(&a, 6);
    CHECK(x < 6);
    cnt[x < 6 ? x : 0]++;
  }
  for (int i = 0; i < 6; i++)
    CHECK(cnt[i] > 9700 && cnt[i] < 10300);
  CHECK(gp_rng_below(&a, 1) == 0);
}

/* Three runs a side: a resampled median is a side's smallest value with
 * probability 7/27 (two or three of three draws), so 6.7% of the ratios
 * are min(cand)/max(base) and the 2.5% quantile is exactly that; the same
 * for the top. */
static void test_boot_three_runs(void) {
  const double base[] = {100, 101, 102}, cand[] = {110, 111, 112};
  struct gp_boot o = {10000, 7, 0.95, GP_STAT_MEDIAN, 0};
  struct gp_interval iv;
  CHECK(gp_boot_ratio(base, 3, cand, 3, &o, &iv) == 0);
  NEAR(iv.ratio, 111.0 / 101, 1e-12);
  NEAR(iv.lo, 110.0 / 102, 1e-12);
  NEAR(iv.hi, 112.0 / 100, 1e-12);
  CHECK(iv.resamples == 10000);
  struct gp_interval again;
  gp_boot_ratio(base, 3, cand, 3, &o, &again);
  CHECK(!memcmp(&iv, &again, sizeof iv)); /* seeded: reproducible */
  const double same[] = {5, 5, 5};
  gp_boot_ratio(same, 3, same, 3, &o, &iv);
  NEAR(iv.ratio, 1, 0);
  NEAR(iv.lo, 1, 0);
  NEAR(iv.hi, 1, 0);
  const double zero[] = {0, 0, 0};
  gp_boot_ratio(zero, 3, zero, 3, &o, &iv);
  NEAR(iv.ratio, 1, 0);
  gp_boot_ratio(zero, 3, same, 3, &o, &iv);
  CHECK(isinf(iv.ratio) && isinf(iv.lo));
  CHECK(gp_boot_ratio(base, 0, cand, 3, &o, &iv) < 0);
}

/* A normal deviate from the generator (Box-Muller). */
static double normal(struct gp_rng *g) {
  double u = ((double)(gp_rng_next(g) >> 11) + 1) / 9007199254740993.0;
  double v = (double)(gp_rng_next(g) >> 11) / 9007199254740992.0;
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Steps with a known ratio: the block bootstrap's interval is tight
 * around it with many steps, and, over 200 simulated comparisons of
 * equal sides, covers the true ratio (1) about 95% of the time. */
static void test_boot_steps(void) {
  struct gp_rng g;
  gp_rng_seed(&g, 1);
  enum { N = 1000 };
  static double base[N], cand[N];
  for (int i = 0; i < N; i++) {
    base[i] = 100 + normal(&g);
    cand[i] = 1.1 * (100 + normal(&g));
  }
  struct gp_boot o = {2000, 3, 0.95, GP_STAT_MEDIAN, 1};
  struct gp_interval iv;
  CHECK(gp_boot_ratio(base, N, cand, N, &o, &iv) == 0);
  CHECK(iv.lo > 1.095 && iv.hi < 1.105 && iv.lo <= iv.ratio &&
        iv.ratio <= iv.hi);
  int covered = 0;
  for (int t = 0; t < 200; t++) {
    for (int i = 0; i < 40; i++) {
      base[i] = 100 + 3 * normal(&g);
      cand[i] = 100 + 3 * normal(&g);
    }
    o.seed = (uint64_t)t;
    o.resamples = 1000;
    gp_boot_ratio(base, 40, cand, 40, &o, &iv);
    covered += iv.lo <= 1 && 1 <= iv.hi;
  }
  printf(
      "block bootstrap: 95%% intervals covered the true ratio in %d of 200\n",
      covered);
  CHECK(covered >= 176); /* 88%: medians of 40 undercover a little */
  /* one value per run, five runs a side: the interval of the ratio of
   * medians of equal populations covers 1 most of the time too */
  covered = 0;
  o.blocks = 0;
  for (int t = 0; t < 200; t++) {
    for (int i = 0; i < 5; i++) {
      base[i] = 100 + 3 * normal(&g);
      cand[i] = 100 + 3 * normal(&g);
    }
    o.seed = (uint64_t)t;
    gp_boot_ratio(base, 5, cand, 5, &o, &iv);
    covered += iv.lo <= 1 && 1 <= iv.hi;
  }
  printf("runs bootstrap (5 a side): covered in %d of 200\n", covered);
  CHECK(covered >= 176);
}

static enum gp_verdict judge(const struct gp_rule *r, double est, double lo,
                             double hi, double d_est, double d_hi,
                             enum gp_why *why) {
  struct gp_slow s = {est, lo, hi, d_est, d_hi};
  return gp_judge(r, &s, why);
}

static void test_verdicts(void) {
  struct gp_rule r = {0.02, 0.05, 0, 0, 0.10};
  enum gp_why w;
  CHECK(judge(&r, .10, .08, .12, 0, 0, &w) == GP_REGRESSION &&
        w == GP_WHY_REGRESSION);
  CHECK(judge(&r, .05, .021, .08, 0, 0, &w) ==
        GP_REGRESSION); /* at the threshold */
  CHECK(judge(&r, .01, -.01, .03, 0, 0, &w) == GP_PASS && w == GP_WHY_UNDER);
  CHECK(judge(&r, .03, .025, .045, 0, 0, &w) == GP_PASS); /* real, but small */
  CHECK(judge(&r, -.2, -.25, -.15, 0, 0, &w) == GP_PASS); /* faster */
  CHECK(judge(&r, .06, .01, .11, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_VARIANCE);
  CHECK(judge(&r, .10, .02, .20, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_VARIANCE);
  CHECK(judge(&r, .04, .03, .06, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_SMALL);
  CHECK(judge(&r, .01, -.01, .05, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_VARIANCE);
  /* a noise floor (10%) over the threshold (5%): +6% exactly is between
   * them, no variance; an interval reaching under the threshold is */
  struct gp_rule hf = {0.10, 0.05, 0, 0, 0.10};
  CHECK(judge(&hf, .06, .06, .06, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_FLOOR);
  CHECK(judge(&hf, .06, .03, .08, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_VARIANCE);
  /* relative and absolute: 1 ms at least */
  r.min_delta = 1e6;
  CHECK(judge(&r, .10, .08, .12, 2e6, 2.4e6, &w) == GP_REGRESSION);
  CHECK(judge(&r, .10, .08, .12, 5e5, 6e5, &w) == GP_PASS && w == GP_WHY_TINY);
  CHECK(judge(&r, .10, .08, .12, 5e5, 1.5e6, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_UNDER_DELTA);
  /* advisory (steps of one run a side): only a large change fails, and
   * nothing passes */
  r.min_delta = 0;
  r.advisory = 1;
  CHECK(judge(&r, .12, .08, .15, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_ADVISORY);
  CHECK(judge(&r, .15, .12, .18, 0, 0, &w) == GP_REGRESSION);
  CHECK(judge(&r, .0, -.01, .01, 0, 0, &w) == GP_INCONCLUSIVE &&
        w == GP_WHY_ADVISORY);
  CHECK(!strcmp(gp_verdict_key(GP_PASS), "pass") &&
        !strcmp(gp_verdict_key(GP_REGRESSION), "regression") &&
        !strcmp(gp_verdict_key(GP_INCONCLUSIVE), "inconclusive"));
}

/* gp_boot_ratio against the bootstrap written out from its definition:
 * per resample, n values drawn (one at a time, or circular blocks of
 * gp_block_len(n) from a start drawn with the same generator), the
 * statistic of the values drawn, the ratio of the two sides; the
 * interval from the sorted ratios. Every statistic, both ways of
 * drawing, sample sizes around the block lengths, and values with ties
 * and zeros: the same numbers exactly. */
static double ref_side(const double *v, size_t n, int blocks,
                       enum gp_stat st, struct gp_rng *g, double *tmp) {
  size_t b = blocks && n > 1 ? gp_block_len(n) : 1, k = 0;
  while (k < n) {
    size_t at = (size_t)gp_rng_below(g, n);
    for (size_t j = 0; j < b && k < n; j++) {
      tmp[k++] = v[at];
      at = at + 1 == n ? 0 : at + 1;
    }
  }
  return gp_stat_of(st, tmp, n);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void test_boot_reference(void) {
  static const size_t sizes[] = {1, 2, 3, 5, 8, 16, 17, 27, 28, 63, 100, 257};
  static const enum gp_stat stats[] = {GP_STAT_MEDIAN, GP_STAT_MEAN,
                                       GP_STAT_P95, GP_STAT_P99, GP_STAT_MAX};
  enum { REPS = 300 };
  double base[257], cand[257], tmp[257], rat[REPS];
  uint64_t seed = 99, mismatches = 0, cases = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t n = sizes[si], m = n > 3 ? n - 2 : n;
    for (size_t t = 0; t < sizeof stats / sizeof stats[0]; t++)
      for (int blocks = 0; blocks <= 1; blocks++) {
        struct gp_rng v;
        gp_rng_seed(&v, seed++);
        for (size_t i = 0; i < n; i++) {
          base[i] = (double)gp_rng_below(&v, 40); /* ties and zeros */
          cand[i] = 0.5 + (double)gp_rng_below(&v, 1000) / 7;
        }
        struct gp_boot o = {.resamples = REPS, .seed = seed * 7 + 1,
                            .stat = stats[t], .blocks = blocks};
        struct gp_interval iv;
        CHECK(gp_boot_ratio(base, n, cand, m, &o, &iv) == 0);
        struct gp_rng g;
        gp_rng_seed(&g, o.seed);
        for (size_t r = 0; r < REPS; r++) {
          double x = ref_side(base, n, blocks, stats[t], &g, tmp);
          double y = ref_side(cand, m, blocks, stats[t], &g, tmp);
          rat[r] = x > 0 ? y / x : y > 0 ? INFINITY : 1;
        }
        qsort(rat, REPS, sizeof *rat, cmp_double);
        const double level = 0.95; /* the default, as gp_boot_ratio uses it */
        double lo = gp_quantile_sorted(rat, REPS, (1 - level) / 2);
        double hi = gp_quantile_sorted(rat, REPS, 1 - (1 - level) / 2);
        cases++;
        if (!(iv.lo == lo && iv.hi == hi)) {
          mismatches++;
          fprintf(stderr, "n %zu stat %d blocks %d: [%.17g, %.17g] against "
                  "[%.17g, %.17g]\n", n, (int)stats[t], blocks, iv.lo, iv.hi,
                  lo, hi);
        }
      }
  }
  CHECK(mismatches == 0);
  CHECK(cases == 12 * 5 * 2);
}

int main(void) {
  test_order_statistics();
  test_rng();
  test_boot_three_runs();
  test_boot_steps();
  test_boot_reference();
  test_verdicts();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
