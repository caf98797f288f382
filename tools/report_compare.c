/* gpuphase-report compare and check: the command lines of the CI gate.
 * Files are read by -j threads at once and reduced, in the order given,
 * to what the gate needs (reports/compare.c), so the memory is that of
 * one report per thread plus the names and steps of every run. */
#include "report_compare.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "job_par.h"
#include "pipeline.h"
#include "report_info.h"
#include "util.h"

static const char compare_usage[] =
    "Usage: gpuphase-report compare [OPTIONS] BASE... --vs NEW...\n"
    "\n"
    "Compares the runs of NEW (the candidate) with those of BASE and says "
    "pass,\n"
    "regression or inconclusive, why (categories, kernels, copies, API "
    "calls,\n"
    "counters and findings per step) and how sure. The files of one run (a\n"
    "parent and its children, the ranks of a job) are grouped by the run id\n"
    "in their headers; traces without one count one file per run. Give 3 or\n"
    "more runs a side, interleaved (A B A B A B) on one machine.\n"
    "\n"
    "The primary metric is each run's median step time (without steps: its\n"
    "window). With >= 3 runs a side the ratio of the medians of the per-run\n"
    "values is bootstrapped; with fewer, the steps are (in blocks) and the\n"
    "result is advisory. Regression: the 95% interval's lower bound is over\n"
    "the noise floor and the estimate at or over the threshold. Pass: the\n"
    "upper bound is under the threshold. Otherwise inconclusive.\n"
    "\n"
    "Options:\n"
    "      --vs               the files after it are the candidate's\n"
    "      --max-slowdown [M=]P  threshold (5%); with M=, gate metric M "
    "too:\n"
    "                         host_wait=10%, step_p95=5%, items_per_s=3%...\n"
    "      --min-delta [M=]D  the change must also reach D (e.g. 1ms)\n"
    "      --noise-floor P    the lower bound must clear P (2%)\n"
    "      --exact LIST|all   fail when these per-step counters change for "
    "the\n"
    "                         worse (e.g. pageable_copies,syncs)\n"
    "      --budget EXPR      a budget on the candidate ('host_wait<=20%'),\n"
    "                         repeatable; --budgets FILE: one per line\n"
    "      --allow-different-devices  compare runs on different GPUs\n"
    "      --inconclusive=pass|fail  exit 0 or 1 instead of 3\n"
    "      --step NAME        the steps' range name or glob (as the report)\n"
    "      --warmup N         steps left out at the start (max(3, 10%))\n"
    "  -f, --format FMT       text (default), markdown or json\n"
    "  -o, --output FILE      write to FILE instead of standard output (-)\n"
    "      --junit FILE       also write JUnit XML: a testcase per gate\n"
    "      --top N            rows of the kernel and API tables (5; markdown "
    "10)\n"
    "      --resamples N      bootstrap resamples (10000)\n"
    "      --seed N           the bootstrap's seed (fixed: same input, same\n"
    "                         verdict)\n"
    "  -j, --jobs N           threads reading the files (default: the CPUs\n"
    "                         available, within the cgroup's CPU quota); the\n"
    "                         verdict is the same\n"
    "  -h, --help             show this help\n"
    "\n"
    "With --format markdown and $GITHUB_STEP_SUMMARY set, the summary is\n"
    "appended there too; with GITHUB_ACTIONS=true, regressions are also\n"
    "written as ::error annotations on standard error.\n"
    "\n"
    "Exit status: 0 pass, 1 regression or budget exceeded, 2 usage or input\n"
    "error, 3 inconclusive. Details: docs/compare.md.\n";

static const char check_usage[] =
    "Usage: gpuphase-report check (--budget EXPR | --budgets FILE)... "
    "[OPTIONS] NEW...\n"
    "\n"
    "Checks budgets on the runs of NEW alone, without a baseline. A budget "
    "is\n"
    "METRIC OP VALUE, OP one of <= < >= > == !=, e.g.\n"
    "  host_wait<=20%   step_p95<=120ms   mem_peak<=60GiB   lost_events==0\n"
    "  busy>=80%        steps_per_s>=50   pageable_copies==0\n"
    "Units: % ns us ms s B KiB MiB GiB TiB KB MB GB TB. A category takes a share "
    "of\n"
    "the step (%) or a time per step; mem_peak a size or a share of the "
    "GPU's\n"
    "memory. A budgets file has one per line; '#' starts a comment. The value\n"
    "is the median over the runs (lost_events, mem_peak: the worst run).\n"
    "\n"
    "Options:\n"
    "      --budget EXPR      a budget (repeatable)\n"
    "      --budgets FILE     budgets, one per line (repeatable)\n"
    "      --inconclusive=pass|fail  exit 0 or 1 instead of 3 when a budget\n"
    "                         cannot be evaluated (e.g. no steps found)\n"
    "      --step NAME, --warmup N   how steps are found (as the report)\n"
    "  -f, --format FMT       text (default), markdown or json\n"
    "  -o, --output FILE      write to FILE instead of standard output (-)\n"
    "      --junit FILE       also write JUnit XML: a testcase per budget\n"
    "  -j, --jobs N           threads reading the files (default: the CPUs\n"
    "                         available, within the cgroup's CPU quota)\n"
    "  -h, --help             show this help and the metrics\n"
    "\n"
    "Exit status: 0 every budget met, 1 a budget exceeded, 2 usage or input\n"
    "error, 3 inconclusive. Details: docs/compare.md.\n";

struct cli {
  int check;
  struct gp_cmp_opts o;
  struct gp_budgets bud;
  const char *no_budget_file; /* a --budgets FILE that held none */
  struct gp_report_opts ro;
  const char *format, *out, *junit;
  size_t top;
  int threads; /* -j; 0: the CPUs available */
  char **files[2]; /* base, candidate */
  size_t nf[2];
  char **inputs; /* every file read (traces, budget files): no output */
  size_t ninputs;
  int side;
  const char *compare_only; /* an option that check does not take */
  /* in memory (gp_compare_mem): the verdict goes to mem instead of
   * standard output, messages to err, and errcode says which kind */
  FILE *mem;
  char *err;
  size_t errlen;
  int errcode; /* 1 input, 3 usage, 4 output (enum gpuphase_report_error) */
};

/* A message for standard error, or for the caller of gp_compare_mem. */
static void say(struct cli *c, int code, const char *cmd, const char *msg,
                int help) {
  if (!c->err) {
    fprintf(stderr, "gpuphase-report %s: %s%s%s%s\n", cmd, msg,
            help ? " (see gpuphase-report " : "", help ? cmd : "",
            help ? " --help)" : "");
  } else if (!c->errcode) {
    snprintf(c->err, c->errlen, "%s", msg);
  }
  if (!c->errcode) c->errcode = code;
}

/* One clean line of at most 600 columns: a longer message (a long path)
 * loses its middle, not its end, which says why. */
static void clean_line(const char *msg, char *out, size_t cap) {
  char clean[4608];
  gp_text_clean(msg, clean, sizeof clean, sizeof clean - 1);
  gp_text_keep_ends(clean, out, cap < 601 ? cap : 601);
}

static int usage_error(struct cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_error(struct cli *c, const char *fmt, ...) {
  char msg[4608], clean[4608];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  clean_line(msg, clean, sizeof clean);
  say(c, 3, c->check ? "check" : "compare", clean, 1);
  return 2;
}

/* A message of the library (budget files, traces), on one clean line. */
static int input_error(struct cli *c, const char *msg) {
  char clean[1400];
  clean_line(msg, clean, sizeof clean);
  say(c, 1, c->check ? "check" : "compare", clean, 0);
  return 2;
}

/* An output that could not be written: exit status 2 as for bad input,
 * but of its own kind for the library's callers (4: the output). */
static int output_error(struct cli *c, const char *msg) {
  char clean[1400];
  clean_line(msg, clean, sizeof clean);
  say(c, 4, c->check ? "check" : "compare", clean, 0);
  return 2;
}

/* "M=VALUE": *m the metric (one a slowdown can gate) and *val the value;
 * without '=', *m = -1 (the primary metric). 0, or the exit status. */
static int split_metric(struct cli *c, const char *opt, const char *arg,
                        int *m, const char **val) {
  const char *eq = strchr(arg, '=');
  *m = -1;
  *val = arg;
  if (!eq) return 0;
  int len = (int)(eq - arg > 40 ? 40 : eq - arg);
  if ((*m = gp_metric_find(arg, (size_t)(eq - arg))) < 0)
    return usage_error(c, "%s: unknown metric '%.*s' (known: %s)", opt, len,
                       arg, gp_metric_list());
  enum gp_mkind k = gp_metric_kind(*m);
  if (*m >= GP_M_SC0)
    return usage_error(c,
                       "%s: %s is a per-step counter: --exact gates the "
                       "counters, --budget holds one to a value",
                       opt, gp_metric_name(*m));
  if (!(k == GP_MK_DUR || k == GP_MK_RATE || k == GP_MK_CAT))
    return usage_error(c,
                       "%s: %s is not a time or a rate (counters: --exact; "
                       "shares and sizes: --budget)",
                       opt, gp_metric_name(*m));
  *val = eq + 1;
  return 0;
}

static int quantity(struct cli *c, const char *opt, const char *val,
                    enum gp_mkind k, double *v) {
  char err[200];
  int pct;
  if (gp_parse_quantity(val, k, v, &pct, err, sizeof err) < 0)
    return usage_error(c, "%s: %s", opt, err);
  if (pct) *v /= 100;
  return 0;
}

/* A slowdown is a change, not a share: it may exceed 100% ("500%": six
 * times slower). */
static int slowdown(struct cli *c, const char *val, double *v) {
  char *end;
  errno = 0;
  double x = strtod(val, &end);
  if ((isdigit((unsigned char)*val) || *val == '.') && end != val && !errno &&
      isfinite(x) && x > 100 && x <= 1e6 && !strcmp(end, "%")) {
    *v = x / 100;
    return 0;
  }
  if (end != val && !strcmp(end, "%") && x > 1e6)
    return usage_error(c, "--max-slowdown: '%s': at most 1000000%%", val);
  return quantity(c, "--max-slowdown", val, GP_MK_PCT, v);
}

static int max_slowdown(struct cli *c, const char *arg) {
  int m, rc;
  const char *val;
  double v;
  if ((rc = split_metric(c, "--max-slowdown", arg, &m, &val)) ||
      (rc = slowdown(c, val, &v)))
    return rc;
  if (m < 0) {
    c->o.threshold = v;
  } else {
    c->o.m_slow[m] = v;
    c->o.m_set[m] |= 1;
  }
  return 0;
}

static int min_delta(struct cli *c, const char *arg) {
  int m, rc;
  const char *val;
  double v;
  if ((rc = split_metric(c, "--min-delta", arg, &m, &val))) return rc;
  enum gp_mkind k = m < 0 ? GP_MK_DUR : gp_metric_kind(m);
  if ((rc =
           quantity(c, "--min-delta", val, k == GP_MK_CAT ? GP_MK_DUR : k, &v)))
    return rc;
  if (m < 0) {
    c->o.min_delta = v;
  } else {
    c->o.m_delta[m] = v;
    c->o.m_set[m] |= 2;
  }
  return 0;
}

static const char *exact_list(void) {
  static char buf[512];
  size_t o = 0;
  for (int sc = 0; sc < GP_SC_N && o < sizeof buf; sc++)
    if (gp_counter_exact(sc))
      o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? ", " : "",
                            gp_metric_name(GP_M_SC0 + sc));
  return buf;
}

static int exact(struct cli *c, const char *arg) {
  if (!strcmp(arg, "all")) {
    for (int sc = 0; sc < GP_SC_N; sc++)
      c->o.exact[sc] = (unsigned char)gp_counter_exact(sc);
    return 0;
  }
  for (const char *p = arg;; p++) {
    size_t len = strcspn(p, ",");
    int m = gp_metric_find(p, len);
    if (m < GP_M_SC0 || !gp_counter_exact(m - GP_M_SC0))
      return usage_error(c, "--exact: '%.*s' is not a counter (all, or: %s)",
                         (int)(len > 40 ? 40 : len), p, exact_list());
    c->o.exact[m - GP_M_SC0] = 1;
    p += len;
    if (!*p) return 0;
  }
}

static int count_arg(struct cli *c, const char *opt, const char *arg,
                     double lo, double hi, double *v) {
  char *end;
  *v = strtod(arg, &end);
  if (!*arg || *end || !(*v >= lo && *v <= hi) || *v != (double)(long long)*v)
    return usage_error(c,
                       "invalid %s '%s': expected a whole number from %.0f "
                       "to %.0f",
                       opt, arg, lo, hi);
  return 0;
}

static int budget(struct cli *c, const char *arg, int file) {
  char err[4608];
  if (file) c->inputs[c->ninputs++] = (char *)arg;
  size_t before = c->bud.n;
  int rc = file ? gp_budgets_load(&c->bud, arg, err, sizeof err)
                : gp_budgets_add(&c->bud, arg, "--budget", err, sizeof err);
  if (rc >= 0 && file && c->bud.n == before) c->no_budget_file = arg;
  if (rc >= 0) return 0;
  /* a --budget written wrong is a bad option (code 3), like the others; a
   * budgets file that cannot be read or holds a bad line, bad input */
  return file ? input_error(c, err) : usage_error(c, "%s", err);
}

enum {
  O_VS = 300,
  O_JUNIT,
  O_SLOW,
  O_DELTA,
  O_NOISE,
  O_EXACT,
  O_BUDGET,
  O_BUDGETS,
  O_INCONCLUSIVE,
  O_ALLOW,
  O_STEP,
  O_WARMUP,
  O_TOP,
  O_RESAMPLES,
  O_SEED,
  O_JOBS = 'j'
};

/* Options only compare takes. */
static int compare_only(int ch) {
  return ch == O_VS || ch == O_SLOW || ch == O_DELTA || ch == O_NOISE ||
         ch == O_EXACT || ch == O_ALLOW || ch == O_TOP || ch == O_RESAMPLES ||
         ch == O_SEED;
}

static int apply_num(struct cli *c, int ch, const char *arg) {
  double v;
  int rc;
  switch (ch) {
  case O_NOISE:
    return quantity(c, "--noise-floor", arg, GP_MK_PCT, &c->o.noise);
  case O_WARMUP:
    if ((rc = count_arg(c, "--warmup", arg, 0, 1e9, &v))) return rc;
    c->ro.warmup = (long)v;
    return 0;
  case O_TOP:
    if ((rc = count_arg(c, "--top", arg, 1, 1e6, &v))) return rc;
    c->top = (size_t)v;
    return 0;
  case O_RESAMPLES:
    if ((rc = count_arg(c, "--resamples", arg, 100, 1e7, &v))) return rc;
    c->o.resamples = (size_t)v;
    return 0;
  case O_JOBS:
    if ((rc = count_arg(c, "--jobs", arg, 1, 4096, &v))) return rc;
    c->threads = (int)v;
    return 0;
  default: { /* O_SEED */
    char *end;
    errno = 0;
    c->o.seed = strtoull(arg, &end, 0);
    if (!*arg || *end || *arg == '-' || errno == ERANGE)
      return usage_error(c, "invalid --seed '%s': expected a number below 2^64",
                         arg);
    return 0;
  }
  }
}

/* One option; 0 to go on, else the exit status. */
static int apply(struct cli *c, int ch, const char *arg) {
  switch (ch) {
  case 'f':
    if (strcmp(arg, "text") && strcmp(arg, "markdown") && strcmp(arg, "json"))
      return usage_error(c, "unknown format '%s': text, markdown or json", arg);
    c->format = arg;
    return 0;
  case 'o':
    c->out = strcmp(arg, "-") ? arg : NULL; /* "-": standard output */
    return 0;
  case O_JUNIT:
    c->junit = arg;
    return 0;
  case O_VS:
    if (c->side) return usage_error(c, "--vs given twice");
    c->side = 1;
    return 0;
  case O_SLOW:
    return max_slowdown(c, arg);
  case O_DELTA:
    return min_delta(c, arg);
  case O_EXACT:
    return exact(c, arg);
  case O_BUDGET:
    return budget(c, arg, 0);
  case O_BUDGETS:
    return budget(c, arg, 1);
  case O_ALLOW:
    c->o.allow_different_devices = 1;
    return 0;
  case O_STEP:
    if (!*arg) return usage_error(c, "--step needs a range name or glob");
    c->ro.step = arg;
    return 0;
  case O_INCONCLUSIVE:
    if (!strcmp(arg, "pass") || !strcmp(arg, "fail")) {
      c->o.inconclusive = !strcmp(arg, "fail");
      return 0;
    }
    return usage_error(c, "invalid --inconclusive '%s': pass or fail", arg);
  default:
    return apply_num(c, ch, arg);
  }
}

static const struct option longs[] = {
    {"vs", no_argument, 0, O_VS},
    {"format", required_argument, 0, 'f'},
    {"output", required_argument, 0, 'o'},
    {"junit", required_argument, 0, O_JUNIT},
    {"max-slowdown", required_argument, 0, O_SLOW},
    {"min-delta", required_argument, 0, O_DELTA},
    {"noise-floor", required_argument, 0, O_NOISE},
    {"exact", required_argument, 0, O_EXACT},
    {"budget", required_argument, 0, O_BUDGET},
    {"budgets", required_argument, 0, O_BUDGETS},
    {"inconclusive", required_argument, 0, O_INCONCLUSIVE},
    {"allow-different-devices", no_argument, 0, O_ALLOW},
    {"step", required_argument, 0, O_STEP},
    {"warmup", required_argument, 0, O_WARMUP},
    {"top", required_argument, 0, O_TOP},
    {"resamples", required_argument, 0, O_RESAMPLES},
    {"seed", required_argument, 0, O_SEED},
    {"jobs", required_argument, 0, O_JOBS},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

static void help(struct cli *c) {
  FILE *f = c->mem ? c->mem : stdout;
  gp_put(c->check ? check_usage : compare_usage, f);
  if (!c->check) return;
  fputs("\nMetrics:\n", f);
  for (int m = 0; m < GP_M_N; m++)
    fprintf(f, "  %-18s %s\n", gp_metric_name(m), gp_metric_doc(m));
}

static void add_file(struct cli *c, char *path) {
  c->files[c->side][c->nf[c->side]++] = path;
  c->inputs[c->ninputs++] = path;
}

/* Returns 0 to go on, else the exit status (-1: help was shown). */
static int parse(struct cli *c, int argc, char **argv) {
  int ch, rc;
  char opt[3] = "-?";
  optind = 0; /* glibc: start afresh */
  opterr = 0;
  while ((ch = getopt_long(argc, argv, "-:f:o:j:h", longs, NULL)) != -1) {
    const char *last = argv[optind - 1];
    opt[1] = (char)optopt;
    const char *name = strncmp(last, "--", 2) && optopt ? opt : last;
    if (ch == 1) {
      add_file(c, optarg);
      continue;
    }
    if (ch == 'h') return help(c), -1;
    if (ch == ':') return usage_error(c, "option '%s' needs a value", name);
    if (ch == '?') {
      char why[512];
      gp_opt_refused(longs, name, why, sizeof why);
      return usage_error(c, "%s", why);
    }
    if (c->check && compare_only(ch)) {
      /* the option's name (last may be its value) */
      for (const struct option *lo = longs; !c->compare_only && lo->name; lo++)
        if (lo->val == ch) c->compare_only = lo->name;
      if (!c->compare_only) c->compare_only = last;
      continue;
    }
    if ((rc = apply(c, ch, optarg))) return rc;
  }
  while (optind < argc)
    add_file(c, argv[optind++]);
  return 0;
}

static int validate(struct cli *c) {
  if (c->check) {
    if (c->compare_only)
      return usage_error(c, "'--%s' is an option of compare, not of check",
                         c->compare_only);
    if (!c->bud.n && c->no_budget_file)
      return usage_error(c,
                         "%s holds no budget (only comments and blank "
                         "lines): nothing to check",
                         c->no_budget_file);
    if (!c->bud.n)
      return usage_error(c, "no budget: give --budget or --budgets");
    if (!c->nf[1]) return usage_error(c, "no trace file given");
    return 0;
  }
  if (!c->side) return usage_error(c, "no --vs: compare BASE... --vs NEW...");
  if (!c->nf[0]) return usage_error(c, "no baseline file before --vs");
  if (!c->nf[1]) return usage_error(c, "no candidate file after --vs");
  return 0;
}

/* Reading the files of both sides at once: each thread takes the next
 * file, reads it, then waits for its turn to add the result to its side,
 * so that the sides, the warnings and the first error are those of
 * reading the files one by one in the order given. */
struct read_task {
  struct cli *c;
  struct gp_cmp_side *s;
  /* per file, both sides, to say when one process is given twice
   * (gp_warn_same_process); NULL: not kept (no memory) */
  struct gp_proc_ident *id;
  struct gp_report_opts ro;
  size_t n;      /* files of both sides: the base's first */
  size_t next;   /* the next file to add */
  size_t failed; /* the first file that could not be added (n: none) */
  char msg[4608]; /* why: a path (PATH_MAX) and the reason */
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

static void read_one(void *ctx, size_t i) {
  struct read_task *t = ctx;
  struct cli *c = t->c;
  int side = i >= c->nf[0];
  const char *path = c->files[side][side ? i - c->nf[0] : i];
  pthread_mutex_lock(&t->mu);
  int skip = t->failed < i; /* a file before it failed: not needed */
  pthread_mutex_unlock(&t->mu);
  char err[4608] = "";
  int st;
  struct gp_proc_res *r =
      skip ? NULL
           : gp_report_file(path, &t->ro, NULL, NULL, &st, err, sizeof err);
  pthread_mutex_lock(&t->mu);
  while (t->next != i)
    pthread_cond_wait(&t->cv, &t->mu);
  if (t->failed == t->n && !r) {
    t->failed = i;
    snprintf(t->msg, sizeof t->msg, "%s", err);
  } else if (t->failed == t->n) {
    if (r->truncated) {
      char clean[400];
      gp_text_clean(path, clean, sizeof clean, 200);
      fprintf(stderr,
              "gpuphase-report: warning: %s is truncated: compared up to "
              "its last complete frame\n",
              clean);
    }
    if (t->id && r->started) {
      char *host = strdup(r->host ? r->host : "");
      if (host)
        t->id[i] = (struct gp_proc_ident){1, r->pid, r->wstart, host, path, side};
    }
    if (gp_cmp_side_add(&t->s[side], r) < 0) {
      t->failed = i;
      snprintf(t->msg, sizeof t->msg, "out of memory");
    }
  }
  t->next++;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  gp_res_free(r);
}

/* Reads the files of both sides (check: the candidate's alone), each
 * result reduced to its run as soon as its turn comes. */
static int read_sides(struct cli *c, struct gp_cmp_side *s) {
  struct read_task t = {.c = c, .s = s};
  t.n = c->nf[0] + c->nf[1];
  t.failed = t.n;
  t.id = t.n > 1 ? calloc(t.n, sizeof *t.id) : NULL;
  t.ro = c->ro;
  int threads = c->threads ? c->threads : gp_par_default();
  /* threads beyond one per file decode each file's frames ahead */
  t.ro.read_threads = (size_t)threads > t.n ? threads / (int)t.n : 1;
  pthread_mutex_init(&t.mu, NULL);
  pthread_cond_init(&t.cv, NULL);
  gp_par_for(t.n, threads, read_one, &t);
  pthread_cond_destroy(&t.cv);
  pthread_mutex_destroy(&t.mu);
  if (t.id) {
    if (t.failed == t.n) gp_warn_same_process(t.id, t.n, "given more than once");
    for (size_t i = 0; i < t.n; i++)
      free((char *)t.id[i].host);
    free(t.id);
  }
  return t.failed < t.n ? input_error(c, t.msg) : 0;
}

typedef int (*writer_fn)(FILE *, const struct gp_cmp_out *);

/* An output (NULL: standard output) that is one of the inputs, the same
 * file by device and inode: refused, before reading and when opening. */
static int refused(struct cli *c, const char *path, const char *in) {
  char msg[4608];
  snprintf(msg, sizeof msg, "refusing to write to %s: it is the input file %s",
           path ? path : "standard output", in);
  return input_error(c, msg);
}

static int refuse_output(struct cli *c, const char *path) {
  const char *in = gp_out_is_input(path, c->inputs, c->ninputs);
  return in ? refused(c, path, in) : 0;
}

/* Writes with fn to path (NULL: standard output), appending if asked. */
static int write_to(struct cli *c, const char *path, const char *mode,
                    writer_fn fn, const struct gp_cmp_out *o) {
  const char *clash = NULL;
  FILE *f =
      path ? gp_out_open(path, mode, c->inputs, c->ninputs, &clash) : stdout;
  if (!f && clash) return refused(c, path, clash);
  if (!f) {
    char msg[4608];
    snprintf(msg, sizeof msg, "%s: cannot write: %m", path);
    return output_error(c, msg);
  }
  int rc = fn(f, o);
  char prefix[32], clean[400];
  snprintf(prefix, sizeof prefix, "gpuphase-report %s",
           c->check ? "check" : "compare");
  gp_text_clean(path ? path : "standard output", clean, sizeof clean, 200);
  /* a writer fails only on a write error, which gp_out_done names (on
   * standard error; the library's caller gets the kind and a line) */
  if (gp_out_done(f, prefix, clean) || rc < 0) {
    if (mode[0] == 'w') gp_out_discard(path); /* not an appended summary */
    if (!c->errcode && c->err) {
      char msg[4608];
      snprintf(msg, sizeof msg, "%s: write error", clean);
      return output_error(c, msg);
    }
    if (!c->errcode) c->errcode = 4;
    return 2;
  }
  return 0;
}

static int emit(struct cli *c, const struct gp_cmp_out *o) {
  writer_fn fn = !strcmp(c->format, "json")       ? gp_cmp_json
                 : !strcmp(c->format, "markdown") ? gp_cmp_markdown
                                                  : gp_cmp_text;
  const char *summary = getenv("GITHUB_STEP_SUMMARY");
  const char *actions = getenv("GITHUB_ACTIONS");
  /* the JUnit file first: when it cannot be written, the exit status is 2
   * and no verdict has been printed that says otherwise */
  int rc = c->junit ? write_to(c, c->junit, "w", gp_cmp_junit, o) : 0;
  if (!rc)
    rc = c->mem && !c->out
             ? (fn(c->mem, o) < 0 ? input_error(c, "out of memory") : 0)
             : write_to(c, c->out, "w", fn, o);
  /* the step summary is a courtesy: failing to write it (the message says
   * why) must not hide the verdict */
  if (!rc && fn == gp_cmp_markdown && summary && *summary)
    write_to(c, summary, "a", gp_cmp_markdown, o);
  if (!rc && actions && !strcmp(actions, "true")) gp_cmp_annotations(stderr, o);
  return rc;
}

static int run(struct cli *c) {
  struct gp_cmp_side s[2] = {{0}};
  struct gp_cmp_result res;
  int rc = refuse_output(c, c->out);
  if (!rc && c->junit) rc = refuse_output(c, c->junit);
  if (rc) return rc;
  rc = read_sides(c, s);
  c->o.budgets = &c->bud;
  if (!rc && gp_cmp_judge(c->check ? NULL : &s[0], &s[1], &c->o, &res) < 0)
    rc = input_error(c, "out of memory");
  else if (!rc) {
    struct gp_cmp_out o = {c->check ? NULL : &s[0], &s[1], &res, &c->o, c->top};
    rc = emit(c, &o);
    if (!rc) rc = res.exit_code;
    gp_cmp_result_free(&res);
  }
  gp_cmp_side_free(&s[0]);
  gp_cmp_side_free(&s[1]);
  return rc;
}

static int command(int argc, char **argv, int check, FILE *mem, char *err,
                   size_t errlen, int *errcode) {
  struct cli c = {.check = check, .format = "text", .side = check,
                  .mem = mem, .err = err, .errlen = errlen};
  gp_cmp_opts_init(&c.o);
  c.ro.warmup = -1;
  c.ro.step_detail = 1;
  c.files[0] = calloc((size_t)argc + 1, sizeof *c.files[0]);
  c.files[1] = calloc((size_t)argc + 1, sizeof *c.files[1]);
  c.inputs = calloc((size_t)argc + 1, sizeof *c.inputs);
  int rc = c.files[0] && c.files[1] && c.inputs
               ? 0
               : input_error(&c, "out of memory");
  if (!rc) rc = parse(&c, argc, argv);
  c.o.step = c.ro.step;
  c.o.warmup = c.ro.warmup;
  if (!rc) rc = validate(&c);
  if (!rc) rc = run(&c);
  gp_budgets_free(&c.bud);
  free(c.files[0]);
  free(c.files[1]);
  free(c.inputs);
  if (errcode) *errcode = c.errcode;
  return rc < 0 ? 0 : rc;
}

int gp_cmd_compare(int argc, char **argv) {
  return command(argc, argv, 0, NULL, NULL, 0, NULL);
}

int gp_cmd_check(int argc, char **argv) {
  return command(argc, argv, 1, NULL, NULL, 0, NULL);
}

int gp_compare_mem(int argc, char **argv, int check, FILE *out, char *err,
                   size_t errlen, int *errcode) {
  if (err && errlen) err[0] = 0;
  return command(argc, argv, check, out, err, errlen, errcode);
}
