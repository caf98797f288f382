#include "render.h"

#include <string.h>

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
