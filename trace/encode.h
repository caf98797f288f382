/* The record encoder (gp_encode_record in codec.h), inline for the
 * writer's per-record path. Internal to trace/. */
#ifndef GP_TRACE_ENCODE_H
#define GP_TRACE_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "codec.h"
#include "writer.h"

/* One encoder per kind, generated from the table like the decoders in
 * codec.c:
 * constant offsets, no descriptor walk. Records of kinds without blobs
 * (all but STRING) take encode_<kind>: the payload is zeroed ahead first,
 * so that a field that did not change (most of a launch loop's) costs a
 * load, a compare and a branch: its zero byte is already there, and since
 * field i sits at q + i, where q moves only past the extra bytes of the
 * multi-byte varints before it, nothing is stored or counted for it. A
 * changed field stores its varint (below 2^21: one 8-byte word) and keeps
 * the zeros ahead of it. `last` follows the end of the last field that is
 * not a zero delta: the payload ends there, leaving out the trailing zeros
 * that the decoder restores. Kinds with blobs take encode_seq_<kind>, one
 * field after another. */

/* Bytes zeroed ahead of field i of a kind of n fields: 3 per field left,
 * since a varint of up to three bytes moves the later fields by two. */
#define ZERO_AHEAD(n) (((3 * (n)) + 15) / 16 * 16)

/* v < 2^21 as a varint at p, followed by zeros up to p + 8; returns its
 * length. */
static inline __attribute__((always_inline)) size_t
put_varint_word(uint8_t *p, uint64_t v) {
  uint64_t more1 = v >= 0x80, more2 = v >= 0x4000;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w = (v & 0x7f) | ((v << 1) & 0x7f00) | ((v << 2) & 0x7f0000) |
               more1 << 7 | more2 << 15;
  memcpy(p, &w, 8);
#else
  p[0] = (uint8_t)(v | more1 << 7);
  p[1] = (uint8_t)((v >> 7) | more2 << 7);
  p[2] = (uint8_t)(v >> 14);
  memset(p + 3, 0, 5);
#endif
  return 1 + more1 + more2;
}

/* A field of index `idx` of a kind of `nf` fields changed: its varint at
 * f, zeros kept ahead of the fields after it (3 bytes each, see above). */
static inline __attribute__((always_inline)) size_t
put_field(uint8_t *f, uint64_t z, size_t left) {
  if (__builtin_expect(z < (UINT64_C(1) << 21), 1))
    return put_varint_word(f, z);
  size_t n = gp_put_varint(f, z);
  memset(f + n, 0, 3 * left);
  return n;
}

#define ENC_NUM(value, name)                                                   \
  {                                                                            \
    enum { idx = offsetof(cur_t, name) / 8 };                                  \
    uint64_t *pv = &prev[idx], d = (value) - *pv;                              \
    if ((unsigned)idx + 1 == rep_e) rep_dend = d;                                      \
    if ((unsigned)idx + 1 == rep_c) rep_dcorr = d;                                      \
    if (d) { /* the subtraction is the test; the value is not kept */          \
      changed |= UINT64_C(1) << idx;                                           \
      *pv += d;                                                                \
      uint8_t *f = q + idx;                                                    \
      size_t n = put_field(f, gp_zigzag(d), nf - idx - 1);                     \
      q += n - 1;                                                              \
      last = f + n;                                                            \
    }                                                                          \
  }
#define ENC_V(name) ENC_NUM((uint64_t)x->name, name)
#define ENC_E(name) ENC_NUM(x->name - x->start, name)
#define ENC_B(name) (void)x->name; /* never called: see ENCODE_CASE */
#define ENC_FIELD(code, type, name) ENC_##code(name)
/* A record that may take the repeat form (codec.h) and does: rep->tag is
 * its tag, else 0. Decided on what the field encoding found: no field
 * changed but start, end and corr, corr by 0 or 1, and start not before
 * the previous end. */
struct gp_rep {
  unsigned tag;
  uint64_t g, z;
};
#define REP_BIT(i) (UINT64_C(1) << (((i) - 1) & 63))
#define ENCODE_KIND(num, UP, low, FIELDS)                                      \
  static inline __attribute__((always_inline))                                 \
  uint8_t *encode_##low(uint8_t *restrict p, uint64_t *restrict prev,          \
                        const struct gpuphase_##low *restrict x,               \
                        struct gp_rep *rep) {                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    enum { nf = sizeof(cur_t) / 8 };                                           \
    const unsigned rep_s = 0 FIELDS(GP_REP_START), rep_e = 0 FIELDS(GP_REP_END), \
                   rep_c = 0 FIELDS(GP_REP_CORR);                              \
    const unsigned si = rep_s ? rep_s - 1 : 0, ei = rep_e ? rep_e - 1 : 0;     \
    uint64_t old_end = rep_s && rep_e ? prev[si] + prev[ei] : 0;               \
    uint64_t changed = 0, rep_dend = 0, rep_dcorr = 0;                         \
    memset(p, 0, ZERO_AHEAD(nf));                                              \
    uint8_t *q = p, *last = p;                                                 \
    FIELDS(ENC_FIELD)                                                          \
    rep->tag = 0;                                                              \
    if (rep_s && rep_e &&                                                      \
        !(changed & ~(REP_BIT(rep_s) | REP_BIT(rep_e) |                        \
                      (rep_c ? REP_BIT(rep_c) : 0))) &&                        \
        rep_dcorr <= 1 && prev[si] >= old_end) {                               \
      rep->tag = GP_REPEAT_TAG | (unsigned)rep_dcorr * GP_REPEAT_CORR | num;   \
      rep->g = prev[si] - old_end;                                             \
      rep->z = gp_zigzag(rep_dend);                                            \
    }                                                                          \
    (void)x;                                                                   \
    return last;                                                               \
  }
GPUPHASE_RECORD_KINDS(ENCODE_KIND)

/* Stores v as a varint. Deltas below 2^21 (up to three bytes: every field
 * of a steady stream but the first record of a frame) take a branch-free
 * path, since their length varies from record to record; it may store up
 * to three bytes whatever the length, which the bound allows. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
  if (__builtin_expect(v >= (UINT64_C(1) << 21), 0))
    return p + gp_put_varint(p, v);
  unsigned more1 = v >= 0x80, more2 = v >= 0x4000;
  p[0] = (uint8_t)(v | more1 << 7);
  p[1] = (uint8_t)((v >> 7) | more2 << 7);
  p[2] = (uint8_t)(v >> 14);
  return p + 1 + more1 + more2;
}

#define SEQ_NUM(value, name)                                                   \
  {                                                                            \
    uint64_t v = (value), *pv = &prev[offsetof(cur_t, name) / 8];              \
    if (v == *pv) {                                                            \
      *p++ = 0;                                                                \
    } else {                                                                   \
      p = put_varint(p, gp_zigzag(v - *pv));                                   \
      *pv = v;                                                                 \
      last = p;                                                                \
    }                                                                          \
  }
#define SEQ_V(name) SEQ_NUM((uint64_t)x->name, name)
#define SEQ_E(name) SEQ_NUM(x->name - x->start, name)
#define SEQ_B(name)                                                            \
  {                                                                            \
    uint64_t n = x->name.len;                                                  \
    p = put_varint(p, n);                                                      \
    if (n) {                                                                   \
      memcpy(p, x->name.data, n);                                              \
      last = p += n;                                                           \
    }                                                                          \
  }
#define SEQ_FIELD(code, type, name) SEQ_##code(name)
#define ENCODE_SEQ_KIND(num, UP, low, FIELDS)                                  \
  static inline uint8_t *encode_seq_##low(                                     \
      uint8_t *restrict p, uint64_t *restrict prev,                            \
      const struct gpuphase_##low *restrict x) {                               \
    typedef struct gpuphase_##low cur_t;                                       \
    uint8_t *last = p;                                                         \
    FIELDS(SEQ_FIELD)                                                          \
    return last;                                                               \
  }
GPUPHASE_RECORD_KINDS(ENCODE_SEQ_KIND)

/* The repeat record tag | g, z at dst; returns its length (at most
 * 1 + 2 * GP_VARINT_MAX). */
static inline __attribute__((always_inline)) size_t
gp_put_repeat(uint8_t *dst, unsigned tag, uint64_t g, uint64_t z) {
  dst[0] = (uint8_t)tag;
  uint8_t *p = put_varint(dst + 1, g);
  return (size_t)(put_varint(p, z) - dst);
}

/* The next record of a run (struct gp_repeat_run, writer.h): 1 when put;
 * 0 when it must be added whole (start before the last record's end, or
 * corr_step too large). */
static inline __attribute__((always_inline)) int
gp_repeat_put(struct gp_repeat_run *r, uint64_t corr_step, uint64_t start,
              uint64_t end) {
  if (start < r->end || corr_step > r->corr_max) return 0;
  uint64_t dur = end - start;
  r->p += gp_put_repeat(r->p, r->tag | (unsigned)corr_step * GP_REPEAT_CORR,
                        start - r->end, gp_zigzag(dur - r->dur));
  r->end = end;
  r->dur = dur;
  r->corr += corr_step;
  r->n++;
  return 1;
}

/* repeat = 0: the full form only (what version 4 wrote; for tests).
 * The payload is encoded right after a one-byte length, which holds every
 * record of a kind without blobs but the rare one with large deltas in
 * most fields; a longer length moves the payload up. Kind numbers are
 * below 128: one byte. */
_Static_assert(GPUPHASE_REC_MAX <= 128, "kinds take one byte");
static inline __attribute__((always_inline)) size_t
gp_encode_inline(uint8_t *dst, struct gp_delta *d,
                 const struct gpuphase_record *rec, int repeat) {
  uint8_t *payload = dst + 2, *end;
  switch (rec->kind) {
#define ENCODE_CASE(num, UP, low, FIELDS)                                      \
  case num:                                                                    \
    dst[0] = num;                                                              \
    if (0 FIELDS(GP_BLOB_FIELD)) {                                             \
      end = encode_seq_##low(payload, d->prev + GP_SLOT_##UP, &rec->u.low);    \
    } else {                                                                   \
      struct gp_rep rep;                                                       \
      end = encode_##low(payload, d->prev + GP_SLOT_##UP, &rec->u.low, &rep);  \
      if (rep.tag && repeat)                                                   \
        return gp_put_repeat(dst, rep.tag, rep.g, rep.z);                      \
    }                                                                          \
    break;
    GPUPHASE_RECORD_KINDS(ENCODE_CASE)
  default:
    return 0;
  }
  size_t plen = (size_t)(end - payload);
  if (__builtin_expect(plen < 0x80, 1)) {
    payload[-1] = (uint8_t)plen;
    return (size_t)(end - dst);
  }
  size_t lenlen = 1 + (size_t)(63 - __builtin_clzll(plen)) / 7;
  memmove(payload + lenlen - 1, payload, plen);
  gp_put_varint(payload - 1, plen);
  return (size_t)(payload - 1 + lenlen + plen - dst);
}

#undef ZERO_AHEAD
#undef ENC_NUM
#undef ENC_V
#undef ENC_E
#undef ENC_B
#undef ENC_FIELD
#undef ENCODE_KIND
#undef REP_BIT
#undef SEQ_NUM
#undef SEQ_V
#undef SEQ_E
#undef SEQ_B
#undef SEQ_FIELD
#undef ENCODE_SEQ_KIND
#undef ENCODE_CASE

#endif
