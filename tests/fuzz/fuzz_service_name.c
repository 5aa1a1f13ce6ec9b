/* fuzz_service_name.c: the service naming rules over hostile process facts: a command line
 * (NUL-separated, as /proc/PID/cmdline gives it) whose first fields are taken as the
 * executable, comm, script label and parent's service; and the /proc/PID/stat parser over the
 * same bytes. The name never holds a reserved character and always fits. */
#include "agent/procinfo.h"
#include "agent/service_name.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, out[SERVICE_NAME_MAX], small[5];
	const char *fields[PROCINFO_ARGS_MAX + 4];
	struct service_facts f;
	struct service_rules r = { 1.0 };
	size_t n, i;
	uint64_t start = 0;
	unsigned long flags = 0;
	int ppid = 0;

	if (!size)
		return 0;
	procinfo_parse_stat((const char *)data, size, &ppid, &start, &flags);
	buf = malloc(size + 1);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	n = procinfo_split_cmdline(buf, size - 1, fields, PROCINFO_ARGS_MAX + 4);
	memset(&f, 0, sizeof(f));
	f.kernel_thread = data[0] & 1;
	f.age_s = (data[0] >> 1) & 1 ? 0.5 : 5;
	f.exe = n > 0 ? fields[0] : NULL;
	f.comm = n > 1 ? fields[1] : NULL;
	f.script = n > 2 ? fields[2] : NULL;
	f.parent_service = n > 3 ? fields[3] : NULL;
	f.argv = n > 4 ? fields + 4 : NULL;
	f.argc = n > 4 ? n - 4 : 0;
	if (data[0] & 4)
		f.container_id = f.comm;
	service_name(&f, &r, out, sizeof(out));
	if (strlen(out) >= sizeof(out))
		__builtin_trap();
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] <= ' ' || strchr("{},=\"", out[i]))
			__builtin_trap();
	service_name(&f, &r, small, sizeof(small));
	if (strlen(small) >= sizeof(small))
		__builtin_trap();
	free(buf);
	return 0;
}
