/* The simulated device's counters: what a hardware sampler (NVML, GPM,
 * CUPTI PM sampling) would read over a window, derived from the
 * operations the simulated driver ran (see README.md, "Counters").
 * Exported by the simulated libcuda.so.1; reach it with dlsym on the
 * dlopen("libcuda.so.1") handle. Nothing here is part of gpuphase. */
#ifndef GPUSIM_COUNTERS_H
#define GPUSIM_COUNTERS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpusim_counters {
  double gpu_util_pct;      /* share of [t0,t1) with >= 1 kernel running */
  double sm_active_pct;     /* time-average of min(1, sum of blocks of running kernels / SMs) */
  double sm_occupancy_pct;  /* time-average of resident warps / (SMs x max warps per SM), capped at 100 */
  double tensor_active_pct; /* time-average of sum over running kernels of tensor factor x their SM share */
  double dram_bw_pct;       /* same with the dram factor, plus device-to-device copy bytes / (HBM bandwidth x window) */
  double pcie_tx_bytes, pcie_rx_bytes;     /* device->host and host->device copy bytes in [t0,t1) (pro rata) */
  double dram_read_bytes, dram_write_bytes;/* from the dram factor x HBM bandwidth, and D2D copies */
  uint64_t mem_used_bytes;  /* at t1: live allocations + a fixed context size (GPUSIM_CONTEXT_BYTES) */
};

/* Device memory every initialised device counts as used besides the
 * program's allocations (the driver's own context state). */
#define GPUSIM_CONTEXT_BYTES (512ull << 20)

/* Operations remembered per device (the oldest are forgotten first). */
#define GPUSIM_COUNTER_HISTORY (1u << 17)

/* 0 on success, -1 for a device that does not exist or t1 <= t0; t0/t1
 * on the simulator's clock (CLOCK_MONOTONIC ns: the one its CUPTI
 * timestamps use when no timestamp callback is registered). */
int gpusim_counters_window(int device, uint64_t t0, uint64_t t1,
                           struct gpusim_counters *out);
/* The simulator's clock now. */
uint64_t gpusim_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif
