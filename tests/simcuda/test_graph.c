/* Self-test: stream capture and CUDA graphs, through the runtime and
 * through the driver entry points. Expected durations from the model
 * (defaults: 132 SMs, 10 us waves, HBM 3000 B/ns, 2 us copy latency),
 * worked out next to each constant. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "test_records.h"

volatile int sink;
void g_a(void) {
  sink = 1;
}
void g_b(void) {
  sink = 2;
}
void g_big(void) {
  sink = 3;
}

#define A_NS 10000   /* 132 blocks: one wave */
#define B_NS 20000   /* 264 blocks: two waves */
#define SET_NS 2001  /* 1000 B memset: 2000 + ceil(1000 / 3000) */
#define COPY_NS 2350 /* 1 MiB on one device: 2000 + ceil(1048576 / 3000) */
#define MIB (1u << 20)

/* Correlation ids of the graph launches, from the CUPTI callback. */
static uint32_t launch_corr[8];
static int nlaunch;

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain dom,
                            CUpti_CallbackId cbid, const void *data) {
  const CUpti_CallbackData *d = data;
  (void)ud;
  bool rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
            cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
  bool drv = dom == CUPTI_CB_DOMAIN_DRIVER_API &&
             cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch &&
             d->correlationId != (nlaunch ? launch_corr[nlaunch - 1] : 0);
  if ((rt || drv) && d->callbackSite == CUPTI_API_ENTER && nlaunch < 8)
    launch_corr[nlaunch++] = d->correlationId;
}

static cudaError_t launch(const void *k, unsigned blocks, cudaStream_t s) {
  dim3 g = {blocks, 1, 1}, b = {128, 1, 1};
  return cudaLaunchKernel(k, g, b, NULL, 0, s);
}

static enum cudaStreamCaptureStatus status(cudaStream_t s) {
  enum cudaStreamCaptureStatus st = (enum cudaStreamCaptureStatus)99;
  CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  return st;
}

/* Captures A, memset, B, copy, A into a graph; nothing runs. */
static cudaGraph_t capture(cudaStream_t s, void *d0, void *d1) {
  cudaGraph_t g = NULL;
  CHECK_EQ(status(s), cudaStreamCaptureStatusNone);
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(status(s), cudaStreamCaptureStatusActive);
  CHECK_EQ(launch((const void *)g_a, 132, s), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(d0, 7, 1000, s), cudaSuccess);
  CHECK_EQ(launch((const void *)g_b, 264, s), cudaSuccess);
  CHECK_EQ(cudaMemcpyAsync(d1, d0, MIB, cudaMemcpyDeviceToDevice, s),
           cudaSuccess);
  CHECK_EQ(launch((const void *)g_a, 132, s), cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  CHECK(g != NULL);
  CHECK_EQ(status(s), cudaStreamCaptureStatusNone);
  /* nothing was queued: the stream is idle at once */
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  rec_flush();
  CHECK_EQ(nrecs, 0);
  return g;
}

/* The records of one launch, in node order, and where its work ends. */
static uint64_t check_launch(int first, uint32_t corr, uint64_t after,
                             uint32_t graph_id, const uint64_t *node_ids) {
  static const int kinds[5] = {0, 1, 0, 2, 0}; /* kernel, memset, copy */
  static const uint64_t durs[5] = {A_NS, SET_NS, B_NS, COPY_NS, A_NS};
  int k = 1 + first * 3, m = first, c = first; /* kernel 0: g_big */
  for (int i = 0; i < 5; i++) {
    uint64_t start, end, node;
    uint32_t gid, rc;
    if (kinds[i] == 0) {
      const CUpti_ActivityKernel10 *r = KERNEL(k++);
      start = r->start, end = r->end, gid = r->graphId, node = r->graphNodeId;
      rc = r->correlationId;
    } else if (kinds[i] == 1) {
      const CUpti_ActivityMemset4 *r =
          &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, m++)->u.s;
      start = r->start, end = r->end, gid = r->graphId, node = r->graphNodeId;
      rc = r->correlationId;
      CHECK_EQ(r->bytes, 1000);
    } else {
      const CUpti_ActivityMemcpy6 *r =
          &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, c++)->u.m;
      start = r->start, end = r->end, gid = r->graphId, node = r->graphNodeId;
      rc = r->correlationId;
      CHECK_EQ(r->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    }
    CHECK_EQ(end - start, durs[i]);
    CHECK_EQ(start, after); /* back to back on the launch stream */
    CHECK_EQ(gid, graph_id);
    CHECK_EQ(node, node_ids[i]);
    CHECK_EQ(rc, corr);
    after = end;
  }
  return after;
}

static void test_runtime_graph(void) {
  cudaStream_t s;
  void *d0, *d1;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMalloc(&d0, MIB) == cudaSuccess);
  REQUIRE(cudaMalloc(&d1, MIB) == cudaSuccess);
  rec_clear();
  cudaGraph_t g = capture(s, d0, d1);
  cudaGraphExec_t x = NULL, y = NULL;
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiateWithFlags(&y, g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphDestroy(g), cudaSuccess); /* the execs keep copies */
  CHECK_EQ(cudaGraphDestroy(g), cudaErrorInvalidValue);
  /* queue the launches behind 100 ms of work so they run back to back */
  CHECK_EQ(launch((const void *)g_big, BIG_BLOCKS, s), cudaSuccess);
  nlaunch = 0;
  uint64_t t0 = mono_ns();
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(y, s), cudaSuccess);
  CHECK(mono_ns() - t0 < BIG_NS); /* launches never block */
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(nlaunch == 3);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1 + 3 * 3);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMSET), 3);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 3);
  const CUpti_ActivityKernel10 *big = KERNEL(0);
  CHECK_EQ(big->graphId, 0);
  CHECK_EQ(big->graphNodeId, 0);
  /* the nodes keep their ids in every launch of every exec */
  uint64_t nodes[5];
  const CUpti_ActivityKernel10 *k1 = KERNEL(1);
  const CUpti_ActivityMemset4 *m1 =
      &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 0)->u.s;
  nodes[0] = k1->graphNodeId;
  nodes[1] = m1->graphNodeId;
  nodes[2] = KERNEL(2)->graphNodeId;
  nodes[3] = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 0)->u.m.graphNodeId;
  nodes[4] = KERNEL(3)->graphNodeId;
  for (int i = 1; i < 5; i++)
    CHECK_EQ(nodes[i], nodes[0] + (uint64_t)i);
  CHECK(k1->graphId != 0);
  uint64_t end = check_launch(0, launch_corr[0], big->end, k1->graphId, nodes);
  end = check_launch(1, launch_corr[1], end, k1->graphId, nodes);
  uint32_t other = KERNEL(7)->graphId;
  CHECK(other != 0 && other != k1->graphId);
  check_launch(2, launch_corr[2], end, other, nodes);
  CHECK(launch_corr[0] != launch_corr[1] && launch_corr[1] != launch_corr[2]);
  CHECK_EQ(cudaGraphExecDestroy(x), cudaSuccess);
  CHECK_EQ(cudaGraphExecDestroy(y), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaGraphExecDestroy(x), cudaErrorInvalidValue);
  cudaFree(d0);
  cudaFree(d1);
  cudaStreamDestroy(s);
}

/* Calls a capture cannot hold break it; the capture still has to be
 * ended, and yields no graph. */
static void test_capture_errors(void) {
  cudaStream_t s;
  cudaGraph_t g = (cudaGraph_t)&g;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK_EQ(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
           cudaErrorStreamCaptureUnsupported);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
           cudaSuccess);
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed),
           cudaErrorIllegalState);
  CHECK_EQ(launch((const void *)g_a, 1, s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  CHECK_EQ(status(s), cudaStreamCaptureStatusInvalidated);
  CHECK_EQ(launch((const void *)g_a, 1, s), cudaErrorStreamCaptureInvalidated);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  CHECK(g == NULL);
  CHECK_EQ(status(s), cudaStreamCaptureStatusNone);
  /* a stream destroyed while capturing takes its capture along */
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(launch((const void *)g_a, 1, s), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  cudaGetLastError();
}

/* The per-thread default stream can be captured, the legacy one not. */
static void test_per_thread_capture(void) {
  cudaStream_t pt = cudaStreamPerThread;
  cudaGraph_t g = NULL;
  cudaGraphExec_t x = NULL;
  rec_clear();
  CHECK_EQ(cudaStreamBeginCapture(pt, cudaStreamCaptureModeGlobal),
           cudaSuccess);
  CHECK_EQ(launch((const void *)g_b, 264, pt), cudaSuccess);
  CHECK_EQ(launch((const void *)g_a, 1, 0), cudaSuccess); /* not captured */
  CHECK_EQ(cudaStreamEndCapture(pt, &g), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, pt), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 2);
  CHECK_EQ(KERNEL(0)->graphId, 0);
  CHECK(KERNEL(1)->graphId != 0);
  CHECK_EQ(KERNEL(1)->end - KERNEL(1)->start, B_NS);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
}

/* The driver's entry points, as a library with its own runtime reaches
 * them: capture, instantiate and launch through cuGetProcAddress. */
static void *entry(const char *name) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  REQUIRE(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault,
                                           &q) == cudaSuccess);
  REQUIRE(q == cudaDriverEntryPointSuccess && fn);
  return fn;
}

static void test_driver_graph(void) {
  __typeof__(&cuStreamBeginCapture_v2) begin = entry("cuStreamBeginCapture");
  __typeof__(&cuStreamEndCapture) end = entry("cuStreamEndCapture");
  __typeof__(&cuGraphInstantiateWithFlags) inst = entry("cuGraphInstantiate");
  __typeof__(&cuGraphLaunch) glaunch = entry("cuGraphLaunch");
  __typeof__(&cuGraphExecDestroy) xdestroy = entry("cuGraphExecDestroy");
  __typeof__(&cuGraphDestroy) gdestroy = entry("cuGraphDestroy");
  __typeof__(&cuLaunchKernel) klaunch = entry("cuLaunchKernel");
  cudaFunction_t f;
  REQUIRE(cudaGetFuncBySymbol(&f, (const void *)g_b) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  rec_clear();
  CUgraph g = NULL;
  CUgraphExec x = NULL;
  CHECK_EQ(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(klaunch((CUfunction)f, 264, 1, 1, 64, 1, 1, 0, s, NULL, NULL),
           CUDA_SUCCESS);
  CHECK_EQ(end(s, &g), CUDA_SUCCESS);
  CHECK_EQ(inst(&x, g, 0), CUDA_SUCCESS);
  CHECK_EQ(launch((const void *)g_big, BIG_BLOCKS, s), cudaSuccess);
  nlaunch = 0;
  CHECK_EQ(glaunch(x, s), CUDA_SUCCESS);
  CHECK_EQ(glaunch(x, s), CUDA_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(nlaunch == 2);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 3);
  for (int i = 1; i <= 2; i++) {
    CHECK_EQ(KERNEL(i)->start, KERNEL(i - 1)->end);
    CHECK_EQ(KERNEL(i)->end - KERNEL(i)->start, B_NS);
    CHECK_EQ(KERNEL(i)->correlationId, launch_corr[i - 1]);
    CHECK(KERNEL(i)->graphId != 0);
    CHECK_EQ(KERNEL(i)->blockX, 64);
  }
  CHECK(launch_corr[0] != launch_corr[1]);
  CHECK_EQ(xdestroy(x), CUDA_SUCCESS);
  CHECK_EQ(gdestroy(g), CUDA_SUCCESS);
  cudaStreamDestroy(s);
}

int main(void) {
  CUpti_SubscriberHandle sub;
  rec_start();
  REQUIRE(cuptiSubscribe(&sub, on_api, NULL) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) ==
          CUPTI_SUCCESS);
  test_runtime_graph();
  test_capture_errors();
  test_per_thread_capture();
  test_driver_graph();
  return test_result("test_graph");
}
