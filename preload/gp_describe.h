/* What the trace says about the machine: device properties (asked of the
 * driver the program loaded) and thread names. Uses nothing else of
 * preload/ but the real-function lookup of resolve.c. */
#ifndef GP_DESCRIBE_H
#define GP_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuphase/trace.h"

/* Fills *out (all but the name's string id) and name for device dev, the
 * first time its properties can be read (tried a bounded number of times,
 * until a context exists). Returns 0 when there is nothing to write. */
int gp_describe_device(uint32_t dev, struct gpuphase_device *out, char *name,
                       size_t cap);

/* The kernel's name of thread tid ("" when it exited). */
void gp_describe_thread(pid_t tid, char *name, size_t cap);

/* Forget which devices were described (a new trace starts). */
void gp_describe_reset(void);

#endif
