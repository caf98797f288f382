/* libFuzzer entry point for the reader: every input is read to the end in
 * file order and in time order, and also decoded as a raw frame payload
 * (a fuzzer rarely gets past zstd's checksum to reach the record decoder
 * otherwise) by both decoders, which must agree; the sanitizers do the
 * rest of the checking. Built only
 * with a compiler that supports -fsanitize=fuzzer (clang):
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined \
 *     -Db_lundef=false && ninja -C build-fuzz tests/trace/fuzz_reader
 *   build-fuzz/tests/trace/fuzz_reader -max_total_time=60 CORPUS_DIR */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "reader_ext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int mode = 0; mode < 2; mode++) {
    int err;
    gpuphase_reader *r = gp_reader_open_mem(data, size, mode, &err, NULL, 0);
    struct gpuphase_record rec;
    while (r && gpuphase_reader_next(r, &rec) == 1)
      (void)gpuphase_reader_string(r, rec.u.string.id);
    gpuphase_reader_close(r);
  }
  for (int mode = 0; mode < 2; mode++) { /* kernels and samples only: the
                                            other records passed over */
    int err;
    gpuphase_reader *r = gp_reader_open_mem(data, size, mode, &err, NULL, 0);
    const uint64_t keep = (uint64_t)1 << GPUPHASE_REC_KERNEL |
                          (uint64_t)1 << GPUPHASE_REC_SAMPLE;
    struct gpuphase_record rec;
    if (r && gp_reader_only(r, keep) == 0)
      while (gpuphase_reader_next(r, &rec) == 1)
        if (!(keep >> rec.kind & 1) && rec.kind != GPUPHASE_REC_STRING)
          abort();
    gpuphase_reader_close(r);
  }
  /* The input as a raw frame payload, through both decoders: the reader's
   * (gp_decode_next, which needs GP_DECODE_PAD readable bytes past the end)
   * must accept, reject and decode exactly what the reference does. */
  uint8_t *buf = malloc(size + GP_DECODE_PAD);
  if (!buf) return 0;
  memcpy(buf, data, size);
  memset(buf + size, 0, GP_DECODE_PAD);
  struct gp_delta d;
  gp_delta_reset(&d);
  static struct gp_dstate st;
  gp_dstate_reset(&st);
  const uint8_t *p = buf, *q = buf, *end = buf + size;
  struct gpuphase_record rec;
  while (p < end) {
    int a = gp_decode_record(&p, end, &d, &rec);
    uint64_t start;
    int b = gp_decode_next(&q, end, &st, &start);
    if ((a < 0) != (b < 0)) abort();
    if (a < 0) break;
    if (p != q || (a == 1) != (b > 0)) abort();
    if (a == 1 && (uint32_t)b != rec.kind) abort();
  }
  /* gp_decode_kept passes over what it does not keep from the prefixes
   * alone: wherever gp_decode_next accepts a record, it accepts it too and
   * ends at the same place (the kinds it keeps decoded the same). */
  static struct gp_dstate kst;
  gp_dstate_reset(&kst);
  gp_dstate_reset(&st);
  const uint64_t keep = (uint64_t)1 << GPUPHASE_REC_KERNEL |
                        (uint64_t)1 << GPUPHASE_REC_API;
  p = q = buf;
  while (p < end) {
    uint64_t s1, s2;
    int b = gp_decode_next(&q, end, &st, &s1);
    if (b < 0) break;
    int c = gp_decode_kept(&p, end, &kst, &s2, keep);
    if (c < 0 || p != q) abort();
    if (c > 0 && (c != b || !(keep >> c & 1) ||
                  memcmp(&st.last[c], &kst.last[c], sizeof st.last[c])))
      abort();
  }
  free(buf);
  return 0;
}
