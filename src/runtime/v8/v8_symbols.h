/* v8_symbols.h: V8 frame words (v8.h) turned into frames: function name (or the name V8
 * inferred for an anonymous function), script and line, and the functions TurboFan and Maglev
 * inlined as frames of their own.
 *
 * What the words name is read from the process while it lives (v8_symbols_note(), called for
 * every sample) and cached per (pid, address): functions (SharedFunctionInfo), Code objects,
 * scripts (name and line ends). Objects move and die: every frame's checksum (v8.h) is checked
 * against the cached object, and a mismatch rereads it (or gives "[v8: unknown function]" when
 * the process is gone). The cache holds at most max_entries objects and is emptied when full.
 *
 * Ownership: strings in the frames returned are owned by the cache and valid until the next
 * call of any v8_symbols_* function. Not thread-safe. */
#ifndef SCORCH_RUNTIME_V8_SYMBOLS_H
#define SCORCH_RUNTIME_V8_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "runtime/v8/v8_heap.h"

struct v8_symbols;

struct v8_symbols *v8_symbols_new(size_t max_entries);
void v8_symbols_free(struct v8_symbols *s); /* NULL ok */

/* Read and cache what the frame words of one sample of pid name (r: the live process). */
void v8_symbols_note(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		     const uint64_t *words, size_t n);

/* The frames of the words at words[0..n) (words[0] has a V8 tag), leaf first: up to max, the
 * count returned, *used set to the words consumed. r may be NULL (the process is gone: the
 * cache only); f names typed frames (may be NULL). */
int v8_symbols_frames(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		      const struct v8_file *f, const uint64_t *words, size_t n, size_t *used,
		      struct runtime_frame *out, int max);

/* Drop every entry of pid (its process was forgotten). */
void v8_symbols_forget_pid(struct v8_symbols *s, uint32_t pid);

struct v8_symbols_stats {
	uint64_t lookups, hits, reads, read_errors, checksum_mismatches, clears;
	uint64_t moved;        /* functions found again after the GC moved them */
	uint64_t code_scans, code_scan_hits;
	size_t functions, codes, scripts;
};
void v8_symbols_stats(const struct v8_symbols *s, struct v8_symbols_stats *st);

#endif
