/* The workload of the timeline tests (test_timeline.py): two host threads,
 * each with its own non-blocking stream, so the timeline has 2 thread rows
 * and 2 stream rows. Thread 0 launches TL_SMALL x tl_small (1 block: one
 * wave, 10 us) and then one kernel whose name is markup meant to run
 * script, through the driver (the simulation's gpusim_function names it),
 * with TL_HOSTILE_BLOCKS blocks; thread 1 launches TL_BIG x tl_big (264
 * blocks: two waves, 20 us). Each synchronises its stream. Prints "ok". */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define TL_SMALL 40
#define TL_BIG 30
#define TL_HOSTILE_BLOCKS 396 /* three waves: 30 us */
static const char hostile[] =
    "</script><img src=x onerror=\"window.__gp_pwned=1\">";

void tl_small(void) {}
void tl_big(void) {}

typedef CUfunction (*function_fn)(const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);

static int hostile_launch(cudaStream_t s) {
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!drv) drv = dlopen("libcuda.so.1", RTLD_NOW);
  function_fn fn = drv ? (function_fn)dlsym(drv, "gpusim_function") : NULL;
  launch_fn launch = drv ? (launch_fn)dlsym(drv, "cuLaunchKernel") : NULL;
  CUfunction f = fn ? fn(hostile) : NULL;
  return f && launch &&
         launch(f, TL_HOSTILE_BLOCKS, 1, 1, 64, 1, 1, 0, (CUstream)s, NULL,
                NULL) == CUDA_SUCCESS;
}

static void *worker(void *arg) {
  int which = (int)(long)arg, ok = 1;
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return (void *)1;
  dim3 b = {64, 1, 1};
  dim3 g = {which ? 264u : 1u, 1, 1};
  void (*k)(void) = which ? tl_big : tl_small;
  for (int i = 0; ok && i < (which ? TL_BIG : TL_SMALL); i++)
    ok = cudaLaunchKernel((const void *)k, g, b, NULL, 0, s) == cudaSuccess;
  if (ok && !which) ok = hostile_launch(s);
  ok = ok && cudaStreamSynchronize(s) == cudaSuccess &&
       cudaStreamDestroy(s) == cudaSuccess;
  return ok ? NULL : (void *)1;
}

int main(void) {
  pthread_t t[2];
  int bad = 0;
  for (long i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, (void *)i)) return 1;
  for (int i = 0; i < 2; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad |= r != NULL;
  }
  puts(bad ? "failed" : "ok");
  return bad;
}
