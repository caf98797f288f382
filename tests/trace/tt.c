#include "tt.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"

int tt_failures;

int tt_done(const char *name) {
  tt_cleanup();
  if (tt_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, tt_failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

uint64_t tt_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static char *paths[256];
static int npaths;

const char *tt_tmpfile(const char *tag) {
  const char *dir = getenv("TMPDIR");
  char buf[4096];
  snprintf(buf, sizeof buf, "%s/gptest-%s-XXXXXX", dir && *dir ? dir : "/tmp",
           tag);
  int fd = mkstemp(buf);
  if (fd < 0 || npaths == 256) {
    perror("mkstemp");
    exit(1);
  }
  close(fd);
  return paths[npaths++] = strdup(buf);
}

void tt_cleanup(void) {
  while (npaths > 0) {
    unlink(paths[--npaths]);
    free(paths[npaths]);
  }
}

struct gp_process_info tt_info(void) {
  struct gp_process_info in = {
      .host = "testhost",
      .pid = 4242,
      .ppid = 1,
      .rank = 3,
      .local_rank = -1,
      .cmdline = "python train.py --epochs 2",
      .start_mono_ns = 1000000000ull,
      .start_real_ns = 1700000000000000000ull,
      .clock = "clock_gettime",
      .flags = 0,
  };
  return in;
}

static int eq_V(const void *a, const void *b) {
  return !memcmp(a, b, 8);
}
#define eq_E eq_V
static int eq_B(const void *a, const void *b) {
  const gpuphase_blob *x = a, *y = b;
  return x->len == y->len && (!x->len || !memcmp(x->data, y->data, x->len));
}

#define CMP_FIELD(code, type, name)                                            \
  if (!eq_##code(&x->name, &y->name)) {                                        \
    if (verbose) fprintf(stderr, "  field %s differs\n", #name);               \
    return 0;                                                                  \
  }
#define CMP_KIND(num, UP, low, FIELDS)                                         \
  case num: {                                                                  \
    const struct gpuphase_##low *x = &a->u.low, *y = &b->u.low;                \
    FIELDS(CMP_FIELD)                                                          \
    return 1;                                                                  \
  }

int tt_rec_equal(const struct gpuphase_record *a,
                 const struct gpuphase_record *b, int verbose) {
  if (a->kind != b->kind) {
    if (verbose) fprintf(stderr, "  kind %u != %u\n", a->kind, b->kind);
    return 0;
  }
  switch (a->kind) { GPUPHASE_RECORD_KINDS(CMP_KIND) }
  return 0;
}

static void copy_V(void *p) {
  (void)p;
}
#define copy_E copy_V
static void copy_B(void *p) {
  gpuphase_blob *b = p;
  char *d = malloc(b->len + 1);
  if (b->len) memcpy(d, b->data, b->len);
  b->data = d;
}
static void free_V(void *p) {
  (void)p;
}
#define free_E free_V
static void free_B(void *p) {
  free((void *)((gpuphase_blob *)p)->data);
}
#define COPY_FIELD(code, type, name) copy_##code(&x->name);
#define FREE_FIELD(code, type, name) free_##code(&x->name);
#define COPY_KIND(num, UP, low, FIELDS)                                        \
  case num: {                                                                  \
    struct gpuphase_##low *x = &c.u.low;                                       \
    FIELDS(COPY_FIELD)                                                         \
    break;                                                                     \
  }
#define FREE_KIND(num, UP, low, FIELDS)                                        \
  case num: {                                                                  \
    struct gpuphase_##low *x = &r->u.low;                                      \
    FIELDS(FREE_FIELD)                                                         \
    break;                                                                     \
  }

struct gpuphase_record tt_rec_copy(const struct gpuphase_record *r) {
  struct gpuphase_record c = *r;
  switch (c.kind) { GPUPHASE_RECORD_KINDS(COPY_KIND) }
  return c;
}

void tt_rec_free(struct gpuphase_record *r) {
  switch (r->kind) { GPUPHASE_RECORD_KINDS(FREE_KIND) }
}

uint8_t *tt_slurp(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    perror(path);
    exit(1);
  }
  uint8_t *p = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t k = read(fd, p + got, (size_t)st.st_size - got);
    if (k <= 0) {
      perror(path);
      exit(1);
    }
    got += (size_t)k;
  }
  close(fd);
  *len = got;
  return p;
}

void tt_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
    perror(path);
    exit(1);
  }
}

static uint32_t u32_at(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* LEB128 as the format document defines it, written apart from the codec
 * so that the tests do not check the codec against itself. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int i = 0; i < 10 && *p < end; i++) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

static uint32_t count_records(const uint8_t *z, size_t zlen, uint32_t usize) {
  uint8_t *buf = malloc(usize ? usize : 1);
  size_t n = ZSTD_decompress(buf, usize, z, zlen);
  uint32_t count = 0;
  if (!ZSTD_isError(n)) {
    const uint8_t *p = buf, *end = buf + n;
    uint64_t kind, len;
    while (p < end) {
      if (*p >= 0x80) { /* a repeat record: tag, two varints */
        p++;
        if (varint(&p, end, &kind) || varint(&p, end, &len)) break;
      } else if (!varint(&p, end, &kind) && !varint(&p, end, &len) &&
                 len <= (uint64_t)(end - p)) {
        p += len;
      } else {
        break;
      }
      count++;
    }
  }
  free(buf);
  return count;
}

size_t tt_frames(const uint8_t *file, size_t len, uint32_t *hdr_size,
                 struct tt_frame *out, size_t max) {
  *hdr_size = u32_at(file + 16);
  uint64_t off = *hdr_size;
  size_t n = 0;
  while (n < max && off + 20 <= len && !memcmp(file + off, "GPFR", 4)) {
    struct tt_frame f = {.off = off, .type = file[off + 4]};
    f.source = u32_at(file + off + 8);
    f.csize = u32_at(file + off + 12);
    f.usize = u32_at(file + off + 16);
    f.end = off + 20 + f.csize;
    if (f.end > len) break;
    f.nrecords = count_records(file + off + 20, f.csize, f.usize);
    out[n++] = f;
    off = f.end;
  }
  return n;
}

int tt_read_all(gpuphase_reader *r, struct gpuphase_record *out, size_t max,
                size_t *count) {
  struct gpuphase_record rec;
  int rc;
  *count = 0;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    if (*count < max) out[*count] = tt_rec_copy(&rec);
    ++*count;
  }
  return rc;
}

size_t tt_varint_len(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7)
    n++;
  return n;
}

void tt_put_padding(uint8_t *p, size_t n) {
  for (size_t h = 1; h <= 10 && h + 1 <= n; h++) {
    size_t len = n - 1 - h;
    if (tt_varint_len(len) != h) continue;
    p[0] = 100;
    gp_put_varint(p + 1, len);
    memset(p + 1 + h, 0, len);
    return;
  }
  p[0] = 100; /* no length fits exactly: an empty record first */
  p[1] = 0;
  tt_put_padding(p + 2, n - 2);
}
