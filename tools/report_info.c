/* gpuphase-report info FILE... and gpuphase-report dump FILE.
 *
 * info states the facts of each file (who wrote it, on which devices, how
 * many records of each kind, whether it is complete) without analysing
 * anything; dump lists the records as `kind field=value ...`, strings
 * resolved, for debugging and for scripts. */
#include "report_info.h"
#include "report.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "gpuphase/trace.h"
#include "reader_ext.h"

#define MAX_DEVICES 64

static const char info_usage[] =
    "Usage: gpuphase-report info FILE...\n"
    "\n"
    "For each trace file: format and gpuphase version, host, process, rank,\n"
    "command line, run id and items per step (when recorded), start time\n"
    "(UTC), clock, devices, records by kind, events and lost events,\n"
    "degraded recording, completeness, and the first and last timestamps.\n"
    "\n"
    "exit status: 0 all files read, 1 a file is missing, not a trace, too\n"
    "new or corrupt, 2 usage error. A truncated file is reported, with a\n"
    "warning, and is not an error.\n";

static const char dump_usage[] =
    "Usage: gpuphase-report dump [--sorted] FILE\n"
    "\n"
    "Prints every record of FILE, one per line: `kind field=value ...`.\n"
    "Fields holding string ids (name, reason, domain) are printed resolved\n"
    "as name=\"...\"; non-printable bytes are escaped as \\xHH.\n"
    "\n"
    "options:\n"
    "  --sorted    records in time order (metadata first) instead of file\n"
    "              order\n"
    "  -h, --help  this help\n"
    "\n"
    "exit status: 0 read to the end (a truncated file gives a warning), 1 the\n"
    "file is missing, not a trace, too new or corrupt (records before the\n"
    "damage are printed), 2 usage error.\n";

/* --- output files, for every subcommand */

static int same_inode(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* "-" is standard input where merge reads it, and a file of that name
 * where a trace is read: either one counts */
static const char *input_of(const struct stat *o, char *const *in, size_t n) {
  struct stat st;
  for (size_t i = 0; i < n; i++)
    if (in[i] && ((!stat(in[i], &st) && same_inode(&st, o)) ||
                  (!strcmp(in[i], "-") && !fstat(STDIN_FILENO, &st) &&
                   same_inode(&st, o))))
      return in[i];
  return NULL;
}

/* Only a regular file can be a trace or a budget file that an output
 * would destroy (/dev/null may well be both). */
const char *gp_out_is_input(const char *path, char *const *inputs, size_t n) {
  struct stat o;
  if (path ? stat(path, &o) : fstat(STDOUT_FILENO, &o)) return NULL;
  return S_ISREG(o.st_mode) ? input_of(&o, inputs, n) : NULL;
}

FILE *gp_out_open(const char *path, const char *mode, char *const *inputs,
                  size_t n, const char **clash) {
  int append = mode[0] == 'a';
  *clash = NULL;
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : 0),
                0666);
  if (fd < 0) return NULL;
  struct stat o;
  int e = fstat(fd, &o) ? errno : 0;
  if (!e && S_ISREG(o.st_mode) && (*clash = input_of(&o, inputs, n)))
    e = EEXIST;
  else if (!e && !append && S_ISREG(o.st_mode) && ftruncate(fd, 0))
    e = errno;
  FILE *f = e ? NULL : fdopen(fd, mode);
  if (!f) {
    e = e ? e : errno;
    close(fd);
    errno = e;
  }
  return f;
}

/* why the last failed gp_put failed, and on which stream */
static int put_errno;
static const FILE *put_file;

void gp_put(const char *s, FILE *f) {
  errno = 0;
  if (fputs(s, f) == EOF && errno) put_errno = errno, put_file = f;
}

int gp_out_done(FILE *f, const char *prefix, const char *name) {
  int bad = ferror(f), e = 0, put = f == put_file;
  errno = 0;
  if (fflush(f)) bad = 1, e = errno;
  if (f != stdout && fclose(f) && !bad) bad = 1, e = errno;
  if (!bad) return 0;
  if (!e && put) e = put_errno;
  fprintf(stderr, "%s: %s: write error: %s\n", prefix, name,
          e ? strerror(e) : "output lost");
  return -1;
}

void gp_out_discard(const char *path) {
  struct stat st;
  if (path && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) unlink(path);
}

/* An output that is one of the inputs is refused before anything is
 * read: exit status 2, as for a usage error. */
static int refuse_stdout(const char *cmd, char *const *inputs, size_t n) {
  const char *in = gp_out_is_input(NULL, inputs, n);
  if (!in) return 0;
  fprintf(stderr,
          "gpuphase-report %s: refusing to write to standard output: it is "
          "the input file %s\n",
          cmd, in);
  return 2;
}

static int stdout_done(const char *cmd) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "gpuphase-report %s", cmd);
  return gp_out_done(stdout, prefix, "standard output");
}

/* --- info and dump */

static int usage_error(const char *cmd, const char *what, const char *arg) {
  fprintf(stderr, "gpuphase-report %s: %s%s%s (see gpuphase-report %s --help)\n",
          cmd, what, arg ? " " : "", arg ? arg : "", cmd);
  return 2;
}

/* One line naming the file and why it cannot be read. */
/* A file name on one clean line (a newline or an escape sequence in it
 * would break the line or reach the terminal). */
static const char *clean_name(const char *path, char *buf, size_t n) {
  gp_text_clean(path, buf, n, n - 1);
  return buf;
}

static void open_error(const char *cmd, const char *path, int err,
                       const char *msg) {
  char cp[4608];
  path = clean_name(path, cp, sizeof cp);
  const char *what = "";
  if (err == GPUPHASE_E_IO)
    what = "cannot open: ";
  else if (err == GPUPHASE_E_VERSION)
    what = "written by a newer gpuphase: ";
  else if (err == GPUPHASE_E_NOMEM)
    what = "cannot read: ";
  fprintf(stderr, "gpuphase-report %s: %s: %s%s\n", cmd, path, what,
          msg[0] ? msg : gpuphase_strerror(err));
}

static void read_error(const char *cmd, const char *path, gpuphase_reader *r,
                       int rc) {
  char cp[4608];
  path = clean_name(path, cp, sizeof cp);
  const char *m = gpuphase_reader_errmsg(r);
  if (rc == GPUPHASE_E_CORRUPT)
    fprintf(stderr, "gpuphase-report %s: %s: corrupt %s%s\n", cmd, path,
            strncmp(m, "frame at", 8) ? "trace: " : "", m);
  else if (strncmp(m, gpuphase_strerror(rc), strlen(gpuphase_strerror(rc))))
    fprintf(stderr, "gpuphase-report %s: %s: %s: %s\n", cmd, path,
            gpuphase_strerror(rc), m);
  else /* the message says it already ("out of memory: the trace's...") */
    fprintf(stderr, "gpuphase-report %s: %s: %s\n", cmd, path, m);
}

static void truncated_warning(const char *cmd, const char *path) {
  char cp[4608];
  path = clean_name(path, cp, sizeof cp);
  fprintf(stderr,
          "gpuphase-report %s: %s: warning: truncated trace (cut inside a "
          "frame); read up to the last whole frame\n",
          cmd, path);
}

static gpuphase_reader *open_trace(const char *cmd, const char *path,
                                   int mode) {
  int err = 0;
  char msg[256] = "";
  gpuphase_reader *r = gp_reader_open_ex(path, mode, &err, msg, sizeof msg);
  if (!r) open_error(cmd, path, err, msg);
  return r;
}

static void put_escaped(FILE *out, const char *s, uint64_t len) {
  putc('"', out);
  for (uint64_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", out);
    else if (c == '\t')
      fputs("\\t", out);
    else if (c < 0x20 || c > 0x7e)
      fprintf(out, "\\x%02x", c);
    else
      putc(c, out);
  }
  putc('"', out);
}

static int is_string_field(const char *name) {
  return !strcmp(name, "name") || !strcmp(name, "reason") ||
         !strcmp(name, "domain");
}

struct dump_ctx {
  FILE *out;
  const gpuphase_reader *r;
};

static void dump_field(void *ctx, const char *name, char coding, uint64_t v,
                       const gpuphase_blob *b) {
  struct dump_ctx *d = ctx;
  fprintf(d->out, " %s=", name);
  gpuphase_blob s;
  if (coding == 'B')
    put_escaped(d->out, b->data, b->len);
  else if (coding == 'S')
    fprintf(d->out, "%" PRId64, (int64_t)v);
  else if (!is_string_field(name))
    fprintf(d->out, "%" PRIu64, v);
  else if (v == 0)
    fputs("\"\"", d->out);
  else if (gp_reader_string_blob(d->r, v, &s))
    put_escaped(d->out, s.data, s.len);
  else
    fprintf(d->out, "#%" PRIu64, v); /* an id never defined */
}

int gp_cmd_dump(int argc, char **argv) {
  const char *cmd = argv[0], *path = NULL;
  int mode = GP_OPEN_FILE_ORDER, opts = 1;
  for (int i = 1; i < argc; i++) {
    if (opts && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
      gp_put(dump_usage, stdout);
      return 0;
    }
    if (opts && !strcmp(argv[i], "--"))
      opts = 0;
    else if (opts && !strcmp(argv[i], "--sorted"))
      mode = GP_OPEN_SORTED;
    else if (opts && argv[i][0] == '-' && argv[i][1])
      return usage_error(cmd, "unknown option", argv[i]);
    else if (path)
      return usage_error(cmd, "takes one FILE; extra argument", argv[i]);
    else
      path = argv[i];
  }
  if (!path) return usage_error(cmd, "missing FILE", NULL);
  char *in[1] = {(char *)path};
  if (refuse_stdout(cmd, in, 1)) return 2;
  gpuphase_reader *r = open_trace(cmd, path, mode);
  if (!r) return 1;
  struct dump_ctx d = {stdout, r};
  struct gpuphase_record rec;
  int rc = 0;
  /* a failed write ends the dump: the rest would be lost too */
  while (!ferror(stdout) && (rc = gpuphase_reader_next(r, &rec)) == 1) {
    fputs(gpuphase_kind_name(rec.kind), stdout);
    gp_record_fields(&rec, dump_field, &d);
    putc('\n', stdout);
  }
  int bad = stdout_done(cmd);
  if (rc < 0)
    read_error(cmd, path, r, rc);
  else if (!bad && gpuphase_reader_truncated(r))
    truncated_warning(cmd, path);
  gpuphase_reader_close(r);
  return rc < 0 || bad;
}

struct facts {
  uint64_t count[GPUPHASE_REC_MAX];
  uint64_t events, lost;
  uint64_t unwritten; /* LOST records of source 2: the file's writes failed */
  uint64_t first, last;
  int timed;
  int degraded;
  uint64_t reason; /* of the first STATE that degraded recording */
  struct gpuphase_device dev[MAX_DEVICES];
  unsigned ndev, more_dev;
};

static void observe_time(struct facts *f, const struct gpuphase_record *rec) {
  int timed;
  uint64_t t = gp_record_start(rec, &timed);
  if (!timed) return;
  uint64_t last = t;
  const struct gp_kind_desc *k = gp_kind_desc(rec->kind);
  for (unsigned i = 0; k->nends && i < k->nfields; i++) {
    uint64_t end;
    memcpy(&end, (const char *)&rec->u + k->fields[i].offset, 8);
    if (k->fields[i].coding == 'E' && end > last) last = end;
  }
  if (!f->timed || t < f->first) f->first = t;
  if (!f->timed || last > f->last) f->last = last;
  f->timed = 1;
}

static void observe(struct facts *f, const struct gpuphase_record *rec) {
  if (rec->kind < GPUPHASE_REC_MAX) f->count[rec->kind]++;
  if (rec->kind != GPUPHASE_REC_STRING && rec->kind != GPUPHASE_REC_SUMMARY)
    f->events++;
  if (rec->kind == GPUPHASE_REC_LOST) f->lost += rec->u.lost.count;
  if (rec->kind == GPUPHASE_REC_LOST && rec->u.lost.source == 2)
    f->unwritten += rec->u.lost.count;
  if (rec->kind == GPUPHASE_REC_STATE && rec->u.state.state == 1 &&
      !f->degraded) {
    f->degraded = 1;
    f->reason = rec->u.state.reason;
  }
  if (rec->kind == GPUPHASE_REC_DEVICE) {
    if (f->ndev < MAX_DEVICES)
      f->dev[f->ndev++] = rec->u.device;
    else
      f->more_dev++;
  }
  observe_time(f, rec);
}

static void print_duration(const char *label, uint64_t ns, int sign) {
  printf("%-14s%s%" PRIu64 ".%09" PRIu64 " s", label, sign ? "+" : "",
         ns / 1000000000u, ns % 1000000000u);
}

static void print_start(const struct gpuphase_header *h) {
  time_t sec = (time_t)(h->start_real_ns / 1000000000u);
  struct tm tm;
  char buf[64] = "?";
  if (gmtime_r(&sec, &tm)) strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  printf("%-14s%s.%03" PRIu64 "Z\n", "started:", buf,
         h->start_real_ns % 1000000000u / 1000000u);
}

/* A header string as a terminal may show it: control characters (C0, DEL
 * and C1, which UTF-8 writes C2 80..9F) as '?'; a command line can hold
 * anything, escape sequences included. */
static const char *shown(const char *s, char *buf, size_t n) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t o = 0;
  for (; *p && o + 1 < n; p++) {
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
      buf[o++] = '?';
      p++;
    } else
      buf[o++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
  }
  buf[o] = 0;
  return buf;
}

static void print_identity(const char *path, const gpuphase_reader *r) {
  const struct gpuphase_header *h = gpuphase_reader_header(r);
  char b[4096];
  printf("%-14s%s (%" PRIu64 " bytes)\n", "file:", shown(path, b, sizeof b),
         gpuphase_reader_file_size(r));
  printf("%-14sversion %u (readable by readers >= %u), written by gpuphase "
         "%s\n",
         "format:", h->version, h->min_reader,
         shown(h->version_str, b, sizeof b));
  printf("%-14s%s\n", "host:", shown(h->host, b, sizeof b));
  printf("%-14spid %" PRId64 ", ppid %" PRId64 "\n", "process:", h->pid,
         h->ppid);
  printf("%-14s", "rank:");
  if (h->rank < 0)
    printf("unknown");
  else
    printf("%" PRId64, h->rank);
  if (h->local_rank < 0)
    printf(" (local rank unknown)\n");
  else
    printf(" (local rank %" PRId64 ")\n", h->local_rank);
  printf("%-14s%s\n", "command:", shown(h->cmdline, b, sizeof b));
  /* version 2 header fields; a version-1 file has neither */
  if (h->run_id && *h->run_id)
    printf("%-14s%s\n", "run id:", shown(h->run_id, b, sizeof b));
  if (h->step_items)
    printf("%-14s%" PRIu64 " per step (GPUPHASE_STEP_ITEMS)\n",
           "step items:", h->step_items);
  print_start(h);
  printf("%-14s%s\n", "clock:", shown(h->clock, b, sizeof b));
}

static void print_devices(const gpuphase_reader *r, const struct facts *f) {
  printf("%-14s%u\n", "devices:", f->ndev + f->more_dev);
  for (unsigned i = 0; i < f->ndev; i++) {
    const struct gpuphase_device *d = &f->dev[i];
    char b[512];
    const char *name = gpuphase_reader_string(r, d->name);
    if (name) name = shown(name, b, sizeof b);
    printf("  device %" PRIu64 ": %s, %" PRIu64 " SMs, %.1f GiB, compute "
           "capability %" PRIu64 ".%" PRIu64 "\n",
           d->device, name && *name ? name : "(unnamed)", d->sms,
           (double)d->mem_total / (1024.0 * 1024.0 * 1024.0), d->cc_major,
           d->cc_minor);
  }
  if (f->more_dev) printf("  (%u more not listed)\n", f->more_dev);
}

static void print_counts(const struct facts *f) {
  uint64_t total = 0;
  for (uint32_t k = 0; k < GPUPHASE_REC_MAX; k++)
    total += f->count[k];
  printf("%-14s%" PRIu64, "records:", total);
  const char *sep = " (";
  for (uint32_t k = 0; k < GPUPHASE_REC_MAX; k++) {
    if (!f->count[k]) continue;
    printf("%s%s %" PRIu64, sep, gpuphase_kind_name(k), f->count[k]);
    sep = ", ";
  }
  printf("%s\n", total ? ")" : "");
}

static void print_events(const gpuphase_reader *r, const struct facts *f) {
  struct gpuphase_summary s;
  int have = gpuphase_reader_summary(r, &s);
  printf("%-14s%" PRIu64, "events:", f->events);
  if (have) printf(" (summary: %" PRIu64 ")", s.events);
  printf("\n%-14s%" PRIu64 " in LOST records", "lost events:", f->lost);
  if (have) printf(" (summary: %" PRIu64 ")", s.lost);
  if (f->unwritten)
    printf("; %" PRIu64 " not written: the trace file's writes failed",
           f->unwritten);
  const struct gpuphase_header *h = gpuphase_reader_header(r);
  const char *why = NULL;
  if (f->degraded)
    why = gpuphase_reader_string(r, f->reason);
  else if (have && (s.flags & GPUPHASE_FLAG_DEGRADED))
    why = "flagged in the summary";
  else if (h->flags & GPUPHASE_FLAG_DEGRADED)
    why = "flagged in the header";
  if (!why)
    printf("\n%-14sno\n", "degraded:");
  else
    printf("\n%-14syes (%s)\n", "degraded:", *why ? why : "no reason given");
}

static void print_status(const gpuphase_reader *r, int rc) {
  printf("%-14s", "status:");
  if (rc < 0)
    printf("corrupt (%s)\n", gpuphase_reader_errmsg(r));
  else if (gpuphase_reader_truncated(r))
    printf("truncated (cut inside a frame; read up to the last whole "
           "frame)\n");
  else if (!gpuphase_reader_summary(r, NULL))
    printf("no summary (the process did not finish writing: crash or "
           "kill)\n");
  else
    printf("complete\n");
}

static void print_times(const gpuphase_reader *r, const struct facts *f) {
  if (!f->timed) {
    printf("%-14snone\n", "first event:");
    return;
  }
  uint64_t t0 = gpuphase_reader_header(r)->start_mono_ns;
  const char *labels[2] = {"first event:", "last event:"};
  uint64_t t[2] = {f->first, f->last};
  for (int i = 0; i < 2; i++) {
    if (t[i] >= t0)
      print_duration(labels[i], t[i] - t0, 1);
    else
      printf("%-14s-%" PRIu64 ".%09" PRIu64 " s", labels[i],
             (t0 - t[i]) / 1000000000u, (t0 - t[i]) % 1000000000u);
    printf(" after start (monotonic %" PRIu64 " ns)\n", t[i]);
  }
  print_duration("span:", f->last - f->first, 0);
  printf("\n");
}

/* Reads one file and prints its facts: 0, 1 if it cannot be read, or -1
 * when standard output cannot be written (said on stderr). */
static int info_one(const char *cmd, const char *path) {
  gpuphase_reader *r = open_trace(cmd, path, GP_OPEN_FILE_ORDER);
  if (!r) return 1;
  static struct facts f;
  memset(&f, 0, sizeof f);
  struct gpuphase_record rec;
  int rc;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1)
    observe(&f, &rec);
  print_identity(path, r);
  print_devices(r, &f);
  print_status(r, rc);
  print_counts(&f);
  print_events(r, &f);
  print_times(r, &f);
  if (stdout_done(cmd)) {
    gpuphase_reader_close(r);
    return -1;
  }
  if (rc < 0)
    read_error(cmd, path, r, rc);
  else if (gpuphase_reader_truncated(r))
    truncated_warning(cmd, path);
  gpuphase_reader_close(r);
  return rc < 0;
}

int gp_cmd_info(int argc, char **argv) {
  const char *cmd = argv[0];
  int files = 0, status = 0, opts = 1;
  for (int i = 1; i < argc; i++) {
    if (opts && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
      gp_put(info_usage, stdout);
      return 0;
    }
    if (opts && !strcmp(argv[i], "--"))
      opts = 0;
    else if (opts && argv[i][0] == '-' && argv[i][1])
      return usage_error(cmd, "unknown option", argv[i]);
    else
      files++;
  }
  if (!files) return usage_error(cmd, "missing FILE", NULL);
  if (refuse_stdout(cmd, argv + 1, (size_t)argc - 1)) return 2;
  opts = 1;
  for (int i = 1, n = 0; i < argc; i++) {
    if (opts && !strcmp(argv[i], "--")) {
      opts = 0;
      continue;
    }
    if (n++) printf("\n");
    int rc = info_one(cmd, argv[i]);
    if (rc < 0) return 1;
    status |= rc;
  }
  return status;
}

/* ---- one process given twice ---- */

static const char *host_of(const struct gp_proc_ident *p) {
  return p->host ? p->host : "";
}

/* by process (the inputs that never called CUDA first), then input order */
static int ident_cmp(const void *x, const void *y) {
  const struct gp_proc_ident *a = *(const struct gp_proc_ident *const *)x,
                             *b = *(const struct gp_proc_ident *const *)y;
  if (a->started != b->started) return a->started ? 1 : -1;
  int c = strcmp(host_of(a), host_of(b));
  if (c) return c;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->wstart != b->wstart) return a->wstart < b->wstart ? -1 : 1;
  return a < b ? -1 : a > b;
}

void gp_warn_same_process(const struct gp_proc_ident *v, size_t n,
                          const char *twice) {
  if (n < 2) return;
  const struct gp_proc_ident **k = malloc(n * sizeof *k);
  size_t *first = malloc(n * sizeof *first); /* per input; n: none */
  if (!k || !first) {
    free(k);
    free(first);
    return;
  }
  for (size_t i = 0; i < n; i++)
    k[i] = &v[i], first[i] = n;
  qsort(k, n, sizeof *k, ident_cmp);
  for (size_t i = 1, f = 0; i < n; i++) {
    const struct gp_proc_ident *a = k[f], *b = k[i];
    if (!b->started || !a->started || a->pid != b->pid ||
        a->wstart != b->wstart || strcmp(host_of(a), host_of(b))) {
      f = i;
      continue;
    }
    first[b - v] = (size_t)(a - v);
  }
  for (size_t i = 0; i < n; i++) {
    if (first[i] == n) continue;
    const struct gp_proc_ident *a = &v[first[i]], *b = &v[i];
    const char *what = a->side != b->side
                           ? "the baseline and the candidate share it, so "
                             "that run is compared with itself"
                           : "its process is counted each time";
    char ca[4608], cb[4608];
    gp_text_clean(a->file ? a->file : "?", ca, sizeof ca, sizeof ca - 1);
    gp_text_clean(b->file ? b->file : "?", cb, sizeof cb, sizeof cb - 1);
    if (!strcmp(ca, cb))
      fprintf(stderr, "gpuphase-report: warning: %s is %s: %s\n", cb, twice,
              what);
    else
      fprintf(stderr,
              "gpuphase-report: warning: %s holds the same process as %s "
              "(pid %lld, first CUDA call at the same instant): %s\n",
              cb, ca, (long long)b->pid, what);
  }
  free(k);
  free(first);
}

void gp_warn_same_procs(struct gp_proc_res *const *procs, size_t n,
                        const char *twice) {
  struct gp_proc_ident *v = n > 1 ? malloc(n * sizeof *v) : NULL;
  if (!v) return;
  for (size_t i = 0; i < n; i++)
    v[i] = (struct gp_proc_ident){procs[i]->started, procs[i]->pid,
                                  procs[i]->wstart, procs[i]->host,
                                  procs[i]->file, 0};
  gp_warn_same_process(v, n, twice);
  free(v);
}
