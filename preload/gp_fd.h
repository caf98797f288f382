/* The recorder's descriptors stay off 0, 1 and 2.
 * A program that closed its standard input, output or error expects a read
 * of 0 or a write to 1 or 2 to fail (EBADF), or opens its own files there.
 * The kernel gives the lowest free number, so a descriptor the recorder
 * opened while one of them was closed would take it: the program would
 * then read our pipe or write into the trace file. Descriptors we open
 * ourselves are moved above 2 (gp_fd_high); around a library's set-up that
 * may open descriptors of its own (libunwind's pipe, NVML), the closed
 * ones among 0..2 are held by /dev/null for the length of the call
 * (gp_fd_std_hold / gp_fd_std_release). Header only. */
#ifndef GP_FD_H
#define GP_FD_H

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* fd itself when above 2 (or < 0: errno as the open left it); otherwise a
 * close-on-exec copy above 2, the low number closed; -1 if no copy could be
 * made (the low number closed all the same). */
static inline int gp_fd_high(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int saved = errno;
  close(fd);
  errno = saved;
  return high;
}

/* Opens /dev/null on each of 0, 1, 2 that is closed, in order, so that a
 * library call made next opens its descriptors above 2. Returns the set
 * held (bit n: descriptor n), for gp_fd_std_release. Open descriptors are
 * left as they are. */
static inline unsigned gp_fd_std_hold(void) {
  unsigned held = 0;
  int saved = errno;
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int got = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (got < 0) break;
    if (got != fd) { /* another thread took it meanwhile */
      close(got);
      continue;
    }
    held |= 1u << fd;
  }
  errno = saved;
  return held;
}

/* Closes the placeholders gp_fd_std_hold opened, each only if it is still
 * our /dev/null (close-on-exec, the null device): a number the program
 * replaced meanwhile is the program's. */
static inline void gp_fd_std_release(unsigned held) {
  if (!held) return;
  int saved = errno;
  struct stat null_st;
  int have_null = stat("/dev/null", &null_st) == 0;
  for (int fd = 0; fd < 3; fd++) {
    if (!(held & (1u << fd))) continue;
    struct stat st;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) && have_null &&
        fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
        st.st_rdev == null_st.st_rdev)
      close(fd);
  }
  errno = saved;
}

#endif
