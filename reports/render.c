#include "render.h"

#include <stdint.h>
#include <string.h>

#include "job.h"

const struct gp_renderer gp_renderers[] = {
    {"text", gp_render_text},
    {"json", gp_render_json},
    {"html", gp_render_html},
    {"folded", gp_render_folded},
    {NULL, NULL},
};

const struct gp_renderer *gp_renderer_find(const char *name) {
  for (const struct gp_renderer *r = gp_renderers; r->name; r++)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}

size_t gp_render_shown(const struct gp_report_set *s,
                       const struct gp_render_opts *ro, size_t *idx,
                       int *by_job) {
  size_t show = ro && ro->procs ? ro->procs
                : s->job && s->n > GP_TEXT_JOB_PROCS ? GP_TEXT_JOB_PROCS
                                                     : SIZE_MAX;
  int job = show < s->n && s->job && s->job->nranks == s->n;
  if (show > s->n) show = s->n;
  for (size_t i = 0; i < show; i++)
    idx[i] = job ? s->job->r[i].proc : i;
  if (by_job) *by_job = job;
  return show;
}
