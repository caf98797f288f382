/* The lifecycle (shim.c) as seen by the exec and spawn wrappers. */
#ifndef GP_LIFECYCLE_H
#define GP_LIFECYCLE_H

/* The image is about to be replaced: complete its trace. */
void gp_shutdown_for_exec(void);
/* exec failed: the process goes on; a later CUDA call opens a new trace. */
void gp_restart_after_exec(void);
/* 1 when this process owns the memory it runs in; 0 in a vfork child (or
 * a clone sharing memory), which must leave its parent's trace alone. */
int gp_lifecycle_owner(void);

#endif
