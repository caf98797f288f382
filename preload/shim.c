/* Process lifecycle of the preloaded library: the constructor, the lazy
 * start at the first CUDA call, exit, fatal signals and fork. It drives the
 * writer thread (writer.c) and hands out rings (rings.c).
 * Nothing here may change what the application observes: return values,
 * errno, signal dispositions chosen by the application, exit status. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gp_fd.h"
#include "gp_lifecycle.h"
#include "gp_pmsample.h"
#include "gp_rings.h"
#include "gp_sampler.h"
#include "gp_settings.h"
#include "gp_shim.h"
#include "gp_switch.h"
#include "gp_signals.h"
#include "gp_stacks.h"
#include "gp_writer_thread.h"

_Atomic int gp_state = GP_IDLE;
_Atomic int gp_fast_state = GP_IDLE;
_Atomic uint64_t gp_start_lost;

/* gp_state and gp_fast_state: the latter drops before and rises after the
 * former, so that it never says running when gp_state does not. */
static void set_state(int st) {
  if (st == GP_IDLE) atomic_store(&gp_start_lost, 0); /* a new trace's */
  if (st != GP_RUNNING) atomic_store(&gp_fast_state, st);
  atomic_store(&gp_state, st);
  if (st == GP_RUNNING && gp_clock_tsc) atomic_store(&gp_fast_state, st);
}
extern int gp_dlsym_ready; /* resolve.c */

static int disabled;      /* GPUPHASE_DISABLE=1 */
static _Atomic int deferred_sig; /* a signal the writer delivers (below) */
_Atomic int gp_dying; /* gp_shim.h: set with deferred_sig */
static int shutdown_done; /* the final flush ran */
static pthread_mutex_t shutdown_lock = PTHREAD_MUTEX_INITIALIZER;

static void atfork_child(void);

/* The process this memory belongs to (set at load and in a fork's child):
 * a vfork child runs in its parent's memory under another pid, and its
 * exec or _exit must not end the parent's trace. */
static pid_t owner_pid;
/* This thread is inside shutdown_all: an _exit or exec from a signal
 * handler that interrupted it goes straight through. */
static __thread int in_shutdown;

int gp_lifecycle_owner(void) {
  return (pid_t)syscall(SYS_getpid) == owner_pid;
}

/* ---- pthread_exit from main ----
 * glibc ends the process with exit(0) when its last thread ends, the main
 * thread included when it left by pthread_exit. Our threads (which block
 * every signal) would keep such a process alive for ever: the writer
 * watches for it once the main thread has left, and then completes the
 * trace and calls exit(0) itself. */
_Atomic int gp_own_threads;
static _Atomic int main_gone;

typedef void (*pthread_exit_fn)(void *);

GP_EXPORT void pthread_exit(void *retval) {
  static pthread_exit_fn real;
  if (gp_lifecycle_owner() && (pid_t)syscall(SYS_gettid) == owner_pid) {
    atomic_store(&main_gone, 1);
    gp_writer_wake();
  }
  if (!real) real = (pthread_exit_fn)dlsym(RTLD_NEXT, "pthread_exit");
  if (real) real(retval);
  syscall(SYS_exit, 0); /* only if libc's pthread_exit was not found */
  __builtin_unreachable();
}

/* Field n (from 1, as proc(5) numbers them) of a /proc stat file, after the
 * command name in parentheses; -1 when unreadable. */
static long stat_field(const char *path, int n, char *state) {
  char b[1024];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t len = read(fd, b, sizeof b - 1);
  close(fd);
  if (len <= 0) return -1;
  b[len] = 0;
  char *p = strrchr(b, ')');
  if (!p || p[1] != ' ' || !p[2]) return -1;
  p += 2; /* field 3, the state */
  if (state) *state = *p;
  for (int f = 3; f < n; f++) {
    p = strchr(p, ' ');
    if (!p) return -1;
    p++;
  }
  return strtol(p, NULL, 10);
}

int gp_lifecycle_alone(uint64_t now_ns) {
  static uint64_t last;
  if (!atomic_load(&main_gone) || !gp_lifecycle_owner() ||
      now_ns - last < 10000000ull)
    return 0;
  last = now_ns;
  /* num_threads counts the main thread while it is a zombie */
  long n = stat_field("/proc/self/stat", 20, NULL);
  if (n < 0 || n > atomic_load(&gp_own_threads) + 1) return 0;
  char path[64], st = 0;
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)owner_pid);
  /* still on its way out (its thread-specific data's destructors) */
  if (stat_field(path, 3, &st) < 0 || (st != 'Z' && st != 'X')) return 0;
  return 1;
}

/* GPUPHASE_DISABLE: 1 (true, yes, on) records nothing; 0 (false, no, off)
 * or empty records; anything else is ignored with a warning. */
static int disable_asked(void) {
  const char *d = getenv("GPUPHASE_DISABLE");
  if (!d || !*d) return 0;
  int on = gp_switch_word(d);
  if (on >= 0) return on;
  gp_warn("ignoring GPUPHASE_DISABLE=%s (expected 1 or 0)", d);
  return 0;
}

/* Runs before spawn.c's constructor (102), which copies the environment
 * with the run id in it. Environment only: no CUDA, no file, no thread. */
__attribute__((constructor(101))) static void gp_init(void) {
  int saved = errno;
  owner_pid = (pid_t)syscall(SYS_getpid);
  gp_settings_read();
  gp_pmsample_settings();
  if (disable_asked()) {
    disabled = 1;
    set_state(GP_STOPPED);
  } else {
    gp_settings_run_id();
  }
  pthread_atfork(NULL, NULL, atfork_child);
  __atomic_store_n(&gp_dlsym_ready, 1, __ATOMIC_RELEASE);
  errno = saved;
}

/* ---- start at the first CUDA call ---- */
static void shutdown_atexit(void);
static int complete_for_signal(int sig, int fault);

/* While the first CUDA call starts the writer: 0 until it runs, 1 once it
 * does, -1 if it could not start. A terminating signal that comes before
 * it runs waits for it (complete_for_signal), or, on the starting thread
 * itself, is deferred (start_sig) and sent once it runs. */
static _Atomic int writer_phase;
static _Atomic int start_sig;
static pthread_t starter;

/* The signal deferred while the writer started: the writer completes the
 * trace and delivers it; without a writer it is delivered now. */
static int start_deferred(void) {
  int sig = atomic_load(&start_sig);
  if (!sig) return 0;
  atomic_store(&deferred_sig, sig);
  if (atomic_load(&writer_phase) == 1) {
    gp_writer_stop_deliver(sig);
    return 1;
  }
  gp_signals_deliver(sig);
  /* still here (the program blocks it now, say): it goes on unrecorded */
  atomic_store(&deferred_sig, 0);
  atomic_store(&gp_dying, 0);
  gp_rings_dying(0);
  return 1;
}

static int start_process(void) {
  uint64_t since = gp_mono_ns();
  if (gp_rings_start() != 0) return -1;
  gp_stacks_start(); /* before the writer thread, which reads its settings */
  /* Armed before the file exists, so that a terminating signal never
   * leaves a file with a header only: one that comes while the file is
   * made and the writer starts (before, about 1 start in 75 of a soak's
   * children signalled at once) completes the trace once it runs, as does
   * one while CUPTI loads and initialises, which can take seconds. */
  starter = pthread_self();
  atomic_store(&writer_phase, 0);
  atomic_store(&start_sig, 0);
  gp_signals_arm(complete_for_signal);
  int rc = gp_writer_start();
  atomic_store(&writer_phase, rc == 0 ? 1 : -1);
  if (start_deferred()) return rc; /* the process is ending by it */
  if (rc != 0) return -1;
  /* CUPTI's loading and set-up (and the PM sampler's) may open
   * descriptors of their own: a closed 0, 1 or 2 is held meanwhile, so
   * that none of them lands there (gp_fd.h). */
  unsigned held = gp_fd_std_hold();
  /* CUPTI before anything else is enabled; it needs our thread marked
   * internal so its own CUDA calls are not recorded. */
  if (gp_cfg.cupti) gp_dev_start();
  else
    gp_writer_note_degraded(gp_mono_ns(), 1,
                            "CUPTI disabled by GPUPHASE_CUPTI=0");
  gp_pmsample_begin(); /* after CUPTI activity, when GPUPHASE_PM=1 */
  gp_fd_std_release(held);
  gp_sampler_start(since); /* device counters, on a thread of its own */
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
      set_state(ok ? GP_RUNNING : GP_STOPPED);
      st = ok ? GP_RUNNING : GP_STOPPED;
    } else {
      st = atomic_load(&gp_state);
    }
  }
  if (st == GP_STARTING) {
    /* Another thread's first call is setting up, which can take the whole
     * of CUPTI's initialisation: this call is not waited for but made
     * unrecorded, and counted lost (the writer's LOST record, source 3).
     * The calls it makes pass through too (depth raised; the wrapper's
     * gp_leave lowers it), so that none is recorded once running as a call
     * the program made; GP_DEPTH_LOST keeps the CUPTI callback from marking
     * it under way. */
    atomic_fetch_add_explicit(&gp_start_lost, 1, memory_order_relaxed);
    ts->depth = GP_DEPTH_LOST;
    errno = saved;
    return NULL;
  }
  if (st != GP_RUNNING) {
    errno = saved;
    return NULL;
  }
  if (ts->buf == NULL) {
    ts->buf = gp_ring_create();
    if (ts->buf == NULL) {
      errno = saved;
      return NULL;
    }
    gp_phase_flush_pending(ts->buf); /* ranges pushed before recording */
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
    gp_ts.buf = gp_ring_create();
    if (gp_ts.buf) gp_phase_flush_pending(gp_ts.buf);
    errno = saved;
  }
  return gp_ts.buf;
}

/* ---- shutdown: exit, _exit, atexit, terminating signals ---- */
static void shutdown_all(void) {
  if (in_shutdown || !gp_lifecycle_owner()) return;
  in_shutdown = 1;
  int saved = errno;
  /* A deferred signal is on its way: the process ends by it, not here (the
   * writer delivers it once the trace is complete). */
  if (atomic_load(&deferred_sig)) gp_writer_stop(-1);
  pthread_mutex_lock(&shutdown_lock);
  if (!shutdown_done && atomic_load(&gp_state) == GP_RUNNING) {
    shutdown_done = 1;
    int was = gp_ts.depth;
    gp_ts.depth = 1;
    /* Other threads go on recording while the writer's last pass takes
     * their calls (and counts the ones under way): stopped only after. */
    gp_writer_stop(-1);
    set_state(GP_STOPPED);
    gp_dev_stop();
    gp_ts.depth = was;
  }
  pthread_mutex_unlock(&shutdown_lock);
  errno = saved;
  in_shutdown = 0;
}

void gp_shutdown_for_exec(void) {
  shutdown_all();
}

/* exec failed: the process goes on; a later CUDA call opens a new trace. */
void gp_restart_after_exec(void) {
  if (in_shutdown || !gp_lifecycle_owner()) return;
  pthread_mutex_lock(&shutdown_lock);
  if (shutdown_done && !disabled && atomic_load(&gp_state) == GP_STOPPED) {
    gp_writer_child_reset();
    shutdown_done = 0;
    set_state(GP_IDLE);
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
/* quick_exit runs the at_quick_exit handlers and ends through the C
 * library's own _exit, which no wrapper sees */
EXIT_WRAPPER(quick_exit)

/* A terminating signal with the default action, on the thread it hit.
 * Inside a CUDA call, that thread may hold locks of the driver or CUPTI
 * that the writer thread needs: then the handler returns at once, the call
 * goes on, and the writer completes the trace and delivers the signal
 * (deferred_sig). Elsewhere the handler waits for the writer, a bounded
 * time, so that a stuck writer cannot keep the process from dying. Nothing
 * if another thread is already shutting down. */
#define SIGNAL_WAIT_MS 5000
#define START_WAIT_MS 2000
static int complete_for_signal(int sig, int fault) {
  if (!gp_lifecycle_owner()) return 0; /* a vfork child: the parent's trace */
  if (pthread_mutex_trylock(&shutdown_lock) != 0) return 0;
  int deferred = 0;
  int st = atomic_load(&gp_state);
  /* Starting, before the writer runs: see writer_phase. Once it runs, the
   * thread starting it, inside the program's first CUDA call, has its
   * depth raised, so that the writer completes the trace while it goes
   * on; another thread waits for it, as when running. */
  if (!shutdown_done && st == GP_STARTING && !atomic_load(&writer_phase)) {
    if (pthread_equal(pthread_self(), starter)) {
      /* inside the writer's start, which may hold a lock of the C
       * library's: start_process sends it on once the writer runs */
      if (!fault) {
        shutdown_done = 1;
        atomic_store(&start_sig, sig);
        atomic_store(&gp_dying, 1);
        gp_rings_dying(1);
        deferred = 1;
      }
      pthread_mutex_unlock(&shutdown_lock);
      return deferred;
    }
    /* another thread: the writer is about to run (a bounded wait) */
    for (int i = 0; i < START_WAIT_MS && !atomic_load(&writer_phase); i++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    if (atomic_load(&writer_phase) != 1) { /* none came: nothing to complete */
      pthread_mutex_unlock(&shutdown_lock);
      return 0;
    }
  }
  if (!shutdown_done && (st == GP_RUNNING || st == GP_STARTING)) {
    shutdown_done = 1;
    if (gp_ts.depth != 0 && !fault) {
      atomic_store(&deferred_sig, sig);
      atomic_store(&gp_dying, 1);
      gp_rings_dying(1);
      gp_writer_stop_deliver(sig);
      deferred = 1;
    } else {
      gp_ts.depth = 1;
      gp_writer_stop(SIGNAL_WAIT_MS);
      set_state(GP_STOPPED);
    }
  }
  pthread_mutex_unlock(&shutdown_lock);
  return deferred;
}

/* The writer delivers the deferred signal once the trace is complete (the
 * kernel timer armed with the deferral bounds the wait). errno is kept for
 * a handler that might run meanwhile. */
void gp_dying_wait(void) {
  for (;;) pause();
}

/* ---- fork: the child starts from scratch at its first CUDA call ---- */
static void atfork_child(void) {
  int saved = errno;
  owner_pid = (pid_t)syscall(SYS_getpid);
  gp_rings_after_fork();
  gp_stacks_after_fork();
  gp_phase_after_fork();
  pthread_mutex_init(&shutdown_lock, NULL);
  shutdown_done = 0;
  atomic_store(&deferred_sig, 0);
  atomic_store(&gp_dying, 0);
  atomic_store(&writer_phase, 0);
  atomic_store(&start_sig, 0);
  atomic_store(&main_gone, 0); /* this thread is the child's main thread */
  atomic_store(&gp_own_threads, 0);
  gp_writer_child_reset();
  set_state(disabled ? GP_STOPPED : GP_IDLE);
  errno = saved;
}
