/* gpuphase-demo: a small training loop for the simulated GPU (about 1.2 s
 * with the default model). Each step loads a batch on the host (a sleep),
 * copies it from pinned memory, runs a forward/backward pass of kernels
 * of very different sizes, reads back a small loss and waits for the
 * stream. Kernels are host functions launched by pointer and named by
 * their dynamic symbol, so the program is linked with -rdynamic.
 *
 *   usage: gpuphase-demo [steps] [data-loading-ms]     (default 50 20)
 *
 * It marks its steps the way a training script would, with the phase API
 * (gpuphase/gpuphase.h, linked from libgpuphase-api; no-ops unless run
 * under gpuphase): each step is a range "step" holding the phases "data"
 * (the batch load and the enqueue of its H2D copy), "forward_backward"
 * (the kernel launches) and "sync" (the D2H copy and the stream
 * synchronisation, where the host waits for the GPU), and each step
 * counts BATCH_SAMPLES = 256 items with gpuphase_step_items.
 *
 * Per step, with the default model: H2D 64 MiB = 2686355 ns; kernels
 * 2 x 1320 blocks (10 waves each) + 2640 blocks (20 waves) + 264 blocks
 * (2 waves) + 23 small ones (1 wave each) = 650 us; D2H 4 KiB = 2164 ns.
 * The GPU is busy ~3.3 ms of every ~23 ms: a host-bound input pipeline. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpuphase/gpuphase.h"

#define BATCH_BYTES (64u << 20)
#define BATCH_SAMPLES 256u /* what a batch of BATCH_BYTES holds */
#define RESULT_BYTES 4096u

/* The "kernels". Distinct bodies keep them distinct functions. */
volatile int demo_sink;
void gemm_fwd(void) {
  demo_sink = 1;
}
void gemm_bwd(void) {
  demo_sink = 2;
}
void relu(void) {
  demo_sink = 3;
}
void softmax(void) {
  demo_sink = 4;
}
void loss_reduce(void) {
  demo_sink = 5;
}
void sgd_update(void) {
  demo_sink = 6;
}

static int check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    fprintf(stderr, "gpuphase-demo: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

static int launch(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 grid = {blocks, 1, 1}, block = {256, 1, 1};
  return check(cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s),
               "launch");
}

/* Forward and backward pass: two large GEMMs, a larger backward GEMM,
 * and a tail of small element-wise kernels, the usual launch-bound part
 * of a step. */
static int compute(cudaStream_t s) {
  int ok = launch(gemm_fwd, 1320, s) && launch(relu, 32, s) &&
           launch(gemm_fwd, 1320, s) && launch(softmax, 8, s) &&
           launch(loss_reduce, 1, s) && launch(gemm_bwd, 2640, s);
  for (int i = 0; ok && i < 20; i++)
    ok = launch(relu, 1 + (unsigned)i % 32, s);
  return ok && launch(sgd_update, 264, s);
}

static void load_batch(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* Each phase is closed whether or not its work failed, so the ranges
 * stay balanced on the way out. */
static int step(cudaStream_t s, void *batch, void *dev_batch, void *result,
                void *dev_result, long load_ms) {
  gpuphase_range_push("step");
  gpuphase_range_push("data");
  load_batch(load_ms);
  int ok = check(cudaMemcpyAsync(dev_batch, batch, BATCH_BYTES,
                                 cudaMemcpyHostToDevice, s),
                 "H2D copy");
  gpuphase_range_pop();
  gpuphase_range_push("forward_backward");
  ok = ok && compute(s);
  gpuphase_range_pop();
  gpuphase_range_push("sync");
  ok = ok &&
       check(cudaMemcpyAsync(result, dev_result, RESULT_BYTES,
                             cudaMemcpyDeviceToHost, s),
             "D2H copy") &&
       check(cudaStreamSynchronize(s), "synchronize");
  gpuphase_range_pop();
  if (ok) gpuphase_step_items(BATCH_SAMPLES);
  gpuphase_range_pop();
  return ok;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 50;
  long load_ms = argc > 2 ? atol(argv[2]) : 20;
  cudaStream_t s;
  void *batch, *result, *dev_batch, *dev_result;
  if (steps < 0 || load_ms < 0) {
    fprintf(stderr, "usage: gpuphase-demo [steps] [data-loading-ms]\n");
    return 2;
  }
  if (!check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream") ||
      !check(cudaMallocHost(&batch, BATCH_BYTES), "pinned batch") ||
      !check(cudaMallocHost(&result, RESULT_BYTES), "pinned result") ||
      !check(cudaMalloc(&dev_batch, BATCH_BYTES), "device batch") ||
      !check(cudaMalloc(&dev_result, RESULT_BYTES), "device result"))
    return 1;
  for (int i = 0; i < steps; i++)
    if (!step(s, batch, dev_batch, result, dev_result, load_ms)) return 1;
  cudaFree(dev_result);
  cudaFree(dev_batch);
  cudaFreeHost(result);
  cudaFreeHost(batch);
  cudaStreamDestroy(s);
  printf("gpuphase-demo: %d steps done\n", steps);
  return 0;
}
