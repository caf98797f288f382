/* Truncation: a file cut at every byte offset, read in file order and in
 * time order. Expectations come from the frame boundaries found by an
 * independent walk of the file (tt_frames), not from the reader. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"

#define PER_SOURCE 60
#define MAXREC 1024

static uint64_t start_of(const struct gpuphase_record *r, int *timed) {
  *timed = 1;
  switch (r->kind) {
  case GPUPHASE_REC_API:
    return r->u.api.start;
  case GPUPHASE_REC_KERNEL:
    return r->u.kernel.start;
  case GPUPHASE_REC_RANGE:
    return r->u.range.start;
  case GPUPHASE_REC_SUMMARY:
    return UINT64_MAX;
  }
  *timed = 0;
  return 0;
}

static void write_small(const char *path) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 200, NULL);
  uint64_t rng = 7;
  struct gpuphase_record r;
  for (int i = 0; i < 3; i++) {
    char name[16];
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_THREAD};
    r.u.thread.thread = (uint64_t)i;
    r.u.thread.tid = 1000 + (uint64_t)i;
    r.u.thread.name = gp_writer_intern(
        w, name, (size_t)snprintf(name, sizeof name, "worker-%d", i));
    CHECK(gp_writer_add(w, 0, &r) == GPUPHASE_OK);
  }
  uint64_t t[3] = {5000, 5000, 5000};
  for (int i = 0; i < PER_SOURCE * 3; i++) {
    int s = (int)(tt_rand(&rng) % 3);
    t[s] += tt_rand(&rng) % 300;
    r = (struct gpuphase_record){.kind = s == 0   ? GPUPHASE_REC_API
                                         : s == 1 ? GPUPHASE_REC_KERNEL
                                                  : GPUPHASE_REC_RANGE};
    if (s == 0)
      r.u.api = (struct gpuphase_api){
          .start = t[s], .end = t[s] + 90, .corr = (uint64_t)i, .api = 3};
    else if (s == 1)
      r.u.kernel = (struct gpuphase_kernel){
          .start = t[s], .end = t[s] + 40, .corr = (uint64_t)i, .name = 1};
    else
      r.u.range = (struct gpuphase_range){.start = t[s], .op = 1, .name = 2};
    CHECK(gp_writer_add(w, (uint32_t)s + 1, &r) == GPUPHASE_OK);
  }
  struct gpuphase_summary sum = {PER_SOURCE * 3 + 3, 0, 0, 99999};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
}

struct model {
  struct tt_frame f[256];
  size_t nframes;
  uint32_t hdr;
  struct gpuphase_record ref[MAXREC];
  size_t nref;
};

/* What a reader must return for a prefix of p bytes. */
static void expected(const struct model *m, uint64_t p, size_t *count,
                     int *truncated, int *summary) {
  *count = 0;
  *truncated = p != m->hdr;
  *summary = 0;
  for (size_t i = 0; i < m->nframes && m->f[i].end <= p; i++) {
    *count += m->f[i].nrecords;
    *truncated = m->f[i].end != p;
    *summary = m->f[i].type == 2;
  }
}

static gpuphase_reader *open_mode(const char *path, int sorted, int *err) {
  return sorted ? gpuphase_reader_open_sorted(path, err)
                : gpuphase_reader_open(path, err);
}

/* Sorted output: untimed records first, then non-decreasing start. */
static void check_sorted(const struct gpuphase_record *got, size_t n) {
  int timed_seen = 0;
  uint64_t last = 0;
  for (size_t i = 0; i < n; i++) {
    int timed;
    uint64_t t = start_of(&got[i], &timed);
    CHECK(timed || !timed_seen);
    if (timed) {
      CHECK(t >= last);
      last = t;
      timed_seen = 1;
    }
  }
}

static void check_prefix(const char *path, const struct model *m, uint64_t p,
                         int sorted) {
  int err = 1;
  gpuphase_reader *r = open_mode(path, sorted, &err);
  if (p < 8) {
    CHECK(!r && err == GPUPHASE_E_NOT_TRACE);
    return;
  }
  if (p < m->hdr) {
    CHECK(!r && err == GPUPHASE_E_TRUNCATED);
    return;
  }
  CHECK(r && err == GPUPHASE_OK);
  if (!r) return;
  static struct gpuphase_record got[MAXREC];
  size_t n = 0, want;
  int truncated, summary;
  expected(m, p, &want, &truncated, &summary);
  CHECK(tt_read_all(r, got, MAXREC, &n) == 0);
  CHECK_EQ_U(n, want);
  CHECK_EQ_U(gpuphase_reader_truncated(r), truncated);
  CHECK_EQ_U(gpuphase_reader_summary(r, NULL), summary);
  if (!sorted)
    for (size_t i = 0; i < n && i < want; i++)
      CHECK(tt_rec_equal(&got[i], &m->ref[i], 1));
  else
    check_sorted(got, n < MAXREC ? n : MAXREC);
  for (size_t i = 0; i < n && i < MAXREC; i++)
    tt_rec_free(&got[i]);
  gpuphase_reader_close(r);
}

int main(void) {
  const char *path = tt_tmpfile("trunc-full"), *cut = tt_tmpfile("trunc-cut");
  write_small(path);
  static struct model m;
  size_t len;
  uint8_t *file = tt_slurp(path, &len);
  m.nframes = tt_frames(file, len, &m.hdr, m.f, 256);
  CHECK(m.nframes > 8);
  CHECK(m.f[m.nframes - 1].end == len);
  int err;
  gpuphase_reader *r = gpuphase_reader_open(path, &err);
  CHECK(r && tt_read_all(r, m.ref, MAXREC, &m.nref) == 0);
  gpuphase_reader_close(r);
  size_t total = 0;
  for (size_t i = 0; i < m.nframes; i++)
    total += m.f[i].nrecords;
  /* 3 threads + 3 strings + the events + the summary */
  CHECK_EQ_U(total, PER_SOURCE * 3 + 7);
  CHECK_EQ_U(m.nref, total);

  tt_write_file(cut, file, len);
  int fd = open(cut, O_WRONLY);
  for (uint64_t p = len + 1; p-- > 0;) {
    CHECK(ftruncate(fd, (off_t)p) == 0);
    check_prefix(cut, &m, p, 0);
    check_prefix(cut, &m, p, 1);
    if (tt_failures > 20) break;
  }
  close(fd);
  printf("%zu bytes, %zu frames, %zu prefixes read twice\n", len, m.nframes,
         len + 1);
  for (size_t i = 0; i < m.nref; i++)
    tt_rec_free(&m.ref[i]);
  free(file);
  return tt_done("test_truncation");
}
