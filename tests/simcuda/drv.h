/* Internal interfaces of the simulated driver (libcuda.so.1). All
 * simulation state lives here; see README.md for the model. */
#ifndef GPUSIM_DRV_H
#define GPUSIM_DRV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusim.h"

enum { STREAM_USER, STREAM_LEGACY, STREAM_PER_THREAD };

struct sim_graph;

typedef struct sim_stream {
  struct sim_stream *next;
  int dev;
  int kind;
  unsigned flags;
  int priority;
  uint32_t id;
  uint64_t tail;               /* simulated end of the last operation */
  struct sim_capture *capture; /* capture this stream takes part in */
  struct sim_node **cap_tails; /* nodes its next captured node follows */
  size_t ncap_tails, cap_tails_cap;
  /* attributes kept for cuStreamGetAttribute (drv_attr.c) */
  CUaccessPolicyWindow access_policy;
  int sync_policy, mem_sync_domain;
  CUlaunchMemSyncDomainMap mem_sync_map;
} sim_stream;

typedef struct sim_ctx {
  int dev;
  uint32_t id;
  int refs;
} sim_ctx;

/* An address range: a device or managed allocation, or pinned host
 * memory. */
typedef struct sim_alloc {
  uintptr_t base;
  size_t size; /* allocations: rounded to GP_ALIGN, counts against device */
  int dev;
  bool owned; /* pinned: allocated by us (cuMemAllocHost), not registered */
  bool array;  /* device: the memory of a CUDA array (drv_array.c) */
  bool pooled; /* device: from the default pool (stream-ordered) */
  /* managed (drv_managed.c): locations as 0 none, 1 host, 2 + d device d */
  uint8_t preferred, last_prefetch;
  bool read_mostly;
  uint8_t attach;       /* CU_MEM_ATTACH_* of the last cuStreamAttachMemAsync */
  uint32_t accessed_by; /* bit 0: host, bit 1 + d: device d */
} sim_alloc;

/* Non-overlapping ranges sorted by base. */
typedef struct sim_ranges {
  sim_alloc *v;
  size_t n, cap;
} sim_ranges;

/* A device's default memory pool (drv_attr.c): stream-ordered
 * allocations are immediate, so reserved = used. */
typedef struct sim_pool {
  uint64_t used, used_high, reserved_high, threshold;
  bool reuse_off[3]; /* CU_MEMPOOL_ATTR_REUSE_* 1..3 turned off */
} sim_pool;

typedef struct sim_device {
  int ordinal;
  sim_ctx ctx;
  sim_stream legacy;
  sim_stream *streams;       /* user-created and per-thread streams */
  uint64_t retired_blocking; /* tails of destroyed blocking streams */
  uint64_t retired_all;
  uint64_t barrier; /* work issued from now on starts after it: the end of
                       a cudaMemcpyPeer to, from or on this device */
  uintptr_t va_base; /* reserved, never accessible address range */
  size_t va_size;
  sim_ranges allocs;
  uint64_t used; /* device and managed allocations */
  sim_pool pool;
  /* the launch queue: the ends of the last launch_queue kernels, slot
   * nlaunch % launch_queue the oldest (allocated at the first launch) */
  uint64_t *qends;
  uint64_t nlaunch;
} sim_device;

typedef struct sim_event {
  struct sim_event *next;
  int dev;
  unsigned flags;
  bool recorded;
  uint32_t id;
  uint64_t time;
  unsigned long long cap_id;  /* recorded during that capture, or 0 */
  struct sim_node **cap_deps; /* the recording stream's nodes then */
  size_t ncap_deps;
} sim_event;

struct sim_module;

typedef struct sim_function {
  struct sim_function *next;
  char *name;             /* never freed: CUPTI records point to it */
  struct sim_module *mod; /* loaded from a module; NULL: gpusim_function */
  int attr[CU_FUNC_ATTRIBUTE_MAX]; /* what cuFuncGetAttribute reads */
  CUfunc_cache cache;
} sim_function;

/* Where a pointer lives, in CUPTI's memory-kind numbering. */
typedef struct sim_where {
  int kind; /* CUPTI_ACTIVITY_MEMORY_KIND_{PAGEABLE,PINNED,DEVICE,MANAGED} */
  int dev;  /* owning device for DEVICE and MANAGED, else -1 */
} sim_where;

/* One simulated device operation, as scheduled. */
typedef struct sim_op {
  uint64_t start, end;
  int dev;
  uint32_t ctx_id;
  uint32_t stream_id;
  uint32_t graph_id;      /* executable graph that ran it, 0 if none */
  uint64_t graph_node_id; /* its node in that graph, 0 if none */
} sim_op;

/* The three kinds of device work, as issued: what a stream capture
 * records as graph nodes and a graph launch issues again. */
typedef struct sim_launch {
  const sim_function *f;
  unsigned grid[3], block[3];
  unsigned shmem;
  CUstream stream;
  bool pt;
  uint8_t type; /* CUpti_ActivityLaunchType */
  /* f's name and attributes as at issue (gp_launch_bind): a module's
   * function may be unloaded before its record is written */
  const char *name;
  int regs, static_shmem;
} sim_launch;

typedef struct sim_copy {
  uintptr_t dst, src;
  uint64_t bytes;
  uint64_t dst_extent, src_extent; /* span touched, for pitched copies */
  CUstream stream;
  bool pt;
  bool async;
  /* cudaMemcpyPeer / cuMemcpyPeer: after all the work of the current,
   * source and destination devices, before any issued later, and
   * asynchronous to the host */
  bool serial;
} sim_copy;

typedef struct sim_set {
  uintptr_t dst;
  uint32_t value;
  uint64_t bytes, extent;
  CUstream stream;
  bool pt, async;
} sim_set;

enum {
  NODE_KERNEL,
  NODE_COPY,
  NODE_MEMSET,
  NODE_HOST,
  NODE_EVENT_RECORD,
  NODE_EVENT_WAIT,
  NODE_CHILD,
  NODE_EMPTY,
  NODE_MEM_ALLOC,
  NODE_MEM_FREE
};

struct sim_graph;

typedef struct sim_node {
  int kind;
  uint64_t id;  /* graphNodeId of its records */
  size_t index; /* position in its graph */
  struct sim_graph *graph;
  struct sim_node **deps; /* nodes of the same graph it follows */
  size_t ndeps;
  union {
    sim_launch k;
    sim_copy c;
    sim_set m;
    struct {
      CUhostFn fn;
      void *data;
    } h;
    CUevent ev;
    struct sim_graph *child; /* a private copy of the child graph */
    struct {
      uintptr_t ptr;
      uint64_t bytes;
    } mem;
  } u;
} sim_node;

/* A graph (captured or built), or (exec) one instantiated from it: its
 * nodes flattened (child graphs inlined) in topological order. */
typedef struct sim_graph {
  struct sim_graph *next;
  uint32_t id;
  bool exec;
  bool listed; /* a user handle (not a child graph's private copy) */
  int dev;
  sim_node **nodes;
  size_t n, cap;
  struct sim_graph *src; /* exec: the graph it was made from, while it lives */
  bool has_mem;          /* has memory alloc/free nodes */
} sim_graph;

/* A stream capture: the origin stream and every stream pulled in by
 * waiting on an event recorded in it. */
typedef struct sim_capture {
  struct sim_capture *next;
  sim_graph *g;
  sim_stream *origin;
  unsigned long long id;
  int mode;
  pthread_t thread;
  bool invalid;
} sim_capture;

#define GP_ALIGN 512u
#define GP_STREAM_LEGACY_HANDLE ((CUstream)0x1)
#define GP_STREAM_PER_THREAD_HANDLE ((CUstream)0x2)

/* drv_core.c */
extern pthread_mutex_t gp_lock;
extern gpusim_config gp_cfg;
extern sim_device gp_dev[GPUSIM_MAX_DEVICES];
extern bool gp_inited; /* set once by cuInit, under gp_lock */
static inline bool gp_ready(void) {
  return __atomic_load_n(&gp_inited, __ATOMIC_ACQUIRE);
}
void gp_config_load(void);
uint64_t gp_now(void);
void gp_sleep_until(uint64_t t);
uint64_t gp_copy_ns(uint64_t bytes, uint64_t mbps);
uint64_t gp_kernel_ns(uint64_t blocks);
sim_ctx *gp_current_ctx(void);
CUresult gp_need_ctx(sim_ctx **out);
sim_ctx *gp_ctx_lookup(CUcontext c);
uint32_t gp_next_stream_id(void);

/* drv_occupancy.c */
void gp_function_attrs(sim_function *f); /* sets the attributes of a new f */

/* drv_mem.c (callers hold gp_lock) */
sim_where gp_where(uintptr_t p);
const sim_alloc *gp_find_alloc(uintptr_t p);
CUresult gp_dev_free(uintptr_t p);
void gp_device_reset_mem(int dev);
CUresult gp_dev_alloc(int dev, size_t bytes, bool array, uintptr_t *out);
sim_alloc *gp_find_managed(uintptr_t p);
int gp_pool_device(CUmemoryPool pool); /* -1 if not a pool */
void gp_dev_free_array(int dev, uintptr_t base);

/* drv_array.c */
void gp_device_reset_arrays(int dev); /* under gp_lock */
/* An array's memory: base, bytes per row, rows per slice, total bytes;
 * false for an unknown handle. Takes gp_lock. */
bool gp_array_span(CUarray a, uintptr_t *base, size_t *row, size_t *rows,
                   size_t *bytes);

/* drv_stream.c (callers hold gp_lock unless noted) */
CUresult gp_stream_get(CUstream h, bool per_thread, sim_stream **out);
uint64_t gp_stream_ready(const sim_stream *s);
uint64_t gp_device_tail(int dev);
void gp_schedule(sim_stream *s, uint64_t dur, sim_op *op);
CUresult gp_stream_create(unsigned flags, int prio, sim_stream **out);
CUresult gp_stream_destroy(CUstream h);
CUresult gp_event_get(CUevent h, sim_event **out);
void gp_device_reset_streams(int dev);

/* drv_launch.c (callers hold gp_lock where noted) */
uint64_t gp_launch_ns(const sim_launch *l);
int64_t gp_grid_id(void); /* under gp_lock */
void gp_kernel_record(const sim_launch *l, const sim_op *op, int64_t grid_id);
void gp_function_init(sim_function *f);            /* default attributes */
void gp_function_link(sim_function *f);            /* under gp_lock */
void gp_function_unlink(sim_function *f);          /* under gp_lock */
sim_function *gp_function_find(const void *p);     /* under gp_lock */
void gp_launch_bind(sim_launch *l, const void *f); /* under gp_lock */

/* drv_module.c (callers hold gp_lock) */
void gp_device_reset_modules(int dev);

/* drv_copy.c: a copy's direction and duration, decided under gp_lock,
 * then its record, emitted without it. */
int gp_copy_plan(const sim_copy *q, sim_where *ws, sim_where *wd,
                 uint64_t *dur);
void gp_copy_record(const sim_copy *q, const sim_op *op, int kind, sim_where ws,
                    sim_where wd);
void gp_set_record(const sim_set *q, const sim_op *op, int kind);
CUresult gp_copy3d_params(const CUDA_MEMCPY3D *p, sim_copy *out);
/* Issues a copy as every copy entry point does (takes gp_lock). */
CUresult gp_copy(const sim_copy *q);

/* sim_counters.c: every operation run, for the counter model (called
 * without gp_lock). */
void gp_counters_kernel(const sim_launch *l, const sim_op *op);
void gp_counters_copy(int cupti_kind, const sim_op *op, uint64_t bytes);
void gp_counters_set(const sim_op *op, uint64_t bytes);

/* sim_counters.c: every operation run, for the counter model (called
 * without gp_lock). */
void gp_counters_kernel(const sim_launch *l, const sim_op *op);
void gp_counters_copy(int cupti_kind, const sim_op *op, uint64_t bytes);
void gp_counters_set(const sim_op *op, uint64_t bytes);

/* drv_graph.c (callers hold gp_lock) */
CUresult gp_capture(sim_stream *s, const sim_node *n);
void gp_capture_break(sim_stream *s);
void gp_capture_drop(sim_stream *s);
CUresult gp_capture_record(sim_stream *s, sim_event *e);
CUresult gp_capture_wait(sim_stream *s, sim_event *e, bool *done);
CUresult gp_capture_unsafe(void);
void gp_event_forget(sim_event *e);

/* drv_mem.c: graph allocations (callers hold gp_lock). An address range
 * reserved at node creation; it counts against the device only while
 * mapped (from its alloc node's run until freed). */
CUresult gp_graph_mem_reserve(int dev, size_t bytes, uintptr_t *out);
bool gp_graph_mem_is(uintptr_t p);
bool gp_graph_mem_live(uintptr_t p);
CUresult gp_graph_mem_map(uintptr_t p);
void gp_graph_mem_unmap(uintptr_t p);

/* drv_cupti.c */
uint32_t gp_corr(void);
uint32_t gp_runtime_corr(void);
bool gp_activity_on(CUpti_ActivityKind kind);
uint64_t gp_ts(uint64_t mono);
void gp_emit(const void *rec, size_t size);
void gp_emit_sync(CUpti_ActivitySynchronizationType type, uint64_t start,
                  uint64_t end, uint32_t ctx_id, uint32_t stream_id,
                  uint32_t event_id, CUresult ret);

/* Opens and closes the CUPTI frame of an exported driver function, with
 * the matching cbid and generated parameter struct. */
#define DRV_ENTER(fn, ...)                                                     \
  fn##_params prm_ = {__VA_ARGS__};                                            \
  gpusim_api_frame fr_;                                                        \
  gpusim_api_enter(&fr_, CUPTI_CB_DOMAIN_DRIVER_API,                           \
                   CUPTI_DRIVER_TRACE_CBID_##fn, #fn, &prm_, NULL)
#define DRV_ENTER0(fn)                                                         \
  gpusim_api_frame fr_;                                                        \
  gpusim_api_enter(&fr_, CUPTI_CB_DOMAIN_DRIVER_API,                           \
                   CUPTI_DRIVER_TRACE_CBID_##fn, #fn, NULL, NULL)
#define DRV_RETURN(expr)                                                       \
  do {                                                                         \
    CUresult drv_ret_ = (expr); /* a name no caller's expression uses */       \
    gpusim_api_exit(&fr_, &drv_ret_);                                          \
    return drv_ret_;                                                           \
  } while (0)

#endif
