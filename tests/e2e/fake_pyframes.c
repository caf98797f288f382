/* A stand-in for preload/pyframes.c with fixed frames, linked into a test
 * build of the library (libgpuphase-pyfake.so) so that the Python path of
 * the call-site capture is tested without Python (test_stacks.py, python).
 *
 * On the thread that started recording, every capture has three frames,
 * innermost first: code 0x1000 unit 10, code 0x2000 unit 20 (ENTRY: the
 * first run ends), code 0x3000 unit 30 (ENTRY). The evaluation loop is
 * the program's stacks_fake_eval (found by name), so the first run is
 * placed inside its frame and the second, with no evaluation frame left,
 * outside the outermost native frame. Other threads have no Python.
 * With GP_FAKEPY_VARY=1 the innermost frame's unit grows by one at each
 * capture: every capture is a new stack (the table-full test). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_pyframes.h"
#include "gpuphase/trace_records.h"

static pthread_t python_thread;
static int started;
static int vary;
static uint32_t next_unit = 10;

int gp_py_start(void) {
  python_thread = pthread_self();
  started = 1;
  const char *v = getenv("GP_FAKEPY_VARY");
  vary = v && !strcmp(v, "1");
  return 1;
}

int gp_py_capture(struct gp_pyframe *out, int max) {
  if (!started || !pthread_equal(pthread_self(), python_thread) || max < 3)
    return 0;
  static const struct gp_pyframe f[3] = {
      {0x1000, 7, 10, 0},
      {0x2000, 7, 20, GPUPHASE_FRAME_ENTRY},
      {0x3000, 7, 30, GPUPHASE_FRAME_ENTRY}};
  memcpy(out, f, sizeof f);
  if (vary) out[0].unit = next_unit++;
  return 3;
}

int gp_py_describe(uint64_t code, struct gp_pycode_desc *d) {
  if (code != 0x1000 && code != 0x2000 && code != 0x3000) return -1;
  int k = (int)(code >> 12); /* 1, 2, 3 */
  snprintf(d->file, sizeof d->file, "/fake/train_%d.py", k);
  snprintf(d->name, sizeof d->name, "Model.step_%d", k);
  d->first_line = 100 * k;
  d->py_version = 0x030c00f0; /* 3.12.0 final */
  d->linetable_len = (uint32_t)k + 2;
  for (uint32_t i = 0; i < d->linetable_len; i++)
    d->linetable[i] = (uint8_t)(0xa0 + k * 16 + (int)i);
  return 0;
}

int gp_py_eval_ranges(uintptr_t *lo, uintptr_t *hi, int max) {
  void *f = dlsym(RTLD_DEFAULT, "stacks_fake_eval");
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!f || max < 1 ||
      !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
    return 0;
  lo[0] = (uintptr_t)f;
  hi[0] = (uintptr_t)f + sym->st_size;
  return 1;
}

void gp_py_after_fork(void) {
  started = 0; /* the child has no Python */
}
