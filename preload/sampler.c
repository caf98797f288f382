/* The counter sampler: NVML and GPM readings for the devices the trace
 * describes, on a thread of its own (never an application thread), into
 * METRIC, SAMPLE and SAMPLER records that the writer thread writes.
 *
 * Threads: the sampler thread reads NVML and keeps its records in a
 * pending list sorted by start, releasing those no later reading can
 * precede into a bounded queue (mutex); the writer thread drains the
 * queue in every pass (gp_sampler_poll) and publishes the described
 * devices (an atomic mask). Memory is bounded: the queue and the pending
 * list hold at most QUEUE_CAP and PENDING_CAP records; past that records
 * are dropped and counted (a SAMPLER OVERFLOW record says so).
 *
 * NVML is loaded when the thread starts (the process's first CUDA call),
 * with one reading of every NVML device's energy counter; a device is read
 * as soon as the writer describes it (gp_sampler_poll wakes the thread),
 * then every period, and once more at exit.
 *
 * NVML's sample timestamps are microseconds on a clock of NVML's own
 * (CLOCK_REALTIME or CLOCK_BOOTTIME seen): the first batch of a device
 * tells which (the candidate whose "now" is at most 5 s after the newest
 * sample, and not before it), then every batch is converted with a pair of
 * readings of that clock and CLOCK_MONOTONIC (the trace's clock) taken
 * together (the tightest of three). See docs/counters.md, "Sampling". */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "gp_fd.h"
#include "gp_lifecycle.h"
#include "gp_nvml.h"
#include "gp_records.h"
#include "gp_sampler.h"
#include "gp_settings.h"
#include "gp_shim.h"

#define MAX_DEV 64
#define QUEUE_CAP 4096
#define PENDING_CAP 4096
#define SAMPLE_BUF 256
#define GPM_MIN_MS 200
#define JOIN_WAIT_MS 3000
#define REASON_MAX 112
#define UTIL_LATE_NS 2000000000ull
#define MAX_PERIOD_US 1000000ull /* NVML's sample period is 1/6 s to 1 s */

/* The metrics, by index (METRIC name, unit, scale). */
enum {
  M_GPU_UTIL, M_MEM_UTIL, M_MEM_USED, M_MEM_TOTAL, M_PROC_MEM, M_SM_CLOCK,
  M_MEM_CLOCK, M_POWER, M_ENERGY, M_EVENTS, M_TEMP, M_PROCS, M_PCIE_TX,
  M_PCIE_RX, /* NVML */
  G_SM_ACTIVE, G_OCC, G_TENSOR, G_DRAM, G_PCIE_TX, G_PCIE_RX, G_NVL_TX,
  G_NVL_RX, /* GPM */
  N_METRICS
};
static const struct {
  const char *name;
  int unit;
  uint64_t scale;
} metrics[N_METRICS] = {
    [M_GPU_UTIL] = {"gpu_util", GPUPHASE_UNIT_PERCENT, 1000},
    [M_MEM_UTIL] = {"mem_util", GPUPHASE_UNIT_PERCENT, 1000},
    [M_MEM_USED] = {"mem_used", GPUPHASE_UNIT_BYTES, 1},
    [M_MEM_TOTAL] = {"mem_total", GPUPHASE_UNIT_BYTES, 1},
    [M_PROC_MEM] = {"proc_mem_used", GPUPHASE_UNIT_BYTES, 1},
    [M_SM_CLOCK] = {"sm_clock", GPUPHASE_UNIT_MHZ, 1},
    [M_MEM_CLOCK] = {"mem_clock", GPUPHASE_UNIT_MHZ, 1},
    [M_POWER] = {"power", GPUPHASE_UNIT_WATTS, 1000},
    [M_ENERGY] = {"energy", GPUPHASE_UNIT_JOULES, 1000},
    [M_EVENTS] = {"clock_events", GPUPHASE_UNIT_MASK, 1},
    [M_TEMP] = {"temperature", GPUPHASE_UNIT_CELSIUS, 1},
    [M_PROCS] = {"procs", GPUPHASE_UNIT_COUNT, 1},
    [M_PCIE_TX] = {"pcie_tx", GPUPHASE_UNIT_BYTES_PER_S, 1},
    [M_PCIE_RX] = {"pcie_rx", GPUPHASE_UNIT_BYTES_PER_S, 1},
    [G_SM_ACTIVE] = {"sm_active", GPUPHASE_UNIT_PERCENT, 1000},
    [G_OCC] = {"sm_occupancy", GPUPHASE_UNIT_PERCENT, 1000},
    [G_TENSOR] = {"tensor_active", GPUPHASE_UNIT_PERCENT, 1000},
    [G_DRAM] = {"dram_bw", GPUPHASE_UNIT_PERCENT, 1000},
    [G_PCIE_TX] = {"pcie_tx", GPUPHASE_UNIT_BYTES_PER_S, 1},
    [G_PCIE_RX] = {"pcie_rx", GPUPHASE_UNIT_BYTES_PER_S, 1},
    [G_NVL_TX] = {"nvlink_tx", GPUPHASE_UNIT_BYTES_PER_S, 1},
    [G_NVL_RX] = {"nvlink_rx", GPUPHASE_UNIT_BYTES_PER_S, 1},
};
static const unsigned gpm_ids[] = {
    [G_SM_ACTIVE - G_SM_ACTIVE] = GP_NVML_GPM_SM_UTIL,
    [G_OCC - G_SM_ACTIVE] = GP_NVML_GPM_SM_OCCUPANCY,
    [G_TENSOR - G_SM_ACTIVE] = GP_NVML_GPM_ANY_TENSOR_UTIL,
    [G_DRAM - G_SM_ACTIVE] = GP_NVML_GPM_DRAM_BW_UTIL,
    [G_PCIE_TX - G_SM_ACTIVE] = GP_NVML_GPM_PCIE_TX_PER_SEC,
    [G_PCIE_RX - G_SM_ACTIVE] = GP_NVML_GPM_PCIE_RX_PER_SEC,
    [G_NVL_TX - G_SM_ACTIVE] = GP_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC,
    [G_NVL_RX - G_SM_ACTIVE] = GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC,
};
#define N_GPM (N_METRICS - G_SM_ACTIVE)

enum { IT_METRIC, IT_SAMPLE, IT_SAMPLER };

struct item {
  uint8_t kind, source, status, metric_index;
  int32_t device;
  uint32_t metric;
  uint64_t seq; /* pending order among equal starts */
  uint64_t start, end;
  int64_t value;
  char reason[REASON_MAX];
};

/* ---- NVML entry points ---- */
static struct {
  void *lib;
  int inited;
  gp_nvmlReturn_t (*init)(void);
  gp_nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(gp_nvmlReturn_t);
  gp_nvmlReturn_t (*count)(unsigned *);
  gp_nvmlReturn_t (*by_index)(unsigned, gp_nvmlDevice_t *);
  gp_nvmlReturn_t (*by_pci)(const char *, gp_nvmlDevice_t *);
  gp_nvmlReturn_t (*uuid)(gp_nvmlDevice_t, char *, unsigned);
  gp_nvmlReturn_t (*samples)(gp_nvmlDevice_t, int, unsigned long long, int *,
                             unsigned *, gp_nvmlSample_t *);
  gp_nvmlReturn_t (*util)(gp_nvmlDevice_t, gp_nvmlUtilization_t *);
  gp_nvmlReturn_t (*memory)(gp_nvmlDevice_t, gp_nvmlMemory_v2_t *);
  gp_nvmlReturn_t (*clock)(gp_nvmlDevice_t, int, unsigned *);
  gp_nvmlReturn_t (*energy)(gp_nvmlDevice_t, unsigned long long *);
  gp_nvmlReturn_t (*power)(gp_nvmlDevice_t, unsigned *);
  gp_nvmlReturn_t (*events)(gp_nvmlDevice_t, unsigned long long *);
  gp_nvmlReturn_t (*temperature)(gp_nvmlDevice_t, int, unsigned *);
  gp_nvmlReturn_t (*pcie)(gp_nvmlDevice_t, int, unsigned *);
  gp_nvmlReturn_t (*procs)(gp_nvmlDevice_t, unsigned *, gp_nvmlProcessInfo_t *);
  gp_nvmlReturn_t (*gpm_support)(gp_nvmlDevice_t, gp_nvmlGpmSupport_t *);
  gp_nvmlReturn_t (*gpm_alloc)(gp_nvmlGpmSample_t *);
  gp_nvmlReturn_t (*gpm_free)(gp_nvmlGpmSample_t);
  gp_nvmlReturn_t (*gpm_get)(gp_nvmlDevice_t, gp_nvmlGpmSample_t);
  gp_nvmlReturn_t (*gpm_metrics)(gp_nvmlGpmMetricsGet_t *);
} nv;

/* ---- per device, sampler thread only ---- */
enum { CLK_UNKNOWN = -1, CLK_NONE = 3 };
static const clockid_t candidates[3] = {CLOCK_REALTIME, CLOCK_BOOTTIME,
                                        CLOCK_MONOTONIC};

struct dev {
  int state; /* 0 not set up, 1 sampling, 2 given up */
  gp_nvmlDevice_t h;
  uint32_t off; /* bit per NVML metric: not available, not asked again */
  int util_rates; /* nvmlDeviceGetSamples unusable: utilisation rates */
  int clk;        /* index in candidates, CLK_UNKNOWN, CLK_NONE */
  int based[2];   /* the first batch of samples was seen */
  unsigned long long last_ts[2]; /* NVML us of the newest sample seen */
  unsigned long long period_us[2]; /* shortest gap between samples seen */
  uint64_t mark[2];              /* no later sample of each kind starts before */
  uint64_t util_mark;            /* the lower of the two */
  uint64_t prev_tick;
  gp_nvmlSample_t *buf;
  unsigned cap;
  int gpm; /* 1 sampling */
  gp_nvmlGpmSample_t gs[2];
  int cur;
  uint64_t gpm_last;
};

static struct {
  /* control; mode and the thread set before it starts */
  _Atomic int mode; /* 0 none, 1 sampling, 2 off (OFF records only) */
  char off_reason[64];
  pthread_t thread;
  int running;
  pthread_mutex_t lock; /* stop, cond, and the queue */
  pthread_cond_t cond;
  int stop;
  int started; /* the thread runs */
  int fresh;   /* the writer described a device the sampler has not read */
  _Atomic uint64_t want; /* described devices, from the writer */
  /* the queue */
  struct item queue[QUEUE_CAP];
  unsigned qhead, qn;
  uint64_t dropped;
  /* sampler thread */
  struct dev dev[MAX_DEV];
  struct item pending[PENDING_CAP];
  unsigned npending;
  uint64_t seq;
  uint64_t released; /* start of the newest released record */
  uint64_t defined[MAX_DEV]; /* bit per metric index: METRIC queued */
  uint64_t t_start;
  uint64_t t_since; /* recording's start: NVML periods kept from there */
  unsigned period_ms, gpm_ms;
  int warned_nvml, warned_gpm;
  gp_nvmlGpmMetricsGet_t *mg;
  /* writer thread */
  uint32_t source;
  uint64_t written; /* start of the newest record written */
  uint64_t off_told;
  uint64_t dropped_told;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t clock_of(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t metric_id(int dev, int m) {
  return (uint32_t)(dev * N_METRICS + m + 1);
}

/* ---- records, sampler thread ---- */
static void queue_push(const struct item *it) {
  pthread_mutex_lock(&S.lock);
  if (S.qn < QUEUE_CAP) {
    S.queue[(S.qhead + S.qn) % QUEUE_CAP] = *it;
    S.qn++;
  } else {
    S.dropped++;
  }
  pthread_mutex_unlock(&S.lock);
}

static int item_before(const struct item *x, const struct item *y) {
  return x->start != y->start ? x->start < y->start : x->seq < y->seq;
}

/* Insertion sort, in place: the pending records come almost in order, and
 * nothing here allocates (glibc's qsort may), so that a fork by another
 * thread never finds this one inside an allocator that a sanitizer leaves
 * locked in the child. */
static void pending_sort(void) {
  static struct item tmp;
  for (unsigned i = 1; i < S.npending; i++) {
    if (!item_before(&S.pending[i], &S.pending[i - 1])) continue;
    tmp = S.pending[i];
    unsigned j = i;
    for (; j > 0 && item_before(&tmp, &S.pending[j - 1]); j--) S.pending[j] = S.pending[j - 1];
    S.pending[j] = tmp;
  }
}

/* Hands the pending records starting at or before mark to the writer, in
 * start order; those that would go back in time are dropped. */
static void release(uint64_t mark) {
  if (!S.npending) return;
  pending_sort();
  unsigned i = 0;
  for (; i < S.npending && S.pending[i].start <= mark; i++) {
    struct item *it = &S.pending[i];
    if (it->start < S.released) continue; /* arrived too late (see utilization) */
    S.released = it->start;
    if (it->kind == IT_SAMPLE && !(S.defined[it->device] >> it->metric_index & 1)) {
      struct item m = {.kind = IT_METRIC, .device = it->device,
                       .metric = it->metric, .metric_index = it->metric_index,
                       .source = it->source};
      queue_push(&m);
      S.defined[it->device] |= UINT64_C(1) << it->metric_index;
    }
    queue_push(it);
  }
  memmove(S.pending, S.pending + i, (S.npending - i) * sizeof S.pending[0]);
  S.npending -= i;
}

static void pend(const struct item *it) {
  if (S.npending == PENDING_CAP) {
    /* Full: the older half goes now, whatever comes later. */
    pending_sort();
    release(S.pending[PENDING_CAP / 2].start);
  }
  if (S.npending < PENDING_CAP) {
    S.pending[S.npending] = *it;
    S.pending[S.npending].seq = S.seq++;
    S.npending++;
  }
}

static void sample(int d, int m, uint64_t start, uint64_t end, int64_t value) {
  struct item it = {.kind = IT_SAMPLE, .device = d, .metric = metric_id(d, m),
                    .metric_index = (uint8_t)m,
                    .source = m >= G_SM_ACTIVE ? GPUPHASE_MSRC_GPM : GPUPHASE_MSRC_NVML,
                    .start = start, .end = end, .value = value};
  pend(&it);
}

static void sampler_rec(int d, int source, int status, uint64_t t,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void sampler_rec(int d, int source, int status, uint64_t t,
                        const char *fmt, ...) {
  struct item it = {.kind = IT_SAMPLER, .device = d, .source = (uint8_t)source,
                    .status = (uint8_t)status, .start = t};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it.reason, sizeof it.reason, fmt, ap);
  va_end(ap);
  pend(&it);
}

static const char *nv_err(gp_nvmlReturn_t r) {
  const char *s = nv.error_string ? nv.error_string(r) : NULL;
  return s ? s : "unknown error";
}

static int status_of(gp_nvmlReturn_t r) {
  switch (r) {
  case GP_NVML_ERROR_NO_PERMISSION: return GPUPHASE_MSTAT_DENIED;
  case GP_NVML_ERROR_IN_USE: return GPUPHASE_MSTAT_BUSY;
  case GP_NVML_ERROR_NOT_SUPPORTED: return GPUPHASE_MSTAT_UNSUPPORTED;
  case GP_NVML_ERROR_DRIVER_NOT_LOADED:
  case GP_NVML_ERROR_LIBRARY_NOT_FOUND:
  case GP_NVML_ERROR_FUNCTION_NOT_FOUND: return GPUPHASE_MSTAT_MISSING;
  default: return GPUPHASE_MSTAT_FAILED;
  }
}

/* ---- NVML loading ---- */
static int nvml_status; /* GPUPHASE_MSTAT_* once tried */
static char nvml_reason[REASON_MAX];
static int nvml_tried;

#define SYM(field, name)                                                       \
  (nv.field = (__typeof__(nv.field))(uintptr_t)dlsym(nv.lib, name))

static void nvml_load_held(void);

/* NVML's library and set-up may open descriptors: above 2 (gp_fd.h). */
static void nvml_load(void) {
  unsigned held = gp_fd_std_hold();
  nvml_load_held();
  gp_fd_std_release(held);
}

static void nvml_load_held(void) {
  nvml_tried = 1;
  nvml_status = GPUPHASE_MSTAT_OK;
  if (!nv.lib) nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nv.lib) {
    nvml_status = GPUPHASE_MSTAT_MISSING;
    snprintf(nvml_reason, sizeof nvml_reason, "libnvidia-ml.so.1 not found");
    return;
  }
  SYM(init, "nvmlInit_v2");
  SYM(shutdown, "nvmlShutdown");
  SYM(error_string, "nvmlErrorString");
  SYM(count, "nvmlDeviceGetCount_v2");
  SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
  SYM(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  SYM(uuid, "nvmlDeviceGetUUID");
  SYM(samples, "nvmlDeviceGetSamples");
  SYM(util, "nvmlDeviceGetUtilizationRates");
  SYM(memory, "nvmlDeviceGetMemoryInfo_v2");
  SYM(clock, "nvmlDeviceGetClockInfo");
  SYM(energy, "nvmlDeviceGetTotalEnergyConsumption");
  SYM(power, "nvmlDeviceGetPowerUsage");
  SYM(events, "nvmlDeviceGetCurrentClocksEventReasons");
  SYM(temperature, "nvmlDeviceGetTemperature");
  SYM(pcie, "nvmlDeviceGetPcieThroughput");
  SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
  SYM(gpm_support, "nvmlGpmQueryDeviceSupport");
  SYM(gpm_alloc, "nvmlGpmSampleAlloc");
  SYM(gpm_free, "nvmlGpmSampleFree");
  SYM(gpm_get, "nvmlGpmSampleGet");
  SYM(gpm_metrics, "nvmlGpmMetricsGet");
  if (!nv.init || !nv.shutdown || !nv.by_pci || !nv.memory) {
    nvml_status = GPUPHASE_MSTAT_MISSING;
    snprintf(nvml_reason, sizeof nvml_reason,
             "libnvidia-ml.so.1 lacks nvmlInit_v2 or the device queries");
    return;
  }
  gp_nvmlReturn_t r = nv.init();
  if (r != GP_NVML_SUCCESS) {
    nvml_status = status_of(r);
    if (nvml_status == GPUPHASE_MSTAT_UNSUPPORTED) nvml_status = GPUPHASE_MSTAT_FAILED;
    snprintf(nvml_reason, sizeof nvml_reason, "nvmlInit_v2: %s", nv_err(r));
    return;
  }
  nv.inited = 1;
}

static void warn_once(int *flag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_once(int *flag, const char *fmt, ...) {
  if (*flag) return;
  *flag = 1;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  gp_warn("%s", line);
}

/* ---- device set-up ---- */
typedef CUresult (*cu_pci_fn)(char *, int, CUdevice);
typedef CUresult (*cu_uuid_fn)(CUuuid *, CUdevice);

/* The NVML handle of CUDA device d: by PCI bus id, else by UUID. */
static gp_nvmlReturn_t match(int d, gp_nvmlDevice_t *h, char *why, size_t cap) {
  void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) {
    snprintf(why, cap, "libcuda.so.1 not loaded");
    return GP_NVML_ERROR_NOT_FOUND;
  }
  cu_pci_fn pci = (cu_pci_fn)(uintptr_t)dlsym(cuda, "cuDeviceGetPCIBusId");
  cu_uuid_fn uuid = (cu_uuid_fn)(uintptr_t)dlsym(cuda, "cuDeviceGetUuid_v2");
  if (!uuid) uuid = (cu_uuid_fn)(uintptr_t)dlsym(cuda, "cuDeviceGetUuid");
  char bus[64] = "";
  gp_nvmlReturn_t r = GP_NVML_ERROR_NOT_FOUND;
  if (pci && pci(bus, sizeof bus, (CUdevice)d) == CUDA_SUCCESS)
    r = nv.by_pci(bus, h);
  CUuuid u;
  unsigned n = 0;
  if (r != GP_NVML_SUCCESS && uuid && nv.uuid && nv.count && nv.by_index &&
      uuid(&u, (CUdevice)d) == CUDA_SUCCESS && nv.count(&n) == GP_NVML_SUCCESS) {
    const unsigned char *b = (const unsigned char *)u.bytes;
    char want[64];
    snprintf(want, sizeof want,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
             b[11], b[12], b[13], b[14], b[15]);
    for (unsigned i = 0; i < n && r != GP_NVML_SUCCESS; i++) {
      gp_nvmlDevice_t c;
      char got[GP_NVML_UUID_SIZE];
      if (nv.by_index(i, &c) == GP_NVML_SUCCESS &&
          nv.uuid(c, got, sizeof got) == GP_NVML_SUCCESS && strcmp(got, want) == 0) {
        *h = c;
        r = GP_NVML_SUCCESS;
      }
    }
  }
  if (r != GP_NVML_SUCCESS)
    snprintf(why, cap, "CUDA device %d (PCI %s) not found by NVML", d,
             bus[0] ? bus : "unknown");
  dlclose(cuda);
  return r;
}

static void gpm_setup(int d, uint64_t now) {
  struct dev *v = &S.dev[d];
  gp_nvmlGpmSupport_t sup = {.version = GP_NVML_GPM_SUPPORT_VERSION};
  gp_nvmlReturn_t r;
  int st;
  if (!nv.gpm_support || !nv.gpm_alloc || !nv.gpm_free || !nv.gpm_get ||
      !nv.gpm_metrics) {
    sampler_rec(d, GPUPHASE_MSRC_GPM, GPUPHASE_MSTAT_MISSING, now,
                "libnvidia-ml.so.1 has no GPM entry points");
    warn_once(&S.warned_gpm, "NVML has no GPM: no SM activity counters");
    return;
  }
  if ((r = nv.gpm_support(v->h, &sup)) != GP_NVML_SUCCESS || !sup.isSupportedDevice) {
    st = r == GP_NVML_SUCCESS ? GPUPHASE_MSTAT_UNSUPPORTED : status_of(r);
    sampler_rec(d, GPUPHASE_MSRC_GPM, st, now, "%s",
                r == GP_NVML_SUCCESS ? "GPM not supported on this device"
                                     : nv_err(r));
    warn_once(&S.warned_gpm, "GPM unavailable on device %d (%s): no SM activity counters",
              d, r == GP_NVML_SUCCESS ? "not supported" : nv_err(r));
    return;
  }
  if (!S.mg && !(S.mg = calloc(1, sizeof *S.mg))) return;
  if (nv.gpm_alloc(&v->gs[0]) != GP_NVML_SUCCESS) v->gs[0] = NULL;
  if (nv.gpm_alloc(&v->gs[1]) != GP_NVML_SUCCESS) v->gs[1] = NULL;
  r = v->gs[0] && v->gs[1] ? nv.gpm_get(v->h, v->gs[0]) : GP_NVML_ERROR_UNKNOWN;
  uint64_t t = clock_of(CLOCK_MONOTONIC);
  if (r != GP_NVML_SUCCESS) {
    sampler_rec(d, GPUPHASE_MSRC_GPM, status_of(r), now, "nvmlGpmSampleGet: %s",
                nv_err(r));
    warn_once(&S.warned_gpm, "GPM unavailable on device %d (%s): no SM activity counters",
              d, nv_err(r));
    if (v->gs[0]) nv.gpm_free(v->gs[0]);
    if (v->gs[1]) nv.gpm_free(v->gs[1]);
    v->gs[0] = v->gs[1] = NULL;
    return;
  }
  v->gpm = 1;
  v->cur = 0;
  v->gpm_last = now + (t - now) / 2;
  sampler_rec(d, GPUPHASE_MSRC_GPM, GPUPHASE_MSTAT_OK, v->gpm_last, " ");
}

/* The energy counter of every NVML device, read once when NVML is
 * initialised (the sampler's start, at the process's first CUDA call),
 * before the trace has described any device: a CUDA device that NVML
 * matches to one of them later starts its energy readings from there, so
 * that the energy covers the run from its start rather than from the
 * device's first description (the writer's next pass). */
static struct {
  unsigned n;
  struct {
    gp_nvmlDevice_t h;
    uint64_t t;
    unsigned long long mj;
  } v[MAX_DEV];
} base_energy;

static void energy_baseline(void) {
  base_energy.n = 0;
  unsigned n = 0;
  if (!nv.inited || !nv.energy || !nv.count || !nv.by_index ||
      nv.count(&n) != GP_NVML_SUCCESS)
    return;
  for (unsigned i = 0; i < n && base_energy.n < MAX_DEV; i++) {
    gp_nvmlDevice_t h;
    unsigned long long mj;
    if (nv.by_index(i, &h) != GP_NVML_SUCCESS) continue;
    uint64_t a = clock_of(CLOCK_MONOTONIC);
    if (nv.energy(h, &mj) != GP_NVML_SUCCESS) continue;
    uint64_t b = clock_of(CLOCK_MONOTONIC);
    base_energy.v[base_energy.n].h = h;
    base_energy.v[base_energy.n].t = a + (b - a) / 2;
    base_energy.v[base_energy.n].mj = mj;
    base_energy.n++;
  }
}

/* The energy read at the sampler's start of the NVML device with handle h
 * (NVML's handles are the same however a device is found): 1 with its
 * time and value, 0 when there is none or a later record has gone to the
 * writer already. Each is given once. */
static int energy_base_of(gp_nvmlDevice_t h, uint64_t *t, unsigned long long *mj) {
  for (unsigned i = 0; i < base_energy.n; i++) {
    if (base_energy.v[i].h != h) continue;
    *t = base_energy.v[i].t;
    *mj = base_energy.v[i].mj;
    base_energy.v[i] = base_energy.v[--base_energy.n];
    return *t >= S.released;
  }
  return 0;
}

static void device_setup(int d, uint64_t now) {
  struct dev *v = &S.dev[d];
  v->state = 2;
  if (!nvml_tried) nvml_load();
  if (nvml_status != GPUPHASE_MSTAT_OK) {
    sampler_rec(d, GPUPHASE_MSRC_NVML, nvml_status, now, "%s", nvml_reason);
    sampler_rec(d, GPUPHASE_MSRC_GPM, nvml_status, now, "%s", nvml_reason);
    warn_once(&S.warned_nvml, "NVML unavailable (%s): no device counters in the trace",
              nvml_reason);
    return;
  }
  char why[REASON_MAX];
  if (match(d, &v->h, why, sizeof why) != GP_NVML_SUCCESS) {
    sampler_rec(d, GPUPHASE_MSRC_NVML, GPUPHASE_MSTAT_FAILED, now, "%s", why);
    sampler_rec(d, GPUPHASE_MSRC_GPM, GPUPHASE_MSTAT_FAILED, now, "%s", why);
    warn_once(&S.warned_nvml, "NVML: %s; no device counters for it", why);
    return;
  }
  v->state = 1;
  v->clk = CLK_UNKNOWN;
  /* the records of devices set up before any is handed on wait for
   * NVML's first period, which began when recording did or earlier */
  v->util_mark = v->mark[0] = v->mark[1] = S.released ? now : S.t_since;
  v->prev_tick = now;
  v->period_us[0] = v->period_us[1] = MAX_PERIOD_US;
  unsigned cap = 0;
  int vt;
  if (nv.samples &&
      nv.samples(v->h, GP_NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &cap, NULL) ==
          GP_NVML_SUCCESS &&
      cap > 0) {
    v->cap = cap < SAMPLE_BUF ? cap : SAMPLE_BUF;
    v->buf = calloc(v->cap, sizeof *v->buf);
  }
  if (!v->buf) v->util_rates = 1;
  uint64_t t0;
  unsigned long long mj;
  int based = energy_base_of(v->h, &t0, &mj) && t0 < now;
  sampler_rec(d, GPUPHASE_MSRC_NVML, GPUPHASE_MSTAT_OK, based ? t0 : now, " ");
  if (based) sample(d, M_ENERGY, t0, t0, (int64_t)mj);
  gpm_setup(d, now);
}

/* ---- readings ---- */
/* NVML us to trace ns through clock c: a tight pair of readings. */
static int64_t clock_offset(clockid_t c) {
  uint64_t best_gap = UINT64_MAX;
  int64_t off = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t a = clock_of(CLOCK_MONOTONIC), x = clock_of(c), b = clock_of(CLOCK_MONOTONIC);
    if (b - a < best_gap) {
      best_gap = b - a;
      off = (int64_t)(x - (a + (b - a) / 2));
    }
  }
  return off;
}

static void samples_sort(gp_nvmlSample_t *v, unsigned n) {
  for (unsigned i = 1; i < n; i++) {
    gp_nvmlSample_t t = v[i];
    unsigned j = i;
    for (; j > 0 && v[j - 1].timeStamp > t.timeStamp; j--) v[j] = v[j - 1];
    v[j] = t;
  }
}

static void utilization(int d, uint64_t now, int last) {
  struct dev *v = &S.dev[d];
  uint64_t floor_ns = S.released > S.t_since ? S.released : S.t_since;
  for (int k = 0; k < 2 && !v->util_rates; k++) {
    int type = k ? GP_NVML_MEMORY_UTILIZATION_SAMPLES : GP_NVML_GPU_UTILIZATION_SAMPLES;
    int m = k ? M_MEM_UTIL : M_GPU_UTIL;
    unsigned n = v->cap;
    int vt = 0;
    gp_nvmlReturn_t r = nv.samples(v->h, type, v->last_ts[k], &vt, &n, v->buf);
    if (r == GP_NVML_ERROR_NOT_FOUND) continue;
    if (r != GP_NVML_SUCCESS || vt != GP_NVML_VALUE_TYPE_UNSIGNED_INT) {
      v->util_rates = 1;
      break;
    }
    if (n == 0) continue;
    if (n > v->cap) n = v->cap;
    samples_sort(v->buf, n);
    if (v->clk == CLK_UNKNOWN) {
      unsigned long long newest = v->buf[n - 1].timeStamp;
      v->clk = CLK_NONE;
      for (int c = 0; c < 3 && v->clk == CLK_NONE; c++) {
        long long lag = (long long)(clock_of(candidates[c]) / 1000) - (long long)newest;
        if (lag >= -2000 && lag <= 5000000) v->clk = c;
      }
      if (v->clk == CLK_NONE) {
        warn_once(&S.warned_nvml,
                  "NVML sample times on an unknown clock: GPU-Util from "
                  "nvmlDeviceGetUtilizationRates");
        v->util_rates = 1;
        break;
      }
    }
    int64_t off = clock_offset(candidates[v->clk]);
    unsigned i = 0;
    unsigned long long prev = v->last_ts[k];
    if (!v->based[k]) {
      /* The first batch: its oldest sample covers one period before it,
       * the shortest gap of the batch (a run that starts idle has its idle
       * first period counted). A lone sample gives no period: it is read
       * again with the next (NVML keeps them; the records after it wait
       * for it, a period at most), and is only the next one's start if
       * none comes. */
      if (n == 1 && !last) continue;
      v->based[k] = 1;
      for (unsigned j = 1; j < n; j++) {
        unsigned long long g = v->buf[j].timeStamp - v->buf[j - 1].timeStamp;
        if (g && g < v->period_us[k]) v->period_us[k] = g;
      }
      prev = v->buf[0].timeStamp;
      if (n > 1 && prev > v->period_us[k]) prev -= v->period_us[k];
      else i = 1;
    }
    for (; i < n; i++) {
      unsigned long long ts = v->buf[i].timeStamp;
      if (ts <= prev) continue;
      /* A sample covers one period before its time: after an idle gap
       * (NVML reports none while idle) not the whole gap. */
      unsigned long long gap = ts - prev;
      if (gap < v->period_us[k]) v->period_us[k] = gap;
      unsigned long long from = gap > v->period_us[k] ? ts - v->period_us[k] : prev;
      int64_t s = (int64_t)(from * 1000ull) - off, e = (int64_t)(ts * 1000ull) - off;
      if (s > 0 && (uint64_t)s >= floor_ns && e > s)
        sample(d, m, (uint64_t)s, (uint64_t)e,
               (int64_t)v->buf[i].sampleValue.uiVal * 1000);
      prev = ts;
    }
    v->last_ts[k] = prev;
    int64_t mark = (int64_t)(prev * 1000ull) - off - 1000000; /* 1 ms of slack */
    v->mark[k] = mark > 0 ? (uint64_t)mark : 0;
  }
  v->util_mark = v->mark[0] < v->mark[1] ? v->mark[0] : v->mark[1];
  /* Samples reported more than UTIL_LATE_NS after their start are not
   * waited for (they are dropped when they come). */
  if (now > UTIL_LATE_NS && v->util_mark < now - UTIL_LATE_NS)
    v->util_mark = now - UTIL_LATE_NS;
  if (v->util_rates && nv.util && !(v->off >> M_GPU_UTIL & 1)) {
    gp_nvmlUtilization_t u;
    if (nv.util(v->h, &u) == GP_NVML_SUCCESS) {
      if (now > v->prev_tick) {
        sample(d, M_GPU_UTIL, v->prev_tick, now, (int64_t)u.gpu * 1000);
        sample(d, M_MEM_UTIL, v->prev_tick, now, (int64_t)u.memory * 1000);
      }
    } else {
      v->off |= 1u << M_GPU_UTIL;
    }
    v->util_mark = now;
  }
}

/* One instant reading: kept while the call succeeds, dropped for good
 * from the first failure (not supported, say). */
#define INSTANT(m, call, value)                                                \
  do {                                                                         \
    if (!(v->off >> (m) & 1)) {                                                \
      if (call)                                                                \
        sample(d, m, now, now, (int64_t)(value));                              \
      else                                                                     \
        v->off |= 1u << (m);                                                   \
    }                                                                          \
  } while (0)

static void instants(int d, uint64_t now) {
  struct dev *v = &S.dev[d];
  gp_nvmlMemory_v2_t mem = {.version = GP_NVML_MEMORY_V2};
  gp_nvmlReturn_t r = nv.memory(v->h, &mem);
  if (r == GP_NVML_ERROR_GPU_IS_LOST || r == GP_NVML_ERROR_UNINITIALIZED) {
    sampler_rec(d, GPUPHASE_MSRC_NVML, GPUPHASE_MSTAT_FAILED, now,
                "nvmlDeviceGetMemoryInfo_v2: %s", nv_err(r));
    warn_once(&S.warned_nvml, "NVML failed on device %d (%s): sampling stopped", d,
              nv_err(r));
    v->state = 2;
    return;
  }
  INSTANT(M_MEM_USED, r == GP_NVML_SUCCESS, mem.used);
  INSTANT(M_MEM_TOTAL, r == GP_NVML_SUCCESS, mem.total);
  unsigned u = 0;
  unsigned long long ull = 0;
  INSTANT(M_SM_CLOCK, nv.clock && nv.clock(v->h, GP_NVML_CLOCK_SM, &u) == 0, u);
  INSTANT(M_MEM_CLOCK, nv.clock && nv.clock(v->h, GP_NVML_CLOCK_MEM, &u) == 0, u);
  INSTANT(M_POWER, nv.power && nv.power(v->h, &u) == 0, u);
  INSTANT(M_ENERGY, nv.energy && nv.energy(v->h, &ull) == 0, ull);
  INSTANT(M_EVENTS, nv.events && nv.events(v->h, &ull) == 0, ull);
  INSTANT(M_TEMP, nv.temperature && nv.temperature(v->h, GP_NVML_TEMPERATURE_GPU, &u) == 0, u);
  /* KB/s over NVML's 20 ms: an average over the 20 ms before now */
  uint64_t p0 = now > GP_NVML_PCIE_INTERVAL_NS ? now - GP_NVML_PCIE_INTERVAL_NS : 0;
  if (!(v->off >> M_PCIE_TX & 1)) {
    if (nv.pcie && nv.pcie(v->h, GP_NVML_PCIE_UTIL_TX_BYTES, &u) == 0)
      sample(d, M_PCIE_TX, p0, now, (int64_t)u * 1024);
    else
      v->off |= 1u << M_PCIE_TX;
  }
  if (!(v->off >> M_PCIE_RX & 1)) {
    if (nv.pcie && nv.pcie(v->h, GP_NVML_PCIE_UTIL_RX_BYTES, &u) == 0)
      sample(d, M_PCIE_RX, p0, now, (int64_t)u * 1024);
    else
      v->off |= 1u << M_PCIE_RX;
  }
  if (!(v->off >> M_PROCS & 1)) {
    gp_nvmlProcessInfo_t info[64];
    unsigned n = 64;
    if (nv.procs && nv.procs(v->h, &n, info) == 0) {
      sample(d, M_PROCS, now, now, n);
      pid_t self = getpid();
      for (unsigned i = 0; i < n && i < 64; i++)
        if (info[i].pid == (unsigned)self) sample(d, M_PROC_MEM, now, now, (int64_t)info[i].usedGpuMemory);
    } else {
      v->off |= 1u << M_PROCS;
    }
  }
}

static void gpm_read(int d, uint64_t now) {
  struct dev *v = &S.dev[d];
  int next = 1 - v->cur;
  uint64_t a = clock_of(CLOCK_MONOTONIC);
  gp_nvmlReturn_t r = nv.gpm_get(v->h, v->gs[next]);
  uint64_t b = clock_of(CLOCK_MONOTONIC);
  uint64_t t = a + (b - a) / 2;
  (void)now;
  if (r == GP_NVML_SUCCESS) {
    memset(S.mg, 0, sizeof *S.mg);
    S.mg->version = GP_NVML_GPM_METRICS_GET_VERSION;
    S.mg->numMetrics = N_GPM;
    S.mg->sample1 = v->gs[v->cur];
    S.mg->sample2 = v->gs[next];
    for (int i = 0; i < N_GPM; i++) S.mg->metrics[i].metricId = gpm_ids[i];
    r = nv.gpm_metrics(S.mg);
  }
  if (r != GP_NVML_SUCCESS) {
    sampler_rec(d, GPUPHASE_MSRC_GPM, status_of(r), t, "GPM: %s", nv_err(r));
    warn_once(&S.warned_gpm, "GPM failed on device %d (%s): stopped", d, nv_err(r));
    v->gpm = 0;
    return;
  }
  for (int i = 0; i < N_GPM; i++) {
    const gp_nvmlGpmMetric_t *x = &S.mg->metrics[i];
    if (x->nvmlReturn != GP_NVML_SUCCESS) continue;
    int m = G_SM_ACTIVE + i;
    double val = metrics[m].unit == GPUPHASE_UNIT_PERCENT ? x->value * 1000.0
                                                          : x->value * 1048576.0;
    if (!(val > -9e18 && val < 9e18)) continue; /* NaN or out of range */
    sample(d, m, v->gpm_last, t, (int64_t)(val + (val >= 0 ? 0.5 : -0.5)));
  }
  v->cur = next;
  v->gpm_last = t;
}

/* One reading of the devices: every device being sampled (a tick of the
 * period, or the last one), or (fresh_only) only those the trace has
 * described since, set up and read at once rather than a period later. */
static void tick(int last, int fresh_only) {
  uint64_t now = clock_of(CLOCK_MONOTONIC);
  uint64_t want = atomic_load(&S.want), read = fresh_only ? 0 : ~UINT64_C(0);
  for (int d = 0; d < MAX_DEV; d++)
    if ((want >> d & 1) && S.dev[d].state == 0) {
      device_setup(d, now);
      read |= UINT64_C(1) << d;
    }
  uint64_t mark = now > GP_NVML_PCIE_INTERVAL_NS ? now - GP_NVML_PCIE_INTERVAL_NS : 0;
  for (int d = 0; d < MAX_DEV; d++) {
    struct dev *v = &S.dev[d];
    if (v->state != 1) continue;
    if (read >> d & 1) {
      instants(d, now);
      if (v->state != 1) continue;
      utilization(d, now, last);
      v->prev_tick = now;
    }
    if (v->util_mark < mark) mark = v->util_mark;
    uint64_t due = (uint64_t)S.gpm_ms * 1000000ull - (uint64_t)S.period_ms * 500000ull;
    if ((read >> d & 1) && v->gpm && now > v->gpm_last &&
        (now - v->gpm_last >= due || (last && now - v->gpm_last >= 1000000ull)))
      gpm_read(d, now);
    if (v->gpm && v->gpm_last < mark) mark = v->gpm_last;
  }
  release(last ? UINT64_MAX : mark);
}

static void finish_nvml(void) {
  for (int d = 0; d < MAX_DEV; d++) {
    struct dev *v = &S.dev[d];
    for (int i = 0; i < 2; i++)
      if (v->gs[i] && nv.gpm_free) nv.gpm_free(v->gs[i]);
    free(v->buf);
    memset(v, 0, sizeof *v);
  }
  free(S.mg);
  S.mg = NULL;
  if (nv.inited && nv.shutdown) nv.shutdown();
  nv.inited = 0;
  nvml_tried = 0;
  base_energy.n = 0;
}

/* A reading holds tick_lock; fork takes it first (pthread_atfork), for at
 * most FORK_WAIT_MS, so that a child never starts with NVML's own locks,
 * or an allocator's, held by a reading that was under way in the parent.
 * A child forked while a reading did not finish in time gets no sampler.
 * Before that, within the same time, fork waits for a thread still
 * starting, whose start a sanitizer's runtime allocates in (writer.c). */
#define FORK_WAIT_MS 200
static pthread_mutex_t tick_lock = PTHREAD_MUTEX_INITIALIZER;
static int fork_locked, fork_tainted;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) {
  int saved = errno;
  struct timespec dl, mdl;
  clock_gettime(CLOCK_REALTIME, &dl);
  clock_gettime(CLOCK_MONOTONIC, &mdl); /* S.cond's clock */
  dl.tv_nsec += FORK_WAIT_MS * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  mdl.tv_nsec += FORK_WAIT_MS * 1000000L;
  if (mdl.tv_nsec >= 1000000000L) mdl.tv_sec++, mdl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&S.lock);
  while (S.running && !S.started &&
         pthread_cond_timedwait(&S.cond, &S.lock, &mdl) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&S.lock);
  fork_locked = pthread_mutex_timedlock(&tick_lock, &dl) == 0;
  errno = saved;
}
static void fork_parent(void) {
  if (fork_locked) pthread_mutex_unlock(&tick_lock);
}
static void fork_child(void) {
  pthread_mutex_init(&tick_lock, NULL);
  if (!fork_locked) fork_tainted = 1;
}
static void fork_arm(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void *thread_main(void *arg) {
  (void)arg;
  gp_ts.internal = 1;
  gp_ts.depth = 1;
  atomic_fetch_add(&gp_own_threads, 1);
  uint64_t period = (uint64_t)S.period_ms * 1000000ull;
  uint64_t next = S.t_start + period;
  pthread_mutex_lock(&S.lock);
  S.started = 1; /* the starting thread waits for this (gp_sampler_start) */
  pthread_cond_broadcast(&S.cond);
  pthread_mutex_unlock(&S.lock);
  /* NVML now, not at the first tick: a device is read as soon as the
   * trace describes it (gp_sampler_poll wakes this thread), so a run
   * shorter than a period, or a long period, still has a reading near its
   * start. */
  pthread_mutex_lock(&tick_lock);
  if (!nvml_tried) {
    nvml_load();
    energy_baseline();
  }
  tick(0, 1);
  pthread_mutex_unlock(&tick_lock);
  pthread_mutex_lock(&S.lock);
  for (;;) {
    struct timespec dl = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
    int timed_out = 0;
    while (!S.stop && !S.fresh && !timed_out)
      timed_out = pthread_cond_timedwait(&S.cond, &S.lock, &dl) == ETIMEDOUT;
    if (S.stop) break;
    S.fresh = 0;
    pthread_mutex_unlock(&S.lock);
    pthread_mutex_lock(&tick_lock);
    tick(0, !timed_out); /* woken early: the devices described since */
    pthread_mutex_unlock(&tick_lock);
    if (timed_out) {
      uint64_t now = clock_of(CLOCK_MONOTONIC);
      next += period;
      if (next <= now) next = now + period;
    }
    pthread_mutex_lock(&S.lock);
  }
  pthread_mutex_unlock(&S.lock);
  pthread_mutex_lock(&tick_lock);
  tick(1, 0); /* the last reading, up to the end of the run */
  finish_nvml();
  pthread_mutex_unlock(&tick_lock);
  atomic_fetch_sub(&gp_own_threads, 1);
  return NULL;
}

/* ---- the lifecycle's side ---- */
void gp_sampler_start(uint64_t since) {
  pthread_once(&fork_once, fork_arm);
  if (fork_tainted) {
    snprintf(S.off_reason, sizeof S.off_reason,
             "forked while the parent's sampler was in NVML");
    atomic_store(&S.mode, 2);
    return;
  }
  if (!gp_cfg.nvml || !gp_cfg.sample_ms) {
    snprintf(S.off_reason, sizeof S.off_reason, "%s",
             !gp_cfg.nvml ? "turned off by GPUPHASE_NVML=0"
                          : "turned off by GPUPHASE_SAMPLE_MS=0");
    atomic_store(&S.mode, 2);
    return;
  }
  S.period_ms = gp_cfg.sample_ms;
  S.gpm_ms = S.period_ms > GPM_MIN_MS ? S.period_ms : GPM_MIN_MS;
  S.t_start = clock_of(CLOCK_MONOTONIC);
  S.t_since = since && since < S.t_start ? since : S.t_start;
  S.stop = 0;
  S.started = 0;
  S.fresh = 0;
  S.released = 0;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&S.cond, &ca);
  pthread_condattr_destroy(&ca);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_store(&S.mode, 1);
  int rc = pthread_create(&S.thread, NULL, thread_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    gp_warn("cannot start the counter sampler: %s; no device counters", strerror(rc));
    snprintf(S.off_reason, sizeof S.off_reason, "the sampler thread did not start");
    atomic_store(&S.mode, 2);
    return;
  }
  /* Until the thread runs: its start (a sanitizer's allocations for it, say)
   * is then over before the application goes on, and may fork. */
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_nsec += 100 * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&S.lock);
  S.running = 1; /* under S.lock: fork_prepare reads it */
  while (!S.started && pthread_cond_timedwait(&S.cond, &S.lock, &dl) != ETIMEDOUT)
    ;
  pthread_mutex_unlock(&S.lock);
}

/* ---- the writer's side ---- */
static void write_item(gp_writer *w, const struct item *it) {
  struct gpuphase_record r = {0};
  if (!S.source) S.source = gp_records_new_source();
  switch (it->kind) {
  case IT_METRIC:
    r.kind = GPUPHASE_REC_METRIC;
    r.u.metric.metric = it->metric;
    r.u.metric.device = it->device;
    r.u.metric.source = it->source;
    r.u.metric.name = gp_writer_intern(w, metrics[it->metric_index].name,
                                       strlen(metrics[it->metric_index].name));
    r.u.metric.unit = (uint64_t)metrics[it->metric_index].unit;
    r.u.metric.scale = metrics[it->metric_index].scale;
    gp_records_add(0, &r);
    return;
  case IT_SAMPLE:
    r.kind = GPUPHASE_REC_SAMPLE;
    r.u.sample.metric = it->metric;
    r.u.sample.start = it->start;
    r.u.sample.end = it->end;
    r.u.sample.value = it->value;
    S.written = it->start;
    break;
  default: {
    r.kind = GPUPHASE_REC_SAMPLER;
    r.u.sampler.start = it->start;
    r.u.sampler.device = it->device;
    r.u.sampler.source = it->source;
    r.u.sampler.status = it->status;
    size_t n = strnlen(it->reason, sizeof it->reason);
    /* " " marks "no reason" (OK records) */
    r.u.sampler.reason = n && strcmp(it->reason, " ") ? gp_writer_intern(w, it->reason, n) : 0;
    S.written = it->start;
    break;
  }
  }
  gp_records_add(S.source, &r);
}

static void drain(void) {
  gp_writer *w = gp_records_writer();
  struct item batch[64];
  for (;;) {
    unsigned n = 0;
    uint64_t dropped;
    pthread_mutex_lock(&S.lock);
    while (n < 64 && S.qn) {
      batch[n++] = S.queue[S.qhead];
      S.qhead = (S.qhead + 1) % QUEUE_CAP;
      S.qn--;
    }
    dropped = S.dropped;
    pthread_mutex_unlock(&S.lock);
    for (unsigned i = 0; w && i < n; i++) write_item(w, &batch[i]);
    if (w && n == 0 && dropped > S.dropped_told) {
      struct item it = {.kind = IT_SAMPLER, .device = -1,
                        .source = GPUPHASE_MSRC_NVML,
                        .status = GPUPHASE_MSTAT_OVERFLOW,
                        .start = S.written};
      snprintf(it.reason, sizeof it.reason,
               "%llu counter records dropped (the trace writer fell behind)",
               (unsigned long long)(dropped - S.dropped_told));
      S.dropped_told = dropped;
      write_item(w, &it);
    }
    if (n < 64) break;
  }
}

void gp_sampler_poll(void) {
  int mode = atomic_load(&S.mode);
  if (mode == 0) return;
  uint64_t devices = gp_records_devices();
  if (mode == 1) {
    uint64_t had = atomic_exchange(&S.want, devices);
    if (devices & ~had) { /* read the new ones now, not a period later */
      pthread_mutex_lock(&S.lock);
      S.fresh = 1;
      pthread_cond_signal(&S.cond);
      pthread_mutex_unlock(&S.lock);
    }
    drain();
    return;
  }
  /* Off: say so once per described device. */
  gp_writer *w = gp_records_writer();
  uint64_t fresh = devices & ~S.off_told;
  for (int d = 0; w && d < MAX_DEV; d++) {
    if (!(fresh >> d & 1)) continue;
    for (int src = GPUPHASE_MSRC_NVML; src <= GPUPHASE_MSRC_GPM; src++) {
      struct item it = {.kind = IT_SAMPLER, .device = d, .source = (uint8_t)src,
                        .status = GPUPHASE_MSTAT_OFF, .start = gp_mono_ns()};
      snprintf(it.reason, sizeof it.reason, "%s", S.off_reason);
      write_item(w, &it);
    }
  }
  S.off_told |= fresh;
}

void gp_sampler_finish(void) {
  if (atomic_load(&S.mode) == 1) atomic_store(&S.want, gp_records_devices());
  if (S.running) {
    pthread_mutex_lock(&S.lock);
    S.stop = 1;
    pthread_cond_signal(&S.cond);
    pthread_mutex_unlock(&S.lock);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += JOIN_WAIT_MS / 1000;
    /* A sampler stuck in NVML is left behind: the trace ends without it. */
    if (pthread_timedjoin_np(S.thread, NULL, &dl) == 0) S.running = 0;
  }
  gp_sampler_poll();
  if (!S.running) atomic_store(&S.mode, 0);
}

void gp_sampler_reset(void) {
  /* The parent's thread does not exist here (or, after a failed exec,
   * has ended); its NVML samples and buffers are the parent's. */
  atomic_store(&S.mode, 0);
  S.running = 0;
  pthread_mutex_init(&S.lock, NULL);
  S.stop = 0;
  S.fresh = 0;
  S.qhead = S.qn = 0;
  S.dropped = S.dropped_told = 0;
  memset(S.dev, 0, sizeof S.dev);
  memset(S.defined, 0, sizeof S.defined);
  S.npending = 0;
  S.released = 0;
  S.mg = NULL;
  S.source = 0;
  S.written = 0;
  S.off_told = 0;
  atomic_store(&S.want, 0);
  nv.inited = 0;
  nvml_tried = 0;
  base_energy.n = 0;
}
