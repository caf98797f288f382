#include "pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "gpuphase/trace.h"
#include "reader_ext.h"
#include "util.h"
#include "html_timeline.h"
#include "measured.h"

static char *dup0(const char *s) {
  return s ? strdup(s) : NULL;
}

static void identity(struct gp_proc_res *r, const gpuphase_reader *rd,
                     const char *path) {
  const struct gpuphase_header *h = gpuphase_reader_header(rd);
  r->file = dup0(path);
  r->pid = h->pid;
  r->ppid = h->ppid;
  r->rank = h->rank;
  r->host = dup0(h->host);
  r->cmdline = dup0(h->cmdline);
  r->run_id = h->run_id && *h->run_id ? dup0(h->run_id) : NULL;
}

/* Feeds every record; 0 at the end of the trace, else the reader's error.
 * *unwritten: events LOST records of source 2 count (the writes of the
 * trace file failed, e.g. a full disk). */
static int feed_all(gpuphase_reader *rd, gp_attr *a, const char *path,
                    gp_progress_fn progress, void *ctx, int *oom,
                    uint64_t *unwritten, uint64_t *meas) {
  const struct gpuphase_record *rec;
  uint64_t n = 0, size = gpuphase_reader_file_size(rd);
  int rc;
  while ((rc = gp_reader_next_ref(rd, &rec)) == 1) {
    if (gp_attr_feed(a, rec) < 0) {
      *oom = 1;
      return 0;
    }
    if (rec->kind == GPUPHASE_REC_LOST && rec->u.lost.source == 2)
      *unwritten += rec->u.lost.count;
    *meas += rec->kind == GPUPHASE_REC_METRIC ||
             rec->kind == GPUPHASE_REC_SAMPLER;
    if (progress && (++n & 0xffff) == 0)
      progress(ctx, path, gpuphase_reader_offset(rd), size, n);
  }
  if (progress) progress(ctx, path, size, size, n);
  return rc;
}

static struct gp_proc_res *one_pass(const char *path,
                                    const struct gp_report_opts *opts,
                                    gp_progress_fn progress, void *ctx,
                                    int *status, char *err, size_t errlen) {
  int code = 0, oom = 0;
  struct gp_report_opts ro = *opts, *o = &ro;
  *status = GP_PIPE_BAD_INPUT;
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, errlen);
  if (!rd) {
    if (code == GPUPHASE_E_NOMEM) *status = GP_PIPE_NOMEM;
    return NULL;
  }
  ro.step_items = gpuphase_reader_header(rd)->step_items;
  gp_reader_set_threads(rd, o->read_threads);
  gp_attr *a = gp_attr_new(o);
  uint64_t unwritten = 0, meas = 0;
  int rc =
      a ? feed_all(rd, a, path, progress, ctx, &oom, &unwritten, &meas) : 0;
  struct gp_proc_res *r = NULL;
  if (!a || oom) {
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
  } else if (rc == GPUPHASE_E_NOMEM) {
    const char *m = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: %s", path, m && *m ? m : "out of memory");
    *status = GP_PIPE_NOMEM;
  } else if (rc < 0) {
    const char *m = gpuphase_reader_errmsg(rd);
    if (m && strstr(m, "byte"))
      snprintf(err, errlen, "%s: corrupt trace: %s", path, m);
    else
      snprintf(err, errlen, "%s: corrupt trace at byte %llu: %s", path,
               (unsigned long long)gpuphase_reader_offset(rd),
               m && *m ? m : gpuphase_strerror(rc));
  } else if (!(r = gp_attr_finish(a))) {
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
  } else {
    identity(r, rd, path);
    r->meas_records = meas;
    r->truncated = gpuphase_reader_truncated(rd);
    if (r->truncated)
      gp_res_note(r, "the trace is truncated (process killed or file cut): "
                     "it was read up to its last complete frame");
    if (unwritten)
      gp_res_note(r, "writing the trace file failed (disk full?): the %llu "
                     "events after its last complete flush could not be "
                     "written (counted as lost)",
                  (unsigned long long)unwritten);
    *status = GP_PIPE_OK;
  }
  gp_attr_free(a);
  gpuphase_reader_close(rd);
  return r;
}

static const char ps_glob[] = "ProfilerStep#*";

/* The steps a first pass chose, fixed for a second one. */
static void fix_steps(struct gp_report_opts *o, const struct gp_steps_res *s) {
  o->warmup = (long)s->warmup;
  o->step_source = s->source;
  o->step_exact = 0;
  o->step_api = NULL;
  switch (s->source) {
  case GP_STEPS_REPEATED_RANGE:
    o->step = s->name;
    o->step_exact = 1;
    break;
  case GP_STEPS_PROFILER_STEP:
    o->step = ps_glob;
    break;
  case GP_STEPS_HEURISTIC:
    o->step = NULL;
    o->step_api = s->name;
    break;
  default: /* NAMED: o->step stays */
    break;
  }
}

/* The timeline, when asked for, from one more read of the file. */
static struct gp_proc_res *with_timeline(struct gp_proc_res *r,
                                         const char *path,
                                         const struct gp_report_opts *o,
                                         int *status, char *err,
                                         size_t errlen) {
  if (!r || !o->timeline) return r;
  if (!(r->timeline = gp_htl_collect(path, r, o->timeline, err, errlen))) {
    *status = strstr(err, "out of memory") ? GP_PIPE_NOMEM : GP_PIPE_BAD_INPUT;
    gp_res_free(r);
    return NULL;
  }
  return r;
}

static struct gp_proc_res *report_file(const char *path,
                                       const struct gp_report_opts *o,
                                       gp_progress_fn progress, void *ctx,
                                       int *status, char *err, size_t errlen) {
  static const struct gp_report_opts defaults = {.warmup = -1};
  if (!o) o = &defaults;
  struct gp_report_opts first = *o;
  /* with a known step and warm-up, one pass attributes everything */
  int fixed = o->step && o->warmup >= 0;
  if (!fixed) first.step_detail = 0;
  struct gp_proc_res *r = one_pass(path, &first, progress, ctx, status, err,
                                   errlen);
  if (!r) return NULL;
  const struct gp_steps_res *s = &r->steps;
  int again = s->source != GP_STEPS_NONE &&
              (s->incomplete || (o->step_detail && !fixed));
  if (!again) return r;
  struct gp_report_opts second = *o;
  second.step_detail = o->step_detail;
  fix_steps(&second, s);
  /* only the choice is needed from the first pass: free the rest first */
  const char *keep = second.step_api                       ? second.step_api
                     : second.step != o->step && second.step != ps_glob
                         ? second.step
                         : NULL; /* the user's name or a constant */
  char *name = keep ? strdup(keep) : NULL;
  if (keep && !name) {
    gp_res_free(r);
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
    return NULL;
  }
  if (second.step_api)
    second.step_api = name;
  else if (keep)
    second.step = name;
  gp_res_free(r);
  struct gp_proc_res *r2 =
      one_pass(path, &second, progress, ctx, status, err, errlen);
  free(name);
  return r2;
}

struct gp_proc_res *gp_report_file(const char *path,
                                   const struct gp_report_opts *o,
                                   gp_progress_fn progress, void *ctx,
                                   int *status, char *err, size_t errlen) {
  struct gp_proc_res *r =
      report_file(path, o, progress, ctx, status, err, errlen);
  /* the measured counters, once the window, steps and phases are fixed */
  if (r && r->meas_records && gp_meas_read(r, path, err, errlen) < 0) {
    *status = strstr(err, "out of memory") ? GP_PIPE_NOMEM : GP_PIPE_BAD_INPUT;
    gp_res_free(r);
    return NULL;
  }
  return o ? with_timeline(r, path, o, status, err, errlen) : r;
}

struct gp_proc_res *gp_report_sum(struct gp_proc_res *const *procs, size_t n,
                                  const struct gp_report_opts *o) {
  struct gp_proc_res *sum = gp_res_new_sum();
  int rc = sum ? 0 : -1;
  for (size_t i = 0; !rc && i < n; i++)
    rc = gp_res_merge(sum, procs[i]);
  if (!rc && sum->ndegraded &&
      gp_res_note(sum,
                  "%llu of %zu processes are degraded: their kernel "
                  "time is the host's view (blocking calls)",
                  (unsigned long long)sum->ndegraded, n) < 0)
    rc = -1;
  if (!rc) rc = gp_res_derive(sum, o);
  if (rc < 0) {
    gp_res_free(sum);
    return NULL;
  }
  return sum;
}
