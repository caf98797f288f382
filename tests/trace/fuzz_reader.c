/* libFuzzer entry point for the reader: every input is read to the end in
 * file order and in time order, and also decoded as a raw frame payload
 * (a fuzzer rarely gets past zstd's checksum to reach the record decoder
 * otherwise); the sanitizers do the checking. Built only
 * with a compiler that supports -fsanitize=fuzzer (clang):
 *   CC=clang meson setup build-fuzz -Db_sanitize=address,undefined \
 *     -Db_lundef=false && ninja -C build-fuzz tests/trace/fuzz_reader
 *   build-fuzz/tests/trace/fuzz_reader -max_total_time=60 CORPUS_DIR */
#include <stddef.h>
#include <stdint.h>

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
  struct gp_delta d;
  gp_delta_reset(&d);
  const uint8_t *p = data, *end = data + size;
  struct gpuphase_record rec;
  while (p < end && gp_decode_record(&p, end, &d, &rec) >= 0)
    ;
  return 0;
}
