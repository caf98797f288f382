/* Self-test: copies, memsets, host blocking behaviour, launch validation
 * and host functions. Durations are latency + ceil(bytes / rate) with
 * the defaults 2000 ns, 25 B/ns (PCIe) and 3000 B/ns (HBM), worked out by
 * hand next to each check. */
#include <cuda_runtime_api.h>

#include "test_records.h"

volatile int sink;
void k_big(void) {
  sink = 1;
}
void k_small(void) {
  sink = 2;
}

#define MIB64 (64u << 20) /* 67108864 bytes */
/* 2000 + ceil(67108864 / 25) = 2000 + ceil(2684354.56) = 2686355 */
#define MIB64_PCIE_NS 2686355

static const CUpti_ActivityMemcpy6 *copy_rec(int n) {
  const rec *r = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, n);
  REQUIRE(r);
  return &r->u.m;
}

static cudaError_t big_kernel(cudaStream_t s) {
  dim3 g = {BIG_BLOCKS, 1, 1}, b = {256, 1, 1};
  return cudaLaunchKernel((const void *)k_big, g, b, NULL, 0, s);
}

/* A pinned async copy returns at once; a pageable one only after the
 * simulated copy has ended. */
static void test_async_blocking(void *dev, void *pinned, void *pageable,
                                cudaStream_t s) {
  rec_clear();
  CHECK_EQ(big_kernel(s), cudaSuccess);
  CHECK_EQ(cudaMemcpyAsync(dev, pinned, MIB64, cudaMemcpyHostToDevice, s),
           cudaSuccess);
  uint64_t after_pinned = mono_ns();
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaMemcpyAsync(dev, pageable, MIB64, cudaMemcpyHostToDevice, s),
           cudaSuccess);
  uint64_t after_pageable = mono_ns();
  rec_flush();
  const CUpti_ActivityMemcpy6 *a = copy_rec(0), *b = copy_rec(1);
  CHECK_EQ(a->end - a->start, MIB64_PCIE_NS);
  CHECK_EQ(b->end - b->start, MIB64_PCIE_NS);
  CHECK(after_pinned < a->end);
  CHECK_EQ(a->start, KERNEL(0)->end);
  CHECK(after_pageable >= b->end);
  CHECK(after_pageable <= b->end + WALL_TOLERANCE_NS);
  CHECK_EQ(a->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK_EQ(a->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  CHECK_EQ(b->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  CHECK_EQ(a->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK_EQ(a->flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
  CHECK_EQ(a->bytes, MIB64);
}

static void test_sync_copies(char *dev, char *pageable) {
  rec_clear();
  /* D2H 4000 B: 2000 + 4000/25 = 2160 ns; returns after the end. */
  CHECK_EQ(cudaMemcpy(pageable, dev, 4000, cudaMemcpyDeviceToHost),
           cudaSuccess);
  uint64_t after = mono_ns();
  /* D2D 1 MiB: 2000 + ceil(1048576 / 3000) = 2000 + 350 = 2350 ns. */
  CHECK_EQ(cudaMemcpy(dev + (1 << 20), dev, 1 << 20, cudaMemcpyDeviceToDevice),
           cudaSuccess);
  /* H2H 2500 B at the PCIe rate: 2000 + 100 = 2100 ns. */
  CHECK_EQ(cudaMemcpy(pageable + 8192, pageable, 2500, cudaMemcpyHostToHost),
           cudaSuccess);
  /* Default infers D2H from the pointers: 2000 + ceil(10/25) = 2001 ns. */
  CHECK_EQ(cudaMemcpy(pageable, dev, 10, cudaMemcpyDefault), cudaSuccess);
  /* 2D H2D, 1000 x 10 = 10000 B: 2000 + 400 = 2400 ns. */
  CHECK_EQ(
      cudaMemcpy2D(dev, 1024, pageable, 1000, 1000, 10, cudaMemcpyHostToDevice),
      cudaSuccess);
  CHECK_EQ(cudaMemcpy(dev, pageable, 0, cudaMemcpyHostToDevice), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 5);
  static const uint64_t ns[] = {2160, 2350, 2100, 2001, 2400};
  static const int kind[] = {
      CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
      CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
      CUPTI_ACTIVITY_MEMCPY_KIND_HTOD};
  for (int i = 0; i < 5; i++) {
    CHECK_EQ(copy_rec(i)->end - copy_rec(i)->start, ns[i]);
    CHECK_EQ(copy_rec(i)->copyKind, kind[i]);
    CHECK_EQ(copy_rec(i)->flags, 0);
  }
  CHECK(after >= copy_rec(0)->end);
  CHECK_EQ(copy_rec(4)->bytes, 10000);
  CHECK_EQ(cudaMemcpy(dev, pageable, 1, (enum cudaMemcpyKind)42),
           cudaErrorInvalidMemcpyDirection);
  cudaGetLastError();
}

/* Memsets run at the HBM rate; the synchronous one of device memory does
 * not wait. */
static void test_memset(char *dev, cudaStream_t s) {
  rec_clear();
  /* 1000 B: 2000 + ceil(1000 / 3000) = 2001 ns. */
  CHECK_EQ(cudaMemsetAsync(dev, 7, 1000, s), cudaSuccess);
  CHECK_EQ(big_kernel(0), cudaSuccess);
  /* 6 MB: 2000 + 6000000 / 3000 = 4000 ns, queued behind the kernel. */
  CHECK_EQ(cudaMemset(dev, 0, 6000000), cudaSuccess);
  uint64_t after = mono_ns();
  /* 2D, 100 x 30 = 3000 B: 2000 + 1 = 2001 ns. */
  CHECK_EQ(cudaMemset2DAsync(dev, 512, 1, 100, 30, s), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMSET) == 3);
  const CUpti_ActivityMemset4 *a = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 0)->u.s;
  const CUpti_ActivityMemset4 *b = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 1)->u.s;
  const CUpti_ActivityMemset4 *c = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 2)->u.s;
  CHECK_EQ(a->end - a->start, 2001);
  CHECK_EQ(a->value, 7);
  CHECK_EQ(a->bytes, 1000);
  CHECK_EQ(a->flags, CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC);
  CHECK_EQ(a->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK_EQ(b->end - b->start, 4000);
  CHECK_EQ(b->flags, 0);
  CHECK_EQ(b->start, KERNEL(0)->end);
  CHECK(after < b->start);
  CHECK_EQ(c->end - c->start, 2001);
  CHECK_EQ(c->bytes, 3000);
}

/* CUDA's exceptions: a copy from host memory to host memory is
 * synchronous even when Async; a synchronous memset of pinned or managed
 * memory is synchronous (its Async form is not). Each is queued behind a
 * 100 ms kernel, so returning early is seen on the wall clock. */
/* A synchronous device-to-device cudaMemcpy does not synchronise with
 * the host (CUDA's "no host-side synchronization"): it returns before the
 * copy, queued behind a long kernel on the legacy stream, even starts. */
static void test_d2d_returns(void) {
  void *a = NULL, *b = NULL;
  REQUIRE(cudaMalloc(&a, 1 << 20) == cudaSuccess);
  REQUIRE(cudaMalloc(&b, 1 << 20) == cudaSuccess);
  rec_clear();
  CHECK_EQ(big_kernel(0), cudaSuccess);
  CHECK_EQ(cudaMemcpy(b, a, 1 << 20, cudaMemcpyDeviceToDevice), cudaSuccess);
  uint64_t after = mono_ns();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 1);
  const CUpti_ActivityMemcpy6 *c = copy_rec(0);
  CHECK_EQ(c->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
  CHECK_EQ(c->start, KERNEL(0)->end);
  CHECK(after < c->start);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(cudaFree(b), cudaSuccess);
}

static void test_host_sync_exceptions(char *pinned, cudaStream_t s) {
  char *managed;
  REQUIRE(cudaMallocManaged((void **)&managed, 4096, cudaMemAttachGlobal) ==
          cudaSuccess);
  rec_clear();
  CHECK_EQ(big_kernel(s), cudaSuccess);
  /* pinned to pinned, 2500 B at the PCIe rate: 2000 + 100 = 2100 ns */
  CHECK_EQ(cudaMemcpyAsync(pinned + 8192, pinned, 2500, cudaMemcpyHostToHost,
                           s),
           cudaSuccess);
  uint64_t after_copy = mono_ns();
  CHECK_EQ(big_kernel(0), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(pinned, 1, 1000, 0), cudaSuccess);
  uint64_t after_async_set = mono_ns();
  CHECK_EQ(cudaMemset(pinned, 2, 1000), cudaSuccess);
  uint64_t after_pinned_set = mono_ns();
  CHECK_EQ(big_kernel(0), cudaSuccess);
  CHECK_EQ(cudaMemset(managed, 3, 1000), cudaSuccess);
  uint64_t after_managed_set = mono_ns();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 1);
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMSET) == 3);
  const CUpti_ActivityMemcpy6 *c = copy_rec(0);
  CHECK_EQ(c->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
  CHECK_EQ(c->end - c->start, 2100);
  CHECK_EQ(c->start, KERNEL(0)->end);
  CHECK(after_copy >= c->end);
  CHECK(after_copy <= c->end + WALL_TOLERANCE_NS);
  const CUpti_ActivityMemset4 *a = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 0)->u.s;
  const CUpti_ActivityMemset4 *p = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 1)->u.s;
  const CUpti_ActivityMemset4 *m = &rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 2)->u.s;
  CHECK_EQ(a->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  CHECK_EQ(a->start, KERNEL(1)->end);
  CHECK(after_async_set < a->start);
  CHECK_EQ(p->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  CHECK_EQ(p->start, a->end);
  CHECK(after_pinned_set >= p->end);
  CHECK(after_pinned_set <= p->end + WALL_TOLERANCE_NS);
  CHECK_EQ(m->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
  CHECK_EQ(m->start, KERNEL(2)->end);
  CHECK(after_managed_set >= m->end);
  CHECK(after_managed_set <= m->end + WALL_TOLERANCE_NS);
  CHECK_EQ(cudaFree(managed), cudaSuccess);
}

static void test_invalid_launch(void) {
  rec_clear();
  dim3 zero = {0, 1, 1}, one = {1, 1, 1}, big = {1025, 1, 1};
  dim3 cube = {32, 32, 2}, ok = {1024, 1, 1};
  const void *f = (const void *)k_small;
  CHECK_EQ(cudaLaunchKernel(f, zero, ok, NULL, 0, 0),
           cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(cudaLaunchKernel(f, one, big, NULL, 0, 0),
           cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaLaunchKernel(f, one, cube, NULL, 0, 0),
           cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  static int not_a_function;
  CHECK_EQ(cudaLaunchKernel(&not_a_function, one, ok, NULL, 0, 0),
           cudaErrorInvalidDeviceFunction);
  cudaGetLastError();
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
}

static int host_calls;
static void host_fn(void *arg) {
  host_calls += *(int *)arg;
}

static void test_host_func(cudaStream_t s) {
  rec_clear();
  int one = 1;
  CHECK_EQ(big_kernel(s), cudaSuccess);
  CHECK_EQ(cudaLaunchHostFunc(s, host_fn, &one), cudaSuccess);
  CHECK_EQ(host_calls, 1);
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  CHECK_EQ(cudaLaunchKernel((const void *)k_small, g, b, NULL, 0, s),
           cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 2);
  CHECK_EQ(KERNEL(1)->start, KERNEL(0)->end);
}

static void test_query(cudaStream_t s) {
  CHECK_EQ(big_kernel(s), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  CHECK_EQ(cudaGetLastError(), cudaSuccess); /* not-ready is no error */
  uint64_t t0 = mono_ns();
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  uint64_t waited = mono_ns() - t0;
  CHECK(waited <= BIG_NS + WALL_TOLERANCE_NS);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
}

int main(void) {
  rec_start();
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  char *dev, *pinned, *pageable = malloc(MIB64);
  REQUIRE(pageable);
  REQUIRE(cudaMalloc((void **)&dev, MIB64) == cudaSuccess);
  REQUIRE(cudaMallocHost((void **)&pinned, MIB64) == cudaSuccess);
  test_async_blocking(dev, pinned, pageable, s);
  test_sync_copies(dev, pageable);
  test_memset(dev, s);
  test_host_sync_exceptions(pinned, s);
  test_d2d_returns();
  test_invalid_launch();
  test_host_func(s);
  test_query(s);
  CHECK_EQ(cudaFreeHost(pinned), cudaSuccess);
  CHECK_EQ(cudaFree(dev), cudaSuccess);
  cudaStreamDestroy(s);
  free(pageable);
  return test_result("test_copy");
}
