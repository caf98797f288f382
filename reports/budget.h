/* The metrics a run is judged by, and budgets on them ("host_wait<=20%",
 * "step_p95<=120ms"). One table names every metric for budgets, for
 * --max-slowdown/--min-delta and for the JSON keys; the grammar is in
 * docs/compare.md ("Budgets"). */
#ifndef GP_BUDGET_H
#define GP_BUDGET_H

#include <stddef.h>

#include "report.h"

/* What a metric's value is, and so which units a budget on it takes. */
enum gp_mkind {
  GP_MK_DUR,   /* ns: ns us ms s */
  GP_MK_PCT,   /* percent: % */
  GP_MK_BYTES, /* bytes: B KiB MiB GiB TiB KB MB GB TB, or a bare number */
  GP_MK_COUNT, /* a bare number */
  GP_MK_RATE,  /* per second: a bare number */
  GP_MK_CAT,   /* a category: % of the step time, or a duration per step */
  GP_MK_MEM,   /* bytes, or % of the device's memory */
};

/* X(UPPER, key, kind, higher_is_better, doc) */
#define GP_FIXED_METRICS(X)                                                    \
  X(STEP_MEDIAN, step_median, DUR, 0, "median measured step time")             \
  X(STEP_MEAN, step_mean, DUR, 0, "mean measured step time")                   \
  X(STEP_P95, step_p95, DUR, 0, "95th percentile of the step time")            \
  X(STEP_P99, step_p99, DUR, 0, "99th percentile of the step time")            \
  X(STEP_MAX, step_max, DUR, 0, "slowest measured step")                       \
  X(STEPS_PER_S, steps_per_s, RATE, 1, "measured steps per second")            \
  X(ITEMS_PER_S, items_per_s, RATE, 1, "items per second")                     \
  X(BUSY, busy, PCT, 1,                                                        \
    "device busy: kernel share of the step time (of the window without "       \
    "steps)")                                                                  \
  X(SM_COVERAGE, sm_coverage, PCT, 1, "estimated SM coverage over the window") \
  X(MEM_PEAK, mem_peak, MEM, 0, "peak device memory allocated through CUDA")   \
  X(LOST_EVENTS, lost_events, COUNT, 0, "events the recorder lost")            \
  X(WINDOW, window, DUR, 0, "the profiled window of the run")

/* Metric ids: the fixed metrics, then the five categories (per step), then
 * the step counters (median per step). */
enum gp_metric {
#define GP_X(U, k, kind, hb, d) GP_M_##U,
  GP_FIXED_METRICS(GP_X)
#undef GP_X
      GP_M_CAT0,
  GP_M_SC0 = GP_M_CAT0 + GP_CAT_N,
  GP_M_N = GP_M_SC0 + GP_SC_N
};

/* The metric named s[0..len), or -1. "step_time" is step_median. */
int gp_metric_find(const char *s, size_t len);
const char *gp_metric_name(int m);
const char *gp_metric_doc(int m);
enum gp_mkind gp_metric_kind(int m);
int gp_metric_higher_better(int m);
/* Counters that count (not the *_ns times): compared exactly. */
int gp_counter_exact(int sc);
/* The names of all metrics, comma-separated, for error messages. */
const char *gp_metric_list(void);

enum gp_op { GP_OP_LE, GP_OP_LT, GP_OP_GE, GP_OP_GT, GP_OP_EQ, GP_OP_NE };

struct gp_budget {
  int metric;
  enum gp_op op;
  double value;   /* ns, bytes, percent, a count or a rate */
  int pct;        /* value is a percentage (categories, mem_peak) */
  char text[96];  /* the expression, spaces removed */
  char where[80]; /* "FILE:LINE" or "--budget" */
};

struct gp_budgets {
  struct gp_budget *v;
  size_t n;
};

/* A quantity for a metric of kind k: "20%", "120ms", "60GiB", "3". On
 * success *pct says whether it was a percentage. 0, or -1 with a message
 * in err. */
int gp_parse_quantity(const char *s, enum gp_mkind k, double *v, int *pct,
                      char *err, size_t n);

/* Parses one expression ("host_wait <= 20%") and appends it; where names
 * its origin in messages. 0, or -1 with "WHERE: message" in err. */
int gp_budgets_add(struct gp_budgets *bs, const char *expr, const char *where,
                   char *err, size_t n);
/* Every line of a file ('#' starts a comment; blank lines are skipped). */
int gp_budgets_load(struct gp_budgets *bs, const char *path, char *err,
                    size_t n);
void gp_budgets_free(struct gp_budgets *bs);

/* Whether value v meets the budget. */
int gp_budget_holds(const struct gp_budget *b, double v);
const char *gp_op_str(enum gp_op op);

#endif
