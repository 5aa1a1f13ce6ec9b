/* cmd_record.c: `scorch record` (in progress). */
#include "cli/commands.h"
#include "lib/log.h"

int cmd_record(int argc, char **argv)
{
	return error("record: not built yet");
}
