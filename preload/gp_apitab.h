/* API ids, names and classes generated from the wrapper tables. */
#ifndef GP_API_H
#define GP_API_H
#include <stdint.h>

uint32_t gp_api_count(void);
const char *gp_api_name(uint32_t id);
uint32_t gp_api_cls(uint32_t id);
/* The real runtime function `name` (RTLD_NEXT, then a loaded libcudart). */
void *gp_real_runtime(const char *name);

#endif
