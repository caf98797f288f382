/* Simulated runtime: the occupancy calculator, answered by the driver
 * from the kernel's attributes (README.md, "Occupancy"). The runtime's
 * cudaOccupancyMaxPotentialBlockSize* are header templates built on
 * these calls and cudaFuncGetAttributes. */
#include "rt.h"

static cudaError_t active(int *num, const void *func, int block, size_t dyn,
                          unsigned flags) {
  CUfunction f = gp_rt_function(func);
  if (!f) return cudaErrorInvalidDeviceFunction;
  return DRV(gp_drv, occ_active, num, f, block, dyn, flags);
}

RT_API cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize) {
  RT_ENTER(cudaOccupancyMaxActiveBlocksPerMultiprocessor, v6050, numBlocks,
           func, blockSize, dynamicSMemSize);
  RT_NEED_CTX();
  RT_RETURN(active(numBlocks, func, blockSize, dynamicSMemSize, 0));
}

RT_API cudaError_t CUDARTAPI
cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                       const void *func,
                                                       int blockSize,
                                                       size_t dynamicSMemSize,
                                                       unsigned int flags) {
  RT_ENTER(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, v7000,
           numBlocks, func, blockSize, dynamicSMemSize, flags);
  RT_NEED_CTX();
  RT_RETURN(active(numBlocks, func, blockSize, dynamicSMemSize, flags));
}

RT_API cudaError_t CUDARTAPI cudaOccupancyAvailableDynamicSMemPerBlock(
    size_t *dynamicSmemSize, const void *func, int numBlocks, int blockSize) {
  RT_ENTER(cudaOccupancyAvailableDynamicSMemPerBlock, v10200, dynamicSmemSize,
           func, numBlocks, blockSize);
  RT_NEED_CTX();
  CUfunction f = gp_rt_function(func);
  if (!f) RT_RETURN(cudaErrorInvalidDeviceFunction);
  RT_RETURN(DRV(gp_drv, occ_smem, dynamicSmemSize, f, numBlocks, blockSize));
}
