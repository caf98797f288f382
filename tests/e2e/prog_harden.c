/* Hostile lifecycles for the shim (test_record.py), chosen by argv[1]:
 *   churn N        N threads started and joined one after another, each
 *                  launching one kernel; prints "rss_kb=R hwm_kb=H"
 *   exitthread MS  the main thread launches without end; another thread
 *                  calls exit(0) after MS ms
 *   handler SIG    CUDA work, then the program installs its own handler for
 *                  SIG with sigaction (after the profiler started); prints
 *                  "ready", waits for SIG, prints "handled", exits 0
 *   signal SIG     the same with signal()
 *   ignore SIG     CUDA work, then signal(SIG, SIG_IGN); prints "ready",
 *                  sleeps 300 ms, prints "survived", exits 0
 *   default SIG    CUDA work, a handler for SIG, then SIG_DFL again (with
 *                  signal()); prints "ready" and waits to be killed by SIG
 *   query SIG      CUDA work, then prints what sigaction and signal say the
 *                  disposition of SIG is ("dfl dfl" when untouched)
 *   segv           CUDA work, then a store to address 0 (a real SIGSEGV)
 */
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void k_harden(void) {}

static int launch(void) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  return cudaLaunchKernel((const void *)k_harden, g, b, NULL, 0, 0) !=
         cudaSuccess;
}

static int work(int launches) {
  for (int i = 0; i < launches; i++)
    if (launch()) return 1;
  return cudaDeviceSynchronize() != cudaSuccess;
}

static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) v = atol(line + n);
  if (f) fclose(f);
  return v;
}

static void *one_launch(void *arg) {
  (void)arg;
  return (void *)(long)launch();
}

static int churn(int n) {
  if (work(1)) return 1;
  for (int i = 0; i < n; i++) {
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, one_launch, NULL) || pthread_join(t, &r) || r)
      return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  printf("rss_kb=%ld hwm_kb=%ld\n", status_kb("VmRSS:"), status_kb("VmHWM:"));
  return 0;
}

static void *exit_later(void *arg) {
  struct timespec ts = {0, (long)(size_t)arg * 1000000L};
  nanosleep(&ts, NULL);
  exit(0);
}

static int exit_thread(int ms) {
  if (work(1)) return 1;
  pthread_t t;
  if (pthread_create(&t, NULL, exit_later, (void *)(size_t)ms)) return 1;
  for (;;)
    if (launch()) return 1;
}

static volatile sig_atomic_t got;
static void on_sig(int sig) {
  got = sig;
}

static void wait_for_signal(void) {
  printf("ready\n");
  fflush(stdout);
  while (!got) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  printf("handled\n");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "churn")) return churn(n);
  if (!strcmp(mode, "exitthread")) return exit_thread(n);
  if (work(3)) return 1;
  if (!strcmp(mode, "handler")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigemptyset(&sa.sa_mask);
    if (sigaction(n, &sa, NULL)) return 1;
    wait_for_signal();
    return work(1);
  }
  if (!strcmp(mode, "signal")) {
    if (signal(n, on_sig) == SIG_ERR) return 1;
    wait_for_signal();
    return work(1);
  }
  if (!strcmp(mode, "ignore")) {
    if (signal(n, SIG_IGN) == SIG_ERR) return 1;
    printf("ready\n");
    fflush(stdout);
    struct timespec ts = {0, 300000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    printf("survived\n");
    return work(1);
  }
  if (!strcmp(mode, "default")) {
    if (signal(n, on_sig) == SIG_ERR || signal(n, SIG_DFL) != on_sig) return 1;
    if (work(2)) return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (!strcmp(mode, "segv")) {
    volatile uintptr_t addr = 0; /* not known at compile time: a real store */
    *(volatile int *)addr = 1;
    return 1;
  }
  if (!strcmp(mode, "query")) {
    struct sigaction old;
    if (sigaction(n, NULL, &old)) return 1;
    int dfl = old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
    void (*prev)(int) = signal(n, SIG_DFL);
    printf("%s %s\n", dfl ? "dfl" : "handler", prev == SIG_DFL ? "dfl" : "handler");
    return 0;
  }
  return 2;
}
