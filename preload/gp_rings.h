/* The per-thread rings (struct gp_tbuf in gp_shim.h): who owns which ring,
 * and the doorbell that wakes the writer thread. Used by the lifecycle
 * (shim.c) and the writer (writer.c, records.c); uses only gp_settings.h. */
#ifndef GP_RINGS_H
#define GP_RINGS_H

#include <stdint.h>

#include "gp_shim.h"

/* At the start of recording: arms the thread-exit hook. 0 or -1. */
int gp_rings_start(void);

/* A ring for the calling thread; NULL when none can be had (counted, see
 * gp_rings_lost_no_buffer). */
struct gp_tbuf *gp_ring_create(void);

/* Every ring header that ever existed (push-only list). */
struct gp_tbuf *gp_tbuf_list(void);
/* Writer side, after the last drain of a dead thread's ring. */
void gp_tbuf_free(struct gp_tbuf *b);

/* Calls that were not recorded because their thread got no ring. */
uint64_t gp_rings_lost_no_buffer(void);

/* In a forked child: the parent's rings are copies nobody drains. */
void gp_rings_after_fork(void);

/* The writer thread sleeps on the doorbell; anyone may ring it. */
uint32_t gp_doorbell_seen(void);
void gp_doorbell_wait(uint32_t seen, unsigned ms);
void gp_doorbell_ring(void);

#endif
