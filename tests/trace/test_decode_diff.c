/* The reader decodes with gp_decode_next (in place, word loads for
 * varints); gp_decode_record is the reference decoder written from
 * docs/format.md. Both must accept and reject exactly the same payloads and
 * agree on every field: random records of every kind with values of every
 * width, then the same payloads with bytes flipped, cut or inserted. */
#include <string.h>

#include "codec.h"
#include "tt.h"

#define NREC 400
#define CAP (NREC * (GP_RECORD_FIXED_MAX + 64) + GP_DECODE_PAD)

static uint64_t seed = 0x5eed1234abcdull;

/* A value whose varint takes 1 to 10 bytes, sign and width varied. */
static uint64_t any_value(void) {
  uint64_t r = tt_rand(&seed);
  unsigned bits = (unsigned)(tt_rand(&seed) % 65);
  uint64_t v = bits == 64 ? r : r & ((UINT64_C(1) << bits) - 1);
  return tt_rand(&seed) & 1 ? v : (uint64_t)0 - v;
}

static char blobs[NREC][24];

static void random_record(struct gpuphase_record *r, int i) {
  memset(r, 0, sizeof *r);
  r->kind = 1 + (uint32_t)(tt_rand(&seed) % (GPUPHASE_REC_MAX - 1));
  const struct gp_kind_desc *k = gp_kind_desc(r->kind);
  for (unsigned f = 0; f < k->nfields; f++) {
    char *at = (char *)&r->u + k->fields[f].offset;
    if (k->fields[f].coding == 'B') {
      size_t n = tt_rand(&seed) % sizeof blobs[i];
      for (size_t j = 0; j < n; j++)
        blobs[i][j] = (char)tt_rand(&seed);
      gpuphase_blob b = {.data = blobs[i], .len = n};
      memcpy(at, &b, sizeof b);
    } else {
      /* small deltas most of the time, as in real traces */
      uint64_t v = tt_rand(&seed) % 4 ? tt_rand(&seed) % 5000 : any_value();
      memcpy(at, &v, sizeof v);
    }
  }
  if (r->kind == GPUPHASE_REC_STRING && r->u.string.id == 0)
    r->u.string.id = 1;
}

static int field_equal(const struct gpuphase_record *a,
                       const struct gpuphase_record *b) {
  if (a->kind != b->kind) return 0;
  const struct gp_kind_desc *k = gp_kind_desc(a->kind);
  for (unsigned f = 0; f < k->nfields; f++) {
    const char *x = (const char *)&a->u + k->fields[f].offset;
    const char *y = (const char *)&b->u + k->fields[f].offset;
    if (k->fields[f].coding == 'B') {
      gpuphase_blob bx, by;
      memcpy(&bx, x, sizeof bx);
      memcpy(&by, y, sizeof by);
      if (bx.len != by.len || memcmp(bx.data, by.data, bx.len)) return 0;
    } else if (memcmp(x, y, 8)) {
      return 0;
    }
  }
  return 1;
}

/* Decodes buf[0, len) both ways; counts disagreements. Returns the number
 * of records both accepted. */
static int compare(const uint8_t *buf, size_t len) {
  struct gp_delta d;
  gp_delta_reset(&d);
  static struct gp_dstate s;
  gp_dstate_reset(&s);
  const uint8_t *p = buf, *q = buf, *end = buf + len;
  int n = 0;
  while (p < end) {
    struct gpuphase_record ref;
    int a = gp_decode_record(&p, end, &d, &ref);
    uint64_t start = 0;
    int b = gp_decode_next(&q, end, &s, &start);
    if (a < 0 || b < 0) {
      CHECK(a < 0 && b < 0);
      return n;
    }
    CHECK(p == q);
    if (a == 0) {
      CHECK_EQ_U(b, 0);
      continue;
    }
    CHECK_EQ_U((unsigned)b, ref.kind);
    if (b > 0 && (unsigned)b == ref.kind) {
      CHECK(field_equal(&ref, &s.last[b]));
      int has;
      uint64_t want = gp_record_start(&ref, &has);
      if (has) CHECK_EQ_U(start, want);
    }
    n++;
  }
  return n;
}

int main(void) {
  static uint8_t buf[CAP], mut[CAP];
  static struct gpuphase_record recs[NREC];
  struct gp_delta d;
  for (int round = 0; round < 40; round++) {
    gp_delta_reset(&d);
    size_t len = 0;
    for (int i = 0; i < NREC; i++) {
      random_record(&recs[i], i);
      len += gp_encode_record(buf + len, &d, &recs[i]);
    }
    memset(buf + len, 0, GP_DECODE_PAD);
    CHECK_EQ_U(compare(buf, len), NREC);
    /* the reference decoder gives back what was encoded */
    struct gp_delta dd;
    gp_delta_reset(&dd);
    const uint8_t *p = buf;
    for (int i = 0; i < NREC; i++) {
      struct gpuphase_record r;
      CHECK(gp_decode_record(&p, buf + len, &dd, &r) == 1);
      CHECK(field_equal(&r, &recs[i]));
    }
    /* damaged copies: both decoders must agree record by record */
    for (int m = 0; m < 200; m++) {
      size_t n = len;
      memcpy(mut, buf, len);
      size_t at = tt_rand(&seed) % len;
      switch (tt_rand(&seed) % 4) {
      case 0: mut[at] ^= (uint8_t)(1u << (tt_rand(&seed) % 8)); break;
      case 1: mut[at] = 0xff; break;
      case 2: n = at; break; /* cut */
      default: /* a run of continuation bytes */
        for (size_t j = at; j < len && j < at + 12; j++) mut[j] |= 0x80;
      }
      memset(mut + n, 0, GP_DECODE_PAD);
      compare(mut, n);
    }
  }
  /* an unknown kind is skipped by both, and the next record still read */
  const uint8_t skip[] = {0x3f, 0x02, 0x01, 0x02, 0x0b, 0x01, 0x06,
                          0,    0,    0,    0,    0,    0,    0,
                          0,    0,    0,    0,    0,    0,    0,
                          0,    0,    0};
  CHECK_EQ_U(compare(skip, 7), 1);
  /* a two- or three-byte varint cut by the end of its payload, with the
   * next record's bytes (below 0x80) behind it: corrupt for both */
  const uint8_t cut2[] = {GPUPHASE_REC_LOST, 0x02, 0x00, 0x85, 0x01, 0x00, 0,
                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK_EQ_U(compare(cut2, 6), 0);
  const uint8_t cut3[] = {GPUPHASE_REC_LOST, 0x03, 0x00, 0x85, 0x85, 0x01, 0x00,
                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK_EQ_U(compare(cut3, 7), 0);
  /* the same varints whole: accepted, and the record after them read */
  const uint8_t whole[] = {GPUPHASE_REC_LOST, 0x03, 0x00, 0x85, 0x01,
                           GPUPHASE_REC_LOST, 0x04, 0x00, 0x85, 0x85, 0x01,
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK_EQ_U(compare(whole, 11), 2);
  return tt_done("decode-diff");
}
