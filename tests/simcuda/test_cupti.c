/* Self-test: CUPTI callbacks (enabled per id and per domain, and the
 * driver's callback counters), correlation ids, timestamps and activity
 * buffers of the simulated libcupti. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "test_records.h"

volatile int sink;
void k_cb(void) {
  sink = 1;
}

typedef struct call {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  uint32_t corr;
  const char *name, *symbol;
  CUcontext ctx;
  int ret;
  uint64_t data_at_exit;
} call;

static call calls[4096];
static int ncalls;

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void *data) {
  const CUpti_CallbackData *d = data;
  (void)ud;
  if (ncalls == 4096) return;
  call c = {domain,
            cbid,
            d->callbackSite,
            d->correlationId,
            d->functionName,
            d->symbolName,
            d->context,
            -1,
            0};
  if (d->callbackSite == CUPTI_API_ENTER) {
    *d->correlationData = 1000u + d->correlationId;
  } else {
    c.data_at_exit = *d->correlationData;
    c.ret = d->functionReturnValue ? *(const int *)d->functionReturnValue : -1;
  }
  calls[ncalls++] = c;
}

static const call *find(CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                        CUpti_ApiCallbackSite site) {
  for (int i = 0; i < ncalls; i++)
    if (calls[i].domain == dom && calls[i].cbid == cbid &&
        calls[i].site == site)
      return &calls[i];
  return NULL;
}

static uint64_t CUPTIAPI shifted_clock(void) {
  return mono_ns() + 1000000000000ull;
}

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API

/* The first runtime call of the process gets correlation id 1, and the
 * driver calls it makes (resolution, cuInit) share it. */
static void test_first_calls(void) {
  int n = 0;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  const call *e = find(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
                       CUPTI_API_ENTER);
  const call *x = find(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
                       CUPTI_API_EXIT);
  REQUIRE(e && x);
  CHECK_EQ(e->corr, 1);
  CHECK_EQ(x->corr, 1);
  CHECK(strcmp(e->name, "cudaGetDeviceCount") == 0);
  CHECK_EQ(x->ret, cudaSuccess);
  CHECK_EQ(x->data_at_exit, 1001);
  const call *init = find(DRV, CUPTI_DRIVER_TRACE_CBID_cuInit, CUPTI_API_ENTER);
  const call *proc =
      find(DRV, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, CUPTI_API_ENTER);
  REQUIRE(init && proc);
  CHECK_EQ(init->corr, 1);
  CHECK_EQ(proc->corr, 1);
  CHECK(strcmp(init->name, "cuInit") == 0);
  CHECK(init < x && e < proc); /* nested inside the runtime call */

  ncalls = 0;
  void *p = NULL;
  CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
  e = find(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_API_ENTER);
  const call *m =
      find(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT);
  REQUIRE(e && m);
  CHECK_EQ(e->corr, 2);
  CHECK_EQ(m->corr, 2);
  CHECK(strcmp(m->name, "cuMemAlloc_v2") == 0);
  CHECK(m->ctx != NULL);
  CHECK_EQ(cudaFree(p), cudaSuccess);
}

/* A launch's callbacks name the kernel, and its record carries the
 * launch's correlation id; a direct driver call gets its own id. */
static void test_launch_correlation(void) {
  ncalls = 0;
  rec_clear();
  dim3 g = {264, 1, 1}, b = {64, 1, 1}; /* 2 waves: 20000 ns */
  CHECK_EQ(cudaLaunchKernel((const void *)k_cb, g, b, NULL, 16, 0),
           cudaSuccess);
  const call *e = find(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                       CUPTI_API_ENTER);
  const call *d =
      find(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER);
  REQUIRE(e && d);
  CHECK(e->symbol && strcmp(e->symbol, "k_cb") == 0);
  CHECK(d->symbol && strcmp(d->symbol, "k_cb") == 0);
  CHECK_EQ(d->corr, e->corr);
  uint32_t corr = e->corr; /* calls[] is reused below */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1);
  CHECK_EQ(KERNEL(0)->correlationId, corr);
  CHECK_EQ(KERNEL(0)->end - KERNEL(0)->start, 20000);
  CHECK_EQ(KERNEL(0)->dynamicSharedMemory, 16);
  CHECK_EQ(KERNEL(0)->staticSharedMemory, 0);
  const rec *y = rec_nth(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 0);
  REQUIRE(y);
  CHECK_EQ(y->u.y.type,
           CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
  CHECK_EQ(y->u.y.correlationId, corr + 1);

  CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(
      dlopen("libcuda.so.1", RTLD_NOW), "cuDeviceGetCount");
  REQUIRE(count);
  ncalls = 0;
  int n;
  CHECK_EQ(count(&n), CUDA_SUCCESS);
  d = find(DRV, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, CUPTI_API_ENTER);
  REQUIRE(d);
  CHECK_EQ(d->corr, corr + 2);
}

static void test_subscribers(CUpti_SubscriberHandle *sub) {
  CUpti_SubscriberHandle other;
  CHECK_EQ(cuptiSubscribe(&other, on_api, NULL),
           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  /* Only the enabled cbid fires once the domains are off. */
  CHECK_EQ(cuptiEnableDomain(0, *sub, RT), CUPTI_SUCCESS);
  CHECK_EQ(cuptiEnableDomain(0, *sub, DRV), CUPTI_SUCCESS);
  CHECK_EQ(cuptiEnableCallback(1, *sub, RT,
                               CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020),
           CUPTI_SUCCESS);
  ncalls = 0;
  int dev, n;
  cudaGetDeviceCount(&n);
  cudaGetDevice(&dev);
  CHECK_EQ(ncalls, 2);
  CHECK_EQ(calls[0].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020);
  CHECK_EQ(cuptiUnsubscribe(*sub), CUPTI_SUCCESS);
  ncalls = 0;
  cudaGetDevice(&dev);
  CHECK_EQ(ncalls, 0);
  CHECK_EQ(cuptiSubscribe(sub, on_api, NULL), CUPTI_SUCCESS);
}

/* The simulated driver's count of calls made and ENTER callbacks
 * delivered for one id (drv_cupti.c); epoch -1: since the start. */
typedef int (*stats_fn)(int, CUpti_CallbackDomain, CUpti_CallbackId,
                        unsigned long long *, unsigned long long *);
static stats_fn cupti_stats;

static unsigned long long stat_calls(CUpti_CallbackDomain d,
                                     CUpti_CallbackId id) {
  unsigned long long n = 0;
  cupti_stats(-1, d, id, &n, NULL);
  return n;
}

static unsigned long long stat_callbacks(CUpti_CallbackDomain d,
                                         CUpti_CallbackId id) {
  unsigned long long c = 0;
  cupti_stats(-1, d, id, NULL, &c);
  return c;
}

static int count_calls(CUpti_CallbackDomain dom, CUpti_CallbackId cbid) {
  int n = 0;
  for (int i = 0; i < ncalls; i++)
    n += calls[i].domain == dom && calls[i].cbid == cbid;
  return n;
}

/* Per-id enabling as real CUPTI does it: a fresh subscription has nothing
 * enabled; cuptiEnableCallback turns single ids on and off, also inside an
 * enabled domain; a domain switch covers every id; ids outside the domain
 * (and its INVALID id 0) are refused. Calls of ids that are off cost no
 * callback, which the driver's counters show. */
static void launch_n(int n);

static void test_per_id(CUpti_SubscriberHandle *sub) {
  cupti_stats =
      (stats_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "gpusim_cupti_stats");
  REQUIRE(cupti_stats);
  const CUpti_CallbackId get_dev = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
  const CUpti_CallbackId count =
      CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020;
  const CUpti_CallbackId rt_launch =
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  const CUpti_CallbackId drv_launch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  int dev, n;
  /* test_subscribers left a fresh subscription: nothing enabled. */
  uint32_t on = 1;
  CHECK_EQ(cuptiGetCallbackState(&on, *sub, RT, get_dev), CUPTI_SUCCESS);
  CHECK_EQ(on, 0);
  int epoch = cupti_stats(-1, RT, get_dev, NULL, NULL);
  CHECK(epoch >= 2); /* main's subscription, then test_subscribers' */
  unsigned long long calls0 = stat_calls(RT, get_dev);
  unsigned long long cb0 = stat_callbacks(RT, get_dev);
  ncalls = 0;
  for (int i = 0; i < 100; i++)
    cudaGetDevice(&dev);
  CHECK_EQ(ncalls, 0);
  CHECK_EQ(stat_calls(RT, get_dev), calls0 + 100);
  CHECK_EQ(stat_callbacks(RT, get_dev), cb0);

  /* Two ids, one per domain: a launch calls back twice (runtime and the
   * driver call nested in it), enter and exit, and nothing else does. */
  CHECK_EQ(cuptiEnableCallback(1, *sub, RT, rt_launch), CUPTI_SUCCESS);
  CHECK_EQ(cuptiEnableCallback(1, *sub, DRV, drv_launch), CUPTI_SUCCESS);
  CHECK_EQ(cuptiGetCallbackState(&on, *sub, RT, rt_launch), CUPTI_SUCCESS);
  CHECK_EQ(on, 1);
  unsigned long long rt_cb0 = stat_callbacks(RT, rt_launch);
  ncalls = 0;
  launch_n(3);
  cudaGetDevice(&dev);
  cudaGetDeviceCount(&n);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(ncalls, 12);
  CHECK_EQ(count_calls(RT, rt_launch), 6);
  CHECK_EQ(count_calls(DRV, drv_launch), 6);
  CHECK_EQ(stat_callbacks(RT, rt_launch), rt_cb0 + 3);
  /* the nested driver call shares the runtime call's id */
  CHECK_EQ(calls[0].corr, calls[1].corr);

  /* One id off again: only the driver's remain. */
  CHECK_EQ(cuptiEnableCallback(0, *sub, RT, rt_launch), CUPTI_SUCCESS);
  ncalls = 0;
  launch_n(1);
  CHECK_EQ(ncalls, 2);
  CHECK_EQ(count_calls(DRV, drv_launch), 2);

  /* A domain on, then one of its ids off. */
  CHECK_EQ(cuptiEnableDomain(1, *sub, RT), CUPTI_SUCCESS);
  CHECK_EQ(cuptiEnableCallback(0, *sub, RT, get_dev), CUPTI_SUCCESS);
  ncalls = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceCount(&n);
  CHECK_EQ(ncalls, 2);
  CHECK_EQ(count_calls(RT, count), 2);
  CHECK_EQ(count_calls(RT, get_dev), 0);
  /* ...and the domain off takes the single ids with it. */
  CHECK_EQ(cuptiEnableDomain(0, *sub, DRV), CUPTI_SUCCESS);
  CHECK_EQ(cuptiEnableDomain(0, *sub, RT), CUPTI_SUCCESS);
  ncalls = 0;
  launch_n(1);
  cudaGetDeviceCount(&n);
  CHECK_EQ(ncalls, 0);

  /* Ids a domain does not have. */
  CHECK_EQ(cuptiEnableCallback(1, *sub, RT, CUPTI_RUNTIME_TRACE_CBID_INVALID),
           CUPTI_ERROR_INVALID_PARAMETER);
  CHECK_EQ(cuptiEnableCallback(1, *sub, RT, CUPTI_RUNTIME_TRACE_CBID_SIZE),
           CUPTI_ERROR_INVALID_PARAMETER);
  CHECK_EQ(cuptiEnableCallback(1, *sub, DRV, CUPTI_DRIVER_TRACE_CBID_INVALID),
           CUPTI_ERROR_INVALID_PARAMETER);
  CHECK_EQ(cuptiEnableCallback(1, *sub, DRV, CUPTI_DRIVER_TRACE_CBID_SIZE),
           CUPTI_ERROR_INVALID_PARAMETER);
  CHECK_EQ(cuptiGetCallbackState(&on, *sub, DRV, CUPTI_DRIVER_TRACE_CBID_SIZE),
           CUPTI_ERROR_INVALID_PARAMETER);

  /* What a subscriber enabled goes with it; the next one starts from
   * nothing, in a new epoch of the counters. */
  CHECK_EQ(cuptiEnableCallback(1, *sub, RT, get_dev), CUPTI_SUCCESS);
  CHECK_EQ(cuptiUnsubscribe(*sub), CUPTI_SUCCESS);
  CHECK_EQ(cuptiSubscribe(sub, on_api, NULL), CUPTI_SUCCESS);
  CHECK_EQ(cupti_stats(-1, RT, get_dev, NULL, NULL), epoch + 1);
  ncalls = 0;
  cudaGetDevice(&dev);
  CHECK_EQ(ncalls, 0);
  unsigned long long in_epoch = 0, cb_in_epoch = 1;
  cupti_stats(epoch + 1, RT, get_dev, &in_epoch, &cb_in_epoch);
  CHECK_EQ(in_epoch, 1);
  CHECK_EQ(cb_in_epoch, 0);
}

/* Records come out in the clock registered before enabling activities;
 * durations are unaffected. */
static void test_timestamps(void) {
  rec_clear();
  uint64_t before = mono_ns();
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  CHECK_EQ(cudaLaunchKernel((const void *)k_cb, g, b, NULL, 0, 0), cudaSuccess);
  uint64_t after = mono_ns();
  uint64_t ts = 0;
  CHECK_EQ(cuptiGetTimestamp(&ts), CUPTI_SUCCESS);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1);
  /* The offset is fixed at registration from two clock reads; the test
   * thread may have been descheduled between them. */
  uint64_t shift = 1000000000000ull, slack = WALL_TOLERANCE_NS;
  CHECK(KERNEL(0)->start + slack >= before + shift);
  CHECK(KERNEL(0)->start <= after + shift + slack);
  CHECK_EQ(KERNEL(0)->end - KERNEL(0)->start, 10000);
  CHECK(ts + slack >= after + shift && ts <= mono_ns() + shift + slack);
  CHECK_EQ(cuptiActivityRegisterTimestampCallback(shifted_clock),
           CUPTI_ERROR_INVALID_OPERATION);
}

/* ---- buffer handling with a client that hands out small buffers ---- */

static size_t small_size, small_max;
static int small_done, small_valid_total;
static size_t dropped_before;

static void CUPTIAPI small_request(uint8_t **b, size_t *size, size_t *max) {
  *size = small_size;
  *max = small_max;
  *b = small_size ? aligned_alloc(8, small_size) : NULL;
}

static void CUPTIAPI small_complete(CUcontext c, uint32_t s, uint8_t *b,
                                    size_t size, size_t valid) {
  (void)c, (void)s, (void)size;
  CUpti_Activity *r = NULL;
  int n = 0;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    n++;
  CHECK_EQ(cuptiActivityGetNextRecord(b, valid, &r),
           CUPTI_ERROR_MAX_LIMIT_REACHED);
  small_valid_total += n;
  small_done++;
  free(b);
}

static void launch_n(int n) {
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  for (int i = 0; i < n; i++)
    CHECK_EQ(cudaLaunchKernel((const void *)k_cb, g, b, NULL, 0, 0),
             cudaSuccess);
}

static void test_buffers(void) {
  rec_flush();
  CHECK_EQ(cuptiActivityRegisterCallbacks(small_request, small_complete),
           CUPTI_SUCCESS);
  /* maxNumRecords = 2: 5 records fill two buffers, the flush a third. */
  small_size = 4096, small_max = 2;
  launch_n(5);
  CHECK_EQ(small_done, 2);
  CHECK_EQ(small_valid_total, 4);
  CHECK_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  CHECK_EQ(small_done, 3);
  CHECK_EQ(small_valid_total, 5);
  /* No limit: a buffer holds as many 8-byte-aligned records as fit. */
  size_t rec = (sizeof(CUpti_ActivityKernel10) + 7) & ~(size_t)7;
  small_size = 3 * rec + 8, small_max = 0;
  launch_n(4);
  CHECK_EQ(small_done, 4);
  CHECK_EQ(small_valid_total, 8);
  CHECK_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
           CUPTI_SUCCESS);
  CHECK_EQ(small_valid_total, 9);
  /* A client that gives no buffer loses records, which are counted. */
  CHECK_EQ(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped_before),
           CUPTI_SUCCESS);
  small_size = 0;
  launch_n(3);
  size_t dropped = 0;
  CHECK_EQ(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
  CHECK_EQ(dropped - dropped_before, 3);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

static void test_kernel_kind(void) {
  CHECK_EQ(cuptiActivityRegisterCallbacks(rec_request, rec_complete),
           CUPTI_SUCCESS);
  CHECK_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
           CUPTI_SUCCESS);
  CHECK_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
           CUPTI_SUCCESS);
  CHECK_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
  CHECK_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
  rec_clear();
  launch_n(1);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  CHECK_EQ(nrecs, 1);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_KERNEL), 1);
}

int main(void) {
  CUpti_SubscriberHandle sub;
  REQUIRE(cuptiSubscribe(&sub, on_api, NULL) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, sub, RT) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, sub, DRV) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterTimestampCallback(shifted_clock) ==
          CUPTI_SUCCESS);
  rec_start();
  test_first_calls();
  test_launch_correlation();
  test_subscribers(&sub);
  test_per_id(&sub);
  test_timestamps();
  test_buffers();
  test_kernel_kind();
  CHECK_EQ(cuptiFinalize(), CUPTI_SUCCESS);
  CHECK_EQ(cuptiSubscribe(&sub, on_api, NULL), CUPTI_SUCCESS);
  return test_result("test_cupti");
}
