/* compare and check for machines: JSON (schema in docs/compare.md), JUnit
 * XML (one testcase per gate) and GitHub workflow commands. */
#include "compare.h"

#include <math.h>
#include <string.h>

#include "jsonw.h"
#include "util.h"

static const char *unit_of(int m) {
  switch (gp_metric_kind(m)) {
  case GP_MK_DUR:
  case GP_MK_CAT:
    return "ns";
  case GP_MK_PCT:
    return "percent";
  case GP_MK_BYTES:
  case GP_MK_MEM:
    return "bytes";
  case GP_MK_RATE:
    return "per_s";
  case GP_MK_COUNT:
    return "count";
  }
  return "?";
}

static const char *mode_key(enum gp_cmp_mode m) {
  return m == GP_MODE_RUNS ? "runs" : m == GP_MODE_STEPS ? "steps" : "none";
}

static void j_values(struct gp_json *j, const char *key, const double *v,
                     size_t n) {
  gp_json_arr(j, key);
  for (size_t i = 0; v && i < n; i++)
    gp_json_num(j, NULL, v[i], 3, 0);
  gp_json_end(j);
}

static void j_metric(struct gp_json *j, const struct gp_cmp_metric *x) {
  int have = x->mode != GP_MODE_NONE;
  gp_json_obj(j, NULL);
  gp_json_str(j, "name", gp_metric_name(x->metric));
  gp_json_str(j, "unit", unit_of(x->metric));
  gp_json_bool(j, "primary", x->primary);
  gp_json_bool(j, "higher_is_better", gp_metric_higher_better(x->metric));
  gp_json_str(j, "mode", mode_key(x->mode));
  gp_json_bool(j, "advisory", x->mode == GP_MODE_STEPS);
  if (have) {
    gp_json_num(j, "base", x->base, 3, 0);
    gp_json_num(j, "new", x->cand, 3, 0);
    gp_json_num(j, "estimate", x->slow.est, 6, 0);
    gp_json_arr(j, "interval");
    gp_json_num(j, NULL, x->slow.lo, 6, 0);
    gp_json_num(j, NULL, x->slow.hi, 6, 0);
    gp_json_end(j);
    gp_json_num(j, "delta", x->slow.d_est, 3, 0);
  } else {
    gp_json_null(j, "base");
    gp_json_null(j, "new");
    gp_json_null(j, "estimate");
    gp_json_null(j, "interval");
    gp_json_null(j, "delta");
  }
  gp_json_num(j, "confidence", 0.95, 2, 0);
  gp_json_u64(j, "resamples", have ? x->iv.resamples : 0);
  gp_json_obj(j, "samples");
  gp_json_str(j, "kind", x->mode == GP_MODE_STEPS ? "steps" : "runs");
  gp_json_u64(j, "base_count", x->nb);
  gp_json_u64(j, "new_count", x->nc);
  j_values(j, "base", x->sb, x->sb ? x->nb : 0);
  j_values(j, "new", x->sc, x->sc ? x->nc : 0);
  gp_json_end(j);
  gp_json_num(j, "threshold", x->rule.threshold, 6, 0);
  gp_json_num(j, "noise_floor", x->rule.noise, 6, 0);
  gp_json_num(j, "min_delta", x->rule.min_delta, 3, 0);
  gp_json_str(j, "verdict", gp_verdict_key(x->v));
  gp_json_str(j, "reason", x->reason);
  gp_json_end(j);
}

static void j_counters(struct gp_json *j, const struct gp_cmp_result *r) {
  gp_json_arr(j, "counters");
  for (int sc = 0; sc < GP_SC_N; sc++) {
    const struct gp_cmp_counter *x = &r->ctr[sc];
    if (x->sc < 0) continue;
    gp_json_obj(j, NULL);
    gp_json_str(j, "name", gp_metric_name(GP_M_SC0 + sc));
    gp_json_num(j, "base", x->base, 3, 0);
    gp_json_num(j, "new", x->cand, 3, 0);
    gp_json_num(j, "change", x->cand - x->base, 3, 0);
    gp_json_bool(j, "exact", x->exact);
    gp_json_bool(j, "gated", x->gated);
    gp_json_str(j, "verdict", gp_verdict_key(x->v));
    if (*x->text)
      gp_json_str(j, "text", x->text);
    else
      gp_json_null(j, "text");
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void j_categories(struct gp_json *j, const struct gp_cmp_result *r) {
  gp_json_arr(j, "categories");
  for (int k = 0; r->have_cats && k < GP_CAT_N; k++) {
    gp_json_obj(j, NULL);
    gp_json_str(j, "name", gp_cat_key[k]);
    gp_json_num(j, "base_ns", r->cat_b[k], 1, 0);
    gp_json_num(j, "new_ns", r->cat_c[k], 1, 0);
    gp_json_num(j, "delta_ns", r->cat_c[k] - r->cat_b[k], 1, 0);
    gp_json_num(j, "base_pct", r->share_b[k], 3, 0);
    gp_json_num(j, "new_pct", r->share_c[k], 3, 0);
    gp_json_num(j, "points", r->share_c[k] - r->share_b[k], 3, 0);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void j_rows(struct gp_json *j, const char *key,
                   const struct gp_cmp_row *v, size_t n) {
  gp_json_arr(j, key);
  for (size_t i = 0; i < n; i++) {
    gp_json_obj(j, NULL);
    gp_json_str(j, "name", v[i].name);
    gp_json_num(j, "base_ns", v[i].base, 1, 0);
    gp_json_num(j, "new_ns", v[i].cand, 1, 0);
    gp_json_num(j, "delta_ns", v[i].cand - v[i].base, 1, 0);
    gp_json_bool(j, "new", v[i].added);
    gp_json_bool(j, "vanished", v[i].gone);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void j_findings(struct gp_json *j, const char *key,
                       const struct gp_cmp_finding *const *v, size_t n) {
  gp_json_arr(j, key);
  for (size_t i = 0; i < n; i++) {
    gp_json_obj(j, NULL);
    gp_json_str(j, "rule", v[i]->rule);
    gp_json_str(j, "text", v[i]->text);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void j_budgets(struct gp_json *j, const struct gp_cmp_result *r) {
  gp_json_arr(j, "budgets");
  for (size_t i = 0; i < r->nbud; i++) {
    const struct gp_cmp_budget *b = &r->bud[i];
    gp_json_obj(j, NULL);
    gp_json_str(j, "expression", b->b->text);
    gp_json_str(j, "metric", gp_metric_name(b->b->metric));
    gp_json_str(j, "op", gp_op_str(b->b->op));
    gp_json_num(j, "limit", b->b->value, 3, 0);
    gp_json_str(j, "unit", b->b->pct ? "percent" : unit_of(b->b->metric));
    if (b->known)
      gp_json_num(j, "value", b->value, 3, 0);
    else
      gp_json_null(j, "value");
    gp_json_str(j, "verdict",
                b->v == GP_REGRESSION ? "exceeded"
                : b->v == GP_PASS     ? "pass"
                                      : "inconclusive");
    gp_json_str(j, "reason", b->reason);
    gp_json_str(j, "where", b->b->where);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void j_steps(struct gp_json *j, const struct gp_cmp_run *r) {
  if (!r->has_steps) {
    gp_json_null(j, "steps");
    return;
  }
  static const char *const src[] = {
#define GP_X(U, k) #k,
      GP_STEP_SOURCES(GP_X)
#undef GP_X
  };
  gp_json_obj(j, "steps");
  gp_json_str(j, "source",
              r->source >= 0 && r->source < GP_STEPS_SOURCE_N ? src[r->source]
                                                              : "none");
  gp_json_str(j, "name", r->step_name);
  gp_json_u64(j, "measured", r->measured);
  gp_json_num(j, "median_ns", r->median, 0, 0);
  gp_json_num(j, "mean_ns", r->mean, 0, 0);
  gp_json_num(j, "p95_ns", r->p95, 0, 0);
  gp_json_num(j, "p99_ns", r->p99, 0, 0);
  gp_json_num(j, "max_ns", r->max, 0, 0);
  gp_json_num(j, "per_s", r->per_s, 3, 0);
  gp_json_num(j, "items_per_s", r->items_per_s, 3, 1);
  gp_json_end(j);
}

static void j_run(struct gp_json *j, const struct gp_cmp_run *r) {
  gp_json_obj(j, NULL);
  gp_json_str(j, "id", r->id);
  gp_json_str(j, "file", r->file);
  gp_json_u64(j, "files", r->nfiles);
  j_steps(j, r);
  gp_json_u64(j, "window_ns", r->wend > r->wstart ? r->wend - r->wstart : 0);
  gp_json_u64(j, "lost_events", r->lost);
  gp_json_u64(j, "mem_peak_bytes", r->mem_peak);
  gp_json_str(j, "device", r->device);
  gp_json_u64(j, "sms", r->sms);
  gp_json_u64(j, "memory_bytes", r->mem_total);
  gp_json_u64(j, "gpus", r->ndev);
  gp_json_i64(j, "driver_version", r->driver);
  gp_json_i64(j, "runtime_version", r->runtime);
  gp_json_str(j, "command", r->cmdline);
  gp_json_str(j, "host", r->host);
  gp_json_bool(j, "degraded", r->degraded);
  gp_json_bool(j, "truncated", r->truncated);
  gp_json_end(j);
}

static void j_side(struct gp_json *j, const char *key,
                   const struct gp_cmp_side *s) {
  if (!s) {
    gp_json_null(j, key);
    return;
  }
  gp_json_obj(j, key);
  gp_json_u64(j, "runs_count", s->n);
  gp_json_arr(j, "runs");
  for (size_t i = 0; i < s->n; i++)
    j_run(j, &s->v[i]);
  gp_json_end(j);
  gp_json_end(j);
}

static void j_options(struct gp_json *j, const struct gp_cmp_opts *o) {
  gp_json_obj(j, "options");
  gp_json_num(j, "noise_floor", o->noise, 6, 0);
  gp_json_num(j, "threshold", o->threshold, 6, 0);
  gp_json_num(j, "min_delta_ns", o->min_delta, 3, 0);
  gp_json_u64(j, "resamples", o->resamples);
  gp_json_u64(j, "seed", o->seed);
  gp_json_bool(j, "allow_different_devices", o->allow_different_devices);
  gp_json_i64(j, "inconclusive_exit_code", o->inconclusive);
  gp_json_arr(j, "exact");
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (o->exact[sc]) gp_json_str(j, NULL, gp_metric_name(GP_M_SC0 + sc));
  gp_json_end(j);
  gp_json_end(j);
}

int gp_cmp_json(FILE *f, const struct gp_cmp_out *o) {
  const struct gp_cmp_result *r = o->res;
  struct gp_json j;
  gp_json_init(&j, f, 1);
  gp_json_obj(&j, NULL);
  gp_json_u64(&j, "schema", GP_CMP_SCHEMA);
  gp_json_str(&j, "kind", r->has_base ? "compare" : "check");
  gp_json_str(&j, "verdict", gp_verdict_key(r->verdict));
  gp_json_i64(&j, "exit_code", r->exit_code);
  gp_json_str(&j, "reason", r->reason);
  gp_json_str(&j, "primary", r->nm ? gp_metric_name(r->m[0].metric) : NULL);
  j_options(&j, o->opts);
  gp_json_arr(&j, "metrics");
  for (size_t i = 0; i < r->nm; i++)
    j_metric(&j, &r->m[i]);
  gp_json_end(&j);
  j_counters(&j, r);
  gp_json_str(&j, "explained_per",
              r->whole ? "run" : r->have_cats || r->nkern || r->napi ? "step"
                                                                    : NULL);
  j_categories(&j, r);
  j_rows(&j, "kernels", r->kern, r->nkern);
  j_rows(&j, "api", r->api, r->napi);
  gp_json_obj(&j, "findings");
  j_findings(&j, "appeared", r->appeared, r->nappeared);
  j_findings(&j, "disappeared", r->gone, r->ngone);
  gp_json_end(&j);
  j_budgets(&j, r);
  gp_json_bool(&j, "devices_differ", r->devices_differ);
  gp_json_arr(&j, "notes");
  for (size_t i = 0; i < r->nnotes; i++)
    gp_json_str(&j, NULL, r->notes[i]);
  gp_json_end(&j);
  j_side(&j, "base", o->base);
  j_side(&j, "new", o->cand);
  gp_json_end(&j);
  return ferror(f) ? -1 : 0;
}

/* Text for XML: cleaned (XML 1.0 allows no control characters), then
 * escaped. */
static void xml(FILE *f, const char *s) {
  char clean[2048];
  gp_text_clean(s ? s : "", clean, sizeof clean, 600);
  for (const char *p = clean; *p; p++) {
    switch (*p) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&apos;", f);
      break;
    default:
      fputc(*p, f);
    }
  }
}

static void testcase(FILE *f, const char *cls, const char *name,
                     enum gp_verdict v, const char *why) {
  fprintf(f, "    <testcase classname=\"%s\" name=\"", cls);
  xml(f, name);
  fputs("\" time=\"0\">\n", f);
  if (v == GP_REGRESSION) {
    fputs("      <failure type=\"regression\" message=\"", f);
    xml(f, why);
    fputs("\"/>\n", f);
  } else if (v == GP_INCONCLUSIVE) {
    fputs("      <skipped message=\"", f);
    xml(f, why);
    fputs("\"/>\n", f);
  } else {
    fputs("      <system-out>", f);
    xml(f, why);
    fputs("</system-out>\n", f);
  }
  fputs("    </testcase>\n", f);
}

static void count(enum gp_verdict v, size_t *n, size_t *fail, size_t *skip) {
  (*n)++;
  *fail += v == GP_REGRESSION;
  *skip += v == GP_INCONCLUSIVE;
}

int gp_cmp_junit(FILE *f, const struct gp_cmp_out *o) {
  const struct gp_cmp_result *r = o->res;
  size_t n = 0, fail = 0, skip = 0;
  for (size_t i = 0; i < r->nm; i++)
    count(r->m[i].v, &n, &fail, &skip);
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (r->ctr[sc].sc >= 0 && r->ctr[sc].gated)
      count(r->ctr[sc].v, &n, &fail, &skip);
  for (size_t i = 0; i < r->nbud; i++)
    count(r->bud[i].v, &n, &fail, &skip);
  const char *suite = r->has_base ? "compare" : "check";
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<testsuites name=\"gpuphase\" tests=\"%zu\" failures=\"%zu\" "
          "skipped=\"%zu\" errors=\"0\">\n"
          "  <testsuite name=\"gpuphase %s\" tests=\"%zu\" failures=\"%zu\" "
          "skipped=\"%zu\" errors=\"0\">\n",
          n, fail, skip, suite, n, fail, skip);
  for (size_t i = 0; i < r->nm; i++)
    testcase(f, "gpuphase.compare", gp_metric_name(r->m[i].metric), r->m[i].v,
             r->m[i].reason);
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (r->ctr[sc].sc >= 0 && r->ctr[sc].gated)
      testcase(f, "gpuphase.exact", gp_metric_name(GP_M_SC0 + sc), r->ctr[sc].v,
               *r->ctr[sc].text ? r->ctr[sc].text : "no change per step");
  for (size_t i = 0; i < r->nbud; i++)
    testcase(f, "gpuphase.budget", r->bud[i].b->text, r->bud[i].v,
             r->bud[i].reason);
  fputs("  </testsuite>\n</testsuites>\n", f);
  return ferror(f) ? -1 : 0;
}

/* A workflow command's text: GitHub's escapes (a property also escapes
 * ':' and ','). */
static void gh(FILE *f, const char *s, int property) {
  char clean[1024];
  gp_text_clean(s, clean, sizeof clean, 400);
  for (const char *p = clean; *p; p++) {
    if (*p == '%')
      fputs("%25", f);
    else if (property && *p == ':')
      fputs("%3A", f);
    else if (property && *p == ',')
      fputs("%2C", f);
    else
      fputc(*p, f);
  }
}

static int annotate(FILE *f, int *k, const char *level, const char *what,
                    const char *name, const char *text) {
  if (*k >= 10) return 0;
  char t[200];
  snprintf(t, sizeof t, "gpuphase: %s %s", name, what);
  fprintf(f, "::%s title=", level);
  gh(f, t, 1);
  fputs("::", f);
  gh(f, text, 0);
  fputc('\n', f);
  return ++*k;
}

int gp_cmp_annotations(FILE *f, const struct gp_cmp_out *o) {
  const struct gp_cmp_result *r = o->res;
  int k = 0;
  for (size_t i = 0; i < r->nm; i++)
    if (r->m[i].v == GP_REGRESSION)
      annotate(f, &k, "error", "regression", gp_metric_name(r->m[i].metric),
               r->m[i].reason);
  for (int sc = 0; sc < GP_SC_N; sc++)
    if (r->ctr[sc].sc >= 0 && r->ctr[sc].gated && r->ctr[sc].v == GP_REGRESSION)
      annotate(f, &k, "error", "changed", gp_metric_name(GP_M_SC0 + sc),
               r->ctr[sc].text);
  for (size_t i = 0; i < r->nbud; i++)
    if (r->bud[i].v == GP_REGRESSION)
      annotate(f, &k, "error", "exceeded", r->bud[i].b->text, r->bud[i].reason);
  if (r->verdict == GP_INCONCLUSIVE)
    annotate(f, &k, "warning", "inconclusive", "result", r->reason);
  return ferror(f) ? -1 : 0;
}
