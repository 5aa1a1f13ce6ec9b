/* perfmap.h: names of JIT-compiled code, from the files JIT runtimes write for profilers:
 *
 *   /tmp/perf-PID.map   text, one "START SIZE name" line per code object (hex START and SIZE,
 *                       with or without 0x): Node/V8 --perf-basic-prof, .NET
 *                       DOTNET_PerfMapEnabled=1, LuaJIT, the JVM with perf-map-agent, ...
 *   jit-PID.dump        the binary jitdump format (perf's tools/perf/util/jitdump.h): a
 *                       header, then records; JIT_CODE_LOAD (id 0: pid, tid, vma, code_addr,
 *                       code_size, code_index, NUL-terminated name, code bytes) and
 *                       JIT_CODE_MOVE (id 1: pid, tid, vma, old_code_addr, new_code_addr,
 *                       code_size, code_index) are read, others skipped.
 *
 * Code is reused: a later entry for an address wins over an earlier one. Files are appended to
 * while the process runs, so both parsers take more data later (perfmap_feed(),
 * perfmap_feed_jitdump()): a partial last line or record is kept for the next call.
 *
 * The input is hostile (any process, or any user who can write /tmp, writes these files):
 * lines and records are bounded (PERFMAP_MAX_NAME, PERFMAP_MAX_ENTRIES), malformed ones are
 * skipped and counted, never fatal. perfmap_open_for() refuses what is not a regular file
 * owned by the process's user (or root), as perf does.
 *
 * Ownership: struct perfmap owns its entries and names; names returned by perfmap_lookup()
 * are valid until the next feed or perfmap_free(). Not thread-safe. */
#ifndef SCORCH_AGENT_PERFMAP_H
#define SCORCH_AGENT_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct errmsg;
struct perfmap;

#define PERFMAP_MAX_ENTRIES (4u << 20)
#define PERFMAP_MAX_NAME 4096
#define PERFMAP_MAX_FILE (512ull << 20) /* bytes read from one file */

struct perfmap *perfmap_new(void);
void perfmap_free(struct perfmap *m); /* NULL ok */

/* Parse more perf-map text (the bytes after those of the previous calls). Returns 0, or
 * -E2BIG past PERFMAP_MAX_ENTRIES (entries so far stay), -ENOMEM. */
int perfmap_feed(struct perfmap *m, const char *text, size_t len);
/* Parse more jitdump data (the bytes after those of the previous calls; the first call must
 * start with the file header). 0, -EINVAL for a bad header, -E2BIG, -ENOMEM. */
int perfmap_feed_jitdump(struct perfmap *m, const void *data, size_t len, struct errmsg *err);

/* The name of the code that holds addr (the latest entry that does), or NULL. *start (may be
 * NULL) gets the entry's start. */
const char *perfmap_lookup(struct perfmap *m, uint64_t addr, uint64_t *start);

size_t perfmap_count(const struct perfmap *m);
uint64_t perfmap_bad_lines(const struct perfmap *m);

/* Open a JIT file of process pid for reading: regular, not a link, owned by the process's
 * owner or root. path is as the process sees it (e.g. "/tmp/perf-123.map", where 123 is the
 * pid in the process's own pid namespace); it is opened under /proc/PID/root. Returns a
 * descriptor or a negative errno. */
int perfmap_open_for(int pid, const char *path);
/* Open path itself (the host's view), with the same checks against owner (a uid; root is
 * always accepted): for a process that has exited, whose /proc/PID/root is gone, when it lived
 * in our mount namespace. */
int perfmap_open_path(const char *path, uid_t owner);
/* The pid of process pid in its own pid namespace (the last NSpid of /proc/PID/status), or
 * pid itself when unknown. */
int perfmap_ns_pid(int pid);

#endif
