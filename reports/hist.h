/* Duration histogram with bounded memory: the first GP_HIST_EXACT samples are
 * kept as they are (so small populations get exact percentiles), after which
 * samples go into log-linear buckets: 16 per power of two, so a reported
 * percentile is within 1/32 (3.1%) of a true sample value. Memory is at most
 * 61 octaves x 16 counters, allocated per octave on first use. */
#ifndef GP_HIST_H
#define GP_HIST_H

#include <stdint.h>

#define GP_HIST_EXACT 32
#define GP_HIST_OCTAVES 61

struct gp_hist {
  uint64_t n, sum, min, max;
  uint64_t exact[GP_HIST_EXACT]; /* the samples while !bucketed */
  int bucketed;
  uint64_t *oct[GP_HIST_OCTAVES];
  int oom; /* an octave could not be allocated: counts are short */
};

void gp_hist_init(struct gp_hist *h);
void gp_hist_free(struct gp_hist *h);
void gp_hist_add_slow(struct gp_hist *h, uint64_t v);
/* Adds one sample. Inline for the common case (bucketed, its octave
 * already there); the rest in gp_hist_add_slow. */
static inline void gp_hist_add(struct gp_hist *h, uint64_t v) {
  if (h->bucketed && h->n && v >= 16) {
    int msb = 63 - __builtin_clzll(v);
    uint64_t *o = h->oct[msb - 3];
    if (o) {
      o[(v >> (msb - 4)) & 15]++;
      if (v < h->min) h->min = v;
      if (v > h->max) h->max = v;
      h->n++;
      h->sum += v;
      return;
    }
  }
  gp_hist_add_slow(h, v);
}
/* Adds every sample of src to dst. */
void gp_hist_merge(struct gp_hist *dst, const struct gp_hist *src);
/* Nearest-rank percentile (p in 0..100): the ceil(p/100 * n)-th smallest
 * sample, exact while n <= GP_HIST_EXACT, else the middle of its bucket
 * clamped to [min, max]. 0 when empty. */
uint64_t gp_hist_pct(const struct gp_hist *h, double p);

#endif
