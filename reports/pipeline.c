#include "pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"
#include "callsites.h"
#include "codec.h"
#include "gpuphase/trace.h"
#include "job_par.h"
#include "reader_ext.h"
#include "util.h"
#include "measured.h"

static char *dup0(const char *s) {
  return s ? strdup(s) : NULL;
}

static void identity(struct gp_proc_res *r, const gpuphase_reader *rd,
                     const char *path) {
  const struct gpuphase_header *h = gpuphase_reader_header(rd);
  r->file = dup0(path);
  r->pid = h->pid;
  r->ppid = h->ppid;
  r->rank = h->rank;
  r->host = dup0(h->host);
  r->cmdline = dup0(h->cmdline);
  r->run_id = h->run_id && *h->run_id ? dup0(h->run_id) : NULL;
}

/* The engine and where feed_all reports progress to. */
struct feed_ctx {
  gp_attr *a;
  gp_progress_fn progress;
  void *ctx;
  const char *path;
  gpuphase_reader *rd;
  uint64_t size;
};

static int feed_cb(void *arg, const struct gpuphase_record *rec) {
  return gp_attr_feed_cb(((struct feed_ctx *)arg)->a, rec);
}

static void feed_tick(void *arg, uint64_t n) {
  struct feed_ctx *f = arg;
  f->progress(f->ctx, f->path, gpuphase_reader_offset(f->rd), f->size, n);
}

/* Feeds every record; 0 at the end of the trace, else the reader's error. */
static int feed_all(gpuphase_reader *rd, gp_attr *a, const char *path,
                    gp_progress_fn progress, void *ctx, int *oom) {
  struct feed_ctx f = {a, progress, ctx, path, rd,
                       gpuphase_reader_file_size(rd)};
  int rc = progress ? gp_reader_each_sorted(rd, feed_cb, &f, feed_tick)
                    : gp_reader_each_sorted(rd, gp_attr_feed_cb, a, NULL);
  if (rc == 1) {
    *oom = 1;
    return 0;
  }
  if (progress) {
    uint64_t n = gp_attr_records(a);
    progress(ctx, path, f.size, f.size, n);
  }
  return rc;
}

/* ---- Reading and the engine on two threads ----
 * With two threads or more for one trace, one reads (the time-ordered
 * merge, with the decompressing and decoding workers of the rest) and the
 * calling thread feeds the engine: the records go between them in batches
 * of copies, their blobs copied with them (a record handed out by the
 * reader lives only until the next one). The engine sees the same records
 * in the same order, so the output is that of one thread.
 *
 * Eight batches of 2,048 (2.4 MB of copies): the reading stops for about
 * a millisecond at each frame it decompresses (256 KB, some 30,000
 * records) and runs ahead of the engine in between, so the ring has to
 * absorb both. With four, the reader waited for room at one batch in
 * three and the engine for records at every frame: -j 2 was 14% slower
 * (docs/performance.md, "Two threads, one file"). Larger batches, or
 * more of them, spill out of the core's cache and gain nothing. */
enum { BATCH_RECS = 2048, BATCH_BYTES = 128 * 1024, NBATCH = 8 };

struct batch {
  struct gpuphase_record *recs; /* BATCH_RECS */
  char *bytes;                  /* BATCH_BYTES of blob copies */
  char **extra;                 /* blobs too large for bytes */
  size_t n, used, nextra, capextra;
  int rc;       /* the reader's result after the last record: 1 more */
  uint64_t off; /* the reader's offset then (progress) */
};

struct feeder {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct batch b[NBATCH];
  /* batches filled: [tail, head); stored under mu, read also outside it
   * while a side spins before it sleeps */
  _Atomic uint64_t head, tail;
  _Atomic int stop;    /* the engine's side asks the reader to stop */
  int oom;             /* the reader's side ran out of memory */
  gpuphase_reader *rd;
  /* the reading side's own: the batch it fills, and whether a copy ran
   * out of memory */
  struct batch *cur;
  int cur_oom;
};

static void batch_clear(struct batch *b) {
  for (size_t i = 0; i < b->nextra; i++)
    free(b->extra[i]);
  b->n = b->used = b->nextra = 0;
}

/* A copy of blob x's bytes that lives as long as the batch's records. */
static int blob_copy(struct batch *b, gpuphase_blob *x) {
  if (!x->data || !x->len) return 0;
  char *d;
  if (x->len <= BATCH_BYTES - b->used) {
    d = b->bytes + b->used;
    b->used += x->len;
  } else {
    if (b->nextra == b->capextra) {
      size_t cap = b->capextra ? 2 * b->capextra : 8;
      char **e = realloc(b->extra, cap * sizeof *e);
      if (!e) return -1;
      b->extra = e;
      b->capextra = cap;
    }
    if (!(d = malloc(x->len))) return -1;
    b->extra[b->nextra++] = d;
  }
  memcpy(d, x->data, x->len);
  x->data = d;
  return 0;
}

/* The copy of a record's blobs into b (c: the record's copy there). */
static int record_copy(struct batch *b, struct gpuphase_record *c) {
  const struct gp_kind_desc *d = gp_kind_desc(c->kind);
  for (unsigned i = 0; d && i < d->nfields; i++)
    if (d->fields[i].coding == 'B' &&
        blob_copy(b, (gpuphase_blob *)(void *)((char *)&c->u +
                                               d->fields[i].offset)) < 0)
      return -1;
  return 0;
}

/* A side waits for the other: a short spin first, since a batch takes
 * about as long as a sleeping thread takes to wake (tens of microseconds
 * on a VM), then the condition variable. */
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#else
#define SPIN_PAUSE() ((void)0)
#endif
static int room(struct feeder *f) {
  return atomic_load(&f->stop) ||
         atomic_load(&f->head) - atomic_load(&f->tail) < NBATCH;
}
static int filled(struct feeder *f) {
  return atomic_load(&f->head) != atomic_load(&f->tail);
}
static void wait_until(struct feeder *f, int (*ready)(struct feeder *)) {
  for (int i = 0; i < 256; i++) {
    if (ready(f)) return;
    SPIN_PAUSE();
  }
  pthread_mutex_lock(&f->mu);
  while (!ready(f)) pthread_cond_wait(&f->cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
}

/* The reading side's next empty batch, once there is room for one; NULL
 * when the engine's side asked it to stop. */
static struct batch *batch_take(struct feeder *f) {
  wait_until(f, room);
  pthread_mutex_lock(&f->mu);
  int stop = f->stop;
  struct batch *b = &f->b[f->head % NBATCH];
  pthread_mutex_unlock(&f->mu);
  if (stop) return NULL;
  batch_clear(b);
  return b;
}

/* Hands the current batch to the engine's side: rc is the reader's result
 * after its last record (1: more follow). */
static void batch_put(struct feeder *f, int rc, int oom) {
  f->cur->rc = oom ? 0 : rc;
  f->cur->off = gpuphase_reader_offset(f->rd);
  pthread_mutex_lock(&f->mu);
  f->oom |= oom;
  f->head++;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

/* copy_cb's cases off its path: a record with blobs (c, its copy, is
 * not counted yet) and a full batch. Out of line, so that the path of
 * the others saves no registers. */
static int __attribute__((noinline))
copy_rest(struct feeder *f, struct gpuphase_record *c) {
  struct batch *b = f->cur;
  if (gp_kind_in(GP_BLOB_KINDS, c->kind) && record_copy(b, c) < 0) {
    f->cur_oom = 1;
    return -1;
  }
  if (++b->n == BATCH_RECS) {
    batch_put(f, 1, 0);
    if (!(f->cur = batch_take(f))) return -1;
  }
  return 0;
}

/* The reader's callback on the reading thread: the merge runs in
 * gp_reader_each_sorted's own loop, which keeps the top source at hand,
 * and each record is copied into the current batch; a full one is handed
 * over at once (so its offset is that of its last record). The whole
 * record is copied, a copy of fixed size the compiler inlines: the kinds
 * nearly every record is (API, KERNEL) fill nearly all of it, and the
 * reader hands out records held in whole structs. */
static int copy_cb(void *arg, const struct gpuphase_record *rec) {
  struct feeder *f = arg;
  struct batch *b = f->cur;
  size_t n = b->n;
  struct gpuphase_record *c = &b->recs[n];
  *c = *rec;
  /* kinds with blobs, and others (those from 64 up) that copy_rest tells
   * apart: a shift of the kinds' mask by the kind, with no bound test */
  if (__builtin_expect(
          (GP_BLOB_KINDS >> (rec->kind & 63) & 1) || n + 1 == BATCH_RECS, 0))
    return copy_rest(f, c);
  b->n = n + 1;
  return 0;
}

static void *reader_main(void *arg) {
  struct feeder *f = arg;
  if (!(f->cur = batch_take(f))) return NULL;
  int rc = gp_reader_each_sorted(f->rd, copy_cb, f, NULL);
  if (f->cur) batch_put(f, rc == 1 ? 0 : rc, f->cur_oom);
  return NULL;
}

static void feeder_free(struct feeder *f) {
  for (int i = 0; i < NBATCH; i++) {
    batch_clear(&f->b[i]);
    free(f->b[i].recs);
    free(f->b[i].bytes);
    free(f->b[i].extra);
  }
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
}

/* feed_all with the reading on a thread of its own; 1 if that thread
 * could not be had (feed_all then does it all). */
static int feed_split(gpuphase_reader *rd, gp_attr *a, const char *path,
                      gp_progress_fn progress, void *ctx, int *oom) {
  struct feeder f;
  memset(&f, 0, sizeof f);
  f.rd = rd;
  pthread_mutex_init(&f.mu, NULL);
  pthread_cond_init(&f.cv, NULL);
  uint64_t n = 0, size = gpuphase_reader_file_size(rd);
  pthread_t th;
  int ok = 1;
  for (int i = 0; i < NBATCH && ok; i++)
    ok = (f.b[i].recs = malloc(BATCH_RECS * sizeof *f.b[i].recs)) &&
         (f.b[i].bytes = malloc(BATCH_BYTES));
  if (!ok || pthread_create(&th, NULL, reader_main, &f) != 0) {
    feeder_free(&f);
    return 1;
  }
  int rc = 1;
  while (rc == 1) {
    wait_until(&f, filled);
    pthread_mutex_lock(&f.mu);
    struct batch *b = &f.b[f.tail % NBATCH];
    *oom |= f.oom;
    pthread_mutex_unlock(&f.mu);
    if (!*oom && gp_attr_feed_n(a, b->recs, b->n) < 0) *oom = 1;
    if (progress && !*oom && (n + b->n) >> 16 != n >> 16)
      progress(ctx, path, b->off, size, (n + b->n) & ~(uint64_t)0xffff);
    n += b->n;
    rc = *oom ? 0 : b->rc;
    pthread_mutex_lock(&f.mu);
    f.tail++;
    if (rc != 1) f.stop = 1;
    pthread_cond_broadcast(&f.cv);
    pthread_mutex_unlock(&f.mu);
  }
  pthread_join(th, NULL);
  feeder_free(&f);
  if (*oom) return 0;
  if (progress) progress(ctx, path, size, size, n);
  return rc;
}

static struct gp_proc_res *one_pass(const char *path,
                                    const struct gp_report_opts *opts,
                                    gp_progress_fn progress, void *ctx,
                                    int *status, char *err, size_t errlen) {
  int code = 0, oom = 0;
  struct gp_report_opts ro = *opts, *o = &ro;
  *status = GP_PIPE_BAD_INPUT;
  gpuphase_reader *rd = gp_open_sorted(path, &code, err, errlen);
  if (!rd) {
    if (code == GPUPHASE_E_NOMEM) *status = GP_PIPE_NOMEM;
    return NULL;
  }
  ro.step_items = gpuphase_reader_header(rd)->step_items;
  /* two threads or more: one of them feeds the engine (feed_split) */
  int split = o->read_threads >= 2;
  gp_reader_set_threads(rd, split ? o->read_threads - 1 : o->read_threads);
  gp_attr *a = gp_attr_new(o);
  int rc = 1;
  if (a && split)
    rc = feed_split(rd, a, path, progress, ctx, &oom);
  if (a && rc == 1) /* one thread, or no second one to be had */
    rc = feed_all(rd, a, path, progress, ctx, &oom);
  if (!a) rc = 0;
  struct gp_proc_res *r = NULL;
  if (!a || oom) {
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
  } else if (rc == GPUPHASE_E_NOMEM) {
    const char *m = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: %s", path, m && *m ? m : "out of memory");
    *status = GP_PIPE_NOMEM;
  } else if (rc < 0) {
    const char *m = gpuphase_reader_errmsg(rd);
    if (m && strstr(m, "byte"))
      snprintf(err, errlen, "%s: corrupt trace: %s", path, m);
    else
      snprintf(err, errlen, "%s: corrupt trace at byte %llu: %s", path,
               (unsigned long long)gpuphase_reader_offset(rd),
               m && *m ? m : gpuphase_strerror(rc));
  } else if (!(r = gp_attr_finish(a))) {
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
  } else {
    identity(r, rd, path);
    uint64_t unwritten = gp_attr_unwritten(a);
    r->meas_records = gp_attr_meas_records(a);
    r->truncated = gpuphase_reader_truncated(rd);
    if (r->truncated)
      gp_res_note(r, "the trace is truncated (process killed or file cut): "
                     "it was read up to its last complete frame");
    else if (!r->has_summary) {
      /* whole frames, but not the last: the process was killed (or still
       * runs) before it wrote its summary */
      r->truncated = 1;
      gp_res_note(r, "the trace ends without its summary (process killed, "
                     "or still running): what came after its last flush is "
                     "missing");
    }
    if (unwritten)
      gp_res_note(r, "writing the trace file failed (disk full?): the %llu "
                     "events after its last complete flush could not be "
                     "written (counted as lost)",
                  (unsigned long long)unwritten);
    *status = GP_PIPE_OK;
  }
  gp_attr_free(a);
  gpuphase_reader_close(rd);
  return r;
}

static const char ps_glob[] = "ProfilerStep#*";

/* The steps a first pass chose, fixed for a second one. */
static void fix_steps(struct gp_report_opts *o, const struct gp_steps_res *s) {
  o->warmup = (long)s->warmup;
  o->step_source = s->source;
  o->step_exact = 0;
  o->step_api = NULL;
  o->step_func = 0;
  o->step_by_seq = 0;
  switch (s->source) {
  case GP_STEPS_REPEATED_RANGE:
    o->step = s->name;
    o->step_exact = 1;
    break;
  case GP_STEPS_PROFILER_STEP:
    o->step = ps_glob;
    break;
  case GP_STEPS_HEURISTIC:
    o->step = NULL;
    if (s->func) {
      o->step_func = s->func;
      o->step_by_seq = s->by_seq;
    } else {
      o->step_api = s->name;
    }
    break;
  default: /* NAMED: o->step stays */
    break;
  }
}

static struct gp_proc_res *report_file(const char *path,
                                       const struct gp_report_opts *o,
                                       gp_progress_fn progress, void *ctx,
                                       int *status, char *err, size_t errlen) {
  static const struct gp_report_opts defaults = {.warmup = -1};
  if (!o) o = &defaults;
  /* One pass attributes everything, the per-step detail included (with
   * the steps found alone, it is gathered by step set version and summed
   * once the steps are chosen: attr_steps.c). A second one, with the
   * steps the first chose, only when the first had to drop steps of the
   * chosen candidate, or gave up the detail's log. Before it, when no
   * range or synchronising call made steps and the launches were not
   * followed to the end (a range repeated, then fell short), a pass that
   * follows the launches alone, in place of the first. */
  struct gp_proc_res *r = one_pass(path, o, progress, ctx, status, err,
                                   errlen);
  if (!r) return NULL;
  struct gp_report_opts lo;
  char *why = NULL; /* the first pass's, said by the ones after it */
  if (r->steps.relaunch) {
    lo = *o;
    lo.step_launches = 1;
    why = r->steps.why;
    r->steps.why = NULL;
    lo.step_why = why;
    o = &lo;
    gp_res_free(r);
    r = one_pass(path, o, progress, ctx, status, err, errlen);
    if (!r) {
      free(why);
      return NULL;
    }
  }
  const struct gp_steps_res *s = &r->steps;
  int again = s->source != GP_STEPS_NONE &&
              (s->incomplete || (o->step_detail && !s->detail));
  if (!again) {
    free(why);
    return r;
  }
  struct gp_report_opts second = *o;
  fix_steps(&second, s);
  if (!why) {
    why = r->steps.why;
    r->steps.why = NULL;
  }
  second.step_why = why;
  /* only the choice is needed from the first pass: free the rest first */
  const char *keep = second.step_api                       ? second.step_api
                     : second.step != o->step && second.step != ps_glob
                         ? second.step
                         : NULL; /* the user's name or a constant */
  char *name = keep ? strdup(keep) : NULL;
  if (keep && !name) {
    gp_res_free(r);
    free(why);
    snprintf(err, errlen, "%s: out of memory", path);
    *status = GP_PIPE_NOMEM;
    return NULL;
  }
  if (second.step_api)
    second.step_api = name;
  else if (keep)
    second.step = name;
  gp_res_free(r);
  struct gp_proc_res *r2 =
      one_pass(path, &second, progress, ctx, status, err, errlen);
  free(name);
  free(why);
  return r2;
}

struct gp_proc_res *gp_report_file(const char *path,
                                   const struct gp_report_opts *o,
                                   gp_progress_fn progress, void *ctx,
                                   int *status, char *err, size_t errlen) {
  struct gp_proc_res *r =
      report_file(path, o, progress, ctx, status, err, errlen);
  /* the measured counters, once the window, steps and phases are fixed */
  if (r && r->meas_records && gp_meas_read(r, path, err, errlen) < 0) {
    *status = strstr(err, "out of memory") ? GP_PIPE_NOMEM : GP_PIPE_BAD_INPUT;
    gp_res_free(r);
    return NULL;
  }
  return r;
}

struct files_task {
  char *const *paths;
  struct gp_report_opts ro;
  gp_progress_fn progress;
  void *ctx;
  struct gp_proc_res **procs;
  int *status;
  char (*err)[512];
};

static int file_one(void *ctx, size_t i) {
  struct files_task *t = ctx;
  char why[4608] = "";
  t->procs[i] = gp_report_file(t->paths[i], &t->ro, t->progress, t->ctx,
                               &t->status[i], why, sizeof why);
  if (!t->procs[i]) gp_text_keep_ends(why, t->err[i], sizeof t->err[i]);
  return !t->procs[i];
}

size_t gp_report_files(char *const *paths, size_t n,
                       const struct gp_report_opts *o, int threads,
                       gp_progress_fn progress, void *ctx,
                       struct gp_proc_res **procs, int *status, char *err,
                       size_t errlen) {
  struct files_task t = {paths, *o, progress, ctx, procs,
                         calloc(n ? n : 1, sizeof *t.status),
                         calloc(n ? n : 1, sizeof *t.err)};
  if (!t.status || !t.err) {
    free(t.status);
    free(t.err);
    *status = GP_PIPE_NOMEM;
    snprintf(err, errlen, "out of memory");
    return 0;
  }
  if (threads < 1) threads = 1;
  t.ro.read_threads = (size_t)threads > n ? threads / (int)n : 1;
  size_t bad = gp_par_until(n, threads, file_one, &t);
  if (bad < n) {
    *status = t.status[bad];
    snprintf(err, errlen, "%s", t.err[bad]);
  }
  free(t.status);
  free(t.err);
  return bad;
}

struct gp_proc_res *gp_report_sum(struct gp_proc_res *const *procs, size_t n,
                                  const struct gp_report_opts *o) {
  struct gp_proc_res *sum = gp_res_new_sum();
  int rc = sum ? 0 : -1;
  size_t no_cs = 0; /* processes read from summaries of version 1 */
  for (size_t i = 0; !rc && i < n; i++) {
    rc = gp_res_merge(sum, procs[i]);
    no_cs += !procs[i]->callsites;
  }
  if (!rc && no_cs && no_cs < n && sum->callsites &&
      sum->callsites->has_stacks &&
      gp_res_note(sum,
                  "%zu of %zu processes come from summaries that hold no "
                  "call sites (version 1): the call sites, and the idle "
                  "time they explain, are the other processes'",
                  no_cs, n) < 0)
    rc = -1;
  if (!rc && sum->ndegraded &&
      gp_res_note(sum,
                  "%llu of %zu processes are degraded: their kernel "
                  "time is the host's view (blocking calls)",
                  (unsigned long long)sum->ndegraded, n) < 0)
    rc = -1;
  if (!rc) rc = gp_res_derive(sum, o);
  if (rc < 0) {
    gp_res_free(sum);
    return NULL;
  }
  return sum;
}
