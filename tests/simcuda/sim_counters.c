/* Simulated driver: the counter model (README.md, "Counters"). Every
 * kernel, copy and memset the driver runs is remembered per device, in a
 * ring of the last GPUSIM_COUNTER_HISTORY operations; a window's counters
 * are computed from the operations overlapping it. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "gpusim_counters.h"

enum { OP_KERNEL, OP_H2D, OP_D2H, OP_D2D, OP_SET, OP_OTHER };

typedef struct cop {
  uint64_t start, end;
  uint64_t bytes;      /* copies and memsets */
  uint32_t blocks;     /* kernels: blocks in the grid (capped at 2^32-1) */
  uint32_t warps;      /* kernels: warps per block */
  float tensor, dram;  /* kernels: their profile factors */
  uint8_t kind;
  uint64_t maxend;     /* the latest end of this and every earlier operation */
} cop;

typedef struct history {
  cop *v;     /* GPUSIM_COUNTER_HISTORY entries, allocated at first use */
  uint64_t n; /* operations recorded so far */
  uint64_t maxend;
} history;

static pthread_mutex_t counters_lock = PTHREAD_MUTEX_INITIALIZER;
static history hist[GPUSIM_MAX_DEVICES];

/* GPUSIM_KERNEL_PROFILE: "GLOB:tensor=F,dram=F;GLOB:..." */
#define MAX_PROFILES 32
static struct {
  char glob[128];
  float tensor, dram;
} profiles[MAX_PROFILES];
static int nprofiles;
static pthread_once_t profile_once = PTHREAD_ONCE_INIT;

static int parse_factor(const char *s, size_t len, float *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || *end || !(v >= 0.0 && v <= 1.0)) return -1;
  *out = (float)v;
  return 0;
}

/* One "GLOB:key=value,key=value" entry; -1 if malformed. */
static int parse_entry(const char *s, size_t len) {
  const char *colon = memchr(s, ':', len);
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof profiles[0].glob ||
      nprofiles >= MAX_PROFILES)
    return -1;
  int i = nprofiles;
  memcpy(profiles[i].glob, s, (size_t)(colon - s));
  profiles[i].glob[colon - s] = 0;
  profiles[i].tensor = profiles[i].dram = 0;
  const char *p = colon + 1, *end = s + len;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    const char *eq = memchr(p, '=', (size_t)(stop - p));
    if (!eq) return -1;
    float *dst = NULL;
    if ((size_t)(eq - p) == 6 && memcmp(p, "tensor", 6) == 0)
      dst = &profiles[i].tensor;
    else if ((size_t)(eq - p) == 4 && memcmp(p, "dram", 4) == 0)
      dst = &profiles[i].dram;
    if (!dst || parse_factor(eq + 1, (size_t)(stop - eq - 1), dst) != 0)
      return -1;
    p = comma ? comma + 1 : end;
  }
  nprofiles++;
  return 0;
}

static void profile_read(void) {
  const char *s = getenv("GPUSIM_KERNEL_PROFILE");
  if (!s || !*s) return;
  while (*s) {
    const char *semi = strchr(s, ';');
    size_t len = semi ? (size_t)(semi - s) : strlen(s);
    if (len && parse_entry(s, len) != 0)
      fprintf(stderr, "gpusim: ignoring invalid GPUSIM_KERNEL_PROFILE entry %.*s\n",
              (int)len, s);
    s += len + (semi ? 1 : 0);
  }
}

/* The first entry whose glob matches the name; factors 0 if none. */
static void profile_of(const char *name, float *tensor, float *dram) {
  pthread_once(&profile_once, profile_read);
  *tensor = *dram = 0;
  for (int i = 0; name && i < nprofiles; i++)
    if (fnmatch(profiles[i].glob, name, 0) == 0) {
      *tensor = profiles[i].tensor;
      *dram = profiles[i].dram;
      return;
    }
}

/* A thread that reads counters (a sampler) holds these locks for a moment;
 * a fork then must not leave them held in the child, whose next CUDA call
 * would wait for ever. */
static pthread_mutex_t window_lock;
static void fork_prepare(void) {
  pthread_mutex_lock(&window_lock);
  pthread_mutex_lock(&gp_lock);
  pthread_mutex_lock(&counters_lock);
}
static void fork_after(void) {
  pthread_mutex_unlock(&counters_lock);
  pthread_mutex_unlock(&gp_lock);
  pthread_mutex_unlock(&window_lock);
}
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_arm(void) {
  pthread_atfork(fork_prepare, fork_after, fork_after);
}

static void remember(int dev, const cop *c) {
  if (dev < 0 || dev >= GPUSIM_MAX_DEVICES) return;
  pthread_once(&fork_once, fork_arm);
  pthread_mutex_lock(&counters_lock);
  history *h = &hist[dev];
  if (!h->v) h->v = calloc(GPUSIM_COUNTER_HISTORY, sizeof *h->v);
  if (h->v) {
    if (c->end > h->maxend) h->maxend = c->end;
    cop *e = &h->v[h->n++ % GPUSIM_COUNTER_HISTORY];
    *e = *c;
    e->maxend = h->maxend;
  }
  pthread_mutex_unlock(&counters_lock);
}

void gp_counters_kernel(const sim_launch *l, const sim_op *op) {
  uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
  uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
  cop c = {.start = op->start, .end = op->end, .kind = OP_KERNEL};
  c.blocks = blocks > UINT32_MAX ? UINT32_MAX : (uint32_t)blocks;
  c.warps = (uint32_t)((threads + 31) / 32);
  profile_of(l->f ? l->f->name : NULL, &c.tensor, &c.dram);
  remember(op->dev, &c);
}

void gp_counters_copy(int cupti_kind, const sim_op *op, uint64_t bytes) {
  cop c = {.start = op->start, .end = op->end, .bytes = bytes};
  switch (cupti_kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: c.kind = OP_H2D; break;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: c.kind = OP_D2H; break;
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: c.kind = OP_D2D; break;
  default: c.kind = OP_OTHER; break;
  }
  remember(op->dev, &c);
}

void gp_counters_set(const sim_op *op, uint64_t bytes) {
  cop c = {.start = op->start, .end = op->end, .bytes = bytes, .kind = OP_SET};
  remember(op->dev, &c);
}

GPUSIM_EXPORT uint64_t gpusim_now_ns(void) {
  return gp_now();
}

/* A change of the running set at time t. */
typedef struct ev {
  uint64_t t;
  int64_t count, blocks, warps;
  double tensor, dram; /* factor x SM share */
} ev;

/* Heap sort by time, in place: no allocation while another thread may
 * fork (a sanitizer's allocator left locked in the child hangs it). The
 * order of events at one instant does not matter to the sweep. */
static void sift(ev *v, size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && v[c + 1].t > v[c].t) c++;
    if (v[c].t <= v[i].t) return;
    ev tmp = v[i];
    v[i] = v[c];
    v[c] = tmp;
    i = c;
  }
}

static void ev_sort(ev *v, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift(v, i, n);
  for (size_t end = n; end > 1; end--) {
    ev tmp = v[0];
    v[0] = v[end - 1];
    v[end - 1] = tmp;
    sift(v, 0, end - 1);
  }
}

/* The events of one window: one buffer, one window at a time. */
static pthread_mutex_t window_lock = PTHREAD_MUTEX_INITIALIZER;
static ev evbuf[2 * (size_t)GPUSIM_COUNTER_HISTORY];

static double min1(double v) {
  return v < 1.0 ? v : 1.0;
}

GPUSIM_EXPORT int gpusim_counters_window(int device, uint64_t t0, uint64_t t1,
                                         struct gpusim_counters *out) {
  gp_config_load();
  pthread_once(&fork_once, fork_arm);
  if (!out || device < 0 || device >= gp_cfg.devices || t1 <= t0) return -1;
  memset(out, 0, sizeof *out);
  const double sms = (double)gp_cfg.sms;
  const double win = (double)(t1 - t0);
  const double hbm_per_ns = (double)gp_cfg.hbm_mbps / 1000.0;
  double d2d_bytes = 0;
  ev *evs = NULL;
  size_t nev = 0;

  /* The scan goes from the newest operation back and stops where every
   * older one ended before t0, so that the lock, which every operation
   * the driver runs takes, is held briefly. */
  pthread_mutex_lock(&window_lock);
  evs = evbuf;
  pthread_mutex_lock(&counters_lock);
  history *h = &hist[device];
  uint64_t have = h->n < GPUSIM_COUNTER_HISTORY ? h->n : GPUSIM_COUNTER_HISTORY;
  for (uint64_t j = 0; j < have; j++) {
    const cop *c = &h->v[(h->n - 1 - j) % GPUSIM_COUNTER_HISTORY];
    if (c->maxend <= t0) break;
    if (c->end <= t0 || c->start >= t1 || c->end <= c->start) continue;
    uint64_t a = c->start > t0 ? c->start : t0;
    uint64_t b = c->end < t1 ? c->end : t1;
    double share = (double)(b - a) / (double)(c->end - c->start);
    switch (c->kind) {
    case OP_KERNEL: {
      double sm_share = min1((double)c->blocks / sms);
      int64_t resident = c->blocks < (uint32_t)gp_cfg.sms ? (int64_t)c->blocks
                                                          : (int64_t)gp_cfg.sms;
      ev s = {a, 1, c->blocks, resident * (int64_t)c->warps,
              c->tensor * sm_share, c->dram * sm_share};
      ev e = {b, -1, -s.blocks, -s.warps, -s.tensor, -s.dram};
      evs[nev++] = s;
      evs[nev++] = e;
      double traffic = c->dram * sm_share * hbm_per_ns * (double)(b - a);
      out->dram_read_bytes += traffic / 2;
      out->dram_write_bytes += traffic / 2;
      break;
    }
    case OP_H2D: out->pcie_rx_bytes += (double)c->bytes * share; break;
    case OP_D2H: out->pcie_tx_bytes += (double)c->bytes * share; break;
    case OP_D2D:
      d2d_bytes += (double)c->bytes * share;
      out->dram_read_bytes += (double)c->bytes * share;
      out->dram_write_bytes += (double)c->bytes * share;
      break;
    case OP_SET:
      d2d_bytes += (double)c->bytes * share;
      out->dram_write_bytes += (double)c->bytes * share;
      break;
    default: break;
    }
  }
  pthread_mutex_unlock(&counters_lock);

  ev_sort(evs, nev);
  int64_t count = 0, blocks = 0, warps = 0;
  double tensor = 0, dram = 0;
  double busy = 0, active = 0, occ = 0, tens = 0, dr = 0;
  const double max_warps = sms * 64.0; /* 2048 threads per SM */
  uint64_t prev = t0;
  for (size_t i = 0; i <= nev; i++) {
    uint64_t t = i < nev ? evs[i].t : t1;
    double dt = (double)(t - prev);
    if (dt > 0 && count > 0) {
      busy += dt;
      active += dt * min1((double)blocks / sms);
      occ += dt * min1((double)warps / max_warps);
      tens += dt * min1(tensor);
      dr += dt * min1(dram);
    }
    prev = t;
    if (i < nev) {
      count += evs[i].count;
      blocks += evs[i].blocks;
      warps += evs[i].warps;
      tensor += evs[i].tensor;
      dram += evs[i].dram;
      if (count == 0) tensor = dram = 0; /* no rounding residue when idle */
    }
  }
  pthread_mutex_unlock(&window_lock);
  out->gpu_util_pct = 100.0 * busy / win;
  out->sm_active_pct = 100.0 * active / win;
  out->sm_occupancy_pct = 100.0 * occ / win;
  out->tensor_active_pct = 100.0 * tens / win;
  double dram_pct = 100.0 * (dr / win + d2d_bytes / (hbm_per_ns * win));
  out->dram_bw_pct = dram_pct < 100.0 ? dram_pct : 100.0;

  pthread_mutex_lock(&gp_lock);
  out->mem_used_bytes = gp_dev[device].used + (gp_ready() ? GPUSIM_CONTEXT_BYTES : 0);
  pthread_mutex_unlock(&gp_lock);
  return 0;
}
