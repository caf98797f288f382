/* The Python frame reader's interface (preload/pyframes.c): what the call
 * site capture (stacks.c) asks of it. stacks.c refers to these functions
 * weakly, so that the library builds and runs without the reader (capture
 * then has no Python frames). */
#ifndef GP_PYFRAMES_H
#define GP_PYFRAMES_H

#include <stdint.h>

struct gp_pyframe {
  uint64_t code;   /* address of the code object */
  uint64_t tag;    /* changes when a code object's address is reused */
  uint32_t unit;   /* 2-byte code unit being executed */
  uint32_t flags;  /* GPUPHASE_FRAME_ENTRY on the outermost frame of a run */
};
struct gp_pycode_desc {
  char file[512], name[256];   /* UTF-8, NUL-terminated, truncated to fit */
  int64_t first_line;
  uint32_t py_version;         /* PY_VERSION_HEX */
  uint32_t linetable_len;      /* bytes used in linetable */
  uint8_t linetable[16384];    /* truncated to fit (lines past it unknown) */
};
/* Once, from the lazy start-up (no GIL needed): 1 when Python frames can
 * be captured in this process, 0 when not (no interpreter, or unsupported:
 * one stderr line then said why). */
int gp_py_start(void);
/* The calling thread's Python frames, innermost first, at most max; 0 when
 * the thread has none or capture is off. No allocation, lock or system
 * call; never faults the process. */
int gp_py_capture(struct gp_pyframe *out, int max);
/* A code object met for the first time by this thread, described while
 * the calling thread's frames keep it alive: 0, or -1 when unreadable. */
int gp_py_describe(uint64_t code, struct gp_pycode_desc *d);
/* Native address range(s) of the evaluation-loop function whose frames
 * run Python frames: up to max [lo, hi) pairs, their count (0: unknown). */
int gp_py_eval_ranges(uintptr_t *lo, uintptr_t *hi, int max);
/* In a forked child. */
void gp_py_after_fork(void);

#endif
