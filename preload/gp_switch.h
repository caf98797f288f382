/* The words of an on/off environment setting (GPUPHASE_DISABLE,
 * GPUPHASE_QUIET, GPUPHASE_CUPTI, GPUPHASE_NVML, GPUPHASE_STACKS's off):
 * one list, for the recorder and for `gpuphase run`, which says why no
 * trace was written. Header only: the launcher links nothing of preload/. */
#ifndef GP_SWITCH_H
#define GP_SWITCH_H

#include <stddef.h>
#include <strings.h>

/* 1 for 1, true, yes, on; 0 for 0, false, no, off; -1 otherwise. Any case. */
static inline int gp_switch_word(const char *v) {
  static const char *const yes[] = {"1", "true", "yes", "on"},
                           *const no[] = {"0", "false", "no", "off"};
  if (!v) return -1;
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (!strcasecmp(v, yes[i])) return 1;
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (!strcasecmp(v, no[i])) return 0;
  return -1;
}

#endif
