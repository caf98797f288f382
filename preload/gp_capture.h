/* The writer's view of stream capture (capture.c): which streams capture
 * a graph, from the API records themselves. Writer thread only. */
#ifndef GP_CAPTURE_H
#define GP_CAPTURE_H

#include <stdint.h>

/* Streams currently in a capture; 0 (the common case) lets the writer
 * skip the lookup for every call that has no capture role. */
extern uint32_t gp_capture_streams;

/* Whether calls of api id play a part in capture (begin, end, event
 * record, stream wait event). */
int gp_capture_has_role(uint32_t id);

/* Notes a call (its api id, thread, stream, aux = event, result) and
 * returns the API flags it gets (GPUPHASE_OP_CAPTURED or 0). */
uint32_t gp_capture_note(uint32_t id, uint32_t thread, uint64_t stream,
                         uint64_t aux, int32_t ret);

void gp_capture_reset(void);

#endif
