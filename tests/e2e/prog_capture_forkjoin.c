/* A program that captures one training step into a CUDA graph the way
 * frameworks do: work on a main stream forked to two side streams with
 * an event and joined back with two more, then the graph replayed 20
 * times. Prints what it checked (same with and without the profiler).
 * Device work per replay (tests/simcuda/README.md model): kernels fj_pre
 * (132 blocks, 10 us), fj_b (264, 20 us) on B, fj_c (132, 10 us) after a
 * 1 MiB device copy (2350 ns) on C, a 1000 B memset and fj_post (396,
 * 30 us) on A after the join. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void fj_pre(void) {}
void fj_b(void) {}
void fj_c(void) {}
void fj_post(void) {}

#define REPLAYS 20
#define MIB (1u << 20)

static int failed;
#define OK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      printf("error=%s at=%s\n", cudaGetErrorName(e_), #call);                 \
      failed = 1;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

static cudaError_t launch(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 g = {blocks, 1, 1}, b = {128, 1, 1};
  return cudaLaunchKernel((const void *)k, g, b, NULL, 0, s);
}

static void run(void) {
  cudaStream_t a, b, c;
  cudaEvent_t fork, join_b, join_c;
  void *x, *y;
  OK(cudaStreamCreate(&a));
  OK(cudaStreamCreate(&b));
  OK(cudaStreamCreate(&c));
  OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  OK(cudaEventCreateWithFlags(&join_b, cudaEventDisableTiming));
  OK(cudaEventCreateWithFlags(&join_c, cudaEventDisableTiming));
  OK(cudaMalloc(&x, MIB));
  OK(cudaMalloc(&y, MIB));

  cudaGraph_t graph;
  OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
  OK(launch(fj_pre, 132, a));
  OK(cudaEventRecord(fork, a));
  OK(cudaStreamWaitEvent(b, fork, 0));
  OK(cudaStreamWaitEvent(c, fork, 0));
  OK(launch(fj_b, 264, b));
  OK(cudaMemcpyAsync(y, x, MIB, cudaMemcpyDeviceToDevice, c));
  OK(launch(fj_c, 132, c));
  OK(cudaEventRecord(join_b, b));
  OK(cudaEventRecord(join_c, c));
  OK(cudaStreamWaitEvent(a, join_b, 0));
  OK(cudaStreamWaitEvent(a, join_c, 0));
  OK(cudaMemsetAsync(x, 0, 1000, a));
  OK(launch(fj_post, 396, a));
  OK(cudaStreamEndCapture(a, &graph));
  size_t nodes = 0;
  OK(cudaGraphGetNodes(graph, NULL, &nodes));
  printf("nodes=%zu\n", nodes);

  cudaGraphExec_t exec;
  OK(cudaGraphInstantiate(&exec, graph, 0));
  OK(cudaGraphDestroy(graph));
  for (int i = 0; i < REPLAYS; i++)
    OK(cudaGraphLaunch(exec, a));
  OK(cudaStreamSynchronize(a));
  printf("replays=%d\n", REPLAYS);

  OK(cudaGraphExecDestroy(exec));
  OK(cudaFree(x));
  OK(cudaFree(y));
  OK(cudaEventDestroy(fork));
  OK(cudaEventDestroy(join_b));
  OK(cudaEventDestroy(join_c));
  OK(cudaStreamDestroy(a));
  OK(cudaStreamDestroy(b));
  OK(cudaStreamDestroy(c));
}

int main(void) {
  run();
  printf("status=%s\n", failed ? "failed" : "ok");
  return failed ? 1 : 0;
}
