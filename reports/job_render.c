/* The job view in text, JSON and HTML (job.h). Text stays within 100
 * columns; every string from a trace is cleaned (text) or escaped (HTML,
 * JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "jsonw.h"
#include "util.h"

static const char *unit_of(const struct gp_job *j) {
  return j->by_step ? "step" : "collective";
}

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

static uint64_t u(double v) {
  return !(v > 0) ? 0 : v < 1.8e19 ? (uint64_t)(v + 0.5) : UINT64_MAX;
}

static const char *sdur(char *b, size_t n, double ns) {
  return gp_fmt_sdur(b, n, u(ns));
}

static const char *signed_dur(char *b, size_t n, int64_t ns) {
  if (n < 2) return "";
  b[0] = ns < 0 ? '-' : '+';
  gp_fmt_dur(b + 1, n - 1, ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns);
  return b;
}

/* ---- text ---- */

static void clean(FILE *f, const char *s, size_t cols, int pad) {
  char buf[512];
  size_t k = gp_text_clean(s ? s : "?", buf, sizeof buf, cols);
  fputs(buf, f);
  for (; pad && k < cols; k++)
    fputc(' ', f);
}

static void wrap_text(FILE *f, const char *lead, const char *s) {
  char c[2048];
  gp_text_clean(s, c, sizeof c, sizeof c);
  int col = fprintf(f, "%s", lead);
  for (const char *p = c; *p;) {
    int whole = (int)gp_wrap_word(p), len = whole;
    if (col + len + 1 > 100 && col > 4)
      col = fprintf(f, "\n    ") - 1;
    else if (p != c)
      col += fputc(' ', f) != EOF;
    if (len > 100 - col) len = 100 - col; /* a word longer than a line */
    fwrite(p, 1, (size_t)(len > 0 ? len : 0), f);
    col += len;
    p += whole;
    if (*p == ' ') p++;
  }
  fputc('\n', f);
}

/* The hosts that 'Clocks' shows when not all fit: the reference (0), then
 * the n - 1 others with the largest residual skew, largest first (ties in
 * host order); NULL out of memory (then the first n are shown). */
static size_t *worst_hosts(const struct gp_job *j, size_t n) {
  size_t *v = malloc(j->nhosts * sizeof *v);
  if (!v) return NULL;
  for (size_t h = 0; h < j->nhosts; h++)
    v[h] = h;
  for (size_t i = 1; i < n; i++) { /* selection of the n - 1 worst */
    size_t w = i;
    for (size_t k = i + 1; k < j->nhosts; k++)
      if (j->hosts[v[k]].residual_max_ns > j->hosts[v[w]].residual_max_ns ||
          (j->hosts[v[k]].residual_max_ns == j->hosts[v[w]].residual_max_ns &&
           v[k] < v[w]))
        w = k;
    size_t t = v[i];
    v[i] = v[w];
    v[w] = t;
  }
  return v;
}

static int host_in(const size_t *v, size_t n, size_t h) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == h) return 1;
  return 0;
}

void gp_job_text(FILE *f, const struct gp_job *j, int color, size_t top) {
  const char *b = color ? "\033[1m" : "", *off = color ? "\033[0m" : "",
             *warn = color ? "\033[33m" : "";
  char x[48], y[48], z[48];
  const char *un = unit_of(j);
  fprintf(f, "\n%s=== Job: %zu rank%s on %zu host%s ===%s\n", b, j->nranks,
          j->nranks == 1 ? "" : "s", j->nhosts, j->nhosts == 1 ? "" : "s", off);
  fprintf(f, "  per %s: %zu counted; communication kernels ", un, j->units);
  clean(f, j->comm_rule, 40, 0);
  fprintf(f, ", %zu collective%s matched\n", j->collectives,
          j->collectives == 1 ? "" : "s");
  if (j->by_step)
    fprintf(f,
            "  job step (the slowest rank's, per step): p50 %s  p95 %s  "
            "max %s\n",
            gp_fmt_sdur(x, sizeof x, j->step_p50),
            gp_fmt_sdur(y, sizeof y, j->step_p95),
            gp_fmt_sdur(z, sizeof z, j->step_max));
  fprintf(f, "\n  %-6s %-14s %4s %8s %8s %8s %8s %5s %6s %11s\n", "rank",
          "host", "GPU", "step p50", "step p95", "compute", "comm", "wait",
          "last", "others wait");
  fprintf(f, "  %-6s %-14s %4s %8s %8s %8s %8s %5s %6s %11s\n", "", "", "", "",
          "", j->by_step ? "/step" : "/coll", j->by_step ? "/step" : "/coll",
          "%comm", "", "in all");
  size_t shown = j->nranks < top ? j->nranks : top;
  for (size_t i = 0; i < shown; i++) {
    const struct gp_job_rank *r = &j->r[i];
    char g[8] = "-", w[8], rk[8];
    if (r->gpu >= 0) snprintf(g, sizeof g, "%lld", (long long)(r->gpu % 10000));
    snprintf(rk, sizeof rk, "%lld", (long long)(r->rank % 1000000));
    snprintf(w, sizeof w, "%.0f%%", pct(r->wait_ns, r->comm_ns));
    fprintf(f, "  %-6s ", rk);
    clean(f, r->host, 14, 1);
    fprintf(f, " %4s %8s ", g,
            r->steps ? gp_fmt_sdur(x, sizeof x, r->step_p50) : "-");
    fprintf(f, "%8s ", r->steps ? gp_fmt_sdur(x, sizeof x, r->step_p95) : "-");
    fprintf(f, "%8s ", sdur(x, sizeof x, r->compute));
    fprintf(f, "%8s %5s %6llu %11s\n",
            sdur(x, sizeof x, j->units ? (double)r->comm_ns / j->units : 0), w,
            (unsigned long long)r->last_count,
            gp_fmt_sdur(y, sizeof y, r->others_wait_ns));
  }
  if (shown < j->nranks)
    fprintf(f,
            "  (%zu more ranks, in the order above: --top N shows more, "
            "the JSON all)\n",
            j->nranks - shown);
  fprintf(f, "\n  categories per %s, summed over the rank's GPUs\n", un);
  fprintf(f, "  %-6s %9s %9s %9s %9s %9s\n", "rank", "kernel", "transfer",
          "launch", "sync idle", "host wait");
  for (size_t i = 0; i < shown; i++) {
    const struct gp_job_rank *r = &j->r[i];
    fprintf(f, "  %-6lld", (long long)(r->rank % 1000000));
    for (int c = 0; c < GP_CAT_N; c++)
      fprintf(f, " %9s", sdur(x, sizeof x, r->cat[c]));
    fputc('\n', f);
  }
  if (j->nstrag) {
    fprintf(f, "\n%sStragglers%s (the rank the others waited for, per %s)\n", b,
            off, un);
    for (size_t i = 0; i < j->nstrag && i < top; i++) {
      const struct gp_job_rank *r = &j->r[j->strag[i]];
      char held[48] = "";
      if (r->held_count > r->last_count)
        snprintf(held, sizeof held, ", held them up in %llu",
                 (unsigned long long)r->held_count);
      fprintf(f,
              "  rank %-6lld last in %llu of %zu %ss%s; the others waited "
              "%s for it (%.0f%% of all waiting)\n",
              (long long)(r->rank % 1000000), (unsigned long long)r->last_count,
              j->by_step ? j->units : j->collectives, un, held,
              gp_fmt_sdur(x, sizeof x, r->others_wait_ns),
              pct(r->others_wait_ns, j->wait_total));
    }
  }
  fprintf(f, "\n%sClocks%s (on ", b, off);
  clean(f, j->nhosts ? j->hosts[0].name : "?", 30, 0);
  fputs("'s monotonic clock)\n", f);
  /* the reference, then at most top - 1 others: the worst aligned first
   * (largest residual skew) when they do not all fit, else in order */
  size_t hshown = j->nhosts <= top ? j->nhosts : top > 1 ? top : 1;
  size_t *order = hshown < j->nhosts ? worst_hosts(j, hshown) : NULL;
  uint64_t rest_max = 0;
  if (order)
    for (size_t h = 1; h < j->nhosts; h++)
      if (!host_in(order, hshown, h) &&
          j->hosts[h].residual_max_ns > rest_max)
        rest_max = j->hosts[h].residual_max_ns;
  for (size_t i = 0; i < hshown; i++) {
    size_t h = order ? order[i] : i;
    const struct gp_job_host *o = &j->hosts[h];
    fputs("  ", f);
    clean(f, o->name, 20, 1);
    if (!h)
      fputs(" reference", f);
    else
      fprintf(f, " header %s, corrected %s (%zu collective ends)",
              signed_dur(x, sizeof x, o->header_ns),
              signed_dur(y, sizeof y, o->correction_ns), o->samples);
    if (h) fprintf(f, "\n  %20s", "");
    if (o->residual_max_ns || h)
      fprintf(f, "%s residual skew p50 %s, max %s", h ? "" : ";",
              gp_fmt_sdur(x, sizeof x, o->residual_p50_ns),
              gp_fmt_sdur(y, sizeof y, o->residual_max_ns));
    fputc('\n', f);
  }
  if (hshown < j->nhosts)
    fprintf(f,
            "  (%zu more hosts, residual skew at most %s: --top N shows "
            "more, the JSON all)\n",
            j->nhosts - hshown, gp_fmt_sdur(x, sizeof x, rest_max));
  free(order);
  if (j->finding) {
    fprintf(f, "\n%sFinding%s\n", b, off);
    char lead[32];
    snprintf(lead, sizeof lead, "  %s*%s ", warn, off);
    wrap_text(f, lead, j->finding);
  }
  if (j->nnotes) {
    fprintf(f, "\n%sJob notes%s\n", b, off);
    for (size_t i = 0; i < j->nnotes; i++)
      wrap_text(f, "  - ", j->notes[i]);
  }
}

/* ---- JSON ---- */

void gp_job_json(struct gp_json *js, const struct gp_job *j) {
  gp_json_obj(js, "job");
  gp_json_u64(js, "ranks", j->nranks);
  gp_json_u64(js, "hosts", j->nhosts);
  gp_json_str(js, "unit", unit_of(j));
  gp_json_u64(js, "units", j->units);
  gp_json_u64(js, "collectives", j->collectives);
  gp_json_str(js, "communication_kernels", j->comm_rule);
  if (j->by_step) {
    gp_json_obj(js, "step_ns");
    gp_json_u64(js, "p50", j->step_p50);
    gp_json_u64(js, "p95", j->step_p95);
    gp_json_u64(js, "max", j->step_max);
    gp_json_end(js);
  } else
    gp_json_null(js, "step_ns");
  gp_json_u64(js, "wait_ns", j->wait_total);
  gp_json_arr(js, "per_rank");
  for (size_t i = 0; i < j->nranks; i++) {
    const struct gp_job_rank *r = &j->r[i];
    gp_json_obj(js, NULL);
    gp_json_i64(js, "rank", r->rank);
    gp_json_str(js, "host", r->host);
    gp_json_str(js, "file", r->file);
    gp_json_i64(js, "device", r->gpu);
    gp_json_str(js, "device_name", r->gpu_name);
    gp_json_u64(js, "steps", r->steps);
    gp_json_u64(js, "step_p50_ns", r->step_p50);
    gp_json_u64(js, "step_p95_ns", r->step_p95);
    gp_json_obj(js, "per_unit_ns");
    for (int c = 0; c < GP_CAT_N; c++)
      gp_json_u64(js, gp_cat_key[c], u(r->cat[c]));
    gp_json_u64(js, "compute", u(r->compute));
    gp_json_end(js);
    gp_json_u64(js, "communication_kernels", r->ncomm);
    gp_json_u64(js, "communication_ns", r->comm_ns);
    gp_json_u64(js, "communication_wait_ns", r->wait_ns);
    gp_json_num(js, "communication_wait_pct", pct(r->wait_ns, r->comm_ns), 2,
                0);
    gp_json_u64(js, "last_count", r->last_count);
    gp_json_u64(js, "held_count", r->held_count);
    gp_json_u64(js, "others_wait_ns", r->others_wait_ns);
    gp_json_u64(js, "slowest_steps", r->steps_slowest);
    gp_json_i64(js, "clock_offset_ns", r->clock_ns);
    gp_json_end(js);
  }
  gp_json_end(js);
  gp_json_arr(js, "stragglers");
  for (size_t i = 0; i < j->nstrag; i++) {
    const struct gp_job_rank *r = &j->r[j->strag[i]];
    gp_json_obj(js, NULL);
    gp_json_i64(js, "rank", r->rank);
    gp_json_str(js, "host", r->host);
    gp_json_u64(js, "last_count", r->last_count);
    gp_json_u64(js, "held_count", r->held_count);
    gp_json_u64(js, "others_wait_ns", r->others_wait_ns);
    gp_json_end(js);
  }
  gp_json_end(js);
  gp_json_obj(js, "clock");
  gp_json_str(js, "reference_host", j->nhosts ? j->hosts[0].name : NULL);
  gp_json_u64(js, "clamped", j->clamped);
  gp_json_u64(js, "clamped_max_ns", j->clamped_max_ns);
  gp_json_arr(js, "hosts");
  for (size_t h = 0; h < j->nhosts; h++) {
    const struct gp_job_host *o = &j->hosts[h];
    gp_json_obj(js, NULL);
    gp_json_str(js, "host", o->name);
    gp_json_i64(js, "header_offset_ns", o->header_ns);
    gp_json_i64(js, "correction_ns", o->correction_ns);
    gp_json_u64(js, "samples", o->samples);
    gp_json_u64(js, "residual_p50_ns", o->residual_p50_ns);
    gp_json_u64(js, "residual_max_ns", o->residual_max_ns);
    gp_json_end(js);
  }
  gp_json_end(js);
  gp_json_end(js);
  if (j->finding)
    gp_json_str(js, "finding", j->finding);
  else
    gp_json_null(js, "finding");
  gp_json_arr(js, "notes");
  for (size_t i = 0; i < j->nnotes; i++)
    gp_json_str(js, NULL, j->notes[i]);
  gp_json_end(js);
  gp_json_end(js);
}

/* ---- HTML ---- */


static void td(FILE *f, double ns) {
  char b[32];
  fprintf(f, "<td class=\"n\">%s</td>", sdur(b, sizeof b, ns));
}

void gp_job_html(FILE *f, const struct gp_job *j) {
  const char *un = unit_of(j);
  char x[48], y[48], z[48];
  fprintf(f,
          "<section id=\"job\">\n<h2>Job: %zu rank%s on %zu host%s</h2>\n"
          "<p>per %s: %zu counted; communication kernels: <span "
          "class=\"name\">",
          j->nranks, j->nranks == 1 ? "" : "s", j->nhosts,
          j->nhosts == 1 ? "" : "s", un, j->units);
  gp_html_esc(f, j->comm_rule);
  fprintf(f, "</span> (%zu collective%s matched)", j->collectives,
          j->collectives == 1 ? "" : "s");
  if (j->by_step)
    fprintf(f,
            "<br>job step (the slowest rank's, per step): p50 %s, p95 %s, "
            "max %s",
            gp_fmt_sdur(x, sizeof x, j->step_p50),
            gp_fmt_sdur(y, sizeof y, j->step_p95),
            gp_fmt_sdur(z, sizeof z, j->step_max));
  fputs("</p>\n", f);
  if (j->finding) {
    fputs("<p class=\"warn\">", f);
    gp_html_esc(f, j->finding);
    fputs("</p>\n", f);
  }
  fprintf(f, "<table><thead><tr><th>rank</th><th>host</th><th>GPU</th>"
             "<th class=\"n\">step p50</th><th class=\"n\">step p95</th>");
  for (int c = 0; c < GP_CAT_N; c++)
    fprintf(f, "<th class=\"n\">%s /%s</th>", gp_cat_label[c], un);
  fprintf(f,
          "<th class=\"n\">compute /%s</th><th class=\"n\">comm /%s</th>"
          "<th class=\"n\">wait %% of comm</th><th class=\"n\">last</th>"
          "<th class=\"n\">others' wait</th></tr></thead><tbody>\n",
          un, un);
  for (size_t i = 0; i < j->nranks; i++) {
    const struct gp_job_rank *r = &j->r[i];
    fprintf(f, "<tr><td>%lld</td><td>", (long long)r->rank);
    gp_html_esc(f, r->host);
    fputs("</td><td>", f);
    if (r->gpu >= 0) fprintf(f, "%lld ", (long long)r->gpu);
    gp_html_esc(f, r->gpu_name);
    fputs("</td>", f);
    td(f, (double)r->step_p50);
    td(f, (double)r->step_p95);
    for (int c = 0; c < GP_CAT_N; c++)
      td(f, r->cat[c]);
    td(f, r->compute);
    td(f, j->units ? (double)r->comm_ns / j->units : 0);
    fprintf(f, "<td class=\"n\">%.0f%%</td><td class=\"n\">%llu",
            pct(r->wait_ns, r->comm_ns), (unsigned long long)r->last_count);
    if (r->held_count > r->last_count)
      fprintf(f, " (held %llu)", (unsigned long long)r->held_count);
    fputs("</td>", f);
    td(f, (double)r->others_wait_ns);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n<h3>Clocks</h3>\n<ul>\n", f);
  for (size_t h = 0; h < j->nhosts; h++) {
    const struct gp_job_host *o = &j->hosts[h];
    fputs("<li>", f);
    gp_html_esc(f, o->name);
    if (!h)
      fputs(": reference", f);
    else
      fprintf(f, ": header %s, corrected %s (%zu collective ends)",
              signed_dur(x, sizeof x, o->header_ns),
              signed_dur(y, sizeof y, o->correction_ns), o->samples);
    fprintf(f, "; residual skew p50 %s, max %s</li>\n",
            gp_fmt_sdur(x, sizeof x, o->residual_p50_ns),
            gp_fmt_sdur(y, sizeof y, o->residual_max_ns));
  }
  fputs("</ul>\n", f);
  if (j->nnotes) {
    fputs("<ul>\n", f);
    for (size_t i = 0; i < j->nnotes; i++) {
      fputs("<li>", f);
      gp_html_esc(f, j->notes[i]);
      fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
  }
  fputs("</section>\n", f);
}
