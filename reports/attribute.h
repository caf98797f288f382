/* The attribution engine: one streaming sweep over the records of one
 * process, in the order gpuphase_reader_open_sorted yields them (metadata
 * first, then timed records by ascending start). Memory is bounded by the
 * number of devices, threads, streams, distinct names and concurrently open
 * intervals, never by the number of events. Rules: docs/attribution.md. */
#ifndef GP_ATTRIBUTE_H
#define GP_ATTRIBUTE_H

#include "gpuphase/trace.h"
#include "report.h"

typedef struct gp_attr gp_attr;

gp_attr *gp_attr_new(const struct gp_report_opts *o); /* NULL: no memory */
void gp_attr_free(gp_attr *a);                        /* accepts NULL */

/* Takes one record (blob contents are copied where kept). Returns 0, or -1
 * when out of memory (the engine is then unusable). */
int gp_attr_feed(gp_attr *a, const struct gpuphase_record *rec);

/* gp_attr_feed of recs[0..n) in turn (a loop of the engine's own). */
int gp_attr_feed_n(gp_attr *a, const struct gpuphase_record *recs, size_t n);

/* gp_attr_feed with the engine as a void pointer: a callback for
 * gp_reader_each_sorted (reader_ext.h). */
int gp_attr_feed_cb(void *a, const struct gpuphase_record *rec);

/* What the records fed so far say beside the attribution: events whose
 * trace writes failed (LOST records of source 2: a full disk), and the
 * METRIC and SAMPLER records (measured counters to read, measured.h). */
uint64_t gp_attr_records(const gp_attr *a); /* records fed */
uint64_t gp_attr_unwritten(const gp_attr *a);
uint64_t gp_attr_meas_records(const gp_attr *a);

/* Ends the sweep at the last recorded event and returns the result (owned
 * by the caller, gp_res_free), derived fields included; NULL when out of
 * memory. The engine can only be freed afterwards. */
struct gp_proc_res *gp_attr_finish(gp_attr *a);

/* Per-step detail with the steps found alone (step_detail without --step
 * and --warmup) is gathered by step set version, at most this many
 * entries (0: the default, 2 Mi entries of 32 bytes) per process; past it
 * the report reads the trace a second time. For tests: not thread-safe. */
void gp_steps_glog_cap(size_t n);

#endif
