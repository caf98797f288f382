/* Call-site capture and its storage (gp_stacks.h, docs/callsites.md).
 *
 * Application thread (warm path: no allocation, lock or system call):
 * unw_backtrace into a buffer on the stack, our own frames dropped from
 * the inner end, the Python frames of pyframes.c where it is linked, one
 * hash over both, a lookup in the thread's table (mapped with its ring).
 * A stack seen for the first time takes the next id of the thread and
 * travels once through the ring as a GP_EV_STACK event (raw addresses and
 * Python frames), preceded by a GP_EV_PYCODE event for each code object
 * the thread had not met. The API event then carries the id.
 *
 * Writer thread: the global prefix tree (one FRAME record per node, in
 * source 0, before the API record that refers to it), the MODULE records
 * of the objects its native frames lie in (dl_iterate_phdr; objects a
 * dlclose removed are described by the dlclose wrapper before they go)
 * and the PYCODE records. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gp_apitab.h"
#include "gp_clock.h"
#include "gp_config.h"
#include "gp_fd.h"
#include "gp_lifecycle.h"
#include "gp_pyframes.h"
#include "gp_records.h"
#include "gp_settings.h"
#include "gp_stacks.h"
#include "gpuphase/trace_records.h"

#if GP_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define MAYBE_UNUSED
#else /* the capture's helpers go unused: no stacks without libunwind */
#define MAYBE_UNUSED __attribute__((unused))
#endif

/* pyframes.c, when it is linked into the library (tests link a fake one
 * into a test build: tests/e2e/fake_pyframes.c): weak and hidden, so that
 * without it they are NULL and nothing outside the library can stand in. */
#define GP_PY_WEAK __attribute__((weak, visibility("hidden")))
GP_PY_WEAK int gp_py_start(void);
GP_PY_WEAK int gp_py_capture(struct gp_pyframe *out, int max);
GP_PY_WEAK int gp_py_describe(uint64_t code, struct gp_pycode_desc *d);
GP_PY_WEAK int gp_py_eval_ranges(uintptr_t *lo, uintptr_t *hi, int max);
GP_PY_WEAK void gp_py_after_fork(void);

uint8_t gp_stk_policy[65536];
uint64_t gp_stk_idle_ticks = UINT64_MAX;
uint64_t gp_stk_launch_quiet_below;

static struct {
  int mode;
  int python;          /* gp_py_start said yes */
  int py_asked;        /* gp_py_start was called in this process */
  int started;         /* set_up ran in this process image */
  int rates_set;       /* set_rates ran in this process image */
  uintptr_t own_lo, own_hi; /* our library's mapped range */
  uint64_t ticks_per_token;
  _Atomic int full_warned;
  uint32_t napi;
  /* one per trace: a thread's table from an earlier trace of this process
   * (recording restarted after a failed exec) is emptied at its next
   * capture, so that its stacks are sent again to the new trace */
  _Atomic uint32_t generation;
} S;

/* ---- the per-thread table ---- */
#define TSLOTS (2 * GP_STK_IDS) /* open addressing, at most half full */
#define CSLOTS 2048             /* code objects met by the thread */
struct stk_table {
  uint64_t key[TSLOTS]; /* hash | 1; 0 empty */
  uint16_t id[TSLOTS];
  uint32_t next_id;
  uint32_t ncodes;
  uint32_t generation;
  uint64_t code[CSLOTS]; /* (code ^ tag * k) | 1 */
  uint32_t nodes[GP_STK_IDS]; /* writer side: id -> FRAME node */
  struct gp_pycode_desc desc; /* scratch for gp_py_describe */
};

int gp_stacks_ring_init(struct gp_tbuf *b) {
  b->stk = NULL;
  b->stk_nodes = NULL;
  if (S.mode == GP_STK_OFF) return 0;
  void *m = mmap(NULL, sizeof(struct stk_table), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -1; /* no stacks for this thread */
  struct stk_table *t = m;
  t->next_id = 1;
  t->generation = atomic_load(&S.generation);
  b->stk = t;
  b->stk_nodes = t->nodes;
  return 0;
}

void gp_stacks_ring_free(struct gp_tbuf *b) {
  if (b->stk) munmap(b->stk, sizeof(struct stk_table));
  b->stk = NULL;
  b->stk_nodes = NULL;
}

/* ---- start-up ---- */
static int find_own(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t self = (uintptr_t)arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + p->p_vaddr;
    if (a < lo) lo = a;
    if (a + p->p_memsz > hi) hi = a + p->p_memsz;
  }
  if (self < lo || self >= hi) return 0;
  S.own_lo = lo;
  S.own_hi = hi;
  return 1;
}

static uint8_t policy_of(uint32_t cls) {
  if (S.mode == GP_STK_OFF) return GP_STKP_NONE;
  if (S.mode == GP_STK_ALL) return GP_STKP_ALWAYS;
  int async = (cls & GPUPHASE_API_ASYNC) != 0;
  /* the calls the report counts as blocking (docs/attribution.md section
   * 2: explicit synchronisation, frees that synchronise implicitly,
   * synchronous copies) and synchronous memsets */
  if ((cls & GPUPHASE_API_SYNC) ||
      ((cls & (GPUPHASE_API_COPY | GPUPHASE_API_MEMSET | GPUPHASE_API_FREE)) &&
       !async))
    return GP_STKP_BLOCK;
  if (S.mode == GP_STK_SYNC) return GP_STKP_NONE;
  if (cls & GPUPHASE_API_LAUNCH) return GP_STKP_LAUNCH;
  /* an async copy may block (pageable host memory: known only when its
   * device record comes), and copies are few beside launches */
  if (cls & GPUPHASE_API_COPY) return GP_STKP_COPY;
  /* other stream-ordered calls (an event recorded, a wait between
   * streams, a stream-ordered allocation) end an idle gap as a launch
   * does when they come first after it */
  if (cls & (GPUPHASE_API_MEMSET | GPUPHASE_API_ASYNC | GPUPHASE_API_WAIT))
    return GP_STKP_SUBMIT;
  return GP_STKP_NONE;
}

/* ns per raw clock tick (gp_clock_start ran) */
static double clock_rate(void) {
  return gp_clock_line.from == UINT64_MAX || gp_clock_line.slope <= 0
             ? 1.0
             : gp_clock_line.slope;
}

static void set_up(void);

/* ---- libunwind's descriptors ----
 * libunwind 1.6 checks memory it is unsure of (frames without unwind
 * tables) by writing a byte of it into a pipe it opens at set-up, and
 * reading it back. A program that closes every descriptor it did not
 * open (a daemon does) and opens its own files under those numbers would
 * have libunwind read and write its files. The pipe's two ends are noted
 * at set-up (the FIFOs that were not open before). close, close_range,
 * closefrom, dup2 and dup3 are interposed: one that touches either end
 * stops call sites for the rest of the process (one line on stderr), and
 * a capture then tests only that flag. Raw system calls bypass them: the
 * writer thread checks the ends' identity each pass as well. */
#define FD_NOTE_MAX 65536
static struct {
  int n;
  int fd[2];
  dev_t dev[2];
  ino_t ino[2];
  _Atomic int lost; /* the pipe is gone: no more captures */
} U;

/* Calls fn(fd, arg) for each open descriptor (from /proc/self/fd). */
static MAYBE_UNUSED void each_fd(void (*fn)(int, void *), void *arg) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == self || fd < 0 || fd >= FD_NOTE_MAX)
      continue;
    fn((int)fd, arg);
  }
  closedir(d);
}

static MAYBE_UNUSED void mark_fd(int fd, void *bits) {
  ((unsigned char *)bits)[fd / 8] |= (unsigned char)(1u << (fd % 8));
}

static MAYBE_UNUSED void note_new_fifo(int fd, void *bits) {
  struct stat st;
  if ((((unsigned char *)bits)[fd / 8] >> (fd % 8)) & 1) return;
  if (U.n >= 2 || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  U.fd[U.n] = fd;
  U.dev[U.n] = st.st_dev;
  U.ino[U.n] = st.st_ino;
  U.n++;
}

/* The pipe is gone: said at the first capture refused, not here (a
 * forked child that closes every descriptor before exec, as Python's
 * subprocess does, captures nothing and has nothing to say). */
static void unw_lose(void) {
  atomic_store(&U.lost, 1);
}

static _Atomic int unw_said;

static MAYBE_UNUSED void unw_say(void) {
  if (!atomic_exchange(&unw_said, 1))
    gp_warn("the program closed or replaced the descriptors of libunwind's "
            "pipe (%d, %d); no more call sites", U.fd[0],
            U.n > 1 ? U.fd[1] : -1);
}

/* An application call about to close or replace descriptors lo..hi. A
 * vfork child (in its parent's memory, e.g. Python's subprocess closing
 * descriptors before exec) leaves the parent's pipe, which is untouched,
 * alone. */
static inline void fds_going(unsigned lo, unsigned hi) {
  for (int i = 0; i < U.n; i++)
    if ((unsigned)U.fd[i] >= lo && (unsigned)U.fd[i] <= hi) {
      int saved = errno;
      if (gp_lifecycle_owner()) unw_lose();
      errno = saved;
      return;
    }
}

/* The writer's pass: the ends are still that pipe (raw system calls). */
static void unw_verify(void) {
  if (!U.n || atomic_load_explicit(&U.lost, memory_order_relaxed)) return;
  for (int i = 0; i < U.n; i++) {
    struct stat st;
    if (fstat(U.fd[i], &st) != 0 || !S_ISFIFO(st.st_mode) ||
        st.st_dev != U.dev[i] || st.st_ino != U.ino[i]) {
      unw_lose();
      return;
    }
  }
}

#define FD_REAL(type, name, args)                                              \
  static type(*real_##name) args;                                              \
  if (!real_##name) {                                                          \
    void *p_ = dlsym(RTLD_NEXT, #name);                                        \
    if (!p_) {                                                                 \
      errno = ENOSYS;                                                          \
      return -1;                                                               \
    }                                                                          \
    memcpy(&real_##name, &p_, sizeof p_);                                      \
  }

GP_EXPORT int close(int fd) {
  FD_REAL(int, close, (int))
  if (U.n && fd >= 0) fds_going((unsigned)fd, (unsigned)fd);
  return real_close(fd);
}

GP_EXPORT int close_range(unsigned lo, unsigned hi, int flags) {
  FD_REAL(int, close_range, (unsigned, unsigned, int))
  /* CLOSE_RANGE_CLOEXEC (4) only marks them */
  if (U.n && !(flags & 4)) fds_going(lo, hi);
  return real_close_range(lo, hi, flags);
}

GP_EXPORT void closefrom(int lo) {
  static void (*real_closefrom)(int);
  if (!real_closefrom) {
    void *p = dlsym(RTLD_NEXT, "closefrom");
    if (!p) return;
    memcpy(&real_closefrom, &p, sizeof p);
  }
  if (U.n && lo >= 0) fds_going((unsigned)lo, ~0u);
  real_closefrom(lo);
}

GP_EXPORT int dup2(int old, int fd) {
  FD_REAL(int, dup2, (int, int))
  if (U.n && fd >= 0 && old != fd) fds_going((unsigned)fd, (unsigned)fd);
  return real_dup2(old, fd);
}

GP_EXPORT int dup3(int old, int fd, int flags) {
  FD_REAL(int, dup3, (int, int, int))
  if (U.n && fd >= 0) fds_going((unsigned)fd, (unsigned)fd);
  return real_dup3(old, fd, flags);
}

void gp_stacks_start(void) {
  /* Settings, policy table and rates once per process image: a recording
   * that starts again (after a failed exec) finds them as they were, and
   * other threads may be reading them then. A forked child keeps them. */
  if (!S.started) {
    S.started = 1;
    set_up();
  }
  /* asked once per process (again in a forked child): a recording that
   * starts again after a failed exec keeps the answer */
  if (S.py_asked == 0 && S.mode != GP_STK_OFF && gp_py_start && gp_py_capture) {
    S.py_asked = 1;
    S.python = gp_py_start() ? 1 : 0;
  }
}

static void set_up(void) {
  S.mode = gp_cfg.stacks; /* settings.c */
#if !GP_HAVE_LIBUNWIND
  if (S.mode != GP_STK_OFF && gp_cfg.stacks_set)
    gp_warn("GPUPHASE_STACKS: built without libunwind; no call sites");
  S.mode = GP_STK_OFF;
#else
  /* libunwind opens its pipe here (even with call sites off): above 2,
   * whatever of 0..2 the program closed (gp_fd.h) */
  static unsigned char before[FD_NOTE_MAX / 8];
  unsigned held = gp_fd_std_hold();
  if (S.mode != GP_STK_OFF) each_fd(mark_fd, before);
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  if (S.mode != GP_STK_OFF) each_fd(note_new_fifo, before);
  gp_fd_std_release(held);
#endif
  dl_iterate_phdr(find_own, (void *)(uintptr_t)gp_stacks_start);
  S.napi = gp_api_count();
  for (uint32_t id = 0; id < S.napi && id < 65536; id++)
    gp_stk_policy[id] = gp_api_layer(id) == GPUPHASE_LAYER_NVTX
                            ? GP_STKP_NONE
                            : policy_of(gp_api_cls(id));
}

/* The decision's rates in raw clock ticks, once per process image, from
 * gp_stacks_writer_begin: the clock is chosen then and the writer thread,
 * which recalibrates it, not started. */
static void set_rates(void) {
  if (S.rates_set) return;
  S.rates_set = 1;
  double ns_per_tick = clock_rate();
  gp_stk_idle_ticks = (uint64_t)(GP_STK_IDLE_US * 1000.0 / ns_per_tick);
  S.ticks_per_token = (uint64_t)(1e9 / GP_STK_RATE_PER_S / ns_per_tick);
  if (!S.ticks_per_token) S.ticks_per_token = 1;
  switch (policy_of(GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC)) {
  case GP_STKP_NONE: gp_stk_launch_quiet_below = UINT64_MAX; break;
  case GP_STKP_LAUNCH:
    gp_stk_launch_quiet_below = gp_stk_idle_ticks == UINT64_MAX
                                    ? UINT64_MAX
                                    : gp_stk_idle_ticks + 1;
    break;
  default: gp_stk_launch_quiet_below = 0; /* every launch decided cold */
  }
}

void gp_stacks_after_fork(void) {
  memset(&gp_ts.stk, 0, sizeof gp_ts.stk);
  S.py_asked = 0;
  S.python = 0;
  atomic_store(&S.full_warned, 0);
  if (gp_py_after_fork) gp_py_after_fork();
}

/* ---- capture ---- */
static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* Reserves `slots` ring slots at the head: their first, or NULL (full:
 * the stack goes unrecorded, a later call of it tries again). */
static struct gp_event *reserve(struct gp_tbuf *b, uint64_t slots,
                                uint64_t *head) {
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_acquire);
  if (h + slots - t > b->mask + 1) return NULL;
  *head = h;
  return &b->ev[h & b->mask];
}

/* Copies len bytes into the slots after the event at h (wrapping). */
MAYBE_UNUSED static void put_payload(struct gp_tbuf *b, uint64_t h, const void *src,
                        size_t len) {
  const char *p = src;
  for (size_t off = 0; off < len; off += 64) {
    struct gp_event *s = &b->ev[(h + 1 + off / 64) & b->mask];
    memcpy(s, p + off, len - off < 64 ? len - off : 64);
  }
}

struct pycode_head {
  int64_t first_line;
  uint32_t py_version;
  uint16_t file_len, name_len;
  uint32_t lt_len;
  uint32_t pad;
};

/* A code object the thread meets first: described and sent (cold). */
MAYBE_UNUSED static void send_code(struct gp_tbuf *b, struct stk_table *t,
                      const struct gp_pyframe *f, uint64_t now) {
  uint64_t key = (f->code ^ (f->tag * 0x9e3779b97f4a7c15ull)) | 1;
  uint64_t i = (key * 0xff51afd7ed558ccdull) >> 53; /* 11 bits */
  for (uint32_t k = 0; k < CSLOTS; k++, i = (i + 1) & (CSLOTS - 1)) {
    if (t->code[i] == key) return;
    if (t->code[i] == 0) break;
  }
  if (t->ncodes >= CSLOTS / 2) return; /* full: the writer knows it or 0 */
  if (!gp_py_describe || gp_py_describe(f->code, &t->desc) != 0) return;
  struct gp_pycode_desc *d = &t->desc;
  struct pycode_head hd = {.first_line = d->first_line,
                           .py_version = d->py_version};
  hd.file_len = (uint16_t)strnlen(d->file, sizeof d->file);
  hd.name_len = (uint16_t)strnlen(d->name, sizeof d->name);
  hd.lt_len = d->linetable_len > sizeof d->linetable ? sizeof d->linetable
                                                     : d->linetable_len;
  size_t len = sizeof hd + hd.file_len + hd.name_len + hd.lt_len;
  uint64_t h;
  struct gp_event *e = reserve(b, 1 + (len + 63) / 64, &h);
  if (!e) return;
  *e = (struct gp_event){.t0 = now, .aux = f->code, .stream = f->tag,
                         .bytes = len, .device = -1, .type = GP_EV_PYCODE};
  /* the payload in pieces, each where it goes in the slots */
  size_t off = 0;
  const void *parts[4] = {&hd, d->file, d->name, d->linetable};
  size_t lens[4] = {sizeof hd, hd.file_len, hd.name_len, hd.lt_len};
  for (int p = 0; p < 4; p++) {
    const char *src = parts[p];
    for (size_t j = 0; j < lens[p];) {
      size_t in_slot = off % 64, n = 64 - in_slot;
      if (n > lens[p] - j) n = lens[p] - j;
      struct gp_event *s = &b->ev[(h + 1 + off / 64) & b->mask];
      memcpy((char *)s + in_slot, src + j, n);
      j += n, off += n;
    }
  }
  gp_publish(b, 1 + (len + 63) / 64);
  t->code[i] = key;
  t->ncodes++;
}

MAYBE_UNUSED static void warn_full(void) {
  int expect = 0;
  if (atomic_compare_exchange_strong(&S.full_warned, &expect, 1))
    gp_warn("a thread's table of %d call-site stacks is full: its calls from "
            "new stacks are recorded without one (GPUPHASE_STACKS)",
            GP_STK_IDS - 1);
}

/* The table of an earlier trace, emptied (cold: once per restart). */
MAYBE_UNUSED static void renew(struct stk_table *t, uint32_t gen) {
  memset(t->key, 0, sizeof t->key);
  memset(t->code, 0, sizeof t->code);
  memset(t->nodes, 0, sizeof t->nodes);
  t->next_id = 1;
  t->ncodes = 0;
  t->generation = gen;
}

static uint16_t capture(struct gp_tbuf *b, uint64_t now) {
#if GP_HAVE_LIBUNWIND
  struct stk_table *t = b->stk;
  if (!t) return 0;
  if (GP_UNLIKELY(atomic_load_explicit(&U.lost, memory_order_relaxed))) {
    unw_say();
    return 0;
  }
  uint32_t gen = atomic_load_explicit(&S.generation, memory_order_relaxed);
  if (GP_UNLIKELY(t->generation != gen)) renew(t, gen);
  enum { OWN_MAX = 16 };
  void *pcs[GP_STK_DEPTH + OWN_MAX + 1];
  int n = unw_backtrace(pcs, (int)(sizeof pcs / sizeof pcs[0]));
  int skip = 0;
  while (skip < n && (uintptr_t)pcs[skip] >= S.own_lo &&
         (uintptr_t)pcs[skip] < S.own_hi)
    skip++;
  int nn = n - skip, trunc = 0;
  if (nn > GP_STK_DEPTH) nn = GP_STK_DEPTH, trunc = 1;
  /* one Python frame more than is kept: a stack that has it is deeper
   * than the cap, cut there and marked truncated like a native one */
  struct gp_pyframe py[GP_STK_PY_MAX + 1];
  int np = S.python ? gp_py_capture(py, GP_STK_PY_MAX + 1) : 0;
  if (np < 0) np = 0;
  if (np > GP_STK_PY_MAX) np = GP_STK_PY_MAX, trunc = 1;
  if (nn <= 0 && np == 0) return 0;
  uint64_t hsh = (uint64_t)nn * 31 + (uint64_t)np * 7 + (uint64_t)trunc;
  for (int i = 0; i < nn; i++) hsh = mix(hsh, (uintptr_t)pcs[skip + i]);
  for (int i = 0; i < np; i++)
    hsh = mix(mix(mix(hsh, py[i].code), py[i].tag),
              (uint64_t)py[i].unit << 32 | py[i].flags);
  uint64_t key = hsh | 1;
  uint64_t i = (hsh >> 17) & (TSLOTS - 1);
  for (;;) {
    if (t->key[i] == key) return t->id[i];
    if (t->key[i] == 0) break;
    i = (i + 1) & (TSLOTS - 1);
  }
  /* a new stack (cold) */
  if (t->next_id >= GP_STK_IDS) {
    warn_full();
    return 0;
  }
  for (int k = 0; k < np; k++) send_code(b, t, &py[k], now);
  size_t len = (size_t)nn * 8 + (size_t)np * sizeof(struct gp_pyframe);
  uint64_t h;
  struct gp_event *e = reserve(b, 1 + (len + 63) / 64, &h);
  if (!e) return 0;
  uint16_t id = (uint16_t)t->next_id;
  *e = (struct gp_event){.t0 = now, .aux = id, .bytes = (uint64_t)nn,
                         .grid = (uint32_t)np, .copy_kind = (uint8_t)trunc,
                         .device = -1, .type = GP_EV_STACK};
  /* native addresses, then the Python frames: contiguous in a scratch
   * copy would cost a second pass; write both in place */
  put_payload(b, h, pcs + skip, (size_t)nn * 8);
  if (np) {
    size_t off = (size_t)nn * 8;
    const char *src = (const char *)py;
    size_t plen = (size_t)np * sizeof(struct gp_pyframe);
    for (size_t j = 0; j < plen;) {
      size_t in_slot = off % 64, m = 64 - in_slot;
      if (m > plen - j) m = plen - j;
      memcpy((char *)&b->ev[(h + 1 + off / 64) & b->mask] + in_slot, src + j,
             m);
      j += m, off += m;
    }
  }
  gp_publish(b, 1 + (len + 63) / 64);
  t->next_id++;
  t->key[i] = key;
  t->id[i] = id;
  return id;
#else
  (void)b;
  (void)now;
  return 0;
#endif
}

/* The rate cap of sampled captures: a token bucket per thread. */
static int take_token(struct gp_stk_tls *s, uint64_t now) {
  if (now - s->refill >= S.ticks_per_token) {
    uint64_t add = (now - s->refill) / S.ticks_per_token;
    uint64_t tk = s->tokens + add;
    s->tokens = tk > GP_STK_BURST ? GP_STK_BURST : (uint32_t)tk;
    s->refill = now;
  }
  if (!s->tokens) return 0;
  s->tokens--;
  return 1;
}

/* The decision of a call of policy p at raw time now (its start), and the
 * capture when it is due. */
static uint16_t decide(struct gp_tbuf *b, uint32_t p, uint64_t now,
                       int counted) {
  struct gp_stk_tls *s = &gp_ts.stk;
  if (GP_UNLIKELY(s->refill == 0)) { /* the thread's first decision */
    s->countdown = GP_STK_LAUNCH_EVERY - (counted ? 1 : 0);
    s->tokens = GP_STK_BURST;
    s->refill = now;
  }
  int due;
  switch (p) {
  case GP_STKP_BLOCK: due = 1; break; /* GP_STK_BLOCKED after it: wrap.c */
  case GP_STKP_ALWAYS: due = 1; break;
  case GP_STKP_COPY:
    s->last_end = now; /* the thread is back in CUDA */
    due = take_token(s, now);
    break;
  case GP_STKP_LAUNCH:
  case GP_STKP_SUBMIT:
    /* also true after a blocking call, which leaves GP_STK_BLOCKED */
    due = now - s->last_end > gp_stk_idle_ticks;
    /* a countdown past its range (the ring made without setting it) is
     * due too */
    if (p == GP_STKP_LAUNCH &&
        (uint32_t)((counted ? s->countdown : --s->countdown) - 1) >=
            GP_STK_LAUNCH_EVERY) {
      s->countdown = GP_STK_LAUNCH_EVERY;
      due = 1;
    }
    s->last_end = now; /* the thread is back in CUDA */
    if (due) due = take_token(s, now);
    break;
  default: due = 0;
  }
  if (!due) return 0;
  /* libunwind may set errno (its first walks through a library validate
   * addresses with system calls): the program's errno stays as it was */
  int saved = errno;
  uint16_t id = capture(b, now);
  errno = saved;
  return id;
}

uint16_t gp_stack_on_call(struct gp_tbuf *b, uint32_t p) {
  return decide(b, p, gp_now(), 0);
}

void gp_stack_after_launch(struct gp_tbuf *b, uint32_t p) {
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);
  uint64_t entered = atomic_load_explicit(&b->entered, memory_order_relaxed);
  /* the ring's spare slot keeps the two slots contiguous */
  struct gp_event ev[2];
  memcpy(ev, &b->ev[h & b->mask], sizeof ev);
  /* a launch policy's countdown was decremented by the fast path */
  uint16_t id = decide(b, p, ev[0].t0, p == GP_STKP_LAUNCH);
  gp_ts.stk.last_end = ev[0].t1;
  /* under another policy (the mode is not sampled) the countdown means
   * nothing: it keeps this path away */
  if (p != GP_STKP_LAUNCH) gp_ts.stk.countdown = UINT32_MAX;
  struct gp_event *slot = &b->ev[h & b->mask];
  if (atomic_load_explicit(&b->head, memory_order_relaxed) != h) {
    /* a new stack's events went first: the launch follows them */
    slot = gp_slot_n(b, 2);
    if (slot == NULL) return; /* counted lost */
    memcpy(slot, ev, sizeof ev);
    /* still under way (CUPTI's mark) until published, at its new place */
    if (entered == h + 1)
      atomic_store_explicit(
          &b->entered, atomic_load_explicit(&b->head, memory_order_relaxed) + 1,
          memory_order_release);
  }
  slot->stack = id;
  gp_publish(b, 2);
}

/* ---- dlclose: the object described before it goes ---- */
/* Why intercept dlclose rather than detect unloads (dl_iterate_phdr's
 * dlpi_subs counter)? Detection would cost a check on every capture and
 * would come after the object is gone, when its build id and extent can
 * no longer be read; dlclose is rare, and its wrapper can describe the
 * object before the real call and flush libunwind's caches after it. */
struct gone {
  struct gone *next;
  uintptr_t base, lo, hi;
  uint64_t seen, unloaded; /* raw clock */
  uint8_t build_id[64];
  uint32_t build_id_len;
  char path[4096];
};
static _Atomic(struct gone *) gone_list;

/* Size and build id of the object at base named name (dl_iterate_phdr). */
struct describe_arg {
  uintptr_t base;
  const char *name;
  struct gone *g;
  int found;
};

static void note_build_id(const struct dl_phdr_info *info, uint8_t *out,
                          uint32_t *len) {
  *len = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_NOTE) continue;
    const uint8_t *q = (const uint8_t *)(info->dlpi_addr + p->p_vaddr);
    const uint8_t *end = q + p->p_memsz;
    while (q + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)q;
      size_t nsz = (nh->n_namesz + 3) & ~3u, dsz = (nh->n_descsz + 3) & ~3u;
      const uint8_t *name = q + sizeof *nh, *desc = name + nsz;
      if (desc + dsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
          !memcmp(name, "GNU", 4)) {
        uint32_t n = nh->n_descsz > 64 ? 64 : nh->n_descsz;
        memcpy(out, desc, n);
        *len = n;
        return;
      }
      q = desc + dsz;
    }
  }
}

static void extent(const struct dl_phdr_info *info, uintptr_t *lo,
                   uintptr_t *hi) {
  *lo = UINTPTR_MAX, *hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + p->p_vaddr;
    if (a < *lo) *lo = a;
    if (a + p->p_memsz > *hi) *hi = a + p->p_memsz;
  }
}

static int describe_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct describe_arg *a = arg;
  if (info->dlpi_addr != a->base || !info->dlpi_name ||
      strcmp(info->dlpi_name, a->name) != 0)
    return 0;
  a->found = 1;
  if (a->g) {
    extent(info, &a->g->lo, &a->g->hi);
    note_build_id(info, a->g->build_id, &a->g->build_id_len);
  }
  return 1;
}

typedef int (*dlclose_fn)(void *);

GP_EXPORT int dlclose(void *handle) {
  static dlclose_fn real_dlclose;
  dlclose_fn f = __atomic_load_n(&real_dlclose, __ATOMIC_ACQUIRE);
  if (!f) {
    f = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    __atomic_store_n(&real_dlclose, f, __ATOMIC_RELEASE);
  }
  if (!f) return -1;
  /* acquire: S, written before recording started, is read below */
  if (atomic_load_explicit(&gp_state, memory_order_acquire) != GP_RUNNING ||
      S.mode == GP_STK_OFF)
    return f(handle);
  int saved = errno;
  struct link_map *lm = NULL;
  struct gone *g = NULL;
  /* the header says handle is never NULL; a program may pass one all the
   * same (the real dlclose then fails): hide it from the compiler */
  void *hv = handle;
  __asm__("" : "+r"(hv));
  if (hv && dlinfo(hv, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name &&
      lm->l_name[0]) {
    g = calloc(1, sizeof *g);
    if (g) {
      g->base = lm->l_addr;
      snprintf(g->path, sizeof g->path, "%s", lm->l_name);
      g->seen = gp_now();
      struct describe_arg a = {g->base, g->path, g, 0};
      dl_iterate_phdr(describe_cb, &a);
      if (!a.found) free(g), g = NULL;
    }
  }
  errno = saved;
  int rc = f(handle);
  saved = errno;
  if (g) {
    struct describe_arg a = {g->base, g->path, NULL, 0};
    dl_iterate_phdr(describe_cb, &a);
    if (a.found) { /* still mapped (other references) */
      free(g);
    } else {
      g->unloaded = gp_now();
#if GP_HAVE_LIBUNWIND
      unw_flush_cache(unw_local_addr_space, 0, 0);
#endif
      struct gone *old = atomic_load(&gone_list);
      do g->next = old;
      while (!atomic_compare_exchange_weak(&gone_list, &old, g));
    }
  }
  errno = saved;
  return rc;
}

/* ---- writer side ---- */
struct module {
  uintptr_t base, lo, hi;
  uint64_t start_ns, unloaded_ns; /* unloaded_ns 0: mapped */
  uint32_t id;
  int written;
  uint8_t build_id[64];
  uint32_t build_id_len;
  char *path;
};

struct node_slot {
  uint64_t parent, module, pc;
  uint32_t kind_flags; /* kind << 8 | flags; 0 empty */
  uint32_t node;
};

struct code_slot {
  uint64_t code, tag;
  uint32_t id; /* 0 empty */
};

#define MAX_NODES (1u << 20)
#define MAX_MODULES 4096
#define MAX_CODES (1u << 16)

static struct {
  struct module *mods;
  uint32_t nmods;
  struct node_slot *nodes;
  uint64_t node_cap; /* slots, a power of two */
  uint32_t nnodes;
  int nodes_warned;
  struct code_slot *codes;
  uint32_t ncodes;
  uintptr_t eval_lo[8], eval_hi[8];
  int neval, eval_asked;
  /* MODULE.start of objects found later than the trace's start: the
   * loader's count of objects ever added (dlpi_adds) at the last scan,
   * and the latest time it was seen unchanged since; an object found now
   * was mapped after that time. (Not a dlopen wrapper: glibc's dlopen
   * searches the calling object's run path, which a wrapper would
   * change.) */
  unsigned long long adds_scanned;
  uint64_t stable_ns;
} W;

static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  if (size < offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
    return -1;
  *(unsigned long long *)arg = info->dlpi_adds;
  return 1;
}

/* The loader's count of added objects (0: not told). */
static unsigned long long loader_adds(void) {
  unsigned long long adds = 0;
  dl_iterate_phdr(adds_cb, &adds);
  return adds;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg);

int gp_stacks_writer_begin(void) {
  gp_stacks_writer_end();
  set_rates();
  atomic_fetch_add(&S.generation, 1);
  W.mods = calloc(MAX_MODULES, sizeof *W.mods);
  W.node_cap = 1u << 14;
  W.nodes = calloc(W.node_cap, sizeof *W.nodes);
  W.codes = calloc(2 * MAX_CODES, sizeof *W.codes);
  if (!W.mods || !W.nodes || !W.codes) {
    gp_stacks_writer_end();
    return -1;
  }
  W.neval = W.eval_asked = 0; /* asked at the first stack (after start) */
  /* the objects mapped now, from the start of recording (this runs before
   * the writer thread starts) */
  uint64_t now_ns = gp_clock_to_ns(gp_now());
  W.adds_scanned = loader_adds();
  W.stable_ns = now_ns;
  dl_iterate_phdr(scan_cb, &now_ns);
  /* the parent's unloads belong to the parent's trace */
  struct gone *g = atomic_exchange(&gone_list, NULL);
  while (g) {
    struct gone *next = g->next;
    free(g);
    g = next;
  }
  return 0;
}

void gp_stacks_writer_end(void) {
  for (uint32_t i = 0; W.mods && i < W.nmods; i++) free(W.mods[i].path);
  free(W.mods);
  free(W.nodes);
  free(W.codes);
  W.mods = NULL;
  W.nodes = NULL;
  W.codes = NULL;
  W.nmods = W.nnodes = W.ncodes = 0;
  W.nodes_warned = 0;
}

static void write_module(struct module *m) {
  gp_writer *w = gp_records_writer();
  struct gpuphase_record r = {.kind = GPUPHASE_REC_MODULE};
  r.u.module.module = m->id;
  r.u.module.path = w && m->path ? gp_writer_intern(w, m->path, strlen(m->path)) : 0;
  r.u.module.build_id.data = (const char *)m->build_id;
  r.u.module.build_id.len = m->build_id_len;
  r.u.module.base = m->base;
  r.u.module.size = m->hi - m->base;
  r.u.module.start = m->start_ns;
  r.u.module.unloaded = m->unloaded_ns;
  gp_records_add(0, &r);
  m->written = 1;
}

static struct module *add_module(uintptr_t base, uintptr_t lo, uintptr_t hi,
                                 const char *path, const uint8_t *bid,
                                 uint32_t bid_len, uint64_t start_ns) {
  if (W.nmods >= MAX_MODULES) return NULL;
  struct module *m = &W.mods[W.nmods];
  memset(m, 0, sizeof *m);
  m->base = base, m->lo = lo, m->hi = hi;
  m->path = strdup(path);
  memcpy(m->build_id, bid, bid_len);
  m->build_id_len = bid_len;
  m->start_ns = start_ns;
  m->id = ++W.nmods;
  return m;
}

/* Unloads the dlclose wrapper saw: modules marked, or added as unloaded. */
static void take_gone(void) {
  struct gone *g = atomic_exchange(&gone_list, NULL);
  /* oldest first */
  struct gone *rev = NULL;
  while (g) {
    struct gone *next = g->next;
    g->next = rev;
    rev = g;
    g = next;
  }
  for (g = rev; g;) {
    struct module *m = NULL;
    for (uint32_t i = 0; i < W.nmods; i++)
      if (!W.mods[i].unloaded_ns && W.mods[i].base == g->base &&
          !strcmp(W.mods[i].path, g->path)) {
        m = &W.mods[i];
        break;
      }
    if (!m) { /* mapped after the last scan, so after stable_ns */
      uint64_t seen = gp_clock_to_ns(g->seen);
      m = add_module(g->base, g->lo, g->hi, g->path, g->build_id,
                     g->build_id_len, W.stable_ns < seen ? W.stable_ns : seen);
    }
    if (m) {
      m->unloaded_ns = gp_clock_to_ns(g->unloaded);
      if (m->unloaded_ns < m->start_ns) m->unloaded_ns = m->start_ns;
      if (!m->unloaded_ns) m->unloaded_ns = 1;
      if (m->written) write_module(m); /* again, with unloaded set */
    }
    struct gone *next = g->next;
    free(g);
    g = next;
  }
}

static char exe_path[4096];

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uint64_t now_ns = *(uint64_t *)arg;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  if (!name[0]) {
    if (!exe_path[0]) {
      ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
      if (n > 0) exe_path[n] = 0;
      else snprintf(exe_path, sizeof exe_path, "[exe]");
    }
    name = exe_path;
  }
  for (uint32_t i = 0; i < W.nmods; i++)
    if (!W.mods[i].unloaded_ns && W.mods[i].base == info->dlpi_addr &&
        !strcmp(W.mods[i].path, name))
      return 0;
  uintptr_t lo, hi;
  extent(info, &lo, &hi);
  if (lo >= hi) return 0;
  uint8_t bid[64];
  uint32_t bid_len;
  note_build_id(info, bid, &bid_len);
  add_module(info->dlpi_addr, lo, hi, name, bid, bid_len, now_ns);
  return 0;
}

/* The module pc lay in when it was captured at t_ns: one unloaded after
 * t_ns before one still mapped (the first held the address then). */
static struct module *find_module(uintptr_t pc, uint64_t t_ns) {
  struct module *mapped = NULL;
  for (uint32_t i = 0; i < W.nmods; i++) {
    struct module *m = &W.mods[i];
    if (pc < m->lo || pc >= m->hi) continue;
    if (m->unloaded_ns && m->unloaded_ns > t_ns) return m;
    if (!m->unloaded_ns) mapped = m;
  }
  return mapped;
}

static struct module *module_of(uintptr_t pc, uint64_t t_ns) {
  /* unloads first: a library loaded where an unloaded one lay is not the
   * old one still taken for mapped (the dlclose came before the capture) */
  if (atomic_load_explicit(&gone_list, memory_order_acquire)) take_gone();
  struct module *m = find_module(pc, t_ns);
  if (m) return m;
  uint64_t start_ns = W.stable_ns < t_ns ? W.stable_ns : t_ns;
  uint64_t now_ns = gp_clock_to_ns(gp_now());
  unsigned long long adds = loader_adds();
  dl_iterate_phdr(scan_cb, &start_ns);
  W.adds_scanned = adds;
  W.stable_ns = now_ns; /* adds read after now: nothing new before now */
  return find_module(pc, t_ns);
}

static int grow_nodes(void) {
  uint64_t cap = W.node_cap * 2;
  struct node_slot *n = calloc(cap, sizeof *n);
  if (!n) return -1;
  for (uint64_t i = 0; i < W.node_cap; i++) {
    struct node_slot *o = &W.nodes[i];
    if (!o->kind_flags) continue;
    uint64_t h = mix(mix(mix(o->parent, o->module), o->pc), o->kind_flags);
    uint64_t j = h & (cap - 1);
    while (n[j].kind_flags) j = (j + 1) & (cap - 1);
    n[j] = *o;
  }
  free(W.nodes);
  W.nodes = n;
  W.node_cap = cap;
  return 0;
}

/* The node (parent, kind, module, pc, flags), written when new; 0 when the
 * tree is full. */
static uint64_t node(uint64_t parent, uint32_t kind, uint64_t module,
                     uint64_t pc, uint32_t flags) {
  uint32_t kf = kind << 8 | (flags & 0xff);
  uint64_t h = mix(mix(mix(parent, module), pc), kf);
  uint64_t j = h & (W.node_cap - 1);
  for (;;) {
    struct node_slot *s = &W.nodes[j];
    if (!s->kind_flags) break;
    if (s->kind_flags == kf && s->parent == parent && s->module == module &&
        s->pc == pc)
      return s->node;
    j = (j + 1) & (W.node_cap - 1);
  }
  if (W.nnodes >= MAX_NODES ||
      ((uint64_t)W.nnodes + 1) * 2 > W.node_cap) {
    if (W.nnodes >= MAX_NODES || grow_nodes() != 0) {
      if (!W.nodes_warned)
        gp_warn("the call-site tree is full (%u nodes): later new stacks "
                "are recorded without one",
                MAX_NODES);
      W.nodes_warned = 1;
      return 0;
    }
    return node(parent, kind, module, pc, flags);
  }
  struct node_slot *s = &W.nodes[j];
  *s = (struct node_slot){parent, module, pc, kf, ++W.nnodes};
  struct gpuphase_record r = {.kind = GPUPHASE_REC_FRAME};
  r.u.frame.node = s->node;
  r.u.frame.parent = parent;
  r.u.frame.kind = kind;
  r.u.frame.module = module;
  r.u.frame.pc = pc;
  r.u.frame.flags = flags;
  gp_records_add(0, &r);
  return s->node;
}

static uint32_t code_id(uint64_t code, uint64_t tag, int add) {
  uint64_t h = mix(code, tag) & (2 * MAX_CODES - 1);
  for (;;) {
    struct code_slot *c = &W.codes[h];
    if (!c->id) break;
    if (c->code == code && c->tag == tag) return c->id;
    h = (h + 1) & (2 * MAX_CODES - 1);
  }
  if (!add || W.ncodes >= MAX_CODES) return 0;
  W.codes[h] = (struct code_slot){code, tag, ++W.ncodes};
  return W.ncodes;
}

/* Reads len payload bytes at byte offset off after the event at pos. */
static void get_payload(const struct gp_tbuf *b, uint64_t pos, size_t off,
                        void *dst, size_t len) {
  char *d = dst;
  for (size_t j = 0; j < len;) {
    size_t in_slot = off % 64, n = 64 - in_slot;
    if (n > len - j) n = len - j;
    memcpy(d + j, (const char *)&b->ev[(pos + 1 + off / 64) & b->mask] + in_slot,
           n);
    j += n, off += n;
  }
}

static void pycode_event(struct gp_tbuf *b, const struct gp_event *e,
                         uint64_t pos) {
  if (code_id(e->aux, e->stream, 0)) return; /* another thread sent it */
  struct pycode_head hd;
  if (e->bytes < sizeof hd) return;
  get_payload(b, pos, 0, &hd, sizeof hd);
  if (sizeof hd + (size_t)hd.file_len + hd.name_len + hd.lt_len != e->bytes)
    return;
  static char file[512], name[256];
  static uint8_t lt[16384];
  if (hd.file_len > sizeof file || hd.name_len > sizeof name ||
      hd.lt_len > sizeof lt)
    return;
  get_payload(b, pos, sizeof hd, file, hd.file_len);
  get_payload(b, pos, sizeof hd + hd.file_len, name, hd.name_len);
  get_payload(b, pos, sizeof hd + hd.file_len + hd.name_len, lt, hd.lt_len);
  uint32_t id = code_id(e->aux, e->stream, 1);
  if (!id) return;
  gp_writer *w = gp_records_writer();
  struct gpuphase_record r = {.kind = GPUPHASE_REC_PYCODE};
  r.u.pycode.code = id;
  r.u.pycode.file = w && hd.file_len ? gp_writer_intern(w, file, hd.file_len) : 0;
  r.u.pycode.name = w && hd.name_len ? gp_writer_intern(w, name, hd.name_len) : 0;
  r.u.pycode.first_line = (uint64_t)hd.first_line;
  r.u.pycode.linetable.data = (const char *)lt;
  r.u.pycode.linetable.len = hd.lt_len;
  r.u.pycode.py_version = hd.py_version;
  gp_records_add(0, &r);
}

static int in_eval(uintptr_t pc) {
  for (int i = 0; i < W.neval; i++)
    if (pc - 1 >= W.eval_lo[i] && pc - 1 < W.eval_hi[i]) return 1;
  return 0;
}

struct pathent {
  uint32_t kind, flags;
  uint64_t module, pc;
};

static void stack_event(struct gp_tbuf *b, const struct gp_event *e,
                        uint64_t pos) {
  uint32_t nn = (uint32_t)e->bytes, np = e->grid;
  uint16_t id = (uint16_t)e->aux;
  if (nn > GP_STK_DEPTH || np > GP_STK_PY_MAX || !id || id >= GP_STK_IDS ||
      !b->stk_nodes)
    return;
  if (!W.eval_asked) {
    W.eval_asked = 1;
    W.neval = S.python && gp_py_eval_ranges
                  ? gp_py_eval_ranges(W.eval_lo, W.eval_hi, 8)
                  : 0;
    if (W.neval < 0 || W.neval > 8) W.neval = 0;
  }
  uint64_t t_ns = gp_clock_to_ns(e->t0);
  uintptr_t pcs[GP_STK_DEPTH];
  struct gp_pyframe py[GP_STK_PY_MAX];
  get_payload(b, pos, 0, pcs, (size_t)nn * 8);
  get_payload(b, pos, (size_t)nn * 8, py, (size_t)np * sizeof *py);
  /* the path, innermost first: each run of Python frames (ended by its
   * ENTRY frame) just inside the k-th evaluation-loop native frame, the
   * runs left over outside the outermost native frame */
  struct pathent path[GP_STK_DEPTH + GP_STK_PY_MAX + 1];
  uint32_t len = 0, p = 0;
  for (uint32_t i = 0; i < nn; i++) {
    if (np && p < np && in_eval(pcs[i]))
      while (p < np) {
        uint32_t fl = py[p].flags & GPUPHASE_FRAME_ENTRY;
        path[len++] = (struct pathent){GPUPHASE_FRAME_PYTHON, fl,
                                       code_id(py[p].code, py[p].tag, 0),
                                       py[p].unit};
        p++;
        if (fl) break;
      }
    struct module *m = module_of(pcs[i], t_ns);
    if (m && !m->written) {
      if (m->start_ns > t_ns) m->start_ns = t_ns;
      write_module(m);
    }
    path[len++] = (struct pathent){GPUPHASE_FRAME_NATIVE, 0, m ? m->id : 0,
                                   m ? pcs[i] - m->base - 1 : pcs[i] - 1};
  }
  for (; p < np; p++)
    path[len++] = (struct pathent){GPUPHASE_FRAME_PYTHON,
                                   py[p].flags & GPUPHASE_FRAME_ENTRY,
                                   code_id(py[p].code, py[p].tag, 0),
                                   py[p].unit};
  if (e->copy_kind) path[len++] = (struct pathent){GPUPHASE_FRAME_TRUNCATED, 0, 0, 0};
  uint64_t parent = 0;
  for (uint32_t k = len; k-- > 0;) {
    parent = node(parent, path[k].kind, path[k].module, path[k].pc,
                  path[k].flags);
    if (!parent) break;
  }
  b->stk_nodes[id] = (uint32_t)parent;
}

uint64_t gp_stacks_drain_event(struct gp_tbuf *b, const struct gp_event *e,
                               uint64_t pos) {
  uint64_t used;
  if (e->type == GP_EV_STACK) {
    used = 1 + (e->bytes * 8 + (uint64_t)e->grid * sizeof(struct gp_pyframe) + 63) / 64;
    if (W.nodes) stack_event(b, e, pos);
  } else {
    used = 1 + (e->bytes + 63) / 64;
    if (W.codes) pycode_event(b, e, pos);
  }
  return used;
}

void gp_stacks_writer_poll(void) {
  if (!W.mods || S.mode == GP_STK_OFF) return;
  unw_verify();
  /* time first, then the count: an object added in between shows */
  uint64_t now_ns = gp_clock_to_ns(gp_now());
  if (loader_adds() == W.adds_scanned) W.stable_ns = now_ns;
  take_gone();
}
