/* Building blocks of the report: durations, name cleaning for terminals,
 * JSON escaping and structure, the duration histogram and the hash map;
 * the figures the text and JSON renderers print for a hand-built timeline.
 * With the argument "demangle": the demangler alone, exit 77 (skipped)
 * where no C++ demangler can be loaded. */
#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "hist.h"
#include "jsonw.h"
#include "render.h"
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
  /* where a unit would round up to 1000 of itself, the next one */
  STREQ(gp_fmt_dur(b, sizeof b, 999999999ull), "1.000 s");
  STREQ(gp_fmt_dur(b, sizeof b, 999999499ull), "999.999 ms");
  STREQ(gp_fmt_sdur(b, sizeof b, 999999), "1.0 ms");
  STREQ(gp_fmt_sdur(b, sizeof b, 999949), "999.9 us");
  STREQ(gp_fmt_sdur(b, sizeof b, 999960000ull), "1.00 s");
  STREQ(gp_fmt_sdur(b, sizeof b, 999940000ull), "999.9 ms");
  STREQ(gp_fmt_sdur(b, sizeof b, 1500), "1.5 us");
  /* counts and rates: plain numbers a budget takes back, no exponent */
  STREQ(gp_fmt_num(b, sizeof b, 312345.6), "312346");
  STREQ(gp_fmt_num(b, sizeof b, 12345), "12345");
  STREQ(gp_fmt_num(b, sizeof b, 999.94), "999.9");
  STREQ(gp_fmt_num(b, sizeof b, 3.5), "3.5");
  STREQ(gp_fmt_num(b, sizeof b, 0.00123), "0.00123");
  STREQ(gp_fmt_num(b, sizeof b, -2500000), "-2500000");
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
  /* East Asian wide characters take two columns: 計算ノード is 10 wide,
   * and cut to 7 columns it keeps 2 of them and "..", 6 columns (a third
   * would end past the edge); before, 14 characters were 28 columns and
   * pushed the job table past 100 */
  const char *cjk = "\xe8\xa8\x88\xe7\xae\x97\xe3\x83\x8e\xe3\x83\xbc"
                    "\xe3\x83\x89";
  EQ(gp_text_clean(cjk, out, sizeof out, 10), 10);
  STREQ(out, cjk);
  EQ(gp_text_clean(cjk, out, sizeof out, 7), 6);
  STREQ(out, "\xe8\xa8\x88\xe7\xae\x97..");
  EQ(gp_text_clean("a\xef\xbc\xa1" "b", out, sizeof out, 4), 4); /* fullwidth A */
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

/* ---- What the renderers print for one hand-built timeline ----
 * One thread on device 0 (100 SMs), intervals in ns, half-open:
 *   launch call [0,150); kernel [150,550), 50 blocks (covers 0.5 of the
 *   SMs); sync call [150,670); no call [670,750); memcpy call [750,1000)
 *   with its pinned H2D copy [750,1000).
 * Window [0,1000), each category a different share:
 *   kernel [150,550) 400 = 40%    transfer [750,1000) 250 = 25%
 *   launch [0,150) 150 = 15%      sync idle [550,670) 120 = 12%
 *   host wait [670,750) 80 = 8%
 * Bars of 40 columns, (int)(pct x 40 / 100 + 0.5) '#': 16, 10, 6, 5 (4.8),
 *   3 (3.2).
 * Phases (pushed on threads 2 and 3, which make no CUDA call):
 *   mix  [0,800): kernel 400 = 50%, transfer [750,800) 50 = 6.25%,
 *        launch 150 = 18.75%, sync 120 = 15%, host 80 = 10%;
 *        busy 50%, SM coverage 0.5 x 400 / 800 = 25%.
 *   tail [650,1000) = 350: kernel 0, transfer 250 = 71.43%, launch 0,
 *        sync [650,670) 20 = 5.71%, host 80 = 22.86%; busy 0.
 * The text table rounds to whole percent: mix 50 6 19 15 10, tail 0 71 0 6
 * 23. Thread 1: CPU work [670,750) 80 = 8%, submitting (in the launch)
 * 150 = 15%, blocked (sync 520, memcpy 250) 770 = 77%. */
enum { R_LAUNCH = 1, R_SYNC, R_MEMCPY, R_KERN = 10, R_MIX, R_TAIL };

static struct gp_proc_res *five_shares(void) {
  struct tl t;
  tl_init(&t);
  tl_str(&t, R_LAUNCH, "cudaLaunchKernel");
  tl_api_def(&t, R_LAUNCH, R_LAUNCH, GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC);
  tl_str(&t, R_SYNC, "cudaDeviceSynchronize");
  tl_api_def(&t, R_SYNC, R_SYNC, GPUPHASE_API_SYNC);
  tl_str(&t, R_MEMCPY, "cudaMemcpy");
  tl_api_def(&t, R_MEMCPY, R_MEMCPY, GPUPHASE_API_COPY);
  tl_str(&t, R_KERN, "gemm");
  tl_str(&t, R_MIX, "mix");
  tl_str(&t, R_TAIL, "tail");
  tl_device(&t, 0, 100);
  tl_api(&t, 1, R_LAUNCH, 0, 150, 0, 0);
  tl_kernel(&t, 0, 150, 550, R_KERN, 50, 128);
  tl_api(&t, 1, R_SYNC, 150, 670, 0, 0);
  tl_api(&t, 1, R_MEMCPY, 750, 1000, 0, 0);
  tl_copy(&t, 0, 750, 1000, 2500, GPUPHASE_COPY_HTOD, TL_PINNED, TL_DEVMEM, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 0, R_MIX, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_POP, 800, 0, 0);
  tl_range(&t, 3, GPUPHASE_RANGE_PUSH, 650, R_TAIL, 0);
  tl_range(&t, 3, GPUPHASE_RANGE_POP, 1000, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  /* the engine's own figures, which the renderers must show as they are */
  CATS(tl_dev(r, 0)->bd, 400, 250, 150, 120, 80);
  CATS(tl_phase(r, "mix")->all, 400, 50, 150, 120, 80);
  CATS(tl_phase(r, "tail")->all, 0, 250, 0, 20, 80);
  return r;
}

static char *rendered(struct gp_proc_res *r, int json) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  struct gp_report_set set = {&r, 1, r, NULL};
  struct gp_render_opts ro = {.top = 0};
  EQ(json ? gp_render_json(f, &set, &ro) : gp_render_text(f, &set, &ro), 0);
  fclose(f);
  return buf;
}

/* s with runs of blanks made one space, and none at either end */
static void squeeze(const char *s, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < cap; i++) {
    if (isspace((unsigned char)s[i])) {
      if (k && out[k - 1] != ' ') out[k++] = ' ';
    } else {
      out[k++] = s[i];
    }
  }
  while (k && out[k - 1] == ' ')
    k--;
  out[k] = 0;
}

/* The line of text that begins (blanks squeezed) with the first word of
 * want must equal want, blanks squeezed. */
static void line_is(const char *text, const char *want, int line) {
  const char *sp = strchr(want, ' ');
  size_t wlen = sp ? (size_t)(sp - want) : strlen(want);
  char got[512];
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    squeeze(p, n, got, sizeof got);
    if (strncmp(got, want, wlen) == 0 && (got[wlen] == ' ' || !got[wlen])) {
      if (strcmp(got, want) != 0) {
        fprintf(stderr, "%s:%d: text line \"%s\", expected \"%s\"\n", __FILE__,
                line, got, want);
        tl_failures++;
      }
      return;
    }
    p += n + (nl != NULL);
  }
  fprintf(stderr, "%s:%d: no text line starting \"%.*s\"\n", __FILE__, line,
          (int)wlen, want);
  tl_failures++;
}
#define LINE(text, want) line_is((text), (want), __LINE__)

/* Wrapped text keeps a number with its unit: a note whose "340.5" ends
 * at column 99 and whose "us" would pass column 100 moves both to the
 * next line (no line of the text starts with the unit). */
static void test_wrap_units(void) {
  struct gp_proc_res *r = five_shares();
  char note[200];
  memset(note, 'a', 89);
  snprintf(note + 89, sizeof note - 89, " 340.5 us (7%%), host wait 4.2 ms");
  char *notes[1] = {note}, **saved = r->notes;
  size_t nsaved = r->nnotes;
  r->notes = notes;
  r->nnotes = 1;
  char *txt = rendered(r, 0);
  r->notes = saved;
  r->nnotes = nsaved;
  EQ(strstr(txt, "\n    340.5 us (7%), host wait 4.2 ms\n") != NULL, 1);
  EQ(strstr(txt, "\n    us ") == NULL, 1);
  free(txt);
  gp_res_free(r);
  /* the word the three wrappers (text, job, compare) break between */
  EQ(gp_wrap_word("340.5 us (7%)"), 8);
  EQ(gp_wrap_word("4.2 GiB, then"), 8);
  EQ(gp_wrap_word("12 ms) more"), 6);
  EQ(gp_wrap_word("2 launches"), 1);
  EQ(gp_wrap_word("step 3 us"), 4);
  EQ(gp_wrap_word("3 "), 1);
  EQ(gp_wrap_word("3  us"), 1);
  EQ(gp_wrap_word("x"), 1);
  EQ(gp_wrap_word(""), 0);
}

static void test_text_shares(void) {
  struct gp_proc_res *r = five_shares();
  char *txt = rendered(r, 0);
  LINE(txt, "kernel 400 ns 40.0% |################........................|");
  LINE(txt, "transfer 250 ns 25.0% |##########..............................|");
  LINE(txt, "launch 150 ns 15.0% |######..................................|");
  LINE(txt,
       "sync idle 120 ns 12.0% |#####...................................|");
  LINE(txt, "host wait 80 ns 8.0% |###.....................................|");
  /* busy = kernel share; coverage 0.5 x 400 / 1000 */
  LINE(txt, "busy 40.0% SM coverage 20% occupancy 100% small kernels 0% of "
            "kernel time");
  /* thread 1: cpu [670,750) 80, submitting 150, blocked 520 + 250; calls */
  LINE(txt, "#1 tid 0 80 ns 8.0% 150 ns 15.0% 770 ns 77.0% 3");
  /* name, count, total, mean, p95, kern xfer lnch sync host, busy, SMcov */
  LINE(txt, "mix 1 800 ns 800 ns 800 ns 50% 6% 19% 15% 10% 50% 25%");
  LINE(txt, "tail 1 350 ns 350 ns 350 ns 0% 71% 0% 6% 23% 0% 0%");
  if (tl_failures) fputs(txt, stderr);
  free(txt);
  gp_res_free(r);
}

/* No text line over 100 columns, whatever the names and values: a name
 * of 150 characters that a note quotes (a word wider than a
 * line is cut, not printed whole), and SM coverage never above 100%, also
 * where a hostile trace's durations add up past 2^64. */
static void test_text_width(void) {
  struct tl t;
  tl_init(&t);
  char name[151];
  for (int i = 0; i < 150; i++)
    name[i] = (char)('a' + i % 26);
  name[150] = 0;
  tl_str(&t, R_LAUNCH, "cudaLaunchKernel");
  tl_api_def(&t, R_LAUNCH, R_LAUNCH, GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC);
  tl_str(&t, R_KERN, name);
  tl_device(&t, 0, 132);
  /* 200 top-level ranges of that name around a launch: the phase and
   * kernel tables cut the name to their column */
  for (uint64_t i = 0; i < 200; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, i * 1000, R_KERN, 0);
    tl_api(&t, 1, R_LAUNCH, i * 1000, i * 1000 + 900, 0, 0);
    tl_kernel(&t, 0, i * 1000 + 900, i * 1000 + 950, R_KERN, 1, 32);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, i * 1000 + 999, 0, 0);
  }
  struct gp_proc_res *r = tl_run(&t);
  tl_free(&t);
  /* a note quoting the name whole, as notes quote names and reasons */
  EQ(gp_res_note(r, "the range (%s): a word wider than the line", name), 0);
  char *txt = rendered(r, 0);
  int widest = 0, quoted = 0;
  for (const char *p = txt; *p;) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int)(nl - p) : (int)strlen(p);
    if (n > widest) widest = n;
    quoted |= memmem(p, (size_t)n, name, 40) != NULL;
    p += n + (nl != NULL);
  }
  if (!EQ(widest <= 100, 1)) fputs(txt, stderr);
  if (!EQ(quoted, 1)) fputs(txt, stderr); /* the name is shown, cut */
  free(txt);
  gp_res_free(r);
  struct gp_kernel_res k = {0};
  EQ(gp_kernel_cov_pct(&k) < 0, 1); /* SMs never known */
  k.cov_wsum = 50, k.cov_ns = 100;
  NEAR(gp_kernel_cov_pct(&k), 50, 1e-9);
  k.cov_wsum = 1e19, k.cov_ns = 5; /* the sum of durations wrapped */
  NEAR(gp_kernel_cov_pct(&k), 100, 1e-9);
}

/* The JSON of the same timeline, blanks removed: each category's ns and
 * share (2 decimals) of the device window and of each phase. */
static void json_has(const char *json, const char *want, int line) {
  if (!strstr(json, want)) {
    fprintf(stderr, "%s:%d: JSON lacks %s\n", __FILE__, line, want);
    tl_failures++;
  }
}
#define JSON_HAS(j, want) json_has((j), (want), __LINE__)

static void test_json_shares(void) {
  struct gp_proc_res *r = five_shares();
  char *raw = rendered(r, 1);
  size_t n = strlen(raw);
  char *j = malloc(n + 1);
  squeeze(raw, n, j, n + 1);
  /* squeeze leaves single spaces; drop them too (no name here has one) */
  size_t k = 0;
  for (size_t i = 0; j[i]; i++)
    if (j[i] != ' ') j[k++] = j[i];
  j[k] = 0;
  /* the device: launch 150 of 1000 */
  JSON_HAS(j, "\"window_ns\":1000,\"kernels\":1,\"breakdown\":{"
              "\"kernel\":{\"ns\":400,\"pct\":40},"
              "\"transfer\":{\"ns\":250,\"pct\":25},"
              "\"launch\":{\"ns\":150,\"pct\":15},"
              "\"sync_idle\":{\"ns\":120,\"pct\":12},"
              "\"host_wait\":{\"ns\":80,\"pct\":8}}");
  /* phase mix: launch 150 of 800 */
  JSON_HAS(j, "\"name\":\"mix\",\"count\":1,\"total_ns\":800,"
              "\"instances_ns\":800,\"mean_ns\":800,\"p95_ns\":800,"
              "\"breakdown\":{"
              "\"kernel\":{\"ns\":400,\"pct\":50},"
              "\"transfer\":{\"ns\":50,\"pct\":6.25},"
              "\"launch\":{\"ns\":150,\"pct\":18.75},"
              "\"sync_idle\":{\"ns\":120,\"pct\":15},"
              "\"host_wait\":{\"ns\":80,\"pct\":10}}");
  /* phase tail: no launch in 350 */
  JSON_HAS(j, "\"name\":\"tail\",\"count\":1,\"total_ns\":350,"
              "\"instances_ns\":350,\"mean_ns\":350,\"p95_ns\":350,"
              "\"breakdown\":{"
              "\"kernel\":{\"ns\":0,\"pct\":0},"
              "\"transfer\":{\"ns\":250,\"pct\":71.43},"
              "\"launch\":{\"ns\":0,\"pct\":0},"
              "\"sync_idle\":{\"ns\":20,\"pct\":5.71},"
              "\"host_wait\":{\"ns\":80,\"pct\":22.86}}");
  if (tl_failures) fputs(raw, stderr);
  free(j);
  free(raw);
  gp_res_free(r);
}

/* Whether a C++ demangler can be loaded here, asked the way the report
 * looks for one (demangle.c) but independently of it: where one can, the
 * report must demangle; where none can, the demangling checks are skipped,
 * not passed. */
static int demangler_here(void) {
  void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  int ok = h && dlsym(h, "__cxa_demangle");
  if (h) dlclose(h);
  return ok;
}

/* Demangled names (libstdc++'s demangler, present wherever gcc is) and
 * their short form for table cells; expectations from the Itanium C++ ABI
 * mangling rules. Returns 77 (skipped) where no demangler can be loaded. */
static int test_demangle(void) {
  if (!demangler_here()) {
    fprintf(stderr, "no C++ demangler here (libstdc++.so.6 with "
                    "__cxa_demangle): demangling not checked\n");
    return 77;
  }
  char *d = gp_demangle("_Z11paths_scalePfi"); /* paths_scale(float*, int) */
  char out[128] = "";
  STREQ(d ? d : "(not demangled)", "paths_scale(float*, int)");
  if (d) gp_short_name(d, out, sizeof out);
  STREQ(out, "paths_scale");
  free(d);
  /* template function: return type, namespace, template arguments */
  d = gp_demangle("_ZN2at6native6detail3fooIiEEvT_");
  STREQ(d ? d : "", "void at::native::detail::foo<int>(int)");
  out[0] = 0;
  if (d) gp_short_name(d, out, sizeof out);
  STREQ(out, "at::native::detail::foo");
  free(d);
  /* f(int*...*): valid, but longer than demangling is tried for */
  char *deep = malloc(20000);
  memset(deep, 'P', 19998);
  memcpy(deep, "_Z1f", 4);
  deep[19998] = 'i';
  deep[19999] = 0;
  EQ(gp_demangle(deep) == NULL, 1);
  free(deep);
  EQ(gp_demangle("_Znot a mangled name") == NULL, 1);
  return 0;
}

/* What holds with or without a demangler: names that are not mangled are
 * left alone, and the short form of a declaration. */
static void test_short_name(void) {
  char out[128];
  EQ(gp_demangle("relu") == NULL, 1);
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
  /* GCC's clones (-O2 makes them routinely): the function they clone */
  gp_short_name("trainer::wait_for(int, int) [clone .constprop.0] "
                "[clone .isra.0]",
                out, sizeof out);
  STREQ(out, "trainer::wait_for");
  gp_short_name("ns::foo(int) [clone .part.0]", out, sizeof out);
  STREQ(out, "ns::foo");
  gp_short_name("void ns::k<float>(float*) [clone .cold]", out, sizeof out);
  STREQ(out, "ns::k");
  gp_short_name("main::{lambda()#1}::operator()() const "
                "[clone .constprop.0]",
                out, sizeof out);
  STREQ(out, "main::{lambda()#1}::operator()");
  /* operators: their own '<' and '>' are no template arguments, and a
   * conversion operator's type is part of its name */
  gp_short_name("ns::Op::operator<(ns::Op const&) const [clone .isra.0]",
                out, sizeof out);
  STREQ(out, "ns::Op::operator<");
  gp_short_name("ns::Foo<int>::operator>(ns::Foo<int> const&) const", out,
                sizeof out);
  STREQ(out, "ns::Foo<int>::operator>");
  gp_short_name("ns::Foo<int>::operator->()", out, sizeof out);
  STREQ(out, "ns::Foo<int>::operator->");
  gp_short_name("std::ostream& ns::operator<<(std::ostream&, ns::X const&)",
                out, sizeof out);
  STREQ(out, "ns::operator<<");
  gp_short_name("bool ns::operator< <int>(ns::X<int> const&)", out,
                sizeof out);
  STREQ(out, "ns::operator<");
  gp_short_name("ns::Op::operator int (*)()()", out, sizeof out);
  STREQ(out, "ns::Op::operator int (*)()");
  gp_short_name("operator new(unsigned long)", out, sizeof out);
  STREQ(out, "operator new");
  gp_short_name("ns::my_operator(int)", out, sizeof out);
  STREQ(out, "ns::my_operator");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "demangle") == 0) {
    int rc = test_demangle();
    if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
    return tl_failures ? 1 : rc;
  }
  test_text_shares();
  test_wrap_units();
  test_text_width();
  test_json_shares();
  test_short_name();
  test_durations();
  test_clean();
  test_json_quote();
  test_json_writer();
  test_hist();
  test_map();
  if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
  return tl_failures ? 1 : 0;
}
