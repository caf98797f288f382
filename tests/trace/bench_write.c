/* Writer throughput on one core, the work the profiler's writer thread
 * does per event: gp_writer_add (encoding into the pending frame of a
 * source) plus the zstd compression of every frame, written to /dev/null
 * so that the disk stays out of the figure. The mix is a launch loop: API
 * records of one host thread (source 1) interleaved one to one with the
 * KERNEL records of one stream (source 2), every 64th API record naming
 * one of 16 call-site stacks of 20 frames (a MODULE and 320 FRAME records
 * in source 0, written first, as the sampled default records launches).
 * A second part measures
 * gp_writer_intern on kernel names that are already known, once with the
 * pointer that interned them (as CUPTI hands the profiler the same name
 * pointer for every launch of a kernel) and once with a copy of the bytes
 * at another address.
 * Run: meson test --benchmark, or directly: bench_write [records] [runs]. */
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tt.h"

#define CHUNK 8192 /* records generated (untimed) between timed batches */
#define NAMES 64
#define NAME_MAX_LEN 200
#define LOOKUPS (1u << 16) /* length of the replayed lookup sequence */
#define MAX_RUNS 9
#define SITES 16      /* call-site stacks */
#define SITE_DEPTH 20 /* frames each */

/* CPU time of this thread: the figure is per core, and the build machines
 * are shared, so wall time would count other processes' slices. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct gen {
  uint64_t rng, host, dev, corr;
};

/* A launch every ~200 ns that takes 100..300 ns; its kernel 10 us apart
 * from the previous one on the device, each call and kernel one
 * correlation id further. */
static void fill(struct gen *g, struct gpuphase_record *r, size_t n) {
  for (size_t i = 0; i + 1 < n; i += 2) {
    g->host += 150 + tt_rand(&g->rng) % 101;
    g->corr++;
    memset(&r[i], 0, sizeof r[i]);
    r[i].kind = GPUPHASE_REC_API;
    r[i].u.api =
        (struct gpuphase_api){.thread = 1,
                              .api = 12,
                              .start = g->host,
                              .end = g->host + 100 + tt_rand(&g->rng) % 201,
                              .corr = g->corr,
                              .stream = 0x7f00deadbeef,
                              .func = 0x55d0c0ffee40,
                              .grid = 4096,
                              .block = 256,
                              .stack = g->corr % 64 == 0
                                           ? SITE_DEPTH * (1 + g->corr / 64 % SITES)
                                           : 0};
    g->dev += 10000;
    memset(&r[i + 1], 0, sizeof r[i + 1]);
    r[i + 1].kind = GPUPHASE_REC_KERNEL;
    r[i + 1].u.kernel = (struct gpuphase_kernel){.device = 0,
                                                 .stream = 13,
                                                 .corr = g->corr,
                                                 .start = g->dev,
                                                 .end = g->dev + 9000,
                                                 .name = 1,
                                                 .grid_x = 4096,
                                                 .grid_y = 1,
                                                 .grid_z = 1,
                                                 .block_x = 256,
                                                 .block_y = 1,
                                                 .block_z = 1,
                                                 .regs = 32};
  }
}

static gp_writer *open_null(void) {
  int fd = open("/dev/null", O_WRONLY);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  CHECK(w != NULL);
  return w;
}

/* Records per second for n records; *bytes gets the file size. */
static double run_add(struct gpuphase_record *r, uint64_t n, uint64_t *bytes) {
  struct gen g = {7, 1000000000ull, 1000004000ull, 0};
  gp_writer *w = open_null();
  CHECK(gp_writer_intern(w, "_Z6vecAddPKfS0_Pfi", 18) == 1);
  double spent = 0;
  /* the call sites: a module and SITES chains of SITE_DEPTH nodes (node
   * SITE_DEPTH * (k + 1) the innermost of chain k) */
  struct gpuphase_record m = {.kind = GPUPHASE_REC_MODULE};
  m.u.module = (struct gpuphase_module){.module = 1, .base = 0x55d0c0000000ull,
                                        .size = 1 << 24, .start = 1000000000ull};
  double t0 = now();
  gp_writer_add(w, 0, &m);
  for (uint64_t k = 0; k < SITES; k++)
    for (uint64_t d = 0; d < SITE_DEPTH; d++) {
      struct gpuphase_record f = {.kind = GPUPHASE_REC_FRAME};
      uint64_t node = k * SITE_DEPTH + d + 1;
      f.u.frame = (struct gpuphase_frame){node, d ? node - 1 : 0,
                                          GPUPHASE_FRAME_NATIVE, 1,
                                          0x1000 + 0x40 * d + k, 0};
      gp_writer_add(w, 0, &f);
    }
  spent += now() - t0;
  for (uint64_t done = 0; done < n; done += CHUNK) {
    fill(&g, r, CHUNK);
    double t0 = now();
    for (size_t i = 0; i < CHUNK; i++)
      gp_writer_add(w, r[i].kind == GPUPHASE_REC_API ? 1 : 2, &r[i]);
    spent += now() - t0;
  }
  t0 = now();
  CHECK(gp_writer_flush(w) == GPUPHASE_OK);
  spent += now() - t0;
  CHECK_EQ_U(gp_writer_events(w),
             (n + CHUNK - 1) / CHUNK * CHUNK + 1 + SITES * SITE_DEPTH);
  *bytes = gp_writer_bytes(w);
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
  return (double)((n + CHUNK - 1) / CHUNK * CHUNK) / spent;
}

/* Mangled-looking names of 20..200 bytes, all distinct (the index is
 * spelt into each). */
static size_t make_names(char (*names)[NAME_MAX_LEN], size_t *len) {
  uint64_t rng = 99;
  size_t total = 0;
  for (int i = 0; i < NAMES; i++) {
    len[i] = 20 + (size_t)(tt_rand(&rng) % (NAME_MAX_LEN - 20 + 1));
    snprintf(names[i], NAME_MAX_LEN, "_ZN%02d", i);
    for (size_t k = 5; k < len[i]; k++)
      names[i][k] = (char)('a' + tt_rand(&rng) % 26);
    total += len[i];
  }
  return total / NAMES;
}

/* Lookups per second of already interned names, in a fixed pseudo-random
 * order; from[] gives the addresses the lookups pass. */
static double run_intern(char (*from)[NAME_MAX_LEN],
                         char (*names)[NAME_MAX_LEN], const size_t *len,
                         const uint8_t *order, uint64_t n) {
  gp_writer *w = open_null();
  uint64_t id[NAMES];
  for (int i = 0; i < NAMES; i++)
    id[i] = gp_writer_intern(w, names[i], len[i]);
  uint64_t bad = 0;
  double t0 = now();
  for (uint64_t i = 0; i < n; i++) {
    unsigned k = order[i & (LOOKUPS - 1)];
    bad += gp_writer_intern(w, from[k], len[k]) != id[k];
  }
  double dt = now() - t0;
  CHECK_EQ_U(bad, 0);
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
  return (double)n / dt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void bench_add(uint64_t n, int runs) {
  struct gpuphase_record *r = malloc(CHUNK * sizeof *r);
  double rate[MAX_RUNS];
  uint64_t bytes = 0;
  for (int i = 0; i < runs; i++) {
    rate[i] = run_add(r, n, &bytes);
    printf("add+compress run %d: %6.2f M records/s\n", i + 1, rate[i] * 1e-6);
  }
  printf("add+compress median: %6.2f M records/s (%llu records, %.2f B/record "
         "on disk)\n",
         median(rate, runs) * 1e-6, (unsigned long long)n,
         (double)bytes / (double)n);
  free(r);
}

static void bench_intern(uint64_t n, int runs) {
  static char names[NAMES][NAME_MAX_LEN], copies[NAMES][NAME_MAX_LEN];
  static uint8_t order[LOOKUPS];
  size_t len[NAMES];
  size_t mean = make_names(names, len);
  memcpy(copies, names, sizeof names);
  uint64_t rng = 5;
  for (size_t i = 0; i < LOOKUPS; i++)
    order[i] = (uint8_t)(tt_rand(&rng) % NAMES);
  for (int same = 1; same >= 0; same--) {
    double rate[MAX_RUNS];
    for (int i = 0; i < runs; i++)
      rate[i] = run_intern(same ? names : copies, names, len, order, n);
    printf("intern %s: median %6.2f M lookups/s (%d names, mean %zu B)\n",
           same ? "same pointer " : "other address", median(rate, runs) * 1e-6,
           NAMES, mean);
  }
}

int main(int argc, char **argv) {
  uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
  int runs = argc > 2 ? atoi(argv[2]) : 3;
  if (runs < 1 || runs > MAX_RUNS) runs = 3;
  if (n < CHUNK) n = CHUNK;
  bench_add(n, runs);
  bench_intern(n, runs);
  return tt_done("bench_write");
}
