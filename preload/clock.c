/* TSC to CLOCK_MONOTONIC: calibration points taken by the writer thread,
 * and the interpolation that converts every raw timestamp. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gp_clock.h"
#include "gp_fd.h"
#include "gp_settings.h"
#include "gp_shim.h"

int gp_clock_tsc;

#define CAL_N 64
struct calpoint {
  uint64_t tsc, ns;
  double slope; /* ns per tick since the point before (the first: slope0) */
};

/* Written at start, then by the writer thread only. */
static struct {
  struct calpoint cal[CAL_N];
  int next, count;
  double slope0; /* first estimate, until two points exist */
} C;

struct gp_clock_line gp_clock_line = {UINT64_MAX, 0, 0, 1.0};

/* The line gp_clock_to_ns takes for the newest raw values (see there). */
static void update_line(void) {
  struct gp_clock_line *l = &gp_clock_line;
  const struct calpoint *newest = &C.cal[(C.next + CAL_N - 1) % CAL_N];
  if (!gp_clock_tsc || C.count == 0) {
    *l = (struct gp_clock_line){UINT64_MAX, 0, 0, 1.0};
  } else if (C.count < 2) {
    *l = (struct gp_clock_line){0, newest->tsc, newest->ns, C.slope0};
  } else {
    const struct calpoint *lo = &C.cal[(C.next + CAL_N - 2) % CAL_N];
    *l = (struct gp_clock_line){lo->tsc, lo->tsc, lo->ns, newest->slope};
  }
}

static int tsc_usable(void) {
#if defined(__x86_64__)
  const char *force = getenv("GPUPHASE_CLOCK");
  if (force && strcmp(force, "monotonic") == 0) return 0;
  if (force && *force && strcmp(force, "tsc") != 0)
    gp_warn("ignoring GPUPHASE_CLOCK=%s (expected monotonic or tsc)", force);
  char buf[64] = "";
  int fd = gp_fd_high(open("/sys/devices/system/clocksource/clocksource0/"
                          "current_clocksource", O_RDONLY | O_CLOEXEC));
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
  }
  /* The kernel only keeps "tsc" as clocksource when it found the TSC
   * invariant and synchronised across CPUs. */
  return strncmp(buf, "tsc", 3) == 0;
#else
  return 0;
#endif
}

/* A (tsc, CLOCK_MONOTONIC) pair; the tightest of a few tries, so that a
 * preemption between the reads does not skew the calibration. */
static void sample_pair(uint64_t *tsc, uint64_t *ns) {
#if defined(__x86_64__)
  uint64_t best_gap = UINT64_MAX;
  *tsc = *ns = 0; /* set by the first try; -O3 cannot tell */
  for (int i = 0; i < 5; i++) {
    uint64_t a = __rdtsc();
    uint64_t m = gp_mono_ns();
    uint64_t b = __rdtsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      *tsc = a + (b - a) / 2;
      *ns = m;
    }
  }
#else
  *tsc = *ns = gp_mono_ns();
#endif
}

void gp_clock_start(void) {
  gp_clock_tsc = tsc_usable();
  C.next = C.count = 0;
  C.slope0 = 1.0;
  update_line();
  if (!gp_clock_tsc) return;
  /* a first slope estimate over 0.2 ms, replaced by interpolation between
   * calibration points as soon as the writer has taken its first */
  struct calpoint a, b;
  sample_pair(&a.tsc, &a.ns);
  do sample_pair(&b.tsc, &b.ns);
  while (b.ns - a.ns < 200000);
  C.slope0 = (double)(b.ns - a.ns) / (double)(b.tsc - a.tsc);
  a.slope = C.slope0;
  C.cal[0] = a;
  C.next = 1;
  C.count = 1;
  update_line();
}

/* Calibration points, one per writer pass: raw TSC values are converted by
 * interpolating between the two points around them, so the error stays at
 * the sampling error (tens of ns) instead of growing with distance. */
void gp_clock_calibrate(void) {
  if (!gp_clock_tsc) return;
  struct calpoint p;
  sample_pair(&p.tsc, &p.ns);
  const struct calpoint *prev = &C.cal[(C.next + CAL_N - 1) % CAL_N];
  if (p.tsc <= prev->tsc) return;
  /* the slope is worked out once here, not at every conversion */
  p.slope = C.count ? (double)(p.ns - prev->ns) / (double)(p.tsc - prev->tsc)
                    : C.slope0;
  C.cal[C.next] = p;
  C.next = (C.next + 1) % CAL_N;
  if (C.count < CAL_N) C.count++;
  update_line();
}

/* raw on the line through a with b's slope (b follows a). */
static uint64_t along(const struct calpoint *a, const struct calpoint *b,
                      uint64_t raw) {
  int64_t d = (int64_t)(raw - a->tsc);
  return a->ns + (uint64_t)(int64_t)((double)d * b->slope);
}

uint64_t gp_clock_to_ns(uint64_t raw) {
  if (!gp_clock_tsc) return raw;
  int n = C.count;
  const struct calpoint *newest = &C.cal[(C.next + CAL_N - 1) % CAL_N];
  if (n < 2) {
    struct calpoint ext = {newest->tsc + 1000000000ull,
                           newest->ns + (uint64_t)(1e9 * C.slope0), C.slope0};
    return along(newest, &ext, raw);
  }
  /* Walk back from the newest point: events are almost always recent. */
  for (int i = 1; i < n; i++) {
    const struct calpoint *hi = &C.cal[(C.next + CAL_N - i) % CAL_N];
    const struct calpoint *lo = &C.cal[(C.next + CAL_N - i - 1) % CAL_N];
    if (raw >= lo->tsc || i == n - 1) return along(lo, hi, raw);
  }
  return newest->ns;
}
