/* Placeholder: being written. */
#include "tools/cli.h"
#include "tools/commands.h"

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_fail("report: not written yet");
}
