/* Calls the CUDA 12.8+ batch copies with their CUDA 12 parameters, linked
 * against a stand-in libcudart.so.12 (cudart12.c), and prints what the
 * callee received and returned: "ok" lines when every argument arrived
 * unchanged and failIdx came back. Then cudaMemPrefetchAsync, the CUDA 12
 * way, through a pointer from dlsym (its first use: the wrapper learns
 * there which runtime it forwards to). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int cudaMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes, size_t count,
                         void *attrs, size_t *attrsIdxs, size_t numAttrs,
                         size_t *failIdx, void *stream);
int cudaMemcpy3DBatchAsync(size_t numOps, void *opList, size_t *failIdx,
                           unsigned long long flags, void *stream);
int cudart12_seen(uintptr_t *out);

int main(void) {
  static char a[64], b[64];
  void *dsts[2] = {a, a + 32}, *srcs[2] = {b, b + 32};
  size_t sizes[2] = {1000, 24}, idxs[1] = {0}, fail = 99;
  static char attrs[64], ops[4096]; /* zeroed: 3 empty 3D ops */
  void *stream = (void *)(uintptr_t)0x5151;
  int rc = cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, attrs, idxs, 1, &fail,
                                stream);
  uintptr_t got[9];
  int n = cudart12_seen(got);
  uintptr_t want[9] = {(uintptr_t)dsts, (uintptr_t)srcs, (uintptr_t)sizes, 2,
                       (uintptr_t)attrs, (uintptr_t)idxs, 1, (uintptr_t)&fail,
                       (uintptr_t)stream};
  int same = n == 9;
  for (int i = 0; same && i < 9; i++) same = got[i] == want[i];
  printf("batch %s rc=%d fail=%zu\n", same ? "ok" : "CHANGED", rc, fail);
  fail = 99;
  rc = cudaMemcpy3DBatchAsync(3, ops, &fail, 0, (void *)(uintptr_t)0x5252);
  n = cudart12_seen(got);
  uintptr_t want3[5] = {3, (uintptr_t)ops, (uintptr_t)&fail, 0, 0x5252};
  same = n == 5;
  for (int i = 0; same && i < 5; i++) same = got[i] == want3[i];
  printf("batch3d %s rc=%d fail=%zu\n", same ? "ok" : "CHANGED", rc, fail);
  typedef int (*prefetch_fn)(const void *, size_t, int, void *);
  void *h = dlopen("libcudart.so.12", RTLD_LAZY | RTLD_NOLOAD);
  prefetch_fn pf = h ? (prefetch_fn)dlsym(h, "cudaMemPrefetchAsync") : NULL;
  rc = pf ? pf(a, 4096, 0, (void *)(uintptr_t)0x5353) : -1;
  n = cudart12_seen(got);
  uintptr_t wantp[4] = {(uintptr_t)a, 4096, 0, 0x5353};
  same = n == 4;
  for (int i = 0; same && i < 4; i++) same = got[i] == wantp[i];
  printf("prefetch %s rc=%d\n", same ? "ok" : "CHANGED", rc);
  return 0;
}
