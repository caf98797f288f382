/* Timeline exports: Perfetto's protobuf trace and the Chrome trace-event
 * JSON, written while walking the traces (timeline.h). docs/export.md. */
#ifndef GP_EXPORT_H
#define GP_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "timeline.h"

/* A timeline sink plus what an export needs around it. */
struct gp_xsink {
  struct gp_tl_sink tl;
  /* a note shown in the viewer (at ts); 0 or -1 */
  int (*note)(void *ctx, uint64_t ts, const char *text);
  /* closes what is open; 0 or -1 (write error) */
  int (*finish)(void *ctx);
  void (*free)(void *ctx);
};

/* Both return NULL when out of memory. base: the time written as 0 (Chrome
 * JSON is relative). */
struct gp_xsink *gp_xsink_perfetto(FILE *f);
struct gp_xsink *gp_xsink_chrome(FILE *f, uint64_t base);

/* Bytes per event of each format, measured (docs/export.md): what the
 * size estimate before writing is made from. */
#define GP_EXPORT_PERFETTO_BPE 60
#define GP_EXPORT_CHROME_BPE 260
/* Above this many uncompressed bytes a viewer in a browser struggles. */
#define GP_EXPORT_BIG (500ull * 1000 * 1000)

#endif
