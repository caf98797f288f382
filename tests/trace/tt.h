/* Helpers shared by the trace tests: checks, a deterministic PRNG, temp
 * files, record comparison and an independent walk over a file's frames
 * written from docs/format.md (it does not use the reader). */
#ifndef TT_H
#define TT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpuphase/trace.h"
#include "writer.h"

extern int tt_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      tt_failures++;                                                           \
    }                                                                          \
  } while (0)

#define CHECK_EQ_U(a, b)                                                       \
  do {                                                                         \
    unsigned long long a_ = (unsigned long long)(a),                           \
                       b_ = (unsigned long long)(b);                           \
    if (a_ != b_) {                                                            \
      fprintf(stderr, "%s:%d: %s = %llu, expected %s = %llu\n", __FILE__,      \
              __LINE__, #a, a_, #b, b_);                                       \
      tt_failures++;                                                           \
    }                                                                          \
  } while (0)

/* Exit status for main(): prints a verdict. */
int tt_done(const char *name);

/* xorshift64*: fixed seeds make every run test the same inputs. */
uint64_t tt_rand(uint64_t *state);

/* A fresh path under $TMPDIR (or /tmp); removed by tt_cleanup. */
const char *tt_tmpfile(const char *tag);
void tt_cleanup(void);

/* Process info with fixed, recognisable values. */
struct gp_process_info tt_info(void);

/* Field-by-field equality (blobs by content); prints the first
 * difference when verbose. */
int tt_rec_equal(const struct gpuphase_record *a,
                 const struct gpuphase_record *b, int verbose);

/* A deep copy of a record (blobs copied), for expectations. */
struct gpuphase_record tt_rec_copy(const struct gpuphase_record *r);
void tt_rec_free(struct gpuphase_record *r);

/* Reads the file into memory; *len receives its size. */
uint8_t *tt_slurp(const char *path, size_t *len);
void tt_write_file(const char *path, const void *data, size_t len);

/* One frame as the format document lays it out. */
struct tt_frame {
  uint64_t off, end; /* header offset, offset after the payload */
  uint32_t type, source, csize, usize;
  uint32_t nrecords; /* records in the payload, by length prefixes (a
                      * repeat record: its tag and two varints) */
};
/* Walks the frames of a native-order file; returns the number found (at
 * most max) and the header size in *hdr_size. */
size_t tt_frames(const uint8_t *file, size_t len, uint32_t *hdr_size,
                 struct tt_frame *out, size_t max);

/* Reads a whole trace: returns the last next() result (0 or an error) and
 * stores at most max records (deep copies) and their count. */
int tt_read_all(gpuphase_reader *r, struct gpuphase_record *out, size_t max,
                size_t *count);

/* Bytes of a varint of v. */
size_t tt_varint_len(uint64_t v);
/* Unknown records (kind 100) of zeros filling [p, p + n), n >= 2. */
void tt_put_padding(uint8_t *p, size_t n);

#endif
