/* The part of NVML's ABI (libnvidia-ml.so.1) that the sampler uses,
 * declared here because nvml.h is not part of the CUDA toolkit. Layouts
 * and values as in NVIDIA's nvml.h (checked against the header of the
 * nvidia-nvml-dev 13.5 wheel). Shared with the simulated NVML
 * (tests/simcuda/nvml_sim.c). Only types and constants. */
#ifndef GP_NVML_H
#define GP_NVML_H

#include <stddef.h>

typedef int gp_nvmlReturn_t;
typedef struct gp_nvmlDevice_st *gp_nvmlDevice_t;
typedef struct gp_nvmlGpmSample_st *gp_nvmlGpmSample_t;

enum {
  GP_NVML_SUCCESS = 0,
  GP_NVML_ERROR_UNINITIALIZED = 1,
  GP_NVML_ERROR_INVALID_ARGUMENT = 2,
  GP_NVML_ERROR_NOT_SUPPORTED = 3,
  GP_NVML_ERROR_NO_PERMISSION = 4,
  GP_NVML_ERROR_NOT_FOUND = 6,
  GP_NVML_ERROR_INSUFFICIENT_SIZE = 7,
  GP_NVML_ERROR_DRIVER_NOT_LOADED = 9,
  GP_NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  GP_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  GP_NVML_ERROR_GPU_IS_LOST = 15,
  GP_NVML_ERROR_IN_USE = 19,
  GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  GP_NVML_ERROR_UNKNOWN = 999
};

#define GP_NVML_PCI_BUS_ID_SIZE 32
#define GP_NVML_PCI_BUS_ID_LEGACY_SIZE 16
#define GP_NVML_UUID_SIZE 80 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96 */

typedef struct {
  char busIdLegacy[GP_NVML_PCI_BUS_ID_LEGACY_SIZE];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[GP_NVML_PCI_BUS_ID_SIZE];
} gp_nvmlPciInfo_t;

typedef struct {
  unsigned int gpu, memory;
} gp_nvmlUtilization_t;

typedef struct {
  unsigned int version; /* GP_NVML_MEMORY_V2 */
  unsigned long long total, reserved, free, used;
} gp_nvmlMemory_v2_t;
#define GP_NVML_MEMORY_V2 ((unsigned int)(sizeof(gp_nvmlMemory_v2_t) | (2u << 24)))

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} gp_nvmlValue_t;

typedef struct {
  unsigned long long timeStamp; /* microseconds, NVML's clock */
  gp_nvmlValue_t sampleValue;
} gp_nvmlSample_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} gp_nvmlProcessInfo_t;

enum { GP_NVML_GPU_UTILIZATION_SAMPLES = 1, GP_NVML_MEMORY_UTILIZATION_SAMPLES = 2 };
enum { GP_NVML_VALUE_TYPE_UNSIGNED_INT = 1 };
enum { GP_NVML_CLOCK_SM = 1, GP_NVML_CLOCK_MEM = 2 };
enum { GP_NVML_TEMPERATURE_GPU = 0 };
enum { GP_NVML_PCIE_UTIL_TX_BYTES = 0, GP_NVML_PCIE_UTIL_RX_BYTES = 1 };
#define GP_NVML_CLOCKS_EVENT_GPU_IDLE 0x1ull
/* nvmlDeviceGetPcieThroughput: KB/s over a 20 ms interval */
#define GP_NVML_PCIE_INTERVAL_NS 20000000ull

/* GPM */
enum {
  GP_NVML_GPM_SM_UTIL = 2,
  GP_NVML_GPM_SM_OCCUPANCY = 3,
  GP_NVML_GPM_ANY_TENSOR_UTIL = 5,
  GP_NVML_GPM_DRAM_BW_UTIL = 10,
  GP_NVML_GPM_PCIE_TX_PER_SEC = 20, /* MiB/s */
  GP_NVML_GPM_PCIE_RX_PER_SEC = 21,
  GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC = 60,
  GP_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC = 61
};

typedef struct {
  unsigned int metricId;
  gp_nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
} gp_nvmlGpmMetric_t;

/* nvmlGpmMetricsGet_t has NVML_GPM_METRIC_MAX entries, which grew between
 * releases (98, then 477 in 13.5); NVML reads numMetrics of them. This is
 * the larger size, so that a library built with either finds room. */
#define GP_NVML_GPM_METRIC_MAX 477
typedef struct {
  unsigned int version; /* GP_NVML_GPM_METRICS_GET_VERSION */
  unsigned int numMetrics;
  gp_nvmlGpmSample_t sample1, sample2;
  gp_nvmlGpmMetric_t metrics[GP_NVML_GPM_METRIC_MAX];
} gp_nvmlGpmMetricsGet_t;
#define GP_NVML_GPM_METRICS_GET_VERSION 1

typedef struct {
  unsigned int version; /* GP_NVML_GPM_SUPPORT_VERSION */
  unsigned int isSupportedDevice;
} gp_nvmlGpmSupport_t;
#define GP_NVML_GPM_SUPPORT_VERSION 1

#endif
