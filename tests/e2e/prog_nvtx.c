/* NVTX ranges through the nvtx3 headers (the header-only client that loads
 * NVTX_INJECTION64_PATH), around simulated CUDA work. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>

void k_nvtx(void) {}

static nvtxRangeId_t crossing;

static void *ender(void *arg) {
  (void)arg;
  nvtxRangeEnd(crossing); /* a start/end range may end on another thread */
  return NULL;
}

static int launch(void) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  return cudaLaunchKernel((const void *)k_nvtx, g, b, NULL, 0, 0) != cudaSuccess;
}

int main(void) {
  if (launch()) return 1; /* profiling starts at the first CUDA call */
  int d0 = nvtxRangePushA("outer");
  int d1 = nvtxRangePushW(L"inn\u00e9r");
  if (launch()) return 1;
  int p1 = nvtxRangePop();
  int p0 = nvtxRangePop();
  int bad = nvtxRangePop(); /* unbalanced: NVTX reports an error */
  nvtxDomainHandle_t dom = nvtxDomainCreateA("mydomain");
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered step");
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg;
  nvtxDomainRangePushEx(dom, &a);
  if (launch()) return 1;
  nvtxDomainRangePop(dom);
  /* a stack per domain: A (default domain) and DOM_B (mydomain) overlap
   * without nesting; the kernel runs inside DOM_B only */
  nvtxEventAttributes_t b = {0};
  b.version = NVTX_VERSION;
  b.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  b.messageType = NVTX_MESSAGE_TYPE_ASCII;
  b.message.ascii = "DOM_B";
  int ia = nvtxRangePushA("A");
  int ib = nvtxDomainRangePushEx(dom, &b);
  int pa = nvtxRangePop();
  if (launch() || cudaDeviceSynchronize() != cudaSuccess) return 1;
  int pb = nvtxDomainRangePop(dom);
  crossing = nvtxRangeStartA("crossing");
  pthread_t t;
  if (pthread_create(&t, NULL, ender, NULL) || pthread_join(t, NULL)) return 1;
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  printf("%d %d %d %d %d\n", d0, d1, p1, p0, bad);
  printf("%d %d %d %d\n", ia, ib, pa, pb);
  return 0;
}
