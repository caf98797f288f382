/* A library prog_stacks dlopens, calls and dlcloses before the end. */
#include <cuda_runtime_api.h>

volatile int stacks_plugin_sink;

__attribute__((noinline)) int stacks_plugin_sync(void) {
  int r = cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
  stacks_plugin_sink++;
  return r;
}
