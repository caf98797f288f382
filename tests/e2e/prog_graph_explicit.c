/* A program that builds its step as an explicit CUDA graph: a graph
 * allocation, a memset of it, then two branches (kernel ge_a and a 1 MiB
 * copy out of the allocation; kernel ge_b and a host callback), joined by
 * the free of the allocation. Instantiated, uploaded, launched 10 times;
 * after the 5th launch kernel ge_a is given 396 blocks instead of 132.
 * Prints what it checked (same with and without the profiler).
 *
 * With argument "unfreed": a graph of one 1 MiB allocation node and no
 * free node, launched; 20 ms later the program frees the allocation
 * (cudaFree); 20 ms later it launches the graph again (CUDA allocates
 * again); 20 ms later it destroys the executable graph (the allocation
 * stays: the program must free it); 20 ms later cudaFree; 5 ms later the
 * end. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void ge_a(void) {}
void ge_b(void) {}

#define LAUNCHES 10
#define MIB (1u << 20)

static int failed, host_calls;
#define OK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      printf("error=%s at=%s\n", cudaGetErrorName(e_), #call);                 \
      failed = 1;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

static void CUDART_CB on_host(void *arg) {
  (void)arg;
  host_calls++;
}

static struct cudaKernelNodeParams kernel(void (*f)(void), unsigned blocks) {
  struct cudaKernelNodeParams p = {0};
  p.func = (void *)f;
  p.gridDim = (dim3){blocks, 1, 1};
  p.blockDim = (dim3){128, 1, 1};
  return p;
}

/* A graph allocation of MIB bytes on device 0 (its address is set when
 * the node is added). */
static struct cudaMemAllocNodeParams alloc_params(void) {
  struct cudaMemAllocNodeParams ap = {0};
  ap.poolProps.allocType = cudaMemAllocationTypePinned;
  ap.poolProps.location.type = cudaMemLocationTypeDevice;
  ap.poolProps.location.id = 0;
  ap.bytesize = MIB;
  return ap;
}

static size_t free_mem(void) {
  size_t f = 0, t = 0;
  cudaMemGetInfo(&f, &t);
  return f;
}

static void run(void) {
  cudaStream_t s;
  void *out;
  OK(cudaStreamCreate(&s));
  OK(cudaMalloc(&out, MIB));
  size_t before = free_mem();

  cudaGraph_t g;
  cudaGraphNode_t alloc, set, ka, copy, kb, host, release;
  OK(cudaGraphCreate(&g, 0));
  struct cudaMemAllocNodeParams ap = alloc_params();
  OK(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &ap));
  struct cudaMemsetParams sp = {
      .dst = ap.dptr, .value = 0, .elementSize = 1, .width = 1000, .height = 1};
  OK(cudaGraphAddMemsetNode(&set, g, &alloc, 1, &sp));
  struct cudaKernelNodeParams pa = kernel(ge_a, 132), pb = kernel(ge_b, 264);
  OK(cudaGraphAddKernelNode(&ka, g, &set, 1, &pa));
  OK(cudaGraphAddMemcpyNode1D(&copy, g, &ka, 1, out, ap.dptr, MIB,
                              cudaMemcpyDeviceToDevice));
  OK(cudaGraphAddKernelNode(&kb, g, &set, 1, &pb));
  struct cudaHostNodeParams hp = {on_host, NULL};
  OK(cudaGraphAddHostNode(&host, g, &kb, 1, &hp));
  cudaGraphNode_t ends[2] = {copy, host};
  OK(cudaGraphAddMemFreeNode(&release, g, ends, 2, ap.dptr));
  size_t nodes = 0;
  OK(cudaGraphGetNodes(g, NULL, &nodes));
  printf("nodes=%zu\n", nodes);

  cudaGraphExec_t exec;
  OK(cudaGraphInstantiate(&exec, g, 0));
  OK(cudaGraphUpload(exec, s));
  for (int i = 0; i < LAUNCHES; i++) {
    if (i == LAUNCHES / 2) {
      struct cudaKernelNodeParams wide = kernel(ge_a, 396);
      OK(cudaGraphExecKernelNodeSetParams(exec, ka, &wide));
    }
    OK(cudaGraphLaunch(exec, s));
  }
  OK(cudaStreamSynchronize(s));
  printf("launches=%d host_calls=%d\n", LAUNCHES, host_calls);
  printf("graph_memory_released=%s\n", free_mem() == before ? "yes" : "no");

  OK(cudaGraphExecDestroy(exec));
  OK(cudaGraphDestroy(g));
  OK(cudaFree(out));
  OK(cudaStreamDestroy(s));
}

static void pause_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static void unfreed(void) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaGraphNode_t alloc;
  OK(cudaGraphCreate(&g, 0));
  struct cudaMemAllocNodeParams ap = alloc_params();
  OK(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &ap));
  OK(cudaGraphInstantiate(&exec, g, 0));
  OK(cudaGraphLaunch(exec, 0));
  OK(cudaStreamSynchronize(0));
  pause_ms(20);
  OK(cudaFree(ap.dptr));
  pause_ms(20);
  OK(cudaGraphLaunch(exec, 0));
  OK(cudaStreamSynchronize(0));
  pause_ms(20);
  OK(cudaGraphExecDestroy(exec));
  OK(cudaGraphDestroy(g));
  pause_ms(20);
  OK(cudaFree(ap.dptr));
  pause_ms(5);
  OK(cudaDeviceSynchronize());
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unfreed") == 0) {
    unfreed();
    printf("status=%s\n", failed ? "failed" : "ok");
    return failed ? 1 : 0;
  }
  run();
  printf("status=%s\n", failed ? "failed" : "ok");
  return failed ? 1 : 0;
}
