/* A streaming JSON writer: keeps commas and nesting right, and escapes
 * strings so that any byte sequence gives valid JSON (invalid UTF-8 becomes
 * U+FFFD; control characters, quotes, backslashes and <>& are escaped). */
#ifndef GP_JSONW_H
#define GP_JSONW_H

#include <stdint.h>
#include <stdio.h>

#define GP_JSON_DEPTH 32

struct gp_json {
  FILE *f;
  int depth, pretty;
  unsigned char has_item[GP_JSON_DEPTH];
  char close[GP_JSON_DEPTH]; /* '}' or ']' for each open level */
};

void gp_json_init(struct gp_json *j, FILE *f, int pretty);
/* key is NULL inside arrays and at the top level */
void gp_json_obj(struct gp_json *j, const char *key);
void gp_json_arr(struct gp_json *j, const char *key);
void gp_json_end(struct gp_json *j); /* closes the innermost obj/arr */
void gp_json_str(struct gp_json *j, const char *key, const char *s);
void gp_json_u64(struct gp_json *j, const char *key, uint64_t v);
void gp_json_i64(struct gp_json *j, const char *key, int64_t v);
/* v with up to `digits` decimals; null when v is not finite or, with
 * neg_null, negative (our "unknown") */
void gp_json_num(struct gp_json *j, const char *key, double v, int digits,
                 int neg_null);
void gp_json_bool(struct gp_json *j, const char *key, int v);
void gp_json_null(struct gp_json *j, const char *key);
/* Writes s as a quoted, escaped JSON string. */
void gp_json_quote(FILE *f, const char *s);

#endif
