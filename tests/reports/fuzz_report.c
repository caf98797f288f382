/* libFuzzer entry point for the attribution engine and the renderers: the
 * input is read as a frame payload (column-delta records, docs/format.md),
 * the records are fed to the engine in that order (so out of order, with
 * any values), and the result is rendered as text, JSON and HTML. The
 * sanitizers and two invariants do the checking: each device's categories
 * add up to its window, and rendering succeeds. Built only with a compiler
 * that supports -fsanitize=fuzzer (clang):
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined \
 *     -Db_lundef=false && ninja -C build-fuzz tests/reports/fuzz_report
 *   build-fuzz/tests/reports/fuzz_report -max_total_time=60 */
#include <stdio.h>
#include <stdlib.h>

#include "attribute.h"
#include "codec.h"
#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gp_report_opts o = {0};
  o.window_ns = size && (data[0] & 1) ? 1000 : 0;
  gp_attr *a = gp_attr_new(&o);
  if (!a) return 0;
  struct gp_delta d;
  gp_delta_reset(&d);
  const uint8_t *p = data, *end = data + size;
  struct gpuphase_record rec;
  int rc;
  while (p < end && (rc = gp_decode_record(&p, end, &d, &rec)) >= 0)
    if (rc == 1 && gp_attr_feed(a, &rec) < 0) break;
  struct gp_proc_res *r = gp_attr_finish(a);
  gp_attr_free(a);
  if (!r) return 0;
  for (size_t i = 0; i < r->ndev; i++) {
    uint64_t sum = 0;
    for (int c = 0; c < GP_CAT_N; c++) sum += r->dev[i].bd.cat[c];
    if (sum != r->dev[i].window_ns) abort();
  }
  struct gp_proc_res *procs[1] = {r};
  struct gp_report_set set = {procs, 1, r};
  struct gp_render_opts ro = {0, 5};
  FILE *f = fopen("/dev/null", "w");
  if (f) {
    if (gp_render_text(f, &set, &ro) < 0 || gp_render_json(f, &set, &ro) < 0 ||
        gp_render_html(f, &set, &ro) < 0)
      abort();
    fclose(f);
  }
  gp_res_free(r);
  return 0;
}
