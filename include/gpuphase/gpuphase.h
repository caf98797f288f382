/* gpuphase phase API: mark regions of your program ("data", "forward",
 * "step") so the report breaks GPU time down per phase, and count what
 * each step produced (gpuphase_step_items) for throughput per step.
 *
 * Link with -lgpuphase-api (a tiny library whose functions do nothing).
 * When the program runs under gpuphase (LD_PRELOAD=libgpuphase.so or
 * `gpuphase run`), the preloaded library's definitions take precedence and
 * the ranges are recorded. Without it, each call costs a function call.
 *
 * Ranges are per thread and nest: every push is closed by the next pop on
 * the same thread. Names are copied (up to 255 bytes, cut before a UTF-8
 * character that would not fit whole); the pointer need not outlive the
 * call. A range pushed before the process's first CUDA call and still open
 * then (an outer "train" range around the setup) is kept, with its time,
 * and recorded once the thread records (up to 8 per thread); one pushed and
 * popped before it is not recorded. */
#ifndef GPUPHASE_H
#define GPUPHASE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a range named `name` on the calling thread. Returns 0 when recorded
 * (or kept until the first CUDA call), 1 when not recorded (not
 * profiling, buffer full). */
int gpuphase_range_push(const char *name);

/* Closes the innermost open range of the calling thread. Same returns. */
int gpuphase_range_pop(void);

/* Counts n items (samples, tokens, frames) for the step under way: the
 * items counted on any thread while a step is open are that step's; may be
 * called several times per step, the counts add up. Without calls, GPUPHASE_STEP_ITEMS=N gives every step N items.
 * Same returns as gpuphase_range_push. */
int gpuphase_step_items(uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
