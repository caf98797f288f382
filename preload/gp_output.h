/* The trace file: its name (GPUPHASE_OUTPUT expanded, never overwriting),
 * its header, the run manifest of `gpuphase run`, and closing it. Uses the
 * trace writer (trace/writer.h) and gp_settings.h. */
#ifndef GP_OUTPUT_H
#define GP_OUTPUT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpuphase/trace.h"
#include "writer.h"

struct gp_output {
  gp_writer *w; /* NULL: no file open, or its writes failed */
  char path[PATH_MAX];
  int fd;       /* the writer's, or ours once its writes failed; -1 none */
  int failed;   /* the file took no more: cut back to good_bytes */
  uint64_t good_bytes, good_events; /* the file after its last whole flush */
  uint64_t good_added;              /* the caller's count then */
  uint64_t reserve_at;              /* where the reserve is; 0 none */
  /* The file itself, to know our descriptor from one the program opened
   * under the same number after closing ours, and to open it again. */
  dev_t dev;
  ino_t ino; /* numbers a file removed may leave to the next one: and */
  unsigned char mark[64]; /* the file's first bytes (pid, times) */
  size_t nmark;
  char again[PATH_MAX]; /* its absolute name; "" when too long */
};

/* Creates the file of this process and writes its header; says why on
 * stderr and returns -1 when it cannot. */
int gp_output_open(struct gp_output *o);

/* Tells `gpuphase run` (GPUPHASE_MANIFEST) where the trace goes. */
void gp_output_announce(const struct gp_output *o);

/* A program may close every descriptor it did not open (a daemon does)
 * and open its own files under the same numbers: each use of the
 * descriptor below first checks that it is still the trace file, and when
 * it is not, opens the file again by its absolute name and writes on where
 * it stopped, leaving the number to the program. When the file cannot be
 * opened again (removed, replaced, or in a directory left unreachable),
 * the trace ends at its last whole flush, said once on stderr. */

/* Writes the pending frames. `added` counts the records the caller has
 * handed to the writer so far (accepted or not): what the file lacks is
 * known from it. Returns -1 the first time the file takes no more (a full
 * disk): said once on stderr, the file cut back to its last whole flush,
 * the writer gone (o->w NULL: the caller's records are then refused, and
 * counted lost at the close). */
int gp_output_flush(struct gp_output *o, uint64_t added);

/* Writes what is pending and the summary (when sum is not NULL), closes.
 * After failed writes, the summary counts every record not written as
 * lost and a LOST record (source 2) says so, in the space reserved at open
 * for it. */
void gp_output_close(struct gp_output *o, const struct gpuphase_summary *sum,
                     uint64_t added);

/* In a forked child: the file is the parent's; forget it untouched. */
void gp_output_forget(struct gp_output *o);

/* Expands %p %h %r %q{VAR} %% of pat into out (cap bytes). */
void gp_expand_pattern(const char *pat, char *out, size_t cap);

#endif
