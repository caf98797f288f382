/* Workloads whose report test_report.py checks against the simulated GPU's
 * timing model (tests/simcuda/README.md, default model: 132 SMs, 10 us per
 * wave of blocks, 25 B/ns PCIe, 2000 ns per copy). Chosen by argv[1];
 * argv[2], where given, overrides the number of steps, argv[3] the scale
 * of the time a step takes.
 *
 *   compute [200]   back-to-back 1320-block kernels (10 waves = 100 us),
 *                   one stream, one final cudaStreamSynchronize
 *   starved [50 [1]]  per step: nanosleep 2 x SCALE ms, one kernel of
 *                   SCALE x 13200 blocks (100 waves = SCALE ms),
 *                   cudaStreamSynchronize
 *   phases [50 [1]] starved, with the sleep in a "data" range and the
 *                   launch + synchronisation in a "compute" range
 *   transfer [20]   per step: pinned 100e6 B H2D cudaMemcpyAsync, one
 *                   1-block kernel (10 us), cudaStreamSynchronize
 *   launch [1000]   1-block kernels (10 us), one final synchronisation;
 *                   run with GPUSIM_API_NS larger than 10 us
 *   burst [1000]    launch, with every other thread of the process (the
 *                   profiler's writer) moved onto this thread's CPU at
 *                   SCHED_IDLE first, so that nothing drains the rings
 *                   while the launches run; prints "starved N" (threads)
 *   pageable [20]   cudaMemcpyAsync of 25e6 B from malloc'ed memory
 *   pageable_small [200]  per step: cudaMemcpyAsync of 4096 B from
 *                   malloc'ed memory and a 1-block kernel (10 us); then
 *                   cudaStreamSynchronize
 *   reset [10]      cudaMalloc of 64 MiB, N 10-wave kernels (100 us each)
 *                   on a stream, cudaDeviceReset (which waits for them and
 *                   frees everything), cudaMalloc of 16 MiB, one 10-wave
 *                   kernel on the default stream, cudaDeviceSynchronize;
 *                   before the reset, cudaStreamAttachMemAsync and
 *                   cudaGraphUpload (of no graph), whose errors the
 *                   simulator returns and the program ignores
 *   fork [30]       30 compute kernels, then a child runs 20 and exits;
 *                   the parent waits for it and prints "child PID"
 *   items [5]       per step i (from 0), in a "step" range:
 *                   gpuphase_step_items(i + 1), one 1-block kernel,
 *                   gpuphase_step_items(100), cudaStreamSynchronize,
 *                   gpuphase_step_items(1000 * (i + 1)); prints
 *                   "before cuda: R" (the return of a call made before
 *                   the first CUDA call) and "items recorded N" (calls
 *                   that returned 0)
 *   prerange [5]    before the first CUDA call: a range "gone" pushed and
 *                   popped, then "train" pushed and 2 ms slept; then N
 *                   1-block kernels, each synchronised; "train" popped
 *                   after them; prints "pre: A B C" (the three returns)
 *
 * Every scenario first creates its stream: that first CUDA call also
 * initialises the runtime, so the loop itself runs on a warm runtime.
 *
 * Host time is real time, which the model cannot predict (a sleeping
 * thread wakes up late, a busy machine preempts). So the program measures
 * it on the trace's clock and prints, last, "host span=N slept=N active=N":
 * span from before the first to after the last CUDA call, slept the sum of
 * the starved steps' sleeps, active the sum of their launch-to-return
 * intervals (each including its phase push and pop). */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuphase/gpuphase.h"

/* The kernels: launched by address and named by their dynamic symbol.
 * Distinct bodies keep the linker from folding them into one. */
volatile int scen_sink;
void k_wave10(void) {
  scen_sink = 1;
}
void k_step(void) {
  scen_sink = 2;
}
void k_tiny(void) {
  scen_sink = 3;
}

#define WAVE10_BLOCKS 1320u /* 10 waves of 132 SMs: 100 us */
#define MS_BLOCKS 13200u    /* 100 waves: 1 ms */
static unsigned long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static unsigned long long slept_ns, active_ns;

#define TRANSFER_BYTES 100000000u
#define PAGEABLE_BYTES 25000000u

static int ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    fprintf(stderr, "prog_scenarios: %s failed: %d\n", what, (int)e);
  return e == cudaSuccess;
}

static int launch(void (*k)(void), unsigned blocks, cudaStream_t s) {
  dim3 grid = {blocks, 1, 1}, block = {128, 1, 1};
  return ok(cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s),
            "cudaLaunchKernel");
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int kernels_then_sync(cudaStream_t s, void (*k)(void), unsigned blocks,
                             int n) {
  for (int i = 0; i < n; i++)
    if (!launch(k, blocks, s)) return 0;
  return ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

static int starved(cudaStream_t s, int steps, int scale, int with_phases) {
  for (int i = 0; i < steps; i++) {
    unsigned long long t0 = now_ns();
    if (with_phases) gpuphase_range_push("data");
    sleep_us(2000L * scale);
    if (with_phases) gpuphase_range_pop();
    unsigned long long t1 = now_ns();
    if (with_phases) gpuphase_range_push("compute");
    if (!kernels_then_sync(s, k_step, MS_BLOCKS * (unsigned)scale, 1)) return 0;
    if (with_phases) gpuphase_range_pop();
    unsigned long long t2 = now_ns();
    slept_ns += t1 - t0;
    active_ns += t2 - t1;
  }
  return 1;
}

static int transfer(cudaStream_t s, int steps) {
  void *dev, *pinned;
  if (!ok(cudaMalloc(&dev, TRANSFER_BYTES), "cudaMalloc") ||
      !ok(cudaMallocHost(&pinned, TRANSFER_BYTES), "cudaMallocHost"))
    return 0;
  for (int i = 0; i < steps; i++)
    if (!ok(cudaMemcpyAsync(dev, pinned, TRANSFER_BYTES,
                            cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync") ||
        !kernels_then_sync(s, k_tiny, 1, 1))
      return 0;
  return ok(cudaFreeHost(pinned), "cudaFreeHost") &&
         ok(cudaFree(dev), "cudaFree");
}

static int pageable(cudaStream_t s, int steps) {
  void *dev;
  char *host = malloc(PAGEABLE_BYTES); /* never touched: no data moves */
  if (!host || !ok(cudaMalloc(&dev, PAGEABLE_BYTES), "cudaMalloc")) return 0;
  for (int i = 0; i < steps; i++)
    if (!ok(cudaMemcpyAsync(dev, host, PAGEABLE_BYTES, cudaMemcpyHostToDevice,
                            s),
            "cudaMemcpyAsync"))
      return 0;
  free(host);
  return ok(cudaFree(dev), "cudaFree");
}

static int pageable_small(cudaStream_t s, int steps) {
  void *dev;
  char *host = malloc(4096);
  if (!host || !ok(cudaMalloc(&dev, 4096), "cudaMalloc")) return 0;
  memset(host, 1, 4096);
  for (int i = 0; i < steps; i++)
    if (!ok(cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync") ||
        !launch(k_tiny, 1, s))
      return 0;
  free(host);
  return ok(cudaStreamSynchronize(s), "cudaStreamSynchronize") &&
         ok(cudaFree(dev), "cudaFree");
}

static int reset(cudaStream_t s, int steps) {
  void *a, *b;
  if (!ok(cudaMalloc(&a, 64u << 20), "cudaMalloc")) return 0;
  for (int i = 0; i < steps; i++)
    if (!launch(k_wave10, WAVE10_BLOCKS, s)) return 0;
  (void)cudaStreamAttachMemAsync(s, a, 0, cudaMemAttachSingle);
  (void)cudaGraphUpload(NULL, s);
  if (!ok(cudaDeviceReset(), "cudaDeviceReset") ||
      !ok(cudaMalloc(&b, 16u << 20), "cudaMalloc") ||
      !launch(k_wave10, WAVE10_BLOCKS, 0))
    return 0;
  return ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

/* The child's own CUDA work goes to its own trace. */
static int forked(cudaStream_t s, int steps) {
  if (!kernels_then_sync(s, k_wave10, WAVE10_BLOCKS, steps)) return 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0)
    exit(kernels_then_sync(s, k_wave10, WAVE10_BLOCKS, 20) ? 0 : 1);
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
    return 0;
  printf("child %d\n", (int)pid);
  return 1;
}

static int items(cudaStream_t s, int steps) {
  int recorded = 0;
  for (int i = 0; i < steps; i++) {
    gpuphase_range_push("step");
    recorded += gpuphase_step_items((uint64_t)i + 1) == 0;
    if (!launch(k_tiny, 1, s)) return 0;
    recorded += gpuphase_step_items(100) == 0;
    if (!ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) return 0;
    recorded += gpuphase_step_items(1000 * ((uint64_t)i + 1)) == 0;
    gpuphase_range_pop();
  }
  printf("items recorded %d\n", recorded);
  return 1;
}

/* Every other thread onto this thread's CPU at SCHED_IDLE (allowed without
 * privileges): they run only when this one sleeps. Returns how many, or
 * -1. */
static int starve_others(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) return -1;
  pid_t self = (pid_t)syscall(SYS_gettid);
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  struct sched_param idle = {0};
  while (n >= 0 && (e = readdir(d)) != NULL) {
    pid_t tid = (pid_t)atoi(e->d_name);
    if (tid <= 0 || tid == self) continue;
    if (sched_setaffinity(tid, sizeof one, &one) != 0 ||
        sched_setscheduler(tid, SCHED_IDLE, &idle) != 0)
      n = -1;
    else
      n++;
  }
  closedir(d);
  return n;
}

static int scenario(const char *mode, cudaStream_t s, int steps, int scale) {
  if (!strcmp(mode, "compute"))
    return kernels_then_sync(s, k_wave10, WAVE10_BLOCKS, steps ? steps : 200);
  if (!strcmp(mode, "starved")) return starved(s, steps ? steps : 50, scale, 0);
  if (!strcmp(mode, "phases")) return starved(s, steps ? steps : 50, scale, 1);
  if (!strcmp(mode, "transfer")) return transfer(s, steps ? steps : 20);
  if (!strcmp(mode, "launch"))
    return kernels_then_sync(s, k_tiny, 1, steps ? steps : 1000);
  if (!strcmp(mode, "burst")) {
    int n = starve_others();
    if (n < 0) {
      perror("prog_scenarios: starving the other threads");
      return 0;
    }
    printf("starved %d\n", n);
    return kernels_then_sync(s, k_tiny, 1, steps ? steps : 1000);
  }
  if (!strcmp(mode, "pageable")) return pageable(s, steps ? steps : 20);
  if (!strcmp(mode, "pageable_small"))
    return pageable_small(s, steps ? steps : 200);
  if (!strcmp(mode, "reset")) return reset(s, steps ? steps : 10);
  if (!strcmp(mode, "fork")) return forked(s, steps ? steps : 30);
  if (!strcmp(mode, "items")) return items(s, steps ? steps : 5);
  if (!strcmp(mode, "prerange")) {
    for (int i = 0; i < (steps ? steps : 5); i++) {
      if (!launch(k_tiny, 1, s) ||
          !ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"))
        return 0;
    }
    return gpuphase_range_pop() == 0;
  }
  fprintf(stderr, "prog_scenarios: unknown scenario '%s'\n", mode);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCENARIO [STEPS [SCALE]]\n", argv[0]);
    return 2;
  }
  int steps = argc > 2 ? atoi(argv[2]) : 0;
  int scale = argc > 3 ? atoi(argv[3]) : 1;
  if (steps < 0 || scale < 1) {
    fprintf(stderr, "prog_scenarios: bad STEPS or SCALE\n");
    return 2;
  }
  cudaStream_t s;
  /* not recorded: the profiler starts at the first CUDA call */
  if (!strcmp(argv[1], "items"))
    printf("before cuda: %d\n", gpuphase_step_items(7));
  if (!strcmp(argv[1], "prerange")) { /* kept until the first CUDA call */
    int a = gpuphase_range_push("gone"), b = gpuphase_range_pop(),
        c = gpuphase_range_push("train");
    printf("pre: %d %d %d\n", a, b, c);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  unsigned long long start = now_ns();
  if (!ok(cudaStreamCreate(&s), "cudaStreamCreate")) return 1;
  if (!scenario(argv[1], s, steps, scale)) return 1;
  /* a reset destroyed the stream with everything else */
  if (strcmp(argv[1], "reset") != 0 && !ok(cudaStreamDestroy(s), "cudaStreamDestroy"))
    return 1;
  printf("host span=%llu slept=%llu active=%llu\n", now_ns() - start, slept_ns,
         active_ns);
  return 0;
}
