/* C++ kernel names as people read them. CUPTI reports the mangled symbol
 * (_ZN2at6native...); the C++ runtime's demangler, when one can be loaded
 * (libstdc++'s __cxa_demangle, looked up at run time so that the tools do
 * not depend on it), turns it into the declaration, and gp_short_name keeps
 * the qualified function name for narrow table cells. */
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn fn;

static void look_up(void) {
  void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  if (h) fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

/* looked up once, whichever thread of the report asks first */
static cxa_demangle_fn demangler(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, look_up);
  return fn;
}

char *gp_demangle(const char *name) {
  /* the length cap keeps a hostile name from driving an older demangler's
   * recursion deep (libstdc++ 12 itself refuses deep nesting) */
  if (!name || strncmp(name, "_Z", 2) != 0 || strlen(name) > 16384)
    return NULL;
  cxa_demangle_fn fn = demangler();
  if (!fn) return NULL;
  int status = -1;
  char *out = fn(name, NULL, NULL, &status);
  if (status != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Index of the bracket that opens the group closing at s[end] (')' or '>'),
 * counting every kind of bracket; SIZE_MAX if unbalanced. */
static size_t opening(const char *s, size_t end) {
  int depth = 0;
  for (size_t i = end + 1; i-- > 0;) {
    char c = s[i];
    if (c == ')' || c == '>' || c == ']' || c == '}') depth++;
    if (c == '(' || c == '<' || c == '[' || c == '{') {
      if (--depth == 0) return i;
    }
  }
  return SIZE_MAX;
}

/* Where "operator" begins in d[0, end) as an operator function's name
 * (at the start, or after "::" or a space, outside brackets); SIZE_MAX
 * if none. */
static size_t operator_at(const char *d, size_t end) {
  int depth = 0;
  for (size_t i = 0; i < end; i++) {
    char c = d[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') depth++;
    if (c == ')' || c == '>' || c == ']' || c == '}') depth--;
    if (depth == 0 && end - i >= 8 && memcmp(d + i, "operator", 8) == 0 &&
        (i == 0 || d[i - 1] == ':' || d[i - 1] == ' ') &&
        (i + 8 == end || !(d[i + 8] == '_' || (d[i + 8] >= 'a' && d[i + 8] <= 'z') ||
                           (d[i + 8] >= 'A' && d[i + 8] <= 'Z') ||
                           (d[i + 8] >= '0' && d[i + 8] <= '9'))))
      return i;
  }
  return SIZE_MAX;
}

size_t gp_short_name(const char *d, char *out, size_t cap) {
  if (!cap) return 0;
  size_t end = strlen(d);
  /* GCC's clones of a function ("... [clone .isra.0] [clone .cold]"):
   * the function's own declaration comes before them */
  while (end > 9 && d[end - 1] == ']') {
    size_t o = opening(d, end - 1);
    if (o == SIZE_MAX || o < 1 || strncmp(d + o, "[clone ", 7) != 0 ||
        d[o - 1] != ' ')
      break;
    end = o - 1;
  }
  /* the parameter list, and cv- or ref-qualifiers after it */
  size_t close = end;
  while (close > 0 && d[close - 1] != ')') close--;
  if (close > 0) {
    size_t q = close;
    while (q < end && strchr(" constvolatile&", d[q])) q++;
    if (q == end) end = close;
  }
  if (end > 0 && d[end - 1] == ')') {
    size_t o = opening(d, end - 1);
    if (o != SIZE_MAX && o > 0) end = o;
  }
  /* template arguments of the function itself; not the '>' of an
   * operator's own name (operator>, operator->, operator>>) */
  size_t op = operator_at(d, end);
  int op_name_ends = 0;
  if (op != SIZE_MAX) {
    op_name_ends = 1;
    for (size_t i = op + 8; i < end; i++)
      if (!strchr("+-*/%^&|~!=<>,()[] ", d[i]) ||
          (d[i] == ' ' && i + 1 < end && d[i + 1] == '<'))
        op_name_ends = 0; /* a conversion operator, or template arguments */
  }
  if (!op_name_ends && end > 0 && d[end - 1] == '>') {
    size_t o = opening(d, end - 1);
    if (o != SIZE_MAX && o > 0 && (op == SIZE_MAX || o > op + 8)) end = o;
    while (end > 0 && d[end - 1] == ' ') end--; /* "operator< <int>" */
  }
  /* a return type: the name starts after the last space outside brackets
   * (before an operator's name: "operator int" names one function) */
  size_t start = 0, scan = op != SIZE_MAX ? op : end;
  int depth = 0;
  for (size_t i = 0; i < scan; i++) {
    char c = d[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') depth++;
    if (c == ')' || c == '>' || c == ']' || c == '}') depth--;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  size_t n = end > start ? end - start : 0;
  if (n == 0) { /* nothing recognisable: the whole declaration */
    start = 0;
    n = strlen(d);
  }
  if (n >= cap) n = cap - 1;
  memcpy(out, d + start, n);
  out[n] = 0;
  return n;
}
