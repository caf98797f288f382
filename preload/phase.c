/* The phase API (include/gpuphase/gpuphase.h) as recorded by the shim. The
 * name travels inline in the ring, in the slots after the event, so the hot
 * path neither allocates nor locks. Item counts take one slot each: the
 * writer turns them into ITEMS records, one per call, and the report adds
 * them up per step. */
#include <string.h>

#include "gp_shim.h"
#include "gpuphase/gpuphase.h"
#include "gpuphase/trace_records.h"

/* op: GPUPHASE_RANGE_*; id pairs START with END; domain: an NVTX domain
 * handle (its name is the first member) or NULL. */
int gp_range_record(uint32_t op, const char *name, uint64_t id,
                    const void *domain) {
  /* Ranges never start the profiler: only CUDA calls do. */
  struct gp_tstate *ts = &gp_ts;
  if (ts->depth || ts->internal || gp_ring_of_thread() == NULL) return 1;
  size_t len = name ? strnlen(name, GP_RANGE_NAME_MAX) : 0;
  /* a name cut short ends before the UTF-8 character the cut falls in:
   * name[len], the first byte left out, continues one that began at most
   * 3 bytes before (other bytes than UTF-8's are cut where they are) */
  if (len == GP_RANGE_NAME_MAX) {
    size_t k = len;
    while (k > len - 3 && ((unsigned char)name[k] & 0xC0) == 0x80) k--;
    if (((unsigned char)name[k] & 0xC0) == 0xC0) len = k;
  }
  uint64_t extra = (len + 63) / 64;
  struct gp_tbuf *b = ts->buf;
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_acquire);
  if (h + 1 + extra - t > b->mask + 1) {
    gp_ring_full(b);
    return 1;
  }
  struct gp_event *e = &b->ev[h & b->mask];
  *e = (struct gp_event){.t0 = gp_now(), .api = op, .bytes = len,
                         .aux = id, .stream = (uintptr_t)domain,
                         .device = -1, .type = GP_EV_RANGE};
  for (size_t off = 0; off < len; off += 64) {
    struct gp_event *s = &b->ev[(h + 1 + off / 64) & b->mask];
    memcpy(s, name + off, len - off < 64 ? len - off : 64);
  }
  gp_publish(b, 1 + extra);
  return 0;
}

GP_EXPORT int gpuphase_range_push(const char *name) {
  return gp_range_record(GPUPHASE_RANGE_PUSH, name, 0, NULL);
}

GP_EXPORT int gpuphase_range_pop(void) {
  return gp_range_record(GPUPHASE_RANGE_POP, NULL, 0, NULL);
}

GP_EXPORT int gpuphase_step_items(uint64_t n) {
  /* Like ranges: never starts the profiler, never recorded from inside
   * one of our wrappers or from our own threads. */
  struct gp_tstate *ts = &gp_ts;
  if (ts->depth || ts->internal || gp_ring_of_thread() == NULL) return 1;
  struct gp_tbuf *b = ts->buf;
  struct gp_event *e = gp_slot(b);
  if (!e) return 1;
  *e = (struct gp_event){.t0 = gp_now(), .aux = n, .device = -1,
                         .type = GP_EV_ITEMS};
  gp_publish(b, 1);
  return 0;
}
