/* Cost of gp_py_capture warm (preload/pyframes.c), driven by
 * pyframes_bench.py through ctypes (docs/callsites.md, "Python frames").
 * Built with the tree, run by hand, never a test. */
#include <stdint.h>
#include <time.h>

#include "gp_pyframes.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int gp_bench_start(void) { return gp_py_start(); }

EXPORT int gp_bench_frames(void) {
  struct gp_pyframe f[256];
  return gp_py_capture(f, 256);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ns per call over `iters` captures of up to 256 frames (after 1000 to
 * warm up); -1 when a capture finds no frame. */
EXPORT double gp_bench_capture(int iters) {
  static struct gp_pyframe f[256];
  volatile uint64_t sink = 0;
  for (int i = 0; i < 1000; i++)
    sink += (uint64_t)gp_py_capture(f, 256);
  uint64_t t0 = now_ns();
  for (int i = 0; i < iters; i++) {
    int n = gp_py_capture(f, 256);
    if (n <= 0)
      return -1;
    sink += f[n - 1].unit;
  }
  uint64_t t1 = now_ns();
  (void)sink;
  return (double)(t1 - t0) / iters;
}
