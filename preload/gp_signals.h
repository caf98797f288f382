/* Terminating signals: where the application keeps a signal's default
 * action (which ends the process), the trace is completed first and the
 * signal then takes its course; the application's own dispositions, set
 * before or after, are untouched and it sees them as it set them. Used by
 * the lifecycle (shim.c), which hands in what completing the trace means;
 * uses nothing else of preload/. */
#ifndef GP_SIGNALS_H
#define GP_SIGNALS_H

/* Installs our handler on every terminating signal whose disposition is
 * the default, now and whenever the application sets the default again.
 * complete(sig, fault) runs on the signal's thread before the signal takes
 * effect and returns within a bounded time: 0 when the trace is complete
 * (or cannot be), 1 when it is being completed after the handler returns
 * (not when fault = 1: a fault or abort()'s SIGABRT, which come back at
 * once): the completer then calls gp_signals_deliver, or the kernel
 * delivers it in 5 s. */
void gp_signals_arm(int (*complete)(int sig, int fault));

/* The deferred signal, now: the application's disposition for it back
 * (the default), then sent to the process. */
void gp_signals_deliver(int sig);

#endif
