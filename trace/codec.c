/* Table-driven record codec. Every descriptor below is generated from
 * GPUPHASE_RECORD_KINDS, so adding a kind or appending a field to the table
 * needs no change here. */
#include "codec.h"
#include "encode.h"

#include <string.h>

#include "gp_api.h"

/* Field names are compared at compile time: "start" anchors E fields and
 * orders the sorted reader. */
#define IS_START(s)                                                            \
  (sizeof(s) == 6 && (s)[0] == 's' && (s)[1] == 't' && (s)[2] == 'a' &&        \
   (s)[3] == 'r' && (s)[4] == 't')
#define IS_SIGNED(type) _Generic(((type){0}), int64_t : 1, default : 0)

#define FIELD_DESC(code, type, fname)                                          \
  {#fname, (uint16_t)offsetof(cur_t, fname), (#code)[0], IS_SIGNED(type)},
#define FIELD_CHECK(code, type, fname)                                         \
  _Static_assert(sizeof(type) == 8 || sizeof(type) == sizeof(gpuphase_blob),   \
                 "numeric record fields must be 64-bit");
#define START_OFF(code, type, fname)                                           \
  +(IS_START(#fname) ? offsetof(cur_t, fname) : 0)
#define HAS_START(code, type, fname) +IS_START(#fname)
#define IS_END(code, type, fname) +((#code)[0] == 'E')

/* One case per kind; the block-scoped typedef lets the field macro name the
 * kind's struct, and the static descriptors stay compile-time constants. */
#define KIND_CASE(num, UP, low, FIELDS)                                        \
  case num: {                                                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    FIELDS(FIELD_CHECK)                                                        \
    static const struct gp_field_desc f[] = {FIELDS(FIELD_DESC)};              \
    _Static_assert(sizeof f / sizeof f[0] <= GP_MAX_FIELDS, "too many");       \
    static const struct gp_kind_desc k = {#low,                                \
                                          f,                                   \
                                          sizeof f / sizeof f[0],              \
                                          GP_SLOT_##UP,                        \
                                          (uint16_t)(0 FIELDS(START_OFF)),     \
                                          (0 FIELDS(HAS_START)),               \
                                          (0 FIELDS(IS_END))};                 \
    return &k;                                                                 \
  }

const struct gp_kind_desc *gp_kind_desc(uint32_t kind) {
  switch (kind) { GPUPHASE_RECORD_KINDS(KIND_CASE) }
  return NULL;
}

GPUPHASE_API const char *gpuphase_kind_name(uint32_t kind) {
  const struct gp_kind_desc *k = gp_kind_desc(kind);
  return k ? k->name : NULL;
}

void gp_delta_reset(struct gp_delta *d) {
  memset(d, 0, sizeof *d);
}

size_t gp_put_varint(uint8_t *dst, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    dst[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  dst[n++] = (uint8_t)v;
  return n;
}

int gp_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (p == end) return GPUPHASE_E_CORRUPT;
    uint8_t b = *p++;
    /* the tenth byte carries only bit 63 */
    if (shift == 63 && b > 1) return GPUPHASE_E_CORRUPT;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *pp = p;
      *v = r;
      return 0;
    }
  }
  return GPUPHASE_E_CORRUPT;
}

size_t gp_record_bound(const struct gpuphase_record *rec) {
  const struct gp_kind_desc *k = gp_kind_desc(rec->kind);
  if (!k) return 0;
  size_t n = 2 * GP_VARINT_MAX + (size_t)k->nfields * GP_VARINT_MAX;
  for (unsigned i = 0; i < k->nfields; i++) {
    if (k->fields[i].coding != 'B') continue;
    const gpuphase_blob *b =
        (const gpuphase_blob *)((const char *)&rec->u + k->fields[i].offset);
    if (b->len > SIZE_MAX / 4 - n) return SIZE_MAX;
    n += (size_t)b->len;
  }
  return n;
}

size_t gp_encode_record(uint8_t *dst, struct gp_delta *d,
                        const struct gpuphase_record *rec) {
  return gp_encode_inline(dst, d, rec, 1);
}

/* Most deltas fit in one byte: test that before the general loop. */
static inline int read_varint(const uint8_t **pp, const uint8_t *end,
                              uint64_t *v) {
  if (*pp < end && **pp < 0x80) {
    *v = *(*pp)++;
    return 0;
  }
  return gp_get_varint(pp, end, v);
}

/* One decoder per kind, generated from the table: the fields are unrolled
 * with constant offsets, which keeps the reader's inner loop free of the
 * per-field branches a descriptor walk costs. A field missing at the end
 * of the payload reads as delta 0. */
#define GET_DELTA(z)                                                           \
  uint64_t z = 0;                                                              \
  if (p < end) {                                                               \
    if (*p < 0x80)                                                             \
      z = *p++;                                                                \
    else if (gp_get_varint(&p, end, &z))                                       \
      return GPUPHASE_E_CORRUPT;                                               \
  }
#define DEC_V(type, name)                                                      \
  {                                                                            \
    GET_DELTA(z)                                                               \
    uint64_t *pv = &prev[offsetof(cur_t, name) / 8];                           \
    *pv += gp_unzigzag(z);                                                     \
    x->name = (type)*pv;                                                       \
  }
#define DEC_E DEC_V /* end - start until FIX_E adds the start */
#define DEC_B(type, name)                                                      \
  {                                                                            \
    GET_DELTA(n)                                                               \
    if (n > (uint64_t)(end - p)) return GPUPHASE_E_CORRUPT;                    \
    x->name.data = (const char *)p;                                            \
    x->name.len = n;                                                           \
    p += n;                                                                    \
  }
#define DEC_FIELD(code, type, name) DEC_##code(type, name)
#define FIX_V(name)
#define FIX_B(name)
#define FIX_E(name) x->name += x->start;
#define FIX_FIELD(code, type, name) FIX_##code(name)
#define DECODE_KIND(num, UP, low, FIELDS)                                      \
  static int decode_##low(const uint8_t *p, const uint8_t *end,                \
                          uint64_t *prev, struct gpuphase_##low *x) {          \
    typedef struct gpuphase_##low cur_t;                                       \
    FIELDS(DEC_FIELD)                                                          \
    FIELDS(FIX_FIELD)                                                          \
    return 1;                                                                  \
  }
GPUPHASE_RECORD_KINDS(DECODE_KIND)

static int decode_payload(uint32_t kind, const uint8_t *p, const uint8_t *end,
                          struct gp_delta *d, struct gpuphase_record *out) {
  switch (kind) {
#define DECODE_CASE(num, UP, low, FIELDS)                                      \
  case num:                                                                    \
    out->kind = num;                                                           \
    return decode_##low(p, end, d->prev + GP_SLOT_##UP, &out->u.low);
    GPUPHASE_RECORD_KINDS(DECODE_CASE)
  }
  return 0;
}

/* Repeat records (format version 5; codec.h): the fields of the previous
 * record of the kind, start and end moved, corr advanced by the tag's bit;
 * the record is then built like one whose deltas are all 0. A kind that
 * cannot take the form is corrupt, an unknown kind skipped (its length is
 * that of its two varints). */
#define REP_INDICES(FIELDS)                                                    \
  const unsigned rs = 0 FIELDS(GP_REP_START), re = 0 FIELDS(GP_REP_END),      \
                 rc = 0 FIELDS(GP_REP_CORR);                                   \
  const unsigned si = rs ? rs - 1 : 0, ei = re ? re - 1 : 0,                   \
                 ci = rc ? rc - 1 : 0;                                         \
  if (!rs || !re || (c && !rc)) return GPUPHASE_E_CORRUPT;
#define REPEAT_CASE(num, UP, low, FIELDS)                                      \
  case num: {                                                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    REP_INDICES(FIELDS)                                                        \
    uint64_t *prev = d->prev + GP_SLOT_##UP;                                   \
    prev[si] += prev[ei] + g;                                                  \
    prev[ei] += gp_unzigzag(z);                                                \
    if (rc) prev[ci] += c;                                                     \
    out->kind = num;                                                           \
    return decode_##low(p, p, prev, &out->u.low);                              \
  }
static int decode_repeat(const uint8_t **pp, const uint8_t *end,
                         struct gp_delta *d, struct gpuphase_record *out) {
  const uint8_t *p = *pp;
  unsigned tag = *p++;
  uint64_t g, z, c = (tag & GP_REPEAT_CORR) != 0;
  if (read_varint(&p, end, &g) || read_varint(&p, end, &z))
    return GPUPHASE_E_CORRUPT;
  *pp = p;
  switch (tag & GP_REPEAT_KIND_MASK) { GPUPHASE_RECORD_KINDS(REPEAT_CASE) }
  return 0;
}

int gp_decode_record(const uint8_t **pp, const uint8_t *end, struct gp_delta *d,
                     struct gpuphase_record *out) {
  const uint8_t *p = *pp;
  if (p < end && *p >= GP_REPEAT_TAG) return decode_repeat(pp, end, d, out);
  uint64_t kind, len;
  if (read_varint(&p, end, &kind) || read_varint(&p, end, &len) ||
      len > (uint64_t)(end - p))
    return GPUPHASE_E_CORRUPT;
  *pp = p + len;
  if (kind > UINT32_MAX) return 0;
  int rc = decode_payload((uint32_t)kind, p, p + len, d, out);
  if (rc == 1 && out->kind == GPUPHASE_REC_STRING && out->u.string.id == 0)
    return GPUPHASE_E_CORRUPT;
  return rc;
}

/* ---- in-place decoding: the reader's path ---- */

void gp_dstate_reset(struct gp_dstate *s) {
  memset(s, 0, sizeof *s);
  for (uint32_t k = 0; k < GPUPHASE_REC_MAX; k++)
    s->last[k].kind = k;
}

size_t gp_kind_size(uint32_t kind) {
  switch (kind) {
#define SIZE_CASE(num, UP, low, FIELDS)                                        \
  case num:                                                                    \
    return sizeof(struct gpuphase_##low);
    GPUPHASE_RECORD_KINDS(SIZE_CASE)
  }
  return 0;
}

/* A varint whose first byte at *pp (< end) has the continuation bit. Time
 * fields take two or three bytes, varying from record to record: up to
 * eight bytes are decoded from one unaligned load, with no branch on the
 * length (the stop bit is found by ctz and the 7-bit groups are packed in
 * three steps). Longer ones, and big-endian hosts, take the checked loop.
 * Reads 8 bytes at *pp; a varint that runs past end leaves *pp past end. */
static inline int varint_long(const uint8_t **pp, const uint8_t *end,
                              uint64_t *v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w;
  memcpy(&w, *pp, 8);
  uint64_t stop = ~w & 0x8080808080808080ull;
  if (__builtin_expect(stop != 0, 1)) {
    unsigned bits = (unsigned)__builtin_ctzll(stop) + 1; /* 8 x length */
    w &= 0x7f7f7f7f7f7f7f7full & (~0ull >> (64 - bits));
    w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
    w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
    w = (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
    *pp += bits / 8;
    *v = w;
    return 0;
  }
#endif
  return gp_get_varint(pp, end, v);
}

/* The checked loop for the field decoders, with the position passed and
 * returned (NULL: malformed), so that it stays in a register: the loop
 * takes its address out of line. */
static const uint8_t *__attribute__((noinline))
varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *v) {
  return gp_get_varint(&p, end, v) ? NULL : p;
}

/* varint_long for the field decoders, out of line: varints of four to
 * eight bytes from one load, longer ones by varint_slow. */
static const uint8_t *__attribute__((noinline))
varint_wide(const uint8_t *p, const uint8_t *end, uint64_t *v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w;
  memcpy(&w, p, 8);
  uint64_t stop = ~w & 0x8080808080808080ull;
  if (__builtin_expect(stop != 0, 1)) {
    unsigned bits = (unsigned)__builtin_ctzll(stop) + 1; /* 8 x length */
    w &= 0x7f7f7f7f7f7f7f7full & (~0ull >> (64 - bits));
    w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
    w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
    w = (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
    *v = w;
    return p + bits / 8;
  }
#endif
  return varint_slow(p, end, v);
}

/* A varint whose first byte at p has the continuation bit. Time deltas
 * take two or three bytes: those are put together byte by byte (p[1] and
 * p[2] are readable: the padding), wider ones go to varint_wide. */
static inline const uint8_t *varint_at(const uint8_t *p, const uint8_t *end,
                                       uint64_t *v) {
  uint64_t lo = p[0] & 0x7fu, b1 = p[1];
  if (b1 < 0x80) {
    *v = lo | b1 << 7;
    return p + 2;
  }
  uint64_t b2 = p[2];
  if (b2 < 0x80) {
    *v = lo | (b1 & 0x7f) << 7 | b2 << 14;
    return p + 3;
  }
  return varint_wide(p, end, v);
}

/* The zigzag-decoded delta of a one-byte varint (0..127): one load instead
 * of the shift, mask and exclusive-or, on the path most fields take. */
#define UZ1(i) ((i) & 1 ? -((i) >> 1) - 1 : (i) >> 1)
#define UZ4(i) UZ1(i), UZ1(i + 1), UZ1(i + 2), UZ1(i + 3)
#define UZ16(i) UZ4(i), UZ4(i + 4), UZ4(i + 8), UZ4(i + 12)
#define UZ64(i) UZ16(i), UZ16(i + 16), UZ16(i + 32), UZ16(i + 48)
static const int8_t unzz7[128] = {UZ64(0), UZ64(64)};

/* One field's delta, zigzag-decoded: 0 past the end of the payload. A
 * varint that runs past the end is caught once, after the last field. In
 * a kind without blobs, the fields past the end of the payload keep their
 * values (delta 0), so the first of them jumps to the end (`rest`). A
 * delta is added whatever its value: adding 0 costs less than testing
 * for it. */
#define IN_DELTA(d)                                                            \
  int64_t d = 0;                                                               \
  if (!has_blob && p >= end) goto rest;                                        \
  if (!has_blob || p < end) {                                                  \
    unsigned b_ = *p;                                                          \
    if (__builtin_expect(b_ < 0x80, 1)) {                                      \
      d = unzz7[b_];                                                           \
      p++;                                                                     \
    } else {                                                                   \
      uint64_t z_;                                                             \
      if (!(p = varint_at(p, end, &z_))) return GPUPHASE_E_CORRUPT;            \
      d = (int64_t)gp_unzigzag(z_);                                            \
    }                                                                          \
  }
#define IN_V(type, name)                                                       \
  {                                                                            \
    IN_DELTA(d)                                                                \
    x->name = (type)((uint64_t)x->name + (uint64_t)d);                         \
  }
/* E fields: the delta is of end - start, so the previous duration is taken
 * before start moves (SAVE_E) and the end rebuilt after (END_E). */
#define IN_E(type, name)                                                       \
  {                                                                            \
    IN_DELTA(d)                                                                \
    dur_##name += (uint64_t)d;                                                 \
  }
/* B fields: a length (no zigzag), then the bytes. */
#define IN_B(type, name)                                                       \
  {                                                                            \
    uint64_t n = 0;                                                            \
    if (p < end) {                                                             \
      n = *p;                                                                  \
      if (n < 0x80)                                                            \
        p++;                                                                   \
      else if (!(p = varint_at(p, end, &n)))                                   \
        return GPUPHASE_E_CORRUPT;                                             \
    }                                                                          \
    if (n > (uint64_t)(end - p)) return GPUPHASE_E_CORRUPT;                    \
    x->name.data = (const char *)p;                                            \
    x->name.len = n;                                                           \
    p += n;                                                                    \
  }
#define IN_FIELD(code, type, name) IN_##code(type, name)
#define IS_BLOB(code, type, name) +(#code[0] == 'B')
#define SAVE_V(name)
#define SAVE_B(name)
#define SAVE_E(name) uint64_t dur_##name = x->name - x->start;
#define SAVE_FIELD(code, type, name) SAVE_##code(name)
#define END_V(name)
#define END_B(name)
#define END_E(name) x->name = x->start + dur_##name;
#define END_FIELD(code, type, name) END_##code(name)
/* Inlined into gp_decode_next's switch: no call, and the payload bounds
 * stay in registers. */
#define DECODE_IN_KIND(num, UP, low, FIELDS)                                   \
  static inline __attribute__((always_inline)) int decode_in_##low(            \
      const uint8_t *p, const uint8_t *end, struct gpuphase_##low *x,          \
      uint64_t *start) {                                                       \
    typedef struct gpuphase_##low cur_t;                                       \
    const int has_blob = 0 FIELDS(IS_BLOB);                                    \
    FIELDS(SAVE_FIELD)                                                         \
    FIELDS(IN_FIELD)                                                           \
    goto rest;                                                                 \
  rest:                                                                        \
    if (p > end) return GPUPHASE_E_CORRUPT;                                    \
    FIELDS(END_FIELD)                                                          \
    if (0 FIELDS(HAS_START))                                                   \
      *start = *(const uint64_t *)((const char *)x +                           \
                                   (0 FIELDS(START_OFF)));                     \
    return num;                                                                \
  }
GPUPHASE_RECORD_KINDS(DECODE_IN_KIND)

/* The kind and length prefixes: checked like any varint. */
static inline int prefix_varint(const uint8_t **pp, const uint8_t *end,
                                uint64_t *v) {
  const uint8_t *p = *pp;
  if (p >= end) return GPUPHASE_E_CORRUPT;
  if (*p < 0x80) {
    *v = *p;
    *pp = p + 1;
    return 0;
  }
  if (varint_long(pp, end, v) || *pp > end) return GPUPHASE_E_CORRUPT;
  return 0;
}

/* A repeat record in place: the kind's last record is the previous one. */
#define REPEAT_IN_CASE(num, UP, low, FIELDS)                                   \
  case num: {                                                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    REP_INDICES(FIELDS)                                                        \
    uint64_t *f = (uint64_t *)&s->last[num].u.low;                             \
    uint64_t dur = f[ei] - f[si] + gp_unzigzag(z);                             \
    f[si] = f[ei] + g;                                                         \
    f[ei] = f[si] + dur;                                                       \
    if (rc) f[ci] += c;                                                        \
    *start = f[si];                                                            \
    return num;                                                                \
  }
/* One of its two varints: a one-byte one inline, two and three bytes
 * byte by byte (varint_at); a varint that runs past the end of the payload
 * is caught once, after both (the padding is readable). */
static inline const uint8_t *rep_varint(const uint8_t *p, const uint8_t *end,
                                        uint64_t *v) {
  if (__builtin_expect(*p < 0x80, 1)) {
    *v = *p;
    return p + 1;
  }
  return varint_at(p, end, v);
}
static inline __attribute__((always_inline)) int
decode_repeat_in(const uint8_t **pp, const uint8_t *end,
                            struct gp_dstate *s, uint64_t *start) {
  const uint8_t *p = *pp + 1;
  unsigned tag = **pp;
  uint64_t g, z, c = (tag & GP_REPEAT_CORR) != 0;
  if (!(p = rep_varint(p, end, &g)) || !(p = rep_varint(p, end, &z)) ||
      p > end)
    return GPUPHASE_E_CORRUPT;
  *pp = p;
  switch (tag & GP_REPEAT_KIND_MASK) { GPUPHASE_RECORD_KINDS(REPEAT_IN_CASE) }
  return 0;
}

int gp_decode_next(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
                   uint64_t *start) {
  const uint8_t *p = *pp;
  if (*p >= GP_REPEAT_TAG) return decode_repeat_in(pp, end, s, start);
  uint64_t kind, len;
  /* Both prefixes in one byte each (any kind below 128 and a payload
   * below 128 bytes): one load of the two, which the padding allows. */
  uint16_t w;
  memcpy(&w, p, 2);
  if (__builtin_expect(!(w & 0x8080), 1)) {
    kind = p[0];
    len = p[1];
    p += 2;
    if (p > end) return GPUPHASE_E_CORRUPT;
  } else if (prefix_varint(&p, end, &kind) || prefix_varint(&p, end, &len)) {
    return GPUPHASE_E_CORRUPT;
  }
  if (len > (uint64_t)(end - p)) return GPUPHASE_E_CORRUPT;
  *pp = p + len;
  int rc;
  switch (kind) {
#define DECODE_IN_CASE(num, UP, low, FIELDS)                                   \
  case num:                                                                    \
    rc = decode_in_##low(p, p + len, &s->last[num].u.low, start);             \
    if (num == GPUPHASE_REC_STRING && rc == num &&                             \
        s->last[GPUPHASE_REC_STRING].u.string.id == 0)                         \
      return GPUPHASE_E_CORRUPT;                                               \
    return rc;
    GPUPHASE_RECORD_KINDS(DECODE_IN_CASE)
  }
  return 0;
}

int gp_decode_kept(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
                   uint64_t *start, uint64_t keep) {
  const uint8_t *p = *pp;
  if (*p >= GP_REPEAT_TAG) {
    if (keep >> (*p & GP_REPEAT_KIND_MASK) & 1)
      return decode_repeat_in(pp, end, s, start);
    uint64_t v;
    if (!(p = rep_varint(p + 1, end, &v)) || !(p = rep_varint(p, end, &v)) ||
        p > end)
      return GPUPHASE_E_CORRUPT;
    *pp = p;
    return 0;
  }
  uint64_t kind, len;
  if (prefix_varint(&p, end, &kind) || prefix_varint(&p, end, &len))
    return GPUPHASE_E_CORRUPT;
  if (kind < 64 && (keep >> kind & 1)) return gp_decode_next(pp, end, s, start);
  if (len > (uint64_t)(end - p)) return GPUPHASE_E_CORRUPT;
  *pp = p + len;
  return 0;
}

uint64_t gp_record_start(const struct gpuphase_record *rec, int *has) {
  const struct gp_kind_desc *k = gp_kind_desc(rec->kind);
  *has = k && k->has_start;
  return *has ? *(const uint64_t *)((const char *)&rec->u + k->start_off) : 0;
}

int gp_record_fields(const struct gpuphase_record *rec, gp_field_cb *cb,
                     void *ctx) {
  const struct gp_kind_desc *k = gp_kind_desc(rec->kind);
  if (!k) return GPUPHASE_E_ARG;
  for (unsigned i = 0; i < k->nfields; i++) {
    const struct gp_field_desc *f = &k->fields[i];
    const char *at = (const char *)&rec->u + f->offset;
    if (f->coding == 'B') {
      const gpuphase_blob *b = (const gpuphase_blob *)at;
      cb(ctx, f->name, 'B', b->len, b);
    } else {
      char c = f->coding == 'E' ? 'E' : f->is_signed ? 'S' : 'V';
      cb(ctx, f->name, c, *(const uint64_t *)at, NULL);
    }
  }
  return k->nfields;
}
