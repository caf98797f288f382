/* Codec unit tests. Expected bytes are worked out by hand from the rules
 * in docs/format.md (the same example is written out there). */
#include <string.h>

#include "codec.h"
#include "tt.h"

static void test_varint(void) {
  static const struct {
    uint64_t v;
    uint8_t bytes[10];
    size_t n;
  } cases[] = {
      {0, {0x00}, 1},
      {127, {0x7f}, 1},
      {128, {0x80, 0x01}, 2},
      {300, {0xac, 0x02}, 2},
      {UINT64_MAX,
       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
       10},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t buf[16];
    size_t n = gp_put_varint(buf, cases[i].v);
    CHECK_EQ_U(n, cases[i].n);
    CHECK(!memcmp(buf, cases[i].bytes, cases[i].n));
    const uint8_t *p = buf;
    uint64_t v;
    CHECK(gp_get_varint(&p, buf + n, &v) == 0);
    CHECK_EQ_U(v, cases[i].v);
    CHECK(p == buf + n);
    /* one byte short must not read past the end */
    p = buf;
    CHECK(gp_get_varint(&p, buf + n - 1, &v) == GPUPHASE_E_CORRUPT);
  }
  const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                            0x80, 0x80, 0x80, 0x80, 0x01};
  const uint8_t *p = eleven;
  uint64_t v;
  CHECK(gp_get_varint(&p, eleven + 11, &v) == GPUPHASE_E_CORRUPT);
  /* a tenth byte above 1 would need bit 64 */
  const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff,
                          0xff, 0xff, 0xff, 0xff, 0x02};
  p = over;
  CHECK(gp_get_varint(&p, over + 10, &v) == GPUPHASE_E_CORRUPT);
}

static void test_zigzag(void) {
  CHECK_EQ_U(gp_zigzag(0), 0);
  CHECK_EQ_U(gp_zigzag((uint64_t)-1), 1);
  CHECK_EQ_U(gp_zigzag(1), 2);
  CHECK_EQ_U(gp_zigzag((uint64_t)-2), 3);
  CHECK_EQ_U(gp_zigzag((uint64_t)INT64_MIN), UINT64_MAX);
  CHECK_EQ_U(gp_zigzag((uint64_t)INT64_MAX), UINT64_MAX - 1);
  for (uint64_t v = 0; v < 1000; v++)
    CHECK_EQ_U(gp_unzigzag(gp_zigzag(v * 0x9e3779b97f4a7c15ull)),
               v * 0x9e3779b97f4a7c15ull);
}

static struct gpuphase_record api(uint64_t start, uint64_t end, uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){.thread = 1,
                                  .api = 7,
                                  .start = start,
                                  .end = end,
                                  .corr = corr,
                                  .func = 4096,
                                  .grid = 64,
                                  .block = 256};
  return r;
}

/* The worked example of docs/format.md, byte for byte. */
static const uint8_t example[] = {
    /* first API record: every field against 0 */
    0x05, 0x12, 0x02, 0x0e, 0xd0, 0x0f, 0xac, 0x02, 0x00, 0x54, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x40, 0x80, 0x01, 0x80, 0x04,
    /* second: a repeat of the first (corr one more): start - the first's
     * end, 50; duration 90 - 150 = -60, zigzag 119 */
    0xc5, 0x32, 0x77};

static void test_example(void) {
  struct gpuphase_record a = api(1000, 1150, 42), b = api(1200, 1290, 43);
  struct gp_delta d;
  gp_delta_reset(&d);
  uint8_t buf[512];
  CHECK(gp_record_bound(&a) <= sizeof buf / 2);
  size_t n = gp_encode_record(buf, &d, &a);
  n += gp_encode_record(buf + n, &d, &b);
  CHECK_EQ_U(n, sizeof example);
  CHECK(!memcmp(buf, example, sizeof example));

  gp_delta_reset(&d);
  const uint8_t *p = example, *end = example + sizeof example;
  struct gpuphase_record out;
  CHECK(gp_decode_record(&p, end, &d, &out) == 1);
  CHECK(tt_rec_equal(&out, &a, 1));
  CHECK(gp_decode_record(&p, end, &d, &out) == 1);
  CHECK(tt_rec_equal(&out, &b, 1));
  CHECK(p == end);
}

static int decode1(const uint8_t *buf, size_t n, struct gpuphase_record *out,
                   const uint8_t **next) {
  struct gp_delta d;
  gp_delta_reset(&d);
  const uint8_t *p = buf;
  int rc = gp_decode_record(&p, buf + n, &d, out);
  if (next) *next = p;
  return rc;
}

static void test_malformed(void) {
  struct gpuphase_record r;
  /* length past the end */
  const uint8_t len_past[] = {0x05, 0x05, 0x02};
  CHECK(decode1(len_past, sizeof len_past, &r, NULL) == GPUPHASE_E_CORRUPT);
  /* blob past the end of its record */
  const uint8_t blob_past[] = {0x01, 0x03, 0x02, 0x05, 'a'};
  CHECK(decode1(blob_past, sizeof blob_past, &r, NULL) == GPUPHASE_E_CORRUPT);
  /* string id 0 */
  const uint8_t id0[] = {0x01, 0x03, 0x00, 0x01, 'a'};
  CHECK(decode1(id0, sizeof id0, &r, NULL) == GPUPHASE_E_CORRUPT);
  /* repeat records: an 11-byte varint, a varint past the end, a kind
   * without start and end (STRING, THREAD), corr advanced in a kind
   * without corr (SAMPLE) */
  const uint8_t long_g[] = {0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                            0x80, 0x80, 0x80, 0x80, 0x01, 0x00};
  CHECK(decode1(long_g, sizeof long_g, &r, NULL) == GPUPHASE_E_CORRUPT);
  const uint8_t rep_past[] = {0x85, 0x05, 0x80};
  CHECK(decode1(rep_past, sizeof rep_past, &r, NULL) == GPUPHASE_E_CORRUPT);
  CHECK(decode1(rep_past, 2, &r, NULL) == GPUPHASE_E_CORRUPT);
  const uint8_t rep_string[] = {0x81, 0x00, 0x00};
  CHECK(decode1(rep_string, sizeof rep_string, &r, NULL) == GPUPHASE_E_CORRUPT);
  const uint8_t rep_thread[] = {0xc2, 0x00, 0x00};
  CHECK(decode1(rep_thread, sizeof rep_thread, &r, NULL) == GPUPHASE_E_CORRUPT);
  const uint8_t rep_sample[] = {0xd3, 0x00, 0x00};
  CHECK(decode1(rep_sample, sizeof rep_sample, &r, NULL) == GPUPHASE_E_CORRUPT);
  /* a field varint cut by its record's length */
  const uint8_t cut_field[] = {0x05, 0x01, 0x80, 0x01};
  CHECK(decode1(cut_field, sizeof cut_field, &r, NULL) == GPUPHASE_E_CORRUPT);
  /* nothing at all */
  CHECK(decode1(len_past, 0, &r, NULL) == GPUPHASE_E_CORRUPT);
}

static void test_compat(void) {
  struct gpuphase_record r;
  const uint8_t *next;
  /* unknown kind 99: skipped by its length */
  const uint8_t unknown[] = {0x63, 0x02, 0xaa, 0xbb, 0x05, 0x00};
  CHECK(decode1(unknown, sizeof unknown, &r, &next) == 0);
  CHECK(next == unknown + 4);
  /* a repeat record of an unknown kind (40): skipped, tag and two
   * varints; of SAMPLE: the fields of the zero state, times moved */
  const uint8_t rep_unknown[] = {0xe8, 0x81, 0x01, 0x00, 0x05};
  CHECK(decode1(rep_unknown, sizeof rep_unknown, &r, &next) == 0);
  CHECK(next == rep_unknown + 4);
  const uint8_t rep_first[] = {0x93, 0xe8, 0x07, 0x14};
  CHECK(decode1(rep_first, sizeof rep_first, &r, &next) == 1);
  CHECK(next == rep_first + sizeof rep_first);
  CHECK_EQ_U(r.kind, GPUPHASE_REC_SAMPLE);
  CHECK_EQ_U(r.u.sample.start, 1000);
  CHECK_EQ_U(r.u.sample.end, 1010);
  CHECK(r.u.sample.metric == 0 && r.u.sample.value == 0);
  /* SUMMARY with two extra fields a newer writer appended */
  const uint8_t extra[] = {0x0d, 0x06, 0x14, 0x02, 0x00, 0x06, 0x7f, 0x01};
  CHECK(decode1(extra, sizeof extra, &r, &next) == 1);
  CHECK(next == extra + sizeof extra);
  CHECK_EQ_U(r.kind, GPUPHASE_REC_SUMMARY);
  CHECK_EQ_U(r.u.summary.events, 10);
  CHECK_EQ_U(r.u.summary.lost, 1);
  CHECK_EQ_U(r.u.summary.flags, 0);
  CHECK_EQ_U(r.u.summary.end, 3);
  /* missing fields repeat the previous record's values */
  struct gp_delta d;
  gp_delta_reset(&d);
  const uint8_t two[] = {0x04, 0x03, 0x06, 0x04, 0x02, 0x04, 0x01, 0x02};
  const uint8_t *p = two;
  CHECK(gp_decode_record(&p, two + sizeof two, &d, &r) == 1);
  CHECK_EQ_U(r.u.device.device, 3);
  CHECK_EQ_U(r.u.device.name, 2);
  CHECK_EQ_U(r.u.device.sms, 1);
  CHECK_EQ_U(r.u.device.mem_total, 0);
  CHECK(gp_decode_record(&p, two + sizeof two, &d, &r) == 1);
  CHECK_EQ_U(r.u.device.device, 4);
  CHECK_EQ_U(r.u.device.name, 2);
  CHECK_EQ_U(r.u.device.sms, 1);
  /* a negative int64 field: -1 against 0 is zigzag 1 */
  const uint8_t neg[] = {0x05, 0x07, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01};
  CHECK(decode1(neg, sizeof neg, &r, NULL) == 1);
  CHECK(r.u.api.ret == -1);
  CHECK(r.u.api.device == -1);
  CHECK_EQ_U(r.u.api.end, 0);
}

struct names {
  char buf[512];
  char codes[32];
  int n;
};

static void collect(void *ctx, const char *name, char coding, uint64_t v,
                    const gpuphase_blob *b) {
  struct names *s = ctx;
  (void)v;
  (void)b;
  strcat(s->buf, name);
  strcat(s->buf, " ");
  s->codes[s->n++] = coding;
}

static void test_names(void) {
  CHECK(!strcmp(gpuphase_kind_name(GPUPHASE_REC_API), "api"));
  CHECK(!strcmp(gpuphase_kind_name(1), "string"));
  CHECK(!strcmp(gpuphase_kind_name(13), "summary"));
  CHECK(gpuphase_kind_name(0) == NULL);
  CHECK(gpuphase_kind_name(GPUPHASE_REC_MAX) == NULL);
  struct gpuphase_record r = api(1, 2, 3);
  struct names s = {{0}, {0}, 0};
  /* fields may be appended to the table: check the ones known here */
#define ONE(code, type, name) +1
  CHECK(gp_record_fields(&r, collect, &s) == (0 GPUPHASE_FIELDS_API(ONE)));
  const char *first = "thread api start end ret corr device stream bytes "
                      "copy_kind func grid block flags ";
  CHECK(!strncmp(s.buf, first, strlen(first)));
  CHECK(!strncmp(s.codes, "VVVESVSVVVVVVV", 14));
  r.kind = 99;
  CHECK(gp_record_fields(&r, collect, &s) == GPUPHASE_E_ARG);
}

int main(void) {
  test_varint();
  test_zigzag();
  test_example();
  test_malformed();
  test_compat();
  test_names();
  return tt_done("test_codec");
}
