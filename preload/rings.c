/* Per-thread rings: a header per thread that records (reused after its
 * thread exited and the writer drained it), the ring memory itself, and
 * the futex word on which the writer thread waits. */
#include <pthread.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gp_rings.h"
#include "gp_threadname.h"
#include "gp_settings.h"
#include "gp_stacks.h"

GP_TLS struct gp_tstate gp_ts;

static _Atomic(struct gp_tbuf *) tbuf_head;
static _Atomic uint32_t tbuf_next_index;
static _Atomic uint64_t lost_no_buffer; /* threads that got no ring */
static pthread_key_t tbuf_key;
static _Atomic uint32_t doorbell; /* futex word: bumped to wake the writer */
/* Rings of exited threads the writer has not drained and freed yet. */
static _Atomic uint32_t dead_pending;
#define DEAD_WAKE 64

#define MAX_THREADS 65000

/* Every DEAD_WAKE exited threads the writer is woken to drain and free
 * their rings: a program that churns threads faster than the writer's
 * pace would otherwise hold many dead rings at once. */
static void tbuf_thread_exit(void *p) {
  struct gp_tbuf *b = p;
  gp_ts.buf = NULL;
  if (!b) return;
  atomic_store_explicit(&b->state, GP_TB_DEAD, memory_order_release);
  if ((atomic_fetch_add(&dead_pending, 1) + 1) % DEAD_WAKE == 0)
    gp_doorbell_ring();
}

int gp_rings_start(void) {
  return pthread_key_create(&tbuf_key, tbuf_thread_exit) == 0 ? 0 : -1;
}

struct gp_tbuf *gp_tbuf_list(void) {
  return atomic_load_explicit(&tbuf_head, memory_order_acquire);
}

void gp_tbuf_free(struct gp_tbuf *b) {
  atomic_fetch_sub(&dead_pending, 1);
  gp_stacks_ring_free(b);
  if (b->ev) munmap(b->ev, b->map_bytes);
  b->ev = NULL;
  atomic_store_explicit(&b->state, GP_TB_FREE, memory_order_release);
}

/* The ring's nudge mask when the process is not dying (gp_shim.h). */
static uint64_t nudge_mask(const struct gp_tbuf *b) {
  return (b->mask >> 3) & ~(uint64_t)1;
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
  size_t bytes = (slots + GP_RING_SPARE_SLOTS) * sizeof(struct gp_event);
  void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) return NULL;
  struct gp_tbuf *b = tbuf_claim();
  if (!b) {
    munmap(ring, bytes);
    return NULL;
  }
  b->ev = ring;
  gp_stacks_ring_init(b); /* a failure leaves the thread without stacks */
  b->mask = slots - 1;
  __atomic_store_n(&b->nudge, nudge_mask(b), __ATOMIC_RELAXED);
  /* a dying process (gp_rings_dying may have passed this ring already) */
  if (atomic_load(&gp_dying)) __atomic_store_n(&b->nudge, 0, __ATOMIC_RELAXED);
  b->map_bytes = bytes;
  atomic_store(&b->head, 0);
  atomic_store(&b->tail, 0);
  atomic_store(&b->limit, b->mask);
  atomic_store(&b->lost, 0);
  atomic_store(&b->entered, 0);
  b->lost_reported = 0;
  b->announced = 0;
  b->tid = (pid_t)syscall(SYS_gettid);
  b->pthread = (unsigned long)pthread_self();
  gp_tbuf_take_name(b);
  atomic_store_explicit(&b->state, GP_TB_ALIVE, memory_order_release);
  pthread_setspecific(tbuf_key, b);
  return b;
}

struct gp_tbuf *gp_ring_create(void) {
  struct gp_tbuf *b = tbuf_create();
  if (b == NULL) atomic_fetch_add(&lost_no_buffer, 1);
  /* the calling thread's: its first launch decides its call site in the
   * cold path (gp_stacks.h), which starts the countdown */
  gp_ts.stk.countdown = 1;
  return b;
}

uint64_t gp_rings_lost_no_buffer(void) {
  return atomic_load(&lost_no_buffer);
}

void gp_ring_nudge(struct gp_tbuf *b, uint64_t head) {
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
  if (head - t > (b->mask >> 2)) gp_doorbell_ring();
  /* the process is ending by a signal the writer delivers once the trace
   * is complete: an application thread does no more of its work */
  if (GP_UNLIKELY(atomic_load_explicit(&gp_dying, memory_order_relaxed)) &&
      !gp_ts.internal) {
    gp_ts.depth = 0;
    gp_dying_wait();
  }
}

void gp_rings_dying(int dying) {
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next)
    __atomic_store_n(&b->nudge, dying ? 0 : nudge_mask(b), __ATOMIC_RELAXED);
}

void gp_ring_full(struct gp_tbuf *b) {
  atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
  /* In a wrapper, which asks for its slot before the real call: the call
   * is already counted lost, which tells the CUPTI callback during it (and
   * during the calls it makes) not to mark it under way (writer.c). */
  if (gp_ts.depth == 1) gp_ts.depth = GP_DEPTH_LOST;
}

void gp_rings_after_fork(void) {
  /* Only the forking thread exists here; rings of the parent's threads are
   * copies nobody will drain: give them back. */
  struct gp_tbuf *b = atomic_load(&tbuf_head);
  while (b) {
    struct gp_tbuf *next = b->next;
    gp_stacks_ring_free(b);
    if (b->ev) munmap(b->ev, b->map_bytes);
    munmap(b, sizeof *b);
    b = next;
  }
  atomic_store(&tbuf_head, NULL);
  atomic_store(&tbuf_next_index, 0);
  atomic_store(&dead_pending, 0);
  gp_ts.buf = NULL;
  gp_ts.depth = 0;
}

uint32_t gp_doorbell_seen(void) {
  return atomic_load(&doorbell);
}

/* Returns when the doorbell rang after `seen` was read, or after ms. */
void gp_doorbell_wait(uint32_t seen, unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000,
                        .tv_nsec = (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, &doorbell, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

/* Any thread, cheap: one atomic add and one futex wake syscall. */
void gp_doorbell_ring(void) {
  atomic_fetch_add(&doorbell, 1);
  syscall(SYS_futex, &doorbell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
