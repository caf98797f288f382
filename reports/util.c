#include "util.h"

#include "gpuphase/trace.h"
#include "reader_ext.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gp_parse_duration(const char *s, uint64_t *ns) {
  static const struct {
    const char *unit;
    double ns;
  } units[] = {{"ns", 1},  {"us", 1e3}, {"ms", 1e6},
               {"s", 1e9}, {"m", 60e9}, {"min", 60e9}};
  if (!s || !*s || !(*s >= '0' && *s <= '9')) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !isfinite(v)) return -1;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
    if (strcmp(end, units[i].unit) != 0) continue;
    double t = v * units[i].ns;
    if (t < 1 || t > 1e18) return -1;
    *ns = (uint64_t)(t + 0.5);
    return 0;
  }
  return -1;
}

static int parse_offset(const char *s, uint64_t *ns) {
  if (!strcmp(s, "0")) return *ns = 0, 0;
  return gp_parse_duration(s, ns);
}

int gp_parse_span(const char *s, uint64_t *from, uint64_t *to) {
  const char *dots = strstr(s, "..");
  char a[64];
  if (!dots || (size_t)(dots - s) >= sizeof a) return -1;
  memcpy(a, s, (size_t)(dots - s));
  a[dots - s] = 0;
  return parse_offset(a, from) < 0 || parse_offset(dots + 2, to) < 0 ||
                 *from >= *to
             ? -1
             : 0;
}

const char *gp_fmt_dur(char *buf, size_t n, uint64_t ns) {
  if (ns >= 999999500ull) /* from where ms would read 1000.000 */
    snprintf(buf, n, "%.3f s", ns / 1e9);
  else if (ns >= 1000000)
    snprintf(buf, n, "%.3f ms", ns / 1e6);
  else if (ns >= 1000)
    snprintf(buf, n, "%.3f us", ns / 1e3);
  else
    snprintf(buf, n, "%llu ns", (unsigned long long)ns);
  return buf;
}

const char *gp_fmt_num(char *buf, size_t n, double v) {
  double a = fabs(v);
  if (a >= 1000 && a < 1e15)
    snprintf(buf, n, "%.0f", v);
  else
    snprintf(buf, n, "%.4g", v);
  return buf;
}

const char *gp_fmt_bytes(char *buf, size_t n, double b) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (b >= 1024 && i < 5) {
    b /= 1024;
    i++;
  }
  if (i == 0)
    snprintf(buf, n, "%.0f B", b);
  else
    snprintf(buf, n, "%.1f %s", b, u[i]);
  return buf;
}

size_t gp_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp) {
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t need;
  uint32_t v, min;
  if (c >= 0xc2 && c <= 0xdf)
    need = 2, v = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    need = 3, v = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    need = 4, v = c & 0x07, min = 0x10000;
  else
    return 0;
  if (len < need) return 0;
  for (size_t i = 1; i < need; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  /* overlong forms, UTF-16 surrogates and values past U+10FFFF */
  if (v < min || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff) return 0;
  *cp = v;
  return need;
}

/* Columns a character takes on a terminal: 2 for the East Asian wide and
 * fullwidth blocks (CJK, kana, Hangul, fullwidth forms, the common emoji),
 * else 1. */
static size_t cp_cols(uint32_t cp) {
  static const uint32_t wide[][2] = {
      {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},
      {0x3400, 0x4dbf},   {0x4e00, 0x9fff},   {0xa000, 0xa4cf},
      {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe30, 0xfe4f},
      {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
      {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd}};
  if (cp < 0x1100) return 1;
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
    if (cp >= wide[i][0] && cp <= wide[i][1]) return 2;
  return 1;
}

/* Columns of p as gp_text_clean shows it (an invalid byte: one U+FFFD). */
static size_t count_cols(const unsigned char *p, size_t len) {
  size_t cols = 0;
  uint32_t cp;
  for (size_t i = 0; i < len;) {
    size_t k = gp_utf8_seq(p + i, len - i, &cp);
    cols += k ? cp_cols(cp) : 1;
    i += k ? k : 1;
  }
  return cols;
}

static int unit_word(const char *p) {
  static const char *const units[] = {
      "ns", "us", "ms", "s", "min", "h", "B", "KiB", "MiB", "GiB", "TiB",
      "kB", "MB", "GB", "TB", "GB/s", "MB/s", "W", "J", "MHz", "GHz"};
  size_t n = strcspn(p, " ");
  while (n > 1 && strchr(",;:)", p[n - 1])) /* "us," "ms)" */
    n--;
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (strlen(units[i]) == n && strncmp(p, units[i], n) == 0) return 1;
  return 0;
}

size_t gp_wrap_word(const char *p) {
  size_t len = strcspn(p, " ");
  if (len && p[len] == ' ' && p[len - 1] >= '0' && p[len - 1] <= '9' &&
      p[len + 1] && p[len + 1] != ' ' && unit_word(p + len + 1))
    len += 1 + strcspn(p + len + 1, " ");
  return len;
}

size_t gp_text_clean(const char *s, char *out, size_t n, size_t cols) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t len = strlen((const char *)p), o = 0, chars = 0;
  size_t keep = count_cols(p, len) <= cols ? cols : cols >= 2 ? cols - 2 : 0;
  if (!n) return 0;
  for (size_t i = 0; i < len && chars < keep && o + 5 < n;) {
    uint32_t cp;
    size_t k = gp_utf8_seq(p + i, len - i, &cp);
    size_t w = k ? cp_cols(cp) : 1;
    if (chars + w > keep) break; /* a wide character past the edge */
    chars += w;
    if (!k) { /* invalid byte: U+FFFD */
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      out[o++] = '?';
      i += k;
    } else {
      memcpy(out + o, p + i, k);
      o += k;
      i += k;
    }
  }
  if (keep < cols && o + 3 <= n) { /* the name was cut */
    out[o++] = '.';
    out[o++] = '.';
    chars += 2;
  }
  out[o] = 0;
  return chars;
}

size_t gp_text_cols(const char *s) {
  return s ? count_cols((const unsigned char *)s, strlen(s)) : 0;
}

size_t gp_text_clean_mid(const char *s, char *out, size_t n, size_t cols) {
  char all[1024];
  if (!n) return 0;
  if (gp_text_cols(s) <= cols || cols < 8)
    return gp_text_clean(s, out, n, cols);
  /* the whole name cleaned (valid UTF-8 from here on; a name longer than
   * the buffer loses its end, as gp_text_clean would) */
  gp_text_clean(s, all, sizeof all, sizeof all / 4);
  size_t len = strlen(all), head = (cols - 2) * 2 / 5,
         tail = cols - 2 - head, hb = 0, hc = 0, tb = len, tc = 0;
  uint32_t cp;
  while (hb < len) { /* the start: whole characters up to head columns */
    size_t k = gp_utf8_seq((const unsigned char *)all + hb, len - hb, &cp);
    if (!k || hc + cp_cols(cp) > head) break;
    hc += cp_cols(cp);
    hb += k;
  }
  while (tb > hb) { /* the end: whole characters up to tail columns */
    size_t b = tb - 1;
    while (b > hb && ((unsigned char)all[b] & 0xc0) == 0x80) b--;
    size_t k = gp_utf8_seq((const unsigned char *)all + b, tb - b, &cp);
    if (!k || tc + cp_cols(cp) > tail) break;
    tc += cp_cols(cp);
    tb = b;
  }
  snprintf(out, n, "%.*s..%s", (int)hb, all, all + tb);
  return hc + 2 + tc;
}

/* Short duration for table cells: at most 8 characters. */
const char *gp_fmt_sdur(char *b, size_t n, uint64_t ns) {
  if (ns >= 1000000000000000ull) /* over 11 days: 1.2e+06 s fits */
    snprintf(b, n, "%.0e s", ns / 1e9);
  else if (ns >= 100000000000ull)
    snprintf(b, n, "%.0f s", ns / 1e9);
  else if (ns >= 999950000ull) /* from where ms would read 1000.0 */
    snprintf(b, n, "%.2f s", ns / 1e9);
  else if (ns >= 999950) /* from where us would read 1000.0 */
    snprintf(b, n, "%.1f ms", ns / 1e6);
  else if (ns >= 1000)
    snprintf(b, n, "%.1f us", ns / 1e3);
  else
    snprintf(b, n, "%llu ns", (unsigned long long)ns);
  return b;
}

/* A share: "?" when unknown, one decimal below 10% (so that 0.1% of the
 * SMs does not read as 0%), none above. */
const char *gp_fmt_pct(char *b, size_t n, double v) {
  if (v < 0)
    snprintf(b, n, "?");
  else if (v > 0 && v < 9.95)
    snprintf(b, n, "%.1f%%", v);
  else
    snprintf(b, n, "%.0f%%", v);
  return b;
}

void gp_text_keep_ends(const char *msg, char *out, size_t n) {
  size_t len = strlen(msg);
  if (!n) return;
  if (len < n || n < 16) {
    snprintf(out, n, "%s", msg);
    return;
  }
  size_t head = n / 3, tail = len - (n - head - 6);
  while (head && (msg[head] & 0xc0) == 0x80) head--;
  while ((msg[tail] & 0xc0) == 0x80) tail++;
  snprintf(out, n, "%.*s ... %s", (int)head, msg, msg + tail);
}

struct gpuphase_reader *gp_open_sorted(const char *path, int *code, char *err,
                                       size_t errlen) {
  char msg[256] = "";
  *code = 0;
  gpuphase_reader *rd =
      gp_reader_open_ex(path, GP_OPEN_SORTED, code, msg, sizeof msg);
  if (!rd)
    snprintf(err, errlen, "%s: %s", path,
             *msg                     ? msg
             : *code == GPUPHASE_E_IO ? strerror(errno)
                                      : gpuphase_strerror(*code));
  return rd;
}

void gp_html_esc(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t len = strlen((const char *)p);
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t k = gp_utf8_seq(p + i, len - i, &cp);
    if (!k || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      fputs("&#xfffd;", f);
      i += k ? k : 1;
      continue;
    }
    switch (cp) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fwrite(p + i, 1, k, f);
    }
    i += k;
  }
}

int gp_strlist_vadd(char ***v, size_t *n, const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) return -1;
  char **w = realloc(*v, (*n + 1) * sizeof *w);
  if (!w) {
    free(s);
    return -1;
  }
  *v = w;
  w[(*n)++] = s;
  return 0;
}

void gp_opt_refused(const struct option *longs, const char *typed, char *out,
                    size_t n) {
  if (!n) return;
  if (strncmp(typed, "--", 2) || !typed[2]) {
    snprintf(out, n, "unknown option '%s'", typed);
    return;
  }
  const char *name = typed + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const struct option *first = NULL, *exact = NULL;
  int distinct = 0;
  for (const struct option *lo = longs; lo->name; lo++) {
    if (strncmp(lo->name, name, len)) continue;
    if (strlen(lo->name) == len) exact = lo;
    /* two names of one option (--color, --colour) are one choice */
    if (!first) first = lo, distinct = 1;
    else if (lo->val != first->val || lo->has_arg != first->has_arg ||
             lo->flag != first->flag)
      distinct++;
  }
  if (exact && eq && exact->has_arg == no_argument) {
    snprintf(out, n, "option '--%s' takes no value", exact->name);
    return;
  }
  if (exact || distinct < 2) {
    snprintf(out, n, "unknown option '%.*s'", (int)(len + 2), typed);
    return;
  }
  int w = snprintf(out, n, "ambiguous option '%.*s': ", (int)(len + 2), typed);
  int shown = 0;
  for (const struct option *lo = longs; lo->name && w >= 0 && (size_t)w < n;
       lo++) {
    if (strncmp(lo->name, name, len)) continue;
    int dup = 0; /* another name of an option already shown */
    for (const struct option *p = longs; p < lo; p++)
      if (!strncmp(p->name, name, len) && p->val == lo->val &&
          p->has_arg == lo->has_arg && p->flag == lo->flag)
        dup = 1;
    if (dup) continue;
    w += snprintf(out + w, n - (size_t)w, "%s--%s", shown++ ? ", " : "",
                  lo->name);
  }
}
