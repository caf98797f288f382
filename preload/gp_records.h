/* Trace records from what the hot path and CUPTI left: ring events to API,
 * RANGE and ITEMS records, device activity to KERNEL, MEMCPY, MEMSET and
 * SYNC records, with the metadata they need first (API_DEF, THREAD,
 * DEVICE) and the sources that keep each stream in time order. Writer
 * thread only. Uses clock, describe, rings and the trace writer. */
#ifndef GP_RECORDS_H
#define GP_RECORDS_H

#include <stdint.h>

#include "gp_cupti.h"
#include "gp_shim.h"
#include "writer.h"

/* A new trace written to w: allocates the tables (-1: out of memory). */
int gp_records_begin(gp_writer *w);
/* The trace is closed: frees the tables. */
void gp_records_end(void);
/* In a forked child or after a failed exec: a new trace will start. */
void gp_records_reset(void);

/* Appends a record to source (0: metadata). */
void gp_records_add(uint32_t source, const struct gpuphase_record *r);
/* Records handed to the writer so far, whether it took them or not. */
uint64_t gp_records_added(void);
/* The trace writer records go to (NULL once the file failed), for
 * interning strings (stacks.c). */
gp_writer *gp_records_writer(void);
/* Records go to w from now on (NULL: refused, once the file failed). */
void gp_records_retarget(gp_writer *w);

/* Everything published in one thread's ring so far, and its lost count. */
void gp_records_drain(struct gp_tbuf *b);
/* The last drain: also what is published meanwhile; a call under way
 * counted lost. */
void gp_records_settle(struct gp_tbuf *b);
/* One CUPTI activity (a gp_dev_activity_cb). */
void gp_records_activity(const struct gp_dev_activity *a, void *ctx);
/* CUPTI's dropped-record count so far: records the increase as LOST. */
void gp_records_cupti_dropped(uint64_t dropped);
/* n calls made unrecorded while recording started (gp_start_lost), so far:
 * a LOST record (source 3) for those not yet written. */
void gp_records_start_lost(uint64_t n);

/* A source of its own for a producer of timed records (the sampler). */
uint32_t gp_records_new_source(void);
/* Bit d: device d is described (its DEVICE record written). */
uint64_t gp_records_devices(void);

/* Events counted lost in LOST records so far. */
uint64_t gp_records_lost(void);

#endif
