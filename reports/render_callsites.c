/* Call sites in every output: the text section "Where the host waits", the
 * JSON "callsites" list, the HTML table with expandable stacks, and the
 * folded stacks (--format folded) that flamegraph.pl and speedscope read.
 * Definitions: docs/callsites.md. */
#include "render_callsites.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "callsites.h"
#include "util.h"

static uint64_t dev_idle(const struct gp_proc_res *r) {
  uint64_t t = 0;
  for (size_t i = 0; i < r->ndev; i++)
    t += r->dev[i].bd.cat[GP_CAT_LAUNCH] + r->dev[i].bd.cat[GP_CAT_SYNC_IDLE] +
         r->dev[i].bd.cat[GP_CAT_HOST_WAIT];
  return t;
}

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

int gp_cs_present(const struct gp_proc_res *r) {
  return r->callsites && r->callsites->has_stacks;
}

/* ---- text ---- */

static void title(const struct gp_cs_site *s, char *out, size_t cap) {
  const struct gp_cs_frame *t = gp_cs_title(s);
  if (t)
    gp_cs_frame_str(t, out, cap);
  else
    snprintf(out, cap, "(no frame)");
}

/* The sites of kind k with something to show, best first: by GPU idle
 * explained, then blocked time (blocking), gaps' time (idle_end), count
 * (launch). At most top; returns how many. */
static int by_kind(const void *pa, const void *pb, void *ctx) {
  const struct gp_cs_site *a = *(const struct gp_cs_site *const *)pa,
                          *b = *(const struct gp_cs_site *const *)pb;
  int kind = *(const int *)ctx;
  uint64_t x[3], y[3];
  if (kind == GP_CS_BLOCKING) {
    x[0] = a->idle_ns, x[1] = a->blocked_ns, x[2] = a->count;
    y[0] = b->idle_ns, y[1] = b->blocked_ns, y[2] = b->count;
  } else if (kind == GP_CS_IDLE_END) {
    x[0] = a->gap_ns, x[1] = a->after_ns, x[2] = a->gaps;
    y[0] = b->gap_ns, y[1] = b->after_ns, y[2] = b->gaps;
  } else {
    x[0] = x[1] = x[2] = a->launches;
    y[0] = y[1] = y[2] = b->launches;
  }
  for (int i = 0; i < 3; i++)
    if (x[i] != y[i]) return x[i] < y[i] ? 1 : -1;
  return 0;
}

static int has_kind(const struct gp_cs_site *s, int k) {
  return k == GP_CS_BLOCKING   ? s->count > 0
         : k == GP_CS_IDLE_END ? s->gaps > 0 || s->after_ns > 0
                               : s->launches > 0;
}

static size_t ranked(const struct gp_cs_res *cs, int k,
                     const struct gp_cs_site **out, size_t top, size_t *all) {
  size_t n = 0;
  for (size_t i = 0; i < cs->n; i++)
    if (has_kind(&cs->v[i], k)) out[n++] = &cs->v[i];
  qsort_r(out, n, sizeof *out, by_kind, &k);
  if (all) *all = n;
  return n < top ? n : top;
}

/* "train.py:142 (step)  cudaStreamSynchronize" in cols: the frame is cut,
 * not the call (up to 28 columns of it), which names what waits */
static void label(const struct gp_cs_site *s, char *out, size_t cap,
                  size_t cols) {
  char fr[512], f[160], api[128];
  title(s, fr, sizeof fr);
  size_t na = gp_text_clean(s->api, api, sizeof api, 28);
  size_t room = cols > na + 2 ? cols - na - 2 : 0;
  gp_text_clean(fr, f, sizeof f, room);
  size_t o = 0;
  for (const char *p[] = {f, "  ", api}, **q = p; q < p + 3; q++)
    for (const char *c = *q; *c && o + 1 < cap; c++)
      out[o++] = *c;
  if (cap) out[o] = 0;
}

/* "(N more)" under a table that shows top of n sites */
static void more(FILE *f, size_t n, size_t shown) {
  if (n > shown) fprintf(f, "  (%zu more)\n", n - shown);
}

static void full_stack(FILE *f, const struct gp_cs_site *s, int all) {
  if (!all) return;
  for (size_t i = 0; i < s->nframes; i++) {
    char fr[512], c[200];
    gp_cs_frame_str(&s->frames[i], fr, sizeof fr);
    gp_text_clean(fr, c, sizeof c, 92);
    fprintf(f, "        %s\n", c);
  }
  if (s->truncated) fputs("        (outer callers not captured)\n", f);
}

void gp_cs_text(FILE *f, const struct gp_proc_res *r, const char *bold,
                const char *off, size_t top) {
  const struct gp_cs_res *cs = r->callsites;
  if (!gp_cs_present(r)) return;
  char a[16], b[16], c[16], d[16], e[16], l[160];
  uint64_t idle = dev_idle(r);
  fprintf(f,
          "\n%sWhere the host waits%s  (GPU idle %s: sync idle %s, host "
          "wait %s)\n",
          bold, off, gp_fmt_sdur(a, sizeof a, idle),
          gp_fmt_sdur(b, sizeof b, cs->sync_idle_ns),
          gp_fmt_sdur(c, sizeof c, cs->host_wait_ns));
  /* 2 + 44 + 7 + 4 x 10 + 7 = 100 columns */
  fprintf(f, "  %-44s %6s %9s %9s %9s %9s %6s\n", "blocking call site", "count",
          "blocked", "mean", "p95", "GPU idle", "idle%");
  const struct gp_cs_site **rk = malloc((cs->n ? cs->n : 1) * sizeof *rk);
  if (!rk) return;
  size_t all, nr = ranked(cs, GP_CS_BLOCKING, rk, top, &all);
  for (size_t i = 0; i < nr; i++) {
    const struct gp_cs_site *s = rk[i];
    label(s, l, sizeof l, 44);
    fprintf(f, "  %-44s %6" PRIu64 " %9s %9s %9s %9s %5.1f%%\n", l, s->count,
            gp_fmt_sdur(a, sizeof a, s->blocked_ns),
            gp_fmt_sdur(b, sizeof b, s->count ? s->blocked_ns / s->count : 0),
            gp_fmt_sdur(c, sizeof c, gp_hist_pct(&s->dur, 95)),
            gp_fmt_sdur(d, sizeof d, s->idle_ns), pct(s->idle_ns, idle));
    full_stack(f, s, cs->frames_all);
  }
  more(f, all, nr);
  if (cs->calls_uncaptured || cs->sync_uncaptured_ns)
    fprintf(f, "  %-44s %6" PRIu64 " %9s %9s %9s %9s %5.1f%%\n",
            "(not captured)", cs->calls_uncaptured,
            gp_fmt_sdur(a, sizeof a, cs->blocked_uncaptured_ns), "", "",
            gp_fmt_sdur(d, sizeof d, cs->sync_uncaptured_ns),
            pct(cs->sync_uncaptured_ns, idle));
  fprintf(f, "  %-44s %6s %9s %9s %9s %9s %6s\n", "host wait ended by", "gaps",
          "", "", "after it", "GPU idle", "idle%");
  nr = ranked(cs, GP_CS_IDLE_END, rk, top, &all);
  for (size_t i = 0; i < nr; i++) {
    const struct gp_cs_site *s = rk[i];
    label(s, l, sizeof l, 44);
    fprintf(f, "  %-44s %6" PRIu64 " %9s %9s %9s %9s %5.1f%%\n", l, s->gaps, "",
            "", gp_fmt_sdur(c, sizeof c, s->after_ns),
            gp_fmt_sdur(d, sizeof d, s->gap_ns), pct(s->gap_ns, idle));
    full_stack(f, s, cs->frames_all);
  }
  more(f, all, nr);
  if (cs->host_wait_uncaptured_ns)
    fprintf(f, "  %-44s %6s %9s %9s %9s %9s %5.1f%%\n",
            "(not captured, or no call ended it)", "", "", "", "",
            gp_fmt_sdur(e, sizeof e, cs->host_wait_uncaptured_ns),
            pct(cs->host_wait_uncaptured_ns, idle));
  uint64_t sampled = cs->launches - cs->launches_uncaptured;
  if (sampled) {
    fprintf(f, "  %-44s %6s\n", "launch site (sampled)", "count");
    nr = ranked(cs, GP_CS_LAUNCH, rk, top, &all);
    for (size_t i = 0; i < nr; i++) {
      const struct gp_cs_site *s = rk[i];
      label(s, l, sizeof l, 44);
      fprintf(f, "  %-44s %6" PRIu64 "\n", l, s->launches);
      full_stack(f, s, cs->frames_all);
    }
    more(f, all, nr);
  }
  free(rk);
}

void gp_cs_text_hint(FILE *f) {
  fputs("\nWhere the host waits\n  no call-site records in the trace: "
        "recorded with GPUPHASE_STACKS=off, or by\n  a build without "
        "libunwind (docs/callsites.md)\n",
        f);
}

/* ---- JSON ---- */

static void json_frames(struct gp_json *j, const struct gp_cs_site *s) {
  gp_json_arr(j, "frames");
  for (size_t i = 0; i < s->nframes; i++) {
    const struct gp_cs_frame *fr = &s->frames[i];
    gp_json_obj(j, NULL);
    gp_json_str(j, "function", fr->function);
    gp_json_str(j, "file", fr->file);
    gp_json_i64(j, "line", fr->line);
    gp_json_str(j, "module", fr->module);
    gp_json_bool(j, "python", fr->python);
    gp_json_bool(j, "inlined", fr->inlined);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void json_site(struct gp_json *j, const struct gp_cs_site *s, int k) {
  gp_json_obj(j, NULL);
  gp_json_str(j, "kind", gp_cs_kind_key[k]);
  gp_json_str(j, "api", s->api);
  uint64_t count = k == GP_CS_BLOCKING   ? s->count
                   : k == GP_CS_IDLE_END ? s->gaps
                                         : s->launches;
  gp_json_u64(j, "count", count);
  gp_json_u64(j, "blocked_ns", k == GP_CS_BLOCKING ? s->blocked_ns : 0);
  gp_json_u64(j, "gpu_idle_ns",
              k == GP_CS_BLOCKING   ? s->idle_ns
              : k == GP_CS_IDLE_END ? s->gap_ns
                                    : 0);
  if (k == GP_CS_BLOCKING) {
    gp_json_u64(j, "mean_ns", s->count ? s->blocked_ns / s->count : 0);
    gp_json_u64(j, "p95_ns", gp_hist_pct(&s->dur, 95));
  }
  if (k == GP_CS_IDLE_END) gp_json_u64(j, "idle_after_ns", s->after_ns);
  gp_json_bool(j, "truncated", s->truncated);
  json_frames(j, s);
  gp_json_end(j);
}

void gp_cs_json(struct gp_json *j, const struct gp_proc_res *r) {
  const struct gp_cs_res *cs = r->callsites;
  gp_json_arr(j, "callsites");
  const struct gp_cs_site **rk =
      gp_cs_present(r) ? malloc((cs->n ? cs->n : 1) * sizeof *rk) : NULL;
  for (int k = 0; rk && k < GP_CS_KIND_N; k++) {
    size_t n = ranked(cs, k, rk, SIZE_MAX, NULL);
    for (size_t i = 0; i < n; i++)
      json_site(j, rk[i], k);
  }
  free(rk);
  gp_json_end(j);
  if (!gp_cs_present(r)) return;
  gp_json_obj(j, "callsites_totals");
  gp_json_u64(j, "sync_idle_ns", cs->sync_idle_ns);
  gp_json_u64(j, "sync_idle_not_captured_ns", cs->sync_uncaptured_ns);
  gp_json_u64(j, "host_wait_ns", cs->host_wait_ns);
  gp_json_u64(j, "host_wait_not_captured_ns", cs->host_wait_uncaptured_ns);
  gp_json_u64(j, "blocked_ns", cs->blocked_ns);
  gp_json_u64(j, "blocked_not_captured_ns", cs->blocked_uncaptured_ns);
  gp_json_u64(j, "blocking_calls_not_captured", cs->calls_uncaptured);
  gp_json_u64(j, "launches", cs->launches);
  gp_json_u64(j, "launches_not_captured", cs->launches_uncaptured);
  gp_json_end(j);
}

/* ---- HTML ---- */

void gp_cs_html(FILE *f, const struct gp_proc_res *r, size_t top,
                void (*esc)(FILE *, const char *)) {
  const struct gp_cs_res *cs = r->callsites;
  char a[16], b[16], c[16], d[16];
  if (!gp_cs_present(r)) {
    fputs("<h3>Where the host waits</h3>\n<p>No call-site records in the "
          "trace: record with <code>GPUPHASE_STACKS</code> set "
          "(docs/callsites.md).</p>\n",
          f);
    return;
  }
  uint64_t idle = dev_idle(r);
  fputs("<h3>Where the host waits</h3>\n<table class=\"callsites\"><thead><tr>"
        "<th>call site</th><th>kind</th><th class=\"n\">count</th>"
        "<th class=\"n\">blocked</th><th class=\"n\">mean</th>"
        "<th class=\"n\">p95</th><th class=\"n\">GPU idle</th>"
        "<th class=\"n\">of idle</th></tr></thead><tbody>\n",
        f);
  const struct gp_cs_site **rk = malloc((cs->n ? cs->n : 1) * sizeof *rk);
  for (int k = 0; rk && k < GP_CS_LAUNCH; k++) {
    size_t nr = ranked(cs, k, rk, top, NULL);
    for (size_t i = 0; i < nr; i++) {
      const struct gp_cs_site *s = rk[i];
      uint64_t n = k == GP_CS_BLOCKING ? s->count : s->gaps;
      uint64_t gi = k == GP_CS_BLOCKING ? s->idle_ns : s->gap_ns;
      char fr[512];
      title(s, fr, sizeof fr);
      fputs("<tr><td class=\"name\"><details><summary>", f);
      esc(f, fr);
      fputs(" &mdash; ", f);
      esc(f, s->api);
      fputs("</summary><ol>", f);
      for (size_t m = 0; m < s->nframes; m++) {
        gp_cs_frame_str(&s->frames[m], fr, sizeof fr);
        fputs("<li>", f);
        esc(f, fr);
        if (s->frames[m].module && !s->frames[m].python) {
          fputs(" <small>", f);
          esc(f, s->frames[m].module);
          fputs("</small>", f);
        }
        fputs("</li>", f);
      }
      if (s->truncated) fputs("<li>(deeper frames not captured)</li>", f);
      fprintf(
          f,
          "</ol></details></td><td>%s</td><td class=\"n\">%" PRIu64
          "</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
          "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
          "<td class=\"n\">%.1f%%</td></tr>\n",
          gp_cs_kind_key[k], n,
          k ? "" : gp_fmt_sdur(a, sizeof a, s->blocked_ns),
          k ? ""
            : gp_fmt_sdur(b, sizeof b, s->count ? s->blocked_ns / s->count : 0),
          k ? "" : gp_fmt_sdur(c, sizeof c, gp_hist_pct(&s->dur, 95)),
          gp_fmt_sdur(d, sizeof d, gi), pct(gi, idle));
    }
  }
  free(rk);
  uint64_t nc = cs->sync_uncaptured_ns + cs->host_wait_uncaptured_ns;
  fprintf(f,
          "<tr><td>(not captured)</td><td></td><td class=\"n\">%" PRIu64
          "</td><td class=\"n\">%s</td><td></td><td></td>"
          "<td class=\"n\">%s</td><td class=\"n\">%.1f%%</td></tr>\n",
          cs->calls_uncaptured,
          gp_fmt_sdur(a, sizeof a, cs->blocked_uncaptured_ns),
          gp_fmt_sdur(b, sizeof b, nc), pct(nc, idle));
  fputs("</tbody></table>\n", f);
}

/* ---- folded stacks ---- */

/* One frame of a folded line: ';' and the line's separators replaced. */
static void folded_part(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    fputc(*p == ';' || *p == '\n' || *p == '\r' || *p < 0x20 ? '_' : *p, f);
}

static void folded_site(FILE *f, const struct gp_cs_site *s, uint64_t w) {
  if (!w) return;
  char fr[512];
  if (s->truncated) fputs("[truncated];", f);
  for (size_t i = s->nframes; i-- > 0;) {
    gp_cs_frame_str(&s->frames[i], fr, sizeof fr);
    folded_part(f, fr);
    fputc(';', f);
  }
  folded_part(f, s->api);
  fprintf(f, " %" PRIu64 "\n", w);
}

int gp_render_folded(FILE *f, const struct gp_report_set *set,
                     const struct gp_render_opts *o) {
  const struct gp_proc_res *r = set->total;
  int blocked = o && o->weight_blocked;
  if (!gp_cs_present(r)) return ferror(f) ? -1 : 0; /* the tool says so */
  const struct gp_cs_res *cs = r->callsites;
  for (size_t i = 0; i < cs->n; i++) {
    const struct gp_cs_site *s = &cs->v[i];
    if (blocked) {
      folded_site(f, s, s->blocked_ns);
    } else {
      folded_site(f, s, s->idle_ns);
      if (s->gap_ns) {
        /* host wait ended by this call: its own line, under a marker */
        struct gp_cs_site t = *s;
        char api[256];
        snprintf(api, sizeof api, "[host wait before] %s", s->api);
        t.api = api;
        folded_site(f, &t, s->gap_ns);
      }
    }
  }
  if (blocked)
    folded_site(f, &(struct gp_cs_site){.api = "[not captured]"},
                cs->blocked_uncaptured_ns);
  else
    folded_site(f, &(struct gp_cs_site){.api = "[not captured]"},
                cs->sync_uncaptured_ns + cs->host_wait_uncaptured_ns);
  return ferror(f) ? -1 : 0;
}
