/* exec and spawn: the new program keeps the profiler. The trace of the
 * current image is completed before exec replaces it, and children whose
 * program cleared or rebuilt its environment get back LD_PRELOAD, the
 * NVTX injection path and the GPUPHASE_* settings this process started
 * with. */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

/* A new environment: env plus whatever of ours it lost. NULL when nothing
 * is missing (use env as is) or when out of memory (same). */
static char **fixed_env(char *const *env, char **preload_buf) {
  *preload_buf = NULL;
  if (!self_path[0]) return NULL;
  size_t n = 0;
  while (env && env[n]) n++;
  char **out = malloc((n + MAX_KEEP + 2) * sizeof *out);
  if (!out) return NULL;
  size_t k = 0;
  int changed = 0, saw_preload = 0;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(env[i], "LD_PRELOAD=", 11) == 0) {
      saw_preload = 1;
      if (!preload_has_us(env[i] + 11)) {
        size_t len = strlen(env[i]) + strlen(self_path) + 2;
        *preload_buf = malloc(len);
        if (*preload_buf) {
          strcpy(*preload_buf, env[i]);
          if (env[i][11]) strcat(*preload_buf, ":");
          strcat(*preload_buf, self_path);
          out[k++] = *preload_buf;
          changed = 1;
          continue;
        }
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
    size_t len = strlen(self_path) + 12;
    *preload_buf = malloc(len);
    if (*preload_buf) {
      strcpy(*preload_buf, "LD_PRELOAD=");
      strcat(*preload_buf, self_path);
      out[k++] = *preload_buf;
      changed = 1;
    }
  }
  for (int i = 0; i < n_keep; i++)
    if (!has_name(env, keep[i])) {
      out[k++] = keep[i];
      changed = 1;
    }
  out[k] = NULL;
  if (!changed) {
    free(out);
    free(*preload_buf);
    *preload_buf = NULL;
    return NULL;
  }
  return out;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static void *real(const char *name) {
  return dlsym(RTLD_NEXT, name);
}

/* The image is about to be replaced: complete its trace now. If exec then
 * fails, the process goes on and a later CUDA call starts a new trace. */
static void before_exec(void) {
  int saved = errno;
  gp_shutdown_for_exec();
  errno = saved;
}

static void after_failed_exec(void) {
  int saved = errno;
  gp_restart_after_exec();
  errno = saved;
}

static int do_exec(int path_search, const char *file, char *const argv[],
                   char *const envp[]) {
  static execve_fn rexecve;
  static execvpe_fn rexecvpe;
  if (!rexecve) rexecve = (execve_fn)real("execve");
  if (!rexecvpe) rexecvpe = (execvpe_fn)real("execvpe");
  execve_fn f = path_search ? rexecvpe : rexecve;
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  char *buf;
  char **env = fixed_env(envp, &buf);
  before_exec();
  int r = f(file, argv, env ? env : envp);
  int e = errno;
  free(env);
  free(buf);
  after_failed_exec();
  errno = e;
  return r;
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

/* execl* take their arguments inline: gather them (bounded). */
#define MAX_ARGS 4096
static int collect(const char *arg0, va_list ap, char **argv, char ***envp) {
  int n = 0;
  argv[n++] = (char *)arg0;
  while (arg0 && n < MAX_ARGS) {
    char *a = va_arg(ap, char *);
    argv[n++] = a;
    if (!a) break;
  }
  if (n == MAX_ARGS) {
    errno = E2BIG;
    return -1;
  }
  if (envp) *envp = va_arg(ap, char **);
  return 0;
}

#define EXECL_BODY(SEARCH, WITH_ENV)                                           \
  char **argv = malloc(MAX_ARGS * sizeof *argv);                               \
  if (!argv) {                                                                 \
    errno = ENOMEM;                                                            \
    return -1;                                                                 \
  }                                                                            \
  char **envp = environ;                                                       \
  va_list ap;                                                                  \
  va_start(ap, arg);                                                           \
  int rc = collect(arg, ap, argv, WITH_ENV ? &envp : NULL);                    \
  va_end(ap);                                                                  \
  if (rc == 0) rc = do_exec(SEARCH, path, argv, envp);                         \
  int e = errno;                                                               \
  free(argv);                                                                  \
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

static int do_spawn(const char *name, pid_t *pid, const char *file,
                    const posix_spawn_file_actions_t *fa,
                    const posix_spawnattr_t *attr, char *const argv[],
                    char *const envp[]) {
  spawn_fn f = (spawn_fn)real(name);
  if (!f) return ENOSYS;
  char *buf;
  char **env = fixed_env(envp, &buf);
  int r = f(pid, file, fa, attr, argv, env ? env : envp);
  free(env);
  free(buf);
  return r;
}

GP_EXPORT int posix_spawn(pid_t *pid, const char *path,
                          const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[],
                          char *const envp[]) {
  return do_spawn("posix_spawn", pid, path, fa, attr, argv, envp);
}

GP_EXPORT int posix_spawnp(pid_t *pid, const char *file,
                           const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[]) {
  return do_spawn("posix_spawnp", pid, file, fa, attr, argv, envp);
}
