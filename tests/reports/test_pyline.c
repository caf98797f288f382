/* gp_pyline (reports/pyline.c).
 *   test_pyline            hand-made tables of each format, worked out in
 *                          the comments; corrupt, truncated and random tables
 *   test_pyline DUMP...    tables dumped by pyline_dump.py under a real
 *                          interpreter, with the line of every code unit that
 *                          interpreter's co_lines()/dis gave; every prefix of
 *                          each table too (never a crash, never a line the
 *                          full table does not have) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pyline.h"

#define V39 0x030912f0u
#define V310 0x030a0df0u
#define V311 0x030b07f0u

/* A copy in a block of exactly its size, so that ASan sees any over-read. */
static int64_t line_at(uint32_t v, const uint8_t *t, size_t n, int64_t first,
                       uint64_t unit) {
  uint8_t *c = malloc(n ? n : 1);
  if (n)
    memcpy(c, t, n);
  int64_t r = gp_pyline(v, n ? c : NULL, n, first, unit);
  free(c);
  return r;
}

static void hand_made(void) {
  /* 3.9 co_lnotab, first line 10: (+6 bytes, +1), (+4, +2), (+8, -1):
   * bytes 0-5 line 10, 6-9 line 11, 10-17 line 13, 18- line 12. */
  static const uint8_t l39[] = {6, 1, 4, 2, 8, 0xff};
  CHECK(line_at(V39, l39, 6, 10, 0) == 10);
  CHECK(line_at(V39, l39, 6, 10, 2) == 10); /* byte 4 */
  CHECK(line_at(V39, l39, 6, 10, 3) == 11); /* byte 6 */
  CHECK(line_at(V39, l39, 6, 10, 5) == 13); /* byte 10 */
  CHECK(line_at(V39, l39, 6, 10, 8) == 13); /* byte 16 */
  CHECK(line_at(V39, l39, 6, 10, 9) == 12); /* byte 18 */
  CHECK(line_at(V39, l39, 6, 10, 1000) == 12);
  CHECK(line_at(V39, l39, 5, 10, 0) == -1); /* odd length */
  /* a jump of more than 255 bytes: (+255, +0), (+1, +5): byte 256 on line 6 */
  static const uint8_t l39b[] = {255, 0, 1, 5};
  CHECK(line_at(V39, l39b, 4, 1, 127) == 1);
  CHECK(line_at(V39, l39b, 4, 1, 128) == 6);

  /* 3.10 co_linetable, first line 5: (4 bytes, +0), (6, +1), (2, none),
   * (4, +2): bytes 0-3 line 5, 4-9 line 6, 10-11 none, 12-15 line 8. */
  static const uint8_t l310[] = {4, 0, 6, 1, 2, 0x80, 4, 2};
  CHECK(line_at(V310, l310, 8, 5, 0) == 5);
  CHECK(line_at(V310, l310, 8, 5, 1) == 5);
  CHECK(line_at(V310, l310, 8, 5, 2) == 6);
  CHECK(line_at(V310, l310, 8, 5, 4) == 6);
  CHECK(line_at(V310, l310, 8, 5, 5) == 5); /* no line: first */
  CHECK(line_at(V310, l310, 8, 5, 6) == 8);
  CHECK(line_at(V310, l310, 8, 5, 7) == 8);
  CHECK(line_at(V310, l310, 8, 5, 8) == 5); /* past the table */
  CHECK(line_at(V310, l310, 7, 5, 0) == -1);

  /* 3.11+ location table, first line 20:
   *  0x81 0x05        short form (code 0), 2 units: units 0-1 line 20
   *  0xda 0x01 0x04   one-line form code 11 (+1), 3 units: 2-4 line 21
   *  0xe8 0x07        no column (13), svarint 7 = -3, 1 unit: 5 line 18
   *  0xf1 0x48 0x03 0x00 0x01 0x02
   *                   long form (14), 2 units, svarint 3*64+8 = 200 = +100:
   *                   6-7 line 118
   *  0xf8             no location (15), 1 unit: 8 none (first line)
   *  0x98 0x10        short form (code 3), 1 unit: 9 line 118 */
  static const uint8_t l311[] = {0x81, 0x05, 0xda, 0x01, 0x04, 0xe8, 0x07,
                                 0xf1, 0x48, 0x03, 0x00, 0x01, 0x02, 0xf8,
                                 0x98, 0x10};
  static const int64_t want[] = {20, 20, 21, 21, 21, 18, 118, 118, 20, 118, 20};
  for (uint32_t v = 0x030b0000u; v <= 0x030e0000u; v += 0x10000u)
    for (unsigned u = 0; u < sizeof want / sizeof want[0]; u++)
      CHECK(line_at(v, l311, sizeof l311, 20, u) == want[u]);
  /* an entry whose first byte lacks the high bit */
  static const uint8_t bad1[] = {0x81, 0x05, 0x05};
  CHECK(line_at(V311, bad1, 3, 20, 0) == 20); /* before the bad byte */
  CHECK(line_at(V311, bad1, 3, 20, 2) == -1);
  /* cut inside a long form, a one-line form, a short form */
  CHECK(line_at(V311, l311 + 7, 2, 20, 0) == -1);
  CHECK(line_at(V311, l311 + 2, 2, 20, 0) == -1);
  CHECK(line_at(V311, l311, 1, 20, 0) == -1);
  /* a varint whose continuation runs into the next entry */
  static const uint8_t bad2[] = {0xe8, 0x47, 0x81, 0x05};
  CHECK(line_at(V311, bad2, 4, 20, 0) == -1);
  /* a varint of more than 64 bits */
  uint8_t big[16] = {0xe8};
  memset(big + 1, 0x7f, 14);
  big[15] = 0x01;
  CHECK(line_at(V311, big, 16, 20, 0) == -1);
  CHECK(line_at(V311, NULL, 0, 20, 0) == 20); /* empty: not said */
  CHECK(gp_pyline(V311, NULL, 4, 20, 0) == -1);
  /* versions this reader does not know */
  CHECK(line_at(0x030800f0u, l39, 6, 10, 0) == -1);
  CHECK(line_at(0x020700f0u, l39, 6, 10, 0) == -1);
  /* a line going below zero is corrupt: line 1, then -2 at byte 2 */
  static const uint8_t neg[] = {2, 0xfe};
  CHECK(line_at(V39, neg, 2, 1, 1) == -1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Random tables: any answer >= -1, no crash (ASan: no over-read). */
static void random_tables(void) {
  static const uint32_t vs[] = {V39, V310, V311, 0x030e00f0u};
  uint8_t t[64];
  for (int i = 0; i < 200000; i++) {
    size_t n = next() % sizeof t;
    for (size_t k = 0; k < n; k++) {
      t[k] = (uint8_t)next();
      if (i & 1)
        t[k] |= 0x80; /* mostly entry starts: reach the deeper states */
    }
    int64_t first = (i % 7 == 0) ? (int64_t)(next() >> 1) : (int64_t)(next() % 1000);
    int64_t r = line_at(vs[next() % 4], t, n, first, next() % 80);
    CHECK(r >= -1);
  }
}

static int check_dump(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 1;
  }
  static char line[1 << 20];
  int codes = 0;
  while (fgets(line, sizeof line, f)) {
    char *p = line, *end;
    uint32_t v = (uint32_t)strtoul(p, &end, 10);
    int64_t first = strtoll(end, &end, 10);
    while (*end == ' ')
      end++;
    char *hex = end;
    char *sp = strchr(hex, ' ');
    if (!sp) {
      fprintf(stderr, "%s: bad line\n", path);
      fclose(f);
      return 1;
    }
    *sp = 0;
    size_t n = strcmp(hex, "-") ? strlen(hex) / 2 : 0;
    uint8_t *tab = malloc(n ? n : 1);
    for (size_t k = 0; k < n; k++) {
      unsigned b;
      sscanf(hex + 2 * k, "%2x", &b);
      tab[k] = (uint8_t)b;
    }
    unsigned long units = strtoul(sp + 1, &end, 10);
    int64_t *want = calloc(units ? units : 1, sizeof *want);
    p = end + 1;
    for (unsigned long u = 0; u < units; u++) {
      want[u] = strtoll(p, &end, 10);
      p = end + 1;
    }
    for (unsigned long u = 0; u < units; u++) {
      int64_t got = line_at(v, tab, n, first, u);
      if (got != want[u]) {
        failures++;
        fprintf(stderr, "%s: code object %d (first line %lld), unit %lu: line %lld, "
                "the interpreter says %lld\n", path, codes, (long long)first, u,
                (long long)got, (long long)want[u]);
      }
    }
    /* every prefix (a table cut by a trace's limit or a hostile writer):
     * -1, the first line, or a line of the code; before 3.11 a jump of
     * more than 127 lines is split over several pairs, so a cut may stop
     * inside one: a line between the code's lowest and highest then */
    int64_t lo = first, hi = first;
    for (unsigned long k = 0; k < units; k++) {
      lo = want[k] < lo ? want[k] : lo;
      hi = want[k] > hi ? want[k] : hi;
    }
    int split = ((v >> 16) & 0xff) < 11;
    for (size_t cut = 0; cut < n; cut++)
      for (unsigned long u = 0; u < units; u++) {
        int64_t got = line_at(v, tab, cut, first, u);
        int known = got == -1 || got == first || (split && got >= lo && got <= hi);
        for (unsigned long k = 0; k < units && !known; k++)
          known = want[k] == got;
        if (!known) {
          failures++;
          fprintf(stderr, "%s: code object %d cut at %zu, unit %lu: line %lld\n",
                  path, codes, cut, u, (long long)got);
        }
      }
    free(tab);
    free(want);
    codes++;
  }
  fclose(f);
  if (!codes) {
    fprintf(stderr, "%s: no code objects\n", path);
    return 1;
  }
  printf("%s: %d code objects\n", path, codes);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    int bad = 0;
    for (int i = 1; i < argc; i++)
      bad |= check_dump(argv[i]);
    return bad || failures;
  }
  hand_made();
  random_tables();
  return failures != 0;
}
