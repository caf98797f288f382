/* libgpuphase-report (include/gpuphase/report.h) against gpuphase-report:
 *   test_report_lib GPUPHASE_REPORT MKTRACE MKJOB TMPDIR
 * On traces written by mktrace (a timeline worked out in mktrace.c) and on
 * the ranks of a job written by mkjob (the job view), the library's text,
 * JSON and HTML and its compare/check verdicts must be the command line's
 * bytes and exit codes for the same options; bad input must give the
 * pinned codes and one-line messages naming what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gpuphase/report.h"

static int failures;
static const char *cli, *tmp;

#define CHECK(c, ...)                                                          \
  do {                                                                         \
    if (!(c)) {                                                                \
      failures++;                                                              \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* The command's standard output and exit status. */
static char *run(const char *args, size_t *len, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "NO_COLOR=1 '%s' %s 2>/dev/null", cli, args);
  FILE *p = popen(cmd, "r");
  char *buf = NULL;
  size_t n = 0, cap = 0, got;
  char chunk[65536];
  while (p && (got = fread(chunk, 1, sizeof chunk, p)) > 0) {
    if (n + got + 1 > cap && !(buf = realloc(buf, cap = 2 * (n + got + 1))))
      abort();
    memcpy(buf + n, chunk, got);
    n += got;
  }
  int st = p ? pclose(p) : -1;
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  *len = n;
  return buf;
}

static void same(const char *what, const char *got, size_t glen,
                 const char *want, size_t wlen) {
  size_t i = 0;
  while (i < glen && i < wlen && got[i] == want[i])
    i++;
  CHECK(glen == wlen && i == glen,
        "%s: %zu bytes from the library, %zu from the CLI, first difference "
        "at byte %zu",
        what, glen, wlen, i);
}

/* only: the one format the options are for (NULL: all three), as the
 * command line takes --html-detail for html alone, --processes for text. */
static void render_like_cli(const char *const *files, size_t n,
                            const char *set[][2], const char *cli_args,
                            const char *only) {
  char err[512];
  int code = -1;
  gpuphase_report_opts *o = gpuphase_report_opts_new();
  CHECK(o, "opts_new");
  for (size_t i = 0; set[i][0]; i++)
    CHECK(gpuphase_report_opts_set(o, set[i][0], set[i][1], err, sizeof err) ==
              0,
          "set %s=%s: %s", set[i][0], set[i][1], err);
  gpuphase_report *r =
      gpuphase_report_open(files, n, o, &code, err, sizeof err);
  gpuphase_report_opts_free(o); /* the report keeps a copy */
  CHECK(r && code == 0, "open: %d %s", code, err);
  if (!r) return;
  static const char *const fmts[] = {"json", "text", "html"};
  for (size_t f = 0; f < 3; f++) {
    if (only && strcmp(only, fmts[f])) continue;
    char *out = NULL, args[2048];
    size_t len, wlen;
    int st;
    CHECK(gpuphase_report_render(r, fmts[f], &out, &len, err, sizeof err) == 0,
          "render %s: %s", fmts[f], err);
    int at = snprintf(args, sizeof args, "-f %s %s", fmts[f], cli_args);
    for (size_t i = 0; i < n; i++)
      at += snprintf(args + at, sizeof args - (size_t)at, " '%s'", files[i]);
    char *want = run(args, &wlen, &st);
    CHECK(st == 0, "%s: CLI exit %d", args, st);
    same(args, out, len, want, wlen);
    CHECK(out && strlen(out) == len, "%s: not NUL-terminated at len", args);
    free(want);
    gpuphase_report_buffer_free(out);
  }
  gpuphase_report_close(r);
}

static void gate_like_cli(const char *cmd, const char *const *argv, size_t argc,
                          const char *cli_args) {
  char *out = NULL, err[512], args[2048];
  size_t len, wlen;
  int exit_code = -1, st;
  int rc = gpuphase_report_compare(cmd, argv, argc, &out, &len, &exit_code, err,
                                   sizeof err);
  CHECK(rc == 0, "%s: %d %s", cmd, rc, err);
  snprintf(args, sizeof args, "%s %s", cmd, cli_args);
  char *want = run(args, &wlen, &st);
  CHECK(exit_code == st, "%s: exit %d, CLI %d", args, exit_code, st);
  same(args, out, len, want, wlen);
  free(want);
  gpuphase_report_buffer_free(out);
}

static int one_line(const char *s) {
  return *s && !strchr(s, '\n');
}

static void errors(const char *good) {
  char err[512], missing[1024];
  int code = -1, exit_code = -1;
  snprintf(missing, sizeof missing, "%s/missing.gph", tmp);
  const char *m[] = {missing};
  CHECK(!gpuphase_report_open(m, 1, NULL, &code, err, sizeof err) &&
            code == GPUPHASE_REPORT_E_INPUT && strstr(err, missing) &&
            one_line(err),
        "missing file: %d %s", code, err);
  CHECK(!gpuphase_report_open(m, 0, NULL, &code, err, sizeof err) &&
            code == GPUPHASE_REPORT_E_USAGE,
        "no file: %d %s", code, err);
  gpuphase_report_opts *o = gpuphase_report_opts_new();
  static const char *bad[][2] = {{"window", "abc"},   {"window", "0ms"},
                                 {"top", "0"},        {"warmup", "-1"},
                                 {"link-gbps", "x"},  {"step", ""},
                                 {"colour", "always"}, {"html-detail", "2s..1s"},
                                 {"html-budget", "99"}, {"jobs", "0"},
                                 {"jobs", "4097"},    {"jobs", "two"},
                                 {"processes", "0"},  {"processes", "some"},
                                 {"job", "yes"},      {"no-job", "0"},
                                 {"comm-kernels", ""}, {"comm-kernels", "a,,b"},
                                 {"frames", "some"},  {"weight", "wall"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(gpuphase_report_opts_set(o, bad[i][0], bad[i][1], err, sizeof err) ==
                  GPUPHASE_REPORT_E_USAGE &&
              strstr(err, bad[i][0]) && one_line(err),
          "%s=%s: %s", bad[i][0], bad[i][1], err);
  gpuphase_report_opts_free(o);
  gpuphase_report_opts_free(NULL);
  gpuphase_report_close(NULL);
  const char *g[] = {good};
  gpuphase_report *r = gpuphase_report_open(g, 1, NULL, &code, err, sizeof err);
  char *out = (char *)1;
  size_t len;
  CHECK(r &&
            gpuphase_report_render(r, "xml", &out, &len, err, sizeof err) ==
                GPUPHASE_REPORT_E_USAGE &&
            !out && strstr(err, "xml"),
        "format xml: %s", err);
  CHECK(!gpuphase_report_truncated(r, 0) && !gpuphase_report_truncated(r, 1),
        "a whole file is not truncated");
  gpuphase_report_close(r);
  const char *av[] = {good, "--vs", good, "--max-slowdown", "lots"};
  CHECK(gpuphase_report_compare("compare", av, 5, &out, &len, &exit_code, err,
                                sizeof err) == GPUPHASE_REPORT_E_USAGE &&
            exit_code == 2 && !out && strstr(err, "max-slowdown") &&
            one_line(err),
        "compare bad option: %d %s", exit_code, err);
  const char *av2[] = {good, "--vs", missing};
  CHECK(gpuphase_report_compare("compare", av2, 3, &out, &len, &exit_code, err,
                                sizeof err) == GPUPHASE_REPORT_E_INPUT &&
            exit_code == 2 && strstr(err, missing),
        "compare missing file: %d %s", exit_code, err);
  CHECK(gpuphase_report_compare("diff", av2, 3, &out, &len, &exit_code, err,
                                sizeof err) == GPUPHASE_REPORT_E_USAGE,
        "unknown command: %s", err);
}

/* The trace cut inside its second frame ("GPFR" starts each frame). */
static void truncated(const char *good) {
  char cut[1024], err[512];
  snprintf(cut, sizeof cut, "%s/cut.gph", tmp);
  static char data[1 << 20];
  FILE *f = fopen(good, "rb");
  size_t n = f ? fread(data, 1, sizeof data, f) : 0;
  if (f) fclose(f);
  char *first = memmem(data, n, "GPFR", 4);
  char *second =
      first ? memmem(first + 4, n - (size_t)(first + 4 - data), "GPFR", 4)
            : NULL;
  CHECK(second, "%s: no second frame", good);
  if (!second) return;
  f = fopen(cut, "wb");
  CHECK(f && fwrite(data, 1, (size_t)(second - data) + 12, f) > 0 &&
            fclose(f) == 0,
        "cannot write %s", cut);
  const char *c[] = {cut};
  int code = -1;
  gpuphase_report *r = gpuphase_report_open(c, 1, NULL, &code, err, sizeof err);
  CHECK(r && gpuphase_report_truncated(r, 0), "cut file: %d %s", code, err);
  gpuphase_report_close(r);
}

/* The ranks of a job (6 ranks on 3 hosts, rank 4 slow: more than the 4
 * ranks the text shows by default): the job view comes without asking, as
 * on the command line, with each option of its own. */
static void job(const char *mkjob, const char *const *two) {
  char dir[1024], cmd[4096], files[6][1100], err[512];
  snprintf(dir, sizeof dir, "%s/job", tmp);
  snprintf(cmd, sizeof cmd,
           "rm -rf '%s' && mkdir -p '%s' && '%s' --ranks 6 --per-host 2 "
           "--slow 4 '%s'",
           dir, dir, mkjob, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
  const char *f[6];
  for (int i = 0; i < 6; i++) {
    snprintf(files[i], sizeof files[i], "%s/rank-%d.gph", dir, i);
    f[i] = files[i];
  }
  /* the job view is there: the comparisons below are not of two absences */
  int code = -1;
  gpuphase_report *r = gpuphase_report_open(f, 6, NULL, &code, err, sizeof err);
  char *out = NULL;
  size_t len = 0;
  CHECK(r && gpuphase_report_render(r, "json", &out, &len, err, sizeof err) ==
                 0 &&
            strstr(out, "\"job\": {") && strstr(out, "\"stragglers\""),
        "the job's JSON has no job view: %d %s", code, err);
  gpuphase_report_buffer_free(out);
  gpuphase_report_close(r);
  const char *none[][2] = {{NULL, NULL}};
  const char *nojob[][2] = {{"no-job", ""}, {NULL, NULL}};
  const char *all[][2] = {{"processes", "all"}, {"jobs", "1"}, {NULL, NULL}};
  const char *two_procs[][2] = {{"processes", "2"}, {NULL, NULL}};
  const char *comm[][2] = {{"comm-kernels", "nccl*,gemm_*"},
                           {"jobs", "3"},
                           {NULL, NULL}};
  const char *force[][2] = {{"job", "1"}, {NULL, NULL}};
  render_like_cli(f, 6, none, "", NULL);
  render_like_cli(f, 6, nojob, "--no-job", NULL);
  render_like_cli(f, 6, all, "--processes all -j 1", "text");
  render_like_cli(f, 6, two_procs, "--processes 2", "text");
  render_like_cli(f, 6, comm, "--comm-kernels 'nccl*,gemm_*' -j 3", NULL);
  render_like_cli(two, 2, force, "--job", NULL);
  /* the first failing file in order is the one named, whatever the threads */
  char missing[1100];
  snprintf(missing, sizeof missing, "%s/rank-9.gph", dir);
  const char *bad[] = {f[0], missing, f[1], "/nonexistent/x.gph"};
  for (int j = 1; j <= 4; j *= 2) {
    gpuphase_report_opts *o = gpuphase_report_opts_new();
    char jv[8];
    snprintf(jv, sizeof jv, "%d", j);
    CHECK(o && gpuphase_report_opts_set(o, "jobs", jv, err, sizeof err) == 0,
          "jobs %s", jv);
    CHECK(!gpuphase_report_open(bad, 4, o, &code, err, sizeof err) &&
              code == GPUPHASE_REPORT_E_INPUT && strstr(err, "rank-9.gph") &&
              one_line(err),
          "-j %d: the first failing file: %d %s", j, code, err);
    gpuphase_report_opts_free(o);
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr,
            "usage: test_report_lib GPUPHASE_REPORT MKTRACE MKJOB TMPDIR\n");
    return 2;
  }
  cli = argv[1];
  tmp = argv[4];
  char a[1024], b[1024], cmd[8192];
  snprintf(a, sizeof a, "%s/lib-a.gph", tmp);
  snprintf(b, sizeof b, "%s/lib-b.gph", tmp);
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && rm -f '%s' '%s' && '%s' '%s' && "
           "'%s' --pid 77 '%s'",
           tmp, a, b, argv[2], a, argv[2], b);
  if (system(cmd) != 0) {
    fprintf(stderr, "FAIL: %s\n", cmd);
    return 1;
  }
  CHECK(!strcmp(gpuphase_report_version(), GP_VERSION_EXPECTED), "version %s",
        gpuphase_report_version());
  const char *one[] = {a}, *two[] = {a, b};
  const char *none[][2] = {{NULL, NULL}};
  const char *some[][2] = {{"window", "200ns"},   {"top", "2"},
                           {"warmup", "0"},       {"step", "st*"},
                           {"link-gbps", "12.5"}, {NULL, NULL}};
  const char *detail[][2] = {{"html-detail", "0..1us"},
                             {"html-budget", "100"},
                             {NULL, NULL}};
  render_like_cli(one, 1, none, "", NULL);
  render_like_cli(one, 1, some,
                  "--window 200ns --top 2 --warmup 0 --step 'st*' "
                  "--link-gbps 12.5",
                  NULL);
  render_like_cli(two, 2, none, "", NULL);
  render_like_cli(two, 2, detail, "--html-detail 0..1us --html-budget 100",
                  "html");
  const char *frames[][2] = {{"frames", "all"}, {NULL, NULL}};
  render_like_cli(one, 1, frames, "--frames all", NULL);
  job(argv[3], two);
  char args[4096];
  const char *av[] = {a, "--vs", b, "--seed=3", "-f", "json"};
  snprintf(args, sizeof args, "'%s' --vs '%s' --seed=3 -f json", a, b);
  gate_like_cli("compare", av, 6, args);
  const char *cv[] = {"--budget", "host_wait<=20%", "-f", "json", a};
  snprintf(args, sizeof args, "--budget 'host_wait<=20%%' -f json '%s'", a);
  gate_like_cli("check", cv, 5, args);
  const char *tv[] = {"--budget", "lost_events==0", a};
  snprintf(args, sizeof args, "--budget 'lost_events==0' '%s'", a);
  gate_like_cli("check", tv, 3, args);
  errors(a);
  truncated(a);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures != 0;
}
