/* The job view (job.h): ranks side by side, clocks aligned, stragglers.
 * Rules: docs/jobs.md. */
#include "job.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gpuphase/trace.h"
#include "job_par.h"
#include "reader_ext.h"
#include "u64map.h"
#include "util.h"

/* ---- communication kernels ---- */

/* A mangled name's "_Z<digits>" (and "N" of a nested name) skipped. */
static const char *unmangled(const char *s) {
  if (s[0] != '_' || s[1] != 'Z') return s;
  const char *p = s + 2;
  if (*p == 'N') p++;
  if (*p < '0' || *p > '9') return s;
  while (*p >= '0' && *p <= '9')
    p++;
  return p;
}

static int match_one(const char *pat, size_t len, const char *name) {
  char buf[256];
  if (!len || len >= sizeof buf) return 0;
  memcpy(buf, pat, len);
  buf[len] = 0;
  return fnmatch(buf, name, 0) == 0;
}

int gp_job_is_comm(const char *name, const char *globs) {
  if (!name) return 0;
  const char *n = unmangled(name);
  if (!globs) return strncmp(n, "nccl", 4) == 0 && strstr(n + 4, "Kernel");
  for (const char *p = globs;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (match_one(p, len, n) || match_one(p, len, name)) return 1;
    if (!c) return 0;
    p = c + 1;
  }
}

const char *gp_job_comm_check(const char *globs) {
  for (const char *p = globs;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (!len) return "an empty pattern";
    if (len >= 256) return "a pattern longer than 255 characters";
    if (!c) return NULL;
    p = c + 1;
  }
}

int gp_job_wanted(struct gp_proc_res *const *procs, size_t n) {
  if (n < 2) return 0;
  for (size_t i = 0; i < n; i++)
    if (procs[i]->rank >= 0) return 1;
  return 0;
}

/* ---- per-rank collection ---- */

#define KV_COMM UINT64_MAX

struct rank_data {
  size_t capc;
  struct gp_u64map names; /* kernel name string id -> KV_COMM for a
                             communication kernel, else index + 1 into kn */
};

static int cmp_coll(const void *x, const void *y) {
  const struct gp_job_coll *a = x, *b = y;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

/* The first step of [lo, hi) starting after t (hi if none). */
static size_t first_after(const struct gp_steps_res *s, size_t lo, size_t hi,
                          uint64_t t) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid].start <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Index of the step of s holding t in [from, to), else -1. *hint is
 * where the last call's search ended (the first step starting after its
 * t): the kernels of one stream come in start order, so the answer is
 * most often there or a step further, and the binary search is left for
 * the jumps (another source's frame, a long gap). */
long gp_job_step_of(const struct gp_steps_res *s, size_t from, size_t to,
                    uint64_t t, size_t *hint) {
  size_t lo = *hint;
  if (lo >= from && lo <= to && (lo == from || s->v[lo - 1].start <= t)) {
    size_t stop = to - lo > 2 ? lo + 2 : to;
    while (lo < stop && s->v[lo].start <= t)
      lo++;
    if (lo < to && s->v[lo].start <= t) lo = first_after(s, lo, to, t);
  } else {
    lo = first_after(s, from, to, t);
  }
  *hint = lo;
  if (lo == from) return -1;
  const struct gp_step *st = &s->v[lo - 1];
  return t < st->end ? (long)(lo - 1) : -1;
}

struct scope {
  int by_step;
  size_t from, to; /* measured steps common to all ranks */
};

/* The entry in in->kn of a compute kernel's name, made when it is first
 * seen: its index + 1, 0 when out of memory. */
static uint64_t kname_new(struct gp_job_input *in, const gpuphase_reader *rd,
                          uint64_t id) {
  struct gp_job_kname *kn = realloc(in->kn, (in->nkn + 1) * sizeof *kn);
  if (!kn) return 0;
  in->kn = kn;
  const char *s = gpuphase_reader_string(rd, id);
  kn[in->nkn].name = strdup(s ? s : "?");
  kn[in->nkn].ns_all = 0;
  kn[in->nkn].ns_steps = 0;
  if (!kn[in->nkn].name) return 0;
  return ++in->nkn;
}

void gp_job_input_free(struct gp_job_input *in) {
  if (!in) return;
  for (size_t k = 0; k < in->nkn; k++)
    free(in->kn[k].name);
  free(in->kn);
  free(in->c);
  in->kn = NULL;
  in->c = NULL;
  in->nkn = in->nc = 0;
}

/* Reads the kernels of one trace: its communication kernels in start
 * order, and the compute-kernel time by name, in all and inside its own
 * measured steps. 0, -1 out of memory, -2 unreadable (err set). */
static int collect(const char *path, const struct gp_proc_res *p,
                   const char *globs, struct gp_job_input *in,
                   struct rank_data *d, char *err, size_t errlen) {
  const struct gp_steps_res *ps = &p->steps;
  int has_steps = ps->source != GP_STEPS_NONE && ps->measured;
  int code = 0;
  char msg[256] = "";
  gpuphase_reader *rd =
      gp_reader_open_ex(path, GP_OPEN_FILE_ORDER, &code, msg, sizeof msg);
  if (!rd) {
    snprintf(err, errlen, "%s: %s", path, *msg ? msg : gpuphase_strerror(code));
    return code == GPUPHASE_E_NOMEM ? -1 : -2;
  }
  /* the file was read whole before: its other records are passed over */
  gp_reader_only(rd, (uint64_t)1 << GPUPHASE_REC_KERNEL);
  const struct gpuphase_header *h = gpuphase_reader_header(rd);
  in->start_mono_ns = h->start_mono_ns;
  in->start_real_ns = h->start_real_ns;
  const struct gpuphase_record *rec;
  int rc, out = 0;
  size_t hint = 0;
  while (!out && (rc = gp_reader_next_ref(rd, &rec)) == 1) {
    if (rec->kind != GPUPHASE_REC_KERNEL) continue;
    const struct gpuphase_kernel *k = &rec->u.kernel;
    uint64_t *e = gp_u64map_get(&d->names, k->name), kv;
    if (e) {
      kv = *e;
    } else {
      kv = gp_job_is_comm(gpuphase_reader_string(rd, k->name), globs)
               ? KV_COMM
               : kname_new(in, rd, k->name);
      if (!kv || gp_u64map_put(&d->names, k->name, kv) < 0) {
        out = -1;
        break;
      }
    }
    uint64_t ns = k->end > k->start ? k->end - k->start : 0;
    if (kv == KV_COMM) {
      if (in->nc == d->capc) {
        size_t cap = d->capc ? 2 * d->capc : 256;
        struct gp_job_coll *c = realloc(in->c, cap * sizeof *c);
        if (!c) {
          out = -1;
          break;
        }
        in->c = c;
        d->capc = cap;
      }
      in->c[in->nc++] = (struct gp_job_coll){k->start, k->start + ns};
    } else {
      struct gp_job_kname *x = &in->kn[kv - 1];
      x->ns_all += ns;
      if (has_steps &&
          gp_job_step_of(ps, ps->warmup, ps->n, k->start, &hint) >= 0)
        x->ns_steps += ns;
    }
  }
  if (!out && rc < 0) {
    const char *m = gpuphase_reader_errmsg(rd);
    snprintf(err, errlen, "%s: corrupt trace: %s", path,
             m && *m ? m : gpuphase_strerror(rc));
    out = rc == GPUPHASE_E_NOMEM ? -1 : -2;
  }
  gpuphase_reader_close(rd);
  if (!out && in->nc) qsort(in->c, in->nc, sizeof *in->c, cmp_coll);
  return out;
}

/* ---- small statistics ---- */

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

static int cmp_dbl(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* nearest rank: the ceil(p/100 * n)-th smallest of sorted v */
static size_t rank_of(size_t n, double p) {
  size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
  return k ? k - 1 : 0;
}

static double median_dbl(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_dbl);
  return v[rank_of(n, 50)];
}

static int note(struct gp_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int note(struct gp_job *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gp_strlist_vadd(&j->notes, &j->nnotes, fmt, ap);
  va_end(ap);
  return rc;
}

void gp_job_free(struct gp_job *j) {
  if (!j) return;
  for (size_t i = 0; j->in && i < j->nranks; i++)
    gp_job_input_free(&j->in[i]);
  free(j->in);
  free((char *)j->comm_rule);
  for (size_t i = 0; i < j->nhosts; i++)
    free(j->hosts[i].name);
  for (size_t i = 0; i < j->nnotes; i++)
    free(j->notes[i]);
  free(j->notes);
  free(j->hosts);
  free(j->r);
  free(j->strag);
  free(j->finding);
  free(j);
}

/* ---- the analysis ---- */

static int cmp_rank_no(const void *x, const void *y) {
  const struct gp_job_rank *a = x, *b = y;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return a->proc < b->proc ? -1 : a->proc > b->proc;
}

static int same(const char *a, const char *b) {
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Clock arithmetic wraps (a hostile header may hold any pair): signed
 * values are added and subtracted as unsigned ones. */
static int64_t wadd(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wsub(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}

static uint64_t mag(int64_t v) {
  return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* Hosts in rank order; the reference is the host of the lowest rank. The
 * header offset of a host is that of its lowest rank. */
static int hosts_of(struct gp_job *j) {
  j->hosts = calloc(j->nranks, sizeof *j->hosts);
  if (!j->hosts) return -1;
  int64_t ref = 0;
  for (size_t i = 0; i < j->nranks; i++) {
    struct gp_job_rank *r = &j->r[i];
    size_t h = 0;
    while (h < j->nhosts && !same(j->hosts[h].name, r->host))
      h++;
    if (h == j->nhosts) {
      int64_t off = (int64_t)(r->in->start_real_ns - r->in->start_mono_ns);
      if (!h) ref = off;
      j->hosts[h].name = r->host ? strdup(r->host) : NULL;
      if (r->host && !j->hosts[h].name) return -1;
      j->hosts[h].header_ns = wsub(off, ref);
      j->nhosts++;
    }
    r->host_idx = h;
  }
  return 0;
}

/* ---- matching the collectives of the ranks (docs/jobs.md, "Collectives") */

#define COLL(i) (j->r[i].in->c)
/* Rank i ran communication kernels: it takes part in the matching (a rank
 * without any, a data loader say, is left out rather than leaving every
 * other rank with nothing to match) */
#define PART(i) (j->r[i].in->nc > 0)

/* The first rank that takes part: the reference of the collective ends;
 * nranks when none does. */
static size_t part_ref(const struct gp_job *j) {
  size_t i = 0;
  while (i < j->nranks && !PART(i))
    i++;
  return i;
}

/* A rank's collectives i .. i + n - 1 are the reference sequence's
 * k .. k + n - 1. */
struct mrun {
  size_t k, i, n;
};

/* How one rank's collectives match the reference sequence: runs in
 * increasing k (and i), no two touching in both. */
struct rmatch {
  struct mrun *run;
  size_t nrun, cap;
  size_t matched; /* collectives of the reference it has */
  size_t extra;   /* its collectives that match none of the reference's */
  int64_t off;    /* first estimate: added to its times, the reference's */
  uint64_t spread;
};

struct matching {
  size_t ref;          /* the rank (index into j->r) of the reference
                          sequence: the most collectives, the lowest rank */
  size_t nref;         /* its collectives */
  uint64_t tol;        /* ends this close (after the offset) match */
  struct rmatch *m;    /* by index into j->r, empty for a rank left out */
  struct mrun *common; /* the k every rank taking part has (i unused) */
  size_t ncommon;
};

static void matching_free(struct matching *mt, size_t n) {
  for (size_t i = 0; mt->m && i < n; i++)
    free(mt->m[i].run);
  free(mt->m);
  free(mt->common);
}

/* The first estimate of a rank's offset compares its first EST_K
 * collectives with the reference's, shifted by up to EST_W either side
 * of position and of where its header's clock puts it. */
#define EST_K 64
#define EST_W 8
/* a shift whose spread is within twice the best one's and this, or
 * within an eighth of the median gap between the reference's ends, fits
 * as well as the best (a job whose steps are all alike fits every shift);
 * when the spread of the shift taken exceeds that eighth (or a quarter of
 * TOL_MAX_NS), the ends cannot tell the collectives apart */
#define EST_SLACK_NS 1000ull
/* the matching tolerance: half the smallest gap between consecutive ends
 * of the reference, at least TOL_MIN_NS (and 4 x the largest spread of
 * the first estimates), at most TOL_MAX_NS */
#define TOL_MIN_NS 2000ull
#define TOL_MAX_NS 1000000ull

/* Shift d (the rank's k-th collective is the reference's k + d) over its
 * first EST_K collectives: *off the median of (reference's end - its end),
 * *spread the median distance to it. 0 when fewer than half of them have
 * a collective of the reference at that shift. */
static int est_shift(const struct gp_job_coll *ref, size_t nref,
                     const struct gp_job_coll *a, size_t na, int64_t d,
                     int64_t *off, uint64_t *spread) {
  int64_t v[EST_K];
  uint64_t u[EST_K];
  size_t kk = na < EST_K ? na : EST_K, m = 0;
  for (size_t k = 0; k < kk; k++) {
    int64_t q = (int64_t)k + d;
    if (q < 0 || (uint64_t)q >= nref) continue;
    v[m++] = (int64_t)(ref[q].end - a[k].end);
  }
  if (!m || 2 * m < kk) return 0;
  qsort(v, m, sizeof *v, cmp_i64);
  *off = v[rank_of(m, 50)];
  for (size_t x = 0; x < m; x++)
    u[x] = mag(wsub(v[x], *off));
  qsort(u, m, sizeof *u, cmp_u64);
  *spread = u[rank_of(m, 50)];
  return 1;
}

/* The index of the reference's collective whose end is nearest t (ends in
 * increasing order, compared as clock differences). */
static size_t nearest_end(const struct gp_job_coll *ref, size_t nref,
                          uint64_t t) {
  size_t lo = 0, hi = nref;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((int64_t)(ref[mid].end - t) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == nref) return nref - 1;
  if (lo &&
      mag((int64_t)(t - ref[lo - 1].end)) < mag((int64_t)(ref[lo].end - t)))
    return lo - 1;
  return lo;
}

struct cand {
  int64_t d, off;
  uint64_t spread;
};

/* What a rank's offset is expected to be, before its ends: none; its
 * host's header offset (the hosts' realtime clocks agree to NTP's
 * accuracy); that of a rank of its host matched from the first collective
 * on (the ranks of a host share its clock). */
enum { PRIOR_NONE, PRIOR_HEADER, PRIOR_HOST };

/* The first estimate of the offset of a rank's clock onto the reference
 * sequence's rank's, from the ends of its first collectives. */
static void estimate(const struct gp_job_coll *ref, size_t nref,
                     const struct gp_job_coll *a, size_t na, int64_t prior,
                     int prior_kind, uint64_t fit_min, struct rmatch *m) {
  int use_prior = prior_kind != PRIOR_NONE;
  int64_t off;
  uint64_t sp;
  int same_n = na == nref;
  m->off = prior;
  m->spread = 0;
  /* in step from the first collective: shift 0 fits, and is taken */
  if (same_n && est_shift(ref, nref, a, na, 0, &off, &sp) &&
      (sp <= EST_SLACK_NS || sp <= fit_min)) {
    m->off = off;
    m->spread = sp;
    return;
  }
  struct cand c[2 * (2 * EST_W + 1)];
  size_t nc = 0;
  uint64_t smin = UINT64_MAX;
  int64_t dp = use_prior
                   ? (int64_t)nearest_end(ref, nref, a[0].end + (uint64_t)prior)
                   : 0;
  for (int w = 0; w < 2; w++) {
    if (w && !use_prior) break;
    int64_t at = w ? dp : 0;
    for (int64_t d = at - EST_W; d <= at + EST_W; d++) {
      if (w && d >= -EST_W && d <= EST_W) continue; /* tried */
      if (!est_shift(ref, nref, a, na, d, &off, &sp)) continue;
      c[nc++] = (struct cand){d, off, sp};
      if (sp < smin) smin = sp;
    }
  }
  if (!nc) return;
  uint64_t fit = smin > (UINT64_MAX - EST_SLACK_NS) / 2
                     ? UINT64_MAX
                     : 2 * smin + EST_SLACK_NS;
  if (fit < fit_min) fit = fit_min;
  /* of the shifts that fit: position when the rank ran as many as the
   * reference; else the one whose offset is nearest the prior, when it is
   * at least 3 times nearer than any other's (the prior agrees with the
   * ends to within a quarter of the shifts' spacing) and, for a header's,
   * within TOL_MAX_NS of it; else the smallest shift, the later first */
  size_t pos = nc, near1 = nc, small = nc;
  uint64_t e1 = UINT64_MAX, e2 = UINT64_MAX;
  for (size_t x = 0; x < nc; x++) {
    if (c[x].spread > fit) continue;
    if (c[x].d == 0) pos = x;
    uint64_t e = mag(wsub(c[x].off, prior));
    if (e < e1)
      e2 = e1, e1 = e, near1 = x;
    else if (e < e2)
      e2 = e;
    if (small == nc || mag(c[x].d) < mag(c[small].d) ||
        (mag(c[x].d) == mag(c[small].d) && c[x].d > c[small].d))
      small = x;
  }
  int by_prior = use_prior && (e2 == UINT64_MAX || e2 / 3 > e1) &&
                 (prior_kind == PRIOR_HOST || e1 <= TOL_MAX_NS);
  size_t best = same_n && pos < nc ? pos : by_prior ? near1 : small;
  m->off = c[best].off;
  m->spread = c[best].spread;
}

static int add_match(struct rmatch *m, size_t k, size_t i) {
  m->matched++;
  if (m->nrun) {
    struct mrun *r = &m->run[m->nrun - 1];
    if (r->k + r->n == k && r->i + r->n == i) {
      r->n++;
      return 0;
    }
  }
  if (m->nrun == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 4;
    struct mrun *r = realloc(m->run, cap * sizeof *r);
    if (!r) return -1;
    m->run = r;
    m->cap = cap;
  }
  m->run[m->nrun++] = (struct mrun){k, i, 1};
  return 0;
}

/* The first index of [lo, n) whose running maximum of the ends, mx,
 * reaches t (compared as a clock difference); n when none does. */
static size_t first_reaching(const uint64_t *mx, size_t lo, size_t n,
                             uint64_t t) {
  size_t hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((int64_t)(mx[mid] - t) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int near(uint64_t x, uint64_t y, uint64_t tol) {
  return mag((int64_t)(x - y)) <= tol;
}

/* A rank's collectives a[0..na) against the reference's, in order: a pair
 * whose ends (a's moved by the offset o) are within tol matches, and the
 * offset follows it by an eighth of the difference (the clocks may drift
 * apart over a long run). When the ends differ by more, the later one is
 * looked up on the other side (rmx, amx: the running maxima of the ends),
 * and what lies before its match there has no partner; when it matches
 * nothing, or passing over more than one would leave the next pair
 * unmatched too (an end out of order, a damaged record, that falls near
 * another collective), it is the one without a partner. */
static int sweep(const struct gp_job_coll *ref, const uint64_t *rmx,
                 size_t nref, const struct gp_job_coll *a, uint64_t *amx,
                 size_t na, uint64_t tol, struct rmatch *m) {
  for (size_t p = 0; p < na; p++)
    amx[p] = p && amx[p - 1] > a[p].end ? amx[p - 1] : a[p].end;
  uint64_t o = (uint64_t)m->off;
  size_t k = 0, p = 0;
  while (k < nref && p < na) {
    int64_t d = (int64_t)(a[p].end + o - ref[k].end);
    if (mag(d) <= tol) {
      if (add_match(m, k, p) < 0) return -1;
      o -= (uint64_t)(d / 8);
      k++, p++;
    } else if (d > 0) { /* the reference's k-th ends first */
      uint64_t t = a[p].end + o;
      size_t x = first_reaching(rmx, k + 1, nref, t - tol);
      if (x < nref && near(t, ref[x].end, tol) &&
          (x == k + 1 || x + 1 == nref || p + 1 == na ||
           near(a[p + 1].end + o, ref[x + 1].end, tol)))
        k = x; /* the reference's k .. x - 1 lack a partner here */
      else
        p++;
    } else { /* a's p-th ends first */
      uint64_t t = ref[k].end - o;
      size_t x = first_reaching(amx, p + 1, na, t - tol);
      if (x < na && near(a[x].end, t, tol) &&
          (x == p + 1 || x + 1 == na || k + 1 == nref ||
           near(a[x + 1].end, ref[k + 1].end - o, tol)))
        p = x; /* a's p .. x - 1: the reference has none there */
      else
        k++;
    }
  }
  m->extra = na - m->matched;
  return 0;
}

/* 1 when a host's header realtime reads a plausible date (2000 to 2200) */
static int plausible(uint64_t real) {
  return real >= 946684800000000000ull && real <= 7258118400000000000ull;
}

/* The collectives every rank taking part has: their runs intersected. */
static int common_of(struct gp_job *j, struct matching *mt) {
  struct mrun *c = malloc(sizeof *c);
  if (!c) return -1;
  c[0] = (struct mrun){0, 0, mt->nref};
  size_t nc = mt->nref > 0;
  for (size_t i = 0; i < j->nranks && nc; i++) {
    if (!PART(i) || i == mt->ref) continue;
    const struct rmatch *m = &mt->m[i];
    struct mrun *o = malloc((nc + m->nrun) * sizeof *o);
    if (!o) {
      free(c);
      return -1;
    }
    size_t no = 0, x = 0, y = 0;
    while (x < nc && y < m->nrun) {
      size_t ex = c[x].k + c[x].n, ey = m->run[y].k + m->run[y].n;
      size_t lo = c[x].k > m->run[y].k ? c[x].k : m->run[y].k;
      size_t hi = ex < ey ? ex : ey;
      if (lo < hi) o[no++] = (struct mrun){lo, 0, hi - lo};
      if (ex <= ey)
        x++;
      else
        y++;
    }
    free(c);
    c = o;
    nc = no;
  }
  mt->common = c;
  mt->ncommon = nc;
  return 0;
}

/* The reference rank's collectives k .. k + n - 1 for itself. */
static int whole_run(struct rmatch *m, size_t n) {
  if (!n) return 0;
  if (!(m->run = malloc(sizeof *m->run))) return -1;
  m->run[0] = (struct mrun){0, 0, n};
  m->nrun = m->cap = 1;
  m->matched = n;
  return 0;
}

/* By position: the k-th collective of every rank taking part, for k below
 * count (the fewest any of them ran). */
static int match_position(struct gp_job *j, struct matching *mt, size_t count) {
  size_t n = j->nranks;
  mt->ref = part_ref(j);
  mt->nref = count;
  if (mt->ref == n) return 0;
  if (!(mt->m = calloc(n, sizeof *mt->m))) return -1;
  for (size_t i = 0; i < n; i++)
    if (PART(i) && whole_run(&mt->m[i], count) < 0) return -1;
  return common_of(j, mt);
}

/* By end time (docs/jobs.md, "Collectives"): every rank's collectives
 * matched to the reference sequence, the rank's with the most; j->r in
 * rank order. 0; 1 when the first collectives of some rank fit no
 * alignment well enough to tell the collectives apart (*scatter: the
 * largest spread; nothing is matched); -1 out of memory. */
static int match_by_time(struct gp_job *j, struct matching *mt,
                         uint64_t *scatter) {
  size_t n = j->nranks;
  mt->ref = n;
  for (size_t i = 0; i < n; i++)
    if (PART(i) && (mt->ref == n || j->r[i].in->nc > mt->nref))
      mt->ref = i, mt->nref = j->r[i].in->nc;
  if (mt->ref == n) return 0;
  size_t rf = mt->ref, nref = mt->nref;
  const struct gp_job_coll *ref = COLL(rf);
  /* scratch: the gaps between the reference's ends, then the running
   * maxima of the ends, the reference's and a rank's */
  uint64_t *mx = malloc(2 * nref * sizeof *mx);
  if (!mx || !(mt->m = calloc(n, sizeof *mt->m))) {
    free(mx);
    return -1;
  }
  uint64_t gap_min = UINT64_MAX, gap_med = 0;
  for (size_t k = 1; k < nref; k++) {
    int64_t g = (int64_t)(ref[k].end - ref[k - 1].end);
    mx[k - 1] = g > 0 ? (uint64_t)g : 0;
    if (g > 0 && (uint64_t)g < gap_min) gap_min = (uint64_t)g;
  }
  if (nref > 1) {
    qsort(mx, nref - 1, sizeof *mx, cmp_u64);
    gap_med = mx[rank_of(nref - 1, 50)];
  }
  /* the prior of a rank's offset: that of a rank of its host that ran as
   * many collectives as the reference (the ranks of a host share its
   * clock), first those; else its header's, when both read plausible
   * dates */
  int64_t *host_off = calloc(j->nhosts ? j->nhosts : 1, sizeof *host_off);
  char *host_known = calloc(j->nhosts ? j->nhosts : 1, 1);
  if (!host_off || !host_known) {
    free(mx);
    free(host_off);
    free(host_known);
    return -1;
  }
  int64_t hdr_ref = j->hosts[j->r[rf].host_idx].header_ns;
  int real_ref = plausible(j->r[rf].in->start_real_ns);
  uint64_t spread = 0;
  host_known[j->r[rf].host_idx] = 1;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < n; i++) {
      if (!PART(i) || i == rf || (j->r[i].in->nc == nref) == pass) continue;
      size_t h = j->r[i].host_idx;
      int64_t prior =
          host_known[h] ? host_off[h] : wsub(j->hosts[h].header_ns, hdr_ref);
      int kind = host_known[h] ? PRIOR_HOST
                 : real_ref && plausible(j->r[i].in->start_real_ns)
                     ? PRIOR_HEADER
                     : PRIOR_NONE;
      estimate(ref, nref, COLL(i), j->r[i].in->nc, prior, kind, gap_med / 8,
               &mt->m[i]);
      if (!pass && !host_known[h])
        host_off[h] = mt->m[i].off, host_known[h] = 1;
      if (mt->m[i].spread > spread) spread = mt->m[i].spread;
    }
  free(host_off);
  free(host_known);
  *scatter = spread;
  if (spread > TOL_MAX_NS / 4 || (nref > 1 && spread > gap_med / 8)) {
    free(mx);
    return 1;
  }
  uint64_t tol = 4 * spread > TOL_MIN_NS ? 4 * spread : TOL_MIN_NS;
  if (gap_min == UINT64_MAX && nref == 1) tol = TOL_MAX_NS;
  if (gap_min != UINT64_MAX && gap_min / 2 > tol) tol = gap_min / 2;
  mt->tol = tol > TOL_MAX_NS ? TOL_MAX_NS : tol;
  for (size_t k = 0; k < nref; k++)
    mx[k] = k && mx[k - 1] > ref[k].end ? mx[k - 1] : ref[k].end;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (!PART(i)) continue;
    if (i == rf)
      rc = whole_run(&mt->m[i], nref);
    else
      rc = sweep(ref, mx, nref, COLL(i), mx + nref, j->r[i].in->nc, mt->tol,
                 &mt->m[i]);
  }
  free(mx);
  return rc < 0 ? -1 : common_of(j, mt);
}

/* The collectives the ranks lack: for a rank, those of the reference it
 * has no match for; for the reference's rank, those every other rank has
 * and it lacks, at least (the fewest that another rank has beyond the
 * reference's: a damaged collective of one rank is not counted against
 * it). The first 3 ranks in rank order are named. */
static int missing_notes(struct gp_job *j, const struct matching *mt) {
  size_t shown = 0, more = 0, more_n = 0, least_extra = SIZE_MAX;
  if (!mt->m) return 0;
  for (size_t i = 0; i < j->nranks; i++)
    if (PART(i) && i != mt->ref && mt->m[i].extra < least_extra)
      least_extra = mt->m[i].extra;
  if (least_extra == SIZE_MAX) least_extra = 0;
  for (size_t i = 0; i < j->nranks; i++) {
    if (!PART(i)) continue;
    size_t miss = i == mt->ref ? least_extra : mt->nref - mt->m[i].matched;
    if (!miss) continue;
    if (shown++ < 3) {
      if (note(j,
               "%zu collective%s missing on rank %lld (events lost?): left "
               "out of the waits and the stragglers",
               miss, miss > 1 ? "s" : "", (long long)j->r[i].rank) < 0)
        return -1;
    } else {
      more++;
      more_n += miss;
    }
  }
  if (more &&
      note(j, "%zu collective%s missing on %zu more rank%s: left out too",
           more_n, more_n > 1 ? "s" : "", more, more > 1 ? "s" : "") < 0)
    return -1;
  return 0;
}

/* Walks the collectives (k of the reference) two ranks both have, in
 * increasing k: their indices, 1; 0 at the end. */
struct both {
  const struct rmatch *a, *b;
  size_t x, y, k;
};

static int both_next(struct both *t, size_t *ia, size_t *ib) {
  while (t->x < t->a->nrun && t->y < t->b->nrun) {
    const struct mrun *ra = &t->a->run[t->x], *rb = &t->b->run[t->y];
    size_t ea = ra->k + ra->n, eb = rb->k + rb->n;
    size_t lo = ra->k > rb->k ? ra->k : rb->k, hi = ea < eb ? ea : eb;
    if (t->k < lo) t->k = lo;
    if (t->k < hi) {
      *ia = ra->i + (t->k - ra->k);
      *ib = rb->i + (t->k - rb->k);
      t->k++;
      return 1;
    }
    if (ea <= eb)
      t->x++;
    else
      t->y++;
  }
  return 0;
}

/* The index of a rank's collective matching the reference's k-th, which
 * it has; *cur carries the search from one call to the next (k
 * increasing). */
static size_t idx_of(const struct rmatch *m, size_t *cur, size_t k) {
  while (m->run[*cur].k + m->run[*cur].n <= k)
    (*cur)++;
  return m->run[*cur].i + (k - m->run[*cur].k);
}

/* The correction of each host from the collective ends: the median of
 * (reference rank's end - this host's first rank's end on the header
 * clock) over the collectives both ran; then the residual of every rank. */
static int align(struct gp_job *j, const struct matching *mt) {
  for (size_t i = 0; i < j->nranks; i++)
    j->r[i].clock_ns = j->hosts[j->r[i].host_idx].header_ns;
  size_t r0 = part_ref(j);
  if (r0 == j->nranks || !mt->m) return 0;
  const struct rmatch *m0 = &mt->m[r0];
  int64_t *diff = malloc((m0->matched ? m0->matched : 1) * sizeof *diff);
  size_t cap = 0;
  uint64_t *res = NULL;
  if (!diff) return -1;
  /* the reference rank's host keeps its header's offset; the others are
   * moved onto it (when the reference is not on the first host, that one
   * is moved too) */
  size_t href = j->r[r0].host_idx, a, b;
  int64_t hdr_ref = j->hosts[href].header_ns;
  for (size_t h = 0; h < j->nhosts; h++) {
    if (h == href) continue;
    size_t first = 0;
    while (first < j->nranks && (j->r[first].host_idx != h || !PART(first)))
      first++;
    if (first == j->nranks) continue; /* none of its ranks took part */
    int64_t hdr = j->hosts[h].header_ns;
    size_t m = 0;
    struct both t = {m0, &mt->m[first], 0, 0, 0};
    while (both_next(&t, &a, &b))
      diff[m++] = wsub(
          wadd((int64_t)(COLL(r0)[a].end - COLL(first)[b].end), hdr_ref), hdr);
    if (!m) continue;
    qsort(diff, m, sizeof *diff, cmp_i64);
    j->hosts[h].correction_ns = diff[rank_of(m, 50)];
    j->hosts[h].samples = m;
  }
  for (size_t i = 0; i < j->nranks; i++)
    j->r[i].clock_ns =
        wadd(j->r[i].clock_ns, j->hosts[j->r[i].host_idx].correction_ns);
  int rc = 0;
  for (size_t h = 0; h < j->nhosts && !rc; h++) {
    size_t m = 0;
    for (size_t i = 0; i < j->nranks && !rc; i++) {
      if (i == r0 || !PART(i) || j->r[i].host_idx != h) continue;
      int64_t c = wsub(j->r[i].clock_ns, j->r[r0].clock_ns);
      struct both t = {&mt->m[i], m0, 0, 0, 0};
      while (both_next(&t, &a, &b)) {
        if (m == cap) {
          size_t nc = cap ? 2 * cap : 256;
          uint64_t *x = realloc(res, nc * sizeof *x);
          if (!x) {
            rc = -1;
            break;
          }
          res = x;
          cap = nc;
        }
        res[m++] = mag(wadd((int64_t)(COLL(i)[a].end - COLL(r0)[b].end), c));
      }
    }
    if (!m || rc) continue;
    qsort(res, m, sizeof *res, cmp_u64);
    j->hosts[h].residual_p50_ns = res[rank_of(m, 50)];
    j->hosts[h].residual_max_ns = res[m - 1];
  }
  free(diff);
  free(res);
  return rc;
}

/* A unit's straggler counts as last only when the others waited for it
 * this long each, on average: collectives end apart by the link latency
 * (a few hundred ns), which made a rank of a balanced job "last" in every
 * step. */
#define STRAG_MIN_NS 5000ull

/* A step ends: its straggler, the rank charged the most waiting in it;
 * every rank charged that much holds the others up. */
static void step_straggler(struct gp_job *j, uint64_t *acc, size_t np) {
  size_t n = j->nranks, w = 0;
  for (size_t i = 0; i < n; i++) {
    if (acc[i] > acc[w]) w = i;
    if (acc[i] && acc[i] >= STRAG_MIN_NS * (np - 1)) j->r[i].held_count++;
  }
  if (acc[w] && acc[w] >= STRAG_MIN_NS * (np - 1)) j->r[w].last_count++;
  memset(acc, 0, n * sizeof *acc);
}

/* Stragglers: per collective every rank taking part has, the rank whose
 * kernel ran shortest arrived last; each rank's wait is its duration minus
 * that shortest one. With steps, a step's straggler is the rank the others
 * waited for longest in it. */
static int stragglers(struct gp_job *j, const struct matching *mt,
                      struct gp_proc_res *const *procs,
                      const struct scope *sc) {
  size_t n = j->nranks, r0 = part_ref(j), np = 0;
  if (r0 == n || !mt->m) return 0;
  for (size_t i = 0; i < n; i++)
    np += PART(i);
  uint64_t *acc = calloc(n, sizeof *acc);
  size_t *cur = calloc(n, sizeof *cur), *ix = calloc(n, sizeof *ix);
  if (!acc || !cur || !ix) {
    free(acc);
    free(cur);
    free(ix);
    return -1;
  }
  const struct gp_steps_res *rs = &procs[j->r[r0].proc]->steps;
  long cs = -1;
  size_t hint = 0;
  for (size_t c = 0; c < mt->ncommon; c++) {
    /* each rank's collectives of a common run are one run of its own:
     * its index one before the run's first, each k adding one (unsigned,
     * so one before 0 wraps and comes back) */
    const struct mrun *cr = &mt->common[c];
    for (size_t i = 0; i < n; i++)
      if (PART(i)) ix[i] = idx_of(&mt->m[i], &cur[i], cr->k) - 1;
    for (size_t k = cr->k; k < cr->k + cr->n; k++) {
      for (size_t i = 0; i < n; i++)
        ix[i]++;
#define CK(i) (COLL(i)[ix[i]])
      if (sc->by_step) {
        long st = gp_job_step_of(rs, sc->from, sc->to, CK(r0).start, &hint);
        if (st < 0) continue; /* outside the measured steps */
        if (st != cs) {
          if (cs >= 0) step_straggler(j, acc, np);
          cs = st;
        }
      }
      size_t last = r0;
      uint64_t min = UINT64_MAX;
      for (size_t i = 0; i < n; i++) {
        if (!PART(i)) continue;
        uint64_t du = CK(i).end - CK(i).start;
        if (du < min) min = du, last = i;
      }
      uint64_t sum = 0;
      for (size_t i = 0; i < n; i++) {
        if (!PART(i)) continue;
        uint64_t du = CK(i).end - CK(i).start;
        j->r[i].comm_ns += du;
        j->r[i].wait_ns += du - min;
        sum += du - min;
        /* the same from the aligned clocks: arrival lag behind the last */
        int64_t lag = wadd((int64_t)(CK(last).start - CK(i).start),
                           wsub(j->r[last].clock_ns, j->r[i].clock_ns));
        if (lag < 0) {
          j->clamped++;
          if (mag(lag) > j->clamped_max_ns) j->clamped_max_ns = mag(lag);
        }
      }
#undef CK
      j->r[last].others_wait_ns += sum;
      j->wait_total += sum;
      if (!sc->by_step && sum && sum >= STRAG_MIN_NS * (np - 1))
        j->r[last].last_count++, j->r[last].held_count++;
      acc[last] += sum;
      j->collectives++;
    }
  }
  if (sc->by_step && cs >= 0) step_straggler(j, acc, np);
  free(acc);
  free(cur);
  free(ix);
  return 0;
}

/* The job's step: per measured step, the slowest rank's duration. */
static int job_steps(struct gp_job *j, struct gp_proc_res *const *procs,
                     const struct scope *sc) {
  if (!sc->by_step) return 0;
  size_t m = sc->to - sc->from;
  uint64_t *v = malloc(m * sizeof *v);
  if (!v) return -1;
  for (size_t s = sc->from; s < sc->to; s++) {
    size_t w = 0;
    uint64_t best = 0;
    for (size_t i = 0; i < j->nranks; i++) {
      const struct gp_step *st = &procs[j->r[i].proc]->steps.v[s];
      uint64_t du = st->end - st->start;
      if (i == 0 || du > best) best = du, w = i;
    }
    j->r[w].steps_slowest++;
    v[s - sc->from] = best;
  }
  qsort(v, m, sizeof *v, cmp_u64);
  j->step_p50 = v[rank_of(m, 50)];
  j->step_p95 = v[rank_of(m, 95)];
  j->step_max = v[m - 1];
  free(v);
  return 0;
}

static void per_unit(struct gp_job *j, struct gp_proc_res *const *procs) {
  double units = j->units ? (double)j->units : 1;
  for (size_t i = 0; i < j->nranks; i++) {
    struct gp_job_rank *r = &j->r[i];
    const struct gp_proc_res *p = procs[r->proc];
    for (int c = 0; c < GP_CAT_N; c++) {
      if (j->by_step) {
        r->cat[c] = p->steps.cat_mean[c];
        continue;
      }
      uint64_t t = 0;
      for (size_t g = 0; g < p->ndev; g++)
        t += p->dev[g].bd.cat[c];
      r->cat[c] = (double)t / units;
    }
    /* per step: its kernels in its own measured steps, per such step */
    r->ksteps = j->by_step;
    r->kdiv = j->by_step ? (r->steps ? (double)r->steps : 1) : units;
    uint64_t t = 0;
    for (size_t k = 0; k < r->in->nkn; k++)
      t += r->ksteps ? r->in->kn[k].ns_steps : r->in->kn[k].ns_all;
    r->compute = (double)t / r->kdiv;
  }
}

static double median_of(const struct gp_job *j, double *tmp,
                        double (*get)(const struct gp_job_rank *, const void *),
                        const void *arg) {
  for (size_t i = 0; i < j->nranks; i++)
    tmp[i] = get(&j->r[i], arg);
  return median_dbl(tmp, j->nranks);
}

static double get_cat(const struct gp_job_rank *r, const void *arg) {
  return r->cat[*(const int *)arg];
}

static double get_compute(const struct gp_job_rank *r, const void *arg) {
  (void)arg;
  return r->compute;
}

static double kname_ns(const struct gp_job_rank *r, size_t k) {
  const struct gp_job_kname *x = &r->in->kn[k];
  return (double)(r->ksteps ? x->ns_steps : x->ns_all) / r->kdiv;
}

/* a kernel's time per unit on a rank */
static double get_kname(const struct gp_job_rank *r, const void *arg) {
  for (size_t k = 0; k < r->in->nkn; k++)
    if (!strcmp(r->in->kn[k].name, arg)) return kname_ns(r, k);
  return 0;
}

/* A duration of the finding: milliseconds with two decimals, 10 s and
 * more in seconds, less than a millisecond in microseconds (0.00 ms said
 * nothing) */
static const char *fmt_ms(char *b, size_t n, double ns) {
  if (ns >= 10e9)
    snprintf(b, n, "%.2f s", ns / 1e9);
  else if (ns >= 999.95e3)
    snprintf(b, n, "%.2f ms", ns / 1e6);
  else if (ns >= 999.5)
    snprintf(b, n, "%.1f us", ns / 1e3);
  else
    snprintf(b, n, "%.0f ns", ns > 0 ? ns : 0);
  return b;
}

/* The finding: the worst straggler and what it did differently from the
 * median rank, per unit. */
static int finding(struct gp_job *j, struct gp_proc_res *const *procs) {
  if (!j->nstrag) return 0;
  const struct gp_job_rank *w = &j->r[j->strag[0]];
  double *tmp = malloc(j->nranks * sizeof *tmp);
  if (!tmp) return -1;
  const char *unit = j->by_step ? "step" : "collective";
  /* candidates: compute kernels, and the categories other than kernel */
  double best = median_of(j, tmp, get_compute, NULL);
  best = w->compute - best;
  int what = -1; /* -1: compute kernels, else a category */
  for (int c = 0; c < GP_CAT_N; c++) {
    if (c == GP_CAT_KERNEL) continue;
    double ex = w->cat[c] - median_of(j, tmp, get_cat, &c);
    if (ex > best) best = ex, what = c;
  }
  char a[32], b[32], c[32], detail[512] = "";
  if (best <= 0)
    snprintf(detail, sizeof detail,
             "; per %s it spent no more than the median rank in compute "
             "kernels or any category: it may start its collectives late "
             "for another reason (another stream, the CPU)",
             unit);
  else if (what >= 0) {
    /* a transfer: its kind, the one of most of the rank's copy time */
    char kind[96] = "";
    const struct gp_proc_res *p = procs[w->proc];
    double most = 0;
    int x = -1;
    for (int k = 0; what == GP_CAT_TRANSFER && k < GP_XFER_N; k++) {
      double t = 0;
      for (size_t g = 0; g < p->ndev; g++)
        t += (double)p->dev[g].bd.sub[GP_SUB_XFER + k];
      if (t > most) most = t, x = k;
    }
    if (x >= 0)
      snprintf(kind, sizeof kind, " (most of it %s%s)", gp_xfer_label[x],
               x == GP_XFER_MEMSET ? "s" : " copies");
    snprintf(detail, sizeof detail,
             "; per %s it spent %s more than the median rank in %s%s", unit,
             fmt_ms(a, sizeof a, best), gp_cat_label[what],
             what == GP_CAT_HOST_WAIT
                 ? " (the GPU idle while its host did other work: data "
                   "loading, Python, the CPU)"
                 : kind);
  }
  else {
    /* the compute kernel it ran longest beyond the median rank */
    const char *kn = NULL;
    double kx = 0;
    for (size_t k = 0; k < w->in->nkn; k++) {
      double ex =
          kname_ns(w, k) - median_of(j, tmp, get_kname, w->in->kn[k].name);
      if (ex > kx) kx = ex, kn = w->in->kn[k].name;
    }
    int len = snprintf(detail, sizeof detail,
                       "; per %s it spent %s more than the median rank in "
                       "compute kernels",
                       unit, fmt_ms(a, sizeof a, best));
    if (kn && len > 0 && (size_t)len < sizeof detail)
      snprintf(detail + len, sizeof detail - (size_t)len,
               ", most in %.160s (+%s)", kn, fmt_ms(b, sizeof b, kx));
  }
  free(tmp);
  size_t counted = j->by_step ? j->units : j->collectives;
  char rk[32];
  snprintf(rk, sizeof rk, "%lld", (long long)w->rank);
  double units = j->units ? (double)j->units : 1;
  /* a rank that held the others up in more units than it was their
   * straggler (another rank was later at another collective of the step)
   * says so */
  char held[96] = "";
  if (w->held_count > w->last_count)
    snprintf(held, sizeof held, " and held the others up in %llu",
             (unsigned long long)w->held_count);
  if (asprintf(&j->finding,
               "rank %s (%s) was the last to reach the collective in %llu of "
               "%zu %ss%s; the other ranks' communication kernels waited %s "
               "for it in all (%s per %s)%s",
               rk, w->host ? w->host : "?", (unsigned long long)w->last_count,
               counted, unit, held,
               fmt_ms(c, sizeof c, (double)w->others_wait_ns),
               fmt_ms(b, sizeof b, (double)w->others_wait_ns / units), unit,
               detail) < 0) {
    j->finding = NULL;
    return -1;
  }
  return 0;
}

static int cmp_outlier(const void *x, const void *y) {
  const struct gp_job_rank *a = x, *b = y;
  if (a->others_wait_ns != b->others_wait_ns)
    return a->others_wait_ns < b->others_wait_ns ? 1 : -1;
  /* compute before the step: the ranks of a job step together, their
   * medians differ by the link latency; a rank as slow as the straggler
   * but never last (a tie) shows in its compute */
  if (a->compute != b->compute) return a->compute < b->compute ? 1 : -1;
  if (a->step_p50 != b->step_p50) return a->step_p50 < b->step_p50 ? 1 : -1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static struct gp_job *fail(struct gp_job *j, char *err, size_t errlen) {
  snprintf(err, errlen, "job view: out of memory");
  gp_job_free(j);
  return NULL;
}

/* The measured steps every rank has: by step when every rank has some. */
static struct scope scope_of(struct gp_proc_res *const *procs, size_t n) {
  struct scope sc = {1, 0, SIZE_MAX};
  for (size_t i = 0; i < n; i++) {
    const struct gp_steps_res *s = &procs[i]->steps;
    if (s->source == GP_STEPS_NONE || !s->measured) return (struct scope){0};
    if (s->warmup > sc.from) sc.from = s->warmup;
    if (s->n < sc.to) sc.to = s->n;
  }
  if (!n || sc.from >= sc.to) return (struct scope){0};
  return sc;
}

struct collect_task {
  char *const *files;
  struct gp_proc_res *const *procs;
  const char *globs;
  struct gp_job_input *in;
  int *rc;
  char (*err)[512];
};

static void collect_one(void *ctx, size_t i) {
  struct collect_task *t = ctx;
  struct rank_data d = {0};
  t->rc[i] = collect(t->files[i], t->procs[i], t->globs, &t->in[i], &d,
                     t->err[i], sizeof t->err[i]);
  gp_u64map_free(&d.names);
}

int gp_job_collect_all(char *const *files, struct gp_proc_res *const *procs,
                       size_t n, const struct gp_job_opts *o,
                       struct gp_job_input **out, char *err, size_t errlen) {
  size_t m = n ? n : 1;
  struct gp_job_input *in = calloc(m, sizeof *in);
  int *rcs = calloc(m, sizeof *rcs), rc = 0;
  char(*errs)[512] = calloc(m, sizeof *errs);
  if (!in || !rcs || !errs) {
    snprintf(err, errlen, "job view: out of memory");
    rc = -1;
  } else {
    struct collect_task t = {files, procs, o ? o->comm : NULL, in, rcs, errs};
    gp_par_for(n, o ? o->threads : 1, collect_one, &t);
    /* the first failure in file order is the one reported */
    for (size_t i = 0; i < n && !rc; i++)
      if ((rc = rcs[i]) == -1)
        snprintf(err, errlen, "job view: out of memory");
      else if (rc < 0)
        snprintf(err, errlen, "%s", errs[i]);
  }
  if (rc < 0 && in) {
    for (size_t i = 0; i < n; i++)
      gp_job_input_free(&in[i]);
    free(in);
    in = NULL;
  }
  free(rcs);
  free(errs);
  *out = in;
  return rc < 0 ? -1 : 0;
}

/* Traces of more than one run, some of them sharing one: two runs
 * reported as one job? (One `gpuphase run` per rank gives every rank its
 * own id: no note then.) j->r in rank order. */
static int run_ids_note(struct gp_job *j, struct gp_proc_res *const *procs) {
  const char *first = NULL, *other = NULL;
  int64_t rf = -1, ro = -1;
  size_t ids = 0, shared = 0;
  for (size_t i = 0; i < j->nranks; i++) {
    const char *id = procs[j->r[i].proc]->run_id;
    if (!id || !*id) continue;
    size_t k = 0, same_before = 0;
    for (; k < i; k++) {
      const char *x = procs[j->r[k].proc]->run_id;
      if (x && !strcmp(x, id)) same_before++;
    }
    if (!same_before) {
      ids++;
      if (!first)
        first = id, rf = j->r[i].rank;
      else if (!other)
        other = id, ro = j->r[i].rank;
    } else if (same_before == 1)
      shared++;
    if (ids > 64) break; /* enough to say so; bounded work */
  }
  if (ids < 2 || !shared) return 0;
  return note(j,
              "the traces carry %s%zu run ids (%.20s from rank %lld, %.20s "
              "from rank %lld): are they of one job? (each `gpuphase run` "
              "makes its own; set GPUPHASE_RUN_ID for the job to share one)",
              ids > 64 ? "more than " : "", ids > 64 ? (size_t)64 : ids, first,
              (long long)rf, other, (long long)ro);
}

/* A realtime clock that reads no plausible date (before 2000 or after
 * 2200) leaves a host to the collective ends alone; a residual skew over
 * 1 ms, far over a link's latency, says that the ranks of one host name do
 * not share a clock (several machines, or containers, of one name). */
#define SKEW_ODD_NS 1000000ull
/* mismatch: the ranks ran different numbers of collectives, matched by
 * position (their ends fit no alignment), which a collective missing in
 * the middle shifts */
static int clock_notes(struct gp_job *j, int mismatch) {
  for (size_t h = 0; h < j->nhosts; h++) {
    const struct gp_job_host *o = &j->hosts[h];
    const struct gp_job_rank *r = NULL;
    for (size_t i = 0; i < j->nranks && !r; i++)
      if (j->r[i].host_idx == h) r = &j->r[i];
    uint64_t real = r ? r->in->start_real_ns : 0;
    if (r && !plausible(real) &&
        note(j,
             "host %.60s: its header's realtime clock reads no plausible "
             "date: its offset comes from the collective ends alone",
             o->name ? o->name : "(unknown)") < 0)
      return -1;
    if (o->residual_max_ns > SKEW_ODD_NS) {
      char x[32];
      if ((mismatch
               ? note(j,
                     "host %.60s: its ranks disagree by up to %s after "
                     "alignment: the ranks ran different numbers of "
                     "collectives, and matched by position some of them "
                     "are paired with other steps' (a collective missing "
                     "in the middle): the waits and stragglers are then "
                     "not right either",
                     o->name ? o->name : "(unknown)",
                     gp_fmt_dur(x, sizeof x, o->residual_max_ns))
               : note(j,
                     "host %.60s: its ranks disagree by up to %s after "
                     "alignment: do several machines (or containers) share "
                     "the name? The waits are right; the arrival lags are "
                     "not",
                     o->name ? o->name : "(unknown)",
                     gp_fmt_dur(x, sizeof x, o->residual_max_ns))) < 0)
        return -1;
    }
  }
  return 0;
}

struct gp_job *gp_job_make(struct gp_proc_res *const *procs,
                           struct gp_job_input *in, size_t n, const char *rule,
                           char *err, size_t errlen) {
  struct gp_job *j = calloc(1, sizeof *j);
  if (!j) {
    for (size_t i = 0; in && i < n; i++)
      gp_job_input_free(&in[i]);
    free(in);
    return fail(NULL, err, errlen);
  }
  j->in = in;
  j->nranks = n;
  if (!(j->r = calloc(n ? n : 1, sizeof *j->r)) ||
      !(j->comm_rule = strdup(rule ? rule : GP_JOB_COMM_DEFAULT)))
    return fail(j, err, errlen);
  int unranked = 0;
  for (size_t i = 0; i < n; i++) {
    const struct gp_proc_res *p = procs[i];
    struct gp_job_rank *r = &j->r[i];
    r->proc = i;
    r->in = &in[i];
    r->rank = p->rank;
    unranked |= p->rank < 0;
    r->host = p->host;
    r->file = p->file;
    /* its GPU: the one that ran the most kernel time */
    for (size_t g = 0; g < p->ndev; g++)
      if (g == 0 || p->dev[g].bd.cat[GP_CAT_KERNEL] >
                        p->dev[r->gpu_idx].bd.cat[GP_CAT_KERNEL])
        r->gpu_idx = g;
    r->gpu = p->ndev ? p->dev[r->gpu_idx].id : -1;
    r->gpu_name = p->ndev ? p->dev[r->gpu_idx].name : NULL;
    r->steps = p->steps.measured;
    r->step_p50 = p->steps.median_ns;
    r->step_p95 = p->steps.p95_ns;
    r->ncomm = in[i].nc;
  }
  /* the order of the files stands in for the missing ranks: the lowest
   * numbers no file carries, in that order (the others keep theirs) */
  for (size_t i = 0, next = 0; unranked && i < n; i++) {
    if (j->r[i].rank >= 0) continue;
    for (;; next++) {
      size_t k = 0;
      while (k < n && j->r[k].rank != (int64_t)next)
        k++;
      if (k == n) break;
    }
    j->r[i].rank = (int64_t)next++;
  }
  qsort(j->r, n, sizeof *j->r, cmp_rank_no);
  int rc = 0;
  for (size_t i = 1; i < n; i++)
    if (j->r[i].rank == j->r[i - 1].rank && !rc)
      rc = note(j,
                "rank %lld appears in several files (%s and %s): are they "
                "of one job?",
                (long long)j->r[i].rank, j->r[i - 1].file, j->r[i].file);
  /* ranks that carry numbers with gaps: some rank's trace was not given
   * (or not written); the traces hold no world size, so ranks past the
   * highest given are not known */
  if (!unranked && !rc && n) {
    uint64_t distinct = 1, top = (uint64_t)j->r[n - 1].rank;
    int64_t first = j->r[0].rank > 0 ? 0 : -1;
    for (size_t i = 1; i < n; i++) {
      distinct += j->r[i].rank != j->r[i - 1].rank;
      if (first < 0 && j->r[i].rank > j->r[i - 1].rank + 1)
        first = j->r[i - 1].rank + 1;
    }
    if (first >= 0 && top < (1ull << 40))
      rc = note(j,
                "%llu rank%s of 0 to %llu not given (rank %lld first): the "
                "job view covers the ranks given",
                (unsigned long long)(top + 1 - distinct),
                top + 1 - distinct == 1 ? "" : "s", (unsigned long long)top,
                (long long)first);
  }
  if (unranked && !rc)
    rc = note(j, "some traces carry no rank (RANK, SLURM_PROCID, "
                 "OMPI_COMM_WORLD_RANK unset): they are numbered by the "
                 "order of the files, with the numbers no other file "
                 "carries");
  if (rc < 0 || hosts_of(j) < 0) return fail(j, err, errlen);
  struct scope sc = scope_of(procs, n);
  j->by_step = sc.by_step;
  size_t fewest = SIZE_MAX, most = 0, none = 0;
  const struct gp_job_rank *idle = NULL; /* the first rank without any */
  for (size_t i = 0; i < n; i++) {
    if (!j->r[i].in->nc) {
      if (!none++) idle = &j->r[i];
      continue;
    }
    if (j->r[i].in->nc < fewest) fewest = j->r[i].in->nc;
    if (j->r[i].in->nc > most) most = j->r[i].in->nc;
  }
  if (fewest == SIZE_MAX) fewest = 0;
  if (none && most &&
      note(j,
           "%zu rank%s (rank %lld%s) ran no communication kernel: left out "
           "of the matching, the waits and the stragglers",
           none, none > 1 ? "s" : "", (long long)idle->rank,
           none > 1 ? " first" : "") < 0)
    return fail(j, err, errlen);
  /* as many collectives everywhere: the k-th of every rank is one, as
   * the ends would say (and do not need to); else some were lost, and
   * the ends tell which */
  struct matching mt = {0};
  uint64_t scatter = 0;
  int by_pos = fewest == most, mrc = 0;
  if (!by_pos && (mrc = match_by_time(j, &mt, &scatter)) == 1) {
    matching_free(&mt, n);
    mt = (struct matching){0};
    by_pos = 1;
  }
  char sc_s[32];
  if (mrc < 0 || (by_pos && match_position(j, &mt, fewest) < 0) ||
      (fewest != most && !by_pos &&
       note(j,
            "the ranks ran different numbers of communication kernels "
            "(%zu to %zu): matched by their end times",
            fewest, most) < 0) ||
      (fewest != most && by_pos &&
       note(j,
            "the ranks ran different numbers of communication kernels "
            "(%zu to %zu), and the ends of some rank's first collectives "
            "fit no alignment with the others' (they spread by %s: ends "
            "far apart, or events lost here and there): the first %zu of "
            "each are matched by position",
            fewest, most, gp_fmt_dur(sc_s, sizeof sc_s, scatter), fewest) <
           0) ||
      missing_notes(j, &mt) < 0 ||
      (!most &&
       note(j,
            "no communication kernel (names matching %s) in the traces: "
            "no collective to find stragglers at",
            j->comm_rule) < 0) ||
      align(j, &mt) < 0 || stragglers(j, &mt, procs, &sc) < 0) {
    matching_free(&mt, n);
    return fail(j, err, errlen);
  }
  matching_free(&mt, n);
  if (job_steps(j, procs, &sc) < 0 || run_ids_note(j, procs) < 0 ||
      clock_notes(j, by_pos && fewest != most) < 0)
    return fail(j, err, errlen);
  j->units = sc.by_step ? sc.to - sc.from : j->collectives;
  per_unit(j, procs);
  char lagmax[32];
  if (j->clamped &&
      note(j,
           "the aligned clocks put %llu arrival%s after the last rank's "
           "(by up to %s, %s): those lags count as 0; the waits come "
           "from the kernels' durations and are never negative",
           (unsigned long long)j->clamped, j->clamped == 1 ? "" : "s",
           gp_fmt_dur(lagmax, sizeof lagmax, j->clamped_max_ns),
           by_pos && fewest != most
               ? "or collectives matched by position that differ"
               : "within the link latency and the clocks' residual skew") < 0)
    return fail(j, err, errlen);
  qsort(j->r, n, sizeof *j->r, cmp_outlier);
  /* the stragglers: every rank that held the others up at least once
   * (a rank late at one collective of every step, behind another late at
   * another, is never the step's straggler but costs the others as much) */
  for (size_t i = 0; i < n; i++)
    if (j->r[i].held_count) j->nstrag++;
  /* cmp_outlier orders by others' wait first, so they lead the ranks */
  if (j->nstrag && !(j->strag = malloc(j->nstrag * sizeof *j->strag)))
    return fail(j, err, errlen);
  for (size_t i = 0, m = 0; i < n; i++)
    if (j->r[i].held_count) j->strag[m++] = i;
  if (finding(j, procs) < 0) return fail(j, err, errlen);
  return j;
}

struct gp_job *gp_job_build(char *const *files,
                            struct gp_proc_res *const *procs, size_t n,
                            const struct gp_job_opts *o, char *err,
                            size_t errlen) {
  struct gp_job_input *in;
  if (gp_job_collect_all(files, procs, n, o, &in, err, errlen) < 0) return NULL;
  return gp_job_make(procs, in, n, o ? o->comm : NULL, err, errlen);
}
