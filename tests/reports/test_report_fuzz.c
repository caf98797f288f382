/* The whole report pipeline on hostile but well-formed traces: valid files
 * (the writer makes them) whose records hold random and extreme values —
 * ends before starts, times near 2^64, unknown ids and kinds of copy, phases
 * popped that were never pushed, huge grids, out-of-order sources, names
 * with markup and control bytes. Each trace is reported (sorted reader,
 * attribution, derivation, findings), added into a sum, and rendered as
 * text, JSON and HTML. Under the sanitizers (CI) any overflow or bad access
 * fails the test; in every build, the invariants below must hold:
 *   - each device's categories add up to its window exactly, and its
 *     share of each phase to the phase's union;
 *   - the JSON output is one balanced object with no raw control bytes;
 *   - the HTML output is a whole document whose only tags are its own;
 *   - the text output holds no escape byte (colour off) and no line over
 *     100 columns;
 *   - the timeline export (timeline.h) of each trace succeeds, as
 *     Perfetto or Chrome JSON by turns (the cost of both was that of the
 *     three renderers), the JSON a balanced object with no raw control
 *     bytes.
 * Seeds are fixed: every run tests the same traces. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "export.h"
#include "pipeline.h"
#include "render.h"
#include "tl.h"
#include "writer.h"

/* Pairs of traces per run; GP_FUZZ_TRACES and GP_FUZZ_SEED change the run
 * (for longer searches by hand), GP_FUZZ_KEEP=1 keeps the trace files to
 * replay one with gpuphase-report. */
#define TRACES 40
#define RECORDS 400

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

static uint64_t below(uint64_t n) {
  return n ? rnd() % n : 0;
}

static const char long_name[] =
    "a_very_long_kernel_name_that_goes_on_and_on_and_on_and_on_and_on_and_on"
    "_and_on_and_on_and_on_and_on_and_on_and_on_and_on_and_on_and_on";

static const char *const names[] = {
    "cudaLaunchKernel",
    "void gemm<float, 128>(float const*, float*) [with T = <&>]",
    "nccl:AllReduce",
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "\x1b[31mred\x1b[0m",
    "line\nbreak\ttab\r",
    "\xff\xfe not utf-8 \xc3",
    "</script><script>alert(1)</script>",
    "\"quoted\" \\ back",
    "_ZN2at6native6detail3fooIiEEvT_", /* demangles to a template */
    "_Z1kIN3foo3barEEvPFvRKT_E",       /* with a function pointer */
    "_Zgarbage<&>",
    long_name,
    "",
};
#define NNAMES (sizeof names / sizeof *names)

static uint64_t ids[NNAMES];

/* A value for a field: mostly plausible, sometimes extreme. */
static uint64_t value(uint64_t base) {
  switch (below(12)) {
  case 0:
    return 0;
  case 1:
    return UINT64_MAX - below(3);
  case 2:
    return (uint64_t)INT64_MAX + below(3) - 1;
  case 3:
    return ids[below(NNAMES)];
  case 4:
    return below(1ull << 40);
  case 5:
  case 6:
    return below(8); /* small ids: devices, threads, streams, kinds */
  default:
    return base + below(2000000); /* times around the run */
  }
}

static void random_record(gp_writer *w, uint64_t base) {
  static const uint32_t kinds[] = {
      GPUPHASE_REC_THREAD, GPUPHASE_REC_API_DEF, GPUPHASE_REC_DEVICE,
      GPUPHASE_REC_API,    GPUPHASE_REC_API,     GPUPHASE_REC_KERNEL,
      GPUPHASE_REC_KERNEL, GPUPHASE_REC_MEMCPY,  GPUPHASE_REC_MEMSET,
      GPUPHASE_REC_SYNC,   GPUPHASE_REC_RANGE,   GPUPHASE_REC_RANGE,
      GPUPHASE_REC_LOST,   GPUPHASE_REC_STATE};
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  r.kind = kinds[below(sizeof kinds / sizeof *kinds)];
  const struct gp_kind_desc *k = gp_kind_desc(r.kind);
  for (unsigned f = 0; f < k->nfields; f++) {
    uint64_t v = value(base);
    memcpy((char *)&r.u + k->fields[f].offset, &v, sizeof v);
  }
  /* ends near their starts most of the time, so intervals overlap */
  int has;
  uint64_t s = gp_record_start(&r, &has);
  if (has && below(4)) {
    uint64_t e = s + below(50000);
    if (r.kind == GPUPHASE_REC_API) r.u.api.end = e;
    if (r.kind == GPUPHASE_REC_KERNEL) r.u.kernel.end = e;
    if (r.kind == GPUPHASE_REC_MEMCPY) r.u.memcpy.end = e;
    if (r.kind == GPUPHASE_REC_MEMSET) r.u.memset.end = e;
    if (r.kind == GPUPHASE_REC_SYNC) r.u.sync.end = e;
  }
  /* metadata goes to source 0, the rest to a few thread/stream sources */
  uint32_t src = has ? 1 + (uint32_t)below(4) : 0;
  if (gp_writer_add(w, src, &r) != GPUPHASE_OK) abort();
}

static char *write_trace(int t) {
  char *path = strdup("/tmp/gpuphase-fuzz-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) abort();
  struct gp_process_info info = {0};
  info.host = names[t % NNAMES];
  info.pid = 1000 + t;
  info.ppid = t % 3 ? -1 : 1;
  info.rank = info.local_rank = -1;
  info.cmdline = names[(t + 3) % NNAMES];
  info.start_mono_ns = 1000;
  info.clock = "clock_gettime";
  int err = 0;
  gp_writer *w = gp_writer_open(fd, &info, 64 + (size_t)below(4000), &err);
  if (!w) abort();
  for (size_t i = 0; i < NNAMES; i++)
    ids[i] = gp_writer_intern(w, names[i], strlen(names[i]));
  uint64_t base = below(3) ? 1000000 : UINT64_MAX - 4000000;
  int n = (int)below(RECORDS);
  for (int i = 0; i < n; i++)
    random_record(w, base);
  struct gpuphase_summary sum = {gp_writer_events(w), below(3), 0, 0};
  if (gp_writer_close(w, below(5) ? &sum : NULL) != GPUPHASE_OK) abort();
  return path;
}

static void check_partition(const struct gp_proc_res *r, int t) {
  /* in one process, every device's share of a phase covers its union (in
   * a sum, a device of another process saw none of it) */
  for (size_t i = 0; r->file && i < r->nphases; i++)
    for (size_t d = 0; d < r->ndev; d++)
      if (gp_breakdown_total(&r->phases[i].dev[d].bd) !=
          r->phases[i].union_ns) {
        fprintf(stderr, "trace %d phase %zu device %zu: %llu != union %llu\n",
                t, i, d,
                (unsigned long long)gp_breakdown_total(&r->phases[i].dev[d].bd),
                (unsigned long long)r->phases[i].union_ns);
        tl_failures++;
        return;
      }
  for (size_t d = 0; d < r->ndev; d++) {
    uint64_t s = 0;
    for (int c = 0; c < GP_CAT_N; c++)
      s += r->dev[d].bd.cat[c];
    if (s != r->dev[d].window_ns) {
      fprintf(stderr, "trace %d device %zu: categories %llu != window %llu\n",
              t, d, (unsigned long long)s,
              (unsigned long long)r->dev[d].window_ns);
      tl_failures++;
    }
  }
}

static void check_json(const char *s, size_t n, int t) {
  int depth = 0, in_str = 0, ok = n > 0 && s[0] == '{';
  for (size_t i = 0; i < n && ok; i++) {
    unsigned char c = (unsigned char)s[i];
    if (in_str) {
      if (c < 0x20) ok = 0;
      if (c == '\\') i++;
      else if (c == '"') in_str = 0;
      continue;
    }
    if (c == '"') in_str = 1;
    if (c == '{' || c == '[') depth++;
    if (c == '}' || c == ']') {
      if (--depth < 0) ok = 0;
      if (!depth && strspn(s + i + 1, "\n") != n - i - 1) ok = 0;
    }
  }
  if (!ok || depth || in_str) {
    fprintf(stderr, "trace %d: JSON output is not one balanced object\n", t);
    tl_failures++;
  }
}

static void check_text(const char *s, size_t n, int t) {
  if (memchr(s, 0x1b, n)) {
    fprintf(stderr, "trace %d: escape byte in the text report\n", t);
    tl_failures++;
  }
  /* 100 columns, whatever the values; UTF-8 continuation bytes take none */
  size_t col = 0, line = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n') {
      col = 0;
      line = i + 1;
    } else if (((unsigned char)s[i] & 0xc0) != 0x80 && ++col == 101) {
      const char *nl = memchr(s + line, '\n', n - line);
      int len = (int)((nl ? (size_t)(nl - s) : n) - line);
      fprintf(stderr, "trace %d: text line over 100 columns: %.*s\n", t, len,
              s + line);
      tl_failures++;
      return;
    }
  }
}

/* Whole document, no raw control bytes, and none of the names' markup:
 * every '<' starts one of the renderer's own tags. */
static void check_html(const char *s, size_t n, int t) {
  static const char *const tags[] = {
      "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "h1",
      "h2",       "h3",   "p",    "div",  "span",  "table", "thead", "tbody",
      "tr",       "th",   "td",   "ul",   "li",    "section", "svg", "g",
      "rect",     "text", "br",   "strong", "code", "details", "summary",
      "ol",       "small"};
  int ok = n > 16 && !strncmp(s, "<!DOCTYPE html>", 15) &&
           !strcmp(s + n - 8, "</html>\n");
  for (size_t i = 0; i < n && ok; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f) ok = 0;
    if (c != '<') continue;
    const char *p = s + i + 1 + (s[i + 1] == '/');
    int known = 0;
    for (size_t k = 0; k < sizeof tags / sizeof *tags && !known; k++) {
      size_t l = strlen(tags[k]);
      known = !strncmp(p, tags[k], l) && strchr(" >/", p[l]);
    }
    ok = known;
  }
  if (!ok) {
    fprintf(stderr, "trace %d: HTML output is not a clean document\n", t);
    tl_failures++;
  }
}

static void render_all(const struct gp_report_set *set, int t) {
  struct gp_render_opts ro = {.top = 1 + (size_t)below(20)};
  for (int fmt = 0; fmt < 3; fmt++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) abort();
    int rc = fmt == 2   ? gp_render_html(f, set, &ro)
             : fmt == 1 ? gp_render_json(f, set, &ro)
                        : gp_render_text(f, set, &ro);
    fclose(f);
    if (rc < 0) {
      fprintf(stderr, "trace %d: rendering failed\n", t);
      tl_failures++;
    } else if (fmt == 2) {
      check_html(buf, len, t);
    } else if (fmt == 1) {
      check_json(buf, len, t);
    } else {
      check_text(buf, len, t);
    }
    free(buf);
  }
}

static void export_one(const char *path, const struct gp_proc_res *r, int t,
                       int fmt) {
  {
    char *buf = NULL, err[512] = "";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) abort();
    struct gp_xsink *x =
        fmt ? gp_xsink_chrome(f, r->wstart) : gp_xsink_perfetto(f);
    if (!x) abort();
    /* no draw from rnd(): the traces stay those of the seed */
    struct gp_tl_opts o = {.from = t % 3 ? 0 : r->wstart + 1000 * (uint64_t)t};
    struct gp_tl_stats st;
    int rc = gp_timeline_walk(path, 0, r, &o, &x->tl, &st, err, sizeof err);
    if (!rc) rc = x->finish(x->tl.ctx);
    x->free(x->tl.ctx);
    free(x);
    fclose(f);
    if (rc < 0) {
      fprintf(stderr, "trace %d: the %s export failed: %s\n", t,
              fmt ? "chrome" : "perfetto", err);
      tl_failures++;
    } else if (fmt) {
      check_json(buf, len, t);
    }
    free(buf);
  }
}

int main(void) {
  struct gp_report_opts o = {0};
  int reported = 0, traces = TRACES;
  if (getenv("GP_FUZZ_TRACES")) traces = atoi(getenv("GP_FUZZ_TRACES"));
  if (getenv("GP_FUZZ_SEED")) rng = strtoull(getenv("GP_FUZZ_SEED"), NULL, 0) | 1;
  for (int t = 0; t < traces; t++) {
    char *path[2] = {write_trace(t), write_trace(t + traces)};
    struct gp_proc_res *res[2] = {NULL, NULL};
    o.window_ns = below(2) ? 0 : 1 + below(100000);
    for (int i = 0; i < 2; i++) {
      int st;
      char err[512];
      res[i] = gp_report_file(path[i], &o, NULL, NULL, &st, err, sizeof err);
      if (!res[i] && st == GP_PIPE_OK) {
        fprintf(stderr, "trace %d: no result and no error\n", t);
        tl_failures++;
      }
      if (res[i]) check_partition(res[i], t), reported++;
      if (res[i]) export_one(path[i], res[i], t, i);
      if (!getenv("GP_FUZZ_KEEP")) unlink(path[i]);
      else fprintf(stderr, "kept %s\n", path[i]);
      free(path[i]);
    }
    if (res[0] && res[1]) {
      struct gp_proc_res *sum = gp_res_new_sum();
      if (!sum || gp_res_merge(sum, res[0]) < 0 ||
          gp_res_merge(sum, res[1]) < 0 || gp_res_derive(sum, &o) < 0)
        abort();
      check_partition(sum, t);
      struct gp_report_set set = {res, 2, sum, NULL};
      render_all(&set, t);
      gp_res_free(sum);
    } else if (res[0] || res[1]) {
      struct gp_proc_res **one = res[0] ? &res[0] : &res[1];
      struct gp_report_set set = {one, 1, *one, NULL};
      render_all(&set, t);
    }
    gp_res_free(res[0]);
    gp_res_free(res[1]);
  }
  /* the writer makes valid files: each must be reported, not rejected */
  if (reported != 2 * traces) {
    fprintf(stderr, "%d of %d traces were reported\n", reported, 2 * traces);
    tl_failures++;
  }
  if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
  else printf("report-fuzz: %d traces reported and rendered\n", reported);
  return tl_failures ? 1 : 0;
}
