/* Self-test: the counter model (README.md, "Counters"), with the
 * defaults (132 SMs, 10 us waves, 25 B/ns PCIe, 3000 B/ns HBM, 2 us copy
 * latency) and GPUSIM_KERNEL_PROFILE='gemm*:tensor=0.8,dram=0.3;copy*:dram=0.9'
 * (set by meson). Windows are placed on the operations' own simulated
 * times (their CUPTI records), so every expected value is exact. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>

#include "gpusim.h"
#include "gpusim_counters.h"
#include "test_records.h"

volatile int sink;
void k_one(void) {
  sink = 1;
}
void gemm_k(void) {
  sink = 2;
}
void copy_k(void) {
  sink = 3;
}

typedef int (*window_fn)(int, uint64_t, uint64_t, struct gpusim_counters *);
static window_fn win;

#define CHECK_NEAR(a, b)                                                       \
  do {                                                                         \
    double a_ = (a), b_ = (b);                                                 \
    if (fabs(a_ - b_) > 1e-6 * (fabs(b_) > 1 ? fabs(b_) : 1)) {                \
      fprintf(stderr, "%s:%d: %s == %.9g, expected %.9g\n", __FILE__,         \
              __LINE__, #a, a_, b_);                                           \
      test_failures++;                                                         \
    }                                                                          \
  } while (0)

static struct gpusim_counters at(uint64_t t0, uint64_t t1) {
  struct gpusim_counters c;
  REQUIRE(win(0, t0, t1, &c) == 0);
  return c;
}

static const CUpti_ActivityKernel10 *launch(void (*k)(void), unsigned blocks,
                                            unsigned threads) {
  rec_clear();
  dim3 g = {blocks, 1, 1}, b = {threads, 1, 1};
  REQUIRE(cudaLaunchKernel((const void *)k, g, b, NULL, 0, 0) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1);
  return KERNEL(0);
}

/* One block of one warp on 132 SMs, over half the window. */
static void test_one_block(void) {
  const CUpti_ActivityKernel10 *k = launch(k_one, 1, 32);
  uint64_t s = k->start, e = k->end;
  CHECK_EQ(e - s, 10000);
  struct gpusim_counters c = at(s - 10000, e);
  CHECK_NEAR(c.gpu_util_pct, 50.0);
  CHECK_NEAR(c.sm_active_pct, 50.0 / 132);
  CHECK_NEAR(c.sm_occupancy_pct, 50.0 / (132 * 64)); /* 1 of 132 x 64 warps */
  CHECK_NEAR(c.tensor_active_pct, 0);                /* no profile entry */
  CHECK_NEAR(c.dram_bw_pct, 0);
  /* Entirely before or after: nothing. */
  c = at(s - 20000, s);
  CHECK_NEAR(c.gpu_util_pct, 0);
  c = at(e, e + 5000);
  CHECK_NEAR(c.gpu_util_pct, 0);
  /* Inside the kernel: fully busy. */
  c = at(s + 1000, s + 2000);
  CHECK_NEAR(c.gpu_util_pct, 100);
  CHECK_NEAR(c.sm_active_pct, 100.0 / 132);
}

/* 264 blocks of 256 threads: 2 waves (20 us), every SM busy; the
 * profile gives tensor 0.8 and dram 0.3. */
static void test_profile(void) {
  const CUpti_ActivityKernel10 *k = launch(gemm_k, 264, 256);
  uint64_t s = k->start, e = k->end;
  CHECK_EQ(e - s, 20000);
  struct gpusim_counters c = at(s, e);
  CHECK_NEAR(c.gpu_util_pct, 100);
  CHECK_NEAR(c.sm_active_pct, 100);
  /* resident: min(264, 132) blocks x 8 warps = 1056 of 8448 = 12.5 % */
  CHECK_NEAR(c.sm_occupancy_pct, 12.5);
  CHECK_NEAR(c.tensor_active_pct, 80);
  CHECK_NEAR(c.dram_bw_pct, 30);
  /* 0.3 x 3000 B/ns x 20000 ns = 18e6 bytes, half read, half write */
  CHECK_NEAR(c.dram_read_bytes, 9e6);
  CHECK_NEAR(c.dram_write_bytes, 9e6);
  /* The window four times the kernel: a quarter of each. */
  c = at(s - 30000, e + 30000);
  CHECK_NEAR(c.gpu_util_pct, 25);
  CHECK_NEAR(c.tensor_active_pct, 20);
  CHECK_NEAR(c.dram_bw_pct, 7.5);

  /* A partial-SM kernel scales with its SM share: 66 blocks = 1/2. */
  k = launch(copy_k, 66, 32);
  s = k->start, e = k->end;
  c = at(s, e);
  CHECK_NEAR(c.sm_active_pct, 50);
  CHECK_NEAR(c.dram_bw_pct, 45); /* 0.9 x 1/2 */
  CHECK_NEAR(c.tensor_active_pct, 0);
}

/* Two kernels at once on two streams: the union for gpu_util, summed
 * blocks for sm_active, computed from their records. */
static void test_overlap(void) {
  cudaStream_t a, b;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  rec_clear();
  dim3 g = {BIG_BLOCKS / 10000 * 50, 1, 1}, bl = {32, 1, 1}; /* 50 waves */
  dim3 g2 = {66 * 10, 1, 1};
  REQUIRE(cudaLaunchKernel((const void *)k_one, g, bl, NULL, 0, a) ==
          cudaSuccess);
  REQUIRE(cudaLaunchKernel((const void *)k_one, g2, bl, NULL, 0, b) ==
          cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 2);
  const CUpti_ActivityKernel10 *k1 = KERNEL(0), *k2 = KERNEL(1);
  uint64_t t0 = k1->start < k2->start ? k1->start : k2->start;
  uint64_t t1 = k1->end > k2->end ? k1->end : k2->end;
  /* by hand: the union of [s1,e1) and [s2,e2); each kernel alone fills
   * all SMs (g >= 132 blocks), so sm_active is busy too */
  uint64_t ov0 = k1->start > k2->start ? k1->start : k2->start;
  uint64_t ov1 = k1->end < k2->end ? k1->end : k2->end;
  double overlap = ov1 > ov0 ? (double)(ov1 - ov0) : 0;
  double uni = (double)(k1->end - k1->start) + (double)(k2->end - k2->start) -
               overlap;
  struct gpusim_counters c = at(t0, t1 + 10000);
  CHECK_NEAR(c.gpu_util_pct, 100.0 * uni / (double)(t1 + 10000 - t0));
  CHECK_NEAR(c.sm_active_pct, c.gpu_util_pct);
  CHECK(c.gpu_util_pct < 100);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

/* Copies: pro rata bytes; device-to-device at the HBM rate. */
static void test_copies(void) {
  void *dev, *dev2, *pinned;
  size_t n = 1u << 20;
  REQUIRE(cudaMalloc(&dev, n) == cudaSuccess);
  REQUIRE(cudaMalloc(&dev2, n) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, n) == cudaSuccess);
  rec_clear();
  REQUIRE(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev2, dev, n, cudaMemcpyDeviceToDevice) == cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 3);
  const CUpti_ActivityMemcpy6 *h2d = &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 0)->u.m;
  const CUpti_ActivityMemcpy6 *d2h = &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 1)->u.m;
  const CUpti_ActivityMemcpy6 *d2d = &rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, 2)->u.m;
  struct gpusim_counters c = at(h2d->start, h2d->end);
  CHECK_NEAR(c.pcie_rx_bytes, (double)n);
  CHECK_NEAR(c.pcie_tx_bytes, 0);
  CHECK_NEAR(c.gpu_util_pct, 0); /* copies are no kernels */
  uint64_t mid = h2d->start + (h2d->end - h2d->start) / 2;
  c = at(h2d->start, mid);
  CHECK_NEAR(c.pcie_rx_bytes, (double)n * (double)(mid - h2d->start) /
                                  (double)(h2d->end - h2d->start));
  c = at(d2h->start, d2h->end);
  CHECK_NEAR(c.pcie_tx_bytes, (double)n);
  /* D2D: 2000 + ceil(1048576 / 3000) = 2350 ns; over a 10 x longer window
   * its bytes are 1048576 / (3000 x 23500) of the HBM bandwidth */
  CHECK_EQ(d2d->end - d2d->start, 2350);
  c = at(d2d->start, d2d->start + 23500);
  CHECK_NEAR(c.dram_bw_pct, 100.0 * (double)n / (3000.0 * 23500));
  CHECK_NEAR(c.dram_read_bytes, (double)n);
  CHECK_NEAR(c.dram_write_bytes, (double)n);

  /* Memory: live rounded allocations + the context. */
  struct gpusim_counters m = at(1, 2);
  CHECK_EQ(m.mem_used_bytes, 2 * n + GPUSIM_CONTEXT_BYTES);
  void *odd;
  REQUIRE(cudaMalloc(&odd, 1000) == cudaSuccess); /* rounded to 1024 */
  m = at(1, 2);
  CHECK_EQ(m.mem_used_bytes, 2 * n + 1024 + GPUSIM_CONTEXT_BYTES);
  cudaFree(odd);
  cudaFree(dev);
  cudaFree(dev2);
  cudaFreeHost(pinned);
  m = at(1, 2);
  CHECK_EQ(m.mem_used_bytes, GPUSIM_CONTEXT_BYTES);
}

int main(void) {
  REQUIRE(cudaFree(NULL) == cudaSuccess); /* loads and initialises the driver */
  void *drv = gp_sim_open_driver();
  REQUIRE(drv);
  win = (window_fn)(uintptr_t)dlsym(drv, "gpusim_counters_window");
  uint64_t (*now)(void) = (uint64_t (*)(void))(uintptr_t)dlsym(drv, "gpusim_now_ns");
  REQUIRE(win && now);
  uint64_t a = now(), b = mono_ns(), c2 = now();
  CHECK(a <= b && b <= c2); /* the simulator's clock is CLOCK_MONOTONIC */
  struct gpusim_counters c;
  CHECK_EQ(win(1, 0, 10, &c), -1); /* one device */
  CHECK_EQ(win(-1, 0, 10, &c), -1);
  CHECK_EQ(win(0, 10, 10, &c), -1);
  rec_start();
  test_one_block();
  test_profile();
  test_overlap();
  test_copies();
  return test_result("test_counters");
}
