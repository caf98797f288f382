/* CUPTI's PM sampling and profiler host interfaces (CUDA 12.6 and later),
 * declared here for C: the toolkit's cupti_profiler_host.h includes
 * <string> and so compiles as C++ only, and toolkits before 12.6 lack
 * these headers altogether. The layouts follow the CUDA 12.9 / 13.0
 * headers (cupti_pmsampling.h, cupti_profiler_host.h,
 * cupti_profiler_target.h, cupti_target.h); tests/cupti_pm_decls.cc
 * checks sizes, offsets, enum values and signatures against them when a
 * C++ compiler and those headers exist. Every parameter struct starts with
 * structSize (the _SIZE constant below: the offset of its last member plus
 * that member's size) and pPriv (NULL). Names are ours (gp_pm_*), so that
 * this header and the toolkit's can be included together. */
#ifndef GP_PMSAMPLING_H
#define GP_PMSAMPLING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int gp_pm_result; /* CUptiResult */
typedef int gp_pm_cudev;  /* CUdevice */

/* CUptiResult values the sampler tells apart. */
enum {
  GP_PM_SUCCESS = 0,
  GP_PM_ERROR_INVALID_PARAMETER = 1,
  GP_PM_ERROR_INVALID_DEVICE = 2,
  GP_PM_ERROR_INVALID_OPERATION = 7,
  GP_PM_ERROR_OUT_OF_MEMORY = 8,
  GP_PM_ERROR_NOT_INITIALIZED = 15,
  GP_PM_ERROR_INVALID_METRIC_NAME = 17,
  GP_PM_ERROR_NOT_SUPPORTED = 27,
  GP_PM_ERROR_NOT_COMPATIBLE = 14,
  GP_PM_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED = 33,
  GP_PM_ERROR_INSUFFICIENT_PRIVILEGES = 35,
  GP_PM_ERROR_LEGACY_PROFILER_NOT_SUPPORTED = 38,
  GP_PM_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES = 40,
  GP_PM_ERROR_CMP_DEVICE_NOT_SUPPORTED = 42,
  GP_PM_ERROR_MIG_DEVICE_NOT_SUPPORTED = 43,
  GP_PM_ERROR_INVALID_CHIP_NAME = 46,
  GP_PM_ERROR_UNKNOWN = 999
};

/* CUpti_Profiler_API */
enum { GP_PM_API_RANGE_PROFILING = 0, GP_PM_API_PM_SAMPLING = 3 };
/* CUpti_Profiler_Support_Level */
enum {
  GP_PM_LEVEL_UNKNOWN = 0,
  GP_PM_LEVEL_UNSUPPORTED = 1,
  GP_PM_LEVEL_DISABLED = 2,
  GP_PM_LEVEL_SUPPORTED = 3
};
/* CUpti_ProfilerType */
enum { GP_PM_PROFILER_RANGE = 0, GP_PM_PROFILER_PM_SAMPLING = 1 };
/* CUpti_PmSampling_TriggerMode */
enum { GP_PM_TRIGGER_SYSCLK_INTERVAL = 0, GP_PM_TRIGGER_TIME_INTERVAL = 1 };
/* CUpti_PmSampling_DecodeStopReason */
enum {
  GP_PM_STOP_OTHER = 0,
  GP_PM_STOP_COUNTER_DATA_FULL = 1,
  GP_PM_STOP_END_OF_RECORDS = 2
};
/* CUpti_PmSampling_HardwareBuffer_AppendMode */
enum { GP_PM_APPEND_KEEP_OLDEST = 0, GP_PM_APPEND_KEEP_LATEST = 1 };

#define GP_PM_SIZE(type, last)                                                 \
  (offsetof(type, last) + sizeof(((type *)0)->last))

/* CUpti_PmSampling_Object, CUpti_Profiler_Host_Object */
typedef struct gp_pm_object gp_pm_object;
typedef struct gp_pm_host_object gp_pm_host_object;

/* ---- cupti_profiler_target.h, cupti_target.h ---- */
/* CUpti_Profiler_Initialize_Params */
typedef struct gp_pm_profiler_init_params {
  size_t structSize;
  void *pPriv;
} gp_pm_profiler_init_params;
#define GP_PM_PROFILER_INIT_SIZE GP_PM_SIZE(gp_pm_profiler_init_params, pPriv)

/* ..._DeInitialize_Params */
typedef struct gp_pm_profiler_deinit_params {
  size_t structSize;
  void *pPriv;
} gp_pm_profiler_deinit_params;
#define GP_PM_PROFILER_DEINIT_SIZE                                             \
  GP_PM_SIZE(gp_pm_profiler_deinit_params, pPriv)

/* ..._DeviceSupported_Params */
typedef struct gp_pm_device_supported_params {
  size_t structSize;
  void *pPriv;
  gp_pm_cudev cuDevice;
  int isSupported; /* GP_PM_LEVEL_* */
  int architecture, sli, vGpu, confidentialCompute, cmp, wsl;
  int api; /* GP_PM_API_* */
} gp_pm_device_supported_params;
#define GP_PM_DEVICE_SUPPORTED_SIZE                                            \
  GP_PM_SIZE(gp_pm_device_supported_params, api)

/* CUpti_Device_GetChipName_Params */
typedef struct gp_pm_chip_name_params {
  size_t structSize;
  void *pPriv;
  size_t deviceIndex;
  const char *pChipName;
} gp_pm_chip_name_params;
#define GP_PM_CHIP_NAME_SIZE GP_PM_SIZE(gp_pm_chip_name_params, pChipName)

/* ---- cupti_profiler_host.h ---- */
/* CUpti_Profiler_Host_Initialize_Params */
typedef struct gp_pm_host_init_params {
  size_t structSize;
  void *pPriv;
  int profilerType; /* GP_PM_PROFILER_* */
  const char *pChipName;
  const uint8_t *pCounterAvailabilityImage;
  gp_pm_host_object *pHostObject; /* out */
} gp_pm_host_init_params;
#define GP_PM_HOST_INIT_SIZE GP_PM_SIZE(gp_pm_host_init_params, pHostObject)

/* ..._Host_Deinitialize_Params */
typedef struct gp_pm_host_deinit_params {
  size_t structSize;
  void *pPriv;
  gp_pm_host_object *pHostObject;
} gp_pm_host_deinit_params;
#define GP_PM_HOST_DEINIT_SIZE GP_PM_SIZE(gp_pm_host_deinit_params, pHostObject)

/* ..._Host_ConfigAddMetrics_Params */
typedef struct gp_pm_add_metrics_params {
  size_t structSize;
  void *pPriv;
  gp_pm_host_object *pHostObject;
  const char **ppMetricNames;
  size_t numMetrics;
} gp_pm_add_metrics_params;
#define GP_PM_ADD_METRICS_SIZE GP_PM_SIZE(gp_pm_add_metrics_params, numMetrics)

/* ..._GetConfigImageSize_Params */
typedef struct gp_pm_config_size_params {
  size_t structSize;
  void *pPriv;
  gp_pm_host_object *pHostObject;
  size_t configImageSize; /* out */
} gp_pm_config_size_params;
#define GP_PM_CONFIG_SIZE_SIZE                                                 \
  GP_PM_SIZE(gp_pm_config_size_params, configImageSize)

/* ..._GetConfigImage_Params */
typedef struct gp_pm_config_image_params {
  size_t structSize;
  void *pPriv;
  gp_pm_host_object *pHostObject;
  size_t configImageSize;
  uint8_t *pConfigImage;
} gp_pm_config_image_params;
#define GP_PM_CONFIG_IMAGE_SIZE                                                \
  GP_PM_SIZE(gp_pm_config_image_params, pConfigImage)

/* ..._GetNumOfPasses_Params */
typedef struct gp_pm_passes_params {
  size_t structSize;
  void *pPriv;
  size_t configImageSize;
  uint8_t *pConfigImage;
  size_t numOfPasses; /* out */
} gp_pm_passes_params;
#define GP_PM_PASSES_SIZE GP_PM_SIZE(gp_pm_passes_params, numOfPasses)

/* ..._EvaluateToGpuValues_Params */
typedef struct gp_pm_evaluate_params {
  size_t structSize;
  void *pPriv;
  gp_pm_host_object *pHostObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char **ppMetricNames;
  size_t numMetrics;
  double *pMetricValues; /* out: numMetrics values */
} gp_pm_evaluate_params;
#define GP_PM_EVALUATE_SIZE GP_PM_SIZE(gp_pm_evaluate_params, pMetricValues)

/* ---- cupti_pmsampling.h ---- */
/* ..._GetCounterAvailability_Params */
typedef struct gp_pm_availability_params {
  size_t structSize;
  void *pPriv;
  size_t deviceIndex;
  size_t counterAvailabilityImageSize; /* in/out */
  uint8_t *pCounterAvailabilityImage;  /* NULL: ask for the size */
} gp_pm_availability_params;
#define GP_PM_AVAILABILITY_SIZE                                                \
  GP_PM_SIZE(gp_pm_availability_params, pCounterAvailabilityImage)

/* CUpti_PmSampling_Enable_Params */
typedef struct gp_pm_enable_params {
  size_t structSize;
  void *pPriv;
  size_t deviceIndex;
  gp_pm_object *pPmSamplingObject; /* out */
} gp_pm_enable_params;
#define GP_PM_ENABLE_SIZE GP_PM_SIZE(gp_pm_enable_params, pPmSamplingObject)

/* Disable, Start and Stop take the object alone. */
/* ..._Disable/Start/Stop_Params */
typedef struct gp_pm_object_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
} gp_pm_object_params;
#define GP_PM_OBJECT_SIZE GP_PM_SIZE(gp_pm_object_params, pPmSamplingObject)

/* CUpti_PmSampling_SetConfig_Params */
typedef struct gp_pm_set_config_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
  size_t configSize;
  const uint8_t *pConfig;
  size_t hardwareBufferSize;
  uint64_t samplingInterval; /* ns with GP_PM_TRIGGER_TIME_INTERVAL */
  int triggerMode;           /* GP_PM_TRIGGER_* */
  int hwBufferAppendMode;    /* GP_PM_APPEND_* */
} gp_pm_set_config_params;
#define GP_PM_SET_CONFIG_SIZE                                                  \
  GP_PM_SIZE(gp_pm_set_config_params, hwBufferAppendMode)

/* ..._GetCounterDataSize_Params */
typedef struct gp_pm_data_size_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
  const char **pMetricNames;
  size_t numMetrics;
  uint32_t maxSamples;
  size_t counterDataSize; /* out */
} gp_pm_data_size_params;
#define GP_PM_DATA_SIZE_SIZE GP_PM_SIZE(gp_pm_data_size_params, counterDataSize)

/* ..._CounterDataImage_Initialize_Params */
typedef struct gp_pm_data_init_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
  size_t counterDataSize;
  uint8_t *pCounterData;
} gp_pm_data_init_params;
#define GP_PM_DATA_INIT_SIZE GP_PM_SIZE(gp_pm_data_init_params, pCounterData)

/* CUpti_PmSampling_DecodeData_Params */
typedef struct gp_pm_decode_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
  uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  int decodeStopReason; /* out: GP_PM_STOP_* */
  uint8_t overflow;     /* out: the hardware buffer overflowed */
} gp_pm_decode_params;
#define GP_PM_DECODE_SIZE GP_PM_SIZE(gp_pm_decode_params, overflow)

/* ..._GetCounterDataInfo_Params */
typedef struct gp_pm_data_info_params {
  size_t structSize;
  void *pPriv;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t numTotalSamples;     /* out */
  size_t numPopulatedSamples; /* out */
  size_t numCompletedSamples; /* out */
} gp_pm_data_info_params;
#define GP_PM_DATA_INFO_SIZE                                                   \
  GP_PM_SIZE(gp_pm_data_info_params, numCompletedSamples)

/* ..._CounterData_GetSampleInfo_Params */
typedef struct gp_pm_sample_info_params {
  size_t structSize;
  void *pPriv;
  gp_pm_object *pPmSamplingObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t sampleIndex;
  uint64_t startTimestamp; /* out */
  uint64_t endTimestamp;   /* out */
} gp_pm_sample_info_params;
#define GP_PM_SAMPLE_INFO_SIZE                                                 \
  GP_PM_SIZE(gp_pm_sample_info_params, endTimestamp)

/* The entry points, X(name, parameter type), in the order the sampler
 * calls them; one typedef gp_pm_fn_<name> each. */
#define GP_PM_FUNCS(X)                                                         \
  X(cuptiProfilerInitialize, gp_pm_profiler_init_params)                       \
  X(cuptiProfilerDeviceSupported, gp_pm_device_supported_params)               \
  X(cuptiDeviceGetChipName, gp_pm_chip_name_params)                            \
  X(cuptiPmSamplingGetCounterAvailability, gp_pm_availability_params)          \
  X(cuptiProfilerHostInitialize, gp_pm_host_init_params)                       \
  X(cuptiProfilerHostConfigAddMetrics, gp_pm_add_metrics_params)               \
  X(cuptiProfilerHostGetConfigImageSize, gp_pm_config_size_params)             \
  X(cuptiProfilerHostGetConfigImage, gp_pm_config_image_params)                \
  X(cuptiProfilerHostGetNumOfPasses, gp_pm_passes_params)                      \
  X(cuptiPmSamplingEnable, gp_pm_enable_params)                                \
  X(cuptiPmSamplingSetConfig, gp_pm_set_config_params)                         \
  X(cuptiPmSamplingGetCounterDataSize, gp_pm_data_size_params)                 \
  X(cuptiPmSamplingCounterDataImageInitialize, gp_pm_data_init_params)         \
  X(cuptiPmSamplingStart, gp_pm_object_params)                                 \
  X(cuptiPmSamplingDecodeData, gp_pm_decode_params)                            \
  X(cuptiPmSamplingGetCounterDataInfo, gp_pm_data_info_params)                 \
  X(cuptiPmSamplingCounterDataGetSampleInfo, gp_pm_sample_info_params)         \
  X(cuptiProfilerHostEvaluateToGpuValues, gp_pm_evaluate_params)               \
  X(cuptiPmSamplingStop, gp_pm_object_params)                                  \
  X(cuptiPmSamplingDisable, gp_pm_object_params)                               \
  X(cuptiProfilerHostDeinitialize, gp_pm_host_deinit_params)                   \
  X(cuptiProfilerDeInitialize, gp_pm_profiler_deinit_params)

#define GP_PM_TYPEDEF(name, params)                                            \
  typedef gp_pm_result (*gp_pm_fn_##name)(params *);
GP_PM_FUNCS(GP_PM_TYPEDEF)
#undef GP_PM_TYPEDEF

#ifdef __cplusplus
}
#endif

#endif
