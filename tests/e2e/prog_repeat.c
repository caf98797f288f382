/* A launch loop whose calls mostly repeat the one before but for their
 * times (what the recorder writes as repeat records, docs/format.md), with
 * the changes test_record.py ("repeats") works out from the call's index
 * i: grid 2 x 1 x 1 when i % 10 == 4 and 1 x 2 x 1 when i % 10 == 5 (the
 * same total from other dimensions), else 1 x 1 x 1; block 32; stream s2
 * when i % 13 == 7, else s1; dynamic shared memory 64 when i % 17 == 3,
 * else 0; kernel_b when i % 19 == 11, else kernel_a.
 * usage: e2e-prog-repeat N; prints "launches N" when every call succeeded. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

void kernel_a(void) {}
void kernel_b(void) {}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  cudaStream_t s1, s2;
  if (cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  for (long i = 0; i < n; i++) {
    dim3 g = {1, 1, 1}, b = {32, 1, 1};
    if (i % 10 == 4) g.x = 2;
    if (i % 10 == 5) g.y = 2;
    const void *f = i % 19 == 11 ? (const void *)kernel_b : (const void *)kernel_a;
    if (cudaLaunchKernel(f, g, b, NULL, i % 17 == 3 ? 64 : 0,
                         i % 13 == 7 ? s2 : s1) != cudaSuccess)
      return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  printf("launches %ld\n", n);
  return 0;
}
