/* python_tracker.h: the agent's view of every CPython process it profiles. It detects CPython
 * in a process (python.h), publishes what the BPF walker needs in the py_procs map, reads and
 * caches code objects as soon as samples name them (so frames of processes that exit before
 * the profile is built still get names), turns Python frame words into (qualname, file, line),
 * and gives each process its `script` label.
 *
 * Use from the sampler's event loop:
 *   python_tracker_new(py_procs_map_fd)   (fd -1: no BPF, user-space only, for tests)
 *   python_tracker_add_pid(pid)           a new process or an exec; cheap for non-Python
 *   python_tracker_note_sample(...)       for each sample record, in the drain loop
 *   python_tracker_symbolize(...)         when building the profile
 *   python_tracker_forget_pid(pid)        the process exited and its last samples are
 *                                         symbolized: everything of it is dropped
 *
 * Code objects are cached from the first sample that names them, so a process that exits
 * before the profile is built still gets its names (until python_tracker_forget_pid()).
 *
 * Ownership: returned strings are owned by the tracker and valid until its next call that may
 * read or drop code objects (note_sample, symbolize, forget_pid, add_pid): copy them into the
 * profile right away. Not thread-safe. */
#ifndef SCORCH_AGENT_PYTHON_TRACKER_H
#define SCORCH_AGENT_PYTHON_TRACKER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/python.h"

struct python_tracker;

struct python_tracker *python_tracker_new(int py_procs_fd);
void python_tracker_free(struct python_tracker *t); /* NULL ok */

/* Look for CPython in pid. Returns 1 when it is a supported CPython (now in the BPF map), 0
 * when it is not CPython, or a negative errno when it is CPython but cannot be profiled: then
 * *why (may be NULL) points to a one-line reason (owned by the tracker), reported once per pid.
 * An interpreter still starting (-EAGAIN) is retried by later calls and by note_sample. */
int python_tracker_add_pid(struct python_tracker *t, int pid, const char **why);
void python_tracker_forget_pid(struct python_tracker *t, int pid);

/* Read now the code objects that the user words of a sample name (words as in sampler.h, leaf
 * first), unless cached. Cheap on cache hits. Also retries the detection of an interpreter
 * that was still starting: returns, once, the reason when that detection ends in failure
 * (e.g. an unsupported version), else NULL. */
const char *python_tracker_note_sample(struct python_tracker *t, int pid, const uint64_t *words,
				       size_t n);

/* Symbolize the frame made of words w0 (FW_TAG_PYTHON) and w1 (FW_TAG_PYTHON_INSTR).
 * Returns 0 with qualname/filename/line set, or -ENOENT (unknown or reused code object). */
struct python_tracker_sym {
	const char *qualname;
	const char *filename;
	int line;
	int firstlineno;
};
int python_tracker_symbolize(struct python_tracker *t, int pid, uint64_t w0, uint64_t w1,
			     struct python_tracker_sym *out);

/* The `script` label of pid (python.h: python_proc_script), or NULL. */
const char *python_tracker_script(struct python_tracker *t, int pid);
/* "3.11.7" for a tracked pid, or NULL. */
const char *python_tracker_version(struct python_tracker *t, int pid);

/* The native unwinder's interpreter hook (unwinder.h: unwinder_interp_fn): the link-time
 * ranges of CPython's eval loop in file e, so the BPF unwinder calls the Python walker there.
 * ctx is unused (may be the tracker). Returns the number of ranges (0 for other files). */
struct elf_file;
struct unwind_range;
int python_tracker_interp_ranges(void *ctx, struct elf_file *e, const char *path,
				 struct unwind_range *out, int max);

struct python_tracker_stats {
	size_t procs;              /* CPython processes tracked */
	uint64_t frames;           /* Python frames symbolized or noted */
	uint64_t cache_lookups, cache_hits, code_reads, read_errors, checksum_mismatches;
};
void python_tracker_get_stats(const struct python_tracker *t, struct python_tracker_stats *st);
/* Sum over CPUs of the BPF walker's counters (the py_stats map; enum py_stat). Zeros when the
 * map cannot be read. */
struct bpf_map;
void python_tracker_bpf_stats(const struct bpf_map *py_stats, uint64_t out[PYSTAT__COUNT]);

#endif
