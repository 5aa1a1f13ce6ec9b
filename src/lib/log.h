/* log.h: the one place that decides what the user sees on stderr.
 *
 * Library modules (parsers, storage, HTTP) never print: they return a negative errno and fill
 * a struct errmsg. Commands print through log_*() / error() / die().
 * Messages are lowercase, say what failed first, and quote the subject:
 *     error("cannot open '%s': %s", path, strerror(errno));
 */
#ifndef SCORCH_LOG_H
#define SCORCH_LOG_H

#include <stdarg.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap);

#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Print "error: ..." and return -1, so callers can write `return error(...)`. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "fatal: ..." and exit(128). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A programmer mistake: print file:line and abort(). */
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)
void bug_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/* A live status line (no newline yet) is on stderr: messages first erase it, so that they
 * start on a clean line (the status line is redrawn at its next refresh). */
void log_status_line(int active);

/* Route libbpf's messages through this module (warnings stay, debug only with -v -v). */
void log_route_libbpf(void);

/* An error message filled by library code for its caller to print. */
struct errmsg {
	char msg[256];
};
/* Fill e (may be NULL) and return code, so library code can write
 * `return errmsg_set(err, -EINVAL, "bad varint at offset %zu", off);` */
int errmsg_set(struct errmsg *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
