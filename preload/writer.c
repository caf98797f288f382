/* The writer thread: drains the per-thread rings and CUPTI's buffers on a
 * timer or when a producer rings, writes compressed frames at the flush
 * interval, and the summary at the end. Everything costly that the hot
 * path avoided happens here (records.c), never on an application thread. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_apitab.h"
#include "gp_clock.h"
#include "gp_config.h"
#include "gp_cupti.h"
#include "gp_output.h"
#include "gp_pmsample.h"
#include "gp_records.h"
#include "gp_stacks.h"
#include "gp_rings.h"
#include "gp_lifecycle.h"
#include "gp_sampler.h"
#include "gp_settings.h"
#include "gp_signals.h"
#include "gp_writer_thread.h"

#define NOTE_MAX 16

struct note {
  uint64_t ns;
  int on;
  char reason[200];
};

static struct {
  struct gp_output out;
  pthread_t thread;
  int running; /* thread started and not joined */
  pthread_mutex_t lock; /* notes only */
  _Atomic int stop_req;
  _Atomic int deliver_sig; /* sent to the process once the trace is done */
  struct note notes[NOTE_MAX];
  int n_notes;
  int degraded;
  _Atomic int cupti_on; /* set on the first CUDA call's thread */
  uint64_t last_flush_ns;
} W = {.lock = PTHREAD_MUTEX_INITIALIZER};

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
        gp_writer_intern(W.out.w, local[i].reason, strlen(local[i].reason));
    gp_records_add(0, &r);
  }
}

/* ---- the thread ---- */
/* Frames to the file; when it takes no more (output.c said why), the
 * records that follow are refused and counted. */
static void flush_file(void) {
  if (gp_output_flush(&W.out, gp_records_added()) != 0)
    gp_records_retarget(W.out.w);
}

static void pass(int flush) {
  gp_clock_calibrate();
  write_notes();
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) gp_records_drain(b);
  gp_records_start_lost(atomic_load(&gp_start_lost));
  gp_stacks_writer_poll();
  gp_pmsample_drain();
  gp_sampler_poll();
  if (W.cupti_on || gp_cupti_wanted()) {
    if (flush) gp_cupti_flush_buffers(0);
    gp_cupti_consume(gp_records_activity, NULL);
    gp_records_cupti_dropped(gp_cupti_dropped());
  }
  if (flush) flush_file();
}

/* The last pass, while the application still records: device records
 * first, then the rings. Every device record written then belongs to a
 * call that had started, so that call's own record is drained after it or,
 * the call still under way, counted lost (gp_records_settle). */
static void final_pass(void) {
  gp_clock_calibrate();
  write_notes();
  if (W.cupti_on || gp_cupti_wanted()) {
    gp_cupti_flush_buffers(1);
    gp_cupti_consume(gp_records_activity, NULL);
    gp_records_cupti_dropped(gp_cupti_dropped());
  }
  gp_pmsample_end(); /* after the device records, before the last flush */
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) gp_records_settle(b);
  gp_records_start_lost(atomic_load(&gp_start_lost));
  gp_sampler_finish(); /* after the devices' last records are described */
  gp_stacks_writer_poll();
  write_notes();
  flush_file();
}

/* The summary, written by this thread (never by the one that asked to
 * stop, which may be in a signal handler), and the file closed. */
static void finish(void) {
  struct gpuphase_summary sum = {0};
  sum.events = gp_writer_events(W.out.w);
  sum.lost = gp_records_lost() + gp_rings_lost_no_buffer();
  sum.flags = (W.degraded ? GPUPHASE_FLAG_DEGRADED : 0) |
              (sum.lost ? GPUPHASE_FLAG_LOST : 0);
  sum.end = gp_mono_ns();
  gp_output_close(&W.out, &sum, gp_records_added());
  gp_records_end();
}

/* ---- fork ----
 * A pass allocates (the trace's buffers and string arenas grow, zstd sizes
 * its workspace), and so does a sanitizer's runtime while it starts the
 * thread, before thread_main runs. A fork while this thread is inside the
 * allocator leaves the child with an allocator lock that no thread of the
 * child will release, unless the allocator takes its locks around fork
 * itself: glibc's malloc does, the AddressSanitizer runtime of GCC 12 does
 * not, and the child's first allocation of that size then waits for ever.
 * So a pass holds pass_lock, and fork first waits for the thread to have
 * started and then takes pass_lock (pthread_atfork), both within
 * FORK_WAIT_MS: the child then starts with this thread between two
 * passes. Past that wait the fork goes on as it would without it, and the
 * child says so on stderr (one line). */
#define FORK_WAIT_MS 200
#define FORK_WAIT_TEXT "200 ms" /* for the child's line: no formatting there */
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER;
static int fork_locked, fork_settled;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int thread_starting; /* created, thread_main not yet running */

static void fork_prepare(void) {
  int saved = errno;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_nsec += FORK_WAIT_MS * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&start_lock);
  while (thread_starting &&
         pthread_cond_timedwait(&start_cond, &start_lock, &dl) != ETIMEDOUT)
    ;
  fork_settled = !thread_starting;
  pthread_mutex_unlock(&start_lock);
  fork_locked = pthread_mutex_timedlock(&pass_lock, &dl) == 0;
  fork_settled &= fork_locked;
  errno = saved;
}
static void fork_parent(void) {
  if (fork_locked) pthread_mutex_unlock(&pass_lock);
}
static void fork_child(void) {
  /* the thread is the parent's */
  pthread_mutex_init(&pass_lock, NULL);
  pthread_mutex_init(&start_lock, NULL);
  pthread_cond_init(&start_cond, NULL);
  thread_starting = 0;
  if (!fork_settled) {
    int saved = errno;
    gp_warn("forked while the trace writer was busy (waited " FORK_WAIT_TEXT
            "): an allocator that is not fork-safe may block this child");
    errno = saved;
  }
}
static void fork_arm(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void *thread_main(void *arg) {
  (void)arg;
  gp_ts.internal = 1;
  gp_ts.depth = 1;
  atomic_fetch_add(&gp_own_threads, 1);
  pthread_mutex_lock(&start_lock);
  thread_starting = 0;
  pthread_cond_broadcast(&start_cond);
  pthread_mutex_unlock(&start_lock);
  int alone = 0;
  for (;;) {
    uint32_t seen = gp_doorbell_seen();
    /* Wakes early when a producer or a stop request rings. */
    if (!atomic_load(&W.stop_req)) gp_doorbell_wait(seen, gp_cfg.poll_ms);
    if (atomic_load(&W.stop_req)) break;
    uint64_t now = gp_mono_ns();
    if (gp_lifecycle_alone(now)) {
      alone = 1;
      break;
    }
    int flush = now - W.last_flush_ns >= gp_cfg.flush_ms * 1000000ull;
    pthread_mutex_lock(&pass_lock);
    pass(flush);
    pthread_mutex_unlock(&pass_lock);
    if (flush) W.last_flush_ns = now;
  }
  pthread_mutex_lock(&pass_lock);
  final_pass();
  finish();
  pthread_mutex_unlock(&pass_lock);
  int sig = atomic_load(&W.deliver_sig);
  if (sig) gp_signals_deliver(sig);
  atomic_fetch_sub(&gp_own_threads, 1);
  /* The main thread left by pthread_exit and the application's other
   * threads have all ended: end the process as glibc would have when the
   * last of them ended (gp_lifecycle_alone). exit() completes nothing more
   * here: the trace is complete and this thread is the writer. */
  if (alone) exit(0);
  return NULL;
}

void gp_writer_wake(void) {
  gp_doorbell_ring();
}

/* Starts the thread with every signal blocked: it must not inherit signals
 * the application blocks or receive its asynchronous signals. */
static int start_thread(void) {
  sigset_t all, old;
  pthread_once(&fork_once, fork_arm);
  pthread_mutex_lock(&start_lock);
  thread_starting = 1;
  pthread_mutex_unlock(&start_lock);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&W.thread, NULL, thread_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_mutex_lock(&start_lock);
    thread_starting = 0;
    pthread_mutex_unlock(&start_lock);
    gp_warn("cannot start the writer thread: %s; not recording", strerror(rc));
  }
  return rc;
}

int gp_writer_start(void) {
  gp_clock_start();
  if (gp_output_open(&W.out) != 0) return -1;
  if (gp_records_begin(W.out.w) != 0) {
    gp_output_close(&W.out, NULL, 0);
    return -1;
  }
  W.last_flush_ns = gp_mono_ns();
  atomic_store(&W.stop_req, 0);
  atomic_store(&W.deliver_sig, 0);
  if (start_thread() != 0) {
    gp_output_close(&W.out, NULL, 0);
    gp_records_end();
    return -1;
  }
  W.running = 1;
  gp_output_announce(&W.out);
  return 0;
}

/* Asks the thread for its last pass and the summary; waits for it without
 * end (timeout_ms < 0) or at most timeout_ms, after which it is left to
 * finish or to die with the process. */
void gp_writer_stop_deliver(int sig) {
  if (!W.running) return;
  atomic_store(&W.deliver_sig, sig);
  atomic_store(&W.stop_req, 1);
  gp_writer_wake();
}

void gp_writer_stop(int timeout_ms) {
  if (!W.running) return;
  if (pthread_equal(pthread_self(), W.thread)) return;
  atomic_store(&W.stop_req, 1);
  gp_writer_wake();
  if (timeout_ms < 0) {
    pthread_join(W.thread, NULL);
  } else {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    if (pthread_timedjoin_np(W.thread, NULL, &dl) != 0) return;
  }
  W.running = 0;
}

/* ---- CUPTI bridge ---- */
/* On the application thread, at the entry of a call we record (and of the
 * recorded calls it makes): the call is under way until published. */
static void hook_enter(uint32_t corr) {
  gp_ts.corr = corr;
  struct gp_tbuf *b = gp_ts.buf;
  if (b && gp_ts.depth != GP_DEPTH_LOST)
    atomic_store_explicit(
        &b->entered, atomic_load_explicit(&b->head, memory_order_relaxed) + 1,
        memory_order_release);
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

void gp_dev_stop(void) {
  gp_cupti_close();
  W.cupti_on = 0;
}

void gp_writer_child_reset(void) {
  /* The parent's writer thread does not exist here; its file belongs to
   * the parent. Forget both without touching them. */
  W.running = 0;
  gp_output_forget(&W.out);
  W.cupti_on = 0;
  W.n_notes = 0;
  W.degraded = 0;
  gp_records_reset();
  gp_pmsample_forget();
  gp_sampler_reset();
  pthread_mutex_init(&W.lock, NULL);
  atomic_store(&W.stop_req, 0);
  gp_cupti_forget();
  /* After a failed exec the rings stay (drained by the final pass); the
   * next writer must announce their threads again. */
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next) {
    b->announced = 0;
    b->lost_reported = atomic_load(&b->lost);
  }
}
