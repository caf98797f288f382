/* The record encoder against the format document: a few records whose
 * bytes are worked out by hand below, then long random sequences of every
 * kind compared byte for byte with a reference encoder written here from
 * docs/format.md section 4 (it learns only the field list, through
 * gp_record_fields), and decoded back. */
#include <string.h>

#include "codec.h"
#include "tt.h"

/* ---- reference encoder, straight from the document ---- */

struct ref_field {
  char coding;
  uint64_t v;
  const gpuphase_blob *b;
  int is_start, is_end, is_corr;
};

struct ref_rec {
  struct ref_field f[GP_MAX_FIELDS];
  int n;
};

static void ref_collect(void *ctx, const char *name, char coding, uint64_t v,
                        const gpuphase_blob *b) {
  struct ref_rec *r = ctx;
  r->f[r->n++] = (struct ref_field){coding, v, b, !strcmp(name, "start"),
                                    coding == 'E' && !strcmp(name, "end"),
                                    !strcmp(name, "corr")};
}

static size_t ref_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    p[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) p[n] |= 0x80;
    n++;
  } while (v);
  return n;
}

/* prev[kind][field]: the previous record's value of the field in this
 * frame (for E fields: its end - start). */
struct ref_state {
  uint64_t prev[GPUPHASE_REC_MAX][GP_MAX_FIELDS];
};

static size_t ref_encode(uint8_t *out, struct ref_state *st,
                         const struct gpuphase_record *rec) {
  struct ref_rec r = {.n = 0};
  CHECK(gp_record_fields(rec, ref_collect, &r) > 0);
  uint64_t start = 0, z[GP_MAX_FIELDS];
  int si = -1, ei = -1, ci = -1;
  for (int i = 0; i < r.n; i++) {
    if (r.f[i].is_start) start = r.f[i].v, si = i;
    if (r.f[i].is_end) ei = i;
    if (r.f[i].is_corr) ci = i;
  }
  /* the repeat form (format version 5): a kind with start and end, no
   * other field changed but corr, by 0 or 1, start not before the
   * previous end */
  int repeat = si >= 0 && ei >= 0;
  uint64_t prev_end = 0, dcorr = 0;
  if (repeat) prev_end = st->prev[rec->kind][si] + st->prev[rec->kind][ei];
  int used = 0;
  for (int i = 0; i < r.n; i++) {
    uint64_t *prev = &st->prev[rec->kind][i];
    if (r.f[i].coding == 'B') {
      z[i] = r.f[i].b->len;
    } else {
      uint64_t x = r.f[i].coding == 'E' ? r.f[i].v - start : r.f[i].v;
      uint64_t d = x - *prev;
      z[i] = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
      *prev = x;
      if (i == ci) dcorr = d;
      else if (d && i != si && i != ei) repeat = 0;
    }
    if (z[i]) used = i + 1; /* trailing zero deltas and empty blobs go */
  }
  if (repeat && dcorr <= 1 && start >= prev_end) {
    out[0] = (uint8_t)(0x80 | dcorr << 6 | rec->kind);
    size_t n = 1 + ref_varint(out + 1, start - prev_end);
    return n + ref_varint(out + n, z[ei]);
  }
  static uint8_t payload[1 << 20];
  size_t plen = 0;
  for (int i = 0; i < used; i++) {
    plen += ref_varint(payload + plen, z[i]);
    if (r.f[i].coding == 'B') {
      memcpy(payload + plen, r.f[i].b->data, z[i]);
      plen += z[i];
    }
  }
  size_t n = ref_varint(out, rec->kind);
  n += ref_varint(out + n, plen);
  memcpy(out + n, payload, plen);
  return n + plen;
}

/* ---- hand-worked records ---- */

static size_t encode_all(uint8_t *buf, const struct gpuphase_record *r,
                         size_t n) {
  struct gp_delta d;
  gp_delta_reset(&d);
  size_t len = 0;
  for (size_t i = 0; i < n; i++)
    len += gp_encode_record(buf + len, &d, &r[i]);
  return len;
}

static struct gpuphase_record kernel(uint64_t corr, uint64_t start) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_KERNEL};
  r.u.kernel = (struct gpuphase_kernel){.stream = 13,
                                        .corr = corr,
                                        .start = start,
                                        .end = start + 9000,
                                        .name = 1,
                                        .grid_x = 4096,
                                        .grid_y = 1,
                                        .grid_z = 1,
                                        .block_x = 256,
                                        .block_y = 1,
                                        .block_z = 1,
                                        .regs = 32};
  return r;
}

/* Two kernels 10 us apart. The first against 0: stream 13 -> 26 = 1a,
 * corr 1 -> 02, start 10000 -> 20000 = a0 9c 01, end x = 9000 -> 18000 =
 * d0 8c 01, name 1 -> 02, grid_x 4096 -> 8192 = 80 40, grid_y/z 1 -> 02,
 * block_x 256 -> 512 = 80 04, block_y/z 02, regs 32 -> 64 = 40; the
 * smem, graph_id and flags zeros are left out: 19 bytes. The second
 * repeats the first but for its times and corr (+1): tag 80 | 40 | 6 =
 * c6, start - the first's end = 1000 = e8 07, the same duration 00. A
 * third with corr +2 is written in full: device and stream 00, corr +2 =
 * 04, start +10000 = a0 9c 01, the rest zero deltas, left out. */
static void test_kernel_bytes(void) {
  static const uint8_t want[] = {
      0x06, 0x13, 0x00, 0x1a, 0x02, 0xa0, 0x9c, 0x01, 0xd0, 0x8c, 0x01,
      0x02, 0x80, 0x40, 0x02, 0x02, 0x80, 0x04, 0x02, 0x02, 0x40, /* 1 */
      0xc6, 0xe8, 0x07, 0x00,                                     /* 2 */
      0x06, 0x06, 0x00, 0x00, 0x04, 0xa0, 0x9c, 0x01};            /* 3 */
  struct gpuphase_record r[3] = {kernel(1, 10000), kernel(2, 20000),
                                 kernel(4, 30000)};
  uint8_t buf[1024];
  size_t n = encode_all(buf, r, 3);
  CHECK_EQ_U(n, sizeof want);
  CHECK(!memcmp(buf, want, sizeof want));
}

/* Every DEVICE field 2^62: zigzag 2^63, whose varint is nine 80 bytes and
 * 01. 16 fields make a 160-byte payload, so the length takes two bytes
 * (a0 01). The same record again has only zero deltas: an empty payload. */
static void test_long_payload_bytes(void) {
  struct gpuphase_record r[2];
  memset(r, 0, sizeof r);
  r[0].kind = GPUPHASE_REC_DEVICE;
  uint64_t *f = (uint64_t *)&r[0].u.device;
  for (size_t i = 0; i < sizeof r[0].u.device / 8; i++)
    f[i] = 1ull << 62;
  r[1] = r[0];
  uint8_t want[3 + 160 + 2], buf[1024];
  want[0] = 0x04, want[1] = 0xa0, want[2] = 0x01;
  for (int i = 0; i < 16; i++) {
    memset(want + 3 + 10 * i, 0x80, 9);
    want[3 + 10 * i + 9] = 0x01;
  }
  want[163] = 0x04, want[164] = 0x00;
  CHECK_EQ_U(sizeof r[0].u.device / 8, 16);
  size_t n = encode_all(buf, r, 2);
  CHECK_EQ_U(n, sizeof want);
  CHECK(!memcmp(buf, want, sizeof want));
}

/* STRING id 1 with 200 bytes: id 1 -> 02, length 200 (no zigzag for a
 * blob) = c8 01, the bytes; payload 203 = cb 01. */
static void test_string_bytes(void) {
  char text[200];
  memset(text, 'k', sizeof text);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_STRING};
  r.u.string.id = 1;
  r.u.string.text = (gpuphase_blob){text, sizeof text};
  uint8_t buf[512];
  size_t n = encode_all(buf, &r, 1);
  static const uint8_t head[] = {0x01, 0xcb, 0x01, 0x02, 0xc8, 0x01};
  CHECK_EQ_U(n, sizeof head + sizeof text);
  CHECK(!memcmp(buf, head, sizeof head));
  CHECK(!memcmp(buf + sizeof head, text, sizeof text));
}

static void test_unknown_kind(void) {
  struct gpuphase_record r = {.kind = 99};
  struct gp_delta d;
  gp_delta_reset(&d);
  CHECK_EQ_U(gp_record_bound(&r), 0);
  CHECK_EQ_U(gp_encode_record(NULL, &d, &r), 0); /* writes nothing */
  r.kind = 0;
  CHECK_EQ_U(gp_encode_record(NULL, &d, &r), 0);
}

/* ---- random sequences against the reference ---- */

/* Values as a steady stream makes them (unchanged or a small step) mixed
 * with the magnitudes where varint lengths change and with wrap-around. */
static uint64_t next_value(uint64_t prev, uint64_t *rng) {
  static const uint64_t edges[] = {0,
                                   1,
                                   127,
                                   128,
                                   16383,
                                   16384,
                                   (1u << 21) - 1,
                                   1u << 21,
                                   UINT64_MAX,
                                   1ull << 63,
                                   (uint64_t)INT64_MAX};
  uint64_t r = tt_rand(rng);
  switch (r % 8) {
  case 0:
  case 1:
  case 2:
    return prev;
  case 3:
    return prev + 1 + (r >> 8) % 300;
  case 4:
    return prev - (r >> 8) % 300;
  case 5:
    return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
  case 6:
    return prev + (r >> 8) % (1u << 22);
  default:
    return r;
  }
}

/* Blob lengths on both sides of the one-, two- and three-byte lengths of
 * the blob and of the payload. */
static size_t blob_len(uint64_t *rng) {
  static const size_t lens[] = {0,     1,     2,     124,   125,   126,
                                127,   128,   129,   200,   16379, 16380,
                                16381, 16383, 16384, 16385, 70000};
  return lens[tt_rand(rng) % (sizeof lens / sizeof lens[0])];
}

static char blob_bytes[70000];

#define STEP_V(type, name) x->name = (type)next_value((uint64_t)p->name, rng);
#define STEP_E STEP_V
#define STEP_B(type, name) x->name = (gpuphase_blob){blob_bytes, blob_len(rng)};
#define STEP_FIELD(code, type, name) STEP_##code(type, name)
#define STEP_KIND(num, UP, low, FIELDS)                                        \
  static void step_##low(struct gpuphase_##low *x,                             \
                         const struct gpuphase_##low *p, uint64_t *rng) {      \
    FIELDS(STEP_FIELD)                                                         \
  }
GPUPHASE_RECORD_KINDS(STEP_KIND)

/* The next record of prev's kind. */
static void step(struct gpuphase_record *r, const struct gpuphase_record *prev,
                 uint64_t *rng) {
  *r = *prev;
  switch (r->kind) {
#define STEP_CASE(num, UP, low, FIELDS)                                        \
  case num:                                                                    \
    step_##low(&r->u.low, &prev->u.low, rng);                                  \
    break;
    GPUPHASE_RECORD_KINDS(STEP_CASE)
  }
  if (r->kind == GPUPHASE_REC_STRING && !r->u.string.id)
    r->u.string.id = 1; /* id 0 is corrupt by definition */
}

/* Records that may take the repeat form: a third of them repeat the
 * previous record but for start, end and corr (the same, one more, or
 * another step). */
static void repeat_step(struct gpuphase_record *r,
                        const struct gpuphase_record *prev, uint64_t *rng) {
  *r = *prev;
  const struct gp_kind_desc *k = gp_kind_desc(r->kind);
  for (unsigned i = 0; i < k->nfields; i++) {
    uint64_t *f = (uint64_t *)((char *)&r->u + k->fields[i].offset);
    const char *name = k->fields[i].name;
    if (!strcmp(name, "corr"))
      *f += tt_rand(rng) % 3;
    else if (!strcmp(name, "start") || !strcmp(name, "end"))
      *f = next_value(*f, rng);
  }
}

/* One record: the encoder's bytes must be the reference's, stay within
 * gp_record_bound (the canary after it), and decode back to the record. */
static int check_one(const struct gpuphase_record *rec, struct gp_delta *enc,
                     struct ref_state *ref, struct gp_delta *dec) {
  static uint8_t want[1 << 20];
  size_t bound = gp_record_bound(rec);
  uint8_t *buf = malloc(bound + 8);
  memset(buf + bound, 0xa5, 8);
  size_t n = gp_encode_record(buf, enc, rec);
  size_t m = ref_encode(want, ref, rec);
  int ok = n == m && n <= bound && !memcmp(buf, want, n);
  for (int i = 0; i < 8; i++)
    ok &= buf[bound + i] == 0xa5;
  const uint8_t *p = buf;
  struct gpuphase_record out;
  ok &= gp_decode_record(&p, buf + n, dec, &out) == 1 && p == buf + n &&
        tt_rec_equal(&out, rec, 1);
  free(buf);
  if (!ok)
    fprintf(stderr, "kind %u: %zu bytes encoded, reference %zu, bound %zu\n",
            rec->kind, n, m, bound);
  return ok;
}

/* Kinds interleaved at random in one delta state, as in a frame, with the
 * state reset now and then as at a frame cut. */
static void test_random(void) {
  for (size_t i = 0; i < sizeof blob_bytes; i++)
    blob_bytes[i] = (char)(i * 7 + 3);
  struct gpuphase_record last[GPUPHASE_REC_MAX];
  memset(last, 0, sizeof last);
  for (uint32_t k = 1; k < GPUPHASE_REC_MAX; k++)
    last[k].kind = k;
  static struct ref_state ref;
  struct gp_delta enc, dec;
  uint64_t rng = 1234, fails = 0, seen[GPUPHASE_REC_MAX] = {0};
  for (int i = 0; i < 200000 && fails < 5; i++) {
    if (i % 1000 == 0) {
      memset(&ref, 0, sizeof ref);
      gp_delta_reset(&enc);
      gp_delta_reset(&dec);
    }
    uint32_t kind = 1 + (uint32_t)(tt_rand(&rng) % (GPUPHASE_REC_MAX - 1));
    struct gpuphase_record r;
    step(&r, &last[kind], &rng);
    if (gp_kind_in(GP_REPEAT_KINDS, kind) && tt_rand(&rng) % 3 == 0)
      repeat_step(&r, &last[kind], &rng);
    last[kind] = r;
    seen[kind]++;
    fails += !check_one(&r, &enc, &ref, &dec);
  }
  CHECK_EQ_U(fails, 0);
  for (uint32_t k = 1; k < GPUPHASE_REC_MAX; k++)
    CHECK(seen[k] > 1000);
}

int main(void) {
  test_kernel_bytes();
  test_long_payload_bytes();
  test_string_bytes();
  test_unknown_kind();
  test_random();
  return tt_done("test_encode");
}
