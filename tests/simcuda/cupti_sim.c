/* Simulated libcupti.so.13: the subset of CUPTI a tracer uses. All state
 * lives in the simulated driver, reached at run time through
 * dlopen("libcuda.so.1") and its gpusim_cupti() hook; record parsing is
 * local. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "gpusim.h"

#define API GPUSIM_EXPORT

static const gpusim_cupti_ops *ops;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = gp_sim_open_driver();
  const gpusim_cupti_ops *(*get)(void) =
      h ? (const gpusim_cupti_ops *(*)(void))dlsym(h, "gpusim_cupti") : NULL;
  ops = get ? get() : NULL;
}

static const gpusim_cupti_ops *drv(void) {
  pthread_once(&once, load);
  return ops;
}

/* Forwards to the driver, or reports that no (simulated) driver is
 * there. */
#define FWD(call) return drv() ? drv()->call : CUPTI_ERROR_NOT_INITIALIZED

API CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

static const struct {
  CUptiResult code;
  const char *text;
} results[] = {
    {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
    {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
    {CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE"},
    {CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT"},
    {CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
    {CUPTI_ERROR_OUT_OF_MEMORY, "CUPTI_ERROR_OUT_OF_MEMORY"},
    {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
    {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
    {CUPTI_ERROR_INVALID_STREAM, "CUPTI_ERROR_INVALID_STREAM"},
    {CUPTI_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND"},
    {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
    {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
     "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
    {CUPTI_ERROR_INVALID_METRIC_NAME, "CUPTI_ERROR_INVALID_METRIC_NAME"},
    {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
     "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
    {CUPTI_ERROR_INVALID_CHIP_NAME, "CUPTI_ERROR_INVALID_CHIP_NAME"},
    {CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"},
};

API CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result,
                                              const char **str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < sizeof results / sizeof results[0]; i++) {
    if (results[i].code == result) {
      *str = results[i].text;
      return CUPTI_SUCCESS;
    }
  }
  *str = "CUPTI_ERROR_UNKNOWN";
  return CUPTI_ERROR_INVALID_PARAMETER;
}

API CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                        CUpti_CallbackFunc callback,
                                        void *userdata) {
  FWD(subscribe(subscriber, callback, userdata));
}

API CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                           CUpti_CallbackFunc callback,
                                           void *userdata,
                                           CUpti_SubscriberParams *params) {
  (void)params;
  FWD(subscribe(subscriber, callback, userdata));
}

API CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  FWD(unsubscribe(subscriber));
}

API CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
                                             CUpti_SubscriberHandle subscriber,
                                             CUpti_CallbackDomain domain,
                                             CUpti_CallbackId cbid) {
  FWD(enable_callback(enable, subscriber, domain, cbid));
}

API CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable,
                                           CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain) {
  FWD(enable_domain(enable, subscriber, domain));
}

API CUptiResult CUPTIAPI
cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  if (!drv()) return CUPTI_ERROR_NOT_INITIALIZED;
  CUptiResult r =
      drv()->enable_domain(enable, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  if (r == CUPTI_SUCCESS)
    r = drv()->enable_domain(enable, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  return r;
}

API CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable,
                                               CUpti_SubscriberHandle sub,
                                               CUpti_CallbackDomain domain,
                                               CUpti_CallbackId cbid) {
  FWD(get_callback_state(enable, sub, domain, cbid));
}

API CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  FWD(register_timestamp(fn));
}

API CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  FWD(register_buffers(funcBufferRequested, funcBufferCompleted));
}

API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  FWD(activity_enable(kind, 1));
}

API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  FWD(activity_enable(kind, 0));
}

/* Buffers are process-wide in the simulation, so per-context enabling is
 * global enabling. */
API CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context,
                                                    CUpti_ActivityKind kind) {
  (void)context;
  FWD(activity_enable(kind, 1));
}

API CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context,
                                                     CUpti_ActivityKind kind) {
  (void)context;
  FWD(activity_enable(kind, 0));
}

API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  FWD(flush_all(flag));
}

API CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext context,
                                            uint32_t streamId, uint32_t flag) {
  (void)context, (void)streamId;
  FWD(flush_all(flag));
}

/* Accepted; the simulation never flushes on a timer. */
API CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time) {
  (void)time;
  return drv() ? CUPTI_SUCCESS : CUPTI_ERROR_NOT_INITIALIZED;
}

API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                           uint32_t streamId,
                                                           size_t *dropped) {
  (void)context, (void)streamId;
  FWD(dropped(dropped));
}

API CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
  FWD(timestamp(timestamp));
}

API CUptiResult CUPTIAPI cuptiFinalize(void) {
  FWD(finalize());
}

API CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context,
                                           uint32_t *contextId) {
  FWD(context_id(context, contextId));
}

API CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context,
                                          uint32_t *deviceId) {
  FWD(device_id(context, deviceId));
}

API CUptiResult CUPTIAPI cuptiGetStreamId(CUcontext context, CUstream stream,
                                          uint32_t *streamId) {
  FWD(stream_id(context, stream, 0, streamId));
}

API CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream,
                                            uint8_t perThreadStream,
                                            uint32_t *streamId) {
  FWD(stream_id(context, stream, perThreadStream, streamId));
}

/* Size of each record kind the simulation produces. */
static size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMCPY2:
    return sizeof(CUpti_ActivityMemcpyPtoP4);
  case CUPTI_ACTIVITY_KIND_MEMSET:
    return sizeof(CUpti_ActivityMemset4);
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    return sizeof(CUpti_ActivitySynchronization2);
  default:
    return 0;
  }
}

static size_t align8(size_t n) {
  return (n + 7) & ~(size_t)7;
}

/* Walks the records of a completed buffer; *record == NULL starts at the
 * beginning, otherwise the record after *record is returned. */
API CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
                                                    size_t validBufferSizeBytes,
                                                    CUpti_Activity **record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t off = 0;
  if (*record) {
    size_t cur = (size_t)((uint8_t *)*record - buffer);
    size_t size = record_size((*record)->kind);
    if (!size || cur >= validBufferSizeBytes)
      return CUPTI_ERROR_INVALID_PARAMETER;
    off = cur + align8(size);
  }
  if (off + sizeof(CUpti_Activity) > validBufferSizeBytes)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  CUpti_Activity *next = (CUpti_Activity *)(buffer + off);
  size_t size = record_size(next->kind);
  if (!size) return CUPTI_ERROR_INVALID_KIND;
  if (off + size > validBufferSizeBytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}
