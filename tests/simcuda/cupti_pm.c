/* Simulated libcupti.so.13: PM sampling and the profiler host API (see
 * README.md, "PM sampling"). Samples are computed at decode time from the
 * driver's counter model (gpusim_counters_window) over each sampling
 * interval. Declarations: gpuphase's cupti/gp_pmsampling.h, checked
 * against the toolkit's C++-only headers by the pm-decls test. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gp_pmsampling.h"
#include "gpusim.h"
#include "gpusim_counters.h"

#define API GPUSIM_EXPORT
#define MAX_METRICS 16
#define CHIP "GH100"
#define AVAIL_BYTES 64
/* Samples the hardware buffer holds under GPUSIM_PM=overflow. */
#define OVERFLOW_CAPACITY 8

/* The metrics this "chip" knows, with the passes each needs alone. */
static const struct known {
  const char *name;
  int passes;
} known[] = {
    {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed", 1},
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", 1},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", 1},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", 1},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 1},
    {"dram__bytes_read.sum", 1},
    {"dram__bytes_write.sum", 1},
    {"pcie__throughput.avg.pct_of_peak_sustained_elapsed", 1},
    {"nvlrx__bytes.sum", 1},
    {"nvltx__bytes.sum", 1},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 2},
};
#define NKNOWN (sizeof known / sizeof known[0])

/* Calls counted per entry point, for GPUSIM_PM_STATS. */
#define PM_ENTRY_POINTS(X)                                                     \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiProfilerDeInitialize)                                                 \
  X(cuptiProfilerDeviceSupported)                                              \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiPmSamplingGetCounterAvailability)                                     \
  X(cuptiProfilerHostInitialize)                                               \
  X(cuptiProfilerHostDeinitialize)                                             \
  X(cuptiProfilerHostConfigAddMetrics)                                         \
  X(cuptiProfilerHostGetConfigImageSize)                                       \
  X(cuptiProfilerHostGetConfigImage)                                           \
  X(cuptiProfilerHostGetNumOfPasses)                                           \
  X(cuptiProfilerHostEvaluateToGpuValues)                                      \
  X(cuptiPmSamplingEnable)                                                     \
  X(cuptiPmSamplingDisable)                                                    \
  X(cuptiPmSamplingSetConfig)                                                  \
  X(cuptiPmSamplingStart)                                                      \
  X(cuptiPmSamplingStop)                                                       \
  X(cuptiPmSamplingGetCounterDataSize)                                         \
  X(cuptiPmSamplingCounterDataImageInitialize)                                 \
  X(cuptiPmSamplingDecodeData)                                                 \
  X(cuptiPmSamplingGetCounterDataInfo)                                         \
  X(cuptiPmSamplingCounterDataGetSampleInfo)
#define ENUM(n) C_##n,
enum { PM_ENTRY_POINTS(ENUM) NCALLS };
#undef ENUM
#define NAME(n) #n,
static const char *const call_names[] = {PM_ENTRY_POINTS(NAME)};
#undef NAME

struct gp_pm_host_object {
  int n;
  int metric[MAX_METRICS]; /* indices in known[] */
};

/* The config image: this header, then nothing else. */
struct config_image {
  char magic[8]; /* "SIMPMCFG" */
  uint32_t n;
  int32_t metric[MAX_METRICS];
};

/* The counter data image: this header, then per sample the start and end
 * (raw clock) and n values. */
struct data_image {
  char magic[8]; /* "SIMPMDAT" */
  uint32_t max_samples, n, populated, device;
  int32_t metric[MAX_METRICS];
};

struct gp_pm_object {
  int device;
  int enabled, configured, started, stopped;
  const uint8_t *config; /* the caller's: must stay as it was */
  size_t config_size;
  uint64_t config_sum;
  struct config_image cfg;     /* its contents at SetConfig */
  uint64_t interval, capacity; /* ns; samples the hardware buffer holds */
  int keep_latest;
  uint64_t next;      /* raw start of the next sample not yet decoded */
  uint64_t stop_time; /* raw */
  uint64_t cupti_off; /* CUPTI clock - raw clock, measured at Start */
  int overflowed;     /* not yet reported */
};

static struct {
  pthread_mutex_t lock;
  int loaded;
  int (*window)(int, uint64_t, uint64_t, struct gpusim_counters *);
  uint64_t (*now)(void);
  const gpusim_config *(*config)(void);
  const gpusim_cupti_ops *ops;
  int inited, deinits;
  char mode[32];      /* GPUSIM_PM */
  char invalid[1024]; /* GPUSIM_PM_INVALID */
  uint64_t calls[NCALLS];
  struct gp_pm_object dev[GPUSIM_MAX_DEVICES];
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void load(void) {
  if (S.loaded) return;
  S.loaded = 1;
  void *h = gp_sim_open_driver();
  if (h) {
    *(void **)&S.window = dlsym(h, "gpusim_counters_window");
    *(void **)&S.now = dlsym(h, "gpusim_now_ns");
    *(void **)&S.config = dlsym(h, "gpusim_get_config");
    const gpusim_cupti_ops *(*get)(void) = NULL;
    *(void **)&get = dlsym(h, "gpusim_cupti");
    S.ops = get ? get() : NULL;
  }
  const char *m = getenv("GPUSIM_PM");
  snprintf(S.mode, sizeof S.mode, "%s", m ? m : "");
  if (S.mode[0] && strcmp(S.mode, "denied") && strcmp(S.mode, "busy") &&
      strcmp(S.mode, "unsupported") && strcmp(S.mode, "overflow")) {
    fprintf(stderr,
            "simcupti: ignoring GPUSIM_PM=%s (denied, busy, "
            "unsupported or overflow)\n",
            S.mode);
    S.mode[0] = 0;
  }
  const char *inv = getenv("GPUSIM_PM_INVALID");
  snprintf(S.invalid, sizeof S.invalid, "%s", inv ? inv : "");
}

/* Entry: counts the call, takes the lock, checks structSize. */
#define ENTER(name, p, size)                                                   \
  pthread_mutex_lock(&S.lock);                                                 \
  load();                                                                      \
  S.calls[C_##name]++;                                                         \
  if (!(p) || (p)->structSize < (size)) {                                      \
    pthread_mutex_unlock(&S.lock);                                             \
    return CUPTI_ERROR_INVALID_PARAMETER;                                      \
  }
#define RETURN(r)                                                              \
  do {                                                                         \
    CUptiResult r_ = (r);                                                      \
    pthread_mutex_unlock(&S.lock);                                             \
    return r_;                                                                 \
  } while (0)

static int mode(const char *m) {
  return strcmp(S.mode, m) == 0;
}

static int devices(void) {
  return S.config ? S.config()->devices : 1;
}

static uint64_t checksum(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static int is_invalid(const char *name) {
  size_t len = strlen(name);
  for (const char *p = S.invalid; *p;) {
    const char *c = strchr(p, ',');
    size_t k = c ? (size_t)(c - p) : strlen(p);
    if (k == len && !memcmp(p, name, len)) return 1;
    p += k + (c ? 1 : 0);
  }
  return 0;
}

static int metric_index(const char *name) {
  if (!name || is_invalid(name)) return -1;
  for (size_t i = 0; i < NKNOWN; i++)
    if (!strcmp(known[i].name, name)) return (int)i;
  return -1;
}

/* ---- the profiler ---- */
API CUptiResult CUPTIAPI
cuptiProfilerInitialize(gp_pm_profiler_init_params *p) {
  ENTER(cuptiProfilerInitialize, p, GP_PM_PROFILER_INIT_SIZE);
  S.inited = 1;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerDeInitialize(gp_pm_profiler_deinit_params *p) {
  ENTER(cuptiProfilerDeInitialize, p, GP_PM_PROFILER_DEINIT_SIZE);
  if (!S.inited) {
    /* the real one crashes here (a second de-initialisation) */
    fprintf(stderr, "simcupti: cuptiProfilerDeInitialize without "
                    "cuptiProfilerInitialize (or twice)\n");
    RETURN(CUPTI_ERROR_NOT_INITIALIZED);
  }
  S.inited = 0;
  S.deinits++;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerDeviceSupported(gp_pm_device_supported_params *p) {
  ENTER(cuptiProfilerDeviceSupported, p, GP_PM_DEVICE_SUPPORTED_SIZE);
  if (!S.inited) RETURN(CUPTI_ERROR_NOT_INITIALIZED);
  if (p->cuDevice < 0 || p->cuDevice >= devices())
    RETURN(CUPTI_ERROR_INVALID_DEVICE);
  int arch =
      mode("unsupported") ? GP_PM_LEVEL_UNSUPPORTED : GP_PM_LEVEL_SUPPORTED;
  p->architecture = arch;
  p->sli = p->vGpu = p->confidentialCompute = p->cmp = p->wsl =
      GP_PM_LEVEL_SUPPORTED;
  p->isSupported =
      p->api == GP_PM_API_PM_SAMPLING || p->api == GP_PM_API_RANGE_PROFILING
          ? arch
          : GP_PM_LEVEL_UNSUPPORTED;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI cuptiDeviceGetChipName(gp_pm_chip_name_params *p) {
  ENTER(cuptiDeviceGetChipName, p, GP_PM_CHIP_NAME_SIZE);
  if (!S.inited) RETURN(CUPTI_ERROR_NOT_INITIALIZED);
  if (p->deviceIndex >= (size_t)devices()) RETURN(CUPTI_ERROR_INVALID_DEVICE);
  p->pChipName = CHIP;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterAvailability(gp_pm_availability_params *p) {
  ENTER(cuptiPmSamplingGetCounterAvailability, p, GP_PM_AVAILABILITY_SIZE);
  if (!S.inited) RETURN(CUPTI_ERROR_NOT_INITIALIZED);
  if (p->deviceIndex >= (size_t)devices()) RETURN(CUPTI_ERROR_INVALID_DEVICE);
  if (!p->pCounterAvailabilityImage) {
    p->counterAvailabilityImageSize = AVAIL_BYTES;
    RETURN(CUPTI_SUCCESS);
  }
  if (p->counterAvailabilityImageSize < AVAIL_BYTES)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  memset(p->pCounterAvailabilityImage, 0, AVAIL_BYTES);
  memcpy(p->pCounterAvailabilityImage, "SIMPMAV " CHIP, 13);
  RETURN(CUPTI_SUCCESS);
}

/* ---- the host API (no device, no profiler initialisation needed) ---- */
API CUptiResult CUPTIAPI
cuptiProfilerHostInitialize(gp_pm_host_init_params *p) {
  ENTER(cuptiProfilerHostInitialize, p, GP_PM_HOST_INIT_SIZE);
  if (p->profilerType != GP_PM_PROFILER_PM_SAMPLING &&
      p->profilerType != GP_PM_PROFILER_RANGE)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  if (!p->pChipName || strcmp(p->pChipName, CHIP) != 0)
    RETURN(CUPTI_ERROR_INVALID_CHIP_NAME);
  if (p->pCounterAvailabilityImage &&
      memcmp(p->pCounterAvailabilityImage, "SIMPMAV ", 8) != 0)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  p->pHostObject = calloc(1, sizeof *p->pHostObject);
  RETURN(p->pHostObject ? CUPTI_SUCCESS : CUPTI_ERROR_OUT_OF_MEMORY);
}

API CUptiResult CUPTIAPI
cuptiProfilerHostDeinitialize(gp_pm_host_deinit_params *p) {
  ENTER(cuptiProfilerHostDeinitialize, p, GP_PM_HOST_DEINIT_SIZE);
  if (!p->pHostObject) RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  free(p->pHostObject);
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerHostConfigAddMetrics(gp_pm_add_metrics_params *p) {
  ENTER(cuptiProfilerHostConfigAddMetrics, p, GP_PM_ADD_METRICS_SIZE);
  gp_pm_host_object *h = p->pHostObject;
  if (!h || !p->ppMetricNames || !p->numMetrics)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  int idx[MAX_METRICS];
  if (p->numMetrics > MAX_METRICS - (size_t)h->n)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  for (size_t i = 0; i < p->numMetrics; i++)
    if ((idx[i] = metric_index(p->ppMetricNames[i])) < 0)
      RETURN(CUPTI_ERROR_INVALID_METRIC_NAME); /* none is added */
  for (size_t i = 0; i < p->numMetrics; i++)
    h->metric[h->n++] = idx[i];
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImageSize(gp_pm_config_size_params *p) {
  ENTER(cuptiProfilerHostGetConfigImageSize, p, GP_PM_CONFIG_SIZE_SIZE);
  if (!p->pHostObject || !p->pHostObject->n)
    RETURN(CUPTI_ERROR_INVALID_OPERATION);
  p->configImageSize = sizeof(struct config_image);
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImage(gp_pm_config_image_params *p) {
  ENTER(cuptiProfilerHostGetConfigImage, p, GP_PM_CONFIG_IMAGE_SIZE);
  gp_pm_host_object *h = p->pHostObject;
  if (!h || !h->n) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  if (!p->pConfigImage || p->configImageSize < sizeof(struct config_image))
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  struct config_image c;
  memset(&c, 0, sizeof c);
  memcpy(c.magic, "SIMPMCFG", 8);
  c.n = (uint32_t)h->n;
  for (int i = 0; i < h->n; i++)
    c.metric[i] = h->metric[i];
  memcpy(p->pConfigImage, &c, sizeof c);
  RETURN(CUPTI_SUCCESS);
}

static int read_config(const uint8_t *img, size_t size,
                       struct config_image *c) {
  if (!img || size < sizeof *c) return -1;
  memcpy(c, img, sizeof *c);
  if (memcmp(c->magic, "SIMPMCFG", 8) || c->n == 0 || c->n > MAX_METRICS)
    return -1;
  for (uint32_t i = 0; i < c->n; i++)
    if (c->metric[i] < 0 || (size_t)c->metric[i] >= NKNOWN) return -1;
  return 0;
}

API CUptiResult CUPTIAPI
cuptiProfilerHostGetNumOfPasses(gp_pm_passes_params *p) {
  ENTER(cuptiProfilerHostGetNumOfPasses, p, GP_PM_PASSES_SIZE);
  struct config_image c;
  if (read_config(p->pConfigImage, p->configImageSize, &c) != 0)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  size_t passes = 1;
  for (uint32_t i = 0; i < c.n; i++)
    if ((size_t)known[c.metric[i]].passes > passes)
      passes = (size_t)known[c.metric[i]].passes;
  p->numOfPasses = passes;
  RETURN(CUPTI_SUCCESS);
}

/* ---- sessions ---- */
static struct gp_pm_object *object(gp_pm_object *o) {
  for (int d = 0; d < GPUSIM_MAX_DEVICES; d++)
    if (o == &S.dev[d] && S.dev[d].enabled) return o;
  return NULL;
}

/* The caller's config image as it was at SetConfig: freeing or reusing it
 * before Disable is the mistake this catches. */
static int config_intact(const struct gp_pm_object *o) {
  return checksum(o->config, o->config_size) == o->config_sum &&
         memcmp(o->config, &o->cfg, sizeof o->cfg) == 0;
}

API CUptiResult CUPTIAPI cuptiPmSamplingEnable(gp_pm_enable_params *p) {
  ENTER(cuptiPmSamplingEnable, p, GP_PM_ENABLE_SIZE);
  if (!S.inited) RETURN(CUPTI_ERROR_NOT_INITIALIZED);
  if (p->deviceIndex >= (size_t)devices()) RETURN(CUPTI_ERROR_INVALID_DEVICE);
  if (mode("denied")) RETURN(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  if (mode("unsupported")) RETURN(CUPTI_ERROR_NOT_SUPPORTED);
  struct gp_pm_object *o = &S.dev[p->deviceIndex];
  /* one session per device; "busy": another tool holds the counters */
  if (o->enabled || mode("busy")) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  memset(o, 0, sizeof *o);
  o->device = (int)p->deviceIndex;
  o->enabled = 1;
  p->pPmSamplingObject = o;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI cuptiPmSamplingDisable(gp_pm_object_params *p) {
  ENTER(cuptiPmSamplingDisable, p, GP_PM_OBJECT_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o) RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  o->enabled = 0;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI cuptiPmSamplingSetConfig(gp_pm_set_config_params *p) {
  ENTER(cuptiPmSamplingSetConfig, p, GP_PM_SET_CONFIG_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o || o->started)
    RETURN(o ? CUPTI_ERROR_INVALID_OPERATION : CUPTI_ERROR_INVALID_PARAMETER);
  struct config_image c;
  if (read_config(p->pConfig, p->configSize, &c) != 0 ||
      p->samplingInterval == 0 ||
      p->triggerMode != GP_PM_TRIGGER_TIME_INTERVAL ||
      (p->hwBufferAppendMode != GP_PM_APPEND_KEEP_OLDEST &&
       p->hwBufferAppendMode != GP_PM_APPEND_KEEP_LATEST))
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  uint64_t rec = 16 + 8 * (uint64_t)c.n; /* bytes per raw sample */
  o->capacity =
      mode("overflow") ? OVERFLOW_CAPACITY : p->hardwareBufferSize / rec;
  if (o->capacity == 0) RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  o->config = p->pConfig;
  o->config_size = p->configSize;
  o->config_sum = checksum(p->pConfig, p->configSize);
  o->cfg = c;
  o->interval = p->samplingInterval;
  o->keep_latest = p->hwBufferAppendMode == GP_PM_APPEND_KEEP_LATEST;
  o->configured = 1;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataSize(gp_pm_data_size_params *p) {
  ENTER(cuptiPmSamplingGetCounterDataSize, p, GP_PM_DATA_SIZE_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o || !p->pMetricNames || !p->numMetrics || p->numMetrics > MAX_METRICS ||
      !p->maxSamples)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  for (size_t i = 0; i < p->numMetrics; i++)
    if (metric_index(p->pMetricNames[i]) < 0)
      RETURN(CUPTI_ERROR_INVALID_METRIC_NAME);
  /* the metrics themselves are those of the config (SetConfig) */
  p->counterDataSize = sizeof(struct data_image) +
                       (size_t)p->maxSamples * (16 + 8 * MAX_METRICS);
  RETURN(CUPTI_SUCCESS);
}

static size_t sample_bytes(void) {
  return 16 + 8 * MAX_METRICS;
}

API CUptiResult CUPTIAPI
cuptiPmSamplingCounterDataImageInitialize(gp_pm_data_init_params *p) {
  ENTER(cuptiPmSamplingCounterDataImageInitialize, p, GP_PM_DATA_INIT_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o || !o->configured || !p->pCounterData ||
      p->counterDataSize < sizeof(struct data_image) + sample_bytes())
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  struct data_image h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, "SIMPMDAT", 8);
  h.max_samples = (uint32_t)((p->counterDataSize - sizeof h) / sample_bytes());
  h.n = o->cfg.n;
  h.device = (uint32_t)o->device;
  for (uint32_t i = 0; i < h.n; i++)
    h.metric[i] = o->cfg.metric[i];
  memcpy(p->pCounterData, &h, sizeof h);
  RETURN(CUPTI_SUCCESS);
}

/* Sample times are on the CUPTI clock, that of the activity records
 * (cuptiGetTimestamp, which a timestamp callback shifts): raw + this,
 * the tightest of 8 reads. */
static uint64_t clock_offset(void) {
  uint64_t best = 0, gap = UINT64_MAX;
  for (int i = 0; i < 8 && S.ops && S.now; i++) {
    uint64_t a = S.now(), ts = 0;
    if (S.ops->timestamp(&ts) != CUPTI_SUCCESS) break;
    uint64_t b = S.now();
    if (b - a < gap) gap = b - a, best = ts - (a + (b - a) / 2);
  }
  return best;
}

API CUptiResult CUPTIAPI cuptiPmSamplingStart(gp_pm_object_params *p) {
  ENTER(cuptiPmSamplingStart, p, GP_PM_OBJECT_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o) RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  if (!o->configured || o->started) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  if (!config_intact(o)) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  uint64_t now = S.now ? S.now() : 0;
  /* the trigger runs on its own: the first sample began before Start */
  o->next = now - now % o->interval;
  o->cupti_off = clock_offset();
  o->started = 1;
  o->stopped = 0;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI cuptiPmSamplingStop(gp_pm_object_params *p) {
  ENTER(cuptiPmSamplingStop, p, GP_PM_OBJECT_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  if (!o) RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  if (!o->started || o->stopped) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  o->stopped = 1;
  o->stop_time = S.now ? S.now() : 0;
  RETURN(CUPTI_SUCCESS);
}

static int image_ok(const uint8_t *img, size_t size,
                    const struct gp_pm_object *o, struct data_image *h) {
  if (!img || size < sizeof *h) return 0;
  memcpy(h, img, sizeof *h);
  if (memcmp(h->magic, "SIMPMDAT", 8) || h->n == 0 || h->n > MAX_METRICS ||
      size < sizeof *h + (size_t)h->max_samples * sample_bytes() ||
      h->populated > h->max_samples)
    return 0;
  return !o || h->device == (uint32_t)o->device;
}

/* The readings of one sample over [t0, t1) (raw clock). */
static void evaluate(int device, const struct data_image *h, uint64_t t0,
                     uint64_t t1, double *v) {
  struct gpusim_counters c;
  memset(&c, 0, sizeof c);
  if (S.window) S.window(device, t0, t1, &c);
  double secs = (double)(t1 - t0) * 1e-9;
  /* PCIe: the busier direction against the link's rate (bytes/us x 1e6) */
  double pcie_peak =
      (S.config ? (double)S.config()->pcie_mbps : 25000.0) * 1e6 * secs;
  double pcie =
      c.pcie_tx_bytes > c.pcie_rx_bytes ? c.pcie_tx_bytes : c.pcie_rx_bytes;
  for (uint32_t i = 0; i < h->n; i++) {
    switch (h->metric[i]) {
    case 0:
      v[i] = c.gpu_util_pct;
      break;
    case 1:
      v[i] = c.sm_active_pct;
      break;
    case 2:
      v[i] = c.sm_occupancy_pct;
      break;
    case 3:
      v[i] = c.tensor_active_pct;
      break;
    case 4:
      v[i] = c.dram_bw_pct;
      break;
    case 5:
      v[i] = c.dram_read_bytes;
      break;
    case 6:
      v[i] = c.dram_write_bytes;
      break;
    case 7:
      v[i] = pcie_peak > 0 ? 100.0 * pcie / pcie_peak : 0;
      break;
    case 10:
      v[i] = c.sm_active_pct;
      break; /* sm__throughput */
    default:
      v[i] = 0; /* no NVLink here */
    }
  }
}

API CUptiResult CUPTIAPI cuptiPmSamplingDecodeData(gp_pm_decode_params *p) {
  ENTER(cuptiPmSamplingDecodeData, p, GP_PM_DECODE_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  struct data_image h;
  if (!o || !image_ok(p->pCounterDataImage, p->counterDataImageSize, o, &h))
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  if (!o->started) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  if (!config_intact(o)) RETURN(CUPTI_ERROR_INVALID_OPERATION);
  uint64_t now = S.now ? S.now() : 0;
  uint64_t limit = o->stopped ? o->stop_time : now;
  /* samples complete by now that the hardware buffer holds */
  uint64_t pending = 0;
  if (limit > o->next) pending = (limit - o->next) / o->interval;
  if (o->stopped && limit > o->next + pending * o->interval)
    pending++; /* the partial sample Stop ended */
  if (pending > o->capacity) {
    if (!o->keep_latest) RETURN(CUPTI_ERROR_OUT_OF_MEMORY);
    o->next += (pending - o->capacity) * o->interval; /* oldest lost */
    pending = o->capacity;
    o->overflowed = 1;
  }
  p->overflow = (uint8_t)o->overflowed;
  o->overflowed = 0;
  uint8_t *rec =
      p->pCounterDataImage + sizeof h + (size_t)h.populated * sample_bytes();
  while (pending && h.populated < h.max_samples) {
    uint64_t t0 = o->next, t1 = o->next + o->interval;
    if (t1 > limit) t1 = limit;
    double v[MAX_METRICS];
    evaluate(o->device, &h, t0, t1, v);
    memcpy(rec, &t0, 8);
    memcpy(rec + 8, &t1, 8);
    memcpy(rec + 16, v, 8 * h.n);
    rec += sample_bytes();
    h.populated++;
    o->next = t1;
    pending--;
  }
  memcpy(p->pCounterDataImage, &h, sizeof h);
  p->decodeStopReason =
      pending ? GP_PM_STOP_COUNTER_DATA_FULL : GP_PM_STOP_END_OF_RECORDS;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataInfo(gp_pm_data_info_params *p) {
  ENTER(cuptiPmSamplingGetCounterDataInfo, p, GP_PM_DATA_INFO_SIZE);
  struct data_image h;
  if (!image_ok(p->pCounterDataImage, p->counterDataImageSize, NULL, &h))
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  p->numTotalSamples = h.max_samples;
  p->numPopulatedSamples = h.populated;
  p->numCompletedSamples = h.populated;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiPmSamplingCounterDataGetSampleInfo(gp_pm_sample_info_params *p) {
  ENTER(cuptiPmSamplingCounterDataGetSampleInfo, p, GP_PM_SAMPLE_INFO_SIZE);
  struct gp_pm_object *o = object(p->pPmSamplingObject);
  struct data_image h;
  if (!o || !image_ok(p->pCounterDataImage, p->counterDataImageSize, o, &h) ||
      p->sampleIndex >= h.populated)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  const uint8_t *rec =
      p->pCounterDataImage + sizeof h + p->sampleIndex * sample_bytes();
  uint64_t t0, t1;
  memcpy(&t0, rec, 8);
  memcpy(&t1, rec + 8, 8);
  p->startTimestamp = t0 + o->cupti_off;
  p->endTimestamp = t1 + o->cupti_off;
  RETURN(CUPTI_SUCCESS);
}

API CUptiResult CUPTIAPI
cuptiProfilerHostEvaluateToGpuValues(gp_pm_evaluate_params *p) {
  ENTER(cuptiProfilerHostEvaluateToGpuValues, p, GP_PM_EVALUATE_SIZE);
  struct data_image h;
  if (!p->pHostObject ||
      !image_ok(p->pCounterDataImage, p->counterDataImageSize, NULL, &h) ||
      p->rangeIndex >= h.populated || !p->ppMetricNames || !p->pMetricValues)
    RETURN(CUPTI_ERROR_INVALID_PARAMETER);
  const uint8_t *rec =
      p->pCounterDataImage + sizeof h + p->rangeIndex * sample_bytes();
  for (size_t i = 0; i < p->numMetrics; i++) {
    int m = metric_index(p->ppMetricNames[i]);
    uint32_t k = 0;
    while (k < h.n && h.metric[k] != m)
      k++;
    if (m < 0 || k == h.n) RETURN(CUPTI_ERROR_INVALID_METRIC_NAME);
    memcpy(&p->pMetricValues[i], rec + 16 + 8 * (size_t)k, 8);
  }
  RETURN(CUPTI_SUCCESS);
}

/* A forked child is a process of its own: no session, no profiler, its own
 * counts (the parent's sessions stay the parent's). */
static void after_fork_child(void) {
  pthread_mutex_init(&S.lock, NULL);
  S.inited = 0;
  S.deinits = 0;
  memset(S.calls, 0, sizeof S.calls);
  memset(S.dev, 0, sizeof S.dev);
}

__attribute__((constructor)) static void pm_sim_init(void) {
  pthread_atfork(NULL, NULL, after_fork_child);
}

/* GPUSIM_PM_STATS=FILE: at unload, "PID NAME CALLS" per entry point
 * called, and "PID deinitialized N" (successful de-initialisations). */
__attribute__((destructor)) static void write_stats(void) {
  const char *path = getenv("GPUSIM_PM_STATS");
  if (!path || !*path) return;
  char buf[4096];
  size_t n = 0;
  pthread_mutex_lock(&S.lock);
  uint64_t any = 0;
  for (int i = 0; i < NCALLS; i++)
    any |= S.calls[i];
  for (int i = 0; i < NCALLS; i++)
    if (S.calls[i] && n < sizeof buf)
      n += (size_t)snprintf(buf + n, sizeof buf - n, "%d %s %llu\n",
                            (int)getpid(), call_names[i],
                            (unsigned long long)S.calls[i]);
  if (any && n < sizeof buf)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%d deinitialized %d\n",
                          (int)getpid(), S.deinits);
  pthread_mutex_unlock(&S.lock);
  if (n > sizeof buf) n = sizeof buf;
  if (!n) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  fwrite(buf, 1, n, f);
  fclose(f);
}
