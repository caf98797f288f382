/* Stand-in for gpuphase-report's dispatch, so the info and dump commands
 * can be tested before and apart from the real binary. */
#include <string.h>

#include "report_info.h"

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "info"))
    return gp_cmd_info(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "dump"))
    return gp_cmd_dump(argc - 1, argv + 1);
  return 2;
}
