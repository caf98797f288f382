/* Building blocks of the report: durations, name cleaning for terminals,
 * JSON escaping and structure, the duration histogram and the hash map. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "hist.h"
#include "jsonw.h"
#include "tl.h"
#include "u64map.h"
#include "util.h"

#define STREQ(got, want)                                                       \
  do {                                                                         \
    if (strcmp((got), (want)) != 0) {                                          \
      fprintf(stderr, "%s:%d: got \"%s\", expected \"%s\"\n", __FILE__,        \
              __LINE__, (got), (want));                                        \
      tl_failures++;                                                           \
    }                                                                          \
  } while (0)

static void test_durations(void) {
  static const struct {
    const char *s;
    uint64_t ns;
  } ok[] = {{"10ms", 10000000},   {"1s", 1000000000}, {"500us", 500000},
            {"2.5s", 2500000000}, {"100ns", 100},     {"1m", 60000000000},
            {"0.5us", 500}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    uint64_t ns = 0;
    EQ(gp_parse_duration(ok[i].s, &ns), 0);
    EQ(ns, ok[i].ns);
  }
  static const char *bad[] = {"",    "abc", "10",     "-5ms",  "0ms",  "10 ms",
                              "5xs", "ms",  "1e400s", "0.1ns", "nan s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t ns;
    if (!EQ(gp_parse_duration(bad[i], &ns), (uint64_t)-1))
      fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
  }
  char b[32];
  STREQ(gp_fmt_dur(b, sizeof b, 999), "999 ns");
  STREQ(gp_fmt_dur(b, sizeof b, 1500), "1.500 us");
  STREQ(gp_fmt_dur(b, sizeof b, 2500000000ull), "2.500 s");
  STREQ(gp_fmt_bytes(b, sizeof b, 512), "512 B");
  STREQ(gp_fmt_bytes(b, sizeof b, 1536.0 * 1024 * 1024), "1.5 GiB");
}

static void test_clean(void) {
  char out[128];
  gp_text_clean("k<&>\"\\\x01\x1b[31m\xff\xc3\xa9", out, sizeof out, 80);
  STREQ(out, "k<&>\"\\??[31m\xef\xbf\xbd\xc3\xa9");
  EQ(gp_text_clean("abcdefgh", out, sizeof out, 5), 5);
  STREQ(out, "abc..");
  EQ(gp_text_clean("\xc3\xa9\xc3\xa9\xc3\xa9", out, sizeof out, 3), 3);
  STREQ(out, "\xc3\xa9\xc3\xa9\xc3\xa9");
  gp_text_clean("\xc2\x9b"
                "x",
                out, sizeof out, 10); /* C1 CSI */
  STREQ(out, "?x");
  gp_text_clean(NULL, out, sizeof out, 10);
  STREQ(out, "");
}

static char *json_of(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  gp_json_quote(f, s);
  fclose(f);
  return buf;
}

static void test_json_quote(void) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"a\"b\\c\n\x01<\xc3\xa9\xff",
       "\"a\\\"b\\\\c\\n\\u0001\\u003c\xc3\xa9\\ufffd\""},
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},            /* overlong '/' */
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}, /* UTF-16 surrogate */
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* > U+10FFFF */
      {"\xe2\x80\xa8&>", "\"\\u2028\\u0026\\u003e\""},
      {"\x7f\t\r", "\"\\u007f\\t\\r\""},
      {"\xf0\x9f\x99\x82", "\"\xf0\x9f\x99\x82\""}, /* 4-byte emoji kept */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *got = json_of(cases[i].in);
    STREQ(got, cases[i].out);
    free(got);
  }
}

static void test_json_writer(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_json j;
  gp_json_init(&j, f, 0);
  gp_json_obj(&j, NULL);
  gp_json_u64(&j, "a", 1);
  gp_json_arr(&j, "b");
  gp_json_num(&j, NULL, 1.5, 2, 0);
  gp_json_num(&j, NULL, -1, 2, 1);
  gp_json_obj(&j, NULL);
  gp_json_end(&j);
  gp_json_end(&j);
  gp_json_str(&j, "c", NULL);
  gp_json_bool(&j, "d", 1);
  gp_json_i64(&j, "e", -3);
  gp_json_end(&j);
  fclose(f);
  STREQ(buf, "{\"a\":1,\"b\":[1.50,null,{}],\"c\":null,\"d\":true,\"e\":-3}\n");
  free(buf);
}

static void test_hist(void) {
  struct gp_hist h;
  gp_hist_init(&h);
  EQ(gp_hist_pct(&h, 50), 0);
  for (uint64_t v = 10; v <= 300; v += 10)
    gp_hist_add(&h, v);         /* 30 exact */
  EQ(gp_hist_pct(&h, 50), 150); /* rank 15 */
  EQ(gp_hist_pct(&h, 95), 290); /* rank ceil(28.5) = 29 */
  EQ(gp_hist_pct(&h, 100), 300);
  for (uint64_t v = 310; v <= 1000; v += 10)
    gp_hist_add(&h, v); /* 100 */
  /* rank 50 is 500: in [496,512), reported as 504 (within 1/32) */
  EQ(gp_hist_pct(&h, 50), 504);
  EQ(gp_hist_pct(&h, 100), 1000); /* clamped to the maximum */
  EQ(gp_hist_pct(&h, 0.5), 10);   /* clamped to the minimum */
  struct gp_hist m;
  gp_hist_init(&m);
  gp_hist_add(&m, 5);
  gp_hist_merge(&m, &h); /* 101 samples: 5, 10 ... 1000 */
  EQ(m.n, 101);
  EQ(m.min, 5);
  EQ(gp_hist_pct(&m, 0.5), 5); /* rank ceil(0.505) = 1 */
  EQ(m.sum, h.sum + 5);
  gp_hist_free(&h);
  gp_hist_free(&m);
}

static void test_map(void) {
  struct gp_u64map m = {0};
  for (uint64_t k = 0; k < 5000; k++)
    EQ(gp_u64map_put(&m, k * 7919, k), 0);
  for (uint64_t k = 0; k < 5000; k += 2)
    EQ(gp_u64map_del(&m, k * 7919, NULL), 1);
  EQ(m.n, 2500);
  for (uint64_t k = 0; k < 5000; k++) {
    uint64_t *v = gp_u64map_get(&m, k * 7919);
    if (k % 2)
      EQ(v ? *v : UINT64_MAX, k);
    else
      EQ(v == NULL, 1);
  }
  gp_u64map_free(&m);
  struct gp_idx x = {0};
  uint32_t v = 0;
  EQ(gp_idx_put(&x, 3, 30), 0);
  EQ(gp_idx_put(&x, (uint64_t)1 << 40, 40), 0);
  EQ(gp_idx_put(&x, (uint64_t)-1, 50), 0);
  EQ(gp_idx_get(&x, 3, &v) && v == 30, 1);
  EQ(gp_idx_get(&x, (uint64_t)1 << 40, &v) && v == 40, 1);
  EQ(gp_idx_get(&x, (uint64_t)-1, &v) && v == 50, 1);
  EQ(gp_idx_get(&x, 4, &v), 0);
  gp_idx_free(&x);
}

/* Demangled names (libstdc++'s demangler, present wherever gcc is) and
 * their short form for table cells; expectations from the Itanium C++ ABI
 * mangling rules. */
static void test_demangle(void) {
  char *d = gp_demangle("_Z11paths_scalePfi"); /* paths_scale(float*, int) */
  char out[128];
  if (!d) {
    fprintf(stderr, "no C++ demangler here: demangling not checked\n");
  } else {
    STREQ(d, "paths_scale(float*, int)");
    gp_short_name(d, out, sizeof out);
    STREQ(out, "paths_scale");
    free(d);
    /* template function: return type, namespace, template arguments */
    d = gp_demangle("_ZN2at6native6detail3fooIiEEvT_");
    STREQ(d ? d : "", "void at::native::detail::foo<int>(int)");
    if (d) gp_short_name(d, out, sizeof out);
    STREQ(out, "at::native::detail::foo");
    free(d);
  }
  EQ(gp_demangle("relu") == NULL, 1);
  /* f(int*...*): valid, but longer than demangling is tried for */
  char *deep = malloc(20000);
  memset(deep, 'P', 19998);
  memcpy(deep, "_Z1f", 4);
  deep[19998] = 'i';
  deep[19999] = 0;
  EQ(gp_demangle(deep) == NULL, 1);
  free(deep);
  EQ(gp_demangle("_Znot a mangled name") == NULL, 1);
  EQ(gp_demangle(NULL) == NULL, 1);
  /* brackets of every kind inside arguments; an anonymous namespace */
  gp_short_name("void (anonymous namespace)::k<128, {lambda(int)#1}>(int, "
                "float (*)[4]) const",
                out, sizeof out);
  STREQ(out, "(anonymous namespace)::k");
  gp_short_name("ns::kern(int)", out, sizeof out);
  STREQ(out, "ns::kern");
  gp_short_name("plain", out, sizeof out);
  STREQ(out, "plain");
  gp_short_name("void ns::very_long_name(int)", out, 8);
  STREQ(out, "ns::ver"); /* cap - 1 bytes */
}

int main(void) {
  test_demangle();
  test_durations();
  test_clean();
  test_json_quote();
  test_json_writer();
  test_hist();
  test_map();
  if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
  return tl_failures ? 1 : 0;
}
