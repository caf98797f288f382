/* Measured counters (NVML, GPM, CUPTI PM sampling) beside the attribution:
 * the METRIC, SAMPLE and SAMPLER records of a trace, reduced to
 * time-weighted aggregates per device over the window, per step, per phase
 * and per time bucket (never one entry per sample). Definitions and
 * thresholds: docs/counters.md ("Report"). */
#ifndef GP_MEASURED_H
#define GP_MEASURED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct gp_json;

/* The quantities the report uses: X(UPPER, name, unit, json key).
 * name is the METRIC name (docs/format.md), unit the GPUPHASE_UNIT_* it
 * must have; json the key of the time-weighted mean in "measured". The
 * three THR_* quantities are not names of the trace: they are derived from
 * clock_events, as 100 while the reason bits are set and 0 otherwise. */
#define GP_MQS(X)                                                              \
  X(GPU_UTIL, "gpu_util", PERCENT, "nvml_gpu_util_pct")                        \
  X(MEM_UTIL, "mem_util", PERCENT, "nvml_mem_util_pct")                        \
  X(SM_ACTIVE, "sm_active", PERCENT, "sm_active_pct")                          \
  X(SM_OCC, "sm_occupancy", PERCENT, "sm_occupancy_pct")                       \
  X(TENSOR, "tensor_active", PERCENT, "tensor_active_pct")                     \
  X(DRAM_BW, "dram_bw", PERCENT, "dram_bw_pct")                                \
  X(GR_ACTIVE, "gr_active", PERCENT, "gr_active_pct")                          \
  X(PCIE_BW, "pcie_bw", PERCENT, "pcie_bw_pct")                                \
  X(PCIE_TX, "pcie_tx", BYTES_PER_S, "pcie_tx_bytes_per_s")                    \
  X(PCIE_RX, "pcie_rx", BYTES_PER_S, "pcie_rx_bytes_per_s")                    \
  X(NVL_TX, "nvlink_tx", BYTES_PER_S, "nvlink_tx_bytes_per_s")                 \
  X(NVL_RX, "nvlink_rx", BYTES_PER_S, "nvlink_rx_bytes_per_s")                 \
  X(MEM_USED, "mem_used", BYTES, "mem_used_mean_bytes")                        \
  X(PROC_MEM, "proc_mem_used", BYTES, "proc_mem_used_mean_bytes")              \
  X(MEM_TOTAL, "mem_total", BYTES, "mem_total_bytes")                          \
  X(SM_CLOCK, "sm_clock", MHZ, "sm_clock_mhz")                                 \
  X(MEM_CLOCK, "mem_clock", MHZ, "mem_clock_mhz")                              \
  X(POWER, "power", WATTS, "power_w")                                          \
  X(TEMP, "temperature", CELSIUS, "temperature_c")                             \
  X(PROCS, "procs", COUNT, "procs_mean")                                       \
  X(ENERGY, "energy", JOULES, NULL)                                            \
  X(CLOCK_EV, "clock_events", MASK, NULL)                                      \
  X(THR_POWER, NULL, MASK, "throttle_power_pct")                               \
  X(THR_THERMAL, NULL, MASK, "throttle_thermal_pct")                           \
  X(THR_SLOW, NULL, MASK, "throttle_hw_slowdown_pct")

enum gp_mq {
#define GP_X(U, n, u, j) GP_MQ_##U,
  GP_MQS(GP_X)
#undef GP_X
      GP_MQ_N
};
extern const char *const gp_mq_name[GP_MQ_N];
extern const char *const gp_mq_json[GP_MQ_N];

/* NVML clock event reason bits (nvmlClocksEventReason*) the report reads */
#define GP_CLK_SW_POWER 0x4ull    /* SW power cap */
#define GP_CLK_HW_SLOWDOWN 0x8ull /* HW slowdown (thermal or power brake) */
#define GP_CLK_SW_THERMAL 0x20ull /* SW thermal slowdown */
#define GP_CLK_HW_THERMAL 0x40ull /* HW thermal slowdown */
#define GP_CLK_HW_POWER 0x80ull   /* HW power brake slowdown */
#define GP_CLK_POWER (GP_CLK_SW_POWER | GP_CLK_HW_POWER)
#define GP_CLK_THERMAL (GP_CLK_SW_THERMAL | GP_CLK_HW_THERMAL)

#define GP_MEAS_BUCKETS 60 /* time buckets of the window ("series") */

/* Time-weighted aggregate: mean = wsum / ns; peak the highest value that
 * held during the part; ns 0: no sample covers it. */
struct gp_magg {
  double wsum, ns, peak;
};
double gp_magg_mean(const struct gp_magg *a); /* -1 when ns == 0 */

struct gp_mq_res {
  int source; /* GPUPHASE_MSRC_* used; 0: not measured */
  uint64_t samples;
  struct gp_magg total;
  struct gp_magg bucket[GP_MEAS_BUCKETS];
  struct gp_magg *step;  /* [nsteps]; NULL: over the memory budget */
  struct gp_magg *phase; /* [nphases]; likewise */
};

struct gp_msrc_state {
  int seen;     /* a SAMPLER record or a METRIC of this source */
  int ok_once;  /* it reported OK at some point */
  int status;   /* the last status (GPUPHASE_MSTAT_*) */
  char *reason; /* of the last record with a status other than OK */
  int bad;      /* it reported a status other than OK */
  int bad_status;
  int bad_after_ok; /* that status came after it had sampled */
};

struct gp_meas_dev {
  int64_t id;
  struct gp_mq_res q[GP_MQ_N];
  struct gp_msrc_state src[4]; /* by GPUPHASE_MSRC_* (0 unused) */
  double energy_j;        /* over the sampled part of the window; -1 unknown */
  double *step_energy;    /* [nsteps], -1 unknown */
  int other_procs;        /* procs > 1 at some time */
  int other_mem;          /* device memory used well above this process's */
  double mem_other_bytes; /* the excess (bytes) */
};

struct gp_meas_res {
  size_t ndev;
  struct gp_meas_dev *dev;
  size_t nsteps, nphases;
  const char **phase_name; /* [nphases]: r->phases[i].name at reading */
  uint64_t t0, bucket_ns;  /* bucket b covers t0 + [b, b+1) x bucket_ns */
  size_t nbuckets;
  uint64_t undefined, rejected, late; /* samples ignored (see the note) */
  uint64_t rejected_defs; /* METRICs of a known name, wrong unit or scale 0 */
  uint64_t over_budget;   /* slots without per-step/-phase aggregates */
};

/* Reads path again for its measured counters into r->meas when the trace
 * has any METRIC or SAMPLER record (else r->meas stays NULL), then runs the
 * findings again. 0, or -1 with err set (out of memory, a read error). */
int gp_meas_read(struct gp_proc_res *r, const char *path, char *err,
                 size_t errlen);
void gp_meas_free(struct gp_meas_res *m); /* accepts NULL */
/* Bytes the per-step and per-phase aggregates of all metrics together may
 * take (256 MiB; tests lower it). */
extern size_t gp_meas_part_budget;
/* The measured state of device id in r, NULL when none (no quantity of
 * the device has a sample). */
const struct gp_meas_dev *gp_meas_dev(const struct gp_proc_res *r, int64_t id);
int gp_meas_any(const struct gp_meas_dev *m); /* some quantity measured */
const char *gp_msrc_name(int source);
const char *gp_mstat_name(int status);

/* renderers and findings (measured_out.c) */
void gp_meas_text(FILE *f, const struct gp_proc_res *r, const char *bold,
                  const char *off);
void gp_meas_json(struct gp_json *j, const struct gp_proc_res *r,
                  const struct gp_device_res *d);
void gp_meas_html(FILE *f, const struct gp_proc_res *r,
                  const struct gp_device_res *d);
/* The findings that use measured values; each writes its sentence to buf
 * and returns 1 when it applies. */
int gp_meas_find_util_gap(const struct gp_proc_res *r,
                          const struct gp_device_res *d, char *buf, size_t n);
int gp_meas_find_dram(const struct gp_proc_res *r,
                      const struct gp_device_res *d, char *buf, size_t n);
int gp_meas_find_power(const struct gp_proc_res *r,
                       const struct gp_device_res *d, char *buf, size_t n);
int gp_meas_find_thermal(const struct gp_proc_res *r,
                         const struct gp_device_res *d, char *buf, size_t n);
int gp_meas_find_mem(const struct gp_proc_res *r, const struct gp_device_res *d,
                     char *buf, size_t n);

#endif
