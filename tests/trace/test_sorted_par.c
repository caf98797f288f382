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
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "encode.h"
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
 * (blobs by their bytes), their count, the last result, the message, the
 * truncation flag, and the frames the workers decompressed for it (and
 * how many of those with their records decoded ahead). */
struct outcome {
  uint64_t hash, n, served, decoded, inplace;
  int rc, truncated;
  char msg[256];
};

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static void hash_field(void *ctx, const char *name, char coding, uint64_t v,
                       const gpuphase_blob *b) {
  uint64_t *h = ctx;
  (void)name;
  *h = fnv(*h, &coding, 1);
  *h = fnv(*h, &v, sizeof v);
  if (b) *h = fnv(*h, b->data, b->len);
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
    CHECK(gp_record_fields(rec, hash_field, &o.hash) > 0);
    o.n++;
  }
  o.served = gp_sorted_served(r, &o.decoded);
  o.inplace = gp_sorted_inplace(r);
  CHECK(o.decoded <= o.served);
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
    /* On a loaded machine a worker may get no CPU before the merge has
     * decompressed every frame itself: then the read is repeated (a few
     * times; each outcome must agree). */
    struct outcome o;
    for (int a = 0; a < 5; a++) {
      o = read_with(path, th[i]);
      printf("  %d threads: %llu records, %llu frames from the workers, "
             "%llu of them decoded ahead\n",
             th[i], (unsigned long long)o.n, (unsigned long long)o.served,
             (unsigned long long)o.decoded);
      CHECK_EQ_U(o.n, one.n);
      CHECK_EQ_U(o.hash, one.hash);
      CHECK_EQ_U(o.rc, one.rc);
      CHECK_EQ_U(o.truncated, one.truncated);
      CHECK(!strcmp(o.msg, one.msg));
      if (o.served > 0 && o.decoded > 0) break;
    }
    CHECK(o.served > 0);
    CHECK(o.decoded > 0);
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

/* Repeat records (format version 5): a loop's calls and kernels, each
 * repeating the one before but for its times (corr one more), on four
 * sources. The workers decode them ahead like any record: none is left to
 * the merge to decode in place. */
static void test_repeats(void) {
  const char *path = tt_tmpfile("par-repeats");
  int fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0644);
  CHECK(fd >= 0);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 2000, NULL);
  enum { N = 40000 };
  uint64_t t[5] = {0};
  for (uint32_t i = 0; i < N; i++) {
    uint32_t s = 1 + i % 4;
    t[s] += 1000 + i % 7; /* gaps and durations vary: repeat records */
    struct gpuphase_record r;
    memset(&r, 0, sizeof r);
    if (s <= 2) {
      r.kind = GPUPHASE_REC_API;
      r.u.api = (struct gpuphase_api){.thread = s, .api = 3, .start = t[s],
                                      .end = t[s] + 40 + i % 3,
                                      .corr = 1 + i / 4};
    } else {
      r.kind = GPUPHASE_REC_KERNEL;
      r.u.kernel = (struct gpuphase_kernel){
          .stream = s, .start = t[s], .end = t[s] + 300 + i % 5,
          .corr = 1 + i / 4, .grid_x = 8, .block_x = 128};
    }
    CHECK(gp_writer_add(w, s, &r) == GPUPHASE_OK);
  }
  struct gpuphase_summary sum = {N, 0, 0, 0};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
  close(fd);
  struct outcome one = same_on_threads(path, "repeat records");
  CHECK_EQ_U(one.rc, 0);
  CHECK_EQ_U(one.n, (uint64_t)N + 1);
  for (int a = 0; a < 5; a++) {
    struct outcome o = read_with(path, 2);
    CHECK_EQ_U(o.n, one.n);
    CHECK_EQ_U(o.hash, one.hash);
    printf("  repeat records, 2 threads: %llu frames decoded ahead, %llu "
           "records of them left to decode in place\n",
           (unsigned long long)o.decoded, (unsigned long long)o.inplace);
    if (o.decoded == 0) continue; /* no worker got the CPU: again */
    CHECK_EQ_U(o.inplace, 0);
    return;
  }
  CHECK(!"no frame of the repeat records was decoded ahead in 5 reads");
}

/* --- Crafted frames: what the workers decode ahead (fixed-width changes
 * of the fields), what they leave to the merge (records of kinds with
 * blobs, unknown kinds, records over 255 bytes, the rest of a frame past
 * the buffer's size or past a malformed record), all read as one thread
 * reads them. */

static size_t put_raw(uint8_t *b, uint64_t kind, const uint8_t *pl,
                      size_t len) {
  size_t n = gp_put_varint(b, kind);
  n += gp_put_varint(b + n, len);
  memcpy(b + n, pl, len);
  return n + len;
}

/* A value whose delta takes one byte, four, eight or anything. */
static uint64_t any_width(uint64_t *rng) {
  uint64_t r = tt_rand(rng);
  switch (tt_rand(rng) % 5) {
  case 0: return r % 100;
  case 1: return r % 60000;
  case 2: return r % (1ull << 40);
  case 3: return (uint64_t)0 - r % 5000;
  default: return r;
  }
}

static size_t random_known(uint8_t *b, struct gp_delta *d, uint64_t *rng,
                           size_t extra) {
  static const char bytes[300] = "blob bytes";
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  r.kind = 1 + (uint32_t)(tt_rand(rng) % (GPUPHASE_REC_MAX - 1));
  /* bytes after the fields only where no blob can be cut short */
  if (extra && gp_kind_in(GP_BLOB_KINDS, r.kind)) r.kind = GPUPHASE_REC_API;
  const struct gp_kind_desc *k = gp_kind_desc(r.kind);
  for (unsigned f = 0; f < k->nfields; f++) {
    char *at = (char *)&r.u + k->fields[f].offset;
    if (k->fields[f].coding == 'B') {
      gpuphase_blob bl = {bytes, tt_rand(rng) % 24};
      memcpy(at, &bl, sizeof bl);
    } else if (tt_rand(rng) % 3) {
      uint64_t v = any_width(rng);
      memcpy(at, &v, 8);
    }
  }
  if (r.kind == GPUPHASE_REC_STRING && !r.u.string.id) r.u.string.id = 1;
  uint8_t one[GP_RECORD_FIXED_MAX + 64];
  if (!extra) { /* the writer's choice: a repeat record where it may */
    size_t n = gp_encode_record(one, d, &r);
    memcpy(b, one, n);
    return n;
  }
  /* the full form, whose payload gets the extra bytes */
  size_t n = gp_encode_inline(one, d, &r, 0);
  /* the same fields followed by more bytes: where the writer dropped
   * fields they are read as those fields' deltas, the rest is what a
   * newer writer would have added */
  const uint8_t *p = one;
  uint64_t kind = 0, len = 0;
  CHECK(!gp_get_varint(&p, one + n, &kind));
  CHECK(!gp_get_varint(&p, one + n, &len));
  uint8_t pl[sizeof one + sizeof bytes];
  memcpy(pl, p, len);
  memset(pl + len, 0x7f, extra);
  return put_raw(b, kind, pl, len + extra);
}

/* Payload of frame f of source s (damage: a malformed record in it). */
static size_t crafted_payload(uint32_t s, uint32_t f, uint8_t *buf,
                              size_t cap, uint64_t *rng, int damage) {
  struct gp_delta d;
  gp_delta_reset(&d);
  size_t n = 0;
  uint64_t t = 1000 * f;
  while (n + 1024 < cap) {
    if (damage && n > cap / 2) { /* API, its start running past the end */
      const uint8_t bad[] = {0x00, 0x00, 0x80};
      n += put_raw(buf + n, GPUPHASE_REC_API, bad, sizeof bad);
      damage = 0;
      continue;
    }
    unsigned c = (unsigned)(tt_rand(rng) % 100);
    if ((f + s) % 3 == 1) { /* empty KERNELs: more than the buffer holds */
      n += put_raw(buf + n, GPUPHASE_REC_KERNEL, NULL, 0);
    } else if ((f + s) % 3 == 2 || c < 50) { /* the usual records */
      struct gpuphase_record r;
      memset(&r, 0, sizeof r);
      t += 1 + tt_rand(rng) % 3000;
      if (c & 1) {
        r.kind = GPUPHASE_REC_API;
        r.u.api = (struct gpuphase_api){
            .thread = s, .start = t, .end = t + c * 40, .corr = n};
      } else {
        r.kind = GPUPHASE_REC_KERNEL;
        r.u.kernel = (struct gpuphase_kernel){
            .stream = s, .start = t, .end = t + c * 300, .corr = n / 2};
      }
      n += gp_encode_record(buf + n, &d, &r);
    } else if (c < 80) {
      n += random_known(buf + n, &d, rng, 0);
    } else if (c < 88) { /* unknown kinds (below 0x80: a first byte from
                            * 0x80 on is a repeat record's tag) */
      uint8_t pl[12];
      for (size_t i = 0; i < sizeof pl; i++)
        pl[i] = (uint8_t)tt_rand(rng);
      n += put_raw(buf + n, c & 1 ? 60 : 127, pl, c % 12);
    } else { /* known kinds with bytes after their fields, some past 255 */
      n += random_known(buf + n, &d, rng, c & 1 ? 5 : 280);
    }
  }
  return n;
}

static void write_crafted(const char *path, int damage) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  struct gp_process_info in = tt_info();
  gp_writer *w = fd < 0 ? NULL : gp_writer_open(fd, &in, 0, NULL);
  CHECK(w && gp_writer_close(w, NULL) == GPUPHASE_OK);
  FILE *out = fopen(path, "ab");
  size_t cap = 200u << 10;
  uint8_t *buf = malloc(cap), *z = malloc(GP_FRAME_HDR + ZSTD_compressBound(cap));
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  CHECK(out && buf && z && cc);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  uint64_t rng = 77;
  for (uint32_t f = 0; f < 4; f++)
    for (uint32_t s = 1; s <= 5; s++) {
      size_t n = crafted_payload(s, f, buf, cap, &rng, damage && f == 2 && s == 3);
      size_t c = ZSTD_compress2(cc, z + GP_FRAME_HDR, ZSTD_compressBound(cap),
                                buf, n);
      CHECK(!ZSTD_isError(c));
      memcpy(z, GP_FRAME_MAGIC, 4);
      z[GP_FO_TYPE] = GP_FRAME_RECORDS;
      z[5] = z[6] = z[7] = 0;
      gp_store32(z + GP_FO_SOURCE, s);
      gp_store32(z + GP_FO_CSIZE, (uint32_t)c);
      gp_store32(z + GP_FO_USIZE, (uint32_t)n);
      CHECK(fwrite(z, 1, GP_FRAME_HDR + c, out) == GP_FRAME_HDR + c);
    }
  ZSTD_freeCCtx(cc);
  free(buf);
  free(z);
  CHECK(fclose(out) == 0);
}

static void test_crafted(void) {
  const char *path = tt_tmpfile("par-crafted");
  write_crafted(path, 0);
  struct outcome o = same_on_threads(path, "crafted");
  CHECK_EQ_U(o.rc, 0);
  CHECK(o.n > 100000);
  write_crafted(path, 1);
  struct outcome d = same_on_threads(path, "crafted, a malformed record");
  CHECK_EQ_U(d.rc, GPUPHASE_E_CORRUPT);
  CHECK(strstr(d.msg, "malformed record at payload offset") != NULL);
  CHECK(d.n > o.n / 4 && d.n < o.n);
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
  test_crafted();
  test_repeats();
  if (argc > 1) test_report(argv[1], argc > 2 ? argv[2] : NULL, path);
  tt_cleanup();
  return tt_done("trace-sorted-par");
}
