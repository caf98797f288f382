/* Writes the seed corpus of the fuzz targets (tests/fuzz/README.md):
 *   mkcorpus DIR [TRACE...]
 * DIR/reader and DIR/report receive small traces -- version 2 with every
 * record kind in many small frames, the same as version 1 and in the other
 * byte order, cut inside a frame and inside the header, with a bad
 * checksum, a malformed record, unknown kinds, fields and frame types --
 * and the frame payloads of each trace (raw record streams: the reader
 * target decodes its input that way too, and the report target reads any
 * input that is not a trace so). Each TRACE given (e.g. one recorded on the
 * simulated GPU) is added with its payloads. The crafted traces of
 * tests/trace/test_sorted_memory.c are written by that test's --write. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "format.h"
#include "tt.h"

static const char *dirs[2];

static void save(const char *name, const void *p, size_t len) {
  for (int i = 0; i < 2; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dirs[i], name);
    tt_write_file(path, p, len);
  }
}

static void add(gp_writer *w, uint32_t src, struct gpuphase_record r) {
  if (gp_writer_add(w, src, &r)) exit(1);
}

/* Ten steps of a training loop: ranges, launches and their kernels, a
 * copy, a memset, a synchronisation, items; 300-byte frames; the
 * synchronisations' call site (MODULE, PYCODE, FRAME nodes: native,
 * Python and TRUNCATED; API.stack). v1: nothing that version 1 lacks
 * (ITEMS, DEVICE versions, run id, step items, call sites). */
static void write_trace(const char *path, int v1) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  struct gp_process_info in = tt_info();
  if (!v1) {
    in.run_id = "5eed0fc0ffee1234";
    in.step_items = 32;
  }
  gp_writer *w = gp_writer_open(fd, &in, 300, NULL);
  if (!w) exit(1);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_THREAD};
  r.u.thread = (struct gpuphase_thread){0, 4242, gp_writer_intern(w, "main", 4)};
  add(w, 0, r);
  r.u.thread = (struct gpuphase_thread){1, 4243, gp_writer_intern(w, "loader", 6)};
  add(w, 0, r);
  static const struct {
    const char *name;
    uint64_t cls;
  } apis[] = {{"cudaLaunchKernel", GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC},
              {"cudaMemcpyAsync", GPUPHASE_API_COPY | GPUPHASE_API_ASYNC},
              {"cudaMemsetAsync", GPUPHASE_API_MEMSET | GPUPHASE_API_ASYNC},
              {"cudaStreamSynchronize", GPUPHASE_API_SYNC},
              {"cudaMalloc", GPUPHASE_API_ALLOC}};
  for (uint64_t a = 0; a < 5; a++) {
    r.kind = GPUPHASE_REC_API_DEF;
    r.u.api_def = (struct gpuphase_api_def){
        a + 1, gp_writer_intern(w, apis[a].name, strlen(apis[a].name)),
        apis[a].cls, 0};
    add(w, 0, r);
  }
  r.kind = GPUPHASE_REC_DEVICE;
  r.u.device = (struct gpuphase_device){
      .name = gp_writer_intern(w, "NVIDIA H100 80GB HBM3", 21),
      .sms = 132, .mem_total = 80ull << 30, .cc_major = 9,
      .max_threads_per_sm = 2048, .max_blocks_per_sm = 32,
      .regs_per_sm = 65536, .smem_per_sm = 233472, .warp_size = 32,
      .clock_khz = 1980000, .mem_clock_khz = 2619000, .mem_bus_width = 5120,
      .driver_version = v1 ? 0 : 13000, .runtime_version = v1 ? 0 : 13000};
  add(w, 0, r);
  uint64_t t = in.start_mono_ns + 1000, corr = 0;
  uint64_t site = 0; /* the synchronisations' stack */
  if (!v1) {
    r.kind = GPUPHASE_REC_MODULE;
    r.u.module = (struct gpuphase_module){
        .module = 1, .path = gp_writer_intern(w, "/usr/bin/python3.12", 19),
        .build_id = {"\x3a\x91\x0c\x7e\x55\x18\xd2\x04", 8},
        .base = 0x55d0c0000000ull, .size = 0x7a3000, .start = t};
    add(w, 0, r);
    r.kind = GPUPHASE_REC_PYCODE;
    r.u.pycode = (struct gpuphase_pycode){
        .code = 1, .file = gp_writer_intern(w, "train.py", 8),
        .name = gp_writer_intern(w, "Trainer.step", 12), .first_line = 40,
        .linetable = {"\x80\x00\xd8\x08\x0c", 5}, .py_version = 0x030c04f0};
    add(w, 0, r);
    /* outermost first: TRUNCATED, two native frames, a Python run */
    static const struct gpuphase_frame nodes[] = {
        {1, 0, GPUPHASE_FRAME_TRUNCATED, 0, 0, 0},
        {2, 1, GPUPHASE_FRAME_NATIVE, 1, 0x1d2f40, 0},
        {3, 2, GPUPHASE_FRAME_PYTHON, 1, 17, GPUPHASE_FRAME_ENTRY},
        {4, 3, GPUPHASE_FRAME_PYTHON, 1, 52, 0},
        {5, 4, GPUPHASE_FRAME_NATIVE, 1, 0x8a11b, 0}};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
      r.kind = GPUPHASE_REC_FRAME;
      r.u.frame = nodes[i];
      add(w, 0, r);
    }
    site = 5;
  }
  uint64_t kname = gp_writer_intern(w, "_Z6gemm_kPfS_S_i", 16);
  for (uint64_t step = 0; step < 10; step++) {
    char name[32];
    int n = snprintf(name, sizeof name, "ProfilerStep#%llu",
                     (unsigned long long)step);
    r.kind = GPUPHASE_REC_RANGE;
    r.u.range = (struct gpuphase_range){0, GPUPHASE_RANGE_PUSH, t,
                                        gp_writer_intern(w, name, (size_t)n),
                                        step + 1, 0};
    add(w, 1, r);
    for (uint64_t k = 0; k < 6; k++, t += 3000) {
      uint64_t api = k == 4 ? 2 : k == 5 ? 4 : 1;
      r.kind = GPUPHASE_REC_API;
      r.u.api = (struct gpuphase_api){.thread = 0, .api = api, .start = t,
                                      .end = t + (api == 4 ? 2500 : 400),
                                      .corr = ++corr, .stream = 7,
                                      .bytes = api == 2 ? 1 << 20 : 0,
                                      .copy_kind = api == 2 ? 1 : 0,
                                      .grid = 264, .block = 256,
                                      .stack = api == 4 ? site : 0};
      add(w, 1, r);
      if (api == 1) {
        r.kind = GPUPHASE_REC_KERNEL;
        r.u.kernel = (struct gpuphase_kernel){
            .stream = 7, .corr = corr, .start = t + 500, .end = t + 2400,
            .name = kname, .grid_x = 264, .grid_y = 1, .grid_z = 1,
            .block_x = 256, .block_y = 1, .block_z = 1, .regs = 64};
        add(w, 100, r);
      } else if (api == 2) {
        r.kind = GPUPHASE_REC_MEMCPY;
        r.u.memcpy = (struct gpuphase_memcpy){
            .stream = 7, .corr = corr, .start = t + 500, .end = t + 1500,
            .bytes = 1 << 20, .copy_kind = GPUPHASE_COPY_HTOD,
            .src_mem = GPUPHASE_MEM_PAGEABLE, .dst_mem = GPUPHASE_MEM_DEVICE,
            .peer_device = -1};
        add(w, 100, r);
      } else {
        r.kind = GPUPHASE_REC_SYNC;
        r.u.sync = (struct gpuphase_sync){.stream = 7, .corr = corr,
                                          .start = t + 2400, .end = t + 2450,
                                          .type = GPUPHASE_SYNC_STREAM};
        add(w, 100, r);
      }
    }
    r.kind = GPUPHASE_REC_MEMSET;
    r.u.memset = (struct gpuphase_memset){.stream = 8, .start = t,
                                          .end = t + 300, .bytes = 4096};
    add(w, 101, r);
    if (!v1) {
      r.kind = GPUPHASE_REC_ITEMS;
      r.u.items = (struct gpuphase_items){0, t, 32};
      add(w, 1, r);
    }
    r.kind = GPUPHASE_REC_RANGE;
    r.u.range.op = GPUPHASE_RANGE_POP;
    r.u.range.start = t + 100;
    add(w, 1, r);
    t += 1000;
  }
  r.kind = GPUPHASE_REC_LOST;
  r.u.lost = (struct gpuphase_lost){1, t, 3, 0};
  add(w, 0, r);
  r.kind = GPUPHASE_REC_STATE;
  r.u.state = (struct gpuphase_state){
      t + 1, 1, gp_writer_intern(w, "CUPTI in use by another tool", 28)};
  add(w, 0, r);
  struct gpuphase_summary s = {200, 3, GPUPHASE_FLAG_LOST, t + 10};
  if (gp_writer_close(w, &s)) exit(1);
}

struct bytes {
  uint8_t *p;
  size_t len;
};

static void put(struct bytes *b, const void *d, size_t n) {
  b->p = realloc(b->p, b->len + n);
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

/* The frames of a native file after its header, behind a version-1 header
 * (docs/format.md, section 2: four strings, nothing after). */
static struct bytes as_v1(const uint8_t *file, size_t len) {
  uint32_t hs;
  memcpy(&hs, file + GP_HO_HEADER_SIZE, 4);
  struct bytes b = {NULL, 0};
  put(&b, file, GP_HO_STRINGS);
  size_t pos = GP_HO_STRINGS;
  for (int i = 0; i < 4; i++) {
    uint32_t n;
    memcpy(&n, file + pos, 4);
    put(&b, file + pos, 4 + n);
    pos += 4 + n;
  }
  uint16_t one = 1;
  memcpy(b.p + GP_HO_VERSION, &one, 2);
  uint32_t size = (uint32_t)b.len;
  memcpy(b.p + GP_HO_HEADER_SIZE, &size, 4);
  put(&b, file + hs, len - hs);
  return b;
}

static void swap_at(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n / 2; i++) {
    uint8_t t = p[i];
    p[i] = p[n - 1 - i];
    p[n - 1 - i] = t;
  }
}

/* As the other byte order writes it: header and frame header numbers. */
static void swap_file(uint8_t *p, size_t len) {
  uint32_t hs, slen;
  memcpy(&hs, p + GP_HO_HEADER_SIZE, 4);
  size_t pos = GP_HO_STRINGS;
  for (int i = 0; i < 5; i++) {
    memcpy(&slen, p + pos, 4);
    swap_at(p + pos, 4);
    pos += 4 + slen;
  }
  swap_at(p + pos, 8);
  swap_at(p + GP_HO_VERSION, 2);
  swap_at(p + GP_HO_MIN_READER, 2);
  for (size_t o = GP_HO_BOM; o < GP_HO_PID; o += 4)
    swap_at(p + o, 4);
  for (size_t o = GP_HO_PID; o < GP_HO_STRINGS; o += 8)
    swap_at(p + o, 8);
  for (size_t off = hs; off + GP_FRAME_HDR <= len;) {
    uint32_t csize;
    memcpy(&csize, p + off + GP_FO_CSIZE, 4);
    for (size_t o = GP_FO_SOURCE; o < GP_FRAME_HDR; o += 4)
      swap_at(p + off + o, 4);
    off += GP_FRAME_HDR + csize;
  }
}

static void frame(struct bytes *b, uint8_t type, uint32_t source,
                  const void *payload, size_t len) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  size_t cap = ZSTD_compressBound(len);
  uint8_t *z = malloc(cap), h[GP_FRAME_HDR] = {'G', 'P', 'F', 'R', type};
  size_t n = ZSTD_compress2(c, z, cap, payload, len);
  if (ZSTD_isError(n)) exit(1);
  gp_store32(h + GP_FO_SOURCE, source);
  gp_store32(h + GP_FO_CSIZE, (uint32_t)n);
  gp_store32(h + GP_FO_USIZE, (uint32_t)len);
  put(b, h, sizeof h);
  put(b, z, n);
  free(z);
  ZSTD_freeCCtx(c);
}

/* Each frame's payload, decompressed: NAME-payload-N.bin. */
static void payloads(const char *name, const uint8_t *file, size_t len) {
  uint32_t hs;
  memcpy(&hs, file + GP_HO_HEADER_SIZE, 4);
  int n = 0;
  for (size_t off = hs; off + GP_FRAME_HDR <= len && n < 8;) {
    uint32_t csize, usize;
    memcpy(&csize, file + off + GP_FO_CSIZE, 4);
    memcpy(&usize, file + off + GP_FO_USIZE, 4);
    if (off + GP_FRAME_HDR + csize > len || usize > (1u << 20)) break;
    uint8_t *out = malloc(usize ? usize : 1);
    size_t got = ZSTD_decompress(out, usize, file + off + GP_FRAME_HDR, csize);
    if (!ZSTD_isError(got) && got > 16) {
      char path[256];
      snprintf(path, sizeof path, "%s-payload-%d.bin", name, n++);
      save(path, out, got);
    }
    free(out);
    off += GP_FRAME_HDR + csize;
  }
}

static void traces(void) {
  const char *tmp = tt_tmpfile("corpus");
  size_t len = 0;
  write_trace(tmp, 0);
  uint8_t *v2 = tt_slurp(tmp, &len);
  save("v2.gph", v2, len);
  payloads("v2", v2, len);
  uint32_t hs;
  memcpy(&hs, v2 + GP_HO_HEADER_SIZE, 4);
  save("truncated-header.gph", v2, hs - 7);
  save("truncated-frame.gph", v2, len - 9);
  uint8_t *bad = malloc(len);
  memcpy(bad, v2, len);
  bad[hs + GP_FRAME_HDR + 12] ^= 0x40; /* inside the first zstd frame */
  save("corrupt-checksum.gph", bad, len);
  memcpy(bad, v2, len);
  swap_file(bad, len);
  save("v2-swapped.gph", bad, len);
  free(bad);
  write_trace(tmp, 1);
  uint8_t *raw = tt_slurp(tmp, &len);
  struct bytes v1 = as_v1(raw, len);
  save("v1.gph", v1.p, v1.len);
  free(raw);
  /* hand-made frames (docs/format.md): unknown kind 77, an API record
   * with two appended fields, one with three, an optional frame type; then
   * a varint of eleven bytes */
  struct bytes f = {NULL, 0};
  put(&f, v2, hs);
  static const uint8_t p1[] = {
      1,    5,    2,    3,    'a',  'b',  'c',  77,   3,    1,    2,
      3,    5,    20,   2,    4,    0xc8, 1,    0x64, 0,    0x0a, 1,
      0,    0,    0,    0,    0,    0,    0,    0,    0,    8,    0x96,
      1,    5,    3,    2,    0,    0x64};
  frame(&f, GP_FRAME_RECORDS, 0, p1, sizeof p1);
  frame(&f, 0x80, 0, "opaque", 6);
  static const uint8_t p2[] = {6, 7, 0, 0x0e, 0x0a, 0xf0, 1, 0x14, 2};
  frame(&f, GP_FRAME_RECORDS, 9, p2, sizeof p2);
  save("unknown-kinds.gph", f.p, f.len);
  static const uint8_t p3[] = {12, 12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                               0x80, 0x80, 0x80, 0x80, 0x01, 0};
  frame(&f, GP_FRAME_RECORDS, 3, p3, sizeof p3);
  save("corrupt-record.gph", f.p, f.len);
  free(f.p);
  free(v1.p);
  free(v2);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mkcorpus DIR [TRACE...]\n");
    return 2;
  }
  char reader[4096], report[4096];
  snprintf(reader, sizeof reader, "%s/reader", argv[1]);
  snprintf(report, sizeof report, "%s/report", argv[1]);
  dirs[0] = reader;
  dirs[1] = report;
  for (int i = 0; i < 2; i++)
    if (mkdir(dirs[i], 0755) && errno != EEXIST) {
      perror(dirs[i]);
      return 1;
    }
  traces();
  for (int i = 2; i < argc; i++) {
    size_t len = 0;
    uint8_t *t = tt_slurp(argv[i], &len);
    const char *base = strrchr(argv[i], '/');
    base = base ? base + 1 : argv[i];
    char name[256];
    snprintf(name, sizeof name, "%.200s", base);
    save(name, t, len);
    char *dot = strrchr(name, '.');
    if (dot) *dot = 0;
    payloads(name, t, len);
    free(t);
  }
  return tt_done("mkcorpus");
}
