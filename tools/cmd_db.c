/* Placeholder: being written. */
#include "tools/cli.h"
#include "tools/commands.h"

int cmd_db(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail("db: not written yet");
}
