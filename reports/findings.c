/* The findings: one table of rules, each saying in one sentence why the
 * utilizations of a device disagree or where its time went. A rule sees the
 * derived figures of one device and writes its sentence when it applies.
 * Thresholds are documented in docs/attribution.md ("Findings"). */
#include "report.h"

#include "callsites.h"
#include "measured.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
  const struct gp_proc_res *r;
  const struct gp_device_res *d;
  double pct[GP_CAT_N]; /* of the window */
  int top;              /* the largest category */
};

typedef int (*rule_fn)(const struct ctx *c, char *buf, size_t n);

static int say(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int say(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* The call site that explains the most GPU idle time of kind k (blocking:
 * sync idle, idle_end: host wait it ended), in words appended to buf:
 * "; 68% of GPU idle time is spent while a host thread is blocked in
 * cudaStreamSynchronize from train.py:142 (step)". Nothing without one. */
static void cite(const struct ctx *c, int k, char *buf, size_t n) {
  const struct gp_cs_res *cs = c->r->callsites;
  if (!cs || !cs->has_stacks) return;
  const struct gp_cs_site *best = NULL;
  for (size_t i = 0; i < cs->n; i++) {
    uint64_t w = gp_cs_weight(&cs->v[i], k, 0);
    if (w && (!best || w > gp_cs_weight(best, k, 0))) best = &cs->v[i];
  }
  uint64_t idle = 0;
  for (size_t i = 0; i < c->r->ndev; i++)
    idle += c->r->dev[i].bd.cat[GP_CAT_LAUNCH] +
            c->r->dev[i].bd.cat[GP_CAT_SYNC_IDLE] +
            c->r->dev[i].bd.cat[GP_CAT_HOST_WAIT];
  if (!best || !idle) return;
  char fr[256] = "(no frame)";
  if (gp_cs_title(best)) gp_cs_frame_str(gp_cs_title(best), fr, sizeof fr);
  size_t len = strlen(buf);
  double p = 100.0 * (double)gp_cs_weight(best, k, 0) / (double)idle;
  if (k == GP_CS_BLOCKING)
    snprintf(buf + len, n - len,
             "; %.0f%% of GPU idle time is spent while a host thread is "
             "blocked in %s from %s",
             p, best->api, fr);
  else
    snprintf(buf + len, n - len,
             "; %.0f%% of GPU idle time is host wait that ends at %s from %s",
             p, best->api, fr);
  /* blocking calls whose site was not captured (async copies from
   * pageable memory, over the capture's cap or with GPUPHASE_STACKS=sync)
   * may explain more than the site named */
  uint64_t un = cs->sync_uncaptured_ns;
  if (k == GP_CS_BLOCKING && un > gp_cs_weight(best, k, 0)) {
    len = strlen(buf);
    snprintf(buf + len, n - len,
             ", and %.0f%% in calls whose site was not captured "
             "(GPUPHASE_STACKS=all captures every call)",
             100.0 * (double)un / (double)idle);
  }
}

static double gib(double bytes) {
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

/* Kernels keep the GPU "busy" without filling its SMs. (Not where degraded
 * processes count blocking calls as kernel time.) With SM activity
 * measured, the measured value stands in for the estimate; with
 * nvidia-smi's GPU-Util measured too, the measured rule says it. */
static int low_coverage(const struct ctx *c, char *buf, size_t n) {
  const struct gp_util *u = &c->d->util;
  const struct gp_meas_dev *m = gp_meas_dev(c->r, c->d->id);
  double cov = u->cov_pct;
  const char *what = "SM coverage";
  char how[48] = "";
  if (m && m->q[GP_MQ_SM_ACTIVE].source &&
      gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].total) >= 0) {
    /* with nvidia-smi's GPU-Util measured too, measured_sm_gap says it
     * when it fires (GPU-Util of 80% and more); below that, this does */
    char gap[512];
    if (m->q[GP_MQ_GPU_UTIL].source &&
        gp_meas_find_util_gap(c->r, c->d, gap, sizeof gap))
      return 0;
    cov = gp_magg_mean(&m->q[GP_MQ_SM_ACTIVE].total);
    what = "SMs active";
    snprintf(how, sizeof how, " (measured, %s)",
             gp_msrc_name(m->q[GP_MQ_SM_ACTIVE].source));
  }
  /* from 10% busy on: where busy and coverage part, the sentence that says
   * why (a GPU mostly idle has its own finding, this one says how the rest
   * runs) */
  if (c->r->ndegraded || u->busy_pct < 10 || cov < 0 || cov >= u->busy_pct / 2)
    return 0;
  unsigned long long sms = (unsigned long long)c->d->sms;
  char cv[16]; /* below 10% with one decimal, as the GPU block prints it */
  gp_fmt_pct(cv, sizeof cv, cov);
  if (u->small_pct >= 50)
    return say(buf, n,
               "busy %.0f%% but %s %s%s: most kernel time (%.0f%%) "
               "is in kernels of < %llu blocks on %llu SMs",
               u->busy_pct, what, cv, how, u->small_pct, (sms + 1) / 2, sms);
  return say(buf, n,
             "busy %.0f%% but %s %s%s: many kernels launch fewer "
             "blocks than the %llu SMs",
             u->busy_pct, what, cv, how, sms);
}

static int low_occupancy(const struct ctx *c, char *buf, size_t n) {
  const struct gp_util *u = &c->d->util;
  if (c->r->ndegraded || u->busy_pct < 50 || u->occ_pct < 0 || u->occ_pct >= 25)
    return 0;
  return say(buf, n,
             "kernels run at %.0f%% theoretical occupancy (time-weighted): "
             "registers, shared memory or block size limit the resident warps",
             u->occ_pct);
}

static int idle_memory(const struct ctx *c, char *buf, size_t n) {
  const struct gp_device_res *d = c->d;
  if (d->mem_peak_pct < 50 || d->util.busy_pct >= 30) return 0;
  return say(buf, n,
             "memory is resident but the GPU is idle %.0f%%: %.1f GiB (%.0f%% "
             "of the device) allocated while kernels run %.0f%% of the time",
             100 - d->util.busy_pct, gib((double)d->mem_peak), d->mem_peak_pct,
             d->util.busy_pct);
}

static int host_bound(const struct ctx *c, char *buf, size_t n) {
  if (c->d->util.busy_pct >= 50 || c->top != GP_CAT_HOST_WAIT) return 0;
  say(buf, n,
      "the GPU waits for the host %.0f%% of the time: data loading or CPU "
      "work",
      c->pct[GP_CAT_HOST_WAIT]);
  cite(c, GP_CS_IDLE_END, buf, n);
  return 1;
}

static int launch_bound(const struct ctx *c, char *buf, size_t n) {
  if (c->top != GP_CAT_LAUNCH) return 0;
  return say(buf, n,
             "launch-bound: kernels are shorter than their submission (idle "
             "while submitting %.0f%% vs kernel %.0f%%)",
             c->pct[GP_CAT_LAUNCH], c->pct[GP_CAT_KERNEL]);
}

static int transfer_bound(const struct ctx *c, char *buf, size_t n) {
  if (c->top != GP_CAT_TRANSFER) return 0;
  const struct gp_breakdown *b = &c->d->bd;
  int best = 0;
  for (int x = 1; x < GP_XFER_N; x++)
    if (b->sub[GP_SUB_XFER + x] > b->sub[GP_SUB_XFER + best]) best = x;
  return say(buf, n,
             "transfer-bound: %.0f%% of the time the GPU only moves data, "
             "mostly %s; overlap copies with compute (streams, pinned memory)",
             c->pct[GP_CAT_TRANSFER], gp_xfer_label[best]);
}

static int sync_bound(const struct ctx *c, char *buf, size_t n) {
  if (c->top != GP_CAT_SYNC_IDLE) return 0;
  say(buf, n,
      "the GPU is idle while a host thread waits in a synchronising call "
      "%.0f%% of the time: waiting on another stream, device or process",
      c->pct[GP_CAT_SYNC_IDLE]);
  cite(c, GP_CS_BLOCKING, buf, n);
  return 1;
}

static int pageable(const struct ctx *c, char *buf, size_t n) {
  uint64_t cnt = 0, all = 0;
  /* copies only: a memset has no host memory, pageable or not */
  for (int x = 0; x < GP_XFER_N; x++) {
    if (x == GP_XFER_MEMSET) continue;
    cnt += c->d->copies[x].pageable;
    all += c->d->copies[x].count;
  }
  if (!cnt) return 0;
  return say(buf, n,
             "%llu of %llu copies used pageable host memory: they block the "
             "calling thread and cannot overlap; pin the buffers",
             (unsigned long long)cnt, (unsigned long long)all);
}

static int slow_copies(const struct ctx *c, char *buf, size_t n) {
  static const int dirs[] = {GP_XFER_H2D, GP_XFER_D2H};
  for (size_t i = 0; i < 2; i++) {
    const struct gp_copy_row *row = &c->d->copies[dirs[i]];
    if (row->bytes < (64u << 20) || !row->ns) continue;
    double gbps = (double)row->bytes / (double)row->ns;
    if (gbps >= 0.25 * c->d->link_gbps) continue;
    return say(buf, n,
               "%s copies reach %.1f GB/s, %.0f%% of the %.0f GB/s link: "
               "small or pageable copies",
               gp_xfer_label[dirs[i]], gbps, 100 * gbps / c->d->link_gbps,
               c->d->link_gbps);
  }
  return 0;
}

static int comm_exposed(const struct ctx *c, char *buf, size_t n) {
  const struct gp_breakdown *b = &c->d->bd;
  uint64_t comm = b->sub[GP_SUB_COMMUNICATION];
  if (!c->d->window_ns || comm * 5 < c->d->window_ns) return 0;
  return say(buf, n,
             "communication kernels run alone %.0f%% of the time: compute "
             "does not overlap them",
             100.0 * (double)comm / (double)c->d->window_ns);
}

/* The rules on measured counters (measured_out.c). */
#define MEAS_RULE(name, fn)                                                    \
  static int name(const struct ctx *c, char *buf, size_t n) {                  \
    return fn(c->r, c->d, buf, n);                                             \
  }
MEAS_RULE(m_sm_gap, gp_meas_find_util_gap)
MEAS_RULE(m_dram, gp_meas_find_dram)
MEAS_RULE(m_power, gp_meas_find_power)
MEAS_RULE(m_thermal, gp_meas_find_thermal)
MEAS_RULE(m_mem, gp_meas_find_mem)

static const struct rule {
  const char *id;
  rule_fn fn;
} rules[] = {
    {"low_sm_coverage", low_coverage}, {"low_occupancy", low_occupancy},
    {"idle_memory", idle_memory},      {"host_bound", host_bound},
    {"launch_bound", launch_bound},    {"transfer_bound", transfer_bound},
    {"sync_bound", sync_bound},        {"comm_exposed", comm_exposed},
    {"pageable_copies", pageable},     {"slow_copies", slow_copies},
    {"measured_sm_gap", m_sm_gap},     {"measured_memory_bound", m_dram},
    {"clocks_power_capped", m_power},  {"clocks_thermal", m_thermal},
    {"memory_elsewhere", m_mem},
};

static int add(struct gp_proc_res *r, const char *id, int64_t dev,
               const char *host, const char *text) {
  struct gp_finding *v = realloc(r->findings, (r->nfindings + 1) * sizeof *v);
  if (!v) return -1;
  r->findings = v;
  v[r->nfindings].rule = id;
  v[r->nfindings].device = dev;
  v[r->nfindings].host = host;
  v[r->nfindings].text = strdup(text);
  return v[r->nfindings++].text ? 0 : -1;
}

int gp_findings_run(struct gp_proc_res *r) {
  for (size_t i = 0; i < r->ndev; i++) {
    struct ctx c = {r, &r->dev[i], {0}, 0};
    if (!c.d->window_ns) continue;
    for (int k = 0; k < GP_CAT_N; k++) {
      c.pct[k] = 100.0 * (double)c.d->bd.cat[k] / (double)c.d->window_ns;
      if (c.pct[k] > c.pct[c.top]) c.top = k;
    }
    char buf[512];
    for (size_t k = 0; k < sizeof rules / sizeof *rules; k++)
      if (rules[k].fn(&c, buf, sizeof buf) &&
          add(r, rules[k].id, c.d->id, c.d->host, buf) < 0)
        return -1;
  }
  return 0;
}
