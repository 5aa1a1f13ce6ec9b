/* procinfo.c: executable name, command line, container id and lineage of a process (see
 * procinfo.h). */
#include "agent/procinfo.h"
#include "lib/buf.h"

#include <ctype.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000

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

static void procinfo_read_cmdline(int pid, struct procinfo *out);

int procinfo_read(int pid, const char *comm, struct procinfo *out)
{
	return procinfo_read_exe(pid, comm, NULL, NULL, out);
}

int procinfo_read_cgroup(int pid, struct procinfo *out)
{
	char path[64];
	struct buf b = BUF_INIT(64 * 1024);
	int ret;

	out->container_id[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	ret = buf_read_file(&b, path);
	if (ret == 0)
		procinfo_container_id(b.data, b.len, out->container_id);
	buf_release(&b);
	return ret;
}

int procinfo_read_exe(int pid, const char *comm, const char *exe, const char *container_id,
		      struct procinfo *out)
{
	char path[64], target[PATH_MAX];
	ssize_t n;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	if (exe && *exe) {
		n = (ssize_t)snprintf(target, sizeof(target), "%s", exe);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, target, sizeof(target) - 1);
	}
	if (n > 0) {
		const char *base;
		char *del;

		target[n] = '\0';
		del = strstr(target, " (deleted)");
		if (del && del[10] == '\0')
			*del = '\0';
		base = strrchr(target, '/');
		snprintf(out->exe, sizeof(out->exe), "%.255s", base ? base + 1 : target);
		out->exe_known = 1;
	} else {
		if (errno == ENOENT)
			ret = -ESRCH;
		snprintf(out->exe, sizeof(out->exe), "%s", comm && *comm ? comm : "[unknown]");
	}
	if (container_id)
		snprintf(out->container_id, sizeof(out->container_id), "%s", container_id);
	else
		procinfo_read_cgroup(pid, out);
	procinfo_read_cmdline(pid, out);
	return ret;
}

/* /proc/PID/cmdline, cut to PROCINFO_CMDLINE_MAX - 1 bytes (read(2) of a bounded buffer: the
 * file can be as long as the process's whole argument area). */
static void procinfo_read_cmdline(int pid, struct procinfo *out)
{
	char path[64];
	ssize_t n;
	int fd;

	out->cmdline_len = 0;
	out->cmdline[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out->cmdline, sizeof(out->cmdline) - 1);
	close(fd);
	if (n > 0) {
		out->cmdline_len = (size_t)n;
		out->cmdline[n] = '\0';
	}
}

size_t procinfo_split_cmdline(const char *buf, size_t len, const char **argv, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len && n < max) {
		size_t l = strnlen(buf + i, len - i);

		argv[n++] = buf + i;
		i += l + 1;
	}
	return n;
}

int procinfo_parse_stat(const char *text, size_t len, int *ppid, uint64_t *starttime,
			unsigned long *flags)
{
	const char *p = NULL, *end = text + len;
	size_t i;
	int field;

	/* comm is "(...)" and may itself hold ") ": the fields start after the last ')' */
	for (i = len; i-- > 0;)
		if (text[i] == ')') {
			p = text + i + 1;
			break;
		}
	if (!p)
		return -EINVAL;
	/* field 3 (state) follows; ppid is field 4, flags 9, starttime 22 */
	for (field = 3; field <= 22; field++) {
		char num[32];
		size_t n = 0;

		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			return -EINVAL;
		while (p < end && *p != ' ' && n < sizeof(num) - 1)
			num[n++] = *p++;
		num[n] = '\0';
		while (p < end && *p != ' ')
			p++; /* an absurdly long field: cut */
		if (field == 4 || field == 9 || field == 22) {
			char *e;
			unsigned long long v;

			errno = 0;
			v = strtoull(num, &e, 10);
			if (errno || e == num || *e)
				return -EINVAL;
			if (field == 4)
				*ppid = v > INT_MAX ? 0 : (int)v;
			else if (field == 9)
				*flags = (unsigned long)v;
			else
				*starttime = v;
		}
	}
	return 0;
}

int procinfo_read_stat(int pid, struct procinfo *out)
{
	char path[64];
	struct buf b = BUF_INIT(4096);
	unsigned long flags = 0;
	uint64_t start = 0;
	int ppid = 0, rc;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	rc = buf_read_file(&b, path);
	if (rc == 0)
		rc = procinfo_parse_stat(b.data, b.len, &ppid, &start, &flags);
	buf_release(&b);
	if (rc < 0)
		return rc;
	out->ppid = ppid;
	memset(out->ancestors, 0, sizeof(out->ancestors));
	out->ancestors[0] = ppid > 1 ? (uint32_t)ppid : 0;
	out->kernel_thread = (flags & PF_KTHREAD) != 0;
	{
		/* starttime is in clock ticks after boot (CLOCK_BOOTTIME); our times are
		 * CLOCK_MONOTONIC, which stops while the machine sleeps */
		struct timespec bt, mt;
		long tck = sysconf(_SC_CLK_TCK);
		uint64_t hz = tck > 0 ? (uint64_t)tck : 100, boot_now, mono_now, started, ago;

		clock_gettime(CLOCK_BOOTTIME, &bt);
		clock_gettime(CLOCK_MONOTONIC, &mt);
		boot_now = (uint64_t)bt.tv_sec * 1000000000ULL + (uint64_t)bt.tv_nsec;
		mono_now = (uint64_t)mt.tv_sec * 1000000000ULL + (uint64_t)mt.tv_nsec;
		started = start / hz * 1000000000ULL + start % hz * (1000000000ULL / hz);
		ago = boot_now > started ? boot_now - started : 0;
		out->start_ns = mono_now > ago ? mono_now - ago : 1;
	}
	return 0;
}
