/* gpuphase-report compare BASE... --vs NEW... and gpuphase-report check
 * --budgets FILE NEW...: the CI gate (docs/compare.md). argv[0] is the
 * subcommand's name. Return the exit status: 0 pass, 1 regression or
 * budget exceeded, 2 usage or input error, 3 inconclusive (or what
 * --inconclusive maps it to). */
#ifndef GP_REPORT_COMPARE_H
#define GP_REPORT_COMPARE_H

#include <stdio.h>

int gp_cmd_compare(int argc, char **argv);
int gp_cmd_check(int argc, char **argv);

/* The same in memory (libgpuphase-report): the verdict (or help) is
 * written to out, a message to err instead of standard error, and
 * *errcode is 0, 1 (input error) or 3 (usage error). Returns the exit
 * status. */
int gp_compare_mem(int argc, char **argv, int check, FILE *out, char *err,
                   size_t errlen, int *errcode);

#endif
