/* gpuphase: run a program under the profiler.
 *
 *   gpuphase run [-o PATTERN] [--] CMD [ARGS...]
 *
 * Sets LD_PRELOAD (the output pattern, and a run id shared by every
 * process of CMD), runs CMD, passes its exit status through and says where
 * the traces went. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../preload/gp_switch.h"
#include "gp_config.h"

static const char usage_text[] =
    "usage: gpuphase run [-o PATTERN] [-q] [--] COMMAND [ARGS...]\n"
    "       gpuphase --help | --version\n"
    "\n"
    "Runs COMMAND with libgpuphase preloaded; every process of it that uses\n"
    "CUDA writes one trace file. Read them with gpuphase-report.\n"
    "\n"
    "options:\n"
    "  -o, --output PATTERN  trace file name; %p pid, %h host, %r rank,\n"
    "                        %q{VAR} environment variable, %% a percent sign;\n"
    "                        a directory (or a path ending in /): the default\n"
    "                        name inside it (default: $GPUPHASE_OUTPUT or\n"
    "                        gpuphase-%h-%p.gph)\n"
    "  -q, --quiet           do not list the traces written (GPUPHASE_QUIET=1\n"
    "                        does the same)\n"
    "  -h, --help            this help\n"
    "  -V, --version         print the version\n"
    "\n"
    "environment: GPUPHASE_LIB overrides the library to preload (default: the\n"
    "one of this installation, beside this program's directory: the build\n"
    "tree's preload/, the prefix's lib/, or the Python package's libraries;\n"
    "a path with a space or a colon, which LD_PRELOAD cannot take, is\n"
    "preloaded through a link in a private directory of TMPDIR, removed at\n"
    "the end);\n"
    "NVTX ranges are recorded as phases (NVTX_INJECTION64_PATH is set unless\n"
    "already set); GPUPHASE_RUN_ID, the id every trace of this run carries, is\n"
    "set to a fresh one unless already set; GPUPHASE_STEP_ITEMS=N records N\n"
    "items (samples, tokens) per step; the other GPUPHASE_* variables of the\n"
    "library are passed through (see README).\n"
    "signals: SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,\n"
    "SIGWINCH, SIGTSTP and SIGPIPE sent to gpuphase are passed on to\n"
    "COMMAND; those the terminal sends (^C, ^\\, ^Z, a hangup) reach COMMAND\n"
    "directly and are not passed on; those ignored when gpuphase started (as\n"
    "under nohup) stay ignored in COMMAND. Killed outright (SIGKILL),\n"
    "gpuphase takes COMMAND with it. When COMMAND stops on a terminal (^Z,\n"
    "a background job reading it), gpuphase stops too. Its own lines to a\n"
    "reader gone are lost quietly.\n"
    "exit status: COMMAND's own (killed by a signal: killed by the same,\n"
    "without a second core dump);\n"
    "127 if it cannot be found, 126 if it cannot be run, 2 for a usage\n"
    "error, 1 if gpuphase itself cannot start it (the library to preload not\n"
    "found, no memory for the environment, fork failed).\n";

/* The help or the version written: 0, or 1 with a line saying why when
 * standard output could not take it (a full disk, a closed pipe). */
static int printed(void) {
  if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
  fprintf(stderr, "gpuphase: cannot write to standard output: %s\n",
          strerror(errno));
  return 1;
}

static int usage_error(const char *msg) {
  fprintf(stderr, "gpuphase: %s (see gpuphase --help)\n", msg);
  return 2;
}

static int readable(const char *p) {
  return access(p, R_OK) == 0;
}

/* The library to preload: $GPUPHASE_LIB, then relative to this executable
 * (the build tree's preload/; an install prefix's lib/ or lib64/; the
 * Python package's .gpuphase.mesonpy.libs/, where meson-python puts the
 * programs beside the libraries), then the install location. */
static int find_library(char *out, size_t cap) {
  const char *env = getenv("GPUPHASE_LIB");
  if (env && *env) {
    if (!readable(env)) {
      fprintf(stderr, "gpuphase: GPUPHASE_LIB=%s: %s\n", env, strerror(errno));
      return -1;
    }
    snprintf(out, cap, "%s", env);
    return 0;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      static const char *const rel[] = {
          "../preload/libgpuphase.so", "../lib/libgpuphase.so",
          "../lib64/libgpuphase.so", "libgpuphase.so"};
      for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        char real[PATH_MAX];
        if (readable(cand) && realpath(cand, real)) {
          snprintf(out, cap, "%s", real);
          return 0;
        }
      }
    }
  }
  char cand[PATH_MAX];
  snprintf(cand, sizeof cand, "%s/libgpuphase.so", GP_LIBDIR);
  if (readable(cand)) {
    snprintf(out, cap, "%s", cand);
    return 0;
  }
  fprintf(stderr,
          "gpuphase: cannot find libgpuphase.so (looked beside %s and in %s); "
          "set GPUPHASE_LIB\n",
          n > 0 ? exe : "this program", GP_LIBDIR);
  return -1;
}

/* Every process the command starts shares this id (the library writes
 * it into each trace header), so the report can tell one run's traces
 * from another's in the same directory. */
static int set_run_id(void) {
  const char *have = getenv("GPUPHASE_RUN_ID");
  if (have && *have) return 0; /* an outer run or the user chose one */
  uint64_t x = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &x, sizeof x) != (ssize_t)sizeof x) x = 0;
    close(fd);
  }
  if (!x) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
        ((uint64_t)getpid() << 32);
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x ^= x >> 33;
  }
  char id[17];
  snprintf(id, sizeof id, "%016llx", (unsigned long long)x);
  return setenv("GPUPHASE_RUN_ID", id, 1);
}

/* LD_PRELOAD splits its list at spaces and colons, and has no way to quote
 * them: a library whose path holds one (a venv in "My Projects") is
 * preloaded through a link in a private directory of its own, removed
 * once COMMAND has ended. */
static char link_dir[PATH_MAX];

static void remove_link(void) {
  if (!link_dir[0]) return;
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/libgpuphase.so", link_dir);
  unlink(p);
  rmdir(link_dir);
  link_dir[0] = 0;
}

static int preloadable(char *lib, size_t cap) {
  if (!strpbrk(lib, " :")) return 0;
  /* the link is read from its own directory: it must name the library by
   * its absolute path (GPUPHASE_LIB may be relative) */
  char abs[PATH_MAX];
  if (realpath(lib, abs) && strlen(abs) < cap) snprintf(lib, cap, "%s", abs);
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp || strpbrk(tmp, " :")) tmp = "/tmp";
  char link[PATH_MAX + 32];
  snprintf(link_dir, sizeof link_dir, "%s/gpuphase-lib-XXXXXX", tmp);
  if (!mkdtemp(link_dir)) {
    int e = errno;
    link_dir[0] = 0;
    fprintf(stderr,
            "gpuphase: the library's path has a space or a colon, which "
            "LD_PRELOAD cannot take, and no link to it could be made in %s: "
            "%s\n",
            tmp, strerror(e));
    return -1;
  }
  snprintf(link, sizeof link, "%s/libgpuphase.so", link_dir);
  if (symlink(lib, link) != 0 || strlen(link) >= cap) {
    int e = errno;
    fprintf(stderr,
            "gpuphase: the library's path has a space or a colon, which "
            "LD_PRELOAD cannot take, and no link to it could be made: %s\n",
            strerror(e));
    remove_link();
    return -1;
  }
  snprintf(lib, cap, "%s", link);
  return 0;
}

static int setup_env(const char *lib, const char *output, char *manifest,
                     size_t cap) {
  const char *old = getenv("LD_PRELOAD");
  size_t len = strlen(lib) + (old ? strlen(old) : 0) + 2;
  char *pre = malloc(len);
  if (!pre) return -1;
  /* After what is already there: a sanitizer runtime or allocator the user
   * preloads keeps its place; we still come before every CUDA library. */
  if (old && *old) snprintf(pre, len, "%s:%s", old, lib);
  else snprintf(pre, len, "%s", lib);
  int rc = setenv("LD_PRELOAD", pre, 1);
  free(pre);
  if (rc != 0) return -1;
  if (output && setenv("GPUPHASE_OUTPUT", output, 1) != 0) return -1;
  if (set_run_id() != 0) return -1;
  /* NVTX ranges become phases, unless another tool already injects. */
  const char *nvtx = getenv("NVTX_INJECTION64_PATH");
  if ((!nvtx || !*nvtx) && setenv("NVTX_INJECTION64_PATH", lib, 1) != 0)
    return -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(manifest, cap, "%s/gpuphase-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(manifest);
  if (fd < 0) {
    manifest[0] = 0; /* still run; we just cannot list the traces */
    return 0;
  }
  close(fd);
  return setenv("GPUPHASE_MANIFEST", manifest, 1);
}

/* The manifest has one line per profiled process: the path of its trace,
 * or "!" and the path it could not create (the process said why). */
static void report_traces(const char *manifest, int quiet) {
  if (!manifest[0]) return;
  FILE *f = fopen(manifest, "r");
  char line[PATH_MAX + 3];
  int count = 0, failed = 0;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0]) continue;
    if (line[0] == '!') {
      failed++;
      continue;
    }
    if (!quiet) fprintf(stderr, "gpuphase: trace written to %s\n", line);
    count++;
  }
  if (f) fclose(f);
  unlink(manifest);
  if (!count && !failed && !quiet) {
    const char *d = getenv("GPUPHASE_DISABLE");
    if (gp_switch_word(d) == 1)
      fprintf(stderr, "gpuphase: no trace written (GPUPHASE_DISABLE=%s)\n", d);
    else
      fprintf(stderr, "gpuphase: no trace written (no process made a CUDA "
                      "call)\n");
  }
}

static volatile pid_t child;

/* The signals passed on to COMMAND: the ones people send to stop, reload
 * or poke a program. */
static const int fwd_sigs[] = {SIGHUP,  SIGINT,  SIGQUIT,  SIGTERM, SIGUSR1,
                               SIGUSR2, SIGALRM, SIGWINCH, SIGTSTP, SIGPIPE};
#define NFWD (sizeof fwd_sigs / sizeof *fwd_sigs)

static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  /* one the terminal sent (^C, ^\, ^Z, a resize, a hangup) went to its
   * whole foreground process group, COMMAND included */
  if (si && si->si_code == SI_KERNEL) return;
  /* nor one of ours: SIGPIPE from writing to a reader gone */
  if (si && si->si_code == SI_USER && si->si_pid == getpid()) return;
  pid_t c = child;
  if (c > 0) kill(c, sig);
}

/* Whether process pid is stopped (state T in /proc). */
static int stopped(pid_t pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* after the command's name */
  return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Whether this process runs on its terminal (a shell's job control, in
 * the foreground or not): then COMMAND stopping stops us, so that the
 * shell sees its job stopped (^Z, or a background job reading the
 * terminal). Elsewhere a stopped COMMAND is left to whoever stopped it
 * (stopping with it would keep us stopped after a SIGCONT sent to it). */
static int on_terminal(void) {
  for (int fd = 0; fd < 3; fd++)
    if (tcgetpgrp(fd) >= 0) return 1;
  return 0;
}

/* COMMAND stopped with signal sig: stop the same way, and on SIGCONT,
 * continue it if it is still stopped. */
static void follow_stop(pid_t pid, int sig) {
  if (!on_terminal() || !stopped(pid)) return;
  int s = sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU ? sig : SIGSTOP;
  struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
  sigaction(s, &dfl, &old);
  kill(getpid(), s);
  sigaction(s, &old, NULL);
  if (stopped(pid)) kill(pid, SIGCONT);
}

static int run(int argc, char **argv) {
  const char *output = NULL;
  /* GPUPHASE_QUIET=1 silences the library and this launcher alike */
  int quiet = gp_switch_word(getenv("GPUPHASE_QUIET")) == 1, i = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
      if (i + 1 >= argc) return usage_error("option -o needs a PATTERN");
      output = argv[++i];
      if (!*output) return usage_error("empty output pattern");
    } else if (strncmp(a, "--output=", 9) == 0) {
      output = a + 9;
      if (!*output) return usage_error("empty output pattern");
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      return printed();
    } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
      printf("gpuphase %s\n", GP_VERSION);
      return printed();
    } else if (a[0] == '-' && a[1]) {
      char msg[256];
      snprintf(msg, sizeof msg, "unknown option '%s'", a);
      return usage_error(msg);
    } else {
      break;
    }
  }
  if (i >= argc) return usage_error("no command given");
  char lib[PATH_MAX], manifest[PATH_MAX];
  if (find_library(lib, sizeof lib) != 0 || preloadable(lib, sizeof lib) != 0)
    return 1;
  if (setup_env(lib, output, manifest, sizeof manifest) != 0) {
    fprintf(stderr, "gpuphase: cannot set up the environment: %s\n",
            strerror(errno));
    remove_link();
    return 1;
  }
  /* The signals of fwd_sigs are passed on to COMMAND (unless they were
   * ignored when we started, as under nohup: then COMMAND ignores them
   * too); blocked until COMMAND's pid is known, so that none is lost. */
  struct sigaction fwd = {.sa_sigaction = forward,
                          .sa_flags = SA_SIGINFO | SA_RESTART};
  struct sigaction old[NFWD], old_chld, dfl = {.sa_handler = SIG_DFL};
  sigset_t fset, oldmask;
  sigemptyset(&fset);
  for (size_t k = 0; k < NFWD; k++) sigaddset(&fset, fwd_sigs[k]);
  fwd.sa_mask = fset;
  sigprocmask(SIG_BLOCK, &fset, &oldmask);
  for (size_t k = 0; k < NFWD; k++) {
    sigaction(fwd_sigs[k], NULL, &old[k]);
    if (old[k].sa_handler != SIG_IGN) sigaction(fwd_sigs[k], &fwd, NULL);
  }
  /* SIGCHLD ignored (inherited) would have the kernel reap COMMAND and
   * lose its exit status: at its default here, as it was for COMMAND */
  sigaction(SIGCHLD, &dfl, &old_chld);
  pid_t parent = getpid();
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) errpipe[0] = errpipe[1] = -1;
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "gpuphase: fork: %s\n", strerror(errno));
    remove_link();
    return 1;
  }
  if (pid == 0) {
    for (size_t k = 0; k < NFWD; k++) sigaction(fwd_sigs[k], &old[k], NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    /* killed with us when we are killed outright (SIGKILL): as COMMAND
     * would be without us */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) raise(SIGKILL);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    execvp(argv[i], argv + i);
    int e = errno;
    if (errpipe[1] >= 0) {
      ssize_t w = write(errpipe[1], &e, sizeof e);
      (void)w;
    }
    _exit(e == ENOENT ? 127 : 126);
  }
  child = pid;
  sigprocmask(SIG_SETMASK, &oldmask, NULL);
  if (errpipe[1] >= 0) close(errpipe[1]);
  int exec_errno = 0;
  if (errpipe[0] >= 0) {
    if (read(errpipe[0], &exec_errno, sizeof exec_errno) != sizeof exec_errno)
      exec_errno = 0;
    close(errpipe[0]);
  }
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "gpuphase: waitpid: %s\n", strerror(errno));
      return 1;
    }
    if (!WIFSTOPPED(status)) break;
    follow_stop(pid, WSTOPSIG(status));
  }
  child = 0; /* reaped: its pid may be reused */
  remove_link();
  if (exec_errno) {
    fprintf(stderr, "gpuphase: cannot run '%s': %s\n", argv[i],
            strerror(exec_errno));
    if (manifest[0]) unlink(manifest);
    return exec_errno == ENOENT ? 127 : 126;
  }
  report_traces(manifest, quiet);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    /* Die the same way, so callers see the same termination. */
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the child already dumped */
    raise(sig); /* SIGKILL too */
    return 128 + sig; /* a signal that does not end a process */
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage_error("missing command (try 'gpuphase run -- CMD')");
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return printed();
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    printf("gpuphase %s\n", GP_VERSION);
    return printed();
  }
  if (strcmp(cmd, "run") == 0) return run(argc - 2, argv + 2);
  char msg[256];
  snprintf(msg, sizeof msg, "unknown command '%s'", cmd);
  return usage_error(msg);
}
