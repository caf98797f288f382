/* libFuzzer entry point for summaries (gpuphase-report merge): their
 * parser, the sum of their processes, the job view made from them and
 * the renderers. A summary's body is zstd-compressed with a checksum, so
 * damage to a file almost never reaches the parser; here the input is the
 * body itself, compressed and given a header before it is read:
 *   byte 0   the summary version (bit 2 set: 3, else its low bit: 1 or
 *            2) and, in bit 1, the same summary read twice (two
 *            summaries merged, the second checked against the first's
 *            options);
 *   byte 1   the output: text, JSON or HTML (value % 3), and in bit 2 the
 *            job view asked for (--job) where the ranks do not ask for it;
 *   the rest the body.
 * An input that starts with the summary magic is a whole file, read as
 * it is (byte 8 of it still picks the output). The sanitizers and these
 * invariants do the checking: a summary that cannot be read gets a
 * one-line message naming it, which calls an out-of-memory by its name
 * and only then; a job that cannot be made gets a one-line message;
 * rendering succeeds. Built only with a compiler that supports
 * -fsanitize=fuzzer (clang), and replayed on the corpus by
 * tests/fuzz/replay.c in every build (tests/fuzz/README.md):
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined \
 *     -Db_lundef=false && ninja -C build-fuzz tests/reports/fuzz_summary
 *   build-fuzz/tests/reports/fuzz_summary -max_total_time=60 \
 *     tests/fuzz/corpus/summary */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "job.h"
#include "job_summary.h"
#include "pipeline.h"
#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD 24

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* A whole summary file around body (NULL when memory runs out). */
static uint8_t *wrap(unsigned ver, const uint8_t *body, size_t n,
                     size_t *len) {
  size_t bound = ZSTD_compressBound(n);
  uint8_t *f = malloc(HEAD + bound);
  if (!f) return NULL;
  ZSTD_CCtx *z = ZSTD_createCCtx();
  size_t c = z ? ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1) : 0;
  if (z && !ZSTD_isError(c))
    c = ZSTD_compress2(z, f + HEAD, bound, body, n);
  ZSTD_freeCCtx(z);
  if (!z || ZSTD_isError(c)) {
    free(f);
    return NULL;
  }
  memcpy(f, "GPSUMMRY", 8);
  put_le(f + 8, ver, 4);
  put_le(f + 12, 1, 4); /* the body carries its checksum */
  put_le(f + 16, n, 8);
  *len = HEAD + c;
  return f;
}

static void one_line(const char *err) {
  if (!err[0] || strchr(err, '\n')) abort();
}

static void check_read(int rc, int nomem, const char *err) {
  if (rc >= 0) return;
  one_line(err);
  if (strncmp(err, "summary.gps: ", 13)) abort(); /* names the file */
  if ((strstr(err, "out of memory") != NULL) != (nomem != 0)) abort();
}

static void report(struct gp_summary_set *set, unsigned pick) {
  struct gp_report_opts o = {.warmup = -1, .link_gbps = set->link_gbps};
  struct gp_proc_res *sum = NULL;
  if (set->n > 1 && !(sum = gp_report_sum(set->procs, set->n, &o))) return;
  struct gp_job *job = NULL;
  if ((pick & 4) || gp_job_wanted(set->procs, set->n)) {
    char err[512] = "";
    job = gp_job_make(set->procs, set->in, set->n, set->rule, err,
                      sizeof err);
    set->in = NULL; /* the job's now, freed with it or on failure */
    if (!job) {
      one_line(err);
      gp_res_free(sum);
      return;
    }
  }
  struct gp_report_set rs = {set->procs, set->n, sum ? sum : set->procs[0],
                             job};
  struct gp_render_opts ro = {.top = 5};
  FILE *f = fopen("/dev/null", "w");
  if (f) {
    int rc = pick % 3 == 0   ? gp_render_text(f, &rs, &ro)
             : pick % 3 == 1 ? gp_render_json(f, &rs, &ro)
                             : gp_render_html(f, &rs, &ro);
    if (rc < 0) abort();
    fclose(f);
  }
  gp_job_free(job);
  gp_res_free(sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *f = NULL;
  size_t len = 0;
  unsigned twice = 0, pick = 0;
  if (size >= 8 && !memcmp(data, "GPSUMMRY", 8)) {
    pick = size > 8 ? data[8] : 0;
  } else {
    if (size < 2) return 0;
    twice = data[0] & 2;
    pick = data[1];
    unsigned ver = data[0] & 4u ? 3 : 1 + (data[0] & 1u);
    if (!(f = wrap(ver, data + 2, size - 2, &len))) return 0;
  }
  const uint8_t *file = f ? f : data;
  if (!f) len = size;
  struct gp_summary_set set = {0};
  char err[512] = "";
  int nomem = 0;
  int rc = gp_summary_read_mem(file, len, "summary.gps", &set, &nomem, err,
                               sizeof err);
  check_read(rc, nomem, err);
  if (rc >= 0 && twice) {
    err[0] = 0;
    rc = gp_summary_read_mem(file, len, "summary.gps", &set, &nomem, err,
                             sizeof err);
    check_read(rc, nomem, err);
  }
  if (rc >= 0 && set.n) report(&set, pick);
  gp_summary_set_free(&set);
  free(f);
  return 0;
}
