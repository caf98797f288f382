/* Renderers: one entry per output format in gp_renderers (render.c). A new
 * format is one more file and one more table row. */
#ifndef GP_RENDER_H
#define GP_RENDER_H

#include <stdio.h>

#include "report.h"

struct gp_job;

struct gp_render_opts {
  int color;  /* ANSI colour in text output */
  size_t top; /* rows of the kernel/API/phase tables; 0: 15 */
  int weight_blocked; /* folded: weigh by blocked time, not GPU idle */
  size_t procs; /* text and HTML: per-process sections; 0: the default
                   (GP_TEXT_JOB_PROCS with a job view of more ranks, else
                   all), SIZE_MAX: all */
  int from_summaries; /* HTML: merged from summaries, which hold no
                         timeline (the page says so) */
};

/* The per-process sections the text and HTML reports show by default
 * beside a job view: those of the first ranks in the job's order
 * (outliers first). */
#define GP_TEXT_JOB_PROCS 4

/* What is rendered: each process, and everything together (the process
 * itself when there is one, else the sum). */
struct gp_report_set {
  struct gp_proc_res **procs;
  size_t n;
  const struct gp_proc_res *total;
  const struct gp_job *job; /* the job view (job.h); NULL: none */
};

/* The per-process sections shown (gp_render_opts.procs): their indices
 * into s->procs, in order, written to idx (room for s->n); returns how
 * many. All of them in the order given, or the first few: in the job's
 * order when the job view holds every process (*by_job = 1), else in the
 * order given. by_job may be NULL. */
size_t gp_render_shown(const struct gp_report_set *s,
                       const struct gp_render_opts *ro, size_t *idx,
                       int *by_job);

struct gp_renderer {
  const char *name;
  /* 0, or -1 when writing failed */
  int (*render)(FILE *f, const struct gp_report_set *s,
                const struct gp_render_opts *o);
};

int gp_render_text(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *o);
int gp_render_json(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *o);
int gp_render_html(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *o);
/* call sites as folded stacks (render_callsites.c) */
int gp_render_folded(FILE *f, const struct gp_report_set *s,
                     const struct gp_render_opts *o);

extern const struct gp_renderer gp_renderers[]; /* ends with {NULL, NULL} */
const struct gp_renderer *gp_renderer_find(const char *name);

#endif
