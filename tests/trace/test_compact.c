/* Compactness: a launch loop of 1,000,000 API calls and their 1,000,000
 * kernels must cost at most 4 bytes per event on disk. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tt.h"

#define N 1000000
#define MAX_BYTES_PER_EVENT 4.0

static void launch_loop(gp_writer *w) {
  uint64_t rng = 2024, t = 5000000000ull, kend = 0;
  uint64_t name = gp_writer_intern(w, "_Z6vecAddPKfS0_Pfi", 18);
  struct gpuphase_record a = {.kind = GPUPHASE_REC_API};
  a.u.api = (struct gpuphase_api){.thread = 1,
                                  .api = 12,
                                  .device = 0,
                                  .stream = 0x7f00deadbeef,
                                  .func = 0x401a2b,
                                  .grid = 4096,
                                  .block = 256};
  struct gpuphase_record k = {.kind = GPUPHASE_REC_KERNEL};
  k.u.kernel = (struct gpuphase_kernel){.device = 0,
                                        .stream = 13,
                                        .name = name,
                                        .grid_x = 4096,
                                        .grid_y = 1,
                                        .grid_z = 1,
                                        .block_x = 256,
                                        .block_y = 1,
                                        .block_z = 1,
                                        .regs = 32};
  for (uint64_t i = 1; i <= N; i++) {
    t += 140 + tt_rand(&rng) % 21; /* ~150 ns per launch */
    a.u.api.start = t;
    a.u.api.end = t + 80 + tt_rand(&rng) % 41;
    a.u.api.corr = i;
    CHECK(gp_writer_add(w, 1, &a) == GPUPHASE_OK);
    /* the device runs each kernel after its launch, back to back */
    uint64_t ks = t + 4000 > kend + 2 ? t + 4000 : kend + 2;
    k.u.kernel.start = ks;
    k.u.kernel.end = kend = ks + 100 + tt_rand(&rng) % 41;
    k.u.kernel.corr = i;
    CHECK(gp_writer_add(w, 2, &k) == GPUPHASE_OK);
  }
}

int main(void) {
  const char *path = tt_tmpfile("compact");
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  launch_loop(w);
  struct gpuphase_summary sum = {2 * N, 0, 0, 0};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
  struct stat st;
  CHECK(stat(path, &st) == 0);
  double per = (double)st.st_size / (2.0 * N);
  printf("%lld bytes for %d events: %.3f bytes/event (limit %.1f)\n",
         (long long)st.st_size, 2 * N, per, MAX_BYTES_PER_EVENT);
  CHECK(per <= MAX_BYTES_PER_EVENT);
  int err;
  gpuphase_reader *r = gpuphase_reader_open(path, &err);
  size_t n = 0;
  CHECK(r && tt_read_all(r, NULL, 0, &n) == 0);
  CHECK_EQ_U(n, 2 * N + 2); /* + the string and the summary */
  gpuphase_reader_close(r);
  return tt_done("test_compact");
}
