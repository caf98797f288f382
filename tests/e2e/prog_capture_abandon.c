/* Captures abandoned by destroying a stream, then a new stream that may
 * get the destroyed one's handle (the simulator's handles are heap
 * addresses, which the allocator hands out again):
 *   1. a capture begun on A, one kernel issued to it (captured), A
 *      destroyed (the simulator ends the capture with it); a new stream N
 *      runs 3 kernels of 132 blocks (10 us each) and is synchronised;
 *   2. a capture begun on B and forked to C by an event, C destroyed (the
 *      simulator invalidates the capture), a new stream M runs 2 kernels of
 *      264 blocks (20 us), is synchronised and destroyed; B's end then
 *      fails (capture invalidated), and B runs 1 kernel of 396 blocks.
 * Prints what it checked, and whether the new streams reused a destroyed
 * handle (the same with and without the profiler).
 * With "many N": captures begun on N streams at once, a kernel issued to
 * each, then every capture ended (prints status=ok). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ab_captured(void) {}
void ab_after(void) {}
void ab_side(void) {}
void ab_last(void) {}

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
  cudaStream_t a, n, b, c, m;
  cudaEvent_t fork;
  OK(cudaStreamCreate(&a));
  OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed));
  OK(launch(ab_captured, 132, a));
  OK(cudaStreamDestroy(a));
  OK(cudaStreamCreate(&n));
  printf("reused_origin=%d\n", n == a);
  for (int i = 0; i < 3; i++) OK(launch(ab_after, 132, n));
  OK(cudaStreamSynchronize(n));

  OK(cudaStreamCreate(&b));
  OK(cudaStreamCreate(&c));
  OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  OK(cudaStreamBeginCapture(b, cudaStreamCaptureModeRelaxed));
  OK(cudaEventRecord(fork, b));
  OK(cudaStreamWaitEvent(c, fork, 0));
  OK(cudaStreamDestroy(c));
  OK(cudaStreamCreate(&m));
  printf("reused_joined=%d\n", m == c);
  for (int i = 0; i < 2; i++) OK(launch(ab_side, 264, m));
  OK(cudaStreamSynchronize(m));
  OK(cudaStreamDestroy(m));
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(b, &g);
  printf("end=%d graph=%d\n", (int)e, g != NULL);
  if (g) OK(cudaGraphDestroy(g));
  OK(launch(ab_last, 396, b));
  OK(cudaStreamSynchronize(b));
  OK(cudaEventDestroy(fork));
  OK(cudaStreamDestroy(n));
  OK(cudaStreamDestroy(b));
}

static void many(int n) {
  static cudaStream_t s[1024];
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  if (n < 1 || n > 1024) n = 1024;
  for (int i = 0; i < n; i++) {
    OK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    OK(cudaStreamBeginCapture(s[i], cudaStreamCaptureModeRelaxed));
    OK(cudaLaunchKernel((const void *)ab_captured, g, b, NULL, 0, s[i]));
  }
  for (int i = 0; i < n; i++) {
    cudaGraph_t gr;
    OK(cudaStreamEndCapture(s[i], &gr));
    OK(cudaGraphDestroy(gr));
    OK(cudaStreamDestroy(s[i]));
  }
  OK(cudaDeviceSynchronize());
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "many")) many(atoi(argv[2]));
  else run();
  printf("status=%s\n", failed ? "failed" : "ok");
  return failed ? 1 : 0;
}
