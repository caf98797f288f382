/* CUDA runtime wrappers, generated from the table in api_runtime.def. Each
 * wrapper: resolve the real function once, take a timestamp, call it, take a
 * timestamp, store one 64-byte event into the thread's ring. Nothing else:
 * classification and names are the report's business. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "gp_shim.h"
#include "gp_apitab.h"
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

#include "api_runtime.def"

/* ---- ids, names, classes ---- */
#define IDS_N(n) GP_API_##n,
#define IDS_Z(n) GP_API_##n, GP_API_##n##_ptsz,
#define IDS_D(n) GP_API_##n, GP_API_##n##_ptds,
#define ID_ROW(v, n, c, p, a, rec) IDS_##v(n)
enum { GP_API_NONE_ = 0, GP_RUNTIME_API(ID_ROW) GP_API_END_ };

#define NAMES_N(n) #n,
#define NAMES_Z(n) #n, #n "_ptsz",
#define NAMES_D(n) #n, #n "_ptds",
#define NAME_ROW(v, n, c, p, a, rec) NAMES_##v(n)
static const char *const api_names[] = {"", GP_RUNTIME_API(NAME_ROW)};

#define CLS_N(c) (c),
#define CLS_Z(c) (c), (c),
#define CLS_D(c) (c), (c),
#define CLS_ROW(v, n, c, p, a, rec) CLS_##v(c)
static const uint32_t api_cls[] = {0, GP_RUNTIME_API(CLS_ROW)};

_Static_assert(sizeof(api_names) / sizeof(api_names[0]) == GP_API_END_,
               "one name per id");

uint32_t gp_api_count(void) {
  return GP_API_END_;
}
const char *gp_api_name(uint32_t id) {
  return id < GP_API_END_ ? api_names[id] : "";
}
uint32_t gp_api_cls(uint32_t id) {
  return id < GP_API_END_ ? api_cls[id] : 0;
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

static inline uint64_t sum_sizes(const size_t *sizes, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; sizes && i < n; i++) s += sizes[i];
  return s;
}

static inline uint64_t batch3d_bytes(size_t n,
                                     const struct cudaMemcpy3DBatchOp *ops) {
  uint64_t s = 0;
  for (size_t i = 0; ops && i < n; i++) s += extent_bytes(ops[i].extent);
  return s;
}

static inline uint32_t dim_total(dim3 d) {
  uint64_t t = (uint64_t)d.x * d.y * d.z;
  return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static inline uint16_t block_total(dim3 d) {
  uint32_t t = dim_total(d);
  return t > UINT16_MAX ? UINT16_MAX : (uint16_t)t;
}

#define REC_NONE() (void)0
#define REC_STREAM(s) (ev->stream = (uintptr_t)(s))
#define REC_AUX(p) (ev->aux = (uintptr_t)(p))
#define REC_COPY(n, k, s)                                                      \
  (ev->bytes = (uint64_t)(n), ev->copy_kind = copy_kind((int)(k)),             \
   REC_STREAM(s))
#define REC_PEER(n, s)                                                         \
  (ev->bytes = (uint64_t)(n), ev->copy_kind = GPUPHASE_COPY_PTOP, REC_STREAM(s))
#define REC_SET(n, s) (ev->bytes = (uint64_t)(n), REC_STREAM(s))
#define REC_LAUNCH(f, g, b, smem, s)                                           \
  (REC_AUX(f), ev->grid = dim_total(g), ev->block = block_total(b),            \
   ev->bytes = (uint64_t)(smem), REC_STREAM(s))
#define REC_LAUNCH_CFG(cfg, f)                                                 \
  (REC_AUX(f),                                                                 \
   (cfg) ? (ev->grid = dim_total((cfg)->gridDim),                              \
            ev->block = block_total((cfg)->blockDim),                          \
            ev->bytes = (uint64_t)(cfg)->dynamicSmemBytes,                     \
            REC_STREAM((cfg)->stream))                                         \
         : 0)
#define REC_HOSTFN(f, s) (REC_AUX(f), REC_STREAM(s))
#define REC_ALLOC(pp, n)                                                       \
  (ev->bytes = (uint64_t)(n),                                                  \
   ev->aux = (r == cudaSuccess && (pp)) ? (uintptr_t) * (pp) : 0)
#define REC_ALLOC3D(pdp, e)                                                    \
  ((r == cudaSuccess && (pdp))                                                 \
       ? (ev->bytes = (uint64_t)(pdp)->pitch * ((e).height ? (e).height : 1) * \
                      ((e).depth ? (e).depth : 1),                             \
          REC_AUX((pdp)->ptr))                                                 \
       : 0)
#define REC_PIN(p, n) (REC_AUX(p), ev->bytes = (uint64_t)(n))
#define REC_SETDEV(d)                                                          \
  ((r == cudaSuccess ? (void)(ts->device = (d)) : (void)0),                    \
   ev->device = (d))

/* ---- the wrapper body ---- */
#define GP_WRAPPER(NAME, ID, PARAMS, ARGS, REC)                                \
  typedef cudaError_t(*NAME##_fn) PARAMS;                                      \
  GP_EXPORT cudaError_t NAME PARAMS {                                          \
    static NAME##_fn real_;                                                    \
    NAME##_fn f = real_;                                                       \
    if (GP_UNLIKELY(f == NULL)) {                                              \
      f = (NAME##_fn)gp_real_runtime(#NAME);                                   \
      if (f == NULL) return cudaErrorSharedObjectSymbolNotFound;               \
      real_ = f;                                                               \
    }                                                                          \
    struct gp_tstate *ts = gp_enter();                                         \
    if (ts == NULL) return f ARGS;                                             \
    uint64_t t0 = gp_now();                                                    \
    cudaError_t r = f ARGS;                                                    \
    uint64_t t1 = gp_now();                                                    \
    struct gp_event *ev = gp_slot(ts->buf);                                    \
    if (GP_LIKELY(ev != NULL)) {                                               \
      *ev = (struct gp_event){.t0 = t0,                                        \
                              .t1 = t1,                                        \
                              .api = (ID),                                     \
                              .ret = (int32_t)r,                               \
                              .corr = ts->corr,                                \
                              .device = ts->device,                            \
                              .type = GP_EV_API};                              \
      REC;                                                                     \
      gp_publish(ts->buf, 1);                                                  \
    }                                                                          \
    gp_leave(ts);                                                              \
    return r;                                                                  \
  }

#define WRAP_N(n, p, a, rec) GP_WRAPPER(n, GP_API_##n, p, a, rec)
#define WRAP_Z(n, p, a, rec)                                                   \
  WRAP_N(n, p, a, rec) GP_WRAPPER(n##_ptsz, GP_API_##n##_ptsz, p, a, rec)
#define WRAP_D(n, p, a, rec)                                                   \
  WRAP_N(n, p, a, rec) GP_WRAPPER(n##_ptds, GP_API_##n##_ptds, p, a, rec)
#define WRAP_ROW(v, n, c, p, a, rec) WRAP_##v(n, p, a, rec)

/* Declarations for the names the C headers do not declare. */
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t,
                               cudaStream_t);

GP_RUNTIME_API(WRAP_ROW)
