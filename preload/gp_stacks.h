/* Call-site capture (stacks.c): the calling thread's return addresses
 * (libunwind's unw_backtrace) and Python frames (pyframes.c, where linked)
 * taken in the wrapper before the real call, looked up in a per-thread
 * table of the thread's stacks, and sent once per new stack through the
 * thread's ring (GP_EV_STACK); the API event names its stack in
 * gp_event.stack. The writer thread turns them into the global prefix tree
 * of FRAME nodes, with the MODULE and PYCODE records they refer to
 * (docs/callsites.md, "Capture" and "Storage"). Nothing is symbolised in
 * the process. */
#ifndef GP_STACKS_H
#define GP_STACKS_H

#include <stdint.h>

#include "gp_shim.h"

#define GP_STK_DEPTH 128  /* native frames kept; deeper: TRUNCATED */
#define GP_STK_PY_MAX 64  /* Python frames kept */
#define GP_STK_IDS 4096   /* stacks per thread (ids 1..GP_STK_IDS-1) */
#define GP_STK_LAUNCH_EVERY 64
#define GP_STK_IDLE_US 1000  /* "away from CUDA": no call for 1 ms */
#define GP_STK_RATE_PER_S 2000 /* sampled captures per thread and second */
#define GP_STK_BURST 256

/* GPUPHASE_STACKS */
enum { GP_STK_OFF = 0, GP_STK_SYNC = 1, GP_STK_SAMPLED = 2, GP_STK_ALL = 3 };

/* gp_stk_policy[api]: what a call of that api asks of the capture. */
enum {
  GP_STKP_NONE = 0,   /* never (or the mode is off) */
  GP_STKP_BLOCK = 1,  /* a blocking call: always captured */
  GP_STKP_SUBMIT = 2, /* a submission: first after idle or a blocking call */
  GP_STKP_LAUNCH = 3, /* a launch: as SUBMIT, and every 64th */
  GP_STKP_ALWAYS = 4, /* GPUPHASE_STACKS=all */
  GP_STKP_COPY = 5    /* an async copy: each (within the rate), as one from
                         pageable memory blocks like a synchronous one */
};

/* The per-thread decision state is gp_ts.stk (struct gp_stk_tls,
 * gp_shim.h). */
/* indexed by api id (which fits 16 bits: wrap.c); filled at start-up */
extern GP_HIDDEN uint8_t gp_stk_policy[65536];
extern GP_HIDDEN uint64_t gp_stk_idle_ticks;
/* The launch fast path's threshold, by mode, for the runtime's dim3
 * launches (class LAUNCH | ASYNC, the wrappers of variant L in wrap.c): a
 * launch that starts less than this many raw ticks after the thread's
 * last call ended, and is not its 64th, is not captured. Sampled: the idle
 * time plus one tick; off and sync (policy NONE): UINT64_MAX, all: 0; 0
 * (every launch decided by the cold path) until the rates are set. */
extern GP_HIDDEN uint64_t gp_stk_launch_quiet_below;

/* At the start of recording, before the writer thread starts: reads the
 * mode, builds the policy table, sets libunwind's caching policy, finds
 * our own code's range and asks pyframes.c whether Python frames can be
 * had (once per process image; the rates in clock ticks are set by
 * gp_stacks_writer_begin, once the clock is chosen). */
void gp_stacks_start(void);
/* In a forked child (atfork): the inherited per-thread state. */
void gp_stacks_after_fork(void);

/* Producer side: a capture for a call of policy p (not NONE) of the thread
 * whose ring is b: the stack id for gp_event.stack, 0 when not captured. */
uint16_t gp_stack_on_call(struct gp_tbuf *b, uint32_t p);

/* The launch fast path's test, after the real call (t0: the call's start,
 * in raw clock ticks): whether this launch is not captured, without
 * looking at its policy (gp_stk_launch_quiet_below holds the mode's). The call site
 * is the same after the call as before it, and deciding from the call's
 * own start makes the idle rule exact (docs/callsites.md). When it returns
 * 0, the launch's event is complete but unpublished and
 * gp_stack_after_launch finishes it. */
static inline __attribute__((always_inline)) int
gp_stk_launch_quiet(uint64_t t0) {
  struct gp_stk_tls *s = &gp_ts.stk;
  return GP_LIKELY(--s->countdown != 0 &&
                   t0 - s->last_end < gp_stk_launch_quiet_below);
}

/* The cold path of a launch gp_stk_launch_quiet did not let pass, of
 * policy p, whose two-slot event (complete, times and result included) is
 * reserved at the ring's head and not yet published: decides as
 * gp_stack_on_call does at the call's start, captures, moves the event
 * behind any event the capture published (a new stack), names the stack
 * in it, and publishes it (or counts it lost if the ring can no longer
 * take it). Sets the thread's last_end to the call's end. */
void gp_stack_after_launch(struct gp_tbuf *b, uint32_t p);

/* Ring memory of the per-thread table (created with the ring, freed with
 * it). */
int gp_stacks_ring_init(struct gp_tbuf *b);
void gp_stacks_ring_free(struct gp_tbuf *b);

/* Writer side (records.c). begin/end with the trace; drain_event handles a
 * GP_EV_STACK or GP_EV_PYCODE event at ring position pos and returns the
 * slots it used; node_of gives the FRAME node of a thread's stack id. */
int gp_stacks_writer_begin(void);
void gp_stacks_writer_end(void);
uint64_t gp_stacks_drain_event(struct gp_tbuf *b, const struct gp_event *e,
                               uint64_t pos);
/* Each pass and the last: modules the dlclose wrapper saw unloaded are
 * marked; those written get their second MODULE record. */
void gp_stacks_writer_poll(void);

static inline uint64_t gp_stacks_node_of(const struct gp_tbuf *b, uint16_t id) {
  return id && b->stk_nodes ? b->stk_nodes[id] : 0;
}

#endif
