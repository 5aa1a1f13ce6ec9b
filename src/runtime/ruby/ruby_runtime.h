/* ruby_runtime.h: CRuby as a runtime of the framework (runtime/runtime.h): file detection
 * (libruby or a `ruby` executable with the VM linked in), one instance per Ruby process (the
 * rb_procs BPF map, the TLS module id once relocated, the offset check retried until the VM
 * runs, YJIT's code memory claimed), frame names and lines, and the `script` label. Listed in
 * the table of src/runtime/runtime.c. */
#ifndef SCORCH_RUNTIME_RUBY_RUNTIME_H
#define SCORCH_RUNTIME_RUBY_RUNTIME_H

#include "runtime/runtime.h"

extern const struct runtime_ops ruby_runtime_ops;

#endif
