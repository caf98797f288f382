/* Trace writer: one pending frame per source, cut at frame_bytes, each
 * compressed on its own (no shared zstd context between frames) so that a
 * file cut anywhere loses at most the frames in flight. */
#include "writer.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "encode.h"
#include "format.h"
#include "gp_config.h"

/* The writer thread shares the profiled process's CPUs: level 1 costs
 * least, and on a launch loop it is within 2% of level 3 (2.14 against
 * 2.10 bytes per event, tests/trace/test_compact.c). */
#define ZSTD_LEVEL 1
/* STRING records come from gp_writer_intern, SUMMARY from close. */
#define ADDABLE_KINDS                                                          \
  (GP_KNOWN_KINDS & ~(UINT64_C(1) << GPUPHASE_REC_STRING |                     \
                      UINT64_C(1) << GPUPHASE_REC_SUMMARY))
#define ARENA_CHUNK 4096

struct buf {
  uint8_t *p;
  size_t len, cap;
};

struct source {
  uint32_t id;
  struct buf b;
  uint64_t kinds; /* bit k: the pending frame holds a record of kind k */
  struct gp_delta d;
};

/* Sources map to their index through a hash table; the few sources a
 * program feeds in turn (host threads, streams, which the profiler numbers
 * from 1 up) also sit in a direct-mapped cache indexed by the id's low
 * bits, which spares the table walk on almost every record. */
#define RECENT 16
struct recent {
  uint32_t id, index1; /* index1: index + 1, 0 = empty */
};

struct istr {
  uint64_t hash, id;
  const char *s; /* NULL: empty slot */
  size_t len;
};

/* Interned strings by the address and length they were last passed with.
 * The profiler passes the same pointer for every launch of a kernel (the
 * name CUPTI keeps), so a hit skips hashing; it is still checked against
 * the string's own copy, so that other bytes at a known address (a reused
 * buffer) take the full lookup and get their own id. */
#define ICACHE 256
struct icache {
  const char *ptr, *copy; /* ptr NULL: empty slot */
  size_t len;
  uint64_t id;
};

struct chunk {
  struct chunk *next;
  size_t used, cap;
  char data[];
};

/* Delta slots of start, end and corr per kind that may take the repeat
 * form (has_corr 0: corr points at start, never changed). */
struct rep_slots {
  uint16_t s, e, c;
  uint8_t ok, has_corr;
};
struct gp_writer {
  int fd;
  int err; /* first sticky error, GPUPHASE_OK while healthy */
  int saved_errno;
  size_t frame_bytes;
  int full_only; /* gp_writer_set_repeat(w, 0) */
  struct rep_slots rep[GPUPHASE_REC_MAX];
  ZSTD_CCtx *cctx;
  struct buf out;
  struct source *src; /* src[0] is source 0 (metadata) */
  uint32_t nsrc, srccap;
  uint32_t *slot; /* source id hash -> index + 1, 0 = empty */
  uint32_t slotmask;
  struct recent recent[RECENT];
  struct istr *itab;
  size_t imask, icount;
  struct icache icache[ICACHE];
  struct chunk *arena;
  uint64_t next_id, events, bytes;
};

static int fail(gp_writer *w, int code) {
  if (!w->err) {
    w->err = code;
    w->saved_errno = errno;
  }
  return w->err;
}

static int reserve(struct buf *b, size_t extra) {
  if (b->cap - b->len >= extra) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < extra)
    cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int write_all(gp_writer *w, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(w->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = EIO;
      return fail(w, GPUPHASE_E_IO);
    }
    p += k;
    n -= (size_t)k;
    w->bytes += (uint64_t)k;
  }
  return GPUPHASE_OK;
}

static int write_frame(gp_writer *w, uint8_t type, uint32_t source,
                       const uint8_t *data, size_t len) {
  if (w->err) return w->err;
  size_t bound = ZSTD_compressBound(len);
  w->out.len = 0;
  if (reserve(&w->out, GP_FRAME_HDR + bound)) return fail(w, GPUPHASE_E_NOMEM);
  uint8_t *h = w->out.p;
  size_t c = ZSTD_compress2(w->cctx, h + GP_FRAME_HDR, bound, data, len);
  if (ZSTD_isError(c))
    return fail(w, GPUPHASE_E_NOMEM); /* only allocation can fail here */
  memcpy(h, GP_FRAME_MAGIC, 4);
  h[GP_FO_TYPE] = type;
  h[GP_FO_TYPE + 1] = h[GP_FO_TYPE + 2] = h[GP_FO_TYPE + 3] = 0;
  gp_store32(h + GP_FO_SOURCE, source);
  gp_store32(h + GP_FO_CSIZE, (uint32_t)c);
  gp_store32(h + GP_FO_USIZE, (uint32_t)len);
  return write_all(w, h, GP_FRAME_HDR + c);
}

/* A sequential reader must meet every STRING, THREAD, ... before the
 * records that use them: the metadata frame goes out first. */
static int write_source(gp_writer *w, struct source *s) {
  if (s != &w->src[0] && w->src[0].b.len) {
    int rc = write_source(w, &w->src[0]);
    if (rc) return rc;
  }
  if (!s->b.len) return w->err;
  int rc = write_frame(w, GP_FRAME_RECORDS, s->id, s->b.p, s->b.len);
  s->b.len = 0;
  s->kinds = 0;
  gp_delta_reset(&s->d);
  return rc;
}

static int blobs_valid(const struct gpuphase_record *rec) {
  const struct gp_kind_desc *k = gp_kind_desc(rec->kind);
  for (unsigned i = 0; i < k->nfields; i++) {
    const gpuphase_blob *b =
        (const gpuphase_blob *)((const char *)&rec->u + k->fields[i].offset);
    if (k->fields[i].coding == 'B' && b->len && !b->data) return 0;
  }
  return 1;
}

/* Records with blobs (STRING) and the first record into an empty or
 * nearly full buffer come here: their bound depends on the record. */
static int append_slow(gp_writer *w, struct source *s,
                       const struct gpuphase_record *rec) {
  size_t bound = gp_record_bound(rec);
  if (!bound || bound > GP_FRAME_WRITE_MAX || !blobs_valid(rec))
    return GPUPHASE_E_ARG;
  if (s->b.len + bound > GP_FRAME_WRITE_MAX && write_source(w, s))
    return w->err;
  if (reserve(&s->b, bound)) return fail(w, GPUPHASE_E_NOMEM);
  s->b.len += gp_encode_inline(s->b.p + s->b.len, &s->d, rec, !w->full_only);
  s->kinds |= UINT64_C(1) << rec->kind;
  if (s->b.len >= w->frame_bytes) return write_source(w, s);
  return GPUPHASE_OK;
}

/* One capacity check per record: a record without blobs never needs more
 * than GP_RECORD_FIXED_MAX bytes, and the frame is cut (at frame_bytes,
 * far below GP_FRAME_WRITE_MAX) before the buffer could run short. */
static inline __attribute__((always_inline)) int
append(gp_writer *w, struct source *s, const struct gpuphase_record *rec) {
  struct buf *b = &s->b;
  if (__builtin_expect(gp_kind_in(GP_BLOB_KINDS, rec->kind) ||
                           b->cap - b->len < GP_RECORD_FIXED_MAX,
                       0))
    return append_slow(w, s, rec);
  b->len += gp_encode_inline(b->p + b->len, &s->d, rec, !w->full_only);
  s->kinds |= UINT64_C(1) << rec->kind;
  if (__builtin_expect(b->len >= w->frame_bytes, 0)) return write_source(w, s);
  return GPUPHASE_OK;
}

static uint32_t hash_source(uint32_t id, uint32_t mask) {
  return (uint32_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static int grow_slots(gp_writer *w) {
  uint32_t n = (w->slotmask + 1) * 2;
  uint32_t *slot = calloc(n, sizeof *slot);
  if (!slot) return -1;
  for (uint32_t i = 0; i < w->nsrc; i++) {
    uint32_t h = hash_source(w->src[i].id, n - 1);
    while (slot[h])
      h = (h + 1) & (n - 1);
    slot[h] = i + 1;
  }
  free(w->slot);
  w->slot = slot;
  w->slotmask = n - 1;
  return 0;
}

static int add_source(gp_writer *w, uint32_t id, uint32_t *index) {
  if (w->nsrc >= GP_MAX_SOURCES) return GPUPHASE_E_ARG;
  if (w->nsrc == w->srccap) {
    uint32_t cap = w->srccap ? w->srccap * 2 : 8;
    struct source *src = realloc(w->src, cap * sizeof *src);
    if (!src) return fail(w, GPUPHASE_E_NOMEM);
    w->src = src;
    w->srccap = cap;
  }
  if ((w->nsrc + 1) * 2 > w->slotmask + 1 && grow_slots(w))
    return fail(w, GPUPHASE_E_NOMEM);
  struct source *s = &w->src[w->nsrc];
  memset(s, 0, sizeof *s);
  s->id = id;
  uint32_t h = hash_source(id, w->slotmask);
  while (w->slot[h])
    h = (h + 1) & w->slotmask;
  w->slot[h] = ++w->nsrc;
  *index = w->nsrc - 1;
  return GPUPHASE_OK;
}

static int find_source(gp_writer *w, uint32_t id, uint32_t *index) {
  struct recent *r = &w->recent[id & (RECENT - 1)];
  if (__builtin_expect(r->index1 && r->id == id, 1)) {
    *index = r->index1 - 1;
    return GPUPHASE_OK;
  }
  int rc = GPUPHASE_OK;
  uint32_t h = hash_source(id, w->slotmask);
  while (w->slot[h] && w->src[w->slot[h] - 1].id != id)
    h = (h + 1) & w->slotmask;
  if (w->slot[h])
    *index = w->slot[h] - 1;
  else
    rc = add_source(w, id, index);
  if (rc == GPUPHASE_OK) *r = (struct recent){id, *index + 1};
  return rc;
}

int gp_writer_add(gp_writer *w, uint32_t source,
                  const struct gpuphase_record *rec) {
  if (!w || !rec || !gp_kind_in(ADDABLE_KINDS, rec->kind))
    return GPUPHASE_E_ARG;
  if (w->err) return w->err;
  uint32_t i;
  int rc = find_source(w, source, &i);
  if (rc == GPUPHASE_OK) rc = append(w, &w->src[i], rec);
  if (rc == GPUPHASE_OK) w->events++;
  return rc;
}

int gp_writer_add_n(gp_writer *w, uint32_t source,
                    const struct gpuphase_record *recs, size_t n) {
  if (!w || (!recs && n)) return GPUPHASE_E_ARG;
  if (w->err) return w->err;
  uint32_t i;
  int rc = n ? find_source(w, source, &i) : GPUPHASE_OK;
  for (size_t k = 0; k < n && rc == GPUPHASE_OK; k++) {
    if (!gp_kind_in(ADDABLE_KINDS, recs[k].kind)) return GPUPHASE_E_ARG;
    /* w->src moves only when a source is added, which append does not do */
    rc = append(w, &w->src[i], &recs[k]);
    if (rc == GPUPHASE_OK) w->events++;
  }
  return rc;
}

#define REP_SLOTS_CASE(num, UP, low, FIELDS)                                   \
  case num: {                                                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    unsigned rs = 0 FIELDS(GP_REP_START), re = 0 FIELDS(GP_REP_END),           \
             rc = 0 FIELDS(GP_REP_CORR);                                       \
    if (!rs || !re) return;                                                    \
    *k = (struct rep_slots){(uint16_t)(GP_SLOT_##UP + rs - 1),                 \
                            (uint16_t)(GP_SLOT_##UP + re - 1),                 \
                            (uint16_t)(GP_SLOT_##UP + (rc ? rc : rs) - 1), 1,  \
                            rc != 0};                                          \
    return;                                                                    \
  }
static void rep_slots_of(uint32_t kind, struct rep_slots *k) {
  memset(k, 0, sizeof *k);
  switch (kind) { GPUPHASE_RECORD_KINDS(REP_SLOTS_CASE) }
}

int gp_writer_repeat_begin(gp_writer *w, uint32_t source, uint32_t kind,
                           struct gp_repeat_run *r) {
  if (!w || w->err || w->full_only || kind >= GPUPHASE_REC_MAX ||
      !w->rep[kind].ok)
    return GP_WRITER_NOT_REPEAT;
  uint32_t i;
  if (find_source(w, source, &i) != GPUPHASE_OK) return GP_WRITER_NOT_REPEAT;
  struct source *s = &w->src[i];
  if (!(s->kinds >> kind & 1)) return GP_WRITER_NOT_REPEAT;
  /* room for every record up to the frame's cut and the one that
   * crosses it: the run checks nothing but stop */
  size_t room = w->frame_bytes - s->b.len + 1 + 2 * GP_VARINT_MAX;
  if (s->b.len >= w->frame_bytes || reserve(&s->b, room)) {
    if (s->b.len < w->frame_bytes) fail(w, GPUPHASE_E_NOMEM);
    return GP_WRITER_NOT_REPEAT;
  }
  const struct rep_slots *k = &w->rep[kind];
  const uint64_t *prev = s->d.prev;
  r->p = s->b.p + s->b.len;
  r->stop = s->b.p + w->frame_bytes;
  r->end = prev[k->s] + prev[k->e];
  r->dur = prev[k->e];
  r->corr = r->n = 0;
  r->tag = GP_REPEAT_TAG | kind;
  r->corr_max = k->has_corr;
  r->src = s;
  r->kind = kind;
  return GPUPHASE_OK;
}

int gp_writer_repeat_end(gp_writer *w, struct gp_repeat_run *r) {
  struct source *s = r->src;
  const struct rep_slots *k = &w->rep[r->kind];
  uint64_t *prev = s->d.prev;
  s->b.len = (size_t)(r->p - s->b.p);
  prev[k->s] = r->end - r->dur;
  prev[k->e] = r->dur;
  prev[k->c] += r->corr;
  w->events += r->n;
  if (s->b.len >= w->frame_bytes) return write_source(w, s);
  return w->err;
}

void gp_writer_set_repeat(gp_writer *w, int on) {
  if (w) w->full_only = !on;
}

static inline uint64_t load64(const char *s) {
  uint64_t v;
  memcpy(&v, s, 8);
  return v;
}

static inline uint64_t mix(uint64_t h, uint64_t v, uint64_t k) {
  h = (h ^ v) * k;
  return h ^ (h >> 31);
}

/* Two independent lanes take 16 bytes per step, which halves the serial
 * multiply chain that bounds hashing a long kernel name. */
static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0x6a09e667f3bcc909ull;
  for (; n >= 16; s += 16, n -= 16) {
    a = mix(a, load64(s), 0xff51afd7ed558ccdull);
    b = mix(b, load64(s + 8), 0xc4ceb9fe1a85ec53ull);
  }
  if (n >= 8) {
    a = mix(a, load64(s), 0xff51afd7ed558ccdull);
    s += 8;
    n -= 8;
  }
  uint64_t v = 0;
  memcpy(&v, s, n);
  return mix(a ^ (b * 0x9e3779b97f4a7c15ull), v, 0xc4ceb9fe1a85ec53ull);
}

static inline struct icache *icache_slot(gp_writer *w, const char *s,
                                         size_t len) {
  uint64_t k = ((uint64_t)(uintptr_t)s ^ len) * 0x9e3779b97f4a7c15ull;
  return &w->icache[k >> 56];
}

static const char *arena_copy(gp_writer *w, const char *s, size_t len) {
  struct chunk *c = w->arena;
  if (!c || c->cap - c->used < len) {
    size_t cap = len > ARENA_CHUNK ? len : ARENA_CHUNK;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    /* a big string's own chunk goes second so the current one stays open */
    if (w->arena && len > ARENA_CHUNK) {
      c->next = w->arena->next;
      w->arena->next = c;
    } else {
      c->next = w->arena;
      w->arena = c;
    }
  }
  char *d = c->data + c->used;
  memcpy(d, s, len);
  c->used += len;
  return d;
}

static int grow_strings(gp_writer *w) {
  size_t n = w->imask ? (w->imask + 1) * 2 : 256;
  struct istr *t = calloc(n, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; w->imask && i <= w->imask; i++) {
    if (!w->itab[i].s) continue;
    size_t h = w->itab[i].hash & (n - 1);
    while (t[h].s)
      h = (h + 1) & (n - 1);
    t[h] = w->itab[i];
  }
  free(w->itab);
  w->itab = t;
  w->imask = n - 1;
  return 0;
}

static uint64_t emit_string(gp_writer *w, const char *s, size_t len) {
  struct gpuphase_record rec = {.kind = GPUPHASE_REC_STRING};
  rec.u.string.id = w->next_id + 1;
  rec.u.string.text.data = s;
  rec.u.string.text.len = len;
  if (append(w, &w->src[0], &rec) != GPUPHASE_OK) return 0;
  return ++w->next_id;
}

/* The table entry of s, added (and its STRING record emitted) if new;
 * NULL on failure. */
static const struct istr *intern_slow(gp_writer *w, const char *s, size_t len) {
  if ((w->icount + 1) * 2 > w->imask + 1 && grow_strings(w)) {
    fail(w, GPUPHASE_E_NOMEM);
    return NULL;
  }
  uint64_t h = hash_bytes(s, len);
  size_t i = h & w->imask;
  for (; w->itab[i].s; i = (i + 1) & w->imask) {
    const struct istr *e = &w->itab[i];
    if (e->hash == h && e->len == len && !memcmp(e->s, s, len)) return e;
  }
  const char *copy = arena_copy(w, s, len);
  if (!copy) {
    fail(w, GPUPHASE_E_NOMEM);
    return NULL;
  }
  uint64_t id = emit_string(w, s, len);
  if (!id) return NULL;
  w->itab[i] = (struct istr){h, id, copy, len};
  w->icount++;
  return &w->itab[i];
}

uint64_t gp_writer_intern(gp_writer *w, const char *s, size_t len) {
  if (!w || !s || !len || w->err) return 0;
  struct icache *c = icache_slot(w, s, len);
  if (c->ptr == s && c->len == len && !memcmp(c->copy, s, len)) return c->id;
  const struct istr *e = intern_slow(w, s, len);
  if (!e) return 0;
  *c = (struct icache){s, e->s, len, e->id};
  return e->id;
}

static size_t clamp_len(const char *s) {
  size_t n = s ? strlen(s) : 0;
  return n > GP_HDR_STRING_MAX ? GP_HDR_STRING_MAX : n;
}

static uint8_t *put_string(uint8_t *p, const char *s, size_t len) {
  gp_store32(p, (uint32_t)len);
  if (len) memcpy(p + 4, s, len);
  return p + 4 + len;
}

/* Version 2: host, cmdline, clock, version_str, run_id, then step_items. */
static int write_header(gp_writer *w, const struct gp_process_info *in) {
  const char *str[5] = {in->host, in->cmdline, in->clock, GP_VERSION,
                        in->run_id};
  size_t len[5], size = GP_HO_STRINGS + 8;
  for (int i = 0; i < 5; i++)
    size += 4 + (len[i] = clamp_len(str[i]));
  if (len[4] > GP_HDR_RUN_ID_MAX) {
    size -= len[4] - GP_HDR_RUN_ID_MAX;
    len[4] = GP_HDR_RUN_ID_MAX;
  }
  uint8_t *h = calloc(1, size);
  if (!h) return fail(w, GPUPHASE_E_NOMEM);
  memcpy(h, GP_MAGIC, GP_MAGIC_LEN);
  gp_store16(h + GP_HO_VERSION, GPUPHASE_FORMAT_VERSION);
  gp_store16(h + GP_HO_MIN_READER, GPUPHASE_FORMAT_MIN_READER);
  gp_store32(h + GP_HO_BOM, GP_BOM);
  gp_store32(h + GP_HO_HEADER_SIZE, (uint32_t)size);
  gp_store32(h + GP_HO_FLAGS, in->flags);
  gp_store64(h + GP_HO_PID, (uint64_t)in->pid);
  gp_store64(h + GP_HO_PPID, (uint64_t)in->ppid);
  gp_store64(h + GP_HO_RANK, (uint64_t)in->rank);
  gp_store64(h + GP_HO_LOCAL_RANK, (uint64_t)in->local_rank);
  gp_store64(h + GP_HO_START_MONO, in->start_mono_ns);
  gp_store64(h + GP_HO_START_REAL, in->start_real_ns);
  uint8_t *p = h + GP_HO_STRINGS;
  for (int i = 0; i < 5; i++)
    p = put_string(p, str[i], len[i]);
  gp_store64(p, in->step_items);
  int rc = write_all(w, h, size);
  free(h);
  return rc;
}

static void free_writer(gp_writer *w) {
  for (uint32_t i = 0; i < w->nsrc; i++)
    free(w->src[i].b.p);
  free(w->src);
  free(w->slot);
  free(w->itab);
  while (w->arena) {
    struct chunk *next = w->arena->next;
    free(w->arena);
    w->arena = next;
  }
  free(w->out.p);
  ZSTD_freeCCtx(w->cctx);
  free(w);
}

static int setup(gp_writer *w, size_t frame_bytes) {
  w->frame_bytes = frame_bytes ? frame_bytes : GP_FRAME_DEFAULT;
  if (w->frame_bytes > GP_FRAME_WRITE_MAX / 2)
    w->frame_bytes = GP_FRAME_WRITE_MAX / 2;
  for (uint32_t k = 0; k < GPUPHASE_REC_MAX; k++)
    rep_slots_of(k, &w->rep[k]);
  w->cctx = ZSTD_createCCtx();
  if (!w->cctx ||
      ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
                                          ZSTD_LEVEL)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
      grow_slots(w))
    return GPUPHASE_E_NOMEM;
  uint32_t idx;
  return add_source(w, 0, &idx);
}

/* On failure the fd stays open and owned by the caller. */
gp_writer *gp_writer_open(int fd, const struct gp_process_info *info,
                          size_t frame_bytes, int *err) {
  int dummy;
  if (!err) err = &dummy;
  *err = GPUPHASE_E_ARG;
  if (fd < 0 || !info) return NULL;
  gp_writer *w = calloc(1, sizeof *w);
  if (!w) {
    *err = GPUPHASE_E_NOMEM;
    return NULL;
  }
  w->fd = fd;
  w->slotmask = 7; /* grow_slots doubles it to 16 */
  *err = setup(w, frame_bytes);
  if (*err == GPUPHASE_OK) *err = write_header(w, info);
  if (*err != GPUPHASE_OK) {
    int e = errno;
    free_writer(w);
    errno = e;
    return NULL;
  }
  return w;
}

int gp_writer_flush(gp_writer *w) {
  if (!w) return GPUPHASE_E_ARG;
  for (uint32_t i = 0; i < w->nsrc && !w->err; i++)
    write_source(w, &w->src[i]);
  return w->err;
}

uint64_t gp_writer_events(const gp_writer *w) {
  return w ? w->events : 0;
}

uint64_t gp_writer_bytes(const gp_writer *w) {
  return w ? w->bytes : 0;
}

static int write_summary(gp_writer *w, const struct gpuphase_summary *sum) {
  struct gpuphase_record rec = {.kind = GPUPHASE_REC_SUMMARY};
  rec.u.summary = *sum;
  uint8_t buf[(2 + GP_MAX_FIELDS) * GP_VARINT_MAX];
  struct gp_delta d;
  gp_delta_reset(&d);
  size_t n = gp_encode_record(buf, &d, &rec);
  return write_frame(w, GP_FRAME_SUMMARY, 0, buf, n);
}

void gp_writer_set_fd(gp_writer *w, int fd) {
  if (w) w->fd = fd;
}

void gp_writer_discard(gp_writer *w) {
  if (w) free_writer(w);
}

int gp_writer_close(gp_writer *w, const struct gpuphase_summary *sum) {
  if (!w) return GPUPHASE_OK;
  gp_writer_flush(w);
  if (sum) write_summary(w, sum);
  if (close(w->fd) && !w->err) fail(w, GPUPHASE_E_IO);
  int rc = w->err, e = w->saved_errno;
  free_writer(w);
  if (rc == GPUPHASE_E_IO) errno = e;
  return rc;
}
