/* Ring events and device activity into trace records: clocks converted,
 * metadata written before first use, one source per host thread and per
 * device stream. Nothing interpreted: that is the report's business. */
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "gp_capture.h"
#include "encode.h"
#include "gp_apitab.h"
#include "gp_clock.h"
#include "gp_describe.h"
#include "gp_pmsample.h"
#include "gp_records.h"
#include "gp_rings.h"
#include "gp_threadname.h"
#include "gp_stacks.h"

#define STREAM_SLOTS 4096
#define SPARE_SOURCES 4096
#define BATCH 64

struct stream_slot {
  uint64_t key; /* (device << 32 | stream) + 1; 0 = empty */
  uint32_t source;
};

/* api_info[id]: API_DEFINED | the id's class bits once its API_DEF record
 * is written, 0 before: one load per API record tells both. */
#define API_DEFINED 0x8000u
#define API_CAPTURE 0x4000u /* plays a part in stream capture (capture.c) */

static struct {
  gp_writer *w;
  uint16_t *api_info;
  uint32_t napi;
  uint64_t devices_done; /* bit d: the DEVICE record of device d is written */
  uint32_t *thread_source;
  /* Sources of exited threads, oldest first, each with the time from which
   * a later thread may continue it (claim_source). */
  struct spare {
    uint32_t source;
    uint64_t from_ns;
  } spare[SPARE_SOURCES];
  uint32_t spare_head, spare_tail;
  uint32_t next_source;
  struct stream_slot streams[STREAM_SLOTS];
  uint32_t overflow_source;
  uint64_t lost_total;
  uint64_t cupti_lost_reported;
  uint64_t start_lost_reported;
  uint64_t added; /* records handed to the writer, taken or refused */
  /* API records of the ring being drained, not yet handed to the writer */
  struct gpuphase_record batch[BATCH];
  size_t nbatch;
  uint32_t batch_source;
} R;

/* ---- repeated calls ---- */
/* The last API record each ring handed to its source, kept as the ring
 * event it was made from (its bytes from `stream` on, masked as
 * call_diff compares them): a call that repeats it but for its times and
 * a corr one more at most goes to the writer as a repeat record
 * (gp_writer_add_repeat, the bytes the writer would make of the whole
 * record) with no record built. Direct-mapped by ring index. A slot is
 * valid for its ring and source: it is filled only when the record is
 * the ring's last API record in that source and no other ring writes API
 * records there until it is cleared (the thread's source released, or
 * shared: SHARED_SOURCE is never kept), its stack ids keep their FRAME
 * nodes (cleared at a new stack of the ring), and the record's API_DEF
 * and DEVICE are written; that the writer still holds the record (not
 * cut into an earlier frame) the writer checks. */
#define LAST_CALLS 256
#define SHARED_SOURCE 65535u
struct last_call {
  uint32_t index1; /* ring index + 1; 0: empty */
  uint32_t source;
  uint32_t corr;
  uint64_t w[6];    /* gp_event bytes 16..63 */
  uint64_t dims[4]; /* GP_EV_LAUNCH: its second slot */
};
static struct last_call LC[LAST_CALLS];

#define DEVICE_ONLY 0xffffffff00000000ull /* of the corr|device word */
#define LAUNCH_RET 0xffffffff00000000ull  /* of grid|ret: grid is unset */
#define LAUNCH_KIND 0xffff0000ffffffffull /* of api..stack: block unset */
#define DIM_Z 0xffffffffull               /* of a z word: the high half */

static inline uint64_t ev_word(const struct gp_event *e, int i) {
  uint64_t v;
  memcpy(&v, (const char *)e + 16 + 8 * i, 8);
  return v;
}

/* Nonzero when e differs from c in anything but t0, t1 and corr (for a
 * GP_EV_LAUNCH, in what the record takes from its dimensions too). */
static inline __attribute__((always_inline)) uint64_t
call_diff(const struct last_call *c, const struct gp_event *e, int launch) {
  uint64_t m4 = launch ? LAUNCH_RET : ~0ull, m5 = launch ? LAUNCH_KIND : ~0ull;
  uint64_t x = (ev_word(e, 0) ^ c->w[0]) | (ev_word(e, 1) ^ c->w[1]) |
               (ev_word(e, 2) ^ c->w[2]) |
               ((ev_word(e, 3) & DEVICE_ONLY) ^ c->w[3]) |
               ((ev_word(e, 4) & m4) ^ c->w[4]) |
               ((ev_word(e, 5) & m5) ^ c->w[5]);
  if (launch) {
    const struct gp_launch_dims *d = (const struct gp_launch_dims *)(e + 1);
    x |= (d->grid_xy ^ c->dims[0]) | ((d->grid_z & DIM_Z) ^ c->dims[1]) |
         (d->block_xy ^ c->dims[2]) | ((d->block_z & DIM_Z) ^ c->dims[3]);
  }
  return x;
}

static void call_keep(struct last_call *c, const struct gp_event *e,
                      int launch, uint32_t thread, uint32_t source) {
  c->index1 = thread + 1;
  c->source = source;
  c->corr = e->corr;
  c->w[0] = ev_word(e, 0);
  c->w[1] = ev_word(e, 1);
  c->w[2] = ev_word(e, 2);
  c->w[3] = ev_word(e, 3) & DEVICE_ONLY;
  c->w[4] = ev_word(e, 4) & (launch ? LAUNCH_RET : ~0ull);
  c->w[5] = ev_word(e, 5) & (launch ? LAUNCH_KIND : ~0ull);
  if (launch) {
    const struct gp_launch_dims *d = (const struct gp_launch_dims *)(e + 1);
    c->dims[0] = d->grid_xy, c->dims[1] = d->grid_z & DIM_Z;
    c->dims[2] = d->block_xy, c->dims[3] = d->block_z & DIM_Z;
  }
}

static void call_forget(uint32_t thread) {
  struct last_call *c = &LC[thread & (LAST_CALLS - 1)];
  if (c->index1 == thread + 1) c->index1 = 0;
}

int gp_records_begin(gp_writer *w) {
  R.w = w;
  memset(LC, 0, sizeof LC);
  R.napi = gp_api_count();
  R.api_info = calloc(R.napi, sizeof *R.api_info);
  R.thread_source = calloc(65536, sizeof *R.thread_source);
  R.next_source = 1;
  R.added = 0;
  R.spare_head = R.spare_tail = 0;
  gp_capture_reset();
  if (R.api_info && R.thread_source && gp_stacks_writer_begin() == 0)
    return 0;
  gp_records_end();
  return -1;
}

void gp_records_end(void) {
  gp_stacks_writer_end();
  free(R.api_info);
  free(R.thread_source);
  R.api_info = NULL;
  R.thread_source = NULL;
  R.w = NULL;
}

void gp_records_reset(void) {
  memset(LC, 0, sizeof LC);
  R.lost_total = R.cupti_lost_reported = R.start_lost_reported = 0;
  memset(R.streams, 0, sizeof R.streams);
  R.overflow_source = 0;
  R.devices_done = 0;
  gp_describe_reset();
}

/* Hands the pending API records to the writer. Done before any other
 * record is added, so that the writer sees the same sequence as with one
 * call per record (and writes the same file). */
static void batch_flush(void) {
  if (!R.nbatch) return;
  gp_writer_add_n(R.w, R.batch_source, R.batch, R.nbatch);
  R.added += R.nbatch;
  R.nbatch = 0;
}

void gp_records_add(uint32_t source, const struct gpuphase_record *r) {
  batch_flush();
  gp_writer_add(R.w, source, r);
  R.added++;
}

uint64_t gp_records_added(void) {
  return R.added;
}

gp_writer *gp_records_writer(void) {
  return R.w;
}

void gp_records_retarget(gp_writer *w) {
  R.w = w;
}

uint64_t gp_records_lost(void) {
  return R.lost_total;
}

/* ---- sources ---- */
static uint32_t new_source(void) {
  return R.next_source < 65535 ? R.next_source++ : 65535;
}

uint32_t gp_records_new_source(void) {
  return new_source();
}

uint64_t gp_records_devices(void) {
  return R.devices_done;
}

static uint32_t thread_source(uint32_t index) {
  if (!R.thread_source[index]) R.thread_source[index] = new_source();
  return R.thread_source[index];
}

/* A host thread's source, chosen at its first record (at ring position t).
 * A source holds one thread at a time: a thread that starts after another
 * exited continues the exited one's source (still in time order), so that
 * the writer's state per source stays bounded by the threads alive at
 * once, however many come and go (20,000 short threads: 20,000 sources and
 * their buffers otherwise). */
static uint32_t claim_source(struct gp_tbuf *b, uint64_t t) {
  uint32_t *s = &R.thread_source[b->index];
  if (*s) return *s;
  const struct spare *o = &R.spare[R.spare_head % SPARE_SOURCES];
  if (R.spare_head != R.spare_tail &&
      o->from_ns <= gp_clock_to_ns(b->ev[t & b->mask].t0)) {
    *s = o->source;
    R.spare_head++;
    return *s;
  }
  return thread_source(b->index);
}

/* The thread exited and its last record is drained: its source is spare
 * for threads whose first record comes after now. */
static void release_source(struct gp_tbuf *b) {
  uint32_t *s = &R.thread_source[b->index];
  call_forget(b->index);
  if (*s && R.spare_tail - R.spare_head < SPARE_SOURCES) {
    R.spare[R.spare_tail % SPARE_SOURCES] = (struct spare){*s, gp_mono_ns()};
    R.spare_tail++;
  }
  *s = 0;
}

static uint32_t stream_source(uint32_t device, uint32_t stream) {
  uint64_t key = (((uint64_t)device << 32) | stream) + 1;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  for (uint32_t i = 0; i < STREAM_SLOTS; i++) {
    struct stream_slot *s = &R.streams[(h + i) & (STREAM_SLOTS - 1)];
    if (s->key == key) return s->source;
    if (s->key == 0) {
      s->key = key;
      s->source = new_source();
      return s->source;
    }
  }
  if (!R.overflow_source) R.overflow_source = new_source();
  return R.overflow_source;
}

/* ---- metadata ---- */
/* Writes the API_DEF record of id; returns its api_info (0: no such id). */
static uint32_t define_api(uint32_t id) {
  if (id >= R.napi) return 0;
  if (R.api_info[id]) return R.api_info[id];
  batch_flush();
  R.api_info[id] = (uint16_t)(API_DEFINED | gp_api_cls(id) |
                              (gp_capture_has_role(id) ? API_CAPTURE : 0));
  const char *name = gp_api_name(id);
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def.api = id;
  r.u.api_def.name = gp_writer_intern(R.w, name, strlen(name));
  r.u.api_def.cls = gp_api_cls(id);
  r.u.api_def.layer = gp_api_layer(id);
  gp_records_add(0, &r);
  return R.api_info[id];
}

/* The name the thread had when its ring was made or when it last renamed
 * itself (taken in the thread: it may be gone by now); else what /proc
 * says. */
static void announce_thread(struct gp_tbuf *b) {
  char name[64];
  uint32_t seq = 0;
  if (gp_tbuf_name(b, name, &seq) != 0)
    gp_describe_thread(b->tid, name, sizeof name);
  b->name_told = seq;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_THREAD};
  r.u.thread.thread = b->index;
  r.u.thread.tid = (uint64_t)b->tid;
  r.u.thread.name = gp_writer_intern(R.w, name, strlen(name));
  gp_records_add(0, &r);
  b->announced = 1;
}

static void describe_device_slow(uint32_t dev) {
  batch_flush();
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  char name[256];
  if (!gp_describe_device(dev, &r.u.device, name, sizeof name)) return;
  r.u.device.name = gp_writer_intern(R.w, name, strnlen(name, sizeof name));
  gp_records_add(0, &r);
  if (dev < 64) R.devices_done |= UINT64_C(1) << dev;
  gp_pmsample_device((int)dev); /* PM sampling follows the devices used */
}

/* Every record that names a device asks: once it is described, one test. */
static inline void describe_device(uint32_t dev) {
  if (dev < 64 && (R.devices_done >> dev & 1)) return;
  describe_device_slow(dev);
}

/* ---- host rings ---- */
/* The API record is built field by field in the batch (the record's other
 * kinds are left alone: the writer reads only the API struct); the batch
 * goes to the writer in one call per BATCH records. Returns whether the
 * record may stand for the calls that repeat it (struct last_call). */
static inline __attribute__((always_inline)) int
emit_api(const struct gp_event *e, uint32_t thread,
         const struct gp_clock_line *clock, uint32_t grid, uint16_t block,
         const uint32_t *stacks) {
  uint32_t id = e->api;
  uint32_t info = id < R.napi ? R.api_info[id] : 0;
  if (__builtin_expect(!info, 0)) info = define_api(id);
  /* metadata first: these may hand the batch to the writer */
  if (e->device >= 0) describe_device((uint32_t)e->device);
  uint64_t start = gp_clock_line_ns(clock, e->t0);
  uint64_t end = gp_clock_line_ns(clock, e->t1);
  struct gpuphase_record *r = &R.batch[R.nbatch];
  r->kind = GPUPHASE_REC_API;
  struct gpuphase_api *a = &r->u.api;
  a->thread = thread;
  a->api = id;
  a->start = start;
  a->end = end < start ? start : end;
  a->ret = e->ret;
  a->corr = e->corr;
  a->device = e->device;
  a->stream = e->stream;
  a->bytes = e->bytes;
  a->copy_kind = e->copy_kind;
  a->grid = grid;
  a->block = block;
  a->flags = 0;
  /* calls on a capturing stream ran nothing: one test while none is */
  if (__builtin_expect((info & API_CAPTURE) || gp_capture_streams, 0))
    a->flags = gp_capture_note(id, thread, e->stream, e->aux, e->ret);
  a->func = info & GPUPHASE_API_LAUNCH ? e->aux : 0;
  a->ptr = info & GPUPHASE_API_LAUNCH ? 0 : e->aux;
  a->stack = e->stack && stacks ? stacks[e->stack] : 0;
  if (++R.nbatch == BATCH) batch_flush();
  return !a->flags && !(info & API_CAPTURE) &&
         (e->device < 0 ||
          (e->device < 64 && (R.devices_done >> e->device & 1)));
}

/* x * y * z of a dim3 in its two words (gp_launch_dims), modulo 2^64 and
 * then saturated at UINT32_MAX: what the trace's grid and block fields
 * hold, as if taken from the dim3 itself. */
static inline uint32_t dim_words_total(uint64_t xy, uint64_t z) {
  uint64_t t = (xy & 0xffffffffu) * (xy >> 32) * (z & 0xffffffffu);
  return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static inline __attribute__((always_inline)) int
emit_launch(const struct gp_event *e, uint32_t thread,
            const struct gp_clock_line *clock, const uint32_t *stacks) {
  const struct gp_launch_dims *d = (const struct gp_launch_dims *)(e + 1);
  uint32_t block = dim_words_total(d->block_xy, d->block_z);
  return emit_api(e, thread, clock, dim_words_total(d->grid_xy, d->grid_z),
                  (uint16_t)(block > UINT16_MAX ? UINT16_MAX : block), stacks);
}

/* Whether e repeats the ring's last call (c, valid) for a repeat record:
 * the corr step in *dc. */
static inline __attribute__((always_inline)) int
repeats(const struct last_call *c, const struct gp_event *e, int launch,
        uint32_t *dc) {
  uint64_t d = (uint64_t)e->corr - c->corr; /* 64-bit, as in the record */
  *dc = (uint32_t)d;
  return !(call_diff(c, e, launch) | (d > 1) | gp_capture_streams);
}

/* call_diff on 16 bytes at a time, the slot's words in vector registers
 * (SSE2 on x86-64, NEON on AArch64, pairs of words elsewhere). */
typedef uint64_t gp_v2 __attribute__((vector_size(16)));
static inline gp_v2 v2_load(const void *p) {
  gp_v2 v;
  memcpy(&v, p, 16);
  return v;
}

/* Whether any bit of x is set. */
static inline int v2_any(gp_v2 x) {
#if defined(__SSE2__)
  __m128i v = (__m128i)x;
  return _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) != 0xffff;
#else
  return (x[0] | x[1]) != 0;
#endif
}

/* The repeats of c from ring position t on into the run r, while they
 * are of c's type (launch or not) and take the repeat form; returns the
 * position of the first event not put. */
static inline __attribute__((always_inline)) uint64_t
repeat_loop(struct gp_repeat_run *out, const struct gp_event *ev,
            uint64_t mask, uint64_t t, uint64_t h, struct last_call *c,
            const struct gp_clock_line *line, int launch) {
  /* gp_repeat_put on the run's fields in registers; the records put and
   * their corr steps are worked out at the end from the positions and
   * corr values passed */
  const struct gp_clock_line l = *line;
  uint8_t *p = out->p, *const stop = out->stop;
  uint64_t pend = out->end, pdur = out->dur;
  const unsigned tag = out->tag;
  const gp_v2 c0 = {c->w[0], c->w[1]}, c1 = {c->w[2], c->w[3]},
              c2 = {c->w[4], c->w[5]}, d0 = {c->dims[0], c->dims[1]},
              d1 = {c->dims[2], c->dims[3]};
  const gp_v2 m1 = {~0ull, DEVICE_ONLY},
              m2 = {launch ? LAUNCH_RET : ~0ull, launch ? LAUNCH_KIND : ~0ull},
              mz = {~0ull, DIM_Z};
  const uint64_t corr0 = c->corr, from = t;
  uint64_t corr = corr0;
  /* a launch's two slots both published: an event of one slot (a stack,
   * say) at h - 1 is not read with the slot after it, which its thread
   * may be writing (it would not repeat a launch anyway) */
  while (t + (uint64_t)launch < h) {
    const struct gp_event *e = &ev[t & mask];
    const char *b = (const char *)e;
    gp_v2 x = (v2_load(b + 16) ^ c0) | ((v2_load(b + 32) & m1) ^ c1) |
              ((v2_load(b + 48) & m2) ^ c2);
    if (launch) /* the second slot */
      x |= (v2_load(b + 64) ^ d0) | ((v2_load(b + 80) & mz) ^ d1);
    uint64_t dc = (uint64_t)e->corr - corr; /* 64-bit, as in the record */
    if (v2_any(x) || dc > out->corr_max || gp_capture_streams) break;
    uint64_t start = gp_clock_line_ns(&l, e->t0);
    uint64_t end = gp_clock_line_ns(&l, e->t1);
    if (start < pend) break;
    end = end < start ? start : end;
    uint64_t dur = end - start;
    p += gp_put_repeat(p, tag | (unsigned)dc * GP_REPEAT_CORR, start - pend,
                       gp_zigzag(dur - pdur));
    pend = end;
    pdur = dur;
    corr += dc;
    t += 1 + (uint64_t)launch;
    if (p >= stop) break;
  }
  out->p = p;
  out->end = pend;
  out->dur = pdur;
  out->corr += corr - corr0;
  out->n += (t - from) / (1 + (uint64_t)launch);
  c->corr = (uint32_t)corr;
  return t;
}

/* The loop as functions of their own, whose registers hold the run, the
 * kept event and the clock (inline in the drain loop, they would be
 * spilled to the stack around every call it makes). */
static __attribute__((noinline)) uint64_t
repeat_calls(struct gp_repeat_run *out, const struct gp_event *ev,
             uint64_t mask, uint64_t t, uint64_t h, struct last_call *c,
             const struct gp_clock_line *clock) {
  return repeat_loop(out, ev, mask, t, h, c, clock, 0);
}
static __attribute__((noinline)) uint64_t
repeat_launches(struct gp_repeat_run *out, const struct gp_event *ev,
                uint64_t mask, uint64_t t, uint64_t h, struct last_call *c,
                const struct gp_clock_line *clock) {
  return repeat_loop(out, ev, mask, t, h, c, clock, 1);
}

static void emit_range(struct gp_tbuf *b, const struct gp_event *e,
                       uint64_t pos) {
  batch_flush();
  char name[GP_RANGE_NAME_MAX + 1];
  size_t len = e->bytes > GP_RANGE_NAME_MAX ? GP_RANGE_NAME_MAX : e->bytes;
  for (size_t off = 0; off < len; off += sizeof(struct gp_event)) {
    const struct gp_event *s = &b->ev[(pos + 1 + off / 64) & b->mask];
    size_t n = len - off < 64 ? len - off : 64;
    memcpy(name + off, s, n);
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range.thread = b->index;
  r.u.range.op = e->api;
  r.u.range.start = gp_clock_to_ns_fast(e->t0);
  r.u.range.name = len ? gp_writer_intern(R.w, name, len) : 0;
  r.u.range.id = e->aux;
  if (e->stream) { /* an NVTX domain: its name leads the handle */
    const char *dom = (const char *)(uintptr_t)e->stream;
    r.u.range.domain = gp_writer_intern(R.w, dom, strnlen(dom, GP_RANGE_NAME_MAX));
  }
  gp_records_add(thread_source(b->index), &r);
}

static void emit_items(struct gp_tbuf *b, const struct gp_event *e) {
  batch_flush();
  struct gpuphase_record r = {.kind = GPUPHASE_REC_ITEMS};
  r.u.items.thread = b->index;
  r.u.items.start = gp_clock_to_ns_fast(e->t0);
  r.u.items.count = e->aux;
  gp_records_add(thread_source(b->index), &r);
}

static void ring_lost(struct gp_tbuf *b) {
  uint64_t lost = atomic_load_explicit(&b->lost, memory_order_relaxed);
  if (lost <= b->lost_reported) return;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_LOST};
  r.u.lost.thread = b->index;
  r.u.lost.start = gp_mono_ns();
  r.u.lost.count = lost - b->lost_reported;
  r.u.lost.source = 0;
  gp_records_add(0, &r);
  R.lost_total += lost - b->lost_reported;
  b->lost_reported = lost;
}

void gp_records_drain(struct gp_tbuf *b) {
  int st = atomic_load_explicit(&b->state, memory_order_acquire);
  if (st != GP_TB_ALIVE && st != GP_TB_DEAD) return;
  if (!b->announced ||
      atomic_load_explicit(&b->name_seq, memory_order_relaxed) != b->name_told)
    announce_thread(b); /* new, or renamed since */
  uint64_t h = atomic_load_explicit(&b->head, memory_order_acquire);
  uint64_t t = atomic_load_explicit(&b->tail, memory_order_relaxed);
  /* the thread's source, numbered when its first record comes */
  if (t < h) R.batch_source = claim_source(b, t);
  /* copies the loop keeps in registers (stores into records could alias
   * them otherwise: the build has no strict aliasing) */
  const struct gp_clock_line clock = gp_clock_line;
  const struct gp_event *ev = b->ev;
  const uint64_t mask = b->mask;
  const uint32_t thread = b->index;
  const uint32_t *stacks = b->stk_nodes;
  const uint32_t source = R.batch_source;
  struct last_call *last = &LC[thread & (LAST_CALLS - 1)];
  int valid = last->index1 == thread + 1 && last->source == source;
  /* repeated calls go to the writer as runs, the event that ends one
   * (at no_run) in full */
  uint64_t no_run = h;
  while (t < h) {
    const struct gp_event *e = &ev[t & mask];
    uint64_t used = 1;
    uint32_t type = e->type, dc;
    if (__builtin_expect(type == GP_EV_API || type == GP_EV_LAUNCH, 1)) {
      int launch = type == GP_EV_LAUNCH;
      used += (uint64_t)launch; /* its second slot follows in memory */
      struct gp_repeat_run run;
      if (valid && t != no_run && repeats(last, e, launch, &dc)) {
        if (R.nbatch) batch_flush();
        if (!gp_writer_repeat_begin(R.w, source, GPUPHASE_REC_API, &run)) {
          uint64_t from = t;
          t = launch ? repeat_launches(&run, ev, mask, t, h, last, &clock)
                     : repeat_calls(&run, ev, mask, t, h, last, &clock);
          R.added += run.n;
          gp_writer_repeat_end(R.w, &run);
          no_run = t;
          if (t != from) continue;
        }
      }
      valid = (launch ? emit_launch(e, thread, &clock, stacks)
                      : emit_api(e, thread, &clock, e->grid, e->block,
                                 stacks)) &&
              source != SHARED_SOURCE;
      if (valid) call_keep(last, e, launch, thread, source);
      else call_forget(thread);
      t += used;
      continue;
    }
    if (e->type == GP_EV_RANGE) {
      emit_range(b, e, t);
      used += (e->bytes + 63) / 64;
    } else if (e->type == GP_EV_ITEMS)
      emit_items(b, e);
    else if (e->type == GP_EV_STACK || e->type == GP_EV_PYCODE) {
      /* FRAME, MODULE and PYCODE records in source 0, before the API
       * record that names the stack */
      batch_flush();
      used = gp_stacks_drain_event(b, e, t);
      valid = 0; /* a stack id may name another FRAME node now */
      call_forget(thread);
    }
    t += used;
  }
  batch_flush();
  atomic_store_explicit(&b->tail, t, memory_order_release);
  atomic_store_explicit(&b->limit, t + mask, memory_order_release);
  ring_lost(b);
  if (st == GP_TB_DEAD &&
      atomic_load_explicit(&b->head, memory_order_acquire) == t) {
    b->announced = 0;
    release_source(b);
    gp_tbuf_free(b);
  }
}

/* The last drain of a ring (writer.c's last pass, after the last device
 * records were taken): what its thread published meanwhile is drained too,
 * and a call still under way (its thread entered it, per CUPTI, and has
 * not published it) is counted lost: its device records may be written. */
void gp_records_settle(struct gp_tbuf *b) {
  for (int round = 0; round < 16; round++) {
    gp_records_drain(b);
    if (atomic_load_explicit(&b->state, memory_order_acquire) != GP_TB_ALIVE)
      return;
    uint64_t entered = atomic_load_explicit(&b->entered, memory_order_acquire);
    uint64_t h = atomic_load_explicit(&b->head, memory_order_acquire);
    if (h != atomic_load_explicit(&b->tail, memory_order_relaxed)) continue;
    if (entered > h) {
      /* counted like an event the ring could not take */
      atomic_fetch_add_explicit(&b->lost, 1, memory_order_relaxed);
      ring_lost(b);
    }
    return;
  }
  /* Still publishing after 16 rounds: what comes now is after the end,
   * and its device records were taken before it. */
}

/* ---- device activity ---- */
static int kernel_record(const struct gp_dev_activity *a,
                         struct gpuphase_record *r) {
  struct gpuphase_kernel *k = &r->u.kernel;
  r->kind = GPUPHASE_REC_KERNEL;
  k->device = a->device, k->stream = a->stream, k->corr = a->corr;
  k->start = a->start, k->end = a->end;
  k->name = a->name ? gp_writer_intern(R.w, a->name, strlen(a->name)) : 0;
  k->grid_x = a->grid[0], k->grid_y = a->grid[1], k->grid_z = a->grid[2];
  k->block_x = a->block[0], k->block_y = a->block[1], k->block_z = a->block[2];
  k->regs = a->regs, k->smem_static = a->smem_static;
  k->smem_dynamic = a->smem_dynamic, k->graph_id = a->graph_id;
  describe_device(a->device);
  return 1;
}

static int copy_record(const struct gp_dev_activity *a,
                       struct gpuphase_record *r) {
  struct gpuphase_memcpy *m = &r->u.memcpy;
  r->kind = GPUPHASE_REC_MEMCPY;
  m->device = a->device, m->stream = a->stream, m->corr = a->corr;
  m->start = a->start, m->end = a->end, m->bytes = a->bytes;
  m->copy_kind = a->copy_kind, m->src_mem = a->src_mem;
  m->dst_mem = a->dst_mem, m->peer_device = a->peer_device;
  m->flags = a->flags;
  describe_device(a->device);
  return 1;
}

static int device_record(const struct gp_dev_activity *a,
                         struct gpuphase_record *r) {
  switch (a->kind) {
  case GP_DA_KERNEL: return kernel_record(a, r);
  case GP_DA_MEMCPY: return copy_record(a, r);
  case GP_DA_MEMSET: {
    struct gpuphase_memset *m = &r->u.memset;
    r->kind = GPUPHASE_REC_MEMSET;
    m->device = a->device, m->stream = a->stream, m->corr = a->corr;
    m->start = a->start, m->end = a->end, m->bytes = a->bytes;
    m->value = a->value, m->flags = a->flags;
    return 1;
  }
  case GP_DA_SYNC: {
    struct gpuphase_sync *s = &r->u.sync;
    r->kind = GPUPHASE_REC_SYNC;
    s->device = a->device, s->stream = a->stream, s->corr = a->corr;
    s->start = a->start, s->end = a->end, s->type = a->sync_type;
    return 1;
  }
  default: return 0;
  }
}

void gp_records_activity(const struct gp_dev_activity *a, void *ctx) {
  (void)ctx;
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  /* A synchronisation starts when the host begins to wait, before work
   * queued ahead of it on the stream: give them sources of their own so
   * every source stays in start order. */
  uint32_t src = a->kind == GP_DA_SYNC
                     ? stream_source(a->device | 0x80000000u, a->stream)
                     : stream_source(a->device, a->stream);
  if (device_record(a, &r)) gp_records_add(src, &r);
}

/* A running total of events lost at one source (1: CUPTI's drops, 3: the
 * calls made while recording started): what it grew by since *reported,
 * as one LOST record. */
static void lost_since(uint64_t total, uint64_t *reported, uint64_t source) {
  if (total <= *reported) return;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_LOST};
  r.u.lost.start = gp_mono_ns();
  r.u.lost.count = total - *reported;
  r.u.lost.source = source;
  gp_records_add(0, &r);
  R.lost_total += total - *reported;
  *reported = total;
}

void gp_records_start_lost(uint64_t n) {
  lost_since(n, &R.start_lost_reported, 3);
}

void gp_records_cupti_dropped(uint64_t dropped) {
  lost_since(dropped, &R.cupti_lost_reported, 1);
}
