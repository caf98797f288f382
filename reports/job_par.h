/* Work spread over threads: the files of a job read at once, one file per
 * thread at a time. */
#ifndef GP_JOB_PAR_H
#define GP_JOB_PAR_H

#include <stddef.h>

/* Calls fn(ctx, i) once for every i in [0, n), on up to `threads` threads
 * (the caller's among them), each taking the lowest index not yet taken.
 * fn must not depend on the order. When no thread can be started the
 * caller does it all. */
void gp_par_for(size_t n, int threads, void (*fn)(void *ctx, size_t i),
                void *ctx);
/* gp_par_for for work that stops at a failure: fn returns 0, or non-zero
 * when i failed; no index after the lowest failed one is started (those
 * under way finish). Returns the lowest failed index, n if none. */
size_t gp_par_until(size_t n, int threads, int (*fn)(void *ctx, size_t i),
                    void *ctx);
/* The default number of threads: the CPUs this process may run on. */
int gp_par_default(void);

#endif
