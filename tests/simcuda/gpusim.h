/* Private contract between the three simulated libraries (libcuda.so.1,
 * libcudart.so.13, libcupti.so.13) and the self-tests. The driver owns all
 * simulation state; the runtime and CUPTI reach it through these gpusim_*
 * symbols, looked up with dlsym on the dlopen("libcuda.so.1") handle, so
 * that the same interception paths as with the real stack are exercised.
 * Nothing here is part of gpuphase. */
#ifndef GPUSIM_H
#define GPUSIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti.h>

#define GPUSIM_EXPORT __attribute__((visibility("default")))
#define GPUSIM_MAX_DEVICES 16

/* Model parameters as the driver parsed them from the environment. */
typedef struct gpusim_config {
  int devices;              /* GPUSIM_DEVICES */
  int sms;                  /* GPUSIM_SMS */
  uint64_t mem_bytes;       /* GPUSIM_MEM_BYTES */
  uint64_t wave_ns;         /* GPUSIM_WAVE_NS */
  uint64_t pcie_mbps;       /* GPUSIM_PCIE_GBPS x 1000 (bytes per us) */
  uint64_t hbm_mbps;        /* GPUSIM_HBM_GBPS x 1000 */
  uint64_t copy_latency_ns; /* GPUSIM_COPY_LATENCY_NS */
  uint64_t api_ns;          /* GPUSIM_API_NS (spent by the runtime) */
  int cupti_busy;           /* GPUSIM_CUPTI=busy */
  uint64_t launch_queue;    /* GPUSIM_LAUNCH_QUEUE: kernels a device holds
                               unfinished before a launch waits; 0: any */
} gpusim_config;

/* One API call in flight: lives on the caller's stack between enter and
 * exit so that the exit callback sees the same correlation id and
 * correlationData slot as the enter callback. */
typedef struct gpusim_api_frame {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char *name;
  const void *params;
  const char *symbol;
  uint32_t corr;
  int notify;
  uint64_t corr_data;
} gpusim_api_frame;

/* Entry points of the CUPTI implementation inside the driver; libcupti's
 * exported functions forward to these one to one. */
typedef struct gpusim_cupti_ops {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                           void *);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle,
                                 CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle,
                               CUpti_CallbackDomain);
  CUptiResult (*get_callback_state)(uint32_t *, CUpti_SubscriberHandle,
                                    CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
  CUptiResult (*register_buffers)(CUpti_BuffersCallbackRequestFunc,
                                  CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*activity_enable)(CUpti_ActivityKind, int enable);
  CUptiResult (*flush_all)(uint32_t flag);
  CUptiResult (*dropped)(size_t *);
  CUptiResult (*timestamp)(uint64_t *);
  CUptiResult (*finalize)(void);
  CUptiResult (*context_id)(CUcontext, uint32_t *);
  CUptiResult (*device_id)(CUcontext, uint32_t *);
  CUptiResult (*stream_id)(CUcontext, CUstream, int per_thread, uint32_t *);
} gpusim_cupti_ops;

#ifdef __cplusplus
extern "C" {
#endif

/* sim_open.c, built into libcudart and libcupti (not exported). */
void *gp_sim_open_driver(void);

/* Exported by libcuda.so.1. */
const gpusim_config *gpusim_get_config(void);
void gpusim_api_enter(gpusim_api_frame *f, CUpti_CallbackDomain domain,
                      CUpti_CallbackId cbid, const char *name,
                      const void *params, const char *symbol);
void gpusim_api_exit(gpusim_api_frame *f, void *retval);
CUfunction gpusim_function(const char *name);
const char *gpusim_function_name(const void *maybe_function);
/* The device of the calling thread's current context, -1 with none (no
 * API call, no callback: the runtime asks it before each call). */
int gpusim_current_device(void);
unsigned long long gpusim_procaddr_count(void);
const gpusim_cupti_ops *gpusim_cupti(void);
int gpusim_device_ids(int dev, char *pci, size_t len, unsigned char uuid[16]);

#ifdef __cplusplus
}
#endif

#endif
