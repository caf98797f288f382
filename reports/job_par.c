/* gp_par_for (job_par.h). */
#include "job_par.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

struct par {
  size_t n, next;
  pthread_mutex_t mu;
  void (*fn)(void *, size_t);
  void *ctx;
};

static void *worker(void *arg) {
  struct par *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next < p->n ? p->next++ : p->n;
    pthread_mutex_unlock(&p->mu);
    if (i == p->n) return NULL;
    p->fn(p->ctx, i);
  }
}

void gp_par_for(size_t n, int threads, void (*fn)(void *ctx, size_t i),
                void *ctx) {
  if (threads < 1) threads = 1;
  if ((size_t)threads > n) threads = (int)n;
  if (threads <= 1) {
    for (size_t i = 0; i < n; i++)
      fn(ctx, i);
    return;
  }
  struct par p = {n, 0, PTHREAD_MUTEX_INITIALIZER, fn, ctx};
  pthread_t *t = malloc((size_t)(threads - 1) * sizeof *t);
  int started = 0;
  while (t && started < threads - 1 &&
         pthread_create(&t[started], NULL, worker, &p) == 0)
    started++;
  worker(&p);
  for (int i = 0; i < started; i++)
    pthread_join(t[i], NULL);
  free(t);
  pthread_mutex_destroy(&p.mu);
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
