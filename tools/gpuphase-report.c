/* gpuphase-report: where the time of a profiled process went, per GPU.
 *   gpuphase-report [options] FILE...   the report (text or JSON)
 *   gpuphase-report info FILE...        what a trace file holds
 *   gpuphase-report dump FILE           its records, one per line
 *   gpuphase-report merge SUMMARY...    the report from summaries
 * Exit status: 0 success, 1 bad input, 2 usage error. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gp_config.h"
#include "pipeline.h"
#include "render.h"
#include "report_compare.h"
#include "report_export.h"
#include "report_info.h"
#include "html_timeline.h"
#include "job.h"
#include "job_par.h"
#include "job_summary.h"
#include "render_callsites.h"
#include "util.h"

static const char usage[] =
    "Usage: gpuphase-report [options] FILE...\n"
    "       gpuphase-report info FILE...\n"
    "       gpuphase-report dump FILE\n"
    "       gpuphase-report --format summary -o SUMMARY [options] FILE...\n"
    "       gpuphase-report merge [-f FMT] [-o FILE] [--top N] [--processes N]\n"
    "                             [--color] [--weight W] [-j N] [--job|--no-job]\n"
    "                             SUMMARY...\n"
    "       gpuphase-report merge -f summary -o SUMMARY [-j N] SUMMARY...\n"
    "       gpuphase-report compare [options] BASE... --vs NEW...\n"
    "       gpuphase-report check --budget EXPR|--budgets FILE [options] NEW...\n"
    "       gpuphase-report help [info|dump|compare|check|merge]\n"
    "\n"
    "Says where the time of each GPU went (kernel, transfer, launch, sync "
    "idle,\n"
    "host wait), how busy, covered and filled it was, over time and per "
    "phase.\n"
    "Several files (a parent and its children, the ranks of a job) are "
    "reported\n"
    "one by one and then added together; when they carry ranks, the job view\n"
    "sets the ranks side by side and names the stragglers (docs/jobs.md).\n"
    "\n"
    "Options:\n"
    "  -f, --format FMT   text (default), json (schema: docs/report-json.md)\n"
    "                     or html (one self-contained page: tables, charts\n"
    "                     and an interactive timeline; docs/report-html.md);\n"
    "                     perfetto or chrome: the timeline, for ui.perfetto.dev\n"
    "                     or chrome://tracing (docs/export.md); perfetto needs\n"
    "                     -o FILE (- for a pipe) and a name ending in .gz\n"
    "                     gzips either; summary (-o FILE, or - for a pipe):\n"
    "                     the analysed traces in one\n"
    "                     compact file that 'merge' turns into the same\n"
    "                     report, with other summaries (docs/jobs.md); the\n"
    "                     analysis options (--window, --step, --warmup,\n"
    "                     --frames, --link-gbps, --comm-kernels) go with it\n"
    "                     and must be the same in all the summaries merged;\n"
    "                     merge -f summary: one summary of several;\n"
    "                     folded: the call sites as collapsed stacks for\n"
    "                     flamegraph.pl or speedscope (docs/callsites.md)\n"
    "  -o, --output FILE  write the report to FILE instead of standard output\n"
    "                     (- is standard output; never one of the inputs)\n"
    "      --from T, --to T  export only what starts in [FROM, TO); T is\n"
    "                     +DURATION from the start of the run (+1.5s, +0) or\n"
    "                     CLOCK_MONOTONIC ns as 'dump' shows (exports only)\n"
    "      --steps A..B   export only steps #A to #B as the report numbers\n"
    "                     them (from 0, warm-up included)\n"
    "  -w, --window DUR   length of the over-time windows: 100ms by default;\n"
    "                     e.g. 500us, 10ms, 1s, 2.5s (doubled as often as\n"
    "                     needed to keep 65536 windows per GPU at most)\n"
    "      --link-gbps N  host<->device link peak in GB/s (default by compute\n"
    "                     capability: >= 9.0 64, 8.x 32, older 16)\n"
    "      --top N        rows of the kernel, phase, thread, API, call-site\n"
    "                     and job tables of text and html (15; json has\n"
    "                     every row)\n"
    "      --processes N|all  text and html: per-process sections; by default\n"
    "                     all, but with a job view of more than 4 ranks those\n"
    "                     of its first 4 (outliers first) and the sum\n"
    "      --step NAME    each outermost occurrence of the range NAME on a\n"
    "                     thread (NVTX or gpuphase_range_push; a glob such as\n"
    "                     'step*' works), inside other ranges or not, is a\n"
    "                     step; by default: ProfilerStep#N ranges, else\n"
    "                     the top-level range that repeats most, else a\n"
    "                     repeating synchronising call, else the first\n"
    "                     kernel of a repeating sequence of launches\n"
    "      --warmup N     steps left out at the start (default: max(3, 10%))\n"
    "      --html-detail FROM..TO\n"
    "                     html: the timeline's full detail covers this window,\n"
    "                     offsets from the first CUDA call (e.g. 0..500ms,\n"
    "                     1.5s..2s); by default the busiest steps, or the\n"
    "                     whole run when it fits the budget (a timeline for\n"
    "                     each process section shown: see --processes)\n"
    "      --html-budget N  html: events in full detail at most (20000); the\n"
    "                     whole run is always shown aggregated\n"
    "      --frames WHICH user (default): each call site collapsed to its\n"
    "                     innermost frame of user code; all: every frame\n"
    "      --weight W     folded: weigh stacks by GPU idle time (idle, the\n"
    "                     default) or by time blocked in the call (blocked)\n"
    "      --color[=WHEN] colour the text: auto (default: when writing to a\n"
    "                     terminal and NO_COLOR is unset), always or never\n"
    "                     (--colour is the same)\n"
    "      --job          the job view even when the files carry no rank (the\n"
    "                     order of the files numbers the ranks)\n"
    "      --no-job       no job view, even when the files carry ranks\n"
    "      --comm-kernels GLOB[,GLOB...]\n"
    "                     the communication kernels of the job view (default\n"
    "                     " GP_JOB_COMM_DEFAULT ", a mangled name's _Z prefix "
    "skipped)\n"
    "  -j, --jobs N       threads reading the files (default: the CPUs\n"
    "                     available, within the cgroup's CPU quota): up to N\n"
    "                     files at once, one thread each, and with fewer\n"
    "                     files than N the others read a file while its own\n"
    "                     thread analyses it, and then decompress and decode\n"
    "                     its frames ahead (up to 4 a file); merge: up to N\n"
    "                     summaries at once; the output is the same for any N\n"
    "  -h, --help         show this help\n"
    "  -V, --version      show the version\n";

static const char merge_usage[] =
    "Usage: gpuphase-report merge [options] SUMMARY...\n"
    "       gpuphase-report merge -f summary -o SUMMARY [-j N] SUMMARY...\n"
    "\n"
    "The report of the traces behind the summaries, as reading them all at\n"
    "once would give it: text and JSON the same, HTML without the processes'\n"
    "timelines (summaries hold no events). A summary is what\n"
    "'gpuphase-report --format summary -o SUMMARY FILE...' writes, on the node\n"
    "that holds the traces (docs/jobs.md: srun, torchrun, mpirun, job arrays,\n"
    "xargs). The summaries must have been made with the same analysis options\n"
    "(--window, --step, --warmup, --frames, --link-gbps, --comm-kernels), which\n"
    "go to --format summary, not to merge; a process in two summaries is\n"
    "counted twice, with a warning. SUMMARY is a file or a pipe; - is standard\n"
    "input (once).\n"
    "\n"
    "Options:\n"
    "  -f, --format FMT   text (default), json, html, folded (the call sites\n"
    "                     as collapsed stacks), or summary: one summary of\n"
    "                     those given (needs -o; merged again later, in\n"
    "                     stages: per node, per rack, the job)\n"
    "  -o, --output FILE  write to FILE instead of standard output (- is\n"
    "                     standard output; never one of the summaries)\n"
    "      --top N        rows of the tables of text and html (15)\n"
    "      --processes N|all  text and html: per-process sections (see\n"
    "                     gpuphase-report --help)\n"
    "      --color[=WHEN] colour the text: auto, always or never\n"
    "      --weight W     folded: idle (default) or blocked\n"
    "      --job, --no-job  the job view even without ranks; none\n"
    "  -j, --jobs N       summaries read at once (default: the CPUs\n"
    "                     available); the output is the same for any N\n"
    "  -h, --help         show this help\n"
    "  -V, --version      show the version\n"
    "\n"
    "exit status: 0 the report was written, 1 a summary is missing, damaged,\n"
    "of another version or made with other options (a line names it), 2\n"
    "usage error.\n";

struct opts {
  struct gp_report_opts ro;
  struct gp_render_opts rend;
  const struct gp_renderer *fmt;
  const char *out;
  int color; /* -1 auto, 0 never, 1 always */
  struct gp_htl_opts tl;
  const char *html_opt; /* an html-only option given, for the error */
  int procs_opt;        /* --processes given (text and html) */
  int weight_opt;       /* --weight given (folded only) */
  int top_opt;          /* --top given (text and html) */
  int color_opt;        /* --color given (text) */
  const char *job_opt;  /* --job or --no-job given (text, json, html) */
  struct gp_export_opts ex; /* format perfetto or chrome: ex.format set */
  int job;                  /* -1 when ranks are carried, 0 never, 1 always */
  int threads;              /* -j; 0: the CPUs available */
  int summary, merge;       /* --format summary; the merge command */
  int out_dash;             /* -o -: standard output */
  const char *fixed;        /* an analysis option (merge cannot take it) */
  const char *timeline;     /* an option that needs the traces' events */
  const char *outopt;       /* an option of the report (not of a summary) */
  struct gp_job_opts jo;
};

/* the help a usage error points to: merge has its own */
static const char *help_cmd = "gpuphase-report --help";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "gpuphase-report: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see %s)\n", help_cmd);
  return 2;
}

static int parse_num(const char *s, double lo, double hi, double *v) {
  char *end;
  *v = strtod(s, &end);
  return *s && !*end && *v >= lo && *v <= hi ? 0 : -1;
}

enum {
  O_LINK = 256,
  O_TOP,
  O_PROCS,
  O_COLOR,
  O_STEP,
  O_WARMUP,
  O_HDETAIL,
  O_HBUDGET,
  O_FROM,
  O_TO,
  O_STEPS,
  O_JOB,
  O_NOJOB,
  O_COMM,
  O_FRAMES,
  O_WEIGHT
};

/* One option with a value; -1 to go on, else the exit status. */
static int apply(struct opts *o, int c, const char *arg) {
  double v;
  switch (c) {
  case 'f':
    o->ex.format = gp_export_format(arg) ? arg : NULL;
    o->summary = !strcmp(arg, "summary");
    if (o->summary)
      o->fmt = gp_renderer_find("text");
    else if (!o->ex.format && !(o->fmt = gp_renderer_find(arg)))
      return usage_error("unknown format '%s': text, json, html, folded, "
                         "summary, "
                         "perfetto or chrome",
                         arg);
    if (o->ex.format) o->timeline = "--format perfetto or chrome";
    break;
  case O_FRAMES:
    if (strcmp(arg, "user") && strcmp(arg, "all"))
      return usage_error("invalid --frames '%s': user or all", arg);
    o->ro.frames_all = !strcmp(arg, "all");
    o->fixed = "--frames";
    break;
  case O_WEIGHT:
    if (strcmp(arg, "idle") && strcmp(arg, "blocked"))
      return usage_error("invalid --weight '%s': idle or blocked", arg);
    o->rend.weight_blocked = !strcmp(arg, "blocked");
    o->weight_opt = 1;
    break;
  case O_FROM:
    o->timeline = "--from";
    o->ex.from = arg;
    break;
  case O_TO:
    o->timeline = "--to";
    o->ex.to = arg;
    break;
  case O_STEPS:
    o->timeline = "--steps";
    o->ex.steps = arg;
    break;
  case 'o': /* "-": standard output, as for the exports */
    if (!*arg) return usage_error("%s", "empty output file name (-o)");
    o->out = strcmp(arg, "-") ? arg : NULL;
    o->out_dash = !o->out;
    break;
  case 'w':
    o->fixed = "--window";
    if (gp_parse_duration(arg, &o->ro.window_ns) < 0)
      return usage_error("invalid --window '%s': expected a duration such "
                         "as 500us, 10ms or 1s",
                         arg);
    break;
  case O_LINK:
    o->fixed = "--link-gbps";
    if (parse_num(arg, 0.001, 1e6, &o->ro.link_gbps) < 0)
      return usage_error("invalid --link-gbps '%s': expected GB/s from "
                         "0.001 to 1000000",
                         arg);
    break;
  case O_TOP:
    if (parse_num(arg, 1, 1e6, &v) < 0 || v != (size_t)v)
      return usage_error("invalid --top '%s': expected a count from 1 to "
                         "1000000",
                         arg);
    o->rend.top = (size_t)v;
    o->outopt = "--top";
    o->top_opt = 1;
    break;
  case O_PROCS:
    o->procs_opt = 1;
    if (!strcmp(arg, "all"))
      o->rend.procs = SIZE_MAX;
    else if (parse_num(arg, 1, 1e9, &v) < 0 || v != (size_t)v)
      return usage_error("invalid --processes '%s': expected a count from 1 "
                         "to 1000000000, or 'all'",
                         arg);
    else
      o->rend.procs = (size_t)v;
    break;
  case O_STEP:
    o->fixed = "--step";
    if (!*arg) return usage_error("%s", "--step needs a range name or glob");
    o->ro.step = arg;
    break;
  case O_WARMUP:
    o->fixed = "--warmup";
    if (parse_num(arg, 0, 1e9, &v) < 0 || v != (long)v)
      return usage_error("invalid --warmup '%s': expected a count from 0 to "
                         "1000000000",
                         arg);
    o->ro.warmup = (long)v;
    break;
  case O_HDETAIL:
    o->timeline = "--html-detail";
    if (gp_parse_span(arg, &o->tl.from, &o->tl.to) < 0)
      return usage_error("invalid --html-detail '%s': expected FROM..TO, "
                         "offsets such as 0..500ms or 1.5s..2s, FROM < TO",
                         arg);
    o->tl.window = 1;
    o->html_opt = "--html-detail";
    break;
  case O_HBUDGET:
    o->timeline = "--html-budget";
    if (parse_num(arg, 100, 1e7, &v) < 0 || v != (uint64_t)v)
      return usage_error("invalid --html-budget '%s': expected a count from "
                         "100 to 10000000",
                         arg);
    o->tl.budget = (uint64_t)v;
    o->html_opt = "--html-budget";
    break;
  case 'j':
    if (parse_num(arg, 1, 4096, &v) < 0 || v != (int)v)
      return usage_error("invalid --jobs '%s': expected a count from 1 to "
                         "4096",
                         arg);
    o->threads = (int)v;
    break;
  case O_JOB:
  case O_NOJOB:
    o->job = c == O_JOB;
    o->outopt = o->job_opt = c == O_JOB ? "--job" : "--no-job";
    break;
  case O_COMM: {
    o->fixed = "--comm-kernels";
    const char *why = gp_job_comm_check(arg);
    if (why)
      return usage_error("invalid --comm-kernels '%s': expected globs "
                         "separated by commas",
                         arg);
    o->jo.comm = arg;
    break;
  }
  case O_COLOR:
    if (!arg || !strcmp(arg, "always"))
      o->color = 1;
    else if (!strcmp(arg, "never"))
      o->color = 0;
    else if (!strcmp(arg, "auto"))
      o->color = -1;
    else
      return usage_error("invalid --color '%s': auto, always or never", arg);
    o->outopt = "--color";
    o->color_opt = 1;
    break;
  }
  return -1;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct opts *o) {
  static const struct option longs[] = {
      {"format", required_argument, 0, 'f'},
      {"output", required_argument, 0, 'o'},
      {"window", required_argument, 0, 'w'},
      {"link-gbps", required_argument, 0, O_LINK},
      {"top", required_argument, 0, O_TOP},
      {"processes", required_argument, 0, O_PROCS},
      {"step", required_argument, 0, O_STEP},
      {"warmup", required_argument, 0, O_WARMUP},
      {"html-detail", required_argument, 0, O_HDETAIL},
      {"html-budget", required_argument, 0, O_HBUDGET},
      {"color", optional_argument, 0, O_COLOR},
      {"from", required_argument, 0, O_FROM},
      {"to", required_argument, 0, O_TO},
      {"steps", required_argument, 0, O_STEPS},
      {"frames", required_argument, 0, O_FRAMES},
      {"weight", required_argument, 0, O_WEIGHT},
      {"colour", optional_argument, 0, O_COLOR},
      {"jobs", required_argument, 0, 'j'},
      {"job", no_argument, 0, O_JOB},
      {"no-job", no_argument, 0, O_NOJOB},
      {"comm-kernels", required_argument, 0, O_COMM},
      {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int c, rc;
  char opt[3] = "-?";
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":f:o:w:j:hV", longs, NULL)) != -1) {
    /* the option as typed: "--name" from argv, "-x" from optopt (argv
     * may hold a cluster such as "-xy") */
    const char *last = argv[optind - 1];
    opt[1] = (char)optopt;
    const char *name = strncmp(last, "--", 2) && optopt ? opt : last;
    /* a write error: main's check of standard output names it */
    if (c == 'h') return gp_put(o->merge ? merge_usage : usage, stdout), 0;
    if (c == 'V') return printf("gpuphase-report %s\n", GP_VERSION), 0;
    if (c == ':') return usage_error("option '%s' needs a value", name);
    if (c == '?') {
      char why[512];
      gp_opt_refused(longs, name, why, sizeof why);
      return usage_error("%s", why);
    }
    if ((rc = apply(o, c, optarg)) >= 0) return rc;
  }
  if (o->merge && o->fixed)
    return usage_error("merge takes what the summaries were made with: %s "
                       "goes to --format summary",
                       o->fixed);
  if (o->merge && o->timeline)
    return usage_error("%s needs the traces: summaries hold no timeline",
                       o->timeline);
  if (o->summary && o->outopt)
    return usage_error("%s shapes the report, not the summary: give it to "
                       "merge",
                       o->outopt);
  if (optind >= argc)
    return usage_error("%s", o->merge ? "no summary given" : "no trace file given");
  if (o->summary && !o->out && !o->out_dash)
    return usage_error("%s", "--format summary needs -o FILE (- for standard "
                             "output)");
  if (o->summary && o->out_dash && isatty(STDOUT_FILENO))
    return usage_error("%s", "refusing to write a summary (binary) to a "
                             "terminal: -o FILE");
  if (o->html_opt && (o->ex.format || strcmp(o->fmt->name, "html")))
    return usage_error("%s is for --format html", o->html_opt);
  if (o->procs_opt && (o->ex.format || o->summary ||
                       (strcmp(o->fmt->name, "text") &&
                        strcmp(o->fmt->name, "html"))))
    return usage_error("%s", "--processes is for the text and html formats");
  if (o->weight_opt && (o->ex.format || strcmp(o->fmt->name, "folded")))
    return usage_error("%s", "--weight is for --format folded");
  /* an export is the timeline, not the report: the report's options would
   * change nothing in it (the renderers, like the library and Python's
   * Report, take them for every format and use them where they apply) */
  const char *shaping = o->top_opt     ? "--top"
                        : o->color_opt ? "--color"
                                       : o->job_opt;
  if (o->ex.format && shaping)
    return usage_error("%s shapes the report, not an export (--format "
                       "perfetto or chrome)",
                       shaping);
  if (!o->ex.format && (o->ex.from || o->ex.to || o->ex.steps))
    return usage_error("%s", "--from, --to and --steps cut the window of an "
                             "export: use them with --format perfetto or chrome");
  if (o->ex.format) {
    o->ex.out = o->out_dash ? "-" : o->out;
    return gp_export_precheck(&o->ex);
  }
  return -1;
}

/* A progress line, only for a person watching and only after a second;
 * files read at once share it. */
struct progress {
  int on;
  double t0, last;
  int shown;
  pthread_mutex_t mu;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_progress(void *ctx, const char *path, uint64_t done,
                        uint64_t size, uint64_t records) {
  struct progress *p = ctx;
  double t = now();
  pthread_mutex_lock(&p->mu);
  if (t - p->t0 >= 1 && t - p->last >= 0.25) {
    p->last = t;
    p->shown = 1;
    char name[48];
    gp_text_clean(path, name, sizeof name, 40);
    fprintf(stderr, "\r\033[Kgpuphase-report: %s %3.0f%% (%.1f M records)",
            name, size ? 100.0 * (double)done / (double)size : 0,
            records / 1e6);
  }
  pthread_mutex_unlock(&p->mu);
}

/* A message that may hold a file name (a newline, an escape sequence):
 * one clean line. */
static void say_error(const char *msg) {
  char clean[4608];
  gp_text_clean(msg, clean, sizeof clean, sizeof clean - 1);
  fprintf(stderr, "gpuphase-report: %s\n", clean);
}

/* Inputs that hold one process are counted once each, and said on stderr
 * (gp_warn_same_process). */
static void warn_twice(struct gp_proc_res *const *procs, size_t n,
                       int merging) {
  gp_warn_same_procs(procs, n, merging ? "in more than one summary"
                                       : "given more than once");
}

/* The files, read at once by o->threads threads; what is said on stderr
 * (the warnings in file order, then the first error) is what reading them
 * one by one says. */

static int read_all(int n, char **files, const struct opts *o,
                    struct gp_proc_res **procs) {
  struct progress pg = {isatty(2), now(), 0, 0, PTHREAD_MUTEX_INITIALIZER};
  char err[4608]; /* a path (PATH_MAX) and why */
  int st;
  size_t bad = gp_report_files(files, (size_t)n, &o->ro,
                               o->threads ? o->threads : gp_par_default(),
                               pg.on ? on_progress : NULL, &pg, procs, &st,
                               err, sizeof err);
  if (pg.shown) fputs("\r\033[K", stderr);
  for (size_t i = 0; i < (size_t)n; i++) {
    if (i == bad) {
      say_error(err);
      return 1;
    }
    if (procs[i]->truncated)
      fprintf(stderr,
              "gpuphase-report: warning: %s is truncated: reporting up "
              "to its last complete frame\n",
              files[i]);
  }
  warn_twice(procs, (size_t)n, 0);
  return 0;
}

/* --format html: the timelines of the process sections the page shows
 * (one more read of each of those traces, in parallel). */
static int collect_timelines(const struct opts *o, char **files,
                             struct gp_proc_res **procs, size_t n,
                             const struct gp_job *job) {
  struct gp_report_set set = {procs, n, procs[0], job};
  char err[4608]; /* a path (PATH_MAX) and why */
  if (gp_htl_collect_shown(&set, &o->rend, files, &o->tl,
                           o->threads ? o->threads : gp_par_default(), err,
                           sizeof err) == 0)
    return 0;
  say_error(err);
  return 1;
}

/* The output, refused when it is one of the inputs (the same file, by
 * device and inode): checked before reading and again when opening. */
static int refused(const char *out, const char *in) {
  fprintf(stderr,
          "gpuphase-report: refusing to write the report to %s: it "
          "is the input file %s\n",
          out ? out : "standard output", in);
  return 2;
}

static int refuse_output(const char *out, char **files, size_t n) {
  const char *in = gp_out_is_input(out, files, n);
  return in ? refused(out, in) : 0;
}

static int render(const struct opts *o, char **files,
                  struct gp_proc_res **procs, size_t n,
                  const struct gp_proc_res *total, const struct gp_job *job) {
  const char *clash = NULL;
  FILE *f = o->out ? gp_out_open(o->out, "w", files, n, &clash) : stdout;
  if (!f && clash) return refused(o->out, clash);
  if (!f) {
    fprintf(stderr, "gpuphase-report: %s: %s\n", o->out, strerror(errno));
    return 1;
  }
  struct gp_render_opts ro = o->rend;
  const char *nc = getenv("NO_COLOR");
  ro.color =
      o->color == 1 || (o->color == -1 && !o->out && isatty(1) && !(nc && *nc));
  struct gp_report_set set = {procs, n, total, job};
  if (!strcmp(o->fmt->name, "folded") && !gp_cs_present(total))
    fprintf(stderr, "gpuphase-report: no call-site records in %s: recorded "
                    "with GPUPHASE_STACKS=off, or by a build without "
                    "libunwind (docs/callsites.md)\n",
            n > 1 ? (o->merge ? "the summaries' traces" : "the traces")
                  : files[0]);
  /* a renderer fails only on a write error, which gp_out_done names */
  int rc = o->fmt->render(f, &set, &ro);
  if (gp_out_done(f, "gpuphase-report", o->out ? o->out : "standard output")) {
    gp_out_discard(o->out);
    return 1;
  }
  return rc < 0;
}

/* Writes a summary of set (traces: with the analysis options of o; a
 * merge: with the summaries' own) to -o, refused when it is one of the
 * inputs files[0..n). */
static int summary_out(const struct opts *o, char **files, size_t n,
                       const struct gp_summary_set *set) {
  const char *clash = NULL;
  FILE *f = o->out ? gp_out_open(o->out, "wb", files, n, &clash) : stdout;
  if (!f && clash) return refused(o->out, clash);
  if (!f) {
    fprintf(stderr, "gpuphase-report: %s: %s\n", o->out, strerror(errno));
    return 1;
  }
  int rc = 0;
  if ((o->merge ? gp_summary_write_set(f, set)
                : gp_summary_write(f, set->procs, set->in, set->n, set->rule,
                                   &o->ro)) < 0) {
    fprintf(stderr, "gpuphase-report: out of memory\n");
    rc = 1;
  }
  if (gp_out_done(f, "gpuphase-report", o->out ? o->out : "standard output")) {
    gp_out_discard(o->out);
    rc = 1;
  }
  return rc;
}

/* --format summary: the results and the job inputs of the files. */
static int write_summary(const struct opts *o, char **files,
                         struct gp_proc_res **procs, size_t n) {
  char err[4608]; /* a path (PATH_MAX) and why */
  struct gp_job_opts jo = o->jo;
  jo.threads = o->threads ? o->threads : gp_par_default();
  struct gp_job_input *in = NULL;
  if (gp_job_collect_all(files, procs, n, &jo, &in, err, sizeof err) < 0) {
    say_error(err);
    return 1;
  }
  struct gp_summary_set set = {.procs = procs, .in = in, .n = n,
                               .rule = (char *)jo.comm};
  int rc = summary_out(o, files, n, &set);
  for (size_t i = 0; i < n; i++)
    gp_job_input_free(&in[i]);
  free(in);
  return rc;
}

/* merge: the report of the processes of the summaries, in their order. */
static int merge(const struct opts *o, char **files, size_t n) {
  struct gp_summary_set set = {0};
  int rc = 0, nomem;
  char err[4608]; /* a path (PATH_MAX) and why */
  size_t dashes = 0;
  for (size_t i = 0; i < n; i++)
    dashes += !strcmp(files[i], "-");
  if (dashes > 1)
    return usage_error("%s", "- (standard input) is given more than once: "
                             "it can be read once");
  if (gp_summary_read_all(files, n, o->threads ? o->threads : gp_par_default(),
                          &set, &nomem, err, sizeof err) < 0) {
    say_error(err);
    rc = 1;
  }
  if (!rc) warn_twice(set.procs, set.n, 1);
  struct gp_report_opts ro = o->ro;
  ro.link_gbps = set.link_gbps;
  struct gp_proc_res *sum = NULL;
  struct gp_job *job = NULL;
  if (!rc && !set.n) {
    fprintf(stderr, "gpuphase-report: the summaries hold no process\n");
    rc = 1;
  }
  if (!rc && o->summary) { /* a summary of the summaries */
    rc = summary_out(o, files, n, &set);
    gp_summary_set_free(&set);
    return rc;
  }
  if (!rc && set.n > 1 && !(sum = gp_report_sum(set.procs, set.n, &ro))) {
    fprintf(stderr, "gpuphase-report: out of memory\n");
    rc = 1;
  }
  if (!rc && (o->job == 1 || (o->job < 0 && gp_job_wanted(set.procs, set.n)))) {
    job = gp_job_make(set.procs, set.in, set.n, set.rule, err, sizeof err);
    set.in = NULL; /* the job's now, freed with it or on failure */
    if (!job) {
      say_error(err);
      rc = 1;
    }
  }
  struct opts om = *o;
  om.rend.from_summaries = 1;
  if (!rc)
    rc = render(&om, files, set.procs, set.n, sum ? sum : set.procs[0], job);
  gp_job_free(job);
  gp_res_free(sum);
  gp_summary_set_free(&set);
  return rc;
}

static int report(int argc, char **argv, int merging) {
  struct opts o = {.fmt = gp_renderer_find("text"), .color = -1, .job = -1};
  o.ro.warmup = -1;
  o.merge = merging;
  if (merging) help_cmd = "gpuphase-report merge --help";
  int rc = parse(argc, argv, &o);
  if (rc >= 0) return rc;
  size_t n = (size_t)(argc - optind);
  if ((rc = refuse_output(o.out, argv + optind, n))) return rc;
  if (merging) return merge(&o, argv + optind, n);
  struct gp_proc_res **procs = calloc(n, sizeof *procs), *sum = NULL;
  if (!procs) return 1;
  rc = read_all((int)n, argv + optind, &o, procs);
  if (!rc && o.summary) {
    rc = write_summary(&o, argv + optind, procs, n);
    for (size_t i = 0; i < n; i++)
      gp_res_free(procs[i]);
    free(procs);
    return rc;
  }
  if (!rc && n > 1 && !o.ex.format && !(sum = gp_report_sum(procs, n, &o.ro))) {
    fprintf(stderr, "gpuphase-report: out of memory\n");
    rc = 1;
  }
  struct gp_job *job = NULL;
  if (!rc && !o.ex.format &&
      (o.job == 1 || (o.job < 0 && gp_job_wanted(procs, n)))) {
    char err[4608]; /* a path (PATH_MAX) and why */
    o.jo.threads = o.threads ? o.threads : gp_par_default();
    if (!(job = gp_job_build(argv + optind, procs, n, &o.jo, err, sizeof err))) {
      say_error(err);
      rc = 1;
    }
  }
  if (!rc && !o.ex.format && !strcmp(o.fmt->name, "html"))
    rc = collect_timelines(&o, argv + optind, procs, n, job);
  if (!rc && o.ex.format)
    rc = gp_export(argv + optind, n, procs, &o.ex);
  else if (!rc)
    rc = render(&o, argv + optind, procs, n, sum ? sum : procs[0], job);
  gp_job_free(job);
  for (size_t i = 0; i < n; i++)
    gp_res_free(procs[i]);
  gp_res_free(sum);
  free(procs);
  return rc;
}

int main(int argc, char **argv) {
  int rc;
  /* Past a file size limit (ulimit -f) a write fails with EFBIG, which the
   * outputs report on one line and clean up after (gp_out_done), instead of
   * SIGXFSZ killing us with a partial file left. */
  signal(SIGXFSZ, SIG_IGN);
  /* "help" and "help COMMAND", as --help and COMMAND --help */
  char help_opt[] = "--help";
  char *help_argv[4] = {argv[0], help_opt, NULL, NULL};
  if (argc > 3 && !strcmp(argv[1], "help")) {
    fprintf(stderr, "gpuphase-report: help takes one command at most\n");
    return 2;
  }
  if (argc > 1 && !strcmp(argv[1], "help")) {
    static const char *const cmds[] = {"info", "dump", "compare", "check",
                                       "merge"};
    int known = argc == 2;
    for (size_t i = 0; argc == 3 && i < sizeof cmds / sizeof *cmds; i++)
      known |= !strcmp(argv[2], cmds[i]);
    if (!known) {
      fprintf(stderr, "gpuphase-report: help: no command '%s' (info, dump, "
              "compare, check or merge)\n", argv[2]);
      return 2;
    }
    if (argc == 3) help_argv[1] = argv[2], help_argv[2] = help_opt;
    argc = argc == 3 ? 3 : 2;
    argv = help_argv;
  }
  if (argc > 1 && !strcmp(argv[1], "info"))
    rc = gp_cmd_info(argc - 1, argv + 1);
  else if (argc > 1 && !strcmp(argv[1], "dump"))
    rc = gp_cmd_dump(argc - 1, argv + 1);
  else if (argc > 1 && !strcmp(argv[1], "compare"))
    rc = gp_cmd_compare(argc - 1, argv + 1);
  else if (argc > 1 && !strcmp(argv[1], "check"))
    rc = gp_cmd_check(argc - 1, argv + 1);
  else if (argc > 1 && !strcmp(argv[1], "merge"))
    rc = report(argc - 1, argv + 1, 1);
  else
    rc = report(argc, argv, 0);
  /* whatever a command wrote to standard output (help, version) must have
   * reached it; the commands say so themselves when they fail */
  if (!rc && gp_out_done(stdout, "gpuphase-report", "standard output") < 0)
    rc = 1;
  return rc;
}
