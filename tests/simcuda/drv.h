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
  uint64_t tail;             /* simulated end of the last operation */
  struct sim_graph *capture; /* graph being captured, or NULL */
  bool capture_invalid;      /* an unsupported call broke the capture */
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
} sim_alloc;

/* Non-overlapping ranges sorted by base. */
typedef struct sim_ranges {
  sim_alloc *v;
  size_t n, cap;
} sim_ranges;

typedef struct sim_device {
  int ordinal;
  sim_ctx ctx;
  sim_stream legacy;
  sim_stream *streams;       /* user-created and per-thread streams */
  uint64_t retired_blocking; /* tails of destroyed blocking streams */
  uint64_t retired_all;
  uintptr_t va_base; /* reserved, never accessible address range */
  size_t va_size;
  sim_ranges allocs;
  uint64_t used; /* device and managed allocations */
} sim_device;

typedef struct sim_event {
  struct sim_event *next;
  int dev;
  unsigned flags;
  bool recorded;
  uint32_t id;
  uint64_t time;
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
} sim_copy;

typedef struct sim_set {
  uintptr_t dst;
  uint32_t value;
  uint64_t bytes, extent;
  CUstream stream;
  bool pt, async;
} sim_set;

enum { NODE_KERNEL, NODE_COPY, NODE_MEMSET };

typedef struct sim_node {
  int kind;
  uint64_t id;
  union {
    sim_launch k;
    sim_copy c;
    sim_set m;
  } u;
} sim_node;

/* A captured graph, or (exec) one instantiated from it. */
typedef struct sim_graph {
  struct sim_graph *next;
  uint32_t id;
  bool exec;
  int dev;
  sim_node *nodes;
  size_t n, cap;
} sim_graph;

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

/* drv_mem.c (callers hold gp_lock) */
sim_where gp_where(uintptr_t p);
const sim_alloc *gp_find_alloc(uintptr_t p);
CUresult gp_dev_alloc(int dev, size_t bytes, uintptr_t *out);
CUresult gp_dev_free(uintptr_t p);
void gp_device_reset_mem(int dev);

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

/* drv_graph.c (callers hold gp_lock) */
CUresult gp_capture(sim_stream *s, const sim_node *n);
void gp_capture_break(sim_stream *s);
void gp_capture_drop(sim_stream *s);

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
    CUresult r_ = (expr);                                                      \
    gpusim_api_exit(&fr_, &r_);                                                \
    return r_;                                                                 \
  } while (0)

#endif
