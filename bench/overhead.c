/* Per-call cost of cudaLaunchKernel into the simulated runtime, called two
 * ways in the same process, in alternating rounds:
 *   interposed: through the dynamic symbol (gpuphase's wrapper when the
 *               library is preloaded, the runtime itself otherwise)
 *   direct:     through the runtime's own symbol (dlvsym on libcudart)
 * Prints the median ns/call of each and of their per-round difference.
 * usage: gpuphase-bench-overhead [CALLS_PER_ROUND [ROUNDS [PATHS]]]
 * PATHS "both" (default), or "interposed" alone: what callgrind counts per
 * launch then is the wrapper and the nested driver call under it, without
 * the direct path's driver calls (which gpuphase records on their own).
 * PATHS "stacks": instead, ns per step of a sync-heavy loop (one 1-block
 * launch, then cudaStreamSynchronize; CALLS_PER_ROUND / 10 steps a round),
 * to be compared between runs with GPUPHASE_STACKS=sync and off
 * (overhead.py --stacks). */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_kernel(void) {}

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t,
                                 cudaStream_t);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double round_ns(launch_fn f, long calls, cudaStream_t s) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  uint64_t t0 = now_ns();
  for (long i = 0; i < calls; i++)
    if (f((const void *)bench_kernel, g, b, NULL, 0, s) != cudaSuccess) {
      fprintf(stderr, "launch failed\n");
      exit(1);
    }
  return (double)(now_ns() - t0) / (double)calls;
}

static double sync_loop(long steps, cudaStream_t s) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  uint64_t t0 = now_ns();
  for (long i = 0; i < steps; i++)
    if (cudaLaunchKernel((const void *)bench_kernel, g, b, NULL, 0, s) !=
            cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      exit(1);
  return (double)(now_ns() - t0) / (double)steps;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 100000;
  int rounds = argc > 2 ? atoi(argv[2]) : 11;
  const char *paths = argc > 3 ? argv[3] : "both";
  int both = strcmp(paths, "both") == 0;
  int stacks = strcmp(paths, "stacks") == 0;
  if (calls <= 0 || rounds <= 0 || rounds > 1000 ||
      (!both && !stacks && strcmp(paths, "interposed") != 0)) {
    fprintf(stderr,
            "usage: %s [CALLS_PER_ROUND [ROUNDS [both|interposed|stacks]]]\n",
            argv[0]);
    return 2;
  }
  if (stacks) {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
      return 1;
    sync_loop(calls / 100 + 1, s); /* warm up */
    double loop[1000];
    for (int r = 0; r < rounds; r++) loop[r] = sync_loop(calls / 10 + 1, s);
    printf("loop_ns %.1f\n", median(loop, rounds));
    return 0;
  }
  void *rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
  /* Not dlsym: with the library preloaded, dlsym on the runtime's handle
   * hands out gpuphase's wrapper (as it must for libraries that look CUDA
   * up themselves). dlvsym with the runtime's symbol version is not
   * interposed and gives the runtime's own function. */
  launch_fn direct =
      rt ? (launch_fn)dlvsym(rt, "cudaLaunchKernel", "libcudart.so.13") : NULL;
  launch_fn interposed = cudaLaunchKernel;
  if (!direct) {
    fprintf(stderr, "cannot find the runtime's cudaLaunchKernel\n");
    return 1;
  }
  Dl_info info;
  int preloaded = dladdr((void *)interposed, &info) && info.dli_fname &&
                  strstr(info.dli_fname, "libgpuphase") != NULL;
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  round_ns(interposed, calls / 10 + 1, s); /* warm up both paths */
  if (both) round_ns(direct, calls / 10 + 1, s);
  double *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b),
         *d = calloc((size_t)rounds, sizeof *d);
  if (!a || !b || !d) return 1;
  for (int r = 0; r < rounds; r++) {
    a[r] = round_ns(interposed, calls, s);
    b[r] = both ? round_ns(direct, calls, s) : 0;
    d[r] = a[r] - b[r];
  }
  printf("preloaded %d\ncalls %ld\nrounds %d\n", preloaded,
         calls * rounds * (both ? 2 : 1), rounds);
  printf("interposed_ns %.1f\ndirect_ns %.1f\nadded_ns %.1f\n",
         median(a, rounds), median(b, rounds), median(d, rounds));
  free(a);
  free(b);
  free(d);
  return 0;
}
