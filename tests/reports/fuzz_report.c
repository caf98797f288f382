/* libFuzzer entry point for the attribution engine and the renderers.
 * An input that starts with the trace magic is a whole trace: it goes
 * through the report's own pipeline (gp_report_file: the time-ordered
 * reader, steps with their per-step detail gathered in one pass, or, for
 * an input of odd size, a log with room for one entry and so a second
 * pass with the steps fixed), from a memory file. Any other input is read
 * as a frame payload (column-delta records, docs/format.md) whose records
 * are fed to the engine in that order (so out of order, with any values).
 * A whole trace is also exported (timeline.h) as Perfetto or Chrome JSON,
 * as the last byte's top bit picks: the walk must succeed or fail with a
 * one-line message, and the sink must never be handed a track it was not
 * told about (the encoders fail then).
 * The result is rendered as text, JSON, HTML or folded call-site stacks,
 * as the input's last byte
 * picks (one format per run: rendering thousands of over-time windows
 * three times over was most of the time of a run). The sanitizers and these
 * invariants do the checking: each device's categories add up to its
 * window, rendering succeeds, and a trace that cannot be reported gets a
 * one-line message that calls an out-of-memory by its name, never
 * corruption. Built only with a compiler that supports -fsanitize=fuzzer
 * (clang), and replayed on the corpus by tests/fuzz/replay.c in every
 * build (tests/fuzz/README.md):
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined \
 *     -Db_lundef=false && ninja -C build-fuzz tests/reports/fuzz_report
 *   build-fuzz/tests/reports/fuzz_report -max_total_time=60 \
 *     tests/fuzz/corpus/report */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attribute.h"
#include "codec.h"
#include "export.h"
#include "pipeline.h"
#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_and_render(struct gp_proc_res *r, unsigned pick) {
  for (size_t i = 0; i < r->ndev; i++) {
    uint64_t sum = 0;
    for (int c = 0; c < GP_CAT_N; c++)
      sum += r->dev[i].bd.cat[c];
    if (sum != r->dev[i].window_ns) abort();
  }
  struct gp_proc_res *procs[1] = {r};
  struct gp_report_set set = {procs, 1, r, NULL};
  struct gp_render_opts ro = {.top = 5};
  FILE *f = fopen("/dev/null", "w");
  if (f) {
    int rc = pick % 4 == 0   ? gp_render_text(f, &set, &ro)
             : pick % 4 == 1 ? gp_render_json(f, &set, &ro)
             : pick % 4 == 2 ? gp_render_html(f, &set, &ro)
                             : gp_render_folded(f, &set, &ro);
    if (rc < 0) abort();
    fclose(f);
  }
}

static void payload(const uint8_t *data, size_t size) {
  struct gp_report_opts o = {0};
  o.window_ns = size && (data[0] & 1) ? 1000 : 0;
  gp_attr *a = gp_attr_new(&o);
  if (!a) return;
  struct gp_delta d;
  gp_delta_reset(&d);
  const uint8_t *p = data, *end = data + size;
  struct gpuphase_record rec;
  int rc;
  while (p < end && (rc = gp_decode_record(&p, end, &d, &rec)) >= 0)
    if (rc == 1 && gp_attr_feed(a, &rec) < 0) break;
  struct gp_proc_res *r = gp_attr_finish(a);
  gp_attr_free(a);
  if (!r) return;
  check_and_render(r, size ? data[size - 1] : 0);
  gp_res_free(r);
}

static void export_to_null(const char *path, const struct gp_proc_res *r,
                           unsigned pick) {
  FILE *f = fopen("/dev/null", "w");
  if (!f) return;
  struct gp_xsink *x =
      pick & 0x80 ? gp_xsink_chrome(f, r->wstart) : gp_xsink_perfetto(f);
  if (x) {
    struct gp_tl_opts o = {0};
    struct gp_tl_stats st;
    char err[512] = "";
    if (gp_timeline_walk(path, 0, r, &o, &x->tl, &st, err, sizeof err) < 0) {
      /* the pipeline read this trace: only memory can fail the walk */
      if (!strstr(err, "out of memory")) abort();
    } else if (x->finish(x->tl.ctx) < 0) {
      abort();
    }
    x->free(x->tl.ctx);
    free(x);
  }
  fclose(f);
}

static void trace(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  char path[64], err[512] = "";
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  struct gp_report_opts o = {.warmup = -1, .step_detail = 1};
  int status = -1;
  gp_steps_glog_cap(size & 1 ? 1 : 0);
  struct gp_proc_res *r =
      done == size
          ? gp_report_file(path, &o, NULL, NULL, &status, err, sizeof err)
          : NULL;
  gp_steps_glog_cap(0);
  if (done != size) {
    close(fd);
    return;
  }
  if (r) export_to_null(path, r, size ? data[size - 1] : 0);
  close(fd);
  if (!r) {
    if (!err[0] || strchr(err, '\n')) abort();
    int oom = strstr(err, "out of memory") != NULL;
    if (oom != (status == GP_PIPE_NOMEM) || (oom && strstr(err, "corrupt")))
      abort();
    return;
  }
  check_and_render(r, size ? data[size - 1] : 0);
  gp_res_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 8 && !memcmp(data, "GPUPHASE", 8))
    trace(data, size);
  else
    payload(data, size);
  return 0;
}
