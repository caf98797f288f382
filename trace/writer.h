/* Internal trace writer, used by the preload library's writer thread and by
 * tests/benchmarks that synthesise traces. Not thread-safe: one thread
 * drives a writer. */
#ifndef GP_TRACE_WRITER_H
#define GP_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuphase/trace.h"

struct gp_process_info {
  const char *host;
  int64_t pid, ppid, rank, local_rank; /* rank/local_rank -1 if unknown */
  const char *cmdline;                 /* arguments joined by spaces */
  uint64_t start_mono_ns, start_real_ns;
  const char *clock; /* e.g. "tsc" or "clock_gettime" */
  uint32_t flags;
  const char *run_id;  /* GPUPHASE_RUN_ID; NULL or "" when none */
  uint64_t step_items; /* GPUPHASE_STEP_ITEMS; 0 when unset */
};

typedef struct gp_writer gp_writer;

/* Writes the header to fd (which the writer then owns and closes).
 * frame_bytes: uncompressed size at which a frame is cut (0 = default
 * 256 KiB). Returns NULL with *err set on failure. */
gp_writer *gp_writer_open(int fd, const struct gp_process_info *info,
                          size_t frame_bytes, int *err);

/* Appends a record to the pending frame of `source` (0 = metadata: STRING,
 * THREAD, API_DEF, DEVICE, STATE, LOST; other ids are chosen by the caller,
 * one per host thread or device stream, and each source's records must be
 * added in non-decreasing `start` order). A source's frame is written when
 * it reaches frame_bytes; before any frame of another source is written the
 * pending metadata frame is written first, so a sequential reader always
 * sees a string before its first use. STRING records are written by
 * gp_writer_intern, not here. Returns GPUPHASE_OK or an error code. */
int gp_writer_add(gp_writer *w, uint32_t source,
                  const struct gpuphase_record *rec);

/* gp_writer_add of recs[0..n-1], all to `source`, in order, with the same
 * result in the file; the source is looked up once. Stops at the first
 * record that fails and returns its error. */
int gp_writer_add_n(gp_writer *w, uint32_t source,
                    const struct gpuphase_record *recs, size_t n);

/* Records that repeat the last record of their kind in a source but for
 * start, end and corr (one more at most), appended without a record to
 * build: what gp_writer_add of each whole record would write, byte for
 * byte, frame cuts included (the repeat form, codec.h). Between begin and
 * end the caller makes no other call on the writer and changes nothing
 * in *r but through gp_repeat_put. */
struct gp_repeat_run {
  uint8_t *p, *stop; /* the next record's place; the run ends at stop */
  uint64_t end, dur; /* the last record's end and end - start */
  uint64_t corr, n;  /* corr steps taken and records put so far */
  unsigned tag, corr_max;
  void *src;
  uint32_t kind;
};

/* Opens a run of `kind` (one of GP_REPEAT_KINDS) in `source`: 0, or
 * GP_WRITER_NOT_REPEAT when the pending frame holds no record of the kind
 * (none since the frame was cut) or the writer cannot take records. */
#define GP_WRITER_NOT_REPEAT 1
int gp_writer_repeat_begin(gp_writer *w, uint32_t source, uint32_t kind,
                           struct gp_repeat_run *r);

/* The caller puts each record at r->p with gp_repeat_put (encode.h),
 * which keeps the other fields up to date, and ends the run when a record
 * is not taken (it is then added whole) or when r->p reached r->stop. */
/* Closes the run: its records count as added, and the frame is cut if it
 * reached its size. Returns the writer's state (GPUPHASE_OK or its error). */
int gp_writer_repeat_end(gp_writer *w, struct gp_repeat_run *r);

/* Tests: on = 0 writes every record in full form, as format version 4
 * did (repeat records are the writer's choice; the records are the same). */
void gp_writer_set_repeat(gp_writer *w, int on);

/* Returns the id of s (len bytes), emitting a STRING record into the
 * current frame the first time it is seen. 0 for an empty string. */
uint64_t gp_writer_intern(gp_writer *w, const char *s, size_t len);

/* Compresses and writes every pending frame (metadata first). */
int gp_writer_flush(gp_writer *w);

/* Events (non-STRING records) added so far. */
uint64_t gp_writer_events(const gp_writer *w);
uint64_t gp_writer_bytes(const gp_writer *w); /* bytes written to the fd */

/* Flushes, writes the summary frame (if sum != NULL), closes the fd and
 * frees. Accepts NULL. */
int gp_writer_close(gp_writer *w, const struct gpuphase_summary *sum);

/* Writes to fd from now on: another descriptor of the same file, at the
 * offset the writer has reached. The old one is neither closed nor
 * touched (its number may be someone else's by now). */
void gp_writer_set_fd(gp_writer *w, int fd);

/* Frees the writer without writing or closing anything. Accepts NULL. */
void gp_writer_discard(gp_writer *w);

#endif
