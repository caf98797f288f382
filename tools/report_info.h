/* gpuphase-report info and dump: what a trace file is (process, devices,
 * record counts, completeness) and its records one per line. argv[0] is
 * the subcommand's name. Return the process exit status: 0 success, 1 bad
 * input (the problem named on stderr), 2 usage error. */
#ifndef GP_REPORT_INFO_H
#define GP_REPORT_INFO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int gp_cmd_info(int argc, char **argv);
int gp_cmd_dump(int argc, char **argv);

/* Output files of every subcommand (report, info, dump, compare, check).
 *
 * Whether path (NULL: standard output) is the same file, by device and
 * inode, as one of the n inputs: the input's name, or NULL. Inputs that
 * cannot be found are skipped. */
const char *gp_out_is_input(const char *path, char *const *inputs, size_t n);

/* Opens path for writing as fopen(path, mode) does ("w" or "a"), except
 * that a file that is one of the inputs is refused -- checked on the open
 * file, before it is truncated: NULL with *clash naming the input (NULL
 * when errno says why the open failed). */
FILE *gp_out_open(const char *path, const char *mode, char *const *inputs,
                  size_t n, const char **clash);

/* Flushes f (and closes it unless it is stdout): 0 when everything written
 * to it reached the file, else -1 after one line on stderr,
 * "PREFIX: NAME: write error: REASON". */
int gp_out_done(FILE *f, const char *prefix, const char *name);

/* fputs(s, f) that keeps the reason of a failed write for gp_out_done: a
 * text longer than stdio's buffer (a --help) is written at once, and the
 * error it meets is not met again when f is flushed. */
void gp_put(const char *s, FILE *f);

/* After a failed write to path (NULL: standard output, left alone): the
 * partial file is removed when it is a regular file, so that a full disk
 * leaves no truncated report behind. */
void gp_out_discard(const char *path);

/* One process given to a command more than once (the same host, pid and
 * instant of the first CUDA call: a trace given twice or copied, or
 * summaries of overlapping sets of traces) is rarely what was meant. */
struct gp_proc_ident {
  int started;      /* 0: no CUDA call, never the same as another */
  int64_t pid;
  uint64_t wstart;  /* the first CUDA call, CLOCK_MONOTONIC ns */
  const char *host; /* NULL: unknown */
  const char *file; /* as given */
  int side;         /* compare: 0 the baseline's, 1 the candidate's */
};

/* Says so on stderr, a line per input after the first of its process, in
 * the inputs' order. twice: what a repeated name is ("given more than
 * once", "in more than one summary"); the consequence: counted each time,
 * or, between the sides of a comparison, the run compared with itself. */
void gp_warn_same_process(const struct gp_proc_ident *v, size_t n,
                          const char *twice);
/* gp_warn_same_process of the processes of analysed inputs, in their
 * order (nothing said when out of memory). */
struct gp_proc_res;
void gp_warn_same_procs(struct gp_proc_res *const *procs, size_t n,
                        const char *twice);

#endif
