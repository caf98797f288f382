/* Threads under the shim: two waves of THREADS threads, each creating its
 * own non-blocking stream, making LAUNCHES launches of a 132-block kernel,
 * synchronising its stream and exiting; the second wave starts after the
 * first has exited and a pause (200 ms: the test sets a 10 ms flush
 * interval) has let the writer drain and release their rings, so the second
 * wave reuses them. Each worker's launches are inside a range "worker"
 * (gpuphase_range_push, found with dlsym: the preloaded library's, when
 * there is one), so the exports have a ranges track per thread.
 * Prints "ok" when every call succeeded. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 8
#define LAUNCHES 2000

void k_thread(void) {}

typedef int (*push_fn)(const char *);
typedef int (*pop_fn)(void);

static void *worker(void *arg) {
  (void)arg;
  push_fn push = (push_fn)dlsym(RTLD_DEFAULT, "gpuphase_range_push");
  pop_fn pop = (pop_fn)dlsym(RTLD_DEFAULT, "gpuphase_range_pop");
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    return (void *)1;
  dim3 g = {132, 1, 1}, b = {64, 1, 1};
  if (push) push("worker");
  for (int i = 0; i < LAUNCHES; i++)
    if (cudaLaunchKernel((const void *)k_thread, g, b, NULL, 0, s) !=
        cudaSuccess)
      return (void *)1;
  if (pop) pop();
  if (cudaStreamSynchronize(s) != cudaSuccess ||
      cudaStreamDestroy(s) != cudaSuccess)
    return (void *)1;
  return NULL;
}

int main(void) {
  int bad = 0;
  for (int wave = 0; wave < 2; wave++) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
      if (pthread_create(&t[i], NULL, worker, NULL)) return 1;
    for (int i = 0; i < THREADS; i++) {
      void *r;
      pthread_join(t[i], &r);
      bad |= r != NULL;
    }
    struct timespec pause = {0, 200000000};
    nanosleep(&pause, NULL);
  }
  puts(bad ? "failed" : "ok");
  return bad;
}
