/* gpuphase trace reader: the one way every tool reads .gph files.
 * Streams records in memory bounded by the number of distinct strings,
 * never by the number of events. Format: docs/format.md. */
#ifndef GPUPHASE_TRACE_H
#define GPUPHASE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuphase/trace_records.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUPHASE_FORMAT_VERSION 5u
#define GPUPHASE_FORMAT_MIN_READER 5u

/* Error codes: pinned values, never renumbered. */
enum gpuphase_error {
  GPUPHASE_OK = 0,
  GPUPHASE_E_IO = -1,        /* open/read failed (errno kept) */
  GPUPHASE_E_NOT_TRACE = -2, /* bad magic: not a gpuphase trace */
  GPUPHASE_E_VERSION = -3,   /* written by a newer, incompatible version */
  GPUPHASE_E_TRUNCATED = -4, /* the header itself is cut short */
  GPUPHASE_E_CORRUPT = -5,   /* a frame or record fails its checks */
  GPUPHASE_E_NOMEM = -6,
  GPUPHASE_E_ARG = -7
};
const char *gpuphase_strerror(int code);

typedef struct {
  const char *data; /* not NUL-terminated in general */
  uint64_t len;
} gpuphase_blob;

enum gpuphase_kind {
#define GPUPHASE_KIND_ENUM(num, UP, low, FIELDS) GPUPHASE_REC_##UP = num,
  GPUPHASE_RECORD_KINDS(GPUPHASE_KIND_ENUM)
#undef GPUPHASE_KIND_ENUM
      GPUPHASE_REC_MAX
};

#define GPUPHASE_FIELD_DECL(code, type, name) type name;
#define GPUPHASE_KIND_STRUCT(num, UP, low, FIELDS)                            \
  struct gpuphase_##low {                                                     \
    FIELDS(GPUPHASE_FIELD_DECL)                                               \
  };
GPUPHASE_RECORD_KINDS(GPUPHASE_KIND_STRUCT)
#undef GPUPHASE_KIND_STRUCT

struct gpuphase_record {
  uint32_t kind; /* enum gpuphase_kind */
  union {
#define GPUPHASE_KIND_MEMBER(num, UP, low, FIELDS) struct gpuphase_##low low;
    GPUPHASE_RECORD_KINDS(GPUPHASE_KIND_MEMBER)
#undef GPUPHASE_KIND_MEMBER
  } u;
};

/* Name of a record kind ("api", "kernel", ...), NULL if unknown. */
const char *gpuphase_kind_name(uint32_t kind);

/* Process identity and clocks, from the file header. Strings are
 * NUL-terminated and owned by the reader. */
struct gpuphase_header {
  uint32_t version;
  uint32_t min_reader;
  uint32_t header_size;
  uint32_t flags;           /* GPUPHASE_FLAG_* known when the file started */
  int64_t pid, ppid;
  int64_t rank, local_rank; /* -1 when unknown */
  uint64_t start_mono_ns;   /* CLOCK_MONOTONIC at start; all record times
                               are CLOCK_MONOTONIC nanoseconds */
  uint64_t start_real_ns;   /* CLOCK_REALTIME at the same instant */
  const char *host;
  const char *cmdline;      /* arguments joined by single spaces */
  const char *clock;        /* how timestamps were taken, e.g. "tsc" */
  const char *version_str;  /* gpuphase version that wrote the file */
  /* Format version 2; "" and 0 in version-1 files. */
  const char *run_id;       /* shared by the processes of one run
                               (GPUPHASE_RUN_ID) */
  uint64_t step_items;      /* GPUPHASE_STEP_ITEMS: items per step; 0 unset */
};

typedef struct gpuphase_reader gpuphase_reader;

/* Opens and validates the header; next() then returns records in file
 * order. On failure returns NULL and stores an
 * error code in *err; gpuphase_reader_errmsg(NULL) is not available then,
 * so the code (and errno for GPUPHASE_E_IO) says what happened. */
gpuphase_reader *gpuphase_reader_open(const char *path, int *err);
void gpuphase_reader_close(gpuphase_reader *r); /* accepts NULL */

/* Time-ordered reading of a whole file. The writer puts the records of each
 * source (a host thread, a device stream; source 0 holds metadata: STRING,
 * THREAD, API_DEF, DEVICE, STATE, LOST) into frames of their own, each
 * source in non-decreasing `start` order. This opens the file, indexes the
 * frames by source while loading every STRING record (pass 1: frame headers
 * and metadata frames only), then merges the sources (pass 2): next() returns
 * first the untimed metadata records (STRING, THREAD, API_DEF, DEVICE) in
 * file order, then every record that has a `start` field in ascending start
 * order (ties: lower source first, then file order), then SUMMARY if
 * present. Memory: the string table, the frame index and at most one
 * decoded frame per source, within fixed budgets (docs/format.md, "Reader
 * memory"), independent of the number of events. A record that breaks its source's
 * order is emitted where it stands (never dropped). */
gpuphase_reader *gpuphase_reader_open_sorted(const char *path, int *err);

const struct gpuphase_header *gpuphase_reader_header(const gpuphase_reader *r);

/* Next record: 1 = *out filled, 0 = end of trace, < 0 = error code (the
 * records already returned stay valid). STRING records are returned too
 * and also kept in the reader's table. Blob pointers are valid until the
 * next call. A file cut inside a frame ends cleanly (returns 0) at the
 * last whole frame with gpuphase_reader_truncated() true. */
int gpuphase_reader_next(gpuphase_reader *r, struct gpuphase_record *out);

/* Up to cap records at once into out[0..*n): for bindings, where a call
 * per record costs more than reading it. Returns 1 when *n > 0, 0 at the
 * end of the trace (*n = 0), < 0 an error code (the *n records before it
 * are filled; the next call returns the error again). A STRING record's
 * text points into the reader's string table and stays valid until the
 * reader is closed; a batch ends after any other record that holds a
 * blob, whose pointers are valid until the next call. */
int gpuphase_reader_read(gpuphase_reader *r, struct gpuphase_record *out,
                         size_t cap, size_t *n);

/* Interned string by id; "" for 0, NULL for an id never defined. */
const char *gpuphase_reader_string(const gpuphase_reader *r, uint64_t id);

int gpuphase_reader_truncated(const gpuphase_reader *r);
/* Summary frame seen: 1 and *out filled, else 0 (crash, kill, cut). */
int gpuphase_reader_summary(const gpuphase_reader *r,
                            struct gpuphase_summary *out);
/* Human-readable detail of the last error, e.g. "frame at byte 4096:
 * zstd: corrupted block". */
const char *gpuphase_reader_errmsg(const gpuphase_reader *r);
/* Byte offset of the frame being read (for messages and progress). */
uint64_t gpuphase_reader_offset(const gpuphase_reader *r);
uint64_t gpuphase_reader_file_size(const gpuphase_reader *r);

#ifdef __cplusplus
}
#endif
#endif
