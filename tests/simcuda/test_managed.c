/* Self-test: managed memory prefetch, batch prefetch, advice, range
 * attributes and stream attachment (README.md, "Managed memory").
 * Default parameters: a prefetch of B bytes is one PCIe copy,
 * 2000 + ceil(B / 25) ns. */
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "test_records.h"

cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t, void *, size_t,
                                          unsigned int);
void k_big(void);
void k_big(void) {}

#define MIB 1048576u
/* 2000 + ceil(1048576 / 25) = 2000 + 41944 */
#define MIB_NS 43944u

static const CUpti_ActivityMemcpy6 *copy_rec(int n) {
  const rec *r = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, n);
  REQUIRE(r);
  return &r->u.m;
}

static void check_prefetch(int n, int kind, uint64_t bytes, uint64_t ns) {
  const CUpti_ActivityMemcpy6 *m = copy_rec(n);
  CHECK_EQ(m->copyKind, kind);
  CHECK_EQ(m->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
  CHECK_EQ(m->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
  CHECK_EQ(m->bytes, bytes);
  CHECK_EQ(m->end - m->start, ns);
  CHECK_EQ(m->flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
}

static const struct cudaMemLocation DEV0 = {cudaMemLocationTypeDevice, 0};
static const struct cudaMemLocation HOST = {cudaMemLocationTypeHost, 0};

static int range_int(void *p, size_t n, enum cudaMemRangeAttribute a) {
  int v = -100;
  CHECK_EQ(cudaMemRangeGetAttribute(&v, sizeof v, a, p, n), cudaSuccess);
  return v;
}

static void test_prefetch(void) {
  char *m = NULL;
  REQUIRE(cudaMallocManaged((void **)&m, MIB, cudaMemAttachGlobal) ==
          cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  rec_clear();
  /* behind a 100 ms kernel: the prefetch returns at once and runs after */
  dim3 g = {BIG_BLOCKS, 1, 1}, b = {256, 1, 1};
  REQUIRE(cudaLaunchKernel((const void *)k_big, g, b, NULL, 0, s) ==
          cudaSuccess);
  uint64_t t0 = mono_ns();
  CHECK_EQ(cudaMemPrefetchAsync(m, MIB, DEV0, 0, s), cudaSuccess);
  CHECK(mono_ns() - t0 < BIG_NS / 2);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributeLastPrefetchLocation), 0);
  /* half of it back to the host */
  CHECK_EQ(cudaMemPrefetchAsync(m, MIB / 2, HOST, 0, s), cudaSuccess);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributeLastPrefetchLocation), -1);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 2);
  check_prefetch(0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, MIB_NS);
  /* 2000 + ceil(524288 / 25) = 2000 + 20972 */
  check_prefetch(1, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MIB / 2, 22972);
  const CUpti_ActivityKernel10 *k = KERNEL(0);
  CHECK(copy_rec(0)->start >= k->end);
  CHECK_EQ(copy_rec(1)->start, copy_rec(0)->end);
  CHECK_EQ(copy_rec(0)->streamId, k->streamId);
  /* errors: device memory, past the end, no such device, a flag */
  void *d = NULL;
  REQUIRE(cudaMalloc(&d, MIB) == cudaSuccess);
  struct cudaMemLocation dev5 = {cudaMemLocationTypeDevice, 5};
  rec_clear();
  CHECK_EQ(cudaMemPrefetchAsync(d, MIB, DEV0, 0, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemPrefetchAsync(m + 1, MIB, DEV0, 0, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemPrefetchAsync(m, MIB, dev5, 0, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemPrefetchAsync(m, MIB, DEV0, 1, s), cudaErrorInvalidValue);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
  cudaGetLastError();
  CHECK_EQ(cudaFree(d), cudaSuccess);
  CHECK_EQ(cudaFree(m), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void test_batch(void) {
  char *a = NULL, *b = NULL;
  REQUIRE(cudaMallocManaged((void **)&a, MIB, cudaMemAttachGlobal) ==
          cudaSuccess);
  REQUIRE(cudaMallocManaged((void **)&b, 2 * MIB, cudaMemAttachGlobal) ==
          cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  void *ptrs[3] = {a, b, b + MIB};
  size_t sizes[3] = {MIB, MIB, MIB};
  struct cudaMemLocation locs[2] = {DEV0, HOST};
  size_t idx[2] = {0, 2};
  rec_clear();
  /* ranges 0 and 1 to device 0, range 2 to the host */
  CHECK_EQ(cudaMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 0, s),
           cudaSuccess);
  /* one location for all */
  CHECK_EQ(cudaMemPrefetchBatchAsync(ptrs, sizes, 2, locs, NULL, 1, 0, s),
           cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 5);
  check_prefetch(0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, MIB_NS);
  check_prefetch(1, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, MIB_NS);
  check_prefetch(2, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MIB, MIB_NS);
  check_prefetch(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, MIB_NS);
  check_prefetch(4, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MIB, MIB_NS);
  /* in stream order: each starts once the one before ended (at once when
   * it was issued in time; a slow host, under a sanitizer, may leave a gap) */
  for (int i = 1; i < 5; i++)
    CHECK(copy_rec(i)->start >= copy_rec(i - 1)->end);
  /* nothing is issued when one range is bad, flags must be 0, the first
   * location index must be 0 */
  rec_clear();
  sizes[2] = MIB + 1;
  CHECK_EQ(cudaMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 0, s),
           cudaErrorInvalidValue);
  sizes[2] = MIB;
  CHECK_EQ(cudaMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 1, s),
           cudaErrorInvalidValue);
  idx[0] = 1;
  CHECK_EQ(cudaMemPrefetchBatchAsync(ptrs, sizes, 3, locs, idx, 2, 0, s),
           cudaErrorInvalidValue);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
  cudaGetLastError();
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(cudaFree(b), cudaSuccess);
}

static void test_advise(void) {
  char *m = NULL;
  REQUIRE(cudaMallocManaged((void **)&m, MIB, cudaMemAttachGlobal) ==
          cudaSuccess);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributeReadMostly), 0);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributePreferredLocation), -2);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributeLastPrefetchLocation), -2);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseSetReadMostly, DEV0),
           cudaSuccess);
  CHECK_EQ(cudaMemAdvise(m, 4096, cudaMemAdviseSetPreferredLocation, DEV0),
           cudaSuccess);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseSetAccessedBy, DEV0),
           cudaSuccess);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseSetAccessedBy, HOST),
           cudaSuccess);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributeReadMostly), 1);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributePreferredLocation), 0);
  CHECK_EQ(range_int(m, MIB, cudaMemRangeAttributePreferredLocationType),
           cudaMemLocationTypeDevice);
  int by[3] = {7, 7, 7};
  CHECK_EQ(cudaMemRangeGetAttribute(by, sizeof by,
                                    cudaMemRangeAttributeAccessedBy, m, MIB),
           cudaSuccess);
  CHECK_EQ(by[0], -1);
  CHECK_EQ(by[1], 0);
  CHECK_EQ(by[2], -2);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseUnsetAccessedBy, HOST),
           cudaSuccess);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseUnsetReadMostly, DEV0),
           cudaSuccess);
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseSetPreferredLocation, HOST),
           cudaSuccess);
  int rm = -1, pref = -3;
  void *data[2] = {&rm, &pref};
  size_t sizes[2] = {4, 4};
  enum cudaMemRangeAttribute attrs[2] = {
      cudaMemRangeAttributeReadMostly, cudaMemRangeAttributePreferredLocation};
  CHECK_EQ(cudaMemRangeGetAttributes(data, sizes, attrs, 2, m, MIB),
           cudaSuccess);
  CHECK_EQ(rm, 0);
  CHECK_EQ(pref, -1);
  CHECK_EQ(cudaMemRangeGetAttribute(by, sizeof by,
                                    cudaMemRangeAttributeAccessedBy, m, MIB),
           cudaSuccess);
  CHECK_EQ(by[0], 0);
  CHECK_EQ(by[1], -2);
  /* errors: a size other than 4, a range out of the allocation, memory
   * that is not managed, a device that does not exist */
  int v;
  CHECK_EQ(
      cudaMemRangeGetAttribute(&v, 8, cudaMemRangeAttributeReadMostly, m, MIB),
      cudaErrorInvalidValue);
  CHECK_EQ(cudaMemAdvise(m, MIB + 1, cudaMemAdviseSetReadMostly, DEV0),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaMemAdvise(&v, 4, cudaMemAdviseSetReadMostly, DEV0),
           cudaErrorInvalidValue);
  struct cudaMemLocation dev5 = {cudaMemLocationTypeDevice, 5};
  CHECK_EQ(cudaMemAdvise(m, MIB, cudaMemAdviseSetPreferredLocation, dev5),
           cudaErrorInvalidDevice);
  cudaGetLastError();
  CHECK_EQ(cudaFree(m), cudaSuccess);
}

static void test_attach(void) {
  char *m = NULL;
  REQUIRE(cudaMallocManaged((void **)&m, MIB, cudaMemAttachHost) ==
          cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  rec_clear();
  CHECK_EQ(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle), cudaSuccess);
  CHECK_EQ(cudaStreamAttachMemAsync(s, m, 4096, cudaMemAttachGlobal),
           cudaSuccess);
  CHECK_EQ(cudaStreamAttachMemAsync_ptsz(cudaStreamPerThread, m, 0,
                                         cudaMemAttachSingle),
           cudaSuccess);
  /* length 0 must name the whole allocation, from its start */
  CHECK_EQ(cudaStreamAttachMemAsync(s, m + 1, 0, cudaMemAttachSingle),
           cudaErrorInvalidValue);
  /* the legacy stream cannot own memory */
  CHECK_EQ(cudaStreamAttachMemAsync(0, m, 0, cudaMemAttachSingle),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaStreamAttachMemAsync(s, m, 0, 8), cudaErrorInvalidValue);
  /* no device work */
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
  cudaGetLastError();
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaFree(m), cudaSuccess);
}

int main(void) {
  rec_start();
  test_prefetch();
  test_batch();
  test_advise();
  test_attach();
  return test_result("managed");
}
