/* A CUPTI that is slow to load, for the tests that signal a program while
 * recording starts (test_record.py signal_starting): loaded through
 * GPUPHASE_CUPTI_LIB, it brings the simulated CUPTI in as its dependency
 * (found through it by dlsym) and its constructor sleeps
 * GP_SLOWCUPTI_MS (default 2000) first, as a real CUPTI's loading and
 * initialisation can take seconds. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

__attribute__((constructor)) static void slow_load(void) {
  const char *v = getenv("GP_SLOWCUPTI_MS");
  long ms = v ? atol(v) : 2000;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  int saved = errno;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  errno = saved;
}
