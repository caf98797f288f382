/* Self-test: stream attributes and priorities, default memory pool
 * attributes and peer attributes (README.md, "Attributes"), with two
 * devices (GPUSIM_DEVICES=2). */
#include <cuda_runtime_api.h>

#include "test_util.h"

cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t, cudaStreamAttrID,
                                        cudaStreamAttrValue *);

static void test_stream_attrs(void) {
  int least = 1, greatest = 1;
  CHECK_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  CHECK_EQ(least, 0);
  CHECK_EQ(greatest, -5);
  cudaStream_t s, t;
  REQUIRE(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3) ==
          cudaSuccess);
  REQUIRE(cudaStreamCreate(&t) == cudaSuccess);
  int prio = 1;
  unsigned flags = 9;
  CHECK_EQ(cudaStreamGetPriority(s, &prio), cudaSuccess);
  CHECK_EQ(prio, -3);
  CHECK_EQ(cudaStreamGetFlags(s, &flags), cudaSuccess);
  CHECK_EQ(flags, cudaStreamNonBlocking);
  cudaStreamAttrValue v = {0};
  CHECK_EQ(cudaStreamGetAttribute(s, cudaStreamAttributePriority, &v),
           cudaSuccess);
  CHECK_EQ(v.priority, -3);
  /* priorities outside the range are clamped, as by CUDA */
  v.priority = -9;
  CHECK_EQ(cudaStreamSetAttribute(s, cudaStreamAttributePriority, &v),
           cudaSuccess);
  CHECK_EQ(cudaStreamGetPriority(s, &prio), cudaSuccess);
  CHECK_EQ(prio, -5);
  /* defaults, then an access policy window and a synchronisation policy */
  CHECK_EQ(
      cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy, &v),
      cudaSuccess);
  CHECK_EQ(v.syncPolicy, cudaSyncPolicyAuto);
  cudaStreamAttrValue w = {0};
  w.accessPolicyWindow.base_ptr = (void *)0x1000;
  w.accessPolicyWindow.num_bytes = 1 << 20;
  w.accessPolicyWindow.hitRatio = 0.5f;
  w.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  CHECK_EQ(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &w),
           cudaSuccess);
  cudaStreamAttrValue y = {0};
  y.syncPolicy = cudaSyncPolicyBlockingSync;
  CHECK_EQ(
      cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &y),
      cudaSuccess);
  cudaStreamAttrValue r = {0};
  CHECK_EQ(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &r),
           cudaSuccess);
  CHECK(r.accessPolicyWindow.base_ptr == (void *)0x1000);
  CHECK_EQ(r.accessPolicyWindow.num_bytes, 1 << 20);
  CHECK(r.accessPolicyWindow.hitRatio == 0.5f);
  CHECK_EQ(r.accessPolicyWindow.hitProp, cudaAccessPropertyPersisting);
  /* copied to t, with the priority */
  CHECK_EQ(cudaStreamCopyAttributes(t, s), cudaSuccess);
  CHECK_EQ(
      cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy, &r),
      cudaSuccess);
  CHECK_EQ(r.syncPolicy, cudaSyncPolicyBlockingSync);
  CHECK_EQ(cudaStreamGetPriority(t, &prio), cudaSuccess);
  CHECK_EQ(prio, -5);
  /* the per-thread stream has attributes too */
  CHECK_EQ(cudaStreamGetAttribute_ptsz(0, cudaStreamAttributePriority, &r),
           cudaSuccess);
  CHECK_EQ(r.priority, 0);
  /* errors: a hit ratio over 1, an unknown attribute, a bad handle */
  w.accessPolicyWindow.hitRatio = 1.5f;
  CHECK_EQ(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &w),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaStreamGetAttribute(s, (cudaStreamAttrID)999, &r),
           cudaErrorInvalidValue);
  CHECK_EQ(
      cudaStreamGetAttribute((cudaStream_t)&r, cudaStreamAttributePriority, &r),
      cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(t), cudaSuccess);
}

static unsigned long long pool_u64(cudaMemPool_t p, enum cudaMemPoolAttr a) {
  unsigned long long v = 7;
  CHECK_EQ(cudaMemPoolGetAttribute(p, a, &v), cudaSuccess);
  return v;
}

static void test_pool(void) {
  cudaMemPool_t p = NULL;
  REQUIRE(cudaDeviceGetDefaultMemPool(&p, 0) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemCurrent), 0);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrReleaseThreshold), 0);
  int reuse = 0;
  CHECK_EQ(
      cudaMemPoolGetAttribute(p, cudaMemPoolReuseAllowOpportunistic, &reuse),
      cudaSuccess);
  CHECK_EQ(reuse, 1);
  void *a = NULL, *b = NULL, *c = NULL;
  /* 1000 B rounds to 1024; cudaMalloc memory is not the pool's */
  CHECK_EQ(cudaMallocAsync(&a, 1000, s), cudaSuccess);
  CHECK_EQ(cudaMallocAsync(&b, 4096, s), cudaSuccess);
  CHECK_EQ(cudaMalloc(&c, 8192), cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemCurrent), 1024 + 4096);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrReservedMemCurrent), 1024 + 4096);
  CHECK_EQ(cudaFreeAsync(b, s), cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemCurrent), 1024);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemHigh), 1024 + 4096);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrReservedMemHigh), 1024 + 4096);
  /* a high-water mark resets to the current use, and only with 0 */
  unsigned long long zero = 0, one = 1;
  CHECK_EQ(cudaMemPoolSetAttribute(p, cudaMemPoolAttrUsedMemHigh, &zero),
           cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemHigh), 1024);
  CHECK_EQ(cudaMemPoolSetAttribute(p, cudaMemPoolAttrUsedMemHigh, &one),
           cudaErrorInvalidValue);
  CHECK_EQ(cudaMemPoolSetAttribute(p, cudaMemPoolAttrUsedMemCurrent, &zero),
           cudaErrorInvalidValue);
  unsigned long long thr = 1ull << 30;
  CHECK_EQ(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &thr),
           cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrReleaseThreshold), 1ull << 30);
  reuse = 0;
  CHECK_EQ(
      cudaMemPoolSetAttribute(p, cudaMemPoolReuseAllowOpportunistic, &reuse),
      cudaSuccess);
  reuse = 5;
  CHECK_EQ(
      cudaMemPoolGetAttribute(p, cudaMemPoolReuseAllowOpportunistic, &reuse),
      cudaSuccess);
  CHECK_EQ(reuse, 0);
  CHECK_EQ(cudaMemPoolTrimTo(p, 0), cudaSuccess);
  CHECK_EQ(cudaMemPoolTrimTo((cudaMemPool_t)&reuse, 0), cudaErrorInvalidValue);
  /* cudaFree of pool memory returns it to the pool's count too */
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(pool_u64(p, cudaMemPoolAttrUsedMemCurrent), 0);
  /* device 1's pool is its own */
  cudaMemPool_t p1 = NULL;
  REQUIRE(cudaDeviceGetDefaultMemPool(&p1, 1) == cudaSuccess);
  CHECK(p1 != p);
  CHECK_EQ(pool_u64(p1, cudaMemPoolAttrReleaseThreshold), 0);
  cudaGetLastError();
  CHECK_EQ(cudaFree(c), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void test_p2p(void) {
  int v = -1;
  CHECK_EQ(cudaDeviceCanAccessPeer(&v, 0, 1), cudaSuccess);
  CHECK_EQ(v, 1);
  CHECK_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 1),
           cudaSuccess);
  CHECK_EQ(v, 1);
  CHECK_EQ(
      cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, 1, 0),
      cudaSuccess);
  CHECK_EQ(v, 1);
  CHECK_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrPerformanceRank, 0, 1),
           cudaSuccess);
  CHECK_EQ(v, 0);
  CHECK_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 0),
           cudaErrorInvalidDevice);
  CHECK_EQ(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 2),
           cudaErrorInvalidDevice);
  CHECK_EQ(cudaDeviceGetP2PAttribute(&v, (enum cudaDeviceP2PAttr)99, 0, 1),
           cudaErrorInvalidValue);
  /* peer access, as CUDA answers it: once per pair, never to itself */
  CHECK_EQ(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
  CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  CHECK_EQ(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled);
  CHECK_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  CHECK_EQ(cudaDeviceEnablePeerAccess(2, 0), cudaErrorInvalidDevice);
  CHECK_EQ(cudaDeviceEnablePeerAccess(1, 1), cudaErrorInvalidValue);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess); /* the other direction is apart */
  CHECK_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaSuccess);
  CHECK_EQ(cudaDeviceDisablePeerAccess(0), cudaSuccess);
  CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  CHECK_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
  CHECK_EQ(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
  cudaGetLastError();
}

int main(void) {
  test_stream_attrs();
  test_pool();
  test_p2p();
  return test_result("attr");
}
