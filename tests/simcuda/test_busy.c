/* Self-test: GPUSIM_CUPTI=busy (set by meson) stands for another tool
 * holding CUPTI: subscribing fails, activity records still flow. */
#include <cuda_runtime_api.h>

#include "test_records.h"

volatile int sink;
void k_busy(void) {
  sink = 1;
}

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain d,
                            CUpti_CallbackId id, const void *data) {
  (void)ud, (void)d, (void)id, (void)data;
}

int main(void) {
  CUpti_SubscriberHandle sub;
  CHECK_EQ(cuptiSubscribe(&sub, on_api, NULL),
           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  CHECK_EQ(cuptiSubscribe(&sub, on_api, NULL),
           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const char *text = NULL;
  CHECK_EQ(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                                &text),
           CUPTI_SUCCESS);
  CHECK(text &&
        strcmp(text, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0);
  rec_start();
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  CHECK_EQ(cudaLaunchKernel((const void *)k_busy, g, b, NULL, 0, 0),
           cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rec_flush();
  CHECK_EQ(rec_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
  return test_result("test_busy");
}
