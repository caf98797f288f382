/* A CUPTI that is slow to load, for the tests that signal a program while
 * recording starts (test_record.py signal_starting): loaded through
 * GPUPHASE_CUPTI_LIB, it brings the simulated CUPTI in as its dependency
 * (found through it by dlsym) and its constructor sleeps
 * GP_SLOWCUPTI_MS (default 2000) first, as a real CUPTI's loading and
 * initialisation can take seconds. With GP_SLOWCUPTI_FDS=N it then opens
 * /dev/zero N times and keeps the descriptors, as a library may keep a
 * file or a pipe of its own (test_record.py closed_std: none of them may
 * take a standard descriptor the program closed). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>

/* A reference to the simulated CUPTI, so that the linker keeps it as this
 * library's dependency (it drops a library none of whose symbols is used):
 * loaded through this one, CUPTI's functions are then found by dlsym. */
int cuptiGetVersion(unsigned *version);
int (*const gp_slowcupti_dep)(unsigned *) = cuptiGetVersion;

__attribute__((constructor)) static void slow_load(void) {
  const char *v = getenv("GP_SLOWCUPTI_MS");
  long ms = v ? atol(v) : 2000;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  int saved = errno;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  const char *fds = getenv("GP_SLOWCUPTI_FDS");
  for (int i = 0, n = fds ? atoi(fds) : 0; i < n; i++)
    (void)open("/dev/zero", O_RDWR); /* kept for the process's life */
  errno = saved;
}
