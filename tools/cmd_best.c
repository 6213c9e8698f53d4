/* Placeholder: being written. */
#include "tools/cli.h"
#include "tools/commands.h"

int cmd_best(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail("best: not written yet");
}
