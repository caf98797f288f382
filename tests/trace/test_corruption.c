/* Corruption: thousands of deterministic single-byte flips and random
 * overwrites of a valid trace. Reading must never crash, hang or read out
 * of bounds (run under ASan), and must end with success or a proper error.
 * A flip inside a compressed payload must either be caught (E_CORRUPT) or
 * leave the records unchanged: zstd's content checksum guards them. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "reader_ext.h"
#include "tt.h"

#define FLIPS 3000
#define OVERWRITES 1000
#define MAXREC 4096
#define STEP_LIMIT 1000000

static void write_trace(const char *path) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 300, NULL);
  uint64_t rng = 99, t = 1000;
  struct gpuphase_record r = {.kind = GPUPHASE_REC_DEVICE};
  r.u.device.name = gp_writer_intern(w, "Simulated GPU", 13);
  r.u.device.sms = 132;
  gp_writer_add(w, 0, &r);
  for (int i = 0; i < 400; i++) {
    t += tt_rand(&rng) % 500;
    uint32_t src = 1 + (uint32_t)(tt_rand(&rng) % 4);
    r = (struct gpuphase_record){.kind = src == 1 ? GPUPHASE_REC_API
                                                  : GPUPHASE_REC_MEMCPY};
    if (src == 1)
      r.u.api = (struct gpuphase_api){.start = t, .end = t + 100, .api = 2};
    else
      r.u.memcpy = (struct gpuphase_memcpy){
          .start = t, .end = t + 999, .bytes = 4096, .stream = src};
    gp_writer_add(w, src, &r);
    if (i % 100 == 0) {
      struct gpuphase_record s = {.kind = GPUPHASE_REC_STATE};
      s.u.state = (struct gpuphase_state){
          .start = t, .state = 1, .reason = r.u.device.name};
      gp_writer_add(w, 0, &s);
    }
  }
  struct gpuphase_summary sum = {404, 0, 0, t};
  CHECK(gp_writer_close(w, &sum) == GPUPHASE_OK);
}

struct stats {
  unsigned open_err, ok, corrupt, truncated;
};

static int proper_open_error(int err) {
  return err == GPUPHASE_E_NOT_TRACE || err == GPUPHASE_E_VERSION ||
         err == GPUPHASE_E_TRUNCATED || err == GPUPHASE_E_CORRUPT;
}

/* Reads to the end; returns the final code and how many records matched
 * the reference before anything differed. */
static int read_mutant(gpuphase_reader *r, const struct gpuphase_record *ref,
                       size_t nref, size_t *same) {
  struct gpuphase_record rec;
  int rc;
  size_t steps = 0;
  *same = 0;
  int diverged = 0;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1 && ++steps < STEP_LIMIT) {
    if (!diverged && *same < nref && tt_rec_equal(&rec, &ref[*same], 0))
      ++*same;
    else
      diverged = 1;
  }
  CHECK(steps < STEP_LIMIT);
  if (rc < 0) {
    CHECK(gpuphase_reader_next(r, &rec) == rc); /* errors are sticky */
    CHECK(gpuphase_reader_errmsg(r)[0] != 0);
  }
  return rc;
}

static void run_one(const uint8_t *buf, size_t len, int sorted,
                    const char *file, int in_payload,
                    const struct gpuphase_record *ref, size_t nref,
                    struct stats *st) {
  int err = 1;
  char msg[256] = "";
  gpuphase_reader *r =
      file ? gp_reader_open_ex(file, sorted, &err, msg, sizeof msg)
           : gp_reader_open_mem(buf, len, sorted, &err, msg, sizeof msg);
  if (!r) {
    CHECK(proper_open_error(err));
    CHECK(msg[0] != 0);
    st->open_err++;
    return;
  }
  size_t same = 0;
  int rc = read_mutant(r, ref, nref, &same);
  CHECK(rc == 0 || rc == GPUPHASE_E_CORRUPT);
  if (rc == 0 && gpuphase_reader_truncated(r))
    st->truncated++;
  else if (rc == 0)
    st->ok++;
  else
    st->corrupt++;
  /* payload damage: caught, or harmless to the records */
  if (in_payload && !sorted && rc == 0) CHECK(same == nref);
  gpuphase_reader_close(r);
}

/* Whether byte `at` lies in a frame's compressed payload. */
static int in_payload(const struct tt_frame *f, size_t n, size_t at) {
  for (size_t i = 0; i < n; i++)
    if (at >= f[i].off + 20 && at < f[i].end) return 1;
  return 0;
}

static void mutate(uint8_t *buf, size_t len, int overwrite, uint64_t *rng,
                   size_t *first) {
  size_t n = overwrite ? 1 + tt_rand(rng) % 16 : 1;
  *first = len;
  for (size_t k = 0; k < n; k++) {
    size_t at = tt_rand(rng) % len;
    uint8_t v = (uint8_t)tt_rand(rng);
    if (!overwrite) v = buf[at] ^ (uint8_t)(1 + tt_rand(rng) % 255);
    buf[at] = v;
    if (at < *first) *first = at;
  }
}

int main(void) {
  const char *path = tt_tmpfile("corrupt"), *mut = tt_tmpfile("mutant");
  write_trace(path);
  size_t len;
  uint8_t *orig = tt_slurp(path, &len);
  static struct tt_frame f[512];
  uint32_t hdr;
  size_t nf = tt_frames(orig, len, &hdr, f, 512);
  CHECK(nf > 10);
  static struct gpuphase_record ref[MAXREC];
  size_t nref = 0;
  int err;
  gpuphase_reader *r = gpuphase_reader_open(path, &err);
  CHECK(r && tt_read_all(r, ref, MAXREC, &nref) == 0);
  gpuphase_reader_close(r);

  uint8_t *buf = malloc(len);
  uint64_t rng = 0x5eed;
  struct stats st = {0, 0, 0, 0};
  for (int i = 0; i < FLIPS + OVERWRITES && tt_failures < 20; i++) {
    memcpy(buf, orig, len);
    size_t at;
    int overwrite = i >= FLIPS;
    mutate(buf, len, overwrite, &rng, &at);
    int payload = !overwrite && in_payload(f, nf, at);
    /* every 16th mutant goes through a real file, the rest from memory */
    const char *file = NULL;
    if (i % 16 == 0) {
      tt_write_file(mut, buf, len);
      file = mut;
    }
    run_one(buf, len, 0, file, payload, ref, nref, &st);
    run_one(buf, len, 1, file, payload, ref, nref, &st);
  }
  printf("%d mutants of a %zu-byte trace (%zu frames), read twice: "
         "%u open errors, %u corrupt, %u truncated, %u read fine\n",
         FLIPS + OVERWRITES, len, nf, st.open_err, st.corrupt, st.truncated,
         st.ok);
  CHECK(st.corrupt > (FLIPS + OVERWRITES) / 2);
  for (size_t i = 0; i < nref; i++)
    tt_rec_free(&ref[i]);
  free(buf);
  free(orig);
  return tt_done("test_corruption");
}
