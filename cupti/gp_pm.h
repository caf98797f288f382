/* CUPTI PM sampling (opt-in, GPUPHASE_PM=1): one thread of its own runs
 * the sequence of docs/counters.md ("PM sampling") for each device it is
 * given and hands out samples and state changes through hooks. Uses the
 * CUPTI library gp_cupti_open loaded; declarations in gp_pmsampling.h. */
#ifndef GP_PM_H
#define GP_PM_H

#include <stdint.h>

/* The metrics asked for, in this order; GP_PM_NMETRICS of them. */
struct gp_pm_metric {
  const char *cupti; /* CUPTI metric name */
  const char *name;  /* trace name (docs/format.md, "Measured counters") */
  int unit;          /* GPUPHASE_UNIT_* */
  uint64_t scale;    /* a sample's value is the reading x scale, rounded */
};
#define GP_PM_NMETRICS 8
extern const struct gp_pm_metric gp_pm_metrics[GP_PM_NMETRICS];

struct gp_pm_hooks {
  /* One reading of metric `metric` (index in gp_pm_metrics) of device
   * over [start, end) (CLOCK_MONOTONIC ns), already scaled. */
  void (*sample)(int device, unsigned metric, uint64_t start, uint64_t end,
                 int64_t value);
  /* From mono_ns on, the device's PM sampling is in state status
   * (GPUPHASE_MSTAT_*), for the reason given ("" none). */
  void (*state)(int device, int status, uint64_t mono_ns, const char *reason);
  /* Called first on the sampling thread (mark it as the shim's own). */
  void (*thread_init)(void);
  /* One line on stderr. */
  void (*warn)(const char *line);
  uint64_t (*now_ns)(void);
};

/* Starts the thread; lib is the dlopen handle of CUPTI (NULL: not loaded:
 * each device given later gets state MISSING). interval_ns is the sampling
 * interval. Returns 0 when the thread runs. */
int gp_pm_start(const struct gp_pm_hooks *hooks, void *lib,
                uint64_t interval_ns);
/* A device the process uses: sampled from now on (any thread; returns at
 * once; a device already asked for is ignored). */
void gp_pm_add_device(int device);
/* Stops every session (last decode included) and the thread; waits at
 * most timeout_ms for it. After it, no hook is called. */
void gp_pm_stop(int timeout_ms);
/* In a forked child: the thread and the sessions are the parent's. */
void gp_pm_forget(void);

#endif
