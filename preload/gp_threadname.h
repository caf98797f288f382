/* Thread names taken in the thread (threadname.c): the ring header keeps
 * the name under a sequence count; the writer announces it and announces it
 * again when it changes. */
#ifndef GP_THREADNAME_H
#define GP_THREADNAME_H

#include <stdint.h>

#include "gp_shim.h"

/* The kernel's limit (TASK_COMM_LEN - 1). */
#define GP_THREAD_NAME_MAX 15

/* The calling thread's name (prctl PR_GET_NAME) into its new ring. */
void gp_tbuf_take_name(struct gp_tbuf *b);
/* Sets the name kept in b (any thread). */
void gp_tbuf_set_name(struct gp_tbuf *b, const char *name);
/* Writer: the name kept in b and its sequence count; -1 when none was
 * taken (or it kept changing while read). */
int gp_tbuf_name(struct gp_tbuf *b, char out[GP_THREAD_NAME_MAX + 1],
                 uint32_t *seq);

#endif
