/* The CUPTI callback ids of the functions gpuphase records. gpuphase
 * subscribes to CUPTI for one thing: the correlation id of each call it
 * records, which links the call to the device records it causes. Enabling
 * whole callback domains would make every CUDA call (cudaGetDevice,
 * cudaGetLastError, cuCtxGetCurrent, millions of them under PyTorch) pay
 * CUPTI's callback dispatch; so only the ids of the recorded functions are
 * enabled, one cuptiEnableCallback each.
 *
 * The recorded functions are the rows of preload/api_runtime.def and
 * api_driver.def, expanded here with their _ptsz/_ptds variants exactly as
 * preload/wrap.c expands them (and under the same #if guards). Each name is
 * mapped to its CUPTI_RUNTIME_TRACE_CBID_* / CUPTI_DRIVER_TRACE_CBID_*
 * enumerators by gp_cupti_cbids.h, which gen_cbids.py generates at build
 * time from the toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h: by
 * name, never by number, since the set of ids differs between CUDA
 * versions. A runtime function may have several ids (the batch copies of
 * CUDA 12.8 and 13 share names but not signatures: both ids are enabled,
 * whichever runtime calls). A recorded function without an id in the
 * headers gpuphase is built with is simply not enabled (the generated
 * header lists them): its calls get no correlation id of their own, though
 * one that reaches a recorded driver function still gets that call's id,
 * which CUPTI gives the runtime call that made it. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gp_cupti_ids.h"
#include "gp_cupti_cbids.h"

#include "../preload/api_driver.def"
#include "../preload/api_runtime.def"

/* One row of a .def table: its names (variants as in wrap.c), each through
 * the generated GP_CBIDS_<layer>_<name>(X) to its ids. Names are pasted,
 * never macro-expanded. */
#define ID_(id) id,
#define VAR_N(p) p(ID_)
#define VAR_Z(p) p(ID_) p##_ptsz(ID_)
#define VAR_A(p) VAR_Z(p)
#define VAR_L(p) VAR_Z(p)
#define VAR_D(p) p(ID_) p##_ptds(ID_)
#define RT_ROW(v, n, ...) VAR_##v(GP_CBIDS_RT_##n)
#define DRV_ROW(v, n, ...) VAR_##v(GP_CBIDS_DRV_##n)

/* Each list ends with the domain's INVALID id (0), which is not counted:
 * no list is ever empty in C's eyes. */
static const CUpti_CallbackId runtime_ids[] = {
    GP_RUNTIME_API(RT_ROW) CUPTI_RUNTIME_TRACE_CBID_INVALID};
static const CUpti_CallbackId driver_ids[] = {
    GP_DRIVER_API(DRV_ROW) CUPTI_DRIVER_TRACE_CBID_INVALID};

size_t gp_cupti_ids(CUpti_CallbackDomain domain, const CUpti_CallbackId **ids) {
  switch (domain) {
  case CUPTI_CB_DOMAIN_RUNTIME_API:
    *ids = runtime_ids;
    return sizeof runtime_ids / sizeof runtime_ids[0] - 1;
  case CUPTI_CB_DOMAIN_DRIVER_API:
    *ids = driver_ids;
    return sizeof driver_ids / sizeof driver_ids[0] - 1;
  default:
    *ids = NULL;
    return 0;
  }
}
