/* A pipeline over four streams, as a data-loading or inference server
 * runs one: on each stream and in each of 3 rounds, an upload from pinned
 * memory, a kernel, a host function (cudaLaunchHostFunc) that counts the
 * chunk, a download and a stream callback (cudaStreamAddCallback) that
 * checks it; an event recorded on each stream after its kernel is waited
 * for by the next stream, and every stream is synchronised at the end of
 * a round. Prints the counts the host functions saw. Model figures
 * (test_fidelity.py): 12 kernels of 264 blocks, 24 copies of 1 MiB (12
 * each way), 12 + 12 host functions, 12 event records and 11 waits. */
#include <cuda_runtime_api.h>
#include <stdio.h>

void pipe_stage(void);
void pipe_stage(void) {}

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

#define STREAMS 4
#define ROUNDS 3
#define CHUNK (1u << 20)

static int launched[STREAMS], checked[STREAMS];

static void CUDART_CB count_chunk(void *p) {
  launched[(int)(long)p]++;
}

static void CUDART_CB check_chunk(cudaStream_t s, cudaError_t status,
                                  void *p) {
  (void)s;
  if (status == cudaSuccess) checked[(int)(long)p]++;
}

int main(void) {
  cudaStream_t st[STREAMS];
  cudaEvent_t ev[STREAMS];
  void *dev[STREAMS], *host[STREAMS];
  for (int i = 0; i < STREAMS; i++) {
    CHECK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    CHECK(cudaMalloc(&dev[i], CHUNK));
    CHECK(cudaMallocHost(&host[i], CHUNK));
  }
  dim3 grid = {264, 1, 1}, block = {128, 1, 1};
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < STREAMS; i++) {
      CHECK(cudaMemcpyAsync(dev[i], host[i], CHUNK, cudaMemcpyHostToDevice,
                            st[i]));
      if (r > 0 || i > 0)
        CHECK(cudaStreamWaitEvent(st[i], ev[(i + STREAMS - 1) % STREAMS], 0));
      CHECK(cudaLaunchKernel((const void *)pipe_stage, grid, block, NULL, 0,
                             st[i]));
      CHECK(cudaEventRecord(ev[i], st[i]));
      CHECK(cudaLaunchHostFunc(st[i], count_chunk, (void *)(long)i));
      CHECK(cudaMemcpyAsync(host[i], dev[i], CHUNK, cudaMemcpyDeviceToHost,
                            st[i]));
      CHECK(cudaStreamAddCallback(st[i], check_chunk, (void *)(long)i, 0));
    }
    for (int i = 0; i < STREAMS; i++)
      CHECK(cudaStreamSynchronize(st[i]));
  }
  for (int i = 0; i < STREAMS; i++) {
    printf("stream%d launched=%d checked=%d\n", i, launched[i], checked[i]);
    CHECK(cudaEventDestroy(ev[i]));
    CHECK(cudaStreamDestroy(st[i]));
    CHECK(cudaFree(dev[i]));
    CHECK(cudaFreeHost(host[i]));
  }
  return 0;
}
