/* procinfo.c: executable name and container id of a process (see procinfo.h). */
#include "agent/procinfo.h"
#include "lib/buf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int procinfo_container_id(const char *cgroup, size_t len, char out[65])
{
	size_t i = 0;
	int found = 0;

	out[0] = '\0';
	/* Scan for maximal runs of hex digits that are exactly 64 long and bounded by
	 * non-alphanumeric characters; the last one wins (the innermost cgroup). */
	while (i < len) {
		size_t start;

		if (!is_hex(cgroup[i])) {
			i++;
			continue;
		}
		start = i;
		while (i < len && is_hex(cgroup[i]))
			i++;
		if (i - start == 64 &&
		    (start == 0 || !isalnum((unsigned char)cgroup[start - 1])) &&
		    (i == len || !isalnum((unsigned char)cgroup[i]))) {
			memcpy(out, cgroup + start, 64);
			out[64] = '\0';
			found = 1;
		}
	}
	return found;
}

int procinfo_read(int pid, const char *comm, struct procinfo *out)
{
	char path[64], target[PATH_MAX];
	struct buf b = BUF_INIT(64 * 1024);
	ssize_t n;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		const char *base;
		char *del;

		target[n] = '\0';
		del = strstr(target, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		base = strrchr(target, '/');
		snprintf(out->exe, sizeof(out->exe), "%.255s", base ? base + 1 : target);
	} else {
		if (errno == ENOENT)
			ret = -ESRCH;
		snprintf(out->exe, sizeof(out->exe), "%s", comm && *comm ? comm : "[unknown]");
	}
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (buf_read_file(&b, path) == 0)
		procinfo_container_id(b.data, b.len, out->container_id);
	buf_release(&b);
	return ret;
}
