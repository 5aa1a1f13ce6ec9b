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

/* A duration with its unit: "500us", "2ms", "1s", "300ns" (also "0"). Out of [min_ns, max_ns]
 * or without unit: an error naming the option. */
#include <stdint.h>
int cli_parse_duration_ns(const char *arg, const char *option, uint64_t min_ns, uint64_t max_ns,
			  uint64_t *out);

/* The off-CPU options shared by record, top and agent (docs/recording.md, "Off-CPU"): add
 * CLI_OFFCPU_LONGOPTS to the getopt_long table and hand their codes to cli_offcpu_option(),
 * which fills the session options (0, or -1 after saying what is wrong). */
struct session_opts;
enum {
	CLI_OPT_OFFCPU_MIN = 0x4f01,
	CLI_OPT_OFFCPU_PERIOD,
	CLI_OPT_OFFCPU_RATE,
};
#define CLI_OFFCPU_LONGOPTS                                                        \
	{ "off-cpu-min", required_argument, NULL, CLI_OPT_OFFCPU_MIN },             \
	{ "off-cpu-period", required_argument, NULL, CLI_OPT_OFFCPU_PERIOD },       \
	{ "off-cpu-max-rate", required_argument, NULL, CLI_OPT_OFFCPU_RATE }
int cli_offcpu_option(int code, const char *arg, struct session_opts *so);
/* The help lines of those options. */
#define CLI_OFFCPU_USAGE                                                                         \
	"      --off-cpu-min DUR     off-CPU waits shorter than DUR are not counted (default 0;\n"   \
	"                            e.g. 50us: their total is reported, see --stats)\n"            \
	"      --off-cpu-period DUR  off-CPU sampling period: shorter waits are recorded with\n"    \
	"                            probability wait/DUR, weighing DUR (default 1/HZ: as fine\n"   \
	"                            as the CPU samples; at most 4s)\n"                               \
	"      --off-cpu-max-rate N  off-CPU stacks per CPU and second at most (default 1000);\n" \
	"                            waits over it keep their time under [rate limited]\n"

#endif
