/* procinfo.h: what the agent labels a process with: its executable's name, command line and
 * container id, read from /proc while the process lives, and its lineage (parent, start and
 * exit time, kernel thread) learnt from samples and events. service_name.h turns these facts
 * into a service name. The parsers of /proc text are pure (and fuzzed). */
#ifndef SCORCH_PROCINFO_H
#define SCORCH_PROCINFO_H

#include <stddef.h>

#include <stdint.h>

#define PROCINFO_NAME_MAX 256
#define PROCINFO_CMDLINE_MAX 512  /* bytes of /proc/PID/cmdline kept (the rest is cut): enough
                                   * for an interpreter's options and script */
#define PROCINFO_ARGS_MAX 32      /* arguments split out of it */
#define PROCINFO_ANCESTORS 5      /* = SAMPLE_ANCESTORS of the BPF sample (src/bpf/sampler.h) */

struct procinfo {
	int pid;
	char exe[PROCINFO_NAME_MAX];   /* basename of /proc/PID/exe, else comm */
	int exe_known;                 /* exe came from /proc/PID/exe (not the comm fallback) */
	char container_id[65];         /* 64 lowercase hex digits, or "" */
	char script[PROCINFO_NAME_MAX]; /* the runtime's main script or module label, or "" */
	char cmdline[PROCINFO_CMDLINE_MAX]; /* /proc/PID/cmdline, arguments NUL-separated */
	size_t cmdline_len;
	/* lineage: from the sample that made us read the process (or /proc/PID/stat) */
	int ppid;                      /* 0 unknown */
	uint32_t ancestors[PROCINFO_ANCESTORS]; /* parent first, below init (0 past it); from the
	                                * sample, or only the parent from /proc/PID/stat */
	uint64_t start_ns;             /* process start, CLOCK_MONOTONIC ns; 0 unknown */
	uint64_t exit_ns;              /* when it exited, CLOCK_MONOTONIC ns; 0 running */
	uint64_t last_ns;              /* its latest sample, CLOCK_MONOTONIC ns; 0 none */
	int kernel_thread;
};

/* Fill out for pid. comm (may be NULL) is the fallback name when /proc/PID/exe is unreadable
 * (process gone, kernel thread). Returns 0, or -ESRCH when the process is gone (out is still
 * filled with what could be known). */
int procinfo_read(int pid, const char *comm, struct procinfo *out);
/* The same, with /proc/PID/exe's target read already (exe; NULL or "" to read it here) and
 * the container id known already (container_id; NULL to read /proc/PID/cgroup here). */
int procinfo_read_exe(int pid, const char *comm, const char *exe, const char *container_id,
		      struct procinfo *out);
/* Only the container id, from /proc/PID/cgroup ("" when none or unreadable). 0 or a negative
 * errno. */
int procinfo_read_cgroup(int pid, struct procinfo *out);

/* Lineage from /proc/PID/stat for a process known only by pid: ppid, start (converted to
 * CLOCK_MONOTONIC) and the kernel-thread flag. Returns 0 or a negative errno. */
int procinfo_read_stat(int pid, struct procinfo *out);

/* Parse the text of /proc/PID/stat (the comm field may hold spaces and parentheses): ppid,
 * starttime (clock ticks after boot) and flags. Returns 0 or -EINVAL. */
int procinfo_parse_stat(const char *text, size_t len, int *ppid, uint64_t *starttime,
			unsigned long *flags);

/* Split a NUL-separated command line into at most max arguments (pointers into buf, which
 * must be NUL-terminated at buf[len]). Returns the number of arguments. */
size_t procinfo_split_cmdline(const char *buf, size_t len, const char **argv, size_t max);

/* Find a container id in the text of /proc/PID/cgroup (docker, containerd, cri-o, podman,
 * kubepods layouts): the last 64-hex-digit token of a path component. Writes "" if none.
 * Returns 1 when found, 0 otherwise. */
int procinfo_container_id(const char *cgroup, size_t len, char out[65]);

#endif
