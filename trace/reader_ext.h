/* Internal reader entry points for tools, tests and fuzzers: open with a
 * detailed message on failure, open a trace held in memory, and strings
 * with their exact length. Not part of the installed API. */
#ifndef GP_TRACE_READER_EXT_H
#define GP_TRACE_READER_EXT_H

#include <stddef.h>

#include "gpuphase/trace.h"

enum { GP_OPEN_FILE_ORDER = 0, GP_OPEN_SORTED = 1 };

/* As gpuphase_reader_open(_sorted), and on failure also writes a one-line
 * explanation (without the path) to msg when msg != NULL. */
gpuphase_reader *gp_reader_open_ex(const char *path, int mode, int *err,
                                   char *msg, size_t msglen);

/* Reads a trace from [data, data + len), which must outlive the reader. */
gpuphase_reader *gp_reader_open_mem(const void *data, size_t len, int mode,
                                    int *err, char *msg, size_t msglen);

/* A time-ordered reader decompresses and decodes frames ahead on
 * threads - 1 worker threads (at most 4; threads <= 1: none), the
 * records, their order and any error staying those of one thread. Call before the first record is
 * read; later calls, and calls on a file-order reader, do nothing.
 * Returns the workers started. */
int gp_reader_set_threads(gpuphase_reader *r, int threads);

/* The reader hands out only the records of these kinds (bit k: kind k;
 * 0: all again), and passes over the others without decoding them: for a
 * further read of a file already read whole, since damage inside a record
 * passed over goes unnoticed. STRING records are still read
 * (gpuphase_reader_string) and handed out; a time-ordered reader still
 * hands out the metadata first, and the records kept in the order they
 * have in a whole read (a record that breaks its source's order excepted:
 * it is emitted where it stands among the records kept), on one thread
 * (gp_reader_set_threads then does nothing). GPUPHASE_E_ARG on a
 * time-ordered reader that has handed out a record or started workers. */
int gp_reader_only(gpuphase_reader *r, uint64_t kinds);

/* As gpuphase_reader_next, without the copy: *out points to a record held
 * by the reader, valid until the next call (its blobs likewise). */
int gp_reader_next_ref(gpuphase_reader *r, const struct gpuphase_record **out);

/* gp_reader_next_ref of a time-ordered reader, without its checks of the
 * arguments and of an earlier error: for a loop that stops at the first
 * result other than 1. */
int gp_reader_next_sorted(gpuphase_reader *r,
                          const struct gpuphase_record **out);

/* fn(ctx, record) for every record of a time-ordered reader, in a loop
 * of the reader's own (the merge and the decoder inline in it), and
 * tick(ctx, n) after every 65,536 records when tick is not NULL. Returns
 * 0 at the end of the trace, the reader's error, or 1 when fn returned
 * a negative value (the loop then stops). */
int gp_reader_each_sorted(gpuphase_reader *r,
                          int (*fn)(void *ctx,
                                    const struct gpuphase_record *rec),
                          void *ctx, void (*tick)(void *ctx, uint64_t n));

/* Interned string with its length (it may hold NUL bytes); 0 if unknown. */
int gp_reader_string_blob(const gpuphase_reader *r, uint64_t id,
                          gpuphase_blob *out);

#endif
