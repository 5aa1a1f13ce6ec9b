/* fuzz_procmaps.c: libFuzzer target for the /proc/PID/maps parser (src/agent/procmaps.c). */
#include "agent/procmaps.h"
#include "lib/log.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps m;
	struct errmsg err;
	size_t i;

	if (procmaps_parse((const char *)data, size, &m, &err) == 0) {
		for (i = 0; i < m.n; i++) {
			const struct procmaps_entry *e = &m.v[i];

			if (e->end < e->start || strlen(e->path) > 4096)
				__builtin_trap();
			procmaps_find(&m, e->start);
			procmaps_find(&m, e->end - 1);
		}
		procmaps_find(&m, 0);
		procmaps_find(&m, UINT64_MAX);
	}
	procmaps_release(&m);
	return 0;
}
