/* fuzz_cgroup.c: the container-id parser over arbitrary /proc/PID/cgroup text. */
#include "agent/procinfo.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[65];
	int found = procinfo_container_id((const char *)data, size, id);

	if (found && strlen(id) != 64)
		__builtin_trap();
	if (!found && id[0])
		__builtin_trap();
	return 0;
}
