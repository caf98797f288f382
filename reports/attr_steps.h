/* The step finder's state (attr_steps.c), and the two hooks that every API
 * call and every device record go through, inline in the engine's record
 * handlers (attr_feed.c); what they do rarely stays out of line. Internal
 * to the attribution engine. */
#ifndef GP_ATTR_STEPS_H
#define GP_ATTR_STEPS_H

#include "attr_int.h"

/* Steps kept by the candidates found alone (not --step) other than the
 * one that would be chosen if the trace ended now (the lead, which keeps
 * all of its steps: the result holds them anyway): past this the largest
 * of the others' steps are dropped and, if one of them is chosen at the
 * end after all, a second pass settles it (pipeline.c). About 20 MiB. */
#define STEP_CAP (1u << 16)
#define RING_BITS 16
#define RING_MASK ((1u << RING_BITS) - 1)

enum { SC_RANGE, SC_SYNC, SC_LAUNCH };

/* Launched functions (and CUDA graphs) followed as candidates, at most;
 * the launches of functions first seen past it are not followed. */
#define LAUNCH_CANDS 4096u
/* A launch candidate's key for a graph launch (the graph exec's handle);
 * a kernel launch's is the function's address (user space: bit 63 clear) */
#define LAUNCH_GRAPH (1ull << 63)

struct sstep {
  struct gp_step s;
  /* at open: the snapshot; at close: what the step adds (see snap_delta) */
  uint64_t creal[GP_CAT_N], wd[GP_CAT_N];
  uint64_t nreal;
};

struct scand {
  uint8_t kind, dropped, open;
  uint8_t named;  /* LAUNCH: kname is known */
  uint64_t key;   /* RANGE: phase name string id (0: a shared class); SYNC:
                     API id; LAUNCH: the function (or LAUNCH_GRAPH | the
                     graph exec) launched */
  uint64_t kname; /* LAUNCH: the kernel's name (string id), or for a graph
                     the launching call's */
  /* LAUNCH: the launches (of any function) from one of its launches to the
   * next, as a run of equal counts: the current run (length rlen, run
   * times, from rstart) and the longest (blen, brun times, over
   * [bstart, bend]); lpos: the launch count at its last launch */
  uint64_t lpos, rlen, run, rstart, blen, brun, bstart, bend;
  uint64_t othread, ostart;
  uint64_t count, sum, first, last; /* closed steps, dropped or not */
  struct gp_hist dur;               /* their durations */
  struct sstep *v;
  size_t n, cap;  /* v[n - 1] is the open step while open and kept */
  uint32_t apos;  /* in the open list */
  uint64_t hc0[GP_SC_N]; /* the running host totals when it opened */
};

struct ringent { /* the version a call was made in */
  uint64_t corr;
  uint32_t ver;          /* 0: none */
  uint8_t copy_unknown;  /* a copy of the default kind: its device record's
                            kind (from the memory on either side) counts */
};

/* The detail log (gather): what the calls and kernels of a step set
 * version added, by name; summed at the end over the versions whose pairs
 * hold a measured step of the chosen candidate. */
#define GLOG_CAP (1u << 21) /* entries (64 MiB); past it, a second pass */
/* gp_steps_glog_cap (attribute.h) changes it, for tests */
#define GLOG_API 0x80000000u /* idx: an apidef's index, else a kst's */
struct gent {
  uint32_t ver, idx;
  uint64_t count, ns, blocked;
};

/* Device work of one version, not yet added to its steps. */
#define VACC_N 4 /* slots, by version modulo VACC_N */
struct vacc {
  uint32_t ver;  /* 0: empty */
  uint8_t meas;  /* fixed steps: the version's step is a measured one */
  uint64_t kernels, kernel_ns, xfer_ns, pageable;
  uint64_t copies[4], bytes[4]; /* default-kind copies, by direction */
  uint64_t pad[3]; /* 128 bytes: a slot's address is a shift of its index */
};

struct gp_stepper {
  struct scand *c;
  size_t nc, capc;
  uint32_t *open; /* candidates with a kept open step */
  size_t nopen, capopen;
  /* step set versions: version v (>= 1) is the list pairs[voff[v - 1] ..
   * voff[v]) of (candidate, step index) open when it was made */
  uint32_t ver;
  int dirty;
  uint32_t *voff;
  size_t nver, capver;
  uint32_t (*pairs)[2];
  size_t npairs, cappairs;
  struct ringent *ring;
  /* host counters of the calls made while a step was open, running */
  uint64_t hc[GP_SC_N];
  struct vacc acc[VACC_N];
  size_t others;  /* steps kept by candidates other than lead */
  uint32_t lead;  /* the candidate protected from STEP_CAP (UINT32_MAX:
                     none), chosen when the cap was last reached */
  int fixed; /* per-step detail: kernels and APIs of the measured steps
                are counted (one candidate, warm-up known), or gathered */
  int gather; /* per-step detail, the steps or the warm-up not known yet:
                 every version's detail goes to glog, and the measured
                 steps' are summed once they are (gp_steps_finish) */
  int glost;  /* glog ran out of room: no detail from this pass */
  struct gp_attr *a; /* the engine (gp_steps_distinct's kernel index) */
  struct gent *glog;
  size_t nglog, capglog;
  int capped; /* steps found alone: many candidates, STEP_CAP applies */
  int sync_off; /* a range repeats: synchronising calls keep no steps */
  uint64_t warmup;
  uint32_t named, ps; /* candidate + 1 of --step, of ProfilerStep#N */
  int items_seen, last_meas;
  /* launch candidates: the function (key) to candidate + 1; followed
   * unless --step or a fixed synchronising call says otherwise */
  struct gp_u64map lmap;
  uint32_t nlaunch;
  uint64_t nlcalls; /* launch calls followed */
  int by_seq; /* the launches chosen repeat by sequence, not by timing */
  int launch_on;
  int launch_frozen; /* launches were followed, then not: a range repeated */
  uint64_t want_corr; /* a launch whose kernel names candidate want_ci */
  uint32_t want_ci;
  uint64_t overlap, unlinked;
};

/* The pairs of step set version ver (>= 1): pairs[from .. voff[ver - 1]). */
static inline uint32_t gp_steps_vfrom(const struct gp_stepper *st,
                                      uint32_t ver) {
  return ver > 1 ? st->voff[ver - 2] : 0;
}

/* The out-of-line parts of the hooks (attr_steps.c). */
void gp_steps_sync(struct gp_attr *a, struct apidef *def,
                   const struct gpuphase_api *r, uint64_t end);
void gp_steps_launch(struct gp_attr *a, const struct apidef *def,
                     const struct gpuphase_api *r, uint64_t t);
void gp_steps_kname(struct gp_stepper *st, const struct kst *k);
uint32_t gp_steps_new_version(struct gp_attr *a);
/* Counts a copy call by its kind; 0 when the kind does not say (default:
 * the device record will). */
int gp_steps_copy(uint64_t *c, const struct gpuphase_api *r);
void gp_steps_fixed_call(struct gp_stepper *st, struct apidef *def, int cl,
                         uint64_t dur);
struct vacc *gp_steps_vacc_take(struct gp_stepper *st, struct vacc *v,
                                uint32_t ver);
void gp_steps_distinct(struct gp_stepper *st, struct kst *k, uint32_t ver,
                       uint64_t ns);

/* an API call (already classified) starts at s (clipped to the window);
 * returns the step set version to remember for its device work */
static inline uint32_t gp_steps_call(struct gp_attr *a, struct apidef *def,
                                     const struct gpuphase_api *r, int cl,
                                     uint64_t s, uint64_t end) {
  struct gp_stepper *st = a->st; /* made with the engine (gp_steps_init) */
  /* a launch may start a step (before the call counts in it) */
  if (__builtin_expect(st->launch_on, 0) && (def->cls & GPUPHASE_API_LAUNCH))
    gp_steps_launch(a, def, r, s);
  /* a synchronising call or a blocking copy (not a poll) may end steps */
  if (def->ends_steps && (def->ends_steps == 1 || cl == CALL_BLK))
    gp_steps_sync(a, def, r, end);
  st->last_meas = 0;
  if (!st->nopen) return 0;
  /* the host counters, added once to the running totals */
  uint64_t dur = end - r->start;
  for (uint32_t m = def->sc_ones; m; m &= m - 1)
    st->hc[__builtin_ctz(m)]++;
  if (cl == CALL_BLK) st->hc[GP_SC_sync_ns] += dur;
  int unknown = (def->cls & GPUPHASE_API_COPY) && !gp_steps_copy(st->hc, r);
  if (st->fixed) gp_steps_fixed_call(st, def, cl, dur);
  uint32_t v = st->dirty ? gp_steps_new_version(a) : st->ver;
  if (r->corr && v) {
    struct ringent *e = &st->ring[r->corr & RING_MASK];
    e->corr = r->corr;
    e->ver = v;
    e->copy_unknown = (uint8_t)unknown;
  }
  return v;
}

/* device work of correlation id corr (kernel: k set; a copy: x its
 * direction, GP_XFER_*, and its bytes; else x -1) */
static inline void gp_steps_device(struct gp_attr *a, uint64_t corr,
                                   struct kst *k, uint64_t ns, int pageable,
                                   int x, uint64_t bytes) {
  struct gp_stepper *st = a->st;
  if (!st->ring || !corr) return;
  /* an entry of a nonzero corr was written by gp_steps_call, with a
   * version made by then (1 to nver) */
  const struct ringent *e = &st->ring[corr & RING_MASK];
  if (e->corr != corr) return;
  if (__builtin_expect(corr == st->want_corr, 0) && k) gp_steps_kname(st, k);
  struct vacc *v = &st->acc[e->ver % VACC_N];
  if (v->ver != e->ver) v = gp_steps_vacc_take(st, v, e->ver);
  if (!k) {
    v->xfer_ns += ns;
    v->pageable += pageable != 0;
    /* H2D, D2H, D2D, P2P: the order of the step counters */
    if (e->copy_unknown && x >= 0 && x < 4) {
      v->copies[x]++;
      v->bytes[x] += bytes;
    }
    return;
  }
  v->kernels++;
  v->kernel_ns += ns;
  if (v->meas) {
    k->step_count++;
    k->step_ns += ns;
  }
  /* Distinct kernels: the name is new to a step only if it is new to the
   * version, which the name's previous launch tells. (Gathered detail:
   * what the name's previous version added goes to the log then.) */
  if (k->last_ver != e->ver) gp_steps_distinct(st, k, e->ver, ns);
}

#endif
