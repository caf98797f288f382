/* Time-ordered reading (gpuphase_reader_open_sorted). Pass 1 walks the
 * frame headers, indexes frames by source and decodes only the metadata
 * frames (source 0) for their strings; pass 2 emits the untimed metadata in
 * file order, then merges the sources by `start` with a binary heap holding
 * one decoded frame per source (a sorted array of the sources' heads
 * instead of the heap when there are few), then the summary. Records are
 * handed out where the decoder left them (in their source's decoding
 * state), and a source's next record is decoded only when the caller asks
 * for the next one.
 *
 * Memory: the decoded frames held at once are bounded (docs/format.md,
 * section 5). A frame of up to HOLD_SMALL bytes (what the writer makes) is
 * held while its source waits; larger ones share BIG_BUDGET, and all of
 * them ALL_BUDGET. To load a frame past a budget, other sources' frames are
 * dropped (evicted) and decoded again when their source is next read, from
 * the payload offset where it stood (its decoding state stays); a head
 * waiting in the merge whose blobs point into a dropped frame has it
 * decoded again before it is handed out (detach, rehead). Reloading
 * is bounded too: past twice the file's decoded bytes plus RELOAD_SLACK the
 * reader gives up with GPUPHASE_E_NOMEM instead of thrashing.
 *
 * Decompression ahead (gp_reader_set_threads): worker threads decompress
 * the frames of sources other than 0, of up to HOLD_SMALL bytes, in the
 * order the merge will ask for them (a frame is needed once the one before
 * it in its source is used up: frames are taken by the file offset of
 * their predecessor, a source's first frame first), into at most
 * 2 * workers + 2 buffers of HOLD_SMALL bytes waiting to be taken, with as
 * many spare ones. The merge takes a frame from them when its source needs
 * it and decompresses it itself when no worker has started it; everything
 * else (the budgets, eviction, reload) is as without them, so the records,
 * their order and any error are the same. A worker's error is kept with
 * its frame and reported when the merge reaches that frame. The workers
 * also decode ahead what they decompress (see struct pre_kind): the merge
 * adds each record's field changes to its decoding state instead of
 * parsing varints. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "decode_in.h"
#include "reader_int.h"
#include "reader_ext.h"

enum { PHASE_META, PHASE_MERGE, PHASE_SUMMARY, PHASE_DONE, PHASE_MERGE_KEPT };

#define HOLD_SMALL (GP_FRAME_DEFAULT + (64u << 10))
#define BIG_BUDGET (128ull << 20)
#define ALL_BUDGET (512ull << 20)
#define RELOAD_SLACK (1ull << 30)
/* Decompression ahead: the merge takes what one or two workers decompress;
 * more only hold more buffers. */
#define PF_MAX_WORKERS 4

/* Blob fields of one kind, at most (MODULE, PYCODE and STRING have one). */
#define HEAD_BLOBS 4
#define BLOB_COUNT(code, type, name) +GP_IS_BLOB_##code
#define BLOB_BOUND(num, UP, low, FIELDS)                                       \
  _Static_assert((0 FIELDS(BLOB_COUNT)) <= HEAD_BLOBS, "blobs of " #low);
GPUPHASE_RECORD_KINDS(BLOB_BOUND)

/* Sources holding a decoded frame, small (0) or big (1); evictions take
 * them in turn (a clock hand), which does not degrade on cyclic use. */
struct held_list {
  uint32_t *idx;
  uint32_t n, cap, hand;
};

struct frame_ref {
  uint64_t off;
  uint32_t csize, usize;
  uint32_t pf; /* its entry in the schedule of decompression ahead + 1 */
};

/* Decompression ahead: one entry per frame the workers may take, in the
 * order the merge will need them. */
enum { PF_NONE, PF_BUSY, PF_READY, PF_TAKEN };

struct pf_ent {
  uint64_t off; /* the frame, as the workers read it */
  uint32_t csize, usize, source;
  int state;
  int err;
  uint8_t *buf; /* PF_READY: the payload, HOLD_SMALL + GP_DECODE_PAD */
  char *msg;    /* PF_READY with err: the message */
  uint8_t *pre; /* PF_READY: its records decoded ahead (NULL: none) */
  uint32_t npre; /* bytes of pre */
};

/* Decoding ahead. A worker that has decompressed a frame also turns its
 * records, from the first on, into fixed-width deltas the merge adds to
 * its decoding state without parsing a varint; each record becomes
 *   u8 kind, u8 bytes of the record in the payload (prefixes included),
 *   u8 nwide, then one int8 per field: the change of its value from the
 *   previous record of the kind (for an E field, of the end itself), 0
 *   where it does not fit, and nwide of those as u8 field (bit 7: 8
 *   bytes follow, else 4) and the change;
 * or, for a kind with a blob, an unknown kind, or a record longer than
 * 255 bytes, one 0 byte: the merge decodes that one in place. The worker
 * stops at the first record it cannot read (the merge decodes from there
 * in place, and so finds any damage where one thread finds it) and when
 * PRE_CAP bytes are written (the rest of the frame likewise). This is
 * possible frame by frame because each frame restarts the delta state
 * (docs/format.md, section 3): the worker decodes the frame from its
 * start with a state of its own, the same as the merge's at every
 * record. */
#define PRE_CAP (3u * HOLD_SMALL)
#define PRE_ENTRY_MAX (3 + GP_MAX_FIELDS * 10)

struct pre_kind {
  uint8_t nf; /* fields (all 8 bytes), 0: not decoded ahead */
};

struct prefetch {
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  pthread_t *th;
  gpuphase_reader **wr; /* each worker's own reader state (dctx, scratch) */
  int nth, stop;
  struct pf_ent *ent;
  uint32_t n, next;   /* entries; the next one a worker takes */
  uint32_t ahead, limit; /* buffers busy or waiting; their bound */
  uint8_t **pool;     /* spare buffers */
  uint32_t npool;
  uint64_t served;    /* frames the merge took from the workers */
  /* Buffers of records decoded ahead (PRE_CAP bytes each): at most
   * pre_limit exist, waiting in entries, held by sources or spare in
   * ppool; with none to be had, a frame is only decompressed. */
  uint8_t **ppool;
  uint32_t nppool, pre_out, pre_limit;
  uint64_t pre_served; /* frames the merge took with records decoded */
  /* records of frames decoded ahead that the workers left to the merge
   * to decode in place (kinds with blobs, unknown kinds, long records) */
  uint64_t pre_inplace;
  struct pre_kind pk[GPUPHASE_REC_MAX];
};

struct source {
  uint32_t id;
  struct frame_ref *frames;
  uint32_t nframes, fcap, next;
  struct gp_cursor c;
  const struct gpuphase_record *head; /* next record, in c.st */
  uint64_t key; /* its start, or the last start before it */
  uint64_t held;   /* bytes of c.buf counted against the budgets */
  uint32_t hpos;   /* index in its held list */
  uint8_t big;     /* which held list */
  uint8_t evicted; /* c.buf dropped with the frame half read */
  uint8_t rehead;  /* and head's blobs pointed into it: see detach */
  uint32_t pos;    /* then: payload offset to resume at */
  uint32_t boff[HEAD_BLOBS]; /* rehead: each blob's offset in the frame */
  /* The frame's records decoded ahead, from c.p on (pq < pqend), each
   * entry moving c.p past its record; pre: the buffer */
  const uint8_t *pq, *pqend;
  uint8_t *pre;
  /* c.end while the frame's next records are decoded in place (none
   * decoded ahead): fetch_head's one test per record. NULL from a frame's
   * load, its records decoded ahead, or its buffer's release until
   * fetch_other finds its records to be decoded in place. */
  const uint8_t *end_in;
};

/* The merge's order: start, then source id, as one 96-bit number (one
 * comparison, no branch on ties). */
typedef unsigned __int128 gp_ord;

static inline gp_ord ord_of(uint64_t key, uint32_t id) {
  /* its two halves put together apart: a 128-bit shift goes through
   * memory with gcc */
  return (gp_ord)(key >> 32) << 64 | (key << 32 | id);
}

struct heap_ent {
  gp_ord ord;
  struct source *src; /* s->src is not moved once the merge has begun */
};

struct gp_sorted {
  struct source *src;
  uint32_t nsrc, cap;
  uint32_t *slot; /* source id hash -> index + 1 */
  uint32_t mask;
  struct heap_ent *heap;
  uint32_t nheap;
  /* The smaller of the top's children: while the top source's next record
   * sorts before it, that source stays on top and the heap is left alone
   * (runs of records from one source are the rule). lim_key is its start
   * and lim_id its source: a next record that starts before it stays on
   * top after one 64-bit comparison; the heap entry of the top source is
   * brought up to date only when the heap moves (reheap). */
  uint64_t lim_key;
  uint32_t lim_id;
  /* At most SORTED_SMALL sources when the merge began: `heap` is kept
   * sorted instead (a source that no longer sorts first moves up past the
   * ones before it, typically one), with an entry past the last that
   * sorts after every source (~0), so that a source moving up needs no
   * test of the array's end. 2 while more than one source is left (the
   * inline path's case, one test), 1 once one is left, 0: the heap. */
  int linear;
  int phase;
  struct gpuphase_record sum; /* the SUMMARY record handed out last */
  int advance; /* the heap top was returned: refill it on the next call */
  int pending; /* damage found by pass 1, reported after the merge */
  char pending_msg[sizeof((gpuphase_reader *)0)->msg];
  struct held_list hl[2];
  uint64_t held[2];  /* bytes held, small and big frames */
  uint64_t decoded;  /* usize of every records frame (pass 1) */
  uint64_t reloaded; /* bytes decoded again after evictions */
  uint32_t reheads;  /* sources with rehead set */
  struct prefetch *pf; /* NULL: every frame decompressed here */
  int begun;           /* a metadata record was handed out */
};

static uint32_t hash_id(uint32_t id, uint32_t mask) {
  return (uint32_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

static int find_slot(const struct gp_sorted *s, uint32_t id, uint32_t *h) {
  for (*h = hash_id(id, s->mask); s->slot[*h]; *h = (*h + 1) & s->mask)
    if (s->src[s->slot[*h] - 1].id == id) return 1;
  return 0;
}

static int grow_index(struct gp_sorted *s) {
  uint32_t n = s->mask ? (s->mask + 1) * 2 : 16;
  uint32_t *slot = calloc(n, sizeof *slot);
  if (!slot) return -1;
  free(s->slot);
  s->slot = slot;
  s->mask = n - 1;
  for (uint32_t i = 0; i < s->nsrc; i++) {
    uint32_t h;
    find_slot(s, s->src[i].id, &h);
    s->slot[h] = i + 1;
  }
  return 0;
}

static int add_source(gpuphase_reader *r, uint32_t id, uint32_t *idx) {
  struct gp_sorted *s = r->sorted;
  if (s->nsrc == GP_MAX_SOURCES)
    return gp_reader_fail(r, GPUPHASE_E_CORRUPT, "more than %u sources",
                          GP_MAX_SOURCES);
  if ((s->nsrc + 1) * 2 > s->mask + 1 && grow_index(s))
    return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  if (s->nsrc == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 8;
    struct source *src = realloc(s->src, cap * sizeof *src);
    if (!src) return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
    s->src = src;
    s->cap = cap;
  }
  memset(&s->src[s->nsrc], 0, sizeof s->src[0]);
  s->src[s->nsrc].id = id;
  uint32_t h;
  find_slot(s, id, &h);
  s->slot[h] = ++s->nsrc;
  *idx = s->nsrc - 1;
  return GPUPHASE_OK;
}

static int add_frame(gpuphase_reader *r, const struct gp_frame_info *fi) {
  struct gp_sorted *s = r->sorted;
  uint32_t h, idx = 0;
  if (find_slot(s, fi->source, &h)) {
    idx = s->slot[h] - 1;
  } else {
    int rc = add_source(r, fi->source, &idx);
    if (rc) return rc;
  }
  struct source *src = &s->src[idx];
  if (src->nframes == src->fcap) {
    uint32_t cap = src->fcap ? src->fcap * 2 : 4;
    struct frame_ref *f = realloc(src->frames, cap * sizeof *f);
    if (!f) return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
    src->frames = f;
    src->fcap = cap;
  }
  src->frames[src->nframes++] =
      (struct frame_ref){fi->off, fi->csize, fi->usize, 0};
  s->decoded += fi->usize;
  return GPUPHASE_OK;
}

static int add_string(gpuphase_reader *r, const struct gpuphase_record *rec) {
  if (gp_strtab_add(&r->strings, rec->u.string.id, rec->u.string.text.data,
                    rec->u.string.text.len))
    return gp_strtab_fail(r);
  return GPUPHASE_OK;
}

static int load_strings(gpuphase_reader *r, struct gp_cursor *c) {
  const struct gpuphase_record *rec = NULL;
  uint64_t t;
  int rc;
  while ((rc = gp_cursor_next(r, c, &rec, &t)) == 1)
    if (rec->kind == GPUPHASE_REC_STRING && add_string(r, rec))
      return r->err;
  return rc;
}

/* Pass 1 for one frame: index it; decode it only if it is metadata. */
static int index_frame(gpuphase_reader *r, const struct gp_frame_info *fi) {
  if (fi->type == GP_FRAME_SUMMARY) {
    int rc = gp_load_frame(r, fi, &r->fc);
    return rc ? rc : gp_check_summary(r, &r->fc);
  }
  if (fi->type != GP_FRAME_RECORDS) return GPUPHASE_OK;
  int rc = add_frame(r, fi);
  if (rc || fi->source != 0) return rc;
  rc = gp_load_frame(r, fi, &r->fc);
  if (!rc) rc = load_strings(r, &r->fc);
  if (rc) {
    /* the merge covers whole, valid frames only */
    uint32_t h;
    find_slot(r->sorted, 0, &h);
    r->sorted->src[r->sorted->slot[h] - 1].nframes--;
  }
  return rc;
}

/* Damage found while indexing ends the index there; it is reported once
 * the frames before it have been returned, as in file order. */
static void defer_error(gpuphase_reader *r) {
  struct gp_sorted *s = r->sorted;
  s->pending = r->err;
  memcpy(s->pending_msg, r->msg, sizeof s->pending_msg);
  r->err = 0;
  r->msg[0] = 0;
}

int gp_sorted_init(gpuphase_reader *r) {
  struct gp_sorted *s = r->sorted = calloc(1, sizeof *r->sorted);
  if (!s || grow_index(s))
    return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  uint64_t off = r->hdr.header_size;
  for (;;) {
    struct gp_frame_info fi;
    int rc = gp_read_frame_header(r, off, &fi);
    if (rc == GP_FRAME_END || rc == GP_FRAME_CUT) {
      r->truncated = rc == GP_FRAME_CUT;
      break;
    }
    if (rc == GP_FRAME_OK) rc = index_frame(r, &fi);
    if (rc == GPUPHASE_E_NOMEM) return rc;
    if (rc < 0) {
      defer_error(r);
      break;
    }
    off = fi.off + GP_FRAME_HDR + fi.csize;
  }
  gp_cursor_free(&r->fc);
  s->phase = PHASE_META;
  return GPUPHASE_OK;
}

static void pf_free(struct prefetch *pf);

void gp_sorted_free(struct gp_sorted *s) {
  if (!s) return;
  pf_free(s->pf);
  for (uint32_t i = 0; i < s->nsrc; i++) {
    free(s->src[i].pre);
    free(s->src[i].frames);
    gp_cursor_free(&s->src[i].c);
  }
  free(s->src);
  free(s->slot);
  free(s->heap);
  free(s->hl[0].idx);
  free(s->hl[1].idx);
  free(s);
}

/* Takes src's buffer off the budgets (the buffer itself stays). */
static void unhold(struct gp_sorted *s, struct source *src) {
  if (!src->held) return;
  struct held_list *l = &s->hl[src->big];
  uint32_t last = l->idx[--l->n];
  l->idx[src->hpos] = last;
  s->src[last].hpos = src->hpos;
  s->held[src->big] -= src->held;
  src->held = 0;
}

static int hold(struct gp_sorted *s, struct source *src) {
  size_t bytes = src->c.cap + GP_DECODE_PAD;
  int big = src->c.cap > HOLD_SMALL;
  struct held_list *l = &s->hl[big];
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? l->cap * 2 : 16;
    uint32_t *idx = realloc(l->idx, cap * sizeof *idx);
    if (!idx) return -1;
    l->idx = idx;
    l->cap = cap;
  }
  src->hpos = l->n;
  l->idx[l->n++] = (uint32_t)(src - s->src);
  src->big = (uint8_t)big;
  src->held = bytes;
  s->held[big] += bytes;
  return 0;
}

/* Takes src's frame off the budgets before its buffer is freed or taken
 * over; a frame read to its end needs no reload. */
static void pre_release(struct gp_sorted *s, struct source *src);

/* The blobs of src's head that point into its frame (not a STRING's,
 * which points into the string table): their offsets in src->boff; 0 when
 * there are none. */
static int head_blobs(struct source *src) {
  const struct gpuphase_record *h = src->head;
  if (!h || !src->c.buf || !gp_kind_in(GP_BLOB_KINDS, h->kind)) return 0;
  const struct gp_kind_desc *d = gp_kind_desc(h->kind);
  uintptr_t lo = (uintptr_t)src->c.buf, hi = lo + src->c.cap + GP_DECODE_PAD;
  int any = 0;
  for (unsigned i = 0, j = 0; i < d->nfields; i++) {
    if (d->fields[i].coding != 'B') continue;
    const gpuphase_blob *b =
        (const gpuphase_blob *)(const void *)((const char *)&h->u +
                                              d->fields[i].offset);
    uintptr_t p = (uintptr_t)b->data;
    src->boff[j] = p >= lo && p < hi ? (uint32_t)(p - lo) : UINT32_MAX;
    any |= src->boff[j++] != UINT32_MAX;
  }
  return any;
}

/* A head waiting in the merge (an untimed record outside source 0, handed
 * out where it stands) may have blobs pointing into the frame being
 * dropped: the frame is decoded again (rehead) before that head is handed
 * out, and the blobs pointed into it again. */
static void detach(struct gp_sorted *s, struct source *src) {
  pre_release(s, src); /* it resumes in place */
  unhold(s, src);
  int blobs = head_blobs(src);
  if (src->c.buf && (src->c.p < src->c.end || blobs)) {
    src->evicted = 1;
    src->rehead = (uint8_t)blobs;
    s->reheads += (uint32_t)blobs;
    src->pos = (uint32_t)(src->c.p - src->c.buf);
  }
}

/* Evicts held frames until dst's frame of usize bytes fits. A big frame
 * takes over the buffer of a big victim that is large enough: its pages
 * are already there (a fresh one of 64 MiB costs 16,384 page faults). */
static void make_room(struct gp_sorted *s, struct gp_cursor *dst,
                      uint32_t usize) {
  int big = usize > HOLD_SMALL;
  for (;;) {
    uint64_t need = (dst->buf ? dst->cap : usize) + GP_DECODE_PAD;
    int over_big = big && s->held[1] + need > BIG_BUDGET;
    int over_all = s->held[0] + s->held[1] + need > ALL_BUDGET;
    if (!over_big && !over_all) return;
    struct held_list *l = &s->hl[over_big || s->hl[1].n ? 1 : 0];
    if (!l->n) return; /* the budgets exceed any one frame: unreachable */
    l->hand = l->hand + 1 < l->n ? l->hand + 1 : 0;
    struct source *v = &s->src[l->idx[l->hand]];
    detach(s, v);
    if (big && !dst->buf && v->c.cap >= usize) {
      dst->buf = v->c.buf;
      dst->cap = v->c.cap;
      v->c.buf = NULL;
      v->c.cap = 0;
      v->c.p = v->c.end = NULL;
    } else {
      gp_cursor_free(&v->c);
    }
  }
}

/* --- Decompression ahead ------------------------------------------------ */

/* Buffers of records decoded ahead held by sources at once, beyond those
 * waiting: a process's threads and streams, as a rule. */
#define PRE_HELD 8

static void pre_kinds(struct pre_kind *pk) {
  memset(pk, 0, GPUPHASE_REC_MAX * sizeof *pk);
  for (uint32_t k = 1; k < GPUPHASE_REC_MAX; k++) {
    const struct gp_kind_desc *d = gp_kind_desc(k);
    if (!d || gp_kind_in(GP_BLOB_KINDS, k)) continue;
    for (unsigned i = 0; i < d->nfields; i++)
      if (d->fields[i].offset != 8 * i) return; /* not as generated */
    pk[k].nf = (uint8_t)d->nfields;
  }
}

/* A worker's decoding ahead of the payload [p, end) into out (PRE_CAP
 * bytes; layout above struct pre_kind), with st as its decoding state.
 * The worker decodes every record as the merge would, and writes the
 * change of each field (so an E field's delta already includes start's).
 * Returns the bytes written. */
static uint32_t precode(const struct pre_kind *pk, const uint8_t *p,
                        const uint8_t *end, uint8_t *out,
                        struct gp_dstate *st, uint64_t *inplace) {
  gp_dstate_reset(st);
  uint32_t n = 0;
  while (p < end && PRE_CAP - n >= PRE_ENTRY_MAX) {
    const uint8_t *at = p;
    /* a one-byte kind, or a repeat record's tag (format.md section 4),
     * whose changes are start, end and corr */
    uint32_t kind = *p < GPUPHASE_REC_MAX ? *p
                    : (*p & GP_REPEAT_TAG) &&
                            (*p & GP_REPEAT_KIND_MASK) < GPUPHASE_REC_MAX
                        ? *p & GP_REPEAT_KIND_MASK
                        : 0;
    unsigned nf = pk[kind].nf;
    uint64_t old[GP_MAX_FIELDS];
    uint64_t *v = (uint64_t *)(void *)&st->last[kind].u;
    if (nf) memcpy(old, v, nf * sizeof *old);
    uint64_t t;
    int k = gp_decode_next(&p, end, st, &t);
    if (k < 0) break; /* damage: found again in place, by the merge */
    if (!nf || (uint32_t)k != kind || p - at > 255) {
      out[n++] = 0;
      ++*inplace;
      continue;
    }
    uint8_t *e = out + n, *w = e + 3 + nf;
    unsigned nw = 0;
    for (unsigned i = 0; i < nf; i++) {
      int64_t x = (int64_t)(v[i] - old[i]);
      if (x >= -128 && x <= 127) {
        e[3 + i] = (uint8_t)x;
        continue;
      }
      e[3 + i] = 0;
      nw++;
      if (x >= INT32_MIN && x <= INT32_MAX) {
        int32_t y = (int32_t)x;
        *w = (uint8_t)i;
        memcpy(w + 1, &y, 4);
        w += 5;
      } else {
        *w = (uint8_t)(i | 0x80);
        memcpy(w + 1, &x, 8);
        w += 9;
      }
    }
    e[0] = (uint8_t)kind;
    e[1] = (uint8_t)(p - at);
    e[2] = (uint8_t)nw;
    n = (uint32_t)(w - out);
  }
  return n;
}

static void *pf_worker(void *arg) {
  gpuphase_reader *wr = arg;
  struct prefetch *pf = wr->sorted->pf;
  pthread_mutex_lock(&pf->mu);
  while (!pf->stop) {
    if (pf->next == pf->n || pf->ahead >= pf->limit) {
      pthread_cond_wait(&pf->work, &pf->mu);
      continue;
    }
    struct pf_ent *e = &pf->ent[pf->next++];
    if (e->state != PF_NONE) continue; /* the merge took it itself */
    e->state = PF_BUSY;
    pf->ahead++;
    struct gp_cursor c = {0};
    c.buf = pf->npool ? pf->pool[--pf->npool] : NULL;
    uint8_t *pre = NULL;
    int new_pre = 0;
    if (pf->nppool)
      pre = pf->ppool[--pf->nppool];
    else if (pf->pre_out < pf->pre_limit) {
      pf->pre_out++;
      new_pre = 1;
    }
    pthread_mutex_unlock(&pf->mu);
    if (new_pre) pre = malloc(PRE_CAP);
    if (!c.buf) c.buf = malloc(HOLD_SMALL + GP_DECODE_PAD);
    c.cap = c.buf ? HOLD_SMALL : 0;
    struct gp_frame_info fi = {e->off, e->csize, e->usize, e->source,
                               GP_FRAME_RECORDS};
    wr->err = 0;
    wr->msg[0] = 0;
    int rc = c.buf ? gp_inflate_frame(wr, &fi, &c)
                   : gp_reader_fail(wr, GPUPHASE_E_NOMEM, "out of memory");
    char *msg = rc ? strdup(wr->msg) : NULL;
    if (rc && !msg) rc = GPUPHASE_E_NOMEM;
    uint64_t inplace = 0;
    uint32_t npre = !rc && pre ? precode(pf->pk, c.buf, c.buf + e->usize,
                                         pre, &c.st, &inplace)
                               : 0;
    pthread_mutex_lock(&pf->mu);
    if (npre) pf->pre_inplace += inplace;
    if (new_pre && !pre) pf->pre_out--;
    if (pre && !npre) {
      pf->ppool[pf->nppool++] = pre;
      pre = NULL;
    }
    e->pre = pre;
    e->npre = npre;
    e->err = rc;
    e->msg = msg;
    e->buf = c.buf;
    e->state = PF_READY;
    pthread_cond_broadcast(&pf->done);
  }
  pthread_mutex_unlock(&pf->mu);
  return NULL;
}

static void pf_free(struct prefetch *pf) {
  if (!pf) return;
  pthread_mutex_lock(&pf->mu);
  pf->stop = 1;
  pthread_cond_broadcast(&pf->work);
  pthread_mutex_unlock(&pf->mu);
  for (int i = 0; i < pf->nth; i++)
    pthread_join(pf->th[i], NULL);
  for (uint32_t i = 0; pf->ent && i < pf->n; i++)
    if (pf->ent[i].state == PF_READY) {
      free(pf->ent[i].buf);
      free(pf->ent[i].msg);
      free(pf->ent[i].pre);
    }
  for (uint32_t i = 0; i < pf->npool; i++)
    free(pf->pool[i]);
  for (uint32_t i = 0; i < pf->nppool; i++)
    free(pf->ppool[i]);
  free(pf->ppool);
  for (int i = 0; pf->wr && pf->wr[i]; i++) {
    ZSTD_freeDCtx(pf->wr[i]->dctx);
    free(pf->wr[i]->cbuf);
    free(pf->wr[i]);
  }
  pthread_cond_destroy(&pf->work);
  pthread_cond_destroy(&pf->done);
  pthread_mutex_destroy(&pf->mu);
  free(pf->wr);
  free(pf->th);
  free(pf->ent);
  free(pf->pool);
  free(pf);
}

/* A frame to schedule: the merge needs it once its source's frame before
 * it is used up, so frames go by that frame's offset (a source's first
 * frame, needed at once, by its own). */
struct pf_need {
  uint64_t key, off;
  struct frame_ref *f;
  uint32_t id;
};

static int by_need(const void *a, const void *b) {
  const struct pf_need *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

static struct prefetch *pf_start(gpuphase_reader *r, int workers) {
  struct gp_sorted *s = r->sorted;
  struct prefetch *pf = calloc(1, sizeof *pf);
  if (!pf) return NULL;
  pthread_mutex_init(&pf->mu, NULL);
  pthread_cond_init(&pf->work, NULL);
  pthread_cond_init(&pf->done, NULL);
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->nsrc; i++)
    if (s->src[i].id != 0)
      for (uint32_t k = 0; k < s->src[i].nframes; k++)
        n += s->src[i].frames[k].usize <= HOLD_SMALL;
  struct pf_need *need = malloc((n ? n : 1) * sizeof *need);
  pf->ent = calloc(n ? n : 1, sizeof *pf->ent);
  pf->limit = 2 * (uint32_t)workers + 2;
  pf->pool = malloc(pf->limit * sizeof *pf->pool);
  pf->pre_limit = pf->limit + PRE_HELD;
  pf->ppool = malloc(pf->pre_limit * sizeof *pf->ppool);
  pre_kinds(pf->pk);
  pf->th = malloc((size_t)workers * sizeof *pf->th);
  pf->wr = calloc((size_t)workers + 1, sizeof *pf->wr);
  if (!need || !pf->ent || !pf->pool || !pf->ppool || !pf->th || !pf->wr) {
    free(need);
    pf_free(pf);
    return NULL;
  }
  for (uint32_t i = 0; i < s->nsrc; i++) {
    struct source *src = &s->src[i];
    if (src->id == 0) continue;
    for (uint32_t k = 0; k < src->nframes; k++) {
      struct frame_ref *f = &src->frames[k];
      if (f->usize > HOLD_SMALL) continue;
      need[pf->n++] = (struct pf_need){
          k ? src->frames[k - 1].off + 1 : 0, f->off, f, src->id};
    }
  }
  qsort(need, pf->n, sizeof *need, by_need);
  for (uint32_t j = 0; j < pf->n; j++) {
    struct frame_ref *f = need[j].f;
    struct pf_ent *e = &pf->ent[j];
    e->off = f->off;
    e->csize = f->csize;
    e->usize = f->usize;
    e->source = need[j].id;
    f->pf = j + 1;
  }
  free(need);
  s->pf = pf; /* what the workers read */
  for (int i = 0; i < workers && pf->n; i++) {
    gpuphase_reader *wr = calloc(1, sizeof *wr);
    if (wr) wr->dctx = ZSTD_createDCtx();
    if (!wr || !wr->dctx) {
      free(wr);
      break;
    }
    wr->fd = r->fd;
    wr->mem = r->mem;
    wr->size = r->size;
    wr->swap = r->swap;
    wr->sorted = s;
    pf->wr[i] = wr;
    if (pthread_create(&pf->th[i], NULL, pf_worker, wr)) break;
    pf->nth++;
  }
  if (!pf->nth) {
    s->pf = NULL;
    pf_free(pf);
    return NULL;
  }
  return pf;
}

int gp_sorted_set_threads(gpuphase_reader *r, int threads) {
  struct gp_sorted *s = r->sorted;
  if (!s || s->pf || s->heap || s->phase != PHASE_META || threads <= 1 ||
      r->only) /* the workers decode every kind */
    return 0;
  int workers = threads - 1 < PF_MAX_WORKERS ? threads - 1 : PF_MAX_WORKERS;
  struct prefetch *pf = pf_start(r, workers);
  return pf ? pf->nth : 0;
}

int gp_sorted_unstarted(const gpuphase_reader *r) {
  const struct gp_sorted *s = r->sorted;
  return s && !s->pf && !s->heap && s->phase == PHASE_META && !s->begun;
}

uint64_t gp_sorted_inplace(gpuphase_reader *r) {
  struct prefetch *pf = r->sorted ? r->sorted->pf : NULL;
  if (!pf) return 0;
  pthread_mutex_lock(&pf->mu);
  uint64_t n = pf->pre_inplace;
  pthread_mutex_unlock(&pf->mu);
  return n;
}

uint64_t gp_sorted_served(gpuphase_reader *r, uint64_t *decoded) {
  struct prefetch *pf = r->sorted ? r->sorted->pf : NULL;
  if (decoded) *decoded = 0;
  if (!pf) return 0;
  pthread_mutex_lock(&pf->mu);
  uint64_t n = pf->served;
  if (decoded) *decoded = pf->pre_served;
  pthread_mutex_unlock(&pf->mu);
  return n;
}

/* Gives src's records decoded ahead back to the workers' pool. */
static void pre_release(struct gp_sorted *s, struct source *src) {
  src->pq = src->pqend = NULL;
  src->end_in = NULL; /* its frame changes or goes */
  if (!src->pre) return;
  struct prefetch *pf = s->pf;
  pthread_mutex_lock(&pf->mu);
  pf->ppool[pf->nppool++] = src->pre; /* all pre_out of them fit */
  pthread_mutex_unlock(&pf->mu);
  src->pre = NULL;
}

/* The frame f of src from the workers: 1 (*rc its result), or 0 when no
 * worker has started it and it is to be decompressed here. */
static int pf_take(gpuphase_reader *r, struct source *src,
                   const struct frame_ref *f, int *rc) {
  struct prefetch *pf = r->sorted->pf;
  struct pf_ent *e = &pf->ent[f->pf - 1];
  pthread_mutex_lock(&pf->mu);
  if (e->state == PF_NONE) {
    e->state = PF_TAKEN;
    pthread_mutex_unlock(&pf->mu);
    return 0;
  }
  while (e->state == PF_BUSY)
    pthread_cond_wait(&pf->done, &pf->mu);
  uint8_t *buf = e->buf, *spare = buf, *pre = e->pre;
  uint32_t npre = e->npre;
  char *msg = e->msg;
  int err = e->err;
  e->buf = NULL;
  e->msg = NULL;
  e->pre = NULL;
  pf->pre_served += pre != NULL;
  e->state = PF_TAKEN;
  pf->served++;
  if (!err) spare = src->c.cap == HOLD_SMALL ? src->c.buf : NULL;
  if (spare && pf->npool < pf->limit) {
    pf->pool[pf->npool++] = spare;
    spare = NULL;
  }
  pf->ahead--;
  pthread_cond_signal(&pf->work);
  pthread_mutex_unlock(&pf->mu);
  free(spare);
  if (err) {
    *rc = gp_reader_fail(r, err, "%s", msg ? msg : "out of memory");
    free(msg);
    return 1;
  }
  if (src->c.cap != HOLD_SMALL) free(src->c.buf);
  src->c.buf = buf;
  src->c.cap = HOLD_SMALL;
  src->c.p = buf;
  src->c.end = buf + f->usize;
  src->c.off = f->off;
  gp_dstate_reset(&src->c.st);
  src->pre = pre;
  src->pq = pre;
  src->pqend = pre ? pre + npre : NULL;
  *rc = GPUPHASE_OK;
  return 1;
}

/* Decodes frame src->frames[i] into src->c within the budgets; the
 * decoding state is reset unless resuming. */
static int load(gpuphase_reader *r, struct source *src, uint32_t i,
                int resume) {
  struct gp_sorted *s = r->sorted;
  const struct frame_ref *f = &src->frames[i];
  pre_release(s, src);
  unhold(s, src);
  int rc;
  if (!resume && f->pf && s->pf && pf_take(r, src, f, &rc)) {
    if (rc) return rc;
    make_room(s, &src->c, f->usize);
    if (hold(s, src))
      return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
    return GPUPHASE_OK;
  }
  /* a big buffer is not kept for smaller frames, nor a small one regrown */
  if ((src->c.cap > HOLD_SMALL && f->usize <= HOLD_SMALL) ||
      src->c.cap < f->usize)
    gp_cursor_free(&src->c);
  if (!src->c.buf) make_room(s, &src->c, f->usize);
  struct gp_frame_info fi = {f->off, f->csize, f->usize, src->id,
                             GP_FRAME_RECORDS};
  rc = resume ? gp_inflate_frame(r, &fi, &src->c)
              : gp_load_frame(r, &fi, &src->c);
  if (src->c.buf && hold(s, src))
    return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  return rc;
}

static struct source *source0(struct gp_sorted *s) {
  uint32_t h;
  return find_slot(s, 0, &h) ? &s->src[s->slot[h] - 1] : NULL;
}

static int load_next_frame(gpuphase_reader *r, struct source *src) {
  if (src->next == src->nframes) return 0;
  int rc = load(r, src, src->next++, 0);
  return rc ? rc : 1;
}

/* Decodes an evicted source's frame again and resumes where it stood. */
static int reload(gpuphase_reader *r, struct source *src) {
  struct gp_sorted *s = r->sorted;
  const struct frame_ref *f = &src->frames[src->next - 1];
  s->reloaded += f->usize;
  if (s->reloaded > 2 * s->decoded + RELOAD_SLACK)
    return gp_reader_fail(r, GPUPHASE_E_NOMEM,
                          "out of memory: the frames this trace needs at "
                          "once exceed the time-ordered reader's limits "
                          "(%llu MiB of frames over %u KiB, %llu MiB in all; "
                          "docs/format.md, section 5)",
                          (unsigned long long)(BIG_BUDGET >> 20),
                          HOLD_SMALL >> 10,
                          (unsigned long long)(ALL_BUDGET >> 20));
  src->evicted = 0;
  int rc = load(r, src, src->next - 1, 1);
  if (rc) return rc;
  src->c.p = src->c.buf + src->pos;
  return 1;
}

/* Before src's head is handed out: its frame, evicted with the head's
 * blobs pointing into it, decoded again and the blobs pointed into it. */
static int __attribute__((noinline)) rehead(gpuphase_reader *r,
                                            struct source *src) {
  src->rehead = 0;
  r->sorted->reheads--;
  int rc = reload(r, src);
  if (rc < 0) return rc;
  struct gpuphase_record *h = &src->c.st.last[src->head->kind];
  const struct gp_kind_desc *d = gp_kind_desc(h->kind);
  for (unsigned i = 0, j = 0; i < d->nfields; i++) {
    if (d->fields[i].coding != 'B') continue;
    gpuphase_blob *b =
        (gpuphase_blob *)(void *)((char *)&h->u + d->fields[i].offset);
    if (src->boff[j] != UINT32_MAX)
      b->data = (const char *)src->c.buf + src->boff[j];
    j++;
  }
  return GPUPHASE_OK;
}

/* A source read to its end gives its buffer back. */
static void finished(struct gp_sorted *s, struct source *src) {
  pre_release(s, src);
  unhold(s, src);
  gp_cursor_free(&src->c);
}

/* Kinds the merge orders by start. MODULE has a start (when the module was
 * seen mapped) but is metadata like FRAME and PYCODE: written before the
 * records that refer to it, possibly with a later start (seen while the
 * call that refers to it was being made), it is handed out where it
 * stands, never after them. */
#define SORTED_KINDS (GP_TIMED_KINDS & ~(1ull << GPUPHASE_REC_MODULE))

/* Phase 1: the untimed records of source 0 in file order. */
static int next_meta(gpuphase_reader *r, const struct gpuphase_record **out) {
  struct source *m = source0(r->sorted);
  if (!m) return 0;
  for (;;) {
    uint64_t t;
    int rc = gp_cursor_next(r, &m->c, out, &t);
    if (rc == 1) {
      if (gp_kind_in(SORTED_KINDS, (*out)->kind)) continue;
      if (r->only && !(r->only >> (*out)->kind & 1)) continue;
      r->off = m->c.off;
      r->sorted->begun = 1;
      return 1;
    }
    if (rc == 0) rc = load_next_frame(r, m);
    if (rc <= 0) break;
  }
  /* the merge reads source 0 again, for its timed records */
  m->next = 0;
  m->c.p = m->c.end;
  return r->err;
}

/* A STRING outside source 0 is kept, and handed out with the table's
 * copy of its text: the frame it came from may be evicted before the
 * record is returned. */
static int string_head(gpuphase_reader *r, struct source *src) {
  if (add_string(r, src->head)) return r->err;
  struct gpuphase_string *str = &src->c.st.last[GPUPHASE_REC_STRING].u.string;
  const struct gp_strent *e = gp_strtab_get(&r->strings, str->id);
  str->text.data = e->s;
  str->text.len = e->len;
  return GPUPHASE_OK;
}

/* The next record of src from its records decoded ahead (src->pq <
 * src->pqend): its kind, its deltas added to the decoding state, c.p
 * moved past it and src->key set; or 0: the record at c.p is to be
 * decoded in place. One case per kind, with its number of fields and the
 * place of start as constants. */
#define PRE_START(code, type, name)                                            \
  +((0 GP_IS_START(code, type, name)) ? offsetof(cur_t, name) / 8 : 0)
#define PRE_CASE(num, UP, low, FIELDS)                                         \
  case num: {                                                                  \
    typedef struct gpuphase_##low cur_t;                                       \
    enum { NF = sizeof(cur_t) / 8 };                                           \
    const unsigned start_ = 0 FIELDS(PRE_START);                               \
    if (0 FIELDS(GP_BLOB_FIELD)) break; /* never decoded ahead */            \
    uint64_t *v = (uint64_t *)(void *)&src->c.st.last[num].u;                  \
    const int8_t *d = (const int8_t *)(e + 3);                                 \
    _Pragma("GCC unroll 32") for (unsigned i = 0; i < NF; i++)                \
      v[i] += (uint64_t)(int64_t)d[i];                                         \
    const uint8_t *w = e + 3 + NF;                                             \
    for (unsigned j = e[2]; j; j--) {                                          \
      unsigned f = *w;                                                         \
      if (f & 0x80) {                                                          \
        uint64_t x;                                                            \
        memcpy(&x, w + 1, 8);                                                  \
        v[f & 0x7f] += x;                                                      \
        w += 9;                                                                \
      } else {                                                                 \
        int32_t x;                                                             \
        memcpy(&x, w + 1, 4);                                                  \
        v[f] += (uint64_t)(int64_t)x;                                          \
        w += 5;                                                                \
      }                                                                        \
    }                                                                          \
    src->pq = w;                                                               \
    src->c.p += e[1];                                                          \
    src->key = v[start_];                                                      \
    return num;                                                                \
  }
static inline __attribute__((always_inline)) int
pre_next(struct source *src) {
  const uint8_t *e = src->pq;
  switch (e[0]) { GPUPHASE_RECORD_KINDS(PRE_CASE) }
  src->pq = e + 1;
  return 0;
}

/* gp_cursor_next for a source: from its records decoded ahead while there
 * are, one record in place for each 0 entry, then in place. */
static int src_next(gpuphase_reader *r, struct source *src) {
  while (src->pq < src->pqend) {
    int k = pre_next(src);
    if (k == 0 && src->c.p < src->c.end) {
      k = gp_decode_next(&src->c.p, src->c.end, &src->c.st, &src->key);
      if (k < 0) return gp_cursor_fail(r, &src->c, src->c.p);
    }
    if (k > 0) {
      src->head = &src->c.st.last[k];
      return 1;
    }
  }
  if (r->only)
    return gp_cursor_next_kept(r, &src->c, &src->head, &src->key, r->only);
  return gp_cursor_next(r, &src->c, &src->head, &src->key);
}

/* fetch_head's cases off its fast path: a record the merge does not order
 * by start (key: the source's key before it), or (rec NULL) an unknown
 * record stepped over or the end of the frame. */
static int __attribute__((noinline))
fetch_slow(gpuphase_reader *r, struct source *src, uint64_t key,
           const struct gpuphase_record *rec) {
  for (;;) {
    if (rec) {
      src->key = key; /* a MODULE's start does not place it */
      if (src->id != 0) { /* source 0's: returned in the metadata phase */
        if (rec->kind == GPUPHASE_REC_STRING && string_head(r, src))
          return r->err;
        return 1; /* untimed elsewhere: emitted where it stands */
      }
    } else if (src->c.p >= src->c.end) {
      int rc = src->evicted ? reload(r, src) : load_next_frame(r, src);
      if (rc == 0) finished(r->sorted, src);
      if (rc <= 0) return rc;
    }
    key = src->key;
    int rc = src_next(r, src);
    if (rc < 0) return rc;
    rec = rc ? src->head : NULL;
    if (rec && gp_kind_in(SORTED_KINDS, rec->kind)) return 1;
  }
}

/* fetch_head for a source with records decoded ahead: out of line, so
 * that one thread's path saves no registers for it. */
static int __attribute__((noinline))
fetch_pre(gpuphase_reader *r, struct source *src, uint64_t key) {
  int k = pre_next(src);
  if (k == 0 && src->c.p < src->c.end) { /* this one in place */
    k = gp_decode_next(&src->c.p, src->c.end, &src->c.st, &src->key);
    if (k < 0) return gp_cursor_fail(r, &src->c, src->c.p);
  }
  if (__builtin_expect(k > 0, 1)) {
    src->head = &src->c.st.last[k];
    if (__builtin_expect(gp_kind_in(SORTED_KINDS, (uint32_t)k), 1)) return 1;
    return fetch_slow(r, src, key, src->head);
  }
  return fetch_slow(r, src, key, NULL);
}

/* fetch_head's cases off its path: records decoded ahead, the first
 * record decoded in place since the frame's load (end_in set here), and
 * the end of the frame. */
static int __attribute__((noinline))
fetch_other(gpuphase_reader *r, struct source *src, uint64_t key) {
  if (src->pq < src->pqend) return fetch_pre(r, src, key);
  if (src->c.p < src->c.end) {
    src->end_in = src->c.end;
    int k = r->only ? gp_decode_kept(&src->c.p, src->c.end, &src->c.st,
                                     &src->key, r->only)
                    : gp_decode_next(&src->c.p, src->c.end, &src->c.st,
                                     &src->key);
    if (k > 0) {
      src->head = &src->c.st.last[k];
      if (gp_kind_in(SORTED_KINDS, (uint32_t)k)) return 1;
      return fetch_slow(r, src, key, src->head);
    }
    if (k < 0) return gp_cursor_fail(r, &src->c, src->c.p); /* left there */
  }
  return fetch_slow(r, src, key, NULL);
}

/* fetch_slow and fetch_other for gp_reader_each_sorted's loop, which sets
 * r->off when its top source changes rather than per record: 3 instead
 * of 1 when src's record is in another frame than its last one. */
static int __attribute__((noinline))
fetch_slow_m(gpuphase_reader *r, struct source *src, uint64_t key,
             const struct gpuphase_record *rec) {
  uint64_t off = src->c.off;
  int rc = fetch_slow(r, src, key, rec);
  return rc == 1 && src->c.off != off ? 3 : rc;
}
static int __attribute__((noinline))
fetch_other_m(gpuphase_reader *r, struct source *src, uint64_t key) {
  uint64_t off = src->c.off;
  int rc = fetch_other(r, src, key);
  return rc == 1 && src->c.off != off ? 3 : rc;
}

/* Decodes the next record of src into src->head: 1, 0 when the source is
 * exhausted, or an error; *kp is then src->key. kept (a constant): 1, the
 * reader hands out the kinds of r->only alone (gp_reader_only), so the
 * merge of one that hands out all of them tests nothing more per record;
 * 0, the decoder inline (the merge's loop); 3, the same, and 3 instead of
 * 1 for a record in another frame (fetch_slow_m); 2, the decoder called
 * (elsewhere: one inline copy of it is enough). */
static inline __attribute__((always_inline)) int
fetch_head_k(gpuphase_reader *r, struct source *src, const int kept,
             uint64_t *kp) {
  const uint8_t *end = src->end_in;
  int rc;
  /* compared as integers: while end_in is NULL, c.p points into a frame
   * or is NULL itself, and ordering a pointer against NULL is not defined
   * in C (an integer compare gives the intended false) */
  if (!__builtin_expect((uintptr_t)src->c.p < (uintptr_t)end, 1)) {
    rc = kept == 3 ? fetch_other_m(r, src, src->key)
                   : fetch_other(r, src, src->key);
  } else if (kept == 0 || kept == 3) {
    /* the decoder inline: the record's start comes back in a register,
     * for the caller's comparison too, and src->key is set from it only
     * for a kind ordered by start, so that the key before the record, for
     * fetch_slow, is taken on its path alone (src->key, which a kind
     * without start leaves alone) */
    uint64_t start = 0;
    int k = gp_decode_in(&src->c.p, end, &src->c.st, &start);
    if (__builtin_expect(k > 0, 1)) {
      src->head = &src->c.st.last[k];
      if (__builtin_expect(gp_kind_in(SORTED_KINDS, (uint32_t)k), 1)) {
        src->key = start;
        *kp = start;
        return 1;
      }
      rc = kept == 3 ? fetch_slow_m(r, src, src->key, src->head)
                     : fetch_slow(r, src, src->key, src->head);
    } else if (k < 0) {
      rc = gp_cursor_fail(r, &src->c, src->c.p); /* left there */
    } else { /* an unknown kind, stepped over */
      rc = kept == 3 ? fetch_slow_m(r, src, src->key, NULL)
                     : fetch_slow(r, src, src->key, NULL);
    }
  } else {
    uint64_t key = src->key;
    int k = kept == 1 ? gp_decode_kept(&src->c.p, end, &src->c.st, &src->key,
                                       r->only)
                      : gp_decode_next(&src->c.p, end, &src->c.st, &src->key);
    if (__builtin_expect(k > 0, 1)) {
      src->head = &src->c.st.last[k];
      if (__builtin_expect(gp_kind_in(SORTED_KINDS, (uint32_t)k), 1)) {
        *kp = src->key;
        return 1;
      }
      rc = fetch_slow(r, src, key, src->head);
    } else if (k < 0) {
      rc = gp_cursor_fail(r, &src->c, src->c.p); /* left there */
    } else {
      rc = fetch_slow(r, src, key, NULL);
    }
  }
  *kp = src->key;
  return rc;
}

/* Sources interleave record by record, so these comparisons are coin
 * flips to the branch predictor: keep them free of short-circuit jumps. */
static inline int less(const struct heap_ent *a, const struct heap_ent *b) {
  return a->ord < b->ord;
}

static void sift_down(struct heap_ent *h, uint32_t n, uint32_t i) {
  struct heap_ent e = h[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n) c += (uint32_t)less(&h[c + 1], &h[c]);
    if (!less(&h[c], &e)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
}

static void sift_up(struct heap_ent *h, uint32_t i) {
  struct heap_ent e = h[i];
  while (i > 0 && less(&e, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

/* Up to this many sources, a sorted array beats the heap: a top that
 * falls behind usually moves by one place, against a sift-down and the
 * choice of the smaller child on each level. */
#define SORTED_SMALL 8

static inline void put_limit(struct gp_sorted *s, gp_ord lim) {
  s->lim_key = (uint64_t)(lim >> 32);
  s->lim_id = (uint32_t)lim;
}

static void set_limit(struct gp_sorted *s) {
  const struct heap_ent *h = s->heap;
  uint32_t c = s->nheap > 2 && less(&h[2], &h[1]) ? 2 : 1;
  put_limit(s, s->nheap > 1 ? h[c].ord : ~(gp_ord)0);
}

/* The source now on top: its head decoded again if its frame was evicted
 * under its blobs (detach). */
static inline int new_top(gpuphase_reader *r, struct gp_sorted *s) {
  if (__builtin_expect(!s->reheads, 1)) return GPUPHASE_OK;
  struct source *top = s->nheap ? s->heap[0].src : NULL;
  return top && top->rehead ? rehead(r, top) : GPUPHASE_OK;
}

static int start_merge(gpuphase_reader *r) {
  struct gp_sorted *s = r->sorted;
  s->heap = malloc((s->nsrc + 1) * sizeof *s->heap);
  if (!s->heap) return gp_reader_fail(r, GPUPHASE_E_NOMEM, "out of memory");
  for (uint32_t i = 0; i < s->nsrc; i++) {
    uint64_t key;
    int rc = r->only ? fetch_head_k(r, &s->src[i], 1, &key)
                     : fetch_head_k(r, &s->src[i], 2, &key);
    if (rc < 0) return rc;
    if (rc == 0) continue;
    s->heap[s->nheap] =
        (struct heap_ent){ord_of(s->src[i].key, s->src[i].id), &s->src[i]};
    sift_up(s->heap, s->nheap++);
  }
  s->linear = s->nheap <= SORTED_SMALL ? 1 + (s->nheap > 1) : 0;
  if (s->linear) /* insertion sort of the few */
    for (uint32_t i = 1; i < s->nheap; i++) {
      struct heap_ent e = s->heap[i];
      uint32_t j = i;
      for (; j > 0 && less(&e, &s->heap[j - 1]); j--)
        s->heap[j] = s->heap[j - 1];
      s->heap[j] = e;
    }
  s->heap[s->nheap].ord = ~(gp_ord)0; /* the linear array's end */
  set_limit(s);
  return new_top(r, s);
}

/* The heap once the top source's head no longer sorts first (rc 1) or the
 * source is used up (rc 0). */
static int __attribute__((noinline)) reheap(struct gp_sorted *s, int rc) {
  struct heap_ent *h = s->heap;
  if (rc == 1) {
    const struct source *top = h[0].src;
    h[0].ord = ord_of(top->key, top->id);
  }
  if (s->linear) {
    uint32_t n = s->nheap, j = 1;
    if (rc == 0) {
      memmove(h, h + 1, n * sizeof *h); /* the end entry too */
      s->nheap = --n;
      s->linear = 1 + (n > 1);
    } else {
      struct heap_ent e = h[0];
      for (; less(&h[j], &e); j++)
        h[j - 1] = h[j];
      h[j - 1] = e;
    }
    put_limit(s, n > 1 ? h[1].ord : ~(gp_ord)0);
    return GPUPHASE_OK;
  }
  if (rc == 0) h[0] = h[--s->nheap];
  if (s->nheap > 1) sift_down(h, s->nheap, 0);
  set_limit(s);
  return GPUPHASE_OK;
}

/* After the top source's next record was fetched (rc 1) or the source ran
 * out (rc 0): whether the top stays (its record still sorts before every
 * other source's head: ord_of(key, id) < lim), else the heap moves. The
 * common case, a record that starts before the other heads, is one
 * comparison; the source ids are compared on a tie only. */
static inline __attribute__((always_inline)) int
stays_on_top(const struct gp_sorted *s, const struct source *top, int rc,
             uint64_t key) {
  return __builtin_expect(rc == 1, 1) &&
         (__builtin_expect(key < s->lim_key, 1) ||
          (key == s->lim_key && top->id < s->lim_id));
}

/* reheap for a top source whose next record falls behind (rc 1) in the
 * sorted array of few sources, inline in the merge's loop: it moves up
 * past the heads before it, usually one. It sorts after the second head
 * (that is what falling behind means: lim is the second's), so that one
 * moves to the front untested, and the array's end entry stops the
 * rest. The top's own entry is not read (its ord is stale on top).
 * Returns the source now on top (NULL: none left), in a register for the
 * merge's loop. */
static inline __attribute__((always_inline)) struct source *
reheap_top(struct gp_sorted *s, struct source *top, int rc, uint64_t key) {
  if (!__builtin_expect(s->linear > 1 && rc == 1, 1)) {
    reheap(s, rc);
    return s->nheap ? s->heap[0].src : NULL;
  }
  struct heap_ent *h = s->heap;
  uint32_t id = top->id;
  gp_ord o = ord_of(key, id);
  struct source *next = h[1].src;
  h[0].src = next;
  struct heap_ent *q = h + 2;
  if (__builtin_expect(q->ord < o, 0)) {
    do {
      q[-1] = q[0];
      q++;
    } while (q->ord < o);
    q[-1].ord = o;
    q[-1].src = top;
    put_limit(s, h[1].ord);
    return next;
  }
  h[1].ord = o;
  h[1].src = top;
  s->lim_key = key;
  s->lim_id = id;
  return next;
}

/* The top source's next record replaces its head; the heap moves only when
 * that record no longer sorts before every other source's head. */
static inline __attribute__((always_inline)) int
advance_top(gpuphase_reader *r, struct gp_sorted *s, const int kept) {
  struct source *top = s->heap[0].src;
  uint64_t key;
  int rc = fetch_head_k(r, top, kept, &key);
  if (rc < 0) return rc;
  if (stays_on_top(s, top, rc, key)) return GPUPHASE_OK;
  (void)reheap_top(s, top, rc, key);
  return new_top(r, s);
}

static inline __attribute__((always_inline)) int
next_merge(gpuphase_reader *r, const struct gpuphase_record **out,
           const int kept) {
  struct gp_sorted *s = r->sorted;
  if (__builtin_expect(s->advance, 1)) {
    s->advance = 0;
    int rc = advance_top(r, s, kept);
    if (rc < 0) return rc;
  }
  if (!s->nheap) return 0;
  const struct source *top = s->heap[0].src;
  *out = top->head;
  r->off = top->c.off;
  s->advance = 1;
  return 1;
}

/* gp_sorted_next off its path: the metadata, the start of the merge, a
 * filtered merge, the summary and the end. */
static int __attribute__((noinline))
next_other(gpuphase_reader *r, const struct gpuphase_record **out) {
  struct gp_sorted *s = r->sorted;
  for (;;) {
    int rc = 0;
    switch (s->phase) {
    case PHASE_META:
      rc = next_meta(r, out);
      if (rc == 0) {
        s->phase = r->only ? PHASE_MERGE_KEPT : PHASE_MERGE;
        rc = start_merge(r);
      }
      break;
    case PHASE_MERGE:
      return gp_sorted_next(r, out);
    case PHASE_MERGE_KEPT:
      rc = next_merge(r, out, 1);
      if (rc == 0) s->phase = PHASE_SUMMARY;
      break;
    case PHASE_SUMMARY:
      s->phase = PHASE_DONE;
      if (!r->have_summary ||
          (r->only && !(r->only >> GPUPHASE_REC_SUMMARY & 1)))
        break;
      s->sum.kind = GPUPHASE_REC_SUMMARY;
      s->sum.u.summary = r->summary;
      *out = &s->sum;
      return 1;
    default:
      if (s->pending)
        return gp_reader_fail(r, s->pending, "%s", s->pending_msg);
      return 0;
    }
    if (rc) return rc;
  }
}

int gp_sorted_next(gpuphase_reader *r, const struct gpuphase_record **out) {
  struct gp_sorted *s = r->sorted;
  if (__builtin_expect(s->phase == PHASE_MERGE, 1)) {
    int rc = next_merge(r, out, 0);
    if (rc) return rc;
    s->phase = PHASE_SUMMARY;
  }
  return next_other(r, out);
}

/* gp_reader_each_sorted's merge: next_merge and the callback in one loop
 * that keeps the top source at hand while it stays on top. Returns 0 at
 * the end of the merge, 1 when fn stopped it, or an error; *n counts the
 * records handed out, for tick. r->off, the frame of the record handed
 * out, is set when the top source changes, and when its record comes
 * from another frame (fetch_head_k's 3). */
static int each_merge(gpuphase_reader *r,
                      int (*fn)(void *ctx, const struct gpuphase_record *rec),
                      void *ctx, void (*tick)(void *ctx, uint64_t n),
                      uint64_t *np) {
  struct gp_sorted *s = r->sorted;
  /* records until the next tick, and the count at it: one decrement per
   * record (with no tick, the first is never reached) */
  uint64_t left = tick ? 0x10000 - (*np & 0xffff) : UINT64_MAX;
  uint64_t tick_n = *np + left;
  int rc = GPUPHASE_OK;
  if (s->advance) {
    s->advance = 0;
    rc = advance_top(r, s, 0);
    if (rc < 0) goto out;
  }
  /* the loop goes on with the source that reheap_top puts on top, which
   * it has at hand */
  struct source *top = s->nheap ? s->heap[0].src : NULL;
  while (top) {
    uint64_t key;
    r->off = top->c.off;
    for (;;) {
      if (fn(ctx, top->head) < 0) {
        s->advance = 1;
        rc = 1;
        goto out;
      }
      if (__builtin_expect(--left == 0, 0)) {
        tick(ctx, tick_n);
        tick_n += 0x10000;
        left = 0x10000;
      }
      rc = fetch_head_k(r, top, 3, &key);
      if (rc < 0) goto out;
      if (stays_on_top(s, top, rc, key)) continue;
      if (rc == 3) { /* another frame */
        rc = 1;
        if (stays_on_top(s, top, rc, key)) {
          r->off = top->c.off;
          continue;
        }
      }
      break;
    }
    top = reheap_top(s, top, rc, key);
    rc = new_top(r, s);
    if (rc < 0) goto out;
  }
  rc = 0;
out:
  *np = tick_n - left;
  return rc;
}

int gp_reader_each_sorted(gpuphase_reader *r,
                          int (*fn)(void *ctx,
                                    const struct gpuphase_record *rec),
                          void *ctx, void (*tick)(void *ctx, uint64_t n)) {
  struct gp_sorted *s = r->sorted;
  const struct gpuphase_record *rec;
  uint64_t n = 0;
  for (;;) {
    int rc;
    if (s->phase == PHASE_MERGE) {
      rc = each_merge(r, fn, ctx, tick, &n);
      if (rc) return rc < 0 ? rc : 1;
      s->phase = PHASE_SUMMARY;
    }
    rc = next_other(r, &rec);
    if (rc != 1) return rc;
    if (fn(ctx, rec) < 0) return 1;
    if (tick && (++n & 0xffff) == 0) tick(ctx, n);
  }
}

int gp_reader_next_sorted(gpuphase_reader *r,
                          const struct gpuphase_record **out)
    __attribute__((alias("gp_sorted_next")));
