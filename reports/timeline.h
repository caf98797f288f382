/* The timeline of a trace as tracks and slices: one time-ordered walk over
 * a trace file (the sorted reader) that hands tracks, slices, ranges, flows
 * and counters to a sink. What the exports (Perfetto, Chrome JSON) are
 * written from; the layout and what is held in memory: docs/export.md.
 *
 * Guarantees to the sink, per track: a track is declared (track()) before
 * anything is put on it, and its parent before it; slices and range begins
 * arrive in non-decreasing start order; two slices of one track are either
 * disjoint or nested (overlapping device work is spread over lanes that
 * share a merge key); range ends close the latest open range of their
 * track. A flow id is handed out once as a source (on an API slice) and
 * once as a destination (on a device slice). */
#ifndef GP_TIMELINE_H
#define GP_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

enum gp_tl_kind {
  GP_TL_PROCESS,
  GP_TL_THREAD,  /* a host thread: its CUDA API calls */
  GP_TL_RANGES,  /* NVTX / gpuphase ranges of a thread (lane > 0: start/end
                    ranges that overlap) */
  GP_TL_STEPS,   /* the steps the report found, under the thread they ran on */
  GP_TL_GPU,     /* a group per GPU */
  GP_TL_STREAM,  /* one lane of a stream's work */
  GP_TL_COUNTER, /* a counter under its GPU */
  GP_TL_NOTES    /* notes about the export itself */
};

/* GP_TL_UNIT_OTHER: unit_name says which (measured counters: "MHz",
 * "W", ...) */
enum { GP_TL_UNIT_PERCENT, GP_TL_UNIT_BYTES, GP_TL_UNIT_OTHER };

struct gp_tl_track {
  uint64_t uuid, parent; /* parent 0: top level */
  enum gp_tl_kind kind;
  size_t proc;           /* index of the trace in the export */
  const char *name;      /* valid during the call */
  int64_t pid, tid;      /* process (all kinds) and thread (thread kinds) */
  int64_t device;        /* GPU, stream and counter tracks */
  uint64_t stream;       /* stream tracks */
  unsigned lane;         /* stream and range tracks: 0 first */
  const char *merge_key; /* lanes of one stream share it; NULL otherwise */
  int unit;              /* counters: GP_TL_UNIT_* */
  const char *unit_name; /* counters of GP_TL_UNIT_OTHER */
  int order;             /* rank among its siblings */
};

/* Annotation names: one table (X(ENUM, "name")), so that a sink can intern
 * them by index. */
#define GP_TL_ARGS(X)                                                          \
  X(RESULT, "result")                                                          \
  X(BYTES, "bytes")                                                            \
  X(STREAM, "stream")                                                          \
  X(DEVICE, "device")                                                          \
  X(COPY_KIND, "copy_kind")                                                    \
  X(GRID, "grid")                                                              \
  X(BLOCK, "block")                                                            \
  X(CORR, "correlation")                                                       \
  X(REGS, "registers")                                                         \
  X(SMEM, "shared_memory")                                                     \
  X(GRAPH, "graph")                                                            \
  X(SRC, "src")                                                                \
  X(DST, "dst")                                                                \
  X(PEER, "peer_device")                                                       \
  X(VALUE, "value")                                                            \
  X(SYNC_TYPE, "sync_type")                                                    \
  X(RANGE_ID, "range_id")                                                      \
  X(WARMUP, "warmup")                                                          \
  X(DURATION, "duration_ns")

enum gp_tl_arg_name {
#define GP_X(E, s) GP_TL_A_##E,
  GP_TL_ARGS(GP_X)
#undef GP_X
      GP_TL_A_N
};
extern const char *const gp_tl_arg_name[GP_TL_A_N];

/* String annotation values, also from one table (index = value code). */
#define GP_TL_STRVALS(X)                                                       \
  X(UNKNOWN, "unknown")                                                        \
  X(HTOD, "HtoD")                                                              \
  X(DTOH, "DtoH")                                                              \
  X(DTOD, "DtoD")                                                              \
  X(HTOH, "HtoH")                                                              \
  X(PTOP, "PtoP")                                                              \
  X(DEFAULT, "default")                                                        \
  X(PAGEABLE, "pageable")                                                      \
  X(PINNED, "pinned")                                                          \
  X(DEVMEM, "device")                                                          \
  X(MANAGED, "managed")                                                        \
  X(ARRAY, "array")                                                            \
  X(SYNC_EVENT, "event")                                                       \
  X(SYNC_WAIT, "stream_wait_event")                                            \
  X(SYNC_STREAM, "stream")                                                     \
  X(SYNC_CONTEXT, "context")

enum gp_tl_strval {
#define GP_X(E, s) GP_TL_V_##E,
  GP_TL_STRVALS(GP_X)
#undef GP_X
      GP_TL_V_N
};
extern const char *const gp_tl_strval[GP_TL_V_N];

enum { GP_TL_ARG_U, GP_TL_ARG_I, GP_TL_ARG_S };

struct gp_tl_arg {
  enum gp_tl_arg_name name;
  int type;   /* GP_TL_ARG_* */
  uint64_t u; /* U: the value; S: an enum gp_tl_strval */
  int64_t i;
};

#define GP_TL_MAXARGS 10

struct gp_tl_slice {
  uint64_t track;
  uint64_t start, end;
  const char *name; /* valid during the call */
  /* Stable key of the name within its track (0: none, write it as is):
   * sinks that intern names intern by key. */
  uint64_t name_key;
  const char *cat; /* "api", "kernel", "memcpy", "memset", "sync", "range",
                      "step" */
  size_t nargs;
  struct gp_tl_arg args[GP_TL_MAXARGS];
  const uint64_t *flows_out; /* API slices: flows to device records */
  size_t nflows_out;
  uint64_t flow_in; /* device slices: the flow from their call; 0 none */
};

struct gp_tl_sink {
  void *ctx;
  /* each returns 0, or -1 to stop the walk (a write error) */
  int (*track)(void *ctx, const struct gp_tl_track *t);
  int (*slice)(void *ctx, const struct gp_tl_slice *s);
  /* Ranges, whose end is not known at their start. end() repeats the
   * range's start and name (for formats that write whole slices). */
  int (*begin)(void *ctx, uint64_t track, uint64_t ts, const char *name,
               uint64_t name_key);
  int (*end)(void *ctx, uint64_t track, uint64_t ts, uint64_t start,
             const char *name);
  int (*counter)(void *ctx, uint64_t track, uint64_t ts, double value);
};

/* What is exported: [from, to) in CLOCK_MONOTONIC ns (to 0: no end). API
 * calls and device work starting inside go in whole; ranges and steps that
 * overlap it are cut to it. */
struct gp_tl_opts {
  uint64_t from, to;
  uint64_t hold_ns; /* how long a call waits for its device records to name
                       its flows; 0: 1 s */
  int64_t id_bias;  /* added to pids and tids (traces of several hosts with
                       the same pid) */
};

/* What one walk saw, for notes and the size estimate. */
struct gp_tl_stats {
  uint64_t slices, device, ranges, flows, counters;
  uint64_t unlinked; /* device records whose call was not (or no longer)
                        held: no flow */
  uint64_t clamped;  /* slices shortened to nest in their track */
  uint64_t dropped;  /* records past the limits (tracks, lanes, depth) */
  uint64_t last_ts;
};

/* Walks the trace at path (process number proc of the export, uuids made
 * unique by it) with its report result r (steps, over-time windows; may be
 * NULL). Returns 0, or -1 with a one-line message in err (a corrupt trace,
 * out of memory, or the sink failing: then err is empty). */
int gp_timeline_walk(const char *path, size_t proc, const struct gp_proc_res *r,
                     const struct gp_tl_opts *o, const struct gp_tl_sink *sink,
                     struct gp_tl_stats *st, char *err, size_t errlen);

#endif
