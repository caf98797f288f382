/* The analysed result of one process (or of several added together), as the
 * attribution engine leaves it and the renderers read it. Categories,
 * sub-categories and transfer kinds are declared once here (X-tables) and
 * their lower-case names are the JSON keys. Definitions: docs/attribution.md;
 * JSON: docs/report-json.md. */
#ifndef GP_REPORT_H
#define GP_REPORT_H

/* The length of the over-time windows when --window is not given. */
#define GP_DEFAULT_WINDOW_NS 100000000ull

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

struct gp_timeline;
struct gp_cs_res;
struct gp_meas_res;

/* X(UPPER, key, label): first match wins, in this order. */
#define GP_CATEGORIES(X)                                                       \
  X(KERNEL, kernel, "kernel")                                                  \
  X(TRANSFER, transfer, "transfer")                                            \
  X(LAUNCH, launch, "launch")                                                  \
  X(SYNC_IDLE, sync_idle, "sync idle")                                         \
  X(HOST_WAIT, host_wait, "host wait")

enum gp_cat {
#define GP_X(U, k, l) GP_CAT_##U,
  GP_CATEGORIES(GP_X)
#undef GP_X
      GP_CAT_N
};

/* Transfer kinds, in the order that decides which one a moment of transfer
 * time is booked to when several run at once. X(UPPER, key, label) */
#define GP_XFERS(X)                                                            \
  X(H2D, h2d, "H2D")                                                           \
  X(D2H, d2h, "D2H")                                                           \
  X(D2D, d2d, "D2D")                                                           \
  X(P2P, p2p, "P2P")                                                           \
  X(MEMSET, memset, "memset")                                                  \
  X(OTHER, other, "other")

enum gp_xfer {
#define GP_X(U, k, l) GP_XFER_##U,
  GP_XFERS(GP_X)
#undef GP_X
      GP_XFER_N
};

/* Sub-categories: kernel time splits into compute and communication, transfer
 * time into the transfer kinds; part of host_wait is spent in other CUDA
 * calls. */
enum gp_sub {
  GP_SUB_COMPUTE,
  GP_SUB_COMMUNICATION,
  GP_SUB_XFER, /* + enum gp_xfer */
  /* host_wait while the host is inside a CUDA call that neither enqueues
   * nor synchronises (allocation, creation, queries) */
  GP_SUB_HOST_API = GP_SUB_XFER + GP_XFER_N,
  GP_SUB_N
};

extern const char *const gp_cat_key[GP_CAT_N];
extern const char *const gp_cat_label[GP_CAT_N];
extern const char *const gp_xfer_key[GP_XFER_N];
extern const char *const gp_xfer_label[GP_XFER_N];

/* Time of one device (or a sum over devices) split into categories, plus the
 * integrals the utilizations are computed from. All in ns unless noted. */
struct gp_breakdown {
  uint64_t cat[GP_CAT_N];
  uint64_t sub[GP_SUB_N];
  uint64_t kernel_xfer_overlap; /* >= 1 kernel and >= 1 copy/memset */
  uint64_t comm_overlap;        /* communication and compute kernels at once */
  uint64_t kernel_nsum;         /* kernel-ns: time x running kernels */
  uint64_t small_nsum;          /* kernel-ns of kernels with blocks < SMs/2 */
  uint64_t occ_nsum;            /* kernel-ns of kernels of known occupancy */
  double occ_wsum;              /* kernel-ns x theoretical occupancy (0..1) */
  double cov_ns;                /* time x min(1, sum of blocks/SMs) */
};

void gp_breakdown_add(struct gp_breakdown *dst, const struct gp_breakdown *s);
uint64_t gp_breakdown_total(const struct gp_breakdown *b);

struct gp_copy_row {
  uint64_t count, bytes, ns; /* ns: sum of durations */
  uint64_t pageable, pinned; /* copies touching pageable / pinned host memory */
};

/* One fixed-length window of the timeline of a device. */
struct gp_win {
  uint64_t cat[GP_CAT_N];
  double cov_ns;
  uint64_t mem_peak; /* device bytes allocated, highest in the window */
};

/* Utilizations derived from a breakdown (gp_util_of). -1: unknown. */
struct gp_util {
  double busy_pct, cov_pct, small_pct, occ_pct;
};

struct gp_device_res {
  int64_t id;    /* CUDA ordinal; -1: "any device" (no device was named) */
  char *host;    /* host of the process, to tell GPUs of several hosts apart */
  char *name;    /* NULL if unknown */
  int has_props; /* the fields below come from a DEVICE record */
  uint64_t sms, mem_total, cc_major, cc_minor, max_threads_per_sm,
      max_blocks_per_sm, regs_per_sm, smem_per_sm, warp_size, clock_khz,
      mem_clock_khz, mem_bus_width;
  uint64_t window_ns;
  struct gp_breakdown bd;
  uint64_t mem_peak;
  double mem_area; /* byte-ns of device memory allocated */
  struct gp_copy_row copies[GP_XFER_N];
  uint64_t kernels; /* kernel executions */
  /* over time (per process only; nwin == 0 in sums) */
  uint64_t win_ns;
  size_t nwin;
  struct gp_win *win;
  uint64_t idle_longest, idle_longest_at; /* at: offset from window start */
  uint64_t busy_run, busy_run_at;         /* windows > 90% busy, first index */
  uint64_t busy_run_ns; /* their length (the last window may be partial) */
  /* derived by gp_res_derive */
  struct gp_util util;
  double mem_peak_pct, mem_mean, mem_mean_pct; /* pct -1 when total unknown */
  double link_gbps, d2d_gbps;                  /* peaks; 0 unknown */
  double busy_p5, busy_p50, busy_p95, busy_p99;
};

struct gp_phase_dev {
  struct gp_breakdown bd;
  uint64_t mem_peak;
  /* The time the device is counted over for the phase (derived): the
   * union_ns of the process it belongs to; in a sum of processes, summed
   * over the processes that share the device. */
  uint64_t span_ns;
};

struct gp_phase_res {
  char *name;
  uint64_t count;    /* instances */
  uint64_t inst_ns;  /* sum of instance durations */
  uint64_t union_ns; /* time with >= 1 instance open, inside the window */
  struct gp_hist dur;
  struct gp_phase_dev *dev; /* parallel to the result's devices */
  struct gp_breakdown all;  /* sum over devices (derived) */
  uint64_t span_ns;         /* sum of the devices' span_ns (derived): for a
                               process, union_ns x devices */
  struct gp_util util;      /* of `all` over span_ns (derived) */
};

struct gp_kernel_res {
  char *name;      /* as recorded (CUPTI: the mangled symbol) */
  char *demangled; /* the C++ declaration, NULL if not mangled (derived) */
  uint64_t count, total;
  struct gp_hist dur;
  uint64_t grid, block; /* of the first execution; varies: not all equal */
  int grid_varies, block_varies;
  uint64_t regs, smem;
  double cov_wsum; /* sum of duration x min(1, blocks/SMs), SMs known */
  uint64_t cov_ns; /* durations of the executions in cov_wsum */
  double occ_wsum;
  uint64_t occ_ns;
  int communication;
  /* Kernels launched by the measured steps (steps.detail set): executions
   * and device time, summed over those steps. */
  uint64_t step_count, step_ns;
};

struct gp_api_res {
  char *name;
  uint64_t count, total, blocked, errors;
  /* Calls started in the measured steps (steps.detail set). */
  uint64_t step_count, step_total, step_blocked;
};

struct gp_thread_res {
  uint64_t index, tid;
  char *name;
  uint64_t cpu, submit, blocked, calls;
  /* the part of the window the thread lived in (from its first CUDA call
   * to its last), which cpu + submit + blocked add up to */
  uint64_t life;
};

struct gp_finding {
  const char *rule; /* id from the findings table */
  int64_t device;   /* -1: the process */
  const char *host; /* the device's host (the result's own string), NULL
                       unknown */
  char *text;
};

struct gp_diag {
  uint64_t records, timed, late, late_dropped, unmatched_end, open_at_end,
      unknown_free, unresolved_copies, bad_interval;
  uint64_t captured; /* launch calls captured into a graph (ran nothing) */
};

/* Where the steps of a run came from. X(UPPER, key): key is the JSON
 * "source" value. */
#define GP_STEP_SOURCES(X)                                                     \
  X(NONE, none)                                                                \
  X(NAMED, named)                                                              \
  X(PROFILER_STEP, profiler_step)                                              \
  X(REPEATED_RANGE, repeated_range)                                            \
  X(HEURISTIC, heuristic)

enum gp_step_source {
#define GP_X(U, k) GP_STEPS_##U,
  GP_STEP_SOURCES(GP_X)
#undef GP_X
      GP_STEPS_SOURCE_N
};
extern const char *const gp_step_source_key[GP_STEPS_SOURCE_N];

/* Counters of one step. Host-side counts are of the API calls that started
 * inside the step's interval (any thread); device-side figures are of the
 * work those calls launched (by correlation id), wherever it ran. */
#define GP_STEP_COUNTERS(X)                                                    \
  X(launches, "kernel and graph launch calls")                                 \
  X(syncs, "synchronising calls")                                              \
  X(sync_ns, "time blocked in synchronising calls and blocking copies, ns")   \
  X(kernels, "kernel executions launched")                                     \
  X(kernel_ns, "device time of the kernels launched, ns")                      \
  X(xfer_ns, "device time of the copies and memsets launched, ns")             \
  X(h2d_copies, "host-to-device copy calls")                                   \
  X(d2h_copies, "device-to-host copy calls")                                   \
  X(d2d_copies, "device-to-device copy calls")                                 \
  X(p2p_copies, "peer copy calls")                                             \
  X(memsets, "memset calls")                                                   \
  X(h2d_bytes, "bytes copied host to device")                                  \
  X(d2h_bytes, "bytes copied device to host")                                  \
  X(d2d_bytes, "bytes copied device to device")                                \
  X(p2p_bytes, "bytes copied between GPUs")                                    \
  X(pageable_copies, "device copies from or to pageable host memory")          \
  X(allocations, "allocation calls (device and pinned host memory)")           \
  X(frees, "free calls")                                                       \
  X(distinct_kernels, "distinct kernel names among the executions")            \
  X(items, "items (gpuphase_step_items or GPUPHASE_STEP_ITEMS)")

enum gp_step_counter {
#define GP_X(k, d) GP_SC_##k,
  GP_STEP_COUNTERS(GP_X)
#undef GP_X
      GP_SC_N
};
extern const char *const gp_step_counter_key[GP_SC_N];
extern const char *const gp_step_counter_doc[GP_SC_N];

struct gp_step {
  uint64_t start, end; /* wall interval (CLOCK_MONOTONIC ns) */
  /* device time inside [start, end) by category, summed over the GPUs of
   * the process (each GPU's categories add up to end - start) */
  uint64_t cat[GP_CAT_N];
  uint64_t c[GP_SC_N];
  uint64_t thread; /* recorder index of the thread the step ran on */
};

struct gp_steps_res {
  enum gp_step_source source;
  char *name; /* range name, glob, API name or launched kernel's name;
                 NULL when none */
  uint64_t func; /* steps cut at launches: the function (or graph) whose
                    launches start them (internal: a second pass's key) */
  int by_seq;    /* ... chosen by their sequence, not their timing */
  char *how;  /* one sentence: how the steps were found (or why none) */
  char *why;  /* the end of `how` that says why a repeated range is not
                 the step; NULL: none (internal: a later pass's
                 step_why) */
  size_t n, warmup; /* steps found; the first `warmup` are warm-up */
  struct gp_step *v; /* n steps in start order */
  size_t ndev;       /* GPUs the categories are summed over (>= 1) */
  int items_known;   /* items were counted (API or fixed per step) */
  uint64_t items_fixed; /* GPUPHASE_STEP_ITEMS of the run; 0: unset */
  int detail; /* kernels' and APIs' step_* fields are filled */
  int incomplete; /* chosen, but its steps were not all kept (too many
                     candidate ranges, or launches): a second pass must
                     settle them */
  int relaunch;   /* none chosen, and launches were not followed to the end
                     (a range repeated, then did not cover the window): a
                     pass following them alone must decide */
  /* derived over the measured steps v[warmup..n) by gp_steps_derive */
  size_t measured;
  uint64_t min_ns, median_ns, mean_ns, p95_ns, p99_ns, max_ns;
  uint64_t span_ns;  /* first measured start to last measured end */
  double per_s;      /* measured steps / span; 0 when none */
  double items_per_s; /* -1 when items are unknown */
  double busy_ns;     /* kernel category time of the measured steps */
  double per_busy_s, items_per_busy_s; /* per second of device busy time;
                                          -1 unknown */
  /* per measured step: the median and the mean of each category and
   * counter */
  uint64_t cat_med[GP_CAT_N], c_med[GP_SC_N];
  double cat_mean[GP_CAT_N], c_mean[GP_SC_N];
  /* the slowest measured steps, slowest first (indices into v) */
  size_t nslow;
  size_t slow[5];
};

/* Fills the derived fields of s (the measured-step statistics). */
int gp_steps_derive(struct gp_steps_res *s);
/* The warm-up steps left out: their total length and the longest. */
void gp_steps_warmup_span(const struct gp_steps_res *s, uint64_t *total,
                          uint64_t *longest);
/* The category of step i that exceeds its median by the most, and by how
 * much (ns); -1 when none exceeds it. */
int gp_step_excess(const struct gp_steps_res *s, size_t i, uint64_t *ns);
/* The same in words: "+38.0 ms host wait" (per GPU). */
const char *gp_step_why(const struct gp_steps_res *s, size_t i, char *buf,
                        size_t n);
/* The process whose steps speak for a set of processes: the only one
 * (with steps or not), else rank 0, else the one with the most measured
 * steps; NULL when several are given and none has steps. */
const struct gp_proc_res *gp_steps_pick(struct gp_proc_res *const *procs,
                                        size_t n);

struct gp_proc_res {
  char *file; /* NULL for the sum of several files */
  int64_t pid, ppid, rank;
  char *host, *cmdline;
  char *run_id;          /* groups the processes of one run; NULL: none */
  int64_t driver_version, runtime_version; /* e.g. 13000; 0: unknown */
  uint64_t wstart, window_ns; /* wstart: CLOCK_MONOTONIC ns */
  uint64_t win_ns;            /* the --window length */
  int started;                /* 0: no CUDA call in the trace */
  int degraded, truncated, has_summary;
  uint64_t lost, nprocs, ndegraded; /* ndegraded: processes degraded */
  uint64_t host_pinned_peak;        /* cudaHostAlloc & co., not device memory */
  size_t ndev, nthreads, nphases, nkernels, napis, nnotes, nfindings;
  struct gp_device_res *dev;
  struct gp_thread_res *threads;
  struct gp_phase_res *phases;   /* by union time, longest first */
  struct gp_kernel_res *kernels; /* by total time, longest first */
  struct gp_api_res *apis;       /* by total time, longest first */
  char **notes;
  struct gp_finding *findings;
  struct gp_diag diag;
  struct gp_steps_res steps; /* per process only (source NONE in sums) */
  struct gp_timeline *timeline; /* the HTML timeline (timeline.h); NULL
                                   unless asked for, and in sums */
  struct gp_cs_res *callsites;  /* call sites (callsites.h); NULL: none */
  uint64_t meas_records;        /* METRIC and SAMPLER records read */
  struct gp_meas_res *meas;     /* measured counters (measured.h); NULL:
                                   none, and in sums */
};

/* Options shared by the engine and derivation. */
struct gp_report_opts {
  uint64_t window_ns; /* 0: GP_DEFAULT_WINDOW_NS */
  double link_gbps;   /* host<->device peak in GB/s; 0: per device default */
  uint64_t hold_ns;   /* how long an async copy waits for its device record;
                         0: 1 s */
  const char *step;   /* --step: a range name or glob; NULL: found alone */
  long warmup;        /* --warmup: steps left out first; < 0: max(3, 10%) */
  int step_detail;    /* attribute kernels and API calls to the measured
                         steps (a second pass when the steps were found
                         alone): what compare needs */
  /* internal (pipeline.c): how a second pass finds the steps the first
   * chose */
  int step_exact;       /* `step` is a name, not a glob: the repeated
                           top-level range a first pass chose, so its
                           top-level occurrences alone, as that pass saw */
  int step_source;      /* enum gp_step_source to report */
  const char *step_api; /* heuristic: the synchronising call's name */
  uint64_t step_func;   /* heuristic: the function (or graph) whose launches
                           start steps; 0: none */
  int step_launches;    /* steps from launches alone (no range, no
                           synchronising call) */
  int step_by_seq;      /* step_func was chosen by its sequence of launches
                           (said in how the steps were found) */
  const char *step_why; /* said after how the steps were found: why a
                           repeated range is not the step (an earlier
                           pass's steps.why) */
  uint64_t step_items;  /* GPUPHASE_STEP_ITEMS of the run (the header) */
  int frames_all; /* --frames all: call sites keep every frame */
  int read_threads; /* threads reading one trace (frames decompressed ahead
                       on read_threads - 1 workers); <= 1: one */
};

void gp_res_free(struct gp_proc_res *r); /* accepts NULL; frees r too */
/* Appends a printf-formatted note; returns -1 when out of memory. */
int gp_res_note(struct gp_proc_res *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Fills the derived fields (utilizations, percentiles, findings). */
int gp_res_derive(struct gp_proc_res *r, const struct gp_report_opts *o);
/* Adds src into the sum dst (created empty by gp_res_new_sum). */
struct gp_proc_res *gp_res_new_sum(void);
int gp_res_merge(struct gp_proc_res *dst, const struct gp_proc_res *src);

/* A kernel's SM coverage in percent (0 to 100), -1 when the SMs were not
 * known for any of its executions. */
double gp_kernel_cov_pct(const struct gp_kernel_res *k);
struct gp_util gp_util_of(const struct gp_breakdown *b, uint64_t span,
                          int sms_known);

/* Findings: the table of rules lives in findings.c. */
int gp_findings_run(struct gp_proc_res *r);

#endif
