/* Self-test: explicitly built CUDA graphs (nodes, dependencies, memory
 * nodes, child graphs, events, update, clone) and stream capture across
 * streams joined by events (fork/join, unjoined, isolation, capture
 * modes). Expected times from the model (defaults: 132 SMs, 10 us waves,
 * HBM 3000 B/ns, 2 us copy latency), worked out next to each constant;
 * graph nodes start when their dependencies have ended. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>

#include "test_records.h"

volatile int sink;
void gb_a(void) {
  sink = 1;
}
void gb_b(void) {
  sink = 2;
}
void gb_c(void) {
  sink = 3;
}
void gb_big(void) {
  sink = 4;
}

#define A_NS 10000   /* 132 blocks: one wave */
#define B_NS 20000   /* 264 blocks: two waves */
#define C_NS 30000   /* 396 blocks: three waves */
#define SET_NS 2001  /* 1000 B memset: 2000 + ceil(1000 / 3000) */
#define COPY_NS 2350 /* 1 MiB on one device: 2000 + ceil(1048576 / 3000) */
#define MIB (1u << 20)

static int host_runs;
static void CUDART_CB on_host(void *p) {
  (void)p;
  host_runs++;
}

static size_t free_bytes(void) {
  size_t f = 0, t = 0;
  CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  return f;
}

static struct cudaKernelNodeParams kparams(void (*f)(void), unsigned blocks) {
  struct cudaKernelNodeParams p = {0};
  p.func = (void *)f;
  p.gridDim = (dim3){blocks, 1, 1};
  p.blockDim = (dim3){128, 1, 1};
  return p;
}

static cudaError_t launch(void (*f)(void), unsigned blocks, cudaStream_t s) {
  dim3 g = {blocks, 1, 1}, b = {128, 1, 1};
  return cudaLaunchKernel((const void *)f, g, b, NULL, 0, s);
}

/* The kernel record of function-name suffix `name` after index *from. */
static const CUpti_ActivityKernel10 *kernel_named(const char *name, int *from) {
  for (int i = *from; i < rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
       i++) {
    const CUpti_ActivityKernel10 *k = KERNEL(i);
    if (strcmp(k->name, name) == 0) {
      *from = i + 1;
      return k;
    }
  }
  return NULL;
}

/* alloc -> memset -> {A, B} -> copy -> host -> free, launched twice
 * behind 100 ms of work: each node starts when its dependencies end. */
static void test_explicit(void) {
  cudaStream_t s;
  void *d1;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMalloc(&d1, MIB) == cudaSuccess);
  size_t free0 = free_bytes();
  cudaGraph_t g = NULL;
  CHECK_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t n_alloc, n_set, n_a, n_b, n_copy, n_host, n_free;
  struct cudaMemAllocNodeParams ap = {0};
  ap.poolProps.allocType = cudaMemAllocationTypePinned;
  ap.poolProps.location.type = cudaMemLocationTypeDevice;
  ap.poolProps.location.id = 0;
  ap.bytesize = MIB;
  CHECK_EQ(cudaGraphAddMemAllocNode(&n_alloc, g, NULL, 0, &ap), cudaSuccess);
  REQUIRE(ap.dptr != NULL);
  CHECK_EQ(free_bytes(), free0); /* reserved, not yet counted */
  struct cudaMemsetParams sp = {
      .dst = ap.dptr, .value = 7, .elementSize = 1, .width = 1000, .height = 1};
  CHECK_EQ(cudaGraphAddMemsetNode(&n_set, g, &n_alloc, 1, &sp), cudaSuccess);
  struct cudaKernelNodeParams ka = kparams(gb_a, 132), kb = kparams(gb_b, 264);
  CHECK_EQ(cudaGraphAddKernelNode(&n_a, g, &n_set, 1, &ka), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&n_b, g, &n_set, 1, &kb), cudaSuccess);
  cudaGraphNode_t ab[2] = {n_a, n_b};
  CHECK_EQ(cudaGraphAddMemcpyNode1D(&n_copy, g, ab, 2, d1, ap.dptr, MIB,
                                    cudaMemcpyDeviceToDevice),
           cudaSuccess);
  struct cudaHostNodeParams hp = {on_host, NULL};
  CHECK_EQ(cudaGraphAddHostNode(&n_host, g, NULL, 0, &hp), cudaSuccess);
  CHECK_EQ(cudaGraphAddDependencies(g, &n_copy, &n_host, NULL, 1), cudaSuccess);
  CHECK_EQ(cudaGraphAddDependencies(g, &n_copy, &n_host, NULL, 1),
           cudaErrorInvalidValue); /* already there */
  CHECK_EQ(cudaGraphAddMemFreeNode(&n_free, g, &n_host, 1, ap.dptr),
           cudaSuccess);
  CHECK_EQ(cudaGraphAddMemFreeNode(&n_free, g, &n_host, 1, d1),
           cudaErrorInvalidValue); /* not graph memory */
  size_t nn = 0;
  CHECK_EQ(cudaGraphGetNodes(g, NULL, &nn), cudaSuccess);
  CHECK_EQ(nn, 7);
  cudaGraphNode_t all[8];
  nn = 8;
  CHECK_EQ(cudaGraphGetNodes(g, all, &nn), cudaSuccess);
  CHECK_EQ(nn, 7);
  CHECK(all[0] == n_alloc && all[6] == n_free && all[7] == NULL);
  cudaGraph_t cl;
  CHECK_EQ(cudaGraphClone(&cl, g), cudaErrorNotSupported); /* memory nodes */

  cudaGraphExec_t x = NULL, x2 = NULL;
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiate(&x2, g, 0), cudaErrorNotSupported);
  CHECK_EQ(cudaGraphUpload(x, s), cudaSuccess);
  rec_clear();
  host_runs = 0;
  CHECK_EQ(launch(gb_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(host_runs, 1); /* on the launching thread, during the call */
  /* A takes three waves from the second launch on */
  struct cudaKernelNodeParams kc = kparams(gb_c, 396);
  CHECK_EQ(cudaGraphExecKernelNodeSetParams(x, n_a, &kc), cudaSuccess);
  CHECK_EQ(cudaGraphExecKernelNodeSetParams(x, n_set, &kc),
           cudaErrorInvalidValue); /* not a kernel node */
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(host_runs, 2);
  CHECK_EQ(free_bytes(), free0); /* the free node ran */
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1 + 2 * 2);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMSET), 2);
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 2);
  uint64_t t = KERNEL(0)->end;
  uint64_t a_ns[2] = {A_NS, C_NS};
  int from = 1;
  for (int l = 0; l < 2; l++) {
    const CUpti_ActivityMemset4 *m =
        &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, l)->u.s;
    const CUpti_ActivityMemcpy6 *c =
        &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, l)->u.m;
    int f2 = from;
    const CUpti_ActivityKernel10 *a = kernel_named(l ? "gb_c" : "gb_a", &from);
    const CUpti_ActivityKernel10 *b = kernel_named("gb_b", &f2);
    from = from > f2 ? from : f2;
    REQUIRE(a && b);
    CHECK_EQ(m->start, t);
    CHECK_EQ(m->end - m->start, SET_NS);
    CHECK_EQ(a->start, m->end); /* both branches after the memset */
    CHECK_EQ(b->start, m->end);
    CHECK_EQ(a->end - a->start, a_ns[l]);
    CHECK_EQ(b->end - b->start, B_NS);
    uint64_t join = a->end > b->end ? a->end : b->end;
    CHECK_EQ(c->start, join);
    CHECK_EQ(c->end - c->start, COPY_NS);
    CHECK_EQ(c->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    CHECK(a->graphId != 0 && a->graphId == m->graphId &&
          c->graphId == a->graphId);
    CHECK(a->graphNodeId != b->graphNodeId && a->graphNodeId != 0);
    CHECK_EQ(a->correlationId, c->correlationId);
    t = c->end;
  }
  CHECK(KERNEL(1)->correlationId != KERNEL(3)->correlationId);
  CHECK_EQ(cudaGraphExecDestroy(x), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiate(&x2, g, 0), cudaSuccess); /* one at a time */
  CHECK_EQ(cudaGraphExecDestroy(x2), cudaSuccess);
  CHECK_EQ(cudaGraphDestroy(g), cudaSuccess);

  /* without a free node the memory stays in use until cudaFreeAsync; a
   * second launch while it lives fails */
  CHECK_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  ap.dptr = NULL;
  CHECK_EQ(cudaGraphAddMemAllocNode(&n_alloc, g, NULL, 0, &ap), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  CHECK_EQ(free_bytes(), free0);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(free_bytes(), free0 - MIB);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaFreeAsync(ap.dptr, s), cudaSuccess);
  CHECK_EQ(free_bytes(), free0);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  CHECK_EQ(free_bytes(), free0 - MIB);
  CHECK_EQ(cudaGraphExecDestroy(x), cudaSuccess);
  CHECK_EQ(free_bytes(), free0 - MIB); /* outlives its graph */
  CHECK_EQ(cudaFree(ap.dptr), cudaSuccess);
  CHECK_EQ(free_bytes(), free0);
  CHECK_EQ(cudaFree(ap.dptr), cudaErrorInvalidValue);
  CHECK_EQ(cudaGraphDestroy(g), cudaSuccess);
  cudaFree(d1);
  cudaStreamDestroy(s);
}

/* A -> B, updated in place from a graph of the same shape, cloned, used
 * as a child graph; a graph of another shape is refused. */
static void test_update_clone_child(void) {
  cudaStream_t s;
  void *d;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMalloc(&d, MIB) == cudaSuccess);
  cudaGraph_t g, h, one, cl, parent;
  cudaGraphNode_t n1, n2, m1, m2, c0, cn, cs;
  struct cudaKernelNodeParams ka = kparams(gb_a, 132), kb = kparams(gb_b, 264),
                              kc = kparams(gb_c, 396);
  CHECK_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&n1, g, NULL, 0, &ka), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&n2, g, &n1, 1, &kb), cudaSuccess);
  CHECK_EQ(cudaGraphCreate(&h, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&m1, h, NULL, 0, &kc), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&m2, h, &m1, 1, &ka), cudaSuccess);
  CHECK_EQ(cudaGraphCreate(&one, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&m1, one, NULL, 0, &ka), cudaSuccess);
  struct cudaKernelNodeParams bad = kparams(gb_a, 0);
  CHECK_EQ(cudaGraphAddKernelNode(&m1, one, NULL, 0, &bad),
           cudaErrorInvalidConfiguration);
  cudaGraphExec_t x;
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  cudaGraphExecUpdateResultInfo info;
  CHECK_EQ(cudaGraphExecUpdate(x, one, &info), cudaErrorGraphExecUpdateFailure);
  CHECK_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  CHECK_EQ(cudaGraphExecUpdate(x, h, &info), cudaSuccess);
  CHECK_EQ(info.result, cudaGraphExecUpdateSuccess);
  CHECK_EQ(cudaGraphClone(&cl, g), cudaSuccess);
  cudaGraphExec_t xc, xp;
  CHECK_EQ(cudaGraphInstantiate(&xc, cl, 0), cudaSuccess);
  /* parent: empty -> child(g) -> memset */
  CHECK_EQ(cudaGraphCreate(&parent, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddEmptyNode(&c0, parent, NULL, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddChildGraphNode(&cn, parent, &c0, 1, g), cudaSuccess);
  struct cudaMemsetParams sp = {
      .dst = d, .value = 1, .elementSize = 1, .width = 1000, .height = 1};
  CHECK_EQ(cudaGraphAddMemsetNode(&cs, parent, &cn, 1, &sp), cudaSuccess);
  CHECK_EQ(cudaGraphInstantiate(&xp, parent, 0), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch(gb_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess);  /* C then A */
  CHECK_EQ(cudaGraphLaunch(xc, s), cudaSuccess); /* A then B */
  CHECK_EQ(cudaGraphLaunch(xp, s), cudaSuccess); /* A, B, memset */
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 7);
  static const char *names[6] = {"gb_c", "gb_a", "gb_a",
                                 "gb_b", "gb_a", "gb_b"};
  static const uint64_t durs[6] = {C_NS, A_NS, A_NS, B_NS, A_NS, B_NS};
  for (int i = 0; i < 6; i++) {
    const CUpti_ActivityKernel10 *k = KERNEL(i + 1);
    CHECK(strcmp(k->name, names[i]) == 0);
    CHECK_EQ(k->end - k->start, durs[i]);
    CHECK_EQ(k->start, KERNEL(i)->end); /* each follows the previous */
  }
  /* the exec keeps its node ids after the update; the clone has its own */
  CHECK(KERNEL(1)->graphNodeId != KERNEL(3)->graphNodeId);
  CHECK_EQ(KERNEL(5)->graphNodeId, KERNEL(1)->graphNodeId); /* child: g's */
  CHECK(KERNEL(1)->graphId != KERNEL(3)->graphId);
  const CUpti_ActivityMemset4 *m = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 0)->u.s;
  CHECK_EQ(m->start, KERNEL(6)->end);
  CHECK_EQ(m->graphId, KERNEL(6)->graphId);
  /* a cycle cannot be instantiated */
  CHECK_EQ(cudaGraphAddDependencies(g, &n2, &n1, NULL, 1), cudaSuccess);
  cudaGraphExec_t xbad = (cudaGraphExec_t)&xbad;
  CHECK_EQ(cudaGraphInstantiate(&xbad, g, 0), cudaErrorInvalidValue);
  CHECK(xbad == NULL);
  cudaGraphExecDestroy(x);
  cudaGraphExecDestroy(xc);
  cudaGraphExecDestroy(xp);
  cudaGraphDestroy(g);
  cudaGraphDestroy(h);
  cudaGraphDestroy(one);
  cudaGraphDestroy(cl);
  cudaGraphDestroy(parent);
  cudaFree(d);
  cudaStreamDestroy(s);
}

/* Event record and wait nodes order work across streams. */
static void test_event_nodes(void) {
  cudaStream_t s, s2;
  cudaEvent_t ev, ev2;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaEventCreate(&ev) == cudaSuccess);
  REQUIRE(cudaEventCreate(&ev2) == cudaSuccess);
  cudaGraph_t g;
  cudaGraphNode_t w, k, r;
  struct cudaKernelNodeParams kb = kparams(gb_b, 264);
  CHECK_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphAddEventWaitNode(&w, g, NULL, 0, ev2), cudaSuccess);
  CHECK_EQ(cudaGraphAddKernelNode(&k, g, &w, 1, &kb), cudaSuccess);
  CHECK_EQ(cudaGraphAddEventRecordNode(&r, g, &k, 1, ev), cudaSuccess);
  cudaGraphExec_t x;
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  rec_clear();
  CHECK_EQ(launch(gb_big, BIG_BLOCKS, s2), cudaSuccess);
  CHECK_EQ(cudaEventRecord(ev2, s2), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, s), cudaSuccess); /* waits for the big one */
  CHECK_EQ(cudaStreamWaitEvent(s2, ev, 0), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, s2), cudaSuccess); /* after the graph's B */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 3);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  CHECK_EQ(KERNEL(1)->end - KERNEL(1)->start, B_NS);
  CHECK_EQ(KERNEL(2)->start, KERNEL(1)->end);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaEventDestroy(ev);
  cudaEventDestroy(ev2);
  cudaStreamDestroy(s);
  cudaStreamDestroy(s2);
}

/* Capture on A, fork to B and C by an event, join back by events. */
static void test_fork_join(void) {
  cudaStream_t a, b, c;
  cudaEvent_t fork, jb, jc;
  void *d;
  REQUIRE(cudaStreamCreate(&a) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&b) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&c) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) ==
          cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&jb, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&jc, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaMalloc(&d, MIB) == cudaSuccess);
  rec_clear();
  host_runs = 0;
  cudaGraph_t g = NULL, gi = NULL, gb = NULL;
  enum cudaStreamCaptureStatus st;
  unsigned long long id = 0, idb = 0;
  const cudaGraphNode_t *deps = NULL;
  size_t nd = 99;
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, a), cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, a), cudaSuccess);
  CHECK_EQ(cudaStreamGetCaptureInfo(b, &st, &id, &gi, &deps, NULL, &nd),
           cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusNone);
  CHECK_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(c, fork, 0), cudaSuccess);
  CHECK_EQ(cudaStreamGetCaptureInfo(a, &st, &id, &gi, &deps, NULL, &nd),
           cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusActive);
  CHECK(id != 0 && gi != NULL);
  CHECK_EQ(nd, 1);
  CHECK_EQ(cudaStreamGetCaptureInfo(b, &st, &idb, &gb, NULL, NULL, NULL),
           cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusActive);
  CHECK_EQ(idb, id);
  CHECK(gb == gi);
  CHECK_EQ(launch(gb_b, 264, b), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, c), cudaSuccess);
  CHECK_EQ(cudaLaunchHostFunc(c, on_host, NULL), cudaSuccess);
  CHECK_EQ(host_runs, 0); /* captured, not run */
  CHECK_EQ(cudaMemsetAsync(d, 0, 1000, a), cudaSuccess);
  CHECK_EQ(cudaEventRecord(jb, b), cudaSuccess);
  CHECK_EQ(cudaEventRecord(jc, c), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(a, jb, 0), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(a, jc, 0), cudaSuccess);
  CHECK_EQ(cudaStreamGetCaptureInfo(a, &st, NULL, NULL, &deps, NULL, &nd),
           cudaSuccess);
  CHECK_EQ(nd, 3); /* memset, B's kernel, C's host node */
  CHECK_EQ(launch(gb_c, 396, a), cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaSuccess);
  REQUIRE(g != NULL);
  CHECK_EQ(cudaStreamIsCapturing(b, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusNone);
  size_t nn = 0;
  CHECK_EQ(cudaGraphGetNodes(g, NULL, &nn), cudaSuccess);
  CHECK_EQ(nn, 6);
  rec_flush();
  CHECK_EQ(nrecs, 0);
  cudaGraphExec_t x;
  CHECK_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  CHECK_EQ(launch(gb_big, BIG_BLOCKS, a), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, a), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(x, a), cudaSuccess);
  CHECK_EQ(host_runs, 2);
  CHECK_EQ(cudaStreamSynchronize(a), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1 + 2 * 4);
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMSET) == 2);
  uint64_t t = KERNEL(0)->end;
  for (int l = 0; l < 2; l++) {
    const CUpti_ActivityKernel10 *k1 = KERNEL(1 + 4 * l),
                                 *kb = KERNEL(2 + 4 * l),
                                 *kc = KERNEL(3 + 4 * l),
                                 *kl = KERNEL(4 + 4 * l);
    const CUpti_ActivityMemset4 *m =
        &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, l)->u.s;
    CHECK_EQ(k1->start, t);
    CHECK_EQ(k1->end - k1->start, A_NS);
    CHECK(strcmp(kb->name, "gb_b") == 0 && strcmp(kc->name, "gb_a") == 0);
    CHECK_EQ(kb->start, k1->end); /* the three branches overlap */
    CHECK_EQ(kc->start, k1->end);
    CHECK_EQ(m->start, k1->end);
    CHECK_EQ(kl->start, k1->end + B_NS); /* joins the longest branch */
    CHECK_EQ(kl->end - kl->start, C_NS);
    CHECK_EQ(kb->streamId, k1->streamId);
    t = kl->end;
  }
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);

  /* a fork not joined back: no graph, every stream leaves the capture */
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, b), cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(b, &g), cudaErrorStreamCaptureUnmatched);
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, b), cudaSuccess);
  g = (cudaGraph_t)&g;
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureUnjoined);
  CHECK(g == NULL);
  CHECK_EQ(cudaStreamIsCapturing(b, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusNone);
  /* a fork that did nothing needs no join */
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, a), cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, a), cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaSuccess);
  cudaGraphDestroy(g);
  /* waiting on outside work from a capture crosses its boundary */
  CHECK_EQ(cudaEventRecord(jb, c), cudaSuccess);
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(a, jb, 0), cudaErrorStreamCaptureIsolation);
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
  /* destroying a joined stream invalidates the capture; destroying the
   * origin discards it and releases the joined streams */
  cudaStream_t t1, t2;
  REQUIRE(cudaStreamCreate(&t1) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&t2) == cudaSuccess);
  CHECK_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(t1, fork, 0), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(t1), cudaSuccess);
  CHECK_EQ(cudaStreamIsCapturing(a, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusInvalidated);
  CHECK_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
  CHECK_EQ(cudaStreamBeginCapture(t2, cudaStreamCaptureModeGlobal),
           cudaSuccess);
  CHECK_EQ(cudaEventRecord(fork, t2), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(t2), cudaSuccess);
  CHECK_EQ(cudaStreamIsCapturing(b, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusNone);
  CHECK_EQ(launch(gb_a, 132, b), cudaSuccess); /* runs again */
  CHECK_EQ(cudaStreamSynchronize(b), cudaSuccess);
  cudaGetLastError();
  cudaFree(d);
  cudaEventDestroy(fork);
  cudaEventDestroy(jb);
  cudaEventDestroy(jc);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaStreamDestroy(c);
}

/* ---- capture modes ---- */

static char host_buf[4096];
static void *dev_buf;
static cudaError_t other_copy, other_malloc;

static void *other_thread(void *p) {
  (void)p;
  void *q = NULL;
  other_malloc = cudaMalloc(&q, 4096);
  cudaFree(q);
  other_copy =
      cudaMemcpy(dev_buf, host_buf, sizeof host_buf, cudaMemcpyHostToDevice);
  return NULL;
}

static void run_other(void) {
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
  pthread_join(t, NULL);
}

/* Global: a synchronous copy from any thread fails and invalidates the
 * capture; cudaMalloc is allowed. Thread-local: only the capturing
 * thread is restricted. Relaxed: nobody is. */
static void test_modes(void) {
  cudaStream_t s;
  cudaGraph_t g = NULL;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaMalloc(&dev_buf, sizeof host_buf) == cudaSuccess);
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, s), cudaSuccess);
  run_other();
  CHECK_EQ(other_malloc, cudaSuccess);
  CHECK_EQ(other_copy, cudaErrorStreamCaptureUnsupported);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
           cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, s), cudaSuccess);
  run_other();
  CHECK_EQ(other_copy, cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphDestroy(g);
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
           cudaSuccess);
  CHECK_EQ(
      cudaMemcpy(dev_buf, host_buf, sizeof host_buf, cudaMemcpyHostToDevice),
      cudaErrorStreamCaptureUnsupported);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed),
           cudaSuccess);
  CHECK_EQ(launch(gb_a, 132, s), cudaSuccess);
  CHECK_EQ(
      cudaMemcpy(dev_buf, host_buf, sizeof host_buf, cudaMemcpyHostToDevice),
      cudaSuccess);
  run_other();
  CHECK_EQ(other_copy, cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphDestroy(g);
  cudaGetLastError();
  cudaFree(dev_buf);
  cudaStreamDestroy(s);
}

/* The driver's construction entry points through cuGetProcAddress. */
static void *entry(const char *name) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  REQUIRE(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault,
                                           &q) == cudaSuccess);
  REQUIRE(q == cudaDriverEntryPointSuccess && fn);
  return fn;
}

static void test_driver(void) {
  __typeof__(&cuGraphCreate) create = entry("cuGraphCreate");
  __typeof__(&cuGraphAddKernelNode_v2) addk = entry("cuGraphAddKernelNode");
  __typeof__(&cuGraphAddDependencies_v2) adddep =
      entry("cuGraphAddDependencies");
  __typeof__(&cuGraphInstantiateWithFlags) inst = entry("cuGraphInstantiate");
  __typeof__(&cuGraphUpload) upload = entry("cuGraphUpload");
  __typeof__(&cuGraphLaunch) glaunch = entry("cuGraphLaunch");
  __typeof__(&cuGraphExecUpdate_v2) update = entry("cuGraphExecUpdate");
  __typeof__(&cuStreamGetCaptureInfo_v3) info = entry("cuStreamGetCaptureInfo");
  __typeof__(&cuGraphExecDestroy) xdestroy = entry("cuGraphExecDestroy");
  __typeof__(&cuGraphDestroy) gdestroy = entry("cuGraphDestroy");
  cudaFunction_t f;
  REQUIRE(cudaGetFuncBySymbol(&f, (const void *)gb_b) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CUgraph g;
  CUgraphNode n1, n2;
  CUDA_KERNEL_NODE_PARAMS p = {0};
  p.func = (CUfunction)f;
  p.gridDimX = 264, p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 64, p.blockDimY = p.blockDimZ = 1;
  CHECK_EQ(create(&g, 0), CUDA_SUCCESS);
  CHECK_EQ(addk(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
  CHECK_EQ(addk(&n2, g, NULL, 0, &p), CUDA_SUCCESS);
  CHECK_EQ(adddep(g, &n1, &n2, NULL, 1), CUDA_SUCCESS);
  CUgraphExec x;
  CHECK_EQ(inst(&x, g, 0), CUDA_SUCCESS);
  CHECK_EQ(upload(x, s), CUDA_SUCCESS);
  CUgraphExecUpdateResultInfo ri;
  CHECK_EQ(update(x, g, &ri), CUDA_SUCCESS);
  CUstreamCaptureStatus st;
  CHECK_EQ(info(s, &st, NULL, NULL, NULL, NULL, NULL), CUDA_SUCCESS);
  CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
  rec_clear();
  CHECK_EQ(launch(gb_big, BIG_BLOCKS, s), cudaSuccess);
  CHECK_EQ(glaunch(x, s), CUDA_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 3);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
  CHECK_EQ(KERNEL(2)->start, KERNEL(1)->end); /* n2 follows n1 */
  CHECK_EQ(KERNEL(2)->end - KERNEL(2)->start, B_NS);
  CHECK_EQ(xdestroy(x), CUDA_SUCCESS);
  CHECK_EQ(gdestroy(g), CUDA_SUCCESS);
  cudaStreamDestroy(s);
}

int main(void) {
  rec_start();
  test_explicit();
  test_update_clone_child();
  test_event_nodes();
  test_fork_join();
  test_modes();
  test_driver();
  return test_result("test_graph_build");
}
