/* The raw clock of the hot path (gp_now in gp_shim.h: the TSC where the
 * kernel trusts it, else CLOCK_MONOTONIC) and its conversion to
 * CLOCK_MONOTONIC nanoseconds, which the trace holds. Uses nothing else
 * of preload/. */
#ifndef GP_CLOCK_H
#define GP_CLOCK_H

#include <stdint.h>

/* Picks the raw clock and takes a first slope estimate (0.2 ms) when it is
 * the TSC. At the start of recording, before any event is taken. */
void gp_clock_start(void);

/* One calibration point; the writer thread takes one per pass. */
void gp_clock_calibrate(void);

/* Raw clock value to CLOCK_MONOTONIC ns. Writer thread only. */
uint64_t gp_clock_to_ns(uint64_t raw);

/* The line gp_clock_to_ns takes for every raw value from `from` on (the
 * newest calibration segment, extended past its end): base + (raw -
 * base_raw) * slope. from is UINT64_MAX when the raw clock is not the TSC.
 * Updated by gp_clock_start and gp_clock_calibrate. */
struct gp_clock_line {
  uint64_t from, base_raw, base_ns;
  double slope;
};
extern struct gp_clock_line gp_clock_line;

/* gp_clock_to_ns, with the newest segment inline: events drained in one
 * pass almost all fall in it. Gives exactly gp_clock_to_ns's result; l is
 * gp_clock_line or a copy of it taken since the last calibration (which a
 * loop keeps in registers). */
static inline uint64_t gp_clock_line_ns(const struct gp_clock_line *l,
                                        uint64_t raw) {
  if (__builtin_expect(raw >= l->from, 1))
    return l->base_ns +
           (uint64_t)(int64_t)((double)(int64_t)(raw - l->base_raw) * l->slope);
  return gp_clock_to_ns(raw);
}

static inline uint64_t gp_clock_to_ns_fast(uint64_t raw) {
  return gp_clock_line_ns(&gp_clock_line, raw);
}

#endif
