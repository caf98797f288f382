/* compare and check as text (one screen) and as markdown (a PR comment, the
 * GitHub step summary). Both are written by the same sections through a
 * sink that lays a table out as aligned columns or as a markdown table. */
#include "compare.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "demangle.h"
#include "util.h"

#define NCOL 6

struct sink {
  FILE *f;
  int md;
  int w[NCOL]; /* text: column widths; the first is left-aligned */
  int ncol;
  int left; /* text: every column left-aligned */
};

static void out(struct sink *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out(struct sink *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(s->f, fmt, ap);
  va_end(ap);
}

/* A cell for the sink: control characters and invalid UTF-8 cleaned, cut
 * to cols characters; markdown's table and HTML characters escaped. */
static const char *cell(const struct sink *s, char *b, size_t n,
                        const char *text, size_t cols) {
  char clean[512];
  gp_text_clean(text, clean, sizeof clean, cols);
  if (!s->md) {
    snprintf(b, n, "%s", clean);
    return b;
  }
  size_t o = 0;
  for (const char *p = clean; *p && o + 7 < n; p++) {
    const char *e = *p == '|'   ? "\\|"
                    : *p == '<' ? "&lt;"
                    : *p == '>' ? "&gt;"
                    : *p == '&' ? "&amp;"
                    : *p == '`' ? "\\`"
                    : *p == '*' ? "\\*"
                    : *p == '_' ? "\\_"
                                : NULL;
    if (e)
      o += (size_t)snprintf(b + o, n - o, "%s", e);
    else
      b[o++] = *p;
  }
  b[o] = 0;
  return b;
}

static void title(struct sink *s, const char *t) {
  if (s->md)
    out(s, "\n#### %s\n\n", t);
  else
    out(s, "\n%s\n", t);
}

/* Starts a table: column headers (the first left-aligned) and text
 * widths. */
static void head(struct sink *s, int ncol, const char *const *h, const int *w) {
  s->ncol = ncol;
  memcpy(s->w, w, (size_t)ncol * sizeof *w);
  if (s->md) {
    for (int i = 0; i < ncol; i++)
      out(s, "| %s ", h[i]);
    out(s, "|\n");
    for (int i = 0; i < ncol; i++)
      out(s, "|%s", i && !s->left ? "---:" : "---");
    out(s, "|\n");
    return;
  }
  for (int i = 0; i < ncol; i++)
    if (i + 1 == ncol && s->left)
      out(s, " %s", h[i]);
    else
      out(s, i && !s->left ? " %*s" : i ? " %-*s" : "  %-*s", w[i], h[i]);
  out(s, "\n");
}

static void row(struct sink *s, const char *const *c) {
  for (int i = 0; i < s->ncol; i++) {
    if (s->md)
      out(s, "| %s ", c[i]);
    else if (i + 1 == s->ncol && s->left)
      out(s, " %s", c[i]); /* no trailing blanks */
    else { /* padded by the columns a terminal gives the cell, not bytes */
      size_t cols = gp_text_cols(c[i]);
      int pad = s->w[i] > (int)cols ? s->w[i] - (int)cols : 0;
      if (i && !s->left)
        out(s, " %*s%s", pad, "", c[i]);
      else
        out(s, i ? " %s%*s" : "  %s%*s", c[i], pad, "");
    }
  }
  out(s, s->md ? "|\n" : "\n");
}

/* A sentence: a list item in markdown; in text, wrapped at blanks to 98
 * columns (bytes, which never overcounts), continued with an indent. */
static void line(struct sink *s, const char *text) {
  char b[1024];
  const char *p = cell(s, b, sizeof b, text, 300);
  if (s->md) {
    out(s, "- %s\n", p);
    return;
  }
  for (size_t width = 96; strlen(p) > width; width = 94) {
    /* the last blank at or before width that no word crosses (a number
     * and its unit are one word: gp_wrap_word) */
    const char *cut = p;
    for (const char *w = p; *w && (size_t)(w - p) <= width;) {
      const char *e = w + gp_wrap_word(w);
      if (*e != ' ' || (size_t)(e - p) > width) break;
      cut = e;
      w = e + 1;
    }
    if (cut == p) break; /* one long word: left whole */
    out(s, "%s%.*s\n", width == 96 ? "  " : "    ", (int)(cut - p), p);
    p = cut + 1;
  }
  out(s, "%s%s\n", p == b ? "  " : "    ", p);
}

static const char *dur(char *b, size_t n, double ns) {
  char t[32];
  snprintf(b, n, "%s%s", ns < 0 ? "-" : "",
           gp_fmt_sdur(t, sizeof t, (uint64_t)llround(fabs(ns))));
  return b;
}

static const char *sdur(char *b, size_t n, double ns) {
  char t[32];
  snprintf(b, n, "%s%s", ns < 0 ? "-" : "+",
           gp_fmt_sdur(t, sizeof t, (uint64_t)llround(fabs(ns))));
  return b;
}

static const char *value(char *b, size_t n, int m, double v) {
  enum gp_mkind k = gp_metric_kind(m);
  if (k == GP_MK_DUR || k == GP_MK_CAT) return dur(b, n, v);
  if (k == GP_MK_BYTES || k == GP_MK_MEM) return gp_fmt_bytes(b, n, v);
  if (k == GP_MK_PCT)
    snprintf(b, n, "%.1f%%", v);
  else {
    char t[48];
    snprintf(b, n, "%s%s", gp_fmt_num(t, sizeof t, v),
             k == GP_MK_RATE ? "/s" : "");
  }
  return b;
}

static const char *verdict_word(enum gp_verdict v, int upper) {
  static const char *const lower[] = {"pass", "regression", "inconclusive"};
  static const char *const up[] = {"PASS", "REGRESSION", "INCONCLUSIVE"};
  return upper ? up[v] : lower[v];
}

#define GP_X(U, k) #k,
static const char *const source_key[] = {GP_STEP_SOURCES(GP_X)};
#undef GP_X

static const char *source_name(int s) {
  return s >= 0 && s < GP_STEPS_SOURCE_N ? source_key[s] : "?";
}

static void steps_words(const struct gp_cmp_side *s, char *b, size_t n) {
  size_t k = 0, lo = (size_t)-1, hi = 0;
  for (size_t i = 0; i < s->n; i++) {
    const struct gp_cmp_run *r = &s->v[i];
    if (!r->has_steps) continue;
    k++;
    if (r->measured < lo) lo = r->measured;
    if (r->measured > hi) hi = r->measured;
  }
  if (!k) {
    snprintf(b, n, "none found");
    return;
  }
  const struct gp_cmp_run *r = &s->v[0];
  char range[48];
  snprintf(range, sizeof range, lo == hi ? "%zu" : "%zu-%zu", lo, hi);
  snprintf(b, n, "%s%.24s (%s), %s measured a run%s", k < s->n ? "some: " : "",
           r->step_name ? r->step_name : "?", source_name(r->source), range,
           k < s->n ? " or none" : "");
}

static void gpu_words(const struct gp_cmp_run *r, char *b, size_t n) {
  char mem[32], mult[32] = "";
  if (!r->device) {
    snprintf(b, n, "unknown");
    return;
  }
  if (r->ndev > 1) snprintf(mult, sizeof mult, " (x%zu)", r->ndev);
  snprintf(b, n, "%.28s%s, %llu SMs, %s", r->device, mult,
           (unsigned long long)r->sms,
           gp_fmt_bytes(mem, sizeof mem, (double)r->mem_total));
}

static const char *cuda_version(char *b, size_t n, int64_t v) {
  if (v <= 0)
    snprintf(b, n, "?");
  else
    snprintf(b, n, "%lld.%lld", (long long)(v / 1000),
             (long long)(v % 1000 / 10));
  return b;
}

/* One preflight row: the label and each side's words. */
static void pre_row(struct sink *s, int two, const char *label, const char *b,
                    const char *c) {
  char x[3][400];
  const char *cells[3] = {label, cell(s, x[1], sizeof x[1], b, 40),
                          cell(s, x[2], sizeof x[2], c, 40)};
  if (!two)
    cells[1] = cells[2];
  else if (!strcmp(b, c))
    cells[2] = "same";
  row(s, cells);
}

static void run_text(const struct gp_cmp_run *r, int what, char *b, size_t n) {
  char v1[32], v2[32];
  switch (what) {
  case 2:
    gpu_words(r, b, n);
    break;
  case 3:
    snprintf(b, n, "driver %s, runtime %s",
             cuda_version(v1, sizeof v1, r->driver),
             cuda_version(v2, sizeof v2, r->runtime));
    break;
  default:
    snprintf(b, n, "%s", r->cmdline ? r->cmdline : "?");
  }
}

static void side_text(const struct gp_cmp_side *sd, int what, char *b,
                      size_t n) {
  size_t files = 0;
  switch (what) {
  case 0:
    for (size_t i = 0; i < sd->n; i++)
      files += sd->v[i].nfiles;
    snprintf(b, n, "%zu run%s, %zu file%s", sd->n, sd->n == 1 ? "" : "s", files,
             files == 1 ? "" : "s");
    break;
  case 1:
    steps_words(sd, b, n);
    break;
  default: {
    /* the first run's, and how many kinds when the runs differ (the
     * notes name them) */
    char first[360], other[360];
    size_t kinds = 1;
    run_text(&sd->v[0], what, first, sizeof first);
    for (size_t i = 1; i < sd->n; i++) {
      run_text(&sd->v[i], what, other, sizeof other);
      if (strcmp(first, other)) {
        int seen = 0; /* a kind met in an earlier run */
        for (size_t j = 1; j < i && !seen; j++) {
          char t[360];
          run_text(&sd->v[j], what, t, sizeof t);
          seen = !strcmp(t, other);
        }
        kinds += !seen;
      }
    }
    if (kinds > 1)
      snprintf(b, n, "(%zu kinds) %s", kinds, first);
    else
      snprintf(b, n, "%s", first);
  }
  }
}

static void preflight(struct sink *s, const struct gp_cmp_out *o) {
  static const char *const label[] = {"runs", "steps", "GPU", "CUDA",
                                      "command"};
  int two = o->base != NULL;
  const char *h[3] = {"", "base", "new"};
  if (!two) h[1] = "new";
  title(s, two ? "Runs" : "Run");
  s->left = 1;
  head(s, two ? 3 : 2, h, (const int[]){8, 40, 40});
  for (int i = 0; i < 5; i++) {
    char b[400] = "", c[400];
    if (two) side_text(o->base, i, b, sizeof b);
    side_text(o->cand, i, c, sizeof c);
    pre_row(s, two, label[i], b, c);
  }
  s->left = 0;
}

static const char *mode_word(const struct gp_cmp_metric *x) {
  return x->mode == GP_MODE_STEPS ? " (steps)" : "";
}

static void gate_row(struct sink *s, const struct gp_cmp_metric *x) {
  char c[6][64];
  const char *cells[6] = {
      gp_metric_name(x->metric), c[1], c[2], c[3], c[4], c[5]};
  int have = x->mode != GP_MODE_NONE;
  if (have) {
    value(c[1], sizeof c[1], x->metric, x->base);
    value(c[2], sizeof c[2], x->metric, x->cand);
    gp_fmt_change(c[3], sizeof c[3], x->slow.est);
    char lo[24], hi[24];
    snprintf(c[4], sizeof c[4], "[%s, %s]", gp_fmt_change(lo, sizeof lo, x->slow.lo),
             gp_fmt_change(hi, sizeof hi, x->slow.hi));
  } else {
    for (int i = 1; i < 5; i++)
      snprintf(c[i], sizeof c[i], "-");
  }
  snprintf(c[5], sizeof c[5], "%s%s", verdict_word(x->v, 0), mode_word(x));
  row(s, cells);
}

static void counter_row(struct sink *s, const struct gp_cmp_counter *x) {
  char c[6][64];
  const char *cells[6] = {
      gp_metric_name(GP_M_SC0 + x->sc), c[1], c[2], c[3], "exact", c[5]};
  value(c[1], sizeof c[1], GP_M_SC0 + x->sc, x->base);
  value(c[2], sizeof c[2], GP_M_SC0 + x->sc, x->cand);
  double d = x->cand - x->base;
  if (x->base == x->cand)
    snprintf(c[3], sizeof c[3], "=");
  else if (gp_metric_kind(GP_M_SC0 + x->sc) == GP_MK_BYTES) {
    char t[32];
    snprintf(c[3], sizeof c[3], "%c%s", d < 0 ? '-' : '+',
             gp_fmt_bytes(t, sizeof t, fabs(d)));
  } else
    snprintf(c[3], sizeof c[3], "%+.4g", d);
  if (!x->exact) cells[4] = "varies";
  snprintf(c[5], sizeof c[5], "%s", verdict_word(x->v, 0));
  row(s, cells);
}

/* Gated counters: a row each that moved, one line for the others (so
 * that --exact all keeps to one screen). */
static void counter_rows(struct sink *s, const struct gp_cmp_result *r) {
  char same[600] = "", b[700];
  size_t nsame = 0, at = 0;
  for (int sc = 0; sc < GP_SC_N; sc++) {
    const struct gp_cmp_counter *c = &r->ctr[sc];
    if (c->sc < 0 || !c->gated) continue;
    if (c->v != GP_PASS || c->base != c->cand) {
      counter_row(s, c);
    } else if (at < sizeof same) {
      nsame++;
      at += (size_t)snprintf(same + at, sizeof same - at, "%s%s",
                             at ? ", " : "", gp_metric_name(GP_M_SC0 + sc));
    }
  }
  if (!nsame) return;
  snprintf(b, sizeof b, "%zu exact counter%s unchanged: %s", nsame,
           nsame == 1 ? "" : "s", same);
  if (s->md) {
    out(s, "\n%s\n", cell(s, same, sizeof same, b, 600));
    return;
  }
  line(s, b); /* wrapped to 100 columns */
}

static void gates(struct sink *s, const struct gp_cmp_out *o) {
  const struct gp_cmp_result *r = o->res;
  static const char *const h[6] = {"gate",   "base",         "new",
                                   "change", "95% interval", "verdict"};
  title(s, "Gates");
  head(s, 6, h, (const int[]){16, 10, 10, 10, 18, 20});
  for (size_t i = 0; i < r->nm; i++)
    gate_row(s, &r->m[i]);
  counter_rows(s, r);
  /* one gate: its reason is the verdict's, said above */
  if (r->nm < 2 && r->nm && strstr(r->reason, r->m[0].reason)) return;
  if (!s->md) out(s, "\n");
  for (size_t i = 0; i < r->nm; i++) {
    char b[400];
    snprintf(b, sizeof b, "%s: %s", gp_metric_name(r->m[i].metric),
             r->m[i].reason);
    line(s, b);
  }
}

static void cats(struct sink *s, const struct gp_cmp_result *r) {
  static const char *const h[5] = {"category", "base", "new", "delta",
                                   "points"};
  title(s, r->whole ? "Time per run, per GPU (no steps)"
                    : "Time per step, per GPU");
  head(s, 5, h, (const int[]){16, 10, 10, 10, 8});
  for (int k = 0; k < GP_CAT_N; k++) {
    char c[5][32];
    const char *cells[5] = {gp_cat_label[k], dur(c[1], 32, r->cat_b[k]),
                            dur(c[2], 32, r->cat_c[k]),
                            sdur(c[3], 32, r->cat_c[k] - r->cat_b[k]), c[4]};
    snprintf(c[4], sizeof c[4], "%+.1f", r->share_c[k] - r->share_b[k]);
    row(s, cells);
  }
}

/* What a kernel is called in a table: the short form of a C++ name. */
static const char *short_name(char *b, size_t n, const char *name) {
  if (strchr(name, '(')) {
    gp_short_name(name, b, n);
    if (*b) return b;
  }
  return name;
}

static void name_rows(struct sink *s, const char *what, const char *label,
                      const struct gp_cmp_row *v, size_t n, size_t top) {
  const char *h[4] = {what, "base", "new", "delta"};
  title(s, label);
  head(s, 4, h, (const int[]){44, 10, 10, 10});
  for (size_t i = 0; i < n && i < top; i++) {
    if (v[i].base == v[i].cand) break;
    char c[4][256], nm[256], sn[200], cut[160];
    gp_text_clean_mid(short_name(sn, sizeof sn, v[i].name), cut, sizeof cut,
                      36);
    snprintf(nm, sizeof nm, "%s%s", cut,
             v[i].added  ? " (new)"
             : v[i].gone ? " (gone)"
                         : "");
    const char *cells[4] = {cell(s, c[0], sizeof c[0], nm, 44),
                            dur(c[1], 64, v[i].base), dur(c[2], 64, v[i].cand),
                            sdur(c[3], 64, v[i].cand - v[i].base)};
    row(s, cells);
  }
}

/* Copies by direction, from the counters: "H2D 0 -> 1 (0 B -> 1.0 MiB)". */
static void copies(struct sink *s, const struct gp_cmp_result *r) {
  static const int cnt[4] = {GP_SC_h2d_copies, GP_SC_d2h_copies,
                             GP_SC_d2d_copies, GP_SC_p2p_copies};
  static const int byt[4] = {GP_SC_h2d_bytes, GP_SC_d2h_bytes, GP_SC_d2d_bytes,
                             GP_SC_p2p_bytes};
  static const char *const dir[4] = {"H2D", "D2H", "D2D", "P2P"};
  int any = 0;
  for (int i = 0; i < 4; i++) {
    const struct gp_cmp_counter *c = &r->ctr[cnt[i]], *b = &r->ctr[byt[i]];
    if (c->sc < 0 || b->sc < 0 || (!c->base && !c->cand)) continue;
    if (!any++) title(s, "Copies per step");
    char t[200], b1[32], b2[32], n1[48], n2[48];
    snprintf(t, sizeof t, "%s: %s -> %s copies, %s -> %s", dir[i],
             gp_fmt_num(n1, sizeof n1, c->base),
             gp_fmt_num(n2, sizeof n2, c->cand),
             gp_fmt_bytes(b1, sizeof b1, b->base),
             gp_fmt_bytes(b2, sizeof b2, b->cand));
    line(s, t);
  }
}

static void counters(struct sink *s, const struct gp_cmp_result *r) {
  int any = 0;
  for (int sc = 0; sc < GP_SC_N; sc++) {
    const struct gp_cmp_counter *x = &r->ctr[sc];
    if (x->sc < 0 || !*x->text ||
        (!x->exact && x->base == x->cand && !x->gated))
      continue;
    if (!any++) title(s, "Counters per step");
    line(s, x->text);
  }
}

static void findings(struct sink *s, const struct gp_cmp_result *r) {
  if (!r->nappeared && !r->ngone) return;
  title(s, "Findings");
  for (int gone = 0; gone < 2; gone++)
    for (size_t i = 0; i < (gone ? r->ngone : r->nappeared); i++) {
      const struct gp_cmp_finding *f = gone ? r->gone[i] : r->appeared[i];
      char t[600];
      snprintf(t, sizeof t, "%s %s: %s", gone ? "gone:" : "new:", f->rule,
               f->text);
      line(s, t);
    }
}

static void budgets(struct sink *s, const struct gp_cmp_result *r) {
  static const char *const h[4] = {"budget", "verdict", "from", "value"};
  if (!r->nbud) return;
  title(s, "Budgets");
  s->left = 1;
  head(s, 4, h, (const int[]){24, 12, 20, 40});
  for (size_t i = 0; i < r->nbud; i++) {
    const struct gp_cmp_budget *b = &r->bud[i];
    char c[4][200];
    const char *v = b->v == GP_REGRESSION ? "exceeded" : verdict_word(b->v, 0);
    const char *cells[4] = {cell(s, c[0], sizeof c[0], b->b->text, 24), v,
                            cell(s, c[2], sizeof c[2], b->b->where, 20),
                            cell(s, c[3], sizeof c[3], b->reason, 60)};
    row(s, cells);
  }
  s->left = 0;
}

static void notes(struct sink *s, const struct gp_cmp_result *r) {
  if (!r->nnotes) return;
  title(s, "Notes");
  for (size_t i = 0; i < r->nnotes; i++)
    line(s, r->notes[i]);
}

/* The verdict in the title: a failure of budgets alone says so. */
static const char *headline(const struct gp_cmp_result *r) {
  int gate = 0;
  for (size_t i = 0; i < r->nm; i++)
    gate |= r->m[i].v == GP_REGRESSION;
  for (int sc = 0; sc < GP_SC_N; sc++)
    gate |=
        r->ctr[sc].sc >= 0 && r->ctr[sc].gated && r->ctr[sc].v == GP_REGRESSION;
  if (r->verdict == GP_REGRESSION && !gate && r->nbud_failed)
    return "BUDGET EXCEEDED";
  return verdict_word(r->verdict, 1);
}

static int render(FILE *f, const struct gp_cmp_out *o, int md) {
  struct sink s = {.f = f, .md = md};
  const struct gp_cmp_result *r = o->res;
  size_t top = o->top ? o->top : md ? 10 : 5;
  char t[700], why[1200];
  snprintf(t, sizeof t, "gpuphase %s: %s (exit %d)",
           r->has_base ? "compare" : "check", headline(r), r->exit_code);
  if (md)
    out(&s, "### %s\n\n%s\n", t, cell(&s, why, sizeof why, r->reason, 400));
  else {
    out(&s, "%s\n", t);
    line(&s, r->reason); /* wrapped to 100 columns */
  }
  preflight(&s, o);
  if (r->nm || r->nbud) {
    if (r->has_base) gates(&s, o);
  }
  if (r->have_cats) cats(&s, r);
  if (r->nkern && r->kern[0].base != r->kern[0].cand)
    name_rows(&s, "kernel",
              r->whole ? "Kernels by change per run (no steps)"
                       : "Kernels by change per step",
              r->kern, r->nkern,
              top);
  if (r->napi && r->api[0].base != r->api[0].cand)
    name_rows(&s, "API call",
              r->whole ? "API calls by blocked time per run (no steps)"
                       : "API calls by blocked time per step",
              r->api, r->napi, top);
  if (r->has_base) {
    copies(&s, r);
    counters(&s, r);
    findings(&s, r);
  }
  budgets(&s, r);
  notes(&s, r);
  return ferror(f) ? -1 : 0;
}

int gp_cmp_text(FILE *f, const struct gp_cmp_out *o) {
  return render(f, o, 0);
}

int gp_cmp_markdown(FILE *f, const struct gp_cmp_out *o) {
  return render(f, o, 1);
}
