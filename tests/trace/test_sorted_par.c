/* Time-ordered reading with frames decompressed ahead by worker threads
 * (gp_reader_set_threads): the records, their order, the truncation flag
 * and any error are those of one thread, whatever the number of threads.
 * The expectation is the one-thread read of the same file, whose order
 * test_sorted checks against a sort; here the threads must change nothing,
 * and must have done the work (frames taken from them are counted).
 *   reader: 300 sources of small frames (about 1,100 frames), whole, cut in
 *           the middle of a frame, and with one frame damaged in its middle
 *           (zstd's checksum fails: the same error, after the same
 *           records), and a frame header damaged (found by pass 1);
 *   report: gpuphase-report -j 1, 2 and 8 on one larger trace (the report
 *           benchmark's training loop when given, else the reader's trace):
 *           text, JSON and HTML byte for byte equal; cut and damaged, the
 *           same stderr and exit status; -j out of range refused.
 *   test_sorted_par GPUPHASE_REPORT [GPUPHASE_REPORT_BENCH] */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec.h"
#include "format.h"
#include "reader_ext.h"
#include "reader_int.h"
#include "tt.h"

#define NSRC 300
#define PER_SOURCE 800

static void write_trace(const char *path) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 2000, NULL);
  uint64_t rng = 4242, t[NSRC + 1] = {0};
  uint32_t left[NSRC + 1];
  for (uint32_t s = 1; s <= NSRC; s++)
    left[s] = PER_SOURCE;
  struct gpuphase_record m;
  memset(&m, 0, sizeof m);
  m.kind = GPUPHASE_REC_THREAD;
  m.u.thread.thread = 1;
  m.u.thread.name = gp_writer_intern(w, "main", 4);
  CHECK(gp_writer_add(w, 0, &m) == GPUPHASE_OK);
  for (uint64_t n = (uint64_t)NSRC * PER_SOURCE; n;) {
    uint32_t s = 1 + (uint32_t)(tt_rand(&rng) % NSRC);
    for (uint32_t k = 1 + (uint32_t)(tt_rand(&rng) % 20); k && left[s];
         k--, left[s]--, n--) {
      t[s] += 1 + tt_rand(&rng) % 500;
      struct gpuphase_record r;
      memset(&r, 0, sizeof r);
      if (s % 3) {
        r.kind = GPUPHASE_REC_API;
        r.u.api = (struct gpuphase_api){
            .thread = s, .start = t[s], .end = t[s] + 40, .corr = n};
      } else {
        r.kind = GPUPHASE_REC_KERNEL;
        r.u.kernel = (struct gpuphase_kernel){
            .stream = s, .start = t[s], .end = t[s] + 300, .corr = n};
      }
      CHECK(gp_writer_add(w, s, &r) == GPUPHASE_OK);
    }
  }
  struct gpuphase_summary sum = {(uint64_t)NSRC * PER_SOURCE, 0, 0, 0};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
}

/* What one read returns: a running hash of every record's kind and fields
 * (no blob kinds but STRING, hashed by its text), their count, the last
 * result, the message, the truncation flag, and the frames the workers
 * decompressed for it. */
struct outcome {
  uint64_t hash, n, served;
  int rc, truncated;
  char msg[256];
};

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static struct outcome read_with(const char *path, int threads) {
  struct outcome o;
  memset(&o, 0, sizeof o);
  o.hash = 0xcbf29ce484222325ull;
  int err = 0;
  gpuphase_reader *r =
      gp_reader_open_ex(path, GP_OPEN_SORTED, &err, o.msg, sizeof o.msg);
  if (!r) {
    o.rc = err;
    return o;
  }
  int w = gp_reader_set_threads(r, threads);
  CHECK_EQ_U(w, threads <= 1 ? 0 : threads - 1 < 4 ? threads - 1 : 4);
  CHECK_EQ_U(gp_reader_set_threads(r, threads), 0); /* once only */
  const struct gpuphase_record *rec;
  while ((o.rc = gp_reader_next_ref(r, &rec)) == 1) {
    o.hash = fnv(o.hash, &rec->kind, sizeof rec->kind);
    if (rec->kind == GPUPHASE_REC_STRING)
      o.hash = fnv(o.hash, rec->u.string.text.data, rec->u.string.text.len);
    else
      o.hash = fnv(o.hash, &rec->u, gp_kind_size(rec->kind));
    o.n++;
  }
  o.served = gp_sorted_served(r);
  o.truncated = gpuphase_reader_truncated(r);
  snprintf(o.msg, sizeof o.msg, "%s", gpuphase_reader_errmsg(r));
  gpuphase_reader_close(r);
  return o;
}

/* Reads path on 1, 2, 3 and 8 threads; the outcomes must agree. Returns
 * the one-thread outcome. */
static struct outcome same_on_threads(const char *path, const char *what) {
  static const int th[] = {2, 3, 8};
  struct outcome one = read_with(path, 1);
  printf("%s: %llu records, rc %d, truncated %d%s%s\n", what,
         (unsigned long long)one.n, one.rc, one.truncated,
         one.msg[0] ? ": " : "", one.msg);
  CHECK_EQ_U(one.served, 0);
  for (size_t i = 0; i < sizeof th / sizeof th[0]; i++) {
    struct outcome o = read_with(path, th[i]);
    printf("  %d threads: %llu records, %llu frames from the workers\n",
           th[i], (unsigned long long)o.n, (unsigned long long)o.served);
    CHECK_EQ_U(o.n, one.n);
    CHECK_EQ_U(o.hash, one.hash);
    CHECK_EQ_U(o.rc, one.rc);
    CHECK_EQ_U(o.truncated, one.truncated);
    CHECK(!strcmp(o.msg, one.msg));
    CHECK(o.served > 0);
  }
  return one;
}

/* A frame of a source other than 0 in the middle of the file. */
static struct tt_frame middle_frame(const uint8_t *file, size_t len,
                                    size_t *nframes) {
  static struct tt_frame f[20000];
  uint32_t hs;
  size_t n = tt_frames(file, len, &hs, f, 20000);
  *nframes = n;
  for (size_t i = n / 2; i < n; i++)
    if (f[i].source != 0 && f[i].type == GP_FRAME_RECORDS && f[i].csize > 40) return f[i];
  CHECK(!"no records frame in the second half");
  return f[0];
}

static void test_reader(const char *path) {
  write_trace(path);
  struct outcome whole = same_on_threads(path, "whole");
  CHECK_EQ_U(whole.rc, 0);
  /* every record, the summary and the THREAD, STRING records */
  CHECK_EQ_U(whole.n, (uint64_t)NSRC * PER_SOURCE + 3);
  size_t len, nf;
  uint8_t *file = tt_slurp(path, &len);
  struct tt_frame mid = middle_frame(file, len, &nf);
  printf("%zu frames\n", nf);
  CHECK(nf > 1000);

  /* cut inside the middle frame: the frames before it, truncated */
  const char *cut = tt_tmpfile("par-cut");
  tt_write_file(cut, file, (size_t)mid.off + GP_FRAME_HDR + mid.csize / 2);
  struct outcome c = same_on_threads(cut, "cut");
  CHECK_EQ_U(c.rc, 0);
  CHECK(c.truncated);
  CHECK(c.n < whole.n && c.n > whole.n / 4);

  /* one payload byte of the middle frame changed: the content checksum
   * (or the decompressor) fails when the merge reaches that frame */
  uint8_t *bad = malloc(len);
  memcpy(bad, file, len);
  bad[mid.off + GP_FRAME_HDR + mid.csize / 2] ^= 0x5a;
  const char *dmg = tt_tmpfile("par-damaged");
  tt_write_file(dmg, bad, len);
  struct outcome d = same_on_threads(dmg, "damaged frame");
  CHECK_EQ_U(d.rc, GPUPHASE_E_CORRUPT);
  CHECK(strstr(d.msg, "frame at byte") != NULL);
  CHECK(d.n > whole.n / 4 && d.n < whole.n);

  /* a frame header's magic changed: pass 1 stops there and the error
   * follows the frames before it */
  memcpy(bad, file, len);
  bad[mid.off] ^= 0xff;
  tt_write_file(dmg, bad, len);
  struct outcome h = same_on_threads(dmg, "damaged header");
  CHECK_EQ_U(h.rc, GPUPHASE_E_CORRUPT);
  CHECK(strstr(h.msg, "bad frame magic") != NULL);
  free(bad);
  free(file);
}

/* --- gpuphase-report -j */

/* Runs argv with stdout and stderr to files; the exit status. */
static int run(char *const argv[], const char *out, const char *err) {
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out, O_WRONLY | O_TRUNC | O_CREAT, 0600);
    int fe = open(err, O_WRONLY | O_TRUNC | O_CREAT, 0600);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int same_file(const char *a, const char *b) {
  size_t la, lb;
  uint8_t *x = tt_slurp(a, &la), *y = tt_slurp(b, &lb);
  int same = x && y && la == lb && !memcmp(x, y, la);
  free(x);
  free(y);
  return same;
}

/* gpuphase-report -j 1, 2, 8 on path in each format: the same bytes on
 * stdout and stderr, the same status; returns -j 1's status. */
static int report_same(const char *report, const char *path,
                       const char *what) {
  static const char *const fmts[] = {"text", "json", "html"};
  static const char *const js[] = {"1", "2", "8"};
  const char *out1 = tt_tmpfile("rep-out1"), *err1 = tt_tmpfile("rep-err1");
  const char *out = tt_tmpfile("rep-out"), *err = tt_tmpfile("rep-err");
  int st1 = -1;
  for (size_t f = 0; f < 3; f++) {
    for (size_t j = 0; j < 3; j++) {
      char *argv[] = {(char *)report, "-j",   (char *)js[j], "-f",
                      (char *)fmts[f], (char *)path,   NULL};
      int st = run(argv, j ? out : out1, j ? err : err1);
      if (!j) {
        st1 = st;
        size_t lo, le;
        uint8_t *o = tt_slurp(out1, &lo), *e = tt_slurp(err1, &le);
        printf("report, %s, %s: exit %d, %zu bytes out, %zu on stderr%s%.*s",
               what, fmts[f], st, lo, le, le ? ": " : "\n", (int)le,
               e ? (const char *)e : "");
        CHECK(st == 0 ? lo > 1000 : le > 0);
        free(o);
        free(e);
        continue;
      }
      if (st != st1 || !same_file(out, out1) || !same_file(err, err1))
        fprintf(stderr, "  %s, -f %s: -j %s differs from -j 1\n", what,
                fmts[f], js[j]);
      CHECK_EQ_U(st, st1);
      CHECK(same_file(out, out1));
      CHECK(same_file(err, err1));
    }
  }
  return st1;
}

static void test_report(const char *report, const char *bench,
                        const char *own) {
  const char *path = own;
  if (bench) {
    path = tt_tmpfile("rep-trace");
    char *argv[] = {(char *)bench, "--events", "200000", "--runs", "1",
                    "--keep",      (char *)path, NULL};
    int st = run(argv, tt_tmpfile("bench-out"), tt_tmpfile("bench-err"));
    CHECK_EQ_U(st, 0);
    if (st) path = own;
  }
  CHECK_EQ_U(report_same(report, path, "whole"), 0);
  size_t len, nf;
  uint8_t *file = tt_slurp(path, &len);
  struct tt_frame mid = middle_frame(file, len, &nf);
  const char *cut = tt_tmpfile("rep-cut");
  tt_write_file(cut, file, (size_t)mid.off + GP_FRAME_HDR + mid.csize / 2);
  CHECK_EQ_U(report_same(report, cut, "cut"), 0);
  file[mid.off + GP_FRAME_HDR + mid.csize / 2] ^= 0x5a;
  const char *dmg = tt_tmpfile("rep-damaged");
  tt_write_file(dmg, file, len);
  CHECK(report_same(report, dmg, "damaged frame") == 1);
  free(file);
  /* -j's range */
  for (int i = 0; i < 3; i++) {
    static const char *const bad[] = {"0", "4097", "2.5"};
    char *argv[] = {(char *)report, "-j", (char *)bad[i], (char *)path, NULL};
    const char *e = tt_tmpfile("rep-j-err");
    CHECK_EQ_U(run(argv, tt_tmpfile("rep-j-out"), e), 2);
    size_t le;
    uint8_t *msg = tt_slurp(e, &le);
    CHECK(msg && le && memmem(msg, le, "invalid --jobs", 14));
    free(msg);
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *path = tt_tmpfile("par");
  test_reader(path);
  if (argc > 1) test_report(argv[1], argc > 2 ? argv[2] : NULL, path);
  tt_cleanup();
  return tt_done("trace-sorted-par");
}
