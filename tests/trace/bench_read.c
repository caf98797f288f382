/* Reader throughput: writes 5 M synthetic API and KERNEL records over 8
 * sources (4 host threads, 4 streams, added in chunks as per-thread
 * buffers would deliver them) and reports records/s for file-order and
 * time-ordered reading on one core. Run: meson test --benchmark, or the
 * executable directly with an optional record count. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tt.h"

#define SOURCES 8
#define CHUNK 1000

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct gpuphase_record make(uint32_t s, uint64_t t, uint64_t i,
                                   uint64_t *rng) {
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  if (s <= SOURCES / 2) {
    r.kind = GPUPHASE_REC_API;
    r.u.api = (struct gpuphase_api){.thread = s,
                                    .api = 12,
                                    .start = t,
                                    .end = t + 80 + tt_rand(rng) % 41,
                                    .corr = i,
                                    .stream = 0x7f0000 + s,
                                    .func = 0x401a2b,
                                    .grid = 4096,
                                    .block = 256};
  } else {
    r.kind = GPUPHASE_REC_KERNEL;
    r.u.kernel = (struct gpuphase_kernel){.stream = s,
                                          .corr = i,
                                          .start = t,
                                          .end = t + 100 + tt_rand(rng) % 41,
                                          .name = 1,
                                          .grid_x = 4096,
                                          .grid_y = 1,
                                          .grid_z = 1,
                                          .block_x = 256,
                                          .block_y = 1,
                                          .block_z = 1,
                                          .regs = 32};
  }
  return r;
}

static void write_file(const char *path, uint64_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  gp_writer_intern(w, "_Z6vecAddPKfS0_Pfi", 18);
  uint64_t rng = 1, t[SOURCES + 1], done[SOURCES + 1], per = n / SOURCES;
  for (int s = 1; s <= SOURCES; s++)
    t[s] = 1000000 + (uint64_t)s * 37, done[s] = 0;
  for (uint64_t left = per * SOURCES; left;) {
    uint32_t s = 1 + (uint32_t)(tt_rand(&rng) % SOURCES);
    for (int c = 0; c < CHUNK && done[s] < per; c++, left--) {
      t[s] += 1100 + tt_rand(&rng) % 200; /* the sources overlap in time */
      struct gpuphase_record r = make(s, t[s], ++done[s], &rng);
      gp_writer_add(w, s, &r);
    }
  }
  struct gpuphase_summary sum = {per * SOURCES, 0, 0, 0};
  gp_writer_close(w, &sum);
}

static void bench(const char *path, int sorted) {
  double t0 = now();
  int err;
  gpuphase_reader *r = sorted ? gpuphase_reader_open_sorted(path, &err)
                              : gpuphase_reader_open(path, &err);
  struct gpuphase_record rec;
  uint64_t n = 0, check = 0;
  int rc;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    n++;
    check += rec.kind; /* keeps the loop honest */
  }
  double dt = now() - t0;
  CHECK(rc == 0);
  gpuphase_reader_close(r);
  printf("%-10s %10llu records in %.3f s: %6.1f M records/s (check %llu)\n",
         sorted ? "sorted" : "file-order", (unsigned long long)n, dt,
         (double)n / dt * 1e-6, (unsigned long long)check);
}

int main(int argc, char **argv) {
  uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
  const char *path = tt_tmpfile("bench");
  double t0 = now();
  write_file(path, n);
  struct stat st;
  stat(path, &st);
  printf("write      %10llu records in %.3f s, %lld bytes (%.2f B/record)\n",
         (unsigned long long)n, now() - t0, (long long)st.st_size,
         (double)st.st_size / (double)n);
  bench(path, 0);
  bench(path, 1);
  return tt_done("bench_read");
}
