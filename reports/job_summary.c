/* Summaries (job_summary.h). A summary holds, for each process, every
 * field of its result that derivation does not compute again (the derived
 * ones are recomputed when it is read, by the same code), and its job
 * inputs. One visitor per structure lists each field once, for writing
 * and reading alike. Layout: docs/jobs.md ("Summaries"). */
#include "job_summary.h"
#include "callsites.h"
#include "job_par.h"
#include "measured.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zstd.h>

static const char magic[8] = {'G', 'P', 'S', 'U', 'M', 'M', 'R', 'Y'};
#define HEAD 24                /* magic, version, flags, body size */
/* flags: the body's zstd frame carries its content checksum (summaries
 * written before it have 0 and are read without one) */
#define SUM_CHECKSUM 1u
#define BODY_MAX (16ull << 30) /* a larger body is not ours */
/* RFC 8878: a zstd block holds at most 128 KiB of content, and one that
 * holds any takes 4 bytes or more (its 3-byte header, then the RLE byte,
 * the raw bytes or a compressed block's sections), so a frame of n bytes
 * decompresses to at most n / 4 blocks of 128 KiB: a larger declared size
 * is a forgery that must not make us allocate (40 bytes declaring 3 GiB). */
#define ZBLOCK_MAX (128u << 10)
#define NO_STR UINT64_MAX      /* the length of a NULL string */
#define STEP_MAX (1ull << 62)  /* ns: longer steps are damage */

struct io {
  int rd;
  uint32_t ver; /* the summary version being read or written */
  FILE *w;
  const uint8_t *p, *end, *base;
  const char *bad; /* the first thing wrong, reading */
  size_t bad_at;
  int oom;
};

static void fail_at(struct io *io, const char *why) {
  if (io->bad) return;
  io->bad = why;
  io->bad_at = (size_t)(io->p - io->base);
}

static void io_u64(struct io *io, uint64_t *v) {
  uint8_t b[8];
  if (!io->rd) {
    for (int i = 0; i < 8; i++)
      b[i] = (uint8_t)(*v >> (8 * i));
    fwrite(b, 1, 8, io->w);
    return;
  }
  *v = 0;
  if (io->bad) return;
  if (io->end - io->p < 8) return fail_at(io, "cut short");
  for (int i = 0; i < 8; i++)
    *v |= (uint64_t)io->p[i] << (8 * i);
  io->p += 8;
}

static void io_i64(struct io *io, int64_t *v) {
  uint64_t u = (uint64_t)*v;
  io_u64(io, &u);
  *v = (int64_t)u;
}

/* Every double of a result is a sum of non-negative products: anything
 * else (NaN, infinities, negatives) is damage. */
static void io_f64(struct io *io, double *v) {
  uint64_t u;
  memcpy(&u, v, sizeof u);
  io_u64(io, &u);
  memcpy(v, &u, sizeof u);
  if (io->rd && !(*v >= 0 && *v <= 1e300)) {
    *v = 0;
    fail_at(io, "a damaged number");
  }
}

static void io_int(struct io *io, int *v) {
  int64_t x = *v;
  io_i64(io, &x);
  if (io->rd && (x < INT_MIN || x > INT_MAX))
    fail_at(io, "a flag out of range");
  *v = io->bad ? 0 : (int)x;
}

static void io_size(struct io *io, size_t *v) {
  uint64_t x = *v;
  io_u64(io, &x);
  if (io->rd && x > SIZE_MAX) fail_at(io, "a count out of range");
  *v = io->bad ? 0 : (size_t)x;
}

static void io_str(struct io *io, char **s) {
  uint64_t len = !io->rd ? (*s ? strlen(*s) : NO_STR) : 0;
  io_u64(io, &len);
  if (!io->rd) {
    if (*s) fwrite(*s, 1, (size_t)len, io->w);
    return;
  }
  *s = NULL;
  if (io->bad || len == NO_STR) return;
  if ((uint64_t)(io->end - io->p) < len) return fail_at(io, "cut short");
  if (!(*s = malloc((size_t)len + 1))) {
    io->oom = 1;
    return fail_at(io, "out of memory");
  }
  memcpy(*s, io->p, (size_t)len);
  (*s)[len] = 0;
  io->p += len;
}

/* a name that must be there */
static void io_name(struct io *io, char **s) {
  io_str(io, s);
  if (io->rd && !io->bad && !*s) fail_at(io, "a missing name");
}

/* An array's length, and on reading the array itself (n elements of
 * `size` bytes, zeroed), refused when the rest of the input could not
 * hold min_bytes per element. */
static int io_array(struct io *io, size_t *n, void **v, size_t size,
                    size_t min_bytes) {
  io_size(io, n);
  if (!io->rd) return 0;
  *v = NULL;
  if (!io->bad && *n > (size_t)(io->end - io->p) / min_bytes)
    fail_at(io, "a count larger than the rest of the summary");
  if (!io->bad && !(*v = calloc(*n ? *n : 1, size))) {
    io->oom = 1;
    fail_at(io, "out of memory");
  }
  if (io->bad) *n = 0; /* what is freed must agree with what is there */
  return io->bad ? -1 : 0;
}

/* ---- visitors ---- */

static void v_bd(struct io *io, struct gp_breakdown *b) {
  for (int i = 0; i < GP_CAT_N; i++)
    io_u64(io, &b->cat[i]);
  for (int i = 0; i < GP_SUB_N; i++)
    io_u64(io, &b->sub[i]);
  io_u64(io, &b->kernel_xfer_overlap);
  io_u64(io, &b->comm_overlap);
  io_u64(io, &b->kernel_nsum);
  io_u64(io, &b->small_nsum);
  io_u64(io, &b->occ_nsum);
  io_f64(io, &b->occ_wsum);
  io_f64(io, &b->cov_ns);
}

static void v_hist(struct io *io, struct gp_hist *h) {
  io_u64(io, &h->n);
  io_u64(io, &h->sum);
  io_u64(io, &h->min);
  io_u64(io, &h->max);
  for (int i = 0; i < GP_HIST_EXACT; i++)
    io_u64(io, &h->exact[i]);
  io_int(io, &h->bucketed);
  io_int(io, &h->oom);
  uint64_t nocts = 0;
  for (int o = 0; !io->rd && o < GP_HIST_OCTAVES; o++)
    nocts += h->oct[o] != NULL;
  io_u64(io, &nocts);
  if (io->rd &&
      (nocts > GP_HIST_OCTAVES || (!h->bucketed && h->n > GP_HIST_EXACT)))
    return fail_at(io, "a damaged histogram");
  for (int o = 0, k = 0; (uint64_t)k < nocts && o < GP_HIST_OCTAVES; o++) {
    if (!io->rd && !h->oct[o]) continue;
    uint64_t at = (uint64_t)o;
    io_u64(io, &at);
    if (io->rd) {
      if (io->bad) return;
      if (at >= GP_HIST_OCTAVES || h->oct[at])
        return fail_at(io, "a damaged histogram");
      if (!(h->oct[at] = calloc(16, sizeof(uint64_t)))) {
        io->oom = 1;
        return fail_at(io, "out of memory");
      }
      o = (int)at;
    }
    for (int s = 0; s < 16; s++)
      io_u64(io, &h->oct[o][s]);
    k++;
  }
}

static void v_dev(struct io *io, struct gp_device_res *d) {
  io_i64(io, &d->id);
  io_str(io, &d->host);
  io_str(io, &d->name);
  io_int(io, &d->has_props);
  uint64_t *props[] = {
      &d->sms,         &d->mem_total,          &d->cc_major,
      &d->cc_minor,    &d->max_threads_per_sm, &d->max_blocks_per_sm,
      &d->regs_per_sm, &d->smem_per_sm,        &d->warp_size,
      &d->clock_khz,   &d->mem_clock_khz,      &d->mem_bus_width,
      &d->window_ns};
  for (size_t i = 0; i < sizeof props / sizeof *props; i++)
    io_u64(io, props[i]);
  v_bd(io, &d->bd);
  io_u64(io, &d->mem_peak);
  io_f64(io, &d->mem_area);
  for (int k = 0; k < GP_XFER_N; k++) {
    struct gp_copy_row *c = &d->copies[k];
    io_u64(io, &c->count);
    io_u64(io, &c->bytes);
    io_u64(io, &c->ns);
    io_u64(io, &c->pageable);
    io_u64(io, &c->pinned);
  }
  io_u64(io, &d->kernels);
  io_u64(io, &d->win_ns);
  if (io_array(io, &d->nwin, (void **)&d->win, sizeof *d->win,
               8 * (GP_CAT_N + 2)) < 0)
    return;
  for (size_t i = 0; i < d->nwin; i++) {
    for (int c = 0; c < GP_CAT_N; c++)
      io_u64(io, &d->win[i].cat[c]);
    io_f64(io, &d->win[i].cov_ns);
    io_u64(io, &d->win[i].mem_peak);
  }
  io_u64(io, &d->idle_longest);
  io_u64(io, &d->idle_longest_at);
}

static void v_thread(struct io *io, struct gp_thread_res *t) {
  io_u64(io, &t->index);
  io_u64(io, &t->tid);
  io_str(io, &t->name);
  io_u64(io, &t->cpu);
  io_u64(io, &t->submit);
  io_u64(io, &t->blocked);
  io_u64(io, &t->calls);
  io_u64(io, &t->life);
}

static void v_phase(struct io *io, struct gp_phase_res *p, size_t ndev) {
  io_name(io, &p->name);
  io_u64(io, &p->count);
  io_u64(io, &p->inst_ns);
  io_u64(io, &p->union_ns);
  v_hist(io, &p->dur);
  if (io->rd && !io->bad &&
      !(p->dev = calloc(ndev ? ndev : 1, sizeof *p->dev))) {
    io->oom = 1;
    return fail_at(io, "out of memory");
  }
  for (size_t d = 0; d < ndev && !io->bad; d++) {
    v_bd(io, &p->dev[d].bd);
    io_u64(io, &p->dev[d].mem_peak);
  }
}

static void v_kernel(struct io *io, struct gp_kernel_res *k) {
  io_name(io, &k->name);
  io_u64(io, &k->count);
  io_u64(io, &k->total);
  v_hist(io, &k->dur);
  io_u64(io, &k->grid);
  io_u64(io, &k->block);
  io_int(io, &k->grid_varies);
  io_int(io, &k->block_varies);
  io_u64(io, &k->regs);
  io_u64(io, &k->smem);
  io_f64(io, &k->cov_wsum);
  io_u64(io, &k->cov_ns);
  io_f64(io, &k->occ_wsum);
  io_u64(io, &k->occ_ns);
  io_int(io, &k->communication);
  io_u64(io, &k->step_count);
  io_u64(io, &k->step_ns);
}

static void v_api(struct io *io, struct gp_api_res *a) {
  io_name(io, &a->name);
  io_u64(io, &a->count);
  io_u64(io, &a->total);
  io_u64(io, &a->blocked);
  io_u64(io, &a->errors);
  io_u64(io, &a->step_count);
  io_u64(io, &a->step_total);
  io_u64(io, &a->step_blocked);
}

static void v_steps(struct io *io, struct gp_steps_res *s) {
  int src = (int)s->source;
  io_int(io, &src);
  if (io->rd && (src < 0 || src >= GP_STEPS_SOURCE_N))
    return fail_at(io, "an unknown step source");
  s->source = (enum gp_step_source)src;
  io_str(io, &s->name);
  io_str(io, &s->how);
  if (io_array(io, &s->n, (void **)&s->v, sizeof *s->v,
               8 * (3 + GP_CAT_N + GP_SC_N)) < 0)
    return;
  for (size_t i = 0; i < s->n; i++) {
    struct gp_step *st = &s->v[i];
    io_u64(io, &st->start);
    io_u64(io, &st->end);
    for (int c = 0; c < GP_CAT_N; c++)
      io_u64(io, &st->cat[c]);
    for (int c = 0; c < GP_SC_N; c++)
      io_u64(io, &st->c[c]);
    io_u64(io, &st->thread);
    /* a step of 146 years at most: its statistics stay within 64 bits */
    int odd = st->end < st->start || st->end - st->start > STEP_MAX;
    for (int c = 0; c < GP_CAT_N; c++)
      odd |= st->cat[c] > STEP_MAX;
    if (io->rd && !io->bad && odd) return fail_at(io, "an implausible step");
  }
  io_size(io, &s->warmup);
  /* a warm-up is some of the steps (the report clamps it so): more is
   * damage, which must not make a reader walk past them */
  if (io->rd && s->warmup > s->n) s->warmup = s->n;
  io_size(io, &s->ndev);
  io_int(io, &s->items_known);
  io_u64(io, &s->items_fixed);
  io_int(io, &s->detail);
  io_int(io, &s->incomplete);
  if (io->rd && !io->bad && (!s->ndev || s->ndev > 65536))
    fail_at(io, "steps over no GPU or too many");
}

static void v_diag(struct io *io, struct gp_diag *g) {
  uint64_t *f[] = {&g->records,       &g->timed,
                   &g->late,          &g->late_dropped,
                   &g->unmatched_end, &g->open_at_end,
                   &g->unknown_free,  &g->unresolved_copies,
                   &g->bad_interval};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    io_u64(io, f[i]);
  if (io->ver >= 2) io_u64(io, &g->captured); /* version 1 had none: 0 */
}

/* A double that may be negative (-1: unknown) but must be finite. */
static void io_f64s(struct io *io, double *v) {
  uint64_t u;
  memcpy(&u, v, sizeof u);
  io_u64(io, &u);
  memcpy(v, &u, sizeof u);
  if (io->rd && !(*v >= -1e300 && *v <= 1e300)) {
    *v = 0;
    fail_at(io, "a damaged number");
  }
}

static void v_magg(struct io *io, struct gp_magg *a) {
  io_f64s(io, &a->wsum);
  io_f64(io, &a->ns);
  io_f64s(io, &a->peak);
}

/* An optional array of n aggregates (NULL: none kept). */
static void v_magg_arr(struct io *io, struct gp_magg **v, size_t n) {
  int has = *v != NULL;
  io_int(io, &has);
  if (io->bad || !has) return;
  if (io->rd) {
    size_t cnt = n;
    if (io_array(io, &cnt, (void **)v, sizeof **v, 24) < 0) return;
    if (cnt != n) return fail_at(io, "measured parts of another count");
  } else {
    io_size(io, &n);
  }
  for (size_t i = 0; i < n && !io->bad; i++)
    v_magg(io, &(*v)[i]);
}

static void v_meas_dev(struct io *io, struct gp_meas_dev *d, size_t nsteps,
                       size_t nphases) {
  io_i64(io, &d->id);
  for (int q = 0; q < GP_MQ_N && !io->bad; q++) {
    struct gp_mq_res *x = &d->q[q];
    io_int(io, &x->source);
    if (io->rd && !io->bad && (x->source < 0 || x->source > 3))
      return fail_at(io, "a counter source out of range");
    io_u64(io, &x->samples);
    v_magg(io, &x->total);
    for (int b = 0; b < GP_MEAS_BUCKETS; b++)
      v_magg(io, &x->bucket[b]);
    v_magg_arr(io, &x->step, nsteps);
    v_magg_arr(io, &x->phase, nphases);
  }
  for (int k = 0; k < 4 && !io->bad; k++) {
    struct gp_msrc_state *st = &d->src[k];
    io_int(io, &st->seen);
    io_int(io, &st->ok_once);
    io_int(io, &st->status);
    io_str(io, &st->reason);
    io_int(io, &st->bad);
    io_int(io, &st->bad_status);
    io_int(io, &st->bad_after_ok);
  }
  io_f64s(io, &d->energy_j);
  int has = d->step_energy != NULL;
  io_int(io, &has);
  if (has && !io->bad) {
    size_t cnt = nsteps;
    if (io->rd) {
      if (io_array(io, &cnt, (void **)&d->step_energy, sizeof *d->step_energy,
                   8) < 0)
        return;
      if (cnt != nsteps) return fail_at(io, "measured steps of another count");
    } else {
      io_size(io, &cnt);
    }
    for (size_t i = 0; i < nsteps && !io->bad; i++)
      io_f64s(io, &d->step_energy[i]);
  }
  io_int(io, &d->other_procs);
  io_int(io, &d->other_mem);
  io_f64(io, &d->mem_other_bytes);
}

/* Call sites (summary version 2): the rows as the report shows them,
 * frames already resolved. */
static void v_cs_site(struct io *io, struct gp_cs_site *t) {
  io_str(io, &t->api);
  if (io_array(io, &t->nframes, (void **)&t->frames, sizeof *t->frames,
               8 * 6) < 0)
    return;
  for (size_t i = 0; i < t->nframes && !io->bad; i++) {
    struct gp_cs_frame *f = &t->frames[i];
    io_str(io, &f->function);
    io_str(io, &f->file);
    io_i64(io, &f->line);
    io_str(io, &f->module);
    io_int(io, &f->python);
    io_int(io, &f->inlined);
  }
  io_size(io, &t->title);
  if (io->rd && !io->bad && t->nframes && t->title >= t->nframes)
    return fail_at(io, "a call site named by a frame it does not have");
  io_int(io, &t->truncated);
  io_u64(io, &t->count);
  io_u64(io, &t->blocked_ns);
  io_u64(io, &t->idle_ns);
  v_hist(io, &t->dur);
  io_u64(io, &t->gaps);
  io_u64(io, &t->gap_ns);
  io_u64(io, &t->after_ns);
  io_u64(io, &t->launches);
}

static void v_callsites(struct io *io, struct gp_proc_res *r) {
  int has = r->callsites != NULL;
  io_int(io, &has);
  if (io->bad || !has) return;
  if (io->rd && !(r->callsites = calloc(1, sizeof *r->callsites))) {
    io->oom = 1;
    return fail_at(io, "out of memory");
  }
  struct gp_cs_res *c = r->callsites;
  io_int(io, &c->has_stacks);
  io_int(io, &c->frames_all);
  uint64_t *f[] = {&c->sync_idle_ns,       &c->sync_uncaptured_ns,
                   &c->host_wait_ns,       &c->host_wait_uncaptured_ns,
                   &c->blocked_ns,         &c->blocked_uncaptured_ns,
                   &c->calls_uncaptured,   &c->launches,
                   &c->launches_uncaptured};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    io_u64(io, f[i]);
  io_size(io, &c->modules_read);
  if (io_array(io, &c->n, (void **)&c->v, sizeof *c->v, 8 * 12) < 0) return;
  for (size_t i = 0; i < c->n && !io->bad; i++)
    v_cs_site(io, &c->v[i]);
}

/* The measured counters of a process (summary version 2), after its
 * phases: their names are the phases'. */
static void v_meas(struct io *io, struct gp_proc_res *r) {
  io_u64(io, &r->meas_records);
  int has = r->meas != NULL;
  io_int(io, &has);
  if (io->bad || !has) return;
  if (io->rd && !(r->meas = calloc(1, sizeof *r->meas))) {
    io->oom = 1;
    return fail_at(io, "out of memory");
  }
  struct gp_meas_res *m = r->meas;
  io_size(io, &m->nsteps);
  io_size(io, &m->nphases);
  if (io->rd && !io->bad && m->nphases != r->nphases)
    return fail_at(io, "measured phases that are not the process's");
  if (io->rd && !io->bad && m->nsteps > r->steps.n)
    return fail_at(io, "measured steps that are not the process's");
  io_u64(io, &m->t0);
  io_u64(io, &m->bucket_ns);
  io_size(io, &m->nbuckets);
  if (io->rd && !io->bad && m->nbuckets > GP_MEAS_BUCKETS)
    return fail_at(io, "too many measured time buckets");
  io_u64(io, &m->undefined);
  io_u64(io, &m->rejected);
  io_u64(io, &m->late);
  io_u64(io, &m->rejected_defs);
  io_u64(io, &m->over_budget);
  if (io->bad) return;
  if (io->rd && m->nphases) {
    if (!(m->phase_name = calloc(m->nphases, sizeof *m->phase_name))) {
      io->oom = 1;
      return fail_at(io, "out of memory");
    }
    for (size_t i = 0; i < m->nphases; i++)
      m->phase_name[i] = r->phases[i].name;
  }
  if (io_array(io, &m->ndev, (void **)&m->dev, sizeof *m->dev, 8) < 0) return;
  for (size_t i = 0; i < m->ndev && !io->bad; i++)
    v_meas_dev(io, &m->dev[i], m->nsteps, m->nphases);
}

static void v_proc(struct io *io, struct gp_proc_res *r) {
  io_str(io, &r->file);
  io_i64(io, &r->pid);
  io_i64(io, &r->ppid);
  io_i64(io, &r->rank);
  io_str(io, &r->host);
  io_str(io, &r->cmdline);
  io_str(io, &r->run_id);
  io_i64(io, &r->driver_version);
  io_i64(io, &r->runtime_version);
  io_u64(io, &r->wstart);
  io_u64(io, &r->window_ns);
  io_u64(io, &r->win_ns);
  io_int(io, &r->started);
  io_int(io, &r->degraded);
  io_int(io, &r->truncated);
  io_int(io, &r->has_summary);
  io_u64(io, &r->lost);
  io_u64(io, &r->nprocs);
  io_u64(io, &r->ndegraded);
  io_u64(io, &r->host_pinned_peak);
  if (io_array(io, &r->ndev, (void **)&r->dev, sizeof *r->dev, 8 * 40) < 0)
    return;
  for (size_t i = 0; i < r->ndev && !io->bad; i++)
    v_dev(io, &r->dev[i]);
  if (io_array(io, &r->nthreads, (void **)&r->threads, sizeof *r->threads,
               8 * 7) < 0)
    return;
  for (size_t i = 0; i < r->nthreads && !io->bad; i++)
    v_thread(io, &r->threads[i]);
  if (io_array(io, &r->nphases, (void **)&r->phases, sizeof *r->phases, 8 * 4) <
      0)
    return;
  for (size_t i = 0; i < r->nphases && !io->bad; i++)
    v_phase(io, &r->phases[i], r->ndev);
  if (io_array(io, &r->nkernels, (void **)&r->kernels, sizeof *r->kernels,
               8 * 16) < 0)
    return;
  for (size_t i = 0; i < r->nkernels && !io->bad; i++)
    v_kernel(io, &r->kernels[i]);
  if (io_array(io, &r->napis, (void **)&r->apis, sizeof *r->apis, 8 * 8) < 0)
    return;
  for (size_t i = 0; i < r->napis && !io->bad; i++)
    v_api(io, &r->apis[i]);
  if (io_array(io, &r->nnotes, (void **)&r->notes, sizeof *r->notes, 8) < 0)
    return;
  for (size_t i = 0; i < r->nnotes && !io->bad; i++)
    io_name(io, &r->notes[i]);
  v_diag(io, &r->diag);
  v_steps(io, &r->steps);
  if (io->ver >= 2) {
    v_meas(io, r);
    v_callsites(io, r);
  }
}

static void v_input(struct io *io, struct gp_job_input *in) {
  io_u64(io, &in->start_mono_ns);
  io_u64(io, &in->start_real_ns);
  if (io_array(io, &in->nc, (void **)&in->c, sizeof *in->c, 16) < 0) return;
  for (size_t i = 0; i < in->nc; i++) {
    io_u64(io, &in->c[i].start);
    io_u64(io, &in->c[i].end);
    if (io->rd && in->c[i].end < in->c[i].start)
      return fail_at(io, "a collective that ends before it starts");
  }
  if (io_array(io, &in->nkn, (void **)&in->kn, sizeof *in->kn, 24) < 0) return;
  for (size_t i = 0; i < in->nkn && !io->bad; i++) {
    io_name(io, &in->kn[i].name);
    io_u64(io, &in->kn[i].ns_all);
    io_u64(io, &in->kn[i].ns_steps);
  }
}

/* The sizes of the tables a summary's layout depends on. */
static void v_layout(struct io *io) {
  const uint64_t want[] = {GP_CAT_N, GP_SUB_N,      GP_XFER_N,
                           GP_SC_N,  GP_HIST_EXACT, GP_HIST_OCTAVES};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    uint64_t v = want[i];
    io_u64(io, &v);
    if (io->rd && !io->bad && v != want[i])
      return fail_at(io, "written by a build with other tables (categories, "
                         "counters or histogram sizes)");
  }
}

/* ---- writing ---- */

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* The analysis options (version 3 on). */
static void v_opts(struct io *io, struct gp_summary_opts *ao) {
  io_int(io, &ao->known);
  io_u64(io, &ao->window_ns);
  io_str(io, &ao->step);
  io_i64(io, &ao->warmup);
  io_int(io, &ao->frames_all);
  if (io->rd && !io->bad && (ao->known & ~1 || ao->frames_all & ~1))
    fail_at(io, "a damaged option");
}

int gp_summary_write_ver(FILE *f, struct gp_proc_res *const *procs,
                         const struct gp_job_input *in, size_t n,
                         const char *rule, double link_gbps,
                         const struct gp_summary_opts *ao, uint32_t ver,
                         int checksum) {
  char *body = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&body, &len);
  if (!m) return -1;
  struct io io = {.rd = 0, .ver = ver, .w = m};
  v_layout(&io);
  char *r = (char *)rule;
  io_str(&io, &r);
  double link = link_gbps;
  io_f64(&io, &link);
  if (ver >= 3) {
    struct gp_summary_opts x = {0};
    if (ao) x = *ao;
    if (!ao || !x.known) x = (struct gp_summary_opts){.warmup = -1};
    v_opts(&io, &x);
  }
  uint64_t np = n;
  io_u64(&io, &np);
  for (size_t i = 0; i < n; i++) {
    v_proc(&io, procs[i]);
    struct gp_job_input x = in[i];
    v_input(&io, &x);
  }
  if (fclose(m) != 0) {
    free(body);
    return -1;
  }
  size_t cap = ZSTD_compressBound(len);
  uint8_t *z = malloc(HEAD + cap);
  if (!z) {
    free(body);
    return -1;
  }
  /* the frame carries its content checksum: damage inside the body is
   * refused, not merged (flags bit 0 says so) */
  size_t zn = (size_t)-1;
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (cc && !ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
                                                 3)) &&
      !ZSTD_isError(
          ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum != 0)))
    zn = ZSTD_compress2(cc, z + HEAD, cap, body, len);
  ZSTD_freeCCtx(cc);
  free(body);
  if (ZSTD_isError(zn)) {
    free(z);
    return -1;
  }
  memcpy(z, magic, 8);
  put_le(z + 8, ver, 4);
  put_le(z + 12, checksum ? SUM_CHECKSUM : 0, 4);
  put_le(z + 16, len, 8);
  fwrite(z, 1, HEAD + zn, f); /* a write error: the caller's gp_out_done */
  free(z);
  return 0;
}

/* The defaults, however they were given (opts_differ). */
static const char *rule_norm(const char *rule) {
  return rule && !strcmp(rule, GP_JOB_COMM_DEFAULT) ? NULL : rule;
}
static uint64_t win_norm(uint64_t window_ns) {
  return window_ns == GP_DEFAULT_WINDOW_NS ? 0 : window_ns;
}

int gp_summary_write(FILE *f, struct gp_proc_res *const *procs,
                     const struct gp_job_input *in, size_t n, const char *rule,
                     const struct gp_report_opts *o) {
  struct gp_summary_opts ao = {.known = 1, .warmup = -1};
  if (o) {
    ao.window_ns = win_norm(o->window_ns);
    ao.step = (char *)o->step;
    ao.warmup = o->warmup < 0 ? -1 : o->warmup;
    ao.frames_all = o->frames_all != 0;
  }
  return gp_summary_write_ver(f, procs, in, n, rule_norm(rule),
                              o ? o->link_gbps : 0, &ao, GP_SUMMARY_VERSION,
                              1);
}

int gp_summary_write_set(FILE *f, const struct gp_summary_set *set) {
  /* the options of the summaries that recorded them (the others were
   * merged with them, unchecked), so that a later merge still checks */
  struct gp_summary_opts ao = set->ao;
  return gp_summary_write_ver(f, set->procs, set->in, set->n, set->rule,
                              set->link_gbps, &ao, GP_SUMMARY_VERSION, 1);
}

/* ---- reading ---- */

static uint64_t get_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int check_head(const uint8_t *f, size_t len, const char *path,
                      char *err, size_t errlen);

/* The rest of a stream whose head is read: until its end, at most
 * HEAD + the zstd bound of the body its head declares (a stream cannot be
 * sized before it is read). */
static uint8_t *slurp_stream(FILE *f, const uint8_t *head, size_t *len,
                             int *nomem, const char *path, char *err,
                             size_t errlen) {
  uint64_t body = get_le(head + 16, 8);
  if (body > BODY_MAX) {
    snprintf(err, errlen, "%s: corrupt summary (its size)", path);
    return NULL;
  }
  size_t cap = HEAD + ZSTD_compressBound((size_t)body) + 1, n = HEAD;
  size_t have = 64 << 10 < cap ? 64 << 10 : cap;
  uint8_t *b = malloc(have);
  if (!b) goto nomem;
  memcpy(b, head, HEAD);
  for (;;) {
    if (n == have) {
      if (have == cap) {
        /* more than a summary of that body can be */
        snprintf(err, errlen, "%s: corrupt summary (its size)", path);
        free(b);
        return NULL;
      }
      size_t more = have * 2 < cap ? have * 2 : cap;
      uint8_t *x = realloc(b, more);
      if (!x) goto nomem;
      b = x;
      have = more;
    }
    size_t got = fread(b + n, 1, have - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    free(b);
    return NULL;
  }
  *len = n;
  return b;
nomem:
  free(b);
  *nomem = 1;
  snprintf(err, errlen, "%s: out of memory", path);
  return NULL;
}

/* A summary's bytes, or NULL with err set: a regular file, or a stream (a
 * pipe, a FIFO with its writer, "-" for standard input) read to its end. */
static uint8_t *slurp(const char *path, size_t *len, int *nomem, char *err,
                      size_t errlen) {
  int in = !strcmp(path, "-");
  const char *name = in ? "standard input" : path;
  /* O_NONBLOCK: a FIFO without a writer would block open() for ever */
  int fd = in ? fcntl(0, F_DUPFD_CLOEXEC, 3)
              : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
  if (fd >= 0 && !f) close(fd);
  struct stat st;
  int ok = f && fstat(fileno(f), &st) == 0;
  int stream = ok && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  if (!ok || (!S_ISREG(st.st_mode) && !stream)) {
    snprintf(err, errlen, "%s: %s", name,
             !f ? strerror(errno)
                : "not a regular file or a pipe");
    if (f) fclose(f);
    return NULL;
  }
  if (stream) { /* blocking reads from here on */
    int fl = fcntl(fileno(f), F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
      fcntl(fileno(f), F_SETFL, fl & ~O_NONBLOCK);
  }
  size_t n = stream ? HEAD : (size_t)st.st_size;
  /* the head first: a file that is no summary of ours (a trace, a large
   * file given by mistake) is refused before it is read whole */
  uint8_t head[HEAD];
  size_t h = fread(head, 1, n < HEAD ? n : HEAD, f);
  if (stream && !h && !ferror(f)) {
    /* a FIFO whose writer has not opened it reads as empty, at once */
    snprintf(err, errlen, "%s: empty pipe: no summary (a FIFO must have its "
             "writer when merge opens it)", name);
    fclose(f);
    return NULL;
  }
  if (check_head(head, h == HEAD ? n : h, name, err, errlen) < 0) {
    fclose(f);
    return NULL;
  }
  if (stream) {
    uint8_t *b = slurp_stream(f, head, len, nomem, name, err, errlen);
    fclose(f);
    return b;
  }
  rewind(f);
  uint8_t *b = malloc(n ? n : 1);
  if (!b) {
    *nomem = 1;
    snprintf(err, errlen, "%s: out of memory", path);
  } else if (fread(b, 1, n, f) != n) {
    snprintf(err, errlen, "%s: %s", path,
             ferror(f) ? strerror(errno) : "changed while being read");
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = n;
  return b;
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

void gp_summary_set_free(struct gp_summary_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    gp_res_free(s->procs[i]);
    if (s->in) gp_job_input_free(&s->in[i]);
  }
  free(s->procs);
  free(s->in);
  free(s->rule);
  free(s->ao.step);
  memset(s, 0, sizeof *s);
}

/* An option's value for the messages: "'x'", or "the default". */
static const char *opt_val(char *buf, size_t n, int which,
                           const char *rule, double link,
                           const struct gp_summary_opts *ao) {
  switch (which) {
  case 0:
    if (!rule) return "the default";
    snprintf(buf, n, "'%s'", rule);
    break;
  case 1:
    if (link <= 0) return "the default";
    snprintf(buf, n, "%g", link);
    break;
  case 2:
    if (!ao->window_ns) return "the default";
    gp_fmt_sdur(buf, n, ao->window_ns);
    break;
  case 3:
    if (!ao->step) return "the default (found alone)";
    snprintf(buf, n, "'%s'", ao->step);
    break;
  case 4:
    if (ao->warmup < 0) return "the default";
    snprintf(buf, n, "%lld", (long long)ao->warmup);
    break;
  default:
    return ao->frames_all ? "all" : "user (the default)";
  }
  return buf;
}

/* The first analysis option in which a summary (rule, link, ao) differs
 * from the set before it, as 0 to 5 (the order of opt_val), or -1. A value
 * given that is the default's (--window 100ms, the default rule's glob) is
 * the default: the report is the same. */
static int opts_differ(const struct gp_summary_set *set, const char *rule,
                       double link, const struct gp_summary_opts *ao) {
  if (!same_str(rule_norm(rule), rule_norm(set->rule))) return 0;
  if (link != set->link_gbps) return 1;
  if (!ao->known || !set->ao.known) return -1;
  if (win_norm(ao->window_ns) != win_norm(set->ao.window_ns)) return 2;
  if (!same_str(ao->step, set->ao.step)) return 3;
  if (ao->warmup != set->ao.warmup) return 4;
  if (ao->frames_all != set->ao.frames_all) return 5;
  return -1;
}

/* The error of a summary (rule, link, ao) whose option d differs from the
 * set's. */
static void opts_error(char *err, size_t errlen, const char *path, int d,
                       const char *rule, double link,
                       const struct gp_summary_opts *ao,
                       const struct gp_summary_set *set) {
  static const char *const name[] = {"--comm-kernels", "--link-gbps",
                                     "--window",       "--step",
                                     "--warmup",       "--frames"};
  char here[96], there[96];
  snprintf(err, errlen,
           "%s: made with other options than the summaries before it: "
           "%s %s, not %s (summaries merge only with the same analysis "
           "options)",
           path, name[d], opt_val(here, sizeof here, d, rule, link, ao),
           opt_val(there, sizeof there, d, set->rule, set->link_gbps,
                   &set->ao));
}

/* Parses a body into set; returns 0 or -1 (io->bad says why). */
static int parse(struct io *io, struct gp_summary_set *set, const char *path,
                 char *err, size_t errlen) {
  v_layout(io);
  char *rule = NULL;
  double link = 0;
  uint64_t np = 0;
  struct gp_summary_opts ao = {.warmup = -1};
  io_str(io, &rule);
  io_f64(io, &link);
  if (io->ver >= 3) v_opts(io, &ao);
  if (!ao.known) { /* nothing of it counts */
    free(ao.step);
    ao = (struct gp_summary_opts){.warmup = -1};
  }
  io_u64(io, &np);
  int d = io->bad || !set->any ? -1 : opts_differ(set, rule, link, &ao);
  if (d >= 0) {
    opts_error(err, errlen, path, d, rule, link, &ao, set);
    free(rule);
    free(ao.step);
    return -1;
  }
  if (!io->bad && np > (uint64_t)(io->end - io->p) / 8)
    fail_at(io, "a count larger than the rest of the summary");
  size_t n0 = set->n, want = n0 + (size_t)np;
  if (!io->bad) {
    struct gp_proc_res **p = realloc(set->procs, (want ? want : 1) * sizeof *p);
    if (p) set->procs = p;
    struct gp_job_input *in =
        p ? realloc(set->in, (want ? want : 1) * sizeof *in) : NULL;
    if (in) set->in = in;
    if (!p || !in) {
      io->oom = 1;
      fail_at(io, "out of memory");
    }
  }
  struct gp_report_opts o = {.link_gbps = link, .warmup = -1};
  for (size_t i = n0; i < want && !io->bad; i++) {
    struct gp_proc_res *r = calloc(1, sizeof *r);
    if (!r) {
      io->oom = 1;
      fail_at(io, "out of memory");
      break;
    }
    set->procs[set->n] = r;
    memset(&set->in[set->n], 0, sizeof set->in[set->n]);
    set->n++; /* from here on, set owns what was read, freed with it */
    v_proc(io, r);
    v_input(io, &set->in[set->n - 1]);
    if (!io->bad &&
        (gp_steps_derive(&r->steps) < 0 || gp_res_derive(r, &o) < 0)) {
      io->oom = 1;
      fail_at(io, "out of memory");
    }
  }
  if (!io->bad && io->p != io->end) fail_at(io, "bytes after its end");
  if (io->bad) {
    free(rule);
    free(ao.step);
    return -1;
  }
  if (!ao.known) set->unknown = 1;
  if (!set->any) {
    set->rule = rule;
    set->link_gbps = link;
    set->ao = ao;
    set->any = 1;
  } else if (ao.known && !set->ao.known) {
    /* the first summary that recorded its options: every later one that
     * records them is checked against it (not only against the first
     * summary, which may be of version 2 or older) */
    free(rule);
    free(set->ao.step);
    set->ao = ao;
  } else {
    free(rule);
    free(ao.step);
  }
  return 0;
}

/* The head of a file of len bytes (its first HEAD bytes at least, when
 * len >= HEAD): 0 when it is a summary of a version this reads, else -1
 * with err set. */
static int check_head(const uint8_t *f, size_t len, const char *path,
                      char *err, size_t errlen) {
  if (len < HEAD || memcmp(f, magic, 8)) {
    snprintf(err, errlen,
             "%s: not a gpuphase summary (gpuphase-report --format summary "
             "writes them)",
             path);
    return -1;
  }
  uint64_t ver = get_le(f + 8, 4);
  if (ver < GP_SUMMARY_VERSION_OLDEST || ver > GP_SUMMARY_VERSION) {
    snprintf(err, errlen,
             "%s: summary version %llu: this gpuphase-report reads "
             "versions %u to %u",
             path, (unsigned long long)ver, GP_SUMMARY_VERSION_OLDEST,
             GP_SUMMARY_VERSION);
    return -1;
  }
  return 0;
}

int gp_summary_read_mem(const uint8_t *f, size_t len, const char *path,
                        struct gp_summary_set *set, int *nomem, char *err,
                        size_t errlen) {
  *nomem = 0;
  if (check_head(f, len, path, err, errlen) < 0) return -1;
  uint64_t ver = get_le(f + 8, 4), body = get_le(f + 16, 8);
  uint64_t flags = get_le(f + 12, 4);
  /* RFC 8878: byte 4 of a frame is its header descriptor, bit 2 the
   * content checksum flag */
  if ((flags & ~(uint64_t)SUM_CHECKSUM) ||
      ((flags & SUM_CHECKSUM) && (len < HEAD + 5 || !(f[HEAD + 4] & 4)))) {
    snprintf(err, errlen, "%s: corrupt summary (%s)", path,
             flags & ~(uint64_t)SUM_CHECKSUM ? "unknown flags"
                                             : "its checksum is missing");
    return -1;
  }
  unsigned long long fsz = ZSTD_getFrameContentSize(f + HEAD, len - HEAD);
  if (body > BODY_MAX || fsz != body ||
      body / ZBLOCK_MAX > (len - HEAD) / 4) {
    snprintf(err, errlen, "%s: corrupt summary (its size)", path);
    return -1;
  }
  uint8_t *b = malloc(body ? (size_t)body : 1);
  if (!b) {
    *nomem = 1;
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
  }
  size_t got = ZSTD_decompress(b, (size_t)body, f + HEAD, len - HEAD);
  if (ZSTD_isError(got) || got != body) {
    snprintf(err, errlen, "%s: corrupt summary (zstd: %s)", path,
             ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
    free(b);
    return -1;
  }
  struct io io = {.rd = 1, .ver = (uint32_t)ver, .p = b, .end = b + body,
                  .base = b};
  err[0] = 0;
  int rc = parse(&io, set, path, err, errlen);
  if (rc < 0 && io.bad)
    snprintf(err, errlen, "%s: corrupt summary at byte %zu of its body: %s",
             path, io.bad_at, io.bad);
  if (io.oom) {
    *nomem = 1;
    snprintf(err, errlen, "%s: out of memory", path);
  }
  free(b);
  return rc;
}

int gp_summary_read(const char *path, struct gp_summary_set *set, int *nomem,
                    char *err, size_t errlen) {
  size_t len = 0;
  *nomem = 0;
  uint8_t *f = slurp(path, &len, nomem, err, errlen);
  if (!f) return -1;
  int rc = gp_summary_read_mem(f, len, strcmp(path, "-") ? path
                                                         : "standard input",
                               set, nomem, err, errlen);
  free(f);
  return rc;
}

/* ---- several summaries at once ---- */

struct read_all_task {
  char *const *files;
  struct gp_summary_set *one; /* per file, from the second on */
  int *rc, *nomem;
  char (*err)[512];
  const struct gp_summary_set *first;
};

/* Summary i + 1 (the first is read already); non-zero when it failed. */
static int read_one(void *ctx, size_t k) {
  struct read_all_task *t = ctx;
  size_t i = k + 1;
  struct gp_summary_set *one = &t->one[i];
  /* the summaries before it are the first one's options */
  one->any = 1;
  one->link_gbps = t->first->link_gbps;
  one->ao = t->first->ao;
  one->ao.step = NULL;
  if ((t->first->rule && !(one->rule = strdup(t->first->rule))) ||
      (t->first->ao.step && !(one->ao.step = strdup(t->first->ao.step)))) {
    t->nomem[i] = 1;
    snprintf(t->err[i], sizeof t->err[i], "%s: out of memory", t->files[i]);
    t->rc[i] = -1;
  } else {
    t->rc[i] = gp_summary_read(t->files[i], one, &t->nomem[i], t->err[i],
                               sizeof t->err[i]);
  }
  return t->rc[i] < 0;
}

/* Moves src's processes to the end of dst's; src is left empty. Options
 * recorded by both that differ: -2 with err set (src, read apart, was
 * checked against the first summary only, which may have recorded
 * none). */
static int set_append(struct gp_summary_set *dst, struct gp_summary_set *src,
                      const char *path, char *err, size_t errlen) {
  int d = opts_differ(dst, src->rule, src->link_gbps, &src->ao);
  if (d >= 0) {
    opts_error(err, errlen, path, d, src->rule, src->link_gbps, &src->ao,
               dst);
    return -2;
  }
  if (src->ao.known && !dst->ao.known) {
    free(dst->ao.step);
    dst->ao = src->ao;
    src->ao.step = NULL;
  }
  size_t want = dst->n + src->n;
  struct gp_proc_res **p = realloc(dst->procs, (want ? want : 1) * sizeof *p);
  if (p) dst->procs = p;
  struct gp_job_input *in =
      p ? realloc(dst->in, (want ? want : 1) * sizeof *in) : NULL;
  if (in) dst->in = in;
  if (!p || !in) return -1;
  memcpy(dst->procs + dst->n, src->procs, src->n * sizeof *p);
  memcpy(dst->in + dst->n, src->in, src->n * sizeof *in);
  dst->n = want;
  dst->unknown |= src->unknown;
  src->n = 0;
  return 0;
}

int gp_summary_read_all(char *const *files, size_t n, int threads,
                        struct gp_summary_set *set, int *nomem, char *err,
                        size_t errlen) {
  *nomem = 0;
  if (!n) return 0;
  if (gp_summary_read(files[0], set, nomem, err, errlen) < 0) return -1;
  if (n == 1) return 0;
  struct read_all_task t = {.files = files, .first = set};
  t.one = calloc(n, sizeof *t.one);
  t.rc = calloc(n, sizeof *t.rc);
  t.nomem = calloc(n, sizeof *t.nomem);
  t.err = calloc(n, sizeof *t.err);
  int rc = 0;
  if (!t.one || !t.rc || !t.nomem || !t.err) {
    *nomem = 1;
    snprintf(err, errlen, "out of memory");
    rc = -1;
  } else {
    gp_par_until(n - 1, threads, read_one, &t);
    for (size_t i = 1; i < n && !rc; i++) {
      if (t.rc[i] < 0) {
        *nomem = t.nomem[i];
        snprintf(err, errlen, "%s", t.err[i]);
        rc = -1;
      } else if ((rc = set_append(set, &t.one[i], files[i], err, errlen)) <
                 0) {
        if (rc == -1) {
          *nomem = 1;
          snprintf(err, errlen, "%s: out of memory", files[i]);
        }
        rc = -1;
      }
    }
  }
  for (size_t i = 1; t.one && i < n; i++)
    gp_summary_set_free(&t.one[i]);
  free(t.one);
  free(t.rc);
  free(t.nomem);
  free(t.err);
  return rc;
}
