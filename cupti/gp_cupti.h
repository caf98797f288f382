/* CUPTI glue: loads CUPTI lazily, subscribes, collects activity buffers and
 * turns activity records into neutral device-activity structs. Depends on
 * the CUDA/CUPTI headers only; the preload library supplies the hooks. */
#ifndef GP_CUPTI_H
#define GP_CUPTI_H

#include <stddef.h>
#include <stdint.h>

enum { GP_DA_KERNEL = 1, GP_DA_MEMCPY, GP_DA_MEMSET, GP_DA_SYNC };

struct gp_dev_activity {
  int kind;
  uint32_t device, stream, corr;
  uint64_t start, end; /* CLOCK_MONOTONIC ns (our timestamp callback) */
  const char *name;    /* kernels; owned by CUPTI */
  uint32_t grid[3], block[3];
  uint32_t regs, smem_static, smem_dynamic;
  uint64_t graph_id;
  uint64_t bytes;
  uint32_t copy_kind; /* GPUPHASE_COPY_* */
  uint32_t src_mem, dst_mem; /* GPUPHASE_MEM_* */
  int32_t peer_device;
  uint32_t flags; /* GPUPHASE_OP_* */
  uint32_t value;
  uint32_t sync_type; /* GPUPHASE_SYNC_* */
};

struct gp_cupti_hooks {
  /* Called on the application thread at API entry with CUPTI's
   * correlation id for that call. */
  void (*on_api_enter)(uint32_t corr);
  /* Recording lost device records from time `mono_ns` on (on=1) or got
   * them back (on=0); reason is a short sentence. */
  void (*degraded)(uint64_t mono_ns, int on, const char *reason);
  /* Wakes the consumer when buffers are waiting. */
  void (*wake)(void);
  uint64_t (*now_ns)(void);
};

/* Loads and enables CUPTI. `cudart_addr` is the address of any function of
 * the CUDA runtime in use (to find libcupti beside it); `override_path` the
 * user's GPUPHASE_CUPTI_LIB ("" if none); `cuda_home` the toolkit root.
 * Returns 0 when device records will flow, -1 when degraded (hooks->degraded
 * has been called and one line printed by the caller's warn hook). */
int gp_cupti_open(const struct gp_cupti_hooks *hooks, const void *cudart_addr,
                  const char *override_path, const char *cuda_home,
                  const char **why);

/* Asks CUPTI to hand over its buffers (forced: also partly filled ones). */
void gp_cupti_flush_buffers(int forced);

/* Parses the completed buffers waiting for us; calls cb per activity.
 * Returns the number of buffers consumed. Consumer thread only. */
typedef void (*gp_dev_activity_cb)(const struct gp_dev_activity *a, void *ctx);
size_t gp_cupti_consume(gp_dev_activity_cb cb, void *ctx);

/* CUPTI is loaded and we want its records (possibly waiting for another
 * tool to release it). */
int gp_cupti_wanted(void);

/* Records CUPTI reported as dropped so far. */
uint64_t gp_cupti_dropped(void);

/* Unsubscribes and disables activity (after a final flush + consume). */
void gp_cupti_close(void);

/* In a forked child: forget the parent's state (no CUPTI calls). */
void gp_cupti_forget(void);

/* The loaded CUPTI library (dlopen handle), NULL if none was found. */
void *gp_cupti_handle(void);

#endif
