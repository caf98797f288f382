/* Self-test: CUDA arrays and mipmapped arrays (README.md, "Arrays"):
 * memory accounting (width x height x depth x element size, rounded up to
 * 512 bytes), copies to, from and between arrays with their durations and
 * ARRAY record kinds, handles, and cudaDeviceReset. Default parameters:
 * PCIe 25 GB/s, HBM 3000 GB/s, 2000 ns per copy. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "test_records.h"

/* The deprecated 1D array copies are exercised on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static size_t free_bytes(void) {
  size_t f = 0, t = 0;
  CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  return f;
}

static const CUpti_ActivityMemcpy6 *copy_rec(int n) {
  const rec *r = rec_nth(CUPTI_ACTIVITY_KIND_MEMCPY, n);
  REQUIRE(r);
  return &r->u.m;
}

static void check_copy(int n, int kind, int src, int dst, uint64_t bytes,
                       uint64_t ns, bool async) {
  const CUpti_ActivityMemcpy6 *m = copy_rec(n);
  CHECK_EQ(m->copyKind, kind);
  CHECK_EQ(m->srcKind, src);
  CHECK_EQ(m->dstKind, dst);
  CHECK_EQ(m->bytes, bytes);
  CHECK_EQ(m->end - m->start, ns);
  CHECK_EQ(m->flags, async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0);
}

static void test_alloc(void) {
  struct cudaChannelFormatDesc f1 =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  struct cudaChannelFormatDesc u4 =
      cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
  struct cudaChannelFormatDesc f2 =
      cudaCreateChannelDesc(32, 32, 0, 0, cudaChannelFormatKindFloat);
  size_t f0 = free_bytes();
  cudaArray_t a = NULL, b = NULL, c = NULL;
  /* 1000 x 100 floats = 400000 B, rounded to 400384 */
  CHECK_EQ(cudaMallocArray(&a, &f1, 1000, 100, 0), cudaSuccess);
  CHECK(a != NULL);
  CHECK_EQ(f0 - free_bytes(), 400384);
  /* 64 x 32 x 8 uchar4 = 65536 B */
  CHECK_EQ(cudaMalloc3DArray(&b, &u4, (struct cudaExtent){64, 32, 8}, 0),
           cudaSuccess);
  CHECK_EQ(f0 - free_bytes(), 400384 + 65536);
  /* 1D: 100 float2 = 800 B, rounded to 1024 */
  CHECK_EQ(cudaMallocArray(&c, &f2, 100, 0, 0), cudaSuccess);
  CHECK_EQ(f0 - free_bytes(), 400384 + 65536 + 1024);
  struct cudaChannelFormatDesc d;
  struct cudaExtent e;
  unsigned flags = 9;
  CHECK_EQ(cudaArrayGetInfo(&d, &e, &flags, b), cudaSuccess);
  CHECK_EQ(d.x, 8);
  CHECK_EQ(d.w, 8);
  CHECK_EQ(d.f, cudaChannelFormatKindUnsigned);
  CHECK_EQ(e.width, 64);
  CHECK_EQ(e.height, 32);
  CHECK_EQ(e.depth, 8);
  CHECK_EQ(flags, 0);
  CHECK_EQ(cudaFreeArray(a), cudaSuccess);
  CHECK_EQ(cudaFreeArray(b), cudaSuccess);
  CHECK_EQ(cudaFreeArray(c), cudaSuccess);
  CHECK_EQ(free_bytes(), f0);
  CHECK_EQ(cudaFreeArray(a), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaFreeArray(NULL), cudaSuccess);
  /* three channels, mixed widths, no channel */
  struct cudaChannelFormatDesc bad3 =
      cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
  struct cudaChannelFormatDesc mixed =
      cudaCreateChannelDesc(32, 8, 0, 0, cudaChannelFormatKindFloat);
  struct cudaChannelFormatDesc none =
      cudaCreateChannelDesc(0, 0, 0, 0, cudaChannelFormatKindFloat);
  CHECK_EQ(cudaMallocArray(&a, &bad3, 10, 10, 0),
           cudaErrorInvalidChannelDescriptor);
  CHECK_EQ(cudaMallocArray(&a, &mixed, 10, 10, 0),
           cudaErrorInvalidChannelDescriptor);
  CHECK_EQ(cudaMallocArray(&a, &none, 10, 10, 0),
           cudaErrorInvalidChannelDescriptor);
  CHECK_EQ(cudaMallocArray(&a, &f1, 0, 10, 0), cudaErrorInvalidValue);
  CHECK_EQ(free_bytes(), f0);
  cudaGetLastError();
}

static void test_mipmap(void) {
  struct cudaChannelFormatDesc f1 =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  size_t f0 = free_bytes();
  cudaMipmappedArray_t m = NULL;
  /* 256x256, 128x128, 64x64 floats: 262144 + 65536 + 16384 */
  CHECK_EQ(
      cudaMallocMipmappedArray(&m, &f1, (struct cudaExtent){256, 256, 0}, 3, 0),
      cudaSuccess);
  CHECK_EQ(f0 - free_bytes(), 262144 + 65536 + 16384);
  cudaArray_t l2 = NULL;
  CHECK_EQ(cudaGetMipmappedArrayLevel(&l2, m, 2), cudaSuccess);
  struct cudaExtent e;
  CHECK_EQ(cudaArrayGetInfo(NULL, &e, NULL, l2), cudaSuccess);
  CHECK_EQ(e.width, 64);
  CHECK_EQ(e.height, 64);
  CHECK_EQ(e.depth, 0);
  CHECK_EQ(cudaGetMipmappedArrayLevel(&l2, m, 3), cudaErrorInvalidValue);
  /* a level goes with its mipmap */
  CHECK_EQ(cudaFreeArray(l2), cudaErrorInvalidValue);
  CHECK_EQ(cudaFreeMipmappedArray(m), cudaSuccess);
  CHECK_EQ(free_bytes(), f0);
  CHECK_EQ(cudaArrayGetInfo(NULL, &e, NULL, l2),
           cudaErrorInvalidResourceHandle);
  /* 256 has 9 levels (256 .. 1) */
  CHECK_EQ(cudaMallocMipmappedArray(&m, &f1, (struct cudaExtent){256, 256, 0},
                                    10, 0),
           cudaErrorInvalidValue);
  CHECK_EQ(
      cudaMallocMipmappedArray(&m, &f1, (struct cudaExtent){256, 256, 0}, 9, 0),
      cudaSuccess);
  CHECK_EQ(cudaFreeMipmappedArray(m), cudaSuccess);
  CHECK_EQ(free_bytes(), f0);
  cudaGetLastError();
}

static void test_copies(void) {
  struct cudaChannelFormatDesc f1 =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  struct cudaChannelFormatDesc u4 =
      cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
  cudaArray_t a = NULL, b = NULL, v = NULL;
  REQUIRE(cudaMallocArray(&a, &f1, 1000, 100, 0) == cudaSuccess);
  REQUIRE(cudaMallocArray(&b, &f1, 1000, 100, 0) == cudaSuccess);
  REQUIRE(cudaMalloc3DArray(&v, &u4, (struct cudaExtent){64, 32, 8}, 0) ==
          cudaSuccess);
  void *dev = NULL, *pinned = NULL;
  REQUIRE(cudaMalloc(&dev, 400000) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 400000) == cudaSuccess);
  char *host = calloc(1, 400000);
  REQUIRE(host);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  rec_clear();
  /* 0: 1000 B x 100 rows from pageable memory: 2000 + 100000 / 25 */
  CHECK_EQ(cudaMemcpy2DToArray(a, 0, 0, host, 1000, 1000, 100,
                               cudaMemcpyHostToDevice),
           cudaSuccess);
  /* 1: to device memory, HBM: 2000 + ceil(100000 / 3000) = 2034 */
  CHECK_EQ(cudaMemcpy2DFromArray(dev, 1000, a, 0, 0, 1000, 100,
                                 cudaMemcpyDeviceToDevice),
           cudaSuccess);
  /* 2: array to array, the whole 4000-byte rows */
  CHECK_EQ(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, 4000, 100,
                                    cudaMemcpyDeviceToDevice),
           cudaSuccess);
  /* 3: async from pinned memory, 1D form across rows: 4000 + 2000 */
  CHECK_EQ(cudaMemcpyToArrayAsync(a, 100, 2, pinned, 10000,
                                  cudaMemcpyHostToDevice, s),
           cudaSuccess);
  /* 4: back to the host, async on the stream */
  CHECK_EQ(cudaMemcpy2DFromArrayAsync(pinned, 4000, b, 0, 0, 4000, 50,
                                      cudaMemcpyDeviceToHost, s),
           cudaSuccess);
  /* 5: the whole 3D array (extent in elements, 4 B each): 65536 B,
   * 2000 + ceil(65536 / 25) = 4622 */
  struct cudaMemcpy3DParms p = {0};
  p.srcPtr = (struct cudaPitchedPtr){host, 256, 256, 32};
  p.dstArray = v;
  p.extent = (struct cudaExtent){64, 32, 8};
  p.kind = cudaMemcpyHostToDevice;
  CHECK_EQ(cudaMemcpy3D(&p), cudaSuccess);
  /* 6: one slice back, from element (0, 0, 3) */
  struct cudaMemcpy3DParms q = {0};
  q.srcArray = v;
  q.srcPos = (struct cudaPos){0, 0, 3};
  q.dstPtr = (struct cudaPitchedPtr){dev, 256, 256, 32};
  q.extent = (struct cudaExtent){64, 32, 1};
  q.kind = cudaMemcpyDeviceToDevice;
  CHECK_EQ(cudaMemcpy3D(&q), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 7);
  const int PAGE = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
            PIN = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
            DEV = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
            ARR = CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  check_copy(0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, PAGE, ARR, 100000, 6000,
             false);
  check_copy(1, CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, ARR, DEV, 100000, 2034, false);
  check_copy(2, CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, ARR, ARR, 400000, 2134, false);
  check_copy(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, PIN, ARR, 10000, 2400, true);
  check_copy(4, CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, ARR, PIN, 200000, 10000, true);
  check_copy(5, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, PAGE, ARR, 65536, 4622, false);
  check_copy(6, CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, ARR, DEV, 8192, 2003, false);
  /* the async copies ran on s, in order */
  CHECK(copy_rec(4)->start >= copy_rec(3)->end);
  /* out of the array: rows wider than 4000 B, rows past the end, a 1D
   * run past the end, an unknown handle, a bad direction */
  rec_clear();
  CHECK_EQ(
      cudaMemcpy2DToArray(a, 0, 0, host, 4004, 4004, 2, cudaMemcpyHostToDevice),
      cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyToArray(a, 0, 99, host, 4001, cudaMemcpyHostToDevice),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpy2DToArray(a, 0, 50, host, 4000, 4000, 51,
                               cudaMemcpyHostToDevice),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyToArray((cudaArray_t)host, 0, 0, host, 16,
                             cudaMemcpyHostToDevice),
           cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaMemcpy2DToArray(a, 0, 0, host, 4000, 4000, 1, 17),
           cudaErrorInvalidMemcpyDirection);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY), 0);
  cudaGetLastError();
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaFreeArray(a), cudaSuccess);
  CHECK_EQ(cudaFreeArray(b), cudaSuccess);
  CHECK_EQ(cudaFreeArray(v), cudaSuccess);
  CHECK_EQ(cudaFree(dev), cudaSuccess);
  CHECK_EQ(cudaFreeHost(pinned), cudaSuccess);
  free(host);
}

/* The driver's own entry points: cuArrayCreate's 2D descriptor and the
 * 1D copies with byte offsets. */
#define ENTRY(name, var)                                                       \
  REQUIRE(cudaGetDriverEntryPointByVersion(name, (void **)&var, 13000,         \
                                           cudaEnableDefault,                  \
                                           &q) == cudaSuccess &&               \
          var)

static void test_driver(void) {
  enum cudaDriverEntryPointQueryResult q;
  __typeof__(&cuArrayCreate) create = NULL;
  __typeof__(&cuArrayGetDescriptor) get_desc = NULL;
  __typeof__(&cuArrayDestroy) destroy = NULL;
  __typeof__(&cuMemcpyHtoA) htoa = NULL;
  __typeof__(&cuMemcpyAtoH) atoh = NULL;
  __typeof__(&cuMemcpyAtoA) atoa = NULL;
  __typeof__(&cuMemcpyHtoAAsync) htoa_async = NULL;
  ENTRY("cuArrayCreate", create);
  ENTRY("cuArrayGetDescriptor", get_desc);
  ENTRY("cuArrayDestroy", destroy);
  ENTRY("cuMemcpyHtoA", htoa);
  ENTRY("cuMemcpyAtoH", atoh);
  ENTRY("cuMemcpyAtoA", atoa);
  ENTRY("cuMemcpyHtoAAsync", htoa_async);
  size_t f0 = free_bytes();
  /* 300 x 20 of 2 x 16-bit = 24000 B, rounded to 24064 */
  CUDA_ARRAY_DESCRIPTOR d = {300, 20, CU_AD_FORMAT_HALF, 2};
  CUarray a = NULL, b = NULL;
  CHECK_EQ(create(&a, &d), CUDA_SUCCESS);
  CHECK_EQ(create(&b, &d), CUDA_SUCCESS);
  CHECK_EQ(f0 - free_bytes(), 2 * 24064);
  CUDA_ARRAY_DESCRIPTOR r;
  CHECK_EQ(get_desc(&r, a), CUDA_SUCCESS);
  CHECK(r.Width == 300 && r.Height == 20 && r.Format == CU_AD_FORMAT_HALF &&
        r.NumChannels == 2);
  CUDA_ARRAY_DESCRIPTOR three = {300, 20, CU_AD_FORMAT_HALF, 3};
  CUarray c = NULL;
  CHECK_EQ(create(&c, &three), CUDA_ERROR_INVALID_VALUE);
  char *host = calloc(1, 24000);
  void *pinned = NULL;
  REQUIRE(host && cudaMallocHost(&pinned, 24000) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  rec_clear();
  /* 24000 B at PCIe: 2000 + 960; between arrays at HBM: 2000 + 8 */
  CHECK_EQ(htoa(a, 0, host, 24000), CUDA_SUCCESS);
  CHECK_EQ(atoa(b, 0, a, 0, 24000), CUDA_SUCCESS);
  CHECK_EQ(atoh(host, b, 23000, 1000), CUDA_SUCCESS);
  CHECK_EQ(htoa_async(a, 1000, pinned, 23000, (CUstream)s), CUDA_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  /* past the end of the array (not of its 512-byte rounding) */
  CHECK_EQ(htoa(a, 23001, host, 1000), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(atoh(host, (CUarray)host, 0, 10), CUDA_ERROR_INVALID_HANDLE);
  rec_flush();
  REQUIRE(rec_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 4);
  const int PAGE = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
            PIN = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
            ARR = CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  check_copy(0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, PAGE, ARR, 24000, 2960, false);
  check_copy(1, CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, ARR, ARR, 24000, 2008, false);
  check_copy(2, CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, ARR, PAGE, 1000, 2040, false);
  check_copy(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, PIN, ARR, 23000, 2920, true);
  CHECK_EQ(destroy(a), CUDA_SUCCESS);
  CHECK_EQ(destroy(b), CUDA_SUCCESS);
  CHECK_EQ(destroy(b), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(free_bytes(), f0);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaFreeHost(pinned), cudaSuccess);
  free(host);
  cudaGetLastError();
}

/* cudaDeviceReset frees arrays with all device memory. */
static void test_reset(void) {
  struct cudaChannelFormatDesc f1 =
      cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  size_t f0 = free_bytes();
  cudaArray_t a = NULL;
  cudaMipmappedArray_t m = NULL;
  CHECK_EQ(cudaMallocArray(&a, &f1, 1024, 1024, 0), cudaSuccess);
  CHECK_EQ(
      cudaMallocMipmappedArray(&m, &f1, (struct cudaExtent){64, 0, 0}, 2, 0),
      cudaSuccess);
  CHECK_EQ(f0 - free_bytes(), 4194304 + 512 + 512);
  CHECK_EQ(cudaDeviceReset(), cudaSuccess);
  CHECK_EQ(free_bytes(), f0);
  CHECK_EQ(cudaFreeArray(a), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaFreeMipmappedArray(m), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}

int main(void) {
  rec_start();
  test_alloc();
  test_mipmap();
  test_copies();
  test_driver();
  test_reset();
  return test_result("array");
}
