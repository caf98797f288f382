/* Simulated driver: stream attributes, default memory pool attributes and
 * peer attributes (README.md, "Attributes"). None of them changes
 * timing; they are kept and read back. */
#include <string.h>

#include "drv.h"

/* Stream priorities run from 0 (least) to -5 (greatest), as
 * cuCtxGetStreamPriorityRange says. */
static int clamp_priority(int p) {
  return p > 0 ? 0 : p < -5 ? -5 : p;
}

static CUresult stream_attr(CUstream h, bool pt, CUstreamAttrID id,
                            CUstreamAttrValue *v, bool set) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS) {
    switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      if (set && (v->accessPolicyWindow.hitRatio < 0 ||
                  v->accessPolicyWindow.hitRatio > 1))
        r = CUDA_ERROR_INVALID_VALUE;
      else if (set)
        s->access_policy = v->accessPolicyWindow;
      else
        v->accessPolicyWindow = s->access_policy;
      break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (set && (v->syncPolicy < CU_SYNC_POLICY_AUTO ||
                  v->syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC))
        r = CUDA_ERROR_INVALID_VALUE;
      else if (set)
        s->sync_policy = v->syncPolicy;
      else
        v->syncPolicy = s->sync_policy ? (CUsynchronizationPolicy)s->sync_policy
                                       : CU_SYNC_POLICY_AUTO;
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      if (set)
        s->priority = clamp_priority(v->priority);
      else
        v->priority = s->priority;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      if (set)
        s->mem_sync_map = v->memSyncDomainMap;
      else
        v->memSyncDomainMap = s->mem_sync_map;
      break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (set && v->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
          v->memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
        r = CUDA_ERROR_INVALID_VALUE;
      else if (set)
        s->mem_sync_domain = v->memSyncDomain;
      else
        v->memSyncDomain = (CUlaunchMemSyncDomain)s->mem_sync_domain;
      break;
    default:
      r = CUDA_ERROR_INVALID_VALUE;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

#define STREAM_ATTR_PAIR(name, set, cv)                                        \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUstream hStream, CUstreamAttrID attr,   \
                                      cv CUstreamAttrValue *value);            \
  GPUSIM_EXPORT CUresult CUDAAPI name(CUstream hStream, CUstreamAttrID attr,   \
                                      cv CUstreamAttrValue *value) {           \
    DRV_ENTER(name, hStream, attr, value);                                     \
    if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);                   \
    CUstreamAttrValue v_;                                                      \
    if (set && value) v_ = *value;                                             \
    CUresult res =                                                             \
        stream_attr(hStream, PT_##name, attr, value ? &v_ : NULL, set);        \
    if (!set && res == CUDA_SUCCESS) memcpy((void *)value, &v_, sizeof v_);    \
    DRV_RETURN(res);                                                           \
  }
#define PT_cuStreamGetAttribute false
#define PT_cuStreamGetAttribute_ptsz true
#define PT_cuStreamSetAttribute false
#define PT_cuStreamSetAttribute_ptsz true
STREAM_ATTR_PAIR(cuStreamGetAttribute, false, )
STREAM_ATTR_PAIR(cuStreamGetAttribute_ptsz, false, )
STREAM_ATTR_PAIR(cuStreamSetAttribute, true, const)
STREAM_ATTR_PAIR(cuStreamSetAttribute_ptsz, true, const)

static CUresult copy_attrs(CUstream dst, CUstream src, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_stream *d, *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(dst, pt, &d);
  if (r == CUDA_SUCCESS) r = gp_stream_get(src, pt, &s);
  if (r == CUDA_SUCCESS) {
    d->access_policy = s->access_policy;
    d->sync_policy = s->sync_policy;
    d->priority = s->priority;
    d->mem_sync_map = s->mem_sync_map;
    d->mem_sync_domain = s->mem_sync_domain;
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamCopyAttributes(CUstream dst,
                                                      CUstream src) {
  DRV_ENTER(cuStreamCopyAttributes, dst, src);
  DRV_RETURN(copy_attrs(dst, src, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamCopyAttributes_ptsz(CUstream dst,
                                                           CUstream src);
GPUSIM_EXPORT CUresult CUDAAPI cuStreamCopyAttributes_ptsz(CUstream dst,
                                                           CUstream src) {
  DRV_ENTER(cuStreamCopyAttributes_ptsz, dst, src);
  DRV_RETURN(copy_attrs(dst, src, true));
}

/* ---- the default memory pool ---- */

static CUresult pool_attr(CUmemoryPool pool, CUmemPool_attribute a, void *v,
                          bool set) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&gp_lock);
  int d = gp_pool_device(pool);
  sim_pool *p = d >= 0 ? &gp_dev[d].pool : NULL;
  if (!p) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else {
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      if (set)
        p->reuse_off[a - 1] = *(int *)v == 0;
      else
        *(int *)v = !p->reuse_off[a - 1];
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      if (set)
        p->threshold = *(cuuint64_t *)v;
      else
        *(cuuint64_t *)v = p->threshold;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      if (set)
        r = CUDA_ERROR_INVALID_VALUE;
      else
        *(cuuint64_t *)v = p->used;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
      uint64_t *hw = a == CU_MEMPOOL_ATTR_USED_MEM_HIGH ? &p->used_high
                                                        : &p->reserved_high;
      /* the high-water marks can only be reset, to the current use */
      if (set && *(cuuint64_t *)v != 0)
        r = CUDA_ERROR_INVALID_VALUE;
      else if (set)
        *hw = p->used;
      else
        *(cuuint64_t *)v = *hw;
      break;
    }
    default:
      r = CUDA_ERROR_INVALID_VALUE;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool,
                                                     CUmemPool_attribute attr,
                                                     void *value) {
  DRV_ENTER(cuMemPoolGetAttribute, pool, attr, value);
  DRV_RETURN(pool_attr(pool, attr, value, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool,
                                                     CUmemPool_attribute attr,
                                                     void *value) {
  DRV_ENTER(cuMemPoolSetAttribute, pool, attr, value);
  DRV_RETURN(pool_attr(pool, attr, value, true));
}

/* Freed memory goes back to the device at once: nothing to trim. */
GPUSIM_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool,
                                               size_t minBytesToKeep) {
  DRV_ENTER(cuMemPoolTrimTo, pool, minBytesToKeep);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  pthread_mutex_lock(&gp_lock);
  int d = gp_pool_device(pool);
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(d >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* ---- peers: every pair of distinct devices is linked alike ---- */

GPUSIM_EXPORT CUresult CUDAAPI
cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                        CUdevice srcDevice, CUdevice dstDevice) {
  DRV_ENTER(cuDeviceGetP2PAttribute, value, attrib, srcDevice, dstDevice);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (srcDevice < 0 || srcDevice >= gp_cfg.devices || dstDevice < 0 ||
      dstDevice >= gp_cfg.devices || srcDevice == dstDevice)
    DRV_RETURN(CUDA_ERROR_INVALID_DEVICE);
  if (!value) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  switch (attrib) {
  case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
    *value = 0;
    break;
  case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
  case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
  case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
    *value = 1;
    break;
  default:
    *value = 0;
    DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  }
  DRV_RETURN(CUDA_SUCCESS);
}
