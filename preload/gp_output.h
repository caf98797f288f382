/* The trace file: its name (GPUPHASE_OUTPUT expanded, never overwriting),
 * its header, the run manifest of `gpuphase run`, and closing it. Uses the
 * trace writer (trace/writer.h) and gp_settings.h. */
#ifndef GP_OUTPUT_H
#define GP_OUTPUT_H

#include <limits.h>
#include <stddef.h>

#include "gpuphase/trace.h"
#include "writer.h"

struct gp_output {
  gp_writer *w; /* NULL: no file open */
  char path[PATH_MAX];
};

/* Creates the file of this process and writes its header; says why on
 * stderr and returns -1 when it cannot. */
int gp_output_open(struct gp_output *o);

/* Tells `gpuphase run` (GPUPHASE_MANIFEST) where the trace goes. */
void gp_output_announce(const struct gp_output *o);

/* Writes what is pending and the summary (when sum is not NULL), closes. */
void gp_output_close(struct gp_output *o, const struct gpuphase_summary *sum);

/* In a forked child: the file is the parent's; forget it untouched. */
void gp_output_forget(struct gp_output *o);

/* Expands %p %h %r %q{VAR} %% of pat into out (cap bytes). */
void gp_expand_pattern(const char *pat, char *out, size_t cap);

#endif
