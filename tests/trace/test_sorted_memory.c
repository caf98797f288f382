/* Time-ordered reading of crafted traces whose frames declare huge decoded
 * sizes (docs/format.md, section 5: the reader's memory bound). Each frame
 * is mostly an unknown record of zeros, so a file of a few kilobytes per
 * frame declares up to 64 MiB per frame:
 *   bomb:   40 sources, one 60 MB frame each, a record at each end: held
 *           one frame per source, that was 2.3 GB; now within the budgets,
 *           every record in order (the second one of each source decoded
 *           after its frame was evicted and decoded again);
 *   thrash: 8 sources of 40 MB frames whose records alternate: past the
 *           reload limit the reader stops with GPUPHASE_E_NOMEM and a
 *           message that names the limit (not "corrupt"), in bounded time;
 *   many:   1800 sources of 300 KiB frames (the small-frame budget);
 *   strings: nine 60 MB definitions of one string: the string table's
 *           512 MiB limit, GPUPHASE_E_NOMEM in both orders;
 *   oom:    gpuphase-report under an address-space limit says "out of
 *           memory", not "corrupt trace at byte N".
 * The reading cases run twice: on one thread, and with frames decompressed
 * ahead by workers (gp_reader_set_threads(r, 8)), within the same limits.
 * Memory is measured by counting this program's allocations (malloc and
 * friends are wrapped at link time: the reader is linked in statically)
 * and, without a sanitizer, by the peak resident size, in a fresh process
 * for each case (the test runs itself with --child CASE FILE).
 *   test_sorted_memory [gpuphase-report]
 *   test_sorted_memory --write CASE FILE   (writes a case's file, e.g. for
 *                                           the fuzzing corpus) */
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "format.h"
#include "reader_ext.h"
#include "tt.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MiB (1024.0 * 1024.0)
#define LIMIT_MB 256.0

/* --- allocation counter (-Wl,--wrap=malloc,...) */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* Atomics: the reader's workers allocate too. */
static size_t live, peak;

static void *counted(void *p) {
  size_t now = p ? __atomic_add_fetch(&live, malloc_usable_size(p),
                                      __ATOMIC_RELAXED)
                 : __atomic_load_n(&live, __ATOMIC_RELAXED);
  size_t was = __atomic_load_n(&peak, __ATOMIC_RELAXED);
  while (now > was && !__atomic_compare_exchange_n(&peak, &was, now, 1,
                                                   __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
    ;
  return p;
}
void *__wrap_malloc(size_t n) {
  return counted(__real_malloc(n));
}
void *__wrap_calloc(size_t n, size_t m) {
  return counted(__real_calloc(n, m));
}
void *__wrap_realloc(void *p, size_t n) {
  size_t old = p ? malloc_usable_size(p) : 0;
  void *q = __real_realloc(p, n);
  if (q || !n) __atomic_sub_fetch(&live, old, __ATOMIC_RELAXED);
  return q ? counted(q) : NULL;
}
void __wrap_free(void *p) {
  if (p) __atomic_sub_fetch(&live, malloc_usable_size(p), __ATOMIC_RELAXED);
  __real_free(p);
}

/* --- crafted files */
struct shape {
  const char *name;
  uint32_t nsrc, usize, nrec; /* nrec timed records per frame */
  int strings; /* a STRING before them; 2: frames of source 0 holding one
                * STRING each, all with id 1 (the string table's limit) */
};

/* The cases, and smaller ones for the fuzzing corpus (tests/fuzz). */
static const struct shape shapes[] = {
    {"bomb", 40, 60000000, 2, 1},      {"thrash", 8, 40000000, 200, 0},
    {"many", 1800, 300 << 10, 2, 0},   {"strings", 9, 60000000, 0, 2},
    {"bomb-small", 72, 2000000, 2, 1}, {"thrash-small", 3, 48000000, 100, 0},
    {"bomb-tiny", 4, 2000000, 2, 1},
};

static const struct shape *shape_of(const char *name) {
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    if (!strcmp(name, shapes[i].name)) return &shapes[i];
  return NULL;
}

/* Record j of source s starts at j * nsrc + s: the sources alternate. */
static uint64_t start_of(const struct shape *sh, uint32_t s, uint32_t j) {
  return (uint64_t)j * sh->nsrc + s + 1;
}

/* STRING id 1 whose text fills the frame: kind, payload length, id
 * (zigzag of 1), text length, text. */
static size_t big_string(const struct shape *sh, uint8_t *buf) {
  size_t len = sh->usize, plen;
  do {
    len--;
    plen = 1 + tt_varint_len(len) + len;
  } while (1 + tt_varint_len(plen) + plen > sh->usize);
  size_t h = 1;
  buf[0] = GPUPHASE_REC_STRING;
  h += gp_put_varint(buf + h, plen);
  buf[h++] = 2;
  h += gp_put_varint(buf + h, len);
  memset(buf + h, 'x', len);
  return h + len;
}

static size_t payload(const struct shape *sh, uint32_t s, uint8_t *buf) {
  if (sh->strings == 2) return big_string(sh, buf);
  struct gp_delta d;
  gp_delta_reset(&d);
  size_t n = 0;
  struct gpuphase_record rec;
  if (sh->strings) {
    char text[32];
    memset(&rec, 0, sizeof rec);
    rec.kind = GPUPHASE_REC_STRING;
    rec.u.string.id = 1000 + s;
    rec.u.string.text.data = text;
    rec.u.string.text.len = (uint64_t)snprintf(text, sizeof text, "src-%u", s);
    n += gp_encode_record(buf + n, &d, &rec);
  }
  /* padding between the records, the last one ending the frame */
  size_t gap = (sh->usize - n - sh->nrec * GP_RECORD_FIXED_MAX) / sh->nrec;
  for (uint32_t j = 0; j < sh->nrec; j++) {
    uint8_t one[GP_RECORD_FIXED_MAX];
    memset(&rec, 0, sizeof rec);
    rec.kind = GPUPHASE_REC_API;
    rec.u.api.thread = s;
    rec.u.api.start = start_of(sh, s, j);
    rec.u.api.end = rec.u.api.start + 5;
    size_t len = gp_encode_record(one, &d, &rec);
    size_t pad = j == 0 ? 0 : j + 1 < sh->nrec ? gap : sh->usize - n - len;
    if (pad) tt_put_padding(buf + n, pad);
    n += pad;
    memcpy(buf + n, one, len);
    n += len;
  }
  return n;
}

static void write_case(const struct shape *sh, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  struct gp_process_info in = tt_info();
  gp_writer *w = fd < 0 ? NULL : gp_writer_open(fd, &in, 0, NULL);
  if (!w || gp_writer_close(w, NULL)) {
    perror(path);
    exit(1);
  }
  FILE *f = fopen(path, "ab");
  uint8_t *buf = malloc(sh->usize);
  size_t cap = ZSTD_compressBound(sh->usize);
  uint8_t *z = malloc(GP_FRAME_HDR + cap);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (!f || !buf || !z || !cc) exit(1);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  for (uint32_t s = 1; s <= sh->nsrc; s++) {
    size_t n = payload(sh, s, buf);
    size_t c = ZSTD_compress2(cc, z + GP_FRAME_HDR, cap, buf, n);
    if (ZSTD_isError(c) || n != sh->usize) exit(1);
    memcpy(z, GP_FRAME_MAGIC, 4);
    z[GP_FO_TYPE] = GP_FRAME_RECORDS;
    z[5] = z[6] = z[7] = 0;
    gp_store32(z + GP_FO_SOURCE, sh->strings == 2 ? 0 : s);
    gp_store32(z + GP_FO_CSIZE, (uint32_t)c);
    gp_store32(z + GP_FO_USIZE, (uint32_t)n);
    if (fwrite(z, 1, GP_FRAME_HDR + c, f) != GP_FRAME_HDR + c) exit(1);
  }
  ZSTD_freeCCtx(cc);
  free(buf);
  free(z);
  if (fclose(f)) exit(1);
}

/* --- reading, in the child */
static double rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Every record, in order: the STRINGs (key 0, by source), then the API
 * records by start. Returns the last next() result. */
static int threads = 1;

static int read_case(const struct shape *sh, const char *path, double *t) {
  int err = 0;
  char msg[256] = "";
  double t0 = seconds();
  gpuphase_reader *r =
      gp_reader_open_ex(path, GP_OPEN_SORTED, &err, msg, sizeof msg);
  CHECK(r != NULL);
  if (r && threads > 1) { /* workers take frames of up to 320 KiB only */
    int w = gp_reader_set_threads(r, threads);
    CHECK_EQ_U(w, sh->usize <= (320u << 10) ? 4 : 0);
  }
  if (!r) {
    fprintf(stderr, "open: %d %s\n", err, msg);
    return err;
  }
  struct gpuphase_record rec;
  uint64_t n = 0, nstr = 0;
  int rc, order_ok = 1, text_ok = 1;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    if (rec.kind == GPUPHASE_REC_STRING) {
      char want[32];
      int len = snprintf(want, sizeof want, "src-%u", (unsigned)(nstr + 1));
      text_ok &= nstr < sh->nsrc && rec.u.string.id == 1000 + nstr + 1 &&
                 rec.u.string.text.len == (uint64_t)len &&
                 !memcmp(rec.u.string.text.data, want, (size_t)len) &&
                 n == nstr;
      nstr++;
    } else {
      uint64_t i = n - nstr; /* records come by start: j * nsrc + s */
      uint32_t s = (uint32_t)(i % sh->nsrc) + 1, j = (uint32_t)(i / sh->nsrc);
      order_ok &= rec.kind == GPUPHASE_REC_API && rec.u.api.thread == s &&
                  rec.u.api.start == start_of(sh, s, j) &&
                  rec.u.api.end == rec.u.api.start + 5;
    }
    n++;
  }
  CHECK(order_ok);
  CHECK(text_ok);
  if (rc == 0) CHECK_EQ_U(n, sh->nsrc * (sh->nrec + (uint64_t)sh->strings));
  if (rc < 0) {
    const char *m = gpuphase_reader_errmsg(r);
    fprintf(stderr, "  stopped after %llu records: %s\n", (unsigned long long)n,
            m);
    CHECK(rc == GPUPHASE_E_NOMEM);
    CHECK(strstr(m, "out of memory") && strstr(m, "limits") &&
          !strstr(m, "corrupt"));
  }
  gpuphase_reader_close(r);
  *t = seconds() - t0;
  return rc;
}

/* The string table's limit, in both orders. */
static int read_strings(const char *path) {
  int rc = 0;
  for (int mode = 0; mode < 2; mode++) {
    int err = 0;
    char msg[256] = "";
    gpuphase_reader *r = gp_reader_open_ex(path, mode, &err, msg, sizeof msg);
    struct gpuphase_record rec;
    uint64_t n = 0;
    while (r && (rc = gpuphase_reader_next(r, &rec)) == 1)
      n++;
    const char *m = r ? gpuphase_reader_errmsg(r) : msg;
    printf("strings, %s: %s after %llu records: %s\n",
           mode ? "time order" : "file order", r ? "stopped" : "open failed",
           (unsigned long long)n, m);
    CHECK((r ? rc : err) == GPUPHASE_E_NOMEM);
    CHECK(strstr(m, "strings exceed the reader's 512 MiB") != NULL);
    gpuphase_reader_close(r);
  }
  return rc;
}

static int child(const char *name, const char *path) {
  const struct shape *sh = shape_of(name);
  double t = 0, limit = !strcmp(name, "many")      ? 512 + 64
                        : !strcmp(name, "strings") ? 512 + 192
                                                   : LIMIT_MB;
  int rc = sh->strings == 2 ? read_strings(path) : read_case(sh, path, &t);
  printf("%s, %d thread%s: %u sources x %u bytes: peak allocated %.1f MB, "
         "peak RSS %.1f MB%s, %.2f s\n",
         name, threads, threads > 1 ? "s" : "", sh->nsrc, sh->usize,
         peak / MiB, rss_mb(),
         SANITIZED ? " (sanitizer: not judged)" : "", t);
  if (peak / MiB > limit)
    fprintf(stderr, "  %s: allocated %.1f MB, limit %.0f MB\n", name,
            peak / MiB, limit);
  CHECK(peak / MiB <= limit);
  if (!SANITIZED) CHECK(rss_mb() <= limit + 64);
  if (!strncmp(name, "thrash", 6)) {
    CHECK(rc == GPUPHASE_E_NOMEM);
    CHECK(t < 30);
  } else if (sh->strings != 2) {
    CHECK(rc == 0);
  }
  return tt_failures ? 1 : 0;
}

/* --- parent */
static int run(char *const argv[]) {
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void one_case(const char *self, const char *name) {
  const char *path = tt_tmpfile(name);
  write_case(shape_of(name), path);
  for (int j = 0; j < 2; j++) {
    char *argv[] = {(char *)self, "--child", (char *)name, (char *)path,
                    j ? "8" : "1", NULL};
    int rc = run(argv);
    if (rc) fprintf(stderr, "case %s, -j %s: exit status %d\n", name,
                    argv[4], rc);
    CHECK(rc == 0);
    if (shape_of(name)->strings == 2) break; /* no merge: nothing ahead */
  }
  unlink(path);
}

/* gpuphase-report with too little address space for the bomb's first two
 * frames: an allocation fails, and the message says so. */
static void report_oom(const char *report) {
  if (SANITIZED) {
    printf("oom: skipped (a sanitizer reserves the address space)\n");
    return;
  }
  const char *path = tt_tmpfile("oom");
  write_case(shape_of("bomb"), path);
  const char *err = tt_tmpfile("oom-err");
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl = {100u << 20, 100u << 20};
    int fd = open(err, O_WRONLY | O_TRUNC);
    if (fd < 0 || dup2(fd, 2) < 0 || setrlimit(RLIMIT_AS, &rl)) _exit(126);
    execl(report, report, path, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  size_t len = 0;
  uint8_t *text = tt_slurp(err, &len);
  char *msg = calloc(1, len + 1);
  if (text && len) memcpy(msg, text, len);
  printf("oom: exit %d: %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, msg);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) < 126);
  CHECK(strstr(msg, "out of memory") != NULL);
  CHECK(strstr(msg, "corrupt") == NULL);
  CHECK(len > 0 && msg[len - 1] == '\n' && !memchr(msg, '\n', len - 1));
  free(msg);
  free(text);
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--child") && shape_of(argv[2])) {
    threads = atoi(argv[4]);
    return child(argv[2], argv[3]);
  }
  if (argc == 4 && !strcmp(argv[1], "--write") && shape_of(argv[2])) {
    write_case(shape_of(argv[2]), argv[3]);
    return 0;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  one_case(argv[0], "bomb");
  one_case(argv[0], "thrash");
  one_case(argv[0], "many");
  one_case(argv[0], "strings");
  if (argc > 1) report_oom(argv[1]);
  return tt_done("trace-sorted-memory");
}
