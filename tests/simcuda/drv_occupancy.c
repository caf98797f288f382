/* Simulated driver: kernel attributes and the occupancy calculator.
 *
 * Every kernel has 32 registers per thread, no static shared memory and
 * 1024 threads per block at most, unless GPUSIM_KERNEL_ATTRS names it:
 *   GPUSIM_KERNEL_ATTRS="name=REGS,SMEM[,MAXTHREADS];name2=..."
 * Occupancy follows Hopper's per-SM limits (README.md, "Occupancy"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

enum {
  SM_THREADS = 2048,
  SM_WARPS = SM_THREADS / 32,
  SM_BLOCKS = 32,
  SM_REGS = 65536,
  SM_SUBPARTITIONS = 4,
  REG_UNIT = 256, /* registers are allocated per warp in units of 256 */
  MAX_REGS = 255,
  SM_SMEM = 233472,     /* 228 KB */
  BLOCK_SMEM = 232448,  /* 227 KB: static + dynamic of one block */
  SMEM_RESERVED = 1024, /* reserved by the driver in every block */
  SMEM_UNIT = 128,
  DEFAULT_DYN_SMEM = 49152
};

typedef struct attr_entry {
  char *name;
  int regs, smem, max_threads;
} attr_entry;

static attr_entry *attr_tab;
static size_t attr_n;
static pthread_once_t attr_once = PTHREAD_ONCE_INIT;

static bool parse_int(const char *s, const char *end, long lo, long hi,
                      int *out) {
  char buf[32];
  size_t n = (size_t)(end - s);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *e;
  errno = 0;
  long v = strtol(buf, &e, 10);
  if (errno || *e || v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

/* One "name=REGS,SMEM[,MAXTHREADS]" entry between s and end. */
static bool parse_entry(const char *s, const char *end, attr_entry *a) {
  const char *eq = memchr(s, '=', (size_t)(end - s));
  if (!eq || eq == s) return false;
  const char *c1 = memchr(eq, ',', (size_t)(end - eq));
  if (!c1) return false;
  const char *c2 = memchr(c1 + 1, ',', (size_t)(end - c1 - 1));
  a->max_threads = 1024;
  if (!parse_int(eq + 1, c1, 0, MAX_REGS, &a->regs) ||
      !parse_int(c1 + 1, c2 ? c2 : end, 0, BLOCK_SMEM, &a->smem) ||
      (c2 && !parse_int(c2 + 1, end, 1, 1024, &a->max_threads)))
    return false;
  a->name = strndup(s, (size_t)(eq - s));
  return a->name != NULL;
}

static void attr_load(void) {
  const char *v = getenv("GPUSIM_KERNEL_ATTRS");
  if (!v || !*v) return;
  size_t cap = 1;
  for (const char *p = v; *p; p++)
    cap += *p == ';';
  attr_tab = calloc(cap, sizeof *attr_tab);
  if (!attr_tab) return;
  for (const char *s = v; *s;) {
    const char *end = strchr(s, ';');
    if (!end) end = s + strlen(s);
    if (end > s && !parse_entry(s, end, &attr_tab[attr_n]))
      fprintf(stderr,
              "gpusim: GPUSIM_KERNEL_ATTRS: ignoring '%.*s' "
              "(want name=REGS,SMEM[,MAXTHREADS])\n",
              (int)(end - s), s);
    else if (end > s)
      attr_n++;
    s = *end ? end + 1 : end;
  }
}

static int imin(int a, int b) {
  return a < b ? a : b;
}

void gp_function_attrs(sim_function *f) {
  pthread_once(&attr_once, attr_load);
  for (size_t i = 0; i < attr_n; i++) {
    if (strcmp(attr_tab[i].name, f->name) == 0) {
      f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] = attr_tab[i].regs;
      f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] = attr_tab[i].smem;
      f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = attr_tab[i].max_threads;
      f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] =
          DEFAULT_DYN_SMEM - imin(attr_tab[i].smem, DEFAULT_DYN_SMEM);
    }
  }
}

/* The interned function behind a handle, or NULL (handles are never
 * freed, so reading one after the check needs no lock). */
static const sim_function *func_of(CUfunction h) {
  return h && gpusim_function_name(h) ? (const sim_function *)h : NULL;
}

static long round_up(long v, long unit) {
  return (v + unit - 1) / unit * unit;
}

/* Resident blocks of f per SM at this block size and dynamic shared
 * memory: the least of the thread/warp, block, register and shared
 * memory limits. */
static int occupancy(const sim_function *f, int block, size_t dyn) {
  if (block > f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] || dyn > BLOCK_SMEM) return 0;
  int warps = (block + 31) / 32;
  int n = imin(SM_WARPS / warps, SM_BLOCKS);
  if (f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] > 0) {
    long per_warp = round_up((long)f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] * 32, REG_UNIT);
    /* a block must fit the per-block registers with its warps spread
     * over the four sub-partitions */
    if (per_warp * round_up(warps, SM_SUBPARTITIONS) > SM_REGS) return 0;
    long warps_per_sub = SM_REGS / SM_SUBPARTITIONS / per_warp;
    n = imin(n, (int)(warps_per_sub * SM_SUBPARTITIONS / warps));
  }
  long smem = (long)f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] + (long)dyn;
  if (smem > BLOCK_SMEM) return 0;
  long alloc = round_up(smem + SMEM_RESERVED, SMEM_UNIT);
  return imin(n, (int)(SM_SMEM / alloc));
}

static CUresult max_active(int *num, CUfunction h, int block, size_t dyn,
                           unsigned flags) {
  const sim_function *f = func_of(h);
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!num || block <= 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
    return CUDA_ERROR_INVALID_VALUE;
  *num = occupancy(f, block, dyn);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
  DRV_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor, numBlocks, func,
            blockSize, dynamicSMemSize);
  DRV_RETURN(max_active(numBlocks, func, blockSize, dynamicSMemSize, 0));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                     CUfunction func,
                                                     int blockSize,
                                                     size_t dynamicSMemSize,
                                                     unsigned int flags) {
  DRV_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, numBlocks,
            func, blockSize, dynamicSMemSize, flags);
  DRV_RETURN(max_active(numBlocks, func, blockSize, dynamicSMemSize, flags));
}

/* The block size with the most resident threads per SM, trying every
 * multiple of the warp size from the largest allowed down (a smaller
 * block wins only with strictly more threads), as the runtime's
 * cudaOccupancyMaxPotentialBlockSize template does. */
static CUresult potential(int *min_grid, int *block, CUfunction h,
                          CUoccupancyB2DSize b2d, size_t dyn, int limit,
                          unsigned flags) {
  const sim_function *f = func_of(h);
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!min_grid || !block || limit < 0 ||
      flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
    return CUDA_ERROR_INVALID_VALUE;
  int max = imin(f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK], 1024);
  if (limit > 0) max = imin(max, limit);
  int best = 0, best_blocks = 0, best_threads = 0;
  for (int aligned = (max + 31) / 32 * 32; aligned > 0; aligned -= 32) {
    int bs = imin(aligned, max);
    int n = occupancy(f, bs, b2d ? b2d(bs) : dyn);
    if (n * bs > best_threads)
      best = bs, best_blocks = n, best_threads = n * bs;
    if (best_threads == SM_THREADS) break;
  }
  *min_grid = best_blocks * gp_cfg.sms;
  *block = best;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit) {
  DRV_ENTER(cuOccupancyMaxPotentialBlockSize, minGridSize, blockSize, func,
            blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit);
  DRV_RETURN(potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                       dynamicSMemSize, blockSizeLimit, 0));
}

GPUSIM_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit, unsigned int flags) {
  DRV_ENTER(cuOccupancyMaxPotentialBlockSizeWithFlags, minGridSize, blockSize,
            func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit,
            flags);
  DRV_RETURN(potential(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                       dynamicSMemSize, blockSizeLimit, flags));
}

/* The most dynamic shared memory a block can have with numBlocks blocks
 * resident per SM: the SM's share per block, down to the allocation
 * unit, less the reserve and the static part; 0 when numBlocks blocks
 * cannot be resident whatever the shared memory. */
static CUresult available_smem(size_t *out, CUfunction h, int num, int block) {
  const sim_function *f = func_of(h);
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!out || num <= 0 || block <= 0) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  if (occupancy(f, block, 0) < num) return CUDA_SUCCESS;
  long share = SM_SMEM / num / SMEM_UNIT * SMEM_UNIT;
  long avail = share - SMEM_RESERVED - f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
  long cap = BLOCK_SMEM - f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
  *out = avail < 0 ? 0 : (size_t)(avail < cap ? avail : cap);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(
    size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize) {
  DRV_ENTER(cuOccupancyAvailableDynamicSMemPerBlock, dynamicSmemSize, func,
            numBlocks, blockSize);
  DRV_RETURN(available_smem(dynamicSmemSize, func, numBlocks, blockSize));
}
