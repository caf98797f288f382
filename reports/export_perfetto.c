/* Perfetto's protobuf trace (TrackEvent), encoded by hand. One packet
 * sequence per track: its first packet clears the incremental state,
 * declares the track and sets the packet defaults (the track, and a
 * sequence-scoped incremental clock, so timestamps are deltas); names,
 * annotation names and annotation strings are interned per sequence on
 * first use. Slices are written as BEGIN at their start and END held on a
 * per-track stack until a later BEGIN (or the end) passes them: ends before
 * begins at equal times. Field numbers: perfetto's protos/perfetto/trace. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "u64map.h"
#include "util.h"

enum {
  CLOCK_ID = 64, /* sequence-scoped, incremental */
  CLOCK_BOOTTIME = 6,
  F_CLEARED = 1,
  F_NEEDS = 2,
  T_BEGIN = 1,
  T_END = 2,
  T_INSTANT = 3,
  T_COUNTER = 4,
  MAX_OPEN = 256,
  DESC_SEQ = 1 /* descriptors of tracks without events */
};

struct buf {
  unsigned char *p;
  size_t n, cap;
  int oom;
};

static void need(struct buf *b, size_t k) {
  if (b->n + k <= b->cap || b->oom) return;
  size_t c = b->cap ? b->cap * 2 : 256;
  while (c < b->n + k)
    c *= 2;
  unsigned char *q = realloc(b->p, c);
  if (!q) {
    b->oom = 1;
    return;
  }
  b->p = q;
  b->cap = c;
}

static void varint(struct buf *b, uint64_t v) {
  need(b, 10);
  if (b->oom) return;
  while (v >= 0x80) {
    b->p[b->n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  b->p[b->n++] = (unsigned char)v;
}

static void tag(struct buf *b, unsigned field, unsigned wire) {
  varint(b, (uint64_t)field << 3 | wire);
}

static void fu(struct buf *b, unsigned field, uint64_t v) {
  tag(b, field, 0);
  varint(b, v);
}

static void fbytes(struct buf *b, unsigned field, const void *d, size_t n) {
  tag(b, field, 2);
  varint(b, n);
  need(b, n);
  if (b->oom) return;
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

/* A protobuf string must be UTF-8: invalid bytes become U+FFFD, as the
 * Chrome export writes them (a trace's names are bytes as the program
 * gave them). Valid text, the rule, goes as it is. */
static void fstr(struct buf *b, unsigned field, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t len = strlen(s), i = 0, k = 0;
  uint32_t cp;
  while (i < len && (k = gp_utf8_seq(p + i, len - i, &cp)) > 0)
    i += k;
  if (i == len) {
    fbytes(b, field, s, len);
    return;
  }
  size_t cap = len * 3 + 1, n = 0; /* each bad byte becomes 3 */
  char *t = malloc(cap);
  if (!t) {
    b->oom = 1;
    return;
  }
  for (i = 0; i < len;) {
    k = gp_utf8_seq(p + i, len - i, &cp);
    if (k) {
      memcpy(t + n, p + i, k);
      n += k, i += k;
    } else {
      memcpy(t + n, "\xef\xbf\xbd", 3);
      n += 3, i++;
    }
  }
  fbytes(b, field, t, n);
  free(t);
}

static void fmsg(struct buf *b, unsigned field, const struct buf *m) {
  if (m->oom) b->oom = 1;
  fbytes(b, field, m->p, m->n);
}

static void ffixed64(struct buf *b, unsigned field, uint64_t v) {
  tag(b, field, 1);
  need(b, 8);
  if (b->oom) return;
  for (int i = 0; i < 8; i++)
    b->p[b->n++] = (unsigned char)(v >> (8 * i));
}

static void fdouble(struct buf *b, unsigned field, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  ffixed64(b, field, v);
}

struct seq {
  uint32_t id;
  uint64_t last; /* last timestamp written */
  struct gp_u64map names;
  uint64_t next_iid;
  uint32_t argmask, valmask; /* annotation names / strings interned */
  uint64_t ends[MAX_OPEN];
  size_t nends;
};

struct pf {
  FILE *f;
  struct gp_u64map ix; /* track uuid -> seq index + 1 (0: no events) */
  struct seq *seqs;
  size_t nseq;
  uint32_t next_id;
  int desc_started, failed;
  uint64_t notes_uuid;
  struct buf pkt, te, in, sub, tmp, arg;
};

static int out_packet(struct pf *p) {
  if (p->pkt.oom) return -1;
  struct buf hdr = {0};
  unsigned char h[12];
  hdr.p = h;
  hdr.cap = sizeof h;
  tag(&hdr, 1, 2);
  varint(&hdr, p->pkt.n);
  if (fwrite(h, 1, hdr.n, p->f) != hdr.n ||
      fwrite(p->pkt.p, 1, p->pkt.n, p->f) != p->pkt.n)
    return p->failed = 1, -1;
  return 0;
}

static struct seq *seq_of(struct pf *p, uint64_t uuid) {
  uint64_t *v = gp_u64map_get(&p->ix, uuid);
  return v && *v ? &p->seqs[*v - 1] : NULL;
}

static int pf_track(void *ctx, const struct gp_tl_track *t) {
  struct pf *p = ctx;
  struct buf *d = &p->te, *sub = &p->sub;
  d->n = sub->n = 0;
  fu(d, 1, t->uuid);
  if (t->parent) fu(d, 5, t->parent);
  switch (t->kind) {
  case GP_TL_PROCESS:
    fu(sub, 1, (uint64_t)(uint32_t)t->pid);
    fstr(sub, 6, t->name);
    fmsg(d, 3, sub);
    fu(d, 11, 3); /* children in explicit order */
    break;
  case GP_TL_THREAD:
    fu(sub, 1, (uint64_t)(uint32_t)t->pid);
    fu(sub, 2, (uint64_t)(uint32_t)t->tid);
    fstr(sub, 5, t->name);
    fmsg(d, 4, sub);
    break;
  case GP_TL_COUNTER:
    fstr(d, 2, t->name);
    if (t->unit == GP_TL_UNIT_BYTES)
      fu(sub, 3, 3); /* SIZE_BYTES */
    else if (t->unit == GP_TL_UNIT_PERCENT)
      fstr(sub, 6, "%");
    else if (t->unit_name && *t->unit_name)
      fstr(sub, 6, t->unit_name);
    fmsg(d, 8, sub);
    break;
  case GP_TL_GPU:
    fstr(d, 2, t->name);
    fu(d, 11, 3);
    break;
  default:
    fstr(d, 2, t->name);
    break;
  }
  if (t->kind != GP_TL_PROCESS && t->kind != GP_TL_THREAD)
    fu(d, 12, (uint64_t)(int64_t)t->order);
  if (t->merge_key) {
    fu(d, 15, 3); /* merge by key */
    fstr(d, 16, t->merge_key);
  }
  p->pkt.n = 0;
  if (t->kind == GP_TL_PROCESS || t->kind == GP_TL_GPU) {
    /* no events of their own: one shared sequence of descriptors */
    fmsg(&p->pkt, 60, d);
    fu(&p->pkt, 10, DESC_SEQ);
    return out_packet(p);
  }
  struct seq *s = realloc(p->seqs, (p->nseq + 1) * sizeof *s);
  if (!s) return -1;
  p->seqs = s;
  if (gp_u64map_put(&p->ix, t->uuid, p->nseq + 1) < 0) return -1;
  s = &p->seqs[p->nseq++];
  memset(s, 0, sizeof *s);
  s->id = ++p->next_id;
  /* the first packet: clear, descriptor, defaults */
  fmsg(&p->pkt, 60, d);
  fu(&p->pkt, 10, s->id);
  fu(&p->pkt, 13, F_CLEARED);
  sub->n = p->tmp.n = 0;
  fu(&p->tmp, 11, t->uuid);
  fu(sub, 58, CLOCK_ID);
  fmsg(sub, 11, &p->tmp);
  fmsg(&p->pkt, 59, sub);
  if (out_packet(p) < 0) return -1;
  /* the clock: deltas from 0, in ns of the trace clock */
  p->pkt.n = sub->n = p->tmp.n = 0;
  fu(&p->tmp, 1, CLOCK_ID);
  fu(&p->tmp, 2, 0);
  fu(&p->tmp, 3, 1);
  fmsg(sub, 1, &p->tmp);
  p->tmp.n = 0;
  fu(&p->tmp, 1, CLOCK_BOOTTIME);
  fu(&p->tmp, 2, 0);
  fmsg(sub, 1, &p->tmp);
  fmsg(&p->pkt, 6, sub);
  fu(&p->pkt, 10, s->id);
  fu(&p->pkt, 13, F_NEEDS);
  return out_packet(p);
}

/* Starts an event packet of sequence s at ts; te and in are empty. */
static void begin_packet(struct pf *p, struct seq *s, uint64_t ts) {
  p->pkt.n = p->te.n = p->in.n = 0;
  fu(&p->pkt, 8, ts - s->last);
  s->last = ts;
}

static int end_packet(struct pf *p, struct seq *s) {
  fmsg(&p->pkt, 11, &p->te);
  if (p->in.n) fmsg(&p->pkt, 12, &p->in);
  fu(&p->pkt, 10, s->id);
  fu(&p->pkt, 13, F_NEEDS);
  return out_packet(p);
}

static int write_end(struct pf *p, struct seq *s, uint64_t ts) {
  begin_packet(p, s, ts);
  fu(&p->te, 9, T_END);
  return end_packet(p, s);
}

/* Ends of open slices that are over by ts. */
static int flush_ends(struct pf *p, struct seq *s, uint64_t ts) {
  while (s->nends && s->ends[s->nends - 1] <= ts) {
    uint64_t e = s->ends[--s->nends];
    if (write_end(p, s, e < s->last ? s->last : e) < 0) return -1;
  }
  return 0;
}

static void intern_pair(struct pf *p, unsigned field, uint64_t iid,
                        const char *name) {
  p->tmp.n = 0;
  fu(&p->tmp, 1, iid);
  fstr(&p->tmp, 2, name);
  fmsg(&p->in, field, &p->tmp);
}

static void event_name(struct pf *p, struct seq *s, const char *name,
                       uint64_t key) {
  if (!key) {
    fstr(&p->te, 23, name);
    return;
  }
  uint64_t *v = gp_u64map_get(&s->names, key), iid;
  if (v) {
    iid = *v;
  } else {
    iid = ++s->next_iid;
    if (gp_u64map_put(&s->names, key, iid) < 0) p->te.oom = 1;
    intern_pair(p, 2, iid, name);
  }
  fu(&p->te, 10, iid);
}

static void annotation(struct pf *p, struct seq *s, const struct gp_tl_arg *a) {
  struct buf *b = &p->arg;
  b->n = 0;
  if (!(s->argmask & (1u << a->name))) {
    s->argmask |= 1u << a->name;
    intern_pair(p, 3, a->name + 1, gp_tl_arg_name[a->name]);
  }
  fu(b, 1, a->name + 1);
  if (a->type == GP_TL_ARG_U) {
    fu(b, 3, a->u);
  } else if (a->type == GP_TL_ARG_I) {
    fu(b, 4, (uint64_t)a->i);
  } else {
    if (!(s->valmask & (1u << a->u))) {
      s->valmask |= 1u << a->u;
      p->tmp.n = 0;
      fu(&p->tmp, 1, a->u + 1);
      fstr(&p->tmp, 2, gp_tl_strval[a->u]);
      fmsg(&p->in, 29, &p->tmp);
    }
    fu(b, 17, a->u + 1);
  }
  fmsg(&p->te, 4, b);
}

static int pf_slice(void *ctx, const struct gp_tl_slice *sl) {
  struct pf *p = ctx;
  struct seq *s = seq_of(p, sl->track);
  if (!s) return -1;
  if (flush_ends(p, s, sl->start) < 0) return -1;
  uint64_t end = sl->end;
  if (s->nends && end > s->ends[s->nends - 1]) end = s->ends[s->nends - 1];
  if (s->nends >= MAX_OPEN) return 0; /* the walk bounds nesting below */
  begin_packet(p, s, sl->start);
  fu(&p->te, 9, T_BEGIN);
  event_name(p, s, sl->name, sl->name_key);
  for (size_t i = 0; i < sl->nargs; i++)
    annotation(p, s, &sl->args[i]);
  for (size_t i = 0; i < sl->nflows_out; i++)
    ffixed64(&p->te, 47, sl->flows_out[i]);
  if (sl->flow_in) ffixed64(&p->te, 48, sl->flow_in);
  if (end_packet(p, s) < 0) return -1;
  s->ends[s->nends++] = end;
  return 0;
}

static int pf_begin(void *ctx, uint64_t track, uint64_t ts, const char *name,
                    uint64_t key) {
  struct pf *p = ctx;
  struct seq *s = seq_of(p, track);
  if (!s || flush_ends(p, s, ts) < 0) return -1;
  begin_packet(p, s, ts < s->last ? s->last : ts);
  fu(&p->te, 9, T_BEGIN);
  event_name(p, s, name, key);
  return end_packet(p, s);
}

static int pf_end(void *ctx, uint64_t track, uint64_t ts, uint64_t start,
                  const char *name) {
  (void)start, (void)name;
  struct pf *p = ctx;
  struct seq *s = seq_of(p, track);
  if (!s || flush_ends(p, s, ts) < 0) return -1;
  return write_end(p, s, ts < s->last ? s->last : ts);
}

static int pf_counter(void *ctx, uint64_t track, uint64_t ts, double v) {
  struct pf *p = ctx;
  struct seq *s = seq_of(p, track);
  if (!s) return -1;
  begin_packet(p, s, ts < s->last ? s->last : ts);
  fu(&p->te, 9, T_COUNTER);
  if (v > -9e18 && v < 9e18 && v == (double)(int64_t)v)
    fu(&p->te, 30, (uint64_t)(int64_t)v);
  else
    fdouble(&p->te, 44, v);
  return end_packet(p, s);
}

static int pf_note(void *ctx, uint64_t ts, const char *text) {
  struct pf *p = ctx;
  if (!p->notes_uuid) {
    p->notes_uuid = 1; /* the walk's uuids are >= 2^40 */
    struct gp_tl_track t = {.uuid = p->notes_uuid,
                            .kind = GP_TL_NOTES,
                            .name = "gpuphase export notes"};
    if (pf_track(p, &t) < 0) return -1;
  }
  struct seq *s = seq_of(p, p->notes_uuid);
  begin_packet(p, s, ts < s->last ? s->last : ts);
  fu(&p->te, 9, T_INSTANT);
  fstr(&p->te, 23, text);
  return end_packet(p, s);
}

static int pf_finish(void *ctx) {
  struct pf *p = ctx;
  for (size_t i = 0; i < p->nseq; i++)
    if (flush_ends(p, &p->seqs[i], UINT64_MAX) < 0) return -1;
  return p->failed ? -1 : 0;
}

static void pf_free(void *ctx) {
  struct pf *p = ctx;
  if (!p) return;
  for (size_t i = 0; i < p->nseq; i++)
    gp_u64map_free(&p->seqs[i].names);
  free(p->seqs);
  gp_u64map_free(&p->ix);
  free(p->pkt.p), free(p->te.p), free(p->in.p), free(p->sub.p);
  free(p->tmp.p), free(p->arg.p);
  free(p);
}

struct gp_xsink *gp_xsink_perfetto(FILE *f) {
  struct pf *p = calloc(1, sizeof *p);
  struct gp_xsink *x = calloc(1, sizeof *x);
  if (!p || !x) {
    free(p), free(x);
    return NULL;
  }
  p->f = f;
  p->next_id = DESC_SEQ;
  x->tl =
      (struct gp_tl_sink){p, pf_track, pf_slice, pf_begin, pf_end, pf_counter};
  x->note = pf_note;
  x->finish = pf_finish;
  x->free = pf_free;
  return x;
}
