/* The gate's statistics: see stats.h and docs/compare.md. */
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void gp_rng_seed(struct gp_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t gp_rng_next(struct gp_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Lemire's multiply-and-reject: uniform without the bias of x % n. */
uint64_t gp_rng_below(struct gp_rng *r, uint64_t n) {
  unsigned __int128 m = (unsigned __int128)gp_rng_next(r) * n;
  uint64_t low = (uint64_t)m;
  if (low < n) {
    uint64_t floor = -n % n;
    while (low < floor) {
      m = (unsigned __int128)gp_rng_next(r) * n;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void swap(double *a, ptrdiff_t i, ptrdiff_t j) {
  double t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* Moves the k-th smallest of a[0..n) to a[k], smaller ones before it and
 * larger ones after. Hoare selection with a median-of-three pivot; after
 * 2 log2(n) + 8 rounds (a hostile order) it sorts what is left, so the
 * worst case stays O(n log n). */
static double select_k(double *a, size_t n, size_t k) {
  ptrdiff_t l = 0, r = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
  int budget = 8;
  for (size_t m = n; m > 1; m >>= 1)
    budget += 2;
  while (l < r) {
    if (budget-- <= 0) {
      qsort(a + l, (size_t)(r - l + 1), sizeof *a, cmp_dbl);
      break;
    }
    ptrdiff_t mid = l + (r - l) / 2, i = l, j = r;
    if (a[mid] < a[l]) swap(a, mid, l);
    if (a[r] < a[l]) swap(a, r, l);
    if (a[r] < a[mid]) swap(a, r, mid);
    double x = a[mid];
    while (i <= j) {
      while (a[i] < x)
        i++;
      while (x < a[j])
        j--;
      if (i <= j) swap(a, i++, j--);
    }
    /* now a[l..j] <= x <= a[i..r], and a[j+1..i-1] == x */
    if (kk <= j)
      r = j;
    else if (kk >= i)
      l = i;
    else
      break;
  }
  return a[k];
}

static double min_of(const double *a, size_t n) {
  double m = a[0];
  for (size_t i = 1; i < n; i++)
    if (a[i] < m) m = a[i];
  return m;
}

double gp_stat_of(enum gp_stat st, double *v, size_t n) {
  double s = 0;
  switch (st) {
  case GP_STAT_MEAN:
    for (size_t i = 0; i < n; i++)
      s += v[i];
    return s / (double)n;
  case GP_STAT_MAX:
    s = v[0];
    for (size_t i = 1; i < n; i++)
      if (v[i] > s) s = v[i];
    return s;
  case GP_STAT_P95:
  case GP_STAT_P99: {
    double p = st == GP_STAT_P95 ? 0.95 : 0.99;
    size_t rank = (size_t)ceil(p * (double)n);
    return select_k(v, n, rank ? rank - 1 : 0);
  }
  case GP_STAT_MEDIAN:
  default:
    if (n & 1) return select_k(v, n, n / 2);
    s = select_k(v, n, n / 2 - 1);
    return (s + min_of(v + n / 2, n / 2)) / 2;
  }
}

double gp_quantile_sorted(const double *v, size_t n, double q) {
  if (n == 1 || q <= 0) return v[0];
  if (q >= 1) return v[n - 1];
  double h = (double)(n - 1) * q;
  size_t i = (size_t)h;
  if (i + 1 >= n) return v[n - 1];
  double lo = v[i], hi = v[i + 1];
  if (isinf(lo) || isinf(hi)) return h - (double)i < 0.5 ? lo : hi;
  return lo + (h - (double)i) * (hi - lo);
}

size_t gp_block_len(size_t n) {
  /* in integers: cbrt() of a cube may round up past it */
  size_t b = (size_t)cbrt((double)n);
  while (b * b * b < n)
    b++;
  while (b > 1 && (b - 1) * (b - 1) * (b - 1) >= n)
    b--;
  return b ? b : 1;
}

/* A side of a bootstrap. Each resample is drawn as counts per rank
 * (rk[i]: the rank of v[i] in sorted order sv), so that an order statistic
 * of it is a scan of the counts rather than a selection among n copied
 * values. */
struct side {
  const double *v;
  size_t n;
  double *sv;
  uint32_t *rk, *cnt;
};

static int cmp_rank(const void *a, const void *b, void *ctx) {
  const double *v = ctx;
  double x = v[*(const uint32_t *)a], y = v[*(const uint32_t *)b];
  return x < y ? -1 : x > y;
}

static int side_init(struct side *s, const double *v, size_t n) {
  s->v = v;
  s->n = n;
  s->sv = malloc(n * sizeof *s->sv);
  s->rk = malloc(n * sizeof *s->rk);
  s->cnt = malloc(n * sizeof *s->cnt);
  if (!s->sv || !s->rk || !s->cnt || n > UINT32_MAX) return -1;
  for (size_t i = 0; i < n; i++)
    s->cnt[i] = (uint32_t)i;
  qsort_r(s->cnt, n, sizeof *s->cnt, cmp_rank, (void *)v);
  for (size_t i = 0; i < n; i++) {
    s->sv[i] = v[s->cnt[i]];
    s->rk[s->cnt[i]] = (uint32_t)i;
  }
  return 0;
}

static void side_free(struct side *s) {
  free(s->sv);
  free(s->rk);
  free(s->cnt);
}

/* The k-th smallest (from 0) value of the resample counted in cnt. The
 * counts go by 16 first, a sum the compiler keeps in vector registers,
 * until the chunk that holds the k-th; then one by one. */
static double kth(const struct side *s, size_t k) {
  size_t cum = 0, i = 0, n = s->n;
  for (; i + 16 <= n; i += 16) {
    uint32_t part = 0; /* counts add up to n, below 2^32 */
    for (size_t j = 0; j < 16; j++)
      part += s->cnt[i + j];
    if (cum + part > k) break;
    cum += part;
  }
  for (; i < n; i++)
    if ((cum += s->cnt[i]) > k) return s->sv[i];
  return s->sv[n - 1];
}

static double counted_stat(const struct side *s, enum gp_stat st) {
  size_t n = s->n;
  switch (st) {
  case GP_STAT_MAX:
    return kth(s, n - 1);
  case GP_STAT_P95:
  case GP_STAT_P99: {
    size_t rank = (size_t)ceil((st == GP_STAT_P95 ? 0.95 : 0.99) * (double)n);
    return kth(s, rank ? rank - 1 : 0);
  }
  default:
    return n & 1 ? kth(s, n / 2) : (kth(s, n / 2 - 1) + kth(s, n / 2)) / 2;
  }
}

/* One resample of the side (values independently, or circular blocks)
 * and its statistic. */
static double resample(const struct side *s, const struct gp_boot *o,
                       struct gp_rng *g) {
  size_t n = s->n, b = o->blocks && n > 1 ? gp_block_len(n) : 1, k = 0;
  double sum = 0;
  int mean = o->stat == GP_STAT_MEAN;
  if (!mean) memset(s->cnt, 0, n * sizeof *s->cnt);
  while (k < n) {
    size_t at = (size_t)gp_rng_below(g, n);
    /* the block [at, at + len), from its start to n, then on from 0
     * (len <= n: it wraps once at most), in the order drawn */
    size_t len = b < n - k ? b : n - k, first = len < n - at ? len : n - at;
    k += len;
    if (mean) {
      for (size_t i = at; i < at + first; i++)
        sum += s->v[i];
      for (size_t i = 0; i < len - first; i++)
        sum += s->v[i];
    } else {
      const uint32_t *rk = s->rk;
      uint32_t *cnt = s->cnt;
#pragma GCC unroll 4
      for (size_t i = at; i < at + first; i++)
        cnt[rk[i]]++;
      for (size_t i = 0; i < len - first; i++)
        cnt[rk[i]]++;
    }
  }
  return mean ? sum / (double)n : counted_stat(s, o->stat);
}

static double ratio_of(double base, double cand) {
  if (base > 0) return cand / base;
  return cand > 0 ? INFINITY : 1;
}

static double stat_copy(enum gp_stat st, const double *v, size_t n,
                        double *tmp) {
  memcpy(tmp, v, n * sizeof *tmp);
  return gp_stat_of(st, tmp, n);
}

static void interval(double *rat, size_t reps, double level,
                     struct gp_interval *out) {
  qsort(rat, reps, sizeof *rat, cmp_dbl);
  out->lo = gp_quantile_sorted(rat, reps, (1 - level) / 2);
  out->hi = gp_quantile_sorted(rat, reps, 1 - (1 - level) / 2);
  out->resamples = reps;
}

int gp_boot_ratio(const double *base, size_t nb, const double *cand, size_t nc,
                  const struct gp_boot *o, struct gp_interval *out) {
  if (!nb || !nc) return -1;
  size_t reps = o->resamples ? o->resamples : 10000;
  double level = o->level > 0 && o->level < 1 ? o->level : 0.95;
  struct side sb = {0}, sc = {0};
  double *rat = malloc(reps * sizeof *rat);
  double *tmp = malloc((nb > nc ? nb : nc) * sizeof *tmp);
  int rc = -1;
  if (rat && tmp && side_init(&sb, base, nb) == 0 &&
      side_init(&sc, cand, nc) == 0) {
    double b = stat_copy(o->stat, base, nb, tmp);
    out->ratio = ratio_of(b, stat_copy(o->stat, cand, nc, tmp));
    struct gp_rng g;
    gp_rng_seed(&g, o->seed);
    for (size_t i = 0; i < reps; i++) {
      double x = resample(&sb, o, &g);
      rat[i] = ratio_of(x, resample(&sc, o, &g));
    }
    interval(rat, reps, level, out);
    rc = 0;
  }
  side_free(&sb);
  side_free(&sc);
  free(rat);
  free(tmp);
  return rc;
}

static enum gp_verdict said(enum gp_why *why, enum gp_why w,
                            enum gp_verdict v) {
  *why = w;
  return v;
}

enum gp_verdict gp_judge(const struct gp_rule *r, const struct gp_slow *s,
                         enum gp_why *why) {
  int absolute = r->min_delta > 0;
  int rel = s->est >= r->threshold && s->lo > r->noise;
  if (rel && (!absolute || s->d_est >= r->min_delta)) {
    if (r->advisory && !(s->lo >= r->large))
      return said(why, GP_WHY_ADVISORY, GP_INCONCLUSIVE);
    return said(why, GP_WHY_REGRESSION, GP_REGRESSION);
  }
  /* a pass from an interval that ignores between-run variance would be
   * a guess: advisory intervals pass nothing */
  if (absolute && s->d_hi < r->min_delta)
    return said(why, r->advisory ? GP_WHY_ADVISORY : GP_WHY_TINY,
                r->advisory ? GP_INCONCLUSIVE : GP_PASS);
  if (s->hi < r->threshold)
    return said(why, r->advisory ? GP_WHY_ADVISORY : GP_WHY_UNDER,
                r->advisory ? GP_INCONCLUSIVE : GP_PASS);
  if (rel) return said(why, GP_WHY_UNDER_DELTA, GP_INCONCLUSIVE);
  if (s->lo > r->noise) return said(why, GP_WHY_SMALL, GP_INCONCLUSIVE);
  /* a noise floor set over the threshold: the whole interval between */
  if (s->lo >= r->threshold) return said(why, GP_WHY_FLOOR, GP_INCONCLUSIVE);
  return said(why, GP_WHY_VARIANCE, GP_INCONCLUSIVE);
}

const char *gp_verdict_key(enum gp_verdict v) {
  return v == GP_PASS         ? "pass"
         : v == GP_REGRESSION ? "regression"
                              : "inconclusive";
}

const char *gp_fmt_change(char *b, size_t n, double x) {
  if (isinf(x))
    snprintf(b, n, "%sinf%%", x > 0 ? "+" : "-");
  else
    snprintf(b, n, "%+.1f%%", 100 * x);
  return b;
}
