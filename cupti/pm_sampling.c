/* CUPTI PM sampling on a thread of its own. The sequence per device, and
 * the pitfalls it avoids, are those of docs/counters.md ("PM sampling"):
 * the profiler initialised once for the process and de-initialised once;
 * nothing called after a call that failed to initialise something; the
 * config image kept until the session is disabled; metric names the chip
 * rejects dropped one by one; samples straddling the sampled window
 * dropped; sample times converted to CLOCK_MONOTONIC. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gp_pm.h"
#include "gp_pmsampling.h"
#include "gpuphase/trace_records.h"

#define MAX_DEVICES 64
#define DECODE_MS 100
#define MAX_SAMPLES 2048u     /* per counter data image */
#define HW_BUFFER (64u << 20) /* the hardware buffer, bytes */

const struct gp_pm_metric gp_pm_metrics[GP_PM_NMETRICS] = {
    {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "gr_active",
     GPUPHASE_UNIT_PERCENT, 1000},
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm_active",
     GPUPHASE_UNIT_PERCENT, 1000},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", "sm_occupancy",
     GPUPHASE_UNIT_PERCENT, 1000},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
     "tensor_active", GPUPHASE_UNIT_PERCENT, 1000},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_bw",
     GPUPHASE_UNIT_PERCENT, 1000},
    {"dram__bytes_read.sum", "dram_read_bytes", GPUPHASE_UNIT_BYTES, 1},
    {"dram__bytes_write.sum", "dram_write_bytes", GPUPHASE_UNIT_BYTES, 1},
    {"pcie__throughput.avg.pct_of_peak_sustained_elapsed", "pcie_bw",
     GPUPHASE_UNIT_PERCENT, 1000},
};

#define DECL(name, params) static gp_pm_fn_##name p_##name;
GP_PM_FUNCS(DECL)
#undef DECL
static gp_pm_result (*p_cuptiGetTimestamp)(uint64_t *);
static gp_pm_result (*p_cuptiGetResultString)(gp_pm_result, const char **);

enum { S_NONE = 0, S_ASKED, S_RUNNING, S_DONE };

struct session {
  int state;
  gp_pm_host_object *host;
  gp_pm_object *obj;
  uint8_t *avail, *config, *data;
  size_t config_size, data_size;
  const char *names[GP_PM_NMETRICS];
  unsigned idx[GP_PM_NMETRICS];
  size_t n;
  uint64_t window_start; /* CLOCK_MONOTONIC ns, just before Start */
  uint64_t last_start;   /* start of the last sample handed out */
  int64_t clock_off;     /* sample time + clock_off = CLOCK_MONOTONIC */
  int clock_known;
  int overflow_told, resumed;
};

static struct {
  const struct gp_pm_hooks *h;
  void *lib;
  uint64_t interval_ns;
  pthread_t thread;
  int running;     /* started: devices are taken */
  int have_thread; /* the sampling thread runs (joined at stop) */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stop;
  int asked; /* a device was asked for since the thread last looked */
  /* the thread ended early: every device gets this state and reason */
  int dead_status;
  char dead_reason[300];
  struct session s[MAX_DEVICES];
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static const char *rtext(gp_pm_result r) {
  const char *s = NULL;
  if (p_cuptiGetResultString && p_cuptiGetResultString(r, &s) == 0 && s)
    return s;
  return "unknown CUPTI error";
}

/* The trace's status for a CUPTI error at `step`. */
static int status_of(gp_pm_result r, const char *step) {
  switch (r) {
  case GP_PM_ERROR_INSUFFICIENT_PRIVILEGES:
  case GP_PM_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return GPUPHASE_MSTAT_DENIED;
  case GP_PM_ERROR_NOT_SUPPORTED:
  case GP_PM_ERROR_NOT_COMPATIBLE:
  case GP_PM_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case GP_PM_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
  case GP_PM_ERROR_CMP_DEVICE_NOT_SUPPORTED:
  case GP_PM_ERROR_MIG_DEVICE_NOT_SUPPORTED:
  case GP_PM_ERROR_INVALID_CHIP_NAME:
    return GPUPHASE_MSTAT_UNSUPPORTED;
  case GP_PM_ERROR_INVALID_OPERATION:
    /* a second session on the device: ours or another tool's */
    return strcmp(step, "cuptiPmSamplingEnable") == 0 ? GPUPHASE_MSTAT_BUSY
                                                      : GPUPHASE_MSTAT_FAILED;
  default:
    return GPUPHASE_MSTAT_FAILED;
  }
}

static const char *status_word(int st) {
  switch (st) {
  case GPUPHASE_MSTAT_DENIED:
    return "not permitted";
  case GPUPHASE_MSTAT_BUSY:
    return "counters busy";
  case GPUPHASE_MSTAT_UNSUPPORTED:
    return "unsupported";
  case GPUPHASE_MSTAT_MISSING:
    return "unavailable";
  default:
    return "failed";
  }
}

/* Session states change under the lock: gp_pm_add_device asks from other
 * threads. */
static int get_state(int dev) {
  pthread_mutex_lock(&P.lock);
  int st = P.s[dev].state;
  pthread_mutex_unlock(&P.lock);
  return st;
}

static void set_state(int dev, int st) {
  pthread_mutex_lock(&P.lock);
  P.s[dev].state = st;
  pthread_mutex_unlock(&P.lock);
}

/* A device gives nothing from now on: its state, and one stderr line for
 * the first device that gives up in this way (the trace has every
 * device's state: several GPUs denied say it once). */
static void give_up(int dev, int st, const char *why) {
  static _Atomic unsigned said; /* by status */
  unsigned bit = 1u << (st & 31);
  if (!(atomic_fetch_or(&said, bit) & bit)) {
    char line[400];
    snprintf(line, sizeof line,
             "PM sampling of device %d %s: %s; no PM samples for it", dev,
             status_word(st), why);
    P.h->warn(line);
  }
  P.h->state(dev, st, P.h->now_ns(), why);
  set_state(dev, S_DONE);
}

static void fail_call(int dev, const char *step, gp_pm_result r) {
  char why[300];
  snprintf(why, sizeof why, "%s: %s", step, rtext(r));
  give_up(dev, status_of(r, step), why);
}

static void release(struct session *s) {
  free(s->avail);
  free(s->config);
  free(s->data);
  s->avail = s->config = s->data = NULL;
}

/* The host object with the metrics this chip takes; -1 after give_up.
 * `dropped` lists the rejected names. */
static int host_setup(int dev, struct session *s, const char *chip,
                      char *dropped, size_t cap) {
  gp_pm_host_init_params hi = {.structSize = GP_PM_HOST_INIT_SIZE,
                               .profilerType = GP_PM_PROFILER_PM_SAMPLING,
                               .pChipName = chip,
                               .pCounterAvailabilityImage = s->avail};
  gp_pm_result r = p_cuptiProfilerHostInitialize(&hi);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiProfilerHostInitialize", r);
    return -1;
  }
  s->host = hi.pHostObject;
  dropped[0] = 0;
  s->n = 0;
  for (unsigned i = 0; i < GP_PM_NMETRICS; i++) {
    const char *name = gp_pm_metrics[i].cupti;
    gp_pm_add_metrics_params am = {.structSize = GP_PM_ADD_METRICS_SIZE,
                                   .pHostObject = s->host,
                                   .ppMetricNames = &name,
                                   .numMetrics = 1};
    if (p_cuptiProfilerHostConfigAddMetrics(&am) == GP_PM_SUCCESS) {
      s->names[s->n] = name;
      s->idx[s->n++] = i;
    } else {
      size_t k = strlen(dropped);
      snprintf(dropped + k, cap - k, "%s%s", k ? ", " : "", name);
    }
  }
  if (!s->n) {
    char why[300];
    snprintf(why, sizeof why, "%s takes none of the metrics", chip);
    give_up(dev, GPUPHASE_MSTAT_UNSUPPORTED, why);
    return -1;
  }
  return 0;
}

/* The config image, checked to need one pass. */
static int config_setup(int dev, struct session *s, const char *chip) {
  gp_pm_config_size_params cs = {.structSize = GP_PM_CONFIG_SIZE_SIZE,
                                 .pHostObject = s->host};
  gp_pm_result r = p_cuptiProfilerHostGetConfigImageSize(&cs);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiProfilerHostGetConfigImageSize", r);
    return -1;
  }
  s->config_size = cs.configImageSize;
  s->config = calloc(1, s->config_size ? s->config_size : 1);
  if (!s->config) {
    give_up(dev, GPUPHASE_MSTAT_FAILED, "out of memory for the config image");
    return -1;
  }
  gp_pm_config_image_params ci = {.structSize = GP_PM_CONFIG_IMAGE_SIZE,
                                  .pHostObject = s->host,
                                  .configImageSize = s->config_size,
                                  .pConfigImage = s->config};
  if ((r = p_cuptiProfilerHostGetConfigImage(&ci)) != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiProfilerHostGetConfigImage", r);
    return -1;
  }
  gp_pm_passes_params np = {.structSize = GP_PM_PASSES_SIZE,
                            .configImageSize = s->config_size,
                            .pConfigImage = s->config};
  if ((r = p_cuptiProfilerHostGetNumOfPasses(&np)) != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiProfilerHostGetNumOfPasses", r);
    return -1;
  }
  if (np.numOfPasses != 1) {
    char why[200];
    snprintf(why, sizeof why, "the metrics need %zu passes on %s (one only)",
             np.numOfPasses, chip);
    give_up(dev, GPUPHASE_MSTAT_UNSUPPORTED, why);
    return -1;
  }
  return 0;
}

static int data_init(int dev, struct session *s) {
  gp_pm_data_init_params di = {.structSize = GP_PM_DATA_INIT_SIZE,
                               .pPmSamplingObject = s->obj,
                               .counterDataSize = s->data_size,
                               .pCounterData = s->data};
  gp_pm_result r = p_cuptiPmSamplingCounterDataImageInitialize(&di);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiPmSamplingCounterDataImageInitialize", r);
    return -1;
  }
  return 0;
}

/* Enabled, configured, counter data image ready, started. */
static int sampling_setup(int dev, struct session *s) {
  gp_pm_enable_params en = {.structSize = GP_PM_ENABLE_SIZE,
                            .deviceIndex = (size_t)dev};
  gp_pm_result r = p_cuptiPmSamplingEnable(&en);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiPmSamplingEnable", r);
    return -1;
  }
  s->obj = en.pPmSamplingObject;
  gp_pm_set_config_params sc = {
      .structSize = GP_PM_SET_CONFIG_SIZE,
      .pPmSamplingObject = s->obj,
      .configSize = s->config_size,
      .pConfig = s->config,
      .hardwareBufferSize = HW_BUFFER,
      .samplingInterval = P.interval_ns,
      .triggerMode = GP_PM_TRIGGER_TIME_INTERVAL,
      /* KEEP_OLDEST fails with OUT_OF_MEMORY when full; KEEP_LATEST says
       * overflow and goes on */
      .hwBufferAppendMode = GP_PM_APPEND_KEEP_LATEST};
  const char *step = "cuptiPmSamplingSetConfig";
  if ((r = p_cuptiPmSamplingSetConfig(&sc)) != GP_PM_SUCCESS) goto disable;
  gp_pm_data_size_params ds = {.structSize = GP_PM_DATA_SIZE_SIZE,
                               .pPmSamplingObject = s->obj,
                               .pMetricNames = s->names,
                               .numMetrics = s->n,
                               .maxSamples = MAX_SAMPLES};
  step = "cuptiPmSamplingGetCounterDataSize";
  if ((r = p_cuptiPmSamplingGetCounterDataSize(&ds)) != GP_PM_SUCCESS)
    goto disable;
  s->data_size = ds.counterDataSize;
  s->data = calloc(1, s->data_size ? s->data_size : 1);
  if (!s->data) {
    step = "allocating the counter data image";
    r = GP_PM_ERROR_OUT_OF_MEMORY;
    goto disable;
  }
  if (data_init(dev, s) != 0) goto disable_quiet;
  s->window_start = P.h->now_ns();
  gp_pm_object_params st = {.structSize = GP_PM_OBJECT_SIZE,
                            .pPmSamplingObject = s->obj};
  step = "cuptiPmSamplingStart";
  if ((r = p_cuptiPmSamplingStart(&st)) != GP_PM_SUCCESS) goto disable;
  return 0;
disable:
  fail_call(dev, step, r);
disable_quiet:;
  gp_pm_object_params dp = {.structSize = GP_PM_OBJECT_SIZE,
                            .pPmSamplingObject = s->obj};
  p_cuptiPmSamplingDisable(&dp);
  s->obj = NULL;
  return -1;
}

static void host_end(struct session *s) {
  if (!s->host) return;
  gp_pm_host_deinit_params hd = {.structSize = GP_PM_HOST_DEINIT_SIZE,
                                 .pHostObject = s->host};
  p_cuptiProfilerHostDeinitialize(&hd);
  s->host = NULL;
}

/* Steps 2 to 6 for one device. */
static void session_start(int dev) {
  struct session *s = &P.s[dev];
  gp_pm_device_supported_params ds = {.structSize = GP_PM_DEVICE_SUPPORTED_SIZE,
                                      .cuDevice = dev,
                                      .api = GP_PM_API_PM_SAMPLING};
  gp_pm_result r = p_cuptiProfilerDeviceSupported(&ds);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiProfilerDeviceSupported", r);
    return;
  }
  if (ds.isSupported != GP_PM_LEVEL_SUPPORTED) {
    char why[200];
    snprintf(why, sizeof why,
             "the device does not support it (architecture %d, vGPU %d, "
             "confidential compute %d, CMP %d, WSL %d)",
             ds.architecture, ds.vGpu, ds.confidentialCompute, ds.cmp, ds.wsl);
    give_up(dev, GPUPHASE_MSTAT_UNSUPPORTED, why);
    return;
  }
  gp_pm_chip_name_params cn = {.structSize = GP_PM_CHIP_NAME_SIZE,
                               .deviceIndex = (size_t)dev};
  if ((r = p_cuptiDeviceGetChipName(&cn)) != GP_PM_SUCCESS || !cn.pChipName) {
    fail_call(dev, "cuptiDeviceGetChipName", r ? r : GP_PM_ERROR_UNKNOWN);
    return;
  }
  char chip[64];
  snprintf(chip, sizeof chip, "%s", cn.pChipName);
  gp_pm_availability_params av = {.structSize = GP_PM_AVAILABILITY_SIZE,
                                  .deviceIndex = (size_t)dev};
  if ((r = p_cuptiPmSamplingGetCounterAvailability(&av)) != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiPmSamplingGetCounterAvailability", r);
    return;
  }
  s->avail = calloc(
      1, av.counterAvailabilityImageSize ? av.counterAvailabilityImageSize : 1);
  if (!s->avail) {
    give_up(dev, GPUPHASE_MSTAT_FAILED, "out of memory");
    return;
  }
  av.pCounterAvailabilityImage = s->avail;
  if ((r = p_cuptiPmSamplingGetCounterAvailability(&av)) != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiPmSamplingGetCounterAvailability", r);
    release(s);
    return;
  }
  char dropped[600];
  if (host_setup(dev, s, chip, dropped, sizeof dropped) != 0) {
    host_end(s);
    release(s);
    return;
  }
  if (config_setup(dev, s, chip) != 0 || sampling_setup(dev, s) != 0) {
    host_end(s);
    release(s);
    return;
  }
  char why[800];
  if (dropped[0])
    snprintf(why, sizeof why, "%s, every %llu ns; dropped (not on %s): %s",
             chip, (unsigned long long)P.interval_ns, chip, dropped);
  else
    snprintf(why, sizeof why, "%s, every %llu ns", chip,
             (unsigned long long)P.interval_ns);
  P.h->state(dev, GPUPHASE_MSTAT_OK, s->window_start, why);
  s->last_start = s->window_start;
  set_state(dev, S_RUNNING);
}

static uint64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Which clock the sample times are on, from the first sample's end: CUPTI's
 * timestamp (our clock where our timestamp callback took), else the
 * realtime clock (the GPU's global timer). -1 if neither fits. */
static int choose_clock(struct session *s, uint64_t end, uint64_t now) {
  int64_t cand[2];
  int n = 0;
  uint64_t ts = 0;
  if (p_cuptiGetTimestamp && p_cuptiGetTimestamp(&ts) == GP_PM_SUCCESS)
    cand[n++] = (int64_t)(P.h->now_ns() - ts);
  cand[n++] = (int64_t)(clock_ns(CLOCK_MONOTONIC) - clock_ns(CLOCK_REALTIME));
  for (int i = 0; i < n; i++) {
    uint64_t e = end + (uint64_t)cand[i];
    if (e >= s->window_start && e <= now + 1000000) {
      s->clock_off = cand[i];
      s->clock_known = 1;
      return 0;
    }
  }
  return -1;
}

/* Hands out the completed samples of the image, those within
 * [window_start, until] and after the last one (until: when sampling was
 * stopped; UINT64_MAX before). -1 after give_up. */
static int take_samples(int dev, struct session *s, uint64_t until) {
  gp_pm_data_info_params in = {.structSize = GP_PM_DATA_INFO_SIZE,
                               .pCounterDataImage = s->data,
                               .counterDataImageSize = s->data_size};
  gp_pm_result r = p_cuptiPmSamplingGetCounterDataInfo(&in);
  if (r != GP_PM_SUCCESS) {
    fail_call(dev, "cuptiPmSamplingGetCounterDataInfo", r);
    return -1;
  }
  for (size_t i = 0; i < in.numCompletedSamples; i++) {
    gp_pm_sample_info_params si = {.structSize = GP_PM_SAMPLE_INFO_SIZE,
                                   .pPmSamplingObject = s->obj,
                                   .pCounterDataImage = s->data,
                                   .counterDataImageSize = s->data_size,
                                   .sampleIndex = i};
    if ((r = p_cuptiPmSamplingCounterDataGetSampleInfo(&si)) != GP_PM_SUCCESS) {
      fail_call(dev, "cuptiPmSamplingCounterDataGetSampleInfo", r);
      return -1;
    }
    if (!s->clock_known &&
        choose_clock(s, si.endTimestamp, P.h->now_ns()) != 0) {
      give_up(dev, GPUPHASE_MSTAT_FAILED,
              "sample times on a clock neither CUPTI's nor the realtime one");
      return -1;
    }
    uint64_t st = si.startTimestamp + (uint64_t)s->clock_off;
    uint64_t en = si.endTimestamp + (uint64_t)s->clock_off;
    /* outside the window, or before the last one handed out: dropped */
    /* outside the window, or before the last one handed out: dropped
     * (consecutive samples may overlap by a few ns: starts must only not
     * go back) */
    if (st >= en || st < s->window_start || en > until || st < s->last_start)
      continue;
    double v[GP_PM_NMETRICS];
    gp_pm_evaluate_params ev = {.structSize = GP_PM_EVALUATE_SIZE,
                                .pHostObject = s->host,
                                .pCounterDataImage = s->data,
                                .counterDataImageSize = s->data_size,
                                .rangeIndex = i,
                                .ppMetricNames = s->names,
                                .numMetrics = s->n,
                                .pMetricValues = v};
    if ((r = p_cuptiProfilerHostEvaluateToGpuValues(&ev)) != GP_PM_SUCCESS) {
      fail_call(dev, "cuptiProfilerHostEvaluateToGpuValues", r);
      return -1;
    }
    if (s->overflow_told && !s->resumed) {
      P.h->state(dev, GPUPHASE_MSTAT_OK, st, "sampling again after overflow");
      s->resumed = 1;
    }
    for (size_t k = 0; k < s->n; k++) {
      double x = v[k] * (double)gp_pm_metrics[s->idx[k]].scale;
      if (!(x > -9e18 && x < 9e18)) continue; /* NaN, or no int64 */
      P.h->sample(dev, s->idx[k], st, en,
                  x < 0 ? -(int64_t)(0.5 - x) : (int64_t)(x + 0.5));
    }
    s->last_start = st;
  }
  return 0;
}

/* Step 7: decodes until the hardware buffer is empty. -1 after give_up. */
static int decode(int dev, struct session *s, uint64_t until) {
  for (int rounds = 0; rounds < 64; rounds++) {
    gp_pm_decode_params dd = {.structSize = GP_PM_DECODE_SIZE,
                              .pPmSamplingObject = s->obj,
                              .pCounterDataImage = s->data,
                              .counterDataImageSize = s->data_size};
    gp_pm_result r = p_cuptiPmSamplingDecodeData(&dd);
    if (r != GP_PM_SUCCESS) {
      fail_call(dev, "cuptiPmSamplingDecodeData", r);
      return -1;
    }
    if (dd.overflow && !s->overflow_told) {
      char line[160];
      snprintf(line, sizeof line,
               "PM sampling of device %d: the hardware buffer overflowed: "
               "samples lost (a longer GPUPHASE_PM_INTERVAL_US loses fewer)",
               dev);
      P.h->warn(line);
      P.h->state(dev, GPUPHASE_MSTAT_OVERFLOW, s->last_start,
                 "the hardware buffer overflowed: samples lost");
      s->overflow_told = 1;
    }
    /* OTHER may carry samples too: every reason is read */
    if (take_samples(dev, s, until) != 0) return -1;
    if (data_init(dev, s) != 0) return -1;
    if (dd.decodeStopReason != GP_PM_STOP_COUNTER_DATA_FULL) return 0;
  }
  return 0;
}

/* Step 8 but the de-initialisation of the profiler. */
static void session_end(int dev, struct session *s) {
  gp_pm_object_params op = {.structSize = GP_PM_OBJECT_SIZE,
                            .pPmSamplingObject = s->obj};
  uint64_t until = P.h->now_ns();
  gp_pm_result r = p_cuptiPmSamplingStop(&op);
  if (r == GP_PM_SUCCESS)
    decode(dev, s, until);
  else
    fail_call(dev, "cuptiPmSamplingStop", r);
  op.structSize = GP_PM_OBJECT_SIZE;
  op.pPmSamplingObject = s->obj;
  p_cuptiPmSamplingDisable(&op);
  s->obj = NULL;
  host_end(s);
  release(s); /* the config image only now, after Disable */
  set_state(dev, S_DONE);
}

static int load_symbols(const char **missing) {
#define LOAD(name, params)                                                     \
  *(void **)&p_##name = dlsym(P.lib, #name);                                   \
  if (!p_##name) {                                                             \
    *missing = #name;                                                          \
    return -1;                                                                 \
  }
  GP_PM_FUNCS(LOAD)
#undef LOAD
  *(void **)&p_cuptiGetTimestamp = dlsym(P.lib, "cuptiGetTimestamp");
  return 0;
}

/* The thread ends before sampling anything: every device asked for, and
 * every one asked for later, gets state st (one stderr line in all). */
static void give_up_all(int st, const char *why) {
  char line[400];
  snprintf(line, sizeof line, "PM sampling %s: %s; no PM samples",
           status_word(st), why);
  P.h->warn(line);
  int asked[MAX_DEVICES], n = 0;
  pthread_mutex_lock(&P.lock);
  P.dead_status = st;
  snprintf(P.dead_reason, sizeof P.dead_reason, "%s", why);
  for (int d = 0; d < MAX_DEVICES; d++)
    if (P.s[d].state == S_ASKED) {
      P.s[d].state = S_DONE;
      asked[n++] = d;
    }
  pthread_mutex_unlock(&P.lock);
  for (int i = 0; i < n; i++)
    P.h->state(asked[i], st, P.h->now_ns(), why);
}

static void wait_a_while(void) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_nsec += DECODE_MS * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&P.lock);
  while (!P.stop && !P.asked)
    if (pthread_cond_timedwait(&P.cond, &P.lock, &dl) == ETIMEDOUT) break;
  pthread_mutex_unlock(&P.lock);
}

static void *thread_main(void *arg) {
  (void)arg;
  P.h->thread_init();
  const char *missing = NULL;
  *(void **)&p_cuptiGetResultString = dlsym(P.lib, "cuptiGetResultString");
  if (load_symbols(&missing) != 0) {
    char why[200];
    snprintf(why, sizeof why, "CUPTI lacks %s (needs CUDA 12.6 or later)",
             missing);
    give_up_all(GPUPHASE_MSTAT_UNSUPPORTED, why);
    return NULL;
  }
  gp_pm_profiler_init_params pi = {.structSize = GP_PM_PROFILER_INIT_SIZE};
  gp_pm_result r = p_cuptiProfilerInitialize(&pi);
  if (r != GP_PM_SUCCESS) { /* nothing else is called after this */
    char why[300];
    snprintf(why, sizeof why, "cuptiProfilerInitialize: %s", rtext(r));
    give_up_all(status_of(r, "cuptiProfilerInitialize"), why);
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&P.lock);
    int stop = P.stop;
    P.asked = 0;
    pthread_mutex_unlock(&P.lock);
    /* also when stopping: every device the trace met gets its state */
    for (int d = 0; d < MAX_DEVICES; d++)
      if (get_state(d) == S_ASKED) session_start(d);
    if (stop) break;
    for (int d = 0; d < MAX_DEVICES; d++)
      if (get_state(d) == S_RUNNING && decode(d, &P.s[d], UINT64_MAX) != 0)
        session_end(d, &P.s[d]);
    wait_a_while();
  }
  for (int d = 0; d < MAX_DEVICES; d++)
    if (get_state(d) == S_RUNNING) session_end(d, &P.s[d]);
  gp_pm_profiler_deinit_params pd = {.structSize = GP_PM_PROFILER_DEINIT_SIZE};
  p_cuptiProfilerDeInitialize(&pd); /* once: a second one crashes */
  return NULL;
}

void gp_pm_add_device(int device) {
  if (device < 0 || device >= MAX_DEVICES) return;
  pthread_mutex_lock(&P.lock);
  int dead = 0;
  char why[sizeof P.dead_reason];
  const struct gp_pm_hooks *h = P.h;
  if (P.running && !P.stop && P.s[device].state == S_NONE) {
    if (P.dead_reason[0]) {
      P.s[device].state = S_DONE;
      dead = P.dead_status;
      memcpy(why, P.dead_reason, sizeof why);
    } else {
      P.s[device].state = S_ASKED;
      P.asked = 1;
      pthread_cond_signal(&P.cond);
    }
  }
  pthread_mutex_unlock(&P.lock);
  if (dead) h->state(device, dead, h->now_ns(), why);
}

/* Sampling gives nothing at all: said once; every device asked for gets
 * the state (gp_pm_add_device). */
static void dead_from_start(int st, const char *why, const char *line) {
  P.h->warn(line);
  pthread_mutex_lock(&P.lock);
  P.dead_status = st;
  snprintf(P.dead_reason, sizeof P.dead_reason, "%s", why);
  P.running = 1; /* devices are still taken, to be told */
  pthread_mutex_unlock(&P.lock);
}

int gp_pm_start(const struct gp_pm_hooks *hooks, void *lib,
                uint64_t interval_ns) {
  pthread_mutex_lock(&P.lock); /* gp_pm_add_device may run already */
  P.h = hooks;
  P.lib = lib;
  P.interval_ns = interval_ns;
  P.stop = 0;
  P.have_thread = 0;
  pthread_mutex_unlock(&P.lock);
  if (!lib) {
    dead_from_start(GPUPHASE_MSTAT_MISSING, "CUPTI is not loaded",
                    "PM sampling unavailable: CUPTI is not loaded; no PM "
                    "samples");
    return -1;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&P.cond, &ca);
  pthread_condattr_destroy(&ca);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&P.thread, NULL, thread_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    char line[200];
    snprintf(line, sizeof line,
             "PM sampling failed: no thread (%s); no PM "
             "samples",
             strerror(rc));
    dead_from_start(GPUPHASE_MSTAT_FAILED, "cannot start the sampling thread",
                    line);
    return -1;
  }
  pthread_mutex_lock(&P.lock);
  P.have_thread = 1;
  P.running = 1;
  pthread_mutex_unlock(&P.lock);
  return 0;
}

void gp_pm_stop(int timeout_ms) {
  pthread_mutex_lock(&P.lock);
  int joinable = P.running && P.have_thread;
  P.stop = 1;
  pthread_cond_signal(&P.cond);
  pthread_mutex_unlock(&P.lock);
  if (!joinable) {
    pthread_mutex_lock(&P.lock);
    P.running = 0;
    pthread_mutex_unlock(&P.lock);
    return;
  }
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  if (pthread_timedjoin_np(P.thread, NULL, &dl) != 0) {
    /* left to finish on its own; its hooks must not be called late */
    pthread_detach(P.thread);
  }
  pthread_mutex_lock(&P.lock);
  P.running = 0;
  pthread_mutex_unlock(&P.lock);
}

void gp_pm_forget(void) {
  pthread_mutex_init(&P.lock, NULL);
  pthread_cond_init(&P.cond, NULL);
  P.running = 0;
  P.have_thread = 0;
  P.stop = 0;
  P.asked = 0;
  P.dead_reason[0] = 0;
  memset(P.s, 0, sizeof P.s); /* the parent's images stay theirs (leaked) */
}
