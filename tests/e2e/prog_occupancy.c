/* Sizes its launches with the occupancy API the way
 * cudaOccupancyMaxPotentialBlockSize (a template in cuda_runtime.h, which
 * C cannot use) does: the kernel's attributes, then the block size with
 * the most resident threads per SM, tried from the largest multiple of
 * the warp size down. Then launches one grid covering N elements and one
 * grid-stride grid of minGrid blocks. Run with
 * GPUSIM_KERNEL_ATTRS=occ_saxpy=40,8192: 40 registers (12 warps per
 * sub-partition, 48 per SM) and 8 KiB of static shared memory (9216 B per
 * block with the reserve, 25 blocks per SM). Hand-computed
 * (test_fidelity.py): 768 threads (2 blocks, 1536 threads) first beats
 * 1024 (1 block), nothing smaller beats 1536; min grid 2 x 132 = 264;
 * with 2 blocks per SM a block may have 233472 / 2 - 1024 - 8192 =
 * 107520 B of dynamic shared memory. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void occ_saxpy(void);
void occ_saxpy(void) {}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

#define N (768 * 1000)

int main(void) {
  const void *f = (const void *)occ_saxpy;
  struct cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, f));
  int dev = 0, sms = 0, warp = 0, max_block = 0, sm_threads = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev));
  CHECK(cudaDeviceGetAttribute(&max_block, cudaDevAttrMaxThreadsPerBlock, dev));
  CHECK(cudaDeviceGetAttribute(&sm_threads,
                               cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  int limit = attr.maxThreadsPerBlock < max_block ? attr.maxThreadsPerBlock
                                                  : max_block;
  int best = 0, best_blocks = 0, best_threads = 0;
  for (int bs = (limit + warp - 1) / warp * warp; bs > 0; bs -= warp) {
    int try_bs = bs < limit ? bs : limit, n = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        &n, f, try_bs, 0, cudaOccupancyDefault));
    if (n * try_bs > best_threads)
      best = try_bs, best_blocks = n, best_threads = n * try_bs;
    if (best_threads == sm_threads) break;
  }
  int min_grid = best_blocks * sms;
  size_t smem = 0;
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&smem, f, best_blocks, best));
  printf("regs=%d static_smem=%zu block=%d min_grid=%d active=%d "
         "smem_avail=%zu\n",
         attr.numRegs, attr.sharedSizeBytes, best, min_grid, best_blocks, smem);
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  dim3 cover = {(N + best - 1) / best, 1, 1}, stride = {min_grid, 1, 1},
       block = {best, 1, 1};
  CHECK(cudaLaunchKernel(f, cover, block, NULL, 0, s));
  CHECK(cudaLaunchKernel(f, stride, block, NULL, 0, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  printf("grids=%u,%u\n", cover.x, stride.x);
  return 0;
}
