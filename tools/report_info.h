/* gpuphase-report info and dump: what a trace file is (process, devices,
 * record counts, completeness) and its records one per line. argv[0] is
 * the subcommand's name. Return the process exit status: 0 success, 1 bad
 * input (the problem named on stderr), 2 usage error. */
#ifndef GP_REPORT_INFO_H
#define GP_REPORT_INFO_H

int gp_cmd_info(int argc, char **argv);
int gp_cmd_dump(int argc, char **argv);

#endif
