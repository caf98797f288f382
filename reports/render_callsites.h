/* Call sites in the renderers (render_callsites.c). */
#ifndef GP_RENDER_CALLSITES_H
#define GP_RENDER_CALLSITES_H

#include <stdio.h>

#include "jsonw.h"
#include "render.h"

/* 1 when the result holds call-site records */
int gp_cs_present(const struct gp_proc_res *r);
/* The text section "Where the host waits" (nothing without records). */
void gp_cs_text(FILE *f, const struct gp_proc_res *r, const char *bold,
                const char *off, size_t top);
/* Said once per report when no trace holds call-site records. */
void gp_cs_text_hint(FILE *f);
/* "callsites" (always, [] without records) and "callsites_totals". */
void gp_cs_json(struct gp_json *j, const struct gp_proc_res *r);
void gp_cs_html(FILE *f, const struct gp_proc_res *r, size_t top,
                void (*esc)(FILE *, const char *));

#endif
