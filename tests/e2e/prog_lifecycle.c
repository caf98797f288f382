/* Lifecycle scenarios, chosen by argv[1]:
 *   fork     parent and child both use CUDA; the child writes its own file
 *   forknocuda  the child never calls CUDA (must write nothing)
 *   exit N   some CUDA work, then exit(N)
 *   _exit N  some CUDA work, then _exit(N)
 *   quick_exit N  some CUDA work, then quick_exit(N)
 *   abort    some CUDA work, then abort()
 *   sleep N  N launches, then sleep forever (killed by the test)
 *   errno    checks that errno and return values pass through
 *   exec     CUDA work, then execve of itself ("after") with an environment
 *            that has neither LD_PRELOAD nor GPUPHASE_*
 *   spawn    CUDA work, then posix_spawn of itself ("after") likewise
 *   fexecve  5 launches, then fexecve of itself ("after") by a descriptor,
 *            with that environment
 *   execveat 5 launches, then execveat of itself ("after"), likewise
 *   after    CUDA work (2 launches)
 *   forkchain N [T S]  a chain of N processes: each one's first CUDA call
 *            starts the profiler and right after it, while the profiler's
 *            threads write their first records, it forks the next one.
 *            Each waits for its child at most T + S x (the levels below
 *            the child) seconds from the fork (default T 5, S 0.3), and S
 *            less than its parent waits for it; past that it prints
 *            "hung: child PID at level L of N", kills the child and fails
 *            (exit 2). Prints "chain N" at the top.
 *   none     never calls CUDA
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void k_life(void) {}

static int work(int launches) {
  dim3 g = {132, 1, 1}, b = {64, 1, 1};
  for (int i = 0; i < launches; i++)
    if (cudaLaunchKernel((const void *)k_life, g, b, NULL, 0, 0) != cudaSuccess)
      return 1;
  return cudaDeviceSynchronize() != cudaSuccess;
}

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Level `level` (0 at the top) of a chain of `n` processes. A level waits
 * for its child until `limit` at most (its parent's limit, less a margin):
 * the parent of a hung process tells it and kills it, and no process is
 * killed while it still waits for its own child. */
static int fork_chain(int level, int n, double t, double per_level, double limit) {
  if (work(2)) return 1;
  if (level + 1 >= n) return 0;
  fflush(stdout);
  double until = mono_s() + t + per_level * (n - 2 - level);
  if (until > limit) until = limit;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) exit(fork_chain(level + 1, n, t, per_level, until - per_level));
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0) return 1;
    if (mono_s() > until) {
      fprintf(stderr, "hung: child %d at level %d of %d\n", (int)pid, level + 1, n);
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return 2;
    }
    usleep(2000);
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st)) return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  return work(1);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "fork") || !strcmp(mode, "forknocuda")) {
    int cuda_in_child = !strcmp(mode, "fork");
    if (work(3)) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      if (cuda_in_child && work(5)) _exit(1);
      exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
      return 1;
    printf("child %d\n", (int)pid);
    return work(2);
  }
  if (!strcmp(mode, "forkchain")) {
    int r = fork_chain(0, n, argc > 3 ? atof(argv[3]) : 5.0,
                       argc > 4 ? atof(argv[4]) : 0.3, 1e300);
    if (r == 0) printf("chain %d\n", n);
    return r;
  }
  if (!strcmp(mode, "exec") || !strcmp(mode, "spawn")) {
    if (work(3)) return 1;
    char *args[] = {argv[0], "after", NULL};
    char *bare_env[] = {"PATH=/usr/bin:/bin", NULL};
    fflush(stdout);
    if (!strcmp(mode, "exec")) {
      execve("/proc/self/exe", args, bare_env);
      return 1;
    }
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, bare_env) != 0)
      return 1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
      return 1;
    printf("child %d\n", (int)pid);
    return 0;
  }
  if (!strcmp(mode, "fexecve") || !strcmp(mode, "execveat")) {
    if (work(5)) return 1;
    char *args[] = {argv[0], "after", NULL};
    char *bare_env[] = {"PATH=/usr/bin:/bin", NULL};
    fflush(stdout);
    if (!strcmp(mode, "fexecve")) {
      int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return 1;
      fexecve(fd, args, bare_env);
    } else {
      execveat(AT_FDCWD, "/proc/self/exe", args, bare_env, 0);
    }
    return 1;
  }
  if (!strcmp(mode, "after")) {
    if (getenv("GPUPHASE_OUTPUT") == NULL) return 3; /* must be restored */
    return work(2);
  }
  if (!strcmp(mode, "exit")) {
    if (work(4)) return 1;
    exit(n);
  }
  if (!strcmp(mode, "quick_exit")) {
    if (work(4)) return 1;
    quick_exit(n);
  }
  if (!strcmp(mode, "_exit")) {
    if (work(4)) return 1;
    _exit(n);
  }
  if (!strcmp(mode, "abort")) {
    if (work(4)) return 1;
    abort();
  }
  if (!strcmp(mode, "sleep")) {
    if (work(n)) return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (!strcmp(mode, "errno")) {
    /* Each call made with a distinctive errno; printed: the call, its
     * result and errno after it. The first call starts the profiler (the
     * shim's slow path), the others take its fast path. cudaMallocHost of
     * 2^62 B fails in the runtime's calloc, which sets ENOMEM. */
    void *p;
    dim3 g = {1, 1, 1}, b = {1, 1, 1};
    errno = 4201;
    int r = (int)cudaFree(NULL);
    printf("first %d %d\n", r, errno);
    errno = 4202;
    r = (int)cudaLaunchKernel((const void *)k_life, g, b, NULL, 0, 0);
    printf("launch %d %d\n", r, errno);
    errno = 4203;
    r = (int)cudaDeviceSynchronize();
    printf("sync %d %d\n", r, errno);
    errno = 4204;
    r = (int)cudaMalloc(&p, (size_t)1 << 62);
    printf("malloc %d %d\n", r, errno);
    errno = 4205;
    r = (int)cudaMallocHost(&p, (size_t)1 << 62);
    printf("mallochost %d %d\n", r, errno);
    errno = 0;
    r = (int)cudaFree(NULL);
    printf("free %d %d\n", r, errno);
    return 0;
  }
  return 0;
}
