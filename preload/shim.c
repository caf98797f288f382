/* Process lifecycle of the preloaded library: configuration, lazy start at
 * the first CUDA call, per-thread rings, fork, exit and fatal signals.
 * Nothing here may change what the application observes: return values,
 * errno, signal dispositions chosen by the application, exit status. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gp_apitab.h"
#include "gp_shim.h"

_Atomic int gp_state = GP_IDLE;
extern int gp_dlsym_ready; /* resolve.c */
int gp_clock_tsc;
GP_TLS struct gp_tstate gp_ts;
struct gp_config gp_cfg;

static _Atomic(struct gp_tbuf *) tbuf_head;
static _Atomic uint32_t tbuf_next_index;
static _Atomic uint64_t lost_no_buffer; /* threads that got no ring */
static pthread_key_t tbuf_key;
static int disabled;      /* GPUPHASE_DISABLE=1 */
static int shutdown_done; /* the final flush ran */
static pthread_mutex_t shutdown_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_THREADS 65000

void gp_warn(const char *fmt, ...) {
  if (gp_cfg.quiet) return;
  char line[512];
  int n = snprintf(line, sizeof line, "gpuphase: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  size_t len = strlen(line);
  if (len + 1 < sizeof line) line[len++] = '\n';
  ssize_t w = write(2, line, len);
  (void)w;
}

/* ---- configuration (constructor: environment only) ---- */
static unsigned env_uint(const char *name, unsigned def, unsigned lo,
                         unsigned hi) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  unsigned long x = strtoul(v, &end, 10);
  if (*end || x < lo || x > hi) {
    gp_warn("ignoring %s=%s (expected %u..%u)", name, v, lo, hi);
    return def;
  }
  return (unsigned)x;
}

static void copy_env(char *dst, size_t cap, const char *name,
                     const char *def) {
  const char *v = getenv(name);
  snprintf(dst, cap, "%s", (v && *v) ? v : def);
}

/* A decimal count; empty or unset: def (0 reads as 0: none). */
static uint64_t env_u64(const char *name, uint64_t def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || errno || v[0] < '0' || v[0] > '9') {
    gp_warn("ignoring %s=%s (expected a whole number)", name, v);
    return def;
  }
  return (uint64_t)x;
}

/* 64 random bits for a run id: getrandom, else whatever differs between
 * two starts (clocks, pid, where the stack landed), mixed by splitmix64. */
static uint64_t random_u64(void) {
  uint64_t x = 0;
  if (getrandom(&x, sizeof x, GRND_NONBLOCK) == (ssize_t)sizeof x && x)
    return x;
  struct timespec a, b;
  clock_gettime(CLOCK_REALTIME, &a);
  clock_gettime(CLOCK_MONOTONIC, &b);
  x = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
  x ^= ((uint64_t)b.tv_nsec << 20) ^ ((uint64_t)getpid() << 40) ^
       (uint64_t)(uintptr_t)&a;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Every process of one run carries the same id in its header: the first
 * profiled process that finds none makes one and puts it in its own
 * environment, which forked children share and exec'd ones inherit
 * (spawn.c puts it back where a program rebuilt the environment: it is
 * in place before gp_spawn_init takes its copy). */
static void setup_run_id(void) {
  if (gp_cfg.run_id[0]) return;
  snprintf(gp_cfg.run_id, sizeof gp_cfg.run_id, "%016llx",
           (unsigned long long)random_u64());
  if (setenv("GPUPHASE_RUN_ID", gp_cfg.run_id, 1) != 0)
    gp_warn("cannot set GPUPHASE_RUN_ID: %s; child processes get their own",
            strerror(errno));
}

static void read_config(void) {
  gp_cfg.quiet = env_uint("GPUPHASE_QUIET", 0, 0, 1);
  copy_env(gp_cfg.output, sizeof gp_cfg.output, "GPUPHASE_OUTPUT",
           "gpuphase-%h-%p.gph");
  gp_cfg.ring_bytes =
      (size_t)env_uint("GPUPHASE_BUFFER_KB", 4096, 64, 1u << 20) * 1024;
  gp_cfg.flush_ms = env_uint("GPUPHASE_FLUSH_MS", 500, 10, 500);
  gp_cfg.poll_ms = gp_cfg.flush_ms < 10 ? gp_cfg.flush_ms : 10;
  gp_cfg.cupti = env_uint("GPUPHASE_CUPTI", 1, 0, 1);
  copy_env(gp_cfg.cupti_lib, sizeof gp_cfg.cupti_lib, "GPUPHASE_CUPTI_LIB",
           "");
  /* a longer id is cut the same way in every process of the run */
  copy_env(gp_cfg.run_id, sizeof gp_cfg.run_id, "GPUPHASE_RUN_ID", "");
  gp_cfg.step_items = env_u64("GPUPHASE_STEP_ITEMS", 0);
}

static void atfork_child(void);

__attribute__((constructor)) static void gp_init(void) {
  int saved = errno;
  read_config();
  const char *d = getenv("GPUPHASE_DISABLE");
  if (d && *d && strcmp(d, "0") != 0) {
    disabled = 1;
    atomic_store(&gp_state, GP_STOPPED);
  } else {
    setup_run_id();
  }
  pthread_atfork(NULL, NULL, atfork_child);
  gp_spawn_init();
  __atomic_store_n(&gp_dlsym_ready, 1, __ATOMIC_RELEASE);
  errno = saved;
}

/* ---- per-thread rings ---- */
static void tbuf_thread_exit(void *p) {
  struct gp_tbuf *b = p;
  if (b) atomic_store_explicit(&b->state, GP_TB_DEAD, memory_order_release);
  gp_ts.buf = NULL;
}

struct gp_tbuf *gp_tbuf_list(void) {
  return atomic_load_explicit(&tbuf_head, memory_order_acquire);
}

/* Writer side, after the last drain of a dead thread's ring. */
void gp_tbuf_free(struct gp_tbuf *b) {
  if (b->ev) munmap(b->ev, b->map_bytes);
  b->ev = NULL;
  atomic_store_explicit(&b->state, GP_TB_FREE, memory_order_release);
}

static struct gp_tbuf *tbuf_claim(void) {
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) {
    int expect = GP_TB_FREE;
    if (atomic_load_explicit(&b->state, memory_order_relaxed) == GP_TB_FREE &&
        atomic_compare_exchange_strong(&b->state, &expect, GP_TB_CLAIMED)) {
      /* The header of an exited thread is reused, but a new thread gets a
       * new index (while indices last), so that the trace and the report
       * keep threads apart. The writer does not look at a claimed header. */
      uint32_t idx = atomic_fetch_add(&tbuf_next_index, 1);
      if (idx < MAX_THREADS) b->index = idx;
      return b;
    }
  }
  uint32_t idx = atomic_fetch_add(&tbuf_next_index, 1);
  if (idx >= MAX_THREADS) return NULL;
  struct gp_tbuf *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return NULL;
  b->index = idx;
  atomic_store(&b->state, GP_TB_CLAIMED);
  struct gp_tbuf *old = atomic_load(&tbuf_head);
  do b->next = old;
  while (!atomic_compare_exchange_weak(&tbuf_head, &old, b));
  return b;
}

static struct gp_tbuf *tbuf_create(void) {
  size_t slots = 64;
  while (slots * sizeof(struct gp_event) < gp_cfg.ring_bytes) slots <<= 1;
  size_t bytes = slots * sizeof(struct gp_event);
  void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) return NULL;
  struct gp_tbuf *b = tbuf_claim();
  if (!b) {
    munmap(ring, bytes);
    return NULL;
  }
  b->ev = ring;
  b->mask = slots - 1;
  b->map_bytes = bytes;
  atomic_store(&b->head, 0);
  atomic_store(&b->tail, 0);
  atomic_store(&b->lost, 0);
  b->lost_reported = 0;
  b->announced = 0;
  b->tid = (pid_t)syscall(SYS_gettid);
  b->pthread = (unsigned long)pthread_self();
  atomic_store_explicit(&b->state, GP_TB_ALIVE, memory_order_release);
  pthread_setspecific(tbuf_key, b);
  return b;
}

void gp_ring_nudge(struct gp_tbuf *b, uint64_t head) {
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
  if (head - t > (b->mask >> 2)) gp_writer_wake();
}

void gp_ring_full(struct gp_tbuf *b) {
  atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
}

/* ---- start at the first CUDA call ---- */
static void shutdown_atexit(void);
static void install_signal_handlers(void);

static int start_process(void) {
  if (pthread_key_create(&tbuf_key, tbuf_thread_exit) != 0) return -1;
  if (gp_writer_start() != 0) return -1;
  /* CUPTI before anything else is enabled; it needs our thread marked
   * internal so its own CUDA calls are not recorded. */
  if (gp_cfg.cupti) gp_dev_start();
  else
    gp_writer_note_degraded(gp_mono_ns(), 1,
                            "CUPTI disabled by GPUPHASE_CUPTI=0");
  install_signal_handlers();
  atexit(shutdown_atexit);
  return 0;
}

struct gp_tstate *gp_enter_slow(void) {
  struct gp_tstate *ts = &gp_ts;
  if (ts->depth || ts->internal) return NULL;
  int saved = errno;
  int st = atomic_load(&gp_state);
  if (st == GP_IDLE) {
    int expect = GP_IDLE;
    if (atomic_compare_exchange_strong(&gp_state, &expect, GP_STARTING)) {
      ts->depth = 1; /* our setup's own CUDA calls pass through */
      int ok = start_process() == 0;
      ts->depth = 0;
      atomic_store(&gp_state, ok ? GP_RUNNING : GP_STOPPED);
      st = ok ? GP_RUNNING : GP_STOPPED;
    } else {
      st = atomic_load(&gp_state);
    }
  }
  if (st != GP_RUNNING) {
    errno = saved;
    return NULL;
  }
  if (ts->buf == NULL) {
    ts->buf = tbuf_create();
    if (ts->buf == NULL) {
      atomic_fetch_add(&lost_no_buffer, 1);
      errno = saved;
      return NULL;
    }
  }
  errno = saved;
  ts->depth = 1;
  ts->corr = 0;
  return ts;
}

/* A thread that marks ranges before (or without) any CUDA call of its own
 * gets its ring here; never starts the profiler. */
struct gp_tbuf *gp_ring_of_thread(void) {
  if (atomic_load_explicit(&gp_state, memory_order_relaxed) != GP_RUNNING)
    return NULL;
  if (gp_ts.buf == NULL) {
    int saved = errno;
    gp_ts.buf = tbuf_create();
    if (gp_ts.buf == NULL) atomic_fetch_add(&lost_no_buffer, 1);
    errno = saved;
  }
  return gp_ts.buf;
}

uint64_t gp_lost_no_buffer(void) {
  return atomic_load(&lost_no_buffer);
}

/* ---- shutdown: exit, _exit, atexit, fatal signals ---- */
static void shutdown_all(void) {
  int saved = errno;
  pthread_mutex_lock(&shutdown_lock);
  if (!shutdown_done && atomic_load(&gp_state) == GP_RUNNING) {
    shutdown_done = 1;
    int was = gp_ts.depth;
    gp_ts.depth = 1;
    gp_dev_flush(1);
    atomic_store(&gp_state, GP_STOPPED);
    gp_writer_stop(1);
    gp_dev_stop();
    gp_ts.depth = was;
  }
  pthread_mutex_unlock(&shutdown_lock);
  errno = saved;
}

void gp_shutdown_for_exec(void) {
  shutdown_all();
}

/* exec failed: the process goes on; a later CUDA call opens a new trace. */
void gp_restart_after_exec(void) {
  pthread_mutex_lock(&shutdown_lock);
  if (shutdown_done && !disabled && atomic_load(&gp_state) == GP_STOPPED) {
    gp_writer_child_reset();
    /* The rings stay (drained by the final pass); the next writer must
     * announce their threads again. */
    for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) {
      b->announced = 0;
      b->lost_reported = atomic_load(&b->lost);
    }
    shutdown_done = 0;
    atomic_store(&gp_state, GP_IDLE);
  }
  pthread_mutex_unlock(&shutdown_lock);
}

static void shutdown_atexit(void) {
  shutdown_all();
}

__attribute__((destructor)) static void gp_fini(void) {
  shutdown_all();
}

typedef void (*exit_fn)(int);

GP_EXPORT void exit(int status) {
  static exit_fn real;
  shutdown_all();
  if (!real) real = (exit_fn)dlsym(RTLD_NEXT, "exit");
  if (real) real(status);
  syscall(SYS_exit_group, status); /* only if libc's exit was not found */
  __builtin_unreachable();
}

#define EXIT_WRAPPER(NAME)                                                     \
  GP_EXPORT void NAME(int status) {                                            \
    static exit_fn real;                                                       \
    shutdown_all();                                                            \
    if (!real) real = (exit_fn)dlsym(RTLD_NEXT, #NAME);                        \
    if (real) real(status);                                                    \
    syscall(SYS_exit_group, status);                                           \
    __builtin_unreachable();                                                   \
  }
EXIT_WRAPPER(_exit)
EXIT_WRAPPER(_Exit)

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE,
                                    SIGILL,  SIGABRT, SIGTERM};
#define NSIG_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction old_actions[NSIG_FATAL];
static int installed[NSIG_FATAL];

static void on_fatal_signal(int sig) {
  /* Best effort: the writer thread does the work; we only wait for it if
   * nobody else is shutting down already. */
  if (pthread_mutex_trylock(&shutdown_lock) == 0) {
    if (!shutdown_done && atomic_load(&gp_state) == GP_RUNNING) {
      shutdown_done = 1;
      gp_ts.depth = 1;
      atomic_store(&gp_state, GP_STOPPED);
      gp_writer_stop(0);
    }
    pthread_mutex_unlock(&shutdown_lock);
  }
  for (size_t i = 0; i < NSIG_FATAL; i++) {
    if (fatal_signals[i] == sig && installed[i]) {
      sigaction(sig, &old_actions[i], NULL);
      installed[i] = 0;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
}

static void install_signal_handlers(void) {
  for (size_t i = 0; i < NSIG_FATAL; i++) {
    struct sigaction cur;
    if (sigaction(fatal_signals[i], NULL, &cur) != 0) continue;
    /* Only where the application kept the default: its own handlers win. */
    if (cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO)) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    old_actions[i] = cur;
    if (sigaction(fatal_signals[i], &sa, NULL) == 0) installed[i] = 1;
  }
}

/* ---- fork: the child starts from scratch at its first CUDA call ---- */
static void atfork_child(void) {
  int saved = errno;
  /* Only the forking thread exists here; rings of the parent's threads are
   * copies nobody will drain: give them back. */
  struct gp_tbuf *b = atomic_load(&tbuf_head);
  while (b) {
    struct gp_tbuf *next = b->next;
    if (b->ev) munmap(b->ev, b->map_bytes);
    munmap(b, sizeof *b);
    b = next;
  }
  atomic_store(&tbuf_head, NULL);
  atomic_store(&tbuf_next_index, 0);
  gp_ts.buf = NULL;
  gp_ts.depth = 0;
  pthread_mutex_init(&shutdown_lock, NULL);
  shutdown_done = 0;
  gp_writer_child_reset();
  for (size_t i = 0; i < NSIG_FATAL; i++) installed[i] = 0;
  atomic_store(&gp_state, disabled ? GP_STOPPED : GP_IDLE);
  errno = saved;
}
