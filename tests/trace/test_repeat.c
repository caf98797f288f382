/* Repeat records (format version 5, docs/format.md section 4): the same
 * records written three ways, with small frames so that many are cut:
 *   full:    gp_writer_set_repeat(w, 0), every record in full form (the
 *            version-4 encoding);
 *   repeat:  gp_writer_add of every record, the writer choosing the form;
 *   run:     the API records that repeat the one before through
 *            gp_writer_repeat_begin / gp_repeat_put / gp_writer_repeat_end
 *            (the recorder's path), the rest through gp_writer_add.
 * "run" must be "repeat" byte for byte; "repeat" must be smaller than
 * "full" and hold the same records, in file order and in time order; and
 * gpuphase-report (argv[1]) must say the same of both, text and JSON.
 * The records: a launch loop on one thread (corr one more each call,
 * times that vary, and now and then a call that overlaps the one before,
 * a corr that jumps, another stack or another API), its kernels on one
 * stream, and counter samples. */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "encode.h"
#include "reader_ext.h"
#include "tt.h"

#define NCALLS 30000
#define FRAME 4096
#define MAXREC (3 * NCALLS + 64)

enum { FULL, REPEAT, RUN };

struct gen {
  uint64_t rng, t, corr;
  struct gpuphase_record api, kernel, sample;
};

static uint64_t rnd(struct gen *g, uint64_t n) {
  return tt_rand(&g->rng) % n;
}

/* The next call of the loop, derived from the one before. */
static void next_call(struct gen *g) {
  struct gpuphase_api *a = &g->api.u.api;
  uint64_t r = rnd(g, 100);
  a->api = r < 3 ? 3 : 67; /* now and then a synchronisation */
  a->stack = r >= 3 && r < 6 ? 1 + rnd(g, 4) : 0;
  a->stream = r == 7 ? 0 : 0x5000;
  g->corr += r == 8 ? 3 : 1;
  a->corr = g->corr;
  /* a call that starts before the one before ended: full form */
  uint64_t start = r == 9 ? a->end - 1 - rnd(g, 50) : a->end + rnd(g, 3000);
  if (start < a->start) start = a->start;
  a->start = start;
  a->end = start + 500 + rnd(g, 20000);
}

static void add(gp_writer *w, int mode, uint32_t source,
                const struct gpuphase_record *r, struct gp_repeat_run *run,
                int *open) {
  if (*open) {
    CHECK(gp_writer_repeat_end(w, run) == GPUPHASE_OK);
    *open = 0;
  }
  (void)mode;
  CHECK(gp_writer_add(w, source, r) == GPUPHASE_OK);
}

static void write_trace(const char *path, int mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  struct gp_process_info in = tt_info();
  int err = 0;
  gp_writer *w = gp_writer_open(fd, &in, FRAME, &err);
  CHECK(w != NULL);
  if (!w) return;
  if (mode == FULL) gp_writer_set_repeat(w, 0);
  struct gen g = {.rng = 77, .t = 1000000, .corr = 10};
  struct gpuphase_record r = {.kind = GPUPHASE_REC_THREAD};
  r.u.thread.thread = 0, r.u.thread.tid = 4242;
  r.u.thread.name = gp_writer_intern(w, "main", 4);
  CHECK(gp_writer_add(w, 0, &r) == GPUPHASE_OK);
  static const char *names[] = {"cudaDeviceSynchronize", "cudaLaunchKernel"};
  static const uint64_t ids[] = {3, 67}, cls[] = {8, 1};
  for (int i = 0; i < 2; i++) {
    memset(&r, 0, sizeof r);
    r.kind = GPUPHASE_REC_API_DEF;
    r.u.api_def.api = ids[i], r.u.api_def.cls = cls[i];
    r.u.api_def.name = gp_writer_intern(w, names[i], strlen(names[i]));
    CHECK(gp_writer_add(w, 0, &r) == GPUPHASE_OK);
  }
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_DEVICE;
  r.u.device.device = 0, r.u.device.sms = 132, r.u.device.cc_major = 9;
  r.u.device.name = gp_writer_intern(w, "SimGPU", 6);
  CHECK(gp_writer_add(w, 0, &r) == GPUPHASE_OK);

  g.api.kind = GPUPHASE_REC_API;
  g.api.u.api = (struct gpuphase_api){.api = 67, .start = g.t, .end = g.t,
                                      .device = 0, .func = 0x4000,
                                      .grid = 1, .block = 32};
  g.kernel.kind = GPUPHASE_REC_KERNEL;
  g.kernel.u.kernel = (struct gpuphase_kernel){
      .stream = 0x5000, .grid_x = 1, .grid_y = 1, .grid_z = 1, .block_x = 32,
      .block_y = 1, .block_z = 1, .regs = 16};
  g.kernel.u.kernel.name = gp_writer_intern(w, "spin", 4);
  g.sample.kind = GPUPHASE_REC_SAMPLE;
  g.sample.u.sample.metric = 1;
  struct gpuphase_record prev = g.api;
  struct gp_repeat_run run;
  int open = 0, have_prev = 0;
  uint64_t dev_end = 0;
  for (int i = 0; i < NCALLS; i++) {
    next_call(&g);
    struct gpuphase_api *a = &g.api.u.api, *p = &prev.u.api;
    int rep = have_prev && mode == RUN && a->api == p->api &&
              a->stack == p->stack && a->stream == p->stream &&
              a->corr - p->corr <= 1;
    if (rep && !open)
      open = !gp_writer_repeat_begin(w, 1, GPUPHASE_REC_API, &run);
    if (!(rep && open && gp_repeat_put(&run, a->corr - p->corr, a->start,
                                       a->end)))
      add(w, mode, 1, &g.api, &run, &open);
    else if (run.p >= run.stop) {
      CHECK(gp_writer_repeat_end(w, &run) == GPUPHASE_OK);
      open = 0;
    }
    prev = g.api, have_prev = 1;
    if (a->api == 67) { /* its kernel, after the one before on the stream */
      struct gpuphase_kernel *k = &g.kernel.u.kernel;
      k->corr = a->corr;
      k->start = (a->start > dev_end ? a->start : dev_end) + 1000 + rnd(&g, 50);
      k->end = k->start + 4000 + rnd(&g, 30);
      dev_end = k->end;
      add(w, mode, 2, &g.kernel, &run, &open);
    }
    if (i % 100 == 0) { /* a sample of 100 calls, value changing or not */
      struct gpuphase_sample *s = &g.sample.u.sample;
      s->start = s->end ? s->end : a->start;
      s->end = a->end;
      if (rnd(&g, 2)) s->value = (int64_t)rnd(&g, 100);
      add(w, mode, 3, &g.sample, &run, &open);
    }
  }
  if (open) CHECK(gp_writer_repeat_end(w, &run) == GPUPHASE_OK);
  struct gpuphase_summary sum = {.events = gp_writer_events(w),
                                 .end = g.api.u.api.end + 1};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
}

static struct gpuphase_record recs[2][MAXREC];

static void same_records(const char *a, const char *b, int sorted) {
  size_t n[2] = {0, 0};
  const char *path[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    int err = 0;
    gpuphase_reader *r = sorted ? gpuphase_reader_open_sorted(path[i], &err)
                                : gpuphase_reader_open(path[i], &err);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(tt_read_all(r, recs[i], MAXREC, &n[i]) == 0);
    gpuphase_reader_close(r);
  }
  CHECK_EQ_U(n[0], n[1]);
  CHECK(n[0] > NCALLS + NCALLS / 2 && n[0] <= MAXREC);
  size_t bad = 0, m = n[0] < n[1] ? n[0] : n[1];
  if (m > MAXREC) m = MAXREC;
  if (sorted) {
    for (size_t i = 0; i < m; i++)
      if (!tt_rec_equal(&recs[0][i], &recs[1][i], bad == 0)) bad++;
  } else {
    /* frames of different sources interleave as they fill up, which
     * differs with the records' sizes: each kind (here each in a source
     * of its own) in the same order */
    for (uint32_t k = 1; k < GPUPHASE_REC_MAX; k++)
      for (size_t i = 0, j = 0;; i++, j++) {
        while (i < m && recs[0][i].kind != k) i++;
        while (j < m && recs[1][j].kind != k) j++;
        if (i >= m || j >= m) {
          bad += (i < m) != (j < m);
          break;
        }
        if (!tt_rec_equal(&recs[0][i], &recs[1][j], bad == 0)) bad++;
      }
  }
  CHECK_EQ_U(bad, 0);
  for (int i = 0; i < 2; i++)
    for (size_t k = 0; k < n[i] && k < MAXREC; k++) tt_rec_free(&recs[i][k]);
}

/* gp_reader_only: a read handing out some kinds only (the others passed
 * over, repeat records among them) gives the records of a whole read of
 * those kinds and STRING, in the same order, in file order and in time
 * order; a time-ordered reader refuses a filter once it has begun. */
static void only_kinds(const char *path, uint64_t keep, int sorted) {
  size_t n[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    int err = 0;
    gpuphase_reader *r = sorted ? gpuphase_reader_open_sorted(path, &err)
                                : gpuphase_reader_open(path, &err);
    CHECK(r != NULL);
    if (!r) return;
    if (i) CHECK(gp_reader_only(r, keep) == GPUPHASE_OK);
    /* workers decode every kind: none with a filter */
    if (i && sorted) CHECK_EQ_U(gp_reader_set_threads(r, 3), 0);
    CHECK(tt_read_all(r, recs[i], MAXREC, &n[i]) == 0);
    gpuphase_reader_close(r);
  }
  uint64_t want = keep | (uint64_t)1 << GPUPHASE_REC_STRING;
  size_t j = 0, bad = 0, kept = 0;
  for (size_t i = 0; i < n[0] && i < MAXREC; i++) {
    if (!(want >> recs[0][i].kind & 1)) continue;
    kept++;
    if (j >= n[1] || !tt_rec_equal(&recs[0][i], &recs[1][j], bad == 0)) bad++;
    j++;
  }
  CHECK_EQ_U(n[1], kept);
  CHECK_EQ_U(bad, 0);
  CHECK(kept > 100);
  if (sorted) {
    int err = 0;
    struct gpuphase_record rec;
    gpuphase_reader *r = gpuphase_reader_open_sorted(path, &err);
    CHECK(r && gp_reader_only(r, keep) == GPUPHASE_OK);
    CHECK(r && gpuphase_reader_next(r, &rec) == 1);
    CHECK(gp_reader_only(r, keep) == GPUPHASE_E_ARG);
    gpuphase_reader_close(r);
  }
  for (int i = 0; i < 2; i++)
    for (size_t k = 0; k < n[i] && k < MAXREC; k++) tt_rec_free(&recs[i][k]);
}

/* Runs argv with stdout to out; the exit status. */
static int run_to(char *const argv[], const char *out) {
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out, O_WRONLY | O_TRUNC | O_CREAT, 0600);
    if (fo < 0 || dup2(fo, 1) < 0) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The report of each file, run on a copy at one path (reports name it). */
static void same_report(const char *exe, const char *a, const char *b,
                        const char *format) {
  const char *out[2] = {tt_tmpfile("rep-a"), tt_tmpfile("rep-b")};
  const char *in[2] = {a, b}, *at = tt_tmpfile("rep-in");
  for (int i = 0; i < 2; i++) {
    size_t len;
    uint8_t *data = tt_slurp(in[i], &len);
    CHECK(data != NULL);
    if (!data) return;
    tt_write_file(at, data, len);
    free(data);
    char *argv[] = {(char *)exe, "--format", (char *)format, (char *)at,
                    NULL};
    CHECK_EQ_U(run_to(argv, out[i]), 0);
  }
  size_t la, lb;
  uint8_t *x = tt_slurp(out[0], &la), *y = tt_slurp(out[1], &lb);
  CHECK(x && y && la > 200);
  CHECK(x && y && la == lb && !memcmp(x, y, la));
  free(x);
  free(y);
}

int main(int argc, char **argv) {
  const char *full = tt_tmpfile("full"), *repeat = tt_tmpfile("rept"),
             *run = tt_tmpfile("runs");
  write_trace(full, FULL);
  write_trace(repeat, REPEAT);
  write_trace(run, RUN);
  size_t lf, lr, lu;
  uint8_t *f = tt_slurp(full, &lf), *r = tt_slurp(repeat, &lr),
          *u = tt_slurp(run, &lu);
  CHECK(f && r && u);
  /* the run path writes what the writer would: byte for byte */
  CHECK_EQ_U(lu, lr);
  CHECK(r && u && lu == lr && !memcmp(r, u, lr));
  /* and repeat records make the trace smaller */
  CHECK(lr < lf);
  fprintf(stderr, "full %zu bytes, repeat %zu bytes\n", lf, lr);
  free(f);
  free(r);
  free(u);
  same_records(full, repeat, 0);
  same_records(full, repeat, 1);
  static const uint64_t keeps[] = {1u << GPUPHASE_REC_KERNEL,
                                   1u << GPUPHASE_REC_API,
                                   1u << GPUPHASE_REC_SAMPLE,
                                   1u << GPUPHASE_REC_KERNEL |
                                       1u << GPUPHASE_REC_SAMPLE};
  for (int k = 0; k < 4; k++) {
    for (int sorted = 0; sorted < 2; sorted++) {
      only_kinds(repeat, keeps[k], sorted);
      only_kinds(full, keeps[k], sorted);
    }
  }
  if (argc > 1) {
    same_report(argv[1], full, repeat, "text");
    same_report(argv[1], full, repeat, "json");
  }
  return tt_done("trace-repeat");
}
