/* Configuration from the environment (read once, in the constructor) and
 * warnings on stderr. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "gp_settings.h"
#include "gp_switch.h"

struct gp_config gp_cfg;

/* A warning is one whole line: its fixed text (the subject and the reason)
 * always, its variable parts (paths, values) shortened where long, and the
 * newline, so that nothing of ours is glued to the program's next line. */
#define LINE_MAX_ 1024
#define ARG_MAX_ 160 /* a longer %s argument keeps its two ends */

struct line {
  char buf[LINE_MAX_];
  size_t n;
};

static void put(struct line *l, const char *s, size_t len) {
  if (len > sizeof l->buf - 1 - l->n) len = sizeof l->buf - 1 - l->n;
  memcpy(l->buf + l->n, s, len);
  l->n += len;
}

static void put_arg(struct line *l, const char *s) {
  if (!s) s = "(null)";
  size_t len = strlen(s);
  if (len <= ARG_MAX_) {
    put(l, s, len);
    return;
  }
  put(l, s, ARG_MAX_ / 2);
  put(l, "...", 3);
  put(l, s + len - (ARG_MAX_ / 2 - 3), ARG_MAX_ / 2 - 3);
}

/* Supports %s %d %u %ld %lu %zu and %%, which is all gp_warn is given. */
static const char *put_conv(struct line *l, const char *p, va_list *ap) {
  char tmp[32];
  int k = 0;
  if (*p == 's') put_arg(l, va_arg(*ap, const char *));
  else if (*p == 'd') k = snprintf(tmp, sizeof tmp, "%d", va_arg(*ap, int));
  else if (*p == 'u') k = snprintf(tmp, sizeof tmp, "%u", va_arg(*ap, unsigned));
  else if (p[0] == 'l' && p[1] == 'd')
    k = snprintf(tmp, sizeof tmp, "%ld", va_arg(*ap, long)), p++;
  else if (p[0] == 'l' && p[1] == 'u')
    k = snprintf(tmp, sizeof tmp, "%lu", va_arg(*ap, unsigned long)), p++;
  else if (p[0] == 'z' && p[1] == 'u')
    k = snprintf(tmp, sizeof tmp, "%zu", va_arg(*ap, size_t)), p++;
  else put(l, p[0] == '%' ? "%" : "%?", p[0] == '%' ? 1 : 2);
  if (k > 0) put(l, tmp, (size_t)k);
  return p;
}

void gp_warn(const char *fmt, ...) {
  if (gp_cfg.quiet) return;
  struct line l = {.n = 0};
  put(&l, "gpuphase: ", 10);
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p == '%' && p[1]) p = put_conv(&l, p + 1, &ap);
    else put(&l, p, 1);
  }
  va_end(ap);
  /* one line whatever the values hold (a variable set to "a\nb") */
  for (size_t i = 0; i < l.n; i++)
    if ((unsigned char)l.buf[i] < 0x20 || l.buf[i] == 0x7f) l.buf[i] = '?';
  l.buf[l.n++] = '\n'; /* put() always leaves room for it */
  /* never waits: a pipe whose reader has stopped reading (full) loses the
   * line rather than block the program's thread; a line fits in the room
   * a writable pipe has (PIPE_BUF) */
  int saved = errno;
  struct pollfd pf = {.fd = 2, .events = POLLOUT};
  if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT)) {
    struct gp_io_quiet q;
    gp_io_quiet_begin(&q);
    ssize_t w = write(2, l.buf, l.n);
    (void)w;
    gp_io_quiet_end(&q);
  }
  errno = saved;
}

void gp_io_quiet_begin(struct gp_io_quiet *q) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  sigaddset(&s, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &s, &q->old);
  sigemptyset(&q->before);
  sigpending(&q->before);
}

void gp_io_quiet_end(struct gp_io_quiet *q) {
  int saved = errno;
  sigset_t now;
  sigemptyset(&now);
  sigpending(&now);
  static const int sigs[] = {SIGPIPE, SIGXFSZ};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    if (!sigismember(&now, sigs[i]) || sigismember(&q->before, sigs[i]))
      continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sigs[i]);
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &q->old, NULL);
  errno = saved;
}

static unsigned env_uint(const char *name, unsigned def, unsigned lo,
                         unsigned hi) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  unsigned long x = strtoul(v, &end, 10);
  if (*end || x < lo || x > hi) {
    gp_warn("ignoring %s=%s (expected %u..%u)", name, v, lo, hi);
    return def;
  }
  return (unsigned)x;
}

/* An on/off setting (gp_switch.h's words); unset or empty: def. */
static int env_switch(const char *name, int def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  int on = gp_switch_word(v);
  if (on >= 0) return on;
  gp_warn("ignoring %s=%s (expected 1 or 0)", name, v);
  return def;
}

static void copy_env(char *dst, size_t cap, const char *name,
                     const char *def) {
  const char *v = getenv(name);
  snprintf(dst, cap, "%s", (v && *v) ? v : def);
}

/* A decimal count; empty or unset: def (0 reads as 0: none). */
static uint64_t env_u64(const char *name, uint64_t def) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || errno || v[0] < '0' || v[0] > '9') {
    gp_warn("ignoring %s=%s (expected a whole number)", name, v);
    return def;
  }
  return (uint64_t)x;
}

/* GPUPHASE_STACKS: off (or 0, false, no), sync, sampled (the default, or
 * 1, true, yes, on) or all, in any case, as the GP_STK_* values of
 * gp_stacks.h (0..3). */
static int env_stacks(int *set) {
  static const char *const names[] = {"off", "sync", "sampled", "all"};
  const char *v = getenv("GPUPHASE_STACKS");
  *set = v && *v;
  if (!*set) return 2;
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(v, names[i])) return i;
  /* as for the other switches: 0 turns it off, 1 on (the default mode) */
  int on = gp_switch_word(v);
  if (on >= 0) return on ? 2 : 0;
  gp_warn("ignoring GPUPHASE_STACKS=%s (expected off, sync, sampled or all)",
          v);
  *set = 0;
  return 2;
}

/* 64 random bits for a run id: getrandom, else whatever differs between
 * two starts (clocks, pid, where the stack landed), mixed by splitmix64. */
static uint64_t random_u64(void) {
  uint64_t x = 0;
  if (getrandom(&x, sizeof x, GRND_NONBLOCK) == (ssize_t)sizeof x && x)
    return x;
  struct timespec a, b;
  clock_gettime(CLOCK_REALTIME, &a);
  clock_gettime(CLOCK_MONOTONIC, &b);
  x = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
  x ^= ((uint64_t)b.tv_nsec << 20) ^ ((uint64_t)getpid() << 40) ^
       (uint64_t)(uintptr_t)&a;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Every process of one run carries the same id in its header: the first
 * profiled process that finds none makes one and puts it in its own
 * environment, which forked children share and exec'd ones inherit
 * (spawn.c puts it back where a program rebuilt the environment: it is
 * in place before spawn.c's constructor takes its copy). */
void gp_settings_run_id(void) {
  if (gp_cfg.run_id[0]) return;
  snprintf(gp_cfg.run_id, sizeof gp_cfg.run_id, "%016llx",
           (unsigned long long)random_u64());
  if (setenv("GPUPHASE_RUN_ID", gp_cfg.run_id, 1) != 0)
    gp_warn("cannot set GPUPHASE_RUN_ID: %s; child processes get their own",
            strerror(errno));
}

void gp_settings_read(void) {
  gp_cfg.quiet = env_switch("GPUPHASE_QUIET", 0);
  copy_env(gp_cfg.output, sizeof gp_cfg.output, "GPUPHASE_OUTPUT",
           GP_OUTPUT_DEFAULT);
  gp_cfg.ring_bytes =
      (size_t)env_uint("GPUPHASE_BUFFER_KB", 4096, 64, 1u << 20) * 1024;
  gp_cfg.flush_ms = env_uint("GPUPHASE_FLUSH_MS", 500, 10, 500);
  gp_cfg.poll_ms = gp_cfg.flush_ms < 10 ? gp_cfg.flush_ms : 10;
  gp_cfg.cupti = env_switch("GPUPHASE_CUPTI", 1);
  copy_env(gp_cfg.cupti_lib, sizeof gp_cfg.cupti_lib, "GPUPHASE_CUPTI_LIB",
           "");
  /* a longer id is cut the same way in every process of the run */
  copy_env(gp_cfg.run_id, sizeof gp_cfg.run_id, "GPUPHASE_RUN_ID", "");
  gp_cfg.step_items = env_u64("GPUPHASE_STEP_ITEMS", 0);
  gp_cfg.stacks = env_stacks(&gp_cfg.stacks_set);
  gp_cfg.sample_ms = env_uint("GPUPHASE_SAMPLE_MS", 100, 0, 60000);
  if (gp_cfg.sample_ms > 0 && gp_cfg.sample_ms < 10) {
    gp_warn("GPUPHASE_SAMPLE_MS=%u raised to 10", gp_cfg.sample_ms);
    gp_cfg.sample_ms = 10;
  }
  gp_cfg.nvml = env_switch("GPUPHASE_NVML", 1);
}
