/* Writes a small trace whose report is worked out by hand in test_cli.py:
 *   mktrace [--degraded] [--pid N] FILE
 * Thread 1 on device 0 (10 SMs, 1 GiB):
 *   launch [1000,1100), its kernel [1200,1700) (5 blocks of 128 threads),
 *   sync [1150,1800), phase "step" [1000,1800).
 * The kernel's name is hostile: <>&"\ , a control byte, an ESC sequence,
 * a byte that is not UTF-8, and a valid non-ASCII character.
 * --degraded: a STATE 1 record and no device records. --deep N: N more
 * ranges "deep" pushed inside the step at 1000 and never popped, and N
 * start/end ranges (ids 1..N) started at 1000 and never ended. Small
 * frames, so that cutting the file loses only its last frames.
 * --threads N: N more threads (102..N+101), each with 3 synchronising calls
 * [1300, 1310), [1310, 1320), [1320, 1330) (rows of the HTML timeline). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

static const char hostile[] = "k<a&b>\"q\\\x01\x1b[31m\xff\xc3\xa9nd";

static gp_writer *w;

static void add(uint32_t src, struct gpuphase_record *r) {
  if (gp_writer_add(w, src, r) != GPUPHASE_OK) {
    fprintf(stderr, "mktrace: write failed\n");
    exit(1);
  }
}

static uint64_t str(const char *s) {
  return gp_writer_intern(w, s, strlen(s));
}

static void api_def(uint64_t id, const char *name, uint64_t cls) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def = (struct gpuphase_api_def){id, str(name), cls, 0};
  add(0, &r);
}

static void api_on(uint64_t thread, uint64_t id, uint64_t start, uint64_t end,
                   uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){
      .thread = thread, .api = id, .start = start, .end = end, .corr = corr};
  add((uint32_t)thread, &r);
}

static void api(uint64_t id, uint64_t start, uint64_t end, uint64_t corr) {
  api_on(1, id, start, end, corr);
}

static void range(uint64_t op, uint64_t at, uint64_t name) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range =
      (struct gpuphase_range){.thread = 1, .op = op, .start = at, .name = name};
  add(1, &r);
}

static void metadata(int degraded) {
  api_def(1, "cudaLaunchKernel", GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC);
  api_def(2, "cudaDeviceSynchronize", GPUPHASE_API_SYNC);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  struct gpuphase_device *d = &r.u.device;
  d->name = str("Test GPU");
  d->sms = 10;
  d->mem_total = 1u << 30;
  d->cc_major = 8;
  d->max_threads_per_sm = 2048;
  d->max_blocks_per_sm = 32;
  d->regs_per_sm = d->smem_per_sm = 65536;
  d->warp_size = 32;
  add(0, &r);
  if (degraded) {
    r.kind = GPUPHASE_REC_STATE;
    r.u.state = (struct gpuphase_state){900, 1, str("CUPTI unavailable")};
    add(0, &r);
  }
}

static void timeline(int degraded, int deep) {
  uint64_t step = str("step"), kname = str(hostile), dname = str("deep");
  range(GPUPHASE_RANGE_PUSH, 1000, step);
  for (int i = 0; i < deep; i++) {
    range(GPUPHASE_RANGE_PUSH, 1000, dname);
    struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
    r.u.range = (struct gpuphase_range){.thread = 1,
                                        .op = GPUPHASE_RANGE_START,
                                        .start = 1000,
                                        .name = dname,
                                        .id = (uint64_t)i + 1};
    add(1, &r);
  }
  api(1, 1000, 1100, 1);
  api(2, 1150, 1800, 0);
  range(GPUPHASE_RANGE_POP, 1800, 0);
  if (degraded) return;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_KERNEL};
  struct gpuphase_kernel *k = &r.u.kernel;
  k->corr = 1;
  k->start = 1200;
  k->end = 1700;
  k->name = kname;
  k->grid_x = 5;
  k->block_x = 128;
  k->grid_y = k->grid_z = k->block_y = k->block_z = 1;
  add(10, &r);
}

int main(int argc, char **argv) {
  int degraded = 0, err = 0, deep = 0, threads = 0;
  int64_t pid = 4242;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--degraded"))
      degraded = 1;
    else if (!strcmp(argv[i], "--deep") && i + 1 < argc)
      deep = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
      pid = atoll(argv[++i]);
    else
      path = argv[i];
  }
  if (!path) return fprintf(stderr, "usage: mktrace [--degraded] FILE\n"), 2;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  struct gp_process_info info = {0};
  info.host = "test-host";
  info.pid = pid;
  info.ppid = 1;
  info.rank = info.local_rank = -1;
  info.cmdline = "./app --test";
  info.start_mono_ns = 1000;
  info.start_real_ns = 1700000000000000000ull;
  info.clock = "clock_gettime";
  if (fd < 0 || !(w = gp_writer_open(fd, &info, 200, &err)))
    return perror(path), 1;
  metadata(degraded);
  timeline(degraded, deep);
  for (int t = 2; t < threads + 2; t++)
    for (uint64_t c = 0; c < 3; c++)
      api_on((uint64_t)t + 100, 2, 1300 + 10 * c, 1310 + 10 * c, 0);
  struct gpuphase_summary sum = {gp_writer_events(w), 0, 0, 1800};
  return gp_writer_close(w, &sum) == GPUPHASE_OK ? 0 : 1;
}
