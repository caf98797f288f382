/* gpuphase trace record kinds: the single table from which the public record
 * structs, the codec descriptors, the names and the dump output are derived.
 *
 * Field codings (see docs/format.md):
 *   V  numeric, stored as the zigzag varint of (value - value of the same field
 *      in the previous record of the same kind in this frame), wrapping 64-bit
 *   E  end timestamp: (value - the record's "start" field), then coded like V
 *   B  blob: varint length then raw bytes
 * Kind numbers and field order are part of the format: append, never reorder.
 */
#ifndef GPUPHASE_TRACE_RECORDS_H
#define GPUPHASE_TRACE_RECORDS_H

#include <stdint.h>

/* An interned string definition; ids are >= 1, 0 means "no string". */
#define GPUPHASE_FIELDS_STRING(F) F(V, uint64_t, id) F(B, gpuphase_blob, text)

/* A host thread that produced events; thread is the small index used by the
 * other records, tid the OS thread id. */
#define GPUPHASE_FIELDS_THREAD(F)                                             \
  F(V, uint64_t, thread) F(V, uint64_t, tid) F(V, uint64_t, name)

/* Name and class bits (GPUPHASE_API_*) of an API id used by API records. */
#define GPUPHASE_FIELDS_API_DEF(F)                                            \
  F(V, uint64_t, api) F(V, uint64_t, name) F(V, uint64_t, cls)               \
  F(V, uint64_t, layer)

/* Device properties, written when first known. driver_version and
 * runtime_version (format version 2) are what cuDriverGetVersion and
 * cudaRuntimeGetVersion return, e.g. 13000 for 13.0; 0 unknown (and in
 * files written before them). */
#define GPUPHASE_FIELDS_DEVICE(F)                                             \
  F(V, uint64_t, device) F(V, uint64_t, name) F(V, uint64_t, sms)            \
  F(V, uint64_t, mem_total) F(V, uint64_t, cc_major) F(V, uint64_t, cc_minor) \
  F(V, uint64_t, max_threads_per_sm) F(V, uint64_t, max_blocks_per_sm)       \
  F(V, uint64_t, regs_per_sm) F(V, uint64_t, smem_per_sm)                    \
  F(V, uint64_t, warp_size) F(V, uint64_t, clock_khz)                        \
  F(V, uint64_t, mem_clock_khz) F(V, uint64_t, mem_bus_width)                \
  F(V, uint64_t, driver_version) F(V, uint64_t, runtime_version)

/* One intercepted host API call. device is -1 when unknown; stream is the
 * application's handle value; corr the CUPTI correlation id (0: none);
 * copy_kind a GPUPHASE_COPY_* value; func the launched function's address;
 * grid the total number of blocks, block the threads per block; ptr the
 * address allocated (ALLOC: bytes = size) or freed (FREE); stack (format
 * version 3) the call site: the FRAME node of the innermost frame of the
 * calling thread's stack when the call was made, 0 when not captured. */
#define GPUPHASE_FIELDS_API(F)                                                \
  F(V, uint64_t, thread) F(V, uint64_t, api) F(V, uint64_t, start)           \
  F(E, uint64_t, end) F(V, int64_t, ret) F(V, uint64_t, corr)                \
  F(V, int64_t, device) F(V, uint64_t, stream) F(V, uint64_t, bytes)         \
  F(V, uint64_t, copy_kind) F(V, uint64_t, func) F(V, uint64_t, grid)        \
  F(V, uint64_t, block) F(V, uint64_t, flags) F(V, uint64_t, ptr)           \
  F(V, uint64_t, stack)

/* Device-side execution of a kernel (from CUPTI). */
#define GPUPHASE_FIELDS_KERNEL(F)                                             \
  F(V, uint64_t, device) F(V, uint64_t, stream) F(V, uint64_t, corr)         \
  F(V, uint64_t, start) F(E, uint64_t, end) F(V, uint64_t, name)             \
  F(V, uint64_t, grid_x) F(V, uint64_t, grid_y) F(V, uint64_t, grid_z)       \
  F(V, uint64_t, block_x) F(V, uint64_t, block_y) F(V, uint64_t, block_z)    \
  F(V, uint64_t, regs) F(V, uint64_t, smem_static)                           \
  F(V, uint64_t, smem_dynamic) F(V, uint64_t, graph_id) F(V, uint64_t, flags)

/* Device-side copy. src_mem/dst_mem are GPUPHASE_MEM_* values. */
#define GPUPHASE_FIELDS_MEMCPY(F)                                             \
  F(V, uint64_t, device) F(V, uint64_t, stream) F(V, uint64_t, corr)         \
  F(V, uint64_t, start) F(E, uint64_t, end) F(V, uint64_t, bytes)            \
  F(V, uint64_t, copy_kind) F(V, uint64_t, src_mem) F(V, uint64_t, dst_mem)  \
  F(V, int64_t, peer_device) F(V, uint64_t, flags)

/* Device-side memset. */
#define GPUPHASE_FIELDS_MEMSET(F)                                             \
  F(V, uint64_t, device) F(V, uint64_t, stream) F(V, uint64_t, corr)         \
  F(V, uint64_t, start) F(E, uint64_t, end) F(V, uint64_t, bytes)            \
  F(V, uint64_t, value) F(V, uint64_t, flags)

/* A synchronisation seen by CUPTI; type is a GPUPHASE_SYNC_* value. */
#define GPUPHASE_FIELDS_SYNC(F)                                               \
  F(V, uint64_t, device) F(V, uint64_t, stream) F(V, uint64_t, corr)         \
  F(V, uint64_t, start) F(E, uint64_t, end) F(V, uint64_t, type)

/* A phase range event on a host thread; op is a GPUPHASE_RANGE_* value. */
#define GPUPHASE_FIELDS_RANGE(F)                                              \
  F(V, uint64_t, thread) F(V, uint64_t, op) F(V, uint64_t, start)            \
  F(V, uint64_t, name) F(V, uint64_t, id) F(V, uint64_t, domain)

/* Events dropped, by where: source 0 = a host thread's buffer was full
 * (thread says which), 1 = CUPTI dropped device records, 2 = the trace
 * file's writes failed (a full disk: the events recorded after the file's
 * last whole flush), 3 = calls made by other threads while recording was
 * starting (passed through unrecorded). */
#define GPUPHASE_FIELDS_LOST(F)                                               \
  F(V, uint64_t, thread) F(V, uint64_t, start) F(V, uint64_t, count)         \
  F(V, uint64_t, source)

/* Recording state change: state 1 = degraded from start on (reason says
 * why), 0 = full recording again. */
#define GPUPHASE_FIELDS_STATE(F)                                              \
  F(V, uint64_t, start) F(V, uint64_t, state) F(V, uint64_t, reason)

/* Final summary (in the summary frame). */
#define GPUPHASE_FIELDS_SUMMARY(F)                                            \
  F(V, uint64_t, events) F(V, uint64_t, lost) F(V, uint64_t, flags)          \
  F(V, uint64_t, end)

/* A call of gpuphase_step_items on a host thread (format version 2): the
 * current step processed `count` more items (samples, tokens, frames).
 * Written in the thread's source, like RANGE. */
#define GPUPHASE_FIELDS_ITEMS(F)                                              \
  F(V, uint64_t, thread) F(V, uint64_t, start) F(V, uint64_t, count)

/* Call sites (format version 3). All three are metadata: written once,
 * before the first record that refers to them.
 *
 * MODULE: an ELF object mapped into the process. path is a string id; base
 * the load bias (run-time address of the object's virtual address 0); size
 * the extent of its mapped segments from base; build_id the bytes of its
 * NT_GNU_BUILD_ID note (empty: none); start a time no later than its
 * mapping, hence than any capture that refers to it (the start of
 * recording for an object mapped then, else the last time the writer saw
 * no object added since it last looked: the time-ordered reader then hands
 * the MODULE out before every API record whose stack refers to it,
 * whichever thread's the writer met first);
 * unloaded the time it was seen unmapped (0: still mapped). A module seen
 * unmapped is written again, same id, with unloaded set. */
#define GPUPHASE_FIELDS_MODULE(F)                                             \
  F(V, uint64_t, module) F(V, uint64_t, path) F(B, gpuphase_blob, build_id)  \
  F(V, uint64_t, base) F(V, uint64_t, size) F(V, uint64_t, start)            \
  F(V, uint64_t, unloaded)

/* PYCODE: a Python code object that Python frames refer to. file and name
 * (the qualified name) are string ids; first_line is co_firstlineno;
 * linetable the code's line table bytes as the interpreter keeps them
 * (co_lnotab before 3.10, co_linetable from 3.10); py_version the
 * interpreter's PY_VERSION_HEX, which says how to read the table. */
#define GPUPHASE_FIELDS_PYCODE(F)                                             \
  F(V, uint64_t, code) F(V, uint64_t, file) F(V, uint64_t, name)             \
  F(V, uint64_t, first_line) F(B, gpuphase_blob, linetable)                  \
  F(V, uint64_t, py_version)

/* FRAME: a node of the call-site prefix tree, shared by all threads: one
 * frame of a captured stack and the node of its caller (parent 0: the
 * outermost frame). kind is a GPUPHASE_FRAME_* value:
 *   NATIVE: module is a MODULE id, pc the return address - base - 1 (an
 *     address inside the call instruction); the innermost native frame of
 *     a stack is the caller of the intercepted function;
 *   PYTHON: module is a PYCODE id, pc the index of the 2-byte code unit
 *     being executed (the byte offset / 2); flags bit
 *     GPUPHASE_FRAME_ENTRY: the outermost frame of the run of Python
 *     frames that one native call of the evaluation loop executes;
 *   TRUNCATED: only ever outermost; the stack was deeper than captured.
 * Order along a path (innermost first) is the thread's call order: each
 * run of Python frames sits just inside the native frame of the
 * evaluation-loop call that runs it; runs whose native frame could not be
 * told sit outside the outermost native frame. A stack is named by its
 * innermost node (API.stack). Node ids are >= 1 and each is written once. */
#define GPUPHASE_FIELDS_FRAME(F)                                              \
  F(V, uint64_t, node) F(V, uint64_t, parent) F(V, uint64_t, kind)           \
  F(V, uint64_t, module) F(V, uint64_t, pc) F(V, uint64_t, flags)

/* Measured counters (format version 4): what NVML, NVML's GPU performance
 * monitoring (GPM) and CUPTI's PM sampling report for a device, beside the
 * attribution. The counters are device-wide: they include other processes'
 * work on the device.
 *
 * METRIC: metadata (source 0), written once before the first SAMPLE that
 * refers to it. metric is the id SAMPLE records use (>= 1, one per device
 * and quantity); device the CUDA device ordinal, as in DEVICE; source a
 * GPUPHASE_MSRC_* value; name a string id of one of the names listed in
 * docs/format.md (section "Measured counters"), e.g. "gpu_util"; unit a
 * GPUPHASE_UNIT_* value; a sample's value in that unit is value / scale
 * (scale >= 1; e.g. percentages in thousandths: unit PERCENT, scale 1000).
 *
 * SAMPLE: one reading of a metric. start < end: the average over
 * [start, end) (GPU-Util over NVML's sample period, a GPM interval, a PM
 * sampling interval); start == end: the value at that instant (memory
 * used, a clock, the energy counter). Times are on the trace's clock
 * (NVML's and CUPTI's own timestamps are converted by the recorder).
 *
 * SAMPLER: the state of one source of counters for a device from start on:
 * status a GPUPHASE_MSTAT_* value (OK when sampling began; otherwise why
 * the source gives nothing from then on), reason a string id saying why in
 * words (0: none). SAMPLE and SAMPLER records are timed and go in the
 * sampler's own source, in non-decreasing start order. */
#define GPUPHASE_FIELDS_METRIC(F)                                             \
  F(V, uint64_t, metric) F(V, int64_t, device) F(V, uint64_t, source)        \
  F(V, uint64_t, name) F(V, uint64_t, unit) F(V, uint64_t, scale)

#define GPUPHASE_FIELDS_SAMPLE(F)                                             \
  F(V, uint64_t, metric) F(V, uint64_t, start) F(E, uint64_t, end)           \
  F(V, int64_t, value)

#define GPUPHASE_FIELDS_SAMPLER(F)                                            \
  F(V, uint64_t, start) F(V, int64_t, device) F(V, uint64_t, source)         \
  F(V, uint64_t, status) F(V, uint64_t, reason)

/* X(number, UPPER, lower, FIELDS) */
#define GPUPHASE_RECORD_KINDS(X)                                              \
  X(1, STRING, string, GPUPHASE_FIELDS_STRING)                               \
  X(2, THREAD, thread, GPUPHASE_FIELDS_THREAD)                               \
  X(3, API_DEF, api_def, GPUPHASE_FIELDS_API_DEF)                            \
  X(4, DEVICE, device, GPUPHASE_FIELDS_DEVICE)                               \
  X(5, API, api, GPUPHASE_FIELDS_API)                                        \
  X(6, KERNEL, kernel, GPUPHASE_FIELDS_KERNEL)                               \
  X(7, MEMCPY, memcpy, GPUPHASE_FIELDS_MEMCPY)                               \
  X(8, MEMSET, memset, GPUPHASE_FIELDS_MEMSET)                               \
  X(9, SYNC, sync, GPUPHASE_FIELDS_SYNC)                                     \
  X(10, RANGE, range, GPUPHASE_FIELDS_RANGE)                                 \
  X(11, LOST, lost, GPUPHASE_FIELDS_LOST)                                    \
  X(12, STATE, state, GPUPHASE_FIELDS_STATE)                                 \
  X(13, SUMMARY, summary, GPUPHASE_FIELDS_SUMMARY)                           \
  X(14, ITEMS, items, GPUPHASE_FIELDS_ITEMS)                                 \
  X(15, MODULE, module, GPUPHASE_FIELDS_MODULE)                              \
  X(16, PYCODE, pycode, GPUPHASE_FIELDS_PYCODE)                              \
  X(17, FRAME, frame, GPUPHASE_FIELDS_FRAME)                                 \
  X(18, METRIC, metric, GPUPHASE_FIELDS_METRIC)                              \
  X(19, SAMPLE, sample, GPUPHASE_FIELDS_SAMPLE)                              \
  X(20, SAMPLER, sampler, GPUPHASE_FIELDS_SAMPLER)

/* API class bits (API_DEF.cls). */
enum {
  GPUPHASE_API_LAUNCH = 1u << 0,  /* enqueues a kernel or graph */
  GPUPHASE_API_COPY = 1u << 1,    /* a memcpy variant */
  GPUPHASE_API_MEMSET = 1u << 2,  /* a memset variant */
  GPUPHASE_API_SYNC = 1u << 3,    /* waits for the device (synchronise) */
  GPUPHASE_API_ALLOC = 1u << 4,   /* allocates memory (bytes = size) */
  GPUPHASE_API_FREE = 1u << 5,    /* frees memory */
  GPUPHASE_API_QUERY = 1u << 6,   /* polls without blocking */
  GPUPHASE_API_ASYNC = 1u << 7,   /* stream-ordered: returns before completion */
  GPUPHASE_API_WAIT = 1u << 8,    /* orders streams (stream wait event) */
  GPUPHASE_API_HOSTMEM = 1u << 9, /* allocation or free of pinned host memory */
  GPUPHASE_API_MANAGED = 1u << 10, /* managed memory allocation */
  GPUPHASE_API_RESET = 1u << 11    /* frees every allocation of the device */
};

/* API_DEF.layer */
enum { GPUPHASE_LAYER_RUNTIME = 0, GPUPHASE_LAYER_DRIVER = 1, GPUPHASE_LAYER_NVTX = 2 };

/* API.copy_kind and MEMCPY.copy_kind */
enum {
  GPUPHASE_COPY_UNKNOWN = 0,
  GPUPHASE_COPY_HTOD = 1,
  GPUPHASE_COPY_DTOH = 2,
  GPUPHASE_COPY_DTOD = 3,
  GPUPHASE_COPY_HTOH = 4,
  GPUPHASE_COPY_PTOP = 5,
  GPUPHASE_COPY_DEFAULT = 6 /* cudaMemcpyDefault: inferred by the driver */
};

/* MEMCPY.src_mem / dst_mem */
enum {
  GPUPHASE_MEM_UNKNOWN = 0,
  GPUPHASE_MEM_PAGEABLE = 1,
  GPUPHASE_MEM_PINNED = 2,
  GPUPHASE_MEM_DEVICE = 3,
  GPUPHASE_MEM_MANAGED = 4,
  GPUPHASE_MEM_ARRAY = 5
};

/* SYNC.type */
enum {
  GPUPHASE_SYNC_UNKNOWN = 0,
  GPUPHASE_SYNC_EVENT = 1,
  GPUPHASE_SYNC_STREAM_WAIT_EVENT = 2,
  GPUPHASE_SYNC_STREAM = 3,
  GPUPHASE_SYNC_CONTEXT = 4
};
/* SYNC.stream of a synchronisation of no one stream (a context or device
 * synchronisation): CUPTI's "no stream" id */
#define GPUPHASE_SYNC_NO_STREAM 0xffffffffu

/* RANGE.op */
enum {
  GPUPHASE_RANGE_PUSH = 1,
  GPUPHASE_RANGE_POP = 2,
  GPUPHASE_RANGE_START = 3,
  GPUPHASE_RANGE_END = 4
};

/* SUMMARY.flags and header flags */
enum {
  GPUPHASE_FLAG_DEGRADED = 1u << 0, /* some or all device records missing */
  GPUPHASE_FLAG_LOST = 1u << 1      /* events were dropped */
};

/* FRAME.kind and FRAME.flags */
enum {
  GPUPHASE_FRAME_NATIVE = 1,
  GPUPHASE_FRAME_PYTHON = 2,
  GPUPHASE_FRAME_TRUNCATED = 3
};
enum { GPUPHASE_FRAME_ENTRY = 1u << 0 };

/* METRIC.source and SAMPLER.source */
enum {
  GPUPHASE_MSRC_NVML = 1, /* NVML device queries (nvidia-smi's numbers) */
  GPUPHASE_MSRC_GPM = 2,  /* NVML GPU performance monitoring (Hopper+) */
  GPUPHASE_MSRC_PM = 3    /* CUPTI PM sampling (GPUPHASE_PM=1) */
};

/* METRIC.unit */
enum {
  GPUPHASE_UNIT_PERCENT = 1,
  GPUPHASE_UNIT_BYTES = 2,
  GPUPHASE_UNIT_BYTES_PER_S = 3,
  GPUPHASE_UNIT_MHZ = 4,
  GPUPHASE_UNIT_JOULES = 5,
  GPUPHASE_UNIT_WATTS = 6,
  GPUPHASE_UNIT_CELSIUS = 7,
  GPUPHASE_UNIT_MASK = 8, /* a bit mask (NVML clock event reasons) */
  GPUPHASE_UNIT_COUNT = 9
};

/* SAMPLER.status */
enum {
  GPUPHASE_MSTAT_OK = 0,          /* sampling (again) */
  GPUPHASE_MSTAT_MISSING = 1,     /* library or entry points not found */
  GPUPHASE_MSTAT_DENIED = 2,      /* not permitted (insufficient privileges) */
  GPUPHASE_MSTAT_BUSY = 3,        /* the counters are taken by another user */
  GPUPHASE_MSTAT_UNSUPPORTED = 4, /* not on this device (arch, MIG, version) */
  GPUPHASE_MSTAT_FAILED = 5,      /* an error while sampling; stopped */
  GPUPHASE_MSTAT_OVERFLOW = 6,    /* samples were lost (buffer overflow) */
  GPUPHASE_MSTAT_OFF = 7          /* not enabled (e.g. PM without GPUPHASE_PM=1) */
};

/* MEMCPY.flags / MEMSET.flags / API.flags */
enum {
  GPUPHASE_OP_ASYNC = 1u << 0,
  /* API.flags: issued to a stream that was capturing a graph: the work
   * became a graph node and ran nothing (no device record follows) */
  GPUPHASE_OP_CAPTURED = 1u << 1
};

#endif
