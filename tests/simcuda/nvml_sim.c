/* The simulated libnvidia-ml.so.1: NVML's device queries and GPM, derived
 * from the simulated driver's counter model (gpusim_counters_window),
 * reached like the runtime reaches the driver: dlsym on
 * dlopen("libcuda.so.1"). See README.md, "NVML". */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gp_nvml.h"
#include "gpusim.h"
#include "gpusim_counters.h"

#define NV_API __attribute__((visibility("default")))
#define PERIOD_NS 166666667ull /* one utilisation sample per 1/6 s */
#define MAX_SAMPLES 120        /* samples kept, 20 s */
#define GPM_MAGIC 0x67706d73u

enum { MODE_OK, MODE_ABSENT, MODE_DENIED, MODE_NOGPM, MODE_BUSY };

struct gp_nvmlDevice_st {
  int cuda; /* the simulated driver's ordinal */
  int index;
};

struct gp_nvmlGpmSample_st {
  unsigned magic;
  int cuda;      /* -1 until taken */
  uint64_t t_ns; /* simulator clock when taken */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int refs;
static int ndev;
static struct gp_nvmlDevice_st devs[GPUSIM_MAX_DEVICES];
static int mode;
static unsigned other_procs;
static int clock_boottime;
static uint64_t t_init;   /* simulator clock at the first nvmlInit */
static int64_t nv_offset; /* NVML clock ns - simulator clock ns */
static int (*win)(int, uint64_t, uint64_t, struct gpusim_counters *);
static uint64_t (*sim_now)(void);
static const gpusim_config *(*sim_config)(void);
static int (*sim_ids)(int, char *, size_t, unsigned char *);

static uint64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int is_up(void) {
  pthread_mutex_lock(&lock);
  int up = refs > 0;
  pthread_mutex_unlock(&lock);
  return up;
}

static gp_nvmlReturn_t load_driver(void) {
  if (win) return GP_NVML_SUCCESS;
  void *h = gp_sim_open_driver();
  if (!h) return GP_NVML_ERROR_DRIVER_NOT_LOADED;
  win = (int (*)(int, uint64_t, uint64_t, struct gpusim_counters *))(uintptr_t)
      dlsym(h, "gpusim_counters_window");
  sim_now = (uint64_t (*)(void))(uintptr_t)dlsym(h, "gpusim_now_ns");
  sim_config = (const gpusim_config *(*)(void))(uintptr_t)dlsym(h, "gpusim_get_config");
  sim_ids = (int (*)(int, char *, size_t, unsigned char *))(uintptr_t)dlsym(
      h, "gpusim_device_ids");
  if (!win || !sim_now || !sim_config || !sim_ids) {
    win = NULL;
    return GP_NVML_ERROR_DRIVER_NOT_LOADED;
  }
  return GP_NVML_SUCCESS;
}

static void read_env(void) {
  const char *m = getenv("GPUSIM_NVML");
  mode = MODE_OK;
  if (m && strcmp(m, "absent") == 0) mode = MODE_ABSENT;
  else if (m && strcmp(m, "denied") == 0) mode = MODE_DENIED;
  else if (m && strcmp(m, "nogpm") == 0) mode = MODE_NOGPM;
  else if (m && strcmp(m, "busy") == 0) mode = MODE_BUSY;
  else if (m && *m) fprintf(stderr, "gpusim: ignoring invalid GPUSIM_NVML=%s\n", m);
  const char *o = getenv("GPUSIM_NVML_OTHER_PROCS");
  other_procs = o && *o ? (unsigned)strtoul(o, NULL, 10) : 0;
  if (other_procs > 64) other_procs = 64;
  const char *c = getenv("GPUSIM_NVML_CLOCK");
  clock_boottime = c && strcmp(c, "boottime") == 0;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* No lock of ours stays held in a forked child (see sim_counters.c). */
static void fork_prepare(void) {
  pthread_mutex_lock(&lock);
  pthread_mutex_lock(&cache_lock);
}
static void fork_after(void) {
  pthread_mutex_unlock(&cache_lock);
  pthread_mutex_unlock(&lock);
}
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_arm(void) {
  pthread_atfork(fork_prepare, fork_after, fork_after);
}

NV_API gp_nvmlReturn_t nvmlInit_v2(void) {
  pthread_once(&fork_once, fork_arm);
  pthread_mutex_lock(&lock);
  gp_nvmlReturn_t r = GP_NVML_SUCCESS;
  if (refs == 0) {
    read_env();
    if (mode == MODE_ABSENT) r = GP_NVML_ERROR_DRIVER_NOT_LOADED;
    if (r == GP_NVML_SUCCESS) r = load_driver();
    if (r == GP_NVML_SUCCESS) {
      ndev = sim_config()->devices;
      const char *ord = getenv("GPUSIM_NVML_ORDER");
      int rev = ord && strcmp(ord, "reverse") == 0;
      for (int i = 0; i < ndev; i++) {
        devs[i].index = i;
        devs[i].cuda = rev ? ndev - 1 - i : i;
      }
      /* NVML's clock: CLOCK_REALTIME (or CLOCK_BOOTTIME) in us, which
       * differs from the simulator's CLOCK_MONOTONIC. */
      clockid_t c = clock_boottime ? CLOCK_BOOTTIME : CLOCK_REALTIME;
      uint64_t gap = UINT64_MAX; /* the tightest of 8 pairs of readings */
      for (int i = 0; i < 8; i++) {
        uint64_t a = sim_now(), n = clock_ns(c), b = sim_now();
        if (b - a < gap) {
          gap = b - a;
          nv_offset = (int64_t)(n - (a + (b - a) / 2));
        }
      }
      if (!t_init) t_init = sim_now();
    }
  }
  if (r == GP_NVML_SUCCESS) refs++;
  pthread_mutex_unlock(&lock);
  return r;
}

NV_API gp_nvmlReturn_t nvmlInit(void) {
  return nvmlInit_v2();
}

NV_API gp_nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&lock);
  gp_nvmlReturn_t r = refs > 0 ? GP_NVML_SUCCESS : GP_NVML_ERROR_UNINITIALIZED;
  if (refs > 0) refs--;
  pthread_mutex_unlock(&lock);
  return r;
}

NV_API const char *nvmlErrorString(gp_nvmlReturn_t r) {
  switch (r) {
  case GP_NVML_SUCCESS: return "Success";
  case GP_NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case GP_NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case GP_NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case GP_NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
  case GP_NVML_ERROR_NOT_FOUND: return "Not Found";
  case GP_NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case GP_NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  case GP_NVML_ERROR_IN_USE: return "In use by another client";
  case GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
  default: return "Unknown Error";
  }
}

NV_API gp_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!count) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)ndev;
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i,
                                                     gp_nvmlDevice_t *d) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!d || i >= (unsigned)ndev) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *d = &devs[i];
  return GP_NVML_SUCCESS;
}

static struct gp_nvmlDevice_st *dev_of(gp_nvmlDevice_t d) {
  for (int i = 0; i < ndev; i++)
    if (d == &devs[i]) return d;
  return NULL;
}

/* "domain:bus:device.function" in hex, any case, short or long domain. */
static int parse_bus_id(const char *s, unsigned v[4]) {
  char tail;
  return s && sscanf(s, "%x:%x:%x.%x%c", &v[0], &v[1], &v[2], &v[3], &tail) == 4;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus,
                                                        gp_nvmlDevice_t *d) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  unsigned want[4], have[4];
  if (!d || !parse_bus_id(bus, want)) return GP_NVML_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < ndev; i++) {
    char id[GP_NVML_PCI_BUS_ID_SIZE];
    if (sim_ids(devs[i].cuda, id, sizeof id, NULL) == 0 && parse_bus_id(id, have) &&
        memcmp(want, have, sizeof want) == 0) {
      *d = &devs[i];
      return GP_NVML_SUCCESS;
    }
  }
  return GP_NVML_ERROR_NOT_FOUND;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetPciInfo_v3(gp_nvmlDevice_t h,
                                               gp_nvmlPciInfo_t *p) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !p) return GP_NVML_ERROR_INVALID_ARGUMENT;
  memset(p, 0, sizeof *p);
  sim_ids(d->cuda, p->busId, sizeof p->busId, NULL);
  unsigned v[4] = {0};
  parse_bus_id(p->busId, v);
  snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", v[0], v[1],
           v[2], v[3]);
  p->domain = v[0];
  p->bus = v[1];
  p->device = v[2];
  p->pciDeviceId = 0x233510DEu; /* H200 */
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetUUID(gp_nvmlDevice_t h, char *uuid,
                                         unsigned int len) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !uuid) return GP_NVML_ERROR_INVALID_ARGUMENT;
  unsigned char u[16];
  sim_ids(d->cuda, NULL, 0, u);
  char s[64];
  snprintf(s, sizeof s,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
           u[11], u[12], u[13], u[14], u[15]);
  if (len < strlen(s) + 1) return GP_NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(uuid, s, strlen(s) + 1);
  return GP_NVML_SUCCESS;
}

static int counters(const struct gp_nvmlDevice_st *d, uint64_t t0, uint64_t t1,
                    struct gpusim_counters *c) {
  if (t1 <= t0) t1 = t0 + 1;
  return win(d->cuda, t0, t1, c);
}

static unsigned pct(double v) {
  if (v < 0) v = 0;
  if (v > 100) v = 100;
  return (unsigned)(v + 0.5);
}

/* Utilisation of period k (k >= 1, complete: no later operation can
 * reach into it), remembered for the last MAX_SAMPLES periods. */
static struct {
  uint64_t k;
  double gpu, mem;
} pcache[GPUSIM_MAX_DEVICES][MAX_SAMPLES];
static struct {
  uint64_t k;  /* periods summed so far */
  double mj;
} energy_sum[GPUSIM_MAX_DEVICES];

static int period(const struct gp_nvmlDevice_st *d, uint64_t k, double *gpu,
                  double *mem) {
  pthread_mutex_lock(&cache_lock);
  int hit = pcache[d->cuda][k % MAX_SAMPLES].k == k;
  if (hit) {
    *gpu = pcache[d->cuda][k % MAX_SAMPLES].gpu;
    *mem = pcache[d->cuda][k % MAX_SAMPLES].mem;
  }
  pthread_mutex_unlock(&cache_lock);
  if (hit) return 0;
  struct gpusim_counters c;
  if (counters(d, t_init + (k - 1) * PERIOD_NS, t_init + k * PERIOD_NS, &c) != 0)
    return -1;
  *gpu = c.gpu_util_pct;
  *mem = c.dram_bw_pct;
  pthread_mutex_lock(&cache_lock);
  pcache[d->cuda][k % MAX_SAMPLES].k = k;
  pcache[d->cuda][k % MAX_SAMPLES].gpu = *gpu;
  pcache[d->cuda][k % MAX_SAMPLES].mem = *mem;
  pthread_mutex_unlock(&cache_lock);
  return 0;
}

/* GPU-Util of the last complete period (0 before the first). */
static double last_util(const struct gp_nvmlDevice_st *d) {
  uint64_t k = (sim_now() - t_init) / PERIOD_NS;
  double g = 0, m = 0;
  if (k > 0 && period(d, k, &g, &m) != 0) g = 0;
  return g;
}

/* Sample k (k >= 1) covers [t_init + (k-1) P, t_init + k P) of the
 * simulator's clock; its timestamp is its end on NVML's clock, in us. */
static uint64_t sample_ts_us(uint64_t k) {
  return (uint64_t)((int64_t)(t_init + k * PERIOD_NS) + nv_offset) / 1000;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetSamples(gp_nvmlDevice_t h, int type,
                                            unsigned long long last_seen,
                                            int *val_type, unsigned int *count,
                                            gp_nvmlSample_t *samples) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !val_type || !count) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (type != GP_NVML_GPU_UTILIZATION_SAMPLES &&
      type != GP_NVML_MEMORY_UTILIZATION_SAMPLES)
    return GP_NVML_ERROR_NOT_SUPPORTED;
  uint64_t now = sim_now();
  uint64_t kmax = (now - t_init) / PERIOD_NS;
  uint64_t kmin = kmax > MAX_SAMPLES ? kmax - MAX_SAMPLES + 1 : 1;
  while (kmin <= kmax && sample_ts_us(kmin) <= last_seen)
    kmin++;
  *val_type = GP_NVML_VALUE_TYPE_UNSIGNED_INT;
  if (!samples) {
    *count = MAX_SAMPLES;
    return GP_NVML_SUCCESS;
  }
  if (kmin > kmax) {
    *count = 0;
    return GP_NVML_ERROR_NOT_FOUND;
  }
  /* The newest that fit. */
  if (kmax - kmin + 1 > *count) kmin = kmax - *count + 1;
  unsigned n = 0;
  for (uint64_t k = kmin; k <= kmax; k++) {
    double g, m;
    if (period(d, k, &g, &m) != 0) return GP_NVML_ERROR_UNKNOWN;
    samples[n].timeStamp = sample_ts_us(k);
    samples[n].sampleValue.ullVal = 0;
    samples[n].sampleValue.uiVal = pct(type == GP_NVML_GPU_UTILIZATION_SAMPLES ? g : m);
    n++;
  }
  *count = n;
  return GP_NVML_SUCCESS;
}

/* The last complete sample period. */
NV_API gp_nvmlReturn_t nvmlDeviceGetUtilizationRates(gp_nvmlDevice_t h,
                                                     gp_nvmlUtilization_t *u) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !u) return GP_NVML_ERROR_INVALID_ARGUMENT;
  uint64_t k = (sim_now() - t_init) / PERIOD_NS;
  double g = 0, m = 0;
  if (k > 0 && period(d, k, &g, &m) != 0) return GP_NVML_ERROR_UNKNOWN;
  u->gpu = pct(g);
  u->memory = pct(m);
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(gp_nvmlDevice_t h,
                                                  gp_nvmlMemory_v2_t *m) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !m) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != GP_NVML_MEMORY_V2) return GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  struct gpusim_counters c;
  uint64_t now = sim_now();
  if (counters(d, now - 1, now, &c) != 0) return GP_NVML_ERROR_UNKNOWN;
  m->total = sim_config()->mem_bytes;
  m->reserved = 0;
  m->used = c.mem_used_bytes < m->total ? c.mem_used_bytes : m->total;
  m->free = m->total - m->used;
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetClockInfo(gp_nvmlDevice_t h, int type,
                                              unsigned int *mhz) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!dev_of(h) || !mhz) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (type == GP_NVML_CLOCK_SM) *mhz = 1980;
  else if (type == GP_NVML_CLOCK_MEM) *mhz = 2619;
  else return GP_NVML_ERROR_NOT_SUPPORTED;
  return GP_NVML_SUCCESS;
}

/* Power: 100 W idle + 500 W x GPU-Util (power, temperature: of the last
 * complete sample period). */
#define IDLE_MW 100000.0
#define BUSY_MW 500000.0

NV_API gp_nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(
    gp_nvmlDevice_t h, unsigned long long *mj) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !mj) return GP_NVML_ERROR_INVALID_ARGUMENT;
  /* complete periods summed once, then the current one so far */
  uint64_t now = sim_now(), kmax = (now - t_init) / PERIOD_NS;
  pthread_mutex_lock(&cache_lock);
  uint64_t k = energy_sum[d->cuda].k;
  double sum = energy_sum[d->cuda].mj;
  pthread_mutex_unlock(&cache_lock);
  for (; k < kmax; k++) {
    double g, m;
    if (period(d, k + 1, &g, &m) != 0) return GP_NVML_ERROR_UNKNOWN;
    sum += (double)PERIOD_NS / 1e9 * (IDLE_MW + BUSY_MW * g / 100.0);
  }
  pthread_mutex_lock(&cache_lock);
  if (kmax > energy_sum[d->cuda].k) {
    energy_sum[d->cuda].k = kmax;
    energy_sum[d->cuda].mj = sum;
  }
  pthread_mutex_unlock(&cache_lock);
  uint64_t from = t_init + kmax * PERIOD_NS;
  struct gpusim_counters c = {0};
  if (now > from && counters(d, from, now, &c) != 0) return GP_NVML_ERROR_UNKNOWN;
  sum += (double)(now - from) / 1e9 * (IDLE_MW + BUSY_MW * c.gpu_util_pct / 100.0);
  *mj = (unsigned long long)sum;
  return GP_NVML_SUCCESS;
}

static double util_last_second(const struct gp_nvmlDevice_st *d) {
  return last_util(d);
}

NV_API gp_nvmlReturn_t nvmlDeviceGetPowerUsage(gp_nvmlDevice_t h,
                                               unsigned int *mw) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !mw) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *mw = (unsigned)(IDLE_MW + BUSY_MW * util_last_second(d) / 100.0);
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlDeviceGetTemperature(gp_nvmlDevice_t h, int sensor,
                                                unsigned int *c) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !c) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (sensor != GP_NVML_TEMPERATURE_GPU) return GP_NVML_ERROR_NOT_SUPPORTED;
  *c = 35 + (unsigned)(40.0 * util_last_second(d) / 100.0);
  return GP_NVML_SUCCESS;
}

/* GpuIdle when no kernel ran in the last complete sample period, else
 * none. */
NV_API gp_nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    gp_nvmlDevice_t h, unsigned long long *reasons) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !reasons) return GP_NVML_ERROR_INVALID_ARGUMENT;
  *reasons = last_util(d) > 0 ? 0 : GP_NVML_CLOCKS_EVENT_GPU_IDLE;
  return GP_NVML_SUCCESS;
}

/* KB/s over the last 20 ms. */
NV_API gp_nvmlReturn_t nvmlDeviceGetPcieThroughput(gp_nvmlDevice_t h, int counter,
                                                   unsigned int *kbs) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !kbs) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (counter != GP_NVML_PCIE_UTIL_TX_BYTES && counter != GP_NVML_PCIE_UTIL_RX_BYTES)
    return GP_NVML_ERROR_INVALID_ARGUMENT;
  uint64_t now = sim_now();
  struct gpusim_counters c;
  if (counters(d, now - GP_NVML_PCIE_INTERVAL_NS, now, &c) != 0)
    return GP_NVML_ERROR_UNKNOWN;
  double bytes = counter == GP_NVML_PCIE_UTIL_TX_BYTES ? c.pcie_tx_bytes : c.pcie_rx_bytes;
  *kbs = (unsigned)(bytes / ((double)GP_NVML_PCIE_INTERVAL_NS / 1e9) / 1024.0);
  return GP_NVML_SUCCESS;
}

/* This process (once the driver holds its context: memory used includes
 * it) and GPUSIM_NVML_OTHER_PROCS others (pids 4000001..., no memory). */
NV_API gp_nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    gp_nvmlDevice_t h, unsigned int *count, gp_nvmlProcessInfo_t *infos) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !count) return GP_NVML_ERROR_INVALID_ARGUMENT;
  uint64_t now = sim_now();
  struct gpusim_counters c;
  if (counters(d, now - 1, now, &c) != 0) return GP_NVML_ERROR_UNKNOWN;
  int self = c.mem_used_bytes >= GPUSIM_CONTEXT_BYTES;
  unsigned n = (unsigned)self + other_procs;
  if (!infos || *count < n) {
    *count = n;
    return n == 0 ? GP_NVML_SUCCESS : GP_NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned i = 0;
  if (self)
    infos[i++] = (gp_nvmlProcessInfo_t){(unsigned)getpid(), c.mem_used_bytes,
                                        0xFFFFFFFFu, 0xFFFFFFFFu};
  for (unsigned k = 0; k < other_procs; k++)
    infos[i++] = (gp_nvmlProcessInfo_t){4000001u + k, 0, 0xFFFFFFFFu, 0xFFFFFFFFu};
  *count = n;
  return GP_NVML_SUCCESS;
}

/* ---- GPM ---- */
NV_API gp_nvmlReturn_t nvmlGpmQueryDeviceSupport(gp_nvmlDevice_t h,
                                                 gp_nvmlGpmSupport_t *s) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!dev_of(h) || !s) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (s->version != GP_NVML_GPM_SUPPORT_VERSION)
    return GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  s->isSupportedDevice = mode != MODE_NOGPM;
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlGpmSampleAlloc(gp_nvmlGpmSample_t *s) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!s) return GP_NVML_ERROR_INVALID_ARGUMENT;
  struct gp_nvmlGpmSample_st *p = calloc(1, sizeof *p);
  if (!p) return GP_NVML_ERROR_UNKNOWN;
  p->magic = GPM_MAGIC;
  p->cuda = -1;
  *s = p;
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlGpmSampleFree(gp_nvmlGpmSample_t s) {
  if (!s || s->magic != GPM_MAGIC) return GP_NVML_ERROR_INVALID_ARGUMENT;
  s->magic = 0;
  free(s);
  return GP_NVML_SUCCESS;
}

NV_API gp_nvmlReturn_t nvmlGpmSampleGet(gp_nvmlDevice_t h, gp_nvmlGpmSample_t s) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  struct gp_nvmlDevice_st *d = dev_of(h);
  if (!d || !s || s->magic != GPM_MAGIC) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (mode == MODE_NOGPM) return GP_NVML_ERROR_NOT_SUPPORTED;
  if (mode == MODE_DENIED) return GP_NVML_ERROR_NO_PERMISSION;
  if (mode == MODE_BUSY) return GP_NVML_ERROR_IN_USE;
  s->cuda = d->cuda;
  s->t_ns = sim_now();
  return GP_NVML_SUCCESS;
}

static char *metric_name(unsigned id) {
  switch (id) {
  case GP_NVML_GPM_SM_UTIL: return (char *)"sm_util";
  case GP_NVML_GPM_SM_OCCUPANCY: return (char *)"sm_occupancy";
  case GP_NVML_GPM_ANY_TENSOR_UTIL: return (char *)"any_tensor_util";
  case GP_NVML_GPM_DRAM_BW_UTIL: return (char *)"dram_bw_util";
  case GP_NVML_GPM_PCIE_TX_PER_SEC: return (char *)"pcie_tx";
  case GP_NVML_GPM_PCIE_RX_PER_SEC: return (char *)"pcie_rx";
  case GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC: return (char *)"nvlink_rx";
  case GP_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC: return (char *)"nvlink_tx";
  default: return NULL;
  }
}

/* Over [sample1, sample2): the model's window between the two takes. */
NV_API gp_nvmlReturn_t nvmlGpmMetricsGet(gp_nvmlGpmMetricsGet_t *m) {
  if (!is_up()) return GP_NVML_ERROR_UNINITIALIZED;
  if (!m) return GP_NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != GP_NVML_GPM_METRICS_GET_VERSION)
    return GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (mode == MODE_DENIED) return GP_NVML_ERROR_NO_PERMISSION;
  gp_nvmlGpmSample_t a = m->sample1, b = m->sample2;
  if (!a || !b || a->magic != GPM_MAGIC || b->magic != GPM_MAGIC || a->cuda < 0 ||
      a->cuda != b->cuda || b->t_ns <= a->t_ns ||
      m->numMetrics > GP_NVML_GPM_METRIC_MAX)
    return GP_NVML_ERROR_INVALID_ARGUMENT;
  struct gpusim_counters c;
  if (win(a->cuda, a->t_ns, b->t_ns, &c) != 0) return GP_NVML_ERROR_UNKNOWN;
  double secs = (double)(b->t_ns - a->t_ns) / 1e9;
  for (unsigned i = 0; i < m->numMetrics; i++) {
    gp_nvmlGpmMetric_t *x = &m->metrics[i];
    x->nvmlReturn = GP_NVML_SUCCESS;
    x->metricInfo.shortName = x->metricInfo.longName = metric_name(x->metricId);
    x->metricInfo.unit = NULL;
    switch (x->metricId) {
    case GP_NVML_GPM_SM_UTIL: x->value = c.sm_active_pct; break;
    case GP_NVML_GPM_SM_OCCUPANCY: x->value = c.sm_occupancy_pct; break;
    case GP_NVML_GPM_ANY_TENSOR_UTIL: x->value = c.tensor_active_pct; break;
    case GP_NVML_GPM_DRAM_BW_UTIL: x->value = c.dram_bw_pct; break;
    case GP_NVML_GPM_PCIE_TX_PER_SEC: x->value = c.pcie_tx_bytes / secs / 1048576.0; break;
    case GP_NVML_GPM_PCIE_RX_PER_SEC: x->value = c.pcie_rx_bytes / secs / 1048576.0; break;
    case GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC:
    case GP_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC: x->value = 0; break;
    default:
      x->value = 0;
      x->nvmlReturn = GP_NVML_ERROR_NOT_SUPPORTED;
      break;
    }
  }
  return GP_NVML_SUCCESS;
}
