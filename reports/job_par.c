/* gp_par_for and gp_par_until (job_par.h). */
#include "job_par.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct par {
  size_t n, next;
  size_t failed; /* the lowest index whose fn failed (n: none) */
  pthread_mutex_t mu;
  void (*fn)(void *, size_t);     /* gp_par_for */
  int (*until)(void *, size_t);   /* gp_par_until */
  void *ctx;
};

static void *worker(void *arg) {
  struct par *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next < p->failed ? p->next++ : p->n;
    pthread_mutex_unlock(&p->mu);
    if (i == p->n) return NULL;
    if (p->fn) {
      p->fn(p->ctx, i);
    } else if (p->until(p->ctx, i)) {
      pthread_mutex_lock(&p->mu);
      if (i < p->failed) p->failed = i;
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static size_t run(struct par *p, int threads) {
  if (threads < 1) threads = 1;
  if ((size_t)threads > p->n) threads = (int)p->n;
  if (threads <= 1) {
    worker(p);
    pthread_mutex_destroy(&p->mu);
    return p->failed;
  }
  pthread_t *t = malloc((size_t)(threads - 1) * sizeof *t);
  int started = 0;
  while (t && started < threads - 1 &&
         pthread_create(&t[started], NULL, worker, p) == 0)
    started++;
  worker(p);
  for (int i = 0; i < started; i++)
    pthread_join(t[i], NULL);
  free(t);
  pthread_mutex_destroy(&p->mu);
  return p->failed;
}

void gp_par_for(size_t n, int threads, void (*fn)(void *ctx, size_t i),
                void *ctx) {
  struct par p = {n, 0, n, PTHREAD_MUTEX_INITIALIZER, fn, NULL, ctx};
  run(&p, threads);
}

size_t gp_par_until(size_t n, int threads, int (*fn)(void *ctx, size_t i),
                    void *ctx) {
  struct par p = {n, 0, n, PTHREAD_MUTEX_INITIALIZER, NULL, fn, ctx};
  return run(&p, threads);
}

int gp_par_default(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
