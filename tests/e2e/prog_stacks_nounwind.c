/* Built with -fno-asynchronous-unwind-tables -fno-unwind-tables: the
 * unwinder finds no CFI for this function (it must not crash). */
#include <cuda_runtime_api.h>

volatile int stacks_nounwind_sink;

__attribute__((noinline)) int stacks_nounwind_sync(void) {
  int r = cudaStreamSynchronize(0) == cudaSuccess ? 0 : 1;
  stacks_nounwind_sink++;
  return r;
}
