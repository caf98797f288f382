/* Time-ordered reading: several sources whose records interleave in time,
 * written in chunks per source, come back in exact global start order
 * (ties: lower source first), metadata first, summary last. Expected
 * orders are computed here with qsort, or by hand for the small cases. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"

#define NSRC 6 /* source 0 (metadata) and 1..5 */
#define PER_SOURCE 2000

struct item {
  struct gpuphase_record rec;
  uint64_t start;
  uint32_t source, seq;
};

static int by_time(const void *a, const void *b) {
  const struct item *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->source != y->source) return x->source < y->source ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Timed records of source s; starts on a 10 ns grid so that sources tie. */
static struct gpuphase_record event(uint32_t s, uint64_t t, uint64_t *rng) {
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  switch (s) {
  case 0:
    r.kind = tt_rand(rng) % 2 ? GPUPHASE_REC_LOST : GPUPHASE_REC_STATE;
    if (r.kind == GPUPHASE_REC_LOST)
      r.u.lost = (struct gpuphase_lost){.start = t, .count = 3};
    else
      r.u.state = (struct gpuphase_state){.start = t, .state = 1};
    break;
  case 1:
  case 2:
    r.kind = GPUPHASE_REC_API;
    r.u.api = (struct gpuphase_api){.thread = s, .start = t, .end = t + 7};
    break;
  case 3:
    r.kind = GPUPHASE_REC_KERNEL;
    r.u.kernel =
        (struct gpuphase_kernel){.stream = 3, .start = t, .end = t + 55};
    break;
  case 4:
    r.kind = GPUPHASE_REC_MEMCPY;
    r.u.memcpy =
        (struct gpuphase_memcpy){.stream = 4, .start = t, .end = t + 1};
    break;
  default:
    r.kind = GPUPHASE_REC_RANGE;
    r.u.range = (struct gpuphase_range){.thread = 5, .start = t, .op = 1};
  }
  return r;
}

static struct item items[NSRC * PER_SOURCE];
static size_t nitems;
static struct gpuphase_record meta[10];

static void write_chunked(const char *path) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 300, NULL);
  uint64_t rng = 77;
  for (int i = 0; i < 10; i++) {
    memset(&meta[i], 0, sizeof meta[i]);
    meta[i].kind = i % 2 ? GPUPHASE_REC_THREAD : GPUPHASE_REC_API_DEF;
    meta[i].u.thread.thread = (uint64_t)i; /* first field of both */
    meta[i].u.thread.name = gp_writer_intern(w, i % 2 ? "t" : "a", 1);
  }
  uint64_t t[NSRC] = {0};
  size_t next[NSRC] = {0};
  int meta_done = 0;
  for (size_t left = NSRC * PER_SOURCE; left;) {
    uint32_t s = (uint32_t)(tt_rand(&rng) % NSRC);
    size_t chunk = 1 + tt_rand(&rng) % 50;
    for (; chunk && next[s] < PER_SOURCE; chunk--, next[s]++, left--) {
      t[s] += 10 * (tt_rand(&rng) % 4);
      struct item *it = &items[nitems++];
      it->rec = event(s, t[s], &rng);
      it->start = t[s];
      it->source = s;
      it->seq = (uint32_t)next[s];
      CHECK(gp_writer_add(w, s, &it->rec) == GPUPHASE_OK);
    }
    if (!meta_done && s == 2) { /* metadata arrives while events flow */
      for (int i = 0; i < 10; i++)
        CHECK(gp_writer_add(w, 0, &meta[i]) == GPUPHASE_OK);
      meta_done = 1;
    }
  }
  struct gpuphase_summary sum = {NSRC * PER_SOURCE + 10, 9, 0, t[1]};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
}

static void test_merge(const char *path) {
  write_chunked(path);
  size_t len;
  uint8_t *file = tt_slurp(path, &len);
  static struct tt_frame f[4096];
  uint32_t hs;
  size_t nf = tt_frames(file, len, &hs, f, 4096);
  size_t switches = 0;
  for (size_t i = 1; i < nf; i++)
    switches += f[i].source != f[i - 1].source;
  CHECK(switches > 100); /* the sources really are interleaved on disk */
  free(file);

  qsort(items, nitems, sizeof items[0], by_time);
  int err;
  gpuphase_reader *r = gpuphase_reader_open_sorted(path, &err);
  CHECK(r != NULL);
  if (!r) return;
  struct gpuphase_record rec;
  size_t i = 0, m = 0, strings = 0;
  int rc;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    if (rec.kind == GPUPHASE_REC_STRING) {
      CHECK(m == 0 && i == 0);
      strings++;
    } else if (rec.kind == GPUPHASE_REC_SUMMARY) {
      CHECK(i == nitems);
      CHECK_EQ_U(rec.u.summary.lost, 9);
    } else if (m < 10) {
      CHECK(tt_rec_equal(&rec, &meta[m++], 1));
    } else if (i < nitems) {
      if (!tt_rec_equal(&rec, &items[i].rec, 1)) {
        fprintf(stderr, "  at sorted position %zu\n", i);
        CHECK(!"record out of order");
        break;
      }
      i++;
    }
  }
  CHECK(rc == 0);
  CHECK_EQ_U(strings, 2);
  CHECK_EQ_U(m, 10);
  CHECK_EQ_U(i, nitems);
  CHECK(!gpuphase_reader_truncated(r));
  gpuphase_reader_close(r);
}

/* Small files whose expected order is worked out by hand. */
static void write_starts(const char *path, const uint32_t *src,
                         const uint32_t *kind, const uint64_t *start,
                         size_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  for (size_t i = 0; i < n; i++) {
    struct gpuphase_record r;
    memset(&r, 0, sizeof r);
    r.kind = kind[i];
    if (kind[i] == GPUPHASE_REC_API) {
      r.u.api.start = start[i];
      r.u.api.corr = src[i];
    } else
      r.u.thread.thread = start[i];
    CHECK(gp_writer_add(w, src[i], &r) == GPUPHASE_OK);
  }
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
}

static void expect_order(const char *path, const uint64_t *want, size_t n) {
  int err;
  gpuphase_reader *r = gpuphase_reader_open_sorted(path, &err);
  struct gpuphase_record rec;
  size_t i = 0;
  while (r && gpuphase_reader_next(r, &rec) == 1) {
    /* API: start * 100 + source; THREAD: 100000 + its thread field */
    uint64_t v = rec.kind == GPUPHASE_REC_API
                     ? rec.u.api.start * 100 + rec.u.api.corr
                     : 100000 + rec.u.thread.thread;
    CHECK(i < n && v == want[i]);
    i++;
  }
  CHECK_EQ_U(i, n);
  CHECK(!gpuphase_reader_summary(r, NULL));
  gpuphase_reader_close(r);
}

static void test_by_hand(const char *path) {
  const uint32_t A = GPUPHASE_REC_API, T = GPUPHASE_REC_THREAD;
  /* source 1 breaks its own order (10, 5, 20): the 5 stays where it is */
  const uint32_t s1[] = {1, 1, 1, 2}, k1[] = {A, A, A, A};
  const uint64_t t1[] = {10, 5, 20, 7}, w1[] = {702, 1001, 501, 2001};
  write_starts(path, s1, k1, t1, 4);
  expect_order(path, w1, 4);
  /* an untimed record outside source 0 follows its predecessor; untimed
   * records of source 0 come first */
  const uint32_t s2[] = {3, 3, 3, 4, 0, 0}, k2[] = {A, T, A, A, T, T};
  const uint64_t t2[] = {10, 1, 30, 20, 2, 3};
  const uint64_t w2[] = {100002, 100003, 1003, 100001, 2004, 3003};
  write_starts(path, s2, k2, t2, 6);
  expect_order(path, w2, 6);
  /* equal starts: lower source first, whatever the file order */
  const uint32_t s3[] = {9, 4, 9, 4}, k3[] = {A, A, A, A};
  const uint64_t t3[] = {50, 50, 60, 60}, w3[] = {5004, 5009, 6004, 6009};
  write_starts(path, s3, k3, t3, 4);
  expect_order(path, w3, 4);
  /* empty trace */
  write_starts(path, s3, k3, t3, 0);
  expect_order(path, w3, 0);
}

int main(void) {
  const char *path = tt_tmpfile("sorted");
  test_merge(path);
  test_by_hand(path);
  return tt_done("test_sorted");
}
