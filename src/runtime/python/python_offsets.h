/* python_offsets.h: where CPython keeps what the stack walkers read, per interpreter version.
 *
 * 3.8 - 3.12: a built-in table (verified with offsetof() against the headers of 3.8.18, 3.9.18,
 * 3.10.13, 3.11.7 and 3.12.1). 3.13+: parsed from the interpreter's own _Py_DebugOffsets, the
 * first member of _PyRuntime, so that patch releases that move fields are still read right.
 * Either way python.c checks the result against the live process before using it.
 *
 * _Py_DebugOffsets, as read here (all fields uint64 little-endian):
 *   offset  size  field
 *   0       8     cookie "xdebugpy"
 *   8       8     version (PY_VERSION_HEX)
 *   16      8     free_threaded
 *   24      ...   groups of offsets, each starting with the size of its struct:
 *                 runtime_state {size, finalizing, interpreters_head}
 *                 interpreter_state {size, id, next, threads_head, ...}  (3.14 adds fields)
 *                 thread_state {size, prev, next, interp, current_frame, thread_id,
 *                               native_thread_id, ...}
 *                 interpreter_frame {size, previous, executable, instr_ptr, localsplus, owner..}
 *                 code_object {size, filename, name, qualname, linetable, firstlineno,
 *                              argcount, localsplusnames, localspluskinds, co_code_adaptive..}
 *                 ... bytes_object {size, ob_size, ob_sval}, unicode_object {size, state,
 *                 length, asciiobject_size} ...
 * Groups grow between minor versions, so after interpreter_state each group is found by the
 * shape its first fields must have (thread_state: prev 0, next 8, interp 16; code_object:
 * filename, name, qualname 8 bytes apart; unicode_object: state = length + 16, ascii size =
 * length + 24), never by a fixed index past the first two groups. */
#ifndef SCORCH_AGENT_PYTHON_OFFSETS_H
#define SCORCH_AGENT_PYTHON_OFFSETS_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/python/python.h"

struct errmsg;

#define PYTHON_DEBUG_OFFSETS_MAX 1024 /* bytes of _Py_DebugOffsets we read */

/* Fill off from the built-in table for major.minor (3.8 - 3.13; 3.13 only as a fallback when
 * _Py_DebugOffsets cannot be read). 0, or -ENOTSUP for other versions. */
int python_offsets_builtin(unsigned major, unsigned minor, struct py_offsets *off);

/* Parse the len bytes at the start of _PyRuntime (3.13+). On success fills off, *version_hex
 * (PY_VERSION_HEX) and returns 0. -ENOENT when there is no cookie (not 3.13+ or not the
 * runtime), -ENOTSUP for a free-threaded build or a version before 3.13 (version_hex is still
 * set), -EINVAL when the groups do not have the expected shapes. */
int python_offsets_from_debug(const void *data, size_t len, struct py_offsets *off,
			      uint32_t *version_hex, struct errmsg *err);

#endif
