/* demangle.h: C++ (Itanium) and Rust (legacy `_ZN...17h<hash>E` with the hash dropped, and v0
 * `_R...`) symbol demangling, through libiberty's cplus_demangle().
 *
 * Names come from files we do not trust: names longer than DEMANGLE_MAX_INPUT are not
 * demangled, and libiberty's own recursion limit stays on. */
#ifndef SCORCH_AGENT_DEMANGLE_H
#define SCORCH_AGENT_DEMANGLE_H

#include <stddef.h>

#define DEMANGLE_MAX_INPUT 16384

/* 1 if name looks mangled (starts with _Z or _R), so callers can skip the demangler. */
int demangle_is_mangled(const char *name);
/* The demangled form of name, with parameter lists ("ns::f(int)"), in a new string the caller
 * frees with xfree(); NULL when name is not mangled or cannot be demangled. */
char *demangle(const char *name);

#endif
