/* The timeline of the HTML report: what one process did over time, in a
 * size bounded by a budget of events, not by the trace. Collected by one
 * more read of the trace after the analysis (only when the HTML format is
 * rendered), written as JSON for the page's timeline panel. Layout and
 * JSON: docs/report-html.md, "Timeline". */
#ifndef GP_HTML_TIMELINE_H
#define GP_HTML_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GP_HTL_BUDGET 20000 /* events in full detail, by default */
#define GP_HTL_BUCKETS 600  /* columns of the aggregated view */
#define GP_HTL_MAX_ROWS 256 /* host threads + GPU streams shown */

struct gp_htl_opts {
  uint64_t budget;   /* events kept in full detail; 0: GP_HTL_BUDGET */
  int window;        /* from/to given (--html-detail) */
  uint64_t from, to; /* offsets from the start of the process's window */
};

/* Kinds of timeline events, in the order of their JSON codes. */
enum gp_htl_kind {
  GP_HTL_API,
  GP_HTL_KERNEL,
  GP_HTL_MEMCPY,
  GP_HTL_MEMSET,
  GP_HTL_SYNC,
  GP_HTL_RANGE,
  GP_HTL_KIND_N
};

struct gp_timeline;
struct gp_proc_res;

/* Reads the trace at path again and collects the timeline of r (its
 * analysed result: window and steps). NULL with a one-line message in err
 * when the file cannot be read or memory runs out. */
struct gp_timeline *gp_htl_collect(const char *path, const struct gp_proc_res *r,
                                  const struct gp_htl_opts *o, char *err,
                                  size_t errlen);
void gp_htl_free(struct gp_timeline *t); /* accepts NULL */
struct gp_report_set;
struct gp_render_opts;
/* The timelines of the process sections an HTML page of s shows
 * (gp_render_shown), those not collected yet, paths[i] being the trace of
 * s->procs[i], on `threads` threads. 0, or -1 with the message of the
 * first failure in the order shown in err. */
int gp_htl_collect_shown(const struct gp_report_set *s,
                         const struct gp_render_opts *ro, char *const *paths,
                         const struct gp_htl_opts *o, int threads, char *err,
                         size_t errlen);

/* The JSON of the timeline (every string escaped so that no '<', '>' or
 * '&' appears: safe inside a <script> element). */
void gp_htl_json(FILE *f, const struct gp_timeline *t);
/* One sentence on what the detail holds and what was left out, plain
 * text (to be escaped by the caller). */
void gp_htl_summary(const struct gp_timeline *t, char *buf, size_t n);

#endif
