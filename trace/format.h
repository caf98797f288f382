/* On-disk layout constants shared by the writer and the reader; the
 * authoritative description is docs/format.md. */
#ifndef GP_TRACE_FORMAT_H
#define GP_TRACE_FORMAT_H

#include <stdint.h>
#include <string.h>

#define GP_MAGIC "GPUPHASE"
#define GP_MAGIC_LEN 8
#define GP_BOM 0x01020304u
#define GP_BOM_SWAPPED 0x04030201u

/* Header byte offsets (version 1). */
enum {
  GP_HO_VERSION = 8,
  GP_HO_MIN_READER = 10,
  GP_HO_BOM = 12,
  GP_HO_HEADER_SIZE = 16,
  GP_HO_FLAGS = 20,
  GP_HO_PID = 24,
  GP_HO_PPID = 32,
  GP_HO_RANK = 40,
  GP_HO_LOCAL_RANK = 48,
  GP_HO_START_MONO = 56,
  GP_HO_START_REAL = 64,
  GP_HO_STRINGS = 72, /* host, cmdline, clock, version_str: u32 len + bytes */
  GP_HDR_MIN = GP_HO_STRINGS + 4 * 4
};
/* Version 2 appends, after version_str, the run_id string (u32 len +
 * bytes) and step_items (u64). Their presence is told by header_size, not
 * by the version: a version-1 header ends after version_str. */
#define GP_HDR_STRINGS_V1 4
/* Readers refuse larger headers as corrupt; writers clamp each header
 * string to GP_HDR_STRING_MAX so that they stay below. */
#define GP_HDR_MAX (16u << 20)
#define GP_HDR_STRING_MAX (4u << 20)
/* A run id is a short token; writers cut longer ones here (the same cut
 * in every process of a run keeps them equal). */
#define GP_HDR_RUN_ID_MAX 256u

/* Frame header byte offsets. */
enum {
  GP_FO_TYPE = 4,
  GP_FO_SOURCE = 8,
  GP_FO_CSIZE = 12,
  GP_FO_USIZE = 16,
  GP_FRAME_HDR = 20
};
#define GP_FRAME_MAGIC "GPFR"
enum { GP_FRAME_RECORDS = 1, GP_FRAME_SUMMARY = 2 };
/* Unknown frame types from here up may be skipped by a reader; unknown
 * types below are corruption. */
#define GP_FRAME_OPTIONAL_MIN 0x80
/* Hard cap on both sizes of a frame; readers reject larger claims. */
#define GP_FRAME_MAX (64u << 20)
/* Writers keep uncompressed frames below this, so that the compressed
 * size (at most slightly larger) also stays below GP_FRAME_MAX. */
#define GP_FRAME_WRITE_MAX (63u << 20)
#define GP_FRAME_DEFAULT (256u << 10)
#define GP_MAX_SOURCES 65536u

static inline uint16_t gp_bswap16(uint16_t v) {
  return (uint16_t)((v >> 8) | (v << 8));
}

static inline uint16_t gp_load16(const uint8_t *p, int swap) {
  uint16_t v;
  memcpy(&v, p, 2);
  return swap ? gp_bswap16(v) : v;
}
static inline uint32_t gp_load32(const uint8_t *p, int swap) {
  uint32_t v;
  memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}
static inline uint64_t gp_load64(const uint8_t *p, int swap) {
  uint64_t v;
  memcpy(&v, p, 8);
  return swap ? __builtin_bswap64(v) : v;
}
static inline void gp_store16(uint8_t *p, uint16_t v) {
  memcpy(p, &v, 2);
}
static inline void gp_store32(uint8_t *p, uint32_t v) {
  memcpy(p, &v, 4);
}
static inline void gp_store64(uint8_t *p, uint64_t v) {
  memcpy(p, &v, 8);
}

#endif
