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
/* The default number of threads: the CPUs this process may run on (its
 * affinity), no more than its cgroups' CPU quota allows (gp_cpu_quota). */
int gp_par_default(void);
/* The CPUs that the CPU quotas of the process's cgroups grant, rounded
 * up: the smallest over its cgroup and the cgroup's ancestors, in the v2
 * hierarchy (cpu.max) and in v1's cpu controller (cpu.cfs_quota_us /
 * cpu.cfs_period_us), each found through /proc/self/cgroup and
 * /proc/self/mountinfo. 0 when no quota applies or none can be read.
 * root is prepended to every path read ("" for the real ones; tests use
 * a directory made to look like one). */
int gp_cpu_quota(const char *root);

#endif
