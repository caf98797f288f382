/* A training-like loop of N steps on the simulated GPU, for the step and
 * compare tests. Each step: open the step mark, sleep on the host (the
 * "data loading"), launch K kernels of BLOCKS blocks on one stream, make P
 * synchronous host-to-device cudaMemcpy calls from malloc'ed (pageable)
 * memory, cudaStreamSynchronize, report items, close the mark.
 *
 *   e2e-prog-steps [-n STEPS] [-s SLEEP_MS] [-k KERNELS] [-b BLOCKS]
 *                  [-p COPIES] [-B BYTES] [-m MARK] [-i ITEMS] [-x] [-r]
 *                  [-y]
 *
 *   -n STEPS    steps (20)
 *   -s MS       host sleep per step, ms, fractions allowed (0)
 *   -k K        kernel launches per step (2), each named k_step
 *   -b BLOCKS   blocks per kernel (13200: 100 waves of 132 SMs = 1 ms with
 *               the default model, GPUSIM_WAVE_NS x 100 in general)
 *   -p P        pageable H2D copies per step (0)
 *   -B BYTES    bytes per copy (1000000: 2000 + 40000 ns at 25 B/ns)
 *   -m MARK     how a step is marked:
 *                 range     gpuphase_range_push("step") / pop (default)
 *                 nvtx      nvtxRangePushA("step") / nvtxRangePop
 *                 profiler  nvtxRangePushA("ProfilerStep#I"), I from 0,
 *                           as PyTorch's profiler names its steps
 *                 two       two top-level gpuphase ranges a step, no
 *                           "step": "data" around the sleep, "compute"
 *                           around the launches, copies and the sync
 *                 launches  gpuphase_range_push("step") around the
 *                           kernel launches alone (the copies and the
 *                           synchronisation after it)
 *                 none      no ranges at all
 *   -i ITEMS    gpuphase_step_items(ITEMS) once a step (not called)
 *   -x          also launch one 1-block kernel k_extra a step (10 us)
 *   -r          name the step kernel k_step_renamed instead of k_step
 *   -y          no cudaStreamSynchronize in the step (the loop runs ahead
 *               of the GPU as far as the host sleep lets it)
 *
 * NVTX marks need NVTX_INJECTION64_PATH (gpuphase run sets it). Before the
 * loop the program creates its stream and device buffer, so that runtime
 * initialisation falls outside the steps. Last line of output:
 * "steps=N slept=NS" (slept: host sleep actually measured, ns). */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuphase/gpuphase.h"

/* Kernels are launched by address and named by their dynamic symbol;
 * distinct bodies keep the linker from folding them. */
volatile int steps_sink;
void k_step(void) {
  steps_sink = 1;
}
void k_step_renamed(void) {
  steps_sink = 2;
}
void k_extra(void) {
  steps_sink = 3;
}

struct cfg {
  long steps, kernels, copies;
  double sleep_ms;
  unsigned blocks;
  size_t bytes;
  const char *mark;
  long items;
  int extra, renamed, nosync;
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) fprintf(stderr, "prog_steps: %s failed: %d\n", what, (int)e);
  return e == cudaSuccess;
}

static int launch(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 grid = {blocks, 1, 1}, block = {128, 1, 1};
  return ok(cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s),
            "cudaLaunchKernel");
}

static uint64_t host_sleep(double ms) {
  if (ms <= 0) return 0;
  uint64_t t0 = now_ns(), ns = (uint64_t)(ms * 1e6);
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
  return now_ns() - t0;
}

/* Opens (open = 1) or closes the mark of step i for part "data" (0) or
 * "compute" (1); only MARK two marks the parts. */
static void mark(const struct cfg *c, long i, int part, int open) {
  const char *m = c->mark;
  if (!strcmp(m, "two")) {
    if (open)
      gpuphase_range_push(part ? "compute" : "data");
    else
      gpuphase_range_pop();
    return;
  }
  if ((part == 0) != open) return; /* a step opens before data, closes after compute */
  if (!strcmp(m, "range")) {
    if (open)
      gpuphase_range_push("step");
    else
      gpuphase_range_pop();
  } else if (!strcmp(m, "nvtx") || !strcmp(m, "profiler")) {
    char name[64];
    snprintf(name, sizeof name, "ProfilerStep#%ld", i);
    if (open)
      nvtxRangePushA(strcmp(m, "nvtx") ? name : "step");
    else
      nvtxRangePop();
  }
}

static int step(const struct cfg *c, long i, cudaStream_t s, void *dev,
                void *host, uint64_t *slept) {
  mark(c, i, 0, 1);
  *slept += host_sleep(c->sleep_ms);
  mark(c, i, 0, 0);
  mark(c, i, 1, 1);
  int around = !strcmp(c->mark, "launches");
  if (around) gpuphase_range_push("step");
  for (long k = 0; k < c->kernels; k++)
    if (!launch(c->renamed ? k_step_renamed : k_step, c->blocks, s)) return -1;
  if (c->extra && !launch(k_extra, 1, s)) return -1;
  if (around) gpuphase_range_pop();
  for (long p = 0; p < c->copies; p++)
    if (!ok(cudaMemcpy(dev, host, c->bytes, cudaMemcpyHostToDevice), "cudaMemcpy"))
      return -1;
  if (!c->nosync && !ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
    return -1;
  if (c->items >= 0) gpuphase_step_items((uint64_t)c->items);
  mark(c, i, 1, 0);
  return 0;
}

static int parse(int argc, char **argv, struct cfg *c) {
  int o;
  while ((o = getopt(argc, argv, "n:s:k:b:p:B:m:i:xry")) != -1) {
    switch (o) {
    case 'n': c->steps = atol(optarg); break;
    case 's': c->sleep_ms = atof(optarg); break;
    case 'k': c->kernels = atol(optarg); break;
    case 'b': c->blocks = (unsigned)atol(optarg); break;
    case 'p': c->copies = atol(optarg); break;
    case 'B': c->bytes = (size_t)atol(optarg); break;
    case 'm': c->mark = optarg; break;
    case 'i': c->items = atol(optarg); break;
    case 'x': c->extra = 1; break;
    case 'r': c->renamed = 1; break;
    case 'y': c->nosync = 1; break;
    default: return -1;
    }
  }
  static const char *const marks[] = {"range", "nvtx", "profiler", "two",
                                      "launches", "none"};
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
    if (!strcmp(c->mark, marks[i])) return optind == argc && c->blocks ? 0 : -1;
  return -1;
}

int main(int argc, char **argv) {
  struct cfg c = {20, 2, 0, 0, 13200, 1000000, "range", -1, 0, 0, 0};
  if (parse(argc, argv, &c) < 0) {
    fprintf(stderr, "usage: see the comment at the top of prog_steps.c\n");
    return 2;
  }
  cudaStream_t s;
  void *dev = NULL, *host = malloc(c.bytes ? c.bytes : 1);
  if (!host || !ok(cudaStreamCreate(&s), "cudaStreamCreate") ||
      !ok(cudaMalloc(&dev, c.bytes ? c.bytes : 1), "cudaMalloc"))
    return 1;
  memset(host, 1, c.bytes);
  uint64_t slept = 0;
  for (long i = 0; i < c.steps; i++)
    if (step(&c, i, s, dev, host, &slept) < 0) return 1;
  if (!ok(cudaFree(dev), "cudaFree") || !ok(cudaStreamDestroy(s), "cudaStreamDestroy"))
    return 1;
  free(host);
  printf("steps=%ld slept=%llu\n", c.steps, (unsigned long long)slept);
  return 0;
}
