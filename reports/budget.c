/* Metric names and budgets: see budget.h and docs/compare.md. */
#include "budget.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fixed {
  const char *key, *doc;
  enum gp_mkind kind;
  int higher_better;
};

static const struct fixed fixed[] = {
#define GP_X(U, k, kind, hb, d) {#k, d, GP_MK_##kind, hb},
    GP_FIXED_METRICS(GP_X)
#undef GP_X
};

/* The counter table's own names and words (report.h), expanded here so
 * that this file needs nothing of the engine. */
#define GP_X(k, d) #k,
static const char *const sc_key[GP_SC_N] = {GP_STEP_COUNTERS(GP_X)};
#undef GP_X
#define GP_X(k, d) d,
static const char *const sc_doc[GP_SC_N] = {GP_STEP_COUNTERS(GP_X)};
#undef GP_X

static const char *const cat_doc[GP_CAT_N] = {
    "kernel time per step (% of the step, or a duration)",
    "transfer time per step", "launch-bound time per step",
    "sync idle time per step",
    "host wait per step: the GPU waits for the host"};

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

const char *gp_metric_name(int m) {
  if (m < 0 || m >= GP_M_N) return "?";
  if (m < GP_M_CAT0) return fixed[m].key;
  if (m < GP_M_SC0) return gp_cat_key[m - GP_M_CAT0];
  return sc_key[m - GP_M_SC0];
}

const char *gp_metric_doc(int m) {
  if (m < 0 || m >= GP_M_N) return "?";
  if (m < GP_M_CAT0) return fixed[m].doc;
  if (m < GP_M_SC0) return cat_doc[m - GP_M_CAT0];
  return sc_doc[m - GP_M_SC0];
}

enum gp_mkind gp_metric_kind(int m) {
  if (m < GP_M_CAT0) return fixed[m].kind;
  if (m < GP_M_SC0) return GP_MK_CAT;
  const char *k = sc_key[m - GP_M_SC0];
  return ends_with(k, "_ns")      ? GP_MK_DUR
         : ends_with(k, "_bytes") ? GP_MK_BYTES
                                  : GP_MK_COUNT;
}

int gp_metric_higher_better(int m) {
  if (m < GP_M_CAT0) return fixed[m].higher_better;
  return m == GP_M_SC0 + GP_SC_items;
}

int gp_counter_exact(int sc) {
  return sc >= 0 && sc < GP_SC_N && !ends_with(sc_key[sc], "_ns");
}

int gp_metric_find(const char *s, size_t len) {
  if (len == 9 && !strncmp(s, "step_time", 9)) return GP_M_STEP_MEDIAN;
  for (int m = 0; m < GP_M_N; m++) {
    const char *k = gp_metric_name(m);
    if (strlen(k) == len && !strncmp(k, s, len)) return m;
  }
  return -1;
}

const char *gp_metric_list(void) {
  static char buf[1024];
  if (*buf) return buf;
  size_t o = 0;
  for (int m = 0; m < GP_M_N && o < sizeof buf; m++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", m ? ", " : "",
                          gp_metric_name(m));
  return buf;
}

static int fail(char *err, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

struct unit {
  const char *name;
  double scale;
  enum gp_mkind kind; /* DUR, BYTES or PCT */
};

static const struct unit units[] = {
    {"ns", 1, GP_MK_DUR},
    {"us", 1e3, GP_MK_DUR},
    {"ms", 1e6, GP_MK_DUR},
    {"s", 1e9, GP_MK_DUR},
    {"B", 1, GP_MK_BYTES},
    {"KiB", 1024.0, GP_MK_BYTES},
    {"MiB", 1048576.0, GP_MK_BYTES},
    {"GiB", 1073741824.0, GP_MK_BYTES},
    {"TiB", 1099511627776.0, GP_MK_BYTES},
    {"KB", 1e3, GP_MK_BYTES},
    {"MB", 1e6, GP_MK_BYTES},
    {"GB", 1e9, GP_MK_BYTES},
    {"TB", 1e12, GP_MK_BYTES},
    {"%", 1, GP_MK_PCT},
};

static const char *kind_units(enum gp_mkind k) {
  switch (k) {
  case GP_MK_DUR:
    return "a duration (ns, us, ms, s)";
  case GP_MK_PCT:
    return "a percentage (%)";
  case GP_MK_BYTES:
    return "a size (B, KiB, MiB, GiB, KB, MB, GB)";
  case GP_MK_CAT:
    return "a percentage of the step (%) or a duration";
  case GP_MK_MEM:
    return "a size or a percentage of the device's memory";
  case GP_MK_COUNT:
    return "a plain number";
  case GP_MK_RATE:
    return "a plain number (per second)";
  }
  return "?";
}

/* Whether a unit of kind u (or none: u < 0) suits a metric of kind k. */
static int unit_fits(enum gp_mkind k, int u) {
  switch (k) {
  case GP_MK_DUR:
    return u == GP_MK_DUR;
  case GP_MK_PCT:
    return u == GP_MK_PCT;
  case GP_MK_BYTES:
    return u < 0 || u == GP_MK_BYTES;
  case GP_MK_CAT:
    return u == GP_MK_PCT || u == GP_MK_DUR;
  case GP_MK_MEM:
    return u < 0 || u == GP_MK_BYTES || u == GP_MK_PCT;
  case GP_MK_COUNT:
  case GP_MK_RATE:
    return u < 0;
  }
  return 0;
}

int gp_parse_quantity(const char *s, enum gp_mkind k, double *v, int *pct,
                      char *err, size_t n) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  /* decimal only: strtod also takes "0x10" (hexadecimal) */
  int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (end == s || errno || !isfinite(x) || hex ||
      !(isdigit((unsigned char)*s) || *s == '.'))
    return fail(err, n, "'%s' is not a number with a unit", s);
  while (isspace((unsigned char)*end))
    end++;
  int u = -1;
  double scale = 1;
  if (*end) {
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
      if (!strcmp(end, units[i].name))
        u = (int)units[i].kind, scale = units[i].scale;
    if (u < 0) return fail(err, n, "unknown unit '%s' in '%s'", end, s);
  }
  if (!unit_fits(k, u))
    return fail(err, n, "'%s': expected %s", s, kind_units(k));
  if (u == GP_MK_PCT && x > 100)
    return fail(err, n, "'%s': a share cannot exceed 100%%", s);
  /* past 1e18 (ns: 31 years; bytes: 909,000 TiB) no run measures anything, and
   * the integer conversions of the verdict would overflow (a minimum delta
   * of 1e20 s was said to be "0 ns") */
  if (x * scale > 1e18)
    return fail(err, n, "'%s' is too large", s);
  *v = x * scale;
  *pct = u == GP_MK_PCT;
  return 0;
}

static const char *const op_str[] = {"<=", "<", ">=", ">", "==", "!="};

const char *gp_op_str(enum gp_op op) {
  return op_str[op];
}

/* The operator at s: its length (0: none). */
static size_t parse_op(const char *s, enum gp_op *op) {
  for (int i = 0; i < 6; i++) {
    size_t l = strlen(op_str[i]);
    if (!strncmp(s, op_str[i], l)) {
      *op = (enum gp_op)i;
      return l;
    }
  }
  return 0;
}

static void squeeze(const char *s, char *out, size_t n) {
  size_t o = 0;
  for (; *s && o + 1 < n; s++)
    if (!isspace((unsigned char)*s)) out[o++] = *s;
  out[o] = 0;
}

static int parse_expr(const char *expr, struct gp_budget *b, char *err,
                      size_t n) {
  const char *p = expr, *name;
  while (isspace((unsigned char)*p))
    p++;
  for (name = p; isalnum((unsigned char)*p) || *p == '_'; p++)
    ;
  size_t len = (size_t)(p - name);
  if (!len)
    return fail(err, n, "expected METRIC OP VALUE, e.g. 'host_wait<=20%%'");
  if ((b->metric = gp_metric_find(name, len)) < 0)
    return fail(err, n, "unknown metric '%.*s' (known: %s)",
                (int)(len > 40 ? 40 : len), name, gp_metric_list());
  while (isspace((unsigned char)*p))
    p++;
  size_t ol = parse_op(p, &b->op);
  if (!ol)
    return fail(err, n, "expected one of <= < >= > == != after '%s'",
                gp_metric_name(b->metric));
  for (p += ol; isspace((unsigned char)*p);)
    p++;
  char val[64];
  size_t vl = strlen(p);
  while (vl && isspace((unsigned char)p[vl - 1]))
    vl--;
  if (!vl || vl >= sizeof val)
    return fail(err, n, "expected a value after '%s'", op_str[b->op]);
  memcpy(val, p, vl);
  val[vl] = 0;
  char why[160];
  if (gp_parse_quantity(val, gp_metric_kind(b->metric), &b->value, &b->pct, why,
                        sizeof why) < 0)
    return fail(err, n, "%s: %s", gp_metric_name(b->metric), why);
  if (b->metric == GP_M_LOST_EVENTS && b->value != floor(b->value))
    return fail(err, n, "lost_events: '%s' is not a whole number of events",
                val);
  squeeze(expr, b->text, sizeof b->text);
  return 0;
}

int gp_budgets_add(struct gp_budgets *bs, const char *expr, const char *where,
                   char *err, size_t n) {
  struct gp_budget b = {0};
  char why[1200];
  if (parse_expr(expr, &b, why, sizeof why) < 0)
    return fail(err, n, "%s: %s", where, why);
  snprintf(b.where, sizeof b.where, "%s", where);
  struct gp_budget *v = realloc(bs->v, (bs->n + 1) * sizeof *v);
  if (!v) return fail(err, n, "%s: out of memory", where);
  bs->v = v;
  bs->v[bs->n++] = b;
  return 0;
}

/* One line of a budgets file: comment and blanks stripped. */
static int load_line(struct gp_budgets *bs, char *line, const char *path,
                     unsigned long no, char *err, size_t n) {
  char *hash = strchr(line, '#');
  if (hash) *hash = 0;
  char *p = line;
  while (isspace((unsigned char)*p))
    p++;
  if (!*p) return 0;
  char where[80];
  snprintf(where, sizeof where, "%.60s:%lu", path, no);
  return gp_budgets_add(bs, p, where, err, n);
}

/* A budgets file is a few lines: more than this is not one (/dev/zero, a
 * trace given by mistake). */
#define BUDGETS_MAX_BYTES (1u << 20)
#define BUDGET_LINE_MAX 4096

int gp_budgets_load(struct gp_budgets *bs, const char *path, char *err,
                    size_t n) {
  /* O_NONBLOCK for the open only: a FIFO without a writer would block it
   * for ever (one with a writer, e.g. <(...), is read as it comes) */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0) return fail(err, n, "%s: %s", path, strerror(errno));
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return fail(err, n, "%s: %s", path, strerror(EISDIR));
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  /* read whole, up to the limit: its size is no guide (a pipe, a device) */
  char *buf = malloc(BUDGETS_MAX_BYTES + 1);
  if (!buf) {
    close(fd);
    return fail(err, n, "%s: out of memory", path);
  }
  size_t len = 0;
  int e = 0;
  while (len <= BUDGETS_MAX_BYTES) {
    ssize_t k = read(fd, buf + len, BUDGETS_MAX_BYTES + 1 - len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) e = errno;
    if (k <= 0) break;
    len += (size_t)k;
  }
  close(fd);
  int rc = 0;
  if (e)
    rc = fail(err, n, "%s: %s", path, strerror(e));
  else if (len > BUDGETS_MAX_BYTES)
    rc = fail(err, n, "%s: larger than %u bytes: not a budgets file", path,
              BUDGETS_MAX_BYTES);
  else if (memchr(buf, 0, len))
    rc = fail(err, n, "%s: a NUL byte: not a budgets file", path);
  char line[BUDGET_LINE_MAX + 1];
  unsigned long no = 0;
  for (size_t at = 0; !rc && at < len;) {
    const char *nl = memchr(buf + at, '\n', len - at);
    size_t l = (nl ? (size_t)(nl - buf) : len) - at;
    no++;
    if (l > BUDGET_LINE_MAX) {
      rc = fail(err, n, "%s:%lu: line longer than %u bytes", path, no,
                BUDGET_LINE_MAX);
      break;
    }
    memcpy(line, buf + at, l);
    line[l] = 0;
    rc = load_line(bs, line, path, no, err, n);
    at += l + 1;
  }
  free(buf);
  return rc;
}

void gp_budgets_free(struct gp_budgets *bs) {
  free(bs->v);
  bs->v = NULL;
  bs->n = 0;
}

int gp_budget_holds(const struct gp_budget *b, double v) {
  switch (b->op) {
  case GP_OP_LE:
    return v <= b->value;
  case GP_OP_LT:
    return v < b->value;
  case GP_OP_GE:
    return v >= b->value;
  case GP_OP_GT:
    return v > b->value;
  case GP_OP_EQ:
    return v == b->value;
  case GP_OP_NE:
    return v != b->value;
  }
  return 0;
}
