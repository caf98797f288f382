/* Another profiler in the same process: it subscribes to CUPTI in the
 * middle of the run, collects its own kernel records, and leaves.
 * Prints how many kernel records the other tool got.
 *   e2e-prog-othertool [v2]   v2: it subscribes with cuptiSubscribe_v2
 *                             (looked up at run time, with its parameters'
 *                             struct as CUPTI 13 lays it out)
 *   e2e-prog-othertool activity N
 *                             the tool uses only the activity API, as
 *                             CUPTI's activity samples do: after 3 kernels
 *                             it registers its buffer callbacks (its
 *                             completion frees each buffer), then N times:
 *                             enables kernel records, 4 kernels, flushes,
 *                             disables, 2 kernels
 *   e2e-prog-othertool early  the same tool registers and enables before
 *                             the first CUDA call; 4 kernels, flush,
 *                             disable, 2 kernels
 *   e2e-prog-othertool finalize
 *                             as activity 1, then cuptiFinalize (PyTorch's
 *                             profiler tears CUPTI down once it stopped)
 *                             and 2 kernels more
 *   e2e-prog-othertool finalize_held
 *                             3 kernels, cuptiFinalize, 2 kernels
 *   e2e-prog-othertool disable_ours
 *                             the tool registers its callbacks before the
 *                             first CUDA call and enables nothing; 3
 *                             kernels, then it disables kernel records
 *                             (which it never enabled), 2 kernels
 *   e2e-prog-othertool register_only
 *                             3 kernels, the tool registers its callbacks
 *                             and enables nothing, 5 kernels
 *   e2e-prog-othertool contexts
 *                             3 kernels, the tool enables kernel records in
 *                             two contexts, 4 kernels, flush, disables them
 *                             in the first, 3 kernels (k_mid: the tool's,
 *                             which still has the second; the simulated
 *                             CUPTI, which takes no context into account,
 *                             records none), disables them in the second,
 *                             2 kernels
 *   e2e-prog-othertool reenter
 *                             3 kernels, the tool enables memcpy and kernel
 *                             records (its completion callback disables
 *                             kernel records again), 4 kernels, disables
 *                             both, 2 kernels */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void k_before(void) {}
void k_during(void) {}
void k_mid(void) {}
void k_after(void) {}

static int tool_kernels;

static void CUPTIAPI tool_request(uint8_t **buf, size_t *size, size_t *max) {
  *size = 1 << 16;
  *buf = aligned_alloc(8, *size);
  *max = 0;
}

static int tool_reenter; /* its completion disables its kernel records */

static void CUPTIAPI tool_complete(CUcontext c, uint32_t s, uint8_t *buf,
                                   size_t size, size_t valid) {
  (void)c, (void)s, (void)size;
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) tool_kernels++;
  free(buf);
  if (tool_reenter) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

static void CUPTIAPI tool_cb(void *u, CUpti_CallbackDomain d,
                             CUpti_CallbackId id, const void *data) {
  (void)u, (void)d, (void)id, (void)data;
}

static int launch(void (*k)(void), int n) {
  dim3 g = {132, 1, 1}, b = {64, 1, 1};
  for (int i = 0; i < n; i++)
    if (cudaLaunchKernel((const void *)k, g, b, NULL, 0, 0) != cudaSuccess)
      return 1;
  return cudaDeviceSynchronize() != cudaSuccess;
}

/* CUpti_SubscriberParams of CUPTI 13 */
struct sub_params {
  size_t size;
  const char *name;
  char *old_name;
  size_t old_size;
};
typedef CUptiResult (*sub_v2_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                                 void *, struct sub_params *);

static CUptiResult subscribe(int v2, CUpti_SubscriberHandle *tool) {
  if (!v2) return cuptiSubscribe(tool, tool_cb, NULL);
  sub_v2_fn f = (sub_v2_fn)dlsym(RTLD_DEFAULT, "cuptiSubscribe_v2");
  char old[64] = "";
  struct sub_params p = {sizeof p, "othertool", old, sizeof old};
  return f ? f(tool, tool_cb, NULL, &p) : CUPTI_ERROR_NOT_INITIALIZED;
}

/* The activity-only tool: cycles of its kernel records after 3 kernels
 * (early: registered and enabled before any CUDA call, one cycle). */
static int activity_only(int cycles, int early) {
  if (early) {
    if (cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
      return 3;
  } else {
    if (launch(k_before, 3)) return 1;
    if (cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS)
      return 3;
  }
  for (int c = 0; c < cycles; c++) {
    if ((c || !early) &&
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
      return 3;
    if (launch(k_during, 4)) return 1;
    if (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS ||
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
      return 4;
    if (launch(k_after, 2)) return 1;
  }
  printf("%d\n", tool_kernels);
  return 0;
}

int main(int argc, char **argv) {
  const CUpti_ActivityKind K = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (argc > 1 && !strcmp(argv[1], "register_only")) {
    if (launch(k_before, 3) ||
        cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
        launch(k_after, 5))
      return 5;
    printf("%d\n", tool_kernels);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "contexts")) {
    /* the simulated CUPTI takes any context handle (and ignores it) */
    CUcontext a = (CUcontext)0x1000, b = (CUcontext)0x2000;
    if (launch(k_before, 3) ||
        cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnableContext(a, K) != CUPTI_SUCCESS ||
        cuptiActivityEnableContext(b, K) != CUPTI_SUCCESS || launch(k_during, 4) ||
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS ||
        cuptiActivityDisableContext(a, K) != CUPTI_SUCCESS || launch(k_mid, 3) ||
        cuptiActivityDisableContext(b, K) != CUPTI_SUCCESS || launch(k_after, 2))
      return 5;
    printf("%d\n", tool_kernels);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "reenter")) {
    tool_reenter = 1;
    if (launch(k_before, 3) ||
        cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        cuptiActivityEnable(K) != CUPTI_SUCCESS || launch(k_during, 4) ||
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        cuptiActivityDisable(K) != CUPTI_SUCCESS || launch(k_after, 2))
      return 5;
    printf("%d\n", tool_kernels);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "finalize")) {
    int r = activity_only(1, 0);
    if (r || cuptiFinalize() != CUPTI_SUCCESS) return r ? r : 5;
    return launch(k_after, 2);
  }
  if (argc > 1 && !strcmp(argv[1], "finalize_held")) {
    if (launch(k_before, 3) || cuptiFinalize() != CUPTI_SUCCESS) return 5;
    if (launch(k_after, 2)) return 1;
    printf("0\n");
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "disable_ours")) {
    if (cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
        launch(k_before, 3) ||
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        launch(k_after, 2))
      return 5;
    printf("%d\n", tool_kernels);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "activity"))
    return activity_only(argc > 2 ? atoi(argv[2]) : 1, 0);
  if (argc > 1 && !strcmp(argv[1], "early")) return activity_only(1, 1);
  int v2 = argc > 1 && !strcmp(argv[1], "v2");
  if (launch(k_before, 3)) return 1;
  CUpti_SubscriberHandle tool;
  if (subscribe(v2, &tool) != CUPTI_SUCCESS) {
    fprintf(stderr, "the other tool could not subscribe\n");
    return 2;
  }
  if (cuptiActivityRegisterCallbacks(tool_request, tool_complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return 3;
  if (launch(k_during, 4)) return 1;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (cuptiUnsubscribe(tool) != CUPTI_SUCCESS) return 4;
  if (launch(k_after, 2)) return 1;
  printf("%d\n", tool_kernels);
  return 0;
}
