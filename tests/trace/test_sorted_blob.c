/* Time-ordered reading: a record with blob fields (MODULE's build_id)
 * waiting in the merge while other sources' frames push its frame out of
 * the reader's budgets (docs/format.md, section 5). Its blob points into
 * its source's decoded frame; once that frame is freed or taken over by
 * another source, the record must still come out with its own bytes.
 *
 * Each file: a frame of source 50 whose first (or only) record is a
 * MODULE, then NOTHER frames of sources 1..NOTHER, each larger than the
 * reader's small-frame size and together over its 128 MiB budget for
 * such frames. The merge decodes every source's first record before it
 * hands any out; the MODULE, with source 50's key still 0, comes first,
 * by which time its frame has been evicted. Cases:
 *   freed:  source 50's frame (40 MB) is smaller than the others' (60 MB),
 *           so its buffer is freed (ASan: heap-use-after-free before the
 *           fix; without ASan, reading unmapped memory);
 *   reused: source 50's frame (60 MB) is larger than the others' (50 MB),
 *           so one of them decodes into its buffer (wrong bytes before);
 *   last:   as freed, with the MODULE the last record of its frame (the
 *           frame was read to its end when it was evicted);
 *   two:    as freed, and before it a frame of source 40 ending with
 *           another MODULE, its API record in a second frame of 60 MB:
 *           source 50's MODULE comes on top once source 40 has moved on
 *           to that frame (the merge's heap, not its start).
 * Frames are mostly an unknown record of zeros, a few kilobytes each in
 * the file. Each case is read on one thread and with gp_reader_set_threads
 * (the frames are too big for the workers: the same path).
 *   test_sorted_blob [CASE]   (one case only) */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "format.h"
#include "reader_ext.h"
#include "tt.h"

#define NOTHER 5
#define BLOB_SRC 50
#define SECOND_SRC 40
#define BUILD_ID_LEN 20

struct blob_case {
  const char *name;
  uint32_t blob_usize, other_usize;
  int module_last; /* the MODULE ends its frame, no API record after it */
  int second;      /* source 40 first, with MODULE 8 (case two) */
};

static const struct blob_case cases[] = {
    {"freed", 40000000, 60000000, 0, 0},
    {"reused", 60000000, 50000000, 0, 0},
    {"last", 40000000, 60000000, 1, 0},
    {"two", 40000000, 60000000, 0, 1},
};

static void build_id(uint8_t *b) {
  for (int i = 0; i < BUILD_ID_LEN; i++)
    b[i] = (uint8_t)(0xa0 + 7 * i);
}

static struct gpuphase_record module_rec(const uint8_t *id, uint64_t module) {
  struct gpuphase_record rec;
  memset(&rec, 0, sizeof rec);
  rec.kind = GPUPHASE_REC_MODULE;
  rec.u.module.module = module;
  rec.u.module.path = 0;
  rec.u.module.build_id.data = (const char *)id;
  rec.u.module.build_id.len = BUILD_ID_LEN;
  rec.u.module.base = 0x400000;
  rec.u.module.size = 0x21000;
  rec.u.module.start = 3;
  return rec;
}

static struct gpuphase_record api_rec(uint32_t thread, uint64_t start) {
  struct gpuphase_record rec;
  memset(&rec, 0, sizeof rec);
  rec.kind = GPUPHASE_REC_API;
  rec.u.api.thread = thread;
  rec.u.api.start = start;
  rec.u.api.end = start + 5;
  return rec;
}

/* The payload of one frame: first, padding up to the last, last (either
 * may be NULL); exactly usize bytes. */
static size_t payload(uint8_t *buf, uint32_t usize,
                      const struct gpuphase_record *first,
                      const struct gpuphase_record *last) {
  struct gp_delta d;
  gp_delta_reset(&d);
  size_t n = first ? gp_encode_record(buf, &d, first) : 0;
  uint8_t one[256];
  size_t len = last ? gp_encode_record(one, &d, last) : 0;
  tt_put_padding(buf + n, usize - n - len);
  memcpy(buf + usize - len, one, len);
  return usize;
}

static void put_frame(FILE *f, ZSTD_CCtx *cc, uint32_t source,
                      const uint8_t *buf, size_t n) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *z = malloc(GP_FRAME_HDR + cap);
  if (!z) exit(1);
  size_t c = ZSTD_compress2(cc, z + GP_FRAME_HDR, cap, buf, n);
  if (ZSTD_isError(c)) exit(1);
  memcpy(z, GP_FRAME_MAGIC, 4);
  z[GP_FO_TYPE] = GP_FRAME_RECORDS;
  z[5] = z[6] = z[7] = 0;
  gp_store32(z + GP_FO_SOURCE, source);
  gp_store32(z + GP_FO_CSIZE, (uint32_t)c);
  gp_store32(z + GP_FO_USIZE, (uint32_t)n);
  if (fwrite(z, 1, GP_FRAME_HDR + c, f) != GP_FRAME_HDR + c) exit(1);
  free(z);
}

static void write_case(const struct blob_case *bc, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  struct gp_process_info in = tt_info();
  gp_writer *w = fd < 0 ? NULL : gp_writer_open(fd, &in, 0, NULL);
  if (!w || gp_writer_close(w, NULL)) {
    perror(path);
    exit(1);
  }
  FILE *f = fopen(path, "ab");
  uint32_t max = bc->blob_usize > bc->other_usize ? bc->blob_usize
                                                  : bc->other_usize;
  uint8_t *buf = malloc(max);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (!f || !buf || !cc) exit(1);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  uint8_t id[BUILD_ID_LEN];
  build_id(id);
  struct gpuphase_record m = module_rec(id, 7), tail = api_rec(BLOB_SRC, 1000);
  size_t n;
  if (bc->second) {
    struct gpuphase_record m8 = module_rec(id, 8);
    n = payload(buf, bc->blob_usize, NULL, &m8);
    put_frame(f, cc, SECOND_SRC, buf, n);
  }
  n = bc->module_last ? payload(buf, bc->blob_usize, NULL, &m)
                             : payload(buf, bc->blob_usize, &m, &tail);
  put_frame(f, cc, BLOB_SRC, buf, n);
  for (uint32_t s = 1; s <= NOTHER; s++) {
    struct gpuphase_record a = api_rec(s, s), b = api_rec(s, 100 + s);
    n = payload(buf, bc->other_usize, &a, &b);
    put_frame(f, cc, s, buf, n);
  }
  if (bc->second) {
    struct gpuphase_record a = api_rec(SECOND_SRC, 500);
    n = payload(buf, bc->other_usize, NULL, &a);
    put_frame(f, cc, SECOND_SRC, buf, n);
  }
  ZSTD_freeCCtx(cc);
  free(buf);
  if (fclose(f)) exit(1);
}

/* Reads the case: the MODULEs first (8 before 7: source 40 before 50),
 * with their fields and build_id bytes, then the API records by start. */
static void read_case(const struct blob_case *bc, const char *path,
                      int threads) {
  int err = 0;
  char msg[256] = "";
  gpuphase_reader *r =
      gp_reader_open_ex(path, GP_OPEN_SORTED, &err, msg, sizeof msg);
  CHECK(r != NULL);
  if (!r) {
    fprintf(stderr, "open: %d %s\n", err, msg);
    return;
  }
  if (threads > 1) gp_reader_set_threads(r, threads);
  uint8_t id[BUILD_ID_LEN];
  build_id(id);
  /* expected API starts, in order */
  uint64_t want[2 * NOTHER + 2];
  uint32_t nwant = 0;
  for (uint32_t s = 1; s <= NOTHER; s++)
    want[nwant++] = s;
  for (uint32_t s = 1; s <= NOTHER; s++)
    want[nwant++] = 100 + s;
  if (bc->second) want[nwant++] = 500;
  if (!bc->module_last) want[nwant++] = 1000;
  struct gpuphase_record rec;
  uint32_t n = 0, napi = 0, nmod = 0, modules = bc->second ? 2 : 1;
  int rc, module_ok = 1, order_ok = 1;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    if (rec.kind == GPUPHASE_REC_MODULE) {
      const struct gpuphase_module *m = &rec.u.module;
      int ok = n == nmod && nmod < modules &&
               m->module == (nmod + 1 < modules ? 8u : 7u) &&
               m->base == 0x400000 && m->size == 0x21000 && m->start == 3 &&
               m->build_id.len == BUILD_ID_LEN &&
               !memcmp(m->build_id.data, id, BUILD_ID_LEN);
      module_ok &= ok;
      nmod++;
      if (!ok)
        fprintf(stderr, "  %s: MODULE %u handed out with wrong fields or "
                        "build_id bytes\n", bc->name, n);
    } else if (rec.kind == GPUPHASE_REC_API) {
      uint64_t s = rec.u.api.start;
      order_ok &= napi < nwant && s == want[napi] && rec.u.api.end == s + 5 &&
                  rec.u.api.thread == (s == 1000  ? BLOB_SRC
                                       : s == 500 ? SECOND_SRC
                                                  : s % 100);
      napi++;
    }
    n++;
  }
  if (rc < 0) fprintf(stderr, "  %s: %s\n", bc->name, gpuphase_reader_errmsg(r));
  CHECK_EQ_U(rc, 0);
  CHECK(module_ok);
  CHECK_EQ_U(nmod, modules);
  CHECK(order_ok);
  CHECK_EQ_U(napi, nwant);
  gpuphase_reader_close(r);
}

int main(int argc, char **argv) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name)) continue;
    const char *path = tt_tmpfile(cases[i].name);
    write_case(&cases[i], path);
    read_case(&cases[i], path, 1);
    read_case(&cases[i], path, 4);
    unlink(path);
  }
  tt_cleanup();
  return tt_done("trace-sorted-blob");
}
