/* A second library prog_stacks dlopens ("reload" mode) after closing the
 * first: the loader usually maps it where the first one lay, and its calls
 * must be named after it, not after the library unloaded from there. */
#include <cuda_runtime_api.h>

volatile int stacks_plugin2_sink;

__attribute__((noinline)) int stacks_plugin2_sync(void) {
  int r = cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
  stacks_plugin2_sink++;
  return r;
}
