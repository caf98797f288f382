/* Completing the trace on signals that would end the process.
 *
 * Our handler sits only on signals whose disposition is SIG_DFL and whose
 * default action terminates (signal(7): Term and Core). It runs the
 * lifecycle's completion, puts the application's disposition back and lets
 * the signal act as it would have: a fault raised by an instruction is
 * left to happen again (same core, same siginfo), anything else is raised
 * again. sigaction and signal are interposed so that the application keeps
 * seeing what it set (SIG_DFL where it set nothing), that a handler or
 * SIG_IGN it sets replaces ours, and that SIG_DFL set again gets ours back
 * (sigset, bsd_signal, sysv_signal, __sysv_signal, ssignal and
 * __sigaction too). A handler the application sets to run once
 * (SA_RESETHAND) puts ours back when it runs (on_oneshot).
 * The kernel's disposition is the truth about whether ours is installed:
 * system(), raw syscalls and glibc-internal calls bypass these wrappers. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gp_shim.h"
#include "gp_signals.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn (*signal_fn)(int, handler_fn);

static _Atomic(sigaction_fn) real_sigaction_p;
static _Atomic(signal_fn) real_signal_p;
static int (*_Atomic complete_hook)(int sig, int fault);
static unsigned char eligible[NSIG]; /* 1: the default action terminates */
static struct sigaction view[NSIG];  /* what the application set */

static int real_sigaction(int s, const struct sigaction *a,
                          struct sigaction *o) {
  sigaction_fn f = atomic_load(&real_sigaction_p);
  if (!f) {
    f = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!f) {
      errno = ENOSYS;
      return -1;
    }
    atomic_store(&real_sigaction_p, f);
  }
  return f(s, a, o);
}

static handler_fn real_signal(int s, handler_fn h) {
  signal_fn f = atomic_load(&real_signal_p);
  if (!f) {
    f = (signal_fn)dlsym(RTLD_NEXT, "signal");
    if (!f) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    atomic_store(&real_signal_p, f);
  }
  return f(s, h);
}

/* Default action ends the process; SIGKILL and SIGSTOP cannot be caught. */
static void find_terminating(void) {
  static const int term[] = {SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP,
                             SIGABRT, SIGBUS,  SIGFPE,    SIGUSR1, SIGSEGV,
                             SIGUSR2, SIGPIPE, SIGALRM,   SIGTERM, SIGSTKFLT,
                             SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,
                             SIGPWR,  SIGSYS};
  for (size_t i = 0; i < sizeof term / sizeof term[0]; i++)
    eligible[term[i]] = 1;
  for (int s = SIGRTMIN; s <= SIGRTMAX && s < NSIG; s++) eligible[s] = 1;
}

static int is_eligible(int s) {
  return s > 0 && s < NSIG && eligible[s];
}

/* SA_SIGINFO with a null sa_sigaction is SIG_DFL to the kernel too. */
static int is_default(const struct sigaction *a) {
  if (a->sa_flags & SA_SIGINFO) return a->sa_sigaction == NULL;
  return a->sa_handler == SIG_DFL;
}

static void on_signal(int sig, siginfo_t *info, void *uctx);
static void on_oneshot(int sig, siginfo_t *info, void *uctx);

static int ours(const struct sigaction *a) {
  return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_signal;
}

/* An application handler set with SA_RESETHAND (sysv_signal's, and crash
 * handlers that run once and return or raise again): the kernel would put
 * SIG_DFL back as it delivers the signal, and ours would not be there
 * when it comes again. Such a handler is installed as on_oneshot, without
 * SA_RESETHAND, which puts ours back (the default to the application) and
 * runs it. oneshot[sig]: the application's action, as it set it. */
static struct sigaction oneshot[NSIG];

static int is_oneshot(const struct sigaction *a) {
  return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_oneshot;
}

/* What the application sees of the kernel's disposition cur. */
static struct sigaction app_view(int sig, const struct sigaction *cur) {
  return is_oneshot(cur) ? oneshot[sig] : *cur;
}

/* Sets the application's action (a handler or SIG_IGN, not SIG_DFL). */
static int set_app(int sig, const struct sigaction *act) {
  int handler = (act->sa_flags & SA_SIGINFO) ? act->sa_sigaction != NULL
                                             : act->sa_handler != SIG_IGN;
  if (!(act->sa_flags & SA_RESETHAND) || !handler)
    return real_sigaction(sig, act, NULL);
  struct sigaction t = *act;
  t.sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  t.sa_sigaction = on_oneshot;
  oneshot[sig] = *act;
  return real_sigaction(sig, &t, NULL);
}

/* A fault the CPU raised at an instruction that will fault again when the
 * handler returns (a breakpoint trap would not: it is raised instead). */
static int refaults(int sig, const siginfo_t *info) {
  return info && info->si_code > 0 &&
         (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
}

/* Comes back at once if the handler returns: a fault, or abort()'s SIGABRT
 * (which abort raises again with the default action). */
static int immediate(int sig, const siginfo_t *info) {
  return refaults(sig, info) || sig == SIGABRT;
}

/* The lifecycle chose to finish the trace after this handler returns (the
 * interrupted CUDA call may hold locks the writer needs) and to deliver the
 * signal then. Should it not, the kernel does, in 5 s: the process dies by
 * this signal whatever happens (it comes after the grace period below, so
 * it acts at once). */
static void watchdog(int sig) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = sig;
  timer_t t;
  struct itimerspec in = {.it_value = {.tv_sec = 5}};
  if (timer_create(CLOCK_MONOTONIC, &ev, &t) == 0) timer_settime(t, 0, &in, NULL);
}

/* When the first terminating signal came (CLOCK_MONOTONIC ns, odd), 0
 * before. Another one within GRACE_NS of it is taken for a copy of it and
 * waits for the completion under way: a process group signalled (a
 * terminal closed, `timeout`, a batch scheduler) reaches the program both
 * directly and through `gpuphase run`, which passes SIGTERM and SIGHUP on,
 * microseconds apart, and in a threaded program the copy would find
 * another thread to kill the process on. One that comes later (a second
 * ^C) or a fault that would come back at once acts at once. */
#define GRACE_NS 500000000ull
static _Atomic uint64_t first_ns;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) | 1;
}

/* The signal as the application would have had it: its disposition back
 * and, unless the faulting instruction raises it again, raised. */
static void act_now(int sig, const siginfo_t *info) {
  real_sigaction(sig, &view[sig], NULL);
  if (refaults(sig, info)) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
}

/* The least alternate stack the completion runs on: it took 5 to 6 KiB
 * (the kernel's signal frame included) on x86-64; below this, a fault that
 * arrives on the application's alternate stack acts at once, as it would
 * without us, and the trace ends at its last whole frame. */
#define ALTSTACK_MIN (16 * 1024)

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  int saved = errno;
  stack_t ss;
  if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) &&
      ss.ss_size < ALTSTACK_MIN) {
    act_now(sig, info);
    errno = saved;
    return;
  }
  uint64_t now = mono_ns(), first = 0;
  if (!atomic_compare_exchange_strong(&first_ns, &first, now)) {
    if (immediate(sig, info) || now - first >= GRACE_NS) act_now(sig, info);
    errno = saved;
    return;
  }
  int (*complete)(int, int) = atomic_load(&complete_hook);
  if (complete && complete(sig, immediate(sig, info))) {
    watchdog(sig);
    errno = saved;
    return;
  }
  errno = saved;
  act_now(sig, info);
}

static int install(int sig, const struct sigaction *app);

static void on_oneshot(int sig, siginfo_t *info, void *uctx) {
  struct sigaction app = oneshot[sig];
  /* as the kernel does with SA_RESETHAND: the default back before the
   * handler runs, ours being the default */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  int saved = errno;
  install(sig, &dfl);
  errno = saved;
  if (app.sa_flags & SA_SIGINFO) {
    if (app.sa_sigaction) app.sa_sigaction(sig, info, uctx);
  } else if (app.sa_handler != SIG_DFL && app.sa_handler != SIG_IGN) {
    app.sa_handler(sig);
  }
}

/* Puts ours in place of the default disposition `app` (what the
 * application set, kept to be reported and restored). */
static int install(int sig, const struct sigaction *app) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sigemptyset(&sa.sa_mask);
  /* NODEFER: a second signal is not held back while we complete (it acts
   * at once after the grace period: on_signal); ONSTACK, for the faults
   * only: a stack overflow reaches us on the application's alternate
   * stack, if any. The other signals run on the thread's own stack: an
   * alternate stack sized for the program's own handlers (2 KiB, say) would
   * not hold the completion, and the program, killed by SIGTERM without
   * us, died by a SIGSEGV or with its heap overwritten. */
  sa.sa_flags = SA_SIGINFO | SA_NODEFER |
                (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
                         sig == SIGILL
                     ? SA_ONSTACK
                     : 0);
  view[sig] = *app;
  return real_sigaction(sig, &sa, NULL);
}

/* The wrappers act once complete_hook is set, and then read eligible and
 * view: both are written before it (a forked child finds them set). */
void gp_signals_arm(int (*complete)(int sig, int fault)) {
  if (!atomic_load(&complete_hook)) find_terminating();
  /* The hook first: a signal that reaches the handler as soon as it is
   * installed completes the trace (before, one in the loop's window acted
   * at once, and left a file with its header only). */
  atomic_store(&complete_hook, complete);
  for (int s = 1; s < NSIG; s++) {
    struct sigaction cur;
    if (!is_eligible(s) || real_sigaction(s, NULL, &cur) != 0) continue;
    /* Only where the application kept the default: its own handlers win.
     * Already ours: inherited through fork, view kept. One that runs once
     * (SA_RESETHAND, set before recording started) gives the default, ours,
     * back when it runs. */
    if (is_default(&cur)) install(s, &cur);
    else if (cur.sa_flags & SA_RESETHAND) set_app(s, &cur);
  }
}

void gp_signals_deliver(int sig) {
  struct sigaction cur;
  /* still ours (or SIG_DFL): the application's disposition back */
  if (real_sigaction(sig, NULL, &cur) == 0 && (ours(&cur) || is_default(&cur)))
    real_sigaction(sig, &view[sig], NULL);
  kill(getpid(), sig);
}

/* Whether the call must go to the kernel unchanged: not a terminating
 * signal, or not armed yet. */
static int passes(int sig) {
  return !atomic_load(&complete_hook) || !is_eligible(sig);
}

GP_EXPORT int sigaction(int sig, const struct sigaction *act,
                        struct sigaction *old) {
  struct sigaction cur;
  if (passes(sig) || real_sigaction(sig, NULL, &cur) != 0)
    return real_sigaction(sig, act, old);
  if (!ours(&cur)) {
    /* The application's own disposition stands; SIG_DFL gets ours back. */
    struct sigaction prev = app_view(sig, &cur);
    if (act && !is_default(act)) {
      if (set_app(sig, act) != 0) return -1;
    } else if (act && install(sig, act) != 0) {
      return real_sigaction(sig, act, old);
    }
    if (old) *old = prev;
    return 0;
  }
  struct sigaction prev = view[sig];
  if (act && !is_default(act)) {
    if (set_app(sig, act) != 0) return -1;
  } else if (act) {
    view[sig] = *act;
  }
  if (old) *old = prev;
  return 0;
}

GP_EXPORT int __sigaction(int sig, const struct sigaction *act,
                          struct sigaction *old) {
  return sigaction(sig, act, old);
}

/* signal() keeps glibc's own semantics (BSD: SA_RESTART unless
 * siginterrupt said otherwise) by going to the real one whenever the
 * application's handler is set. */
GP_EXPORT handler_fn signal(int sig, handler_fn h) {
  struct sigaction cur;
  if (passes(sig) || real_sigaction(sig, NULL, &cur) != 0)
    return real_signal(sig, h);
  if (ours(&cur)) {
    handler_fn prev = view[sig].sa_handler;
    if (h != SIG_DFL) return real_signal(sig, h) == SIG_ERR ? SIG_ERR : prev;
    view[sig].sa_handler = SIG_DFL;
    return prev;
  }
  handler_fn shown = is_oneshot(&cur) ? oneshot[sig].sa_handler : NULL;
  if (h != SIG_DFL) {
    handler_fn prev = real_signal(sig, h);
    return prev != SIG_ERR && shown ? shown : prev;
  }
  handler_fn prev = real_signal(sig, SIG_DFL);
  if (prev != SIG_ERR && real_sigaction(sig, NULL, &cur) == 0) install(sig, &cur);
  return prev != SIG_ERR && shown ? shown : prev;
}

GP_EXPORT handler_fn ssignal(int sig, handler_fn h) {
  return signal(sig, h);
}

/* sysv_signal, bsd_signal and sigset set a disposition as signal does,
 * each with its own flags (sigset also holds and releases the signal): the
 * real one is called, what it returns is read through the application's
 * view (ours is SIG_DFL to it), and SIG_DFL set gets ours back. Before,
 * they returned our handler, and a program that put it back later
 * installed it without SA_SIGINFO. */
static handler_fn other_setter(const char *name, _Atomic(signal_fn) *cache,
                               int sig, handler_fn h) {
  signal_fn f = atomic_load(cache);
  if (!f) {
    f = (signal_fn)dlsym(RTLD_NEXT, name);
    if (!f) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    atomic_store(cache, f);
  }
  if (passes(sig)) return f(sig, h);
  struct sigaction cur;
  int got = real_sigaction(sig, NULL, &cur) == 0;
  int was_ours = got && ours(&cur);
  handler_fn view_prev = got && is_oneshot(&cur) ? oneshot[sig].sa_handler
                                                 : view[sig].sa_handler;
  handler_fn prev = f(sig, h);
  if (prev == SIG_ERR) return SIG_ERR;
  if ((was_ours || (got && is_oneshot(&cur))) && prev != SIG_HOLD) prev = view_prev;
  /* a handler that runs once (sysv_signal's): kept from resetting ours */
  if (h != SIG_DFL && h != SIG_IGN && h != SIG_HOLD &&
      real_sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_RESETHAND))
    set_app(sig, &cur);
  if (h == SIG_DFL && real_sigaction(sig, NULL, &cur) == 0 && is_default(&cur))
    install(sig, &cur);
  return prev;
}

static _Atomic(signal_fn) real_sysv_p, real_sysv2_p, real_bsd_p, real_sigset_p;

GP_EXPORT handler_fn sysv_signal(int sig, handler_fn h) {
  return other_setter("sysv_signal", &real_sysv_p, sig, h);
}
/* signal() of a program built for strict ISO C (-std=c11: no _GNU_SOURCE
 * or _DEFAULT_SOURCE) */
GP_EXPORT handler_fn __sysv_signal(int sig, handler_fn h) {
  return other_setter("__sysv_signal", &real_sysv2_p, sig, h);
}
GP_EXPORT handler_fn bsd_signal(int sig, handler_fn h) {
  return other_setter("bsd_signal", &real_bsd_p, sig, h);
}
GP_EXPORT handler_fn sigset(int sig, handler_fn h) {
  return other_setter("sigset", &real_sigset_p, sig, h);
}
