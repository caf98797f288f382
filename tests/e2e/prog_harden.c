/* Hostile lifecycles for the shim (test_record.py), chosen by argv[1]:
 *   churn N        N threads started and joined one after another, each
 *                  launching one kernel; prints "rss_kb=R hwm_kb=H"
 *   startrace N    the process's first CUDA calls: 8 threads leave a
 *                  barrier together and make N launches each, while the
 *                  first of them starts recording; then a synchronise;
 *                  prints "launches=L" (all of them) and exits 0
 *   exitthread MS  the main thread launches without end; another thread
 *                  calls exit(0) after MS ms
 *   mainexit N     CUDA work, then the main thread starts a thread that
 *                  launches N kernels (synchronised), prints "launches=L"
 *                  (all of them) and returns, and calls pthread_exit; an
 *                  atexit handler prints "atexit": the process ends with 0
 *                  when that thread ends, as glibc ends it; with N < 0
 *                  no thread: the process ends when main leaves
 *   handler SIG    CUDA work, then the program installs its own handler for
 *                  SIG with sigaction (after the profiler started); prints
 *                  "ready", waits for SIG, prints "handled", exits 0
 *   signal SIG     the same with signal()
 *   ignore SIG     CUDA work, then signal(SIG, SIG_IGN); prints "ready",
 *                  sleeps 300 ms, prints "survived", exits 0
 *   default SIG    CUDA work, a handler for SIG, then SIG_DFL again (with
 *                  signal()); prints "ready" and waits to be killed by SIG
 *   defaultinfo SIG
 *                  the same with sigaction: a handler for SIG, then
 *                  SA_SIGINFO with a null sa_sigaction (the kernel's
 *                  SIG_DFL too)
 *   query SIG      CUDA work, then prints what sigaction and signal say the
 *                  disposition of SIG is ("dfl dfl" when untouched)
 *   segv           CUDA work, then a store to address 0 (a real SIGSEGV)
 *   altstack SIG B CUDA work, then an alternate signal stack of B bytes for
 *                  this thread, then raise(SIG): dies by it (a SIGSEGV
 *                  with the stack past its end, before: our handler ran on
 *                  it for every signal); SIG 0: no signal raised, but
 *                  a recursion without end overflows the stack (a SIGSEGV
 *                  delivered on the alternate stack)
 *   soak SECS T    bench/soak.py's workload: T worker threads, each replaced
 *                  after a random number of mixed calls (launch, memset,
 *                  copy, synchronise, allocate and free), for SECS seconds;
 *                  every 2 s a child is forked and exec'd ("spinchild"),
 *                  ended with SIGTERM once it said (SIGUSR2) that it
 *                  records; SIGUSR1 is counted by the program's own handler.
 *                  Prints the calls and the device records they make, and
 *                  the children.
 *   spin           CUDA work, then launches without end
 *   spinchild      the same, SIGUSR2 to its parent after the first launches
 *   vfork N        CUDA work, then a vfork child that execs /bin/true, N
 *                  launches, a vfork child that calls _exit(0), N
 *                  launches, a vfork child whose exec fails, N launches
 *                  (each child closes every descriptor from 3 up first), a
 *                  forked child that does the same and execs /bin/true, N
 *                  launches; prints "launches=L" (all of them), exits 0
 *   restore SIG F  CUDA work, then F (sigset, bsd_signal or sysv_signal)
 *                  sets a handler for SIG, prints "dfl" if it returned
 *                  SIG_DFL (else "other"), puts back what it returned with
 *                  F and raises SIG: dies by it
 *   sidefx         launches and synchronises in a loop, writing "it\n" after
 *                  each; another thread sends SIGTERM to the main thread
 *                  after 300 ms, then writes "sent N\n", N the iterations
 *                  counted by then (an iteration counts once its "it" is
 *                  written): dies by it
 *   exitsig        CUDA work, then a 200 us interval timer whose SIGALRM
 *                  handler calls _exit(7) once the program is leaving, and
 *                  exit(0): ends with 7 (or 0), never hangs
 *   execl          CUDA work, then execl of sh with 5000 arguments, which
 *                  checks that it got them all (exit 0) or exits 1
 *   unwfds DIR     CUDA work, then closes every descriptor from 3 up, opens
 *                  DIR/input.txt to read and DIR/output.txt to write (the
 *                  lowest numbers), launches 2000 kernels from a function
 *                  without unwind tables (prog_harden_nouw.c), writes
 *                  "app data\n" to output.txt and prints what it reads
 *                  from input.txt
 *   closefds PATH [rm]
 *                  CUDA work, then closes every descriptor from 3 up (as
 *                  a daemon does; with rm, removes every *.gph here too),
 *                  creates PATH (it takes the lowest free descriptor),
 *                  writes "application data\n" to it, opens it 16 times
 *                  more for appending, launches for 300 ms more, prints
 *                  "launches=N" (all of them) and exits 0 with every
 *                  descriptor open
 *   closestd N     closes 0, 1 and 2 before any CUDA call, N launches
 *                  (synchronised), waits 300 ms (the profiler's threads at
 *                  work), then reads 0 and writes 1 and 2, N launches more;
 *                  exits 0 if all three failed with EBADF, as they do
 *                  without the profiler, else 10 + a bit for each that did
 *                  not (1: the read, 2: stdout, 4: stderr)
 *   prerangestart  a thread pushes "load" before any CUDA call; the main
 *                  thread makes the process's first (run with a slow
 *                  CUPTI: recording starts meanwhile); 300 ms after the
 *                  push the thread pops "load", then pushes and pops
 *                  "batch" 3 times; once the main thread's call returned,
 *                  the thread pushes "after", synchronises and pops it;
 *                  prints "pops=A B" (the returns of the two pops of
 *                  "load" and "after")
 *   oneshot SIG HOW
 *                  a handler for SIG that runs once (SA_RESETHAND): HOW
 *                  sigaction or sysv_signal, set after 3 launches, then
 *                  raise(SIG), prints "handled N dfl|other" (what sigaction
 *                  reads back after it ran), 2 launches, raise(SIG) again:
 *                  dies by it; HOW early: set with sigaction before any
 *                  CUDA call, then the same; HOW crash (SIG 11): a crash
 *                  handler as backward-cpp sets one (SA_SIGINFO,
 *                  SA_NODEFER, SA_RESETHAND) before any CUDA call, 3
 *                  launches, a store to address 0: the handler prints
 *                  "crash handler" and returns, the fault comes again
 *   prerangemem N  before any CUDA call: N threads started and joined one
 *                  after another, each pushing 8 ranges of 250-byte names
 *                  and ending without popping them; then N threads that
 *                  push the same and wait, alive, until all have pushed;
 *                  prints "churn_kb=C live_kb=L" (the heap grown by the
 *                  first, and by the second less N live threads that push
 *                  nothing; mallinfo2, so run with MALLOC_ARENA_MAX=1);
 *                  while the second are alive the main thread forks a
 *                  child that pushes "ccc..." (250 bytes), makes a CUDA call and pops
 *                  it (its exit status: 2 x the push's return + the
 *                  pop's), then pushes "hhh..." (250 bytes, "held");
 *                  prints "held=H child=C" too; then
 *                  the main thread makes a CUDA call, pushes "main" and
 *                  pops twice: prints "push=A pop=B heldpop=C" (returns)
 */
#include <stdint.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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

int nouw_work(int launches); /* prog_harden_nouw.c */

static pthread_t sidefx_main;
static atomic_long sidefx_iters;
/* The count is read after the signal is sent, and printed after that: a
 * killer descheduled on a loaded machine between the two cannot make the
 * main thread's iterations look like ones after the signal. */
static void *sidefx_killer(void *arg) {
  struct timespec ts = {0, 300000000};
  nanosleep(&ts, NULL);
  pthread_kill(sidefx_main, SIGTERM);
  char line[40];
  int n = snprintf(line, sizeof line, "sent %ld\n", atomic_load(&sidefx_iters));
  ssize_t w = write(1, line, (size_t)n);
  (void)w;
  return arg;
}

static volatile sig_atomic_t leaving;
static void on_alarm_exit(int sig) {
  (void)sig;
  if (leaving) _exit(7);
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

static void *launch_n(void *arg) {
  int n = (int)(size_t)arg;
  if (work(n)) _exit(1);
  printf("launches=%d\n", n + 1);
  fflush(stdout);
  return NULL;
}

#define RACERS 8
static pthread_barrier_t race_bar;
static void *race_launches(void *arg) {
  int n = (int)(size_t)arg;
  pthread_barrier_wait(&race_bar);
  for (int i = 0; i < n; i++)
    if (launch()) return (void *)1;
  return NULL;
}

static int start_race(int n) {
  pthread_t t[RACERS];
  void *r;
  int bad = 0;
  pthread_barrier_init(&race_bar, NULL, RACERS);
  for (int i = 0; i < RACERS; i++)
    if (pthread_create(&t[i], NULL, race_launches, (void *)(size_t)n))
      return 1;
  for (int i = 0; i < RACERS; i++) {
    pthread_join(t[i], &r);
    bad |= r != NULL;
  }
  if (bad || cudaDeviceSynchronize() != cudaSuccess) return 1;
  printf("launches=%d\n", RACERS * n);
  return 0;
}

static void say_atexit(void) {
  printf("atexit\n");
}

static int main_exit(int n) {
  if (work(1)) return 1;
  atexit(say_atexit);
  pthread_t t;
  if (n >= 0 && pthread_create(&t, NULL, launch_n, (void *)(size_t)n))
    return 1;
  pthread_exit(NULL);
}

/* A stack overflow; the volatile buffer keeps the frames from being
 * optimised away. */
static volatile int endless = 1;
int recurse(int depth) {
  volatile char pad[512];
  pad[0] = (char)depth;
  return endless ? recurse(depth + 1) + pad[0] : depth;
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

/* ---- soak ---- */
struct soak_counts {
  uint64_t calls, device; /* API calls made; device records they cause */
};

struct soak_worker {
  pthread_t t;
  int running;
  unsigned seed;
  struct soak_counts c;
};

static _Atomic int soak_stop;
static volatile sig_atomic_t soak_usr1, soak_usr2;
static void on_usr(int sig) {
  if (sig == SIGUSR1) soak_usr1++;
  else soak_usr2 = 1;
}

static int soak_call(unsigned r, char *dev, char *host, struct soak_counts *c) {
  dim3 g = {1 + r % 256, 1, 1}, b = {128, 1, 1};
  cudaError_t e;
  unsigned k = r % 20;
  if (k < 12) e = cudaLaunchKernel((const void *)k_harden, g, b, NULL, 0, 0);
  else if (k < 14) e = cudaMemsetAsync(dev, (int)k, 4096, 0);
  else if (k < 16) e = cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, 0);
  else if (k < 17) e = cudaStreamSynchronize(0);
  else {
    void *p;
    e = cudaMalloc(&p, 1 << 16);
    if (e == cudaSuccess) e = cudaFree(p), c->calls++;
  }
  c->calls++;
  c->device += k < 17;
  return e != cudaSuccess;
}

static void *soak_worker(void *arg) {
  struct soak_worker *w = arg;
  char *dev = NULL, *host = NULL;
  if (cudaMalloc((void **)&dev, 4096) || cudaMallocHost((void **)&host, 4096))
    return (void *)1;
  w->c.calls += 2;
  unsigned n = 1000 + rand_r(&w->seed) % 20000;
  for (unsigned i = 0; i < n && !atomic_load(&soak_stop); i++) {
    if (soak_call((unsigned)rand_r(&w->seed), dev, host, &w->c)) return (void *)1;
    if (i % 4 == 3) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
  if (cudaStreamSynchronize(0) || cudaFree(dev) || cudaFreeHost(host))
    return (void *)1;
  w->c.calls += 3;
  w->c.device += 1;
  return NULL;
}

/* A child that launches until its parent ends it with SIGTERM: exec'd,
 * since a forked copy of a process whose other threads are inside CUDA may
 * hold their locks. */
static pid_t soak_child(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid != 0) return pid;
  execl("/proc/self/exe", "e2e-prog-harden", "spinchild", (char *)NULL);
  _exit(127);
}

/* Ends a child once it records (or 5 s), 100 ms into its launches. */
static int soak_end_child(pid_t c) {
  for (int i = 0; i < 500 && !soak_usr2; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  soak_usr2 = 0;
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, NULL);
  int st;
  kill(c, SIGTERM);
  return waitpid(c, &st, 0) != c || !WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM;
}

static int soak_reap(struct soak_worker *w, struct soak_counts *total) {
  void *r;
  if (pthread_join(w->t, &r) || r) return 1;
  total->calls += w->c.calls;
  total->device += w->c.device;
  w->running = 0;
  return 0;
}

static int soak(int secs, int nthreads) {
  struct soak_worker ws[64];
  struct soak_counts total = {4, 4}; /* work(3) in main() */
  int children = 0, bad = 0;
  if (nthreads > 64) nthreads = 64;
  signal(SIGUSR1, on_usr);
  signal(SIGUSR2, on_usr);
  printf("ready\n");
  fflush(stdout);
  uint64_t end = (uint64_t)time(NULL) + (uint64_t)secs, ticks = 0;
  memset(ws, 0, sizeof ws);
  while (!bad && (uint64_t)time(NULL) < end) {
    for (int i = 0; i < nthreads && !bad; i++) {
      if (ws[i].running) { /* replaced once it finished */
        void *r;
        int j = pthread_tryjoin_np(ws[i].t, &r);
        if (j == EBUSY) continue;
        bad |= j != 0 || r != NULL;
        total.calls += ws[i].c.calls;
        total.device += ws[i].c.device;
        ws[i].running = 0;
      }
      ws[i].seed = (unsigned)(ticks * 131 + (uint64_t)i);
      ws[i].c = (struct soak_counts){0, 0};
      bad = pthread_create(&ws[i].t, NULL, soak_worker, &ws[i]) != 0;
      ws[i].running = !bad;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
    if (++ticks % 200 == 0) { /* every 2 s */
      bad |= soak_end_child(soak_child());
      children++;
    }
  }
  atomic_store(&soak_stop, 1);
  for (int i = 0; i < nthreads; i++)
    if (ws[i].running) bad |= soak_reap(&ws[i], &total);
  bad |= cudaDeviceSynchronize() != cudaSuccess;
  total.calls++, total.device++;
  printf("calls=%llu device=%llu children=%d usr1=%d%s\n",
         (unsigned long long)total.calls, (unsigned long long)total.device,
         children, (int)soak_usr1, bad ? " FAILED" : "");
  return bad;
}

static _Atomic int pre_pushed, pre_running;
static int pre_pop_load, pre_pop_after;

static void *pre_worker(void *arg) {
  (void)arg;
  int (*push)(const char *) =
      (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuphase_range_push");
  int (*pop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpuphase_range_pop");
  if (!push || !pop) return (void *)1;
  push("load");
  atomic_store(&pre_pushed, 1);
  usleep(300000);
  pre_pop_load = pop();
  for (int i = 0; i < 3; i++) {
    push("batch");
    pop();
  }
  while (!atomic_load(&pre_running)) usleep(1000);
  push("after");
  if (cudaDeviceSynchronize() != cudaSuccess) return (void *)1;
  pre_pop_after = pop();
  return NULL;
}

static int pre_range_start(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, pre_worker, NULL) != 0) return 1;
  while (!atomic_load(&pre_pushed)) usleep(1000);
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  atomic_store(&pre_running, 1);
  void *rc;
  pthread_join(t, &rc);
  printf("pops=%d %d\n", pre_pop_load, pre_pop_after);
  return rc != NULL || cudaStreamDestroy(s) != cudaSuccess;
}

static volatile sig_atomic_t oneshot_runs;
static void on_oneshot_sig(int sig) {
  (void)sig;
  oneshot_runs++;
}
static void on_crash(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  static const char line[] = "crash handler\n";
  ssize_t w = write(1, line, sizeof line - 1);
  (void)w;
}

static int one_shot(int sig, const char *how) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  int early = !strcmp(how, "early"), crash = !strcmp(how, "crash");
  if (crash) {
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
  } else {
    sa.sa_handler = on_oneshot_sig;
    sa.sa_flags = SA_RESETHAND;
  }
  if ((early || crash) && sigaction(sig, &sa, NULL)) return 1;
  if (work(3)) return 1;
  if (crash) {
    *(volatile int *)(uintptr_t)0 = 1;
    return 1;
  }
  if (!strcmp(how, "sysv_signal")) {
    typedef void (*handler)(int);
    handler (*fn)(int, handler);
    void *p = dlsym(RTLD_DEFAULT, "sysv_signal");
    if (!p) return 2;
    memcpy(&fn, &p, sizeof p);
    if (fn(sig, on_oneshot_sig) == SIG_ERR) return 1;
  } else if (!early && sigaction(sig, &sa, NULL)) {
    return 1;
  }
  raise(sig);
  struct sigaction q;
  if (sigaction(sig, NULL, &q)) return 1;
  printf("handled %d %s\n", (int)oneshot_runs,
         !(q.sa_flags & SA_SIGINFO) && q.sa_handler == SIG_DFL ? "dfl" : "other");
  fflush(stdout);
  if (work(2)) return 1;
  raise(sig);
  printf("survived\n");
  return 0;
}

static pthread_barrier_t mem_bar;

/* what: bit 0, push 8 ranges; bit 1, wait alive at the barrier */
static void *mem_worker(void *what) {
  int (*push)(const char *) =
      (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuphase_range_push");
  if (!push) return (void *)1;
  char name[251];
  for (int i = 0; (size_t)what & 1 && i < 8; i++) {
    memset(name, 'a' + i, 250);
    name[250] = 0;
    push(name);
  }
  if ((size_t)what & 2) {
    pthread_barrier_wait(&mem_bar); /* all alive */
    pthread_barrier_wait(&mem_bar); /* measured */
  }
  return NULL;
}

/* The heap grown (main arena: run with MALLOC_ARENA_MAX=1) while n
 * threads are alive, pushing or not. */
/* while they are alive: held, what pushing "held" returned; child, what
 * a child forked then said (push and pop of its own range, its exit) */
static int mem_held = -1, mem_child = -1;

static int child_range(void) {
  int (*push)(const char *) =
      (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuphase_range_push");
  int (*pop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpuphase_range_pop");
  char name[251]; /* as long as the others' (what they left is less) */
  memset(name, 'c', 250);
  name[250] = 0;
  int a = push(name);
  if (work(1)) return 9;
  int b = pop();
  return a * 2 + b;
}

static long mem_live(int n, size_t push) {
  pthread_t *ts = calloc((size_t)n, sizeof *ts);
  void *r;
  if (!ts || pthread_barrier_init(&mem_bar, NULL, (unsigned)n + 1)) return -1;
  size_t h0 = mallinfo2().uordblks;
  for (int i = 0; i < n; i++)
    if (pthread_create(&ts[i], NULL, mem_worker, (void *)(2 | push))) return -1;
  pthread_barrier_wait(&mem_bar);
  size_t h1 = mallinfo2().uordblks;
  if (push) {
    /* the names of the live threads fill the process's budget */
    int (*p)(const char *) =
        (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuphase_range_push");
    pid_t c = fork();
    if (c == 0) _exit(child_range());
    int st = 0;
    if (c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st)) mem_child = WEXITSTATUS(st);
    char held[251]; /* as long as theirs: what is left of it is less */
    memset(held, 'h', 250);
    held[250] = 0;
    mem_held = p(held);
  }
  pthread_barrier_wait(&mem_bar);
  for (int i = 0; i < n; i++)
    if (pthread_join(ts[i], &r) || r) return -1;
  pthread_barrier_destroy(&mem_bar);
  free(ts);
  return ((long)h1 - (long)h0) / 1024;
}

static int pre_range_mem(int n) {
  int (*push)(const char *) =
      (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuphase_range_push");
  int (*pop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gpuphase_range_pop");
  if (!push || !pop || n < 1) return 1;
  /* one thread first: the heap's own per-thread state */
  pthread_t t;
  void *r;
  if (pthread_create(&t, NULL, mem_worker, (void *)1) || pthread_join(t, &r) || r)
    return 1;
  size_t h0 = mallinfo2().uordblks;
  for (int i = 0; i < n; i++)
    if (pthread_create(&t, NULL, mem_worker, (void *)1) || pthread_join(t, &r) || r)
      return 1;
  size_t h1 = mallinfo2().uordblks;
  long quiet = mem_live(n, 0), pushing = mem_live(n, 1);
  if (quiet < 0 || pushing < 0) return 1;
  printf("churn_kb=%ld live_kb=%ld held=%d child=%d\n", ((long)h1 - (long)h0) / 1024,
         pushing - quiet, mem_held, mem_child);
  if (work(1)) return 1;
  int a = push("main"), b = pop(), c = pop(); /* c: "held"'s */
  printf("push=%d pop=%d heldpop=%d\n", a, b, c);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "prerangestart")) return pre_range_start();
  if (!strcmp(mode, "oneshot") && argc > 3) return one_shot(atoi(argv[2]), argv[3]);
  if (!strcmp(mode, "prerangemem"))
    return pre_range_mem(argc > 2 ? atoi(argv[2]) : 0);
  int n = argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(mode, "churn")) return churn(n);
  if (!strcmp(mode, "exitthread")) return exit_thread(n);
  if (!strcmp(mode, "mainexit")) return main_exit(n);
  if (!strcmp(mode, "closestd")) {
    close(0), close(1), close(2);
    if (work(n)) return 1;
    usleep(300000);
    char c;
    int bad = 0;
    if (read(0, &c, 1) != -1 || errno != EBADF) bad |= 1;
    if (write(1, "out\n", 4) != -1 || errno != EBADF) bad |= 2;
    if (write(2, "err\n", 4) != -1 || errno != EBADF) bad |= 4;
    if (work(n)) return 1;
    return bad ? 10 + bad : 0;
  }
  if (!strcmp(mode, "startrace")) return start_race(n);
  if (work(3)) return 1;
  if (!strcmp(mode, "soak")) return soak(n, argc > 3 ? atoi(argv[3]) : 16);
  if (!strcmp(mode, "spinchild")) kill(getppid(), SIGUSR2);
  if (!strcmp(mode, "spin") || !strcmp(mode, "spinchild"))
    for (;;)
      if (launch()) return 1;
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
  if (!strcmp(mode, "defaultinfo")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigemptyset(&sa.sa_mask);
    if (sigaction(n, &sa, NULL)) return 1;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_sigaction = NULL;
    sigemptyset(&sa.sa_mask);
    if (sigaction(n, &sa, NULL)) return 1;
    if (work(2)) return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (!strcmp(mode, "altstack") && argc > 3) {
    size_t b = (size_t)atol(argv[3]);
    stack_t ss = {.ss_sp = malloc(b), .ss_size = b, .ss_flags = 0};
    if (!ss.ss_sp || sigaltstack(&ss, NULL)) return 1;
    if (n) raise(n);
    else recurse(1);
    return 1;
  }
  if (!strcmp(mode, "segv")) {
    volatile uintptr_t addr = 0; /* not known at compile time: a real store */
    *(volatile int *)addr = 1;
    return 1;
  }
  if (!strcmp(mode, "restore") && argc > 3) {
    /* looked up as the program's own call would bind (some are deprecated
     * or undeclared in this header set) */
    typedef void (*handler)(int);
    handler (*fn)(int, handler);
    void *p = dlsym(RTLD_DEFAULT, argv[3]);
    if (!p) return 2;
    memcpy(&fn, &p, sizeof p);
    void (*old)(int) = fn(n, on_sig);
    printf("%s\n", old == SIG_DFL ? "dfl" : "other");
    fflush(stdout);
    if (fn(n, old) != on_sig) return 1;
    raise(n);
    printf("survived\n");
    return 0;
  }
  if (!strcmp(mode, "sidefx")) {
    sidefx_main = pthread_self();
    pthread_t t;
    if (pthread_create(&t, NULL, sidefx_killer, NULL)) return 1;
    for (;;) {
      if (work(1)) return 1;
      ssize_t w = write(1, "it\n", 3); /* what a killed program would not do */
      (void)w;
      atomic_fetch_add(&sidefx_iters, 1);
    }
  }
  if (!strcmp(mode, "exitsig")) {
    signal(SIGALRM, on_alarm_exit);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    leaving = 1;
    exit(0);
  }
  if (!strcmp(mode, "execl")) {
#define A10 "a", "a", "a", "a", "a", "a", "a", "a", "a", "a"
#define A100 A10, A10, A10, A10, A10, A10, A10, A10, A10, A10
#define A1000 A100, A100, A100, A100, A100, A100, A100, A100, A100, A100
    execl("/bin/sh", "sh", "-c", "test $# -eq 5000", "sh", A1000, A1000, A1000,
          A1000, A1000, (char *)NULL);
    perror("execl");
    return 2;
  }
  if (!strcmp(mode, "vfork")) {
    int launches = 3;
    for (int i = 0; i < 3; i++) {
      char *const args[] = {"true", NULL};
      pid_t pid = vfork();
      if (pid == 0) {
        /* as Python's subprocess does before exec */
        for (int fd = 3; fd < 1024; fd++) close(fd);
        if (i == 0) execv("/bin/true", args);
        if (i == 2) execv("/nonexistent/program", args);
        _exit(i == 0 ? 127 : 0);
      }
      int st;
      if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
          WEXITSTATUS(st) != 0)
        return 1;
      if (work(n)) return 1;
      launches += n;
    }
    /* and a forked child that closes every descriptor, then execs */
    pid_t pid = fork();
    if (pid == 0) {
      char *const args[] = {"true", NULL};
      for (int fd = 3; fd < 1024; fd++) close(fd);
      execv("/bin/true", args);
      _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0 || work(n))
      return 1;
    launches += n;
    printf("launches=%d\n", launches);
    return 0;
  }
  if (!strcmp(mode, "unwfds") && argc > 2) {
    char in[4096], out[4096];
    snprintf(in, sizeof in, "%s/input.txt", argv[2]);
    snprintf(out, sizeof out, "%s/output.txt", argv[2]);
    for (int fd = 3; fd < 1024; fd++) close(fd);
    int fi = open(in, O_RDONLY), fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fi < 0 || fo < 0 || nouw_work(2000)) return 1;
    const char data[] = "app data\n";
    if (write(fo, data, sizeof data - 1) != (ssize_t)sizeof data - 1) return 1;
    char buf[256];
    ssize_t k = read(fi, buf, sizeof buf - 1);
    if (k < 0) return 1;
    buf[k] = 0;
    printf("read=%s", buf);
    return 0;
  }
  if (!strcmp(mode, "closefds") && argc > 2) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    if (argc > 3 && !strcmp(argv[3], "rm")) { /* the traces here too */
      DIR *dir = opendir(".");
      struct dirent *e;
      while (dir && (e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".gph")) unlink(e->d_name);
      }
      if (dir) closedir(dir);
    }
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const char data[] = "application data\n";
    if (fd < 0 || write(fd, data, sizeof data - 1) != (ssize_t)sizeof data - 1)
      return 1;
    /* the same file under the next 16 numbers too, whatever ours was */
    for (int i = 0; i < 16; i++)
      if (open(argv[2], O_WRONLY | O_APPEND) < 0) return 1;
    int launches = 3;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
      if (work(100)) return 1;
      launches += 100;
      clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) <
             300000000L);
    printf("launches=%d\n", launches);
    return 0; /* the descriptors stay open to the end, as many programs' do */
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
