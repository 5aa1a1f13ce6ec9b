/* perl_runtime.h: Perl as a runtime of the framework (runtime/runtime.h): file detection (a
 * perl executable with the interpreter in it, libperl.so), one instance per Perl process (the
 * perl_procs BPF map, PL_thr_key's value once perl made it, the offset check once Perl code
 * runs), sub names and statement lines, and the `script` label. Listed in the table of
 * src/runtime/runtime.c. */
#ifndef SCORCH_RUNTIME_PERL_RUNTIME_H
#define SCORCH_RUNTIME_PERL_RUNTIME_H

#include "runtime/runtime.h"

extern const struct runtime_ops perl_runtime_ops;

#endif
