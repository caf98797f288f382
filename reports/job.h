/* The job view: the processes of one job (its ranks) side by side, their
 * clocks aligned, and the stragglers the others wait for at each
 * collective. Built from the per-process results and one more read of each
 * trace for its kernels' times. Rules and a worked example: docs/jobs.md;
 * JSON: docs/report-json.md ("job"). */
#ifndef GP_JOB_H
#define GP_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct gp_json;

/* The default communication-kernel rule: the name (a mangled name's
 * "_Z<length>" prefix skipped) starts with "nccl" and contains "Kernel":
 * ncclKernel_*, ncclDevKernel_*, nccl*Kernel*. */
#define GP_JOB_COMM_DEFAULT "nccl*Kernel*"

struct gp_job_opts {
  const char *comm; /* --comm-kernels: comma-separated globs; NULL default */
  int threads;      /* files read at once (-j); < 1: one */
};

/* 1 when name is a communication kernel under the globs (NULL: default). */
int gp_job_is_comm(const char *name, const char *globs);
/* NULL, or why the globs are unusable (an empty pattern). */
const char *gp_job_comm_check(const char *globs);

/* What the job view needs of one trace beyond its result: the header's
 * clock pair, its communication kernels in start order, and its compute
 * kernels' time by name. Collected from the trace (gp_job_collect_all) or
 * read from a summary (job_summary.c). */
struct gp_job_coll {
  uint64_t start, end;
};

struct gp_job_kname {
  char *name;
  uint64_t ns_all;   /* compute-kernel time over the whole trace */
  uint64_t ns_steps; /* ... inside the trace's own measured steps */
};

struct gp_job_input {
  uint64_t start_mono_ns, start_real_ns;
  struct gp_job_coll *c;
  size_t nc;
  struct gp_job_kname *kn;
  size_t nkn;
};

void gp_job_input_free(struct gp_job_input *in); /* its arrays */

/* Index of the measured step of s (steps [from, to), sorted by start)
 * holding t, else -1. *hint carries the search from one call to the next
 * (0 at first): calls with t in increasing order look at a step or two. */
long gp_job_step_of(const struct gp_steps_res *s, size_t from, size_t to,
                    uint64_t t, size_t *hint);

struct gp_job_rank {
  size_t proc;  /* index into the processes given to gp_job_build */
  int64_t rank; /* -1: unknown (then its position among the files) */
  const char *host, *file;
  int64_t gpu; /* ordinal of the GPU with the most kernel time, -1 none */
  size_t gpu_idx;
  const char *gpu_name;
  size_t host_idx;
  size_t steps; /* measured steps */
  uint64_t step_p50, step_p95;
  double cat[GP_CAT_N]; /* ns per unit, summed over its GPUs */
  double compute;       /* compute-kernel (not communication) ns per unit */
  uint64_t ncomm;       /* communication kernels in the trace */
  uint64_t comm_ns, wait_ns; /* over the counted collectives */
  uint64_t last_count, others_wait_ns;
  /* units in which the others waited for it 5 us each or more on average
   * (at the collectives it reached last), whether or not it was the
   * unit's straggler: >= last_count */
  uint64_t held_count;
  uint64_t steps_slowest; /* steps in which it was the slowest rank */
  int64_t clock_ns;       /* added to its times to put them on the job's
                             clock (the reference host's monotonic clock) */
  const struct gp_job_input *in;
  int ksteps;  /* its kernels' time: in its measured steps, else all */
  double kdiv; /* ... divided by this for per unit */
};

struct gp_job_host {
  char *name;
  int64_t header_ns;     /* realtime - monotonic of the header, against the
                            reference host's */
  int64_t correction_ns; /* from the collective ends, added on top */
  size_t samples;        /* collectives the correction is the median of */
  uint64_t residual_p50_ns, residual_max_ns; /* |end - reference end| after
                                                alignment, its ranks */
};

struct gp_job {
  size_t nranks;
  struct gp_job_rank *r; /* outliers first (docs/jobs.md, "Order") */
  size_t nhosts;
  struct gp_job_host *hosts; /* hosts[0]: the reference */
  const char *comm_rule;     /* owned */
  int by_step;               /* units are steps, else collectives */
  size_t units;              /* measured steps common to all, or collectives */
  size_t collectives;        /* every rank taking part has, counted */
  uint64_t step_p50, step_p95, step_max; /* the job's step: slowest rank */
  size_t nstrag;
  size_t *strag; /* indices into r: last at least once, worst first */
  uint64_t wait_total;
  uint64_t clamped; /* arrival lags from the aligned clocks below 0 */
  uint64_t clamped_max_ns;
  char *finding; /* NULL: no straggler */
  char **notes;
  size_t nnotes;
  struct gp_job_input *in; /* owned, by process index */
};

/* The inputs of procs[0..n), read from files[0..n) by o->threads threads
 * into *out (n of them, gp_job_input_free each, then free): 0, or -1
 * with a one-line message in err (the first file in order that cannot be
 * read again; out of memory). */
int gp_job_collect_all(char *const *files, struct gp_proc_res *const *procs,
                       size_t n, const struct gp_job_opts *o,
                       struct gp_job_input **out, char *err, size_t errlen);
/* The job of procs[0..n) from their inputs in[0..n) (taken over: freed
 * with the job, or on failure), the communication kernels having been
 * found by `rule` (NULL: the default); NULL when out of memory. */
struct gp_job *gp_job_make(struct gp_proc_res *const *procs,
                           struct gp_job_input *in, size_t n, const char *rule,
                           char *err, size_t errlen);
/* Both: the job of procs[0..n) read from files[0..n), or NULL with a
 * one-line message in err. */
struct gp_job *gp_job_build(char *const *files,
                            struct gp_proc_res *const *procs, size_t n,
                            const struct gp_job_opts *o, char *err,
                            size_t errlen);
void gp_job_free(struct gp_job *j); /* accepts NULL */
/* 1 when the results carry ranks (a job view is due without --job). */
int gp_job_wanted(struct gp_proc_res *const *procs, size_t n);

/* Renderers (job_render.c). */
void gp_job_text(FILE *f, const struct gp_job *j, int color, size_t top);
void gp_job_json(struct gp_json *js, const struct gp_job *j);
void gp_job_html(FILE *f, const struct gp_job *j);

#endif
