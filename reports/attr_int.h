/* Internals of the attribution engine, shared by attr_sweep.c (the timeline),
 * attr_feed.c (one handler per record kind) and attr_result.c (turning the
 * final state into a gp_proc_res). */
#ifndef GP_ATTR_INT_H
#define GP_ATTR_INT_H

#include "attribute.h"
#include "callsites.h"
#include "u64map.h"

#include <string.h>

#define FIX_ONE (1u << 20) /* fixed point 1.0 for coverage and occupancy */
#define NODEV UINT32_MAX   /* a call made with device -1: counts for all */
#define NOPHASE UINT32_MAX
#define WSLOT 0 /* device slot 0: the idle "any device" timeline */
/* Fixed windows per device, at most, and over all devices: a longer run
 * gets longer windows (gp_win_fit), so memory does not grow with the
 * traced duration (12 MiB of windows at most, whatever the trace holds). */
#define GP_MAX_WINDOWS 65536
#define GP_MAX_WINDOW_CELLS (1u << 18)

/* non-blocking enqueue, blocking (synchronising), undecided (an async copy
 * whose device record decides), other (neither enqueues nor waits:
 * allocation, creation, queries) */
enum { CALL_NB, CALL_BLK, CALL_UND, CALL_OTHER, CALL_N };

struct dev {
  int64_t id;
  int has_props;
  struct gpuphase_device props;
  /* props.sms from 2 to 2^22 - 1: 2^64 / sms rounded up, which makes a
   * kernel's coverage x FIX_ONE / sms (x <= sms) one multiplication, the
   * same to the last bit (gp_sms_inv); else 0, and it is divided */
  uint64_t sms_inv;
  uint64_t sms; /* props.sms, 0 while !has_props */
  /* what runs now */
  uint32_t n_kern, n_comm, n_small, n_occ, n_xfer;
  uint32_t n_xk[GP_XFER_N];
  uint32_t n_call[CALL_N];     /* host calls naming this device, by CALL_* */
  uint64_t cov_rate, occ_rate; /* sums over running kernels, FIX_ONE based */
  uint64_t seg_t;              /* accounted up to here */
  /* the latest end of the kernels and copies queued in the sweep: while it
   * lies ahead, the device runs something until then */
  uint64_t busy_end;
  /* Ends of kernels queued here instead of in the sweep's heap, in the
   * order they end (a ring of kq_cap, a power of two): nothing but this
   * device's own accounting depends on them, so they are applied when
   * the device is next accounted (gp_dev_settle). */
  struct kend {
    uint64_t t;
    uint32_t cov, occ;
    /* what the kernel added to n_comm, n_small and n_occ (0 or 1 each):
     * subtracted as they are, where HF_* flags took a shift and a mask
     * each */
    uint8_t comm, small, has_occ;
  } * kq;
  size_t kq_head, kq_n, kq_cap;
  uint64_t kq_last; /* the last queued end, while kq_n */
  /* what was accounted */
  struct gp_breakdown tot, snap; /* snap: tot when the epoch began */
  size_t wcur;                   /* the window of seg_t, and its end */
  uint64_t wcur_end;
  struct gp_win *win;
  size_t capwin;
  uint64_t mem_cur, mem_peak, mem_t;
  size_t mem_widx; /* window of the last memory change */
  double mem_area;
  struct gp_copy_row copies[GP_XFER_N];
  uint64_t kernels;
  /* longest idle run: [0] device idle, [1] idle for a degraded trace */
  struct run {
    int in;
    uint64_t start, best, best_at;
  } idle[2];
};

struct thr {
  uint64_t index, tid, name;
  uint32_t n_call[CALL_N];
  /* The end of a call (its class pend_cl) that is not in the sweep's heap:
   * its device was busy until after it, so its end changes only this
   * thread's counters, which nothing else reads; it is applied when the
   * thread is next accounted (gp_thr_settle). UINT64_MAX: none (a call
   * ending then goes to the heap). */
  uint64_t pend_t;
  uint32_t pend_cl;
  uint64_t seg_t, cpu, submit, blocked, calls;
  /* its first call's start and its last call's end (when seen): the part
   * of the window the thread is known to have lived in */
  uint64_t first, last;
  int seen;
  struct rframe {
    uint32_t phase;
    uint32_t step; /* 1: its push opened a step (closed at its pop) */
    uint64_t start, domain; /* domain: its NVTX domain (a pop closes the
                               innermost push of its own) */
  } * stk;
  size_t nstk, capstk;
};

/* apidef.graph_role */
enum {
  GP_GR_ALLOC_NODE = 1,
  GP_GR_INSTANTIATE,
  GP_GR_LAUNCH,
  GP_GR_EXEC_DESTROY,
  GP_GR_FREE_NODE
};
int gp_graph_role(const char *api_name);

/* apidef.ev_role: calls whose device is their stream's or event's */
enum {
  GP_ER_RECORD = 1,    /* records an event (ptr) on a stream */
  GP_ER_WAIT,          /* waits for or polls an event (ptr) */
  GP_ER_STREAM_DESTROY /* ends a stream: its handle may be reused */
};
int gp_event_role(const char *api_name);

struct apidef {
  uint64_t id, name, cls, layer;
  int graph_role; /* GP_GR_*: a part in graph memory accounting, or 0 */
  int ev_role;    /* GP_ER_*: an event or stream call call_device reads */
  /* by cls and graph_role alone (attr_feed.c, api_derive): cl0, the CALL_*
   * of a call not captured into a graph, or CALL_N where the record
   * decides (an async copy); mem, whether on_mem, reset_mem or
   * on_graph_mem has anything to do with its calls */
  uint8_t cl0, mem;
  /* by cls alone (api_derive): its calls may end steps (gp_steps_call):
   * 1 always (synchronising), 2 when blocking (a copy), 0 never (neither,
   * or a poll) */
  uint8_t ends_steps;
  uint64_t count, total, blocked, errors;
  uint64_t nblocked; /* calls counted blocking (in `blocked`) */
  uint64_t step_count, step_total, step_blocked;
  uint32_t sync_cand; /* its step candidate + 1 (synchronising calls) */
  uint32_t sc_ones;   /* step counters (1 << GP_SC_*) each call adds 1 to,
                         by its class alone (gp_steps_ones) */
  /* steps found alone with per-step detail: the calls of step set version
   * g_ver, not yet in the detail log (attr_steps.c, "gather") */
  uint32_t g_ver;
  uint64_t g_count, g_total, g_blocked;
};

#define GP_SEEN_MORE 28

struct kst {
  uint64_t name, count, total, grid, block, regs, smem, cov_ns, occ_ns;
  /* in the measured steps (fixed steps); gathered: in version last_ver,
   * not yet in the detail log */
  uint64_t step_count, step_ns;
  /* the steps this name was last counted in, for distinct_kernels, as
   * (candidate + 1, step + 1) pairs: step candidates 0..3 in seen, each
   * its own; the others in seen_more (GP_SEEN_MORE pairs, allocated when
   * a fifth candidate meets the name), candidate c at (c - 4) modulo
   * GP_SEEN_MORE: exact for the first 4 + GP_SEEN_MORE candidates */
  uint32_t seen[4][2];
  uint32_t (*seen_more)[2];
  uint32_t last_ver; /* the step set version of its last launch (steps) */
  /* the last block configuration seen and its occupancy: kernels of one
   * name are nearly always launched alike, and this spares the divisions */
  uint64_t c_threads, c_regs, c_smem;
  int64_t c_dev;
  double c_occ;
  int grid_varies, block_varies, comm;
  double cov_wsum, occ_wsum;
  struct gp_hist dur;
};

struct phase {
  uint64_t name;
  uint32_t cand; /* step candidate + 1 of its top-level instances; 0: not
                    decided yet; UINT32_MAX: none */
  uint32_t active; /* open instances */
  uint32_t apos;   /* index in the active list while active */
  uint8_t shared;  /* its name is --step's or ProfilerStep#N's: 0 not
                      decided yet, 1 yes, 2 no */
  uint64_t count, inst_ns;
  struct gp_hist dur;
  struct gp_phase_dev *pd; /* by device slot */
  size_t npd;
};

/* Provisional launch time booked while an async copy was undecided. */
struct lent {
  uint32_t dev, phase; /* phase NOPHASE: device totals and window win */
  uint64_t win, epoch, ns;
};

struct acall {
  uint64_t start, end, corr, thread_ns;
  uint32_t thread, dev, api, gen, next_free;
  uint64_t stack; /* API.stack: its call site */
  uint32_t sver;  /* the open steps when it was called (step set version) */
  uint8_t smeas;  /* called in a measured step of the fixed steps */
  uint8_t state, open, live;
  struct lent *led;
  size_t nled, capled;
};

struct cwait { /* a device copy waiting for its API record */
  uint64_t end, corr;
  uint32_t gen, next_free;
  uint8_t pageable, live;
};

struct mblk {
  uint64_t size;
  uint32_t dev; /* NODEV: pinned host memory */
  uint32_t next_free;
};

struct ropen {
  uint32_t phase, next_free;
  uint64_t start;
};

enum hev_kind {
  HEV_KERNEL,
  HEV_XFER,
  HEV_CALL,
  HEV_ACALL,
  HEV_HOLD_CALL,
  HEV_HOLD_COPY,
  HEV_STEP /* a synchronising call ends: a step boundary of candidate slot */
};
enum { HF_COMM = 1, HF_SMALL = 2, HF_OCC = 4 };

struct hev { /* a pending event of the sweep, ordered by t */
  uint64_t t;
  uint32_t slot, a, b;
  uint16_t kind, flags;
};

#define POOL(T)                                                                \
  struct {                                                                     \
    T *v;                                                                      \
    size_t n, cap;                                                             \
    uint32_t free;                                                             \
  }

struct gp_attr {
  struct gp_report_opts o;
  int oom;
  struct gp_idx str_map, thr_map, api_map, dev_map, k_map, ph_map;
  struct gp_u64map corr, allocs, ranges;
  /* The devices of the application's streams and events, where the trace
   * shows them (attr_feed.c, call_device): a stream's from the device
   * record of work launched on it, found through lring (the stream of
   * recent calls on streams not yet known, by correlation id), an event's
   * from the stream it was last recorded on. sdc: a direct-mapped cache
   * of sdev (stream 0: empty). */
  struct gp_u64map sdev, edev;
  struct sdslot {
    uint64_t stream;
    int64_t dev;
  } sdc[64];
  struct lslot {
    uint64_t corr, stream;
  } lring[1024];
  uint32_t nlring; /* slots of lring that hold a call (corr not 0) */
  /* graph memory: alloc nodes (graph, address, size, device) and the
   * executable graphs instantiated from graphs (exec, graph, launched) */
  struct gnode {
    uint64_t graph, ptr, bytes;
    int64_t device;
    int pooled; /* the graph has a free node for it: CUDA's graph memory
                 * pool keeps it from the first launch to the executable
                 * graph's destruction */
  } *gnodes;
  size_t ngnodes, gnodes_cap;
  struct gexec {
    uint64_t exec, graph;
    int launched;
  } *gexecs;
  size_t ngexecs, gexecs_cap;
  /* The set of open phases changes only at range records: between two
   * changes (an epoch) each open phase gets what the device totals got,
   * so a phase is credited once per epoch, from a snapshot of the totals,
   * instead of once per stretch of time. */
  uint64_t epoch;
  char **strs;
  size_t nstrs, capstrs;
  struct thr *thr;
  size_t nthr, capthr;
  struct apidef *api;
  size_t napi, capapi;
  struct dev *dev; /* dev[WSLOT] is the "any device" timeline */
  size_t ndev, capdev;
  struct kst *k;
  size_t nk, capk;
  struct phase *ph;
  size_t nph, capph;
  uint32_t *active;
  size_t nactive, capactive;
  uint32_t *und; /* open undecided calls, oldest first */
  size_t nund, capund;
  POOL(struct acall) calls;
  POOL(struct cwait) waits;
  POOL(struct mblk) blks;
  POOL(struct ropen) ropens;
  struct hev *heap;
  size_t nheap, capheap;
  /* the first of heap[0].t and hold_t (UINT64_MAX while both are empty):
   * what timed() tests, one load where the heap's top took three and the
   * held expiries a second test; lowered by the pushes, set again at the
   * end of gp_sweep_advance, which alone pops */
  uint64_t due_t;
  /* Expiries of held async copies and copy records, in the order queued.
   * They change no counter, so an expiry handled a little late (when ends
   * arrive out of order) changes nothing but memory; they stay out of the
   * heap, which then holds only what is running. */
  struct hev *hold;
  size_t hhead, nhold, caphold;
  uint64_t hold_t;         /* the time of hold[hhead] (UINT64_MAX while none) */
  uint32_t w_call[CALL_N]; /* calls with device -1, by CALL_* */
  int started;
  uint64_t wstart, wend, T;
  /* wstart + GP_MAX_WINDOWS windows (saturated): when wend reaches it, the
   * windows are merged pairwise and their length doubled; 0 until the
   * sweep starts (timed() tests it alone) */
  uint64_t wlimit, win_asked, win_widened;
  uint64_t host_cur, host_peak;
  int saw_state1, state_on, has_summary;
  uint64_t state_since, state_reason, n_devrec, lost;
  uint64_t unwritten, meas_records; /* gp_attr_unwritten, _meas_records */
  /* records that do not pass through timed() (feed_other): diag.timed is
   * diag.records less them (gp_attr_finish) */
  uint64_t untimed;
  uint64_t deg_spans, deg_ns, deg_first, deg_first_end, deg_first_reason;
  struct gp_diag diag;
  struct gp_stepper *st; /* step candidates (attr_steps.c): made with the
                            engine, the hooks take it as there */
  gp_cs *cs;             /* call sites (callsites.c) */
  int cs_on;             /* a call-site record was seen: time is told */
};

/* growth of a dynamic array: 0, or -1 (and a->oom) when out of memory */
int gp_attr_grow(struct gp_attr *a, void **v, size_t *cap, size_t need,
                 size_t elt);
#define GROW(a, v, cap, need)                                                  \
  ((need) <= (cap)                                                             \
       ? 0                                                                     \
       : gp_attr_grow((a), (void **)&(v), &(cap), (need), sizeof *(v)))

const char *gp_attr_str(const struct gp_attr *a, uint64_t id);
struct dev *gp_attr_dev_add(struct gp_attr *a, int64_t id);
struct thr *gp_attr_thr_add(struct gp_attr *a, uint64_t index);

/* The device / thread of an id, added when first seen; NULL: no memory. */
static inline struct dev *gp_attr_dev(struct gp_attr *a, int64_t id) {
  uint32_t i;
  return gp_idx_get(&a->dev_map, (uint64_t)id, &i) ? &a->dev[i]
                                                   : gp_attr_dev_add(a, id);
}

static inline struct thr *gp_attr_thr(struct gp_attr *a, uint64_t index) {
  uint32_t i;
  return gp_idx_get(&a->thr_map, index, &i) ? &a->thr[i]
                                            : gp_attr_thr_add(a, index);
}
struct gp_phase_dev *gp_attr_pd(struct gp_attr *a, struct phase *p,
                                uint32_t slot);

/* attr_sweep.c */
void gp_sweep_start(struct gp_attr *a, uint64_t t);
/* Handles the pending ends up to t and moves the sweep time to t. */
void gp_sweep_advance(struct gp_attr *a, uint64_t t);
int gp_heap_grow(struct gp_attr *a);
/* Queues the end of an interval. Fields one by one: a whole struct built on
 * the stack and copied made the hottest store of the sweep stall. */
static inline int gp_sweep_push(struct gp_attr *a, uint64_t t, uint16_t kind,
                                uint16_t flags, uint32_t slot, uint32_t x,
                                uint32_t y) {
  if (a->nheap == a->capheap && gp_heap_grow(a) < 0) return -1;
  size_t i = a->nheap++;
  while (i && a->heap[(i - 1) / 2].t > t) {
    a->heap[i] = a->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  struct hev *e = &a->heap[i];
  if (!i && t < a->due_t) a->due_t = t;
  e->t = t;
  e->kind = kind;
  e->flags = flags;
  e->slot = slot;
  e->a = x;
  e->b = y;
  return 0;
}
int gp_hold_push(struct gp_attr *a, struct hev ev);
/* Accounts device d up to t (t > d->seg_t). */
void gp_flush_dev_to(struct gp_attr *a, struct dev *d, uint64_t t);
/* Applies the queued kernel ends of d up to t, each where it ends. */
void gp_dev_settle(struct gp_attr *a, struct dev *d, uint64_t t);
static inline int gp_dev_due(const struct dev *d, uint64_t t) {
  return d->kq_n && d->kq[d->kq_head].t <= t;
}
/* gp_flush_dev where the sweep has started (the record handlers past
 * timed(), the sweep's ends, a call's count): a test less */
static inline void gp_flush_dev_on(struct gp_attr *a, struct dev *d,
                                   uint64_t t) {
  if (gp_dev_due(d, t)) gp_dev_settle(a, d, t);
  if (t > d->seg_t) gp_flush_dev_to(a, d, t);
}
static inline void gp_flush_dev(struct gp_attr *a, struct dev *d, uint64_t t) {
  if (gp_dev_due(d, t)) gp_dev_settle(a, d, t);
  if (a->started && t > d->seg_t) gp_flush_dev_to(a, d, t);
}
/* Moves the queued kernel ends of every device into the sweep's heap. */
void gp_dev_unqueue(struct gp_attr *a);
void gp_flush_devs(struct gp_attr *a, uint32_t slot, uint64_t t);
void gp_thr_und(struct gp_attr *a, struct thr *th, uint64_t len);
/* Accounts thread th up to t. Called only once the sweep has started: by
 * the calls' counts (on_api returns before the start, a device record
 * starts the sweep) and at its end (end_sweep). */
static inline void gp_flush_thr(struct gp_attr *a, struct thr *th, uint64_t t) {
  if (t <= th->seg_t) return;
  uint64_t len = t - th->seg_t;
  th->seg_t = t;
  /* the four counts as two words, tested at once: most stretches lie
   * between calls */
  uint64_t w0, w1;
  memcpy(&w0, &th->n_call[0], sizeof w0);
  memcpy(&w1, &th->n_call[2], sizeof w1);
  if (!(w0 | w1)) {
    th->cpu += len;
  } else if (th->n_call[CALL_BLK]) {
    th->blocked += len;
  } else {
    th->submit += len;
    if (th->n_call[CALL_UND]) gp_thr_und(a, th, len);
  }
}
void gp_epoch_end(struct gp_attr *a, uint64_t t);
struct gp_win *gp_win_grow(struct gp_attr *a, struct dev *d, size_t idx);
static inline struct gp_win *gp_win_at(struct gp_attr *a, struct dev *d,
                                       size_t idx) {
  return idx < d->capwin ? &d->win[idx] : gp_win_grow(a, d, idx);
}
size_t gp_win_idx(const struct gp_attr *a, uint64_t t);
void gp_win_fit(struct gp_attr *a);
uint64_t gp_win_end(const struct gp_attr *a, size_t idx);
/* While a device runs a kernel or a copy, host calls do not change what its
 * time is booked as: the stretch goes on unbroken. */
static inline void gp_flush_if_idle(struct gp_attr *a, struct dev *d) {
  if (gp_dev_due(d, a->T)) gp_dev_settle(a, d, a->T);
  if (!d->n_kern && !d->n_xfer) gp_flush_dev_on(a, d, a->T);
}

/* Applies the thread's pending call end (pend_t), as popping it from the
 * heap at pend_t would have. */
static inline void gp_thr_settle(struct gp_attr *a, struct thr *th) {
  uint64_t t = th->pend_t;
  if (t == UINT64_MAX) return; /* none: the sweep reached the last time */
  gp_flush_thr(a, th, t);
  th->n_call[th->pend_cl]--;
  th->last = t;
  th->pend_t = UINT64_MAX;
}

/* The thread's part of gp_call_count. */
static inline __attribute__((always_inline)) void
gp_call_count_thr(struct gp_attr *a, struct thr *th, int state, int delta) {
  if (th->pend_t <= a->T) gp_thr_settle(a, th);
  gp_flush_thr(a, th, a->T);
  if (delta > 0 && !th->seen) {
    th->seen = 1;
    th->first = a->T;
  }
  if (delta < 0) th->last = a->T;
  th->n_call[state] += (uint32_t)delta;
}

/* Accounts what the change will affect up to now, then changes it. Always
 * inline: out of line, its call to gp_flush_dev_to made it save and
 * restore every register, twice per API call. */
static inline __attribute__((always_inline)) void
gp_call_count(struct gp_attr *a, uint32_t thread, uint32_t dev, int state,
              int delta) {
  gp_call_count_thr(a, &a->thr[thread], state, delta);
  if (dev != NODEV)
    gp_flush_if_idle(a, &a->dev[dev]);
  else
    for (size_t i = 0; i < a->ndev; i++)
      gp_flush_if_idle(a, &a->dev[i]);
  if (dev == NODEV)
    a->w_call[state] += (uint32_t)delta;
  else
    a->dev[dev].n_call[state] += (uint32_t)delta;
}
void gp_decide(struct gp_attr *a, uint32_t ci, int blocking);
void gp_call_release(struct gp_attr *a, uint32_t ci);
void gp_wait_release(struct gp_attr *a, uint32_t wi);
void gp_run_close(struct run *r, uint64_t t);

/* The windows' share of [from, to) of device d in category cat (cov:
 * the stretch's SM coverage, for the kernel category), and, with c, the
 * undecided call's ledger per window. 0 when a window could not be had
 * (out of memory): the caller books nothing more. Inline for a stretch
 * within the current window, the rest in gp_book_windows_run. */
int gp_book_windows_run(struct gp_attr *a, struct dev *d, uint64_t from,
                        uint64_t to, int cat, double cov, struct acall *c,
                        uint32_t slot);
static inline __attribute__((always_inline)) int
gp_book_windows(struct gp_attr *a, struct dev *d, uint64_t from, uint64_t to,
                int cat, double cov, struct acall *c, uint32_t slot) {
  if (!c && from < d->wcur_end && to <= d->wcur_end) { /* one window */
    struct gp_win *w = &d->win[d->wcur];
    w->cat[cat] += to - from;
    if (cat == GP_CAT_KERNEL) w->cov_ns += (double)(to - from) * cov;
    return 1;
  }
  return gp_book_windows_run(a, d, from, to, cat, cov, c, slot);
}

/* min(rate, FIX_ONE) / FIX_ONE, the SM coverage of a stretch: 1.0 exactly
 * at FIX_ONE. The minimum is taken with masks, not a branch: whether the
 * running kernels fill the GPU goes either way from one stretch to the
 * next, and a mispredicted branch here cost more than the rest of the
 * expression. Below FIX_ONE the value converts as a signed number (no
 * test of the sign bit), to the same double. */
static inline double gp_cov_of(uint64_t rate) {
  uint64_t full = (uint64_t)0 - (uint64_t)(rate >= FIX_ONE);
  uint64_t c = (rate & ~full) | ((uint64_t)FIX_ONE & full);
  return (double)(int64_t)c / FIX_ONE;
}

/* The sweep's accounting (attr_sweep.c) for a stretch in which the device
 * runs a kernel (n_kern > 0): the same sums in the same order, without
 * what only idle stretches need. */
static inline __attribute__((always_inline)) void
gp_account_kernel(struct gp_attr *a, struct dev *d, uint64_t from,
                  uint64_t to) {
  uint64_t len = to - from;
  double cov = gp_cov_of(d->cov_rate);
  /* occ_rate is below 2^52 (n_kern x FIX_ONE): converted as a signed
   * number, which takes no test of the sign bit, to the same double */
  double occ = (double)(int64_t)d->occ_rate / FIX_ONE;
  struct gp_breakdown *b = &d->tot;
  b->cat[GP_CAT_KERNEL] += len;
  b->sub[d->n_kern > d->n_comm ? GP_SUB_COMPUTE : GP_SUB_COMMUNICATION] += len;
  if (d->n_xfer) b->kernel_xfer_overlap += len;
  if (d->n_comm && d->n_kern > d->n_comm) b->comm_overlap += len;
  b->kernel_nsum += len * d->n_kern;
  b->small_nsum += len * d->n_small;
  b->occ_nsum += len * d->n_occ;
  b->occ_wsum += (double)len * occ;
  b->cov_ns += (double)len * cov;
  if (!gp_book_windows(a, d, from, to, GP_CAT_KERNEL, cov, NULL, 0)) return;
  /* a degraded idle run (idle[1]) lies within an idle run (idle[0]): a
   * stretch that opens it opens idle[0] too (idle_deg implies idle), and
   * one that ends idle[0] ends it (account) */
  if (d->idle[0].in) {
    gp_run_close(&d->idle[0], from);
    gp_run_close(&d->idle[1], from);
  }
  if (a->cs_on)
    gp_cs_seg(a->cs, (uint32_t)(d - a->dev), GP_CAT_KERNEL, from, to, a->T);
}

/* gp_dev_settle's body: inline where a kernel starts (on_kernel), which
 * settles the kernel before it on nearly every record; a call there saved
 * and restored six registers each time. */
static inline __attribute__((always_inline)) void
gp_dev_settle_in(struct gp_attr *a, struct dev *d, uint64_t t) {
  size_t mask = d->kq_cap - 1;
  while (d->kq_n && d->kq[d->kq_head].t <= t) {
    const struct kend *k = &d->kq[d->kq_head];
    if (k->t > d->seg_t) { /* gp_flush_dev_to */
      gp_account_kernel(a, d, d->seg_t, k->t);
      d->seg_t = k->t;
    }
    d->n_kern--;
    d->cov_rate -= k->cov;
    d->n_comm -= k->comm;
    d->n_small -= k->small;
    d->n_occ -= k->has_occ;
    d->occ_rate -= k->occ;
    d->kq_head = (d->kq_head + 1) & mask;
    d->kq_n--;
  }
}

/* attr_steps.c: cutting the run into steps. Each hook is cheap when no
 * candidate is open. */
int gp_steps_init(struct gp_attr *a);
void gp_steps_free(struct gp_attr *a);
/* a range of phase pi opens / closes on thread th at t (open: see there) */
int gp_steps_range(struct gp_attr *a, uint32_t pi, uint64_t th, int open,
                   uint64_t t);
/* the step counters a call of class cls adds 1 to whatever its record
 * holds, as a mask of 1 << GP_SC_* (apidef.sc_ones) */
uint32_t gp_steps_ones(uint64_t cls);
/* gp_steps_call and gp_steps_device: attr_steps.h */
void gp_steps_boundary(struct gp_attr *a, uint32_t cand, uint64_t thread,
                       uint64_t t);
/* the last gp_steps_call was made in a measured step of the fixed steps */
int gp_steps_last_measured(const struct gp_attr *a);
/* an undecided copy turned out blocking */
void gp_steps_blocked(struct gp_attr *a, const struct acall *c);
void gp_steps_items(struct gp_attr *a, uint64_t thread, uint64_t count);
/* end of the sweep: chooses the steps and moves them into r */
int gp_steps_finish(struct gp_attr *a, struct gp_proc_res *r);

/* attr_feed.c */
void gp_phase_open(struct gp_attr *a, uint32_t pi, uint64_t t);
void gp_phase_close(struct gp_attr *a, uint32_t pi, uint64_t start, uint64_t t);
void gp_mem_fill(struct gp_attr *a, struct dev *d, size_t upto);

#endif
