/* prog_harden.c's launches from a function built without unwind tables
 * (meson.build): libunwind's step through its frame falls back to the
 * frame chain and checks the memory it reads through its pipe. */
#include <cuda_runtime_api.h>

int nouw_work(int launches);

void k_nouw(void) {}

int nouw_work(int launches) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  for (int i = 0; i < launches; i++)
    if (cudaLaunchKernel((const void *)k_nouw, g, b, NULL, 0, 0) != cudaSuccess)
      return 1;
  return cudaDeviceSynchronize() != cudaSuccess;
}
