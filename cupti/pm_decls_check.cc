// Our C declarations of CUPTI's PM sampling and profiler host interfaces
// (gp_pmsampling.h) against the toolkit's own headers: every check is at
// compile time (struct sizes, member offsets, the _STRUCT_SIZE constants,
// enum values, and each entry point's type with its parameter struct
// mapped to ours). Built only where a C++ compiler and the headers exist;
// running it only says it was built.
#include <cstddef>
#include <cstdio>
#include <type_traits>

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "gp_pmsampling.h"

#define SAME_SIZE(ours, theirs)                                                \
  static_assert(sizeof(ours) == sizeof(theirs), #ours " size");               \
  static_assert(alignof(ours) == alignof(theirs), #ours " alignment")
#define SAME_FIELD(ours, theirs, f)                                            \
  static_assert(offsetof(ours, f) == offsetof(theirs, f), #ours "." #f);      \
  static_assert(sizeof(((ours *)0)->f) == sizeof(((theirs *)0)->f),           \
                #ours "." #f " size")
#define SAME_VALUE(a, b) static_assert((long long)(a) == (long long)(b), #a)

// Their parameter struct for ours, to compare the entry points' types.
template <class Ours> struct theirs;
#define PAIR(o, t)                                                             \
  template <> struct theirs<o> { typedef t type; };                            \
  SAME_SIZE(o, t);                                                             \
  SAME_FIELD(o, t, structSize);                                                \
  SAME_FIELD(o, t, pPriv)

PAIR(gp_pm_profiler_init_params, CUpti_Profiler_Initialize_Params);
PAIR(gp_pm_profiler_deinit_params, CUpti_Profiler_DeInitialize_Params);
PAIR(gp_pm_device_supported_params, CUpti_Profiler_DeviceSupported_Params);
PAIR(gp_pm_chip_name_params, CUpti_Device_GetChipName_Params);
PAIR(gp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params);
PAIR(gp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params);
PAIR(gp_pm_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params);
PAIR(gp_pm_config_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params);
PAIR(gp_pm_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params);
PAIR(gp_pm_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params);
PAIR(gp_pm_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
PAIR(gp_pm_availability_params,
     CUpti_PmSampling_GetCounterAvailability_Params);
PAIR(gp_pm_enable_params, CUpti_PmSampling_Enable_Params);
PAIR(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params);
PAIR(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params);
PAIR(gp_pm_data_init_params,
     CUpti_PmSampling_CounterDataImage_Initialize_Params);
PAIR(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params);
PAIR(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params);
PAIR(gp_pm_sample_info_params,
     CUpti_PmSampling_CounterData_GetSampleInfo_Params);

// Disable, Start and Stop share one struct of ours; each of theirs must
// match it.
SAME_SIZE(gp_pm_object_params, CUpti_PmSampling_Disable_Params);
SAME_SIZE(gp_pm_object_params, CUpti_PmSampling_Start_Params);
SAME_SIZE(gp_pm_object_params, CUpti_PmSampling_Stop_Params);
SAME_FIELD(gp_pm_object_params, CUpti_PmSampling_Disable_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_object_params, CUpti_PmSampling_Start_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_object_params, CUpti_PmSampling_Stop_Params,
           pPmSamplingObject);

// Members.
SAME_FIELD(gp_pm_device_supported_params,
           CUpti_Profiler_DeviceSupported_Params, cuDevice);
SAME_FIELD(gp_pm_device_supported_params,
           CUpti_Profiler_DeviceSupported_Params, isSupported);
SAME_FIELD(gp_pm_device_supported_params,
           CUpti_Profiler_DeviceSupported_Params, wsl);
SAME_FIELD(gp_pm_device_supported_params,
           CUpti_Profiler_DeviceSupported_Params, api);
SAME_FIELD(gp_pm_chip_name_params, CUpti_Device_GetChipName_Params,
           deviceIndex);
SAME_FIELD(gp_pm_chip_name_params, CUpti_Device_GetChipName_Params,
           pChipName);
SAME_FIELD(gp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params,
           profilerType);
SAME_FIELD(gp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params,
           pChipName);
SAME_FIELD(gp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params,
           pCounterAvailabilityImage);
SAME_FIELD(gp_pm_host_init_params, CUpti_Profiler_Host_Initialize_Params,
           pHostObject);
SAME_FIELD(gp_pm_host_deinit_params, CUpti_Profiler_Host_Deinitialize_Params,
           pHostObject);
SAME_FIELD(gp_pm_add_metrics_params,
           CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject);
SAME_FIELD(gp_pm_add_metrics_params,
           CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
SAME_FIELD(gp_pm_add_metrics_params,
           CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
SAME_FIELD(gp_pm_config_size_params,
           CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject);
SAME_FIELD(gp_pm_config_size_params,
           CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
SAME_FIELD(gp_pm_config_image_params,
           CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
SAME_FIELD(gp_pm_config_image_params,
           CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
SAME_FIELD(gp_pm_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           configImageSize);
SAME_FIELD(gp_pm_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           pConfigImage);
SAME_FIELD(gp_pm_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           numOfPasses);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           counterDataImageSize);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
SAME_FIELD(gp_pm_evaluate_params,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
SAME_FIELD(gp_pm_availability_params,
           CUpti_PmSampling_GetCounterAvailability_Params, deviceIndex);
SAME_FIELD(gp_pm_availability_params,
           CUpti_PmSampling_GetCounterAvailability_Params,
           counterAvailabilityImageSize);
SAME_FIELD(gp_pm_availability_params,
           CUpti_PmSampling_GetCounterAvailability_Params,
           pCounterAvailabilityImage);
SAME_FIELD(gp_pm_enable_params, CUpti_PmSampling_Enable_Params, deviceIndex);
SAME_FIELD(gp_pm_enable_params, CUpti_PmSampling_Enable_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           configSize);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           pConfig);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           hardwareBufferSize);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           samplingInterval);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           triggerMode);
SAME_FIELD(gp_pm_set_config_params, CUpti_PmSampling_SetConfig_Params,
           hwBufferAppendMode);
SAME_FIELD(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params,
           pMetricNames);
SAME_FIELD(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params,
           numMetrics);
SAME_FIELD(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params,
           maxSamples);
SAME_FIELD(gp_pm_data_size_params, CUpti_PmSampling_GetCounterDataSize_Params,
           counterDataSize);
SAME_FIELD(gp_pm_data_init_params,
           CUpti_PmSampling_CounterDataImage_Initialize_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_data_init_params,
           CUpti_PmSampling_CounterDataImage_Initialize_Params,
           counterDataSize);
SAME_FIELD(gp_pm_data_init_params,
           CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
SAME_FIELD(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params,
           pCounterDataImage);
SAME_FIELD(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params,
           counterDataImageSize);
SAME_FIELD(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params,
           decodeStopReason);
SAME_FIELD(gp_pm_decode_params, CUpti_PmSampling_DecodeData_Params, overflow);
SAME_FIELD(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params,
           pCounterDataImage);
SAME_FIELD(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params,
           counterDataImageSize);
SAME_FIELD(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params,
           numTotalSamples);
SAME_FIELD(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params,
           numPopulatedSamples);
SAME_FIELD(gp_pm_data_info_params, CUpti_PmSampling_GetCounterDataInfo_Params,
           numCompletedSamples);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params,
           pPmSamplingObject);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params,
           pCounterDataImage);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params,
           counterDataImageSize);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params, sampleIndex);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params, startTimestamp);
SAME_FIELD(gp_pm_sample_info_params,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);

// The _STRUCT_SIZE constants.
SAME_VALUE(GP_PM_PROFILER_INIT_SIZE, CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_PROFILER_DEINIT_SIZE,
           CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_DEVICE_SUPPORTED_SIZE,
           CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_CHIP_NAME_SIZE, CUpti_Device_GetChipName_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_HOST_INIT_SIZE,
           CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_HOST_DEINIT_SIZE,
           CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_ADD_METRICS_SIZE,
           CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_CONFIG_SIZE_SIZE,
           CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_CONFIG_IMAGE_SIZE,
           CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_PASSES_SIZE,
           CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_EVALUATE_SIZE,
           CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_AVAILABILITY_SIZE,
           CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_ENABLE_SIZE, CUpti_PmSampling_Enable_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_OBJECT_SIZE, CUpti_PmSampling_Disable_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_OBJECT_SIZE, CUpti_PmSampling_Start_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_OBJECT_SIZE, CUpti_PmSampling_Stop_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_SET_CONFIG_SIZE, CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_DATA_SIZE_SIZE,
           CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_DATA_INIT_SIZE,
           CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_DECODE_SIZE, CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_DATA_INFO_SIZE,
           CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE);
SAME_VALUE(GP_PM_SAMPLE_INFO_SIZE,
           CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE);

// Enum values and the types behind ours.
SAME_VALUE(GP_PM_API_PM_SAMPLING, CUPTI_PROFILER_PM_SAMPLING);
SAME_VALUE(GP_PM_API_RANGE_PROFILING, CUPTI_PROFILER_RANGE_PROFILING);
SAME_VALUE(GP_PM_LEVEL_UNKNOWN, CUPTI_PROFILER_CONFIGURATION_UNKNOWN);
SAME_VALUE(GP_PM_LEVEL_UNSUPPORTED, CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED);
SAME_VALUE(GP_PM_LEVEL_DISABLED, CUPTI_PROFILER_CONFIGURATION_DISABLED);
SAME_VALUE(GP_PM_LEVEL_SUPPORTED, CUPTI_PROFILER_CONFIGURATION_SUPPORTED);
SAME_VALUE(GP_PM_PROFILER_RANGE, CUPTI_PROFILER_TYPE_RANGE_PROFILER);
SAME_VALUE(GP_PM_PROFILER_PM_SAMPLING, CUPTI_PROFILER_TYPE_PM_SAMPLING);
SAME_VALUE(GP_PM_TRIGGER_SYSCLK_INTERVAL,
           CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL);
SAME_VALUE(GP_PM_TRIGGER_TIME_INTERVAL,
           CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL);
SAME_VALUE(GP_PM_STOP_OTHER, CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER);
SAME_VALUE(GP_PM_STOP_COUNTER_DATA_FULL,
           CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL);
SAME_VALUE(GP_PM_STOP_END_OF_RECORDS,
           CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS);
SAME_VALUE(GP_PM_APPEND_KEEP_OLDEST,
           CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST);
SAME_VALUE(GP_PM_APPEND_KEEP_LATEST,
           CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST);
SAME_VALUE(GP_PM_SUCCESS, CUPTI_SUCCESS);
SAME_VALUE(GP_PM_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER);
SAME_VALUE(GP_PM_ERROR_INVALID_DEVICE, CUPTI_ERROR_INVALID_DEVICE);
SAME_VALUE(GP_PM_ERROR_INVALID_OPERATION, CUPTI_ERROR_INVALID_OPERATION);
SAME_VALUE(GP_PM_ERROR_OUT_OF_MEMORY, CUPTI_ERROR_OUT_OF_MEMORY);
SAME_VALUE(GP_PM_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
SAME_VALUE(GP_PM_ERROR_INVALID_METRIC_NAME, CUPTI_ERROR_INVALID_METRIC_NAME);
SAME_VALUE(GP_PM_ERROR_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED);
SAME_VALUE(GP_PM_ERROR_NOT_COMPATIBLE, CUPTI_ERROR_NOT_COMPATIBLE);
SAME_VALUE(GP_PM_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED,
           CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED);
SAME_VALUE(GP_PM_ERROR_INSUFFICIENT_PRIVILEGES,
           CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
SAME_VALUE(GP_PM_ERROR_LEGACY_PROFILER_NOT_SUPPORTED,
           CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
SAME_VALUE(GP_PM_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
           CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES);
SAME_VALUE(GP_PM_ERROR_CMP_DEVICE_NOT_SUPPORTED,
           CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED);
SAME_VALUE(GP_PM_ERROR_MIG_DEVICE_NOT_SUPPORTED,
           CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED);
#if CUPTI_API_VERSION >= 130000 /* CUDA 12.9 lacks it */
SAME_VALUE(GP_PM_ERROR_INVALID_CHIP_NAME, CUPTI_ERROR_INVALID_CHIP_NAME);
#endif
SAME_VALUE(GP_PM_ERROR_UNKNOWN, CUPTI_ERROR_UNKNOWN);
SAME_SIZE(gp_pm_result, CUptiResult);
SAME_SIZE(gp_pm_cudev, CUdevice);
static_assert(std::is_signed<gp_pm_cudev>::value ==
                  std::is_signed<CUdevice>::value,
              "CUdevice signedness");
SAME_SIZE(int, CUpti_Profiler_Support_Level);
SAME_SIZE(int, CUpti_Profiler_API);
SAME_SIZE(int, CUpti_ProfilerType);
SAME_SIZE(int, CUpti_PmSampling_TriggerMode);
SAME_SIZE(int, CUpti_PmSampling_DecodeStopReason);
SAME_SIZE(int, CUpti_PmSampling_HardwareBuffer_AppendMode);

// Each entry point: the toolkit's declaration has the type of ours with the
// parameter struct mapped to theirs; Disable, Start and Stop (one struct
// of ours) each take their own struct.
template <class F>
struct obj_sig
    : std::integral_constant<
          bool,
          std::is_same<F, CUptiResult(CUPTIAPI *)(
                              CUpti_PmSampling_Disable_Params *)>::value ||
              std::is_same<F, CUptiResult(CUPTIAPI *)(
                                  CUpti_PmSampling_Start_Params *)>::value ||
              std::is_same<F, CUptiResult(CUPTIAPI *)(
                                  CUpti_PmSampling_Stop_Params *)>::value> {};
template <class P, class F>
struct sig_ok
    : std::is_same<F, CUptiResult(CUPTIAPI *)(typename theirs<P>::type *)> {};
template <class F> struct sig_ok<gp_pm_object_params, F> : obj_sig<F> {};

#define SIGNATURE(name, params)                                                \
  static_assert(sig_ok<params, decltype(&name)>::value, #name " signature"); \
  static_assert(                                                               \
      std::is_same<gp_pm_fn_##name, gp_pm_result (*)(params *)>::value,       \
      #name " typedef");
GP_PM_FUNCS(SIGNATURE)
static_assert(std::is_same<decltype(&cuptiPmSamplingStart),
                           CUptiResult(CUPTIAPI *)(
                               CUpti_PmSampling_Start_Params *)>::value,
              "cuptiPmSamplingStart");
static_assert(std::is_same<decltype(&cuptiPmSamplingStop),
                           CUptiResult(CUPTIAPI *)(
                               CUpti_PmSampling_Stop_Params *)>::value,
              "cuptiPmSamplingStop");
static_assert(std::is_same<decltype(&cuptiPmSamplingDisable),
                           CUptiResult(CUPTIAPI *)(
                               CUpti_PmSampling_Disable_Params *)>::value,
              "cuptiPmSamplingDisable");

int main() {
  std::printf("gp_pmsampling.h agrees with the toolkit's CUPTI headers\n");
  return 0;
}
