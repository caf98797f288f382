/* Naming, creating and closing the trace file. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gp_fd.h"
#include "gp_output.h"
#include "gp_settings.h"
#include "gp_shim.h"

static void append(char *out, size_t cap, size_t *n, const char *s) {
  size_t len = strlen(s);
  if (*n + len >= cap) len = cap - 1 - *n;
  memcpy(out + *n, s, len);
  *n += len;
  out[*n] = 0;
}

static long env_rank(const char *const *names) {
  for (; *names; names++) {
    const char *v = getenv(*names);
    char *end;
    if (v && *v) {
      long x = strtol(v, &end, 10);
      if (!*end && x >= 0) return x;
    }
  }
  return -1;
}

static const char *const rank_vars[] = {"RANK", "SLURM_PROCID",
                                        "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                        NULL};
static const char *const local_rank_vars[] = {
    "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID", NULL};

/* One %-directive (p points at the character after '%'); returns the last
 * character it used. */
static const char *expand_one(const char *p, char *out, size_t cap,
                              size_t *n) {
  char tmp[256];
  switch (*p) {
  case 'p':
    snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
    append(out, cap, n, tmp);
    break;
  case 'h':
    if (gethostname(tmp, sizeof tmp) != 0) snprintf(tmp, sizeof tmp, "host");
    tmp[sizeof tmp - 1] = 0;
    append(out, cap, n, tmp);
    break;
  case 'r': {
    long r = env_rank(rank_vars);
    snprintf(tmp, sizeof tmp, "%ld", r < 0 ? 0 : r);
    append(out, cap, n, tmp);
    break;
  }
  case 'q': {
    const char *close = p[1] == '{' ? strchr(p + 2, '}') : NULL;
    if (!close || (size_t)(close - p - 2) >= sizeof tmp) {
      append(out, cap, n, "%q");
      break;
    }
    memcpy(tmp, p + 2, (size_t)(close - p - 2));
    tmp[close - p - 2] = 0;
    const char *v = getenv(tmp);
    append(out, cap, n, v ? v : "");
    return close;
  }
  case '%': append(out, cap, n, "%"); break;
  default: {
    char c[3] = {'%', *p, 0};
    append(out, cap, n, c);
  }
  }
  return p;
}

void gp_expand_pattern(const char *pat, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (const char *p = pat; *p && n + 1 < cap; p++) {
    if (*p != '%' || !p[1]) {
      char c[2] = {*p, 0};
      append(out, cap, &n, c);
      continue;
    }
    p = expand_one(p + 1, out, cap, &n);
  }
}

/* Never overwrite: an exec'd program keeps the pid, a rerun the name. */
static int open_unique(const char *base, char *path, size_t cap) {
  snprintf(path, cap, "%s", base);
  for (int i = 1; i < 1000; i++) {
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return gp_fd_high(fd);
    size_t len = strlen(base);
    int k;
    if (len > 4 && strcmp(base + len - 4, ".gph") == 0)
      k = snprintf(path, cap, "%.*s.%d.gph", (int)(len - 4), base, i);
    else
      k = snprintf(path, cap, "%s.%d", base, i);
    if (k < 0 || (size_t)k >= cap) break; /* no room for a suffix */
  }
  errno = EEXIST;
  return -1;
}

static void read_cmdline(char *out, size_t cap) {
  out[0] = 0;
  int fd = gp_fd_high(open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return;
  ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n <= 0) return;
  while (n > 0 && out[n - 1] == 0) n--;
  for (ssize_t i = 0; i < n; i++)
    if (out[i] == 0) out[i] = ' ';
  out[n] = 0;
}

/* The header: who and when. */
static gp_writer *open_writer(int fd, int *err) {
  char host[256] = "", cmd[4096];
  if (gethostname(host, sizeof host) != 0) host[0] = 0;
  host[sizeof host - 1] = 0;
  read_cmdline(cmd, sizeof cmd);
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  struct gp_process_info info = {
      .host = host,
      .pid = getpid(),
      .ppid = getppid(),
      .rank = env_rank(rank_vars),
      .local_rank = env_rank(local_rank_vars),
      .cmdline = cmd,
      .start_mono_ns = gp_mono_ns(),
      .start_real_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
      .clock = gp_clock_tsc ? "tsc" : "monotonic",
      .flags = 0,
      .run_id = gp_cfg.run_id,
      .step_items = gp_cfg.step_items,
  };
  return gp_writer_open(fd, &info, 0, err);
}

/* One line to `gpuphase run`'s manifest: the trace's absolute path, or
 * "!" and the path that could not be created (so that it does not claim no
 * process used CUDA after the error line this process printed). */
static void manifest_line(const char *mark, const char *path) {
  const char *m = getenv("GPUPHASE_MANIFEST");
  if (!m || !*m) return;
  char line[PATH_MAX + 3];
  if (path[0] == '/') {
    snprintf(line, sizeof line, "%s%s\n", mark, path);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return;
    int k = snprintf(line, sizeof line, "%s%s/%s\n", mark, cwd, path);
    if (k < 0 || (size_t)k >= sizeof line) return;
  }
  struct gp_io_quiet q;
  gp_io_quiet_begin(&q);
  int fd = gp_fd_high(open(m, O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK));
  if (fd >= 0) {
    ssize_t w = write(fd, line, strlen(line));
    (void)w;
    close(fd);
  }
  gp_io_quiet_end(&q);
}

/* ---- space for the end of the file ----
 * When the disk fills, the file must still end with its summary, saying
 * that writes failed. Its space is set aside at open: blocks allocated far
 * past the end (the size does not change), freed when the end is written.
 * Filesystems without fallocate get no reserve; cutting the file back to
 * its last whole flush usually frees enough. */
#define RESERVE_BYTES (64u << 10)
#define RESERVE_AT (1ull << 40) /* moved further out when the data nears it */

/* ---- the descriptor, which the program may close (gp_output.h) ---- */

static int is_trace(const struct gp_output *o, int fd) {
  struct stat st;
  unsigned char head[sizeof o->mark];
  return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == o->dev &&
         st.st_ino == o->ino &&
         pread(fd, head, o->nmark, 0) == (ssize_t)o->nmark &&
         memcmp(head, o->mark, o->nmark) == 0;
}

/* 0: o->fd is the trace file, maybe opened again; -1: the file cannot be
 * had back, and the writer is dropped without a write (said why). */
static int own_fd(struct gp_output *o) {
  if (o->fd < 0) return -1;
  if (is_trace(o, o->fd)) return 0;
  const char *why = "its name is too long";
  int fd = -1;
  if (o->again[0]) {
    fd = gp_fd_high(open(o->again, O_RDWR | O_CLOEXEC));
    why = fd < 0 ? strerror(errno) : "another file has its name";
    if (fd >= 0 && !is_trace(o, fd)) {
      close(fd);
      fd = -1;
    }
  }
  uint64_t at = o->w ? gp_writer_bytes(o->w) : o->good_bytes;
  if (fd >= 0 && lseek(fd, (off_t)at, SEEK_SET) != (off_t)at) {
    why = strerror(errno);
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    gp_warn("the program closed the descriptor of trace file %s, which "
            "cannot be opened again (%s); the trace ends here",
            o->path, why);
    gp_writer_discard(o->w);
    o->w = NULL;
    o->failed = 1;
    o->fd = -1;
    o->reserve_at = 0;
    return -1;
  }
  gp_writer_set_fd(o->w, fd); /* the old number is left to the program */
  o->fd = fd;
  return 0;
}

/* The absolute name of the file just created (relative to the current
 * directory, which the program may change), and its identity: device,
 * inode and first bytes. */
static void remember(struct gp_output *o, int fd) {
  struct stat st;
  o->dev = 0;
  o->ino = 0;
  if (fstat(fd, &st) == 0) {
    o->dev = st.st_dev;
    o->ino = st.st_ino;
  }
  ssize_t n = pread(fd, o->mark, sizeof o->mark, 0);
  o->nmark = n > 0 ? (size_t)n : 0;
  o->again[0] = 0;
  char cwd[PATH_MAX] = "";
  if (o->path[0] != '/' && !getcwd(cwd, sizeof cwd)) return;
  size_t nc = strlen(cwd), np = strlen(o->path);
  if (nc + 1 + np >= sizeof o->again) return;
  memcpy(o->again, cwd, nc);
  if (nc) o->again[nc++] = '/';
  memcpy(o->again + nc, o->path, np + 1);
}

static void reserve(struct gp_output *o, uint64_t at) {
  o->reserve_at = 0;
  if (fallocate(o->fd, FALLOC_FL_KEEP_SIZE, (off_t)at, RESERVE_BYTES) == 0)
    o->reserve_at = at;
}

/* Frees the reserve: a hole punched (tmpfs, XFS, btrfs), and the file
 * truncated to its size, which frees blocks past the end (ext4). */
static void unreserve(struct gp_output *o, uint64_t size) {
  if (!o->reserve_at || size >= o->reserve_at) return;
  int r = fallocate(o->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    (off_t)o->reserve_at, RESERVE_BYTES);
  r = ftruncate(o->fd, (off_t)size);
  (void)r;
  o->reserve_at = 0;
}

/* A pattern that names a directory (one that exists, or any ending in
 * '/') gets the default file name inside it: `-o traces/` or `-o /tmp`
 * puts gpuphase-HOST-PID.gph there (before, `/tmp` became `/tmp.1`). */
static void in_directory(char *base, size_t cap) {
  size_t len = strlen(base);
  struct stat st;
  if (!len || !(base[len - 1] == '/' || (stat(base, &st) == 0 && S_ISDIR(st.st_mode))))
    return;
  char name[256];
  gp_expand_pattern(GP_OUTPUT_DEFAULT, name, sizeof name);
  if (len + 1 + strlen(name) + 1 > cap) return; /* too long: open says so */
  snprintf(base + len, cap - len, "%s%s", base[len - 1] == '/' ? "" : "/", name);
}

static int output_open(struct gp_output *o) {
  char base[PATH_MAX];
  gp_expand_pattern(gp_cfg.output, base, sizeof base);
  in_directory(base, sizeof base);
  int fd = open_unique(base, o->path, sizeof o->path);
  if (fd < 0) {
    gp_warn("cannot create trace file %s: %s; not recording", base,
            strerror(errno));
    manifest_line("!", base);
    return -1;
  }
  int err = 0;
  errno = 0;
  o->w = open_writer(fd, &err);
  if (!o->w) {
    /* an I/O error's reason is errno's (ENOSPC: a full disk) */
    gp_warn("cannot write trace file %s: %s; not recording", o->path,
            err == GPUPHASE_E_IO && errno ? strerror(errno)
                                          : gpuphase_strerror(err));
    close(fd);
    unlink(o->path);
    manifest_line("!", o->path);
    return -1;
  }
  o->fd = fd;
  o->failed = 0;
  remember(o, fd);
  o->good_bytes = gp_writer_bytes(o->w);
  o->good_events = o->good_added = 0;
  reserve(o, RESERVE_AT);
  return 0;
}

/* On the thread of the program's first CUDA call: the header's write must
 * not raise SIGXFSZ (RLIMIT_FSIZE) or SIGPIPE there. */
int gp_output_open(struct gp_output *o) {
  struct gp_io_quiet q;
  gp_io_quiet_begin(&q);
  int rc = output_open(o);
  gp_io_quiet_end(&q);
  return rc;
}

void gp_output_announce(const struct gp_output *o) {
  manifest_line("", o->path);
}

/* The writer failed: the writer is closed (it says why), the file cut back
 * to its last whole flush (which gives the application its space back),
 * the reserve taken again, and the reason said once. */
static void writes_failed(struct gp_output *o) {
  if (own_fd(o) < 0) return;
  int fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
  int rc = gp_writer_close(o->w, NULL);
  const char *why = rc == GPUPHASE_E_IO ? strerror(errno) : gpuphase_strerror(rc);
  o->w = NULL;
  o->failed = 1;
  o->fd = fd;
  gp_warn("cannot write trace file %s: %s; the trace ends here, what follows "
          "is counted as lost",
          o->path, why);
  if (fd < 0) return;
  if (ftruncate(fd, (off_t)o->good_bytes) == 0 && o->reserve_at)
    reserve(o, o->reserve_at);
}

int gp_output_flush(struct gp_output *o, uint64_t added) {
  if (o->failed || !o->w) return 0;
  if (own_fd(o) < 0) return -1;
  if (gp_writer_flush(o->w) != GPUPHASE_OK) {
    writes_failed(o);
    return -1;
  }
  o->good_bytes = gp_writer_bytes(o->w);
  o->good_events = gp_writer_events(o->w);
  o->good_added = added;
  if (o->reserve_at && o->good_bytes + (1ull << 30) > o->reserve_at) {
    unreserve(o, o->good_bytes);
    reserve(o, (o->good_bytes + (1ull << 30)) * 2);
  }
  return 0;
}

/* The end of a file whose writes failed, made by a writer of its own in
 * memory: a LOST record (source 2: records the file could not take) and the
 * summary, copied after the last whole flush. Returns its length, 0 if it
 * cannot be made. */
static size_t make_end(uint64_t lost, const struct gpuphase_summary *sum,
                       uint8_t *buf, size_t cap) {
  int mfd = gp_fd_high(memfd_create("gpuphase-end", MFD_CLOEXEC));
  int dup_fd = mfd < 0 ? -1 : fcntl(mfd, F_DUPFD_CLOEXEC, 3);
  int err;
  gp_writer *w = dup_fd < 0 ? NULL : open_writer(dup_fd, &err);
  ssize_t n = 0;
  if (w) {
    uint64_t start = gp_writer_bytes(w);
    struct gpuphase_record r = {.kind = GPUPHASE_REC_LOST};
    r.u.lost.start = gp_mono_ns();
    r.u.lost.count = lost;
    r.u.lost.source = 2;
    gp_writer_add(w, 0, &r);
    if (gp_writer_close(w, sum) == GPUPHASE_OK) {
      struct stat st;
      if (fstat(mfd, &st) == 0 && (uint64_t)st.st_size - start <= cap)
        n = pread(mfd, buf, (size_t)st.st_size - start, (off_t)start);
    }
  } else if (dup_fd >= 0) {
    close(dup_fd);
  }
  if (mfd >= 0) close(mfd);
  return n > 0 ? (size_t)n : 0;
}

static void close_failed(struct gp_output *o, const struct gpuphase_summary *sum,
                         uint64_t added) {
  if (o->fd < 0) return;
  uint64_t lost = added - o->good_added;
  struct gpuphase_summary s = sum ? *sum : (struct gpuphase_summary){0};
  s.events = o->good_events + 1; /* and the LOST record */
  s.lost += lost;
  s.flags |= GPUPHASE_FLAG_LOST;
  s.end = gp_mono_ns();
  uint8_t end[4096];
  size_t n = make_end(lost, &s, end, sizeof end);
  unreserve(o, o->good_bytes);
  if (n && pwrite(o->fd, end, n, (off_t)o->good_bytes) != (ssize_t)n) {
    int r = ftruncate(o->fd, (off_t)o->good_bytes); /* back to whole frames */
    (void)r;
  }
  close(o->fd);
}

static void output_close(struct gp_output *o,
                         const struct gpuphase_summary *sum, uint64_t added) {
  if (o->fd >= 0 && own_fd(o) < 0) {
    gp_output_forget(o);
    return;
  }
  if (!o->failed && o->w && gp_writer_flush(o->w) != GPUPHASE_OK)
    writes_failed(o);
  if (o->failed) {
    close_failed(o, sum, added);
  } else if (o->w) {
    /* the summary goes where the reserve was freed; if even that fails,
     * the file is cut back to its whole frames */
    uint64_t size = gp_writer_bytes(o->w);
    unreserve(o, size);
    int fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
    if (gp_writer_close(o->w, sum) != GPUPHASE_OK && fd >= 0) {
      int r = ftruncate(fd, (off_t)size);
      (void)r;
    }
    if (fd >= 0) close(fd);
  }
  o->w = NULL;
  o->fd = -1;
  o->failed = 0;
}

/* At exit or exec, possibly on the program's thread. */
void gp_output_close(struct gp_output *o, const struct gpuphase_summary *sum,
                     uint64_t added) {
  struct gp_io_quiet q;
  gp_io_quiet_begin(&q);
  output_close(o, sum, added);
  gp_io_quiet_end(&q);
}

void gp_output_forget(struct gp_output *o) {
  o->w = NULL;
  o->fd = -1;
  o->failed = 0;
}
