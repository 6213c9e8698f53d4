/* Placeholder: being written. */
#include "tools/cli.h"
#include "tools/commands.h"

int cmd_tune(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail("tune: not written yet");
}
