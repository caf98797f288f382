/* The in-place record decoder (gp_decode_next, codec.h) as an inline
 * function, for the time-ordered reader's merge (trace/sorted.c), whose
 * loop it joins without a call. codec.c defines gp_decode_next from it.
 * Internal to the trace library. */
#ifndef GP_TRACE_DECODE_IN_H
#define GP_TRACE_DECODE_IN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "codec.h"

/* Field names are compared at compile time: "start" anchors E fields and
 * orders the sorted reader. */
#define IS_START(s)                                                            \
  (sizeof(s) == 6 && (s)[0] == 's' && (s)[1] == 't' && (s)[2] == 'a' &&        \
   (s)[3] == 'r' && (s)[4] == 't')
#define START_OFF(code, type, fname)                                           \
  +(IS_START(#fname) ? offsetof(cur_t, fname) : 0)
#define HAS_START(code, type, fname) +IS_START(#fname)

/* The indices of a repeatable kind's start, end and corr fields (a repeat
 * record of a kind without them is corrupt). */
#define REP_INDICES(FIELDS)                                                    \
  const unsigned rs = 0 FIELDS(GP_REP_START), re = 0 FIELDS(GP_REP_END),      \
                 rc = 0 FIELDS(GP_REP_CORR);                                   \
  const unsigned si = rs ? rs - 1 : 0, ei = re ? re - 1 : 0,                   \
                 ci = rc ? rc - 1 : 0;                                         \
  if (!rs || !re || (c && !rc)) return GPUPHASE_E_CORRUPT;

/* Up to eight bytes of a varint from one unaligned load at p, with no
 * branch on the length (the stop bit is found by ctz and the 7-bit groups
 * are packed in three steps): its length, or 0 when the eight bytes hold
 * no stop bit (a longer varint) or on a big-endian host. */
static inline unsigned varint_word(const uint8_t *p, uint64_t *v) {
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
    return bits / 8;
  }
#else
  (void)p;
  (void)v;
#endif
  return 0;
}

/* A varint whose first byte at *pp (< end) has the continuation bit. Time
 * fields take two or three bytes, varying from record to record: up to
 * eight bytes are decoded from one load (varint_word). Longer ones, and
 * big-endian hosts, take the checked loop. Reads 8 bytes at *pp; a varint
 * that runs past end leaves *pp past end. */
static inline int varint_long(const uint8_t **pp, const uint8_t *end,
                              uint64_t *v) {
  unsigned n = varint_word(*pp, v);
  if (__builtin_expect(n != 0, 1)) {
    *pp += n;
    return 0;
  }
  return gp_get_varint(pp, end, v);
}

/* A varint and the position after it (p NULL: malformed), from the
 * calls out of line: returned in two registers, so that the decoder's
 * variables whose value they give never have their address taken (which
 * keeps them in memory on the inline path too). */
struct gp_vr {
  const uint8_t *p;
  uint64_t v;
};

/* The checked loop for the field decoders (the loop takes the position's
 * address out of line). */
static struct gp_vr __attribute__((noinline))
varint_slow(const uint8_t *p, const uint8_t *end) {
  struct gp_vr r;
  if (gp_get_varint(&p, end, &r.v)) p = NULL;
  r.p = p;
  return r;
}

/* varint_long for the field decoders, out of line: varints of four to
 * eight bytes from one load, longer ones by varint_slow. */
static struct gp_vr __attribute__((noinline))
varint_wide(const uint8_t *p, const uint8_t *end) {
  uint64_t v;
  unsigned n = varint_word(p, &v);
  if (__builtin_expect(n == 0, 0)) return varint_slow(p, end);
  return (struct gp_vr){p + n, v};
}

/* A varint whose first byte at p has the continuation bit. Time deltas
 * take two or three bytes: those are put together byte by byte (p[1] and
 * p[2] are readable: the padding), wider ones go to varint_wide. */
static inline __attribute__((always_inline)) const uint8_t *
varint_at(const uint8_t *p, const uint8_t *end,
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
  struct gp_vr w = varint_wide(p, end);
  *v = w.v;
  return w.p;
}

/* The zigzag-decoded delta of a one-byte varint (0..127): one load instead
 * of the shift, mask and exclusive-or, on the path most fields take. */
#define UZ1(i) ((i) & 1 ? -((i) >> 1) - 1 : (i) >> 1)
#define UZ4(i) UZ1(i), UZ1(i + 1), UZ1(i + 2), UZ1(i + 3)
#define UZ16(i) UZ4(i), UZ4(i + 4), UZ4(i + 8), UZ4(i + 12)
#define UZ64(i) UZ16(i), UZ16(i + 16), UZ16(i + 32), UZ16(i + 48)
static const int8_t unzz7[128] = {UZ64(0), UZ64(64)};

/* The zigzag-decoded delta of a varint whose first byte at p has the
 * continuation bit, into *d; the position after it (NULL: malformed).
 * For v = lo | hi << 7 (lo its first seven bits), unzigzag(v) =
 * ((lo >> 1) | hi << 6) ^ -(lo & 1) = uz[lo] ^ hi << 6, the two parts
 * having no bit in common: so the two- and three-byte deltas (time
 * deltas) take the table's value of the first byte and one exclusive-or,
 * with no shift and mask for the zigzag. Wider ones go to varint_wide.
 * Whether a delta takes two bytes or three is chosen with a mask, not a
 * branch: successive time deltas go either way (the branch was mispredicted
 * about a third of the time). The third byte is read in any case (the
 * padding allows it); with c = 1 for three bytes, -c keeps its bits. */
static inline __attribute__((always_inline)) int64_t
delta_23(int64_t lo, uint64_t b1, uint64_t b2) {
  uint64_t c = b1 >> 7;
  return lo ^ (int64_t)((b1 & 0x7f) << 6 | (b2 << 13 & (0 - c)));
}
static inline __attribute__((always_inline)) const uint8_t *
delta_at(const int8_t *uz, const uint8_t *p, const uint8_t *end,
         int64_t *d) {
  int64_t lo = uz[p[0] & 0x7f];
  uint64_t b1 = p[1], b2 = p[2];
  if (__builtin_expect((b1 & b2) < 0x80, 1)) {
    *d = delta_23(lo, b1, b2);
    return p + 2 + (b1 >> 7);
  }
  struct gp_vr w = varint_wide(p, end);
  *d = (int64_t)gp_unzigzag(w.v);
  return w.p;
}

/* delta_at at end + i: the position after the varint as the same
 * offset (PTRDIFF_MAX: malformed), its bytes read at offsets from end. */
static inline __attribute__((always_inline)) ptrdiff_t
delta_at_i(const int8_t *uz, const uint8_t *end, ptrdiff_t i, int64_t *d) {
  int64_t lo = uz[end[i] & 0x7f];
  uint64_t b1 = end[i + 1], b2 = end[i + 2];
  if (__builtin_expect((b1 & b2) < 0x80, 1)) {
    *d = delta_23(lo, b1, b2);
    return i + 2 + (ptrdiff_t)(b1 >> 7);
  }
  struct gp_vr w = varint_wide(end + i, end);
  *d = (int64_t)gp_unzigzag(w.v);
  return w.p ? w.p - end : PTRDIFF_MAX;
}

/* One field's delta, zigzag-decoded: 0 past the end of the payload. A
 * varint that runs past the end is caught once, after the last field. In
 * a kind without blobs, the fields past the end of the payload keep their
 * values (delta 0), so the test after each field jumps to the end
 * (`rest`) once the payload is used up; there the position is kept as
 * i_, from the end of the payload (negative within it), so that the
 * increment past a one-byte field sets the flags of that test. A delta
 * is added whatever its value: adding 0 costs less than testing for
 * it. */
#define IN_DELTA(d)                                                            \
  int64_t d = 0;                                                               \
  if (!has_blob) {                                                             \
    unsigned b_ = end[i_];                                                     \
    if (__builtin_expect(b_ < 0x80, 1)) {                                      \
      d = uz_[b_];                                                             \
      i_++;                                                                    \
    } else if ((i_ = delta_at_i(uz_, end, i_, &d)) == PTRDIFF_MAX) {          \
      return GPUPHASE_E_CORRUPT;                                               \
    }                                                                          \
  } else if (p < end) {                                                        \
    unsigned b_ = *p;                                                          \
    if (__builtin_expect(b_ < 0x80, 1)) {                                      \
      d = uz_[b_];                                                             \
      p++;                                                                     \
    } else if (!(p = delta_at(uz_, p, end, &d))) {                            \
      return GPUPHASE_E_CORRUPT;                                               \
    }                                                                          \
  }
#define IN_V(type, name)                                                       \
  {                                                                            \
    IN_DELTA(d)                                                                \
    x->name = (type)((uint64_t)x->name + (uint64_t)d);                         \
    if (!has_blob && i_ >= 0) goto rest;                                       \
  }
/* E fields: the delta is of end - start, so the previous duration is taken
 * before start moves (SAVE_E) and the end rebuilt after (END_E). */
#define IN_E(type, name)                                                       \
  {                                                                            \
    IN_DELTA(d)                                                                \
    dur_##name += (uint64_t)d;                                                 \
    if (!has_blob && i_ >= 0) goto rest;                                       \
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
 * stay in registers. uz_ is unzz7's address. (Made opaque to the compiler
 * by an empty asm, it stayed in a register once per record while the
 * merge's loop was smaller; in today's loop gcc keeps it on the stack
 * instead, a load per field, and without the asm takes it once.) */
#define DECODE_IN_KIND(num, UP, low, FIELDS)                                   \
  static inline __attribute__((always_inline)) int decode_in_##low(            \
      const uint8_t **pp, const uint8_t *p, const uint8_t *end,                \
      struct gpuphase_##low *x, uint64_t *start) {                             \
    typedef struct gpuphase_##low cur_t;                                       \
    const int has_blob = 0 FIELDS(IS_BLOB);                                    \
    const int8_t *uz_ = unzz7;                                                 \
    FIELDS(SAVE_FIELD)                                                         \
    ptrdiff_t i_ = p - end;                                                    \
    if (!has_blob && i_ >= 0) goto rest;                                       \
    FIELDS(IN_FIELD)                                                           \
    goto rest;                                                                 \
  rest:                                                                        \
    if (has_blob ? p > end : i_ > 0) return GPUPHASE_E_CORRUPT;                \
    FIELDS(END_FIELD)                                                          \
    /* string id 0 means "no string" */                                        \
    if (num == GPUPHASE_REC_STRING &&                                          \
        ((const struct gpuphase_string *)(const void *)x)->id == 0)            \
      return GPUPHASE_E_CORRUPT;                                               \
    if (0 FIELDS(HAS_START))                                                   \
      *start = *(const uint64_t *)((const char *)x +                           \
                                   (0 FIELDS(START_OFF)));                     \
    *pp = end;                                                                 \
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

/* A kind or length prefix of the record at p, out of line (taken when
 * either takes more than one byte): p NULL when malformed. */
static struct gp_vr __attribute__((noinline))
prefix_at(const uint8_t *p, const uint8_t *end) {
  struct gp_vr r;
  r.p = prefix_varint(&p, end, &r.v) ? NULL : p;
  return r;
}

/* A repeat record in place: the kind's last record is the previous one. */
#define REPEAT_IN_CASE(num, UP, low, FIELDS)                                   \
  case num:                                                                    \
    REPEAT_IN_BODY(num, UP, low, FIELDS)
#define REPEAT_IN_BODY(num, UP, low, FIELDS)                                   \
  {                                                                            \
    typedef struct gpuphase_##low cur_t;                                       \
    REP_INDICES(FIELDS)                                                        \
    uint64_t *f = (uint64_t *)&s->last[num].u.low;                             \
    uint64_t dur = f[ei] - f[si] + (uint64_t)zd;                              \
    f[si] = f[ei] + g;                                                         \
    f[ei] = f[si] + dur;                                                       \
    if (rc) f[ci] += c;                                                        \
    *start = f[si];                                                            \
    *pp = p;                                                                   \
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
  uint64_t g, c = (tag & GP_REPEAT_CORR) != 0;
  int64_t zd; /* unzigzag(z) */
  if (!(p = rep_varint(p, end, &g))) return GPUPHASE_E_CORRUPT;
  if (__builtin_expect(*p < 0x80, 1))
    zd = unzz7[*p++];
  else if (!(p = delta_at(unzz7, p, end, &zd)))
    return GPUPHASE_E_CORRUPT;
  if (p > end) return GPUPHASE_E_CORRUPT;
  unsigned kind = tag & GP_REPEAT_KIND_MASK;
  /* a launch loop's calls and kernels, what repeat records mostly are,
   * before the jump table */
  if (kind == GPUPHASE_REC_API)
    REPEAT_IN_BODY(GPUPHASE_REC_API, API, api, GPUPHASE_FIELDS_API)
  if (kind == GPUPHASE_REC_KERNEL)
    REPEAT_IN_BODY(GPUPHASE_REC_KERNEL, KERNEL, kernel, GPUPHASE_FIELDS_KERNEL)
  switch (kind) { GPUPHASE_RECORD_KINDS(REPEAT_IN_CASE) }
  *pp = p;
  return 0;
}

static inline __attribute__((always_inline)) int
gp_decode_in(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
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
    /* the prefixes and the payload within the frame, in one test: p < end,
     * and len + 2 cannot wrap */
    if (len + 2 > (uint64_t)(end - p)) return GPUPHASE_E_CORRUPT;
    p += 2;
  } else {
    struct gp_vr k = prefix_at(p, end), l = {NULL, 0};
    if (!k.p || !(l = prefix_at(k.p, end)).p || l.v > (uint64_t)(end - l.p))
      return GPUPHASE_E_CORRUPT;
    kind = k.v;
    len = l.v;
    p = l.p;
  }
  /* a training loop's kernels and calls, what whole records mostly are,
   * before the jump table */
  if (kind == GPUPHASE_REC_KERNEL)
    return decode_in_kernel(pp, p, p + len, &s->last[kind].u.kernel, start);
  if (kind == GPUPHASE_REC_API)
    return decode_in_api(pp, p, p + len, &s->last[kind].u.api, start);
  switch (kind) {
#define DECODE_IN_CASE(num, UP, low, FIELDS)                                   \
  case num:                                                                    \
    return decode_in_##low(pp, p, p + len, &s->last[num].u.low, start);
    GPUPHASE_RECORD_KINDS(DECODE_IN_CASE)
  }
  *pp = p + len;
  return 0;
}

#undef UZ1
#undef UZ4
#undef UZ16
#undef UZ64
#undef IN_DELTA
#undef IN_V
#undef IN_E
#undef IN_B
#undef IN_FIELD
#undef IS_BLOB
#undef SAVE_V
#undef SAVE_B
#undef SAVE_E
#undef SAVE_FIELD
#undef END_V
#undef END_B
#undef END_E
#undef END_FIELD
#undef DECODE_IN_KIND
#undef REPEAT_IN_CASE
#undef REPEAT_IN_BODY

#endif
