/* Record codec: descriptors generated from GPUPHASE_RECORD_KINDS, and the
 * column-delta encoding of records inside a frame payload (docs/format.md,
 * "Records"). Internal to trace/, tools and tests. */
#ifndef GP_TRACE_CODEC_H
#define GP_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "gpuphase/trace.h"

/* Longest LEB128 encoding of a 64-bit value. */
#define GP_VARINT_MAX 10

struct gp_field_desc {
  const char *name;
  uint16_t offset; /* within the kind's struct (= within rec->u) */
  char coding;     /* 'V', 'E' or 'B' as in trace_records.h */
  uint8_t is_signed;
};

struct gp_kind_desc {
  const char *name;
  const struct gp_field_desc *fields;
  uint16_t nfields;
  uint16_t slot;      /* first delta slot of this kind in struct gp_delta */
  uint16_t start_off; /* offset of the field named "start" if has_start */
  uint8_t has_start;
  uint8_t nends; /* number of E fields */
};

/* Delta slots: one per 8 bytes of each kind's struct, so a field's slot is
 * its offset / 8 within its kind's range (blob fields waste one). The enum
 * chain numbers the ranges kind after kind. */
enum {
#define GP_SLOT_ENUM(num, UP, low, FIELDS)                                     \
  GP_SLOT_##UP,                                                                \
      GP_SLOT_LAST_##UP =                                                      \
          GP_SLOT_##UP + sizeof(struct gpuphase_##low) / 8 - 1,
  GPUPHASE_RECORD_KINDS(GP_SLOT_ENUM)
#undef GP_SLOT_ENUM
      GP_SLOTS
};

/* The widest kind bounds the per-record scratch arrays. */
#define GP_MAX_FIELDS 32

/* Previous value of every field, per kind; all zero at a frame start. E
 * fields keep end - start. */
struct gp_delta {
  uint64_t prev[GP_SLOTS];
};

void gp_delta_reset(struct gp_delta *d);

/* Descriptor of a known kind, NULL otherwise. */
const struct gp_kind_desc *gp_kind_desc(uint32_t kind);

size_t gp_put_varint(uint8_t *dst, uint64_t v);
/* Reads one varint from [*pp, end). 0 on success (advances *pp),
 * GPUPHASE_E_CORRUPT if it runs past end, exceeds 10 bytes or 64 bits. */
int gp_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v);

static inline uint64_t gp_zigzag(uint64_t d) {
  return (d << 1) ^ (0 - (d >> 63));
}
static inline __attribute__((always_inline)) uint64_t gp_unzigzag(uint64_t z) {
  return (z >> 1) ^ (0 - (z & 1));
}

/* Upper bound of the encoded size of rec (kind and length prefixes
 * included); 0 for an unknown kind. */
size_t gp_record_bound(const struct gpuphase_record *rec);

/* Kind masks (bit k for kind k) built from the table, so that a hot path
 * can classify a kind without a descriptor lookup. */
#define GP_KIND_BIT(num, UP, low, FIELDS) | (UINT64_C(1) << num)
#define GP_IS_BLOB_V 0
#define GP_IS_BLOB_E 0
#define GP_IS_BLOB_B 1
#define GP_BLOB_FIELD(code, type, name) | GP_IS_BLOB_##code
#define GP_BLOB_KIND_BIT(num, UP, low, FIELDS)                                 \
  | ((uint64_t)(0 FIELDS(GP_BLOB_FIELD)) << num)
#define GP_IS_START(code, type, name)                                          \
  | (sizeof(#name) == 6 && (#name)[0] == 's' && (#name)[1] == 't' &&           \
     (#name)[2] == 'a' && (#name)[3] == 'r' && (#name)[4] == 't')
#define GP_TIMED_KIND_BIT(num, UP, low, FIELDS)                                \
  | ((uint64_t)(0 FIELDS(GP_IS_START)) << num)
#define GP_KNOWN_KINDS (0 GPUPHASE_RECORD_KINDS(GP_KIND_BIT))
/* kinds with a `start` field: the ones the sorted reader orders by time */
#define GP_TIMED_KINDS (0 GPUPHASE_RECORD_KINDS(GP_TIMED_KIND_BIT))
#define GP_BLOB_KINDS (0 GPUPHASE_RECORD_KINDS(GP_BLOB_KIND_BIT))
_Static_assert(GPUPHASE_REC_MAX <= 64, "kind masks hold 64 kinds");

/* Repeat records (format version 5, docs/format.md "Repeat records"): a
 * record of a kind with `start` and an E field `end` whose other fields
 * are those of the previous record of its kind in the frame (`corr` the
 * same or one more) takes a tag byte, 0x80 | GP_REPEAT_CORR (corr one
 * more) | kind, and two varints: start - the previous end, and the
 * zigzag of the change of end - start. Per kind, from the table: the
 * 8-byte index + 1 of start, of end and of corr (0: none). */
#define GP_REPEAT_TAG 0x80u
#define GP_REPEAT_CORR 0x40u
#define GP_REPEAT_KIND_MASK 0x3fu
#define GP_NAME_IS_END(s)                                                      \
  (sizeof(s) == 4 && (s)[0] == 'e' && (s)[1] == 'n' && (s)[2] == 'd')
#define GP_NAME_IS_CORR(s)                                                     \
  (sizeof(s) == 5 && (s)[0] == 'c' && (s)[1] == 'o' && (s)[2] == 'r' &&        \
   (s)[3] == 'r')
#define GP_REP_START(code, type, name)                                         \
  +((0 GP_IS_START(code, type, name)) ? offsetof(cur_t, name) / 8 + 1 : 0)
#define GP_REP_END(code, type, name)                                           \
  +((#code)[0] == 'E' && GP_NAME_IS_END(#name) ? offsetof(cur_t, name) / 8 + 1 \
                                               : 0)
#define GP_REP_CORR(code, type, name)                                          \
  +(GP_NAME_IS_CORR(#name) ? offsetof(cur_t, name) / 8 + 1 : 0)
#define GP_HAS_E_END(code, type, name)                                         \
  | ((#code)[0] == 'E' && GP_NAME_IS_END(#name))
#define GP_REPEAT_KIND_BIT(num, UP, low, FIELDS)                               \
  | ((uint64_t)((0 FIELDS(GP_IS_START)) && (0 FIELDS(GP_HAS_E_END))) << num)
/* kinds that may take the repeat form */
#define GP_REPEAT_KINDS (0 GPUPHASE_RECORD_KINDS(GP_REPEAT_KIND_BIT))

static inline int gp_kind_in(uint64_t mask, uint32_t kind) {
  return kind < 64 && (mask >> kind & 1);
}

/* gp_record_bound() of every record of a kind without blobs. */
#define GP_RECORD_FIXED_MAX ((2 + GP_MAX_FIELDS) * GP_VARINT_MAX)

/* Encodes rec at dst (which has gp_record_bound() bytes) and advances the
 * delta state. Returns the bytes written, 0 for an unknown kind. Bytes
 * past the returned length, up to the bound, may be overwritten. */
size_t gp_encode_record(uint8_t *dst, struct gp_delta *d,
                        const struct gpuphase_record *rec);

/* Decodes the record at *pp. Returns 1 (known kind: *out filled, blobs
 * point into the input), 0 (unknown kind skipped), or GPUPHASE_E_CORRUPT;
 * on success *pp is past the record. */
int gp_decode_record(const uint8_t **pp, const uint8_t *end, struct gp_delta *d,
                     struct gpuphase_record *out);

/* The reader's decoding path. A record's fields are deltas from the
 * previous record of its kind in the frame, so the decoder keeps that record
 * and updates it where it stands: the result is the state, and nothing is
 * copied per record. All zero (kinds set) at a frame start, like gp_delta. */
struct gp_dstate {
  struct gpuphase_record last[GPUPHASE_REC_MAX];
};

void gp_dstate_reset(struct gp_dstate *s);

/* Bytes past `end` that gp_decode_next may load (and ignore): multi-byte
 * varints are read with word loads. */
#define GP_DECODE_PAD 16

/* Decodes the record at *pp (< end) into s->last[kind]. Returns its kind
 * (>= 1; *start = its start field for kinds that have one, see
 * GP_TIMED_KINDS), 0 for an unknown kind (skipped), or GPUPHASE_E_CORRUPT;
 * on success *pp is past the record, on error it is left at the record
 * (the merge's loop keeps no copy of it for the error's offset). Accepts
 * and rejects exactly what gp_decode_record does; [*pp, end +
 * GP_DECODE_PAD) must be readable. */
int gp_decode_next(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
                   uint64_t *start);

/* gp_decode_next for the kinds of keep (bit k: kind k) only: a record of
 * another kind is passed over from its prefixes (or a repeat record's two
 * varints), undecoded and unchecked, and 0 returned as for an unknown
 * kind. Prefixes that run past end are still GPUPHASE_E_CORRUPT; *pp as
 * gp_decode_next leaves it. */
int gp_decode_kept(const uint8_t **pp, const uint8_t *end, struct gp_dstate *s,
                   uint64_t *start, uint64_t keep);

/* Bytes of a known kind's struct (sizeof rec->u.<kind>), 0 otherwise. */
size_t gp_kind_size(uint32_t kind);

/* Value of the record's `start` field; *has = 0 if its kind has none. */
uint64_t gp_record_start(const struct gpuphase_record *rec, int *has);

/* Calls cb for every field of rec in table order. coding is 'V'
 * (unsigned), 'S' (signed: v holds the two's complement), 'E' (end time)
 * or 'B' (blob in *b, v = its length). Returns the number of fields, or
 * GPUPHASE_E_ARG for an unknown kind. */
typedef void gp_field_cb(void *ctx, const char *name, char coding, uint64_t v,
                         const gpuphase_blob *b);
int gp_record_fields(const struct gpuphase_record *rec, gp_field_cb *cb,
                     void *ctx);

#endif
