/* Summaries: the analysed results of a set of traces and what the job view
 * needs of them, in one compact file, so that the traces of a large job
 * can be analysed node by node and the job reported from the summaries
 * (`gpuphase-report --format summary -o FILE`, `gpuphase-report merge`).
 * Format and accuracy: docs/jobs.md ("Summaries"). */
#ifndef GP_JOB_SUMMARY_H
#define GP_JOB_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"
#include "report.h"

/* Version 2 added the count of launches captured into graphs and the
 * measured counters; version 3 the analysis options the summary was made
 * with (--window, --step, --warmup, --frames), which merge checks are the
 * same in every summary. Versions 1 and 2 still read (without what they
 * lack; their options are not known, so not checked). */
#define GP_SUMMARY_VERSION 3u
#define GP_SUMMARY_VERSION_OLDEST 1u

/* Writes procs[0..n) with their job inputs in[0..n) to f; rule: the
 * communication-kernel globs the inputs were collected with (NULL: the
 * default); o: the analysis options (those the merge must apply again).
 * 0, or -1 out of memory (the caller names write errors). */
int gp_summary_write(FILE *f, struct gp_proc_res *const *procs,
                     const struct gp_job_input *in, size_t n, const char *rule,
                     const struct gp_report_opts *o);

/* The analysis options a summary was made with, besides the
 * communication rule and --link-gbps (version 3 on). */
struct gp_summary_opts {
  int known;          /* 0: an older summary, which did not record them */
  uint64_t window_ns; /* --window as given; 0: the default */
  char *step;         /* --step; NULL: found alone */
  int64_t warmup;     /* --warmup; < 0: the default */
  int frames_all;     /* --frames all */
};

/* What the summaries read so far hold, in the order read. */
struct gp_summary_set {
  struct gp_proc_res **procs;
  struct gp_job_input *in;
  size_t n;
  char *rule;       /* NULL: the default */
  double link_gbps; /* --link-gbps of the summaries; 0: the default */
  struct gp_summary_opts ao; /* the first summary's */
  int unknown;      /* some summary did not record its options */
  int any;          /* a summary was read */
};

/* gp_summary_write with the options of a set of summaries (merge --format
 * summary: a summary of summaries); set->in must not have been taken. */
int gp_summary_write_set(FILE *f, const struct gp_summary_set *set);
/* gp_summary_write as a summary of version ver (GP_SUMMARY_VERSION_OLDEST
 * to GP_SUMMARY_VERSION; for the tests of older summaries); ao: NULL when
 * the options are not known; checksum 0: without the body's checksum, as
 * summaries were written before it (flags 0). */
int gp_summary_write_ver(FILE *f, struct gp_proc_res *const *procs,
                         const struct gp_job_input *in, size_t n,
                         const char *rule, double link_gbps,
                         const struct gp_summary_opts *ao, uint32_t ver,
                         int checksum);

/* Appends the summary at path to set: 0, or -1 with a one-line message
 * naming the file in err (not a summary, another version, corrupt,
 * made with other options than the summaries before it, out of memory:
 * *nomem set). */
int gp_summary_read(const char *path, struct gp_summary_set *set, int *nomem,
                    char *err, size_t errlen);
/* The same from the file's bytes f[0..len), named path in messages. */
int gp_summary_read_mem(const uint8_t *f, size_t len, const char *path,
                        struct gp_summary_set *set, int *nomem, char *err,
                        size_t errlen);
void gp_summary_set_free(struct gp_summary_set *set); /* the procs too */

/* Reads the summaries at files[0..n) into set, as gp_summary_read of each
 * in turn would, up to the first that fails: the first is read alone,
 * the others on up to `threads` threads at once, each checked against
 * the first's options, then appended in order. 0, or -1 with the first
 * failure's message in err (*nomem set when it is out of memory). */
int gp_summary_read_all(char *const *files, size_t n, int threads,
                        struct gp_summary_set *set, int *nomem, char *err,
                        size_t errlen);

#endif
