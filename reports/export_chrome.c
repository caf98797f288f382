/* The Chrome trace-event JSON: X slices, s/f flows (bp "e"), C counters, M
 * metadata (process and thread names, sort order). Chrome has processes and
 * threads only: each GPU becomes a process of its own ("GPU 0 of pid N"),
 * each stream lane, range lane and step track a thread of its process.
 * Timestamps: µs relative to the export's base with ns precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "jsonw.h"
#include "u64map.h"

enum { PSEUDO = 0x40000000 }; /* pids and tids of our own above this */

struct ctrack {
  int64_t pid, tid;
  char *name;
  int kind, sort; /* the track's kind; its sort index (threads) */
  int nsub;       /* threads: range and step tracks put under it so far */
};

/* A thread's sort index leaves room for its own range and step tracks
 * right under it (Chrome sorts a process's threads by index alone). */
enum { SUBTRACKS = 64 };

struct ch {
  FILE *f;
  uint64_t base;
  int first;
  struct gp_u64map ix; /* uuid -> index + 1 */
  struct ctrack *t;
  size_t n;
  int64_t next_pseudo;
  char **notes;
  size_t nnotes;
};

/* ns as µs with three decimals, negative when neg */
static void us(struct ch *c, const char *key, int neg, uint64_t a) {
  fprintf(c->f, ",\"%s\":%s%llu.%03llu", key, neg ? "-" : "",
          (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

/* a time relative to the base (any two uint64_t: no overflow) */
static void ts(struct ch *c, const char *key, uint64_t t) {
  us(c, key, t < c->base, t < c->base ? c->base - t : t - c->base);
}

static void open_ev(struct ch *c, const char *ph, int64_t pid, int64_t tid) {
  fputs(c->first ? "\n" : ",\n", c->f);
  c->first = 0;
  fprintf(c->f, "{\"ph\":\"%s\",\"pid\":%lld,\"tid\":%lld", ph, (long long)pid,
          (long long)tid);
}

static void meta(struct ch *c, const char *what, int64_t pid, int64_t tid,
                 const char *name, int sort) {
  open_ev(c, "M", pid, tid);
  fprintf(c->f, ",\"name\":\"%s_name\",\"args\":{\"name\":", what);
  gp_json_quote(c->f, name);
  fputs("}}", c->f);
  open_ev(c, "M", pid, tid);
  fprintf(c->f, ",\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%d}}",
          what, sort);
}

static struct ctrack *find(const struct ch *c, uint64_t uuid) {
  uint64_t *v = gp_u64map_get(&c->ix, uuid);
  return v ? &c->t[*v - 1] : NULL;
}

static int ch_track(void *ctx, const struct gp_tl_track *t) {
  struct ch *c = ctx;
  struct ctrack *par = t->parent ? find(c, t->parent) : NULL;
  struct ctrack x = {.kind = t->kind};
  char name[320];
  snprintf(name, sizeof name, "%s", t->name);
  switch (t->kind) {
  case GP_TL_PROCESS:
  case GP_TL_NOTES:
    x.pid = t->pid & (PSEUDO - 1);
    meta(c, "process", x.pid, 0, name, (int)t->order);
    break;
  case GP_TL_THREAD:
    x.pid = t->pid & (PSEUDO - 1);
    x.tid = t->tid & (PSEUDO - 1);
    x.sort = t->order * SUBTRACKS;
    meta(c, "thread", x.pid, x.tid, name, x.sort);
    break;
  case GP_TL_GPU:
    x.pid = PSEUDO + c->next_pseudo++;
    snprintf(name, sizeof name, "%s of %s", t->name, par ? par->name : "?");
    meta(c, "process", x.pid, 0, name, 1000 + (int)(x.pid - PSEUDO));
    break;
  case GP_TL_COUNTER:
    x.pid = par ? par->pid : 0;
    break;
  default: /* stream lanes, ranges and steps: threads of their own */
    x.pid = par ? par->pid : t->pid & (PSEUDO - 1);
    x.tid = PSEUDO + c->next_pseudo++;
    if (t->kind == GP_TL_STREAM) {
      snprintf(name, sizeof name, "%s%s%.0u", t->name, t->lane ? " lane " : "",
               t->lane);
      x.sort = t->order;
    } else if (par && par->kind == GP_TL_THREAD) {
      /* under its thread, named by it and its tid: threads often share a
       * name ("python", three workers called "mix") */
      snprintf(name, sizeof name, "%s [%lld]: %s%s%.0u", par->name,
               (long long)par->tid, t->name, t->lane ? " lane " : "",
               t->lane);
      /* in the order the tracks come (steps, ranges, their lanes) */
      x.sort = par->sort + 1 + (par->nsub < SUBTRACKS - 2 ? par->nsub++
                                                          : SUBTRACKS - 2);
    } else {
      snprintf(name, sizeof name, "%s: %s%s%.0u", par ? par->name : "?",
               t->name, t->lane ? " lane " : "", t->lane);
      x.sort = (int)(x.tid - PSEUDO);
    }
    meta(c, "thread", x.pid, x.tid, name, x.sort);
    break;
  }
  if (t->kind == GP_TL_COUNTER) snprintf(name, sizeof name, "%s", t->name);
  x.name = strdup(name);
  struct ctrack *n = realloc(c->t, (c->n + 1) * sizeof *n);
  if (!x.name || !n) {
    free(x.name);
    if (n) c->t = n;
    return -1;
  }
  c->t = n;
  c->t[c->n++] = x;
  if (gp_u64map_put(&c->ix, t->uuid, c->n) < 0) return -1;
  return ferror(c->f) ? -1 : 0;
}

static void args(struct ch *c, const struct gp_tl_slice *s) {
  fputs(",\"args\":{", c->f);
  for (size_t i = 0; i < s->nargs; i++) {
    const struct gp_tl_arg *a = &s->args[i];
    fprintf(c->f, "%s\"%s\":", i ? "," : "", gp_tl_arg_name[a->name]);
    if (a->type == GP_TL_ARG_U)
      fprintf(c->f, "%llu", (unsigned long long)a->u);
    else if (a->type == GP_TL_ARG_I)
      fprintf(c->f, "%lld", (long long)a->i);
    else
      fprintf(c->f, "\"%s\"", gp_tl_strval[a->u]);
  }
  fputc('}', c->f);
}

static void flow(struct ch *c, const struct ctrack *t, const char *ph,
                 uint64_t id, uint64_t at) {
  open_ev(c, ph, t->pid, t->tid);
  fprintf(c->f, ",\"id\":%llu,\"name\":\"launch\",\"cat\":\"flow\"%s",
          (unsigned long long)id, *ph == 'f' ? ",\"bp\":\"e\"" : "");
  ts(c, "ts", at);
  fputc('}', c->f);
}

static void x_event(struct ch *c, const struct ctrack *t, uint64_t start,
                    uint64_t end, const char *name, const char *cat) {
  open_ev(c, "X", t->pid, t->tid);
  fputs(",\"name\":", c->f);
  gp_json_quote(c->f, name);
  fprintf(c->f, ",\"cat\":\"%s\"", cat);
  ts(c, "ts", start);
  us(c, "dur", 0, end - start);
}

static int ch_slice(void *ctx, const struct gp_tl_slice *s) {
  struct ch *c = ctx;
  const struct ctrack *t = find(c, s->track);
  if (!t) return -1;
  x_event(c, t, s->start, s->end, s->name, s->cat);
  args(c, s);
  fputc('}', c->f);
  for (size_t i = 0; i < s->nflows_out; i++)
    flow(c, t, "s", s->flows_out[i], s->start);
  if (s->flow_in) flow(c, t, "f", s->flow_in, s->start);
  return ferror(c->f) ? -1 : 0;
}

static int ch_begin(void *ctx, uint64_t track, uint64_t at, const char *name,
                    uint64_t key) {
  (void)ctx, (void)track, (void)at, (void)name, (void)key;
  return 0; /* written whole at the end */
}

static int ch_end(void *ctx, uint64_t track, uint64_t at, uint64_t start,
                  const char *name) {
  struct ch *c = ctx;
  const struct ctrack *t = find(c, track);
  if (!t) return -1;
  x_event(c, t, start, at, name, "range");
  fputc('}', c->f);
  return ferror(c->f) ? -1 : 0;
}

static int ch_counter(void *ctx, uint64_t track, uint64_t at, double v) {
  struct ch *c = ctx;
  const struct ctrack *t = find(c, track);
  if (!t) return -1;
  open_ev(c, "C", t->pid, 0);
  fputs(",\"name\":", c->f);
  gp_json_quote(c->f, t->name);
  ts(c, "ts", at);
  fprintf(c->f, ",\"args\":{\"value\":%.17g}}", isfinite(v) ? v : 0);
  return ferror(c->f) ? -1 : 0;
}

static int ch_note(void *ctx, uint64_t at, const char *text) {
  struct ch *c = ctx;
  char *d = strdup(text);
  char **n = realloc(c->notes, (c->nnotes + 1) * sizeof *n);
  if (!d || !n) {
    free(d);
    if (n) c->notes = n;
    return -1;
  }
  c->notes = n;
  c->notes[c->nnotes++] = d;
  open_ev(c, "i", 0, 0);
  fputs(",\"s\":\"g\",\"name\":", c->f);
  gp_json_quote(c->f, text);
  ts(c, "ts", at);
  fputc('}', c->f);
  return ferror(c->f) ? -1 : 0;
}

static int ch_finish(void *ctx) {
  struct ch *c = ctx;
  fputs("\n],\n\"otherData\":{\"generator\":\"gpuphase-report\",\"notes\":[",
        c->f);
  for (size_t i = 0; i < c->nnotes; i++) {
    if (i) fputc(',', c->f);
    gp_json_quote(c->f, c->notes[i]);
  }
  fputs("]}}\n", c->f);
  return ferror(c->f) ? -1 : 0;
}

static void ch_free(void *ctx) {
  struct ch *c = ctx;
  if (!c) return;
  for (size_t i = 0; i < c->n; i++)
    free(c->t[i].name);
  for (size_t i = 0; i < c->nnotes; i++)
    free(c->notes[i]);
  free(c->t);
  free(c->notes);
  gp_u64map_free(&c->ix);
  free(c);
}

struct gp_xsink *gp_xsink_chrome(FILE *f, uint64_t base) {
  struct ch *c = calloc(1, sizeof *c);
  struct gp_xsink *x = calloc(1, sizeof *x);
  if (!c || !x) {
    free(c), free(x);
    return NULL;
  }
  c->f = f;
  c->base = base;
  c->first = 1;
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  x->tl =
      (struct gp_tl_sink){c, ch_track, ch_slice, ch_begin, ch_end, ch_counter};
  x->note = ch_note;
  x->finish = ch_finish;
  x->free = ch_free;
  return x;
}
