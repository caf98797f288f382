/* Call sites (test_stacks.py): blocking calls made from known functions,
 * launches from a third, a deep recursion, a plugin that is dlclosed
 * before the end, a function without unwind information, a second thread,
 * and fork and exec children. Each function that makes a call is noinline
 * and in the symbol table (export_dynamic), so that the test can tell from
 * `nm` which function a frame lies in.
 *   prog_stacks MODE   MODE: main (default), fork, exec, execfail, gaps,
 *   child,
 *   many (5000 syncs from one site, under the fake with GP_FAKEPY_VARY=1:
 *   5000 stacks), py (under
 *   the library with fake Python frames: a sync from inside the stand-in
 *   evaluation loop, then one from a thread without Python) */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else /* no specialised copies either, whose names nm would show apart */
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %d\n", #call, (int)e_);                      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* counts the test expects */
#define N_STREAM_SYNC 5
#define N_DEVICE_SYNC 3
#define N_LAUNCH 640

void k_small(void) {}
int stacks_nounwind_sync(void); /* prog_stacks_nounwind.c */

static cudaStream_t s;
/* keeps the compiler from turning the calls into tail calls */
volatile int sink;

NOINLINE void stacks_sync_stream(void) {
  CHECK(cudaStreamSynchronize(s));
  sink++;
}

NOINLINE void stacks_sync_device(void) {
  CHECK(cudaDeviceSynchronize());
  sink++;
}

NOINLINE void stacks_launch(int n) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  for (int i = 0; i < n; i++)
    CHECK(cudaLaunchKernel((const void *)k_small, g, b, NULL, 0, s));
  sink++;
}

NOINLINE int stacks_recurse(int depth) {
  if (depth == 0) {
    CHECK(cudaDeviceSynchronize());
    return sink;
  }
  int r = stacks_recurse(depth - 1);
  sink++;
  return r + 1;
}

/* The evaluation loop of fake_pyframes.c. */
NOINLINE void stacks_fake_eval(void) {
  stacks_sync_device();
  sink++;
}

static void *thread_main(void *arg) {
  (void)arg;
  stacks_sync_device();
  return NULL;
}

/* By its bare name: the program's run path ($ORIGIN) finds it, which a
 * dlopen wrapper in the preloaded library would not (glibc searches the
 * run path of dlopen's caller). */
static void plugin_n(const char *path, const char *fn, int n, int wait_us) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    exit(1);
  }
  int (*f)(void) = (int (*)(void))dlsym(h, fn);
  for (int i = 0; i < n; i++)
    if (!f || f() != 0) exit(1);
  if (wait_us) usleep((useconds_t)wait_us);
  if (dlclose(h) != 0) exit(1);
}

static void plugin(void) {
  plugin_n("libstacks_plugin.so", "stacks_plugin_sync", 1, 0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "main";
  CHECK(cudaStreamCreate(&s));
  if (!strcmp(mode, "py")) {
    stacks_fake_eval();
    stacks_fake_eval();
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0) return 6;
    pthread_join(t, NULL);
    return 0;
  }
  if (!strcmp(mode, "execfail")) { /* recording starts again after it */
    for (volatile int i = 0; i < 2; i++) { /* one call site: not unrolled */
      stacks_sync_stream();
      if (i == 0) execl("/nonexistent/gpuphase-test", "x", (char *)NULL);
    }
    return 0;
  }
  if (!strcmp(mode, "gaps")) { /* the sampled rule's two occasions */
    stacks_launch(10);
    stacks_sync_device();
    stacks_launch(1); /* the first submission after a blocking call */
    usleep(5000);
    stacks_launch(1); /* the first after 5 ms away from CUDA */
    stacks_launch(1);
    /* a call that captures nothing between the blocking call and the
     * launch: the launch is still the first submission after it */
    stacks_sync_device();
    CHECK(cudaSetDevice(0));
    stacks_launch(1);
    /* 5 ms away, then an event recorded first: the submission that ends
     * the gap */
    cudaEvent_t ev;
    CHECK(cudaEventCreate(&ev));
    usleep(5000);
    CHECK(cudaEventRecord(ev, s));
    return 0;
  }
  if (!strcmp(mode, "reload")) { /* a library where a closed one lay */
    /* the writer has taken the first one's call before the dlclose; the
     * second's calls follow the dlclose at once */
    plugin_n("libstacks_plugin.so", "stacks_plugin_sync", 1, 100000);
    plugin_n("libstacks_plugin2.so", "stacks_plugin2_sync", 3, 0);
    return 0;
  }
  if (!strcmp(mode, "many")) { /* with GP_FAKEPY_VARY=1: a new stack each */
    for (int i = 0; i < 5000; i++) stacks_fake_eval();
    return 0;
  }
  if (!strcmp(mode, "child")) { /* the exec'd child */
    stacks_sync_stream();
    return 0;
  }
  if (!strcmp(mode, "fork") || !strcmp(mode, "exec")) {
    stacks_sync_device();
    pid_t pid = fork();
    if (pid == 0) {
      if (!strcmp(mode, "exec")) {
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(3);
      }
      stacks_sync_stream();
      exit(0);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      return 4;
    return 0;
  }
  stacks_launch(N_LAUNCH);
  for (int i = 0; i < N_STREAM_SYNC; i++) stacks_sync_stream();
  for (int i = 0; i < N_DEVICE_SYNC; i++) stacks_sync_device();
  stacks_recurse(200);
  plugin();
  if (stacks_nounwind_sync() != 0) return 5;
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, NULL) != 0) return 6;
  pthread_join(t, NULL);
  return 0;
}
