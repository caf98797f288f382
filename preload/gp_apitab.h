/* API ids, names and classes generated from the wrapper tables, and the
 * index the dlsym and entry-point interposers use. */
#ifndef GP_API_H
#define GP_API_H
#include <stdint.h>

struct gp_tstate;

uint32_t gp_api_count(void);
const char *gp_api_name(uint32_t id);
uint32_t gp_api_cls(uint32_t id);
uint32_t gp_api_layer(uint32_t id);

/* One wrapped exported function. */
struct gp_wrap_entry {
  const char *name;
  void *wrapper;
  void **real;      /* resolved lazily; *real is `unresolved` until then */
  void *unresolved; /* what *real holds before first use */
  uint32_t layer;
  /* variant A (api_runtime.def): whether the real function is a CUDA 12
   * runtime's, set with *real; NULL for the others */
  int *abi12;
};
const struct gp_wrap_entry *gp_wrap_lookup(const char *name);

/* The real function `name` of the runtime (layer 0) or driver (layer 1). */
void *gp_real_layer(uint32_t layer, const char *name);
void *gp_real_runtime(const char *name);

/* Whether fn lives in a CUDA 12 runtime (libcudart.so.12*). */
int gp_runtime_abi12(void *fn);

/* After a context change: the calling thread's current device. */
void gp_track_ctx_device(struct gp_tstate *ts);
/* The device of a context (cuCtxGetDevice_v2, CUDA 12.8 on), or -1 when
 * it cannot be asked. */
int gp_ctx_device_of(void *ctx);

#endif
