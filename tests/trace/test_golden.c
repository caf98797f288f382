/* Old traces stay readable: golden-v1.gph was written by the format-1
 * writer (commit 7deb90b^), golden-v2.gph by the format-2 writer,
 * golden-v3.gph by the format-3 writer (commit e9c1c91) and golden-v4.gph
 * by the format-4 writer (commit 058e290), all from
 * mkgolden.c; the expected contents below are what mkgolden.c put in,
 * listed by hand, with the defaults docs/format.md section 7 gives for
 * fields a file predates (run_id "", step_items 0, DEVICE versions 0, no
 * ITEMS, API.stack 0). Read in file order and in time order. */
#include <string.h>

#include "tt.h"

struct want {
  int version;
  const char *run_id;
  uint64_t step_items, driver, runtime;
  int items;
  int stacks; /* format 3: a MODULE, two FRAMEs, the first API's stack */
  int counters; /* format 4: two more API calls, a METRIC, a SAMPLER and
                   two SAMPLEs */
};

static void check_file(const char *dir, const char *name,
                       const struct want *w, int sorted) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int err = 0;
  gpuphase_reader *r = sorted ? gpuphase_reader_open_sorted(path, &err)
                              : gpuphase_reader_open(path, &err);
  CHECK(r != NULL);
  if (!r) return;
  const struct gpuphase_header *h = gpuphase_reader_header(r);
  CHECK_EQ_U(h->version, w->version);
  CHECK_EQ_U(h->min_reader, 1);
  CHECK_EQ_U(h->pid, 77);
  CHECK(h->rank == -1 && h->local_rank == -1);
  CHECK_EQ_U(h->start_mono_ns, 5000);
  CHECK(!strcmp(h->host, "goldhost"));
  CHECK(!strcmp(h->cmdline, "./train --golden"));
  CHECK(!strcmp(h->clock, "clock_gettime"));
  CHECK(!strcmp(h->run_id, w->run_id));
  CHECK_EQ_U(h->step_items, w->step_items);
  struct gpuphase_record rec[32];
  size_t n = 0;
  CHECK(tt_read_all(r, rec, 32, &n) == 0);
  gpuphase_reader_close(r);
  /* 4 strings, thread, api_def, device, kernel, 2 api, (items), summary;
   * (a fifth string, module, 2 frames); (a string, 2 api, metric, sampler,
   * 2 samples) */
  CHECK_EQ_U(n, 11 + (size_t)w->items + 4 * (size_t)w->stacks +
                    7 * (size_t)w->counters);
  size_t samples = 0;
  size_t counts[GPUPHASE_REC_MAX] = {0};
  uint64_t api_start[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    const struct gpuphase_record *x = &rec[i];
    if (x->kind < GPUPHASE_REC_MAX) counts[x->kind]++;
    switch (x->kind) {
    case GPUPHASE_REC_THREAD:
      CHECK(x->u.thread.thread == 0 && x->u.thread.tid == 77);
      break;
    case GPUPHASE_REC_API_DEF:
      CHECK(x->u.api_def.api == 3 && x->u.api_def.cls == GPUPHASE_API_SYNC);
      break;
    case GPUPHASE_REC_DEVICE:
      CHECK(x->u.device.sms == 108 && x->u.device.cc_major == 8);
      CHECK_EQ_U(x->u.device.driver_version, w->driver);
      CHECK_EQ_U(x->u.device.runtime_version, w->runtime);
      break;
    case GPUPHASE_REC_KERNEL:
      CHECK(x->u.kernel.start == 10000 && x->u.kernel.end == 12500);
      CHECK(x->u.kernel.grid_x == 64 && x->u.kernel.block_x == 256);
      CHECK(x->u.kernel.stream == 7 && x->u.kernel.corr == 5);
      break;
    case GPUPHASE_REC_API: {
      size_t k = counts[GPUPHASE_REC_API] - 1;
      if (k < 4) api_start[k] = x->u.api.start;
      CHECK_EQ_U(x->u.api.end - x->u.api.start, 3500);
      CHECK_EQ_U(x->u.api.corr, 5 + k);
      /* 0 in files that predate format 3 */
      CHECK_EQ_U(x->u.api.stack, k == 0 && w->stacks ? 2 : 0);
      break;
    }
    case GPUPHASE_REC_MODULE:
      CHECK(x->u.module.module == 1 && x->u.module.base == 0x400000);
      CHECK(x->u.module.size == 0x5000 && x->u.module.start == 5000);
      CHECK(x->u.module.build_id.len == 2 &&
            !memcmp(x->u.module.build_id.data, "\xab\xcd", 2));
      CHECK_EQ_U(x->u.module.unloaded, 0);
      break;
    case GPUPHASE_REC_FRAME:
      CHECK(x->u.frame.kind == GPUPHASE_FRAME_NATIVE && x->u.frame.module == 1);
      CHECK(x->u.frame.pc == 0x1000 * x->u.frame.node);
      CHECK_EQ_U(x->u.frame.parent, x->u.frame.node - 1);
      /* metadata comes before the records that refer to it */
      CHECK_EQ_U(counts[GPUPHASE_REC_API], 0);
      break;
    case GPUPHASE_REC_METRIC:
      CHECK(x->u.metric.metric == 1 && x->u.metric.device == 0);
      CHECK(x->u.metric.source == 1 && x->u.metric.scale == 1);
      CHECK(x->u.metric.name != 0 && x->u.metric.unit == 0);
      break;
    case GPUPHASE_REC_SAMPLER:
      CHECK(x->u.sampler.start == 6000 && x->u.sampler.device == 0);
      CHECK(x->u.sampler.source == 1 && x->u.sampler.status == 0);
      break;
    case GPUPHASE_REC_SAMPLE:
      CHECK(x->u.sample.metric == 1);
      CHECK_EQ_U(x->u.sample.start, 8000 + 10000 * samples);
      CHECK_EQ_U(x->u.sample.end, x->u.sample.start + 10000);
      CHECK(x->u.sample.value == 40 + 50 * (int64_t)samples);
      samples++;
      break;
    case GPUPHASE_REC_ITEMS:
      CHECK(x->u.items.start == 17000 && x->u.items.count == 32);
      break;
    case GPUPHASE_REC_SUMMARY:
      CHECK_EQ_U(x->u.summary.end, 20000);
      CHECK_EQ_U(x->u.summary.events,
                 6 + (uint64_t)w->items + 3 * (uint64_t)w->stacks +
                     6 * (uint64_t)w->counters);
      CHECK(i == n - 1);
      break;
    case GPUPHASE_REC_STRING: break;
    default: CHECK(!"unexpected kind");
    }
  }
  CHECK_EQ_U(counts[GPUPHASE_REC_STRING],
             4 + (size_t)w->stacks + (size_t)w->counters);
  CHECK_EQ_U(counts[GPUPHASE_REC_API], 2 + 2 * (size_t)w->counters);
  CHECK_EQ_U(counts[GPUPHASE_REC_METRIC], (size_t)w->counters);
  CHECK_EQ_U(counts[GPUPHASE_REC_SAMPLER], (size_t)w->counters);
  CHECK_EQ_U(samples, 2 * (size_t)w->counters);
  CHECK_EQ_U(counts[GPUPHASE_REC_ITEMS], w->items);
  CHECK_EQ_U(counts[GPUPHASE_REC_MODULE], (size_t)w->stacks);
  CHECK_EQ_U(counts[GPUPHASE_REC_FRAME], 2 * (size_t)w->stacks);
  CHECK_EQ_U(counts[GPUPHASE_REC_PYCODE], 0);
  CHECK_EQ_U(api_start[0], 9000);
  CHECK_EQ_U(api_start[1], 13000);
  if (w->counters) {
    CHECK_EQ_U(api_start[2], 17500);
    CHECK_EQ_U(api_start[3], 21500);
  }
  for (size_t i = 0; i < n; i++) tt_rec_free(&rec[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_golden DIR (holding golden-v1.gph .. golden-v4.gph)\n");
    return 2;
  }
  const struct want v1 = {1, "", 0, 0, 0, 0, 0, 0};
  const struct want v2 = {2, "run42", 8, 13000, 12080, 1, 0, 0};
  const struct want v3 = {3, "run42", 8, 13000, 12080, 1, 1, 0};
  const struct want v4 = {4, "run42", 8, 13000, 12080, 1, 1, 1};
  for (int sorted = 0; sorted < 2; sorted++) {
    check_file(argv[1], "golden-v1.gph", &v1, sorted);
    check_file(argv[1], "golden-v2.gph", &v2, sorted);
    check_file(argv[1], "golden-v3.gph", &v3, sorted);
    check_file(argv[1], "golden-v4.gph", &v4, sorted);
  }
  return tt_done("trace-golden");
}
