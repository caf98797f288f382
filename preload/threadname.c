/* Thread names, taken in the thread itself: when its ring is made (a thread
 * may exit long before the writer gets to it: a name read later from
 * /proc/self/task/TID/comm is gone) and on every rename through
 * pthread_setname_np or prctl(PR_SET_NAME), which are interposed here and
 * pass everything through unchanged. A changed name is announced again
 * (THREAD record, same index) by the writer. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>

#include "gp_rings.h"
#include "gp_threadname.h"

/* Renamers of one thread are serialised (a rename is rare and never on a
 * hot path); the writer reads without it, by the sequence count. */
static pthread_mutex_t rename_lock = PTHREAD_MUTEX_INITIALIZER;

void gp_tbuf_set_name(struct gp_tbuf *b, const char *name) {
  char buf[GP_THREAD_NAME_MAX + 1] = {0};
  if (name) strncpy(buf, name, GP_THREAD_NAME_MAX);
  uint64_t w[2];
  memcpy(w, buf, sizeof w);
  pthread_mutex_lock(&rename_lock);
  uint32_t s = atomic_load_explicit(&b->name_seq, memory_order_relaxed);
  atomic_store_explicit(&b->name_seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&b->name_w[0], w[0], memory_order_relaxed);
  atomic_store_explicit(&b->name_w[1], w[1], memory_order_relaxed);
  atomic_store_explicit(&b->name_seq, s + 2, memory_order_release);
  pthread_mutex_unlock(&rename_lock);
}

void gp_tbuf_take_name(struct gp_tbuf *b) {
  char name[GP_THREAD_NAME_MAX + 1] = {0};
  int saved = errno;
  if (prctl(PR_GET_NAME, (unsigned long)name, 0, 0, 0) == 0)
    gp_tbuf_set_name(b, name);
  errno = saved;
}

int gp_tbuf_name(struct gp_tbuf *b, char out[GP_THREAD_NAME_MAX + 1],
                 uint32_t *seq) {
  for (int tries = 0; tries < 8; tries++) {
    uint32_t s1 = atomic_load_explicit(&b->name_seq, memory_order_acquire);
    if (s1 == 0) return -1; /* never taken */
    if (s1 & 1) continue;   /* being written */
    uint64_t w[2] = {
        atomic_load_explicit(&b->name_w[0], memory_order_relaxed),
        atomic_load_explicit(&b->name_w[1], memory_order_relaxed)};
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&b->name_seq, memory_order_relaxed) != s1)
      continue;
    memcpy(out, w, sizeof w);
    out[GP_THREAD_NAME_MAX] = 0;
    *seq = s1;
    return 0;
  }
  return -1;
}

/* The ring of a live thread, by its pthread_t (the registry is push-only:
 * walking it needs no lock). */
static struct gp_tbuf *ring_of(pthread_t t) {
  for (struct gp_tbuf *b = gp_tbuf_list(); b; b = b->next)
    if (atomic_load_explicit(&b->state, memory_order_acquire) ==
            GP_TB_ALIVE &&
        b->pthread == (unsigned long)t)
      return b;
  return NULL;
}

typedef int (*setname_fn)(pthread_t, const char *);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long,
                        unsigned long);

/* The real functions, looked up on first use by whichever thread comes
 * first (the same value each time: atomics only to say so). */
GP_EXPORT int pthread_setname_np(pthread_t t, const char *name) {
  static setname_fn real_fn;
  setname_fn real = __atomic_load_n(&real_fn, __ATOMIC_RELAXED);
  if (!real) {
    real = (setname_fn)dlsym(RTLD_NEXT, "pthread_setname_np");
    __atomic_store_n(&real_fn, real, __ATOMIC_RELAXED);
  }
  if (!real) return ENOSYS;
  int rc = real(t, name);
  if (rc == 0) {
    int saved = errno;
    struct gp_tbuf *b = ring_of(t);
    if (b) gp_tbuf_set_name(b, name);
    errno = saved;
  }
  return rc;
}

/* prctl takes up to four arguments after the option, all passed on as the
 * kernel reads them (unsigned long). */
GP_EXPORT int prctl(int option, ...) {
  static prctl_fn real_fn;
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long);
  unsigned long a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long);
  unsigned long a5 = va_arg(ap, unsigned long);
  va_end(ap);
  prctl_fn real = __atomic_load_n(&real_fn, __ATOMIC_RELAXED);
  if (!real) {
    real = (prctl_fn)dlsym(RTLD_NEXT, "prctl");
    __atomic_store_n(&real_fn, real, __ATOMIC_RELAXED);
  }
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int rc = real(option, a2, a3, a4, a5);
  if (rc == 0 && option == PR_SET_NAME && a2) {
    int saved = errno;
    struct gp_tbuf *b = gp_ts.buf;
    if (b) gp_tbuf_set_name(b, (const char *)a2);
    errno = saved;
  }
  return rc;
}
