#include "tl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tl_failures;

void tl_init(struct tl *t) {
  memset(t, 0, sizeof *t);
}

struct gpuphase_record *tl_add(struct tl *t, uint32_t kind) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->v = realloc(t->v, t->cap * sizeof *t->v);
    if (!t->v) abort();
  }
  struct gpuphase_record *r = &t->v[t->n++];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  return r;
}

void tl_str(struct tl *t, uint64_t id, const char *s) {
  struct gpuphase_record *r = tl_add(t, GPUPHASE_REC_STRING);
  r->u.string.id = id;
  r->u.string.text.data = s;
  r->u.string.text.len = strlen(s);
}

void tl_api_def(struct tl *t, uint64_t api, uint64_t name, uint64_t cls) {
  struct gpuphase_record *r = tl_add(t, GPUPHASE_REC_API_DEF);
  r->u.api_def.api = api;
  r->u.api_def.name = name;
  r->u.api_def.cls = cls;
}

struct gpuphase_device *tl_device(struct tl *t, uint64_t dev, uint64_t sms) {
  struct gpuphase_device *d = &tl_add(t, GPUPHASE_REC_DEVICE)->u.device;
  d->device = dev;
  d->sms = sms;
  d->max_threads_per_sm = 2048;
  d->max_blocks_per_sm = 32;
  d->regs_per_sm = 65536;
  d->smem_per_sm = 65536;
  d->warp_size = 32;
  return d;
}

struct gpuphase_api *tl_api(struct tl *t, uint64_t thread, uint64_t api,
                            uint64_t start, uint64_t end, int64_t dev,
                            uint64_t corr) {
  struct gpuphase_api *a = &tl_add(t, GPUPHASE_REC_API)->u.api;
  a->thread = thread;
  a->api = api;
  a->start = start;
  a->end = end;
  a->device = dev;
  a->corr = corr;
  return a;
}

struct gpuphase_kernel *tl_kernel(struct tl *t, uint64_t dev, uint64_t start,
                                  uint64_t end, uint64_t name, uint64_t grid,
                                  uint64_t block) {
  struct gpuphase_kernel *k = &tl_add(t, GPUPHASE_REC_KERNEL)->u.kernel;
  k->device = dev;
  k->start = start;
  k->end = end;
  k->name = name;
  k->grid_x = grid;
  k->grid_y = k->grid_z = 1;
  k->block_x = block;
  k->block_y = k->block_z = 1;
  return k;
}

struct gpuphase_memcpy *tl_copy(struct tl *t, uint64_t dev, uint64_t start,
                                uint64_t end, uint64_t bytes, uint64_t kind,
                                uint64_t src, uint64_t dst, uint64_t corr) {
  struct gpuphase_memcpy *c = &tl_add(t, GPUPHASE_REC_MEMCPY)->u.memcpy;
  c->device = dev;
  c->start = start;
  c->end = end;
  c->bytes = bytes;
  c->copy_kind = kind;
  c->src_mem = src;
  c->dst_mem = dst;
  c->corr = corr;
  c->peer_device = -1;
  return c;
}

void tl_memset(struct tl *t, uint64_t dev, uint64_t start, uint64_t end) {
  struct gpuphase_memset *m = &tl_add(t, GPUPHASE_REC_MEMSET)->u.memset;
  m->device = dev;
  m->start = start;
  m->end = end;
  m->bytes = 64;
}

void tl_range(struct tl *t, uint64_t thread, uint64_t op, uint64_t at,
              uint64_t name, uint64_t id) {
  struct gpuphase_range *r = &tl_add(t, GPUPHASE_REC_RANGE)->u.range;
  r->thread = thread;
  r->op = op;
  r->start = at;
  r->name = name;
  r->id = id;
}

void tl_state(struct tl *t, uint64_t at, uint64_t state, uint64_t reason) {
  struct gpuphase_state *s = &tl_add(t, GPUPHASE_REC_STATE)->u.state;
  s->start = at;
  s->state = state;
  s->reason = reason;
}

static int untimed(uint32_t k) {
  return k == GPUPHASE_REC_STRING || k == GPUPHASE_REC_THREAD ||
         k == GPUPHASE_REC_API_DEF || k == GPUPHASE_REC_DEVICE;
}

static uint64_t start_of(const struct gpuphase_record *r) {
  switch (r->kind) {
  case GPUPHASE_REC_API:
    return r->u.api.start;
  case GPUPHASE_REC_KERNEL:
    return r->u.kernel.start;
  case GPUPHASE_REC_MEMCPY:
    return r->u.memcpy.start;
  case GPUPHASE_REC_MEMSET:
    return r->u.memset.start;
  case GPUPHASE_REC_SYNC:
    return r->u.sync.start;
  case GPUPHASE_REC_RANGE:
    return r->u.range.start;
  case GPUPHASE_REC_LOST:
    return r->u.lost.start;
  case GPUPHASE_REC_STATE:
    return r->u.state.start;
  case GPUPHASE_REC_ITEMS:
    return r->u.items.start;
  }
  return 0;
}

static struct gp_proc_res *feed(struct tl *t, const size_t *order) {
  gp_attr *a = gp_attr_new(&t->o);
  for (size_t i = 0; a && i < t->n; i++)
    if (gp_attr_feed(a, &t->v[order ? order[i] : i]) < 0) abort();
  struct gp_proc_res *r = a ? gp_attr_finish(a) : NULL;
  gp_attr_free(a);
  if (!r) abort();
  return r;
}

struct gp_proc_res *tl_run(struct tl *t) {
  size_t *ord = malloc((t->n + 1) * sizeof *ord), k = 0;
  for (size_t i = 0; i < t->n; i++)
    if (untimed(t->v[i].kind)) ord[k++] = i;
  size_t first = k;
  for (size_t i = 0; i < t->n; i++)
    if (!untimed(t->v[i].kind)) ord[k++] = i;
  for (size_t i = first + 1; i < k; i++) /* stable insertion sort */
    for (size_t j = i;
         j > first && start_of(&t->v[ord[j - 1]]) > start_of(&t->v[ord[j]]);
         j--) {
      size_t x = ord[j];
      ord[j] = ord[j - 1];
      ord[j - 1] = x;
    }
  struct gp_proc_res *r = feed(t, ord);
  free(ord);
  return r;
}

struct gp_proc_res *tl_run_raw(struct tl *t) {
  return feed(t, NULL);
}

void tl_free(struct tl *t) {
  free(t->v);
  memset(t, 0, sizeof *t);
}

const struct gp_device_res *tl_dev(const struct gp_proc_res *r, int64_t id) {
  for (size_t i = 0; i < r->ndev; i++)
    if (r->dev[i].id == id) return &r->dev[i];
  fprintf(stderr, "no device %lld in the result\n", (long long)id);
  abort();
}

#define FIND(T, arr, n, key, what)                                             \
  for (size_t i = 0; i < r->n; i++)                                            \
    if (strcmp(r->arr[i].name, key) == 0) return &r->arr[i];                   \
  fprintf(stderr, "no %s %s in the result\n", what, key);                      \
  abort();

const struct gp_phase_res *tl_phase(const struct gp_proc_res *r,
                                    const char *name) {
  FIND(phase, phases, nphases, name, "phase")
}
const struct gp_kernel_res *tl_kern(const struct gp_proc_res *r,
                                    const char *name) {
  FIND(kernel, kernels, nkernels, name, "kernel")
}
const struct gp_api_res *tl_apires(const struct gp_proc_res *r,
                                   const char *name) {
  FIND(api, apis, napis, name, "api")
}

const struct gp_thread_res *tl_thr(const struct gp_proc_res *r, uint64_t idx) {
  for (size_t i = 0; i < r->nthreads; i++)
    if (r->threads[i].index == idx) return &r->threads[i];
  fprintf(stderr, "no thread %llu in the result\n", (unsigned long long)idx);
  abort();
}

int tl_eq(uint64_t got, uint64_t want, const char *what, const char *file,
          int line) {
  if (got == want) return 1;
  fprintf(stderr, "%s:%d: %s = %lld, expected %lld\n", file, line, what,
          (long long)got, (long long)want);
  tl_failures++;
  return 0;
}

int tl_near(double got, double want, double eps, const char *what,
            const char *file, int line) {
  if (got >= want - eps && got <= want + eps) return 1;
  fprintf(stderr, "%s:%d: %s = %.6f, expected %.6f\n", file, line, what, got,
          want);
  tl_failures++;
  return 0;
}
