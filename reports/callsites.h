/* Call sites: the stacks (FRAME, MODULE and PYCODE records) of the CUDA
 * calls that made the GPU wait. The attribution sweep feeds a collector
 * (gp_cs) through a few hooks: every CUDA call, every stretch of device time
 * it books, a device added, an async copy found blocking. At the end the
 * rows, keyed by raw stack and API, are symbolised (symbolize.h), collapsed
 * to the user's code and merged into the sites of a gp_cs_res.
 * Rules and the worked example: docs/callsites.md. */
#ifndef GP_CALLSITES_H
#define GP_CALLSITES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuphase/trace.h"
#include "hist.h"

/* One frame as shown. Strings are malloc'd; file NULL and line 0 unknown. */
struct gp_cs_frame {
  char *function; /* demangled; "module+0xoffset" when not symbolised */
  char *file;
  int64_t line;
  char *module; /* path of the ELF object, or of the Python file */
  int python;
  int inlined; /* an inlined call (native), shown at its call line */
};

enum { GP_CS_BLOCKING, GP_CS_IDLE_END, GP_CS_LAUNCH, GP_CS_KIND_N };
extern const char *const gp_cs_kind_key[GP_CS_KIND_N];

struct gp_cs_site {
  char *api; /* the CUDA call, the site's title */
  size_t nframes;
  struct gp_cs_frame *frames; /* innermost first: what --frames asked */
  size_t title;               /* the frame named in one line (the user's) */
  int truncated;              /* the stack was deeper than captured */
  /* blocking */
  uint64_t count, blocked_ns, idle_ns; /* idle_ns: sync_idle explained */
  struct gp_hist dur;
  /* idle_end: host_wait gaps this call ended, and gaps right after it */
  uint64_t gaps, gap_ns, after_ns;
  uint64_t launches;
};

struct gp_cs_res {
  int has_stacks; /* the trace holds call-site records */
  int frames_all;
  size_t n;
  struct gp_cs_site *v;
  /* totals over the devices of the result, and what no stack names */
  uint64_t sync_idle_ns, sync_uncaptured_ns;
  uint64_t host_wait_ns, host_wait_uncaptured_ns;
  uint64_t blocked_ns, blocked_uncaptured_ns, calls_uncaptured;
  uint64_t launches, launches_uncaptured;
  size_t modules_read; /* modules whose ELF was looked for: of shown frames */
};

void gp_cs_res_free(struct gp_cs_res *r); /* accepts NULL; frees r too */
/* Adds the sites of s into d (same API and frames: one site). 0 or -1. */
int gp_cs_res_merge(struct gp_cs_res *d, const struct gp_cs_res *s);
/* The value a site is ranked by for kind k (GPU idle, then blocked). */
uint64_t gp_cs_weight(const struct gp_cs_site *s, int kind, int blocked);
/* The frame a site is named by in one line; NULL: none. */
const struct gp_cs_frame *gp_cs_title(const struct gp_cs_site *s);
/* A frame as one line: "train.py:142 (step)", "f (a.c:10)", "lib+0x1f". */
void gp_cs_frame_str(const struct gp_cs_frame *f, char *out, size_t cap);

/* ---- the collector, fed by the attribution engine ---- */

typedef struct gp_cs gp_cs;
#define GP_CS_NODEV UINT32_MAX

gp_cs *gp_cs_new(void); /* NULL: no memory */
void gp_cs_free(gp_cs *c);
/* MODULE, PYCODE and FRAME records (other kinds are ignored). 0 or -1. */
int gp_cs_meta(gp_cs *c, const struct gpuphase_record *rec);
/* A CUDA call from s to end on device slot dev (GP_CS_NODEV: any). blocking:
 * the engine counts it blocking now; timed: it is on the timeline (not
 * dropped as late). now: the sweep time. Needed for every call with a
 * stack, and for those without once a FRAME record was seen. */
void gp_cs_call(gp_cs *c, uint64_t stack, uint32_t api, uint32_t dev,
                uint64_t s, uint64_t end, int blocking, int launch, int timed,
                uint64_t now);
/* An async copy decided blocking at `now`: its duration counts as blocked,
 * idle0/idle are the sync idle it explained on slot 0 / the other slots
 * while undecided; open: it has not returned yet. */
void gp_cs_late_block(gp_cs *c, uint64_t stack, uint32_t api, uint32_t dev,
                      uint64_t start, uint64_t end, uint64_t now, int open,
                      uint64_t idle0, uint64_t idle);
/* [from, to) of device slot booked as category cat (enum gp_cat); now: the
 * sweep time. */
void gp_cs_seg(gp_cs *c, uint32_t slot, int cat, uint64_t from, uint64_t to,
               uint64_t now);
/* Slot `slot` was added as a copy of slot 0. */
void gp_cs_dev_added(gp_cs *c, uint32_t slot);
int gp_cs_oom(const gp_cs *c);

/* What the engine counted in all: what no site explains of it is "not
 * captured" (calls without a stack are not told one by one). */
struct gp_cs_totals {
  uint64_t sync_idle, host_wait; /* of the result's devices */
  uint64_t blocked, calls;       /* blocking calls: time, count */
  uint64_t launches;
};

/* Resolves, collapses and merges the rows. real_devices: the result's
 * devices are slots 1.. (else slot 0 alone). str: the trace's strings;
 * api: the name of an API index. NULL: no memory. */
typedef const char *(*gp_cs_str_fn)(void *ctx, uint64_t id);
struct gp_cs_res *gp_cs_finish(gp_cs *c, int frames_all, int real_devices,
                               const struct gp_cs_totals *tot, gp_cs_str_fn str,
                               gp_cs_str_fn api, void *ctx);

/* A symbol's name as a frame shows it (malloc'ed; NULL when out of
 * memory): without a symbol version ("memcpy@@GLIBC_2.14" -> "memcpy"),
 * demangled and shortened. */
char *gp_cs_fn_name(const char *raw);

#endif
