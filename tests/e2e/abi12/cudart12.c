/* A stand-in for CUDA 12.8+'s libcudart.so.12, with only its two batch
 * copies and cudaMemPrefetchAsync, whose parameters differ from CUDA 13's
 * under the same names (a failIdx, or a location and flags, before the
 * stream). It keeps what it was called with, so a test
 * can check that gpuphase's wrapper passed every argument on unchanged.
 * Prototypes are written out here: the CUDA 13 headers declare the CUDA 13
 * forms. */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

static uintptr_t seen[9];
static int nseen;

EXPORT int cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes,
                                size_t count, void *attrs, size_t *attrsIdxs,
                                size_t numAttrs, size_t *failIdx,
                                void *stream) {
  uintptr_t a[9] = {(uintptr_t)dsts,     (uintptr_t)srcs,  (uintptr_t)sizes,
                    count,               (uintptr_t)attrs, (uintptr_t)attrsIdxs,
                    numAttrs,            (uintptr_t)failIdx, (uintptr_t)stream};
  for (int i = 0; i < 9; i++) seen[i] = a[i];
  nseen = 9;
  if (failIdx) *failIdx = 7;
  return 0;
}

EXPORT int cudaMemcpy3DBatchAsync(size_t numOps, void *opList,
                                  size_t *failIdx, unsigned long long flags,
                                  void *stream) {
  uintptr_t a[5] = {numOps, (uintptr_t)opList, (uintptr_t)failIdx, flags,
                    (uintptr_t)stream};
  for (int i = 0; i < 5; i++) seen[i] = a[i];
  nseen = 5;
  if (failIdx) *failIdx = 3;
  return 0;
}

/* CUDA 12's cudaMemPrefetchAsync: CUDA 13's takes a location and flags
 * before the stream. */
EXPORT int cudaMemPrefetchAsync(const void *devPtr, size_t count,
                                int dstDevice, void *stream) {
  uintptr_t a[4] = {(uintptr_t)devPtr, count, (uintptr_t)dstDevice,
                    (uintptr_t)stream};
  for (int i = 0; i < 4; i++) seen[i] = a[i];
  nseen = 4;
  return 0;
}

/* What the last call received: its argument count, and the arguments. */
EXPORT int cudart12_seen(uintptr_t *out) {
  for (int i = 0; i < nseen; i++) out[i] = seen[i];
  return nseen;
}
