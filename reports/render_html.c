/* HTML output: one self-contained file (inline CSS, inline SVG, nothing
 * fetched) with the content of the text report, a stacked bar of each
 * GPU's categories and a chart of the categories over time, and, when
 * collected, an interactive timeline per process: its data as JSON in a
 * <script type="application/json"> element (no '<', '>' or '&' in it),
 * drawn by the inline script of timeline.js, which inserts trace strings
 * as text only. Every string from the trace in the markup goes through
 * gp_html_esc(): markup characters become entities, control characters and
 * invalid UTF-8 become U+FFFD. Without scripts the rest of the page stays
 * whole. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "html_timeline.h"
#include "job.h"
#include "measured.h"
#include "render_callsites.h"
#include "timeline_js.h"
#include "util.h"

#define CHART_W 800
#define CHART_H 120
#define CHART_COLS 400


static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void td_dur(FILE *f, uint64_t ns) {
  char b[32];
  fprintf(f, "<td class=\"n\">%s</td>", gp_fmt_sdur(b, sizeof b, ns));
}

static void td_pct(FILE *f, double v) {
  char b[16];
  fprintf(f, "<td class=\"n\">%s</td>", gp_fmt_pct(b, sizeof b, v));
}

static void td_u64(FILE *f, uint64_t v) {
  fprintf(f, "<td class=\"n\">%" PRIu64 "</td>", v);
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;"
    "max-width:1100px}\n"
    "h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;"
    "margin-top:2em}h3{font-size:1.05em}\n"
    "table{border-collapse:collapse;margin:.5em 0}"
    "td,th{padding:2px 10px;text-align:left}"
    "th{border-bottom:1px solid #999}td.n,th.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    ".name{font-family:monospace;word-break:break-all}\n"
    ".bar{display:flex;height:22px;width:100%;max-width:800px;"
    "border:1px solid #999;margin:.5em 0}.bar span{display:block}\n"
    ".key span{display:inline-block;width:.9em;height:.9em;"
    "vertical-align:middle;margin-right:.3em}\n"
    ".kernel{background:#2e7d32;fill:#2e7d32}"
    ".transfer{background:#1565c0;fill:#1565c0}"
    ".launch{background:#f9a825;fill:#f9a825}"
    ".sync_idle{background:#c62828;fill:#c62828}"
    ".host_wait{background:#bdbdbd;fill:#bdbdbd}\n"
    ".warn{background:#fff3cd;border:1px solid #e0c060;padding:.5em}"
    ".bad{background:#f8d7da;border:1px solid #d08080;padding:.5em}\n"
    ".sub{color:#666;font-size:.9em}\n"
    ".gp-tl{position:relative;max-width:1100px}"
    ".gp-tl canvas{display:block;border:1px solid #999;cursor:grab;"
    "outline:none}.gp-tl canvas:focus{border-color:#1565c0}\n"
    ".gp-tl-tip{position:absolute;pointer-events:none;background:#fffff0;"
    "border:1px solid #888;padding:3px 6px;font-size:12px;"
    "white-space:pre;display:none;z-index:2}\n";

static void cat_bar(FILE *f, const struct gp_breakdown *b, uint64_t span) {
  char t[32];
  fputs("<div class=\"bar\">", f);
  for (int c = 0; c < GP_CAT_N; c++) {
    double p = pct(b->cat[c], span);
    if (p <= 0) continue;
    fprintf(f, "<span class=\"%s\" style=\"width:%.3f%%\" title=\"%s %s (%.1f%%)\">"
               "</span>",
            gp_cat_key[c], p, gp_cat_label[c],
            gp_fmt_dur(t, sizeof t, b->cat[c]), p);
  }
  fputs("</div>\n<p class=\"key\">", f);
  for (int c = 0; c < GP_CAT_N; c++)
    fprintf(f, "<span class=\"%s\"></span>%s &nbsp; ", gp_cat_key[c],
            gp_cat_label[c]);
  fputs("</p>\n", f);
}

static void cat_table(FILE *f, const struct gp_device_res *d) {
  const struct gp_breakdown *b = &d->bd;
  char t[32];
  fputs("<table><thead><tr><th>category</th><th class=\"n\">time</th>"
        "<th class=\"n\">share</th><th>detail</th></tr></thead><tbody>\n",
        f);
  for (int c = 0; c < GP_CAT_N; c++) {
    fprintf(f, "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%.1f%%"
               "</td><td class=\"sub\">",
            gp_cat_label[c], gp_fmt_dur(t, sizeof t, b->cat[c]),
            pct(b->cat[c], d->window_ns));
    if (c == GP_CAT_KERNEL && b->kernel_nsum) {
      fprintf(f, "compute %s", gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_COMPUTE]));
      fprintf(f, ", communication %s",
              gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_COMMUNICATION]));
      if (b->kernel_xfer_overlap)
        fprintf(f, "; copies under kernels %s",
                gp_fmt_dur(t, sizeof t, b->kernel_xfer_overlap));
      if (b->comm_overlap)
        fprintf(f, "; communication under compute %s",
                gp_fmt_dur(t, sizeof t, b->comm_overlap));
    }
    if (c == GP_CAT_HOST_WAIT && b->sub[GP_SUB_HOST_API])
      fprintf(f, "in other CUDA calls (allocation, creation, queries) %s",
              gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_HOST_API]));
    if (c == GP_CAT_TRANSFER)
      for (int x = 0; x < GP_XFER_N; x++)
        if (b->sub[GP_SUB_XFER + x])
          fprintf(f, "%s %s ", gp_xfer_label[x],
                  gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_XFER + x]));
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void util_table(FILE *f, const struct gp_device_res *d) {
  char a[16], m1[32], m2[32];
  fputs("<table><thead><tr><th>device busy</th><th>SM coverage</th>"
        "<th>occupancy</th><th>small kernels</th><th>memory peak</th>"
        "<th>memory mean</th></tr></thead><tbody><tr>",
        f);
  td_pct(f, d->util.busy_pct);
  td_pct(f, d->util.cov_pct);
  td_pct(f, d->util.occ_pct);
  td_pct(f, d->util.small_pct);
  fprintf(f, "<td class=\"n\">%s", gp_fmt_bytes(m1, sizeof m1, (double)d->mem_peak));
  if (d->mem_peak_pct >= 0)
    fprintf(f, " (%s of %s)", gp_fmt_pct(a, sizeof a, d->mem_peak_pct),
            gp_fmt_bytes(m2, sizeof m2, (double)d->mem_total));
  fprintf(f, "</td><td class=\"n\">%s", gp_fmt_bytes(m1, sizeof m1, d->mem_mean));
  if (d->mem_mean_pct >= 0)
    fprintf(f, " (%s)", gp_fmt_pct(a, sizeof a, d->mem_mean_pct));
  fputs("</td></tr></tbody></table>\n", f);
}

/* The categories per fixed window as stacked columns; windows are merged
 * to at most CHART_COLS columns, each column's height being its length. */
static void chart(FILE *f, const struct gp_device_res *d) {
  if (!d->nwin) return;
  char w[32], a[16], b[16], c[16], e[16], t[32];
  size_t cols = d->nwin < CHART_COLS ? d->nwin : CHART_COLS;
  fprintf(f, "<p>Over time (%s windows): busy p5 %s, p50 %s, p95 %s, p99 %s; ",
          gp_fmt_sdur(w, sizeof w, d->win_ns),
          gp_fmt_pct(a, sizeof a, d->busy_p5), gp_fmt_pct(b, sizeof b, d->busy_p50),
          gp_fmt_pct(c, sizeof c, d->busy_p95), gp_fmt_pct(e, sizeof e, d->busy_p99));
  fprintf(f, "longest idle %s at +%s", gp_fmt_dur(w, sizeof w, d->idle_longest),
          gp_fmt_dur(t, sizeof t, d->idle_longest_at));
  if (d->busy_run)
    fprintf(f, "; longest run above 90%% busy %s at +%s",
            gp_fmt_dur(w, sizeof w, d->busy_run_ns),
            gp_fmt_dur(t, sizeof t, d->busy_run_at * d->win_ns));
  fprintf(f, ".</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
             "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
             "shape-rendering=\"crispEdges\" "
             "aria-label=\"categories over time\">\n",
          CHART_W, CHART_H + 16, CHART_W, CHART_H + 16);
  double cw = (double)CHART_W / (double)cols;
  for (size_t col = 0; col < cols; col++) {
    size_t lo = col * d->nwin / cols, hi = (col + 1) * d->nwin / cols;
    uint64_t sum[GP_CAT_N] = {0}, len = 0;
    for (size_t i = lo; i < hi; i++) {
      for (int k = 0; k < GP_CAT_N; k++)
        sum[k] += d->win[i].cat[k];
      uint64_t rest = d->window_ns - i * d->win_ns;
      len += rest < d->win_ns ? rest : d->win_ns;
    }
    if (!len) continue;
    fprintf(f, "<g><title>+%s: busy %.1f%%</title>",
            gp_fmt_dur(t, sizeof t, lo * d->win_ns), pct(sum[0], len));
    double y = CHART_H;
    for (int k = 0; k < GP_CAT_N; k++) {
      double h = (double)CHART_H * (double)sum[k] / (double)len;
      if (h <= 0) continue;
      y -= h;
      fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                 "height=\"%.2f\"/>",
              gp_cat_key[k], (double)col * cw, y, cw, h);
    }
    fputs("</g>\n", f);
  }
  fprintf(f, "<text x=\"0\" y=\"%d\" font-size=\"11\">+0</text>"
             "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">"
             "+%s</text>\n</svg>\n",
          CHART_H + 13, CHART_W, CHART_H + 13,
          gp_fmt_dur(t, sizeof t, d->window_ns));
}

static void device(FILE *f, const struct gp_proc_res *r,
                   const struct gp_device_res *d) {
  char mem[32], t[32];
  if (d->id < 0)
    fputs("<h3>GPU (unknown ordinal)", f);
  else
    fprintf(f, "<h3>GPU %" PRId64, d->id);
  if (d->host) fputs(" on ", f), gp_html_esc(f, d->host);
  if (d->name) fputs(" &mdash; ", f), gp_html_esc(f, d->name);
  fputs("</h3>\n<p>", f);
  if (d->has_props)
    fprintf(f, "%" PRIu64 " SMs, %s, compute capability %" PRIu64 ".%" PRIu64
               "; ",
            d->sms, gp_fmt_bytes(mem, sizeof mem, (double)d->mem_total),
            d->cc_major, d->cc_minor);
  fprintf(f, "window %s.</p>\n", gp_fmt_dur(t, sizeof t, d->window_ns));
  cat_bar(f, &d->bd, d->window_ns);
  cat_table(f, d);
  util_table(f, d);
  chart(f, d);
  gp_meas_html(f, r, d);
}

/* rows: those shown (the sum of many processes: the first --top) */
static void findings(FILE *f, const struct gp_proc_res *r, size_t rows) {
  if (!r->nfindings) return;
  size_t n = r->nfindings < rows ? r->nfindings : rows;
  fputs("<h3>Findings</h3>\n", f);
  if (n < r->nfindings)
    fprintf(f,
            "<p class=\"sub\">The first %zu of %zu; the JSON holds them "
            "all.</p>\n",
            n, r->nfindings);
  fputs("<ul>\n", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "<li>GPU %" PRId64, r->findings[i].device);
    if (r->findings[i].host) {
      fputs(" on ", f);
      gp_html_esc(f, r->findings[i].host);
    }
    fputs(": ", f);
    gp_html_esc(f, r->findings[i].text);
    fputs("</li>\n", f);
  }
  fputs("</ul>\n", f);
}

static void threads(FILE *f, const struct gp_proc_res *r, size_t top) {
  if (!r->nthreads) return;
  fputs("<h3>Host threads</h3>\n<table><thead><tr><th>thread</th>"
        "<th class=\"n\">CPU work</th><th class=\"n\">%</th>"
        "<th class=\"n\">submitting</th><th class=\"n\">%</th>"
        "<th class=\"n\">blocked on GPU</th><th class=\"n\">%</th>"
        "<th class=\"n\">calls</th></tr></thead><tbody>\n",
        f);
  for (size_t i = 0; i < r->nthreads && i < top; i++) {
    const struct gp_thread_res *t = &r->threads[i];
    fprintf(f, "<tr><td>#%" PRIu64 " tid %" PRIu64 " <span class=\"name\">",
            t->index, t->tid);
    gp_html_esc(f, t->name);
    fputs("</span></td>", f);
    td_dur(f, t->cpu);
    td_pct(f, pct(t->cpu, t->life));
    td_dur(f, t->submit);
    td_pct(f, pct(t->submit, t->life));
    td_dur(f, t->blocked);
    td_pct(f, pct(t->blocked, t->life));
    td_u64(f, t->calls);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void phases(FILE *f, const struct gp_proc_res *r, size_t top) {
  if (!r->nphases) return;
  fputs("<h3>Phases</h3>\n<table><thead><tr><th>phase</th>"
        "<th class=\"n\">count</th><th class=\"n\">total</th>"
        "<th class=\"n\">mean</th><th class=\"n\">p95</th>",
        f);
  for (int c = 0; c < GP_CAT_N; c++)
    fprintf(f, "<th class=\"n\">%s</th>", gp_cat_label[c]);
  fputs("<th class=\"n\">busy</th><th class=\"n\">SM coverage</th></tr>"
        "</thead><tbody>\n",
        f);
  for (size_t i = 0; i < r->nphases && i < top; i++) {
    const struct gp_phase_res *p = &r->phases[i];
    uint64_t span = p->span_ns;
    fputs("<tr><td class=\"name\">", f);
    gp_html_esc(f, p->name);
    fputs("</td>", f);
    td_u64(f, p->count);
    td_dur(f, p->union_ns);
    td_dur(f, p->count ? p->inst_ns / p->count : 0);
    td_dur(f, gp_hist_pct(&p->dur, 95));
    for (int c = 0; c < GP_CAT_N; c++)
      td_pct(f, pct(p->all.cat[c], span));
    td_pct(f, p->util.busy_pct);
    td_pct(f, p->util.cov_pct);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void kernels(FILE *f, const struct gp_proc_res *r, size_t top) {
  if (!r->nkernels) return;
  fputs("<h3>Top kernels</h3>\n<table><thead><tr><th>kernel</th>"
        "<th class=\"n\">count</th><th class=\"n\">total</th>"
        "<th class=\"n\">mean</th><th class=\"n\">p50</th>"
        "<th class=\"n\">p95</th><th class=\"n\">grid</th>"
        "<th class=\"n\">block</th><th class=\"n\">SM coverage</th></tr>"
        "</thead><tbody>\n",
        f);
  int varies = 0; /* a row marked: the footnote says what "*" means */
  for (size_t i = 0; i < r->nkernels && i < top; i++) {
    const struct gp_kernel_res *k = &r->kernels[i];
    varies |= k->grid_varies || k->block_varies;
    if (k->demangled) { /* the declaration, the symbol on hover */
      fputs("<tr><td class=\"name\" title=\"", f);
      gp_html_esc(f, k->name);
      fputs("\">", f);
      gp_html_esc(f, k->demangled);
    } else {
      fputs("<tr><td class=\"name\">", f);
      gp_html_esc(f, k->name);
    }
    fputs("</td>", f);
    td_u64(f, k->count);
    td_dur(f, k->total);
    td_dur(f, k->count ? k->total / k->count : 0);
    td_dur(f, gp_hist_pct(&k->dur, 50));
    td_dur(f, gp_hist_pct(&k->dur, 95));
    fprintf(f, "<td class=\"n\">%" PRIu64 "%s</td>", k->grid,
            k->grid_varies ? "*" : "");
    fprintf(f, "<td class=\"n\">%" PRIu64 "%s</td>", k->block,
            k->block_varies ? "*" : "");
    td_pct(f, gp_kernel_cov_pct(k));
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (r->nkernels > top)
    fprintf(f, "<p class=\"sub\">%zu more kernels.</p>\n", r->nkernels - top);
  if (varies)
    fputs("<p class=\"sub\">* grid or block varies between launches; the "
          "first launch's is shown.</p>\n",
          f);
}

static void copies(FILE *f, const struct gp_proc_res *r) {
  int head = 0;
  for (size_t i = 0; i < r->ndev; i++) {
    const struct gp_device_res *d = &r->dev[i];
    for (int x = 0; x < GP_XFER_N; x++) {
      const struct gp_copy_row *c = &d->copies[x];
      char by[32];
      if (!c->count) continue;
      if (!head++)
        fputs("<h3>Copies</h3>\n<table><thead><tr><th>GPU</th>"
              "<th>direction</th><th class=\"n\">count</th>"
              "<th class=\"n\">bytes</th><th class=\"n\">time</th>"
              "<th class=\"n\">GB/s</th><th class=\"n\">of peak</th>"
              "<th class=\"n\">pageable</th><th class=\"n\">pinned</th>"
              "</tr></thead><tbody>\n",
              f);
      double gbps = c->ns ? (double)c->bytes / (double)c->ns : 0;
      double peak = x == GP_XFER_D2D                       ? d->d2d_gbps
                    : x == GP_XFER_H2D || x == GP_XFER_D2H ? d->link_gbps
                                                           : 0;
      fprintf(f, "<tr><td>%" PRId64 "</td><td>%s</td>", d->id,
              gp_xfer_label[x]);
      td_u64(f, c->count);
      fprintf(f, "<td class=\"n\">%s</td>",
              gp_fmt_bytes(by, sizeof by, (double)c->bytes));
      td_dur(f, c->ns);
      fprintf(f, "<td class=\"n\">%.2f</td>", gbps);
      td_pct(f, peak > 0 ? 100 * gbps / peak : -1);
      td_u64(f, c->pageable);
      td_u64(f, c->pinned);
      fputs("</tr>\n", f);
    }
  }
  if (head) fputs("</tbody></table>\n", f);
}

static void apis(FILE *f, const struct gp_proc_res *r, size_t top) {
  if (!r->napis) return;
  fputs("<h3>CUDA API calls</h3>\n<table><thead><tr><th>function</th>"
        "<th class=\"n\">count</th><th class=\"n\">total</th>"
        "<th class=\"n\">blocked</th><th class=\"n\">errors</th></tr>"
        "</thead><tbody>\n",
        f);
  for (size_t i = 0; i < r->napis && i < top; i++) {
    const struct gp_api_res *a = &r->apis[i];
    fputs("<tr><td class=\"name\">", f);
    gp_html_esc(f, a->name);
    fputs("</td>", f);
    td_u64(f, a->count);
    td_dur(f, a->total);
    td_dur(f, a->blocked);
    td_u64(f, a->errors);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

static void step_summary(FILE *f, const struct gp_steps_res *st) {
  char a[16], b[16], c[16], d[16];
  fprintf(f, "<p>%zu measured (after %zu warm-up): median %s, p95 %s, "
             "p99 %s, max %s; %.2f steps/s",
          st->measured, st->warmup, gp_fmt_sdur(a, sizeof a, st->median_ns),
          gp_fmt_sdur(b, sizeof b, st->p95_ns),
          gp_fmt_sdur(c, sizeof c, st->p99_ns),
          gp_fmt_sdur(d, sizeof d, st->max_ns), st->per_s);
  if (st->items_per_s >= 0) fprintf(f, ", %.1f items/s", st->items_per_s);
  if (st->per_busy_s >= 0)
    fprintf(f, "; per second of device busy time: %.2f steps", st->per_busy_s);
  if (st->items_per_busy_s >= 0)
    fprintf(f, ", %.1f items", st->items_per_busy_s);
  fputs("</p>\n", f);
  if (st->warmup) { /* as the text says it */
    uint64_t tot, mx;
    gp_steps_warmup_span(st, &tot, &mx);
    fprintf(f, "<p class=\"sub\">warm-up %zu step%s left out (--warmup): "
               "%s in all, longest %s</p>\n",
            st->warmup, st->warmup == 1 ? "" : "s",
            gp_fmt_sdur(a, sizeof a, tot), gp_fmt_sdur(b, sizeof b, mx));
  }
}

static void step_table(FILE *f, const struct gp_steps_res *st) {
  fputs("<table><thead><tr><th>per step</th><th class=\"n\">median</th>"
        "<th class=\"n\">mean</th></tr></thead><tbody>\n",
        f);
  for (int k = 0; k < GP_CAT_N; k++) {
    fprintf(f, "<tr><td>%s</td>", gp_cat_label[k]);
    td_dur(f, st->cat_med[k] / st->ndev);
    td_dur(f, (uint64_t)(st->cat_mean[k] / (double)st->ndev));
    fputs("</tr>\n", f);
  }
  for (int k = 0; k < GP_SC_N; k++) {
    if (!st->c_med[k] && st->c_mean[k] == 0) continue;
    fputs("<tr><td>", f);
    gp_html_esc(f, gp_step_counter_doc[k]);
    fputs("</td>", f);
    td_u64(f, st->c_med[k]);
    fprintf(f, "<td class=\"n\">%.2f</td></tr>\n", st->c_mean[k]);
  }
  fputs("</tbody></table>\n", f);
}

static void steps(FILE *f, const struct gp_proc_res *r) {
  const struct gp_steps_res *st = &r->steps;
  fputs("<h3>Steps</h3>\n<p>", f);
  if (st->name) {
    fprintf(f, "%zu <span class=\"name\">", st->n);
    gp_html_esc(f, st->name);
    fprintf(f, "</span> (%s): ", gp_step_source_key[st->source]);
  }
  gp_html_esc(f, st->how ? st->how : "no steps found");
  fputs("</p>\n", f);
  if (!st->measured) return;
  step_summary(f, st);
  step_table(f, st);
  if (!st->nslow) return;
  fputs("<p>slowest:</p><ul>\n", f);
  for (size_t i = 0; i < st->nslow; i++) {
    char d[16], why[64];
    const struct gp_step *x = &st->v[st->slow[i]];
    fprintf(f, "<li>#%zu %s (", st->slow[i],
            gp_fmt_sdur(d, sizeof d, x->end - x->start));
    gp_html_esc(f, gp_step_why(st, st->slow[i], why, sizeof why));
    fputs(")</li>\n", f);
  }
  fputs("</ul>\n", f);
}

/* The timeline panel: what it holds in words (for readers without
 * scripts too), the data as JSON, and the place the script draws in. */
static void timeline(FILE *f, const struct gp_timeline *t, size_t n) {
  char sum[1024];
  gp_htl_summary(t, sum, sizeof sum);
  fprintf(f,
          "<h3>Timeline</h3>\n<div class=\"gp-tl\" data-src=\"gp-tl-%zu\">"
          "<noscript><p class=\"warn\">The interactive timeline needs "
          "JavaScript; the rest of the page does not.</p></noscript>"
          "<p class=\"sub\">",
          n);
  gp_html_esc(f, sum);
  fputs(" Wheel or W/S: zoom; drag or A/D, arrow keys: pan; 0: whole run; "
        "hover: details; click a GPU record: its launch.</p></div>\n",
        f);
  fprintf(f, "<script type=\"application/json\" id=\"gp-tl-%zu\">", n);
  gp_htl_json(f, t);
  fputs("</script>\n", f);
}

/* sum_rows: the GPU blocks and findings of a sum shown (SIZE_MAX: all) */
static void section(FILE *f, const struct gp_proc_res *r, size_t top,
                    size_t n, size_t sum_rows) {
  char w[32];
  fputs("<section>\n", f);
  if (!r->file) {
    fprintf(f, "<h2>All %" PRIu64 " processes together (sums over processes)"
               "</h2>\n",
            r->nprocs);
  } else {
    fprintf(f, "<h2>Process %" PRId64, r->pid);
    if (r->ppid >= 0) fprintf(f, " (parent %" PRId64 ")", r->ppid);
    if (r->rank >= 0) fprintf(f, " rank %" PRId64, r->rank);
    fputs(" on ", f);
    gp_html_esc(f, r->host ? r->host : "?");
    fputs("</h2>\n<p>command <span class=\"name\">", f);
    gp_html_esc(f, r->cmdline);
    fputs("</span><br>file <span class=\"name\">", f);
    gp_html_esc(f, r->file);
    fputs("</span><br>", f);
  }
  if (!r->file) fputs("<p>", f);
  fprintf(f, "window %s (first CUDA call to last event)%s</p>\n",
          gp_fmt_dur(w, sizeof w, r->window_ns),
          r->truncated ? "; <strong>truncated trace</strong>" : "");
  size_t nd = r->file || r->ndev <= sum_rows ? r->ndev : sum_rows;
  for (size_t i = 0; i < nd; i++)
    device(f, r, &r->dev[i]);
  if (nd < r->ndev)
    fprintf(f,
            "<p class=\"sub\">%zu more GPUs: --processes all shows each in "
            "its process's section; the JSON holds them all.</p>\n",
            r->ndev - nd);
  if (r->timeline) timeline(f, r->timeline, n);
  if (r->file) steps(f, r);
  findings(f, r, r->file ? SIZE_MAX : sum_rows);
  threads(f, r, top);
  phases(f, r, top);
  kernels(f, r, top);
  copies(f, r);
  apis(f, r, top);
  gp_cs_html(f, r, top, gp_html_esc);
  if (r->nnotes) {
    fputs("<h3>Notes</h3>\n<ul>\n", f);
    for (size_t i = 0; i < r->nnotes; i++) {
      fputs("<li>", f);
      gp_html_esc(f, r->notes[i]);
      fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
  }
  fputs("</section>\n", f);
}

int gp_render_html(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *o) {
  size_t top = o && o->top ? o->top : 15, degraded = 0;
  for (size_t i = 0; i < s->n; i++)
    degraded += s->procs[i]->degraded != 0;
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
             "charset=\"utf-8\">\n<title>gpuphase report</title>\n<style>\n%s"
             "</style>\n</head>\n<body>\n<h1>gpuphase report</h1>\n",
          style);
  if (degraded)
    fprintf(f, "<p class=\"bad\"><strong>DEGRADED:</strong> %zu of %zu "
               "traces hold no device activity (CUPTI unavailable?): "
               "host-side times only there.</p>\n",
            degraded, s->n);
  fprintf(f, "<p>%zu process%s.</p>\n", s->n, s->n == 1 ? "" : "es");
  if (o && o->from_summaries)
    fputs("<p class=\"sub\">Merged from summaries, which hold no events: "
          "no interactive timeline. <code>gpuphase-report -f html</code> on "
          "the traces of the processes of interest draws theirs.</p>\n",
          f);
  if (s->job) gp_job_html(f, s->job);
  /* the sections: all, or the first few in the job's order (outliers
   * first), else in the order given (as in the text) */
  size_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
  if (!idx) return -1;
  int scripted = 0, by_job = 0;
  size_t show = gp_render_shown(s, o, idx, &by_job);
  for (size_t i = 0; i < show; i++) {
    section(f, s->procs[idx[i]], top, idx[i], SIZE_MAX);
    scripted |= s->procs[idx[i]]->timeline != NULL;
  }
  free(idx);
  if (show < s->n)
    fprintf(f,
            "<p class=\"sub\">%zu more process%s left out: above are the "
            "%s %zu %s; --processes all shows every one, the JSON holds "
            "them all.</p>\n",
            s->n - show, s->n - show == 1 ? "" : "es",
            by_job ? "job's first" : "first", show,
            by_job ? "ranks, outliers first (the job's table has every rank)"
                   : "files given");
  if (s->n > 1)
    section(f, s->total, top, s->n, show < s->n ? top : SIZE_MAX);
  if (scripted) fprintf(f, "<script>\n%s</script>\n", gp_timeline_js);
  fputs("</body>\n</html>\n", f);
  return ferror(f) ? -1 : 0;
}
