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
 * complete() runs on the signal's thread before the signal takes effect;
 * it must return within a bounded time. */
void gp_signals_arm(void (*complete)(void));

#endif
