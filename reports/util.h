/* Small helpers shared by the renderers and the command line. */
#ifndef GP_REPORT_UTIL_H
#define GP_REPORT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "10ms", "1s", "500us", "2.5s", "250000ns", "1m" (minute): > 0, with a
 * unit. Returns 0, or -1 when s is not such a duration. */
int gp_parse_duration(const char *s, uint64_t *ns);
/* "FROM..TO", each "0" or a duration (0..500ms, 1.5s..2s), FROM < TO:
 * 0, or -1 when it is not. */
int gp_parse_span(const char *s, uint64_t *from, uint64_t *to);

/* A trace opened in time order (the sorted reader), or NULL with "PATH:
 * why" in err and the reader's error code in *code. */
struct gpuphase_reader;
struct gpuphase_reader *gp_open_sorted(const char *path, int *code, char *err,
                                       size_t errlen);

/* Human-readable duration / byte count / rate into buf. */
const char *gp_fmt_dur(char *buf, size_t n, uint64_t ns);
const char *gp_fmt_bytes(char *buf, size_t n, double bytes);
/* A duration for table cells, at most 8 characters ("12.5 ms"). */
const char *gp_fmt_sdur(char *buf, size_t n, uint64_t ns);
/* A count or a rate as a plain number a budget can take back: whole from
 * 1000 on ("312346"), else 4 significant digits ("3.5", "0.1234"); in
 * exponent notation only past 1e15 or below 1e-4. */
const char *gp_fmt_num(char *buf, size_t n, double v);
/* A share in percent: "?" when negative (unknown), one decimal below 10%. */
const char *gp_fmt_pct(char *buf, size_t n, double pct);

/* Length of the valid UTF-8 sequence at s (s has len bytes left), 0 if the
 * bytes there are not valid UTF-8; *cp gets the code point. */
size_t gp_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp);

/* s (NULL: nothing) as HTML text and attribute values: &<>"' escaped,
 * control characters and invalid UTF-8 replaced by U+FFFD. */
void gp_html_esc(FILE *f, const char *s);

/* Appends one printf-formatted string (malloc'd) to the list *v of *n:
 * 0, or -1 when out of memory (the list unchanged). */
int gp_strlist_vadd(char ***v, size_t *n, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Copies s into out (size n) for a terminal: control characters become
 * '?', invalid UTF-8 becomes U+FFFD, and at most cols columns are kept
 * (".." marks a cut; an East Asian wide character takes two). Returns the
 * number of columns written. */
size_t gp_text_clean(const char *s, char *out, size_t n, size_t cols);
/* As gp_text_clean, but a name too long is cut in its middle: its start
 * and its end (where a C++ name says which function and which template
 * arguments) around "..". */
size_t gp_text_clean_mid(const char *s, char *out, size_t n, size_t cols);
/* The columns a terminal gives s, as gp_text_clean shows it. */
size_t gp_text_cols(const char *s);

/* For wrapping text at blanks: the length of the word at p (up to a blank
 * or the end), or, when it ends in a digit and the next word is a unit
 * ("340.5 us", "1.2 GiB", "us,"), of both words and the blank between:
 * a number stays on the line of its unit. */
size_t gp_wrap_word(const char *p);

/* Copies msg into out (size n); a longer message (a long path) loses its
 * middle, marked " ... ", not its end, which says why. Cuts fall between
 * UTF-8 characters. */
void gp_text_keep_ends(const char *msg, char *out, size_t n);

struct option;
/* Why getopt_long refused the option typed ('?'), into out (size n): an
 * abbreviation of several long options is "ambiguous" and names them; a
 * long option that takes no value, given one, says so; else "unknown".
 * typed is the argument as given ("--co", "--help=x", "-q"). */
void gp_opt_refused(const struct option *longs, const char *typed, char *out,
                    size_t n);

#endif
