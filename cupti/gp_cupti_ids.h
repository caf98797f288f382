/* The CUPTI callback ids gpuphase enables: those of the functions it
 * records, and no others (cupti_ids.c). Internal to cupti/. */
#ifndef GP_CUPTI_IDS_H
#define GP_CUPTI_IDS_H

#include <cupti.h>
#include <stddef.h>

/* The ids of `domain` (runtime or driver API) to enable; *ids is set to
 * them and their count returned (0 for any other domain). */
size_t gp_cupti_ids(CUpti_CallbackDomain domain, const CUpti_CallbackId **ids);

#endif
