/* gpuphase-report's outputs (path in argv[1]), for every command: report
 * (text, JSON, HTML), info, dump, compare, check and the help texts.
 *   - a write error (standard output or -o/--junit on /dev/full) exits
 *     non-zero with one line naming the output and the reason;
 *   - an output that is one of the inputs -- the same file by device and
 *     inode, under its own name, another name, a symbolic or a hard link,
 *     or standard output appended to it -- is refused with exit status 2
 *     before anything is read, and the input is left as it was;
 *   - an output that is no input is written whole (an older, longer file
 *     in its place is truncated). */
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tt.h"

extern char **environ;

static const char *report, *err_path, *dir;
static char *err;

/* Runs gpuphase-report with args (NULL-terminated) and standard output on
 * out (opened with flags); captures stderr. Returns the exit status. */
static int run_to(const char *out, int flags, const char *const *args) {
  const char *argv[32] = {report};
  size_t n = 1;
  while (args[n - 1] && n < 31) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, flags, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  int st = -1;
  if (posix_spawn(&pid, report, &fa, NULL, (char **)argv, environ) == 0)
    waitpid(pid, &st, 0);
  posix_spawn_file_actions_destroy(&fa);
  free(err);
  size_t len = 0;
  err = (char *)tt_slurp(err_path, &len);
  err[len] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define RUN(out, flags, ...)                                                   \
  run_to(out, flags, (const char *[]){__VA_ARGS__, NULL})
#define RUN0(...) RUN("/dev/null", O_WRONLY, __VA_ARGS__)

static int one_line(const char *needle) {
  const char *nl = strchr(err, '\n');
  if (strstr(err, needle) && nl && !nl[1]) return 1;
  fprintf(stderr, "  expected one line with \"%s\", got:\n%s\n", needle, err);
  return 0;
}

static char *path_in(const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void add(gp_writer *w, uint32_t src, struct gpuphase_record r) {
  CHECK(gp_writer_add(w, src, &r) == GPUPHASE_OK);
}

/* A device, launches and their kernels: enough for every command. pid
 * added to the usual one's makes another process (compare and check say
 * when one process is given twice). */
static void write_trace(const char *path, int64_t pid) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  struct gp_process_info in = tt_info();
  in.pid += pid;
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  r.u.device = (struct gpuphase_device){.name = gp_writer_intern(w, "GPU", 3),
                                        .sms = 10,
                                        .mem_total = 1 << 30,
                                        .cc_major = 9};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_API_DEF;
  r.u.api_def = (struct gpuphase_api_def){
      .api = 1, .name = gp_writer_intern(w, "cudaLaunchKernel", 16)};
  add(w, 0, r);
  uint64_t t0 = in.start_mono_ns;
  for (uint64_t i = 1; i <= 50; i++) {
    r.kind = GPUPHASE_REC_API;
    r.u.api = (struct gpuphase_api){.api = 1,
                                    .start = t0 + 10000 * i,
                                    .end = t0 + 10000 * i + 2000,
                                    .corr = i};
    add(w, 1, r);
    r.kind = GPUPHASE_REC_KERNEL;
    r.u.kernel = (struct gpuphase_kernel){.start = t0 + 10000 * i + 3000,
                                          .end = t0 + 10000 * i + 9000,
                                          .corr = i,
                                          .name = 1};
    add(w, 2, r);
  }
  struct gpuphase_summary s = {100, 0, 0, t0 + 600000};
  CHECK(gp_writer_close(w, &s) == GPUPHASE_OK);
}

static uint8_t *orig;
static size_t orig_len;

static int intact(const char *path) {
  size_t len = 0;
  uint8_t *now = tt_slurp(path, &len);
  int same = len == orig_len && !memcmp(now, orig, len);
  free(now);
  if (!same) fprintf(stderr, "  %s changed\n", path);
  return same;
}

/* t and the traces of five other processes (runs[0] is t): a run each. */
static void test_write_errors(char *const *runs, const char *b) {
  const char *t = runs[0];
  static const char *const cmds[][12] = {
      {"X"},
      {"-f", "json", "X"},
      {"-f", "html", "X"},
      {"info", "X"},
      {"dump", "X"},
      {"dump", "--sorted", "X"},
      {"compare", "X", "1", "2", "--vs", "3", "4", "5"},
      {"compare", "-f", "json", "X", "--vs", "1"},
      {"check", "--budgets", "B", "X"},
      {"check", "-f", "markdown", "--budget", "kernel < 99%", "X"},
      {"--help"},
      {"-V"},
      {"info", "--help"},
      {"dump", "--help"},
      {"compare", "--help"},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    const char *args[13] = {0};
    for (size_t j = 0; cmds[i][j]; j++)
      args[j] = !strcmp(cmds[i][j], "X")   ? t
                : !strcmp(cmds[i][j], "B") ? b
                : cmds[i][j][0] >= '1' && cmds[i][j][0] <= '5' && !cmds[i][j][1]
                    ? runs[cmds[i][j][0] - '0']
                    : cmds[i][j];
    int rc = run_to("/dev/full", O_WRONLY, args);
    if (rc == 0 || rc > 2 ||
        !one_line("standard output: write error: No "
                  "space left on device"))
      fprintf(stderr, "  command %zu (%s %s): exit status %d\n", i, args[0],
              args[1] ? args[1] : "", rc);
    CHECK(rc == 1 || rc == 2);
    /* with the reason (a --help longer than stdio's buffer once said
     * "output lost") */
    CHECK(one_line("standard output: write error: No space left on device"));
    /* the same to /dev/null: a verdict (compare, check) or success, and
     * nothing to say */
    rc = run_to("/dev/null", O_WRONLY, args);
    CHECK((rc == 0 || rc == 1 || rc == 3) && err[0] == 0);
  }
  CHECK(RUN0("-o", "/dev/full", t) == 1);
  CHECK(one_line("gpuphase-report: /dev/full: write error: No space left"));
  /* the exports name the reason too (Perfetto's writer once said "output
   * lost") */
  CHECK(RUN0("-f", "perfetto", "-o", "/dev/full", t) == 1);
  CHECK(one_line("gpuphase-report: /dev/full: write error: No space left"));
  CHECK(RUN0("-f", "chrome", "-o", "/dev/full", t) == 1);
  CHECK(one_line("gpuphase-report: /dev/full: write error: No space left"));
  CHECK(RUN0("compare", t, "--vs", runs[1], "-o", "/dev/full") == 2);
  CHECK(one_line("compare: /dev/full: write error: No space left"));
  CHECK(RUN0("compare", t, "--vs", runs[1], "--junit", "/dev/full") == 2);
  CHECK(one_line("compare: /dev/full: write error: No space left"));
  CHECK(RUN0("check", "--budgets", b, t, "-o", "/dev/full") == 2);
  CHECK(one_line("check: /dev/full: write error: No space left"));
}

static void test_same_file(const char *t, const char *b) {
  char *other = path_in("other.gph"), *sym = path_in("sym.gph"),
       *hard = path_in("hard.gph"), *dotted = path_in("./t.gph");
  CHECK(symlink(t, sym) == 0);
  CHECK(link(t, hard) == 0);
  const char *outs[] = {t, sym, hard, dotted};
  for (size_t i = 0; i < 4; i++) {
    CHECK(RUN0("-o", outs[i], t) == 2);
    CHECK(one_line("refusing to write the report to"));
    CHECK(RUN0("-f", "json", "-o", outs[i], other, t) == 2);
    CHECK(one_line("it is the input file"));
    CHECK(intact(t));
  }
  /* standard output appended to the input */
  CHECK(RUN(t, O_WRONLY | O_APPEND, t) == 2);
  CHECK(one_line("refusing to write the report to standard output"));
  /* -o -: standard output, for every format (before, the text and JSON
   * wrote a file named "-", and the exports got past this check) */
  const char *dash_fmts[] = {"text", "json", "html", "perfetto", "chrome"};
  for (size_t i = 0; i < 5; i++) {
    CHECK(RUN(t, O_WRONLY | O_APPEND, "-f", dash_fmts[i], "-o", "-", t) == 2);
    CHECK(one_line("refusing to write the report to standard output"));
    CHECK(RUN(t, O_RDWR, "-f", dash_fmts[i], "-o", "-", t) == 2);
    CHECK(intact(t));
  }
  CHECK(RUN(t, O_WRONLY | O_APPEND, "compare", other, "--vs", t, "-o", "-") == 2);
  CHECK(one_line("compare: refusing to write to standard output"));
  CHECK(RUN(hard, O_WRONLY | O_APPEND, "dump", t) == 2);
  CHECK(one_line("dump: refusing to write to standard output"));
  CHECK(RUN(sym, O_WRONLY | O_APPEND, "info", other, t) == 2);
  CHECK(one_line("info: refusing to write to standard output"));
  CHECK(intact(t));
  /* compare and check: traces and budget files are inputs */
  CHECK(RUN0("compare", other, "--vs", t, "-o", hard) == 2);
  CHECK(one_line("compare: refusing to write to"));
  CHECK(RUN0("compare", t, "--vs", other, "--junit", sym) == 2);
  CHECK(one_line("it is the input file"));
  CHECK(RUN(t, O_WRONLY | O_APPEND, "compare", other, "--vs", t) == 2);
  CHECK(one_line("compare: refusing to write to standard output"));
  CHECK(intact(t));
  size_t blen = 0;
  uint8_t *budgets = tt_slurp(b, &blen);
  CHECK(RUN0("check", "--budgets", b, t, "-o", b) == 2);
  CHECK(one_line("check: refusing to write to"));
  CHECK(RUN(b, O_WRONLY | O_APPEND, "check", "--budgets", b, t) == 2);
  CHECK(one_line("check: refusing to write to standard output"));
  /* the step summary is a courtesy: refused, said, the verdict stands */
  setenv("GITHUB_STEP_SUMMARY", b, 1);
  int verdict = RUN0("check", "-f", "markdown", "--budgets", b, t);
  unsetenv("GITHUB_STEP_SUMMARY");
  CHECK(verdict == 0 || verdict == 1 || verdict == 3);
  CHECK(one_line("refusing to write to"));
  size_t blen2 = 0;
  uint8_t *budgets2 = tt_slurp(b, &blen2);
  CHECK(blen == blen2 && !memcmp(budgets, budgets2, blen));
  free(budgets);
  free(budgets2);
  unlink(sym);
  unlink(hard);
  free(sym);
  free(hard);
  free(dotted);
  free(other);
}

/* Inputs that are not files: a FIFO without a writer as a summary (an
 * empty pipe, said at once) or a budgets file (both once blocked for ever
 * in open), a directory as a summary, an endless device as
 * budgets (once read until memory ran out), a budgets file of several
 * lines, and one with a line too long. */
static void test_odd_inputs(const char *t) {
  char *fifo = path_in("fifo"), *many = path_in("many.txt"),
       *wide = path_in("wide.txt");
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK(RUN0("merge", fifo) == 1);
  CHECK(one_line("fifo: empty pipe: no summary"));
  CHECK(RUN0("merge", dir) == 1); /* a directory */
  CHECK(one_line("not a regular file or a pipe"));
  CHECK(RUN0("check", "--budgets", fifo, t) == 2); /* empty: no budget */
  CHECK(one_line("fifo holds no budget (only comments and blank lines)"));
  CHECK(RUN0("check", "--budgets", "/dev/zero", t) == 2);
  CHECK(one_line("/dev/zero: larger than 1048576 bytes: not a budgets file"));
  const char two[] = "kernel < 99%\r\n# a comment\n\nbusy >= 0%";
  tt_write_file(many, two, sizeof two - 1);
  int rc = RUN0("check", "--budgets", many, t); /* parsed: a verdict */
  CHECK(rc == 0 || rc == 1 || rc == 3);
  char line[5000];
  memset(line, ' ', sizeof line);
  tt_write_file(wide, line, sizeof line);
  CHECK(RUN0("check", "--budgets", wide, t) == 2);
  CHECK(one_line("wide.txt:1: line longer than 4096 bytes"));
  /* a path too long for one line loses its middle, not the reason */
  char lng[700];
  for (size_t i = 0; i + 2 < sizeof lng; i += 2) lng[i] = 'x', lng[i + 1] = '/';
  lng[sizeof lng - 1] = 0;
  CHECK(RUN0(lng) == 1);
  CHECK(one_line("/x/ ... ") || one_line(" ... x/"));
  CHECK(one_line("No such file or directory"));
  CHECK(RUN0("compare", lng, "--vs", t) == 2);
  CHECK(one_line("No such file or directory"));
  CHECK(RUN0("merge", lng) == 1);
  CHECK(one_line("No such file or directory"));
  /* a file name with a newline or an escape sequence: one clean line */
  const char *odd_cmds[][2] = {{NULL, NULL}, {"info", NULL}, {"dump", NULL},
                               {"merge", NULL}};
  for (size_t i = 0; i < 4; i++) {
    const char *nl = "no\nsuch\x1b[31m.gph";
    int r = odd_cmds[i][0] ? RUN0(odd_cmds[i][0], nl) : RUN0(nl);
    CHECK(r == 1);
    CHECK(one_line("no?such?[31m.gph"));
  }
  /* an empty -o is a usage error before anything is read; a seed past
   * 2^64 is refused, not wrapped */
  CHECK(RUN0("-o", "", t) == 2);
  CHECK(one_line("empty output file name"));
  CHECK(RUN0("compare", t, "--vs", t, "--seed", "99999999999999999999999") == 2);
  CHECK(one_line("invalid --seed"));
  unlink(fifo);
  unlink(many);
  unlink(wide);
  free(fifo);
  free(many);
  free(wide);
}

/* An output that is no input replaces what was there. */
static void test_other_output(const char *t) {
  char *txt = path_in("report.txt"), *ref = path_in("ref.txt");
  uint8_t junk[100000];
  memset(junk, 'x', sizeof junk);
  tt_write_file(txt, junk, sizeof junk);
  CHECK(RUN0("-o", txt, t) == 0 && err[0] == 0);
  CHECK(RUN(ref, O_WRONLY | O_CREAT | O_TRUNC, t) == 0);
  size_t a = 0, b = 0;
  uint8_t *x = tt_slurp(txt, &a), *y = tt_slurp(ref, &b);
  CHECK(a > 0 && a == b && !memcmp(x, y, a));
  free(x);
  free(y);
  unlink(txt);
  unlink(ref);
  free(txt);
  free(ref);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_outputs GPUPHASE-REPORT\n");
    return 2;
  }
  report = argv[1];
  err_path = tt_tmpfile("out-err");
  char tmpl[] = "/tmp/gptest-outputs-XXXXXX";
  const char *tmp = getenv("TMPDIR");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s/gptest-outputs-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  dir = mkdtemp(buf);
  if (!dir) dir = mkdtemp(tmpl);
  if (!dir) return 1;
  char *t = path_in("t.gph"), *other = path_in("other.gph"),
       *b = path_in("budgets.txt"), *runs[6] = {t};
  write_trace(t, 0);
  write_trace(other, 0);
  for (int i = 1; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "run%d.gph", i);
    write_trace(runs[i] = path_in(name), i);
  }
  tt_write_file(b, "kernel < 99%\n", 13);
  orig = tt_slurp(t, &orig_len);
  test_write_errors(runs, b);
  test_same_file(t, b);
  test_other_output(t);
  test_odd_inputs(t);
  CHECK(intact(t));
  unlink(t);
  unlink(other);
  for (int i = 1; i < 6; i++) {
    unlink(runs[i]);
    free(runs[i]);
  }
  unlink(b);
  rmdir(dir);
  free(t);
  free(other);
  free(b);
  free(orig);
  free(err);
  return tt_done("test_outputs");
}
