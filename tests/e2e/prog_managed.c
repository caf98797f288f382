/* Unified memory the way an application ported from host code uses it:
 * two 4 MiB managed buffers filled on the host, advised, prefetched to
 * the GPU, three kernels, the result prefetched back and read on the
 * host; b is attached to the stream; then both are prefetched in one
 * batch. Prints a host-side checksum and the range attributes it reads.
 * Model figures (test_fidelity.py): 8 MiB of managed memory; five copies
 * of 4 MiB (host to device, host to device, device to host, then the
 * batch's two host to device), all MANAGED to MANAGED on the stream; three
 * kernels of 132 blocks. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void managed_step(void);
void managed_step(void) {}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

#define N (1u << 20) /* floats: 4 MiB */

int main(void) {
  float *a, *b;
  CHECK(cudaMallocManaged((void **)&a, N * sizeof(float), cudaMemAttachGlobal));
  CHECK(cudaMallocManaged((void **)&b, N * sizeof(float), cudaMemAttachGlobal));
  for (unsigned i = 0; i < N; i++)
    a[i] = (float)(i % 13), b[i] = 1.0f;
  int dev = 0;
  CHECK(cudaGetDevice(&dev));
  struct cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev};
  struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
  CHECK(cudaMemAdvise(a, N * sizeof(float), cudaMemAdviseSetPreferredLocation,
                      gpu));
  CHECK(cudaMemAdvise(b, N * sizeof(float), cudaMemAdviseSetReadMostly, gpu));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMemPrefetchAsync(a, N * sizeof(float), gpu, 0, s));
  CHECK(cudaMemPrefetchAsync(b, N * sizeof(float), gpu, 0, s));
  dim3 grid = {132, 1, 1}, block = {256, 1, 1};
  for (int i = 0; i < 3; i++)
    CHECK(cudaLaunchKernel((const void *)managed_step, grid, block, NULL, 0,
                           s));
  CHECK(cudaMemPrefetchAsync(a, N * sizeof(float), host, 0, s));
  CHECK(cudaStreamAttachMemAsync(s, b, 0, cudaMemAttachSingle));
  CHECK(cudaStreamSynchronize(s));
  double sum = 0;
  for (unsigned i = 0; i < N; i++)
    sum += a[i] * b[i];
  int pref = -3, rm = -3, last = -3;
  CHECK(cudaMemRangeGetAttribute(&pref, sizeof pref,
                                 cudaMemRangeAttributePreferredLocation, a,
                                 N * sizeof(float)));
  CHECK(cudaMemRangeGetAttribute(&rm, sizeof rm,
                                 cudaMemRangeAttributeReadMostly, b,
                                 N * sizeof(float)));
  CHECK(cudaMemRangeGetAttribute(&last, sizeof last,
                                 cudaMemRangeAttributeLastPrefetchLocation, a,
                                 N * sizeof(float)));
  printf("checksum=%.0f preferred=%d read_mostly=%d last_prefetch=%d\n", sum,
         pref, rm, last);
  void *ptrs[2] = {a, b};
  size_t sizes[2] = {N * sizeof(float), N * sizeof(float)};
  size_t idx[1] = {0};
  CHECK(cudaMemPrefetchBatchAsync(ptrs, sizes, 2, &gpu, idx, 1, 0, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  printf("managed=2\n");
  return 0;
}
