/* CUDA runtime and driver wrappers, generated from the tables in
 * api_runtime.def and api_driver.def. Each wrapper: resolve the real
 * function once, take a timestamp, call it, take a timestamp, store one
 * 64-byte event into the thread's ring (two for a launch with dim3
 * arguments: variant L). Nothing else: classification and
 * names are the report's business. A call made from inside another wrapped
 * call (the runtime calling the driver) passes straight through, so it is
 * counted once, as the outer call. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "gp_config.h"
#include "gp_shim.h"
#include "gp_apitab.h"
#include "gp_stacks.h"
#include "gpuphase/trace_records.h"

/* Short class names used by the table. */
#define COPY GPUPHASE_API_COPY
#define MEMSET GPUPHASE_API_MEMSET
#define LAUNCH GPUPHASE_API_LAUNCH
#define SYNC GPUPHASE_API_SYNC
#define ALLOC GPUPHASE_API_ALLOC
#define FREE GPUPHASE_API_FREE
#define QUERY GPUPHASE_API_QUERY
#define ASYNC GPUPHASE_API_ASYNC
#define WAIT GPUPHASE_API_WAIT
#define HOSTMEM GPUPHASE_API_HOSTMEM
#define MANAGED GPUPHASE_API_MANAGED
#define RESET GPUPHASE_API_RESET

#include "api_driver.def"
#include "api_runtime.def"

/* ---- ids, names, classes, layers ---- */
#define IDS_N(n) GP_API_##n,
#define IDS_Z(n) GP_API_##n, GP_API_##n##_ptsz,
#define IDS_D(n) GP_API_##n, GP_API_##n##_ptds,
#define IDS_A(n) IDS_Z(n)
#define IDS_L(n) IDS_Z(n)
#define ID_ROW(v, n, c, p, a, rec) IDS_##v(n)
enum {
  GP_API_NONE_ = 0,
  GP_RUNTIME_API(ID_ROW) GP_API_RUNTIME_END_,
  GP_API_DRIVER_BEGIN_ = GP_API_RUNTIME_END_ - 1,
  GP_DRIVER_API(ID_ROW) GP_API_END_
};

#define NAMES_N(n) #n,
#define NAMES_Z(n) #n, #n "_ptsz",
#define NAMES_D(n) #n, #n "_ptds",
#define NAMES_A(n) NAMES_Z(n)
#define NAMES_L(n) NAMES_Z(n)
#define NAME_ROW(v, n, c, p, a, rec) NAMES_##v(n)
static const char *const api_names[] = {"", GP_RUNTIME_API(NAME_ROW)
                                            GP_DRIVER_API(NAME_ROW)};

#define CLS_N(c) (c),
#define CLS_Z(c) (c), (c),
#define CLS_D(c) (c), (c),
#define CLS_A(c) (c), (c),
#define CLS_L(c) (c), (c),
#define CLS_ROW(v, n, c, p, a, rec) CLS_##v(c)
static const uint32_t api_cls[] = {0, GP_RUNTIME_API(CLS_ROW)
                                          GP_DRIVER_API(CLS_ROW)};

_Static_assert(sizeof(api_names) / sizeof(api_names[0]) == GP_API_END_,
               "one name per id");
_Static_assert(GP_API_END_ <= UINT16_MAX, "an api id fits the ring event's");

uint32_t gp_api_count(void) {
  return GP_API_END_;
}
const char *gp_api_name(uint32_t id) {
  return id < GP_API_END_ ? api_names[id] : "";
}
uint32_t gp_api_cls(uint32_t id) {
  return id < GP_API_END_ ? api_cls[id] : 0;
}
uint32_t gp_api_layer(uint32_t id) {
  return id > GP_API_DRIVER_BEGIN_ && id < GP_API_END_ ? GPUPHASE_LAYER_DRIVER
                                                       : GPUPHASE_LAYER_RUNTIME;
}

/* ---- helpers used by the record statements ---- */
static const struct cudaExtent zero_extent;

static inline uint8_t copy_kind(int k) {
  switch (k) {
  case cudaMemcpyHostToHost: return GPUPHASE_COPY_HTOH;
  case cudaMemcpyHostToDevice: return GPUPHASE_COPY_HTOD;
  case cudaMemcpyDeviceToHost: return GPUPHASE_COPY_DTOH;
  case cudaMemcpyDeviceToDevice: return GPUPHASE_COPY_DTOD;
  case cudaMemcpyDefault: return GPUPHASE_COPY_DEFAULT;
  default: return GPUPHASE_COPY_UNKNOWN;
  }
}

static inline uint64_t extent_bytes(struct cudaExtent e) {
  return (uint64_t)e.width * (e.height ? e.height : 1) * (e.depth ? e.depth : 1);
}

static inline uint64_t desc_bytes(const struct cudaChannelFormatDesc *d) {
  if (!d) return 1;
  uint64_t bits = (uint64_t)(d->x + d->y + d->z + d->w);
  return bits >= 8 ? bits / 8 : 1;
}

/* The elements of a mipmapped array's `levels` levels: each level halves
 * every non-zero extent (at least 1). */
static inline uint64_t mipmap_bytes(struct cudaExtent e, unsigned levels) {
  uint64_t s = 0;
  for (unsigned l = 0; l < levels && l < 64; l++) {
    struct cudaExtent x = {e.width ? (e.width >> l ? e.width >> l : 1) : 0,
                           e.height ? (e.height >> l ? e.height >> l : 1) : 0,
                           e.depth ? (e.depth >> l ? e.depth >> l : 1) : 0};
    s += extent_bytes(x);
  }
  return s;
}

/* Bytes of a driver array format element. */
static inline uint64_t format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF: return 2;
  default: return 4;
  }
}

static inline uint64_t array2d_bytes(const CUDA_ARRAY_DESCRIPTOR *d) {
  if (!d) return 0;
  return (uint64_t)d->Width * (d->Height ? d->Height : 1) *
         format_bytes(d->Format) * d->NumChannels;
}

/* A 3D array, or all `levels` levels of a mipmapped one. */
static inline uint64_t array3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d,
                                     unsigned levels) {
  if (!d) return 0;
  struct cudaExtent e = {d->Width, d->Height, d->Depth};
  return mipmap_bytes(e, levels) * format_bytes(d->Format) * d->NumChannels;
}

static inline uint64_t sum_sizes(const size_t *sizes, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; sizes && i < n; i++) s += sizes[i];
  return s;
}

#if CUDART_VERSION >= 12080
static inline uint64_t batch3d_bytes(size_t n,
                                     const struct cudaMemcpy3DBatchOp *ops) {
  uint64_t s = 0;
  for (size_t i = 0; ops && i < n; i++) s += extent_bytes(ops[i].extent);
  return s;
}
#endif

static inline uint32_t dim_total(dim3 d) {
  uint64_t t = (uint64_t)d.x * d.y * d.z;
  return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static inline uint16_t block_total(dim3 d) {
  uint32_t t = dim_total(d);
  return t > UINT16_MAX ? UINT16_MAX : (uint16_t)t;
}

#if CUDA_VERSION >= 13000
static inline uint64_t dbatch3d_bytes(size_t n,
                                      const CUDA_MEMCPY3D_BATCH_OP *ops) {
  uint64_t s = 0;
  for (size_t i = 0; ops && i < n; i++)
    s += (uint64_t)ops[i].extent.width * (ops[i].extent.height ? ops[i].extent.height : 1) *
         (ops[i].extent.depth ? ops[i].extent.depth : 1);
  return s;
}
#endif

static inline uint8_t mem_copy_kind(CUmemorytype src, CUmemorytype dst) {
  int sh = src == CU_MEMORYTYPE_HOST, dh = dst == CU_MEMORYTYPE_HOST;
  int su = src == CU_MEMORYTYPE_UNIFIED, du = dst == CU_MEMORYTYPE_UNIFIED;
  if (su || du) return GPUPHASE_COPY_DEFAULT;
  if (sh && dh) return GPUPHASE_COPY_HTOH;
  if (sh) return GPUPHASE_COPY_HTOD;
  if (dh) return GPUPHASE_COPY_DTOH;
  return GPUPHASE_COPY_DTOD;
}

static inline uint32_t total3(unsigned x, unsigned y, unsigned z) {
  uint64_t t = (uint64_t)x * y * z;
  return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* The record statements run twice, with gp_post_ 0 before the real call
 * and 1 after it: what comes from the arguments is stored before the call
 * (so the arguments need not be kept across it), what depends on its
 * result (r, outputs, the current device) after. */
#define GP_PRE(x) (gp_post_ ? (void)0 : (void)(x))
#define GP_POST(x) (gp_post_ ? (void)(x) : (void)0)

#define REC_NONE() (void)0
#define REC_STREAM(s) GP_PRE(ev->stream = (uintptr_t)(s))
#define REC_AUX(p) GP_PRE(ev->aux = (uintptr_t)(p))
#define REC_COPY(n, k, s)                                                      \
  GP_PRE((ev->bytes = (uint64_t)(n), ev->copy_kind = copy_kind((int)(k)),      \
          REC_STREAM(s)))
#define REC_PEER(n, s)                                                         \
  GP_PRE((ev->bytes = (uint64_t)(n), ev->copy_kind = GPUPHASE_COPY_PTOP,       \
          REC_STREAM(s)))
#define REC_SET(n, s) GP_PRE((ev->bytes = (uint64_t)(n), REC_STREAM(s)))
#define REC_LAUNCH(f, g, b, smem, s)                                           \
  GP_PRE((REC_AUX(f), ev->grid = dim_total(g), ev->block = block_total(b),     \
          ev->bytes = (uint64_t)(smem), REC_STREAM(s)))
#define REC_LAUNCH_CFG(cfg, f)                                                 \
  GP_PRE((REC_AUX(f),                                                          \
          (cfg) ? (ev->grid = dim_total((cfg)->gridDim),                       \
                   ev->block = block_total((cfg)->blockDim),                   \
                   ev->bytes = (uint64_t)(cfg)->dynamicSmemBytes,              \
                   REC_STREAM((cfg)->stream))                                  \
                : (void)0))
#define REC_HOSTFN(f, s) GP_PRE((REC_AUX(f), REC_STREAM(s)))
#define REC_ALLOC(pp, n)                                                       \
  GP_POST((ev->bytes = (uint64_t)(n),                                          \
           ev->aux = ((int)r == 0 && (pp)) ? (uintptr_t) * (pp) : 0))
#define REC_ALLOC3D(pdp, e)                                                    \
  GP_POST((r == cudaSuccess && (pdp))                                          \
              ? (ev->bytes = (uint64_t)(pdp)->pitch *                          \
                             ((e).height ? (e).height : 1) *                   \
                             ((e).depth ? (e).depth : 1),                      \
                 ev->aux = (uintptr_t)(pdp)->ptr)                              \
              : 0)
/* a graph memory allocation node: its graph, size and (after) address */
#define REC_GALLOC(p, g)                                                       \
  (GP_PRE((REC_STREAM(g), ev->bytes = (p) ? (uint64_t)(p)->bytesize : 0)),     \
   GP_POST(ev->aux = ((int)r == 0 && (p)) ? (uintptr_t)(p)->dptr : 0))
#define REC_DGALLOC(p, g) REC_GALLOC(p, g)
/* an instantiation: (before) its graph, (after) the executable graph */
#define REC_GEXEC(pp)                                                          \
  GP_POST(ev->aux = ((int)r == 0 && (pp)) ? (uintptr_t) * (pp) : 0)
#define REC_PIN(p, n) GP_PRE((REC_AUX(p), ev->bytes = (uint64_t)(n)))
#define REC_DCOPY(n, k, s)                                                     \
  GP_PRE((ev->bytes = (uint64_t)(n), ev->copy_kind = (k), REC_STREAM(s)))
#define REC_DCOPY2D(p, s)                                                      \
  GP_PRE(((p) ? (ev->bytes = (uint64_t)(p)->WidthInBytes * (p)->Height,        \
                 ev->copy_kind =                                               \
                     mem_copy_kind((p)->srcMemoryType, (p)->dstMemoryType))    \
              : 0,                                                             \
          REC_STREAM(s)))
#define REC_DCOPY3D(p, s)                                                      \
  GP_PRE(((p) ? (ev->bytes = (uint64_t)(p)->WidthInBytes *                     \
                             ((p)->Height ? (p)->Height : 1) *                 \
                             ((p)->Depth ? (p)->Depth : 1),                    \
                 ev->copy_kind =                                               \
                     mem_copy_kind((p)->srcMemoryType, (p)->dstMemoryType))    \
              : 0,                                                             \
          REC_STREAM(s)))
#define REC_DLAUNCH(f, gx, gy, gz, bx, by, bz, smem, s)                        \
  GP_PRE((REC_AUX(f), ev->grid = total3(gx, gy, gz),                           \
          ev->block = (uint16_t)(total3(bx, by, bz) > UINT16_MAX               \
                                     ? UINT16_MAX                              \
                                     : total3(bx, by, bz)),                    \
          ev->bytes = (uint64_t)(smem), REC_STREAM(s)))
#define REC_DLAUNCH_CFG(cfg, f)                                                \
  ((cfg) ? REC_DLAUNCH(f, (cfg)->gridDimX, (cfg)->gridDimY, (cfg)->gridDimZ,   \
                       (cfg)->blockDimX, (cfg)->blockDimY, (cfg)->blockDimZ,   \
                       (cfg)->sharedMemBytes, (cfg)->hStream)                  \
         : REC_AUX(f))
#define REC_CTXDEV()                                                           \
  GP_POST((r == CUDA_SUCCESS ? gp_track_ctx_device(ts) : (void)0,              \
           ev->device = ts->device))
/* a call about another device than the current one */
#define REC_DEV(d) GP_POST(ev->device = (int32_t)(d))
/* cuCtxDestroy: the device of the context destroyed (asked before the
 * call, kept in aux meanwhile), not the one current after it */
#define REC_CTXDESTROY(ctx)                                                    \
  ((!gp_post_ ? (void)(ev->aux = (uint64_t)(gp_ctx_device_of(ctx) + 1))        \
              : (void)0),                                                      \
   GP_POST((r == CUDA_SUCCESS ? gp_track_ctx_device(ts) : (void)0,             \
            ev->device = ev->aux ? (int32_t)(ev->aux - 1) : ts->device,        \
            ev->aux = 0)))
/* A failed cudaSetDevice changed nothing: its record is on the device that
 * stays current (a device that does not exist must not become a GPU of
 * the report). */
#define REC_SETDEV(d)                                                          \
  GP_POST(((r == cudaSuccess ? (void)(ts->device = ts->rt_device = (d))       \
                             : (void)0),                                       \
           ev->device = ts->device))

/* ---- the wrapper body ---- */
/* The recording part of every wrapper, once gp_fn_ (the real function) is
 * known: the slot is taken and filled from the arguments before the call,
 * the two timestamps taken around it, the result stored after it; the
 * writer sees the slot once it is published. Every byte of the slot is
 * stored once: the fields no record statement sets are zero. A full ring
 * counts the call lost (gp_slot) and makes it all the same. */
#define GP_RECORD_CALL(RET, ARGS, ID, REC)                                     \
  struct gp_tstate *ts = gp_enter_outer();                                     \
  if (ts == NULL) {                                                            \
    if (GP_LIKELY(gp_ts.depth == 0)) return gp_fn_ ARGS;                       \
    /* made while recording starts: counted lost, depth raised */            \
    RET gp_r_ = gp_fn_ ARGS;                                                   \
    gp_leave(&gp_ts);                                                          \
    return gp_r_;                                                              \
  }                                                                            \
  struct gp_tbuf *gp_b_ = ts->buf;                                             \
  /* the call site, before the slot (a new stack's event goes first) */        \
  uint16_t gp_stk_ = gp_stk_policy[ID]                                         \
                         ? gp_stack_on_call(gp_b_, gp_stk_policy[ID])          \
                         : 0;                                                  \
  struct gp_event *ev = gp_slot(gp_b_);                                        \
  RET r = (RET)0;                                                              \
  if (GP_UNLIKELY(ev == NULL)) {                                               \
    r = gp_fn_ ARGS;                                                           \
    gp_leave(ts);                                                              \
    return r;                                                                  \
  }                                                                            \
  ev->stream = 0;                                                              \
  ev->bytes = 0;                                                               \
  ev->aux = 0;                                                                 \
  ev->api = (ID);                                                              \
  ev->grid = 0;                                                                \
  ev->block = 0;                                                               \
  ev->copy_kind = 0;                                                           \
  ev->type = GP_EV_API;                                                        \
  ev->stack = gp_stk_;                                                         \
  {                                                                            \
    enum { gp_post_ = 0 };                                                     \
    REC;                                                                       \
  }                                                                            \
  if (GP_LIKELY(gp_clock_tsc)) { /* one test for both timestamps */            \
    ev->t0 = gp_tsc();                                                         \
    r = gp_fn_ ARGS;                                                           \
    ev->t1 = gp_tsc();                                                         \
  } else {                                                                     \
    ev->t0 = gp_mono_ns();                                                     \
    r = gp_fn_ ARGS;                                                           \
    ev->t1 = gp_mono_ns();                                                     \
  }                                                                            \
  ev->ret = (int32_t)r;                                                        \
  /* after a blocking call, its next submission is captured, whatever       \
   * calls that capture nothing come between (cudaSetDevice, a query) */     \
  ts->stk.last_end =                                                           \
      gp_stk_policy[ID] == GP_STKP_BLOCK ||                                    \
              (gp_stk_policy[ID] == GP_STKP_NONE &&                            \
               ts->stk.last_end == GP_STK_BLOCKED)                             \
          ? GP_STK_BLOCKED                                                     \
          : ev->t1;                                                            \
  gp_event_corr_device(ev, ts);                                                \
  {                                                                            \
    enum { gp_post_ = 1 };                                                     \
    REC;                                                                       \
  }                                                                            \
  gp_publish(gp_b_, 1);                                                        \
  gp_leave_published(ts);                                                      \
  return r;

/* Each wrapper is four functions with the same parameters, so that the
 * exported one only tests the thread's depth and jumps, before any
 * register is saved: a call made from inside another wrapped call (the
 * runtime calling the driver) straight on to real_NAME, every other call to
 * hook_NAME, which records it. Neither pointer is ever NULL: until the real
 * function is known, real_NAME is pass_NAME and hook_NAME first_NAME, which
 * find it (and then do the same); hook_NAME is rec_NAME from then on. A
 * function the library below lacks gives MISSING, unrecorded. */
#define GP_WRAPPER_STUBS(RET, MISSING, LAYER, NAME, PARAMS, ARGS)              \
  typedef RET(*NAME##_fn) PARAMS;                                              \
  static RET pass_##NAME PARAMS;                                               \
  static RET first_##NAME PARAMS;                                              \
  static RET rec_##NAME PARAMS;                                                \
  static void *real_##NAME = (void *)pass_##NAME;                              \
  static void *hook_##NAME = (void *)first_##NAME;                             \
  static NAME##_fn resolve_##NAME(void) {                                      \
    void *f = __atomic_load_n(&real_##NAME, __ATOMIC_ACQUIRE);                 \
    if (f != (void *)pass_##NAME) return (NAME##_fn)f;                         \
    f = gp_real_layer(LAYER, #NAME);                                           \
    if (f) __atomic_store_n(&real_##NAME, f, __ATOMIC_RELEASE);                \
    return (NAME##_fn)f;                                                       \
  }                                                                            \
  static __attribute__((noinline)) RET pass_##NAME PARAMS {                    \
    NAME##_fn gp_fn_ = resolve_##NAME();                                       \
    if (gp_fn_ == NULL) return MISSING;                                        \
    return gp_fn_ ARGS;                                                        \
  }                                                                            \
  static __attribute__((noinline)) RET first_##NAME PARAMS {                   \
    NAME##_fn gp_fn_ = resolve_##NAME();                                       \
    if (gp_fn_ == NULL) return MISSING;                                        \
    __atomic_store_n(&hook_##NAME, (void *)rec_##NAME, __ATOMIC_RELEASE);      \
    if (gp_nested()) return gp_fn_ ARGS;                                       \
    return rec_##NAME ARGS;                                                    \
  }

#define GP_WRAPPER_ENTRY(RET, NAME, PARAMS, ARGS)                              \
  {                                                                            \
    if (gp_nested())                                                           \
      return ((NAME##_fn)__atomic_load_n(&real_##NAME, __ATOMIC_RELAXED))ARGS; \
    return ((NAME##_fn)__atomic_load_n(&hook_##NAME, __ATOMIC_RELAXED))ARGS;   \
  }

#define GP_WRAPPER(RET, MISSING, LAYER, NAME, ID, PARAMS, ARGS, REC)           \
  GP_WRAPPER_STUBS(RET, MISSING, LAYER, NAME, PARAMS, ARGS)                    \
  static __attribute__((noinline)) RET rec_##NAME PARAMS {                     \
    NAME##_fn gp_fn_ =                                                         \
        (NAME##_fn)__atomic_load_n(&real_##NAME, __ATOMIC_RELAXED);            \
    GP_RECORD_CALL(RET, ARGS, ID, REC)                                         \
  }                                                                            \
  GP_EXPORT RET NAME PARAMS GP_WRAPPER_ENTRY(RET, NAME, PARAMS, ARGS)

/* Variant A (api_runtime.def): nine integer-class arguments passed on as
 * they came, whatever the caller's signature; the symbol is given by an asm
 * label so that the header's prototype of the name does not clash. */
#define GP_ANY_PARAMS                                                          \
  (uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4,        \
   uintptr_t a5, uintptr_t a6, uintptr_t a7, uintptr_t a8)
#define GP_ANY_ARGS (a0, a1, a2, a3, a4, a5, a6, a7, a8)
#define GP_WRAPPER_ANY(NAME, ID, REC)                                          \
  typedef cudaError_t(*NAME##_fn) GP_ANY_PARAMS;                               \
  static void *real_##NAME;                                                    \
  static int abi12_##NAME;                                                     \
  static __attribute__((noinline)) cudaError_t rec_##NAME GP_ANY_PARAMS {      \
    NAME##_fn gp_fn_ =                                                         \
        (NAME##_fn)__atomic_load_n(&real_##NAME, __ATOMIC_ACQUIRE);            \
    int abi12 = __atomic_load_n(&abi12_##NAME, __ATOMIC_RELAXED);              \
    GP_RECORD_CALL(cudaError_t, GP_ANY_ARGS, ID, REC)                          \
  }                                                                            \
  static __attribute__((noinline)) cudaError_t first_##NAME GP_ANY_PARAMS {    \
    NAME##_fn gp_fn_ =                                                         \
        (NAME##_fn)gp_real_layer(GPUPHASE_LAYER_RUNTIME, #NAME);               \
    if (gp_fn_ == NULL) return cudaErrorSharedObjectSymbolNotFound;            \
    __atomic_store_n(&abi12_##NAME, gp_runtime_abi12((void *)gp_fn_),          \
                     __ATOMIC_RELAXED);                                        \
    /* published after abi12, which other threads then read with it */         \
    __atomic_store_n(&real_##NAME, (void *)gp_fn_, __ATOMIC_RELEASE);          \
    if (gp_nested()) return gp_fn_ GP_ANY_ARGS;                                \
    return rec_##NAME GP_ANY_ARGS;                                             \
  }                                                                            \
  GP_EXPORT cudaError_t gp_any_##NAME GP_ANY_PARAMS __asm__(#NAME);            \
  GP_EXPORT cudaError_t gp_any_##NAME GP_ANY_PARAMS {                          \
    NAME##_fn gp_fn_ =                                                         \
        (NAME##_fn)__atomic_load_n(&real_##NAME, __ATOMIC_ACQUIRE);            \
    if (GP_UNLIKELY(gp_fn_ == NULL)) return first_##NAME GP_ANY_ARGS;          \
    if (gp_nested()) return gp_fn_ GP_ANY_ARGS;                                \
    return rec_##NAME GP_ANY_ARGS;                                             \
  }


#define RT_W(n, p, a, rec)                                                     \
  GP_WRAPPER(cudaError_t, cudaErrorSharedObjectSymbolNotFound,                 \
             GPUPHASE_LAYER_RUNTIME, n, GP_API_##n, p, a, rec)
#define DRV_W(n, p, a, rec)                                                    \
  GP_WRAPPER(CUresult, CUDA_ERROR_NOT_FOUND, GPUPHASE_LAYER_DRIVER, n,         \
             GP_API_##n, p, a, rec)

#define WRAP_VARIANTS_N(W, n, p, a, rec) W(n, p, a, rec)
#define WRAP_VARIANTS_Z(W, n, p, a, rec) W(n, p, a, rec) W(n##_ptsz, p, a, rec)
#define WRAP_VARIANTS_D(W, n, p, a, rec) W(n, p, a, rec) W(n##_ptds, p, a, rec)
#define WRAP_VARIANTS_A(W, n, p, a, rec)                                       \
  GP_WRAPPER_ANY(n, GP_API_##n, rec) GP_WRAPPER_ANY(n##_ptsz, GP_API_##n##_ptsz, rec)
/* Variant L (api_runtime.def): a launch whose parameters are (function,
 * dim3 grid, dim3 block, void **args, size_t sharedMem, cudaStream_t), the
 * runtime's cudaLaunchKernel family, and the hot path of a real program.
 * Where a dim3 is passed in two integer registers (x86-64, AArch64) the
 * wrapper takes each as those two words, so that the compiler moves no
 * dim3 through memory, and records them raw in the event's second slot
 * (GP_EV_LAUNCH: the writer works out the totals): the slot is filled from
 * the arguments first, and the real function gets them back from it, so
 * that none is kept in a register across the slot's work. Elsewhere it is
 * a variant Z wrapper with REC_LAUNCH. Either way the prototype in the .def
 * row is checked against the header's. */
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(GP_LAUNCH_TYPED)
#define GP_LAUNCH_WORDS 1
#define GP_LAUNCH_PARAMS                                                       \
  (const void *f, uint64_t gxy, uint64_t gz, uint64_t bxy, uint64_t bz,        \
   void **args, size_t smem, cudaStream_t stream)
#define GP_LAUNCH_ARGS (f, gxy, gz, bxy, bz, args, smem, stream)
/* The slot's fields as the real function's arguments (args parked in t1,
 * which the call's end overwrites). */
#define GP_LAUNCH_FROM_SLOT(ev, d)                                             \
  ((const void *)(uintptr_t)(ev)->aux, (d)->grid_xy, (d)->grid_z,              \
   (d)->block_xy, (d)->block_z, (void **)(uintptr_t)(ev)->t1, (ev)->bytes,     \
   (cudaStream_t)(uintptr_t)(ev)->stream)

typedef cudaError_t(*launch_words_fn) GP_LAUNCH_PARAMS;

/* The call and its two timestamps where the clock is CLOCK_MONOTONIC. */
static inline __attribute__((always_inline)) cudaError_t
launch_mono(struct gp_event *ev, void *fn) {
  struct gp_launch_dims *d = (struct gp_launch_dims *)(ev + 1);
  ev->t0 = gp_mono_ns();
  cudaError_t r = ((launch_words_fn)fn)GP_LAUNCH_FROM_SLOT(ev, d);
  ev->t1 = gp_mono_ns();
  return r;
}

/* The TSC's. */
#define GP_LAUNCH_TSC(NAME)                                                    \
  ev->t0 = gp_tsc();                                                           \
  r = ((NAME##_fn)__atomic_load_n(&real_##NAME,                                \
                                  __ATOMIC_RELAXED))GP_LAUNCH_ARGS;            \
  ev->t1 = gp_tsc();
#define GP_LAUNCH_MONO(NAME)                                                   \
  /* the arguments are read back from the slot, not kept across the clock */ \
  ev->t1 = (uintptr_t)args; /* the call's end overwrites it */                \
  __asm__ volatile("" ::: "memory");                                           \
  r = launch_mono(ev, __atomic_load_n(&real_##NAME, __ATOMIC_RELAXED));

/* A launch recorded, the ring and process ready: the slot reserved (FULL
 * when the ring cannot take it), filled from the arguments, the call timed
 * by TIMED, the call site decided from the call's start (gp_stacks.h), the
 * event published. */
#define GP_LAUNCH_RECORD(NAME, ID, b, FULL, TIMED)                             \
  uint64_t h = atomic_load_explicit(&b->head, memory_order_relaxed);           \
  if (GP_UNLIKELY(h >= atomic_load_explicit(&b->limit, memory_order_acquire))) \
    return FULL GP_LAUNCH_ARGS;                                                \
  gp_ts.depth = 1;                                                             \
  gp_ts.corr = 0;                                                              \
  struct gp_event *ev = &b->ev[h & b->mask];                                   \
  struct gp_launch_dims *d = (struct gp_launch_dims *)(ev + 1);                \
  ev->aux = (uintptr_t)f;                                                      \
  d->grid_xy = gxy;                                                            \
  d->grid_z = gz;                                                              \
  d->block_xy = bxy;                                                           \
  d->block_z = bz;                                                             \
  ev->bytes = (uint64_t)smem;                                                  \
  ev->stream = (uintptr_t)stream;                                              \
  gp_event_kind(ev, ID, GP_EV_LAUNCH);                                         \
  ev->block = 0; /* with the kind, one store */                               \
  ev->stack = 0;                                                               \
  cudaError_t r;                                                               \
  TIMED                                                                        \
  if (GP_LIKELY(gp_stk_launch_quiet(ev->t0))) {                                \
    ev->ret = (int32_t)r;                                                      \
    gp_event_corr_device(ev, &gp_ts);                                          \
    gp_ts.stk.last_end = ev->t1;                                               \
    gp_publish(gp_ts.buf, 2);                                                  \
    gp_leave_published(&gp_ts);                                               \
    return r;                                                                  \
  } else {                                                                     \
    ev->ret = (int32_t)r;                                                      \
    gp_event_corr_device(ev, &gp_ts);                                          \
    gp_stack_after_launch(gp_ts.buf, gp_stk_policy[ID]);                       \
  }                                                                            \
  gp_leave(&gp_ts);                                                            \
  return r;

#define GP_WRAPPER_LAUNCH(NAME, ID)                                            \
  GP_WRAPPER_STUBS(cudaError_t, cudaErrorSharedObjectSymbolNotFound,           \
                   GPUPHASE_LAYER_RUNTIME, NAME, GP_LAUNCH_PARAMS,             \
                   GP_LAUNCH_ARGS)                                             \
  /* Off the fast path, as calls of their own that the fast path jumps to,     \
   * so that it keeps no argument across a call but the real one: the          \
   * thread or process not ready (the first call starts recording), the         \
   * CLOCK_MONOTONIC clock, and a full ring (counted lost). */                 \
  static __attribute__((noinline, cold))                                       \
  cudaError_t full_##NAME GP_LAUNCH_PARAMS {                                   \
    gp_ts.depth = 1;                                                           \
    gp_ring_full(gp_ts.buf);                                                   \
    cudaError_t r = ((NAME##_fn)__atomic_load_n(                               \
        &real_##NAME, __ATOMIC_RELAXED))GP_LAUNCH_ARGS;                        \
    gp_leave(&gp_ts);                                                          \
    return r;                                                                  \
  }                                                                            \
  static __attribute__((noinline, cold))                                       \
  cudaError_t mono_##NAME GP_LAUNCH_PARAMS {                                   \
    struct gp_tbuf *b = gp_ts.buf;                                             \
    GP_LAUNCH_RECORD(NAME, ID, b, full_##NAME, GP_LAUNCH_MONO(NAME))           \
  }                                                                            \
  /* the fast path's recording, for a call the slow path let through while    \
   * gp_fast_state and gp_state differ (recording starting or stopping) */     \
  static __attribute__((noinline, cold))                                       \
  cudaError_t tsc_##NAME GP_LAUNCH_PARAMS {                                    \
    struct gp_tbuf *b = gp_ts.buf;                                             \
    GP_LAUNCH_RECORD(NAME, ID, b, full_##NAME, GP_LAUNCH_TSC(NAME))            \
  }                                                                            \
  /* The thread or process not ready (the first call starts recording), or     \
   * the clock CLOCK_MONOTONIC: recorded by the clock's path, never by the      \
   * fast path again (which would come back here while the two states          \
   * differ). */                                                               \
  static __attribute__((noinline, cold))                                       \
  cudaError_t slow_##NAME GP_LAUNCH_PARAMS {                                   \
    if (gp_enter_slow() == NULL) {                                             \
      NAME##_fn gp_fn_ =                                                       \
          (NAME##_fn)__atomic_load_n(&real_##NAME, __ATOMIC_RELAXED);          \
      if (GP_LIKELY(gp_ts.depth == 0)) return gp_fn_ GP_LAUNCH_ARGS;           \
      /* made while recording starts: counted lost, depth raised */          \
      cudaError_t r = gp_fn_ GP_LAUNCH_ARGS;                                   \
      gp_leave(&gp_ts);                                                        \
      return r;                                                                \
    }                                                                          \
    gp_leave(&gp_ts);                                                          \
    if (gp_clock_tsc) return tsc_##NAME GP_LAUNCH_ARGS;                        \
    return mono_##NAME GP_LAUNCH_ARGS;                                         \
  }                                                                            \
  /* The fast path: one test (gp_fast_state) for the process running and its \
   * clock the TSC. */                                                         \
  static __attribute__((noinline)) cudaError_t rec_##NAME GP_LAUNCH_PARAMS {   \
    struct gp_tbuf *b = gp_ts.buf;                                             \
    if (GP_UNLIKELY(b == NULL ||                                               \
                    atomic_load_explicit(&gp_fast_state,                       \
                                         memory_order_relaxed) != GP_RUNNING)) \
      return slow_##NAME GP_LAUNCH_ARGS;                                       \
    GP_LAUNCH_RECORD(NAME, ID, b, full_##NAME, GP_LAUNCH_TSC(NAME))            \
  }                                                                            \
  GP_EXPORT cudaError_t gp_launch_##NAME GP_LAUNCH_PARAMS __asm__(#NAME);      \
  GP_EXPORT cudaError_t gp_launch_##NAME GP_LAUNCH_PARAMS GP_WRAPPER_ENTRY(    \
      cudaError_t, NAME, GP_LAUNCH_PARAMS, GP_LAUNCH_ARGS)
#define GP_LAUNCH_ROW(n, p)                                                    \
  _Static_assert(                                                              \
      __builtin_types_compatible_p(__typeof__(&n), cudaError_t(*) p),          \
      #n ": prototype as in the header");                                      \
  GP_WRAPPER_LAUNCH(n, GP_API_##n)                                             \
  GP_WRAPPER_LAUNCH(n##_ptsz, GP_API_##n##_ptsz)
#define WRAP_VARIANTS_L(W, n, p, a, rec) GP_LAUNCH_ROW(n, p)
#else
#define WRAP_VARIANTS_L(W, n, p, a, rec) WRAP_VARIANTS_Z(W, n, p, a, rec)
#endif

#define RT_ROW(v, n, c, p, a, rec) WRAP_VARIANTS_##v(RT_W, n, p, a, rec)
#define DRV_ROW(v, n, c, p, a, rec) WRAP_VARIANTS_##v(DRV_W, n, p, a, rec)

/* Declarations for the names the C headers do not declare. CUDA 13's
 * <<<>>> calls __cudaLaunchKernel; it is wrapped whatever headers gpuphase
 * was built with, so that CUDA 13 programs are seen. */
#if !GP_HAVE_CUDA_KERNEL_T
typedef struct CUkern_st *cudaKernel_t;
#endif
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t,
                               cudaStream_t);
/* cuCtxCreate's older versions, which every driver still exports: CUDA 13's
 * cuda.h declares only the newest (cuCtxCreate is cuCtxCreate_v4). */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
                                CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx,
                                CUexecAffinityParam *paramsArray,
                                int numParams, unsigned int flags,
                                CUdevice dev);

GP_RUNTIME_API(RT_ROW)
GP_DRIVER_API(DRV_ROW)

/* ---- index by exported name, for dlsym and the entry-point resolvers ---- */
#define IDX_ONE(n, layer)                                                      \
  {#n, (void *)n, &real_##n, (void *)pass_##n, layer, NULL},
#define IDX_N(n, l) IDX_ONE(n, l)
#define IDX_Z(n, l) IDX_ONE(n, l) IDX_ONE(n##_ptsz, l)
#define IDX_D(n, l) IDX_ONE(n, l) IDX_ONE(n##_ptds, l)
#define IDX_ANY(n, layer)                                                      \
  {#n, (void *)gp_any_##n, &real_##n, NULL, layer, &abi12_##n},
#define IDX_A(n, l) IDX_ANY(n, l) IDX_ANY(n##_ptsz, l)
#if GP_LAUNCH_WORDS
#define IDX_LAUNCH(n, layer)                                                   \
  {#n, (void *)gp_launch_##n, &real_##n, (void *)pass_##n, layer, NULL},
#define IDX_L(n, l) IDX_LAUNCH(n, l) IDX_LAUNCH(n##_ptsz, l)
#else
#define IDX_L(n, l) IDX_Z(n, l)
#endif
#define IDX_RT(v, n, c, p, a, rec) IDX_##v(n, GPUPHASE_LAYER_RUNTIME)
#define IDX_DRV(v, n, c, p, a, rec) IDX_##v(n, GPUPHASE_LAYER_DRIVER)

/* The index names deprecated functions too: we wrap them, not call them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static const struct gp_wrap_entry wrap_index[] = {
    GP_RUNTIME_API(IDX_RT) GP_DRIVER_API(IDX_DRV)};
#pragma GCC diagnostic pop

const struct gp_wrap_entry *gp_wrap_lookup(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof wrap_index / sizeof wrap_index[0]; i++)
    if (strcmp(wrap_index[i].name, name) == 0) return &wrap_index[i];
  return NULL;
}
