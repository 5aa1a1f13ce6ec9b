/* cli.h: argument helpers shared by the commands in src/cli/. They print what is wrong
 * (through log.h) and return -1, like error(). */
#ifndef SCORCH_CLI_H
#define SCORCH_CLI_H

#include <stddef.h>

/* Append the PIDs of a "PID[,PID...]" list to *pids (grown with ALLOC_GROW; the caller frees
 * it with xfree()). Each must name a live process. */
int cli_parse_pids(const char *arg, int **pids, size_t *npids);

/* Refuse early an output file we could not write (unknown extension, a directory, a missing
 * or read-only directory), before profiling for minutes. */
int cli_check_output(const char *path);

#endif
