/* Open-addressing hash map from uint64_t keys to uint64_t values, used by
 * the report engine wherever a table is keyed by an id from the trace
 * (strings, threads, devices, correlation ids, pointers). Deleting uses
 * backward shifting, so long-lived maps that churn (pending copies, live
 * allocations) never fill up with tombstones. */
#ifndef GP_U64MAP_H
#define GP_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct gp_u64map {
  uint64_t *keys;
  uint64_t *vals;
  uint8_t *used;
  size_t cap; /* power of two, 0 when empty */
  size_t n;
};

void gp_u64map_free(struct gp_u64map *m);
/* Pointer to the value of key, or NULL. */
uint64_t *gp_u64map_get(const struct gp_u64map *m, uint64_t key);
/* Inserts or overwrites; returns 0, or -1 when out of memory. */
int gp_u64map_put(struct gp_u64map *m, uint64_t key, uint64_t val);
/* Removes key; returns 1 if it was present (and stores its value). */
int gp_u64map_del(struct gp_u64map *m, uint64_t key, uint64_t *val);

/* Index of small ids: ids of the trace (strings, threads, APIs, devices) are
 * small and dense, so below GP_IDX_DENSE they live in an array (bounded by
 * the largest id seen), above it in a hash map. Values are uint32_t. */
#define GP_IDX_DENSE (1u << 20)

struct gp_idx {
  uint32_t *dense; /* value + 1; 0: absent */
  size_t ndense;
  struct gp_u64map sparse;
};

void gp_idx_free(struct gp_idx *x);
/* 1 and *val when present, else 0 */
static inline int gp_idx_get(const struct gp_idx *x, uint64_t key,
                             uint32_t *val) {
  if (key < x->ndense) {
    *val = x->dense[key] - 1;
    return x->dense[key] != 0;
  }
  if (key < GP_IDX_DENSE || !x->sparse.n) return 0;
  uint64_t *v = gp_u64map_get(&x->sparse, key);
  if (v) *val = (uint32_t)*v;
  return v != NULL;
}
int gp_idx_put(struct gp_idx *x, uint64_t key, uint32_t val); /* 0 or -1 */

#endif
