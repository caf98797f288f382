/* JSON output: one object, schema documented in docs/report-json.md. Keys of
 * categories and transfer kinds come from the tables in report.h. */
#include <stdlib.h>

#include "gp_config.h"
#include "job.h"
#include "jsonw.h"
#include "measured.h"
#include "render_callsites.h"
#include "render.h"

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void nspct(struct gp_json *j, const char *key, uint64_t ns,
                  uint64_t span) {
  gp_json_obj(j, key);
  gp_json_u64(j, "ns", ns);
  gp_json_num(j, "pct", pct(ns, span), 2, 0);
  gp_json_end(j);
}

static void breakdown(struct gp_json *j, const struct gp_breakdown *b,
                      uint64_t span) {
  gp_json_obj(j, "breakdown");
  for (int c = 0; c < GP_CAT_N; c++)
    nspct(j, gp_cat_key[c], b->cat[c], span);
  gp_json_end(j);
  gp_json_obj(j, "subcategories");
  nspct(j, "compute", b->sub[GP_SUB_COMPUTE], span);
  nspct(j, "communication", b->sub[GP_SUB_COMMUNICATION], span);
  for (int x = 0; x < GP_XFER_N; x++)
    nspct(j, gp_xfer_key[x], b->sub[GP_SUB_XFER + x], span);
  nspct(j, "host_api", b->sub[GP_SUB_HOST_API], span);
  gp_json_end(j);
  gp_json_obj(j, "overlap");
  gp_json_u64(j, "kernel_transfer_ns", b->kernel_xfer_overlap);
  gp_json_u64(j, "communication_compute_ns", b->comm_overlap);
  gp_json_end(j);
}

static void util(struct gp_json *j, const struct gp_util *u) {
  gp_json_num(j, "device_busy_pct", u->busy_pct, 2, 1);
  gp_json_num(j, "sm_coverage_pct", u->cov_pct, 2, 1);
  gp_json_num(j, "small_kernel_time_pct", u->small_pct, 2, 1);
  gp_json_num(j, "occupancy_pct", u->occ_pct, 2, 1);
}

static void copies(struct gp_json *j, const struct gp_device_res *d) {
  gp_json_obj(j, "copies");
  for (int x = 0; x < GP_XFER_N; x++) {
    const struct gp_copy_row *c = &d->copies[x];
    double peak = x == GP_XFER_H2D || x == GP_XFER_D2H ? d->link_gbps
                  : x == GP_XFER_D2D                   ? d->d2d_gbps
                                                       : 0;
    double gbps = c->ns ? (double)c->bytes / (double)c->ns : 0;
    gp_json_obj(j, gp_xfer_key[x]);
    gp_json_u64(j, "count", c->count);
    gp_json_u64(j, "bytes", c->bytes);
    gp_json_u64(j, "ns", c->ns);
    gp_json_num(j, "gbps", gbps, 3, 0);
    gp_json_num(j, "peak_gbps", peak > 0 ? peak : -1, 3, 1);
    gp_json_num(j, "peak_pct", peak > 0 ? 100 * gbps / peak : -1, 2, 1);
    gp_json_u64(j, "pageable", c->pageable);
    gp_json_u64(j, "pinned", c->pinned);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void series(struct gp_json *j, const struct gp_device_res *d) {
  gp_json_obj(j, "series");
  for (int c = 0; c < GP_CAT_N; c++) {
    gp_json_arr(j, gp_cat_key[c]);
    for (size_t i = 0; i < d->nwin; i++)
      gp_json_u64(j, NULL, d->win[i].cat[c]);
    gp_json_end(j);
  }
  gp_json_arr(j, "sm_coverage_ns");
  for (size_t i = 0; i < d->nwin; i++)
    gp_json_num(j, NULL, d->win[i].cov_ns, 0, 0);
  gp_json_end(j);
  gp_json_arr(j, "mem_peak_bytes");
  for (size_t i = 0; i < d->nwin; i++)
    gp_json_u64(j, NULL, d->win[i].mem_peak);
  gp_json_end(j);
  gp_json_end(j);
}

static void windows(struct gp_json *j, const struct gp_device_res *d) {
  if (!d->nwin) return;
  gp_json_obj(j, "windows");
  gp_json_u64(j, "length_ns", d->win_ns);
  gp_json_u64(j, "count", d->nwin);
  gp_json_obj(j, "busy_pct");
  gp_json_num(j, "p5", d->busy_p5, 2, 0);
  gp_json_num(j, "p50", d->busy_p50, 2, 0);
  gp_json_num(j, "p95", d->busy_p95, 2, 0);
  gp_json_num(j, "p99", d->busy_p99, 2, 0);
  gp_json_end(j);
  gp_json_obj(j, "longest_idle");
  gp_json_u64(j, "ns", d->idle_longest);
  gp_json_u64(j, "start_offset_ns", d->idle_longest_at);
  gp_json_end(j);
  gp_json_obj(j, "longest_busy_run");
  gp_json_u64(j, "windows", d->busy_run);
  gp_json_u64(j, "ns", d->busy_run_ns);
  gp_json_u64(j, "start_offset_ns", d->busy_run_at * d->win_ns);
  gp_json_end(j);
  series(j, d);
  gp_json_end(j);
}

static void device(struct gp_json *j, const struct gp_proc_res *r,
                   const struct gp_device_res *d) {
  gp_json_obj(j, NULL);
  gp_json_i64(j, "id", d->id);
  gp_json_str(j, "host", d->host);
  gp_json_str(j, "name", d->name);
  if (d->has_props) {
    gp_json_u64(j, "sms", d->sms);
    gp_json_u64(j, "mem_total_bytes", d->mem_total);
    gp_json_u64(j, "cc_major", d->cc_major);
    gp_json_u64(j, "cc_minor", d->cc_minor);
  }
  gp_json_u64(j, "window_ns", d->window_ns);
  gp_json_u64(j, "kernels", d->kernels);
  breakdown(j, &d->bd, d->window_ns);
  gp_json_obj(j, "utilization");
  util(j, &d->util);
  gp_json_u64(j, "mem_peak_bytes", d->mem_peak);
  gp_json_num(j, "mem_peak_pct", d->mem_peak_pct, 2, 1);
  gp_json_num(j, "mem_mean_bytes", d->mem_mean, 0, 0);
  gp_json_num(j, "mem_mean_pct", d->mem_mean_pct, 2, 1);
  gp_json_end(j);
  copies(j, d);
  windows(j, d);
  gp_meas_json(j, r, d);
  gp_json_end(j);
}

static void phase(struct gp_json *j, const struct gp_proc_res *r,
                  const struct gp_phase_res *p) {
  gp_json_obj(j, NULL);
  gp_json_str(j, "name", p->name);
  gp_json_u64(j, "count", p->count);
  gp_json_u64(j, "total_ns", p->union_ns);
  gp_json_u64(j, "instances_ns", p->inst_ns);
  gp_json_u64(j, "mean_ns", p->count ? p->inst_ns / p->count : 0);
  gp_json_u64(j, "p95_ns", gp_hist_pct(&p->dur, 95));
  breakdown(j, &p->all, p->span_ns);
  gp_json_obj(j, "utilization");
  util(j, &p->util);
  gp_json_end(j);
  gp_json_arr(j, "devices");
  for (size_t d = 0; d < r->ndev; d++) {
    gp_json_obj(j, NULL);
    gp_json_i64(j, "id", r->dev[d].id);
    breakdown(j, &p->dev[d].bd, p->dev[d].span_ns);
    gp_json_u64(j, "mem_peak_bytes", p->dev[d].mem_peak);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_end(j);
}

static void kernel(struct gp_json *j, const struct gp_kernel_res *k) {
  gp_json_obj(j, NULL);
  gp_json_str(j, "name", k->name);
  gp_json_str(j, "demangled", k->demangled);
  gp_json_u64(j, "count", k->count);
  gp_json_u64(j, "total_ns", k->total);
  gp_json_u64(j, "mean_ns", k->count ? k->total / k->count : 0);
  gp_json_u64(j, "p50_ns", gp_hist_pct(&k->dur, 50));
  gp_json_u64(j, "p95_ns", gp_hist_pct(&k->dur, 95));
  gp_json_u64(j, "grid", k->grid);
  gp_json_u64(j, "block", k->block);
  gp_json_bool(j, "grid_varies", k->grid_varies);
  gp_json_bool(j, "block_varies", k->block_varies);
  gp_json_u64(j, "registers", k->regs);
  gp_json_u64(j, "shared_mem_bytes", k->smem);
  gp_json_num(j, "sm_coverage_pct",
              gp_kernel_cov_pct(k), 2, 1);
  gp_json_num(j, "occupancy_pct",
              k->occ_ns ? 100 * k->occ_wsum / (double)k->occ_ns : -1, 2, 1);
  gp_json_bool(j, "communication", k->communication);
  gp_json_end(j);
}

static void host(struct gp_json *j, const struct gp_proc_res *r) {
  gp_json_arr(j, "threads");
  for (size_t i = 0; i < r->nthreads; i++) {
    const struct gp_thread_res *t = &r->threads[i];
    gp_json_obj(j, NULL);
    gp_json_u64(j, "index", t->index);
    gp_json_u64(j, "tid", t->tid);
    gp_json_str(j, "name", t->name);
    gp_json_u64(j, "cpu_ns", t->cpu);
    gp_json_u64(j, "submit_ns", t->submit);
    gp_json_u64(j, "blocked_ns", t->blocked);
    gp_json_u64(j, "calls", t->calls);
    gp_json_u64(j, "lifetime_ns", t->life);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_arr(j, "api");
  for (size_t i = 0; i < r->napis; i++) {
    gp_json_obj(j, NULL);
    gp_json_str(j, "name", r->apis[i].name);
    gp_json_u64(j, "count", r->apis[i].count);
    gp_json_u64(j, "total_ns", r->apis[i].total);
    gp_json_u64(j, "blocked_ns", r->apis[i].blocked);
    gp_json_u64(j, "errors", r->apis[i].errors);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void diag(struct gp_json *j, const struct gp_diag *d) {
  gp_json_obj(j, "diagnostics");
  gp_json_u64(j, "records", d->records);
  gp_json_u64(j, "timed_records", d->timed);
  gp_json_u64(j, "late_records", d->late);
  gp_json_u64(j, "late_records_dropped", d->late_dropped);
  gp_json_u64(j, "unmatched_range_ends", d->unmatched_end);
  gp_json_u64(j, "ranges_open_at_end", d->open_at_end);
  gp_json_u64(j, "unknown_frees", d->unknown_free);
  gp_json_u64(j, "async_copies_without_device_record", d->unresolved_copies);
  gp_json_u64(j, "bad_intervals", d->bad_interval);
  gp_json_end(j);
}

/* The members shared by the top level and each entry of "processes". */
static void num_or_null(struct gp_json *j, const char *key, double v) {
  if (v < 0)
    gp_json_null(j, key);
  else
    gp_json_num(j, key, v, 3, 0);
}

static void step_per(struct gp_json *j, const struct gp_steps_res *s) {
  gp_json_obj(j, "per_step");
  gp_json_obj(j, "breakdown");
  for (int c = 0; c < GP_CAT_N; c++) {
    gp_json_obj(j, gp_cat_key[c]);
    gp_json_u64(j, "median_ns", s->cat_med[c]);
    gp_json_num(j, "mean_ns", s->cat_mean[c], 1, 0);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_obj(j, "counters");
  for (int c = 0; c < GP_SC_N; c++) {
    gp_json_obj(j, gp_step_counter_key[c]);
    gp_json_u64(j, "median", s->c_med[c]);
    gp_json_num(j, "mean", s->c_mean[c], 3, 0);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_end(j);
}

/* "warmup_steps": the first k steps of s (NULL: none). */
static void warmup_steps(struct gp_json *j, const struct gp_steps_res *s,
                         size_t k) {
  uint64_t tot = 0, mx = 0;
  for (size_t i = 0; s && i < k && i < s->n; i++) {
    uint64_t d = s->v[i].end - s->v[i].start;
    tot += d;
    mx = d > mx ? d : mx;
  }
  gp_json_obj(j, "warmup_steps");
  gp_json_u64(j, "count", s ? k : 0);
  gp_json_u64(j, "total_ns", tot);
  gp_json_u64(j, "max_ns", mx);
  gp_json_end(j);
}

static void step_lists(struct gp_json *j, const struct gp_steps_res *s) {
  warmup_steps(j, s, s->warmup);
  gp_json_arr(j, "slowest");
  for (size_t i = 0; i < s->nslow; i++) {
    const struct gp_step *x = &s->v[s->slow[i]];
    uint64_t ns;
    int k = gp_step_excess(s, s->slow[i], &ns);
    gp_json_obj(j, NULL);
    gp_json_u64(j, "index", s->slow[i]);
    gp_json_u64(j, "duration_ns", x->end - x->start);
    if (k < 0)
      gp_json_null(j, "excess_category");
    else
      gp_json_str(j, "excess_category", gp_cat_key[k]);
    gp_json_u64(j, "excess_ns", ns);
    gp_json_end(j);
  }
  gp_json_end(j);
}

static void steps(struct gp_json *j, const struct gp_proc_res *r) {
  const struct gp_steps_res *s = r ? &r->steps : NULL;
  gp_json_obj(j, "steps");
  gp_json_str(j, "source", gp_step_source_key[s ? s->source : GP_STEPS_NONE]);
  if (s && s->name)
    gp_json_str(j, "name", s->name);
  else
    gp_json_null(j, "name");
  gp_json_str(j, "how", s && s->how ? s->how : "no steps found");
  gp_json_i64(j, "pid", r && r->file ? r->pid : -1);
  gp_json_u64(j, "count", s ? s->measured : 0);
  gp_json_u64(j, "found", s ? s->n : 0);
  gp_json_u64(j, "warmup", s ? s->warmup : 0);
  if (!s || !s->measured) {
    gp_json_null(j, "median_ns");
    gp_json_null(j, "p95_ns");
    gp_json_null(j, "per_s");
    gp_json_null(j, "items_per_s");
    warmup_steps(j, s, s ? s->n : 0); /* every step found is warm-up */
    gp_json_end(j);
    return;
  }
  gp_json_u64(j, "median_ns", s->median_ns);
  gp_json_u64(j, "mean_ns", s->mean_ns);
  gp_json_u64(j, "min_ns", s->min_ns);
  gp_json_u64(j, "p95_ns", s->p95_ns);
  gp_json_u64(j, "p99_ns", s->p99_ns);
  gp_json_u64(j, "max_ns", s->max_ns);
  gp_json_u64(j, "span_ns", s->span_ns);
  gp_json_num(j, "per_s", s->per_s, 3, 0);
  num_or_null(j, "items_per_s", s->items_per_s);
  num_or_null(j, "per_busy_s", s->per_busy_s);
  num_or_null(j, "items_per_busy_s", s->items_per_busy_s);
  if (s->items_fixed)
    gp_json_u64(j, "items_fixed", s->items_fixed);
  else
    gp_json_null(j, "items_fixed");
  gp_json_u64(j, "gpus", s->ndev);
  step_per(j, s);
  step_lists(j, s);
  gp_json_end(j);
}

static void proc_body(struct gp_json *j, const struct gp_proc_res *r) {
  gp_json_bool(j, "degraded", r->degraded);
  gp_json_bool(j, "truncated", r->truncated);
  gp_json_u64(j, "lost_events", r->lost);
  gp_json_u64(j, "window_ns", r->window_ns);
  gp_json_u64(j, "host_pinned_peak_bytes", r->host_pinned_peak);
  gp_json_arr(j, "notes");
  for (size_t i = 0; i < r->nnotes; i++)
    gp_json_str(j, NULL, r->notes[i]);
  gp_json_end(j);
  gp_json_arr(j, "findings");
  for (size_t i = 0; i < r->nfindings; i++) {
    gp_json_obj(j, NULL);
    gp_json_str(j, "rule", r->findings[i].rule);
    gp_json_i64(j, "device", r->findings[i].device);
    gp_json_str(j, "host", r->findings[i].host);
    gp_json_str(j, "text", r->findings[i].text);
    gp_json_end(j);
  }
  gp_json_end(j);
  gp_json_arr(j, "devices");
  for (size_t i = 0; i < r->ndev; i++)
    device(j, r, &r->dev[i]);
  gp_json_end(j);
  gp_json_arr(j, "phases");
  for (size_t i = 0; i < r->nphases; i++)
    phase(j, r, &r->phases[i]);
  gp_json_end(j);
  gp_json_arr(j, "kernels");
  for (size_t i = 0; i < r->nkernels; i++)
    kernel(j, &r->kernels[i]);
  gp_json_end(j);
  host(j, r);
  gp_cs_json(j, r);
  gp_json_obj(j, "launches");
  gp_json_u64(j, "captured", r->diag.captured);
  gp_json_end(j);
  diag(j, &r->diag);
}

static void identity(struct gp_json *j, const struct gp_proc_res *r) {
  gp_json_str(j, "file", r->file);
  gp_json_i64(j, "pid", r->pid);
  gp_json_i64(j, "ppid", r->ppid);
  gp_json_i64(j, "rank", r->rank);
  gp_json_str(j, "host", r->host);
  gp_json_str(j, "cmdline", r->cmdline);
  gp_json_u64(j, "start_mono_ns", r->wstart);
  gp_json_i64(j, "driver_version", r->driver_version);
  gp_json_i64(j, "runtime_version", r->runtime_version);
}

int gp_render_json(FILE *f, const struct gp_report_set *s,
                   const struct gp_render_opts *o) {
  struct gp_json j;
  (void)o;
  gp_json_init(&j, f, 1);
  gp_json_obj(&j, NULL);
  gp_json_u64(&j, "schema", 1);
  gp_json_str(&j, "tool", "gpuphase-report");
  gp_json_str(&j, "version", GP_VERSION);
  gp_json_u64(&j, "processes_count", s->n);
  proc_body(&j, s->total);
  steps(&j, gp_steps_pick(s->procs, s->n));
  if (s->job) gp_job_json(&j, s->job);
  gp_json_arr(&j, "processes");
  for (size_t i = 0; i < s->n; i++) {
    gp_json_obj(&j, NULL);
    identity(&j, s->procs[i]);
    gp_json_str(&j, "run_id", s->procs[i]->run_id);
    proc_body(&j, s->procs[i]);
    steps(&j, s->procs[i]);
    gp_json_end(&j);
  }
  gp_json_end(&j);
  gp_json_end(&j);
  return ferror(f) ? -1 : 0;
}
