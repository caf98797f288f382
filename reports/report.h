/* The analysed result of one process (or of several added together), as the
 * attribution engine leaves it and the renderers read it. Categories,
 * sub-categories and transfer kinds are declared once here (X-tables) and
 * their lower-case names are the JSON keys. Definitions: docs/attribution.md;
 * JSON: docs/report-json.md. */
#ifndef GP_REPORT_H
#define GP_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

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
 * time into the transfer kinds. */
enum gp_sub {
  GP_SUB_COMPUTE,
  GP_SUB_COMMUNICATION,
  GP_SUB_XFER, /* + enum gp_xfer */
  GP_SUB_N = GP_SUB_XFER + GP_XFER_N
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
  /* derived by gp_res_derive */
  struct gp_util util;
  double mem_peak_pct, mem_mean, mem_mean_pct; /* pct -1 when total unknown */
  double link_gbps, d2d_gbps;                  /* peaks; 0 unknown */
  double busy_p5, busy_p50, busy_p95, busy_p99;
};

struct gp_phase_dev {
  struct gp_breakdown bd;
  uint64_t mem_peak;
};

struct gp_phase_res {
  char *name;
  uint64_t count;    /* instances */
  uint64_t inst_ns;  /* sum of instance durations */
  uint64_t union_ns; /* time with >= 1 instance open, inside the window */
  struct gp_hist dur;
  struct gp_phase_dev *dev; /* parallel to the result's devices */
  struct gp_breakdown all;  /* sum over devices (derived) */
  struct gp_util util;      /* of `all` over union_ns x devices (derived) */
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
};

struct gp_api_res {
  char *name;
  uint64_t count, total, blocked, errors;
};

struct gp_thread_res {
  uint64_t index, tid;
  char *name;
  uint64_t cpu, submit, blocked, calls;
};

struct gp_finding {
  const char *rule; /* id from the findings table */
  int64_t device;   /* -1: the process */
  char *text;
};

struct gp_diag {
  uint64_t records, timed, late, late_dropped, unmatched_end, open_at_end,
      unknown_free, unresolved_copies, bad_interval;
};

struct gp_proc_res {
  char *file; /* NULL for the sum of several files */
  int64_t pid, ppid, rank;
  char *host, *cmdline;
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
};

/* Options shared by the engine and derivation. */
struct gp_report_opts {
  uint64_t window_ns; /* 0: 100 ms */
  double link_gbps;   /* host<->device peak in GB/s; 0: per device default */
  uint64_t hold_ns;   /* how long an async copy waits for its device record;
                         0: 1 s */
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
struct gp_util gp_util_of(const struct gp_breakdown *b, uint64_t span,
                          int sms_known);

/* Findings: the table of rules lives in findings.c. */
int gp_findings_run(struct gp_proc_res *r);

#endif
