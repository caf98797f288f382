/* The measured counters in the report: the text section "Measured
 * (device-wide)", the "measured" object of a device in JSON, the HTML
 * chart over time, and the findings that use measured values. Thresholds:
 * docs/counters.md ("Report"). */
#include "measured.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gpuphase/trace.h"
#include "jsonw.h"
#include "util.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const struct gp_device_res *our_dev(const struct gp_proc_res *r,
                                           int64_t id) {
  for (size_t i = 0; i < r->ndev; i++)
    if (r->dev[i].id == id) return &r->dev[i];
  return NULL;
}

/* The window's time-weighted mean of q, -1 when not measured. */
static double mean(const struct gp_meas_dev *m, int q) {
  return m && m->q[q].source ? gp_magg_mean(&m->q[q].total) : -1;
}

static const char *src_of(const struct gp_meas_dev *m, int q) {
  return gp_msrc_name(m->q[q].source);
}

/* ---- text ---- */

struct line {
  char b[1536];
  size_t n;
};

static void add(struct line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add(struct line *l, const char *fmt, ...) {
  if (l->n >= sizeof l->b) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(l->b + l->n, sizeof l->b - l->n, fmt, ap);
  va_end(ap);
  if (k > 0) l->n += (size_t)k;
  if (l->n >= sizeof l->b) l->n = sizeof l->b - 1;
}

/* Items separated by ", ", wrapped at 100 columns between items, an item
 * longer than a line between its words; continuation lines indented. */
static void print_wrapped(FILE *f, const char *lead, const char *s) {
  int col = fprintf(f, "%s", lead), first = 1;
  const char *p = s;
  while (*p) {
    const char *sep = strstr(p, ", ");
    size_t w = sep ? (size_t)(sep - p) + 1 : strlen(p); /* with its comma */
    if (!first && col + 1 + (int)w > 100 && 4 + (int)w <= 100) {
      fputs("\n   ", f);
      col = 3;
    }
    const char *end = p + w;
    while (p < end) { /* word by word: only a long item breaks inside */
      const char *sp = memchr(p, ' ', (size_t)(end - p));
      size_t k = sp ? (size_t)(sp - p) : (size_t)(end - p);
      if (col > 4 && col + 1 + (int)k > 100) {
        fputs("\n   ", f);
        col = 3;
      }
      fprintf(f, " %.*s", (int)k, p);
      col += 1 + (int)k;
      p += k;
      while (p < end && *p == ' ')
        p++;
    }
    if (sep) p = sep + 2;
    first = 0;
  }
  fputc('\n', f);
}

static void pct_item(struct line *l, const char *label, double v,
                     const char *src) {
  if (v < 0) return;
  add(l, "%s%s %.1f%% (%s)", l->n ? ", " : "", label, v, src);
}

static void rate_item(struct line *l, const struct gp_meas_dev *m, int tx,
                      int rx, const char *label) {
  double a = mean(m, tx), b = mean(m, rx);
  if (a < 0 && b < 0) return;
  add(l, "%s%s", l->n ? ", " : "", label);
  if (a >= 0) add(l, " tx %.2f GB/s", a / 1e9);
  if (b >= 0) add(l, " rx %.2f GB/s", b / 1e9);
  add(l, " (%s)", src_of(m, a >= 0 ? tx : rx));
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median energy of the measured steps with a known energy; -1: none
 * (or out of memory). */
static double step_energy_median(const struct gp_proc_res *r,
                                 const struct gp_meas_dev *m, size_t *nk) {
  *nk = 0;
  if (!m->step_energy || r->steps.n != r->meas->nsteps ||
      r->steps.warmup >= r->steps.n)
    return -1;
  double *v = malloc((r->steps.n - r->steps.warmup) * sizeof *v);
  if (!v) return -1;
  size_t k = 0;
  for (size_t i = r->steps.warmup; i < r->steps.n; i++)
    if (m->step_energy[i] >= 0) v[k++] = m->step_energy[i];
  double med = -1;
  if (k) {
    qsort(v, k, sizeof *v, cmp_dbl);
    med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  }
  free(v);
  *nk = k;
  return med;
}

static void text_dev(FILE *f, const struct gp_proc_res *r,
                     const struct gp_meas_dev *m) {
  const struct gp_device_res *d = our_dev(r, m->id);
  struct line l = {.n = 0};
  char b1[32], b2[32];
  pct_item(&l, "nvidia-smi GPU-Util", mean(m, GP_MQ_GPU_UTIL),
           src_of(m, GP_MQ_GPU_UTIL));
  /* NVML read the device (its memory readings are there, inside the
   * window or only after it, at exit) but no GPU-Util period fell inside
   * the window: a run shorter than a few of NVML's periods */
  if (mean(m, GP_MQ_GPU_UTIL) < 0 && m->q[GP_MQ_MEM_USED].source)
    add(&l, "nvidia-smi GPU-Util none (no NVML sample period within the run)");
  if (d) add(&l, "%sbusy %.1f%% (ours)", l.n ? ", " : "", d->util.busy_pct);
  double sa = mean(m, GP_MQ_SM_ACTIVE);
  if (sa >= 0) {
    add(&l, "%sSM active %.1f%% (%s)", l.n ? ", " : "", sa,
        src_of(m, GP_MQ_SM_ACTIVE));
    if (d && d->util.cov_pct >= 0)
      add(&l, " vs our SM-coverage estimate %.1f%%", d->util.cov_pct);
  }
  pct_item(&l, "SM occupancy", mean(m, GP_MQ_SM_OCC), src_of(m, GP_MQ_SM_OCC));
  pct_item(&l, "tensor active", mean(m, GP_MQ_TENSOR), src_of(m, GP_MQ_TENSOR));
  pct_item(&l, "DRAM", mean(m, GP_MQ_DRAM_BW), src_of(m, GP_MQ_DRAM_BW));
  pct_item(&l, "PCIe", mean(m, GP_MQ_PCIE_BW), src_of(m, GP_MQ_PCIE_BW));
  rate_item(&l, m, GP_MQ_PCIE_TX, GP_MQ_PCIE_RX, "PCIe");
  rate_item(&l, m, GP_MQ_NVL_TX, GP_MQ_NVL_RX, "NVLink");
  const struct gp_mq_res *mu = &m->q[GP_MQ_MEM_USED];
  if (mu->source && mu->total.ns > 0) {
    add(&l, "%smemory used peak %s (device)", l.n ? ", " : "",
        gp_fmt_bytes(b1, sizeof b1, mu->total.peak));
    if (d)
      add(&l, " vs %s allocated through CUDA (ours)",
          gp_fmt_bytes(b2, sizeof b2, (double)d->mem_peak));
  }
  double clk = mean(m, GP_MQ_SM_CLOCK);
  if (clk >= 0) add(&l, "%sSM clock %.0f MHz mean", l.n ? ", " : "", clk);
  if (m->q[GP_MQ_THR_POWER].source && m->q[GP_MQ_THR_POWER].total.ns > 0)
    add(&l,
        "%sclocks held by power cap %.1f%% / thermal %.1f%% / HW slowdown "
        "%.1f%% of the time",
        l.n ? ", " : "", mean(m, GP_MQ_THR_POWER), mean(m, GP_MQ_THR_THERMAL),
        mean(m, GP_MQ_THR_SLOW));
  double pw = mean(m, GP_MQ_POWER);
  if (pw >= 0) add(&l, "%spower %.0f W mean", l.n ? ", " : "", pw);
  if (m->energy_j >= 0) {
    size_t nk;
    double med = step_energy_median(r, m, &nk);
    add(&l, "%senergy %.1f J", l.n ? ", " : "", m->energy_j);
    if (med >= 0) add(&l, " (%.2f J per step, median of %zu)", med, nk);
  }
  char lead[48];
  snprintf(lead, sizeof lead, "  GPU %" PRId64 ":", m->id);
  if (l.n) print_wrapped(f, lead, l.b);
  struct line s = {.n = 0};
  for (int k = 1; k <= 3; k++) {
    const struct gp_msrc_state *st = &m->src[k];
    if (!st->seen) continue;
    add(&s, "%s%s %s", s.n ? ", " : "", gp_msrc_name(k),
        st->status == GPUPHASE_MSTAT_OK ? "ok" : gp_mstat_name(st->status));
  }
  if (s.n) print_wrapped(f, "    sources:", s.b);
  for (int k = 1; k <= 3; k++) {
    const struct gp_msrc_state *st = &m->src[k];
    if (!st->bad) continue;
    char clean[256];
    gp_text_clean(st->reason ? st->reason : "no reason given", clean,
                  sizeof clean, 160);
    struct line dl = {.n = 0};
    add(&dl, "%s %s%s: %s", gp_msrc_name(k), gp_mstat_name(st->bad_status),
        st->bad_after_ok ? " (after sampling)" : "", clean);
    print_wrapped(f, "    degraded:", dl.b);
  }
  if (m->other_procs || m->other_mem) {
    struct line o = {.n = 0};
    add(&o, "other processes used this device (");
    if (m->other_procs)
      add(&o, "up to %.0f with a context", m->q[GP_MQ_PROCS].total.peak);
    if (m->other_mem)
      add(&o, "%s%s of device memory beyond this process's",
          m->other_procs ? "; " : "",
          gp_fmt_bytes(b1, sizeof b1, m->mem_other_bytes));
    add(&o, "): the counters above include their work");
    print_wrapped(f, "    !", o.b);
  }
}

void gp_meas_text(FILE *f, const struct gp_proc_res *r, const char *bold,
                  const char *off) {
  size_t n = 0;
  for (size_t i = 0; r->meas && i < r->meas->ndev; i++)
    n += gp_meas_any(&r->meas->dev[i]);
  if (!n) return;
  fprintf(f,
          "\n%sMeasured (device-wide)%s: the devices' own counters, "
          "every process's work included\n",
          bold, off);
  for (size_t i = 0; i < r->meas->ndev; i++)
    if (gp_meas_any(&r->meas->dev[i])) text_dev(f, r, &r->meas->dev[i]);
}

/* ---- JSON ---- */

/* A quantity's value as JSON writes it: bytes are whole (a time-weighted
 * mean of the device's memory size read 141000000000.00). */
static double json_val(int q, double v) {
  if (v > 0 && (q == GP_MQ_MEM_USED || q == GP_MQ_PROC_MEM ||
                q == GP_MQ_MEM_TOTAL))
    return round(v);
  return v;
}

static void qvals(struct gp_json *j, const struct gp_meas_dev *m,
                  const struct gp_magg *const *a) {
  for (int q = 0; q < GP_MQ_N; q++) {
    if (!gp_mq_json[q] || !m->q[q].source) continue;
    gp_json_num(j, gp_mq_json[q],
                json_val(q, a[q] ? gp_magg_mean(a[q]) : -1), 2, 1);
  }
}

static void json_series(struct gp_json *j, const struct gp_proc_res *r,
                        const struct gp_meas_dev *m) {
  const struct gp_meas_res *mr = r->meas;
  gp_json_obj(j, "series");
  gp_json_u64(j, "bucket_ns", mr->bucket_ns);
  gp_json_arr(j, "buckets");
  for (size_t b = 0; b < mr->nbuckets; b++) {
    const struct gp_magg *a[GP_MQ_N];
    for (int q = 0; q < GP_MQ_N; q++)
      a[q] = &m->q[q].bucket[b];
    gp_json_obj(j, NULL);
    gp_json_u64(j, "offset_ns", b * mr->bucket_ns);
    qvals(j, m, a);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_end(j);
}

static void json_steps(struct gp_json *j, const struct gp_proc_res *r,
                       const struct gp_meas_dev *m) {
  const struct gp_meas_res *mr = r->meas;
  if (!mr->nsteps || r->steps.n != mr->nsteps) return;
  size_t ndev = r->steps.ndev ? r->steps.ndev : 1;
  gp_json_arr(j, "steps");
  for (size_t i = 0; i < mr->nsteps; i++) {
    const struct gp_step *st = &r->steps.v[i];
    const struct gp_magg *a[GP_MQ_N];
    for (int q = 0; q < GP_MQ_N; q++)
      a[q] = m->q[q].step ? &m->q[q].step[i] : NULL;
    gp_json_obj(j, NULL);
    gp_json_u64(j, "index", i);
    gp_json_bool(j, "warmup", i < r->steps.warmup);
    uint64_t len = st->end > st->start ? st->end - st->start : 0;
    gp_json_num(j, "device_busy_pct",
                len ? 100.0 * (double)st->cat[GP_CAT_KERNEL] /
                          ((double)len * (double)ndev)
                    : -1,
                2, 1);
    qvals(j, m, a);
    if (m->step_energy) gp_json_num(j, "energy_j", m->step_energy[i], 3, 1);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void json_phases(struct gp_json *j, const struct gp_proc_res *r,
                        const struct gp_meas_dev *m) {
  const struct gp_meas_res *mr = r->meas;
  if (!mr->nphases) return;
  gp_json_arr(j, "phases");
  for (size_t i = 0; i < mr->nphases; i++) {
    const struct gp_magg *a[GP_MQ_N];
    for (int q = 0; q < GP_MQ_N; q++)
      a[q] = m->q[q].phase ? &m->q[q].phase[i] : NULL;
    gp_json_obj(j, NULL);
    gp_json_str(j, "name", mr->phase_name[i]);
    /* our busy over the phase's union, on this device */
    const struct gp_phase_res *p = NULL;
    for (size_t k = 0; k < r->nphases && !p; k++)
      if (r->phases[k].name == mr->phase_name[i]) p = &r->phases[k];
    double busy = -1, est = -1;
    for (size_t d = 0; p && d < r->ndev; d++)
      if (r->dev[d].id == m->id && p->dev[d].span_ns) {
        busy = 100.0 * (double)p->dev[d].bd.cat[GP_CAT_KERNEL] /
               (double)p->dev[d].span_ns;
        if (r->dev[d].sms && !r->degraded)
          est = 100.0 * p->dev[d].bd.cov_ns / (double)p->dev[d].span_ns;
      }
    gp_json_num(j, "device_busy_pct", busy, 2, 1);
    gp_json_num(j, "sm_active_estimate_pct", est, 2, 1);
    qvals(j, m, a);
    gp_json_end(j);
  }
  gp_json_end(j);
}

void gp_meas_json(struct gp_json *j, const struct gp_proc_res *r,
                  const struct gp_device_res *d) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  if (!m) {
    gp_json_null(j, "measured");
    return;
  }
  gp_json_obj(j, "measured");
  gp_json_arr(j, "sources");
  for (int k = 1; k <= 3; k++) {
    const struct gp_msrc_state *st = &m->src[k];
    if (!st->seen) continue;
    gp_json_obj(j, NULL);
    gp_json_str(j, "source", gp_msrc_name(k));
    gp_json_str(j, "status", gp_mstat_name(st->status));
    gp_json_bool(j, "degraded", st->bad);
    if (st->bad)
      gp_json_str(j, "degraded_status", gp_mstat_name(st->bad_status));
    if (st->reason)
      gp_json_str(j, "reason", st->reason);
    else
      gp_json_null(j, "reason");
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_obj(j, "used");
  for (int q = 0; q < GP_MQ_N; q++)
    if (gp_mq_name[q] && m->q[q].source)
      gp_json_str(j, gp_mq_name[q], gp_msrc_name(m->q[q].source));
  gp_json_end(j);
  static const int named[] = {GP_MQ_GPU_UTIL, GP_MQ_SM_ACTIVE, GP_MQ_SM_OCC,
                              GP_MQ_TENSOR, GP_MQ_DRAM_BW};
  for (size_t i = 0; i < sizeof named / sizeof *named; i++)
    gp_json_num(j, gp_mq_json[named[i]], mean(m, named[i]), 2, 1);
  const struct gp_mq_res *mu = &m->q[GP_MQ_MEM_USED];
  gp_json_num(j, "mem_used_peak_bytes",
              mu->source && mu->total.ns > 0 ? mu->total.peak : -1, 0, 1);
  const struct gp_mq_res *pm = &m->q[GP_MQ_PROC_MEM];
  gp_json_num(j, "proc_mem_used_peak_bytes",
              pm->source && pm->total.ns > 0 ? pm->total.peak : -1, 0, 1);
  gp_json_u64(j, "cuda_alloc_peak_bytes", d->mem_peak);
  gp_json_num(j, "device_busy_pct", d->util.busy_pct, 2, 1);
  gp_json_num(j, "sm_active_estimate_pct", d->util.cov_pct, 2, 1);
  for (int q = 0; q < GP_MQ_N; q++) {
    if (!gp_mq_json[q] || q == GP_MQ_GPU_UTIL || q == GP_MQ_SM_ACTIVE ||
        q == GP_MQ_SM_OCC || q == GP_MQ_TENSOR || q == GP_MQ_DRAM_BW)
      continue;
    gp_json_num(j, gp_mq_json[q], json_val(q, mean(m, q)), 2, 1);
  }
  const struct gp_mq_res *pr = &m->q[GP_MQ_PROCS];
  /* null, as procs_mean, when no reading fell in the window */
  gp_json_num(j, "procs_max", pr->source && pr->total.ns > 0 ? pr->total.peak : -1,
              0, 1);
  gp_json_bool(j, "other_processes", m->other_procs || m->other_mem);
  gp_json_num(j, "mem_elsewhere_bytes",
              mu->source && mu->total.ns > 0 ? m->mem_other_bytes : -1, 0, 1);
  gp_json_num(j, "energy_j", m->energy_j, 3, 1);
  json_series(j, r, m);
  json_steps(j, r, m);
  json_phases(j, r, m);
  gp_json_end(j);
}

/* ---- HTML ---- */

#define MW 800
#define MH 120

static void td_mean(FILE *f, const struct gp_mq_res *q, size_t i) {
  double v = q->source && q->phase ? gp_magg_mean(&q->phase[i]) : -1;
  if (v < 0)
    fputs("<td class=\"n\">&ndash;</td>", f);
  else
    fprintf(f, "<td class=\"n\">%.1f%%</td>", v);
}

/* The measured percentages while each phase was open (the first 15 phases
 * of the phase table, longest first). */
static void html_phases(FILE *f, const struct gp_proc_res *r,
                        const struct gp_meas_dev *m) {
  static const int cols[] = {GP_MQ_GPU_UTIL, GP_MQ_SM_ACTIVE, GP_MQ_SM_OCC,
                             GP_MQ_TENSOR, GP_MQ_DRAM_BW};
  static const char *const head[] = {"nvidia-smi", "SM active", "SM occupancy",
                                     "tensor", "DRAM"};
  const struct gp_meas_res *mr = r->meas;
  if (!mr->nphases) return;
  fputs("<table><thead><tr><th>phase (measured while open)</th>", f);
  for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
    if (m->q[cols[c]].source) fprintf(f, "<th class=\"n\">%s</th>", head[c]);
  fputs("</tr></thead><tbody>\n", f);
  for (size_t i = 0; i < mr->nphases && i < 15; i++) {
    fputs("<tr><td class=\"name\">", f);
    gp_html_esc(f, mr->phase_name[i] ? mr->phase_name[i] : "");
    fputs("</td>", f);
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
      if (m->q[cols[c]].source) td_mean(f, &m->q[cols[c]], i);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

void gp_meas_html(FILE *f, const struct gp_proc_res *r,
                  const struct gp_device_res *d) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  if (!m) return;
  static const struct {
    int q;
    const char *label, *color;
  } lines[] = {{GP_MQ_GPU_UTIL, "nvidia-smi GPU-Util", "#757575"},
               {GP_MQ_SM_ACTIVE, "SM active", "#2e7d32"},
               {GP_MQ_SM_OCC, "SM occupancy", "#66bb6a"},
               {GP_MQ_TENSOR, "tensor active", "#6a1b9a"},
               {GP_MQ_DRAM_BW, "DRAM bandwidth", "#1565c0"},
               {GP_MQ_THR_POWER, "clocks held by power cap", "#c62828"}};
  fputs("<h4>Measured (device-wide: every process's work included)</h4>\n"
        "<p>",
        f);
  int first = 1;
  for (int k = 1; k <= 3; k++) {
    const struct gp_msrc_state *st = &m->src[k];
    if (!st->seen) continue;
    fprintf(f, "%s%s: %s", first ? "sources " : "; ", gp_msrc_name(k),
            gp_mstat_name(st->status));
    if (st->bad) {
      fprintf(f, " (%s: ", gp_mstat_name(st->bad_status));
      gp_html_esc(f, st->reason ? st->reason : "no reason given");
      fputs(")", f);
    }
    first = 0;
  }
  if (m->other_procs || m->other_mem)
    fputs("; <strong>other processes used this device</strong>", f);
  fputs("</p>\n", f);
  if (!r->meas->nbuckets) return;
  size_t nb = r->meas->nbuckets;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
          "aria-label=\"measured counters over time\">\n"
          "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"none\" "
          "stroke=\"#999\"/>\n",
          MW, MH + 16, MW, MH + 16, MW, MH);
  double cw = (double)MW / (double)nb;
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    const struct gp_mq_res *q = &m->q[lines[i].q];
    if (!q->source) continue;
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
            "points=\"",
            lines[i].color);
    for (size_t b = 0; b < nb; b++) {
      double v = gp_magg_mean(&q->bucket[b]);
      if (v < 0) continue;
      fprintf(f, "%.1f,%.1f ", ((double)b + 0.5) * cw,
              (double)MH * (1 - v / 100));
    }
    fputs("\"><title>", f);
    gp_html_esc(f, lines[i].label);
    fprintf(f, " (%s), %% over time</title></polyline>\n",
            gp_msrc_name(q->source));
  }
  char t[32];
  fprintf(f,
          "<text x=\"0\" y=\"%d\" font-size=\"11\">+0</text>"
          "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">"
          "+%s</text>\n</svg>\n<p class=\"key\">",
          MH + 13, MW, MH + 13,
          gp_fmt_dur(t, sizeof t, (uint64_t)nb * r->meas->bucket_ns));
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
    const struct gp_mq_res *q = &m->q[lines[i].q];
    if (!q->source) continue;
    fprintf(f, "<span style=\"background:%s\"></span>", lines[i].color);
    gp_html_esc(f, lines[i].label);
    fprintf(f, " %.1f%% &nbsp; ",
            gp_magg_mean(&q->total) < 0 ? 0 : gp_magg_mean(&q->total));
  }
  fputs("</p>\n", f);
  html_phases(f, r, m);
}

/* ---- findings ---- */

static int say(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int say(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* nvidia-smi says busy, the SMs say otherwise. */
int gp_meas_find_util_gap(const struct gp_proc_res *r,
                          const struct gp_device_res *d, char *buf, size_t n) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  double g = mean(m, GP_MQ_GPU_UTIL), s = mean(m, GP_MQ_SM_ACTIVE);
  if (g < 80 || s < 0 || s >= 50 || s > g - 30) return 0;
  char sv[16]; /* below 10% with one decimal (report-text.md) */
  gp_fmt_pct(sv, sizeof sv, s);
  int k = say(buf, n,
              "nvidia-smi %.0f%%, SMs active %s (measured, %s): kernels "
              "run but most SMs are idle",
              g, sv, src_of(m, GP_MQ_SM_ACTIVE));
  size_t len = strlen(buf);
  if (d->util.small_pct >= 50 && d->sms)
    snprintf(buf + len, n - len,
             "; most kernel time (%.0f%%) is in kernels of fewer than %llu "
             "blocks on %llu SMs",
             d->util.small_pct, (unsigned long long)(d->sms + 1) / 2,
             (unsigned long long)d->sms);
  else if (d->util.cov_pct >= 0)
    snprintf(buf + len, n - len, "; our SM-coverage estimate is %.0f%%",
             d->util.cov_pct);
  return k;
}

int gp_meas_find_dram(const struct gp_proc_res *r,
                      const struct gp_device_res *d, char *buf, size_t n) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  double b = mean(m, GP_MQ_DRAM_BW), t = mean(m, GP_MQ_TENSOR);
  if (b < 60 || t < 0 || t >= 10) return 0;
  return say(buf, n,
             "DRAM bandwidth %.0f%% while tensor pipes are idle (%.0f%% "
             "active; measured, %s): memory-bound kernels",
             b, t, src_of(m, GP_MQ_DRAM_BW));
}

int gp_meas_find_power(const struct gp_proc_res *r,
                       const struct gp_device_res *d, char *buf, size_t n) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  double p = mean(m, GP_MQ_THR_POWER);
  if (p < 20) return 0;
  say(buf, n,
      "clocks held down by the power cap %.0f%% of the time (NVML "
      "clock event reasons)",
      p);
  double c = mean(m, GP_MQ_SM_CLOCK);
  size_t len = strlen(buf);
  if (c >= 0) snprintf(buf + len, n - len, "; SM clock %.0f MHz mean", c);
  return 1;
}

int gp_meas_find_thermal(const struct gp_proc_res *r,
                         const struct gp_device_res *d, char *buf, size_t n) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  double p = mean(m, GP_MQ_THR_THERMAL);
  if (p < 20) return 0;
  return say(buf, n,
             "clocks held down by thermal slowdown %.0f%% of the time (NVML "
             "clock event reasons): check cooling",
             p);
}

int gp_meas_find_mem(const struct gp_proc_res *r, const struct gp_device_res *d,
                     char *buf, size_t n) {
  const struct gp_meas_dev *m = gp_meas_dev(r, d->id);
  if (!m || !m->q[GP_MQ_MEM_USED].source || m->q[GP_MQ_MEM_USED].total.ns <= 0)
    return 0;
  double used = m->q[GP_MQ_MEM_USED].total.peak, ours = (double)d->mem_peak;
  if (used < 2 * ours || used - ours < 4 * GIB) return 0;
  return say(buf, n,
             "device memory used %.1f GiB (measured, nvml), %.1f GiB "
             "allocated through CUDA: another process or a caching "
             "allocator outside the CUDA calls we see",
             used / GIB, ours / GIB);
}
