#include "report_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export.h"
#include "report_info.h"
#include "timeline.h"
#include "util.h"

static const char P[] = "gpuphase-report";

int gp_export_format(const char *name) {
  return !strcmp(name, "perfetto") || !strcmp(name, "chrome");
}

static int usage(const char *fmt, const char *arg) {
  fprintf(stderr, "%s: ", P);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see gpuphase-report --help)\n");
  return 2;
}

/* "+1.5s" (offset from base), "123456789" (absolute ns): 0 or -1. */
static int parse_time(const char *s, uint64_t base, uint64_t *t) {
  if (*s == '+') {
    uint64_t d;
    if (!strcmp(s + 1, "0"))
      d = 0;
    else if (gp_parse_duration(s + 1, &d) < 0)
      return -1;
    *t = base + d;
    return 0;
  }
  char *end;
  if (*s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno) return -1;
  *t = v;
  return 0;
}

static int parse_steps(const char *s, size_t *a, size_t *b) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  unsigned long long x = strtoull(s, &end, 10), y;
  if (strncmp(end, "..", 2)) return -1;
  s = end + 2;
  if (*s < '0' || *s > '9') return -1;
  y = strtoull(s, &end, 10);
  if (*end || x > y || y > (1ull << 40)) return -1;
  *a = (size_t)x;
  *b = (size_t)y;
  return 0;
}

int gp_export_precheck(const struct gp_export_opts *o) {
  int perfetto = !strcmp(o->format, "perfetto");
  int to_stdout = !o->out || !strcmp(o->out, "-");
  uint64_t t;
  size_t a, b;
  if (perfetto && !o->out)
    return usage("%s", "--format perfetto writes a binary file: name it "
                       "with -o FILE (or -o - for a pipe)");
  if (perfetto && to_stdout && isatty(1))
    return usage("%s", "refusing to write a binary Perfetto trace to a "
                       "terminal: use -o FILE or a pipe");
  if (o->from && parse_time(o->from, 0, &t) < 0)
    return usage("invalid --from '%s': expected +DURATION (from the start, "
                 "e.g. +1.5s) or a time in ns",
                 o->from);
  if (o->to && parse_time(o->to, 0, &t) < 0)
    return usage("invalid --to '%s': expected +DURATION (from the start, "
                 "e.g. +1.5s) or a time in ns",
                 o->to);
  if (o->steps && parse_steps(o->steps, &a, &b) < 0)
    return usage("invalid --steps '%s': expected A..B, step numbers as the "
                 "report shows them (A <= B)",
                 o->steps);
  if (o->steps && (o->from || o->to))
    return usage("%s", "--steps cuts its own window: not with --from or --to");
  return -1;
}

/* ---- the output: counts the bytes, gzip-compressed for a .gz name */

struct sink_file {
  FILE *f;
  int gz, err;
  z_stream z;
  uint64_t raw;
  unsigned char out[1 << 16];
};

static int drain(struct sink_file *s, int flush) {
  int rc;
  do {
    s->z.next_out = s->out;
    s->z.avail_out = sizeof s->out;
    rc = deflate(&s->z, flush);
    if (rc == Z_STREAM_ERROR) return -1;
    size_t n = sizeof s->out - s->z.avail_out;
    if (n && fwrite(s->out, 1, n, s->f) != n) return -1;
  } while (s->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return 0;
}

static ssize_t sf_write(void *c, const char *buf, size_t n) {
  struct sink_file *s = c;
  s->raw += n;
  if (!s->gz) {
    if (fwrite(buf, 1, n, s->f) != n) return s->err = errno ? errno : EIO, -1;
    return (ssize_t)n;
  }
  s->z.next_in = (unsigned char *)buf;
  s->z.avail_in = (uInt)n;
  if (drain(s, Z_NO_FLUSH) < 0) return s->err = errno ? errno : EIO, -1;
  return (ssize_t)n;
}

static int sf_close(void *c) {
  struct sink_file *s = c;
  int rc = 0;
  if (s->gz) {
    s->z.avail_in = 0;
    if (drain(s, Z_FINISH) < 0) rc = -1;
    deflateEnd(&s->z);
  }
  return rc;
}

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

/* ---- the export */

static uint64_t base_of(struct gp_proc_res **procs, size_t n) {
  uint64_t b = UINT64_MAX;
  for (size_t i = 0; i < n; i++)
    if (procs[i]->started && procs[i]->wstart < b) b = procs[i]->wstart;
  return b == UINT64_MAX ? 0 : b;
}

/* The window: 0 to go on, else the exit status. */
static int window(const struct gp_export_opts *o, struct gp_proc_res **procs,
                  size_t n, uint64_t base, struct gp_tl_opts *w) {
  if (o->from) parse_time(o->from, base, &w->from);
  if (o->to) parse_time(o->to, base, &w->to);
  if (o->steps) {
    size_t a, b;
    parse_steps(o->steps, &a, &b);
    const struct gp_proc_res *r = gp_steps_pick(procs, n);
    if (!r || !r->steps.n) {
      fprintf(stderr, "%s: --steps %s: no steps were found in the trace%s\n", P,
              o->steps, n > 1 ? "s" : "");
      return 1;
    }
    if (b >= r->steps.n) {
      fprintf(stderr, "%s: --steps %s: the trace has steps #0..#%zu\n", P,
              o->steps, r->steps.n - 1);
      return 1;
    }
    w->from = r->steps.v[a].start;
    w->to = r->steps.v[b].end;
    if (w->to <= w->from) w->to = w->from + 1;
  }
  if (w->to && w->from >= w->to) {
    fprintf(stderr, "%s: --from must be before --to\n", P);
    return 2;
  }
  /* a window that misses the whole run would export nothing */
  uint64_t end = 0;
  for (size_t i = 0; i < n; i++)
    if (procs[i]->started && procs[i]->wstart + procs[i]->window_ns > end)
      end = procs[i]->wstart + procs[i]->window_ns;
  if (end && o->from && w->from >= end) {
    fprintf(stderr,
            "%s: --from %s is after the end of the run (+%.6f s): nothing "
            "to export\n",
            P, o->from, (double)(end - base) / 1e9);
    return 1;
  }
  if (end && o->to && w->to <= base) {
    fprintf(stderr,
            "%s: --to %s is at or before the start of the run (its first "
            "CUDA call): nothing to export\n",
            P, o->to);
    return 1;
  }
  return 0;
}

static int write_all(char **files, size_t n, struct gp_proc_res **procs,
                     const struct gp_tl_opts *wo, struct gp_xsink *x,
                     struct gp_tl_stats *sum) {
  char err[4608];
  for (size_t i = 0; i < n; i++) {
    struct gp_tl_opts o = *wo;
    for (size_t j = 0; j < i; j++)
      if (procs[j]->pid == procs[i]->pid) o.id_bias = (int64_t)(i + 1) << 22;
    struct gp_tl_stats st;
    if (gp_timeline_walk(files[i], i, procs[i], &o, &x->tl, &st, err,
                         sizeof err) < 0) {
      if (*err) fprintf(stderr, "%s: %s\n", P, err);
      return -1;
    }
    sum->slices += st.slices, sum->device += st.device, sum->flows += st.flows;
    sum->ranges += st.ranges, sum->counters += st.counters;
    sum->unlinked += st.unlinked, sum->clamped += st.clamped;
    sum->dropped += st.dropped;
    if (st.last_ts > sum->last_ts) sum->last_ts = st.last_ts;
  }
  return 0;
}

static int notes(struct gp_xsink *x, struct gp_proc_res **procs, size_t n,
                 const struct gp_tl_stats *st, uint64_t at) {
  char line[512];
  int rc = 0;
  for (size_t i = 0; i < n; i++)
    if (procs[i]->truncated) {
      snprintf(line, sizeof line,
               "%s is truncated: exported up to its last "
               "complete frame",
               procs[i]->file ? procs[i]->file : "a trace");
      rc |= x->note(x->tl.ctx, at, line);
    }
  if (st->unlinked) {
    snprintf(line, sizeof line,
             "%llu device records have no arrow from "
             "their call (the call is outside the window, was not recorded, "
             "or started more than 1 s before them)",
             (unsigned long long)st->unlinked);
    rc |= x->note(x->tl.ctx, at, line);
  }
  if (st->clamped) {
    snprintf(line, sizeof line,
             "%llu slices were shortened to nest in their "
             "track (they overlapped the one before on the same thread)",
             (unsigned long long)st->clamped);
    rc |= x->note(x->tl.ctx, at, line);
  }
  if (st->dropped) {
    snprintf(line, sizeof line,
             "%llu records were left out: past the "
             "limits on threads, streams, lanes or nesting (docs/export.md)",
             (unsigned long long)st->dropped);
    rc |= x->note(x->tl.ctx, at, line);
  }
  return rc ? -1 : 0;
}

int gp_export(char **files, size_t n, struct gp_proc_res **procs,
              const struct gp_export_opts *o) {
  int perfetto = !strcmp(o->format, "perfetto");
  int to_stdout = !o->out || !strcmp(o->out, "-");
  uint64_t base = base_of(procs, n);
  struct gp_tl_opts wo = {0};
  int rc = window(o, procs, n, base, &wo);
  if (rc) return rc;
  uint64_t records = 0;
  for (size_t i = 0; i < n; i++)
    records += procs[i]->diag.timed;
  double est = (double)records *
               (perfetto ? GP_EXPORT_PERFETTO_BPE : GP_EXPORT_CHROME_BPE);
  if (!wo.from && !wo.to && est > (double)GP_EXPORT_BIG)
    fprintf(stderr,
            "%s: note: the export will be about %.0f MB uncompressed, more "
            "than a browser loads well (~500 MB): cut a window with --from/"
            "--to or --steps\n",
            P, est / 1e6);

  const char *clash = NULL;
  FILE *f = to_stdout ? stdout : gp_out_open(o->out, "wb", files, n, &clash);
  if (!f && clash) {
    fprintf(stderr,
            "%s: refusing to write the export to %s: it is the "
            "input file %s\n",
            P, o->out, clash);
    return 2;
  }
  if (!f) {
    fprintf(stderr, "%s: %s: %s\n", P, o->out, strerror(errno));
    return 1;
  }
  if (perfetto && isatty(fileno(f))) {
    fprintf(stderr,
            "%s: refusing to write a binary Perfetto trace to a "
            "terminal\n",
            P);
    if (f != stdout) fclose(f);
    return 2;
  }
  struct sink_file *sf = calloc(1, sizeof *sf);
  if (!sf) {
    if (f != stdout) fclose(f);
    fprintf(stderr, "%s: out of memory\n", P);
    return 1;
  }
  sf->f = f;
  sf->gz = !to_stdout && ends_with(o->out, ".gz");
  if (sf->gz && deflateInit2(&sf->z, 1, Z_DEFLATED, 15 + 16, 8,
                             Z_DEFAULT_STRATEGY) != Z_OK) {
    free(sf);
    if (f != stdout) fclose(f);
    fprintf(stderr, "%s: out of memory\n", P);
    return 1;
  }
  cookie_io_functions_t io = {NULL, sf_write, NULL, sf_close};
  FILE *cf = fopencookie(sf, "w", io);
  struct gp_xsink *x = NULL;
  if (cf) setvbuf(cf, NULL, _IOFBF, 1 << 16);
  if (cf) x = perfetto ? gp_xsink_perfetto(cf) : gp_xsink_chrome(cf, base);
  struct gp_tl_stats st = {0};
  rc = !x ? (fprintf(stderr, "%s: out of memory\n", P), -1)
          : write_all(files, n, procs, &wo, x, &st);
  uint64_t at = st.last_ts > wo.from ? st.last_ts : wo.from;
  if (!rc) rc = notes(x, procs, n, &st, at);
  if (!rc) {
    fflush(cf);
    if (sf->raw > GP_EXPORT_BIG) {
      char line[256];
      snprintf(line, sizeof line,
               "this export is %.0f MB uncompressed, more "
               "than a browser loads well (~500 MB): cut a window with "
               "--from/--to or --steps",
               (double)sf->raw / 1e6);
      fprintf(stderr, "%s: note: %s\n", P, line);
      rc = x->note(x->tl.ctx, at, line);
    }
  }
  if (!rc) rc = x->finish(x->tl.ctx);
  if (x) x->free(x->tl.ctx);
  free(x);
  int werr = cf ? fclose(cf) : -1;
  int err = sf->err;
  free(sf);
  const char *name = to_stdout ? "standard output" : o->out;
  if (err) { /* the write that failed, with its reason */
    fprintf(stderr, "%s: %s: write error: %s\n", P, name, strerror(err));
    if (f != stdout) fclose(f);
    if (!to_stdout) gp_out_discard(o->out);
    return 1;
  }
  if (gp_out_done(f, P, name) < 0) {
    if (!to_stdout) gp_out_discard(o->out);
    return 1;
  }
  if (werr || err) {
    if (!rc || err)
      fprintf(stderr, "%s: %s: write error: %s\n", P, name,
              strerror(err ? err : EIO));
    return 1;
  }
  return rc ? 1 : 0;
}
