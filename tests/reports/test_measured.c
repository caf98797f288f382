/* Measured counters in the report (reports/measured*.c): traces written
 * through the trace writer with known samples, read by gp_report_file, and
 * the figures, text, JSON and HTML checked against values worked out by
 * hand below.
 *
 * The base trace (times are offsets from T0 = 1 s, in ms):
 *   the window: cudaLaunchKernel at [0, 0.001), its kernel (10 blocks on
 *   100 SMs) at [0.001, 100): window [0, 100), device busy ~100%;
 *   steps: range "step" [10,30) [30,50) [50,70) [70,90) (--step step,
 *   --warmup 0); phase "fwd" [10,20) inside the first step.
 *   GPM sm_active (interval): [5,25) 40%, [25,45) 80%, [60,100) 20%
 *     total: (40x20 + 80x20 + 20x40) / 80 = 40%
 *     steps: (40x15 + 80x5)/20 = 50, 80 (15 ms covered), 20, 20
 *     fwd: 40; step (the phase: [10,90)): (40x15 + 80x20 + 20x30)/65
 *   NVML gpu_util [0,100) 97%; GPM dram_bw [0,100) 88%, tensor_active 3%
 *   NVML mem_used (instant): 0: 1 GiB, 50: 10 GiB, 80: 2 GiB
 *     peak 10 GiB, mean (1x50 + 10x30 + 2x20)/100 = 3.9 GiB
 *   NVML energy (instant, mJ): 0: 1000 J, 40: 1020 J, 100: 1110 J
 *     E(10) = 1005, E(30) = 1015, E(50) = 1035, E(70) = 1065, E(90) = 1095
 *     steps 10, 20, 30, 30 J (median 25), total 110 J
 *   NVML clock_events (instant): 0: 0, 20: 0x4, 60: 0x44, 90: 0
 *     power cap [20,90) 70%, thermal [60,90) 30%, HW slowdown 0%
 *   NVML procs: 0: 1, 50: 2 -> other processes
 *   SAMPLER: NVML ok, GPM ok, PM denied with reason REASON. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measured.h"
#include "pipeline.h"
#include "render.h"
#include "tl.h"
#include "writer.h"

#define MS 1000000ull
#define T0 1000000000ull
#define GIB (1ull << 30)
#define REASON "needs <root> & \"admin\""

static gp_writer *w;
static char dir[] = "/tmp/gp-measured-XXXXXX";

static void add(uint32_t src, const struct gpuphase_record *r) {
  if (gp_writer_add(w, src, r) != GPUPHASE_OK) {
    fprintf(stderr, "test_measured: write failed\n");
    exit(1);
  }
}

static uint64_t str(const char *s) {
  return gp_writer_intern(w, s, strlen(s));
}

static void metric(uint64_t id, int64_t dev, uint64_t source, const char *name,
                   uint64_t unit, uint64_t scale) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_METRIC};
  r.u.metric =
      (struct gpuphase_metric){id, dev, source, str(name), unit, scale};
  add(0, &r);
}

/* samples go in source 50 + the metric's source id */
static int no_samples; /* sample() writes nothing */

static void sample(uint32_t src, uint64_t id, uint64_t start, uint64_t end,
                   int64_t v) {
  if (no_samples) return;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_SAMPLE};
  r.u.sample = (struct gpuphase_sample){id, T0 + start, T0 + end, v};
  add(src, &r);
}

static void sampler(uint32_t src, uint64_t at, uint64_t source, uint64_t status,
                    const char *reason) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_SAMPLER};
  r.u.sampler = (struct gpuphase_sampler){T0 + at, 0, source, status,
                                          reason ? str(reason) : 0};
  add(src, &r);
}

static void range(uint64_t op, uint64_t at, uint64_t name) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range = (struct gpuphase_range){
      .thread = 1, .op = op, .start = T0 + at, .name = name};
  add(1, &r);
}

enum {
  F_NONE = 0,
  F_PM = 1 << 0,          /* PM sm_active 60% over [0,100) too */
  F_TENSOR_BUSY = 1 << 1, /* tensor_active 30% instead of 3% */
  F_QUIET = 1 << 2,       /* no clock events, mem_used 3 GiB, procs 1 */
  F_CRAFTED = 1 << 3,     /* scale 0, undefined ids, huge and late values */
  F_NO_COUNTERS = 1 << 4,
  F_LOW_UTIL = 1 << 5,    /* gpu_util 60% */
  F_NO_SAMPLES = 1 << 7,  /* METRIC and SAMPLER records, no SAMPLE; NVML
                             goes OFF at 1 ms */
  F_PM_FAIL = 1 << 8,     /* with F_PM: PM fails at 99 ms */
  F_NO_GPU_UTIL = 1 << 9, /* no gpu_util metric */
  F_LATE_PROCS = 1 << 10, /* with F_QUIET: the one procs reading after the
                             window (at 150 ms), none in it */
  F_HEURISTIC = 1 << 6    /* no ranges: cudaDeviceSynchronize returns at 10,
                             20, ... 90 ms, the steps run from one return to
                             the next */
};

static char *write_trace(const char *name, int flags) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s.gph", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
  struct gp_process_info info = {0};
  info.host = "h";
  info.pid = 42;
  info.ppid = 1;
  info.rank = info.local_rank = -1;
  info.cmdline = "./train";
  info.start_mono_ns = T0 - MS;
  info.start_real_ns = 1700000000000000000ull;
  info.clock = "clock_gettime";
  if (fd < 0 || !(w = gp_writer_open(fd, &info, 4096, &err))) {
    perror(path);
    exit(1);
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def = (struct gpuphase_api_def){
      1, str("cudaLaunchKernel"), GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC, 0};
  add(0, &r);
  r.u.api_def = (struct gpuphase_api_def){2, str("cudaDeviceSynchronize"),
                                          GPUPHASE_API_SYNC, 0};
  add(0, &r);
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_DEVICE};
  struct gpuphase_device *d = &r.u.device;
  d->device = 0;
  d->name = str("Test GPU");
  d->sms = 100;
  d->mem_total = 80 * GIB;
  d->cc_major = 9;
  d->max_threads_per_sm = 2048;
  d->max_blocks_per_sm = 32;
  d->regs_per_sm = d->smem_per_sm = 65536;
  d->warp_size = 32;
  add(0, &r);
  uint64_t step = str("step"), fwd = str("fwd");
  enum {
    GPU_UTIL = 1,
    SM_ACT,
    DRAM,
    TENSOR,
    MEMU,
    ENERGY,
    CLK,
    PROCS,
    PM_SM,
    BAD_SCALE,
    HUGE_RATE
  };
  if (!(flags & F_NO_COUNTERS)) {
    if (!(flags & F_NO_GPU_UTIL))
      metric(GPU_UTIL, 0, GPUPHASE_MSRC_NVML, "gpu_util", GPUPHASE_UNIT_PERCENT,
             1000);
    metric(SM_ACT, 0, GPUPHASE_MSRC_GPM, "sm_active", GPUPHASE_UNIT_PERCENT,
           1000);
    metric(DRAM, 0, GPUPHASE_MSRC_GPM, "dram_bw", GPUPHASE_UNIT_PERCENT, 1000);
    metric(TENSOR, 0, GPUPHASE_MSRC_GPM, "tensor_active", GPUPHASE_UNIT_PERCENT,
           1000);
    metric(MEMU, 0, GPUPHASE_MSRC_NVML, "mem_used", GPUPHASE_UNIT_BYTES, 1);
    metric(ENERGY, 0, GPUPHASE_MSRC_NVML, "energy", GPUPHASE_UNIT_JOULES, 1000);
    metric(CLK, 0, GPUPHASE_MSRC_NVML, "clock_events", GPUPHASE_UNIT_MASK, 1);
    metric(PROCS, 0, GPUPHASE_MSRC_NVML, "procs", GPUPHASE_UNIT_COUNT, 1);
    if (flags & F_PM)
      metric(PM_SM, 0, GPUPHASE_MSRC_PM, "sm_active", GPUPHASE_UNIT_PERCENT,
             100);
    if (flags & F_CRAFTED) {
      metric(BAD_SCALE, 0, GPUPHASE_MSRC_GPM, "sm_occupancy",
             GPUPHASE_UNIT_PERCENT, 0);
      metric(HUGE_RATE, 0, GPUPHASE_MSRC_GPM, "pcie_tx",
             GPUPHASE_UNIT_BYTES_PER_S, 1);
      metric(77, 0, GPUPHASE_MSRC_GPM, "no_such_metric", GPUPHASE_UNIT_PERCENT,
             1);
    }
  }
  /* the window */
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){.thread = 1,
                                  .api = 1,
                                  .start = T0,
                                  .end = T0 + 1000,
                                  .corr = 1,
                                  .device = 0};
  add(1, &r);
  for (int i = 0; i < 9 && (flags & F_HEURISTIC); i++) {
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
    uint64_t ret = T0 + (10 + 10 * (uint64_t)i) * MS;
    r.u.api = (struct gpuphase_api){.thread = 1,
                                    .api = 2,
                                    .start = ret - MS,
                                    .end = ret,
                                    .corr = 100 + (uint64_t)i,
                                    .device = 0};
    add(1, &r);
  }
  for (int i = 0; i < 4 && !(flags & F_HEURISTIC); i++) {
    range(GPUPHASE_RANGE_PUSH, (10 + 20 * (uint64_t)i) * MS, step);
    if (!i) range(GPUPHASE_RANGE_PUSH, 10 * MS, fwd);
    if (!i) range(GPUPHASE_RANGE_POP, 20 * MS, 0);
    range(GPUPHASE_RANGE_POP, (30 + 20 * (uint64_t)i) * MS, 0);
  }
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_KERNEL};
  struct gpuphase_kernel *k = &r.u.kernel;
  k->device = 0;
  k->corr = 1;
  k->start = T0 + 1000;
  k->end = T0 + 100 * MS;
  k->name = str("small_kernel");
  k->grid_x = 10;
  k->block_x = 256;
  k->grid_y = k->grid_z = k->block_y = k->block_z = 1;
  add(10, &r);
  if (!(flags & F_NO_COUNTERS)) {
    /* NVML: source 51 */
    sampler(51, 0, GPUPHASE_MSRC_NVML, GPUPHASE_MSTAT_OK, NULL);
    sampler(51, 0, GPUPHASE_MSRC_PM, GPUPHASE_MSTAT_DENIED, REASON);
    if (flags & F_NO_SAMPLES)
      sampler(51, MS, GPUPHASE_MSRC_NVML, GPUPHASE_MSTAT_OFF, "switched off");
    no_samples = (flags & F_NO_SAMPLES) != 0;
    if (!(flags & F_NO_GPU_UTIL))
      sample(51, GPU_UTIL, 0, 100 * MS, flags & F_LOW_UTIL ? 60000 : 97000);
    int quiet = flags & F_QUIET;
    sample(51, MEMU, 0, 0, 1 * GIB);
    sample(51, ENERGY, 0, 0, 1000000);
    sample(51, CLK, 0, 0, 0);
    if (flags & F_LATE_PROCS)
      sample(51, PROCS, 150 * MS, 150 * MS, 1);
    else
      sample(51, PROCS, 0, 0, 1);
    if (!quiet) sample(51, CLK, 20 * MS, 20 * MS, 0x4);
    sample(51, ENERGY, 40 * MS, 40 * MS, 1020000);
    sample(51, MEMU, 50 * MS, 50 * MS, quiet ? 3 * GIB : 10 * GIB);
    if (!quiet) sample(51, PROCS, 50 * MS, 50 * MS, 2);
    if (!quiet) sample(51, CLK, 60 * MS, 60 * MS, 0x44);
    sample(51, MEMU, 80 * MS, 80 * MS, 2 * GIB);
    sample(51, CLK, 90 * MS, 90 * MS, 0);
    sample(51, ENERGY, 100 * MS, 100 * MS, 1110000);
    if (flags & F_CRAFTED) {
      sample(51, 999, 10 * MS, 20 * MS, 5); /* never defined */
      sample(51, 999, 20 * MS, 30 * MS, 5);
      sample(51, MEMU, 85 * MS, 85 * MS, -5); /* a negative byte count */
    }
    /* GPM: source 52 */
    sampler(52, 0, GPUPHASE_MSRC_GPM, GPUPHASE_MSTAT_OK, NULL);
    sample(52, DRAM, 0, 100 * MS, 88000);
    sample(52, TENSOR, 0, 100 * MS, flags & F_TENSOR_BUSY ? 30000 : 3000);
    if (flags & F_CRAFTED) {
      sample(52, BAD_SCALE, 0, 100 * MS, 50000);
      sample(52, HUGE_RATE, 0, 100 * MS, INT64_MAX);
      sample(52, 77, 0, 100 * MS, 1);
      sample(52, SM_ACT, 1 * MS, 2 * MS, INT64_MAX); /* an absurd percentage */
    }
    sample(52, SM_ACT, 5 * MS, 25 * MS, 40000);
    sample(52, SM_ACT, 25 * MS, 45 * MS, 80000);
    if (flags & F_CRAFTED) /* out of time order in its source */
      sample(52, SM_ACT, 20 * MS, 22 * MS, 0);
    sample(52, SM_ACT, 60 * MS, 100 * MS, 20000);
    if (flags & F_PM) {
      sampler(53, 0, GPUPHASE_MSRC_PM, GPUPHASE_MSTAT_OK, NULL);
      sample(53, PM_SM, 0, 100 * MS, 6000);
      if (flags & F_PM_FAIL)
        sampler(53, 99 * MS, GPUPHASE_MSRC_PM, GPUPHASE_MSTAT_FAILED,
                "decode error");
    }
  }
  no_samples = 0;
  if (gp_writer_close(w, NULL) != GPUPHASE_OK) {
    fprintf(stderr, "test_measured: close failed\n");
    exit(1);
  }
  return path;
}

static struct gp_proc_res *report(const char *name, int flags) {
  const char *path = write_trace(name, flags);
  struct gp_report_opts o = {.step = "step", .warmup = 0};
  if (flags & F_HEURISTIC) o.step = NULL;
  int status = 0;
  char err[512] = "";
  struct gp_proc_res *r =
      gp_report_file(path, &o, NULL, NULL, &status, err, sizeof err);
  if (!r) {
    fprintf(stderr, "test_measured: %s: %s\n", name, err);
    exit(1);
  }
  return r;
}

static char *render(const struct gp_proc_res *r,
                    int (*fn)(FILE *, const struct gp_report_set *,
                              const struct gp_render_opts *)) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_proc_res *p = (struct gp_proc_res *)r;
  struct gp_report_set s = {&p, 1, r, NULL};
  struct gp_render_opts o = {0};
  if (!f || fn(f, &s, &o) < 0) abort();
  fclose(f);
  if (getenv("MEAS_DUMP")) fputs(buf, stderr);
  return buf;
}

/* JSON without the whitespace outside strings */
static char *compact(char *j) {
  size_t o = 0;
  int in = 0;
  for (size_t i = 0; j[i]; i++) {
    char c = j[i];
    if (in && c == '\\' && j[i + 1]) {
      j[o++] = c;
      j[o++] = j[++i];
      continue;
    }
    if (c == '"') in = !in;
    if (!in && (c == ' ' || c == '\n')) continue;
    j[o++] = c;
  }
  j[o] = 0;
  return j;
}

static int has(const char *hay, const char *needle, int want, int line) {
  int got = strstr(hay, needle) != NULL;
  if (got != want) {
    fprintf(stderr, "%s:%d: \"%s\" %s\n", __FILE__, line, needle,
            want ? "missing" : "present but should not be");
    tl_failures++;
  }
  return got == want;
}
#define HAS(h, n) has((h), (n), 1, __LINE__)
#define LACKS(h, n) has((h), (n), 0, __LINE__)

static const struct gp_finding *finding(const struct gp_proc_res *r,
                                        const char *rule) {
  for (size_t i = 0; i < r->nfindings; i++)
    if (!strcmp(r->findings[i].rule, rule)) return &r->findings[i];
  return NULL;
}
#define FIRES(r, rule, want) EQ(finding((r), (rule)) != NULL, (want))

static size_t phase_ix(const struct gp_proc_res *r, const char *name) {
  for (size_t i = 0; i < r->meas->nphases; i++)
    if (!strcmp(r->meas->phase_name[i], name)) return i;
  fprintf(stderr, "no phase %s\n", name);
  tl_failures++;
  return 0;
}

static void test_base(void) {
  struct gp_proc_res *r = report("base", F_NONE);
  const struct gp_meas_dev *m = gp_meas_dev(r, 0);
  if (!EQ(m != NULL, 1)) return;
  EQ(r->window_ns, 100 * MS);
  EQ(r->steps.n, 4);
  /* time-weighted, straddling step boundaries */
  const struct gp_mq_res *sa = &m->q[GP_MQ_SM_ACTIVE];
  EQ(sa->source, GPUPHASE_MSRC_GPM);
  NEAR(gp_magg_mean(&sa->total), 40, 1e-9);
  NEAR(sa->total.ns, 80e6, 1e-3);
  NEAR(gp_magg_mean(&sa->step[0]), 50, 1e-9);
  NEAR(gp_magg_mean(&sa->step[1]), 80, 1e-9);
  NEAR(sa->step[1].ns, 15e6, 1e-3);
  NEAR(gp_magg_mean(&sa->step[2]), 20, 1e-9);
  NEAR(gp_magg_mean(&sa->step[3]), 20, 1e-9);
  NEAR(gp_magg_mean(&sa->phase[phase_ix(r, "fwd")]), 40, 1e-9);
  NEAR(gp_magg_mean(&sa->phase[phase_ix(r, "step")]),
       (40.0 * 15 + 80.0 * 20 + 20.0 * 30) / 65, 1e-9);
  /* buckets of ceil(100 ms / 60) ns: the first is before any sample, the
   * fourth [5.000001, 6.666668) ms inside [5, 25) */
  EQ(r->meas->bucket_ns, 1666667);
  EQ(r->meas->nbuckets, 60);
  NEAR(gp_magg_mean(&sa->bucket[0]), -1, 0);
  NEAR(gp_magg_mean(&sa->bucket[3]), 40, 1e-9);
  NEAR(gp_magg_mean(&sa->bucket[59]), 20, 1e-9);
  /* [23.333338, 25.000005) ms: 40 but for its last 5 ns at 80 */
  NEAR(gp_magg_mean(&sa->bucket[14]), 40 + 40 * 5 / 1666667.0, 1e-9);
  /* instants hold until the next */
  const struct gp_mq_res *mu = &m->q[GP_MQ_MEM_USED];
  NEAR(mu->total.peak, 10.0 * GIB, 0.5);
  NEAR(gp_magg_mean(&mu->total), 3.9 * GIB, 1);
  NEAR(gp_magg_mean(&mu->step[1]), 1.0 * GIB, 1);
  NEAR(gp_magg_mean(&mu->step[2]), 10.0 * GIB, 1);
  /* energy by interpolation at the steps' edges */
  NEAR(m->energy_j, 110, 1e-6);
  NEAR(m->step_energy[0], 10, 1e-6);
  NEAR(m->step_energy[1], 20, 1e-6);
  NEAR(m->step_energy[2], 30, 1e-6);
  NEAR(m->step_energy[3], 30, 1e-6);
  /* throttle shares */
  NEAR(gp_magg_mean(&m->q[GP_MQ_THR_POWER].total), 70, 1e-9);
  NEAR(gp_magg_mean(&m->q[GP_MQ_THR_THERMAL].total), 30, 1e-9);
  NEAR(gp_magg_mean(&m->q[GP_MQ_THR_SLOW].total), 0, 1e-9);
  EQ(m->other_procs, 1);
  EQ(m->other_mem, 1);
  EQ(m->src[GPUPHASE_MSRC_PM].bad, 1);
  EQ(m->src[GPUPHASE_MSRC_PM].status, GPUPHASE_MSTAT_DENIED);
  EQ(m->src[GPUPHASE_MSRC_NVML].bad, 0);
  /* findings */
  FIRES(r, "measured_sm_gap", 1);
  FIRES(r, "low_sm_coverage", 0); /* the measured rule speaks */
  FIRES(r, "measured_memory_bound", 1);
  FIRES(r, "clocks_power_capped", 1);
  FIRES(r, "clocks_thermal", 1);
  FIRES(r, "memory_elsewhere", 1);
  const struct gp_finding *g = finding(r, "measured_sm_gap");
  if (g) HAS(g->text, "nvidia-smi 97%, SMs active 40% (measured, gpm)");
  if (g) HAS(g->text, "fewer than 50 blocks on 100 SMs");
  g = finding(r, "clocks_power_capped");
  if (g) HAS(g->text, "power cap 70% of the time");
  g = finding(r, "memory_elsewhere");
  if (g) HAS(g->text, "device memory used 10.0 GiB");
  /* text */
  char *t = render(r, gp_render_text);
  HAS(t, "Measured (device-wide)");
  HAS(t, "nvidia-smi GPU-Util 97.0% (nvml)");
  HAS(t, "SM active 40.0% (gpm) vs our SM-coverage estimate 10.0%");
  HAS(t, "DRAM 88.0% (gpm)");
  HAS(t, "tensor active 3.0% (gpm)");
  HAS(t, "memory used peak 10.0 GiB (device)");
  HAS(t, "power cap 70.0% / thermal 30.0% / HW slowdown 0.0%");
  HAS(t, "energy 110.0 J (25.00 J per step, median of 4)");
  HAS(t, "sources: nvml ok, gpm ok, pm denied");
  HAS(t, "degraded: pm denied: " REASON); /* before it sampled */
  HAS(t, "other processes used this device (up to 2 with a context");
  /* the section keeps to 100 columns */
  const char *sec = strstr(t, "Measured (device-wide)");
  for (const char *l = sec; l && *l && *l != '\n';) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    if (len > 100) {
      fprintf(stderr, "line of %zu columns: %.*s\n", len, (int)len, l);
      tl_failures++;
    }
    l = nl ? nl + 1 : NULL;
  }
  free(t);
  /* JSON */
  char *j = compact(render(r, gp_render_json));
  HAS(j, "\"measured\":{\"sources\":[{\"source\":\"nvml\",\"status\":\"ok\"");
  HAS(j, "\"nvml_gpu_util_pct\":97");
  HAS(j, "\"sm_active_pct\":40");
  HAS(j, "\"sm_occupancy_pct\":null");
  HAS(j, "\"dram_bw_pct\":88");
  HAS(j, "\"tensor_active_pct\":3");
  HAS(j, "\"mem_used_peak_bytes\":10737418240");
  HAS(j, "\"energy_j\":110");
  HAS(j, "\"throttle_power_pct\":70");
  HAS(j, "\"used\":{\"gpu_util\":\"nvml\",\"sm_active\":\"gpm\"");
  HAS(j, "\"other_processes\":true");
  HAS(j, "\"index\":1,\"warmup\":false,\"device_busy_pct\":100,"
         "\"nvml_gpu_util_pct\":97,\"sm_active_pct\":80");
  /* fwd [10,20): the kernel all along, 10 blocks on 100 SMs */
  const char *fw = strstr(j, "\"name\":\"fwd\",\"device_busy_pct\":100,"
                             "\"sm_active_estimate_pct\":");
  if (EQ(fw != NULL, 1)) {
    fw = strchr(fw + 50, ':') + 1;
    NEAR(strtod(fw, NULL), 10, 0.005);
    HAS(fw, ",\"nvml_gpu_util_pct\":97,\"sm_active_pct\":40,");
  }
  HAS(j, "\"reason\":\"needs \\u003croot\\u003e \\u0026 \\\"admin\\\"\"");
  free(j);
  /* HTML: the reason escaped */
  char *h = render(r, gp_render_html);
  HAS(h, "<h4>Measured (device-wide");
  HAS(h, "needs &lt;root&gt; &amp; &quot;admin&quot;");
  LACKS(h, REASON);
  HAS(h, "<polyline");
  /* per phase: fwd [10,20) at 97% and 40% */
  HAS(h, "<tr><td class=\"name\">fwd</td><td class=\"n\">97.0%</td>"
         "<td class=\"n\">40.0%</td>");
  free(h);
  gp_res_free(r);
}

/* PM over GPM for sm_active, and the findings not firing. */
static void test_pm_quiet(void) {
  struct gp_proc_res *r = report("pm", F_PM | F_TENSOR_BUSY | F_QUIET);
  const struct gp_meas_dev *m = gp_meas_dev(r, 0);
  if (!EQ(m != NULL, 1)) return;
  EQ(m->q[GP_MQ_SM_ACTIVE].source, GPUPHASE_MSRC_PM);
  NEAR(gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].total), 60, 1e-9);
  NEAR(gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].step[1]), 60, 1e-9);
  EQ(m->other_procs, 0);
  EQ(m->other_mem, 1); /* 3 GiB used, none allocated: above 2 GiB */
  NEAR(gp_magg_mean(&m->q[GP_MQ_THR_POWER].total), 0, 1e-9);
  FIRES(r, "measured_sm_gap", 0);       /* 60% active */
  FIRES(r, "measured_memory_bound", 0); /* tensor 30% */
  FIRES(r, "clocks_power_capped", 0);
  FIRES(r, "clocks_thermal", 0);
  FIRES(r, "memory_elsewhere", 0); /* 3 GiB < 4 GiB beyond ours */
  char *t = render(r, gp_render_text);
  HAS(t, "SM active 60.0% (pm)");
  HAS(t, "sources: nvml ok, gpm ok, pm ok");
  HAS(t, "degraded: pm denied: " REASON); /* it said so at first */
  LACKS(t, "(after sampling)");
  free(t);
  char *j = compact(render(r, gp_render_json));
  HAS(j, "\"sm_active\":\"pm\"");
  HAS(j, "\"throttle_power_pct\":0");
  free(j);
  gp_res_free(r);
}

/* Steps that are not ranges: split at their edges all the same. */
static void test_heuristic(void) {
  struct gp_proc_res *r = report("heuristic", F_HEURISTIC);
  const struct gp_meas_dev *m = gp_meas_dev(r, 0);
  if (!EQ(r->steps.source, GP_STEPS_HEURISTIC) || !EQ(r->steps.n, 8) ||
      !EQ(m != NULL, 1))
    return;
  const struct gp_mq_res *sa = &m->q[GP_MQ_SM_ACTIVE];
  /* [10,20) 40; [20,30) (40x5 + 80x5)/10; [40,50) only [40,45) at 80 */
  NEAR(gp_magg_mean(&sa->step[0]), 40, 1e-9);
  NEAR(sa->step[0].ns, 10e6, 1e-3);
  NEAR(gp_magg_mean(&sa->step[1]), 60, 1e-9);
  NEAR(sa->step[1].ns, 10e6, 1e-3);
  NEAR(sa->step[3].ns, 5e6, 1e-3);
  NEAR(gp_magg_mean(&sa->step[3]), 80, 1e-9);
  EQ(sa->step[4].ns, 0); /* [50,60): no sample */
  /* energy: E(10) 1005, E(20) 1010, E(90) 1095, E(100) 1110 */
  NEAR(m->step_energy[0], 5, 1e-6);
  NEAR(m->step_energy[7], 15, 1e-6);
  gp_res_free(r);
}

/* SM active measured, GPU-Util not: the coverage rule with the measured
 * value (busy 100%, SMs active 40% < 50%). */
static void test_cov_measured(void) {
  struct gp_proc_res *r = report("covmeas", F_NO_GPU_UTIL);
  FIRES(r, "measured_sm_gap", 0);
  const struct gp_finding *f = finding(r, "low_sm_coverage");
  if (EQ(f != NULL, 1))
    HAS(f->text, "busy 100% but SMs active 40% (measured, gpm): most kernel "
                 "time (100%) is in kernels of < 50 blocks on 100 SMs");
  /* NVML sampled (memory used) but no GPU-Util: the text says so */
  char *t = render(r, gp_render_text);
  HAS(t, "nvidia-smi GPU-Util none (no NVML sample period within the run)");
  free(t);
  gp_res_free(r);
}

/* Per-step and per-phase aggregates past the memory budget: those metrics
 * keep their totals; a note says how many. */
static void test_budget(void) {
  size_t old = gp_meas_part_budget;
  /* three metrics' 4 steps and 2 phases, and the energy's 8 step edges */
  gp_meas_part_budget = 3 * (4 + 2) * sizeof(struct gp_magg) + 8 * 8;
  struct gp_proc_res *r = report("budget", F_NONE);
  gp_meas_part_budget = old;
  const struct gp_meas_dev *m = gp_meas_dev(r, 0);
  if (!EQ(m != NULL, 1)) return;
  EQ(r->meas->over_budget > 0, 1);
  size_t with = 0, without = 0;
  for (int q = 0; q < GP_MQ_N; q++) {
    if (!m->q[q].source || q == GP_MQ_ENERGY) continue;
    with += m->q[q].step != NULL;
    without += m->q[q].step == NULL;
  }
  EQ(with, 3);
  EQ(without > 0, 1);
  NEAR(gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].total), 40, 1e-9);
  int noted = 0;
  for (size_t i = 0; i < r->nnotes; i++)
    noted += strstr(r->notes[i], "have no per-step or per-phase values") != 0;
  EQ(noted, 1);
  free(render(r, gp_render_json));
  free(render(r, gp_render_html));
  gp_res_free(r);
}

/* A source that fails after it sampled: its last state, said so. */
static void test_pm_fail(void) {
  struct gp_proc_res *r = report("pmfail", F_PM | F_PM_FAIL);
  char *t = render(r, gp_render_text);
  HAS(t, "sources: nvml ok, gpm ok, pm failed");
  HAS(t, "degraded: pm failed (after sampling): decode error");
  free(t);
  char *j = compact(render(r, gp_render_json));
  HAS(j, "{\"source\":\"pm\",\"status\":\"failed\",\"degraded\":true,"
         "\"degraded_status\":\"failed\",\"reason\":\"decode error\"}");
  free(j);
  gp_res_free(r);
}

/* GPU-Util 60%: the gap rule stays quiet (under 80%), so the coverage
 * rule says it, from the SMs active measured (it was left to the gap rule
 * whenever GPU-Util was measured, and no finding said it). */
static void test_low_util(void) {
  struct gp_proc_res *r = report("lowutil", F_LOW_UTIL);
  FIRES(r, "measured_sm_gap", 0);
  FIRES(r, "low_sm_coverage", 1);
  gp_res_free(r);
}

static void test_crafted(void) {
  struct gp_proc_res *r = report("crafted", F_CRAFTED);
  const struct gp_meas_dev *m = gp_meas_dev(r, 0);
  if (!EQ(m != NULL, 1)) return;
  EQ(r->meas->undefined, 2);
  EQ(r->meas->rejected, 2); /* the negative byte count, the absurd % */
  EQ(r->meas->late, 1);
  EQ(r->meas->rejected_defs, 1); /* scale 0 */
  EQ(m->q[GP_MQ_SM_OCC].source, 0);
  /* the sm_active figures are those of the base trace */
  NEAR(gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].total), 40, 1e-9);
  NEAR(m->q[GP_MQ_MEM_USED].total.peak, 10.0 * GIB, 0.5);
  NEAR(gp_magg_mean(&m->q[GP_MQ_PCIE_TX].total), (double)INT64_MAX, 1e6);
  int noted = 0;
  for (size_t i = 0; i < r->nnotes; i++)
    noted += strstr(r->notes[i], "2 measured samples name a metric id") != NULL;
  EQ(noted, 1);
  char *t = render(r, gp_render_text);
  HAS(t, "PCIe tx 9223372036.85 GB/s");
  free(t);
  char *j = compact(render(r, gp_render_json));
  free(j);
  char *h = render(r, gp_render_html);
  free(h);
  gp_res_free(r);
}

/* No counters: no section, "measured" null, the report otherwise alike. */
static void test_none(void) {
  struct gp_proc_res *r = report("none", F_NO_COUNTERS);
  EQ(r->meas == NULL, 1);
  EQ(r->meas_records, 0);
  char *t = render(r, gp_render_text);
  LACKS(t, "Measured");
  free(t);
  char *j = compact(render(r, gp_render_json));
  HAS(j, "\"measured\":null");
  free(j);
  char *h = render(r, gp_render_html);
  LACKS(h, "Measured");
  free(h);
  FIRES(r, "low_sm_coverage", 1); /* busy 100%, coverage 10%: the estimate */
  gp_res_free(r);
}

/* Hostile but well-formed records: random names, units, scales, times
 * (out of order, end before start, outside the window), values (extremes
 * included) and sampler states with odd reasons; the pipeline and the
 * three renderers must take them (the sanitizer build catches the rest)
 * and every percentage shown stays within [0, 100]. */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_random(void) {
  static const char *names[] = {"gpu_util",      "sm_active", "sm_occupancy",
                                "tensor_active", "dram_bw",   "mem_used",
                                "proc_mem_used", "energy",    "clock_events",
                                "procs",         "pcie_tx",   "sm_clock",
                                "bogus",         ""};
  static const uint64_t units[] = {1, 1, 1, 1, 1, 2, 2, 5, 8, 9, 3, 4, 1, 1};
  static const int64_t extremes[] = {0, 1, -1, INT64_MAX, INT64_MIN, 100000};
  static const char *reasons[] = {"<script>alert(1)</script>", "a\x01\x1b[31mb",
                                  "\xff\xfe", "ok & fine"};
  int with = 0; /* traces with a measured value */
  for (int it = 0; it < 60; it++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/random.gph", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
    struct gp_process_info info = {.host = "h",
                                   .pid = 1,
                                   .ppid = 1,
                                   .rank = -1,
                                   .local_rank = -1,
                                   .cmdline = "x",
                                   .start_mono_ns = T0 - MS,
                                   .clock = "clock_gettime"};
    if (fd < 0 || !(w = gp_writer_open(fd, &info, 512, &err))) exit(1);
    struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
    r.u.api_def = (struct gpuphase_api_def){1, str("cudaLaunchKernel"),
                                            GPUPHASE_API_LAUNCH, 0};
    add(0, &r);
    int nm = 1 + (int)(rnd() % 12);
    for (int m = 1; m <= nm; m++) {
      size_t ni = rnd() % (sizeof names / sizeof *names);
      metric((uint64_t)m, (int64_t)(rnd() % 3) - (rnd() % 5 == 0),
             rnd() % 5 ? 1 + rnd() % 3 : rnd() % 5, names[ni],
             rnd() % 4 ? units[ni] : rnd() % 12,
             rnd() % 6 ? 1 + rnd() % 1000 : 0);
    }
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
    r.u.api = (struct gpuphase_api){
        .thread = 1, .api = 1, .start = T0, .end = T0 + 1000, .corr = 1};
    add(1, &r);
    uint64_t step = str("step");
    for (int i = 0; i < 5; i++) {
      range(GPUPHASE_RANGE_PUSH, (uint64_t)i * 10 * MS, step);
      range(GPUPHASE_RANGE_POP, (uint64_t)i * 10 * MS + 9 * MS, 0);
    }
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_KERNEL};
    r.u.kernel = (struct gpuphase_kernel){.start = T0 + 2000,
                                          .end = T0 + 50 * MS,
                                          .corr = 1,
                                          .grid_x = 1,
                                          .grid_y = 1,
                                          .grid_z = 1,
                                          .block_x = 1,
                                          .block_y = 1,
                                          .block_z = 1};
    add(10, &r);
    int ns = (int)(rnd() % 200);
    uint64_t t = 0;
    for (int k = 0; k < ns; k++) {
      t += rnd() % (3 * MS);
      uint64_t st = rnd() % 10 ? t : rnd() % (80 * MS);
      uint64_t len = rnd() % 3 ? rnd() % (5 * MS) : 0;
      uint64_t en = rnd() % 20 ? st + len : st - 1;
      int64_t v = rnd() % 4
                      ? (int64_t)(rnd() % 200000)
                      : extremes[rnd() % (sizeof extremes / sizeof *extremes)];
      sample(51 + (uint32_t)(rnd() % 3), 1 + rnd() % (uint64_t)(nm + 2), st, en,
             v);
      if (rnd() % 25 == 0)
        sampler(51 + (uint32_t)(rnd() % 3), st, rnd() % 5, rnd() % 10,
                reasons[rnd() % 4]);
    }
    if (gp_writer_close(w, NULL) != GPUPHASE_OK) exit(1);
    struct gp_report_opts o = {.step = "step", .warmup = 0};
    int status = 0;
    char e[512];
    struct gp_proc_res *res =
        gp_report_file(path, &o, NULL, NULL, &status, e, sizeof e);
    if (!EQ(res != NULL, 1)) {
      fprintf(stderr, "random trace %d: %s\n", it, e);
      continue;
    }
    for (size_t d = 0; res->meas && d < res->meas->ndev; d++)
      for (int q = 0; q < GP_MQ_N; q++) {
        const struct gp_mq_res *x = &res->meas->dev[d].q[q];
        if (!x->source || q == GP_MQ_CLOCK_EV) continue;
        double mean = gp_magg_mean(&x->total);
        if (q <= GP_MQ_PCIE_BW || q >= GP_MQ_THR_POWER)
          if (!(mean == -1 || (mean >= 0 && mean <= 100.0 + 1e-9))) {
            fprintf(stderr, "random trace %d: quantity %d mean %f\n", it, q,
                    mean);
            tl_failures++;
          }
      }
    int any = 0;
    for (size_t d = 0; res->meas && d < res->meas->ndev; d++)
      for (int q = 0; q < GP_MQ_N; q++)
        any |= res->meas->dev[d].q[q].source != 0;
    with += any;
    free(render(res, gp_render_text));
    free(render(res, gp_render_json));
    char *h = render(res, gp_render_html);
    LACKS(h, "<script>alert");
    free(h);
    gp_res_free(res);
  }
  if (getenv("MEAS_DUMP"))
    fprintf(stderr, "random: %d of 60 with measured values\n", with);
  EQ(with >= 30, 1);
}

/* 101 steps [i, i + 1) ms, the energy counter read at every step edge,
 * step i costing i + 1 J: the median over all of them is 51 J (once it
 * was taken over the first 64 steps only: 32.5 J). */
static void test_many_steps(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/many.gph", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
  struct gp_process_info info = {.host = "h",
                                 .pid = 1,
                                 .ppid = 1,
                                 .rank = -1,
                                 .local_rank = -1,
                                 .cmdline = "x",
                                 .start_mono_ns = T0 - MS,
                                 .clock = "clock_gettime"};
  if (fd < 0 || !(w = gp_writer_open(fd, &info, 0, &err))) exit(1);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def = (struct gpuphase_api_def){1, str("cudaLaunchKernel"),
                                          GPUPHASE_API_LAUNCH, 0};
  add(0, &r);
  metric(1, 0, GPUPHASE_MSRC_NVML, "energy", GPUPHASE_UNIT_JOULES, 1);
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){
      .thread = 1, .api = 1, .start = T0, .end = T0 + 1000, .corr = 1};
  add(1, &r);
  uint64_t step = str("step");
  int64_t e = 0;
  for (uint64_t i = 0; i <= 101; i++) {
    if (i) range(GPUPHASE_RANGE_POP, i * MS, 0);
    if (i < 101) range(GPUPHASE_RANGE_PUSH, i * MS, step);
    e += (int64_t)i;
    sample(51, 1, i * MS, i * MS, e);
  }
  if (gp_writer_close(w, NULL) != GPUPHASE_OK) exit(1);
  struct gp_report_opts o = {.step = "step", .warmup = 0};
  int status = 0;
  char msg[512];
  struct gp_proc_res *res =
      gp_report_file(path, &o, NULL, NULL, &status, msg, sizeof msg);
  if (!EQ(res != NULL, 1)) return;
  EQ(res->steps.n, 101);
  const struct gp_meas_dev *m = gp_meas_dev(res, 0);
  if (EQ(m != NULL, 1)) {
    NEAR(m->step_energy[0], 1, 1e-9);
    NEAR(m->step_energy[100], 101, 1e-9);
  }
  char *t = render(res, gp_render_text);
  HAS(t, "(51.00 J per step, median of 101)");
  free(t);
  gp_res_free(res);
}

/* Sources but no sample: no section, "measured" null, one note for the
 * source that was denied (none for the one switched off). */
static void test_no_samples(void) {
  struct gp_proc_res *r = report("nosamples", F_NO_SAMPLES);
  EQ(r->meas != NULL, 1);
  EQ(gp_meas_dev(r, 0) == NULL, 1);
  char *t = render(r, gp_render_text);
  LACKS(t, "Measured");
  HAS(t, "GPU 0: no measured counters: pm denied: " REASON);
  LACKS(t, "nvml not enabled");
  free(t);
  char *j = compact(render(r, gp_render_json));
  HAS(j, "\"measured\":null");
  free(j);
  char *h = render(r, gp_render_html);
  LACKS(h, "Measured (device-wide");
  free(h);
  FIRES(r, "low_sm_coverage", 1);
  gp_res_free(r);
}

/* A quantity with no reading in the window: its mean and its maximum are
 * both null (the maximum once said 0 processes). */
static void test_late_procs(void) {
  struct gp_proc_res *r = report("lateprocs", F_QUIET | F_LATE_PROCS);
  char *j = compact(render(r, gp_render_json));
  HAS(j, "\"procs_mean\":null");
  HAS(j, "\"procs_max\":null");
  HAS(j, "\"mem_used_peak_bytes\":3221225472");
  free(j);
  gp_res_free(r);
}

int main(void) {
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  test_late_procs();
  test_base();
  test_pm_quiet();
  test_low_util();
  test_budget();
  test_cov_measured();
  test_pm_fail();
  test_heuristic();
  test_crafted();
  test_none();
  test_no_samples();
  test_many_steps();
  test_random();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (tl_failures) fprintf(stderr, "%d failures\n", tl_failures);
  return tl_failures != 0;
}
