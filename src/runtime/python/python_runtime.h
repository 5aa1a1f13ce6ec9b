/* python_runtime.h: CPython as a runtime of the framework (runtime/runtime.h): file detection,
 * one instance per CPython process (the py_procs BPF map, eager code-object reads, the offset
 * check retried until the interpreter runs), frame symbolization and the `script` label.
 * Listed in the table of src/runtime/runtime.c. */
#ifndef SCORCH_RUNTIME_PYTHON_RUNTIME_H
#define SCORCH_RUNTIME_PYTHON_RUNTIME_H

#include "runtime/runtime.h"

extern const struct runtime_ops python_runtime_ops;

#define PYTHON_VALIDATE_TRIES 5         /* failed offset checks before giving up */
#define PYTHON_VALIDATE_RETRY_NS (20 * 1000000ULL) /* between two of them */

#endif
