/* exec and spawn: the new program keeps the profiler. The trace of the
 * current image is completed before exec replaces it, and children whose
 * program cleared or rebuilt its environment get back LD_PRELOAD, the
 * NVTX injection path and the GPUPHASE_* settings this process started
 * with.
 *
 * execve is async-signal-safe and may be called from a signal handler or
 * in a vfork child (Python's subprocess uses vfork), where malloc could
 * wait for ever on a lock the interrupted code holds, or corrupt the
 * parent's heap. So the wrappers never allocate with malloc: what they
 * build lives on the stack (or, past 64 KiB, in a mapping of its own), and
 * the real functions are looked up at load time. In a vfork child the
 * trace is the parent's, which goes on: it is left alone. */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gp_lifecycle.h"
#include "gp_shim.h"

extern char **environ;

#define MAX_KEEP 32
static char *keep[MAX_KEEP]; /* "NAME=value" as seen at startup */
static int n_keep;
static char self_path[4096];
static char *start_preload; /* "LD_PRELOAD=..." as this process started */

/* Constructor time, after shim.c's (101) has put the run id in the
 * environment: remember what children must inherit. */
__attribute__((constructor(102))) static void spawn_init(void) {
  int saved = errno;
  Dl_info info;
  if (dladdr((void *)spawn_init, &info) && info.dli_fname)
    strncpy(self_path, info.dli_fname, sizeof self_path - 1);
  const char *pre = getenv("LD_PRELOAD");
  if (pre && self_path[0] && strstr(pre, self_path)) {
    size_t len = strlen(pre) + 12;
    start_preload = malloc(len);
    if (start_preload) {
      strcpy(start_preload, "LD_PRELOAD=");
      strcat(start_preload, pre);
    }
  }
  for (char **e = environ; e && *e && n_keep < MAX_KEEP; e++) {
    if (strncmp(*e, "GPUPHASE_", 9) == 0 ||
        strncmp(*e, "NVTX_INJECTION64_PATH=", 22) == 0) {
      char *copy = strdup(*e);
      if (copy) keep[n_keep++] = copy;
    }
  }
  errno = saved;
}

static int has_name(char *const *env, const char *entry) {
  size_t n = strcspn(entry, "=") + 1;
  for (; env && *env; env++)
    if (strncmp(*env, entry, n) == 0) return 1;
  return 0;
}

static int preload_has_us(const char *value) {
  const char *base = strrchr(self_path, '/');
  base = base ? base + 1 : self_path;
  return strstr(value, self_path) != NULL || strstr(value, base) != NULL;
}

/* Bytes fixed_env needs for env: the new array and one LD_PRELOAD
 * value. */
static size_t env_need(char *const *env) {
  size_t n = 0, pre = 0;
  for (; env && env[n]; n++)
    if (strncmp(env[n], "LD_PRELOAD=", 11) == 0 && strlen(env[n]) > pre)
      pre = strlen(env[n]);
  return (n + MAX_KEEP + 2) * sizeof(char *) + pre + strlen(self_path) + 16;
}

/* A new environment in mem (env_need(env) bytes): env plus whatever of
 * ours it lost. NULL when nothing is missing (use env as is). */
static char **fixed_env(char *const *env, void *mem) {
  if (!self_path[0]) return NULL;
  size_t n = 0;
  while (env && env[n]) n++;
  char **out = mem;
  char *preload_buf = (char *)(out + n + MAX_KEEP + 2);
  size_t k = 0;
  int changed = 0, saw_preload = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(env[i], "LD_PRELOAD=", 11) == 0) {
      saw_preload = 1;
      if (!preload_has_us(env[i] + 11)) {
        strcpy(preload_buf, env[i]);
        if (env[i][11]) strcat(preload_buf, ":");
        strcat(preload_buf, self_path);
        out[k++] = preload_buf;
        changed = 1;
        continue;
      }
    }
    out[k++] = env[i];
  }
  if (!saw_preload && start_preload) {
    /* everything preloaded at start, in its order (a sanitizer runtime must
     * stay first) */
    out[k++] = start_preload;
    changed = 1;
  } else if (!saw_preload) {
    strcpy(preload_buf, "LD_PRELOAD=");
    strcat(preload_buf, self_path);
    out[k++] = preload_buf;
    changed = 1;
  }
  for (int i = 0; i < n_keep; i++)
    if (!has_name(env, keep[i])) {
      out[k++] = keep[i];
      changed = 1;
    }
  out[k] = NULL;
  return changed ? out : NULL;
}

/* Scratch memory without malloc: the caller's stack buffer when it is big
 * enough, else a mapping (NULL when none can be had). */
#define STACK_SCRATCH 65536
static void *scratch(size_t need, void *stack_buf) {
  if (need <= STACK_SCRATCH) return stack_buf;
  void *m = mmap(NULL, need, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

static void scratch_free(void *mem, size_t need) {
  if (mem && need > STACK_SCRATCH) munmap(mem, need);
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static void *real(const char *name) {
  return dlsym(RTLD_NEXT, name);
}

/* Looked up at load time: dlsym may allocate. */
static execve_fn rexecve;
static execvpe_fn rexecvpe;
static fexecve_fn rfexecve;
static execveat_fn rexecveat; /* glibc 2.34 and later */
static spawn_fn rspawn, rspawnp;

__attribute__((constructor(103))) static void spawn_resolve(void) {
  int saved = errno;
  rexecve = (execve_fn)real("execve");
  rexecvpe = (execvpe_fn)real("execvpe");
  rfexecve = (fexecve_fn)real("fexecve");
  rexecveat = (execveat_fn)real("execveat");
  rspawn = (spawn_fn)real("posix_spawn");
  rspawnp = (spawn_fn)real("posix_spawnp");
  errno = saved;
}

/* The image is about to be replaced: complete its trace now (unless this
 * is a vfork child, whose memory and trace are its parent's). If exec then
 * fails, the process goes on and a later CUDA call starts a new trace. */
static int before_exec(void) {
  int saved = errno;
  int owner = gp_lifecycle_owner();
  if (owner) gp_shutdown_for_exec();
  errno = saved;
  return owner;
}

static void after_failed_exec(void) {
  int saved = errno;
  gp_restart_after_exec();
  errno = saved;
}

/* execveat without the C library's (before glibc 2.34): the system call. */
static int at_syscall(int fd, const char *file, char *const argv[],
                      char *const envp[], int flags) {
#ifdef SYS_execveat
  return (int)syscall(SYS_execveat, fd, file, argv, envp, flags);
#else
  (void)fd, (void)file, (void)argv, (void)envp, (void)flags;
  errno = ENOSYS;
  return -1;
#endif
}

/* How the new program is named: a path, a name searched in PATH, an open
 * descriptor (fexecve), or a directory descriptor, a path and flags
 * (execveat). */
enum { BY_PATH, BY_SEARCH, BY_FD, BY_AT };

static int do_exec_as(int how, int fd, const char *file, char *const argv[],
                      char *const envp[], int flags) {
  if (!rexecve) spawn_resolve(); /* called before the constructors ran */
  if ((how == BY_PATH && !rexecve) || (how == BY_SEARCH && !rexecvpe) ||
      (how == BY_FD && !rfexecve)) {
    errno = ENOSYS;
    return -1;
  }
  size_t need = env_need(envp);
  _Alignas(16) char stack_buf[need <= STACK_SCRATCH ? need : 1];
  void *mem = scratch(need, stack_buf);
  char **env = mem ? fixed_env(envp, mem) : NULL;
  char *const *use = env ? env : envp;
  int owner = before_exec();
  int r = how == BY_PATH     ? rexecve(file, argv, use)
          : how == BY_SEARCH ? rexecvpe(file, argv, use)
          : how == BY_FD     ? rfexecve(fd, argv, use)
          : rexecveat        ? rexecveat(fd, file, argv, use, flags)
                             : at_syscall(fd, file, argv, use, flags);
  int e = errno;
  scratch_free(mem, need);
  if (owner) after_failed_exec();
  errno = e;
  return r;
}

static int do_exec(int path_search, const char *file, char *const argv[],
                   char *const envp[]) {
  return do_exec_as(path_search ? BY_SEARCH : BY_PATH, -1, file, argv, envp, 0);
}

GP_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  return do_exec(0, path, argv, envp);
}
GP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  return do_exec(1, file, argv, envp);
}
GP_EXPORT int execv(const char *path, char *const argv[]) {
  return do_exec(0, path, argv, environ);
}
GP_EXPORT int execvp(const char *file, char *const argv[]) {
  return do_exec(1, file, argv, environ);
}
GP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  return do_exec_as(BY_FD, fd, NULL, argv, envp, 0);
}
/* Where the C library has no execveat (before glibc 2.34), the system
 * call. */
GP_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
                       char *const envp[], int flags) {
  return do_exec_as(BY_AT, dirfd, path, argv, envp, flags);
}

/* glibc declares arg non-null; a program may still pass NULL (no
 * arguments at all), which the real execl takes. */
static inline const char *unchecked(const char *p) {
  __asm__("" : "+r"(p));
  return p;
}

/* execl* take their arguments inline: counted, then gathered into an
 * array on the stack (or a mapping past 64 KiB). */
#define EXECL_BODY(SEARCH, WITH_ENV)                                           \
  const char *first = unchecked(arg);                                          \
  va_list ap, ap2;                                                             \
  va_start(ap, arg);                                                           \
  va_copy(ap2, ap);                                                            \
  size_t n = 1;                                                                \
  if (first)                                                                   \
    while (va_arg(ap2, char *)) n++;                                           \
  va_end(ap2);                                                                 \
  size_t need = (n + 1) * sizeof(char *);                                      \
  _Alignas(16) char stack_buf[need <= STACK_SCRATCH ? need : 1];               \
  char **argv = scratch(need, stack_buf);                                      \
  if (!argv) {                                                                 \
    va_end(ap);                                                                \
    errno = ENOMEM;                                                            \
    return -1;                                                                 \
  }                                                                            \
  argv[0] = (char *)first;                                                     \
  for (size_t i = 1; i < n; i++) argv[i] = va_arg(ap, char *);                 \
  argv[n] = NULL;                                                              \
  if (first) (void)va_arg(ap, char *); /* the terminating NULL */              \
  char **envp = environ;                                                       \
  if (WITH_ENV) envp = va_arg(ap, char **);                                    \
  va_end(ap);                                                                  \
  int rc = do_exec(SEARCH, path, argv, envp);                                  \
  int e = errno;                                                               \
  scratch_free(argv, need);                                                    \
  errno = e;                                                                   \
  return rc;

GP_EXPORT int execl(const char *path, const char *arg, ...) {
  EXECL_BODY(0, 0)
}
GP_EXPORT int execlp(const char *path, const char *arg, ...) {
  EXECL_BODY(1, 0)
}
GP_EXPORT int execle(const char *path, const char *arg, ...) {
  EXECL_BODY(0, 1)
}

static int do_spawn(spawn_fn f, pid_t *pid, const char *file,
                    const posix_spawn_file_actions_t *fa,
                    const posix_spawnattr_t *attr, char *const argv[],
                    char *const envp[]) {
  if (!f) return ENOSYS;
  size_t need = env_need(envp);
  _Alignas(16) char stack_buf[need <= STACK_SCRATCH ? need : 1];
  void *mem = scratch(need, stack_buf);
  char **env = mem ? fixed_env(envp, mem) : NULL;
  int r = f(pid, file, fa, attr, argv, env ? env : envp);
  scratch_free(mem, need);
  return r;
}

GP_EXPORT int posix_spawn(pid_t *pid, const char *path,
                          const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[],
                          char *const envp[]) {
  if (!rspawn) spawn_resolve();
  return do_spawn(rspawn, pid, path, fa, attr, argv, envp);
}

GP_EXPORT int posix_spawnp(pid_t *pid, const char *file,
                           const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[]) {
  if (!rspawnp) spawn_resolve();
  return do_spawn(rspawnp, pid, file, fa, attr, argv, envp);
}
