/* The writer thread: every few milliseconds it drains the rings and
 * CUPTI's buffers into the trace file (records.c, output.c); at the end it
 * writes the summary. Also the bridge that starts and stops CUPTI. Used
 * by the lifecycle (shim.c). */
#ifndef GP_WRITER_THREAD_H
#define GP_WRITER_THREAD_H

#include <stdint.h>

int gp_writer_start(void); /* opens the file, starts the thread */
/* The thread drains everything and writes the summary; waited for without
 * end (timeout_ms < 0) or at most timeout_ms. */
void gp_writer_stop(int timeout_ms);
/* The same, not waited for; the thread then sends sig to the process. */
void gp_writer_stop_deliver(int sig);
void gp_writer_wake(void);
/* Device recording lost (on=1) or back (on=0) from mono_ns on; any thread. */
void gp_writer_note_degraded(uint64_t mono_ns, int on, const char *reason);
/* In a forked child or after a failed exec: a later start opens a new
 * trace; the old one is not touched. */
void gp_writer_child_reset(void);

/* Device records (CUPTI), driven from the lifecycle. */
void gp_dev_start(void);
void gp_dev_stop(void);

#endif
