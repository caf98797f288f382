/* compare and check, the CI gate (docs/compare.md). Each side is a list of
 * runs; a run is what compare needs of one or more processes' results,
 * extracted file by file so that memory grows with names and steps, never
 * with events. gp_cmp_judge turns two sides (or one, for check) into a
 * verdict that render_compare.c writes as text, markdown, JSON or JUnit. */
#ifndef GP_COMPARE_H
#define GP_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "report.h"
#include "stats.h"

/* Per measured step: kernels by device time, API calls by blocked time. */
struct gp_cmp_name {
  char *name; /* kernels: the demangled declaration, else the name */
  double per_step, count;
};

struct gp_cmp_finding {
  char *rule, *text;
};

struct gp_cmp_run {
  char *id;   /* the run id, or the file's name when the trace has none */
  char *file; /* the first file of the run */
  size_t nfiles;
  /* the steps of its critical process: the one with the slowest median */
  int has_steps, source;
  size_t found; /* steps found in its processes, the warm-up included */
  char *step_name;
  size_t measured;
  double *step_ns; /* measured steps' durations */
  double *cat_ns;  /* measured x GP_CAT_N: per step, per GPU */
  double median, mean, p95, p99, max, per_s, items_per_s; /* -1: unknown */
  double cat[GP_CAT_N]; /* mean per step, per GPU, ns */
  double c_med[GP_SC_N];
  int detail; /* kernels and APIs below are per step */
  struct gp_cmp_name *kern, *api;
  size_t nkern, napi;
  /* the whole run: every process */
  struct gp_cmp_name *wkern, *wapi; /* totals over the run, by name */
  size_t nwkern, nwapi, capwkern, capwapi;
  double wcat[GP_CAT_N]; /* over every GPU of every process, ns */
  size_t wndev;          /* those GPUs */
  uint64_t wstart, wend, lost, mem_peak;
  double mem_peak_pct; /* -1: the device's memory is unknown */
  double kern_ns, dev_ns, cov_ns, cov_dev_ns; /* busy and coverage sums */
  struct gp_cmp_finding *find;
  size_t nfind;
  int degraded, truncated;
  /* preflight: the first process that named its GPU */
  char *device, *cmdline, *host;
  uint64_t sms, mem_total;
  size_t ndev;
  int64_t driver, runtime;
};

struct gp_cmp_side {
  struct gp_cmp_run *v;
  size_t n;
};

/* Adds one process's result to the side: to the run of its run id, or as
 * a run of its own. 0, or -1 when out of memory. */
int gp_cmp_side_add(struct gp_cmp_side *s, const struct gp_proc_res *r);
void gp_cmp_side_free(struct gp_cmp_side *s);

/* A run's value of a metric (budget.h); as_pct asks categories and
 * mem_peak for their share. 0, or -1 when the run does not have it, with
 * the reason in *why. */
int gp_cmp_run_value(const struct gp_cmp_run *r, int metric, int as_pct,
                     double *v, const char **why);

struct gp_cmp_opts {
  double noise;     /* the noise floor: 0.02 */
  double threshold; /* the primary metric's threshold: 0.05 */
  double min_delta; /* the primary metric's absolute delta; 0: none */
  /* per metric: --max-slowdown M=, --min-delta M= (either gates it) */
  double m_slow[GP_M_N], m_delta[GP_M_N];
  unsigned char m_set[GP_M_N];  /* 1 slowdown, 2 delta: bits */
  unsigned char exact[GP_SC_N]; /* counters gated exactly */
  int allow_different_devices;
  size_t resamples; /* 0: 10000 */
  uint64_t seed;
  int inconclusive; /* what inconclusive exits with: 3, 0 or 1 */
  /* --step or --warmup given (NULL, -1: neither): runs without measured
   * steps are then a mistake to name, not a reason to judge the window */
  const char *step;
  long warmup;
  const struct gp_budgets *budgets;
};

void gp_cmp_opts_init(struct gp_cmp_opts *o);

enum gp_cmp_mode {
  GP_MODE_RUNS,  /* >= 3 runs a side: one sample per run */
  GP_MODE_STEPS, /* fewer: block bootstrap over the steps (advisory) */
  GP_MODE_NONE,  /* no interval could be formed */
};

struct gp_cmp_metric {
  int metric, primary;
  enum gp_cmp_mode mode;
  double base, cand;     /* the statistic of each side, in the metric's unit */
  struct gp_interval iv; /* of worse/better: > 1 is worse */
  struct gp_slow slow;
  struct gp_rule rule;
  size_t nb, nc;   /* samples: runs or steps */
  double *sb, *sc; /* per-run values (GP_MODE_RUNS), else NULL */
  enum gp_verdict v;
  char reason[256];
};

struct gp_cmp_counter {
  int sc, gated;
  double base, cand; /* median per step over the runs */
  int exact;         /* every run of each side agrees */
  enum gp_verdict v;
  char text[256]; /* the change in words; "" when none */
};

struct gp_cmp_row {
  const char *name; /* points into a run of the sides */
  double base, cand;
  int added, gone; /* new / vanished */
};

struct gp_cmp_budget {
  const struct gp_budget *b;
  int known;
  double value;
  enum gp_verdict v; /* PASS, REGRESSION (exceeded) or INCONCLUSIVE */
  char reason[160];
};

struct gp_cmp_result {
  int has_base; /* 0: check */
  enum gp_verdict verdict;
  int exit_code;
  char reason[512];
  struct gp_cmp_metric *m;
  size_t nm;
  struct gp_cmp_counter ctr[GP_SC_N];
  int have_cats;                           /* the explanation below is filled */
  int whole; /* no run has steps: the explanation is per run, not per step */
  double cat_b[GP_CAT_N], cat_c[GP_CAT_N]; /* ns per step (run), per GPU */
  double share_b[GP_CAT_N], share_c[GP_CAT_N]; /* % of the step (run) */
  struct gp_cmp_row *kern, *api;
  size_t nkern, napi;
  const struct gp_cmp_finding **appeared, **gone;
  size_t nappeared, ngone;
  char notes[8][256]; /* preflight and data warnings */
  size_t nnotes;
  int devices_differ;
  struct gp_cmp_budget *bud;
  size_t nbud, nbud_failed;
};

/* Judges cand against base (base NULL: check, budgets only). 0, or -1
 * when out of memory. */
int gp_cmp_judge(const struct gp_cmp_side *base, const struct gp_cmp_side *cand,
                 const struct gp_cmp_opts *o, struct gp_cmp_result *res);
void gp_cmp_result_free(struct gp_cmp_result *res);

/* Outputs (render_compare.c). All return 0, or -1 when writing failed. */
struct gp_cmp_out {
  const struct gp_cmp_side *base, *cand;
  const struct gp_cmp_result *res;
  const struct gp_cmp_opts *opts;
  size_t top; /* rows of the kernel and API tables */
};

int gp_cmp_text(FILE *f, const struct gp_cmp_out *o);
int gp_cmp_markdown(FILE *f, const struct gp_cmp_out *o);
int gp_cmp_json(FILE *f, const struct gp_cmp_out *o);
int gp_cmp_junit(FILE *f, const struct gp_cmp_out *o);
/* GitHub's "::error title=...::..." workflow commands: at most 10. */
int gp_cmp_annotations(FILE *f, const struct gp_cmp_out *o);

#define GP_CMP_SCHEMA 1

#endif
