/* Hand-built timelines for the report tests: records are collected in any
 * order, then fed to the engine the way the sorted reader yields them
 * (metadata first, then by start; ties keep insertion order). */
#ifndef TL_H
#define TL_H

#include <stdint.h>

#include "attribute.h"

struct tl {
  struct gpuphase_record *v;
  size_t n, cap;
  struct gp_report_opts o;
};

enum {
  TL_PINNED = GPUPHASE_MEM_PINNED,
  TL_PAGEABLE = GPUPHASE_MEM_PAGEABLE,
  TL_DEVMEM = GPUPHASE_MEM_DEVICE
};

void tl_init(struct tl *t);
struct gpuphase_record *tl_add(struct tl *t, uint32_t kind);
void tl_str(struct tl *t, uint64_t id, const char *s);
void tl_api_def(struct tl *t, uint64_t api, uint64_t name, uint64_t cls);
/* a device with an SM count and the limits of a typical recent GPU */
struct gpuphase_device *tl_device(struct tl *t, uint64_t dev, uint64_t sms);
struct gpuphase_api *tl_api(struct tl *t, uint64_t thread, uint64_t api,
                            uint64_t start, uint64_t end, int64_t dev,
                            uint64_t corr);
struct gpuphase_kernel *tl_kernel(struct tl *t, uint64_t dev, uint64_t start,
                                  uint64_t end, uint64_t name, uint64_t grid,
                                  uint64_t block);
struct gpuphase_memcpy *tl_copy(struct tl *t, uint64_t dev, uint64_t start,
                                uint64_t end, uint64_t bytes, uint64_t kind,
                                uint64_t src, uint64_t dst, uint64_t corr);
void tl_memset(struct tl *t, uint64_t dev, uint64_t start, uint64_t end);
void tl_range(struct tl *t, uint64_t thread, uint64_t op, uint64_t at,
              uint64_t name, uint64_t id);
void tl_state(struct tl *t, uint64_t at, uint64_t state, uint64_t reason);
struct gp_proc_res *tl_run(struct tl *t);     /* sorted, then fed */
struct gp_proc_res *tl_run_raw(struct tl *t); /* fed as added */
void tl_free(struct tl *t);

const struct gp_device_res *tl_dev(const struct gp_proc_res *r, int64_t id);
const struct gp_phase_res *tl_phase(const struct gp_proc_res *r,
                                    const char *name);
const struct gp_kernel_res *tl_kern(const struct gp_proc_res *r,
                                    const char *name);
const struct gp_api_res *tl_apires(const struct gp_proc_res *r,
                                   const char *name);
const struct gp_thread_res *tl_thr(const struct gp_proc_res *r, uint64_t idx);

extern int tl_failures;
int tl_eq(uint64_t got, uint64_t want, const char *what, const char *file,
          int line);
int tl_near(double got, double want, double eps, const char *what,
            const char *file, int line);
#define EQ(a, b) tl_eq((uint64_t)(a), (uint64_t)(b), #a, __FILE__, __LINE__)
#define NEAR(a, b, e) tl_near((a), (b), (e), #a, __FILE__, __LINE__)
/* the five categories of a breakdown, in table order */
#define CATS(bd, k, x, l, s, h)                                                \
  do {                                                                         \
    EQ((bd).cat[GP_CAT_KERNEL], k);                                            \
    EQ((bd).cat[GP_CAT_TRANSFER], x);                                          \
    EQ((bd).cat[GP_CAT_LAUNCH], l);                                            \
    EQ((bd).cat[GP_CAT_SYNC_IDLE], s);                                         \
    EQ((bd).cat[GP_CAT_HOST_WAIT], h);                                         \
  } while (0)

#endif
