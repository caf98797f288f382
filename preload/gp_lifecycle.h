/* The lifecycle (shim.c) as seen by the exec and spawn wrappers. */
#ifndef GP_LIFECYCLE_H
#define GP_LIFECYCLE_H

#include <stdint.h>

/* The image is about to be replaced: complete its trace. */
void gp_shutdown_for_exec(void);
/* exec failed: the process goes on; a later CUDA call opens a new trace. */
void gp_restart_after_exec(void);
/* 1 when this process owns the memory it runs in; 0 in a vfork child (or
 * a clone sharing memory), which must leave its parent's trace alone. */
int gp_lifecycle_owner(void);

/* Threads of ours alive now (the writer, the counter sampler): each adds
 * itself when it starts and takes itself off when it ends. */
extern _Atomic int gp_own_threads;
/* 1 once the main thread left by pthread_exit and, of the process's
 * threads, only ours are still alive: glibc would have ended the process
 * (exit(0)) when the last of the application's threads ended, and our
 * threads must not keep it alive. Reads /proc at most every 10 ms. */
int gp_lifecycle_alone(uint64_t now_ns);

#endif
