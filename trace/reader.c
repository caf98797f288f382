/* Streaming trace reader: header, frame validation and decompression, and
 * file-order iteration. Time-ordered iteration lives in sorted.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "gp_api.h"
#include "reader_ext.h"
#include "reader_int.h"

/* The oldest format version this reader understands. */
#define OLDEST_READABLE 1u

GPUPHASE_API const char *gpuphase_strerror(int code) {
  switch (code) {
  case GPUPHASE_OK:
    return "success";
  case GPUPHASE_E_IO:
    return "input/output error";
  case GPUPHASE_E_NOT_TRACE:
    return "not a gpuphase trace";
  case GPUPHASE_E_VERSION:
    return "written by a newer, incompatible gpuphase version";
  case GPUPHASE_E_TRUNCATED:
    return "truncated header";
  case GPUPHASE_E_CORRUPT:
    return "corrupt trace";
  case GPUPHASE_E_NOMEM:
    return "out of memory";
  case GPUPHASE_E_ARG:
    return "invalid argument";
  }
  return "unknown error";
}

int gp_reader_fail(gpuphase_reader *r, int code, const char *fmt, ...) {
  if (r->err) return r->err;
  int e = errno;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  errno = e;
  r->err = code;
  return code;
}

/* Callers keep off + n within the size measured at open. */
static int read_at(gpuphase_reader *r, void *buf, size_t n, uint64_t off) {
  if (n == 0) return GPUPHASE_OK;
  if (r->fd < 0) {
    memcpy(buf, r->mem + off, n);
    return GPUPHASE_OK;
  }
  uint8_t *p = buf;
  while (n) {
    ssize_t k = pread(r->fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = EIO; /* the file shrank under us */
      return GPUPHASE_E_IO;
    }
    p += k;
    n -= (size_t)k;
    off += (uint64_t)k;
  }
  return GPUPHASE_OK;
}

static int grow_cbuf(gpuphase_reader *r, size_t n) {
  if (r->ccap >= n) return 0;
  uint8_t *p = realloc(r->cbuf, n);
  if (!p) return -1;
  r->cbuf = p;
  r->ccap = n;
  return 0;
}

/* Checks magic, byte order and versions on the first bytes of the file
 * (avail of them). Returns GPUPHASE_OK or an error, message in r->msg. */
static int check_prefix(gpuphase_reader *r, const uint8_t *h, size_t avail) {
  if (avail == 0)
    return gp_reader_fail(r, GPUPHASE_E_NOT_TRACE,
                          "not a gpuphase trace (empty file)");
  if (avail < GP_MAGIC_LEN)
    return gp_reader_fail(r, GPUPHASE_E_NOT_TRACE,
                          "not a gpuphase trace (only %zu bytes)", avail);
  if (memcmp(h, GP_MAGIC, GP_MAGIC_LEN))
    return gp_reader_fail(r, GPUPHASE_E_NOT_TRACE,
                          "not a gpuphase trace (bad magic)");
  if (avail < GP_HO_HEADER_SIZE + 4)
    return gp_reader_fail(r, GPUPHASE_E_TRUNCATED,
                          "truncated header (file is %zu bytes)", avail);
  uint32_t bom = gp_load32(h + GP_HO_BOM, 0);
  if (bom != GP_BOM && bom != GP_BOM_SWAPPED)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "corrupt header: bad byte-order mark 0x%08" PRIx32,
                          bom);
  r->swap = bom == GP_BOM_SWAPPED;
  uint32_t v = gp_load16(h + GP_HO_VERSION, r->swap);
  uint32_t min = gp_load16(h + GP_HO_MIN_READER, r->swap);
  if (v == 0) /* no version 0 was ever written: damage */
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "corrupt header: format version 0 (versions start "
                          "at 1)");
  if (v < OLDEST_READABLE || min > GPUPHASE_FORMAT_VERSION)
    return gp_reader_fail(r, GPUPHASE_E_VERSION,
                          "format version %" PRIu32
                          " needs a reader of version >= %" PRIu32
                          "; this reader reads versions %u to %u",
                          v, min, OLDEST_READABLE, GPUPHASE_FORMAT_VERSION);
  r->hdr.version = v;
  r->hdr.min_reader = min;
  return GPUPHASE_OK;
}

/* Header strings, each u32 length + bytes, copied NUL-terminated into one
 * block owned by the reader (a block of header_size bytes holds them all:
 * each string's 4-byte length prefix is more than its terminator). The
 * four strings of version 1 are required; what follows them (version 2:
 * run_id, step_items) is read where header_size leaves room for it, so a
 * version-1 header simply ends after version_str. */
static int parse_strings(gpuphase_reader *r, const uint8_t *h, uint32_t size) {
  const char **dst[GP_HDR_STRINGS_V1 + 1] = {
      &r->hdr.host, &r->hdr.cmdline, &r->hdr.clock, &r->hdr.version_str,
      &r->hdr.run_id};
  r->hdr.run_id = "";
  r->hdr.step_items = 0;
  r->hdr_strings = malloc(size);
  if (!r->hdr_strings)
    return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  char *out = r->hdr_strings;
  uint32_t pos = GP_HO_STRINGS;
  for (int i = 0; i < GP_HDR_STRINGS_V1 + 1; i++) {
    if (i == GP_HDR_STRINGS_V1 && size - pos < 4) return GPUPHASE_OK;
    uint32_t len = gp_load32(h + pos, r->swap);
    if (len > size - pos - 4)
      return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                            "corrupt header: string %d overruns the header",
                            i + 1);
    memcpy(out, h + pos + 4, len);
    out[len] = 0;
    *dst[i] = out;
    out += len + 1;
    pos += 4 + len;
    if (i < GP_HDR_STRINGS_V1 - 1 && pos > size - 4)
      return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                            "corrupt header: string %d overruns the header",
                            i + 2);
  }
  if (size - pos >= 8) r->hdr.step_items = gp_load64(h + pos, r->swap);
  return GPUPHASE_OK;
}

static void parse_fixed(gpuphase_reader *r, const uint8_t *h) {
  struct gpuphase_header *o = &r->hdr;
  int s = r->swap;
  o->flags = gp_load32(h + GP_HO_FLAGS, s);
  o->pid = (int64_t)gp_load64(h + GP_HO_PID, s);
  o->ppid = (int64_t)gp_load64(h + GP_HO_PPID, s);
  o->rank = (int64_t)gp_load64(h + GP_HO_RANK, s);
  o->local_rank = (int64_t)gp_load64(h + GP_HO_LOCAL_RANK, s);
  o->start_mono_ns = gp_load64(h + GP_HO_START_MONO, s);
  o->start_real_ns = gp_load64(h + GP_HO_START_REAL, s);
}

static int read_header(gpuphase_reader *r) {
  uint8_t pre[GP_HDR_MIN];
  size_t avail = r->size < sizeof pre ? (size_t)r->size : sizeof pre;
  if (read_at(r, pre, avail, 0))
    return gp_reader_fail(r, GPUPHASE_E_IO, "read failed: %s", strerror(errno));
  int rc = check_prefix(r, pre, avail);
  if (rc) return rc;
  uint32_t size = gp_load32(pre + GP_HO_HEADER_SIZE, r->swap);
  if (size < GP_HDR_MIN || size > GP_HDR_MAX)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "corrupt header: header size %" PRIu32, size);
  if (r->size < size)
    return gp_reader_fail(r, GPUPHASE_E_TRUNCATED,
                          "truncated header (file is %" PRIu64
                          " bytes, header %" PRIu32 ")",
                          r->size, size);
  uint8_t *h = malloc(size);
  if (!h) return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  rc = read_at(r, h, size, 0);
  if (rc)
    rc = gp_reader_fail(r, GPUPHASE_E_IO, "read failed: %s", strerror(errno));
  else
    rc = parse_strings(r, h, size);
  if (!rc) parse_fixed(r, h);
  free(h);
  r->hdr.header_size = size;
  r->next_off = size;
  r->off = size;
  return rc;
}

/* A cut frame header is a truncation only while its bytes so far agree
 * with a frame magic; anything else is damage. */
int gp_read_frame_header(gpuphase_reader *r, uint64_t off,
                         struct gp_frame_info *fi) {
  uint64_t left = r->size - off;
  if (left == 0) return GP_FRAME_END;
  uint8_t h[GP_FRAME_HDR];
  size_t n = left < GP_FRAME_HDR ? (size_t)left : GP_FRAME_HDR;
  if (read_at(r, h, n, off))
    return gp_reader_fail(r, GPUPHASE_E_IO, "frame at byte %" PRIu64 ": %s",
                          off, strerror(errno));
  if (memcmp(h, GP_FRAME_MAGIC, n < 4 ? n : 4))
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": bad frame magic", off);
  if (n < GP_FRAME_HDR) return GP_FRAME_CUT;
  fi->off = off;
  fi->type = h[GP_FO_TYPE];
  fi->source = gp_load32(h + GP_FO_SOURCE, r->swap);
  fi->csize = gp_load32(h + GP_FO_CSIZE, r->swap);
  fi->usize = gp_load32(h + GP_FO_USIZE, r->swap);
  if (h[GP_FO_TYPE + 1] || h[GP_FO_TYPE + 2] || h[GP_FO_TYPE + 3])
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": reserved bytes not 0",
                          off);
  if (fi->type != GP_FRAME_RECORDS && fi->type != GP_FRAME_SUMMARY &&
      fi->type < GP_FRAME_OPTIONAL_MIN)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": unknown frame type %u",
                          off, fi->type);
  if (fi->csize > GP_FRAME_MAX || fi->usize > GP_FRAME_MAX)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": size %" PRIu32 "/%" PRIu32
                          " exceeds the limit",
                          off, fi->csize, fi->usize);
  if (fi->csize > left - GP_FRAME_HDR) return GP_FRAME_CUT;
  return GP_FRAME_OK;
}

/* Sizes are checked against the zstd frame header before the output
 * buffer grows, so a forged size cannot make us allocate. */
static int check_zstd_header(gpuphase_reader *r,
                             const struct gp_frame_info *fi) {
  unsigned long long n = ZSTD_getFrameContentSize(r->cbuf, fi->csize);
  if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": bad zstd frame header",
                          fi->off);
  if (n != fi->usize)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64
                          ": size mismatch (frame header %" PRIu32
                          ", zstd %llu)",
                          fi->off, fi->usize, n);
  /* byte 4 is the zstd frame header descriptor; bit 2 = content checksum */
  if (fi->csize < 5 || !(r->cbuf[4] & 0x04))
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": no content checksum",
                          fi->off);
  return GPUPHASE_OK;
}

int gp_inflate_frame(gpuphase_reader *r, const struct gp_frame_info *fi,
                     struct gp_cursor *c) {
  if (grow_cbuf(r, fi->csize ? fi->csize : 1))
    return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  if (read_at(r, r->cbuf, fi->csize, fi->off + GP_FRAME_HDR))
    return gp_reader_fail(r, GPUPHASE_E_IO, "frame at byte %" PRIu64 ": %s",
                          fi->off, strerror(errno));
  int rc = check_zstd_header(r, fi);
  if (rc) return rc;
  if (c->cap < fi->usize || !c->buf) {
    free(c->buf);
    c->buf = malloc((size_t)fi->usize + GP_DECODE_PAD);
    c->cap = c->buf ? fi->usize : 0;
    if (!c->buf) return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  }
  size_t n =
      ZSTD_decompressDCtx(r->dctx, c->buf, fi->usize, r->cbuf, fi->csize);
  if (ZSTD_isError(n))
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": zstd: %s", fi->off,
                          ZSTD_getErrorName(n));
  if (n != fi->usize)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": size mismatch", fi->off);
  memset(c->buf + n, 0, GP_DECODE_PAD);
  c->p = c->buf;
  c->end = c->buf + n;
  c->off = fi->off;
  return GPUPHASE_OK;
}

int gp_load_frame(gpuphase_reader *r, const struct gp_frame_info *fi,
                  struct gp_cursor *c) {
  int rc = gp_inflate_frame(r, fi, c);
  if (!rc) gp_dstate_reset(&c->st);
  return rc;
}

void gp_cursor_free(struct gp_cursor *c) {
  free(c->buf);
  c->buf = NULL;
  c->cap = 0;
  c->p = c->end = NULL;
}

int gp_cursor_fail(gpuphase_reader *r, const struct gp_cursor *c,
                   const uint8_t *at) {
  return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                        "frame at byte %" PRIu64
                        ": malformed record at payload offset %zu",
                        c->off, (size_t)(at - c->buf));
}

/* The summary frame must hold exactly one SUMMARY and no other known
 * record; it is small, so it is checked whole when loaded. */
int gp_check_summary(gpuphase_reader *r, const struct gp_cursor *c) {
  struct gp_cursor scan = *c;
  const struct gpuphase_record *rec = NULL;
  uint64_t t;
  int n = 0, rc;
  while ((rc = gp_cursor_next(r, &scan, &rec, &t)) == 1) {
    if (rec->kind != GPUPHASE_REC_SUMMARY || n++)
      return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                            "frame at byte %" PRIu64
                            ": summary frame holds other records",
                            c->off);
    r->summary = rec->u.summary;
  }
  if (rc < 0) return rc;
  if (!n)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT,
                          "frame at byte %" PRIu64 ": empty summary frame",
                          c->off);
  r->have_summary = 1;
  return GPUPHASE_OK;
}

/* Loads the next frame in file order: 1 loaded, 0 at the end (clean or
 * cut), or an error. Unknown optional frame types are stepped over. */
static int next_frame(gpuphase_reader *r) {
  for (;;) {
    struct gp_frame_info fi;
    int rc = gp_read_frame_header(r, r->next_off, &fi);
    if (rc == GP_FRAME_END || rc == GP_FRAME_CUT) {
      r->truncated = rc == GP_FRAME_CUT;
      return 0;
    }
    if (rc < 0) return rc;
    r->off = fi.off;
    r->next_off = fi.off + GP_FRAME_HDR + fi.csize;
    if (fi.type != GP_FRAME_RECORDS && fi.type != GP_FRAME_SUMMARY) continue;
    rc = gp_load_frame(r, &fi, &r->fc);
    if (!rc && fi.type == GP_FRAME_SUMMARY) rc = gp_check_summary(r, &r->fc);
    return rc ? rc : 1;
  }
}

static int next_file_order(gpuphase_reader *r,
                           const struct gpuphase_record **out) {
  for (;;) {
    uint64_t t;
    int rc = r->only ? gp_cursor_next_kept(r, &r->fc, out, &t, r->only)
                     : gp_cursor_next(r, &r->fc, out, &t);
    if (rc < 0) return rc;
    if (rc == 1) {
      const struct gpuphase_record *rec = *out;
      if (rec->kind != GPUPHASE_REC_STRING) return 1;
      if (gp_strtab_add(&r->strings, rec->u.string.id, rec->u.string.text.data,
                        rec->u.string.text.len))
        return gp_strtab_fail(r);
      return 1;
    }
    rc = next_frame(r);
    if (rc <= 0) return rc;
  }
}

int gp_reader_only(gpuphase_reader *r, uint64_t kinds) {
  if (!r || (r->sorted && !gp_sorted_unstarted(r))) return GPUPHASE_E_ARG;
  r->only = kinds ? kinds | (uint64_t)1 << GPUPHASE_REC_STRING : 0;
  return GPUPHASE_OK;
}

int gp_reader_set_threads(gpuphase_reader *r, int threads) {
  return r && !r->err && r->sorted ? gp_sorted_set_threads(r, threads) : 0;
}

int gp_reader_next_ref(gpuphase_reader *r, const struct gpuphase_record **out) {
  if (!r || !out) return GPUPHASE_E_ARG;
  if (r->err) return r->err;
  return r->sorted ? gp_sorted_next(r, out) : next_file_order(r, out);
}

/* Only the kind's own struct is copied: the union is as large as the
 * widest kind. */
GPUPHASE_API int gpuphase_reader_next(gpuphase_reader *r,
                                      struct gpuphase_record *out) {
  const struct gpuphase_record *rec = NULL;
  int rc = out ? gp_reader_next_ref(r, &rec) : GPUPHASE_E_ARG;
  if (rc == 1) {
    out->kind = rec->kind;
    memcpy(&out->u, &rec->u, gp_kind_size(rec->kind));
  }
  return rc;
}

/* Does a record of this kind hold a blob? (STRING's is re-pointed.) */
static int has_blob(uint32_t kind) {
  switch (kind) {
#define GP_K(num, UP, low, FIELDS) \
  case num:                        \
    return 0 FIELDS(GP_B);
#define GP_B(code, type, name) || #code[0] == 'B'
    GPUPHASE_RECORD_KINDS(GP_K)
#undef GP_B
#undef GP_K
  default:
    return 0;
  }
}

GPUPHASE_API int gpuphase_reader_read(gpuphase_reader *r,
                                      struct gpuphase_record *out, size_t cap,
                                      size_t *n) {
  if (!n) return GPUPHASE_E_ARG;
  *n = 0;
  if (!r || !out) return GPUPHASE_E_ARG;
  while (*n < cap) {
    int rc = gpuphase_reader_next(r, &out[*n]);
    if (rc < 0) return *n ? 1 : rc;
    if (rc == 0) break;
    struct gpuphase_record *rec = &out[(*n)++];
    if (rec->kind == GPUPHASE_REC_STRING) {
      const struct gp_strent *e = gp_strtab_get(&r->strings, rec->u.string.id);
      if (e) rec->u.string.text.data = e->s;
    } else if (has_blob(rec->kind)) {
      break;
    }
  }
  return *n > 0;
}

GPUPHASE_API void gpuphase_reader_close(gpuphase_reader *r) {
  if (!r) return;
  gp_sorted_free(r->sorted); /* first: it joins workers that read r->fd */
  if (r->fd >= 0) close(r->fd);
  gp_cursor_free(&r->fc);
  gp_strtab_free(&r->strings);
  ZSTD_freeDCtx(r->dctx);
  free(r->cbuf);
  free(r->hdr_strings);
  free(r);
}

static gpuphase_reader *finish_open(gpuphase_reader *r, int mode, int *err,
                                    char *msg, size_t msglen) {
  int rc = r->dctx ? GPUPHASE_OK
                   : gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  if (!rc) rc = read_header(r);
  if (!rc && mode == GP_OPEN_SORTED) rc = gp_sorted_init(r);
  if (err) *err = rc;
  if (!rc) return r;
  if (msg && msglen) snprintf(msg, msglen, "%s", r->msg);
  int e = errno;
  gpuphase_reader_close(r);
  errno = e;
  return NULL;
}

static gpuphase_reader *new_reader(void) {
  gpuphase_reader *r = calloc(1, sizeof *r);
  if (r) {
    r->fd = -1;
    r->dctx = ZSTD_createDCtx();
  }
  return r;
}

static gpuphase_reader *open_failed(int code, int *err, char *msg,
                                    size_t msglen, const char *text) {
  int e = errno;
  if (err) *err = code;
  if (msg && msglen) snprintf(msg, msglen, "%s", text);
  errno = e;
  return NULL;
}

/* pread needs a regular file: directories and pipes are named plainly.
 * O_NONBLOCK: a FIFO without a writer would block open() for ever. */
static int open_regular(const char *path, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  int e = 0;
  if (fstat(fd, &st))
    e = errno;
  else if (!S_ISREG(st.st_mode))
    e = S_ISDIR(st.st_mode) ? EISDIR : ESPIPE;
  if (e) {
    close(fd);
    errno = e;
    return -1;
  }
  *size = (uint64_t)st.st_size;
  return fd;
}

gpuphase_reader *gp_reader_open_ex(const char *path, int mode, int *err,
                                   char *msg, size_t msglen) {
  if (!path) return open_failed(GPUPHASE_E_ARG, err, msg, msglen, "no path");
  uint64_t size = 0;
  int fd = open_regular(path, &size);
  if (fd < 0)
    return open_failed(GPUPHASE_E_IO, err, msg, msglen,
                       errno == ESPIPE ? "not a regular file (a trace is read "
                                         "from a file, not a pipe or a device)"
                                       : strerror(errno));
  gpuphase_reader *r = new_reader();
  if (!r) {
    close(fd);
    return open_failed(GPUPHASE_E_NOMEM, err, msg, msglen, "out of memory");
  }
  r->fd = fd;
  r->size = size;
  return finish_open(r, mode, err, msg, msglen);
}

gpuphase_reader *gp_reader_open_mem(const void *data, size_t len, int mode,
                                    int *err, char *msg, size_t msglen) {
  if (!data && len)
    return open_failed(GPUPHASE_E_ARG, err, msg, msglen, "no data");
  gpuphase_reader *r = new_reader();
  if (!r)
    return open_failed(GPUPHASE_E_NOMEM, err, msg, msglen, "out of memory");
  r->mem = data;
  r->size = len;
  return finish_open(r, mode, err, msg, msglen);
}

GPUPHASE_API gpuphase_reader *gpuphase_reader_open(const char *path, int *err) {
  return gp_reader_open_ex(path, GP_OPEN_FILE_ORDER, err, NULL, 0);
}

GPUPHASE_API gpuphase_reader *gpuphase_reader_open_sorted(const char *path,
                                                          int *err) {
  return gp_reader_open_ex(path, GP_OPEN_SORTED, err, NULL, 0);
}

GPUPHASE_API const struct gpuphase_header *
gpuphase_reader_header(const gpuphase_reader *r) {
  return r ? &r->hdr : NULL;
}

GPUPHASE_API const char *gpuphase_reader_string(const gpuphase_reader *r,
                                                uint64_t id) {
  if (!r) return NULL;
  if (id == 0) return "";
  const struct gp_strent *e = gp_strtab_get(&r->strings, id);
  return e ? e->s : NULL;
}

int gp_reader_string_blob(const gpuphase_reader *r, uint64_t id,
                          gpuphase_blob *out) {
  const struct gp_strent *e = r && id ? gp_strtab_get(&r->strings, id) : NULL;
  if (!e) return 0;
  out->data = e->s;
  out->len = e->len;
  return 1;
}

GPUPHASE_API int gpuphase_reader_truncated(const gpuphase_reader *r) {
  return r ? r->truncated : 0;
}

GPUPHASE_API int gpuphase_reader_summary(const gpuphase_reader *r,
                                         struct gpuphase_summary *out) {
  if (!r || !r->have_summary) return 0;
  if (out) *out = r->summary;
  return 1;
}

GPUPHASE_API const char *gpuphase_reader_errmsg(const gpuphase_reader *r) {
  if (!r) return "no reader";
  return r->err ? r->msg : "";
}

GPUPHASE_API uint64_t gpuphase_reader_offset(const gpuphase_reader *r) {
  return r ? r->off : 0;
}

GPUPHASE_API uint64_t gpuphase_reader_file_size(const gpuphase_reader *r) {
  return r ? r->size : 0;
}
