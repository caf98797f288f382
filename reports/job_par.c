/* gp_par_for and gp_par_until (job_par.h). */
#include "job_par.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct par {
  size_t n, next;
  size_t failed; /* the lowest index whose fn failed (n: none) */
  pthread_mutex_t mu;
  void (*fn)(void *, size_t);     /* gp_par_for */
  int (*until)(void *, size_t);   /* gp_par_until */
  void *ctx;
};

static void *worker(void *arg) {
  struct par *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next < p->failed ? p->next++ : p->n;
    pthread_mutex_unlock(&p->mu);
    if (i == p->n) return NULL;
    if (p->fn) {
      p->fn(p->ctx, i);
    } else if (p->until(p->ctx, i)) {
      pthread_mutex_lock(&p->mu);
      if (i < p->failed) p->failed = i;
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static size_t run(struct par *p, int threads) {
  if (threads < 1) threads = 1;
  if ((size_t)threads > p->n) threads = (int)p->n;
  if (threads <= 1) {
    worker(p);
    pthread_mutex_destroy(&p->mu);
    return p->failed;
  }
  pthread_t *t = malloc((size_t)(threads - 1) * sizeof *t);
  int started = 0;
  while (t && started < threads - 1 &&
         pthread_create(&t[started], NULL, worker, p) == 0)
    started++;
  worker(p);
  for (int i = 0; i < started; i++)
    pthread_join(t[i], NULL);
  free(t);
  pthread_mutex_destroy(&p->mu);
  return p->failed;
}

void gp_par_for(size_t n, int threads, void (*fn)(void *ctx, size_t i),
                void *ctx) {
  struct par p = {n, 0, n, PTHREAD_MUTEX_INITIALIZER, fn, NULL, ctx};
  run(&p, threads);
}

size_t gp_par_until(size_t n, int threads, int (*fn)(void *ctx, size_t i),
                    void *ctx) {
  struct par p = {n, 0, n, PTHREAD_MUTEX_INITIALIZER, NULL, fn, ctx};
  return run(&p, threads);
}

/* ---- the CPU quota of the process's cgroups ---- */

/* The first line of a small file into buf (NUL-terminated, no newline);
 * 0, or -1 when it cannot be read. */
static int first_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int ok = fgets(buf, (int)len, f) != NULL;
  fclose(f);
  if (!ok) return -1;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

/* A positive decimal number (at most 16 digits) from the whole of s, or
 * -1. */
static double number(const char *s) {
  if (!*s || strlen(s) > 16 || strspn(s, "0123456789") != strlen(s))
    return -1;
  return strtod(s, NULL);
}

/* CPUs granted by the limit files in dir (cgroup v2: cpu.max, "QUOTA
 * PERIOD" or "max PERIOD"; v1: cpu.cfs_quota_us, -1 for none, and
 * cpu.cfs_period_us), or HUGE_VAL when there is none or it is unreadable. */
static double dir_limit(const char *dir, int v2) {
  char path[4096], a[128], b[128];
  double q, p;
  if (v2) {
    if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path ||
        first_line(path, a, sizeof a) < 0)
      return HUGE_VAL;
    char *sp = strchr(a, ' ');
    if (!sp) return HUGE_VAL;
    *sp = 0;
    q = number(a);
    p = number(sp + 1);
  } else {
    if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir) >=
            (int)sizeof path ||
        first_line(path, a, sizeof a) < 0)
      return HUGE_VAL;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir) >=
            (int)sizeof path ||
        first_line(path, b, sizeof b) < 0)
      return HUGE_VAL;
    q = number(a); /* "-1": no quota */
    p = number(b);
  }
  return q > 0 && p > 0 ? q / p : HUGE_VAL;
}

/* The smallest limit of dir and its parents up to its first top bytes
 * (the mount point), that one included. */
static double walk_up(char *dir, size_t top, int v2) {
  double lim = HUGE_VAL;
  for (;;) {
    double l = dir_limit(dir, v2);
    if (l < lim) lim = l;
    char *slash = strrchr(dir, '/');
    if (strlen(dir) <= top || !slash || (size_t)(slash - dir) < top) break;
    *slash = 0;
  }
  return lim;
}

/* mountinfo's octal escapes (\040 for a space) decoded in place. */
static void unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
        s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *o++ = *s;
    }
  }
  *o = 0;
}

/* 1 when the comma-separated list holds word. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p;) {
    if (!strncmp(p, word, n) && (p[n] == ',' || !p[n])) return 1;
    p = strchr(p, ',');
    if (p) p++;
  }
  return 0;
}

int gp_cpu_quota(const char *root) {
  char path[4096], line[8192], v1[4096] = "", v2[4096] = "";
  int have1 = 0, have2 = 0;
  /* the process's cgroup in the v2 hierarchy and in v1's cpu one:
   * "ID:CONTROLLERS:PATH", v2's ID 0 with no controllers */
  snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || strlen(c2 + 1) >= sizeof v1) continue;
    *c2 = 0;
    if (!strcmp(line, "0:")) {
      strcpy(v2, c2 + 1);
      have2 = 1;
    } else if (has_word(c1 + 1, "cpu")) {
      strcpy(v1, c2 + 1);
      have1 = 1;
    }
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/proc/self/mountinfo", root);
  if (!(f = fopen(path, "re"))) return 0;
  double lim = HUGE_VAL;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE
     * SOURCE SUPEROPTIONS */
    char *field[5], *save = NULL, *tok = strtok_r(line, " ", &save);
    int nf = 0;
    for (; tok && nf < 5; tok = strtok_r(NULL, " ", &save))
      field[nf++] = tok;
    if (nf < 5) continue;
    while (tok && strcmp(tok, "-")) tok = strtok_r(NULL, " ", &save);
    char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
    char *src = type ? strtok_r(NULL, " ", &save) : NULL;
    char *sup = src ? strtok_r(NULL, " ", &save) : NULL;
    if (!sup) continue;
    int is2 = !strcmp(type, "cgroup2");
    if (!(is2 && have2) &&
        !(!strcmp(type, "cgroup") && have1 && has_word(sup, "cpu")))
      continue;
    char *mroot = field[3], *mpoint = field[4];
    unescape(mroot);
    unescape(mpoint);
    const char *cg = is2 ? v2 : v1;
    /* the cgroup as this mount shows it: its path below the mount's root
     * (a mount of another part of the tree shows nothing of it) */
    size_t rl = strcmp(mroot, "/") ? strlen(mroot) : 0;
    if (rl && (strncmp(cg, mroot, rl) || (cg[rl] && cg[rl] != '/'))) continue;
    char dir[4096];
    int top = snprintf(dir, sizeof dir, "%s%s", root,
                       strcmp(mpoint, "/") ? mpoint : "");
    if (top < 0 || top >= (int)sizeof dir) continue;
    if (snprintf(dir + top, sizeof dir - (size_t)top, "%s",
                 strcmp(cg + rl, "/") ? cg + rl : "") >=
        (int)(sizeof dir - (size_t)top))
      continue;
    double l = walk_up(dir, (size_t)top, is2);
    if (l < lim) lim = l;
  }
  fclose(f);
  if (lim == HUGE_VAL) return 0;
  double n = ceil(lim - 1e-9);
  return n < 1 ? 1 : n > 1e6 ? 1000000 : (int)n;
}

int gp_par_default(void) {
  int n = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
  }
  int q = gp_cpu_quota("");
  return q > 0 && q < n ? q : n;
}
