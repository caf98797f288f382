/* Reader internals shared by reader.c (header, frames, file order),
 * sorted.c (time-ordered merge) and strtab.c. */
#ifndef GP_TRACE_READER_INT_H
#define GP_TRACE_READER_INT_H

#include <stdint.h>

#include <zstd.h>

#include "codec.h"
#include "gpuphase/trace.h"

/* read_frame_header result besides error codes */
enum { GP_FRAME_OK = 1, GP_FRAME_END = 0, GP_FRAME_CUT = 2 };

struct gp_frame_info {
  uint64_t off; /* of the frame header */
  uint32_t csize, usize, source;
  uint8_t type;
};

/* The decoded payload of one frame and the position in it. buf holds
 * GP_DECODE_PAD zero bytes past the payload, for the decoder's word loads. */
struct gp_cursor {
  uint8_t *buf;
  size_t cap;
  const uint8_t *p, *end;
  uint64_t off; /* frame offset, for messages */
  struct gp_dstate st;
};

struct gp_strent {
  uint64_t id;
  const char *s; /* NUL-terminated copy; NULL: empty slot */
  uint64_t len;
};

struct gp_strtab {
  struct gp_strent *t;
  size_t mask, count;
  struct gp_strchunk *chunks;
  uint64_t cost; /* bytes of text and table so far, against GP_STRINGS_MAX */
  int full;      /* an add was refused for GP_STRINGS_MAX */
};

/* The string table's memory limit: a crafted file can define strings (or
 * one id again and again) far beyond its own size. */
#define GP_STRINGS_MAX (512ull << 20)

/* GPUPHASE_OK or GPUPHASE_E_NOMEM (also past GP_STRINGS_MAX: st->full). */
int gp_strtab_add(struct gp_strtab *st, uint64_t id, const char *s,
                  uint64_t len);
const struct gp_strent *gp_strtab_get(const struct gp_strtab *st, uint64_t id);
void gp_strtab_free(struct gp_strtab *st);

struct gp_sorted;

struct gpuphase_reader {
  int fd; /* -1 when reading from memory */
  const uint8_t *mem;
  uint64_t size;
  int swap; /* the file was written with the other byte order */
  struct gpuphase_header hdr;
  char *hdr_strings;
  int err; /* sticky once set */
  char msg[256];
  int truncated;
  int have_summary;
  struct gpuphase_summary summary;
  ZSTD_DCtx *dctx;
  uint8_t *cbuf; /* compressed payload scratch */
  size_t ccap;
  struct gp_strtab strings;
  uint64_t off;      /* frame of the record last returned */
  uint64_t next_off; /* file order: next frame header */
  struct gp_cursor fc;
  uint64_t only; /* the kinds handed out (0: all), see gp_reader_only */
  struct gp_sorted *sorted; /* NULL in file order */
};

int gp_reader_fail(gpuphase_reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The failure of a gp_strtab_add on r->strings. */
int gp_strtab_fail(gpuphase_reader *r);
int gp_read_frame_header(gpuphase_reader *r, uint64_t off,
                         struct gp_frame_info *fi);
/* Reads, checks and decompresses the frame into c->buf (grown when too
 * small), with c->p at its first record; gp_load_frame also resets the
 * decoding state, gp_inflate_frame leaves it (to resume a frame). */
int gp_load_frame(gpuphase_reader *r, const struct gp_frame_info *fi,
                  struct gp_cursor *c);
int gp_inflate_frame(gpuphase_reader *r, const struct gp_frame_info *fi,
                     struct gp_cursor *c);
int gp_check_summary(gpuphase_reader *r, const struct gp_cursor *c);
int gp_cursor_fail(gpuphase_reader *r, const struct gp_cursor *c,
                   const uint8_t *at);

/* Next known record of the frame: 1 (*out points into c->st, valid until
 * the next record of c is decoded; *start set for timed kinds), 0 at the
 * end of the frame, or an error. */
static inline int gp_cursor_next(gpuphase_reader *r, struct gp_cursor *c,
                                 const struct gpuphase_record **out,
                                 uint64_t *start) {
  while (c->p < c->end) {
    int k = gp_decode_next(&c->p, c->end, &c->st, start);
    if (__builtin_expect(k > 0, 1)) {
      *out = &c->st.last[k];
      return 1;
    }
    if (k < 0) return gp_cursor_fail(r, c, c->p); /* left there */
  }
  return 0;
}
/* gp_cursor_next handing out only the kinds of keep (gp_decode_kept). */
static inline int gp_cursor_next_kept(gpuphase_reader *r, struct gp_cursor *c,
                                      const struct gpuphase_record **out,
                                      uint64_t *start, uint64_t keep) {
  while (c->p < c->end) {
    int k = gp_decode_kept(&c->p, c->end, &c->st, start, keep);
    if (k > 0) {
      *out = &c->st.last[k];
      return 1;
    }
    if (k < 0) return gp_cursor_fail(r, c, c->p); /* left there */
  }
  return 0;
}
void gp_cursor_free(struct gp_cursor *c);

int gp_sorted_init(gpuphase_reader *r);
int gp_sorted_next(gpuphase_reader *r, const struct gpuphase_record **out);
void gp_sorted_free(struct gp_sorted *s);
/* Decompression and decoding ahead on threads - 1 workers (at most 4),
 * before the first record is read; the workers started (0: none, all
 * done here). */
int gp_sorted_set_threads(gpuphase_reader *r, int threads);
/* Nothing merged yet and no workers started (gp_reader_only may be set). */
int gp_sorted_unstarted(const gpuphase_reader *r);
/* Frames the merge took from the workers so far, and (*decoded, unless
 * NULL) how many of them with records decoded ahead (tests). */
uint64_t gp_sorted_served(gpuphase_reader *r, uint64_t *decoded);
/* Records of the frames decoded ahead (so far) that the workers left to
 * the merge to decode in place. */
uint64_t gp_sorted_inplace(gpuphase_reader *r);

#endif
