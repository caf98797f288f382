/* Thread names under the shim (test_record.py thread_names):
 *   - 16 short-lived threads, each named "cb-N" with pthread_setname_np,
 *     make one CUDA call and exit at once (as callback threads do);
 *   - a thread named "w-first" makes a call, renames itself "w-second"
 *     with prctl(PR_SET_NAME), makes another, waits while main renames it
 *     "w-third" (pthread_setname_np on another thread) and makes a third;
 *     it pauses 200 ms after each call, so that the writer (flushing every
 *     10 ms in the test) has announced each name before the next rename.
 * And prctl passes other options through unchanged: PR_GET_DUMPABLE gives
 * what the system call gives, an unknown option -1 with errno EINVAL.
 * Prints "ok" when every call succeeded and every rename returned 0. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHORT 16

static int failed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void call(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
    failed = 1;
}

static void *short_lived(void *arg) {
  char name[16];
  snprintf(name, sizeof name, "cb-%d", (int)(long)arg);
  if (pthread_setname_np(pthread_self(), name) != 0) failed = 1;
  call();
  return NULL;
}

static void wait_stage(int s) {
  pthread_mutex_lock(&mu);
  while (stage < s) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void set_stage(int s) {
  pthread_mutex_lock(&mu);
  stage = s;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void *renamed(void *arg) {
  (void)arg;
  if (pthread_setname_np(pthread_self(), "w-first") != 0) failed = 1;
  call();
  usleep(200000);
  if (prctl(PR_SET_NAME, "w-second", 0, 0, 0) != 0) failed = 1;
  call();
  usleep(200000);
  set_stage(1);
  wait_stage(2);
  call();
  return NULL;
}

int main(void) {
  call();
  if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) !=
      syscall(SYS_prctl, PR_GET_DUMPABLE, 0, 0, 0, 0))
    failed = 1;
  errno = 0;
  if (prctl(-1, 0, 0, 0, 0) != -1 || errno != EINVAL) failed = 1;
  pthread_t t[SHORT], w;
  for (long i = 0; i < SHORT; i++)
    if (pthread_create(&t[i], NULL, short_lived, (void *)i) != 0) return 1;
  for (int i = 0; i < SHORT; i++) pthread_join(t[i], NULL);
  if (pthread_create(&w, NULL, renamed, NULL) != 0) return 1;
  wait_stage(1);
  if (pthread_setname_np(w, "w-third") != 0) failed = 1;
  set_stage(2);
  pthread_join(w, NULL);
  puts(failed ? "failed" : "ok");
  return failed;
}
