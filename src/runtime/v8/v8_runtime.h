/* v8_runtime.h: the V8 (Node.js) runtime for the runtime framework (runtime/runtime.h).
 *
 *   file_detect  v8_meta.c: V8 by its postmortem metadata (node, libnode.so, any embedder
 *                exporting v8dbg_*), its version and layout, the embedded builtins
 *   attach       the process's v8_procs entry for the BPF walker (v8.bpf.h); claims the
 *                embedded builtins (no CFI: only the walker can unwind them) and every
 *                anonymous executable mapping (the JIT code space), again as they change
 *                (maps_changed); the main script from the command line
 *   note         reads what the sample's V8 words name while the process lives
 *                (v8_symbols.c)
 *   symbolize    frames: functions with their script and line, inlined functions as frames
 *   label        script = the main script (/srv/app.js), so the agent names the service after
 *                it, not "node"
 * docs/v8.md describes the walk, the words and the limits. */
#ifndef SCORCH_RUNTIME_V8_RUNTIME_H
#define SCORCH_RUNTIME_V8_RUNTIME_H

#include <stddef.h>

#include "runtime/runtime.h"

extern const struct runtime_ops v8_runtime_ops;

/* The main script of a node command line (the NUL-separated arguments of /proc/PID/cmdline,
 * len bytes, argv[0] first): the first argument that is not an option or an option's value.
 * Writes it to out (at most outlen - 1 bytes) and returns 1; 0 when there is none (inline
 * code with -e / -p, a REPL, stdin). */
int v8_node_main_script(const char *args, size_t len, char *out, size_t outlen);

#endif
