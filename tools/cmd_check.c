/* `tessel check`: parse, check, infer and print an op normalized. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"

static const char check_help[] =
	"usage: tessel check SPEC [--set NAME=VALUE,...]\n"
	"\n"
	"Parse an op, check its types, infer its shapes and print it normalized\n"
	"(every inferred shape and range written out). SPEC is FILE.te,\n"
	"FILE.te:OP or a built-in op name. With --set, print the bound op.\n";

int cmd_check(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, check_help))
		return 0;
	cli_set set = { 0 };
	const char *spec = NULL;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&set, v))
				return cli_set_free(&set), 1;
		} else if (missing || argv[i][0] == '-' || spec) {
			cli_set_free(&set);
			return cli_fail("check: unexpected argument '%s' (see tessel check --help)",
				argv[i]);
		} else {
			spec = argv[i];
		}
	}
	if (!spec)
		return cli_fail("check: missing SPEC (see tessel check --help)");
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = cli_load_op(ctx, spec, &set, false);
	int status = 1;
	if (op) {
		char *text = tessel_op_print(op);
		fputs(text, stdout);
		free(text);
		tessel_op_release(op);
		status = 0;
	}
	cli_set_free(&set);
	tessel_ctx_free(ctx);
	return status;
}

