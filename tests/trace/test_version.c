/* Versioning and compatibility: newer-reader requirements are refused,
 * newer-but-compatible files (longer header, unknown record kinds, extra
 * trailing fields, optional frame types, the other byte order) are read;
 * hand-made damaged frames are refused with E_CORRUPT; a version-1 file
 * (header without run_id and step_items, shorter DEVICE records) reads
 * with their defaults. Frames here are assembled by hand from
 * docs/format.md, not by the writer. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "reader_ext.h"
#include "tt.h"

struct bytes {
  uint8_t *p;
  size_t len;
};

static void put(struct bytes *b, const void *d, size_t n) {
  b->p = realloc(b->p, b->len + n);
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void put32(struct bytes *b, uint32_t v) {
  put(b, &v, 4);
}

static void frame(struct bytes *b, uint8_t type, uint32_t source,
                  const void *payload, size_t len, int checksum) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum);
  size_t cap = ZSTD_compressBound(len);
  uint8_t *z = malloc(cap);
  size_t n = ZSTD_compress2(c, z, cap, payload, len);
  CHECK(!ZSTD_isError(n));
  uint8_t h[8] = {'G', 'P', 'F', 'R', type, 0, 0, 0};
  put(b, h, 8);
  put32(b, source);
  put32(b, (uint32_t)n);
  put32(b, (uint32_t)len);
  put(b, z, n);
  free(z);
  ZSTD_freeCCtx(c);
}

/* A header-only file from the writer: the base for hand-made frames. */
static struct bytes header_only(const char *path) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
  struct bytes b = {NULL, 0};
  b.p = tt_slurp(path, &b.len);
  return b;
}

static int open_err(const struct bytes *b, int sorted, char *msg) {
  int err = 0;
  gpuphase_reader *r = gp_reader_open_mem(b->p, b->len, sorted, &err, msg, 256);
  gpuphase_reader_close(r);
  return r ? 0 : err;
}

/* Reads all; returns the final code, records in out. */
static int read_mem(const struct bytes *b, int sorted,
                    struct gpuphase_record *out, size_t max, size_t *n,
                    char *msg) {
  int err;
  gpuphase_reader *r = gp_reader_open_mem(b->p, b->len, sorted, &err, NULL, 0);
  if (!r) return err;
  int rc = tt_read_all(r, out, max, n);
  snprintf(msg, 256, "%s", gpuphase_reader_errmsg(r));
  gpuphase_reader_close(r);
  return rc;
}

static void test_versions(const char *path) {
  struct bytes b = header_only(path);
  char msg[256];
  uint16_t next = GPUPHASE_FORMAT_VERSION + 1, zero = 0;
  memcpy(b.p + 10, &next, 2); /* min_reader: after this reader */
  CHECK(open_err(&b, 0, msg) == GPUPHASE_E_VERSION);
  char want[64];
  snprintf(want, sizeof want, "needs a reader of version >= %u",
           GPUPHASE_FORMAT_VERSION + 1);
  CHECK(strstr(msg, want) != NULL);
  CHECK(open_err(&b, 1, msg) == GPUPHASE_E_VERSION);
  tt_write_file(path, b.p, b.len);
  int err;
  CHECK(!gpuphase_reader_open(path, &err) && err == GPUPHASE_E_VERSION);
  CHECK(!gpuphase_reader_open_sorted(path, &err) && err == GPUPHASE_E_VERSION);
  memcpy(b.p + 10, &zero + 0, 2);
  memcpy(b.p + 8, &zero, 2); /* no version 0 was ever written: damage, not
                              * a newer writer */
  CHECK(open_err(&b, 0, msg) == GPUPHASE_E_CORRUPT);
  CHECK(strstr(msg, "versions start at 1") != NULL);
  CHECK(open_err(&b, 1, msg) == GPUPHASE_E_CORRUPT);
  memcpy(b.p + 8, "\x07\x00", 2); /* version 7, readable by version 1 */
  memcpy(b.p + 10, "\x01\x00", 2);
  CHECK(open_err(&b, 0, msg) == 0);
  memcpy(b.p, "GPUPHASF", 8);
  CHECK(open_err(&b, 0, msg) == GPUPHASE_E_NOT_TRACE);
  free(b.p);
}

/* Record bytes by hand (docs/format.md): varint kind, varint length. */
static void record(struct bytes *b, uint8_t kind, const uint8_t *payload,
                   uint8_t len) {
  put(b, &kind, 1);
  put(b, &len, 1);
  put(b, payload, len);
}

/* Metadata frame: a string, an unknown kind, an API record with two
 * fields a newer writer appended, an API record with only three fields. */
static void compat_frames(struct bytes *file) {
  struct bytes p = {NULL, 0};
  record(&p, 1,
         (const uint8_t *)"\x02\x03"
                          "abc",
         5);
  record(&p, 77, (const uint8_t *)"\x01\x02\x03", 3);
  /* thread 1, api 2, start 100, end 150, ret 0, corr 5, device -1,
   * stream .. ptr 0, then two unknown fields */
  static const uint8_t api1[] = {0x02, 0x04, 0xc8, 0x01, 0x64, 0x00, 0x0a,
                                 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                 0x00, 0x00, 0x00, 0x08, 0x96, 0x01};
  record(&p, 5, api1, sizeof api1);
  /* thread +1, api +0, start +50: every other field as before */
  record(&p, 5, (const uint8_t *)"\x02\x00\x64", 3);
  frame(file, 1, 0, p.p, p.len, 1);
  frame(file, 0x80, 0, "opaque", 6, 1); /* optional type: skipped */
  /* a kernel on source 9: device 0, stream 7, corr 5, start 120, end 130 */
  static const uint8_t k[] = {0x00, 0x0e, 0x0a, 0xf0, 0x01, 0x14, 0x02};
  p.len = 0;
  record(&p, 6, k, sizeof k);
  frame(file, 1, 9, p.p, p.len, 1);
  free(p.p);
}

static void check_compat(const struct gpuphase_record *g, size_t n) {
  CHECK_EQ_U(n, 4);
  if (n != 4) return;
  CHECK(g[0].kind == GPUPHASE_REC_STRING && g[0].u.string.id == 1 &&
        g[0].u.string.text.len == 3 &&
        !memcmp(g[0].u.string.text.data, "abc", 3));
  const struct gpuphase_api *a = &g[1].u.api, *b = &g[2].u.api;
  CHECK(g[1].kind == GPUPHASE_REC_API && g[2].kind == GPUPHASE_REC_API);
  CHECK(a->thread == 1 && a->api == 2 && a->start == 100 && a->end == 150);
  CHECK(a->ret == 0 && a->corr == 5 && a->device == -1 && a->flags == 0);
  CHECK(b->thread == 2 && b->api == 2 && b->start == 150 && b->end == 200);
  CHECK(b->corr == 5 && b->device == -1);
  const struct gpuphase_kernel *k = &g[3].u.kernel;
  CHECK(g[3].kind == GPUPHASE_REC_KERNEL && k->stream == 7 && k->corr == 5);
  CHECK(k->start == 120 && k->end == 130 && k->name == 1);
}

static void test_compat(const char *path) {
  struct bytes b = header_only(path);
  compat_frames(&b);
  struct gpuphase_record g[8];
  size_t n = 0;
  char msg[256];
  CHECK(read_mem(&b, 0, g, 8, &n, msg) == 0);
  check_compat(g, n);
  for (size_t i = 0; i < n && i < 8; i++)
    tt_rec_free(&g[i]);
  /* sorted: the string first, then API 100, KERNEL 120, API 150 */
  CHECK(read_mem(&b, 1, g, 8, &n, msg) == 0);
  CHECK_EQ_U(n, 4);
  if (n == 4) {
    struct gpuphase_record o[4] = {g[0], g[1], g[3], g[2]};
    check_compat(o, 4);
  }
  for (size_t i = 0; i < n && i < 8; i++)
    tt_rec_free(&g[i]);
  free(b.p);
}

static const uint8_t one_state[] = {0x0c, 0x02, 0x02, 0x02};

/* Each case: the header, one good frame, then one damaged frame. */
static void expect_corrupt(const char *path, const char *what,
                           void (*damage)(struct bytes *)) {
  struct bytes b = header_only(path);
  frame(&b, 1, 0, one_state, sizeof one_state, 1);
  size_t good_end = b.len;
  damage(&b);
  struct gpuphase_record g[4];
  size_t n = 0;
  char msg[256];
  for (int sorted = 0; sorted < 2; sorted++) {
    CHECK(read_mem(&b, sorted, g, 4, &n, msg) == GPUPHASE_E_CORRUPT);
    CHECK_EQ_U(n, 1); /* the good frame's record came first */
    char where[64];
    snprintf(where, sizeof where, "frame at byte %zu: ", good_end);
    if (!strstr(msg, where) || !strstr(msg, what)) {
      fprintf(stderr, "  message \"%s\" lacks \"%s%s\"\n", msg, where, what);
      CHECK(!"error message");
    }
  }
  free(b.p);
}

static void d_type(struct bytes *b) {
  frame(b, 3, 0, one_state, sizeof one_state, 1);
}
static void d_reserved(struct bytes *b) {
  size_t at = b->len;
  frame(b, 1, 0, one_state, sizeof one_state, 1);
  b->p[at + 6] = 1;
}
static void d_checksum(struct bytes *b) {
  frame(b, 1, 0, one_state, sizeof one_state, 0);
}
static void d_huge(struct bytes *b) {
  size_t at = b->len;
  frame(b, 1, 0, one_state, sizeof one_state, 1);
  uint32_t big = (64u << 20) + 1;
  memcpy(b->p + at + 16, &big, 4);
}
static void d_usize(struct bytes *b) {
  size_t at = b->len;
  frame(b, 1, 0, one_state, sizeof one_state, 1);
  b->p[at + 16] += 1;
}
static void d_payload(struct bytes *b) {
  frame(b, 1, 0, one_state, sizeof one_state, 1);
  b->p[b->len - 6] ^= 0x10; /* inside the zstd block or checksum */
}
static void d_record(struct bytes *b) {
  frame(b, 1, 0, "\x0c\x09\x02", 3, 1); /* length past the payload */
}
static void d_summary(struct bytes *b) {
  static const uint8_t two[] = {0x0d, 0x01, 0x02, 0x0d, 0x01, 0x02};
  frame(b, 2, 0, two, sizeof two, 1);
}
static void d_magic(struct bytes *b) {
  put(b, "GPFX", 4);
}

static void test_damage(const char *path) {
  expect_corrupt(path, "unknown frame type 3", d_type);
  expect_corrupt(path, "reserved bytes", d_reserved);
  expect_corrupt(path, "no content checksum", d_checksum);
  expect_corrupt(path, "exceeds the limit", d_huge);
  expect_corrupt(path, "size mismatch", d_usize);
  expect_corrupt(path, "zstd", d_payload);
  expect_corrupt(path, "malformed record", d_record);
  expect_corrupt(path, "summary frame", d_summary);
  expect_corrupt(path, "bad frame magic", d_magic);
  /* an empty records frame is valid and holds nothing */
  struct bytes e = header_only(path);
  frame(&e, 1, 4, "", 0, 1);
  frame(&e, 1, 0, one_state, sizeof one_state, 1);
  size_t ne = 0;
  char m2[256];
  for (int sorted = 0; sorted < 2; sorted++) {
    CHECK(read_mem(&e, sorted, NULL, 0, &ne, m2) == 0);
    CHECK_EQ_U(ne, 1);
  }
  free(e.p);
  /* a cut frame magic is a truncation, not damage */
  struct bytes b = header_only(path);
  frame(&b, 1, 0, one_state, sizeof one_state, 1);
  put(&b, "GP", 2);
  int err;
  gpuphase_reader *r = gp_reader_open_mem(b.p, b.len, 0, &err, NULL, 0);
  size_t n = 0;
  CHECK(r && tt_read_all(r, NULL, 0, &n) == 0 && n == 1);
  CHECK(gpuphase_reader_truncated(r));
  gpuphase_reader_close(r);
  free(b.p);
}

static void swap_at(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n / 2; i++) {
    uint8_t t = p[i];
    p[i] = p[n - 1 - i];
    p[n - 1 - i] = t;
  }
}

/* Rewrites a native file as the other byte order would have written it:
 * header numbers and frame header numbers; records are byte-oriented. */
static void swap_file(uint8_t *p, size_t len) {
  uint32_t hs, slen;
  memcpy(&hs, p + 16, 4);
  size_t pos = 72;
  for (int i = 0; i < 5; i++) { /* version 2: run_id is the fifth */
    memcpy(&slen, p + pos, 4);
    swap_at(p + pos, 4);
    pos += 4 + slen;
  }
  swap_at(p + pos, 8); /* step_items */
  swap_at(p + 8, 2);
  swap_at(p + 10, 2);
  for (size_t o = 12; o < 24; o += 4)
    swap_at(p + o, 4);
  for (size_t o = 24; o < 72; o += 8)
    swap_at(p + o, 8);
  for (size_t off = hs; off + 20 <= len;) {
    uint32_t csize;
    memcpy(&csize, p + off + 12, 4);
    for (size_t o = 8; o < 20; o += 4)
      swap_at(p + off + o, 4);
    off += 20 + csize;
  }
}

static void test_byte_order(const char *path) {
  /* a writer-made file with a few frames */
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  in.run_id = "0123456789abcdef";
  in.step_items = 0x0102030405060708ull; /* every byte differs */
  gp_writer *w = gp_writer_open(fd, &in, 64, NULL);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  for (int i = 0; i < 50; i++) {
    r.u.range.start = 1000 + (uint64_t)i * 10;
    r.u.range.name = gp_writer_intern(w, i % 2 ? "odd" : "even", 3 + i % 2);
    gp_writer_add(w, 1 + (uint32_t)(i % 3), &r);
  }
  struct gpuphase_summary sum = {50, 0, 0, 2000};
  gp_writer_close(w, &sum);
  struct bytes b = {NULL, 0};
  b.p = tt_slurp(path, &b.len);
  static struct gpuphase_record want[64], got[64];
  size_t nw = 0, ng = 0;
  char msg[256];
  uint8_t *native = malloc(b.len);
  memcpy(native, b.p, b.len);
  for (int sorted = 0; sorted < 2; sorted++) {
    swap_file(b.p, b.len);
    int err;
    gpuphase_reader *fr = gp_reader_open_mem(b.p, b.len, sorted, &err, 0, 0);
    CHECK(fr && tt_read_all(fr, got, 64, &ng) == 0);
    const struct gpuphase_header *h = gpuphase_reader_header(fr);
    CHECK(h && h->pid == 4242 && h->rank == 3 && h->local_rank == -1);
    CHECK(h && !strcmp(h->cmdline, in.cmdline));
    CHECK(h && !strcmp(h->run_id, in.run_id));
    CHECK(h && h->step_items == in.step_items);
    gpuphase_reader_close(fr);
    memcpy(b.p, native, b.len);
    CHECK(read_mem(&b, sorted, want, 64, &nw, msg) == 0);
    CHECK_EQ_U(ng, nw);
    CHECK_EQ_U(nw, 50 + 2 + 1);
    for (size_t i = 0; i < nw && i < ng; i++) {
      CHECK(tt_rec_equal(&got[i], &want[i], 1));
      tt_rec_free(&got[i]);
      tt_rec_free(&want[i]);
    }
  }
  free(native);
  free(b.p);
}

/* A version-1 reader skips header fields a newer writer appended. */
static void test_longer_header(const char *path) {
  struct bytes b = header_only(path);
  uint32_t hs;
  memcpy(&hs, b.p + 16, 4);
  struct bytes n = {NULL, 0};
  put(&n, b.p, hs);
  put(&n, "future fields", 13);
  hs += 13;
  memcpy(n.p + 16, &hs, 4);
  memcpy(n.p + 8, "\x02\x00", 2); /* version 2, min reader 1 */
  frame(&n, 1, 0, one_state, sizeof one_state, 1);
  struct gpuphase_record g[2];
  size_t cnt = 0;
  char msg[256];
  CHECK(read_mem(&n, 0, g, 2, &cnt, msg) == 0 && cnt == 1);
  CHECK(g[0].kind == GPUPHASE_REC_STATE && g[0].u.state.start == 1);
  int err;
  gpuphase_reader *r = gp_reader_open_mem(n.p, n.len, 0, &err, 0, 0);
  CHECK(r && gpuphase_reader_header(r)->version == 2);
  CHECK(r && !strcmp(gpuphase_reader_header(r)->host, "testhost"));
  gpuphase_reader_close(r);
  free(b.p);
  free(n.p);
}

static void put16(struct bytes *b, uint16_t v) {
  put(b, &v, 2);
}
static void put64(struct bytes *b, uint64_t v) {
  put(b, &v, 8);
}
static void put_str(struct bytes *b, const char *s) {
  put32(b, (uint32_t)strlen(s));
  put(b, s, strlen(s));
}

/* A version-1 header as docs/format.md lays it out (section 2): the fixed
 * part, then host, cmdline, clock and version_str, and nothing after. */
static struct bytes v1_header(void) {
  struct bytes b = {NULL, 0};
  const char *str[4] = {"oldhost", "python old.py", "tsc", "0.0.9"};
  uint32_t size = 72;
  for (int i = 0; i < 4; i++)
    size += 4 + (uint32_t)strlen(str[i]);
  put(&b, "GPUPHASE", 8);
  put16(&b, 1);
  put16(&b, 1);
  put32(&b, 0x01020304u);
  put32(&b, size);
  put32(&b, 0);   /* flags */
  put64(&b, 77);  /* pid */
  put64(&b, 7);   /* ppid */
  put64(&b, (uint64_t)-1);
  put64(&b, (uint64_t)-1);
  put64(&b, 5000);
  put64(&b, 1700000000000000000ull);
  for (int i = 0; i < 4; i++)
    put_str(&b, str[i]);
  CHECK_EQ_U(b.len, size);
  return b;
}

/* A version-1 file (no run id, no step items, 14-field DEVICE records)
 * reads with run_id "", step_items 0 and the new DEVICE fields 0. */
static void test_v1_file(void) {
  struct bytes b = v1_header();
  struct bytes p = {NULL, 0};
  /* DEVICE: device 0, name 0, sms 132 (zigzag 264 = 88 02), the other
   * eleven version-1 fields 0 */
  static const uint8_t dev[] = {0x00, 0x00, 0x88, 0x02, 0, 0, 0, 0,
                                0,    0,    0,    0,    0, 0, 0, 0};
  record(&p, 4, dev, sizeof dev);
  record(&p, 12, (const uint8_t *)"\x02\x02", 2); /* STATE start 1 */
  frame(&b, 1, 0, p.p, p.len, 1);
  for (int sorted = 0; sorted < 2; sorted++) {
    int err;
    gpuphase_reader *r = gp_reader_open_mem(b.p, b.len, sorted, &err, 0, 0);
    CHECK(r != NULL);
    if (!r) continue;
    const struct gpuphase_header *h = gpuphase_reader_header(r);
    CHECK(h->version == 1 && h->min_reader == 1 && h->header_size == 72 + 16 + 28);
    CHECK(h->pid == 77 && h->ppid == 7 && !strcmp(h->host, "oldhost"));
    CHECK(!strcmp(h->version_str, "0.0.9"));
    CHECK(h->run_id && !strcmp(h->run_id, ""));
    CHECK_EQ_U(h->step_items, 0);
    struct gpuphase_record g[4];
    size_t n = 0;
    CHECK(tt_read_all(r, g, 4, &n) == 0);
    CHECK_EQ_U(n, 2);
    CHECK(n >= 1 && g[0].kind == GPUPHASE_REC_DEVICE);
    if (n >= 1 && g[0].kind == GPUPHASE_REC_DEVICE) {
      CHECK(g[0].u.device.sms == 132 && g[0].u.device.mem_bus_width == 0);
      CHECK(g[0].u.device.driver_version == 0);
      CHECK(g[0].u.device.runtime_version == 0);
    }
    for (size_t i = 0; i < n && i < 4; i++)
      tt_rec_free(&g[i]);
    gpuphase_reader_close(r);
  }
  free(p.p);
  free(b.p);
}

/* A header with run_id but cut before step_items reads step_items 0; a
 * run_id whose length runs past header_size is corrupt. */
static void test_v2_partial(void) {
  struct bytes b = v1_header();
  uint32_t size = (uint32_t)b.len + 4 + 3;
  memcpy(b.p + 8, "\x02\x00", 2);
  memcpy(b.p + 16, &size, 4);
  put_str(&b, "r-7");
  int err;
  gpuphase_reader *r = gp_reader_open_mem(b.p, b.len, 0, &err, 0, 0);
  CHECK(r && !strcmp(gpuphase_reader_header(r)->run_id, "r-7"));
  CHECK(r && gpuphase_reader_header(r)->step_items == 0);
  gpuphase_reader_close(r);
  uint32_t huge = 1000;
  memcpy(b.p + b.len - 7, &huge, 4);
  char msg[256];
  CHECK(open_err(&b, 0, msg) == GPUPHASE_E_CORRUPT);
  CHECK(strstr(msg, "string 5 overruns") != NULL);
  free(b.p);
}

/* Version 2 written and read back: the run id and items per step in the
 * header, DEVICE's driver and runtime versions, ITEMS records in their
 * thread's source, ordered by start among the thread's other records. */
static void test_v2_roundtrip(const char *path) {
  CHECK(gp_kind_in(GP_TIMED_KINDS, GPUPHASE_REC_ITEMS));
  CHECK(!strcmp(gpuphase_kind_name(GPUPHASE_REC_ITEMS), "items"));
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  in.run_id = "9f86d081884c7d65";
  in.step_items = 32;
  gp_writer *w = gp_writer_open(fd, &in, 64, NULL);
  CHECK(w != NULL);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  r.u.device = (struct gpuphase_device){
      .device = 0, .sms = 132, .driver_version = 13000,
      .runtime_version = 12090};
  CHECK(gp_writer_add(w, 0, &r) == GPUPHASE_OK);
  /* thread 1: API at 100, 300, 500; ITEMS 3 per step at 150, 160, 170,
   * 350, ... on the same source; a range on another source at 200 */
  for (uint64_t step = 0; step < 3; step++) {
    uint64_t t = 100 + 200 * step;
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
    r.u.api = (struct gpuphase_api){.thread = 1, .start = t, .end = t + 20};
    CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_OK);
    for (uint64_t k = 0; k < 3; k++) {
      r = (struct gpuphase_record){.kind = GPUPHASE_REC_ITEMS};
      r.u.items = (struct gpuphase_items){
          .thread = 1, .start = t + 50 + 10 * k, .count = 8 << k};
      CHECK(gp_writer_add(w, 1, &r) == GPUPHASE_OK);
    }
  }
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_RANGE};
  r.u.range = (struct gpuphase_range){.thread = 2, .op = 1, .start = 200};
  CHECK(gp_writer_add(w, 2, &r) == GPUPHASE_OK);
  struct gpuphase_summary sum = {14, 0, 0, 1000};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
  for (int sorted = 0; sorted < 2; sorted++) {
    int err;
    gpuphase_reader *rd = sorted ? gpuphase_reader_open_sorted(path, &err)
                                 : gpuphase_reader_open(path, &err);
    CHECK(rd != NULL);
    if (!rd) continue;
    const struct gpuphase_header *h = gpuphase_reader_header(rd);
    CHECK_EQ_U(h->version, GPUPHASE_FORMAT_VERSION);
    CHECK_EQ_U(h->min_reader, GPUPHASE_FORMAT_MIN_READER);
    CHECK(!strcmp(h->run_id, "9f86d081884c7d65"));
    CHECK_EQ_U(h->step_items, 32);
    CHECK(!strcmp(h->host, "testhost") && !strcmp(h->clock, "clock_gettime"));
    static struct gpuphase_record g[32];
    size_t n = 0;
    CHECK(tt_read_all(rd, g, 32, &n) == 0);
    CHECK_EQ_U(n, 15);
    uint64_t items = 0, last = 0, nitems = 0;
    int ordered = 1;
    for (size_t i = 0; i < n && i < 32; i++) {
      int timed;
      uint64_t t = gp_record_start(&g[i], &timed);
      if (timed && g[i].kind != GPUPHASE_REC_SUMMARY) {
        ordered &= t >= last;
        last = t;
      }
      if (g[i].kind == GPUPHASE_REC_DEVICE)
        CHECK(g[i].u.device.driver_version == 13000 &&
              g[i].u.device.runtime_version == 12090 &&
              g[i].u.device.sms == 132);
      if (g[i].kind != GPUPHASE_REC_ITEMS) continue;
      CHECK(timed && t == g[i].u.items.start);
      CHECK_EQ_U(g[i].u.items.thread, 1);
      CHECK_EQ_U(g[i].u.items.count, 8u << (nitems % 3));
      items += g[i].u.items.count;
      nitems++;
    }
    CHECK_EQ_U(nitems, 9);
    CHECK_EQ_U(items, 3 * (8 + 16 + 32));
    CHECK(!sorted || ordered); /* time order puts the range among them */
    if (sorted && n == 15) {
      /* DEVICE, API 100, ITEMS 150 160 170, RANGE 200, API 300 ... */
      CHECK(g[0].kind == GPUPHASE_REC_DEVICE && g[1].kind == GPUPHASE_REC_API);
      CHECK(g[4].kind == GPUPHASE_REC_ITEMS && g[5].kind == GPUPHASE_REC_RANGE);
    }
    for (size_t i = 0; i < n && i < 32; i++)
      tt_rec_free(&g[i]);
    gpuphase_reader_close(rd);
  }
}

int main(void) {
  const char *path = tt_tmpfile("version");
  test_versions(path);
  test_compat(path);
  test_damage(path);
  test_byte_order(path);
  test_longer_header(path);
  test_v1_file();
  test_v2_partial();
  test_v2_roundtrip(path);
  return tt_done("test_version");
}
