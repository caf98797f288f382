/* Internal state of the preloaded library. Everything here runs inside the
 * profiled process: the hot path (gp_enter/gp_emit/gp_leave) takes one
 * timestamp per edge and stores into a per-thread ring — no lock, no
 * syscall, no allocation. */
#ifndef GP_SHIM_H
#define GP_SHIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define GP_EXPORT __attribute__((visibility("default")))
#define GP_LIKELY(x) __builtin_expect(!!(x), 1)
#define GP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GP_TLS __thread __attribute__((tls_model("initial-exec")))
/* On what the hot path reads: the compiler then addresses it directly
 * instead of through the GOT (the library exports nothing but its hooks). */
#define GP_HIDDEN __attribute__((visibility("hidden")))

/* Event types in a thread ring. GP_EV_ITEMS: a gpuphase_step_items call,
 * t0 its time, aux the count. GP_EV_LAUNCH: an API event of a launch with
 * dim3 arguments, in two slots: the second holds the raw dimensions
 * (struct gp_launch_dims), whose totals the writer works out. */
enum {
  GP_EV_API = 1,
  GP_EV_RANGE = 2,
  GP_EV_NAME = 3,
  GP_EV_ITEMS = 4,
  GP_EV_LAUNCH = 5,
  GP_EV_STACK = 6,  /* a new call-site stack of the thread (stacks.c) */
  GP_EV_PYCODE = 7  /* a Python code object met first (stacks.c) */
};

/* One slot of a per-thread ring: 64 bytes, one cache line. Raw facts only;
 * the writer thread converts clocks and encodes. corr and device are
 * neighbours, as in gp_tstate, so that one 8-byte move copies both; api,
 * copy_kind and type share a 4-byte word, stored at once. */
struct gp_event {
  uint64_t t0, t1; /* raw clock (see gp_now) */
  uint64_t stream;
  uint64_t bytes;
  uint64_t aux; /* launch: function; alloc/free: address */
  uint32_t corr;
  int32_t device;
  uint32_t grid;
  int32_t ret;
  uint16_t api; /* GP_EV_API, GP_EV_LAUNCH: api id; GP_EV_RANGE: op */
  uint8_t copy_kind;
  uint8_t type;
  uint16_t block;
  uint16_t stack; /* API events: the thread's stack id (stacks.c), 0 none */
};
_Static_assert(sizeof(struct gp_event) == 64, "ring slot is one cache line");

/* The second slot of a GP_EV_LAUNCH event: each dim3 as the two words it
 * is passed in on x86-64 and AArch64 (x and y in the first, z in the low
 * half of the second; the high half is whatever the caller left there). */
struct gp_launch_dims {
  uint64_t grid_xy, grid_z, block_xy, block_z;
};

/* The ring is mapped with one slot more than its capacity: an event of two
 * slots that starts in the last one runs into it, not around to slot 0, so
 * that both halves are contiguous (the position after it, slot 0, is
 * skipped like any consumed position). */
#define GP_RING_SPARE_SLOTS 1

/* A range name travels inline in the slots following its GP_EV_RANGE event:
 * ev.bytes holds its length, then ceil(len/64) GP_EV_NAME-free raw slots. */
#define GP_RANGE_NAME_MAX 255

/* Per-thread ring: single producer (its thread), single consumer (the
 * writer thread). */
struct gp_tbuf {
  _Atomic uint64_t head; /* next slot to write; producer stores (release) */
  /* head + 1 when the thread entered its newest recorded call (set by the
   * CUPTI callback, not the wrapper): above head while a call is under
   * way, which the writer's last pass counts lost (records.c). */
  _Atomic uint64_t entered;
  char pad0[48];
  _Atomic uint64_t tail; /* next slot to read; consumer stores (release) */
  /* tail + mask, stored after tail: the last position a producer may fill
   * (one comparison with its head, no arithmetic, tells whether the ring
   * can take an event) */
  _Atomic uint64_t limit;
  char pad1[48];
  _Atomic uint64_t lost; /* events dropped because the ring was full */
  uint64_t mask;         /* capacity - 1 */
  /* (mask >> 3) & ~1: a head h with (h & nudge) == 0 ends an event that
   * reached the next eighth of the ring (or the slot after it); 0 while
   * the process is dying (every publish then goes to gp_ring_nudge) */
  uint64_t nudge;
  struct gp_event *ev;
  size_t map_bytes;
  uint32_t index; /* small thread index used in the trace */
  pid_t tid;
  _Atomic int state;       /* GP_TB_*: who may touch the ring now */
  int announced;           /* writer emitted the THREAD record */
  uint64_t lost_reported;  /* writer-side: lost count already recorded */
  struct gp_tbuf *next;    /* registry (push-only list) */
  unsigned long pthread;   /* pthread_t, to find the ring of a renamed thread */
  /* the thread's name (16 bytes, as the kernel keeps it), taken in the
   * thread and on each rename, under a sequence count that is odd while it
   * is written and 0 before it was ever taken (threadname.c) */
  _Atomic uint64_t name_w[2];
  _Atomic uint32_t name_seq;
  uint32_t name_told; /* writer: the sequence count its THREAD record gave */
  void *stk;               /* the thread's stack table (stacks.c) */
  uint32_t *stk_nodes;     /* writer-side: stack id -> FRAME node */
};

/* Ring header states. A header outlives its thread and is reused (with its
 * index) by a later thread, so memory is bounded by concurrent threads. */
enum { GP_TB_FREE = 0, GP_TB_CLAIMED = 1, GP_TB_ALIVE = 2, GP_TB_DEAD = 3 };

/* gp_tstate.depth inside a wrapper whose call the full ring could not take
 * (rings.c; the slot is asked for before the real call). */
#define GP_DEPTH_LOST 2

/* Per-thread state, in TLS. */
/* Call-site capture's per-thread decision state (stacks.c, gp_stacks.h),
 * kept in the thread state so that the launch path reaches both with one
 * TLS offset. */
#define GP_STK_BLOCKED 1
struct gp_stk_tls {
  /* raw clock at the end of the thread's last call; GP_STK_BLOCKED (1)
   * after a blocking call, kept by the calls that are no submission after
   * it (its next submission is captured, as after 1 ms away); 0 before the
   * thread's first call */
  uint64_t last_end;
  /* launches until the next sampled one; decremented by the launch fast
   * path before the cold path decides; 1 when the thread's ring is made,
   * so that its first launch goes to the cold path, which sets it */
  uint32_t countdown;
  uint32_t tokens;
  uint64_t refill; /* rate cap: raw time of the last token refill */
};

struct gp_tstate {
  struct gp_tbuf *buf;
  int depth;        /* >0 while inside one of our wrappers: re-entry passes */
  uint32_t corr;    /* set by the CUPTI callback during the real call */
  int32_t device;   /* current device: cudaSetDevice, or the current
                     * context's (driver context calls) */
  int32_t rt_device; /* the runtime's device as set by cudaSetDevice (0
                      * until then): the device once no context is
                      * current */
  int internal;     /* our own threads: never record */
  struct gp_stk_tls stk;
};

enum gp_state {
  GP_IDLE = 0,     /* nothing started (no CUDA call yet) */
  GP_STARTING = 1, /* first CUDA call is setting up; others pass through */
  GP_RUNNING = 2,
  GP_STOPPED = 3, /* finished, disabled, or failed: pass through */
};

extern GP_HIDDEN _Atomic int gp_state;
/* gp_state where the clock is the TSC (gp_clock_tsc), GP_IDLE while
 * running on CLOCK_MONOTONIC: the launch fast path's one test of both
 * (wrap.c). Stored with gp_state (shim.c). */
extern GP_HIDDEN _Atomic int gp_fast_state;
/* 1: raw clock is the TSC, else CLOCK_MONOTONIC */
extern GP_HIDDEN int gp_clock_tsc;

static inline uint64_t gp_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline __attribute__((always_inline)) uint64_t gp_now(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (GP_LIKELY(gp_clock_tsc)) return __rdtsc();
#endif
  return gp_mono_ns();
}

/* The raw clock where gp_clock_tsc is known to be set (it never is where
 * there is no TSC). */
static inline __attribute__((always_inline)) uint64_t gp_tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return gp_mono_ns();
#endif
}

/* Calls made unrecorded while recording was starting (shim.c): written
 * as lost by the writer (gp_records_start_lost). */
extern GP_HIDDEN _Atomic uint64_t gp_start_lost;

/* Slow paths (shim.c, rings.c). gp_enter_slow returns NULL with the depth
 * raised (GP_DEPTH_LOST) for a call made while recording starts: the
 * caller makes the call and then gp_leave. */
struct gp_tstate *gp_enter_slow(void);
void gp_ring_full(struct gp_tbuf *b);

extern GP_TLS GP_HIDDEN struct gp_tstate gp_ts;

/* Returns the thread's state with depth raised, or NULL when this call must
 * not be recorded (not running, re-entered, internal thread); where NULL
 * leaves the depth raised (recording starting: gp_enter_slow), the caller
 * makes the call and then gp_leave. */
static inline __attribute__((always_inline)) struct gp_tstate *gp_enter(void) {
  struct gp_tstate *ts = &gp_ts;
  if (GP_LIKELY(ts->buf != NULL &&
                atomic_load_explicit(&gp_state, memory_order_relaxed) ==
                    GP_RUNNING)) {
    if (ts->depth || ts->internal) return NULL;
    ts->depth = 1;
    ts->corr = 0;
    return ts;
  }
  return gp_enter_slow();
}

/* gp_enter for a wrapper that found gp_nested() false: our own threads keep
 * depth at 1, so only the ring and the process state remain to be seen. */
static inline __attribute__((always_inline)) struct gp_tstate *
gp_enter_outer(void) {
  struct gp_tstate *ts = &gp_ts;
  if (GP_LIKELY(ts->buf != NULL &&
                atomic_load_explicit(&gp_state, memory_order_relaxed) ==
                    GP_RUNNING)) {
    ts->depth = 1;
    ts->corr = 0;
    return ts;
  }
  return gp_enter_slow();
}

/* A terminating signal caught inside a CUDA call waits for the writer to
 * complete the trace (shim.c): meanwhile a thread coming out of a CUDA call
 * does no more of the program's work, which the signal would have ended. */
extern _Atomic int gp_dying;
void gp_dying_wait(void) __attribute__((noreturn, cold));

static inline void gp_leave(struct gp_tstate *ts) {
  ts->depth = 0;
  if (GP_UNLIKELY(atomic_load_explicit(&gp_dying, memory_order_relaxed)))
    gp_dying_wait();
}

/* gp_leave after the call's event was published with gp_publish, which
 * made the test of gp_dying: a dying process sets every ring's nudge to 0
 * (gp_rings_dying), which sends each publish to gp_ring_nudge, which waits
 * there. The hot paths' test of the nudge serves both. */
static inline void gp_leave_published(struct gp_tstate *ts) {
  ts->depth = 0;
}

/* Inside one of our wrappers (or on one of our own threads, which keep
 * depth at 1): a wrapped call made now passes straight through. */
static inline __attribute__((always_inline)) int gp_nested(void) {
  return gp_ts.depth != 0;
}

/* Reserves the next n slots (n a constant: 1, or 2 for a launch, whose
 * second slot may be the spare one past the end); NULL (and a lost event
 * counted) if the ring cannot take them. */
static inline __attribute__((always_inline)) struct gp_event *
gp_slot_n(struct gp_tbuf *b, uint64_t n) {
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
  if (GP_UNLIKELY(h + (n - 1) >
                  atomic_load_explicit(&b->limit, memory_order_acquire))) {
    gp_ring_full(b);
    return NULL;
  }
  return &b->ev[h & b->mask];
}

/* Reserves the next slot; NULL (and a lost event counted) if full. */
static inline __attribute__((always_inline)) struct gp_event *
gp_slot(struct gp_tbuf *b) {
  return gp_slot_n(b, 1);
}

/* The event's api id and type (copy_kind 0): one 4-byte store. */
static inline __attribute__((always_inline)) void
gp_event_kind(struct gp_event *ev, uint32_t api, uint8_t type) {
  ev->api = (uint16_t)api;
  ev->copy_kind = 0;
  ev->type = type;
}

/* The call's correlation id and the thread's current device: one 8-byte
 * move. */
static inline __attribute__((always_inline)) void
gp_event_corr_device(struct gp_event *ev, const struct gp_tstate *ts) {
  ev->corr = ts->corr;
  ev->device = ts->device;
}

/* Wakes the writer if the ring is behind; in a dying process, an
 * application thread waits here (gp_leave_published). */
void gp_ring_nudge(struct gp_tbuf *b, uint64_t head);
/* Every ring's nudge to 0 (dying: 1) or back (0); async-signal-safe. */
void gp_rings_dying(int dying);

/* Makes n reserved slots visible to the writer. Every eighth of the ring
 * (and one slot later: one test serves events of one and of two slots) the
 * producer looks at the fill level and wakes the writer if it is behind;
 * an event of more slots (a range name) looks whenever it crosses one. */
static inline __attribute__((always_inline)) void gp_publish(struct gp_tbuf *b, uint64_t n) {
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed) + n;
  atomic_store_explicit(&b->head, h, memory_order_release);
  if (n <= 2 ? GP_UNLIKELY((h & __atomic_load_n(&b->nudge, __ATOMIC_RELAXED)) == 0)
             : GP_UNLIKELY((h & (b->mask >> 3)) < n))
    gp_ring_nudge(b, h);
}

/* Entry points' helpers: a thread's ring for range marks without a CUDA
 * call of its own (shim.c; never starts the profiler), and recording one
 * range mark (phase.c; 0 recorded, 1 not). */
struct gp_tbuf *gp_ring_of_thread(void);
/* phase.c: the ranges the thread pushed before recording started, into its
 * new ring b */
void gp_phase_flush_pending(struct gp_tbuf *b);
/* phase.c: a forked child counts the kept names of its one thread only */
void gp_phase_after_fork(void);
int gp_range_record(uint32_t op, const char *name, uint64_t id,
                    const void *domain);

#endif
