/* PM sampling's side of the shim: settings, start and stop in the
 * lifecycle, and a bounded queue from the sampling thread to the writer,
 * which turns its items into records: METRIC (source 0, once per device
 * and metric), SAMPLE and SAMPLER in one source per device. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_cupti.h"
#include "gp_pm.h"
#include "gp_pmsample.h"
#include "gp_switch.h"
#include "gp_records.h"
#include "gp_settings.h"
#include "gp_shim.h"

#define QUEUE_ITEMS 16384 /* ~20 decodes of 8 metrics at 1 ms */
#define STATE_SLOTS 64
#define DRAIN_BATCH 512
#define MAX_DEV 64
#define STOP_WAIT_MS 2000

struct item {
  uint64_t start, end;
  int64_t value;
  int32_t device;
  uint16_t metric; /* index in gp_pm_metrics; STATE_ITEM: a state */
  uint16_t slot;   /* states: their reason's slot */
  int32_t status;
};
#define STATE_ITEM 0xffffu

static struct {
  int enabled;
  uint64_t interval_ns;
  pthread_mutex_t lock; /* the queue */
  struct item q[QUEUE_ITEMS];
  size_t head, len;
  char reasons[STATE_SLOTS][320];
  unsigned next_slot;
  uint64_t lost[MAX_DEV]; /* samples the full queue refused */
  int open;               /* items taken (between begin and end) */
  _Atomic int started;
  /* writer thread only */
  uint32_t source[MAX_DEV];
  uint64_t defined[MAX_DEV]; /* bit m: METRIC of metric m written */
  uint64_t last_start[MAX_DEV];
} Q = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gp_pmsample_settings(void) {
  const char *v = getenv("GPUPHASE_PM");
  Q.enabled = 0;
  if (v && *v) {
    int on = gp_switch_word(v);
    if (on >= 0)
      Q.enabled = on;
    else
      gp_warn("ignoring GPUPHASE_PM=%s (expected 1 or 0)", v);
  }
  Q.interval_ns = 1000000;
  v = getenv("GPUPHASE_PM_INTERVAL_US");
  if (v && *v) {
    char *end;
    errno = 0;
    unsigned long long us = strtoull(v, &end, 10);
    if (*end || errno || v[0] < '0' || v[0] > '9' || us < 10 || us > 1000000)
      gp_warn("ignoring GPUPHASE_PM_INTERVAL_US=%s (expected 10..1000000)", v);
    else
      Q.interval_ns = us * 1000;
  }
}

/* ---- the sampling thread's hooks (any thread) ---- */
static void push(const struct item *it, const char *reason) {
  pthread_mutex_lock(&Q.lock);
  if (!Q.open) {
    pthread_mutex_unlock(&Q.lock);
    return;
  }
  if (Q.len == QUEUE_ITEMS) {
    if (it->metric != STATE_ITEM && it->device >= 0 && it->device < MAX_DEV)
      Q.lost[it->device]++;
    pthread_mutex_unlock(&Q.lock);
    return;
  }
  struct item *d = &Q.q[(Q.head + Q.len++) % QUEUE_ITEMS];
  *d = *it;
  if (reason) {
    d->slot = (uint16_t)(Q.next_slot++ % STATE_SLOTS);
    snprintf(Q.reasons[d->slot], sizeof Q.reasons[0], "%s", reason);
  }
  pthread_mutex_unlock(&Q.lock);
}

static void hook_sample(int dev, unsigned metric, uint64_t start, uint64_t end,
                        int64_t value) {
  struct item it = {.start = start,
                    .end = end,
                    .value = value,
                    .device = dev,
                    .metric = (uint16_t)metric};
  push(&it, NULL);
}

static void hook_state(int dev, int status, uint64_t ns, const char *reason) {
  struct item it = {
      .start = ns, .device = dev, .metric = STATE_ITEM, .status = status};
  push(&it, reason ? reason : "");
}

static void hook_thread_init(void) {
  gp_ts.internal = 1; /* its CUDA calls are not the application's */
  gp_ts.depth = 1;
}

static void hook_warn(const char *line) {
  gp_warn("%s", line);
}

static const struct gp_pm_hooks hooks = {
    .sample = hook_sample,
    .state = hook_state,
    .thread_init = hook_thread_init,
    .warn = hook_warn,
    .now_ns = gp_mono_ns,
};

void gp_pmsample_begin(void) {
  if (!Q.enabled) return;
  pthread_mutex_lock(&Q.lock);
  Q.open = 1;
  Q.head = Q.len = 0;
  memset(Q.lost, 0, sizeof Q.lost);
  pthread_mutex_unlock(&Q.lock);
  memset(Q.source, 0, sizeof Q.source);
  memset(Q.defined, 0, sizeof Q.defined);
  memset(Q.last_start, 0, sizeof Q.last_start);
  Q.started = 1;
  /* devices come from the trace's DEVICE records (gp_pmsample_device) */
  gp_pm_start(&hooks, gp_cupti_handle(), Q.interval_ns);
}

void gp_pmsample_device(int dev) {
  if (Q.started) gp_pm_add_device(dev);
}

/* ---- records (writer thread) ---- */
static uint32_t source_of(int dev) {
  if (!Q.source[dev]) Q.source[dev] = gp_records_new_source();
  return Q.source[dev];
}

/* Unique across sources and devices: the source in the high bits. */
static uint64_t metric_id(int dev, unsigned m) {
  return ((uint64_t)GPUPHASE_MSRC_PM << 16) | ((uint64_t)dev << 8) | (m + 1);
}

static uint64_t intern(const char *s) {
  gp_writer *w = gp_records_writer();
  return w ? gp_writer_intern(w, s, strlen(s)) : 0;
}

static void write_state(int dev, uint64_t start, int status,
                        const char *reason) {
  if (start < Q.last_start[dev]) start = Q.last_start[dev];
  struct gpuphase_record r = {.kind = GPUPHASE_REC_SAMPLER};
  r.u.sampler.start = start;
  r.u.sampler.device = dev;
  r.u.sampler.source = GPUPHASE_MSRC_PM;
  r.u.sampler.status = (uint64_t)status;
  r.u.sampler.reason = intern(reason);
  gp_records_add(source_of(dev), &r);
  Q.last_start[dev] = start;
}

static void write_sample(const struct item *it) {
  int dev = it->device;
  unsigned m = it->metric;
  if (!(Q.defined[dev] >> m & 1)) {
    const struct gp_pm_metric *pm = &gp_pm_metrics[m];
    struct gpuphase_record d = {.kind = GPUPHASE_REC_METRIC};
    d.u.metric.metric = metric_id(dev, m);
    d.u.metric.device = dev;
    d.u.metric.source = GPUPHASE_MSRC_PM;
    d.u.metric.name = intern(pm->name);
    d.u.metric.unit = (uint64_t)pm->unit;
    d.u.metric.scale = pm->scale;
    gp_records_add(0, &d);
    Q.defined[dev] |= UINT64_C(1) << m;
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_SAMPLE};
  r.u.sample.metric = metric_id(dev, m);
  r.u.sample.start = it->start;
  r.u.sample.end = it->end;
  r.u.sample.value = it->value;
  gp_records_add(source_of(dev), &r);
  Q.last_start[dev] = it->start;
}

void gp_pmsample_drain(void) {
  if (!Q.started) return;
  for (;;) {
    struct item local[DRAIN_BATCH];
    char why[DRAIN_BATCH > STATE_SLOTS ? STATE_SLOTS : DRAIN_BATCH][320];
    uint64_t lost[MAX_DEV];
    size_t n = 0, nstates = 0;
    pthread_mutex_lock(&Q.lock);
    while (n < DRAIN_BATCH && Q.len && nstates < STATE_SLOTS) {
      local[n] = Q.q[Q.head];
      if (local[n].metric == STATE_ITEM) {
        memcpy(why[nstates], Q.reasons[local[n].slot], sizeof why[0]);
        local[n].slot = (uint16_t)nstates++;
      }
      Q.head = (Q.head + 1) % QUEUE_ITEMS;
      Q.len--;
      n++;
    }
    memcpy(lost, Q.lost, sizeof lost);
    memset(Q.lost, 0, sizeof Q.lost);
    pthread_mutex_unlock(&Q.lock);
    for (size_t i = 0; i < n; i++) {
      const struct item *it = &local[i];
      if (it->device < 0 || it->device >= MAX_DEV) continue;
      if (it->metric == STATE_ITEM)
        write_state(it->device, it->start, it->status, why[it->slot]);
      else if (it->metric < GP_PM_NMETRICS)
        write_sample(it);
    }
    for (int d = 0; d < MAX_DEV; d++)
      if (lost[d]) {
        char r[120];
        snprintf(r, sizeof r,
                 "%llu samples not recorded: the recorder's queue was full",
                 (unsigned long long)lost[d]);
        write_state(d, Q.last_start[d], GPUPHASE_MSTAT_OVERFLOW, r);
        static int told; /* once a process: the SAMPLER records count */
        if (!told) {
          told = 1;
          gp_warn("PM samples of device %d not recorded: the recorder's "
                  "queue was full (a longer GPUPHASE_PM_INTERVAL_US loses "
                  "fewer)",
                  d);
        }
      }
    if (n < DRAIN_BATCH) return;
  }
}

void gp_pmsample_end(void) {
  if (!Q.started) return;
  gp_pm_stop(STOP_WAIT_MS);
  gp_pmsample_drain();
  pthread_mutex_lock(&Q.lock);
  Q.open = 0; /* a sampler left running past the wait gives nothing more */
  pthread_mutex_unlock(&Q.lock);
  Q.started = 0;
}

void gp_pmsample_forget(void) {
  pthread_mutex_init(&Q.lock, NULL);
  Q.open = 0;
  Q.started = 0;
  Q.head = Q.len = 0;
  gp_pm_forget();
}
