/* Makes the start of a trace slow between the file's creation and the
 * writer thread's, for the test that signals a program there
 * (test_record.py signal_opening). Preloaded ahead of libgpuphase.so, its
 * fallocate() sleeps GP_SLOWRESERVE_MS (default 2000), a signal or not,
 * after the first call that keeps the size (the trace file's reserve,
 * made as soon as the file exists), and says so on stderr; the window,
 * microseconds otherwise, becomes long enough to hit. Every call goes to
 * the C library's. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*fallocate_fn)(int, int, off_t, off_t);
static atomic_int slept;

static int slow(const char *sym, int fd, int mode, off_t off, off_t len) {
  fallocate_fn real = (fallocate_fn)dlsym(RTLD_NEXT, sym);
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int r = real(fd, mode, off, len);
  if (mode != FALLOC_FL_KEEP_SIZE || atomic_exchange(&slept, 1)) return r;
  int saved = errno;
  static const char msg[] = "slowreserve: sleeping after the reserve\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  const char *v = getenv("GP_SLOWRESERVE_MS");
  long ms = v ? atol(v) : 2000;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  errno = saved;
  return r;
}

/* built with 64-bit offsets, as the shim is: this is fallocate64, the
 * symbol both call (the same function on 64-bit hosts) */
int fallocate(int fd, int mode, off_t off, off_t len) {
  return slow("fallocate64", fd, mode, off, len);
}
