#include "hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gp_hist_init(struct gp_hist *h) {
  memset(h, 0, sizeof *h);
}

void gp_hist_free(struct gp_hist *h) {
  if (!h) return;
  for (int i = 0; i < GP_HIST_OCTAVES; i++)
    free(h->oct[i]);
  gp_hist_init(h);
}

/* Octave 0 holds 0..15 exactly; octave k >= 1 holds [2^(k+3), 2^(k+4)) in
 * 16 equal buckets. */
static void bucket_of(uint64_t v, int *oct, int *sub) {
  if (v < 16) {
    *oct = 0;
    *sub = (int)v;
    return;
  }
  int msb = 63 - __builtin_clzll(v);
  *oct = msb - 3;
  *sub = (int)((v >> (msb - 4)) & 15);
}

static uint64_t bucket_mid(int oct, int sub) {
  if (oct == 0) return (uint64_t)sub;
  int shift = oct - 1;
  uint64_t lo = (uint64_t)(16 + sub) << shift;
  return lo + (((uint64_t)1 << shift) >> 1);
}

static void bucket_add(struct gp_hist *h, uint64_t v, uint64_t count) {
  int oct, sub;
  bucket_of(v, &oct, &sub);
  if (!h->oct[oct]) {
    h->oct[oct] = calloc(16, sizeof(uint64_t));
    if (!h->oct[oct]) {
      h->oom = 1;
      return;
    }
  }
  h->oct[oct][sub] += count;
}

/* Moves the kept samples into buckets: from here on only counts grow. */
static void to_buckets(struct gp_hist *h) {
  if (h->bucketed) return;
  h->bucketed = 1;
  for (uint64_t i = 0; i < h->n; i++)
    bucket_add(h, h->exact[i], 1);
}

static void note_range(struct gp_hist *h, uint64_t lo, uint64_t hi) {
  if (!h->n || lo < h->min) h->min = lo;
  if (!h->n || hi > h->max) h->max = hi;
}

void gp_hist_add_slow(struct gp_hist *h, uint64_t v) {
  if (!h->bucketed && h->n == GP_HIST_EXACT) to_buckets(h);
  if (h->bucketed)
    bucket_add(h, v, 1);
  else
    h->exact[h->n] = v;
  note_range(h, v, v);
  h->n++;
  h->sum += v;
}

void gp_hist_merge(struct gp_hist *dst, const struct gp_hist *src) {
  if (!src->bucketed) {
    for (uint64_t i = 0; i < src->n; i++)
      gp_hist_add(dst, src->exact[i]);
    return;
  }
  to_buckets(dst);
  for (int o = 0; o < GP_HIST_OCTAVES; o++)
    for (int s = 0; src->oct[o] && s < 16; s++)
      if (src->oct[o][s]) bucket_add(dst, bucket_mid(o, s), src->oct[o][s]);
  note_range(dst, src->min, src->max);
  dst->n += src->n;
  dst->sum += src->sum;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

uint64_t gp_hist_pct(const struct gp_hist *h, double p) {
  if (!h->n) return 0;
  uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->n);
  if (rank < 1) rank = 1;
  if (rank > h->n) rank = h->n;
  if (!h->bucketed) {
    uint64_t tmp[GP_HIST_EXACT];
    memcpy(tmp, h->exact, h->n * sizeof *tmp);
    qsort(tmp, h->n, sizeof *tmp, cmp_u64);
    return tmp[rank - 1];
  }
  uint64_t seen = 0;
  for (int o = 0; o < GP_HIST_OCTAVES; o++) {
    for (int s = 0; h->oct[o] && s < 16; s++) {
      seen += h->oct[o][s];
      if (seen >= rank) {
        uint64_t v = bucket_mid(o, s);
        return v < h->min ? h->min : v > h->max ? h->max : v;
      }
    }
  }
  return h->max;
}
