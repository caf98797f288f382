/* Self-test: PM sampling and the profiler host API of the simulated CUPTI
 * (README.md, "PM sampling"): argument checks, chip, metrics and passes,
 * one session per device, samples from the counter model, a full counter
 * data image, a config image changed under the session, de-initialising
 * twice. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "gp_pmsampling.h"
#include "test_util.h"

#define DECL(name, params) gp_pm_result name(params *);
GP_PM_FUNCS(DECL)
#undef DECL

volatile int sink;
void k_pm(void) {
  sink = 1;
}

#define SM_ACTIVE "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define GR_ACTIVE "gr__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define OCCUPANCY "sm__warps_active.avg.pct_of_peak_sustained_elapsed"
#define SM_THROUGHPUT "sm__throughput.avg.pct_of_peak_sustained_elapsed"

static gp_pm_host_object *host_with(const char **names, size_t n,
                                    const uint8_t *avail) {
  gp_pm_host_init_params hi = {.structSize = GP_PM_HOST_INIT_SIZE,
                               .profilerType = GP_PM_PROFILER_PM_SAMPLING,
                               .pChipName = "GH100",
                               .pCounterAvailabilityImage = avail};
  REQUIRE(cuptiProfilerHostInitialize(&hi) == 0);
  gp_pm_add_metrics_params am = {.structSize = GP_PM_ADD_METRICS_SIZE,
                                 .pHostObject = hi.pHostObject,
                                 .ppMetricNames = names,
                                 .numMetrics = n};
  CHECK_EQ(cuptiProfilerHostConfigAddMetrics(&am), 0);
  return hi.pHostObject;
}

static size_t config_of(gp_pm_host_object *h, uint8_t *img, size_t cap) {
  gp_pm_config_size_params cs = {.structSize = GP_PM_CONFIG_SIZE_SIZE,
                                 .pHostObject = h};
  REQUIRE(cuptiProfilerHostGetConfigImageSize(&cs) == 0);
  REQUIRE(cs.configImageSize <= cap);
  gp_pm_config_image_params ci = {.structSize = GP_PM_CONFIG_IMAGE_SIZE,
                                  .pHostObject = h,
                                  .configImageSize = cs.configImageSize,
                                  .pConfigImage = img};
  REQUIRE(cuptiProfilerHostGetConfigImage(&ci) == 0);
  return cs.configImageSize;
}

static size_t passes(uint8_t *img, size_t size) {
  gp_pm_passes_params np = {.structSize = GP_PM_PASSES_SIZE,
                            .configImageSize = size,
                            .pConfigImage = img};
  CHECK_EQ(cuptiProfilerHostGetNumOfPasses(&np), 0);
  return np.numOfPasses;
}

static void host_free(gp_pm_host_object *h) {
  gp_pm_host_deinit_params hd = {.structSize = GP_PM_HOST_DEINIT_SIZE,
                                 .pHostObject = h};
  CHECK_EQ(cuptiProfilerHostDeinitialize(&hd), 0);
}

int main(void) {
  REQUIRE(cudaFree(0) == cudaSuccess);
  gp_pm_enable_params en = {.structSize = GP_PM_ENABLE_SIZE, .deviceIndex = 0};
  CHECK_EQ(cuptiPmSamplingEnable(&en), GP_PM_ERROR_NOT_INITIALIZED);
  gp_pm_profiler_init_params pi = {.structSize = GP_PM_PROFILER_INIT_SIZE - 1};
  CHECK_EQ(cuptiProfilerInitialize(&pi), GP_PM_ERROR_INVALID_PARAMETER);
  pi.structSize = GP_PM_PROFILER_INIT_SIZE;
  CHECK_EQ(cuptiProfilerInitialize(&pi), 0);

  gp_pm_device_supported_params ds = {.structSize = GP_PM_DEVICE_SUPPORTED_SIZE,
                                      .cuDevice = 0,
                                      .api = GP_PM_API_PM_SAMPLING};
  CHECK_EQ(cuptiProfilerDeviceSupported(&ds), 0);
  CHECK_EQ(ds.isSupported, GP_PM_LEVEL_SUPPORTED);
  ds.cuDevice = 1; /* one device by default */
  CHECK_EQ(cuptiProfilerDeviceSupported(&ds), GP_PM_ERROR_INVALID_DEVICE);
  ds.structSize = GP_PM_DEVICE_SUPPORTED_SIZE - sizeof(int);
  ds.cuDevice = 0;
  CHECK_EQ(cuptiProfilerDeviceSupported(&ds), GP_PM_ERROR_INVALID_PARAMETER);
  gp_pm_chip_name_params cn = {.structSize = GP_PM_CHIP_NAME_SIZE};
  CHECK_EQ(cuptiDeviceGetChipName(&cn), 0);
  CHECK(cn.pChipName && strcmp(cn.pChipName, "GH100") == 0);

  gp_pm_availability_params av = {.structSize = GP_PM_AVAILABILITY_SIZE};
  CHECK_EQ(cuptiPmSamplingGetCounterAvailability(&av), 0);
  REQUIRE(av.counterAvailabilityImageSize > 0 &&
          av.counterAvailabilityImageSize <= 256);
  uint8_t avail[256];
  av.pCounterAvailabilityImage = avail;
  CHECK_EQ(cuptiPmSamplingGetCounterAvailability(&av), 0);

  /* chip and metric names */
  gp_pm_host_init_params hi = {.structSize = GP_PM_HOST_INIT_SIZE,
                               .profilerType = GP_PM_PROFILER_PM_SAMPLING,
                               .pChipName = "GB202",
                               .pCounterAvailabilityImage = avail};
  CHECK_EQ(cuptiProfilerHostInitialize(&hi), GP_PM_ERROR_INVALID_CHIP_NAME);
  const char *one[] = {SM_ACTIVE};
  gp_pm_host_object *h = host_with(one, 1, avail);
  const char *bad[] = {"sm__no_such_metric.sum"};
  gp_pm_add_metrics_params am = {.structSize = GP_PM_ADD_METRICS_SIZE,
                                 .pHostObject = h,
                                 .ppMetricNames = bad,
                                 .numMetrics = 1};
  CHECK_EQ(cuptiProfilerHostConfigAddMetrics(&am),
           GP_PM_ERROR_INVALID_METRIC_NAME);
  const char *more[] = {GR_ACTIVE, OCCUPANCY};
  am.ppMetricNames = more;
  am.numMetrics = 2;
  CHECK_EQ(cuptiProfilerHostConfigAddMetrics(&am), 0);
  uint8_t config[512];
  size_t config_size = config_of(h, config, sizeof config);
  CHECK_EQ(passes(config, config_size), 1);

  /* sm__throughput needs two passes */
  const char *two[] = {SM_ACTIVE, SM_THROUGHPUT};
  gp_pm_host_object *h2 = host_with(two, 2, avail);
  uint8_t config2[512];
  CHECK_EQ(passes(config2, config_of(h2, config2, sizeof config2)), 2);
  host_free(h2);

  /* one session per device */
  CHECK_EQ(cuptiPmSamplingEnable(&en), 0);
  gp_pm_object *obj = en.pPmSamplingObject;
  gp_pm_enable_params en2 = {.structSize = GP_PM_ENABLE_SIZE};
  CHECK_EQ(cuptiPmSamplingEnable(&en2), GP_PM_ERROR_INVALID_OPERATION);

  gp_pm_set_config_params sc = {.structSize = GP_PM_SET_CONFIG_SIZE - 1,
                                .pPmSamplingObject = obj,
                                .configSize = config_size,
                                .pConfig = config,
                                .hardwareBufferSize = 1 << 20,
                                .samplingInterval = 1000000,
                                .triggerMode = GP_PM_TRIGGER_TIME_INTERVAL,
                                .hwBufferAppendMode = GP_PM_APPEND_KEEP_LATEST};
  CHECK_EQ(cuptiPmSamplingSetConfig(&sc), GP_PM_ERROR_INVALID_PARAMETER);
  sc.structSize = GP_PM_SET_CONFIG_SIZE;
  CHECK_EQ(cuptiPmSamplingSetConfig(&sc), 0);
  const char *names[] = {SM_ACTIVE, GR_ACTIVE, OCCUPANCY};
  gp_pm_data_size_params dsz = {.structSize = GP_PM_DATA_SIZE_SIZE,
                                .pPmSamplingObject = obj,
                                .pMetricNames = names,
                                .numMetrics = 3,
                                .maxSamples = 4};
  CHECK_EQ(cuptiPmSamplingGetCounterDataSize(&dsz), 0);
  uint8_t *data = calloc(1, dsz.counterDataSize);
  REQUIRE(data);
  gp_pm_data_init_params di = {.structSize = GP_PM_DATA_INIT_SIZE,
                               .pPmSamplingObject = obj,
                               .counterDataSize = dsz.counterDataSize,
                               .pCounterData = data};
  CHECK_EQ(cuptiPmSamplingCounterDataImageInitialize(&di), 0);
  gp_pm_object_params op = {.structSize = GP_PM_OBJECT_SIZE,
                            .pPmSamplingObject = obj};

  /* a 100 ms kernel of 1-thread blocks: sm_active 100, occupancy
   * 132 warps of 132 x 64 = 1.5625% */
  dim3 g = {1320000, 1, 1}, b = {1, 1, 1};
  CHECK_EQ(cudaLaunchKernel((const void *)k_pm, g, b, NULL, 0, 0), cudaSuccess);
  /* the kernel began inside the call (an idle device starts it at once),
   * however long the call took (a sanitizer build under load); sampling
   * starts after it, so that the first samples fall inside it */
  uint64_t t_running = mono_ns();
  CHECK_EQ(cuptiPmSamplingStart(&op), 0);
  struct timespec w = {0, 30000000};
  nanosleep(&w, NULL);

  gp_pm_decode_params dd = {.structSize = GP_PM_DECODE_SIZE,
                            .pPmSamplingObject = obj,
                            .pCounterDataImage = data,
                            .counterDataImageSize = dsz.counterDataSize};
  config[0] ^= 1; /* the config image changed (freed, reused) */
  CHECK_EQ(cuptiPmSamplingDecodeData(&dd), GP_PM_ERROR_INVALID_OPERATION);
  config[0] ^= 1;
  CHECK_EQ(cuptiPmSamplingDecodeData(&dd), 0);
  CHECK_EQ(dd.decodeStopReason, GP_PM_STOP_COUNTER_DATA_FULL);
  CHECK_EQ(dd.overflow, 0);
  gp_pm_data_info_params in = {.structSize = GP_PM_DATA_INFO_SIZE,
                               .pCounterDataImage = data,
                               .counterDataImageSize = dsz.counterDataSize};
  CHECK_EQ(cuptiPmSamplingGetCounterDataInfo(&in), 0);
  CHECK_EQ(in.numCompletedSamples, 4);
  CHECK_EQ(in.numTotalSamples, 4);
  int inside = 0;
  for (size_t i = 0; i < in.numCompletedSamples; i++) {
    gp_pm_sample_info_params si = {.structSize = GP_PM_SAMPLE_INFO_SIZE,
                                   .pPmSamplingObject = obj,
                                   .pCounterDataImage = data,
                                   .counterDataImageSize = dsz.counterDataSize,
                                   .sampleIndex = i};
    CHECK_EQ(cuptiPmSamplingCounterDataGetSampleInfo(&si), 0);
    CHECK(si.endTimestamp - si.startTimestamp <= 1000000);
    double v[3] = {-1, -1, -1};
    gp_pm_evaluate_params ev = {.structSize = GP_PM_EVALUATE_SIZE,
                                .pHostObject = h,
                                .pCounterDataImage = data,
                                .counterDataImageSize = dsz.counterDataSize,
                                .rangeIndex = i,
                                .ppMetricNames = names,
                                .numMetrics = 3,
                                .pMetricValues = v};
    CHECK_EQ(cuptiProfilerHostEvaluateToGpuValues(&ev), 0);
    /* no timestamp callback: sample times are the raw clock */
    if (si.startTimestamp >= t_running) { /* after the kernel began */
      inside++;
      CHECK(v[0] > 99.999 && v[0] < 100.001);
      CHECK(v[1] > 99.999 && v[1] < 100.001);
      CHECK(v[2] > 1.5624 && v[2] < 1.5626);
    }
    CHECK(v[0] >= 0 && v[0] <= 100.0);
  }
  CHECK(inside >= 2);
  /* the rest of the hardware buffer, 4 samples at a time */
  int rounds = 0;
  do {
    CHECK_EQ(cuptiPmSamplingCounterDataImageInitialize(&di), 0);
    CHECK_EQ(cuptiPmSamplingDecodeData(&dd), 0);
  } while (dd.decodeStopReason == GP_PM_STOP_COUNTER_DATA_FULL &&
           ++rounds < 20);
  CHECK_EQ(dd.decodeStopReason, GP_PM_STOP_END_OF_RECORDS);
  CHECK(rounds >= 3); /* 30 ms of samples waited */

  CHECK_EQ(cuptiPmSamplingStop(&op), 0);
  CHECK_EQ(cuptiPmSamplingStop(&op), GP_PM_ERROR_INVALID_OPERATION);
  CHECK_EQ(cuptiPmSamplingCounterDataImageInitialize(&di), 0);
  CHECK_EQ(cuptiPmSamplingDecodeData(&dd), 0);
  CHECK_EQ(cuptiPmSamplingDisable(&op), 0);
  CHECK_EQ(cuptiPmSamplingDisable(&op), GP_PM_ERROR_INVALID_PARAMETER);
  /* enabled again once disabled */
  CHECK_EQ(cuptiPmSamplingEnable(&en), 0);
  op.pPmSamplingObject = en.pPmSamplingObject;
  CHECK_EQ(cuptiPmSamplingDisable(&op), 0);
  host_free(h);
  free(data);
  gp_pm_profiler_deinit_params pd = {.structSize = GP_PM_PROFILER_DEINIT_SIZE};
  CHECK_EQ(cuptiProfilerDeInitialize(&pd), 0);
  CHECK_EQ(cuptiProfilerDeInitialize(&pd), GP_PM_ERROR_NOT_INITIALIZED);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return test_result("test_pm");
}
