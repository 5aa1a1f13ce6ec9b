/* log.c: stderr logging with levels; libbpf output routed here (see log.h). */
#include "lib/log.h"

#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum log_level current = LOG_WARN;
static int status_line;

static const char *const prefixes[] = {
	[LOG_ERROR] = "error: ",
	[LOG_WARN] = "warning: ",
	[LOG_INFO] = "",
	[LOG_DEBUG] = "debug: ",
};

void log_set_level(enum log_level level)
{
	current = level;
}

enum log_level log_get_level(void)
{
	return current;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char line[1024];

	if (level > current)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "%s%s%s\n", status_line ? "\r\033[K" : "", prefixes[level], line);
}

void log_status_line(int active)
{
	status_line = active;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_ERROR, fmt, ap);
	va_end(ap);
	return -1;
}

void die(const char *fmt, ...)
{
	va_list ap;
	char line[1024];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fatal: %s\n", line);
	exit(128);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "BUG: %s:%d: %s\n", file, line, msg);
	abort();
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;
	enum log_level ours = level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG;

	if (ours > current)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	fprintf(stderr, "%s%s%s%s\n", status_line ? "\r\033[K" : "", prefixes[ours],
		strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	return 0;
}

void log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

int errmsg_set(struct errmsg *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}
