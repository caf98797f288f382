/* gpuphase report library (libgpuphase-report): the report and the CI gate
 * of gpuphase-report, in memory, for programs and language bindings (the
 * Python package uses it through ctypes). The output is the command line's,
 * byte for byte, for the same options.
 *
 * Every function that can fail returns a gpuphase_report_error code and,
 * when err is not NULL, writes a one-line message (NUL-terminated, cut to
 * errlen) naming the file or option at fault. Buffers returned through
 * `char **out` are allocated by the library and released with
 * gpuphase_report_buffer_free. Handles are not shared between threads;
 * gpuphase_report_compare is not reentrant (it parses its arguments with
 * getopt): call it from one thread at a time. */
#ifndef GPUPHASE_REPORT_H
#define GPUPHASE_REPORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: pinned values, never renumbered. */
enum gpuphase_report_error {
  GPUPHASE_REPORT_OK = 0,
  GPUPHASE_REPORT_E_INPUT = 1, /* a trace cannot be read: missing, not a
                                  trace, corrupt, too new */
  GPUPHASE_REPORT_E_NOMEM = 2,
  GPUPHASE_REPORT_E_USAGE = 3, /* a bad option, value or argument */
  GPUPHASE_REPORT_E_OUTPUT = 4 /* an output could not be written */
};

/* "0.1.0": the version of the library (and of the tools built with it). */
const char *gpuphase_report_version(void);

/* Options of the report, set by the command line's long names without the
 * dashes and with the same values: "window" (a duration: "500us", "10ms",
 * "1s"), "link-gbps", "top", "step" (a range name or glob), "warmup",
 * "html-detail" (FROM..TO: the HTML timeline's full detail), "html-budget"
 * (its events at most), "comm-kernels" (the job view's communication
 * kernels: globs separated by commas), "jobs" (threads reading the traces,
 * 1 to 4096), "processes" (text and html: per-process sections, a count
 * or "all"), "frames" ("user" or "all": the frames call sites keep),
 * "weight" ("idle" or "blocked": what folded stacks are weighed by);
 * the flags "job" and "no-job" (the job view even when the traces carry no
 * rank, or never) take "" or "1".
 * Unset options have the command line's defaults: the job view when the
 * traces carry ranks, as many threads as the process may use. */
typedef struct gpuphase_report_opts gpuphase_report_opts;
gpuphase_report_opts *gpuphase_report_opts_new(void);    /* NULL: no memory */
void gpuphase_report_opts_free(gpuphase_report_opts *o); /* accepts NULL */
int gpuphase_report_opts_set(gpuphase_report_opts *o, const char *name,
                             const char *value, char *err, size_t errlen);

/* Reads and analyses the traces as gpuphase-report does: several are read
 * in parallel, each reported, then added together, and when they carry
 * ranks (or with "job") set side by side in the job view (docs/jobs.md).
 * NULL on failure with *code set (if code is not NULL) and the first
 * failing trace's message in err. opts may be NULL (the defaults); it is
 * copied. */
typedef struct gpuphase_report gpuphase_report;
gpuphase_report *gpuphase_report_open(const char *const *paths, size_t n,
                                      const gpuphase_report_opts *opts,
                                      int *code, char *err, size_t errlen);
void gpuphase_report_close(gpuphase_report *r); /* accepts NULL */

/* 1 when the i-th trace was cut short (reported up to its last complete
 * frame, as the command line warns), 0 when whole or i is out of range. */
int gpuphase_report_truncated(const gpuphase_report *r, size_t i);

/* Renders the report as "text" (without colour), "json" or "html" into a
 * new buffer: *out (NUL-terminated) and *len (without the NUL). The first
 * "html" reads each trace whose section the page shows once more for its
 * timeline, as the command line does for --format html. */
int gpuphase_report_render(const gpuphase_report *r, const char *format,
                           char **out, size_t *len, char *err, size_t errlen);

/* gpuphase-report compare or check in memory: command is "compare" or
 * "check", argv its arguments as on the command line (files, --vs,
 * options; no program name). The verdict, as --format says (text,
 * markdown or json), goes to *out; *exit_code is the command's exit
 * status (0 pass, 1 regression or budget exceeded, 2 usage or input
 * error, 3 inconclusive or what --inconclusive maps it to). --output,
 * --junit and $GITHUB_STEP_SUMMARY are honoured as on the command line.
 * Returns GPUPHASE_REPORT_OK when the command ran to a verdict, else a
 * code and the message (*exit_code is then 2). */
int gpuphase_report_compare(const char *command, const char *const *argv,
                            size_t argc, char **out, size_t *len,
                            int *exit_code, char *err, size_t errlen);

void gpuphase_report_buffer_free(char *p); /* accepts NULL */

#ifdef __cplusplus
}
#endif

#endif
