/* Round trip: every record kind with edge values, across many small frames
 * and several sources, written and read back identically; plus the
 * writer's argument and I/O error paths. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "gp_config.h"
#include "reader_ext.h"
#include "tt.h"

#define NEVENTS 3000
#define NSTRINGS 64
#define LONG_LEN (100 * 1024)

/* Records are told apart by kind: each source writes its own kinds, so
 * file order must keep the order of each group. Group 0 is source 0. */
static int group_of(uint32_t kind) {
  switch (kind) {
  case GPUPHASE_REC_THREAD:
  case GPUPHASE_REC_API_DEF:
  case GPUPHASE_REC_DEVICE:
  case GPUPHASE_REC_LOST:
  case GPUPHASE_REC_STATE:
  case GPUPHASE_REC_MODULE:
  case GPUPHASE_REC_PYCODE:
  case GPUPHASE_REC_FRAME:
  case GPUPHASE_REC_METRIC:
    return 0;
  case GPUPHASE_REC_API:
  case GPUPHASE_REC_RANGE:
  case GPUPHASE_REC_ITEMS:
    return 1;
  case GPUPHASE_REC_KERNEL:
  case GPUPHASE_REC_MEMCPY:
    return 2;
  default:
    return 3;
  }
}

static const uint32_t kinds[] = {
    GPUPHASE_REC_THREAD, GPUPHASE_REC_API_DEF, GPUPHASE_REC_DEVICE,
    GPUPHASE_REC_LOST,   GPUPHASE_REC_STATE,   GPUPHASE_REC_API,
    GPUPHASE_REC_RANGE,  GPUPHASE_REC_KERNEL,  GPUPHASE_REC_MEMCPY,
    GPUPHASE_REC_MEMSET, GPUPHASE_REC_SYNC,    GPUPHASE_REC_ITEMS,
    GPUPHASE_REC_MODULE, GPUPHASE_REC_PYCODE,  GPUPHASE_REC_FRAME,
    GPUPHASE_REC_METRIC, GPUPHASE_REC_SAMPLE,  GPUPHASE_REC_SAMPLER};

static uint64_t edge_value(uint64_t *rng) {
  static const uint64_t edges[] = {0,
                                   1,
                                   UINT64_MAX,
                                   (uint64_t)INT64_MIN,
                                   (uint64_t)INT64_MAX,
                                   (uint64_t)-2,
                                   127,
                                   128,
                                   1ull << 63 | 1,
                                   0x0123456789abcdefull};
  uint64_t r = tt_rand(rng);
  if (r % 3 == 0)
    return r; /* also makes starts go backwards and ends precede starts */
  return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
}

static void fill_V(void *p, uint64_t *rng) {
  uint64_t v = edge_value(rng);
  memcpy(p, &v, 8);
}
#define fill_E fill_V
static void fill_B(void *p, uint64_t *rng) {
  (void)p;
  (void)rng;
}
#define FILL_FIELD(code, type, name) fill_##code(&x->name, rng);
#define FILL_KIND(num, UP, low, FIELDS)                                        \
  case num: {                                                                  \
    struct gpuphase_##low *x = &r->u.low;                                      \
    FIELDS(FILL_FIELD)                                                         \
    break;                                                                     \
  }

static void fill(struct gpuphase_record *r, uint32_t kind, uint64_t *rng) {
  memset(r, 0, sizeof *r);
  r->kind = kind;
  switch (kind) { GPUPHASE_RECORD_KINDS(FILL_KIND) }
}

struct expect {
  struct gpuphase_record *rec[4];
  size_t n[4];
  char *str[NSTRINGS + 3];
  size_t len[NSTRINGS + 3];
  uint64_t nstr;
  struct gpuphase_summary sum;
};

static void intern(gp_writer *w, struct expect *e, const char *s, size_t len) {
  uint64_t id = gp_writer_intern(w, s, len);
  CHECK_EQ_U(id, e->nstr + 1);
  CHECK_EQ_U(gp_writer_intern(w, s, len), id); /* known: same id */
  e->str[e->nstr] = malloc(len);
  memcpy(e->str[e->nstr], s, len);
  e->len[e->nstr++] = len;
}

static void intern_specials(gp_writer *w, struct expect *e) {
  CHECK_EQ_U(gp_writer_intern(w, "", 0), 0);
  char *big = malloc(LONG_LEN);
  for (size_t i = 0; i < LONG_LEN; i++)
    big[i] = (char)('a' + i % 26);
  intern(w, e, big, LONG_LEN);
  free(big);
  char bin[256];
  for (int i = 0; i < 256; i++)
    bin[i] = (char)i;
  intern(w, e, bin, sizeof bin);
  intern(w, e, "x", 1);
}

static const uint32_t source_ids[4] = {0, 1, 2, UINT32_MAX};

static void name_kernel(gp_writer *w, struct expect *e,
                        struct gpuphase_record *r, int i) {
  if (i % 40 == 0 && e->nstr < NSTRINGS + 3) {
    char name[32];
    int n = snprintf(name, sizeof name, "kernel_%d", i);
    intern(w, e, name, (size_t)n);
  }
  r->u.kernel.name = e->nstr;
}

static void write_trace(const char *path, struct expect *e) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  int err = 1;
  gp_writer *w = gp_writer_open(fd, &in, 512, &err);
  CHECK(w && err == GPUPHASE_OK);
  intern_specials(w, e);
  uint64_t rng = 42;
  for (int g = 0; g < 4; g++)
    e->rec[g] = calloc(NEVENTS, sizeof *e->rec[g]);
  for (int i = 0; i < NEVENTS; i++) {
    uint32_t kind = kinds[tt_rand(&rng) % (sizeof kinds / sizeof kinds[0])];
    struct gpuphase_record r;
    fill(&r, kind, &rng);
    if (kind == GPUPHASE_REC_KERNEL) name_kernel(w, e, &r, i);
    int g = group_of(kind);
    CHECK(gp_writer_add(w, source_ids[g], &r) == GPUPHASE_OK);
    e->rec[g][e->n[g]++] = r;
  }
  CHECK_EQ_U(gp_writer_events(w), NEVENTS);
  CHECK(gp_writer_flush(w) == GPUPHASE_OK);
  e->sum =
      (struct gpuphase_summary){NEVENTS, 7, GPUPHASE_FLAG_LOST, UINT64_MAX};
  CHECK(gp_writer_close(w, &e->sum) == GPUPHASE_OK);
}

static void check_header(gpuphase_reader *r) {
  const struct gpuphase_header *h = gpuphase_reader_header(r);
  struct gp_process_info in = tt_info();
  CHECK_EQ_U(h->version, 5);
  CHECK_EQ_U(h->min_reader, 5);
  CHECK_EQ_U(h->pid, in.pid);
  CHECK_EQ_U(h->ppid, in.ppid);
  CHECK(h->rank == 3 && h->local_rank == -1);
  CHECK_EQ_U(h->start_mono_ns, in.start_mono_ns);
  CHECK_EQ_U(h->start_real_ns, in.start_real_ns);
  CHECK(!strcmp(h->host, "testhost"));
  CHECK(!strcmp(h->cmdline, in.cmdline));
  CHECK(!strcmp(h->clock, "clock_gettime"));
  CHECK(!strcmp(h->version_str, GP_VERSION));
  CHECK(!strcmp(h->run_id, "") && h->step_items == 0); /* none given */
  /* 72 fixed bytes + five u32 lengths + the strings + step_items */
  CHECK_EQ_U(h->header_size, 72 + 20 + 8 + strlen(in.cmdline) + 13 +
                                 strlen(GP_VERSION) + 8);
}

/* Sorted reading returns source 0's untimed records first: they form
 * their own group there; MODULE, which has a start but is metadata, is
 * among them (handed out where it stands, docs/format.md section 5). */
static int check_group(uint32_t kind) {
  if (kind == GPUPHASE_REC_LOST || kind == GPUPHASE_REC_STATE) /* timed */
    return 4;
  return group_of(kind);
}

static void check_record(gpuphase_reader *r, const struct expect *e,
                         const struct gpuphase_record *rec, size_t *pos) {
  if (rec->kind == GPUPHASE_REC_KERNEL)
    CHECK(gpuphase_reader_string(r, rec->u.kernel.name) != NULL);
  int cg = check_group(rec->kind), g = group_of(rec->kind);
  /* the n-th record of group cg within group g's list */
  while (pos[cg] < e->n[g] && check_group(e->rec[g][pos[cg]].kind) != cg)
    pos[cg]++;
  CHECK(pos[cg] < e->n[g]);
  if (pos[cg] < e->n[g] && !tt_rec_equal(rec, &e->rec[g][pos[cg]], 1))
    CHECK(!"record differs");
  pos[cg]++;
}

static void check_strings(gpuphase_reader *r, const struct expect *e) {
  for (uint64_t id = 1; id <= e->nstr; id++) {
    gpuphase_blob b;
    CHECK(gp_reader_string_blob(r, id, &b));
    CHECK(b.len == e->len[id - 1] && !memcmp(b.data, e->str[id - 1], b.len));
    CHECK(gpuphase_reader_string(r, id) != NULL);
  }
  CHECK(!strcmp(gpuphase_reader_string(r, 0), ""));
  CHECK(gpuphase_reader_string(r, e->nstr + 1) == NULL);
}

static void check_special(const struct gpuphase_record *rec,
                          const struct expect *e, uint64_t *strings,
                          int *summaries) {
  if (rec->kind == GPUPHASE_REC_STRING) {
    CHECK_EQ_U(rec->u.string.id, ++*strings);
    if (rec->u.string.id <= e->nstr) {
      size_t i = rec->u.string.id - 1;
      CHECK(rec->u.string.text.len == e->len[i] &&
            !memcmp(rec->u.string.text.data, e->str[i], e->len[i]));
    }
  } else {
    ++*summaries;
    CHECK(!memcmp(&rec->u.summary, &e->sum, sizeof e->sum));
  }
}

static void read_back(const char *path, int sorted, const struct expect *e) {
  int err = 1;
  gpuphase_reader *r = sorted ? gpuphase_reader_open_sorted(path, &err)
                              : gpuphase_reader_open(path, &err);
  CHECK(r && err == GPUPHASE_OK);
  if (!r) return;
  check_header(r);
  size_t pos[5] = {0}, got[5] = {0}, want[5] = {0};
  uint64_t strings = 0;
  int summaries = 0, rc;
  struct gpuphase_record rec;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    CHECK(summaries == 0); /* the summary comes last */
    if (rec.kind == GPUPHASE_REC_STRING || rec.kind == GPUPHASE_REC_SUMMARY) {
      check_special(&rec, e, &strings, &summaries);
      continue;
    }
    check_record(r, e, &rec, pos);
    got[check_group(rec.kind)]++;
  }
  CHECK(rc == 0);
  CHECK(gpuphase_reader_next(r, &rec) == 0);
  for (int g = 0; g < 4; g++)
    for (size_t i = 0; i < e->n[g]; i++)
      want[check_group(e->rec[g][i].kind)]++;
  for (int g = 0; g < 5; g++)
    CHECK_EQ_U(got[g], want[g]);
  CHECK_EQ_U(strings, e->nstr);
  CHECK(summaries == 1);
  struct gpuphase_summary s;
  CHECK(gpuphase_reader_summary(r, &s) == 1);
  CHECK(!memcmp(&s, &e->sum, sizeof s));
  CHECK(!gpuphase_reader_truncated(r));
  CHECK(!strcmp(gpuphase_reader_errmsg(r), ""));
  CHECK(gpuphase_reader_offset(r) < gpuphase_reader_file_size(r));
  check_strings(r, e);
  gpuphase_reader_close(r);
}

/* gpuphase_reader_read returns what next() does, in batches of any size;
 * STRING texts stay valid until the reader is closed. */
static void read_batches(const char *path, int sorted, size_t cap) {
  int err = 1;
  gpuphase_reader *a = sorted ? gpuphase_reader_open_sorted(path, &err)
                              : gpuphase_reader_open(path, &err);
  gpuphase_reader *b = sorted ? gpuphase_reader_open_sorted(path, &err)
                              : gpuphase_reader_open(path, &err);
  CHECK(a && b);
  if (!a || !b) return;
  struct gpuphase_record *batch = calloc(cap, sizeof *batch), one;
  size_t n = 0, total = 0, strings = 0;
  static const char *text[1 << 16];
  static char *copy[1 << 16];
  int rc;
  while ((rc = gpuphase_reader_read(b, batch, cap, &n)) == 1) {
    CHECK(n >= 1 && n <= cap);
    for (size_t i = 0; i < n; i++, total++) {
      CHECK(gpuphase_reader_next(a, &one) == 1);
      CHECK(tt_rec_equal(&one, &batch[i], 1));
      if (batch[i].kind == GPUPHASE_REC_STRING && strings < 1 << 16) {
        gpuphase_blob t = batch[i].u.string.text;
        text[strings] = t.data;
        copy[strings] = malloc(t.len + 1);
        memcpy(copy[strings], t.data, t.len);
        copy[strings++][t.len] = 0;
      }
    }
  }
  CHECK(rc == 0 && n == 0);
  CHECK(gpuphase_reader_next(a, &one) == 0);
  CHECK(total > 1000);
  for (size_t i = 0; i < strings; i++) {
    CHECK(!strcmp(text[i], copy[i])); /* still valid at the end */
    free(copy[i]);
  }
  CHECK(gpuphase_reader_read(NULL, batch, cap, &n) == GPUPHASE_E_ARG && !n);
  CHECK(gpuphase_reader_read(b, batch, cap, NULL) == GPUPHASE_E_ARG);
  free(batch);
  gpuphase_reader_close(a);
  gpuphase_reader_close(b);
}

/* The frames on disk: many of them, sources as given, metadata before the
 * first event frame, the summary frame last. */
static void check_frames(const char *path) {
  size_t len;
  uint8_t *file = tt_slurp(path, &len);
  static struct tt_frame f[4096];
  uint32_t hs;
  size_t n = tt_frames(file, len, &hs, f, 4096);
  CHECK(n > 50);
  CHECK(n > 0 && f[n - 1].end == len);
  CHECK(n > 0 && f[n - 1].type == 2 && f[n - 1].nrecords == 1);
  CHECK(n > 0 && f[0].source == 0);
  for (size_t i = 0; i + 1 < n; i++) {
    CHECK(f[i].type == 1);
    CHECK(f[i].source <= 2 || f[i].source == UINT32_MAX);
  }
  free(file);
}

static void test_writer_args(const char *path) {
  struct gp_process_info in = tt_info();
  int err = 0;
  CHECK(gp_writer_open(-1, &in, 0, &err) == NULL && err == GPUPHASE_E_ARG);
  int fd = open(path, O_WRONLY | O_TRUNC);
  CHECK(gp_writer_open(fd, NULL, 0, &err) == NULL && err == GPUPHASE_E_ARG);
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  CHECK(w != NULL);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_STRING};
  CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_E_ARG);
  r.kind = GPUPHASE_REC_SUMMARY;
  CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_E_ARG);
  r.kind = 99;
  CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_E_ARG);
  CHECK(gp_writer_add(w, 1, NULL) == GPUPHASE_E_ARG);
  CHECK(gp_writer_add(NULL, 1, &r) == GPUPHASE_E_ARG);
  CHECK_EQ_U(gp_writer_intern(w, NULL, 3), 0);
  /* 65536 distinct sources are allowed, one more is not */
  r.kind = GPUPHASE_REC_API;
  memset(&r.u, 0, sizeof r.u);
  for (uint32_t s = 1; s < 65536; s++)
    if (gp_writer_add(w, s * 7, &r) != GPUPHASE_OK) {
      CHECK(!"source refused");
      break;
    }
  CHECK(gp_writer_add(w, 7, &r) == GPUPHASE_OK);
  CHECK(gp_writer_add(w, 3, &r) == GPUPHASE_E_ARG);
  CHECK_EQ_U(gp_writer_events(w), 65536);
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
  CHECK(gp_writer_close(NULL, NULL) == GPUPHASE_OK);
  int e2;
  gpuphase_reader *rd = gpuphase_reader_open(path, &e2);
  size_t count = 0;
  CHECK(rd && tt_read_all(rd, NULL, 0, &count) == 0 && count == 65536);
  CHECK(!gpuphase_reader_summary(rd, NULL));
  gpuphase_reader_close(rd);
}

/* Write errors are remembered, stop the writing and come back as E_IO
 * with errno; nothing aborts. */
static void test_write_errors(const char *path) {
  struct gp_process_info in = tt_info();
  int err = 0;
  int full = open("/dev/full", O_WRONLY);
  if (full >= 0) {
    errno = 0;
    CHECK(gp_writer_open(full, &in, 0, &err) == NULL);
    CHECK(err == GPUPHASE_E_IO && errno == ENOSPC);
    close(full); /* a failed open leaves the fd to the caller */
  }
  int fd = open(path, O_WRONLY | O_TRUNC);
  gp_writer *w = gp_writer_open(fd, &in, 256, &err);
  CHECK(w != NULL);
  int ro = open(path, O_RDONLY);
  dup2(ro, fd); /* later writes to fd fail with EBADF */
  close(ro);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  int rc = GPUPHASE_OK;
  for (int i = 0; i < 1000 && rc == GPUPHASE_OK; i++) {
    r.u.api.start = (uint64_t)i * 1000;
    rc = gp_writer_add(w, 1, &r);
  }
  CHECK(rc == GPUPHASE_E_IO);
  CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_E_IO);
  CHECK(gp_writer_flush(w) == GPUPHASE_E_IO);
  CHECK_EQ_U(gp_writer_intern(w, "late", 4), 0);
  errno = 0;
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_E_IO);
  CHECK(errno == EBADF);
}

static void test_reader_args(void) {
  int err = 0;
  CHECK(gpuphase_reader_open(NULL, &err) == NULL && err == GPUPHASE_E_ARG);
  CHECK(gpuphase_reader_open("/nonexistent/x.gph", &err) == NULL);
  CHECK(err == GPUPHASE_E_IO && errno == ENOENT);
  CHECK(gpuphase_reader_open("/", &err) == NULL && err == GPUPHASE_E_IO);
  CHECK(errno == EISDIR);
  struct gpuphase_record rec;
  CHECK(gpuphase_reader_next(NULL, &rec) == GPUPHASE_E_ARG);
  gpuphase_reader_close(NULL);
  CHECK(gpuphase_reader_header(NULL) == NULL);
  CHECK(gpuphase_reader_string(NULL, 1) == NULL);
  const int codes[] = {0, -1, -2, -3, -4, -5, -6, -7};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < i; j++)
      CHECK(strcmp(gpuphase_strerror(codes[i]), gpuphase_strerror(codes[j])));
  CHECK(!strcmp(gpuphase_strerror(-99), "unknown error"));
}

int main(void) {
  static struct expect e;
  const char *path = tt_tmpfile("roundtrip");
  write_trace(path, &e);
  check_frames(path);
  read_back(path, 0, &e);
  read_back(path, 1, &e);
  read_batches(path, 0, 1);
  read_batches(path, 0, 7);
  read_batches(path, 1, 1000);
  for (int g = 0; g < 4; g++)
    free(e.rec[g]);
  for (uint64_t i = 0; i < e.nstr; i++)
    free(e.str[i]);
  test_writer_args(path);
  test_write_errors(path);
  test_reader_args();
  return tt_done("test_roundtrip");
}
