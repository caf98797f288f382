/* gpuphase-report --format perfetto|chrome: the timeline exports
 * (docs/export.md). */
#ifndef GP_REPORT_EXPORT_H
#define GP_REPORT_EXPORT_H

#include <stddef.h>

#include "report.h"

struct gp_export_opts {
  const char *format;            /* "perfetto" or "chrome" */
  const char *out;               /* the file; NULL or "-": standard output */
  const char *from, *to, *steps; /* as given on the command line, or NULL */
};

/* Whether name is an export format. */
int gp_export_format(const char *name);

/* Checks what can be checked before reading (perfetto needs -o, not to a
 * terminal; the syntax of --from, --to, --steps): -1 to go on, else the
 * exit status after a message. */
int gp_export_precheck(const struct gp_export_opts *o);

/* Writes the export of files[0..n) whose report results are procs.
 * Returns the exit status: 0, 1 (bad input, write error) or 2 (usage). */
int gp_export(char **files, size_t n, struct gp_proc_res **procs,
              const struct gp_export_opts *o);

#endif
