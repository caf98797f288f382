/* Line tables of CPython 3.9 to 3.14, decoded as the interpreter's own
 * PyCode_Addr2Line does (Objects/codeobject.c of each version; the formats
 * are described in Objects/lnotab_notes.txt and
 * InternalDocs/code_objects.md). Tables come from traces and may be
 * hostile: every read is bounded by len and line arithmetic is done in
 * 64 bits, so a corrupt table gives -1, never a fault. */
#include "pyline.h"

/* 3.9 co_lnotab: (byte increment, signed line increment) pairs; the line
 * of byte offset `addr` is first_line plus the line increments of every
 * pair whose cumulated byte offset is <= addr. */
static int64_t lnotab39(const uint8_t *tab, size_t len, int64_t first,
                        uint64_t addr) {
  if (len % 2)
    return -1;
  uint64_t at = 0, line = (uint64_t)first;
  for (size_t i = 0; i + 1 < len; i += 2) {
    at += tab[i];
    if (at > addr)
      break;
    line += (uint64_t)(int64_t)(int8_t)tab[i + 1];
  }
  return (int64_t)line;
}

/* 3.10 co_linetable: (byte length, signed line delta) pairs, each a range
 * of the bytecode; delta -128 means the range has no line. */
static int64_t linetable310(const uint8_t *tab, size_t len, int64_t first,
                            uint64_t addr) {
  if (len % 2)
    return -1;
  uint64_t start = 0, line = (uint64_t)first;
  for (size_t i = 0; i + 1 < len; i += 2) {
    uint64_t end = start + tab[i];
    int8_t d = (int8_t)tab[i + 1];
    int have = d != -128;
    if (have)
      line += (uint64_t)(int64_t)d;
    if (addr >= start && addr < end)
      return have ? (int64_t)line : first;
    start = end;
  }
  return first; /* past the table: not said */
}

/* 3.11+ location table: entries of a first byte 1cccclll (code c, length
 * l+1 code units) followed by varints of 6-bit chunks (0x40: more). */
struct rd {
  const uint8_t *p, *end;
  int bad;
};

static uint64_t varint(struct rd *r) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 6) {
    if (r->p >= r->end || (*r->p & 0x80) || shift > 60) {
      r->bad = 1; /* ran off the table or into the next entry */
      return 0;
    }
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 63) << shift;
    if (!(b & 64))
      return v;
  }
}

static int64_t svarint(struct rd *r) {
  uint64_t v = varint(r);
  return (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

static int64_t loctable311(const uint8_t *tab, size_t len, int64_t first,
                           uint64_t unit) {
  struct rd r = {tab, tab + len, 0};
  uint64_t start = 0;
  uint64_t line = (uint64_t)first; /* unsigned: hostile deltas wrap, no UB */
  while (r.p < r.end) {
    uint8_t b = *r.p++;
    if (!(b & 0x80))
      return -1; /* an entry must start with the high bit set */
    unsigned code = (b >> 3) & 15;
    uint64_t end = start + (b & 7) + 1;
    int have = 1;
    switch (code) {
    case 15: /* no location */
      have = 0;
      break;
    case 14: /* long form: line delta, end line delta, column, end column */
      line += (uint64_t)svarint(&r);
      varint(&r);
      varint(&r);
      varint(&r);
      break;
    case 13: /* no column */
      line += (uint64_t)svarint(&r);
      break;
    case 12:
    case 11:
    case 10: /* one-line form: delta code-10, then column, end column */
      line += code - 10;
      if (r.end - r.p < 2 || (r.p[0] & 0x80) || (r.p[1] & 0x80))
        return -1;
      r.p += 2;
      break;
    default: /* short form: same line, one column byte */
      if (r.p >= r.end || (r.p[0] & 0x80))
        return -1;
      r.p++;
      break;
    }
    if (r.bad)
      return -1;
    if (unit >= start && unit < end)
      return have ? (int64_t)line : first;
    start = end;
  }
  return first;
}

int64_t gp_pyline(uint32_t py_version, const uint8_t *tab, size_t len,
                  int64_t first_line, uint64_t unit) {
  if (!tab && len)
    return -1;
  uint32_t minor = (py_version >> 16) & 0xff;
  if ((py_version >> 24) != 3 || minor < 9)
    return -1; /* not a version this reader knows */
  int64_t line;
  if (!len || unit > (UINT64_MAX >> 2))
    line = first_line; /* an empty table says nothing (and tab may be NULL) */
  else if (minor == 9)
    line = lnotab39(tab, len, first_line, unit * 2);
  else if (minor == 10)
    line = linetable310(tab, len, first_line, unit * 2);
  else
    line = loctable311(tab, len, first_line, unit);
  return line < 0 ? -1 : line;
}
