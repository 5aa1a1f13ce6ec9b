/* debugfetch.h: debug files from debuginfod servers, fetched in the background.
 *
 * A worker thread asks elfutils' libdebuginfod for the debug file of each requested build id,
 * one at a time, so that a slow or unreachable server never holds up sampling. Downloads land
 * in libdebuginfod's cache ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client), which
 * keeps them (and the misses, for a while) across runs. Servers: DEBUGINFOD_URLS, plus the
 * urls given to debugfetch_new() (which are added to DEBUGINFOD_URLS for libdebuginfod, before
 * the thread starts). Other libdebuginfod variables (DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXSIZE,
 * ...) apply.
 *
 * Ownership: the caller owns the struct debugfetch (debugfetch_free() cancels a transfer in
 * progress and joins the thread) and the paths of the results it polls (xfree()). Every
 * function is called from one thread (the symbolizer's); the worker is internal. */
#ifndef SCORCH_AGENT_DEBUGFETCH_H
#define SCORCH_AGENT_DEBUGFETCH_H

#include <stddef.h>
#include <stdint.h>

struct debugfetch;
struct errmsg;

#define DEBUGFETCH_MAX_QUEUED 1024 /* requests waiting; more are refused (-ENOSPC) */
#define DEBUGFETCH_MAX_KNOWN 65536 /* build ids remembered as asked (beyond: asked again) */

/* Start fetching from urls (space-separated, may be NULL) and DEBUGINFOD_URLS. Returns NULL
 * with -ENOENT in err when there is no server to ask, or another error. */
struct debugfetch *debugfetch_new(const char *urls, struct errmsg *err);
void debugfetch_free(struct debugfetch *d); /* NULL ok */

/* The servers asked ("URL URL ..."). */
const char *debugfetch_urls(const struct debugfetch *d);

/* Ask for the debug file of a build id (raw bytes). 0 queued, -EEXIST asked before, -ENOSPC
 * the queue is full, -EINVAL bad length. */
int debugfetch_request(struct debugfetch *d, const uint8_t *build_id, size_t len);

struct debugfetch_result {
	char build_id[129]; /* lowercase hex */
	char *path;         /* the debug file in the cache (xfree it), or NULL */
	int error;          /* 0, or a negative errno (-ENOENT: no server has it) */
};
/* Results finished since the last call, at most max. Never blocks. */
size_t debugfetch_poll(struct debugfetch *d, struct debugfetch_result *out, size_t max);
/* Requests not finished yet (queued or downloading). */
size_t debugfetch_pending(struct debugfetch *d);
/* Block until a result is ready or timeout_ms passes: 1 ready, 0 timeout. */
int debugfetch_wait(struct debugfetch *d, int timeout_ms);

#endif
