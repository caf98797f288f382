/* Settings read from the environment in the constructor, and the one way
 * the library speaks: a warning line on stderr. Used by every other file
 * of preload/; uses none of them. */
#ifndef GP_SETTINGS_H
#define GP_SETTINGS_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>

/* GPUPHASE_OUTPUT's default, and the name a directory given as the
 * pattern gets inside it */
#define GP_OUTPUT_DEFAULT "gpuphase-%h-%p.gph"

struct gp_config {
  char output[4096]; /* pattern */
  size_t ring_bytes;
  unsigned flush_ms;
  unsigned poll_ms;
  int cupti;        /* 0: never load CUPTI */
  char cupti_lib[4096];
  int quiet;
  char run_id[128];    /* GPUPHASE_RUN_ID, made up when unset */
  uint64_t step_items; /* GPUPHASE_STEP_ITEMS; 0 unset */
  int stacks;          /* GPUPHASE_STACKS: GP_STK_* of gp_stacks.h */
  int stacks_set;      /* GPUPHASE_STACKS was given */
  unsigned sample_ms;  /* GPUPHASE_SAMPLE_MS: NVML sampling period, 0 off */
  int nvml;            /* GPUPHASE_NVML: 0 never loads NVML */
};
extern struct gp_config gp_cfg;

/* Reads every GPUPHASE_* setting into gp_cfg (constructor only). */
void gp_settings_read(void);
/* Makes a run id where none was given and exports it to children. */
void gp_settings_run_id(void);

/* One line "gpuphase: ..." on stderr unless GPUPHASE_QUIET=1. */
void gp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Around the library's own writes on a thread of the program (the trace's
 * header at the first CUDA call, a warning, the manifest): SIGPIPE and
 * SIGXFSZ, which such a write raises on its thread (standard error a pipe
 * with no reader, RLIMIT_FSIZE), are blocked, and one they raised is
 * taken back, so that the program does not die of the library's output.
 * One pending before is left as it was. errno is kept. */
struct gp_io_quiet {
  sigset_t old, before;
};
void gp_io_quiet_begin(struct gp_io_quiet *q);
void gp_io_quiet_end(struct gp_io_quiet *q);

#endif
