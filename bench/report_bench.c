/* Report throughput: synthesises a trace shaped like a training loop with
 * the internal writer (one source per host thread and per device stream),
 * then times the whole report pipeline on it (read, decompress, attribute,
 * derive) and prints events/s and the peak resident set.
 *   gpuphase-report-bench [--events N] [--runs R] [--stacks] [--counters]
 *                         [-j N[,N...]] [--keep FILE]
 *   gpuphase-report-bench --input FILE [--runs R]   (time an existing trace)
 *   gpuphase-report-bench --compare [--events N] [--runs R] [--keep PREFIX]
 *   gpuphase-report-bench --stages --input FILE [--runs R]
 * --stacks: every call carries a call site (API.stack), one of 64 stacks of
 * 12 frames over 4 modules, as GPUPHASE_STACKS records them (the trace is
 * otherwise the same: same seed, same timings).
 * --counters: the device's measured counters too, as the recorder's
 * sampler writes them on a source of its own: six NVML metrics every
 * 100 ms and two GPM metrics every 200 ms of the trace's time (the report
 * then reads the trace a second time for them, docs/counters.md).
 * The last: two such traces, the second's kernels 5% longer, compared as
 * `gpuphase-report compare` does (each read with per-step attribution,
 * reduced, freed; the verdict; the text), in a child process whose time
 * and peak resident set are its own.
 * --stages: the two halves of the pipeline apart, on the first 10 M
 * records of FILE at most: the time-ordered read alone (decompressing and
 * decoding every record, handing each to a callback that does nothing),
 * then the attribution engine alone, fed copies of those records from
 * memory (the records copied first, outside the timing) and finished. On
 * two threads a file goes no faster than the slower half.
 * Results and the commands used: docs/performance.md, "Report throughput"
 * and "Comparing runs". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attribute.h"
#include "codec.h"
#include "compare.h"
#include "pipeline.h"
#include "reader_ext.h"
#include "writer.h"

enum {
  SRC_MAIN = 1,
  SRC_LOADER = 2,
  SRC_COMPUTE = 10,
  SRC_COPY = 11,
  SRC_SAMPLER = 20
};
enum { API_LAUNCH = 1, API_COPY_ASYNC, API_SYNC, API_MALLOC };
/* Call sites: a trunk of 11 frames (nodes 1..11, main outermost) shared by
 * 64 innermost frames (nodes 12..75), in 4 modules. */
enum { STACK_TRUNK = 11, STACK_LEAF0 = 12, STACK_LEAVES = 64 };

struct gen {
  gp_writer *w;
  uint64_t host, dev, corr, rng;
  uint64_t slow_pct; /* kernels this much longer (the compare mode) */
  uint64_t s_kern[8], s_nccl, s_step, s_fwd, s_bwd;
  int stacks; /* API records carry call sites */
  uint64_t calls;
  int counters;    /* measured counters sampled */
  uint64_t next_s; /* the next sampling time */
  uint64_t nsamples;
};

static uint64_t rnd(struct gen *g, uint64_t n) {
  g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
  return (g->rng >> 33) % n;
}

static void add(struct gen *g, uint32_t src, struct gpuphase_record *r) {
  if (gp_writer_add(g->w, src, r) != GPUPHASE_OK) {
    fprintf(stderr, "report_bench: writing the trace failed\n");
    exit(1);
  }
}

static uint64_t intern(struct gen *g, const char *s) {
  return gp_writer_intern(g->w, s, strlen(s));
}

static void api(struct gen *g, uint32_t src, uint64_t thread, uint64_t id,
                uint64_t start, uint64_t end, uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){.thread = thread,
                                  .api = id,
                                  .start = start,
                                  .end = end,
                                  .corr = corr,
                                  .stream = 7};
  /* one of the 64 leaves of the frame tree (below), in turn */
  if (g->stacks) r.u.api.stack = STACK_LEAF0 + g->calls++ % STACK_LEAVES;
  add(g, src, &r);
}

static void stacks(struct gen *g) {
  static const char *mods[] = {"/opt/app/bin/train", "/opt/app/lib/libmodel.so",
                               "/usr/lib/x86_64-linux-gnu/libc.so.6",
                               "/usr/local/cuda/lib64/libcudart.so.12"};
  struct gpuphase_record r = {.kind = GPUPHASE_REC_MODULE};
  for (uint64_t m = 0; m < 4; m++) {
    r.u.module = (struct gpuphase_module){.module = m + 1,
                                          .path = intern(g, mods[m]),
                                          .base = 0x7f0000000000ull + (m << 32),
                                          .size = 1ull << 28,
                                          .start = 1};
    add(g, 0, &r);
  }
  r.kind = GPUPHASE_REC_FRAME;
  for (uint64_t n = 1; n < STACK_LEAF0 + STACK_LEAVES; n++) {
    r.u.frame = (struct gpuphase_frame){
        .node = n,
        .parent = n < STACK_LEAF0 ? n - 1 : STACK_TRUNK,
        .kind = GPUPHASE_FRAME_NATIVE,
        .module = n < 4 ? 1 : n < STACK_LEAF0 ? 2 : 4,
        .pc = 0x1000 + 16 * n};
    add(g, 0, &r);
  }
}

static void range(struct gen *g, uint64_t op, uint64_t at, uint64_t name) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range =
      (struct gpuphase_range){.thread = 1, .op = op, .start = at, .name = name};
  add(g, SRC_MAIN, &r);
}

/* The measured counters: metric ids 1..6 NVML's, 7..8 GPM's (docs/format.md,
 * "Measured counters"). */
static const struct {
  const char *name;
  uint64_t src, unit, scale;
} metrics[] = {{"gpu_util", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_PERCENT, 1},
               {"mem_util", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_PERCENT, 1},
               {"mem_used", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_BYTES, 1},
               {"sm_clock", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_MHZ, 1},
               {"power", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_WATTS, 1000},
               {"temperature", GPUPHASE_MSRC_NVML, GPUPHASE_UNIT_CELSIUS, 1},
               {"sm_active", GPUPHASE_MSRC_GPM, GPUPHASE_UNIT_PERCENT, 1000},
               {"tensor_active", GPUPHASE_MSRC_GPM, GPUPHASE_UNIT_PERCENT,
                1000}};
enum { NMETRICS = sizeof metrics / sizeof metrics[0], SAMPLE_NS = 100000000 };

static void counters_meta(struct gen *g) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_METRIC};
  for (uint64_t i = 0; i < NMETRICS; i++) {
    r.u.metric = (struct gpuphase_metric){i + 1, 0, metrics[i].src,
                                          intern(g, metrics[i].name),
                                          metrics[i].unit, metrics[i].scale};
    add(g, 0, &r);
  }
  r.kind = GPUPHASE_REC_SAMPLER;
  for (uint64_t s = GPUPHASE_MSRC_NVML; s <= GPUPHASE_MSRC_GPM; s++) {
    r.u.sampler = (struct gpuphase_sampler){g->host, 0, s,
                                            GPUPHASE_MSTAT_OK, 0};
    add(g, SRC_SAMPLER, &r);
  }
  g->next_s = g->host + SAMPLE_NS;
}

/* The samples due by the host's time: NVML's six every 100 ms (GPU-Util
 * an average over the period, the others instants), GPM's two every
 * 200 ms (averages). */
static void counters_due(struct gen *g) {
  while (g->counters && g->next_s <= g->host) {
    uint64_t t = g->next_s, n = g->nsamples++;
    struct gpuphase_record r = {.kind = GPUPHASE_REC_SAMPLE};
    for (uint64_t i = 0; i < NMETRICS; i++) {
      int gpm = metrics[i].src == GPUPHASE_MSRC_GPM;
      if (gpm && n % 2) continue;
      int avg = i == 0 || i == 1 || gpm;
      uint64_t from = avg ? t - (gpm ? 2 : 1) * (uint64_t)SAMPLE_NS : t;
      int64_t v = (int64_t)(metrics[i].scale * (50 + rnd(g, 50)));
      if (i == 2) v = (int64_t)(40ull << 30) + (int64_t)rnd(g, 1u << 20);
      if (i == 3) v = 1755 + (int64_t)rnd(g, 200);
      r.u.sample = (struct gpuphase_sample){i + 1, from, t, v};
      add(g, SRC_SAMPLER, &r);
    }
    g->next_s += SAMPLE_NS;
  }
}

static void metadata(struct gen *g) {
  static const char *apis[] = {"", "cudaLaunchKernel", "cudaMemcpyAsync",
                               "cudaStreamSynchronize", "cudaMalloc"};
  static const uint64_t cls[] = {0, GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC,
                                 GPUPHASE_API_COPY | GPUPHASE_API_ASYNC,
                                 GPUPHASE_API_SYNC, GPUPHASE_API_ALLOC};
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  for (uint64_t i = 1; i <= API_MALLOC; i++) {
    r.u.api_def = (struct gpuphase_api_def){i, intern(g, apis[i]), cls[i], 0};
    add(g, 0, &r);
  }
  r.kind = GPUPHASE_REC_DEVICE;
  r.u.device = (struct gpuphase_device){.device = 0,
                                        .name = intern(g, "Synthetic H100"),
                                        .sms = 132,
                                        .mem_total = 80ull << 30,
                                        .cc_major = 9,
                                        .max_threads_per_sm = 2048,
                                        .max_blocks_per_sm = 32,
                                        .regs_per_sm = 65536,
                                        .smem_per_sm = 233472,
                                        .warp_size = 32,
                                        .mem_clock_khz = 2619000,
                                        .mem_bus_width = 5120};
  add(g, 0, &r);
  for (uint64_t t = 1; t <= 2; t++) {
    r.kind = GPUPHASE_REC_THREAD;
    r.u.thread = (struct gpuphase_thread){
        t, 1000 + t, intern(g, t == 1 ? "main" : "loader")};
    add(g, 0, &r);
  }
  static const char *kn[] = {"sm90_xmma_gemm_bf16", "layer_norm_fwd",
                             "softmax_warp",        "elementwise_add",
                             "flash_fwd_kernel",    "dropout_kernel",
                             "adam_update",         "reduce_kernel"};
  for (int i = 0; i < 8; i++)
    g->s_kern[i] = intern(g, kn[i]);
  g->s_nccl = intern(g, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  g->s_step = intern(g, "step");
  g->s_fwd = intern(g, "forward");
  g->s_bwd = intern(g, "backward");
}

/* One launch and its kernel: the kernel starts when both the launch has
 * happened and the stream is free. */
static void launch(struct gen *g, uint64_t name, uint64_t grid, uint64_t dur) {
  uint64_t corr = ++g->corr, t = g->host, len = 3000 + rnd(g, 2000);
  api(g, SRC_MAIN, 1, API_LAUNCH, t, t + len, corr);
  g->host = t + len + 500 + rnd(g, 1500);
  uint64_t start = t + len + 2000 > g->dev ? t + len + 2000 : g->dev;
  dur += dur * g->slow_pct / 100;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_KERNEL};
  r.u.kernel = (struct gpuphase_kernel){.device = 0,
                                        .stream = 7,
                                        .corr = corr,
                                        .start = start,
                                        .end = start + dur,
                                        .name = name,
                                        .grid_x = grid,
                                        .grid_y = 1,
                                        .grid_z = 1,
                                        .block_x = 256,
                                        .block_y = 1,
                                        .block_z = 1,
                                        .regs = 64,
                                        .smem_dynamic = 16384};
  add(g, SRC_COMPUTE, &r);
  g->dev = start + dur;
}

/* The loader thread's input copy for the next step (pinned, async). */
static void input_copy(struct gen *g, uint64_t at) {
  uint64_t corr = ++g->corr, bytes = 8u << 20;
  api(g, SRC_LOADER, 2, API_COPY_ASYNC, at, at + 6000, corr);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_MEMCPY};
  uint64_t s = at + 8000;
  r.u.memcpy = (struct gpuphase_memcpy){.device = 0,
                                        .stream = 9,
                                        .corr = corr,
                                        .start = s,
                                        .end = s + bytes / 25,
                                        .bytes = bytes,
                                        .copy_kind = GPUPHASE_COPY_HTOD,
                                        .src_mem = GPUPHASE_MEM_PINNED,
                                        .dst_mem = GPUPHASE_MEM_DEVICE,
                                        .peer_device = -1,
                                        .flags = GPUPHASE_OP_ASYNC};
  add(g, SRC_COPY, &r);
}

/* One training step: forward and backward launches, an all-reduce, a sync
 * and some CPU work; about 410 events. */
static uint64_t step(struct gen *g) {
  uint64_t events = 0;
  input_copy(g, g->host);
  events += 2;
  range(g, GPUPHASE_RANGE_PUSH, g->host, g->s_step);
  for (int half = 0; half < 2; half++) {
    range(g, GPUPHASE_RANGE_PUSH, g->host, half ? g->s_bwd : g->s_fwd);
    for (int i = 0; i < 100; i++) {
      int k = (int)rnd(g, 8);
      launch(g, g->s_kern[k], k == 0 ? 528 : 16 + rnd(g, 200),
             4000 + rnd(g, k == 0 ? 60000 : 12000));
    }
    range(g, GPUPHASE_RANGE_POP, g->host, 0);
    events += 202;
  }
  launch(g, g->s_nccl, 32, 200000 + rnd(g, 100000));
  uint64_t t = g->host, end = (g->dev > t ? g->dev : t) + 3000;
  api(g, SRC_MAIN, 1, API_SYNC, t, end, ++g->corr);
  g->host = end + 200000 + rnd(g, 400000); /* optimizer bookkeeping, logging */
  range(g, GPUPHASE_RANGE_POP, g->host, 0);
  counters_due(g);
  return events + 2 + 2 + 2;
}

static int generate(const char *path, uint64_t target, uint64_t seed,
                    uint64_t slow_pct, int with_stacks, int with_counters) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
  struct gp_process_info info = {.host = "bench-host",
                                 /* another seed, another process: the
                                  * compare mode's twins are two runs */
                                 .pid = 4242 + (int64_t)(seed - 42),
                                 .ppid = 1,
                                 .rank = -1,
                                 .local_rank = -1,
                                 .cmdline = "python train.py --synthetic",
                                 .start_mono_ns = 1000000000ull,
                                 .start_real_ns = 1700000000000000000ull,
                                 .clock = "clock_gettime"};
  struct gen g = {.host = 1000000000ull,
                  .rng = seed,
                  .slow_pct = slow_pct,
                  .stacks = with_stacks,
                  .counters = with_counters};
  if (fd < 0 || !(g.w = gp_writer_open(fd, &info, 0, &err))) {
    perror(path);
    return -1;
  }
  metadata(&g);
  if (with_stacks) stacks(&g);
  api(&g, SRC_MAIN, 1, API_MALLOC, g.host, g.host + 50000, 0);
  g.host += 60000;
  if (with_counters) counters_meta(&g);
  g.dev = g.host;
  while (gp_writer_events(g.w) < target)
    step(&g);
  struct gpuphase_summary sum = {gp_writer_events(g.w), 0, 0, g.host};
  if (gp_writer_close(g.w, &sum) != GPUPHASE_OK) {
    fprintf(stderr, "report_bench: closing the trace failed\n");
    return -1;
  }
  return 0;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void) {
  return clock_s(CLOCK_MONOTONIC);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Runs the pipeline `runs` times on path for each thread count of
 * jobs[0..njobs) (reading one file: -j N of gpuphase-report), the counts
 * alternating within each run, and prints the rates. */
static int measure(const char *path, int runs, const int *jobs, int njobs) {
  /* Wall time, and CPU time: on a shared machine the process may wait for
   * a core, and only the CPU time says what one core can do. */
  double rate[8][99], cpu_rate[8][99];
  uint64_t n = 0;
  for (int i = 0; i < runs; i++) {
    for (int j = 0; j < njobs; j++) {
      int st;
      char err[512];
      struct gp_report_opts ro = {.warmup = -1, .read_threads = jobs[j]};
      double t = now(), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
      struct gp_proc_res *r =
          gp_report_file(path, &ro, NULL, NULL, &st, err, sizeof err);
      t = now() - t;
      c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c;
      if (!r) return fprintf(stderr, "report_bench: %s\n", err), -1;
      n = r->diag.records;
      rate[j][i] = (double)n / t;
      cpu_rate[j][i] = (double)n / c;
      printf("run %d, -j %d: %llu records in %.2f s (%.2f s CPU): %.2f M "
             "events/s, %.2f M per CPU-second\n",
             i + 1, jobs[j], (unsigned long long)n, t, c, rate[j][i] / 1e6,
             cpu_rate[j][i] / 1e6);
      gp_res_free(r);
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  for (int j = 0; j < njobs; j++) {
    qsort(rate[j], (size_t)runs, sizeof rate[j][0], cmp_dbl);
    qsort(cpu_rate[j], (size_t)runs, sizeof cpu_rate[j][0], cmp_dbl);
    printf("median of %d, -j %d: %.2f M events/s (%.2f M per CPU-second) "
           "over %llu records; peak RSS %.1f MiB\n",
           runs, jobs[j], rate[j][runs / 2] / 1e6, cpu_rate[j][runs / 2] / 1e6,
           (unsigned long long)n, ru.ru_maxrss / 1024.0);
  }
  return 0;
}

static int count_rec(void *ctx, const struct gpuphase_record *rec) {
  (void)rec;
  ++*(uint64_t *)ctx;
  return 0;
}

/* A copy of rec whose blobs are its own (a record the reader hands out
 * lives until the next one). */
static int own_copy(struct gpuphase_record *c, const struct gpuphase_record *r) {
  *c = *r;
  if (!gp_kind_in(GP_BLOB_KINDS, r->kind)) return 0;
  const struct gp_kind_desc *d = gp_kind_desc(r->kind);
  for (unsigned i = 0; d && i < d->nfields; i++) {
    if (d->fields[i].coding != 'B') continue;
    gpuphase_blob *x =
        (gpuphase_blob *)(void *)((char *)&c->u + d->fields[i].offset);
    if (!x->data || !x->len) continue;
    char *m = malloc(x->len);
    if (!m) return -1;
    memcpy(m, x->data, x->len);
    x->data = m;
  }
  return 0;
}

static void free_copy(struct gpuphase_record *c) {
  if (!gp_kind_in(GP_BLOB_KINDS, c->kind)) return;
  const struct gp_kind_desc *d = gp_kind_desc(c->kind);
  for (unsigned i = 0; d && i < d->nfields; i++)
    if (d->fields[i].coding == 'B')
      free((void *)((gpuphase_blob *)(void *)((char *)&c->u +
                                              d->fields[i].offset))
               ->data);
}

/* --stages: the read alone, then the engine alone, `runs` times each. */
static int stages(const char *path, int runs) {
  enum { MAX_RECS = 10000000 };
  double rd[99], en[99];
  uint64_t n = 0;
  for (int i = 0; i < runs; i++) {
    int err = 0;
    double t = now();
    gpuphase_reader *r = gpuphase_reader_open_sorted(path, &err);
    if (!r) return fprintf(stderr, "report_bench: %s: error %d\n", path, err), -1;
    n = 0;
    const struct gpuphase_record *rec;
    int rc;
    while (n < MAX_RECS && (rc = gp_reader_next_sorted(r, &rec)) == 1)
      count_rec(&n, rec);
    rd[i] = (double)n / (now() - t);
    gpuphase_reader_close(r);
  }
  int err = 0;
  gpuphase_reader *r = gpuphase_reader_open_sorted(path, &err);
  struct gpuphase_record *v = malloc((n ? n : 1) * sizeof *v);
  if (!r || !v) return fprintf(stderr, "report_bench: no memory\n"), -1;
  size_t k = 0;
  const struct gpuphase_record *rec;
  while (k < n && gp_reader_next_sorted(r, &rec) == 1)
    if (own_copy(&v[k++], rec) < 0)
      return fprintf(stderr, "report_bench: no memory\n"), -1;
  gpuphase_reader_close(r);
  for (int i = 0; i < runs; i++) {
    struct gp_report_opts ro = {.warmup = -1};
    double t = now();
    gp_attr *a = gp_attr_new(&ro);
    if (!a || gp_attr_feed_n(a, v, k) < 0)
      return fprintf(stderr, "report_bench: no memory\n"), -1;
    gp_res_free(gp_attr_finish(a));
    gp_attr_free(a);
    en[i] = (double)k / (now() - t);
  }
  for (size_t i = 0; i < k; i++)
    free_copy(&v[i]);
  free(v);
  for (int i = 0; i < runs; i++)
    printf("run %d: read alone %.2f M events/s, engine alone %.2f M events/s "
           "(%zu records)\n",
           i + 1, rd[i] / 1e6, en[i] / 1e6, k);
  qsort(rd, (size_t)runs, sizeof *rd, cmp_dbl);
  qsort(en, (size_t)runs, sizeof *en, cmp_dbl);
  double lo = rd[runs / 2] < en[runs / 2] ? rd[runs / 2] : en[runs / 2];
  printf("median of %d: read alone %.2f M events/s, engine alone %.2f M "
         "events/s: one file on two threads at most %.2f M events/s\n",
         runs, rd[runs / 2] / 1e6, en[runs / 2] / 1e6, lo / 1e6);
  return 0;
}

/* Reads both traces and judges them as `gpuphase-report compare` does:
 * each result reduced to the run's figures and freed before the next. */
static int compare_once(char *const paths[2], const struct gp_report_opts *ro) {
  struct gp_cmp_side s[2] = {{0}};
  int rc = 0;
  for (int i = 0; i < 2 && !rc; i++) {
    int st;
    char err[512];
    struct gp_proc_res *r =
        gp_report_file(paths[i], ro, NULL, NULL, &st, err, sizeof err);
    if (!r || gp_cmp_side_add(&s[i], r) < 0) {
      fprintf(stderr, "report_bench: %s\n", r ? "out of memory" : err);
      rc = -1;
    }
    gp_res_free(r);
  }
  struct gp_cmp_opts o;
  struct gp_cmp_result res;
  gp_cmp_opts_init(&o);
  if (!rc && gp_cmp_judge(&s[0], &s[1], &o, &res) == 0) {
    struct gp_cmp_out out = {&s[0], &s[1], &res, &o, 0};
    FILE *null = fopen("/dev/null", "w");
    if (null) gp_cmp_text(null, &out), fclose(null);
    printf("  %zu + %zu measured steps; %s: %s\n", s[0].v[0].measured,
           s[1].v[0].measured, gp_verdict_key(res.verdict), res.reason);
    gp_cmp_result_free(&res);
  } else if (!rc) {
    rc = -1;
  }
  gp_cmp_side_free(&s[0]);
  gp_cmp_side_free(&s[1]);
  return rc;
}

static double tv_s(struct timeval t) {
  return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* One compare in a child process, so that its peak RSS (KiB) and CPU time
 * are its own, not the generator's. */
static int timed_compare(char *const paths[2], const struct gp_report_opts *ro,
                         double *wall, double *cpu, long *rss) {
  fflush(stdout);
  double t = now();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int rc = compare_once(paths, ro);
    fflush(stdout);
    _exit(rc < 0);
  }
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
    return -1;
  *wall = now() - t;
  *cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
  *rss = ru.ru_maxrss;
  return 0;
}

/* Times compare on a trace and its 5%-slower twin, with the steps found
 * alone (two passes a file) and named with a fixed warm-up (one). */
static int compare_bench(uint64_t events, int runs, const char *keep) {
  char pa[4096], pb[4096];
  snprintf(pa, sizeof pa, "%s-base.gph",
           keep ? keep : "/tmp/gpuphase-bench-cmp");
  snprintf(pb, sizeof pb, "%s-new.gph",
           keep ? keep : "/tmp/gpuphase-bench-cmp");
  double t0 = now();
  if (generate(pa, events, 42, 0, 0, 0) < 0 ||
      generate(pb, events, 43, 5, 0, 0) < 0)
    return 1;
  printf("generated %s and %s: %.1f s\n", pa, pb, now() - t0);
  static const struct {
    const char *what, *step;
    long warmup;
  } cfg[] = {{"steps found alone", NULL, -1},
             {"--step step --warmup 3", "step", 3}};
  char *paths[2] = {pa, pb};
  int rc = 0;
  for (int c = 0; c < 2 && !rc; c++) {
    struct gp_report_opts ro = {
        .step = cfg[c].step, .warmup = cfg[c].warmup, .step_detail = 1};
    double wall[99], cpu[99];
    long rss = 0;
    for (int i = 0; i < runs && !rc; i++) {
      long r;
      rc = timed_compare(paths, &ro, &wall[i], &cpu[i], &r);
      if (r > rss) rss = r;
      printf("%s, run %d: %.2f s (%.2f s CPU)\n", cfg[c].what, i + 1, wall[i],
             cpu[i]);
    }
    if (rc) break;
    qsort(wall, (size_t)runs, sizeof *wall, cmp_dbl);
    qsort(cpu, (size_t)runs, sizeof *cpu, cmp_dbl);
    printf("%s: median of %d: %.2f s (%.2f s CPU), peak RSS %.1f MiB\n",
           cfg[c].what, runs, wall[runs / 2], cpu[runs / 2], rss / 1024.0);
  }
  if (!keep) unlink(pa), unlink(pb);
  return rc != 0;
}

int main(int argc, char **argv) {
  uint64_t events = 50000000;
  int runs = 3;
  const char *keep = NULL, *input = NULL;
  int cmp = 0, with_stacks = 0, with_counters = 0, jobs[8] = {1}, njobs = 1,
      split = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc)
      events = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
      keep = argv[++i];
    else if (!strcmp(argv[i], "--input") && i + 1 < argc)
      input = argv[++i];
    else if (!strcmp(argv[i], "--compare"))
      cmp = 1;
    else if (!strcmp(argv[i], "--stages"))
      split = 1;
    else if (!strcmp(argv[i], "--stacks"))
      with_stacks = 1;
    else if (!strcmp(argv[i], "--counters"))
      with_counters = 1;
    else if (!strcmp(argv[i], "-j") && i + 1 < argc) {
      char *p = argv[++i];
      for (njobs = 0; njobs < 8 && *p; njobs++) {
        jobs[njobs] = (int)strtol(p, &p, 10);
        if (jobs[njobs] < 1 || jobs[njobs] > 64 || (*p && *p++ != ','))
          return fprintf(stderr, "report_bench: bad -j\n"), 2;
      }
      if (!njobs) return fprintf(stderr, "report_bench: bad -j\n"), 2;
    } else {
      fprintf(stderr,
              "usage: %s [--events N] [--runs R] [--stacks] [--counters] "
              "[-j N[,N...]] "
              "[--keep FILE | --input FILE]\n       %s --compare [--events N] [--runs R] [--keep "
              "PREFIX]\n       %s --stages --input FILE [--runs R]\n",
              argv[0], argv[0], argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 99) runs = 3;
  if (cmp) return compare_bench(events, runs, keep);
  if (split && !input)
    return fprintf(stderr, "report_bench: --stages needs --input FILE\n"), 2;
  if (split) return stages(input, runs) < 0;
  /* a trace kept from an earlier run: time the pipeline alone, e.g. under
   * callgrind, where generating the trace would dominate */
  if (input) return measure(input, runs, jobs, njobs) < 0;
  char tmp[] = "/tmp/gpuphase-bench-XXXXXX";
  const char *path = keep;
  if (!path) {
    int fd = mkstemp(tmp);
    if (fd < 0) return perror("mkstemp"), 1;
    close(fd);
    path = tmp;
  }
  double t0 = now();
  if (generate(path, events, 42, 0, with_stacks, with_counters) < 0) return 1;
  printf("generated %s: %.1f s\n", path, now() - t0);
  int rc = measure(path, runs, jobs, njobs);
  if (!keep) unlink(path);
  return rc < 0;
}
