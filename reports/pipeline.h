/* Reading trace files into results: what gpuphase-report and the
 * benchmark run, and what end-to-end tests can call directly. */
#ifndef GP_PIPELINE_H
#define GP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Called now and then while reading: bytes read of the file's size, and
 * records so far. */
typedef void (*gp_progress_fn)(void *ctx, const char *path, uint64_t done,
                               uint64_t size, uint64_t records);

enum { GP_PIPE_OK = 0, GP_PIPE_BAD_INPUT = 1, GP_PIPE_NOMEM = 2 };

/* Analyses one file. Returns the result, or NULL with *status set and a
 * one-line message (naming the file; for a corrupt file, the byte offset)
 * in err. A truncated file is analysed up to its last whole frame, with a
 * note and r->truncated set. */
struct gp_proc_res *gp_report_file(const char *path,
                                   const struct gp_report_opts *o,
                                   gp_progress_fn progress, void *ctx,
                                   int *status, char *err, size_t errlen);

/* The files paths[0..n), read at once on `threads` threads: a thread per
 * file, those beyond one per file decoding ahead within the files
 * (o->read_threads is set so). procs[i] receives each result. Returns the
 * index of the first file, in order, that could not be read, with its
 * message in err and *status set; n when all were read. Results of files
 * after a failed one may be missing (NULL). */
size_t gp_report_files(char *const *paths, size_t n,
                       const struct gp_report_opts *o, int threads,
                       gp_progress_fn progress, void *ctx,
                       struct gp_proc_res **procs, int *status, char *err,
                       size_t errlen);

/* Everything together: the sum of n > 1 results, with a note when some
 * are degraded, derived. NULL when out of memory. */
struct gp_proc_res *gp_report_sum(struct gp_proc_res *const *procs, size_t n,
                                  const struct gp_report_opts *o);

#endif
