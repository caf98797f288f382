/* Another profiler in the same process: it subscribes to CUPTI in the
 * middle of the run, collects its own kernel records, and leaves.
 * Prints how many kernel records the other tool got. */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

void k_before(void) {}
void k_during(void) {}
void k_after(void) {}

static int tool_kernels;

static void CUPTIAPI tool_request(uint8_t **buf, size_t *size, size_t *max) {
  *size = 1 << 16;
  *buf = aligned_alloc(8, *size);
  *max = 0;
}

static void CUPTIAPI tool_complete(CUcontext c, uint32_t s, uint8_t *buf,
                                   size_t size, size_t valid) {
  (void)c, (void)s, (void)size;
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) tool_kernels++;
  free(buf);
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

int main(void) {
  if (launch(k_before, 3)) return 1;
  CUpti_SubscriberHandle tool;
  if (cuptiSubscribe(&tool, tool_cb, NULL) != CUPTI_SUCCESS) {
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
