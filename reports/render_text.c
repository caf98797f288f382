/* Text output for a terminal: at most 100 columns; names are cleaned of
 * control bytes (a kernel name must not be able to drive the terminal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "job.h"
#include "measured.h"
#include "render.h"
#include "render_callsites.h"
#include "util.h"

#define WIDTH 100

struct out {
  FILE *f;
  const char *bold, *warn, *bad, *dim, *off;
  size_t top;
  size_t sum_rows; /* GPU blocks and findings of the sum (SIZE_MAX: all) */
};

/* A count in at most w (>= 7) characters: digits, or 1.8e+19 when they do
 * not fit, so that no value can push a table past 100 columns. */
static const char *num(char *b, size_t n, uint64_t v, int w) {
  int k = snprintf(b, n, "%llu", (unsigned long long)v);
  if (k > w) snprintf(b, n, "%.1e", (double)v);
  return b;
}

/* A share with `dec` decimals in at most w characters; a value too large
 * for that (only a damaged trace has one) reads ">999%" (w = 5). */
static const char *pctw(char *b, size_t n, double v, int dec, int w) {
  int k = snprintf(b, n, "%.*f%%", dec, v);
  if (k > w && w >= 3 && (size_t)w < n) {
    memset(b, '9', (size_t)w);
    b[0] = '>';
    b[w - 1] = '%';
    b[w] = 0;
  }
  return b;
}

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* A name in a column of `cols` characters: cleaned, cut, padded by
 * characters (printf pads by bytes, which misaligns UTF-8). */
static void cell(struct out *o, const char *s, size_t cols) {
  char buf[512];
  size_t n = gp_text_clean(s ? s : "", buf, sizeof buf, cols);
  fputs(buf, o->f);
  for (; n < cols; n++)
    fputc(' ', o->f);
}

/* Words of s, wrapped at WIDTH, each line after the first indented; a
 * number and its unit stay together. */
static void wrap(struct out *o, const char *lead, const char *s, int indent) {
  char clean[2048];
  gp_text_clean(s, clean, sizeof clean, sizeof clean);
  int col = fprintf(o->f, "%s", lead);
  const char *p = clean;
  while (*p) {
    int len = (int)gp_wrap_word(p);
    if (col + len + 1 > WIDTH && col > indent) {
      col = fprintf(o->f, "\n%*s", indent, "");
      col--;
    } else if (p != clean) {
      fputc(' ', o->f);
      col++;
    }
    int room = WIDTH - col;
    if (len > room && room > 2) { /* a word wider than a line: cut it */
      int cut = room - 2;
      while (cut > 0 && ((unsigned char)p[cut] & 0xc0) == 0x80)
        cut--; /* not inside a UTF-8 sequence */
      fwrite(p, 1, (size_t)cut, o->f);
      fputs("..", o->f);
      col += cut + 2;
    } else {
      fwrite(p, 1, (size_t)len, o->f);
      col += len;
    }
    p += len;
    while (*p == ' ')
      p++;
  }
  fputc('\n', o->f);
}

static void bar(struct out *o, double p) {
  if (!(p <= 100)) p = 100; /* (a damaged summary's figures) */
  int n = (int)(p * 40 / 100 + 0.5);
  fputc('|', o->f);
  for (int i = 0; i < 40; i++)
    fputc(i < n ? '#' : '.', o->f);
  fputc('|', o->f);
}

static void cat_lines(struct out *o, const struct gp_device_res *d) {
  const struct gp_breakdown *b = &d->bd;
  char t[32];
  for (int c = 0; c < GP_CAT_N; c++) {
    double p = pct(b->cat[c], d->window_ns);
    fprintf(o->f, "  %-10s %12s %6.1f%% ", gp_cat_label[c],
            gp_fmt_dur(t, sizeof t, b->cat[c]), p);
    bar(o, p);
    fputc('\n', o->f);
    if (c == GP_CAT_KERNEL && b->kernel_nsum) { /* not in degraded traces */
      fprintf(o->f, "%s    compute %s", o->dim,
              gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_COMPUTE]));
      fprintf(o->f, "  communication %s%s\n",
              gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_COMMUNICATION]), o->off);
      if (b->comm_overlap || b->kernel_xfer_overlap) {
        fprintf(o->f, "%s    overlapped: communication with compute %s", o->dim,
                gp_fmt_dur(t, sizeof t, b->comm_overlap));
        fprintf(o->f, ", copies with kernels %s%s\n",
                gp_fmt_dur(t, sizeof t, b->kernel_xfer_overlap), o->off);
      }
    }
    if (c == GP_CAT_HOST_WAIT && b->sub[GP_SUB_HOST_API])
      fprintf(o->f, "%s    in other CUDA calls (allocation, creation, queries) %s%s\n",
              o->dim, gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_HOST_API]), o->off);
    if (c == GP_CAT_TRANSFER && b->cat[c]) {
      fprintf(o->f, "%s   ", o->dim);
      for (int x = 0; x < GP_XFER_N; x++)
        if (b->sub[GP_SUB_XFER + x])
          fprintf(o->f, " %s %s", gp_xfer_label[x],
                  gp_fmt_dur(t, sizeof t, b->sub[GP_SUB_XFER + x]));
      fprintf(o->f, "%s\n", o->off);
    }
  }
}

static void util_lines(struct out *o, const struct gp_device_res *d) {
  char a[16], b[16], c[16], m1[32], m2[32], m3[32];
  fprintf(o->f,
          "  %sbusy %.1f%%%s   SM coverage %s   occupancy %s   "
          "small kernels %s of kernel time\n",
          o->bold, d->util.busy_pct, o->off, gp_fmt_pct(a, sizeof a, d->util.cov_pct),
          gp_fmt_pct(b, sizeof b, d->util.occ_pct),
          gp_fmt_pct(c, sizeof c, d->util.small_pct));
  fprintf(o->f, "  memory peak %s",
          gp_fmt_bytes(m1, sizeof m1, (double)d->mem_peak));
  if (d->mem_peak_pct >= 0)
    fprintf(o->f, " (%.1f%% of %s)", d->mem_peak_pct,
            gp_fmt_bytes(m2, sizeof m2, (double)d->mem_total));
  fprintf(o->f, ", mean %s", gp_fmt_bytes(m3, sizeof m3, d->mem_mean));
  if (d->mem_mean_pct >= 0) fprintf(o->f, " (%.1f%%)", d->mem_mean_pct);
  fputc('\n', o->f);
  char line[512];
  size_t len = 0;
  for (int x = 0; x < GP_XFER_N; x++) {
    const struct gp_copy_row *r = &d->copies[x];
    if (!r->ns || x == GP_XFER_MEMSET) continue;
    double gbps = (double)r->bytes / (double)r->ns;
    double peak = x == GP_XFER_D2D                       ? d->d2d_gbps
                  : x == GP_XFER_H2D || x == GP_XFER_D2H ? d->link_gbps
                                                         : 0;
    len += (size_t)snprintf(line + len, sizeof line - len, "%s %s %.2f GB/s",
                            len ? "," : "", gp_xfer_label[x], gbps);
    if (peak > 0 && len < sizeof line)
      len += (size_t)snprintf(line + len, sizeof line - len,
                              " (%.0f%% of %.3g)", 100 * gbps / peak, peak);
    if (len >= sizeof line) break;
  }
  if (len) wrap(o, "  copies", line, 4);
}

static void spark(struct out *o, const struct gp_device_res *d) {
  static const char ramp[] = "_.:-=+*#%@";
  size_t cols = d->nwin < 80 ? d->nwin : 80;
  fprintf(o->f, "    busy |");
  for (size_t c = 0; c < cols; c++) {
    size_t a = c * d->nwin / cols, b = (c + 1) * d->nwin / cols;
    uint64_t k = 0, len = 0;
    for (size_t i = a; i < b; i++) {
      k += d->win[i].cat[GP_CAT_KERNEL];
      uint64_t w = d->window_ns - i * d->win_ns;
      len += w < d->win_ns ? w : d->win_ns;
    }
    double q = pct(k, len) / 10;
    fputc(ramp[q < 9 ? (int)q : 9], o->f);
  }
  fprintf(o->f, "|\n");
}

static void time_lines(struct out *o, const struct gp_device_res *d) {
  if (!d->nwin) return;
  char w[32], a[32], b[32], c[32], p[4][16];
  fprintf(o->f, "  over time (%s windows): busy p5 %s  p50 %s  p95 %s  p99 %s\n",
          gp_fmt_sdur(w, sizeof w, d->win_ns), gp_fmt_pct(p[0], sizeof p[0], d->busy_p5),
          gp_fmt_pct(p[1], sizeof p[1], d->busy_p50),
          gp_fmt_pct(p[2], sizeof p[2], d->busy_p95),
          gp_fmt_pct(p[3], sizeof p[3], d->busy_p99));
  char line[256];
  int k = snprintf(line, sizeof line, "longest idle %s at +%s",
                   gp_fmt_dur(a, sizeof a, d->idle_longest),
                   gp_fmt_dur(b, sizeof b, d->idle_longest_at));
  if (d->busy_run && k > 0 && (size_t)k < sizeof line)
    snprintf(line + k, sizeof line - (size_t)k,
             "; longest run > 90%% busy %s at +%s",
             gp_fmt_dur(c, sizeof c, d->busy_run_ns),
             gp_fmt_dur(w, sizeof w, d->busy_run_at * d->win_ns));
  wrap(o, "    ", line, 6);
  spark(o, d);
}

static void device(struct out *o, const struct gp_device_res *d) {
  char name[64], mem[32], head[32], lead[64], rest[512], x[32], y[32], z[32];
  size_t n = 0;
  if (d->id < 0)
    snprintf(head, sizeof head, "GPU (unknown ordinal)");
  else
    snprintf(head, sizeof head, "GPU %lld", (long long)d->id);
  rest[0] = 0;
  if (d->host) {
    gp_text_clean(d->host, name, sizeof name, 16);
    n += (size_t)snprintf(rest + n, sizeof rest - n, " on %s", name);
  }
  if (d->name) {
    gp_text_clean(d->name, name, sizeof name, d->host ? 20 : 32);
    n += (size_t)snprintf(rest + n, sizeof rest - n, "  %s", name);
  }
  if (d->has_props)
    n += (size_t)snprintf(rest + n, sizeof rest - n, "  %s SMs  %s  cc %s.%s",
                          num(x, sizeof x, d->sms, 7),
                          gp_fmt_bytes(mem, sizeof mem, (double)d->mem_total),
                          num(y, sizeof y, d->cc_major, 7),
                          num(z, sizeof z, d->cc_minor, 7));
  snprintf(rest + n, sizeof rest - n, "  window %s",
           gp_fmt_dur(mem, sizeof mem, d->window_ns));
  snprintf(lead, sizeof lead, "\n%s%s%s", o->bold, head, o->off);
  if (strlen(head) + strlen(rest) <= WIDTH)
    fprintf(o->f, "%s%s\n", lead, rest);
  else /* absurd values (a damaged trace): wrapped, still in 100 columns */
    wrap(o, lead, rest, 4);
  cat_lines(o, d);
  util_lines(o, d);
  time_lines(o, d);
}

static void threads(struct out *o, const struct gp_proc_res *r) {
  if (!r->nthreads) return;
  fprintf(o->f, "\n%s%-26s %17s %17s %17s %9s%s\n", o->bold, "Host threads",
          "CPU work", "submitting", "blocked on GPU", "calls", o->off);
  for (size_t i = 0; i < r->nthreads && i < o->top; i++) {
    const struct gp_thread_res *t = &r->threads[i];
    char label[64], nm[32], a[16], b[16], c[16];
    gp_text_clean(t->name ? t->name : "", nm, sizeof nm, 10);
    snprintf(label, sizeof label, "#%llu tid %llu %s",
             (unsigned long long)t->index, (unsigned long long)t->tid, nm);
    fputs("  ", o->f);
    cell(o, label, 24);
    char cl[32];
    char p1[16], p2[16], p3[16];
    fprintf(o->f, " %8s %8s %8s %8s %8s %8s %9s\n",
            gp_fmt_sdur(a, sizeof a, t->cpu),
            pctw(p1, sizeof p1, pct(t->cpu, t->life), 1, 8),
            gp_fmt_sdur(b, sizeof b, t->submit),
            pctw(p2, sizeof p2, pct(t->submit, t->life), 1, 8),
            gp_fmt_sdur(c, sizeof c, t->blocked),
            pctw(p3, sizeof p3, pct(t->blocked, t->life), 1, 8),
            num(cl, sizeof cl, t->calls, 9));
  }
  if (r->nthreads > o->top)
    fprintf(o->f, "  (%zu more)\n", r->nthreads - o->top);
}

static void phases(struct out *o, const struct gp_proc_res *r) {
  if (!r->nphases) return;
  fprintf(o->f, "\n%s%-20s %7s %8s %8s %8s %5s %5s %5s %5s %5s %5s %5s%s\n",
          o->bold, "Phases", "count", "total", "mean", "p95", "kern", "xfer",
          "lnch", "sync", "host", "busy", "SMcov", o->off);
  for (size_t i = 0; i < r->nphases && i < o->top; i++) {
    const struct gp_phase_res *p = &r->phases[i];
    uint64_t span = p->span_ns;
    char a[16], b[16], c[16], cv[16], cn[32];
    fputs("  ", o->f);
    cell(o, p->name, 18);
    fprintf(o->f, " %7s %8s %8s %8s", num(cn, sizeof cn, p->count, 7),
            gp_fmt_sdur(a, sizeof a, p->union_ns),
            gp_fmt_sdur(b, sizeof b, p->count ? p->inst_ns / p->count : 0),
            gp_fmt_sdur(c, sizeof c, gp_hist_pct(&p->dur, 95)));
    char pw[16];
    for (int k = 0; k < GP_CAT_N; k++)
      fprintf(o->f, " %5s", pctw(pw, sizeof pw, pct(p->all.cat[k], span), 0, 5));
    fprintf(o->f, " %5s", pctw(pw, sizeof pw, p->util.busy_pct, 0, 5));
    fprintf(o->f, " %5s\n", gp_fmt_pct(cv, sizeof cv, p->util.cov_pct));
  }
  if (r->nphases > o->top) fprintf(o->f, "  (%zu more)\n", r->nphases - o->top);
}

static void kernels(struct out *o, const struct gp_proc_res *r) {
  if (!r->nkernels) return;
  fprintf(o->f, "\n%s%-28s %7s %8s %8s %8s %8s %8s %6s %6s%s\n", o->bold,
          "Top kernels", "count", "total", "mean", "p50", "p95", "grid",
          "block", "SMcov", o->off);
  int varies = 0;
  for (size_t i = 0; i < r->nkernels && i < o->top; i++) {
    const struct gp_kernel_res *k = &r->kernels[i];
    char a[16], b[16], c[16], d[16], g[40], bl[40], cv[16];
    varies |= k->grid_varies || k->block_varies;
    char gn[32], bn[32], cn[32];
    snprintf(g, sizeof g, "%s%s", num(gn, sizeof gn, k->grid, 7),
             k->grid_varies ? "*" : "");
    snprintf(bl, sizeof bl, "%s%s", num(bn, sizeof bn, k->block, 7),
             k->block_varies ? "*" : "");
    fputs("  ", o->f);
    char shortname[256];
    if (k->demangled) gp_short_name(k->demangled, shortname, sizeof shortname);
    cell(o, k->demangled ? shortname : k->name, 26);
    fprintf(o->f, " %7s %8s %8s %8s %8s %8s %6s %6s\n",
            num(cn, sizeof cn, k->count, 7), gp_fmt_sdur(a, sizeof a, k->total),
            gp_fmt_sdur(b, sizeof b, k->count ? k->total / k->count : 0),
            gp_fmt_sdur(c, sizeof c, gp_hist_pct(&k->dur, 50)),
            gp_fmt_sdur(d, sizeof d, gp_hist_pct(&k->dur, 95)), g, bl,
            gp_fmt_pct(cv, sizeof cv,
                 gp_kernel_cov_pct(k)));
  }
  if (r->nkernels > o->top)
    fprintf(o->f, "  (%zu more)\n", r->nkernels - o->top);
  if (varies)
    fprintf(o->f, "  * grid or block varies between launches; the first "
                  "launch's is shown\n");
}

static void copies(struct out *o, const struct gp_proc_res *r) {
  int head = 0;
  for (size_t i = 0; i < r->ndev; i++) {
    const struct gp_device_res *d = &r->dev[i];
    for (int x = 0; x < GP_XFER_N; x++) {
      const struct gp_copy_row *c = &d->copies[x];
      if (!c->count) continue;
      if (!head++)
        fprintf(o->f, "\n%s%-16s %9s %10s %9s %9s %8s %9s %9s%s\n", o->bold,
                "Copies", "count", "bytes", "time", "GB/s", "of peak",
                "pageable", "pinned", o->off);
      char lab[32], by[32], t[16], pk[16];
      double gbps = c->ns ? (double)c->bytes / (double)c->ns : 0;
      double peak = x == GP_XFER_D2D                       ? d->d2d_gbps
                    : x == GP_XFER_H2D || x == GP_XFER_D2H ? d->link_gbps
                                                           : 0;
      snprintf(lab, sizeof lab, "GPU %lld %s", (long long)d->id,
               gp_xfer_label[x]);
      fputs("  ", o->f);
      cell(o, lab, 14); /* an absurd ordinal is cut, not the table */
      char cn[32], pg[32], pn[32], gb[32];
      snprintf(gb, sizeof gb, gbps < 1e6 ? "%.2f" : "%.2e", gbps);
      fprintf(o->f, " %9s %10s %9s %9s %8s %9s %9s\n",
              num(cn, sizeof cn, c->count, 9),
              gp_fmt_bytes(by, sizeof by, (double)c->bytes),
              gp_fmt_sdur(t, sizeof t, c->ns), gb,
              gp_fmt_pct(pk, sizeof pk, peak > 0 ? 100 * gbps / peak : -1),
              num(pg, sizeof pg, c->pageable, 9),
              num(pn, sizeof pn, c->pinned, 9));
    }
  }
}

static void apis(struct out *o, const struct gp_proc_res *r) {
  if (!r->napis) return;
  fprintf(o->f, "\n%s%-34s %9s %10s %10s %8s%s\n", o->bold, "CUDA API calls",
          "count", "total", "blocked", "errors", o->off);
  for (size_t i = 0; i < r->napis && i < o->top; i++) {
    const struct gp_api_res *a = &r->apis[i];
    char t[16], b[16];
    fputs("  ", o->f);
    cell(o, a->name, 32);
    char cn[32], en[32];
    fprintf(o->f, " %9s %10s %10s %8s\n", num(cn, sizeof cn, a->count, 9),
            gp_fmt_sdur(t, sizeof t, a->total), gp_fmt_sdur(b, sizeof b, a->blocked),
            num(en, sizeof en, a->errors, 8));
  }
  if (r->napis > o->top) fprintf(o->f, "  (%zu more)\n", r->napis - o->top);
  if (r->diag.captured)
    fprintf(o->f, "  captured: %llu launches went into CUDA graphs (stream "
                  "capture) and ran nothing themselves\n",
            (unsigned long long)r->diag.captured);
}

/* Printed counters of a step: the most telling, where not zero. */
static const int step_shown[] = {
    GP_SC_launches,     GP_SC_kernels,     GP_SC_distinct_kernels,
    GP_SC_syncs,        GP_SC_h2d_copies,  GP_SC_h2d_bytes,
    GP_SC_d2h_copies,   GP_SC_d2h_bytes,   GP_SC_d2d_copies,
    GP_SC_d2d_bytes,    GP_SC_p2p_copies,  GP_SC_p2p_bytes,
    GP_SC_memsets,      GP_SC_pageable_copies, GP_SC_allocations,
    GP_SC_frees,        GP_SC_items};

static const char *step_count_label(int k) {
  switch (k) {
  case GP_SC_launches: return "launches";
  case GP_SC_kernels: return "kernels";
  case GP_SC_distinct_kernels: return "distinct kernels";
  case GP_SC_syncs: return "syncs";
  case GP_SC_h2d_copies: return "H2D copies";
  case GP_SC_d2h_copies: return "D2H copies";
  case GP_SC_d2d_copies: return "D2D copies";
  case GP_SC_p2p_copies: return "P2P copies";
  case GP_SC_memsets: return "memsets";
  case GP_SC_pageable_copies: return "pageable copies";
  case GP_SC_allocations: return "allocations";
  case GP_SC_frees: return "frees";
  case GP_SC_items: return "items";
  default: return NULL; /* bytes: shown with their copies */
  }
}

static void step_counters(struct out *o, const struct gp_steps_res *st) {
  char line[1024], v[32], b[32];
  size_t n = 0;
  for (size_t i = 0; i < sizeof step_shown / sizeof *step_shown; i++) {
    int k = step_shown[i];
    const char *lab = step_count_label(k);
    if (!lab || !st->c_med[k]) continue;
    int bytes = k >= GP_SC_h2d_copies && k <= GP_SC_p2p_copies;
    if (bytes)
      snprintf(b, sizeof b, " (%s)",
               gp_fmt_bytes(v, sizeof v,
                            (double)st->c_med[k + GP_SC_h2d_bytes -
                                              GP_SC_h2d_copies]));
    else
      b[0] = 0;
    char cn[32];
    int w = snprintf(line + n, sizeof line - n, "%s%s %s%s", n ? ", " : "",
                     num(cn, sizeof cn, st->c_med[k], 20), lab, b);
    if (w < 0 || (size_t)w >= sizeof line - n) break;
    n += (size_t)w;
  }
  if (n) wrap(o, "  per step (median): ", line, 4);
}

static void step_rates(struct out *o, const struct gp_steps_res *st) {
  char line[512];
  size_t n = (size_t)snprintf(line, sizeof line, "%.2f steps/s", st->per_s);
  if (st->items_per_s >= 0)
    n += (size_t)snprintf(line + n, sizeof line - n, ", %.1f items/s",
                          st->items_per_s);
  if (st->per_busy_s >= 0)
    n += (size_t)snprintf(line + n, sizeof line - n,
                          "; per second of device busy time: %.2f steps",
                          st->per_busy_s);
  if (st->items_per_busy_s >= 0)
    snprintf(line + n, sizeof line - n, ", %.1f items", st->items_per_busy_s);
  wrap(o, "  ", line, 4);
}

static void step_cats(struct out *o, const struct gp_steps_res *st) {
  char line[512], d[16];
  size_t n = 0;
  uint64_t wall = 0;
  for (int k = 0; k < GP_CAT_N; k++)
    wall += st->cat_med[k];
  for (int k = 0; k < GP_CAT_N; k++) {
    char p[16];
    int w = snprintf(line + n, sizeof line - n, "%s%s %s (%s)", k ? ", " : "",
                     gp_cat_label[k],
                     gp_fmt_sdur(d, sizeof d, st->cat_med[k] / st->ndev),
                     pctw(p, sizeof p, pct(st->cat_med[k], wall), 0, 5));
    if (w < 0 || (size_t)w >= sizeof line - n) break;
    n += (size_t)w;
  }
  wrap(o, st->ndev > 1 ? "  per step and GPU (median): "
                       : "  per step (median): ",
       line, 4);
}

static void step_slow(struct out *o, const struct gp_steps_res *st) {
  char line[1024], why[64], d[16];
  size_t n = 0;
  for (size_t i = 0; i < st->nslow && i < 3; i++) {
    const struct gp_step *x = &st->v[st->slow[i]];
    int w = snprintf(line + n, sizeof line - n, "%s#%zu %s (%s)",
                     i ? "; " : "", st->slow[i],
                     gp_fmt_sdur(d, sizeof d, x->end - x->start),
                     gp_step_why(st, st->slow[i], why, sizeof why));
    if (w < 0 || (size_t)w >= sizeof line - n) break;
    n += (size_t)w;
  }
  if (n) wrap(o, "  slowest: ", line, 4);
}

static void steps(struct out *o, const struct gp_proc_res *r) {
  const struct gp_steps_res *st = &r->steps;
  char a[16], b[16], c[16], d[16], nm[64];
  gp_text_clean(st->name ? st->name : "", nm, sizeof nm, 40);
  fprintf(o->f, "\n%sSteps%s", o->bold, o->off);
  if (st->source == GP_STEPS_NONE || !st->n) {
    fputc('\n', o->f);
    wrap(o, "  ", st->how ? st->how : "no steps found", 4);
    return;
  }
  fprintf(o->f, " %zu '%s'  %s(%s)%s\n", st->n, nm, o->dim,
          gp_step_source_key[st->source], o->off);
  wrap(o, "  ", st->how, 4);
  if (st->warmup) {
    uint64_t tot, mx;
    gp_steps_warmup_span(st, &tot, &mx);
    fprintf(o->f, "  warm-up %zu step%s left out (--warmup): %s in all, "
                  "longest %s\n",
            st->warmup, st->warmup == 1 ? "" : "s",
            gp_fmt_sdur(a, sizeof a, tot), gp_fmt_sdur(b, sizeof b, mx));
  }
  if (!st->measured) {
    fprintf(o->f, "  no measured step: all are warm-up (--warmup 0 counts "
                  "them)\n");
    return;
  }
  fprintf(o->f, "  %s%zu measured%s: median %s  p95 %s  p99 %s  max %s\n",
          o->bold, st->measured, o->off, gp_fmt_sdur(a, sizeof a, st->median_ns),
          gp_fmt_sdur(b, sizeof b, st->p95_ns),
          gp_fmt_sdur(c, sizeof c, st->p99_ns),
          gp_fmt_sdur(d, sizeof d, st->max_ns));
  step_rates(o, st);
  step_cats(o, st);
  step_counters(o, st);
  step_slow(o, st);
}

static void header(struct out *o, const struct gp_proc_res *r) {
  char w[32], host[64], cmd[128], file[128];
  if (!r->file) {
    fprintf(o->f,
            "\n%s=== All %llu processes together (sums over processes) ===%s\n",
            o->bold, (unsigned long long)r->nprocs, o->off);
  } else {
    gp_text_clean(r->host ? r->host : "?", host, sizeof host, 30);
    fprintf(o->f, "\n%s=== Process %lld", o->bold, (long long)r->pid);
    if (r->ppid >= 0) fprintf(o->f, " (parent %lld)", (long long)r->ppid);
    if (r->rank >= 0) fprintf(o->f, " rank %lld", (long long)r->rank);
    fprintf(o->f, " on %s ===%s\n", host, o->off);
    gp_text_clean(r->cmdline ? r->cmdline : "", cmd, sizeof cmd, 88);
    gp_text_clean(r->file, file, sizeof file, 60);
    fprintf(o->f, "  command %s\n  file %s\n", cmd, file);
  }
  if (r->file)
    fprintf(o->f, "  window %s (first CUDA call to last event)%s\n",
            gp_fmt_dur(w, sizeof w, r->window_ns),
            r->truncated ? "; TRUNCATED trace" : "");
  else /* the mark on a line of its own: a long sum must fit 100 columns */
    fprintf(o->f,
            "  windows %s added up (each process's first CUDA call to its "
            "last event)\n%s",
            gp_fmt_dur(w, sizeof w, r->window_ns),
            r->truncated ? "  a TRUNCATED trace among them\n" : "");
}

static void findings(struct out *o, const struct gp_proc_res *r) {
  if (!r->nfindings) return;
  fprintf(o->f, "\n%sFindings%s\n", o->bold, o->off);
  size_t n = r->file ? r->nfindings
             : r->nfindings < o->sum_rows ? r->nfindings
                                          : o->sum_rows;
  if (n < r->nfindings)
    fprintf(o->f, "  (the first %zu of %zu; each process's own are in its "
                  "section, and the JSON holds them all)\n",
            n, r->nfindings);
  for (size_t i = 0; i < n; i++) {
    /* in a sum over hosts, which host's GPU */
    char lead[96], host[64] = "";
    if (r->findings[i].host) {
      char h[40];
      gp_text_clean(r->findings[i].host, h, sizeof h, 16);
      snprintf(host, sizeof host, " on %s", h);
    }
    snprintf(lead, sizeof lead, "  %s*%s GPU %lld%s: ", o->warn, o->off,
             (long long)r->findings[i].device, host);
    wrap(o, lead, r->findings[i].text, 4);
  }
}

static void notes(struct out *o, const struct gp_proc_res *r) {
  if (!r->nnotes) return;
  fprintf(o->f, "\n%sNotes%s\n", o->bold, o->off);
  for (size_t i = 0; i < r->nnotes; i++)
    wrap(o, "  - ", r->notes[i], 4);
}

static void section(struct out *o, const struct gp_proc_res *r) {
  header(o, r);
  size_t nd = r->file || r->ndev <= o->sum_rows ? r->ndev : o->sum_rows;
  for (size_t i = 0; i < nd; i++)
    device(o, &r->dev[i]);
  if (nd < r->ndev)
    fprintf(o->f,
            "\n%s(%zu more GPUs: --processes all prints each in its "
            "process's section; the JSON holds them all)%s\n",
            o->dim, r->ndev - nd, o->off);
  gp_meas_text(o->f, r, o->bold, o->off);
  if (r->file) steps(o, r);
  findings(o, r);
  threads(o, r);
  phases(o, r);
  kernels(o, r);
  copies(o, r);
  apis(o, r);
  gp_cs_text(o->f, r, o->bold, o->off, o->top);
  notes(o, r);
}

int gp_render_text(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *ro) {
  int c = ro && ro->color;
  struct out o = {f,
                  c ? "\033[1m" : "",
                  c ? "\033[33m" : "",
                  c ? "\033[1;31m" : "",
                  c ? "\033[2m" : "",
                  c ? "\033[0m" : "",
                  ro && ro->top ? ro->top : 15, SIZE_MAX};
  size_t degraded = 0;
  for (size_t i = 0; i < s->n; i++)
    degraded += s->procs[i]->degraded != 0;
  if (degraded == s->n) /* first line, where nobody can miss it */
    fprintf(f,
            "%sDEGRADED: no device activity recorded (CUPTI unavailable?): "
            "host-side times only%s\n",
            o.bad, o.off);
  else if (degraded)
    fprintf(f,
            "%sDEGRADED: %zu of %zu traces hold no device activity: host-side "
            "times only there%s\n",
            o.bad, degraded, s->n, o.off);
  fprintf(f, "%sgpuphase report%s: %zu process%s\n", o.bold, o.off, s->n,
          s->n == 1 ? "" : "es");
  /* the sections: all, or the first few in the job's order (outliers
   * first), else in the order given */
  size_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
  if (!idx) return -1;
  int by_job = 0;
  size_t show = gp_render_shown(s, ro, idx, &by_job);
  if (show < s->n) o.sum_rows = o.top; /* the sum of the many, kept as short */
  for (size_t i = 0; i < show; i++)
    section(&o, s->procs[idx[i]]);
  free(idx);
  if (show < s->n) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "(%zu more process%s left out: above are the %s %zu %s; "
             "--processes all prints every one, the JSON holds them all)",
             s->n - show, s->n - show == 1 ? "" : "es",
             by_job ? "job's first" : "first", show,
             by_job ? "ranks, outliers first (Job below)" : "files given");
    fputc('\n', f);
    wrap(&o, "", msg, 1); /* within the 100 columns */
  }
  if (s->n > 1) section(&o, s->total);
  if (s->job) gp_job_text(f, s->job, c, o.top);
  size_t stacks = 0;
  for (size_t i = 0; i < s->n; i++)
    stacks += gp_cs_present(s->procs[i]);
  if (!stacks) gp_cs_text_hint(f);
  return ferror(f) ? -1 : 0;
}
