/* Self-test: the model under non-default parameters, set by meson:
 *   GPUSIM_DEVICES=2 GPUSIM_SMS=100 GPUSIM_MEM_BYTES=1048576
 *   GPUSIM_WAVE_NS=1000 GPUSIM_PCIE_GBPS=12.5 GPUSIM_HBM_GBPS=100
 *   GPUSIM_COPY_LATENCY_NS=500 GPUSIM_API_NS=2000000
 * i.e. PCIe 12.5 B/ns, HBM 100 B/ns, every runtime call 2 ms of CPU. */
#include <cuda_runtime_api.h>

#include "test_records.h"

volatile int sink;
void k_cfg(void) {
  sink = 1;
}

static cudaError_t launch1(unsigned blocks, cudaStream_t s) {
  dim3 g = {blocks, 1, 1}, b = {32, 1, 1};
  return cudaLaunchKernel((const void *)k_cfg, g, b, NULL, 0, s);
}

static const CUpti_ActivityMemcpy6 *copy_rec(int n) {
  const rec *r = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, n);
  REQUIRE(r);
  return &r->u.m;
}

static void test_devices_and_waves(void) {
  int n = 0, sms = 0;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  CHECK_EQ(n, 2);
  CHECK_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1),
           cudaSuccess);
  CHECK_EQ(sms, 100);
  rec_clear();
  CHECK_EQ(launch1(100, 0), cudaSuccess); /* 1 wave: 1000 ns */
  CHECK_EQ(launch1(101, 0), cudaSuccess); /* 2 waves: 2000 ns */
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(launch1(1, 0), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 3);
  CHECK_EQ(KERNEL(0)->end - KERNEL(0)->start, 1000);
  CHECK_EQ(KERNEL(1)->end - KERNEL(1)->start, 2000);
  /* 2 ms of API time separates consecutive launches: launch-bound. */
  CHECK(KERNEL(1)->start - KERNEL(0)->start >= 2000000);
  CHECK_EQ(KERNEL(0)->deviceId, 0);
  CHECK_EQ(KERNEL(0)->contextId, 1);
  CHECK_EQ(KERNEL(0)->streamId, 1); /* legacy stream of device 0 */
  CHECK_EQ(KERNEL(2)->deviceId, 1);
  CHECK_EQ(KERNEL(2)->contextId, 2);
  CHECK_EQ(KERNEL(2)->streamId, 2); /* legacy stream of device 1 */
}

static void test_rates(void) {
  char *d0, *d0b, *d1, *host;
  CHECK_EQ(cudaMalloc((void **)&d0, 4096), cudaSuccess);
  CHECK_EQ(cudaMalloc((void **)&d0b, 4096), cudaSuccess);
  CHECK_EQ(cudaMallocHost((void **)&host, 4096), cudaSuccess);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaMalloc((void **)&d1, 4096), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  rec_clear();
  /* 500 + 1000 / 12.5 = 580; 500 + ceil(1001 / 12.5) = 500 + 81 = 581 */
  CHECK_EQ(cudaMemcpy(d0, host, 1000, cudaMemcpyHostToDevice), cudaSuccess);
  CHECK_EQ(cudaMemcpy(d0, host, 1001, cudaMemcpyHostToDevice), cudaSuccess);
  /* device to device and memset: 500 + 1000 / 100 = 510 */
  CHECK_EQ(cudaMemcpy(d0b, d0, 1000, cudaMemcpyDeviceToDevice), cudaSuccess);
  CHECK_EQ(cudaMemset(d0, 0, 1000), cudaSuccess);
  /* peer: the HBM rate too, 510 */
  CHECK_EQ(cudaMemcpyPeer(d1, 1, d0, 0, 1000), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 3);
  CHECK_EQ(copy_rec(0)->end - copy_rec(0)->start, 580);
  CHECK_EQ(copy_rec(1)->end - copy_rec(1)->start, 581);
  CHECK_EQ(copy_rec(2)->end - copy_rec(2)->start, 510);
  const rec *s = rec_nth(CUPTI_ACTIVITY_KIND_MEMSET, 0);
  const rec *p = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY2, 0);
  REQUIRE(s && p);
  CHECK_EQ(s->u.s.end - s->u.s.start, 510);
  CHECK_EQ(p->u.p.end - p->u.p.start, 510);
  CHECK_EQ(p->u.p.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
  CHECK_EQ(p->u.p.srcDeviceId, 0);
  CHECK_EQ(p->u.p.dstDeviceId, 1);
  CHECK_EQ(p->u.p.bytes, 1000);
  cudaFree(d0);
  cudaFree(d0b);
  cudaFreeHost(host);
  cudaSetDevice(1);
  cudaFree(d1);
  cudaSetDevice(0);
}

/* cudaMemcpyPeer returns at once (asynchronous to the host), starts
 * after every stream's work of the devices it touches, and work issued
 * on them later starts after it, on any stream. */
static void test_peer_serialised(void) {
  char *d0, *d1;
  cudaStream_t s0, s1, s1b;
  CHECK_EQ(cudaMalloc((void **)&d0, 4096), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaMalloc((void **)&d1, 4096), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&s1b, cudaStreamNonBlocking),
           cudaSuccess);
  rec_clear();
  /* 10^7 blocks on 100 SMs: 10^5 waves of 1000 ns, 100 ms on device 1 */
  CHECK_EQ(launch1(10000000, s1), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaMemcpyPeer(d1, 1, d0, 0, 1000), cudaSuccess);
  uint64_t after = mono_ns();
  CHECK_EQ(launch1(1, s0), cudaSuccess); /* device 0, issued later */
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(launch1(1, s1b), cudaSuccess); /* device 1, another stream */
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  const rec *p = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY2, 0);
  REQUIRE(p && rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 3);
  const __typeof__(*KERNEL(0)) *big = KERNEL(0);
  CHECK_EQ(big->deviceId, 1);
  CHECK_EQ(big->end - big->start, 100000000);
  CHECK_EQ(p->u.p.start, big->end);
  CHECK_EQ(p->u.p.end - p->u.p.start, 510);
  CHECK(after < p->u.p.start);
  int later = 0;
  for (int i = 1; i < 3; i++) {
    CHECK_EQ(KERNEL(i)->start, p->u.p.end);
    later += KERNEL(i)->streamId != big->streamId;
  }
  CHECK_EQ(later, 2);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s1b);
  cudaFree(d1);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStreamDestroy(s0);
  cudaFree(d0);
}

/* 1 MiB per device, accounted per device. */
static void test_memory(void) {
  void *a, *b;
  size_t f, t;
  CHECK_EQ(cudaMalloc(&a, 1048576), cudaSuccess);
  CHECK_EQ(cudaMalloc(&b, 1), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess);
  CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  CHECK_EQ(f, 1048576);
  CHECK_EQ(t, 1048576);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  CHECK_EQ(f, 0);
  CHECK_EQ(cudaFree(a), cudaSuccess);
}

static void test_api_time(void) {
  int d;
  uint64_t t0 = mono_ns();
  CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
  uint64_t t = mono_ns() - t0;
  CHECK(t >= 2000000);
  CHECK(t <= 2000000 + WALL_TOLERANCE_NS);
}

int main(void) {
  rec_start();
  test_devices_and_waves();
  test_rates();
  test_peer_serialised();
  test_memory();
  test_api_time();
  return test_result("test_config");
}
