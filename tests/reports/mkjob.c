/* Writes the traces of a synthetic job whose job view test_job.py works out
 * by hand: mkjob [options] DIR   (DIR/rank-R.gph, one per rank)
 *   --ranks N      ranks (4), --per-host P ranks per host (2): rank r runs
 *                  on host "node-<r / P>" with local rank r % P, GPU r % P
 *   --steps S      steps (20); --no-steps: no range and no synchronising
 *                  call (the collectives are the units)
 *   --slow R       the slow rank (-1: none), --extra NS how much slower (2 ms)
 *   --how kernel|host|copy  the slow rank's compute kernel runs NS longer,
 *                  or its host starts the step NS late (the GPU idle
 *                  meanwhile), or a host-to-device copy of NS (async,
 *                  pinned, called at g + 1 us) runs on its stream before
 *                  the compute kernel
 *   --slow2 R      a second rank as slow as the first (a tie)
 *   --wild-clock   the headers of host 1's ranks hold a hostile clock
 *                  pair: realtime = monotonic + 2^63, an offset of -2^63
 *                  as a signed number (the records keep their times)
 *   --one-name     every host is named "node-X" (their clocks still differ)
 *   --run-id ID    the run id of every header (ID%d: rank d's own)
 *   --unranked R   rank R's header carries no rank (as without RANK)
 *   --no-comm R    rank R launches no collective (its compute only, and
 *                  its synchronising call ends with its compute kernel);
 *                  the others' collectives end as if it did not exist
 *   --drop R:S     rank R's trace lacks step S (the events lost): its
 *                  later collectives are one behind the others' by position
 *   --drop-coll R:S  rank R's trace lacks the collective kernel of step S
 *                  only (its record lost; the step and the launch are
 *                  there); up to 8 of them
 *   --extra-step G the slow rank is NS + i x G late at step i (the steps
 *                  differ, so a collective paired with another step's
 *                  shows)
 *   --coll2 R      each step has a second collective (below); rank R's
 *                  compute before it runs --extra2 NS (1 ms) longer
 * Time, on the job's clock G: step i starts at g = 1 ms + i x 10 ms. Each
 * rank launches its compute kernel "gemm_kernel" at g (+NS when its host is
 * late), which runs [launch + 10 us, + C) with C = 1 ms (+NS when its
 * kernel is slow), then the collective ncclDevKernel_AllReduce_Sum_f32
 * from the compute kernel's end a_r to E + lat_r, E = max(a) + 100 us (the
 * transfer), lat_r = (r % 3) x 200 ns (the link latency). The step is the
 * range "train_step" from g to E + lat_r + 10 us; cudaDeviceSynchronize
 * spans [launch + 9 us, E + lat_r + 5 us).
 * With --coll2, once the collective ends each rank runs "gemm2_kernel" for
 * C2 = 500 us (+NS2 on rank R) and then the collective
 * ncclDevKernel_AllGather_f32 from its end b_r to E2 + lat_r, E2 = max(b)
 * + 100 us; the step and the synchronising call end after it (E2 in place
 * of E above). Launches of step i have correlation ids 4i+1 to 4i+4.
 * Clocks: host h's monotonic clock reads G + h x 5 s; its realtime clock
 * reads G + 1.7e18 + h x 50 us (its realtime is 50 us off per host). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

#define US 1000ull
#define MS 1000000ull

static gp_writer *w;

static void add(uint32_t src, struct gpuphase_record *r) {
  if (gp_writer_add(w, src, r) != GPUPHASE_OK) {
    fprintf(stderr, "mkjob: write failed\n");
    exit(1);
  }
}

static uint64_t str(const char *s) {
  return gp_writer_intern(w, s, strlen(s));
}

static int64_t cur_dev;

static void api(uint64_t id, uint64_t start, uint64_t end, uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){.thread = 1,
                                  .api = id,
                                  .start = start,
                                  .end = end,
                                  .corr = corr,
                                  .device = cur_dev};
  add(1, &r);
}

static void range(uint64_t op, uint64_t at, uint64_t name) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range =
      (struct gpuphase_range){.thread = 1, .op = op, .start = at, .name = name};
  add(1, &r);
}

static void kernel(int64_t dev, uint64_t start, uint64_t end, uint64_t name,
                   uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_KERNEL};
  struct gpuphase_kernel *k = &r.u.kernel;
  k->device = (uint64_t)dev;
  k->corr = corr;
  k->start = start;
  k->end = end;
  k->name = name;
  k->grid_x = 200;
  k->block_x = 256;
  k->grid_y = k->grid_z = k->block_y = k->block_z = 1;
  add(10, &r);
}

static void memcpy_rec(int64_t dev, uint64_t start, uint64_t end,
                       uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_MEMCPY};
  r.u.memcpy = (struct gpuphase_memcpy){.device = (uint64_t)dev,
                                        .corr = corr,
                                        .start = start,
                                        .end = end,
                                        .bytes = 64u << 20,
                                        .copy_kind = GPUPHASE_COPY_HTOD,
                                        .src_mem = GPUPHASE_MEM_PINNED,
                                        .dst_mem = GPUPHASE_MEM_DEVICE,
                                        .peer_device = -1,
                                        .flags = GPUPHASE_OP_ASYNC};
  add(10, &r);
}

static void api_def(uint64_t id, const char *name, uint64_t cls) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def = (struct gpuphase_api_def){id, str(name), cls, 0};
  add(0, &r);
}

static void device(int64_t dev) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  struct gpuphase_device *d = &r.u.device;
  d->device = (uint64_t)dev;
  d->name = str("Test GPU");
  d->sms = 100;
  d->mem_total = 1ull << 34;
  d->cc_major = 9;
  d->max_threads_per_sm = 2048;
  d->max_blocks_per_sm = 32;
  d->regs_per_sm = d->smem_per_sm = 65536;
  d->warp_size = 32;
  add(0, &r);
}

int main(int argc, char **argv) {
  int ranks = 4, per_host = 2, steps = 20, nosteps = 0, slow = -1, slow2 = -1;
  int host_late = 0, copy = 0, wild = 0, one_name = 0, unranked = -1,
      nocomm = -1, drop_r = -1, drop_s = -1, ndc = 0, dc_r[8], dc_s[8];
  const char *run_id = NULL;
  uint64_t extra = 2 * MS, grow = 0, extra2 = 1 * MS;
  int coll2 = -1; /* the rank late at the second collective */
  int two = 0;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-steps"))
      nosteps = 1;
    else if (!strcmp(a, "--wild-clock"))
      wild = 1;
    else if (!strcmp(a, "--one-name"))
      one_name = 1;
    else if (v && !strcmp(a, "--run-id"))
      run_id = v, i++;
    else if (v && !strcmp(a, "--ranks"))
      ranks = atoi(v), i++;
    else if (v && !strcmp(a, "--per-host"))
      per_host = atoi(v), i++;
    else if (v && !strcmp(a, "--steps"))
      steps = atoi(v), i++;
    else if (v && !strcmp(a, "--slow"))
      slow = atoi(v), i++;
    else if (v && !strcmp(a, "--slow2"))
      slow2 = atoi(v), i++;
    else if (v && !strcmp(a, "--unranked"))
      unranked = atoi(v), i++;
    else if (v && !strcmp(a, "--no-comm"))
      nocomm = atoi(v), i++;
    else if (v && !strcmp(a, "--drop") && strchr(v, ':'))
      drop_r = atoi(v), drop_s = atoi(strchr(v, ':') + 1), i++;
    else if (v && !strcmp(a, "--drop-coll") && strchr(v, ':') && ndc < 8)
      dc_r[ndc] = atoi(v), dc_s[ndc++] = atoi(strchr(v, ':') + 1), i++;
    else if (v && !strcmp(a, "--coll2"))
      coll2 = atoi(v), two = 1, i++;
    else if (v && !strcmp(a, "--extra2"))
      extra2 = strtoull(v, NULL, 10), i++;
    else if (v && !strcmp(a, "--extra-step"))
      grow = strtoull(v, NULL, 10), i++;
    else if (v && !strcmp(a, "--extra"))
      extra = strtoull(v, NULL, 10), i++;
    else if (v && !strcmp(a, "--how"))
      host_late = !strcmp(v, "host"), copy = !strcmp(v, "copy"), i++;
    else
      dir = a;
  }
  if (!dir || ranks < 1 || per_host < 1 || steps < 1)
    return fprintf(stderr, "usage: mkjob [options] DIR\n"), 2;
  const uint64_t base = 1 * MS, period = 10 * MS, C = 1 * MS, T = 100 * US,
                 C2 = 500 * US;
  for (int r = 0; r < ranks; r++) {
    int h = r / per_host;
    uint64_t M = (uint64_t)h * 5000 * MS, eps = (uint64_t)h * 50 * US;
    char path[4096], host[32];
    snprintf(path, sizeof path, "%s/rank-%d.gph", dir, r);
    char id[64] = "";
    snprintf(host, sizeof host, one_name ? "node-X" : "node-%d", h);
    if (run_id && strstr(run_id, "%d"))
      snprintf(id, sizeof id, "%.*s%d", (int)(strstr(run_id, "%d") - run_id),
               run_id, r);
    else if (run_id)
      snprintf(id, sizeof id, "%.60s", run_id);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
    struct gp_process_info info = {0};
    info.host = host;
    info.pid = 1000 + r;
    info.ppid = 1;
    info.rank = r == unranked ? -1 : r;
    info.local_rank = r % per_host;
    if (run_id) info.run_id = id;
    info.cmdline = "./train";
    info.start_mono_ns = base - 100 * US + M;
    info.start_real_ns = 1700000000000000000ull + base - 100 * US + eps;
    info.clock = "clock_gettime";
    if (wild && h == 1) {
      info.start_real_ns = info.start_mono_ns + (1ull << 63);
    }
    if (fd < 0 || !(w = gp_writer_open(fd, &info, 4096, &err)))
      return perror(path), 1;
    api_def(1, "cudaLaunchKernel", GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC);
    api_def(2, "cudaDeviceSynchronize", GPUPHASE_API_SYNC);
    api_def(3, "cudaMemcpyAsync", GPUPHASE_API_COPY | GPUPHASE_API_ASYNC);
    int64_t dev = cur_dev = r % per_host;
    device(dev);
    uint64_t sname = str("train_step"), gemm = str("gemm_kernel"),
             nccl = str("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
             gemm2 = two ? str("gemm2_kernel") : 0,
             gather = two ? str("ncclDevKernel_AllGather_f32") : 0;
    for (int i = 0; i < steps; i++) {
      uint64_t g = base + (uint64_t)i * period, amax = 0;
      uint64_t xi = extra + (uint64_t)i * grow; /* the slow rank's lateness */
      for (int q = 0; q < ranks; q++) { /* every rank's arrival */
        if (q == nocomm) continue;
        int sq = q == slow || q == slow2;
        uint64_t a = g + 10 * US + C + (sq ? xi : 0);
        if (a > amax) amax = a;
      }
      int s = r == slow || r == slow2;
      uint64_t launch = g + (s && host_late ? xi : 0);
      uint64_t cstart = launch + 10 * US;
      uint64_t a = cstart + C + (s && !host_late ? xi : 0);
      uint64_t kstart = cstart + (s && copy ? xi : 0); /* after the copy */
      uint64_t lat = (uint64_t)(r % 3) * 200;
      uint64_t end1 = r == nocomm ? a : amax + T + lat, end = end1;
      uint64_t corr = 4 * (uint64_t)i + 1;
      if (two) { /* the second collective: arrivals after the first's end */
        uint64_t bmax = 0;
        for (int q = 0; q < ranks; q++)
          if (q != nocomm) {
            uint64_t b = amax + T + (uint64_t)(q % 3) * 200 + C2 +
                         (q == coll2 ? extra2 : 0);
            if (b > bmax) bmax = b;
          }
        end = r == nocomm ? end1 : bmax + T + lat;
      }
      if (r == drop_r && i == drop_s) continue;
      if (!nosteps) range(GPUPHASE_RANGE_PUSH, g + M, sname);
      api(1, launch + M, launch + 5 * US + M, corr);
      if (s && copy)
        api(3, launch + 1 * US + M, launch + 2 * US + M, corr + 1000000);
      if (r != nocomm) api(1, launch + 6 * US + M, launch + 8 * US + M, corr + 1);
      if (two && r != nocomm) {
        api(1, launch + 8200 + M, launch + 8400 + M, corr + 2);
        api(1, launch + 8600 + M, launch + 8800 + M, corr + 3);
      }
      if (!nosteps) api(2, launch + 9 * US + M, end + 5 * US + M, 0);
      if (!nosteps) range(GPUPHASE_RANGE_POP, end + 10 * US + M, 0);
      if (s && copy) memcpy_rec(dev, cstart + M, kstart + M, corr + 1000000);
      kernel(dev, kstart + M, a + M, gemm, corr);
      int lost = 0; /* this collective's record */
      for (int q = 0; q < ndc; q++)
        lost |= dc_r[q] == r && dc_s[q] == i;
      if (r != nocomm && !lost) kernel(dev, a + M, end1 + M, nccl, corr + 1);
      if (two && r != nocomm) {
        uint64_t b = end1 + C2 + (r == coll2 ? extra2 : 0);
        kernel(dev, end1 + M, b + M, gemm2, corr + 2);
        kernel(dev, b + M, end + M, gather, corr + 3);
      }
    }
    uint64_t last = base + (uint64_t)steps * period + M;
    struct gpuphase_summary sum = {gp_writer_events(w), 0, 0, last};
    if (gp_writer_close(w, &sum) != GPUPHASE_OK) return 1;
  }
  return 0;
}
