/* The `tessel` command: one file per subcommand (tools/cmd_*.c),
 * dispatched by name. */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "check", cmd_check, "parse, check and infer an op; print it normalized" },
	{ "ops", cmd_ops, "list the built-in ops and their attributes" },
	{ "interp", cmd_interp, "evaluate an op with the reference interpreter" },
	{ "lower", cmd_lower, "print the loop program of an op under a schedule" },
	{ "codegen", cmd_codegen, "print the source generated for an op" },
	{ "run", cmd_run, "compile, run, time and check an op" },
	{ "fuzz-sched", cmd_fuzz_sched, "check random schedules against the interpreter" },
	{ "tune", cmd_tune, "search for a fast schedule, recording measurements" },
	{ "best", cmd_best, "print the best recorded schedule of an op" },
	{ "db", cmd_db, "export, import or describe the record store" },
	{ "report", cmd_report, "write an HTML report of the tuning records" },
	{ "bench", cmd_bench, "time an op against vendor libraries side by side" },
};

static void usage(FILE *out)
{
	fputs("usage: tessel COMMAND [ARGS...]   (tessel COMMAND --help for more)\n\n"
	      "commands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (cli_is_help(argv[1])) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 2, argv + 2);
	fprintf(stderr, "tessel: error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 1;
}
