/* Helpers shared by the simulated stack's self-tests. Expected device
 * times in the tests are computed by hand from the model in README.md
 * (defaults: 132 SMs, 10 us waves, 25 GB/s PCIe, 3000 GB/s HBM, 2 us copy
 * latency); only host wall-clock waits get a tolerance. */
#ifndef GPUSIM_TEST_UTIL_H
#define GPUSIM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Overshoot allowed on wall-clock waits: sleeps wake late, and on a
 * loaded CI machine a thread can stay descheduled for milliseconds. */
#define WALL_TOLERANCE_NS 50000000ull

/* Work that keeps a stream busy long enough for everything a test issues
 * behind it to be queued, however slowly the test thread runs:
 * ceil(1320000 / 132) = 10000 waves of 10000 ns = 100 ms. */
#define BIG_BLOCKS 1320000u
#define BIG_NS 100000000ull

static int test_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      test_failures++;                                                         \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_) {                                                            \
      fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__,    \
              __LINE__, #a, a_, #b, b_);                                       \
      test_failures++;                                                         \
    }                                                                          \
  } while (0)

/* Fatal variant for setup steps the rest of a test depends on. */
#define REQUIRE(cond)                                                          \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: required: %s\n", __FILE__, __LINE__, #cond);     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static inline uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int test_result(const char *name) {
  if (test_failures)
    fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
  else
    printf("%s: ok\n", name);
  return test_failures ? 1 : 0;
}

#endif
