/* The Python frame reader of the shim (preload/pyframes.c) on its own, for
 * test_pyframes.py: Python calls these through ctypes.CDLL, which releases
 * the GIL during the call as PyTorch's bindings do. Each capture appends to
 * a file: "capture LABEL N" then one line per frame, innermost first:
 *   FILE:LINE (QUALNAME) [entry]
 * Built twice: normally, and with GP_PYFRAMES_TEST_SKEW (a wrong layout the
 * reader's check must catch). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gp_pyframes.h"
#include "pyline.h"

#define EXPORT __attribute__((visibility("default")))

static struct gp_pycode_desc desc;

EXPORT int gp_test_start(void) { return gp_py_start(); }

/* Frames now, without writing anything (how the test waits for the
 * layout check, which runs at the interpreter's next pending-call point). */
EXPORT int gp_test_count(void) {
  struct gp_pyframe f[256];
  return gp_py_capture(f, 256);
}

static int capture_to(const char *path, const char *label, int max) {
  struct gp_pyframe f[256];
  int n = gp_py_capture(f, max < 256 ? max : 256);
  FILE *o = fopen(path, "a");
  if (!o)
    return -1;
  fprintf(o, "capture %s %d\n", label, n);
  for (int i = 0; i < n; i++) {
    if (gp_py_describe(f[i].code, &desc)) {
      fprintf(o, "? unreadable code object\n");
      continue;
    }
    long long line = (long long)gp_pyline(desc.py_version, desc.linetable,
                                          desc.linetable_len, desc.first_line,
                                          f[i].unit);
    fprintf(o, "%s:%lld (%s)%s\n", desc.file, line, desc.name,
            (f[i].flags & 1u) ? " entry" : "");
  }
  fclose(o);
  return n;
}

EXPORT int gp_test_capture(const char *path, const char *label) {
  return capture_to(path, label, 256);
}

/* At most max frames (the stack cut short). */
EXPORT int gp_test_capture_max(const char *path, const char *label, int max) {
  return capture_to(path, label, max);
}

struct targ {
  const char *path, *label;
  int n;
};
static void *thread_main(void *p) {
  struct targ *a = p;
  a->n = capture_to(a->path, a->label, 256);
  return NULL;
}

/* From a thread created here, which never ran Python. */
EXPORT int gp_test_capture_cthread(const char *path, const char *label) {
  pthread_t t;
  struct targ a = {path, label, -2};
  if (pthread_create(&t, NULL, thread_main, &a))
    return -3;
  pthread_join(t, NULL);
  return a.n;
}

/* In a forked child, as the shim's fork handler does. */
EXPORT void gp_test_after_fork(void) { gp_py_after_fork(); }

/* 1 when gp_py_eval_ranges gives one non-empty range that starts at the
 * interpreter's _PyEval_EvalFrameDefault (found by the test with ctypes). */
EXPORT int gp_test_eval_range(unsigned long long want_lo) {
  uintptr_t lo[4], hi[4];
  int n = gp_py_eval_ranges(lo, hi, 4);
  return n >= 1 && lo[0] == want_lo && hi[0] > lo[0] && hi[0] - lo[0] < (1u << 24);
}
