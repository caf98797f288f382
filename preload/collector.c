/* The collector (writer thread): drains the per-thread rings and CUPTI's buffers,
 * converts raw clocks, encodes records and writes compressed frames. All
 * interpretation-free; everything costly the hot path avoided happens here. */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gp_apitab.h"
#include "gp_config.h"
#include "gp_cupti.h"
#include "gp_shim.h"
#include "writer.h"

#define MAX_DEVICES 64
#define STREAM_SLOTS 4096
#define NOTE_MAX 16

struct stream_slot {
  uint64_t key; /* (device << 32 | stream) + 1; 0 = empty */
  uint32_t source;
};

#define CAL_N 64
struct calpoint {
  uint64_t tsc, ns;
  double slope; /* ns per tick since the point before (the first: slope0) */
};

struct note {
  uint64_t ns;
  int on;
  char reason[200];
};

static struct {
  gp_writer *w;
  char path[PATH_MAX];
  pthread_t thread;
  int running; /* thread started and not joined */
  pthread_mutex_t lock; /* notes only */
  _Atomic uint32_t wake_seq; /* futex word: bumped to wake the thread */
  _Atomic int stop_req;
  /* clock calibration (writer thread only after start) */
  struct calpoint cal[CAL_N];
  int cal_next, cal_count;
  double slope0; /* first estimate, until two points exist */
  uint8_t *api_defined;
  uint32_t *thread_source;
  uint32_t next_source;
  struct stream_slot streams[STREAM_SLOTS];
  uint32_t overflow_source;
  uint8_t device_state[MAX_DEVICES]; /* 0 unknown, 1 written, 2.. tries */
  struct note notes[NOTE_MAX];
  int n_notes;
  int degraded;
  int cupti_on;
  uint64_t lost_total;
  uint64_t cupti_lost_reported;
  uint64_t last_flush_ns;
} W = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- clock ---- */
static int tsc_usable(void) {
#if defined(__x86_64__)
  const char *force = getenv("GPUPHASE_CLOCK");
  if (force && strcmp(force, "monotonic") == 0) return 0;
  char buf[64] = "";
  int fd = open("/sys/devices/system/clocksource/clocksource0/"
                "current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
  }
  /* The kernel only keeps "tsc" as clocksource when it found the TSC
   * invariant and synchronised across CPUs. */
  return strncmp(buf, "tsc", 3) == 0;
#else
  return 0;
#endif
}

/* A (tsc, CLOCK_MONOTONIC) pair; the tightest of a few tries, so that a
 * preemption between the reads does not skew the calibration. */
static void sample_pair(uint64_t *tsc, uint64_t *ns) {
#if defined(__x86_64__)
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t a = __rdtsc();
    uint64_t m = gp_mono_ns();
    uint64_t b = __rdtsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      *tsc = a + (b - a) / 2;
      *ns = m;
    }
  }
#else
  *tsc = *ns = gp_mono_ns();
#endif
}

/* Calibration points, one per writer pass: raw TSC values are converted by
 * interpolating between the two points around them, so the error stays at
 * the sampling error (tens of ns) instead of growing with distance. */
static void calibrate(void) {
  if (!gp_clock_tsc) return;
  struct calpoint p;
  sample_pair(&p.tsc, &p.ns);
  const struct calpoint *prev = &W.cal[(W.cal_next + CAL_N - 1) % CAL_N];
  if (p.tsc <= prev->tsc) return;
  /* the slope is worked out once here, not at every conversion */
  p.slope = W.cal_count ? (double)(p.ns - prev->ns) / (double)(p.tsc - prev->tsc)
                        : W.slope0;
  W.cal[W.cal_next] = p;
  W.cal_next = (W.cal_next + 1) % CAL_N;
  if (W.cal_count < CAL_N) W.cal_count++;
}

/* raw on the line through a with b's slope (b follows a). */
static uint64_t along(const struct calpoint *a, const struct calpoint *b,
                      uint64_t raw) {
  int64_t d = (int64_t)(raw - a->tsc);
  return a->ns + (uint64_t)(int64_t)((double)d * b->slope);
}

uint64_t gp_clock_to_ns(uint64_t raw) {
  if (!gp_clock_tsc) return raw;
  int n = W.cal_count;
  const struct calpoint *newest = &W.cal[(W.cal_next + CAL_N - 1) % CAL_N];
  if (n < 2) {
    struct calpoint ext = {newest->tsc + 1000000000ull,
                           newest->ns + (uint64_t)(1e9 * W.slope0), W.slope0};
    return along(newest, &ext, raw);
  }
  /* Walk back from the newest point: events are almost always recent. */
  for (int i = 1; i < n; i++) {
    const struct calpoint *hi = &W.cal[(W.cal_next + CAL_N - i) % CAL_N];
    const struct calpoint *lo = &W.cal[(W.cal_next + CAL_N - i - 1) % CAL_N];
    if (raw >= lo->tsc || i == n - 1) return along(lo, hi, raw);
  }
  return newest->ns;
}

/* ---- sources ---- */
static uint32_t new_source(void) {
  return W.next_source < 65535 ? W.next_source++ : 65535;
}

static uint32_t thread_source(uint32_t index) {
  if (!W.thread_source[index]) W.thread_source[index] = new_source();
  return W.thread_source[index];
}

static uint32_t stream_source(uint32_t device, uint32_t stream) {
  uint64_t key = (((uint64_t)device << 32) | stream) + 1;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  for (uint32_t i = 0; i < STREAM_SLOTS; i++) {
    struct stream_slot *s = &W.streams[(h + i) & (STREAM_SLOTS - 1)];
    if (s->key == key) return s->source;
    if (s->key == 0) {
      s->key = key;
      s->source = new_source();
      return s->source;
    }
  }
  if (!W.overflow_source) W.overflow_source = new_source();
  return W.overflow_source;
}

static void add(uint32_t source, const struct gpuphase_record *r) {
  gp_writer_add(W.w, source, r);
}

/* ---- metadata ---- */
static void define_api(uint32_t id) {
  if (id >= gp_api_count() || W.api_defined[id]) return;
  W.api_defined[id] = 1;
  const char *name = gp_api_name(id);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def.api = id;
  r.u.api_def.name = gp_writer_intern(W.w, name, strlen(name));
  r.u.api_def.cls = gp_api_cls(id);
  r.u.api_def.layer = gp_api_layer(id);
  add(0, &r);
}

static void announce_thread(struct gp_tbuf *b) {
  char path[64], name[64] = "";
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)b->tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    name[n > 0 ? n : 0] = 0;
    char *nl = strchr(name, '\n');
    if (nl) *nl = 0;
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_THREAD};
  r.u.thread.thread = b->index;
  r.u.thread.tid = (uint64_t)b->tid;
  r.u.thread.name = gp_writer_intern(W.w, name, strlen(name));
  add(0, &r);
  b->announced = 1;
}

typedef CUresult (*cu_init_fn)(unsigned);
typedef CUresult (*cu_dev_get_fn)(CUdevice *, int);
typedef CUresult (*cu_name_fn)(char *, int, CUdevice);
typedef CUresult (*cu_mem_fn)(size_t *, CUdevice);
typedef CUresult (*cu_attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*cu_version_fn)(int *);
typedef int (*rt_version_fn)(int *); /* cudaError_t: 0 is cudaSuccess */

/* The driver's and runtime's versions, for every DEVICE record: asked once
 * each (until known). Both getters only return a number and need no
 * initialised context, so the writer thread may call them; the runtime's
 * is the real one (its CUPTI callback, if any, comes to an internal
 * thread and is not recorded). 0 when unknown, e.g. a program that only
 * uses the driver API. */
static void versions(void *cuda, uint64_t *driver, uint64_t *runtime) {
  static int drv, rt;
  if (!drv) {
    cu_version_fn f = (cu_version_fn)dlsym(cuda, "cuDriverGetVersion");
    int v = 0;
    if (f && f(&v) == CUDA_SUCCESS && v > 0) drv = v;
  }
  if (!rt) {
    rt_version_fn f = (rt_version_fn)gp_real_runtime("cudaRuntimeGetVersion");
    int v = 0;
    if (f && f(&v) == 0 && v > 0) rt = v;
  }
  *driver = (uint64_t)drv;
  *runtime = (uint64_t)rt;
}

static void describe_device(uint32_t dev) {
  if (dev >= MAX_DEVICES || W.device_state[dev] == 1 ||
      W.device_state[dev] > 50)
    return;
  W.device_state[dev]++;
  if (W.device_state[dev] == 1) W.device_state[dev] = 2;
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return;
  cu_dev_get_fn dev_get = (cu_dev_get_fn)dlsym(h, "cuDeviceGet");
  cu_name_fn get_name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
  cu_mem_fn total_mem = (cu_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
  cu_attr_fn attr = (cu_attr_fn)dlsym(h, "cuDeviceGetAttribute");
  CUdevice d;
  char name[256] = "";
  size_t mem = 0;
  if (!dev_get || !get_name || !total_mem || !attr ||
      dev_get(&d, (int)dev) != CUDA_SUCCESS ||
      get_name(name, sizeof name, d) != CUDA_SUCCESS ||
      total_mem(&mem, d) != CUDA_SUCCESS) {
    dlclose(h);
    return;
  }
#define ATTR(a) (attr(&v, a, d) == CUDA_SUCCESS && v > 0 ? (uint64_t)v : 0)
  int v;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  struct gpuphase_device *p = &r.u.device;
  p->device = dev;
  p->name = gp_writer_intern(W.w, name, strnlen(name, sizeof name));
  p->mem_total = mem;
  p->sms = ATTR(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->cc_major = ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p->cc_minor = ATTR(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p->max_threads_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p->max_blocks_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p->regs_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p->smem_per_sm = ATTR(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p->warp_size = ATTR(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p->clock_khz = ATTR(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  p->mem_clock_khz = ATTR(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  p->mem_bus_width = ATTR(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
#undef ATTR
  versions(h, &p->driver_version, &p->runtime_version);
  add(0, &r);
  W.device_state[dev] = 1;
  dlclose(h);
}

/* ---- host rings ---- */
static void emit_api(struct gp_tbuf *b, const struct gp_event *e) {
  define_api(e->api);
  uint32_t cls = gp_api_cls(e->api);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  struct gpuphase_api *a = &r.u.api;
  a->thread = b->index;
  a->api = e->api;
  a->start = gp_clock_to_ns(e->t0);
  a->end = gp_clock_to_ns(e->t1);
  if (a->end < a->start) a->end = a->start;
  a->ret = e->ret;
  a->corr = e->corr;
  a->device = e->device;
  a->stream = e->stream;
  a->bytes = e->bytes;
  a->copy_kind = e->copy_kind;
  a->grid = e->grid;
  a->block = e->block;
  if (cls & GPUPHASE_API_LAUNCH) a->func = e->aux;
  else a->ptr = e->aux;
  if (e->device >= 0) describe_device((uint32_t)e->device);
  add(thread_source(b->index), &r);
}

static void emit_range(struct gp_tbuf *b, const struct gp_event *e,
                       uint64_t pos) {
  char name[GP_RANGE_NAME_MAX + 1];
  size_t len = e->bytes > GP_RANGE_NAME_MAX ? GP_RANGE_NAME_MAX : e->bytes;
  for (size_t off = 0; off < len; off += sizeof(struct gp_event)) {
    const struct gp_event *s = &b->ev[(pos + 1 + off / 64) & b->mask];
    size_t n = len - off < 64 ? len - off : 64;
    memcpy(name + off, s, n);
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range.thread = b->index;
  r.u.range.op = e->api;
  r.u.range.start = gp_clock_to_ns(e->t0);
  r.u.range.name = len ? gp_writer_intern(W.w, name, len) : 0;
  r.u.range.id = e->aux;
  if (e->stream) { /* an NVTX domain: its name leads the handle */
    const char *dom = (const char *)(uintptr_t)e->stream;
    r.u.range.domain = gp_writer_intern(W.w, dom, strnlen(dom, GP_RANGE_NAME_MAX));
  }
  add(thread_source(b->index), &r);
}

static void emit_items(struct gp_tbuf *b, const struct gp_event *e) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_ITEMS};
  r.u.items.thread = b->index;
  r.u.items.start = gp_clock_to_ns(e->t0);
  r.u.items.count = e->aux;
  add(thread_source(b->index), &r);
}

static void drain_ring(struct gp_tbuf *b) {
  int st = atomic_load_explicit(&b->state, memory_order_acquire);
  if (st != GP_TB_ALIVE && st != GP_TB_DEAD) return;
  if (!b->announced) announce_thread(b);
  uint64_t h = atomic_load_explicit(&b->head, memory_order_acquire);
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
  while (t < h) {
    const struct gp_event *e = &b->ev[t & b->mask];
    uint64_t used = 1;
    if (e->type == GP_EV_API) emit_api(b, e);
    else if (e->type == GP_EV_RANGE) {
      emit_range(b, e, t);
      used += (e->bytes + 63) / 64;
    } else if (e->type == GP_EV_ITEMS)
      emit_items(b, e);
    t += used;
  }
  atomic_store_explicit(&b->tail, t, memory_order_release);
  uint64_t lost = atomic_load_explicit(&b->lost, memory_order_relaxed);
  if (lost > b->lost_reported) {
    struct gpuphase_record r = {.kind = GPUPHASE_REC_LOST};
    r.u.lost.thread = b->index;
    r.u.lost.start = gp_mono_ns();
    r.u.lost.count = lost - b->lost_reported;
    r.u.lost.source = 0;
    add(0, &r);
    W.lost_total += lost - b->lost_reported;
    b->lost_reported = lost;
  }
  if (st == GP_TB_DEAD &&
      atomic_load_explicit(&b->head, memory_order_acquire) == t) {
    b->announced = 0;
    gp_tbuf_free(b);
  }
}

/* ---- device activity ---- */
static void on_activity(const struct gp_dev_activity *a, void *ctx) {
  (void)ctx;
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  /* A synchronisation starts when the host begins to wait, before work
   * queued ahead of it on the stream: give them sources of their own so
   * every source stays in start order. */
  uint32_t src = a->kind == GP_DA_SYNC
                     ? stream_source(a->device | 0x80000000u, a->stream)
                     : stream_source(a->device, a->stream);
  switch (a->kind) {
  case GP_DA_KERNEL: {
    struct gpuphase_kernel *k = &r.u.kernel;
    r.kind = GPUPHASE_REC_KERNEL;
    k->device = a->device, k->stream = a->stream, k->corr = a->corr;
    k->start = a->start, k->end = a->end;
    k->name = a->name ? gp_writer_intern(W.w, a->name, strlen(a->name)) : 0;
    k->grid_x = a->grid[0], k->grid_y = a->grid[1], k->grid_z = a->grid[2];
    k->block_x = a->block[0], k->block_y = a->block[1], k->block_z = a->block[2];
    k->regs = a->regs, k->smem_static = a->smem_static;
    k->smem_dynamic = a->smem_dynamic, k->graph_id = a->graph_id;
    describe_device(a->device);
    break;
  }
  case GP_DA_MEMCPY: {
    struct gpuphase_memcpy *m = &r.u.memcpy;
    r.kind = GPUPHASE_REC_MEMCPY;
    m->device = a->device, m->stream = a->stream, m->corr = a->corr;
    m->start = a->start, m->end = a->end, m->bytes = a->bytes;
    m->copy_kind = a->copy_kind, m->src_mem = a->src_mem;
    m->dst_mem = a->dst_mem, m->peer_device = a->peer_device;
    m->flags = a->flags;
    describe_device(a->device);
    break;
  }
  case GP_DA_MEMSET: {
    struct gpuphase_memset *m = &r.u.memset;
    r.kind = GPUPHASE_REC_MEMSET;
    m->device = a->device, m->stream = a->stream, m->corr = a->corr;
    m->start = a->start, m->end = a->end, m->bytes = a->bytes;
    m->value = a->value, m->flags = a->flags;
    break;
  }
  case GP_DA_SYNC: {
    struct gpuphase_sync *s = &r.u.sync;
    r.kind = GPUPHASE_REC_SYNC;
    s->device = a->device, s->stream = a->stream, s->corr = a->corr;
    s->start = a->start, s->end = a->end, s->type = a->sync_type;
    break;
  }
  default: return;
  }
  add(src, &r);
}

/* ---- degraded notes (any thread) ---- */
void gp_writer_note_degraded(uint64_t ns, int on, const char *reason) {
  pthread_mutex_lock(&W.lock);
  if (W.n_notes < NOTE_MAX) {
    struct note *n = &W.notes[W.n_notes++];
    n->ns = ns;
    n->on = on;
    snprintf(n->reason, sizeof n->reason, "%s", reason ? reason : "");
  }
  if (on) W.degraded = 1;
  pthread_mutex_unlock(&W.lock);
}

static void write_notes(void) {
  struct note local[NOTE_MAX];
  pthread_mutex_lock(&W.lock);
  int n = W.n_notes;
  memcpy(local, W.notes, (size_t)n * sizeof local[0]);
  W.n_notes = 0;
  pthread_mutex_unlock(&W.lock);
  for (int i = 0; i < n; i++) {
    struct gpuphase_record r = {.kind = GPUPHASE_REC_STATE};
    r.u.state.start = local[i].ns;
    r.u.state.state = (uint64_t)local[i].on;
    r.u.state.reason =
        gp_writer_intern(W.w, local[i].reason, strlen(local[i].reason));
    add(0, &r);
  }
}

/* ---- the thread ---- */
static void pass(int flush) {
  calibrate();
  write_notes();
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) drain_ring(b);
  if (W.cupti_on || gp_cupti_wanted()) {
    if (flush) gp_cupti_flush_buffers(0);
    gp_cupti_consume(on_activity, NULL);
    uint64_t dropped = gp_cupti_dropped();
    if (dropped > W.cupti_lost_reported) {
      struct gpuphase_record r = {.kind = GPUPHASE_REC_LOST};
      r.u.lost.start = gp_mono_ns();
      r.u.lost.count = dropped - W.cupti_lost_reported;
      r.u.lost.source = 1;
      add(0, &r);
      W.lost_total += dropped - W.cupti_lost_reported;
      W.cupti_lost_reported = dropped;
    }
  }
  if (flush) gp_writer_flush(W.w);
}

static void *thread_main(void *arg) {
  (void)arg;
  gp_ts.internal = 1;
  gp_ts.depth = 1;
  for (;;) {
    uint32_t seen = atomic_load(&W.wake_seq);
    if (!atomic_load(&W.stop_req)) {
      struct timespec ts = {.tv_sec = gp_cfg.poll_ms / 1000,
                            .tv_nsec = (long)(gp_cfg.poll_ms % 1000) * 1000000L};
      /* Wakes early when a producer or a stop request bumps wake_seq. */
      syscall(SYS_futex, &W.wake_seq, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
    int stop = atomic_load(&W.stop_req);
    uint64_t now = gp_mono_ns();
    int flush = stop || now - W.last_flush_ns >= gp_cfg.flush_ms * 1000000ull;
    pass(flush);
    if (flush) W.last_flush_ns = now;
    if (stop) break;
  }
  return NULL;
}

/* Any thread, cheap: one atomic add and one futex wake syscall. */
void gp_writer_wake(void) {
  atomic_fetch_add(&W.wake_seq, 1);
  syscall(SYS_futex, &W.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- opening the file ---- */
static void append(char *out, size_t cap, size_t *n, const char *s) {
  size_t len = strlen(s);
  if (*n + len >= cap) len = cap - 1 - *n;
  memcpy(out + *n, s, len);
  *n += len;
  out[*n] = 0;
}

static long env_rank(const char *const *names) {
  for (; *names; names++) {
    const char *v = getenv(*names);
    char *end;
    if (v && *v) {
      long x = strtol(v, &end, 10);
      if (!*end && x >= 0) return x;
    }
  }
  return -1;
}

static const char *const rank_vars[] = {"RANK", "SLURM_PROCID",
                                        "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        NULL};
static const char *const local_rank_vars[] = {
    "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID", NULL};

/* Expands %p %h %r %q{VAR} %%. */
void gp_expand_pattern(const char *pat, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  char tmp[256];
  for (const char *p = pat; *p && n + 1 < cap; p++) {
    if (*p != '%' || !p[1]) {
      char c[2] = {*p, 0};
      append(out, cap, &n, c);
      continue;
    }
    p++;
    switch (*p) {
    case 'p':
      snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
      append(out, cap, &n, tmp);
      break;
    case 'h':
      if (gethostname(tmp, sizeof tmp) != 0) snprintf(tmp, sizeof tmp, "host");
      tmp[sizeof tmp - 1] = 0;
      append(out, cap, &n, tmp);
      break;
    case 'r': {
      long r = env_rank(rank_vars);
      snprintf(tmp, sizeof tmp, "%ld", r < 0 ? 0 : r);
      append(out, cap, &n, tmp);
      break;
    }
    case 'q': {
      const char *close = p[1] == '{' ? strchr(p + 2, '}') : NULL;
      if (!close || (size_t)(close - p - 2) >= sizeof tmp) {
        append(out, cap, &n, "%q");
        break;
      }
      memcpy(tmp, p + 2, (size_t)(close - p - 2));
      tmp[close - p - 2] = 0;
      const char *v = getenv(tmp);
      append(out, cap, &n, v ? v : "");
      p = close;
      break;
    }
    case '%': append(out, cap, &n, "%"); break;
    default: {
      char c[3] = {'%', *p, 0};
      append(out, cap, &n, c);
    }
    }
  }
}

/* Never overwrite: an exec'd program keeps the pid, a rerun the name. */
static int open_unique(const char *base, char *path, size_t cap) {
  snprintf(path, cap, "%s", base);
  for (int i = 1; i < 1000; i++) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
    size_t len = strlen(base);
    int k;
    if (len > 4 && strcmp(base + len - 4, ".gph") == 0)
      k = snprintf(path, cap, "%.*s.%d.gph", (int)(len - 4), base, i);
    else
      k = snprintf(path, cap, "%s.%d", base, i);
    if (k < 0 || (size_t)k >= cap) break; /* no room for a suffix */
  }
  errno = EEXIST;
  return -1;
}

static void read_cmdline(char *out, size_t cap) {
  out[0] = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n <= 0) return;
  while (n > 0 && out[n - 1] == 0) n--;
  for (ssize_t i = 0; i < n; i++)
    if (out[i] == 0) out[i] = ' ';
  out[n] = 0;
}

static void notify_manifest(void) {
  const char *m = getenv("GPUPHASE_MANIFEST");
  if (!m || !*m) return;
  char abs[PATH_MAX + 2];
  if (W.path[0] == '/') snprintf(abs, sizeof abs, "%s\n", W.path);
  else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return;
    int k = snprintf(abs, sizeof abs, "%s/%s\n", cwd, W.path);
    if (k < 0 || (size_t)k >= sizeof abs) return;
  }
  int fd = open(m, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t w = write(fd, abs, strlen(abs));
  (void)w;
  close(fd);
}

int gp_writer_start(void) {
  gp_clock_tsc = tsc_usable();
  W.cal_next = W.cal_count = 0;
  W.slope0 = 1.0;
  if (gp_clock_tsc) {
    /* a first slope estimate over 0.2 ms, replaced by interpolation between
     * calibration points as soon as the writer has taken its first */
    struct calpoint a, b;
    sample_pair(&a.tsc, &a.ns);
    do sample_pair(&b.tsc, &b.ns);
    while (b.ns - a.ns < 200000);
    W.slope0 = (double)(b.ns - a.ns) / (double)(b.tsc - a.tsc);
    a.slope = W.slope0;
    W.cal[0] = a;
    W.cal_next = 1;
    W.cal_count = 1;
  }
  char base[PATH_MAX];
  gp_expand_pattern(gp_cfg.output, base, sizeof base);
  int fd = open_unique(base, W.path, sizeof W.path);
  if (fd < 0) {
    gp_warn("cannot create trace file %s: %s; not recording", base,
            strerror(errno));
    return -1;
  }
  char host[256] = "", cmd[4096];
  if (gethostname(host, sizeof host) != 0) host[0] = 0;
  host[sizeof host - 1] = 0;
  read_cmdline(cmd, sizeof cmd);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  struct gp_process_info info = {
      .host = host,
      .pid = getpid(),
      .ppid = getppid(),
      .rank = env_rank(rank_vars),
      .local_rank = env_rank(local_rank_vars),
      .cmdline = cmd,
      .start_mono_ns = gp_mono_ns(),
      .start_real_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
      .clock = gp_clock_tsc ? "tsc" : "monotonic",
      .flags = 0,
      .run_id = gp_cfg.run_id,
      .step_items = gp_cfg.step_items,
  };
  int err = 0;
  W.w = gp_writer_open(fd, &info, 0, &err);
  if (!W.w) {
    gp_warn("cannot write trace file %s: %s; not recording", W.path,
            gpuphase_strerror(err));
    close(fd);
    unlink(W.path);
    return -1;
  }
  W.api_defined = calloc(gp_api_count(), 1);
  W.thread_source = calloc(65536, sizeof *W.thread_source);
  if (!W.api_defined || !W.thread_source) {
    gp_writer_close(W.w, NULL);
    W.w = NULL;
    return -1;
  }
  W.next_source = 1;
  W.last_flush_ns = gp_mono_ns();
  atomic_store(&W.stop_req, 0);
  /* The writer thread must not inherit signals the application blocks or
   * receive its asynchronous signals: block them all in it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&W.thread, NULL, thread_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    gp_warn("cannot start the writer thread: %s; not recording", strerror(rc));
    gp_writer_close(W.w, NULL);
    W.w = NULL;
    return -1;
  }
  W.running = 1;
  notify_manifest();
  return 0;
}

void gp_writer_stop(int final) {
  (void)final;
  if (!W.running) return;
  if (pthread_equal(pthread_self(), W.thread)) return;
  atomic_store(&W.stop_req, 1);
  gp_writer_wake();
  pthread_join(W.thread, NULL);
  W.running = 0;
  struct gpuphase_summary sum = {0};
  sum.events = gp_writer_events(W.w);
  sum.lost = W.lost_total + gp_lost_no_buffer();
  sum.flags = (W.degraded ? GPUPHASE_FLAG_DEGRADED : 0) |
              (sum.lost ? GPUPHASE_FLAG_LOST : 0);
  sum.end = gp_mono_ns();
  gp_writer_close(W.w, &sum);
  W.w = NULL;
  free(W.api_defined);
  free(W.thread_source);
  W.api_defined = NULL;
  W.thread_source = NULL;
}

/* ---- CUPTI bridge ---- */
static void hook_enter(uint32_t corr) {
  gp_ts.corr = corr;
}
static void hook_degraded(uint64_t ns, int on, const char *reason) {
  gp_writer_note_degraded(ns, on, reason);
}
static const struct gp_cupti_hooks hooks = {
    .on_api_enter = hook_enter,
    .degraded = hook_degraded,
    .wake = gp_writer_wake,
    .now_ns = gp_mono_ns,
};

void gp_dev_start(void) {
  const char *why = NULL;
  void *cudart = gp_real_runtime("cudaGetDeviceCount");
  if (gp_cupti_open(&hooks, cudart, gp_cfg.cupti_lib, GP_CUDA_HOME, &why) == 0)
    W.cupti_on = 1;
  else
    gp_warn("%s; recording host-side calls only (trace marked degraded)",
            why ? why : "CUPTI unavailable");
}

void gp_dev_flush(int forced) {
  gp_cupti_flush_buffers(forced); /* no-op unless CUPTI is ours now */
}

void gp_dev_stop(void) {
  gp_cupti_close();
  W.cupti_on = 0;
}

void gp_writer_child_reset(void) {
  /* The parent's writer thread does not exist here; its file belongs to
   * the parent. Forget both without touching them. */
  W.running = 0;
  W.w = NULL;
  W.cupti_on = 0;
  W.n_notes = 0;
  W.degraded = 0;
  W.lost_total = W.cupti_lost_reported = 0;
  memset(W.streams, 0, sizeof W.streams);
  memset(W.device_state, 0, sizeof W.device_state);
  W.overflow_source = 0;
  pthread_mutex_init(&W.lock, NULL);
  atomic_store(&W.stop_req, 0);
  gp_cupti_forget();
}
