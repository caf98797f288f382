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
  GP_STKP_ALWAYS = 4  /* GPUPHASE_STACKS=all */
};

/* Per-thread decision state (TLS). */
struct gp_stk_tls {
  uint64_t last_end;  /* raw clock at the end of the thread's last call */
  uint32_t countdown; /* launches until the next sampled one */
  uint32_t after_block; /* a blocking call returned since the last submit */
  uint64_t refill;    /* rate cap: raw time of the last token refill */
  uint32_t tokens;
  uint16_t pending;   /* the launch path: 0x8000 | the stack its cold path
                         took (0x8000 alone: none), 0 outside it */
};

extern GP_TLS GP_HIDDEN struct gp_stk_tls gp_stk;
/* indexed by api id (which fits 16 bits: wrap.c); filled at start-up */
extern GP_HIDDEN uint8_t gp_stk_policy[65536];
extern GP_HIDDEN uint64_t gp_stk_idle_ticks;

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

/* The launch fast path's test: whether this launch may be captured (the
 * cold path then calls gp_stack_on_call, which decides). */
static inline __attribute__((always_inline)) int gp_stk_launch_due(uint32_t id) {
  struct gp_stk_tls *s = &gp_stk;
  uint32_t p = gp_stk_policy[id];
  if (GP_LIKELY(p == GP_STKP_NONE)) return 0;
  if (p != GP_STKP_LAUNCH) return 1;
  if (GP_LIKELY(s->countdown > 1 && !s->after_block &&
                gp_now() - s->last_end <= gp_stk_idle_ticks)) {
    s->countdown--;
    return 0;
  }
  return 1;
}

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
