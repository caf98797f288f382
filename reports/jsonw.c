#include "jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "util.h"

void gp_json_init(struct gp_json *j, FILE *f, int pretty) {
  memset(j, 0, sizeof *j);
  j->f = f;
  j->pretty = pretty;
}

static void indent(struct gp_json *j) {
  if (!j->pretty) return;
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++)
    fputs("  ", j->f);
}

/* Separator, indentation and key before a value. */
static void item(struct gp_json *j, const char *key) {
  if (j->depth > 0 && j->depth <= GP_JSON_DEPTH) {
    if (j->has_item[j->depth - 1]) fputc(',', j->f);
    j->has_item[j->depth - 1] = 1;
  }
  if (j->depth) indent(j);
  if (key) {
    gp_json_quote(j->f, key);
    fputs(j->pretty ? ": " : ":", j->f);
  }
}

static void open_level(struct gp_json *j, const char *key, char c) {
  item(j, key);
  fputc(c, j->f);
  if (j->depth < GP_JSON_DEPTH) {
    j->has_item[j->depth] = 0;
    j->close[j->depth] = c == '{' ? '}' : ']';
  }
  j->depth++;
}

void gp_json_obj(struct gp_json *j, const char *key) {
  open_level(j, key, '{');
}

void gp_json_arr(struct gp_json *j, const char *key) {
  open_level(j, key, '[');
}

void gp_json_end(struct gp_json *j) {
  if (j->depth <= 0 || j->depth > GP_JSON_DEPTH) return;
  int had = j->has_item[j->depth - 1];
  char c = j->close[j->depth - 1];
  j->depth--;
  if (had) indent(j);
  fputc(c, j->f);
  if (!j->depth) fputc('\n', j->f);
}

void gp_json_str(struct gp_json *j, const char *key, const char *s) {
  item(j, key);
  if (s)
    gp_json_quote(j->f, s);
  else
    fputs("null", j->f);
}

void gp_json_u64(struct gp_json *j, const char *key, uint64_t v) {
  item(j, key);
  fprintf(j->f, "%" PRIu64, v);
}

void gp_json_i64(struct gp_json *j, const char *key, int64_t v) {
  item(j, key);
  fprintf(j->f, "%" PRId64, v);
}

void gp_json_num(struct gp_json *j, const char *key, double v, int digits,
                 int neg_null) {
  item(j, key);
  if (!isfinite(v) || (neg_null && v < 0))
    fputs("null", j->f);
  else if (v == floor(v) && fabs(v) < 1e15)
    fprintf(j->f, "%.0f", v);
  else
    fprintf(j->f, "%.*f", digits, v);
}

void gp_json_bool(struct gp_json *j, const char *key, int v) {
  item(j, key);
  fputs(v ? "true" : "false", j->f);
}

void gp_json_null(struct gp_json *j, const char *key) {
  item(j, key);
  fputs("null", j->f);
}

void gp_json_quote(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s);
  fputc('"', f);
  while (len) {
    uint32_t cp;
    size_t k = gp_utf8_seq(p, len, &cp);
    if (!k) {
      fputs("\\ufffd", f);
      p++, len--;
      continue;
    }
    switch (cp) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    default:
      /* <>& too, so that the output can be pasted into HTML as is */
      if (cp < 0x20 || cp == 0x7f || cp == '<' || cp == '>' || cp == '&' ||
          cp == 0x2028 || cp == 0x2029)
        fprintf(f, "\\u%04x", (unsigned)cp);
      else
        fwrite(p, 1, k, f);
    }
    p += k, len -= k;
  }
  fputc('"', f);
}
