/* libgpuphase-report: gpuphase-report's report and CI gate in memory
 * (include/gpuphase/report.h). The same pipeline, sum and renderers as the
 * command line, so the output is the same bytes for the same options. */
#include "gpuphase/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_config.h"
#include "html_timeline.h"
#include "job.h"
#include "job_par.h"
#include "report_info.h"
#include "pipeline.h"
#include "render.h"
#include "report_compare.h"
#include "util.h"

#define EXPORT __attribute__((visibility("default")))

struct gpuphase_report_opts {
  struct gp_report_opts ro;
  size_t top;
  char *step; /* owned */
  char *comm; /* owned: comm-kernels */
  struct gp_htl_opts tl; /* the HTML timeline's detail */
  int job;     /* -1: when the traces carry ranks; 0: never; 1: always */
  int threads; /* "jobs"; 0: the CPUs available */
  size_t procs; /* "processes" (text); 0: the default */
  int weight_blocked; /* "weight" blocked (folded) */
};

struct gpuphase_report {
  struct gpuphase_report_opts o;
  struct gp_proc_res **procs;
  char **paths; /* owned: the HTML timeline reads the traces again */
  size_t npaths; /* entries of paths (those not copied yet are NULL) */
  size_t n;
  struct gp_proc_res *sum; /* NULL for one file */
  struct gp_job *job;      /* the job view, or NULL */
};

static int fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int code, char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

EXPORT const char *gpuphase_report_version(void) {
  return GP_VERSION;
}

EXPORT gpuphase_report_opts *gpuphase_report_opts_new(void) {
  gpuphase_report_opts *o = calloc(1, sizeof *o);
  if (o) o->ro.warmup = -1;
  if (o) o->job = -1;
  return o;
}

EXPORT void gpuphase_report_opts_free(gpuphase_report_opts *o) {
  if (!o) return;
  free(o->step);
  free(o->comm);
  free(o);
}

/* A whole number from lo to hi, as the command line takes counts. */
static int count(const char *s, double lo, double hi, double *v) {
  char *end;
  *v = strtod(s, &end);
  return *s && !*end && *v >= lo && *v <= hi && *v == (double)(long long)*v
             ? 0
             : -1;
}

EXPORT int gpuphase_report_opts_set(gpuphase_report_opts *o, const char *name,
                                    const char *value, char *err,
                                    size_t errlen) {
  const int U = GPUPHASE_REPORT_E_USAGE;
  double v;
  char *end;
  if (!o || !name || !value) return fail(U, err, errlen, "no option given");
  if (!strcmp(name, "window")) {
    if (gp_parse_duration(value, &o->ro.window_ns) < 0)
      return fail(U, err, errlen,
                  "invalid window '%.100s': expected a duration such as "
                  "500us, 10ms or 1s",
                  value);
  } else if (!strcmp(name, "link-gbps")) {
    v = strtod(value, &end);
    if (!*value || *end || !(v >= 0.001 && v <= 1e6))
      return fail(U, err, errlen,
                  "invalid link-gbps '%.100s': expected GB/s from 0.001 "
                  "to 1000000",
                  value);
    o->ro.link_gbps = v;
  } else if (!strcmp(name, "top")) {
    if (count(value, 1, 1e6, &v) < 0)
      return fail(U, err, errlen,
                  "invalid top '%.100s': expected a count from 1 to 1000000",
                  value);
    o->top = (size_t)v;
  } else if (!strcmp(name, "warmup")) {
    if (count(value, 0, 1e9, &v) < 0)
      return fail(U, err, errlen,
                  "invalid warmup '%.100s': expected a count from 0 to "
                  "1000000000",
                  value);
    o->ro.warmup = (long)v;
  } else if (!strcmp(name, "step")) {
    if (!*value) return fail(U, err, errlen, "step needs a range name or glob");
    char *s = strdup(value);
    if (!s) return fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
    free(o->step);
    o->step = s;
  } else if (!strcmp(name, "html-detail")) {
    if (gp_parse_span(value, &o->tl.from, &o->tl.to) < 0)
      return fail(U, err, errlen,
                  "invalid html-detail '%.100s': expected FROM..TO, offsets "
                  "such as 0..500ms or 1.5s..2s, FROM < TO",
                  value);
    o->tl.window = 1;
  } else if (!strcmp(name, "html-budget")) {
    if (count(value, 100, 1e7, &v) < 0)
      return fail(U, err, errlen,
                  "invalid html-budget '%.100s': expected a count from 100 "
                  "to 10000000",
                  value);
    o->tl.budget = (uint64_t)v;
  } else if (!strcmp(name, "job") || !strcmp(name, "no-job")) {
    if (*value && strcmp(value, "1"))
      return fail(U, err, errlen,
                  "invalid %s '%.100s': a flag, set it to \"\" or \"1\"", name,
                  value);
    o->job = !strcmp(name, "job");
  } else if (!strcmp(name, "comm-kernels")) {
    const char *why = gp_job_comm_check(value);
    if (why)
      return fail(U, err, errlen,
                  "invalid comm-kernels '%.100s': expected globs separated "
                  "by commas (%s)",
                  value, why);
    char *c = strdup(value);
    if (!c) return fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
    free(o->comm);
    o->comm = c;
  } else if (!strcmp(name, "jobs")) {
    if (count(value, 1, 4096, &v) < 0)
      return fail(U, err, errlen,
                  "invalid jobs '%.100s': expected a count from 1 to 4096",
                  value);
    o->threads = (int)v;
  } else if (!strcmp(name, "processes")) {
    if (!strcmp(value, "all"))
      o->procs = SIZE_MAX;
    else if (count(value, 1, 1e9, &v) < 0)
      return fail(U, err, errlen,
                  "invalid processes '%.100s': expected a count from 1 to "
                  "1000000000, or 'all'",
                  value);
    else
      o->procs = (size_t)v;
  } else if (!strcmp(name, "frames")) {
    if (strcmp(value, "user") && strcmp(value, "all"))
      return fail(U, err, errlen,
                  "invalid frames '%.100s': expected user or all", value);
    o->ro.frames_all = !strcmp(value, "all");
  } else if (!strcmp(name, "weight")) {
    if (strcmp(value, "idle") && strcmp(value, "blocked"))
      return fail(U, err, errlen,
                  "invalid weight '%.100s': expected idle or blocked", value);
    o->weight_blocked = !strcmp(value, "blocked");
  } else {
    return fail(U, err, errlen,
                "unknown option '%.100s': window, link-gbps, top, step, "
                "warmup, html-detail, html-budget, job, no-job, "
                "comm-kernels, jobs, processes, frames or weight",
                name);
  }
  return GPUPHASE_REPORT_OK;
}

EXPORT void gpuphase_report_close(gpuphase_report *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++)
    gp_res_free(r->procs[i]);
  gp_res_free(r->sum);
  gp_job_free(r->job);
  for (size_t i = 0; r->paths && i < r->npaths; i++)
    free(r->paths[i]);
  free(r->paths);
  free(r->procs);
  free(r->o.step);
  free(r->o.comm);
  free(r);
}

static gpuphase_report *open_fail(gpuphase_report *r, int *code, int c) {
  if (code) *code = c;
  gpuphase_report_close(r);
  return NULL;
}

static int threads_of(const gpuphase_report *r) {
  return r->o.threads ? r->o.threads : gp_par_default();
}

/* The traces, read at once as the command line reads them; the error is
 * the first in file order. 0 or an error code. */
static int read_all(gpuphase_report *r, char *err, size_t errlen) {
  char e[512] = "";
  int st = 0;
  size_t bad = gp_report_files(r->paths, r->n, &r->o.ro, threads_of(r), NULL,
                               NULL, r->procs, &st, e, sizeof e);
  if (bad == r->n) {
    /* one process given twice is counted each time: said on stderr, as
     * the command line says it */
    gp_warn_same_procs(r->procs, r->n, "given more than once");
    return GPUPHASE_REPORT_OK;
  }
  return fail(st == GP_PIPE_NOMEM ? GPUPHASE_REPORT_E_NOMEM
                                  : GPUPHASE_REPORT_E_INPUT,
              err, errlen, "%s", e);
}

EXPORT gpuphase_report *gpuphase_report_open(const char *const *paths, size_t n,
                                             const gpuphase_report_opts *opts,
                                             int *code, char *err,
                                             size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!paths || !n)
    return open_fail(
        NULL, code,
        fail(GPUPHASE_REPORT_E_USAGE, err, errlen, "no trace file given"));
  gpuphase_report *r = calloc(1, sizeof *r);
  if (r) r->procs = calloc(n, sizeof *r->procs);
  if (r) r->paths = calloc(n, sizeof *r->paths);
  if (r && r->paths) r->npaths = n;
  if (!r || !r->procs || !r->paths)
    return open_fail(
        r, code, fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory"));
  r->o.ro.warmup = -1;
  r->o.job = -1;
  if (opts) {
    r->o = *opts;
    r->o.step = r->o.comm = NULL;
    if ((opts->step && !(r->o.step = strdup(opts->step))) ||
        (opts->comm && !(r->o.comm = strdup(opts->comm))))
      return open_fail(
          r, code, fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory"));
  }
  r->o.ro.step = r->o.step;
  for (size_t i = 0; i < n; i++)
    if (!(r->paths[i] = strdup(paths[i])))
      return open_fail(
          r, code, fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory"));
  r->n = n;
  int c = read_all(r, err, errlen);
  if (c) return open_fail(r, code, c);
  if (n > 1 && !(r->sum = gp_report_sum(r->procs, n, &r->o.ro)))
    return open_fail(
        r, code, fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory"));
  if (r->o.job == 1 || (r->o.job < 0 && gp_job_wanted(r->procs, n))) {
    struct gp_job_opts jo = {r->o.comm, threads_of(r)};
    char e[512] = "";
    if (!(r->job = gp_job_build(r->paths, r->procs, n, &jo, e, sizeof e)))
      return open_fail(r, code,
                       fail(strstr(e, "out of memory") ? GPUPHASE_REPORT_E_NOMEM
                                                      : GPUPHASE_REPORT_E_INPUT,
                            err, errlen, "%s", e));
  }
  if (code) *code = GPUPHASE_REPORT_OK;
  return r;
}

EXPORT int gpuphase_report_truncated(const gpuphase_report *r, size_t i) {
  return r && i < r->n && r->procs[i]->truncated;
}

EXPORT int gpuphase_report_render(const gpuphase_report *r, const char *format,
                                  char **out, size_t *len, char *err,
                                  size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!r || !out || !len)
    return fail(GPUPHASE_REPORT_E_USAGE, err, errlen, "no report given");
  *out = NULL;
  *len = 0;
  const struct gp_renderer *fmt = format ? gp_renderer_find(format) : NULL;
  if (!fmt)
    return fail(GPUPHASE_REPORT_E_USAGE, err, errlen,
                "unknown format '%.100s': text, json or html",
                format ? format : "(null)");
  struct gp_render_opts ro = {.color = 0,
                              .top = r->o.top,
                              .procs = r->o.procs,
                              .weight_blocked = r->o.weight_blocked};
  struct gp_report_set set = {r->procs, r->n, r->sum ? r->sum : r->procs[0],
                              r->job};
  /* The HTML page's timelines, as the command line collects them for
   * --format html: one more read of each trace whose section the page
   * shows, the first time. */
  char e[512] = "";
  if (!strcmp(fmt->name, "html") &&
      gp_htl_collect_shown(&set, &ro, r->paths, &r->o.tl, threads_of(r), e,
                           sizeof e) < 0)
    return fail(strstr(e, "out of memory") ? GPUPHASE_REPORT_E_NOMEM
                                           : GPUPHASE_REPORT_E_INPUT,
                err, errlen, "%s", e);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (!f) return fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
  int rc = fmt->render(f, &set, &ro);
  if (fclose(f) != 0 || rc < 0) {
    free(buf);
    return fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
  }
  *out = buf;
  *len = size;
  return GPUPHASE_REPORT_OK;
}

EXPORT int gpuphase_report_compare(const char *command, const char *const *argv,
                                   size_t argc, char **out, size_t *len,
                                   int *exit_code, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (exit_code) *exit_code = 2;
  if (!out || !len || !exit_code || (argc && !argv))
    return fail(GPUPHASE_REPORT_E_USAGE, err, errlen, "no output given");
  *out = NULL;
  *len = 0;
  if (!command || (strcmp(command, "compare") && strcmp(command, "check")))
    return fail(GPUPHASE_REPORT_E_USAGE, err, errlen,
                "unknown command '%.100s': compare or check",
                command ? command : "(null)");
  /* getopt permutes its argv: a copy, with the command as argv[0] */
  char **av = calloc(argc + 2, sizeof *av);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = av ? open_memstream(&buf, &size) : NULL;
  if (!f) {
    free(av);
    return fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
  }
  av[0] = (char *)command;
  for (size_t i = 0; i < argc; i++)
    av[i + 1] = (char *)argv[i];
  int code = 0;
  *exit_code = gp_compare_mem((int)argc + 1, av, !strcmp(command, "check"), f,
                              err, errlen, &code);
  free(av);
  if (fclose(f) != 0 && !code) {
    code = fail(GPUPHASE_REPORT_E_NOMEM, err, errlen, "out of memory");
    *exit_code = 2;
  }
  if (code) {
    free(buf);
    return code;
  }
  *out = buf;
  *len = size;
  return GPUPHASE_REPORT_OK;
}

EXPORT void gpuphase_report_buffer_free(char *p) {
  free(p);
}
