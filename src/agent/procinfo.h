/* procinfo.h: what the agent labels a process with: its executable's name and its container
 * id, read from /proc while the process lives. The cgroup parser is pure (and fuzzed). */
#ifndef SCORCH_PROCINFO_H
#define SCORCH_PROCINFO_H

#include <stddef.h>

#define PROCINFO_NAME_MAX 256

struct procinfo {
	int pid;
	char exe[PROCINFO_NAME_MAX];   /* basename of /proc/PID/exe, else comm */
	char container_id[65];         /* 64 lowercase hex digits, or "" */
	char script[PROCINFO_NAME_MAX]; /* interpreter script (e.g. Python main module), or "" */
};

/* Fill out for pid. comm (may be NULL) is the fallback name when /proc/PID/exe is unreadable
 * (process gone, kernel thread). Returns 0, or -ESRCH when the process is gone (out is still
 * filled with what could be known). */
int procinfo_read(int pid, const char *comm, struct procinfo *out);

/* Find a container id in the text of /proc/PID/cgroup (docker, containerd, cri-o, podman,
 * kubepods layouts): the last 64-hex-digit token of a path component. Writes "" if none.
 * Returns 1 when found, 0 otherwise. */
int procinfo_container_id(const char *cgroup, size_t len, char out[65]);

#endif
