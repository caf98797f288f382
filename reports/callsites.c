/* Call sites (callsites.h): what the attribution sweep tells the collector,
 * kept per (raw stack, API) row; at the end, frames resolved, collapsed to
 * the user's code, and rows of the same shown stack merged into sites.
 * Rules: docs/callsites.md. */
#include "callsites.h"

#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "pyline.h"
#include "report.h"
#include "symbolize.h"
#include "u64map.h"

const char *const gp_cs_kind_key[GP_CS_KIND_N] = {"blocking", "idle_end",
                                                  "launch"};

/* Frames walked along one stack at most: deeper (or a cycle of parent
 * links in a damaged trace) is shown truncated. */
#define MAX_DEPTH 256
#define NOROW UINT32_MAX

struct node {
  uint64_t parent, module, pc;
  uint8_t kind, flags;
};

struct mod {
  uint64_t path, base, size;
  uint8_t *bid;
  size_t nbid;
};

struct code {
  uint64_t file, name, first_line, py_version;
  uint8_t *tab;
  size_t ntab;
};

/* [0]: slot 0 (the "any device" timeline), [1]: the named devices */
struct row {
  uint64_t stack;
  uint32_t api, next; /* next row of the same stack */
  uint64_t count, blocked, launches;
  uint64_t idle[2], gaps[2], gap_ns[2], after_ns[2];
  struct gp_hist dur;
};

struct openb { /* a blocking call on the timeline */
  uint64_t start, end;
  uint32_t row, dev;
};

struct slot { /* a device's current host_wait gap */
  int open;
  uint64_t gs, ge;
  uint32_t prev; /* the call that returned last before the gap */
  uint32_t last; /* the call seen on this device that returns last */
  uint64_t last_end;
};

#define ROW_CACHE_BITS 8

struct gp_cs {
  int oom, seen;
  uint32_t cache[1u << ROW_CACHE_BITS]; /* (stack, api) -> row + 1 */
  struct gp_u64map node_ix, mod_ix, code_ix, row_ix; /* -> index */
  struct node *nodes;
  size_t nnodes, capnodes;
  struct mod *mods;
  size_t nmods, capmods;
  struct code *codes;
  size_t ncodes, capcodes;
  struct row *rows;
  size_t nrows, caprows;
  struct openb *open;
  size_t nopen, capopen;
  struct slot *slots;
  size_t nslots, capslots;
};

static int grow(gp_cs *c, void **v, size_t *cap, size_t need, size_t elt) {
  if (need <= *cap) return 0;
  size_t n = *cap ? 2 * *cap : 16;
  while (n < need)
    n *= 2;
  void *p = realloc(*v, n * elt);
  if (!p) {
    c->oom = 1;
    return -1;
  }
  *v = p;
  *cap = n;
  return 0;
}
#define GROWV(c, v, cap, need)                                                 \
  grow((c), (void **)&(v), &(cap), (need), sizeof *(v))

gp_cs *gp_cs_new(void) {
  return calloc(1, sizeof(gp_cs));
}

int gp_cs_oom(const gp_cs *c) {
  return c->oom;
}

void gp_cs_free(gp_cs *c) {
  if (!c) return;
  gp_u64map_free(&c->node_ix);
  gp_u64map_free(&c->mod_ix);
  gp_u64map_free(&c->code_ix);
  gp_u64map_free(&c->row_ix);
  for (size_t i = 0; i < c->nmods; i++)
    free(c->mods[i].bid);
  for (size_t i = 0; i < c->ncodes; i++)
    free(c->codes[i].tab);
  for (size_t i = 0; i < c->nrows; i++)
    gp_hist_free(&c->rows[i].dur);
  free(c->nodes);
  free(c->mods);
  free(c->codes);
  free(c->rows);
  free(c->open);
  free(c->slots);
  free(c);
}

static uint8_t *blob_dup(const gpuphase_blob *b, size_t *n) {
  *n = 0;
  if (!b->len) return NULL;
  uint8_t *p = malloc(b->len);
  if (p) memcpy(p, b->data, b->len), *n = b->len;
  return p;
}

/* Index of id in map, added (zeroed) when new; SIZE_MAX: no memory. */
static size_t slot_of(gp_cs *c, struct gp_u64map *m, uint64_t id, void **v,
                      size_t *n, size_t *cap, size_t elt, int *fresh) {
  uint64_t *p = gp_u64map_get(m, id);
  *fresh = !p;
  if (p) return (size_t)*p;
  if (grow(c, v, cap, *n + 1, elt) < 0 || gp_u64map_put(m, id, *n) < 0) {
    c->oom = 1;
    return SIZE_MAX;
  }
  memset((char *)*v + *n * elt, 0, elt);
  return (*n)++;
}

int gp_cs_meta(gp_cs *c, const struct gpuphase_record *rec) {
  int fresh;
  size_t i;
  switch (rec->kind) {
  case GPUPHASE_REC_MODULE: {
    const struct gpuphase_module *r = &rec->u.module;
    i = slot_of(c, &c->mod_ix, r->module, (void **)&c->mods, &c->nmods,
                &c->capmods, sizeof *c->mods, &fresh);
    if (i == SIZE_MAX) return -1;
    struct mod *m = &c->mods[i];
    if (!fresh) break; /* written again when unmapped: the same object */
    m->path = r->path;
    m->base = r->base;
    m->size = r->size;
    m->bid = blob_dup(&r->build_id, &m->nbid);
    break;
  }
  case GPUPHASE_REC_PYCODE: {
    const struct gpuphase_pycode *r = &rec->u.pycode;
    i = slot_of(c, &c->code_ix, r->code, (void **)&c->codes, &c->ncodes,
                &c->capcodes, sizeof *c->codes, &fresh);
    if (i == SIZE_MAX) return -1;
    if (!fresh) break;
    struct code *k = &c->codes[i];
    k->file = r->file;
    k->name = r->name;
    k->first_line = r->first_line;
    k->py_version = r->py_version;
    k->tab = blob_dup(&r->linetable, &k->ntab);
    break;
  }
  case GPUPHASE_REC_FRAME: {
    const struct gpuphase_frame *r = &rec->u.frame;
    c->seen = 1;
    i = slot_of(c, &c->node_ix, r->node, (void **)&c->nodes, &c->nnodes,
                &c->capnodes, sizeof *c->nodes, &fresh);
    if (i == SIZE_MAX) return -1;
    if (!fresh) break; /* each node is written once: keep the first */
    c->nodes[i] = (struct node){r->parent, r->module, r->pc,
                                (uint8_t)(r->kind < 256 ? r->kind : 0),
                                (uint8_t)r->flags};
    break;
  }
  default:
    break;
  }
  return c->oom ? -1 : 0;
}

/* ---- the sweep's hooks ---- */

static uint32_t row_hash(uint64_t stack, uint32_t api) {
  return (uint32_t)(((stack ^ ((uint64_t)api << 40)) * 0x9e3779b97f4a7c15ull) >>
                    (64 - ROW_CACHE_BITS));
}

static struct row *row_get(gp_cs *c, uint64_t stack, uint32_t api,
                           uint32_t *ri) {
  uint32_t h = row_hash(stack, api), k = c->cache[h];
  if (k && c->rows[k - 1].stack == stack && c->rows[k - 1].api == api)
    return &c->rows[*ri = k - 1];
  uint64_t *p = gp_u64map_get(&c->row_ix, stack);
  uint32_t head = p ? (uint32_t)*p : NOROW;
  for (uint32_t i = head; i != NOROW; i = c->rows[i].next)
    if (c->rows[i].api == api) {
      c->cache[h] = i + 1;
      return &c->rows[*ri = i];
    }
  if (GROWV(c, c->rows, c->caprows, c->nrows + 1) < 0 ||
      gp_u64map_put(&c->row_ix, stack, c->nrows) < 0) {
    c->oom = 1;
    return NULL;
  }
  struct row *r = &c->rows[c->nrows];
  memset(r, 0, sizeof *r);
  r->stack = stack;
  r->api = api;
  r->next = head;
  gp_hist_init(&r->dur);
  *ri = (uint32_t)c->nrows++;
  c->cache[h] = *ri + 1;
  return r;
}

static struct slot *slot_grow(gp_cs *c, uint32_t s) {
  {
    if (s > 1u << 20 || GROWV(c, c->slots, c->capslots, (size_t)s + 1) < 0)
      return NULL;
    for (size_t i = c->nslots; i <= s; i++)
      c->slots[i] = (struct slot){0, 0, 0, NOROW, NOROW, 0};
    c->nslots = (size_t)s + 1;
  }
  return &c->slots[s];
}

static inline struct slot *slot_get(gp_cs *c, uint32_t s) {
  return s < c->nslots ? &c->slots[s] : slot_grow(c, s);
}

static void gap_close(gp_cs *c, uint32_t si, struct slot *s, uint32_t by) {
  uint64_t len = s->ge - s->gs;
  int x = si != 0;
  s->open = 0;
  if (s->prev != NOROW) c->rows[s->prev].after_ns[x] += len;
  if (by == NOROW) return; /* not captured: what no site explains */
  c->rows[by].gaps[x]++;
  c->rows[by].gap_ns[x] += len;
}

static void push_open(gp_cs *c, uint64_t start, uint64_t end, uint32_t ri,
                      uint32_t dev) {
  /* pruned by gp_cs_seg, which does nothing before a call-site record */
  if (!c->seen) return;
  if (GROWV(c, c->open, c->capopen, c->nopen + 1) < 0) return;
  c->open[c->nopen++] = (struct openb){start, end, ri, dev};
}

void gp_cs_call(gp_cs *c, uint64_t stack, uint32_t api, uint32_t dev,
                uint64_t s, uint64_t end, int blocking, int launch, int timed,
                uint64_t now) {
  uint32_t ri = NOROW;
  if (!stack) { /* it may end a gap, and be the call before one */
    if (!timed || !c->seen) return;
  } else {
    struct row *r = row_get(c, stack, api, &ri);
    if (!r) return;
    if (blocking) {
      r->count++;
      r->blocked += end - s;
      gp_hist_add(&r->dur, end - s);
      if (timed) push_open(c, s, end, ri, dev);
    }
    r->launches += launch != 0;
    if (!timed) return;
  }
  size_t lo = dev == GP_CS_NODEV ? 0 : dev,
         hi = dev == GP_CS_NODEV ? c->nslots : (size_t)dev + 1;
  if (dev != GP_CS_NODEV && !slot_get(c, dev)) return;
  for (size_t i = lo; i < hi; i++) {
    struct slot *sl = &c->slots[i];
    if (sl->open && sl->ge == now) gap_close(c, (uint32_t)i, sl, ri);
    if (end >= sl->last_end) sl->last = ri, sl->last_end = end;
  }
}

void gp_cs_late_block(gp_cs *c, uint64_t stack, uint32_t api, uint32_t dev,
                      uint64_t start, uint64_t end, uint64_t now, int open,
                      uint64_t idle0, uint64_t idle) {
  uint32_t ri;
  struct row *r = row_get(c, stack, api, &ri);
  if (!r) return;
  r->count++;
  r->blocked += end - start;
  gp_hist_add(&r->dur, end - start);
  r->idle[0] += idle0;
  r->idle[1] += idle;
  if (open) push_open(c, now, end, ri, dev);
}

void gp_cs_seg(gp_cs *c, uint32_t si, int cat, uint64_t from, uint64_t to,
               uint64_t now) {
  if (!c->seen) return; /* no call-site record (yet) */
  struct slot *s = slot_get(c, si);
  if (!s || to <= from) return;
  int x = si != 0;
  if (cat == GP_CAT_SYNC_IDLE) {
    /* A call that ended before now can no longer hold a device: any
     * device idle when it ended was accounted up to its end then. The
     * earliest-started blocking call of this device gets the time. */
    size_t k = 0;
    uint32_t best = NOROW;
    for (size_t i = 0; i < c->nopen; i++) {
      struct openb *o = &c->open[i];
      if (o->end < now) continue;
      c->open[k++] = *o;
      if (best == NOROW && (o->dev == si || o->dev == GP_CS_NODEV) &&
          o->start <= from && o->end >= to)
        best = o->row;
    }
    c->nopen = k;
    if (best != NOROW) c->rows[best].idle[x] += to - from;
  }
  if (cat == GP_CAT_HOST_WAIT) {
    if (s->open && s->ge == from) {
      s->ge = to;
      return;
    }
    if (s->open) gap_close(c, si, s, NOROW);
    s->open = 1;
    s->gs = from;
    s->ge = to;
    s->prev = s->last;
    return;
  }
  if (s->open) gap_close(c, si, s, NOROW);
}

void gp_cs_dev_added(gp_cs *c, uint32_t si) {
  struct slot *s0 = slot_get(c, 0), *s = s0 ? slot_get(c, si) : NULL;
  if (!s) return;
  *s = c->slots[0];
  for (size_t i = 0; i < c->nrows; i++) {
    struct row *r = &c->rows[i];
    r->idle[1] += r->idle[0];
    r->gaps[1] += r->gaps[0];
    r->gap_ns[1] += r->gap_ns[0];
    r->after_ns[1] += r->after_ns[0];
  }
}

/* ---- frames ---- */

/* The line of a Python frame, from its code's line table (reports/pyline.c);
 * the code's first line where the table does not say or is damaged. */
static int64_t callsite_py_line(const struct code *k, uint64_t unit) {
  int64_t line = gp_pyline((uint32_t)k->py_version, k->tab, k->ntab,
                           (int64_t)k->first_line, unit);
  return line < 0 ? (int64_t)k->first_line : line;
}

static const char *base_name(const char *p) {
  const char *s = p ? strrchr(p, '/') : NULL;
  return s ? s + 1 : p ? p : "";
}

static int starts(const char *s, const char *pre) {
  return s && !strncmp(s, pre, strlen(pre));
}

/* Who a frame belongs to, for the collapse rule. */
enum { OWN_USER, OWN_OURS, OWN_CUDA, OWN_INTERP, OWN_FRAMEWORK, OWN_SYSTEM };

/* ".../lib/python3.11/...": the standard library (not "lib/python_jobs") */
static int in_stdlib(const char *file) {
  for (const char *p = file; (p = strstr(p, "/lib")); p++) {
    const char *q = p + 4;
    if (!strncmp(q, "64", 2)) q += 2;
    if (!strncmp(q, "/python", 7) && q[7] >= '0' && q[7] <= '9') return 1;
  }
  return 0;
}

static int python_owner(const char *file) {
  if (!file || file[0] == '<' || strstr(file, "/site-packages/") ||
      strstr(file, "/dist-packages/") || in_stdlib(file))
    return OWN_FRAMEWORK;
  return OWN_USER;
}

static int native_owner(const char *path) {
  static const char *const cuda[] = {
      "libcuda.",      "libcudart",    "libcupti",     "libnvidia",
      "libcublas",     "libcudnn",     "libnccl",      "libnvrtc",
      "libcufft",      "libcurand",    "libcusparse",  "libcusolver",
      "libnvToolsExt", "libnvJitLink", "libnvjitlink", "libsimcuda"};
  static const char *const sys[] = {
      "/lib/",           "/lib64/",     "/usr/lib", "/usr/libexec",
      "/usr/local/cuda", "/opt/nvidia", "/bin/",    "/sbin/",
      "/usr/bin/",       "/usr/sbin/",  "["};
  const char *b = base_name(path);
  if (starts(b, "libgpuphase")) return OWN_OURS;
  for (size_t i = 0; i < sizeof cuda / sizeof *cuda; i++)
    if (starts(b, cuda[i])) return OWN_CUDA;
  if (starts(b, "python") || starts(b, "libpython")) return OWN_INTERP;
  if (!path || !*path) return OWN_SYSTEM;
  /* the interpreter's own extension modules (_ctypes: a ctypes call's
   * frames) */
  if (strstr(path, "/lib-dynload/")) return OWN_INTERP;
  if (strstr(path, "/site-packages/") || strstr(path, "/dist-packages/"))
    return OWN_FRAMEWORK;
  for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
    if (starts(path, sys[i])) return OWN_SYSTEM;
  return OWN_USER;
}

struct rawf {           /* a frame of a stack before collapse */
  struct gp_cs_frame f; /* Python frames; native ones are named if shown */
  int owner;
  const struct node *nd; /* native: to symbolise; NULL: f is the frame */
};

static char *dup0(const char *s) {
  return s ? strdup(s) : NULL;
}

static void frame_free(struct gp_cs_frame *f) {
  free(f->function);
  free(f->file);
  free(f->module);
}

/* GCC's and Clang's clones of a C function keep the function's name with
 * suffixes ("do_sync.constprop.0", "msort.part.0", "f.isra.0.cold",
 * "g.llvm.123"): the function is named without them (a C++ clone is
 * demangled into "[clone .isra.0]", which gp_short_name leaves out). */
static void strip_clone(char *s) {
  static const char *const word[] = {"constprop", "isra",       "part",
                                     "cold",      "lto_priv",   "localalias",
                                     "llvm",      "specialized", "clone"};
  for (;;) {
    char *dot = strrchr(s, '.');
    if (!dot || dot == s) return;
    char *w = dot + 1;
    if (*w && strspn(w, "0123456789") == strlen(w)) { /* ".N" */
      char *prev = dot;
      while (prev > s && prev[-1] != '.')
        prev--;
      if (prev == s) return;
      *dot = 0; /* try the word before the number */
      w = prev;
      dot = prev - 1;
      int known = 0;
      for (size_t i = 0; i < sizeof word / sizeof *word && !known; i++)
        known = !strcmp(w, word[i]);
      if (!known || dot == s) {
        *(w + strlen(w)) = '.'; /* put the number back */
        return;
      }
      *dot = 0;
      continue;
    }
    int known = 0;
    for (size_t i = 0; i < sizeof word / sizeof *word && !known; i++)
      known = !strcmp(w, word[i]);
    if (!known) return;
    *dot = 0;
  }
}

char *gp_cs_fn_name(const char *raw) {
  /* a versioned symbol from the dynamic symbol table ("memcpy@@GLIBC_2.14",
   * "foo@VERS"): the name without its version */
  const char *at = raw ? strchr(raw, '@') : NULL;
  char plain[512];
  if (at && at > raw && (size_t)(at - raw) < sizeof plain) {
    memcpy(plain, raw, (size_t)(at - raw));
    plain[at - raw] = 0;
    raw = plain;
  }
  char *d = gp_demangle(raw);
  if (!d) {
    char *c = dup0(raw);
    if (c) strip_clone(c);
    /* a name from the debug information (an inlined C++ function has
     * no linkage name there): its template arguments left out too */
    if (c && strchr(c, '<')) {
      char *t = dup0(c);
      if (t) gp_short_name(t, c, strlen(c) + 1);
      free(t);
    }
    return c;
  }
  size_t n = strlen(d) + 1;
  char *s = malloc(n);
  if (s) gp_short_name(d, s, n);
  free(d);
  return s;
}

struct fin {
  gp_cs *c;
  gp_sym *sym;
  gp_cs_str_fn str;
  void *ctx;
  struct rawf *v; /* the stack */
  size_t n, cap;
  struct gp_cs_frame *o; /* the frames shown */
  size_t no, capo;
};

static int add_frame(struct fin *F, struct gp_cs_frame f, int owner,
                     const struct node *nd) {
  if (grow(F->c, (void **)&F->v, &F->cap, F->n + 1, sizeof *F->v) < 0) {
    frame_free(&f);
    return -1;
  }
  F->v[F->n++] = (struct rawf){f, owner, nd};
  return 0;
}

static int out_frame(struct fin *F, struct gp_cs_frame f) {
  if (grow(F->c, (void **)&F->o, &F->capo, F->no + 1, sizeof *F->o) < 0) {
    frame_free(&f);
    return -1;
  }
  F->o[F->no++] = f;
  return 0;
}

static const char *mod_path(struct fin *F, const struct node *nd,
                            const struct mod **m) {
  uint64_t *mi = gp_u64map_get(&F->c->mod_ix, nd->module);
  *m = mi ? &F->c->mods[*mi] : NULL;
  return *m ? F->str(F->ctx, (*m)->path) : NULL;
}

/* A native frame, only now that it is shown: its frames (the inlined ones
 * first; only the innermost when `one`) go to F->o. */
static int native_frames(struct fin *F, const struct node *nd, int one) {
  const struct mod *m;
  const char *path = mod_path(F, nd, &m);
  struct gp_sym_frame sf[16];
  size_t n = 0;
  if (m && F->sym)
    n = gp_sym_lookup(F->sym, nd->module, path, m->bid, m->nbid, nd->pc, sf,
                      one ? 1 : 16);
  for (size_t i = 0; i < n; i++) {
    struct gp_cs_frame f = {gp_cs_fn_name(sf[i].function),
                            dup0(sf[i].file),
                            sf[i].line,
                            dup0(path),
                            0,
                            sf[i].inlined};
    if (!f.function) {
      char b[64];
      snprintf(b, sizeof b, "+0x%llx", (unsigned long long)nd->pc);
      size_t len = strlen(base_name(path)) + strlen(b) + 1;
      if ((f.function = malloc(len)))
        snprintf(f.function, len, "%s%s", base_name(path), b);
    }
    if (out_frame(F, f) < 0) return -1;
  }
  if (n) return 0;
  char b[64];
  snprintf(b, sizeof b, "+0x%llx", (unsigned long long)nd->pc);
  const char *bn = m ? base_name(path) : "?";
  size_t len = strlen(*bn ? bn : "?") + strlen(b) + 1;
  struct gp_cs_frame f = {malloc(len), NULL, 0, dup0(path), 0, 0};
  if (f.function) snprintf(f.function, len, "%s%s", *bn ? bn : "?", b);
  return out_frame(F, f);
}

static int python_frame(struct fin *F, const struct node *nd) {
  uint64_t *ki = gp_u64map_get(&F->c->code_ix, nd->module);
  const struct code *k = ki ? &F->c->codes[*ki] : NULL;
  const char *file = k ? F->str(F->ctx, k->file) : NULL;
  const char *name = k ? F->str(F->ctx, k->name) : NULL;
  struct gp_cs_frame f = {dup0(name ? name : "?"),
                          dup0(file),
                          k ? callsite_py_line(k, nd->pc) : 0,
                          dup0(file),
                          1,
                          0};
  return add_frame(F, f, python_owner(file), NULL);
}

static int native_node(struct fin *F, const struct node *nd) {
  const struct mod *m;
  struct gp_cs_frame f = {0};
  return add_frame(F, f, native_owner(mod_path(F, nd, &m)), nd);
}

/* Resolves the stack of node id into F->v, innermost first. Returns 1 when
 * truncated, 0, or -1 when out of memory. *known: the node is in the
 * trace. */
static int walk(struct fin *F, uint64_t id, int *known) {
  F->n = 0;
  *known = 0;
  for (int depth = 0; id; depth++) {
    uint64_t *p = gp_u64map_get(&F->c->node_ix, id);
    if (!p) return depth ? 1 : 0; /* a parent missing: cut there */
    *known = 1;
    if (depth >= MAX_DEPTH) return 1;
    const struct node *nd = &F->c->nodes[*p];
    if (nd->kind == GPUPHASE_FRAME_TRUNCATED) return 1;
    int rc = nd->kind == GPUPHASE_FRAME_NATIVE   ? native_node(F, nd)
             : nd->kind == GPUPHASE_FRAME_PYTHON ? python_frame(F, nd)
                                                 : 0;
    if (rc < 0) return -1;
    id = nd->parent;
  }
  return 0;
}

/* The frames shown: all, or (collapse) the innermost user frame, else the
 * innermost one outside our library and CUDA's. The interpreter's own
 * frames give way to the Python frames of the stack. */
static void shown(struct fin *F, int all, size_t *first, size_t *count,
                  size_t *title) {
  int py = 0;
  for (size_t i = 0; i < F->n; i++)
    py |= F->v[i].f.python;
  size_t k = 0;
  for (size_t i = 0; i < F->n; i++) {
    if (py && !F->v[i].f.python && F->v[i].owner == OWN_INTERP) {
      frame_free(&F->v[i].f);
      continue;
    }
    F->v[k++] = F->v[i];
  }
  F->n = k;
  size_t t = SIZE_MAX;
  for (size_t i = 0; i < F->n && t == SIZE_MAX; i++)
    if (F->v[i].owner == OWN_USER) t = i;
  /* no user frame (the program's code installed under site-packages, say):
   * the innermost Python frame, which names a line of Python, before a
   * native one (libffi, the interpreter) */
  for (size_t i = 0; i < F->n && t == SIZE_MAX; i++)
    if (F->v[i].f.python) t = i;
  for (size_t i = 0; i < F->n && t == SIZE_MAX; i++)
    if (F->v[i].owner != OWN_OURS && F->v[i].owner != OWN_CUDA) t = i;
  if (t == SIZE_MAX) t = 0;
  *first = all ? 0 : t;
  *count = all || !F->n ? F->n : 1;
  *title = all ? t : 0;
}

/* ---- the result ---- */

void gp_cs_res_free(struct gp_cs_res *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    struct gp_cs_site *s = &r->v[i];
    free(s->api);
    for (size_t j = 0; j < s->nframes; j++)
      frame_free(&s->frames[j]);
    free(s->frames);
    gp_hist_free(&s->dur);
  }
  free(r->v);
  free(r);
}

static int same_str(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

static int same_site(const struct gp_cs_site *s, const char *api,
                     const struct gp_cs_frame *f, size_t n) {
  if (s->nframes != n || !same_str(s->api, api)) return 0;
  for (size_t i = 0; i < n; i++) {
    const struct gp_cs_frame *a = &s->frames[i], *b = &f[i];
    if (a->line != b->line || a->python != b->python ||
        !same_str(a->function, b->function) || !same_str(a->file, b->file) ||
        !same_str(a->module, b->module))
      return 0;
  }
  return 1;
}

static uint64_t site_hash(const char *api, const struct gp_cs_frame *f,
                          size_t n) {
  uint64_t h = 1469598103934665603ull;
  const char *parts[4];
  for (size_t i = 0; i <= n; i++) {
    size_t np = 0;
    if (i == n) {
      parts[np++] = api;
    } else {
      parts[np++] = f[i].function;
      parts[np++] = f[i].file;
      parts[np++] = f[i].module;
      h = (h ^ (uint64_t)f[i].line) * 1099511628211ull;
    }
    for (size_t p = 0; p < np; p++)
      for (const char *s = parts[p] ? parts[p] : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  return h;
}

struct sites {
  struct gp_cs_res *r;
  size_t cap;
  struct gp_u64map ix; /* hash -> index of the first site (chain by hash) */
  uint32_t *next;
  size_t capnext;
};

/* The site of (api, frames), added when new: takes the frames (freed when
 * the site exists). NULL: no memory. */
static struct gp_cs_site *site_get(struct sites *S, const char *api,
                                   struct gp_cs_frame *f, size_t n, int own,
                                   int truncated) {
  uint64_t h = site_hash(api, f, n);
  uint64_t *p = gp_u64map_get(&S->ix, h);
  for (uint32_t i = p ? (uint32_t)*p : NOROW; i != NOROW; i = S->next[i]) {
    if (!same_site(&S->r->v[i], api, f, n)) continue;
    if (own) {
      for (size_t j = 0; j < n; j++)
        frame_free(&f[j]);
      free(f);
    }
    S->r->v[i].truncated |= truncated;
    return &S->r->v[i];
  }
  struct gp_cs_res *r = S->r;
  if (r->n + 1 > S->cap) {
    size_t cap = S->cap ? 2 * S->cap : 16;
    void *v = realloc(r->v, cap * sizeof *r->v);
    void *nx = v ? realloc(S->next, cap * sizeof *S->next) : NULL;
    if (v) r->v = v;
    if (!v || !nx) return NULL;
    S->next = nx;
    S->cap = cap;
  }
  struct gp_cs_site *s = &r->v[r->n];
  memset(s, 0, sizeof *s);
  gp_hist_init(&s->dur);
  if (!(s->api = dup0(api ? api : "?"))) return NULL;
  if (own) {
    s->frames = f;
  } else if (n) {
    if (!(s->frames = calloc(n, sizeof *s->frames))) return NULL;
    for (size_t j = 0; j < n; j++) {
      s->frames[j] = f[j];
      s->frames[j].function = dup0(f[j].function);
      s->frames[j].file = dup0(f[j].file);
      s->frames[j].module = dup0(f[j].module);
    }
  }
  s->nframes = n;
  s->truncated = truncated;
  S->next[r->n] = p ? (uint32_t)*p : NOROW;
  if (gp_u64map_put(&S->ix, h, r->n) < 0) return NULL;
  r->n++;
  return s;
}

static void site_add(struct gp_cs_site *d, const struct gp_cs_site *s) {
  d->count += s->count;
  d->blocked_ns += s->blocked_ns;
  d->idle_ns += s->idle_ns;
  gp_hist_merge(&d->dur, &s->dur);
  d->gaps += s->gaps;
  d->gap_ns += s->gap_ns;
  d->after_ns += s->after_ns;
  d->launches += s->launches;
}

static int by_weight(const void *pa, const void *pb) {
  const struct gp_cs_site *a = pa, *b = pb;
  uint64_t wa = a->idle_ns + a->gap_ns, wb = b->idle_ns + b->gap_ns;
  if (wa != wb) return wa < wb ? 1 : -1;
  if (a->blocked_ns != b->blocked_ns)
    return a->blocked_ns < b->blocked_ns ? 1 : -1;
  if (a->launches != b->launches) return a->launches < b->launches ? 1 : -1;
  return 0;
}

static uint64_t less(uint64_t a, uint64_t b) {
  return a > b ? a - b : 0;
}

struct gp_cs_res *gp_cs_finish(gp_cs *c, int frames_all, int real,
                               const struct gp_cs_totals *tot, gp_cs_str_fn str,
                               gp_cs_str_fn api, void *ctx) {
  struct gp_cs_res *r = calloc(1, sizeof *r);
  if (!r || c->oom) {
    free(r);
    return NULL;
  }
  int x = real ? 1 : 0;
  r->frames_all = frames_all;
  r->has_stacks = c->seen;
  for (size_t i = 0; i < c->nslots; i++) /* gaps open at the end */
    if (c->slots[i].open) gap_close(c, (uint32_t)i, &c->slots[i], NOROW);
  struct fin F = {c, gp_sym_new(), str, ctx, NULL, 0, 0, NULL, 0, 0};
  struct sites S = {r, 0, {0}, NULL, 0};
  int bad = 0;
  uint64_t sync_named = 0, host_named = 0, blk_named = 0, calls_named = 0,
           launch_named = 0;
  for (size_t i = 0; i < c->nrows && !bad; i++) {
    struct row *w = &c->rows[i];
    int known = 0, trunc = 0;
    F.n = 0;
    if (w->stack) trunc = walk(&F, w->stack, &known);
    if (trunc < 0) {
      bad = 1;
      break;
    }
    if (!known) { /* a stack the trace does not hold: not captured */
      for (size_t j = 0; j < F.n; j++)
        frame_free(&F.v[j].f);
      continue;
    }
    size_t first, count, title_raw, title = 0;
    shown(&F, frames_all, &first, &count, &title_raw);
    F.no = 0;
    for (size_t j = 0; j < F.n; j++) {
      if (j < first || j >= first + count || bad) {
        frame_free(&F.v[j].f);
        continue;
      }
      if (j == first + title_raw) title = F.no;
      if (F.v[j].nd)
        bad = native_frames(&F, F.v[j].nd, !frames_all) < 0;
      else
        bad = out_frame(&F, F.v[j].f) < 0;
    }
    struct gp_cs_frame *fv = F.no ? malloc(F.no * sizeof *fv) : NULL;
    if (F.no && !fv) bad = 1;
    if (bad) {
      for (size_t j = 0; j < F.no; j++)
        frame_free(&F.o[j]);
      free(fv);
      break;
    }
    if (F.no) memcpy(fv, F.o, F.no * sizeof *fv);
    count = F.no;
    struct gp_cs_site *s =
        site_get(&S, api(ctx, w->api), fv, count, 1, trunc == 1);
    if (!s) {
      bad = 1;
      break;
    }
    s->title = title;
    sync_named += w->idle[x];
    host_named += w->gap_ns[x];
    blk_named += w->blocked;
    calls_named += w->count;
    launch_named += w->launches;
    s->count += w->count;
    s->blocked_ns += w->blocked;
    s->idle_ns += w->idle[x];
    gp_hist_merge(&s->dur, &w->dur);
    s->gaps += w->gaps[x];
    s->gap_ns += w->gap_ns[x];
    s->after_ns += w->after_ns[x];
    s->launches += w->launches;
  }
  /* what the sites do not explain: the devices' totals less theirs */
  r->sync_idle_ns = tot->sync_idle;
  r->host_wait_ns = tot->host_wait;
  r->blocked_ns = tot->blocked;
  r->launches = tot->launches;
  r->sync_uncaptured_ns = less(tot->sync_idle, sync_named);
  r->host_wait_uncaptured_ns = less(tot->host_wait, host_named);
  r->blocked_uncaptured_ns = less(tot->blocked, blk_named);
  r->calls_uncaptured = less(tot->calls, calls_named);
  r->launches_uncaptured = less(tot->launches, launch_named);
  free(F.v);
  free(F.o);
  r->modules_read = F.sym ? gp_sym_modules(F.sym) : 0;
  gp_sym_free(F.sym);
  gp_u64map_free(&S.ix);
  free(S.next);
  if (bad) {
    gp_cs_res_free(r);
    return NULL;
  }
  if (r->n) qsort(r->v, r->n, sizeof *r->v, by_weight);
  return r;
}

int gp_cs_res_merge(struct gp_cs_res *d, const struct gp_cs_res *s) {
  struct sites S = {d, d->n, {0}, NULL, 0};
  int rc = 0;
  d->has_stacks |= s->has_stacks;
  d->frames_all |= s->frames_all;
  if (d->n && !(S.next = malloc(d->n * sizeof *S.next))) return -1;
  for (size_t i = 0; i < d->n && !rc; i++) { /* index what d holds */
    uint64_t h = site_hash(d->v[i].api, d->v[i].frames, d->v[i].nframes);
    uint64_t *p = gp_u64map_get(&S.ix, h);
    S.next[i] = p ? (uint32_t)*p : NOROW;
    rc = gp_u64map_put(&S.ix, h, i);
  }
  for (size_t i = 0; i < s->n && !rc; i++) {
    const struct gp_cs_site *x = &s->v[i];
    struct gp_cs_site *y =
        site_get(&S, x->api, x->frames, x->nframes, 0, x->truncated);
    if (!y) {
      rc = -1;
    } else {
      y->title = x->title;
      site_add(y, x);
    }
  }
  d->sync_idle_ns += s->sync_idle_ns;
  d->sync_uncaptured_ns += s->sync_uncaptured_ns;
  d->host_wait_ns += s->host_wait_ns;
  d->host_wait_uncaptured_ns += s->host_wait_uncaptured_ns;
  d->blocked_ns += s->blocked_ns;
  d->blocked_uncaptured_ns += s->blocked_uncaptured_ns;
  d->calls_uncaptured += s->calls_uncaptured;
  d->launches += s->launches;
  d->launches_uncaptured += s->launches_uncaptured;
  gp_u64map_free(&S.ix);
  free(S.next);
  if (!rc && d->n) qsort(d->v, d->n, sizeof *d->v, by_weight);
  return rc;
}

uint64_t gp_cs_weight(const struct gp_cs_site *s, int kind, int blocked) {
  switch (kind) {
  case GP_CS_BLOCKING:
    return blocked ? s->blocked_ns : s->idle_ns;
  case GP_CS_IDLE_END:
    return blocked ? 0 : s->gap_ns;
  default:
    return s->launches;
  }
}

const struct gp_cs_frame *gp_cs_title(const struct gp_cs_site *s) {
  if (!s->nframes) return NULL;
  return &s->frames[s->title < s->nframes ? s->title : 0];
}

void gp_cs_frame_str(const struct gp_cs_frame *f, char *out, size_t cap) {
  const char *fn = f->function ? f->function : "?";
  if (f->python)
    snprintf(out, cap, "%s:%lld (%s)", base_name(f->file ? f->file : "?"),
             (long long)f->line, fn);
  else if (f->file && f->line > 0)
    snprintf(out, cap, "%s (%s:%lld)%s", fn, base_name(f->file),
             (long long)f->line, f->inlined ? " [inlined]" : "");
  else
    snprintf(out, cap, "%s", fn);
}
