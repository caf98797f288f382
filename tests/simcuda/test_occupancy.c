/* Self-test: kernel attributes and the occupancy calculator (README.md,
 * "Occupancy"). Every expected value is worked out by hand from Hopper's
 * limits: 64 warps, 32 blocks, 65536 registers (4 sub-partitions, 256 per
 * warp granule) and 233472 B shared memory per SM, 1024 B reserved and
 * 128 B granules per block. Run with
 * GPUSIM_KERNEL_ATTRS=occ_regs64=64,0;occ_regs72=72,0;occ_smem=32,16384;
 *                     occ_small=32,0,256;occ_regs255=255,0;junk */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "test_util.h"

void occ_default(void);
void occ_regs64(void);
void occ_regs72(void);
void occ_smem(void);
void occ_small(void);
void occ_regs255(void);
void occ_default(void) {}
void occ_regs64(void) {}
void occ_regs72(void) {}
void occ_smem(void) {}
void occ_small(void) {}
void occ_regs255(void) {}

#define K(f) ((const void *)(f))

static int active(const void *f, int block, size_t dyn) {
  int n = -1;
  CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, block, dyn),
           cudaSuccess);
  return n;
}

static void test_attributes(void) {
  struct cudaFuncAttributes a;
  CHECK_EQ(cudaFuncGetAttributes(&a, K(occ_default)), cudaSuccess);
  CHECK_EQ(a.numRegs, 32);
  CHECK_EQ(a.sharedSizeBytes, 0);
  CHECK_EQ(a.maxThreadsPerBlock, 1024);
  CHECK_EQ(a.maxDynamicSharedSizeBytes, 49152);
  CHECK_EQ(cudaFuncGetAttributes(&a, K(occ_smem)), cudaSuccess);
  CHECK_EQ(a.numRegs, 32);
  CHECK_EQ(a.sharedSizeBytes, 16384);
  CHECK_EQ(a.maxDynamicSharedSizeBytes, 49152 - 16384);
  CHECK_EQ(cudaFuncGetAttributes(&a, K(occ_small)), cudaSuccess);
  CHECK_EQ(a.maxThreadsPerBlock, 256);
  CHECK_EQ(cudaFuncGetAttributes(&a, K(occ_regs72)), cudaSuccess);
  CHECK_EQ(a.numRegs, 72);
}

static void test_active(void) {
  /* 32 regs: 1024 regs per warp, 16 warps per sub-partition, 64 per SM */
  CHECK_EQ(active(K(occ_default), 32, 0), 32);  /* block limit */
  CHECK_EQ(active(K(occ_default), 256, 0), 8);  /* 64 / 8 warps */
  CHECK_EQ(active(K(occ_default), 1024, 0), 2); /* 64 / 32 warps */
  CHECK_EQ(active(K(occ_default), 1000, 0), 2); /* 32 warps too */
  CHECK_EQ(active(K(occ_default), 1025, 0), 0); /* over the block limit */
  /* 64 regs: 2048 per warp, 8 warps per sub-partition, 32 per SM */
  CHECK_EQ(active(K(occ_regs64), 256, 0), 4);
  /* 72 regs: 2304 per warp, 16384 / 2304 = 7 warps per sub-partition,
   * 28 per SM; 4-warp blocks: 7 */
  CHECK_EQ(active(K(occ_regs72), 128, 0), 7);
  /* 28 warps: 2304 * 28 = 64512 registers fit a block, 32 warps do not */
  CHECK_EQ(active(K(occ_regs72), 896, 0), 1);
  CHECK_EQ(active(K(occ_regs72), 1024, 0), 0);
  /* 255 regs: 8160 rounded to 8192 per warp, 2 warps per sub-partition,
   * 8 per SM; 1024 threads would need 262144 > 65536 */
  CHECK_EQ(active(K(occ_regs255), 32, 0), 8);
  CHECK_EQ(active(K(occ_regs255), 256, 0), 1);
  CHECK_EQ(active(K(occ_regs255), 1024, 0), 0);
  /* shared memory: 49152 + 1024 = 50176 per block, 233472 / 50176 = 4 */
  CHECK_EQ(active(K(occ_default), 128, 49152), 4);
  /* 16384 static + 1024 = 17408 per block: 13 */
  CHECK_EQ(active(K(occ_smem), 128, 0), 13);
  /* 16384 + 100 + 1024 = 17508, rounded to 17536: 13 */
  CHECK_EQ(active(K(occ_smem), 128, 100), 13);
  /* the most a block can have (227 KB) leaves room for one */
  CHECK_EQ(active(K(occ_default), 32, 232448), 1);
  CHECK_EQ(active(K(occ_default), 32, 232449), 0);
  /* function's own thread limit */
  CHECK_EQ(active(K(occ_small), 256, 0), 8);
  CHECK_EQ(active(K(occ_small), 512, 0), 0);
  int n = 0;
  CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
               &n, K(occ_regs64), 256, 0, cudaOccupancyDisableCachingOverride),
           cudaSuccess);
  CHECK_EQ(n, 4);
  CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
               &n, K(occ_regs64), 256, 0, 7),
           cudaErrorInvalidValue);
  CHECK_EQ(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, K(occ_default), 0, 0),
      cudaErrorInvalidValue);
  CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(NULL, K(occ_default),
                                                         32, 0),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, (const void *)&n,
                                                         32, 0),
           cudaErrorInvalidDeviceFunction);
  cudaGetLastError();
}

static void test_available_smem(void) {
  size_t s = 1;
  /* one block: the whole 227 KB */
  CHECK_EQ(cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_default), 1, 32),
           cudaSuccess);
  CHECK_EQ(s, 232448);
  /* four blocks: 233472 / 4 = 58368, less the 1024 reserve */
  CHECK_EQ(
      cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_default), 4, 256),
      cudaSuccess);
  CHECK_EQ(s, 57344);
  /* and less the 16384 static bytes */
  CHECK_EQ(cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_smem), 4, 128),
           cudaSuccess);
  CHECK_EQ(s, 40960);
  /* three blocks: 77824 -> 77824 (608 granules) - 1024 */
  CHECK_EQ(
      cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_default), 3, 128),
      cudaSuccess);
  CHECK_EQ(s, 76800);
  /* nine 256-thread blocks cannot be resident (8 by warps) */
  CHECK_EQ(
      cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_default), 9, 256),
      cudaSuccess);
  CHECK_EQ(s, 0);
  CHECK_EQ(
      cudaOccupancyAvailableDynamicSMemPerBlock(&s, K(occ_default), 0, 256),
      cudaErrorInvalidValue);
  cudaGetLastError();
}

static size_t per_thread_128(int block) {
  return (size_t)block * 128;
}

static void test_potential(void) {
  __typeof__(&cuOccupancyMaxPotentialBlockSize) pot = NULL;
  enum cudaDriverEntryPointQueryResult q;
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuOccupancyMaxPotentialBlockSize",
                                            (void **)&pot, 13000,
                                            cudaEnableDefault, &q),
           cudaSuccess);
  REQUIRE(pot);
  CUfunction f = NULL;
  int grid = 0, block = 0;
  CHECK_EQ(cudaGetFuncBySymbol((cudaFunction_t *)&f, K(occ_default)),
           cudaSuccess);
  /* 1024 threads already fill the SM (2 blocks) */
  CHECK_EQ(pot(&grid, &block, f, NULL, 0, 0), CUDA_SUCCESS);
  CHECK_EQ(block, 1024);
  CHECK_EQ(grid, 2 * 132);
  /* with a limit of 200: 200 (7 warps) -> 9 blocks = 1800 threads, 192
   * (6 warps) -> 10 = 1920, 160 -> 12 = 1920 (not more), 128 -> 16 =
   * 2048, which fills the SM */
  CHECK_EQ(pot(&grid, &block, f, NULL, 0, 200), CUDA_SUCCESS);
  CHECK_EQ(block, 128);
  CHECK_EQ(grid, 16 * 132);
  /* 128 B of dynamic shared memory per thread: 1024 down to 928 threads
   * fit one block (928: 118784 + 1024 > 233472 / 2); 896: two blocks of
   * 114688 + 1024 = 115712 B, 1792 threads, which no smaller size beats
   * (576: 3 x 576 = 1728; 448: 4 blocks of 58368 B = 1792, a tie) */
  CHECK_EQ(pot(&grid, &block, f, per_thread_128, 0, 0), CUDA_SUCCESS);
  CHECK_EQ(block, 896);
  CHECK_EQ(grid, 2 * 132);
  /* 72 regs: 896 threads (28 warps, one block) is the best */
  CHECK_EQ(cudaGetFuncBySymbol((cudaFunction_t *)&f, K(occ_regs72)),
           cudaSuccess);
  CHECK_EQ(pot(&grid, &block, f, NULL, 0, 0), CUDA_SUCCESS);
  CHECK_EQ(block, 896);
  CHECK_EQ(grid, 132);
  /* the function's 256-thread limit */
  CHECK_EQ(cudaGetFuncBySymbol((cudaFunction_t *)&f, K(occ_small)),
           cudaSuccess);
  CHECK_EQ(pot(&grid, &block, f, NULL, 0, 0), CUDA_SUCCESS);
  CHECK_EQ(block, 256);
  CHECK_EQ(grid, 8 * 132);
  CHECK_EQ(pot(&grid, &block, NULL, NULL, 0, 0), CUDA_ERROR_INVALID_HANDLE);
}

int main(void) {
  test_attributes();
  test_active();
  test_available_smem();
  test_potential();
  return test_result("occupancy");
}
