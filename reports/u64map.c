#include "u64map.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t key, size_t cap) {
  /* Ids are often small and sequential; mix them so they spread. */
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

void gp_u64map_free(struct gp_u64map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = m->vals = NULL;
  m->used = NULL;
  m->cap = m->n = 0;
}

uint64_t *gp_u64map_get(const struct gp_u64map *m, uint64_t key) {
  if (!m->cap) return NULL;
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (!m->used[i]) return NULL;
    if (m->keys[i] == key) return &m->vals[i];
  }
}

static int grow(struct gp_u64map *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  struct gp_u64map g = {calloc(ncap, 8), calloc(ncap, 8), calloc(ncap, 1), ncap,
                        0};
  if (!g.keys || !g.vals || !g.used) {
    gp_u64map_free(&g);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->used[i]) gp_u64map_put(&g, m->keys[i], m->vals[i]);
  gp_u64map_free(m);
  *m = g;
  return 0;
}

int gp_u64map_put(struct gp_u64map *m, uint64_t key, uint64_t val) {
  uint64_t *v = gp_u64map_get(m, key);
  if (v) {
    *v = val;
    return 0;
  }
  if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0) return -1;
  size_t i = slot_of(key, m->cap);
  while (m->used[i])
    i = (i + 1) & (m->cap - 1);
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = val;
  m->n++;
  return 0;
}

int gp_u64map_del(struct gp_u64map *m, uint64_t key, uint64_t *val) {
  if (!m->cap) return 0;
  size_t mask = m->cap - 1, i = slot_of(key, m->cap);
  while (m->used[i] && m->keys[i] != key)
    i = (i + 1) & mask;
  if (!m->used[i]) return 0;
  if (val) *val = m->vals[i];
  /* Backward shift: pull later members of the probe run into the hole
   * when their home slot does not lie cyclically in (hole, j]. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
    size_t home = slot_of(m->keys[j], m->cap);
    int movable =
        hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      m->keys[hole] = m->keys[j];
      m->vals[hole] = m->vals[j];
      hole = j;
    }
  }
  m->used[hole] = 0;
  m->n--;
  return 1;
}

void gp_idx_free(struct gp_idx *x) {
  free(x->dense);
  x->dense = NULL;
  x->ndense = 0;
  gp_u64map_free(&x->sparse);
}

int gp_idx_put(struct gp_idx *x, uint64_t key, uint32_t val) {
  if (key >= GP_IDX_DENSE) return gp_u64map_put(&x->sparse, key, val);
  if (key >= x->ndense) {
    size_t n = x->ndense ? x->ndense : 64;
    while (n <= key)
      n *= 2;
    if (n > GP_IDX_DENSE) n = GP_IDX_DENSE;
    uint32_t *d = realloc(x->dense, n * sizeof *d);
    if (!d) return -1;
    memset(d + x->ndense, 0, (n - x->ndense) * sizeof *d);
    x->dense = d;
    x->ndense = n;
  }
  x->dense[key] = val + 1;
  return 0;
}
