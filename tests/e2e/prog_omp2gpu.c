/* One OpenMP thread per GPU (run with GPUSIM_DEVICES=2): each thread
 * selects its device with cudaSetDevice, then runs 5 iterations of
 * allocate, upload, two kernels, download, free. Prints what each thread
 * did. Model figures (test_fidelity.py): per device 10 kernels (264
 * blocks on device 0, 132 on device 1), 5 uploads and 5 downloads of
 * 1 MiB, a memory peak of 1 MiB. */
#include <cuda_runtime_api.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

void omp_work0(void);
void omp_work1(void);
void omp_work0(void) {}
void omp_work1(void) {}

#define MB (1u << 20)

static int run(int gpu, char *host) {
  if (cudaSetDevice(gpu) != cudaSuccess) return 1;
  const void *k = gpu ? (const void *)omp_work1 : (const void *)omp_work0;
  dim3 grid = {gpu ? 132u : 264u, 1, 1}, block = {128, 1, 1};
  for (int it = 0; it < 5; it++) {
    void *d;
    if (cudaMalloc(&d, MB) != cudaSuccess ||
        cudaMemcpy(d, host, MB, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaLaunchKernel(k, grid, block, NULL, 0, 0) != cudaSuccess ||
        cudaLaunchKernel(k, grid, block, NULL, 0, 0) != cudaSuccess ||
        cudaMemcpy(host, d, MB, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaFree(d) != cudaSuccess)
      return 1;
  }
  return 0;
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {
    fprintf(stderr, "needs 2 GPUs, found %d\n", n);
    return 1;
  }
  int failed[2] = {1, 1};
  char *host[2] = {calloc(1, MB), calloc(1, MB)};
  if (!host[0] || !host[1]) return 1;
  omp_set_num_threads(2);
#pragma omp parallel
  {
    int t = omp_get_thread_num();
    if (t < 2) failed[t] = run(t, host[t]);
  }
  for (int t = 0; t < 2; t++)
    printf("gpu%d %s\n", t, failed[t] ? "failed" : "done");
  free(host[0]);
  free(host[1]);
  return failed[0] || failed[1];
}
