/* The reader's id -> string table. Strings live in chunks that never move,
 * so the pointers handed out stay valid until the reader is closed. */
#include <stdlib.h>
#include <string.h>

#include "reader_int.h"

#define CHUNK 65536

struct gp_strchunk {
  struct gp_strchunk *next;
  size_t used, cap;
  char data[];
};

static size_t slot_of(uint64_t id, size_t mask) {
  return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

static int grow(struct gp_strtab *st) {
  size_t n = st->mask ? (st->mask + 1) * 2 : 256;
  struct gp_strent *t = calloc(n, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; st->mask && i <= st->mask; i++) {
    if (!st->t[i].s) continue;
    size_t h = slot_of(st->t[i].id, n - 1);
    while (t[h].s)
      h = (h + 1) & (n - 1);
    t[h] = st->t[i];
  }
  free(st->t);
  st->t = t;
  st->mask = n - 1;
  return 0;
}

static char *copy(struct gp_strtab *st, const char *s, uint64_t len) {
  struct gp_strchunk *c = st->chunks;
  if (!c || c->cap - c->used < len + 1) {
    size_t cap = len + 1 > CHUNK ? (size_t)len + 1 : CHUNK;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    c->next = st->chunks;
    st->chunks = c;
  }
  char *d = c->data + c->used;
  if (len) memcpy(d, s, len);
  d[len] = 0;
  c->used += len + 1;
  return d;
}

/* A later definition of the same id wins; the writer never makes one. */
int gp_strtab_add(struct gp_strtab *st, uint64_t id, const char *s,
                  uint64_t len) {
  /* an entry costs two slots of the table (kept at most half full) */
  uint64_t cost = len + 1 + 2 * sizeof(struct gp_strent);
  if (len > GP_STRINGS_MAX || st->cost + cost > GP_STRINGS_MAX) {
    st->full = 1;
    return GPUPHASE_E_NOMEM;
  }
  if ((st->count + 1) * 2 > st->mask + 1 && grow(st)) return GPUPHASE_E_NOMEM;
  char *d = copy(st, s, len);
  if (!d) return GPUPHASE_E_NOMEM;
  size_t h = slot_of(id, st->mask);
  while (st->t[h].s && st->t[h].id != id)
    h = (h + 1) & st->mask;
  st->count += !st->t[h].s;
  st->t[h] = (struct gp_strent){id, d, len};
  st->cost += cost;
  return GPUPHASE_OK;
}

int gp_strtab_fail(gpuphase_reader *r) {
  if (r->strings.full)
    return gp_reader_fail(r, GPUPHASE_E_NOMEM,
                          "out of memory: the trace's strings exceed the "
                          "reader's %llu MiB",
                          (unsigned long long)(GP_STRINGS_MAX >> 20));
  return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
}

const struct gp_strent *gp_strtab_get(const struct gp_strtab *st, uint64_t id) {
  if (!st->mask) return NULL;
  for (size_t h = slot_of(id, st->mask); st->t[h].s; h = (h + 1) & st->mask)
    if (st->t[h].id == id) return &st->t[h];
  return NULL;
}

void gp_strtab_free(struct gp_strtab *st) {
  free(st->t);
  while (st->chunks) {
    struct gp_strchunk *next = st->chunks->next;
    free(st->chunks);
    st->chunks = next;
  }
  memset(st, 0, sizeof *st);
}
