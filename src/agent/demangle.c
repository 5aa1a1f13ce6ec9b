/* demangle.c: C++ and Rust demangling via libiberty (see demangle.h). libiberty picks the
 * scheme from the name: Itanium `_Z`, Rust legacy (an Itanium name ending in a 17h<hash>E
 * component, which it removes) and Rust v0 `_R`. */
#include "agent/demangle.h"
#include "lib/alloc.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

int demangle_is_mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

char *demangle(const char *name)
{
	char *raw, *out;

	if (!demangle_is_mangled(name) || strnlen(name, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return NULL;
	raw = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (!raw)
		return NULL;
	/* libiberty allocates with malloc; hand out memory from our allocator. */
	out = xstrdup(raw);
	free(raw);
	return out;
}
