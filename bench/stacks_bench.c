/* The call-site capture alone (preload/stacks.c), linked with the shim's
 * objects and run on a ring of the calling thread with no writer: ns per
 * warm capture (a stack the thread has seen) made 0, 32 and 96 frames
 * below main, the slope per frame, and ns per cold capture (120 new
 * stacks, the thread's first, which also fill libunwind's caches), each
 * the median of ROUNDS rounds. No GPU and no CUDA library is involved.
 * usage: gpuphase-bench-stacks [CALLS_PER_ROUND [ROUNDS]] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gp_rings.h"
#include "gp_clock.h"
#include "gp_settings.h"
#include "gp_stacks.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile int sink;
static struct gp_tbuf *ring;
static long captured;

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

NOINLINE static double capture_at(int depth, long calls) {
  if (depth > 0) {
    double r = capture_at(depth - 1, calls);
    sink++;
    return r;
  }
  uint64_t t0 = now_ns();
  for (long i = 0; i < calls; i++)
    captured += gp_stack_on_call(ring, GP_STKP_BLOCK) != 0;
  return (double)(now_ns() - t0) / (double)calls;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 100000;
  int rounds = argc > 2 ? atoi(argv[2]) : 11;
  if (calls <= 0 || rounds <= 0 || rounds > 1000) {
    fprintf(stderr, "usage: %s [CALLS_PER_ROUND [ROUNDS]]\n", argv[0]);
    return 2;
  }
  gp_cfg.stacks = GP_STK_SYNC;
  gp_stacks_start();
  gp_clock_start();
  if (gp_stacks_writer_begin() != 0) return 1; /* the clock's rates */
  if (gp_rings_start() != 0 || !(ring = gp_ring_create()) || !ring->stk) {
    fprintf(stderr, "gpuphase-bench-stacks: no ring (built without libunwind?)\n");
    return 1;
  }
  /* cold: each depth a new stack (ids 1..120), then the same again warm */
  uint64_t t0 = now_ns();
  for (int d = 0; d < 120; d++) capture_at(d, 1);
  uint64_t t1 = now_ns();
  for (int d = 0; d < 120; d++) capture_at(d, 1);
  uint64_t t2 = now_ns();
  static const int depths[3] = {0, 32, 96};
  double v[3][1000], med[3];
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < 3; k++) v[k][r] = capture_at(depths[k], calls);
  for (int k = 0; k < 3; k++) {
    qsort(v[k], (size_t)rounds, sizeof v[k][0], cmp);
    med[k] = v[k][rounds / 2];
  }
  if (captured != 240 + 3L * rounds * calls) {
    fprintf(stderr, "gpuphase-bench-stacks: %ld captures, expected %ld\n",
            captured, 240 + 3L * rounds * calls);
    return 1;
  }
  printf("warm_d0_ns %.1f\nwarm_d32_ns %.1f\nwarm_d96_ns %.1f\n", med[0],
         med[1], med[2]);
  printf("per_frame_ns %.2f\n", (med[2] - med[0]) / 96.0);
  printf("cold_ns %.1f\nwarm_sweep_ns %.1f\n", (double)(t1 - t0) / 120.0,
         (double)(t2 - t1) / 120.0);
  return 0;
}
