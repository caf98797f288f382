/* The phase API (include/gpuphase/gpuphase.h) as recorded by the shim. The
 * name travels inline in the ring, in the slots after the event, so the hot
 * path neither allocates nor locks. Item counts take one slot each: the
 * writer turns them into ITEMS records, one per call, and the report adds
 * them up per step. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gp_clock.h"
#include "gp_shim.h"
#include "gpuphase/gpuphase.h"
#include "gpuphase/trace_records.h"

/* The length of a range's name as recorded: up to GP_RANGE_NAME_MAX bytes,
 * a name cut short ending before the UTF-8 character the cut falls in. */
static size_t name_len(const char *name) {
  size_t len = name ? strnlen(name, GP_RANGE_NAME_MAX) : 0;
  /* name[len], the first byte left out, continues one that began at most
   * 3 bytes before (other bytes than UTF-8's are cut where they are) */
  if (len == GP_RANGE_NAME_MAX) {
    size_t k = len;
    while (k > len - 3 && ((unsigned char)name[k] & 0xC0) == 0x80) k--;
    if (((unsigned char)name[k] & 0xC0) == 0xC0) len = k;
  }
  return len;
}

/* A range event at t0 into the thread's ring: 0, or 1 when it is full. */
static int put_range(struct gp_tbuf *b, uint64_t t0, uint32_t op,
                     const char *name, size_t len, uint64_t id,
                     const void *domain) {
  uint64_t extra = (len + 63) / 64;
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_acquire);
  if (h + 1 + extra - t > b->mask + 1) {
    gp_ring_full(b);
    return 1;
  }
  struct gp_event *e = &b->ev[h & b->mask];
  *e = (struct gp_event){.t0 = t0, .api = op, .bytes = len,
                         .aux = id, .stream = (uintptr_t)domain,
                         .device = -1, .type = GP_EV_RANGE};
  for (size_t off = 0; off < len; off += 64) {
    struct gp_event *s = &b->ev[(h + 1 + off / 64) & b->mask];
    memcpy(s, name + off, len - off < 64 ? len - off : 64);
  }
  gp_publish(b, 1 + extra);
  return 0;
}

/* Ranges pushed before the process's first CUDA call (an outer "train"
 * range around the model's setup), still open: kept per thread, with
 * their times, and recorded once the thread has its ring (its first
 * range or CUDA call after recording started). At most GP_PEND_MAX per
 * thread, and GP_PEND_BYTES of names in the whole process (a program that
 * keeps starting threads that push ranges before any CUDA call); pushes
 * past them are counted so that their pops pair. A thread that ends with
 * ranges kept frees them (a key's destructor). */
#define GP_PEND_MAX 8
#define GP_PEND_BYTES (64u << 10)
struct pend {
  uint64_t t0; /* CLOCK_MONOTONIC ns (the raw clock is chosen at the start) */
  const void *domain;
  char *name; /* malloc'd, len bytes */
  size_t len;
};
static __thread struct pend pend[GP_PEND_MAX];
/* pend_over: pushes not kept (inside the kept ones), whose pops are
 * absorbed, also once the thread records; post_open: pushes recorded since,
 * still open (their pops are recorded) */
static __thread unsigned npend, pend_over, post_open;
static _Atomic size_t pend_bytes; /* names kept, all threads */
static pthread_key_t pend_key;
static pthread_once_t pend_once = PTHREAD_ONCE_INIT;
static int pend_key_ok;

static size_t pend_cost(size_t len) { return (len ? len : 1) + 16; }

static void pend_release(unsigned i) {
  free(pend[i].name);
  atomic_fetch_sub_explicit(&pend_bytes, pend_cost(pend[i].len),
                            memory_order_relaxed);
}

static void pend_thread_exit(void *p) {
  (void)p;
  for (unsigned i = 0; i < npend; i++) pend_release(i);
  npend = pend_over = 0;
}

static void pend_key_make(void) {
  pend_key_ok = pthread_key_create(&pend_key, pend_thread_exit) == 0;
}

static int pend_push(const char *name, const void *domain) {
  if (npend == GP_PEND_MAX || pend_over) { /* inside one not kept: neither */
    pend_over++;
    return 1;
  }
  int saved = errno;
  size_t len = name_len(name), cost = pend_cost(len);
  if (atomic_fetch_add_explicit(&pend_bytes, cost, memory_order_relaxed) +
          cost > GP_PEND_BYTES) {
    atomic_fetch_sub_explicit(&pend_bytes, cost, memory_order_relaxed);
    pend_over++;
    return 1;
  }
  char *c = NULL;
  if (!npend) {
    /* the thread's names are freed if it ends before it records */
    pthread_once(&pend_once, pend_key_make);
    if (pend_key_ok && pthread_setspecific(pend_key, &pend_key) == 0)
      c = malloc(len ? len : 1);
  } else {
    c = malloc(len ? len : 1);
  }
  errno = saved;
  if (!c) {
    atomic_fetch_sub_explicit(&pend_bytes, cost, memory_order_relaxed);
    pend_over++;
    return 1;
  }
  if (len) memcpy(c, name, len);
  pend[npend++] = (struct pend){gp_mono_ns(), domain, c, len};
  return 0;
}

static int pend_pop(const void *domain) {
  if (pend_over) {
    pend_over--;
    return 1;
  }
  unsigned i = npend; /* the innermost of its domain (NVTX: per domain) */
  while (i > 0 && pend[i - 1].domain != domain) i--;
  if (!i) return 1;
  int saved = errno;
  pend_release(i - 1);
  errno = saved;
  memmove(&pend[i - 1], &pend[i], (npend - i) * sizeof *pend);
  npend--;
  return 0;
}

void gp_phase_flush_pending(struct gp_tbuf *b) {
  if (!npend) return;
  /* each push's time on the raw clock chosen since: back from now by the
   * CLOCK_MONOTONIC time since it (the TSC's slope, ns per tick) */
  uint64_t raw_now = gp_now(), mono_now = gp_mono_ns();
  double slope = gp_clock_line.slope;
  for (unsigned i = 0; i < npend; i++) {
    uint64_t t0 = pend[i].t0, ago = mono_now > t0 ? mono_now - t0 : 0;
    if (gp_clock_tsc && slope > 0) {
      uint64_t ticks = (uint64_t)((double)ago / slope);
      t0 = ticks < raw_now ? raw_now - ticks : 0;
    }
    put_range(b, t0, GPUPHASE_RANGE_PUSH, pend[i].name, pend[i].len, 0,
              pend[i].domain);
    pend_release(i);
  }
  npend = 0;
  post_open = 0; /* pend_over stays: the pops of pushes not kept */
}

void gp_phase_after_fork(void) {
  /* the child has this thread's kept names only */
  size_t own = 0;
  for (unsigned i = 0; i < npend; i++) own += pend_cost(pend[i].len);
  atomic_store_explicit(&pend_bytes, own, memory_order_relaxed);
}

/* op: GPUPHASE_RANGE_*; id pairs START with END; domain: an NVTX domain
 * handle (its name is the first member) or NULL. */
int gp_range_record(uint32_t op, const char *name, uint64_t id,
                    const void *domain) {
  /* Ranges never start the profiler: only CUDA calls do. */
  struct gp_tstate *ts = &gp_ts;
  if (ts->depth || ts->internal) return 1;
  if (gp_ring_of_thread() == NULL) {
    /* before the first CUDA call, and while it starts recording: pushes
     * and pops kept until the thread records */
    int st = atomic_load_explicit(&gp_state, memory_order_relaxed);
    if (st != GP_IDLE && st != GP_STARTING) return 1;
    if (op == GPUPHASE_RANGE_PUSH) return pend_push(name, domain);
    if (op == GPUPHASE_RANGE_POP) return pend_pop(domain);
    return 1;
  }
  if (GP_UNLIKELY(pend_over)) {
    /* pushes not kept before the thread recorded are still open: the
     * pops past the pushes recorded since are theirs */
    if (op == GPUPHASE_RANGE_PUSH) {
      post_open++;
    } else if (op == GPUPHASE_RANGE_POP) {
      if (!post_open) {
        pend_over--;
        return 1;
      }
      post_open--;
    }
  }
  return put_range(ts->buf, gp_now(), op, name, name_len(name), id, domain);
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
