/* Writes a summary again as an older one: sumver IN OUT VERSION [--no-checksum]
 * (VERSION from GP_SUMMARY_VERSION_OLDEST; --no-checksum: flags 0 and no
 * content checksum, as summaries were written before the checksum). What a
 * version lacks is left out, so test_job.py can read every version the
 * report claims to read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_summary.h"

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--no-checksum")))
    return fprintf(stderr, "usage: sumver IN OUT VERSION [--no-checksum]\n"), 2;
  unsigned long ver = strtoul(argv[3], NULL, 10);
  if (ver < GP_SUMMARY_VERSION_OLDEST || ver > GP_SUMMARY_VERSION)
    return fprintf(stderr, "sumver: version %lu unknown\n", ver), 2;
  struct gp_summary_set set = {0};
  char err[512];
  int nomem = 0;
  if (gp_summary_read(argv[1], &set, &nomem, err, sizeof err) < 0)
    return fprintf(stderr, "sumver: %s\n", err), 1;
  FILE *f = fopen(argv[2], "wb");
  if (!f) return perror(argv[2]), 1;
  struct gp_summary_opts ao = set.ao;
  if (set.unknown) ao.known = 0;
  int rc = gp_summary_write_ver(f, set.procs, set.in, set.n, set.rule,
                                set.link_gbps, &ao, (uint32_t)ver,
                                argc < 5);
  if (fclose(f) != 0) rc = -1;
  gp_summary_set_free(&set);
  if (rc < 0) return fprintf(stderr, "sumver: write failed\n"), 1;
  return 0;
}
