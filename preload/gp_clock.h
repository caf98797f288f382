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

#endif
