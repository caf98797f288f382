/* Self-test: the simulated NVML (README.md, "NVML") with GPUSIM_DEVICES=2,
 * GPUSIM_NVML_ORDER=reverse and GPUSIM_NVML_OTHER_PROCS=2 (set by meson):
 * reference counting, device order and lookup, NVML's own clock, the
 * utilisation samples and GPM over kernels of known length (5 kernels of
 * 100 ms filling every SM, on CUDA device 1), memory, processes. */
#include <cuda_runtime_api.h>
#include <string.h>
#include <unistd.h>

#include "gp_nvml.h"
#include "test_util.h"

gp_nvmlReturn_t nvmlInit_v2(void);
gp_nvmlReturn_t nvmlShutdown(void);
gp_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *);
gp_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned, gp_nvmlDevice_t *);
gp_nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *, gp_nvmlDevice_t *);
gp_nvmlReturn_t nvmlDeviceGetPciInfo_v3(gp_nvmlDevice_t, gp_nvmlPciInfo_t *);
gp_nvmlReturn_t nvmlDeviceGetUUID(gp_nvmlDevice_t, char *, unsigned);
gp_nvmlReturn_t nvmlDeviceGetSamples(gp_nvmlDevice_t, int, unsigned long long, int *,
                                     unsigned *, gp_nvmlSample_t *);
gp_nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(gp_nvmlDevice_t, gp_nvmlMemory_v2_t *);
gp_nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(gp_nvmlDevice_t, unsigned *,
                                                        gp_nvmlProcessInfo_t *);
gp_nvmlReturn_t nvmlGpmQueryDeviceSupport(gp_nvmlDevice_t, gp_nvmlGpmSupport_t *);
gp_nvmlReturn_t nvmlGpmSampleAlloc(gp_nvmlGpmSample_t *);
gp_nvmlReturn_t nvmlGpmSampleFree(gp_nvmlGpmSample_t);
gp_nvmlReturn_t nvmlGpmSampleGet(gp_nvmlDevice_t, gp_nvmlGpmSample_t);
gp_nvmlReturn_t nvmlGpmMetricsGet(gp_nvmlGpmMetricsGet_t *);

volatile int sink;
void k_big(void) {
  sink = 1;
}

static uint64_t real_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

static gp_nvmlGpmMetricsGet_t mg;

int main(void) {
  unsigned n = 0;
  gp_nvmlDevice_t h0, h1, h;
  CHECK_EQ(nvmlDeviceGetCount_v2(&n), GP_NVML_ERROR_UNINITIALIZED);
  REQUIRE(nvmlInit_v2() == GP_NVML_SUCCESS);
  REQUIRE(nvmlInit_v2() == GP_NVML_SUCCESS); /* counted */
  CHECK_EQ(nvmlShutdown(), GP_NVML_SUCCESS);
  CHECK_EQ(nvmlDeviceGetCount_v2(&n), GP_NVML_SUCCESS);
  CHECK_EQ(n, 2);
  REQUIRE(nvmlDeviceGetHandleByIndex_v2(0, &h0) == GP_NVML_SUCCESS);
  REQUIRE(nvmlDeviceGetHandleByIndex_v2(1, &h1) == GP_NVML_SUCCESS);
  CHECK_EQ(nvmlDeviceGetHandleByIndex_v2(2, &h), GP_NVML_ERROR_INVALID_ARGUMENT);

  /* reversed: NVML 0 is CUDA 1, whose bus is 0x19; lookups by bus id */
  gp_nvmlPciInfo_t pci;
  CHECK_EQ(nvmlDeviceGetPciInfo_v3(h0, &pci), GP_NVML_SUCCESS);
  CHECK(strcmp(pci.busId, "00000000:19:00.0") == 0);
  CHECK(strcmp(pci.busIdLegacy, "0000:19:00.0") == 0);
  CHECK_EQ(pci.bus, 0x19);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  char cuda_bus[32];
  REQUIRE(cudaDeviceGetPCIBusId(cuda_bus, sizeof cuda_bus, 1) == cudaSuccess);
  CHECK_EQ(nvmlDeviceGetHandleByPciBusId_v2(cuda_bus, &h), GP_NVML_SUCCESS);
  CHECK(h == h0);
  CHECK_EQ(nvmlDeviceGetHandleByPciBusId_v2("0000:18:00.0", &h), GP_NVML_SUCCESS);
  CHECK(h == h1);
  CHECK_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:1a:00.0", &h), GP_NVML_ERROR_NOT_FOUND);
  CHECK_EQ(nvmlDeviceGetHandleByPciBusId_v2("garbage", &h), GP_NVML_ERROR_INVALID_ARGUMENT);
  char uuid[GP_NVML_UUID_SIZE];
  CHECK_EQ(nvmlDeviceGetUUID(h0, uuid, sizeof uuid), GP_NVML_SUCCESS);
  CHECK(strcmp(uuid, "GPU-67707573-696d-0000-0000-000000000001") == 0);
  CHECK_EQ(nvmlDeviceGetUUID(h0, uuid, 10), GP_NVML_ERROR_INSUFFICIENT_SIZE);

  /* 500 ms of kernels on CUDA device 1 = NVML 0; GPM over part of it */
  gp_nvmlGpmSupport_t sup = {.version = GP_NVML_GPM_SUPPORT_VERSION};
  CHECK_EQ(nvmlGpmQueryDeviceSupport(h0, &sup), GP_NVML_SUCCESS);
  CHECK_EQ(sup.isSupportedDevice, 1);
  gp_nvmlGpmSample_t g1, g2;
  REQUIRE(nvmlGpmSampleAlloc(&g1) == GP_NVML_SUCCESS);
  REQUIRE(nvmlGpmSampleAlloc(&g2) == GP_NVML_SUCCESS);
  dim3 grid = {BIG_BLOCKS, 1, 1}, block = {256, 1, 1};
  for (int i = 0; i < 5; i++)
    REQUIRE(cudaLaunchKernel((const void *)k_big, grid, block, NULL, 0, 0) == cudaSuccess);
  CHECK_EQ(nvmlGpmSampleGet(h0, g1), GP_NVML_SUCCESS);
  usleep(50000);
  CHECK_EQ(nvmlGpmSampleGet(h0, g2), GP_NVML_SUCCESS);
  mg.version = GP_NVML_GPM_METRICS_GET_VERSION;
  mg.numMetrics = 3;
  mg.sample1 = g1;
  mg.sample2 = g2;
  mg.metrics[0].metricId = GP_NVML_GPM_SM_UTIL;
  mg.metrics[1].metricId = GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC;
  mg.metrics[2].metricId = 99;
  CHECK_EQ(nvmlGpmMetricsGet(&mg), GP_NVML_SUCCESS);
  CHECK_EQ(mg.metrics[0].nvmlReturn, GP_NVML_SUCCESS);
  CHECK(mg.metrics[0].value > 99.999); /* inside the kernels: every SM */
  CHECK_EQ(mg.metrics[1].nvmlReturn, GP_NVML_SUCCESS);
  CHECK(mg.metrics[1].value == 0);
  CHECK_EQ(mg.metrics[2].nvmlReturn, GP_NVML_ERROR_NOT_SUPPORTED);
  mg.sample1 = g2, mg.sample2 = g1; /* the second must be later */
  CHECK_EQ(nvmlGpmMetricsGet(&mg), GP_NVML_ERROR_INVALID_ARGUMENT);
  mg.version = 2;
  CHECK_EQ(nvmlGpmMetricsGet(&mg), GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  nvmlGpmSampleFree(g1);
  nvmlGpmSampleFree(g2);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  /* samples: one per 1/6 s since nvmlInit_v2, on CLOCK_REALTIME in us */
  gp_nvmlSample_t s[200];
  int vt = 0;
  unsigned cnt = 0;
  CHECK_EQ(nvmlDeviceGetSamples(h0, GP_NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &cnt, NULL),
           GP_NVML_SUCCESS);
  CHECK_EQ(cnt, 120);
  cnt = 200;
  uint64_t now_us = real_us();
  CHECK_EQ(nvmlDeviceGetSamples(h0, GP_NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &cnt, s),
           GP_NVML_SUCCESS);
  CHECK_EQ(vt, GP_NVML_VALUE_TYPE_UNSIGNED_INT);
  CHECK(cnt >= 2); /* >= 500 ms since init */
  int full = 0;
  for (unsigned i = 0; i < cnt; i++) {
    CHECK(s[i].timeStamp <= now_us + 1000 && s[i].timeStamp + 30000000 > now_us);
    unsigned long long d = i ? s[i].timeStamp - s[i - 1].timeStamp : 166666;
    CHECK(d == 166666 || d == 166667); /* 166666667 ns apart */
    CHECK(s[i].sampleValue.uiVal <= 100);
    full += s[i].sampleValue.uiVal == 100;
  }
  CHECK(full >= 1); /* 500 ms of kernels cover at least one whole period */
  unsigned long long newest = s[cnt - 1].timeStamp;
  cnt = 200;
  CHECK_EQ(nvmlDeviceGetSamples(h0, GP_NVML_GPU_UTILIZATION_SAMPLES, newest, &vt, &cnt, s),
           GP_NVML_ERROR_NOT_FOUND);
  /* the other device ran nothing */
  cnt = 200;
  CHECK_EQ(nvmlDeviceGetSamples(h1, GP_NVML_GPU_UTILIZATION_SAMPLES, 0, &vt, &cnt, s),
           GP_NVML_SUCCESS);
  for (unsigned i = 0; i < cnt; i++) CHECK_EQ(s[i].sampleValue.uiVal, 0);

  /* memory and processes */
  void *p;
  REQUIRE(cudaMalloc(&p, 1000) == cudaSuccess); /* on CUDA 1: 1024 bytes */
  gp_nvmlMemory_v2_t m = {.version = 1};
  CHECK_EQ(nvmlDeviceGetMemoryInfo_v2(h0, &m), GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m.version = GP_NVML_MEMORY_V2;
  CHECK_EQ(nvmlDeviceGetMemoryInfo_v2(h0, &m), GP_NVML_SUCCESS);
  CHECK_EQ(m.total, 141000000000ull);
  CHECK_EQ(m.used, 1024 + (512ull << 20));
  CHECK_EQ(m.free, m.total - m.used);
  gp_nvmlProcessInfo_t info[8];
  cnt = 0;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(h0, &cnt, NULL),
           GP_NVML_ERROR_INSUFFICIENT_SIZE);
  CHECK_EQ(cnt, 3); /* this process and GPUSIM_NVML_OTHER_PROCS=2 */
  cnt = 8;
  CHECK_EQ(nvmlDeviceGetComputeRunningProcesses_v3(h0, &cnt, info), GP_NVML_SUCCESS);
  CHECK_EQ(cnt, 3);
  CHECK_EQ(info[0].pid, getpid());
  CHECK_EQ(info[0].usedGpuMemory, 1024 + (512ull << 20));
  cudaFree(p);

  CHECK_EQ(nvmlShutdown(), GP_NVML_SUCCESS);
  CHECK_EQ(nvmlDeviceGetCount_v2(&n), GP_NVML_ERROR_UNINITIALIZED);
  CHECK_EQ(nvmlShutdown(), GP_NVML_ERROR_UNINITIALIZED);
  return test_result("test_nvml");
}
