/* Table-driven record codec. Every descriptor below is generated from
 * GPUPHASE_RECORD_KINDS, so adding a kind or appending a field to the table
 * needs no change here. */
#include "codec.h"
#include "decode_in.h"
#include "encode.h"

#include <string.h>

#include "gp_api.h"

#define IS_SIGNED(type) _Generic(((type){0}), int64_t : 1, default : 0)

#define FIELD_DESC(code, type, fname)                                          \
  {#fname, (uint16_t)offsetof(cur_t, fname), (#code)[0], IS_SIGNED(type)},
#define FIELD_CHECK(code, type, fname)                                         \
  _Static_assert(sizeof(type) == 8 || sizeof(type) == sizeof(gpuphase_blob),   \
                 "numeric record fields must be 64-bit");
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

int gp_decode_next(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
                   uint64_t *start) {
  return gp_decode_in(pp, end, s, start);
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
