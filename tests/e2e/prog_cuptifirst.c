/* Loads a CUPTI itself, by path (argv[1]), before its first CUDA call, as
 * PyTorch does (libtorch_cuda links CUPTI); then launches 5 kernels of 132
 * blocks and synchronises. Prints how many libcupti objects the process
 * holds at the end: gpuphase must use the one already loaded, not load a
 * second. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

void k_first(void) {}

static int count(struct dl_phdr_info *i, size_t n, void *data) {
  (void)n;
  if (i->dlpi_name && strstr(i->dlpi_name, "libcupti")) ++*(int *)data;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "usage: %s LIBCUPTI (%s)\n", argv[0], dlerror());
    return 2;
  }
  dim3 g = {132, 1, 1}, b = {128, 1, 1};
  for (int i = 0; i < 5; i++)
    if (cudaLaunchKernel((const void *)k_first, g, b, NULL, 0, 0) !=
        cudaSuccess)
      return 1;
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  int n = 0;
  dl_iterate_phdr(count, &n);
  printf("cupti_objects=%d\n", n);
  return 0;
}
