/* The info and dump commands, run as a program (tests/trace/cli_driver.c,
 * path in argv[1]) on synthesised files whose contents are known: output
 * lines, error lines and exit codes are derived by hand from what was
 * written. */
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tt.h"

extern char **environ;

static const char *driver, *out_path, *err_path;
static char *out, *err;

/* Runs the driver with up to 6 arguments; captures stdout and stderr. */
static int run(const char *a1, const char *a2, const char *a3, const char *a4) {
  const char *argv[] = {driver, a1, a2, a3, a4, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid;
  int st = -1;
  if (posix_spawn(&pid, driver, &fa, NULL, (char **)argv, environ) == 0)
    waitpid(pid, &st, 0);
  posix_spawn_file_actions_destroy(&fa);
  free(out);
  free(err);
  size_t n = 0;
  out = (char *)tt_slurp(out_path, &n);
  out[n] = 0;
  err = (char *)tt_slurp(err_path, &n);
  err[n] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int has(const char *text, const char *needle) {
  if (strstr(text, needle)) return 1;
  fprintf(stderr, "  missing \"%s\" in:\n%s\n", needle, text);
  return 0;
}

static unsigned lines(const char *s) {
  unsigned n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

#define T0 1000000000ull /* tt_info's start_mono_ns */

static void add(gp_writer *w, uint32_t src, struct gpuphase_record r) {
  CHECK(gp_writer_add(w, src, &r) == GPUPHASE_OK);
}

/* 5 strings, 2 threads, 1 API def, 1 device, 5 API calls, 3 kernels,
 * 1 LOST (7 events), 1 STATE (degraded), 1 ITEMS, summary: 21 records.
 * The header has a run id and items per step (format version 2). */
static void write_known(const char *path, int summary) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  struct gp_process_info in = tt_info();
  in.run_id = "5eed0fc0ffee1234";
  in.step_items = 256;
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_THREAD};
  r.u.thread =
      (struct gpuphase_thread){0, 4242, gp_writer_intern(w, "main", 4)};
  add(w, 0, r);
  r.u.thread =
      (struct gpuphase_thread){1, 4243, gp_writer_intern(w, "a\"b\n\001", 5)};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_API_DEF;
  r.u.api_def = (struct gpuphase_api_def){
      .api = 1, .name = gp_writer_intern(w, "cudaLaunchKernel", 16)};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_DEVICE;
  r.u.device = (struct gpuphase_device){
      .device = 0,
      .name = gp_writer_intern(w, "NVIDIA H100 80GB HBM3", 21),
      .sms = 132,
      .mem_total = 80ull << 30,
      .cc_major = 9,
      .cc_minor = 0,
      .driver_version = 13000,
      .runtime_version = 12080};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_STATE;
  r.u.state = (struct gpuphase_state){
      T0 + 10, 1, gp_writer_intern(w, "CUPTI in use by another tool", 28)};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_LOST;
  r.u.lost = (struct gpuphase_lost){.start = T0 + 50, .count = 7};
  add(w, 0, r);
  for (uint64_t i = 1; i <= 5; i++) {
    r.kind = GPUPHASE_REC_API;
    r.u.api = (struct gpuphase_api){.thread = 0,
                                    .api = 1,
                                    .start = T0 + 1000 * i,
                                    .end = T0 + 1000 * i + 500,
                                    .ret = -1,
                                    .device = -1,
                                    .corr = i};
    add(w, 1, r);
  }
  for (uint64_t i = 1; i <= 3; i++) {
    r.kind = GPUPHASE_REC_KERNEL;
    r.u.kernel = (struct gpuphase_kernel){.start = T0 + 2000 * i + 100,
                                          .end = T0 + 2000 * i + 1100,
                                          .corr = i,
                                          .name = 3};
    add(w, 2, r);
  }
  r.kind = GPUPHASE_REC_ITEMS;
  r.u.items = (struct gpuphase_items){.thread = 0, .start = T0 + 1200,
                                      .count = 64};
  add(w, 3, r); /* a source of its own keeps source 1 in start order */
  struct gpuphase_summary s = {15, 7, GPUPHASE_FLAG_DEGRADED, T0 + 9000};
  CHECK(gp_writer_close(w, summary ? &s : NULL) == GPUPHASE_OK);
}

static void test_info(const char *good) {
  CHECK(run("info", good, NULL, NULL) == 0);
  CHECK(err[0] == 0);
  CHECK(has(out, "host:         testhost\n"));
  CHECK(has(out, "format:       version 5 (readable by readers >= 5)"));
  CHECK(has(out, "process:      pid 4242, ppid 1\n"));
  CHECK(has(out, "rank:         3 (local rank unknown)\n"));
  CHECK(has(out, "command:      python train.py --epochs 2\n"
                 "run id:       5eed0fc0ffee1234\n"
                 "step items:   256 per step (GPUPHASE_STEP_ITEMS)\n"));
  /* 1700000000 s after the epoch */
  CHECK(has(out, "started:      2023-11-14T22:13:20.000Z\n"));
  CHECK(has(out, "clock:        clock_gettime\n"));
  CHECK(has(out, "devices:      1\n  device 0: NVIDIA H100 80GB HBM3, 132 "
                 "SMs, 80.0 GiB, compute capability 9.0\n"));
  CHECK(has(out, "status:       complete\n"));
  CHECK(has(out, "records:      21 (string 5, thread 2, api_def 1, device 1, "
                 "api 5, kernel 3, lost 1, state 1, summary 1, items 1)\n"));
  CHECK(has(out, "events:       15 (summary: 15)\n"));
  CHECK(has(out, "lost events:  7 in LOST records (summary: 7)\n"));
  CHECK(has(out, "degraded:     yes (CUPTI in use by another tool)\n"));
  CHECK(has(out, "first event:  +0.000000010 s after start (monotonic "
                 "1000000010 ns)\n"));
  CHECK(has(out, "last event:   +0.000007100 s after start (monotonic "
                 "1000007100 ns)\n"));
  CHECK(has(out, "span:         0.000007090 s\n"));
}

static void test_dump(const char *good) {
  CHECK(run("dump", good, NULL, NULL) == 0);
  CHECK(err[0] == 0);
  CHECK_EQ_U(lines(out), 21);
  CHECK(has(out, "string id=1 text=\"main\"\n"));
  CHECK(has(out, "thread thread=1 tid=4243 name=\"a\\\"b\\n\\x01\"\n"));
  CHECK(has(out, "device device=0 name=\"NVIDIA H100 80GB HBM3\" sms=132 "
                 "mem_total=85899345920 cc_major=9 cc_minor=0 "));
  CHECK(has(out, " mem_bus_width=0 driver_version=13000 "
                 "runtime_version=12080\n"));
  CHECK(has(out, "items thread=0 start=1000001200 count=64\n"));
  CHECK(has(out, "state start=1000000010 state=1 reason=\"CUPTI in use by "
                 "another tool\"\n"));
  CHECK(has(out, "api thread=0 api=1 start=1000003000 end=1000003500 ret=-1 "
                 "corr=3 device=-1 "));
  CHECK(has(out, "kernel device=0 stream=0 corr=2 start=1000004100 "
                 "end=1000005100 name=\"cudaLaunchKernel\" "));
  CHECK(has(out, "summary events=15 lost=7 flags=1 end=1000009000\n"));
  /* time order: untimed metadata, then STATE(10) LOST(50) API(1000)
   * ITEMS(1200) API(2000) ... */
  CHECK(run("dump", "--sorted", good, NULL) == 0);
  CHECK_EQ_U(lines(out), 21);
  const char *state = strstr(out, "\nstate "), *lost = strstr(out, "\nlost ");
  const char *api1 = strstr(out, "\napi "), *k1 = strstr(out, "\nkernel ");
  const char *api2 = strstr(out, "start=1000002000");
  const char *items = strstr(out, "\nitems ");
  CHECK(state && lost && api1 && k1 && api2 && items);
  CHECK(state < lost && lost < api1 && api1 < api2 && api2 < k1);
  CHECK(api1 < items && items < api2);
  CHECK(run("dump", "--help", NULL, NULL) == 0);
  CHECK(has(out, "Usage: gpuphase-report dump"));
  CHECK(run("dump", good, good, NULL) == 2);
  CHECK(has(err, "takes one FILE"));
  CHECK(run("dump", NULL, NULL, NULL) == 2);
  CHECK(has(err, "missing FILE"));
  CHECK(run("dump", "--bogus", good, NULL) == 2);
  CHECK(has(err, "unknown option --bogus"));
}

static void test_unreadable(const uint8_t *file, size_t len, const char *bad) {
  CHECK(run("info", "/nonexistent/missing.gph", NULL, NULL) == 1);
  CHECK(has(err, "/nonexistent/missing.gph: cannot open: No such file"));
  CHECK(out[0] == 0);

  tt_write_file(bad, "hello, world\n", 13);
  CHECK(run("info", bad, NULL, NULL) == 1);
  CHECK(has(err, ": not a gpuphase trace"));
  CHECK(run("dump", bad, NULL, NULL) == 1);
  CHECK(has(err, ": not a gpuphase trace"));

  tt_write_file(bad, file, 50);
  CHECK(run("info", bad, NULL, NULL) == 1);
  CHECK(has(err, ": truncated header"));

  uint8_t *copy = malloc(len);
  memcpy(copy, file, len);
  copy[10] = 9; /* min_reader 9 */
  tt_write_file(bad, copy, len);
  CHECK(run("info", bad, NULL, NULL) == 1);
  CHECK(has(err, ": written by a newer gpuphase: format version 5 needs a "
                 "reader of version >= 9"));
  free(copy);
}

static void test_damaged(const char *good, const char *bad) {
  size_t len;
  uint8_t *file = tt_slurp(good, &len);
  static struct tt_frame f[64];
  uint32_t hs;
  size_t nf = tt_frames(file, len, &hs, f, 64);
  CHECK(nf >= 3);
  test_unreadable(file, len, bad);
  uint8_t *copy = malloc(len);
  char where[64];
  /* damage inside the second-to-last frame's payload (before the summary) */
  const struct tt_frame *d = &f[nf - 2];
  memcpy(copy, file, len);
  copy[d->end - 5] ^= 0x40;
  tt_write_file(bad, copy, len);
  snprintf(where, sizeof where,
           "corrupt frame at byte %llu: ", (unsigned long long)d->off);
  CHECK(run("info", bad, NULL, NULL) == 1);
  CHECK(has(err, where));
  CHECK(has(out, "status:       corrupt (frame at byte"));
  CHECK(run("dump", bad, NULL, NULL) == 1);
  CHECK(has(err, where));
  CHECK(lines(out) > 0); /* the records before the damage are printed */

  /* cut in the middle of the summary frame: reported, not an error */
  tt_write_file(bad, file, (f[nf - 1].off + f[nf - 1].end) / 2);
  CHECK(run("info", bad, NULL, NULL) == 0);
  CHECK(has(err, "warning: truncated trace"));
  CHECK(has(out, "status:       truncated"));
  CHECK(has(out, "events:       15\n"));
  CHECK(run("dump", bad, NULL, NULL) == 0);
  CHECK(has(err, "warning: truncated trace"));
  CHECK_EQ_U(lines(out), 20);

  /* several files: each reported, the bad one makes the status 1 */
  CHECK(run("info", good, "/nonexistent/x.gph", good) == 1);
  CHECK(has(out, "\n\nfile:"));
  CHECK(has(err, "/nonexistent/x.gph: cannot open"));
  free(copy);
  free(file);
}

static void test_usage(const char *good) {
  CHECK(run("info", NULL, NULL, NULL) == 2);
  CHECK(has(err, "missing FILE (see gpuphase-report info --help)\n"));
  CHECK(!strchr(err, '\n') || !strchr(err, '\n')[1]); /* one line */
  CHECK(run("info", "--frobnicate", good, NULL) == 2);
  CHECK(has(err, "unknown option --frobnicate"));
  CHECK(run("info", "--help", NULL, NULL) == 0);
  CHECK(has(out, "Usage: gpuphase-report info FILE...\n"));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_cli DRIVER\n");
    return 2;
  }
  driver = argv[1];
  out_path = tt_tmpfile("cli-out");
  err_path = tt_tmpfile("cli-err");
  const char *good = tt_tmpfile("cli-good"), *bad = tt_tmpfile("cli-bad");
  write_known(good, 1);
  test_info(good);
  test_dump(good);
  test_damaged(good, bad);
  test_usage(good);
  write_known(bad, 0);
  CHECK(run("info", bad, NULL, NULL) == 0);
  CHECK(has(out, "status:       no summary"));
  CHECK(has(out, "events:       15\nlost events:  7 in LOST records\n"));
  free(out);
  free(err);
  return tt_done("test_cli");
}
