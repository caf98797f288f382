/* Writes a small trace with fixed contents through the trace writer of the
 * tree it is compiled against (used once, with an old commit's writer, to
 * make tests/trace/golden-v1.gph .. -v4.gph; test_golden.c lists the
 * contents by hand). Built by hand, not by meson: gcc [-DV2 [-DV3 [-DV4]]] -Iinclude
 * -Itrace -Ibuild mkgolden.c trace/codec.c trace/writer.c trace/strtab.c
 * (trace/reader.c trace/sorted.c from format 2 on) -lzstd. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include "writer.h"

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  struct gp_process_info in = {.host = "goldhost", .pid = 77, .ppid = 1,
                               .rank = -1, .local_rank = -1,
                               .cmdline = "./train --golden",
                               .start_mono_ns = 5000, .start_real_ns = 1700000000000000000ull,
                               .clock = "clock_gettime", .flags = 0
#ifdef V2
                               , .run_id = "run42", .step_items = 8
#endif
  };
  gp_writer *w = gp_writer_open(fd, &in, 0, NULL);
  struct gpuphase_record r;
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_THREAD;
  r.u.thread.thread = 0, r.u.thread.tid = 77;
  r.u.thread.name = gp_writer_intern(w, "main", 4);
  gp_writer_add(w, 0, &r);
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_API_DEF;
  r.u.api_def.api = 3, r.u.api_def.cls = 8;
  r.u.api_def.name = gp_writer_intern(w, "cudaDeviceSynchronize", 21);
  gp_writer_add(w, 0, &r);
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_DEVICE;
  r.u.device.device = 0, r.u.device.sms = 108, r.u.device.cc_major = 8;
  r.u.device.name = gp_writer_intern(w, "SimGPU", 6);
#ifdef V2
  r.u.device.driver_version = 13000, r.u.device.runtime_version = 12080;
#endif
  gp_writer_add(w, 0, &r);
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_KERNEL;
  r.u.kernel.device = 0, r.u.kernel.stream = 7, r.u.kernel.corr = 5;
  r.u.kernel.start = 10000, r.u.kernel.end = 12500;
  r.u.kernel.name = gp_writer_intern(w, "gemm", 4);
  r.u.kernel.grid_x = 64, r.u.kernel.block_x = 256;
  gp_writer_add(w, 2, &r);
#ifdef V3
  /* one module and a two-frame stack (node 2 inside node 1) */
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_MODULE;
  r.u.module.module = 1, r.u.module.base = 0x400000, r.u.module.size = 0x5000;
  r.u.module.path = gp_writer_intern(w, "/opt/train", 10);
  r.u.module.build_id = (gpuphase_blob){(const uint8_t *)"\xab\xcd", 2};
  r.u.module.start = 5000;
  gp_writer_add(w, 0, &r);
  for (int i = 1; i <= 2; i++) {
    memset(&r, 0, sizeof r);
    r.kind = GPUPHASE_REC_FRAME;
    r.u.frame.node = (uint64_t)i, r.u.frame.parent = (uint64_t)i - 1;
    r.u.frame.kind = GPUPHASE_FRAME_NATIVE, r.u.frame.module = 1;
    r.u.frame.pc = 0x1000 * (uint64_t)i;
    gp_writer_add(w, 0, &r);
  }
#endif
  for (int i = 0; i < 2; i++) {
    memset(&r, 0, sizeof r);
    r.kind = GPUPHASE_REC_API;
#ifdef V3
    r.u.api.stack = i == 0 ? 2 : 0;
#endif
    r.u.api.thread = 0, r.u.api.api = 3, r.u.api.device = 0;
    r.u.api.start = 9000 + 4000 * (uint64_t)i;
    r.u.api.end = r.u.api.start + 3500, r.u.api.corr = 5 + (uint64_t)i;
    gp_writer_add(w, 1, &r);
  }
#ifdef V2
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_ITEMS;
  r.u.items.thread = 0, r.u.items.start = 17000, r.u.items.count = 32;
  gp_writer_add(w, 1, &r);
#endif
#ifdef V4
  /* two more calls that repeat the last but for their times and corr, and
   * the measured counters: a metric, its sampler, two samples */
  for (int i = 0; i < 2; i++) {
    memset(&r, 0, sizeof r);
    r.kind = GPUPHASE_REC_API;
    r.u.api.thread = 0, r.u.api.api = 3, r.u.api.device = 0;
    r.u.api.start = 17500 + 4000 * (uint64_t)i;
    r.u.api.end = r.u.api.start + 3500, r.u.api.corr = 7 + (uint64_t)i;
    gp_writer_add(w, 1, &r);
  }
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_METRIC;
  r.u.metric.metric = 1, r.u.metric.device = 0, r.u.metric.source = 1;
  r.u.metric.name = gp_writer_intern(w, "gpu_util", 8);
  r.u.metric.scale = 1;
  gp_writer_add(w, 0, &r);
  memset(&r, 0, sizeof r);
  r.kind = GPUPHASE_REC_SAMPLER;
  r.u.sampler.start = 6000, r.u.sampler.device = 0, r.u.sampler.source = 1;
  gp_writer_add(w, 3, &r);
  for (int i = 0; i < 2; i++) {
    memset(&r, 0, sizeof r);
    r.kind = GPUPHASE_REC_SAMPLE;
    r.u.sample.metric = 1, r.u.sample.start = 8000 + 10000 * (uint64_t)i;
    r.u.sample.end = r.u.sample.start + 10000, r.u.sample.value = 40 + 50 * i;
    gp_writer_add(w, 3, &r);
  }
#endif
  struct gpuphase_summary s = {.events = 0, .lost = 0, .flags = 0, .end = 20000};
  s.events = gp_writer_events(w);
  return gp_writer_close(w, &s) == GPUPHASE_OK ? 0 : 1;
}
