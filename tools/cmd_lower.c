/* `tessel lower`: print the loop program of an op under a schedule. */
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "ir/loop.h"
#include "schedule/state.h"
#include "schedule/trace.h"

static const char lower_help[] =
	"usage: tessel lower SPEC --set NAME=VALUE,... [--sched TRACE]\n"
	"\n"
	"Print the loop program of an op: its default schedule, or the schedule\n"
	"the trace file TRACE gives (one primitive per line, docs/schedules.md).\n";

int cmd_lower(int argc, char **argv)
{
	cli_set set = { 0 };
	const char *spec = NULL, *sched = NULL;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if (cli_is_help(argv[i])) {
			fputs(lower_help, stdout);
			return 0;
		} else if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&set, v))
				return cli_set_free(&set), 1;
		} else if ((v = cli_option(argc, argv, &i, "--sched", &missing))) {
			sched = v;
		} else if (missing || argv[i][0] == '-' || spec) {
			cli_set_free(&set);
			return cli_fail("lower: unexpected argument '%s' (see tessel lower --help)",
				argv[i]);
		} else {
			spec = argv[i];
		}
	}
	if (!spec)
		return cli_fail("lower: missing SPEC (see tessel lower --help)");
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = cli_load_op(ctx, spec, &set, true);
	sch_state *st = op ? cli_load_schedule(ctx, op, sched) : NULL;
	loop_prog *p = st ? sch_program(st) : NULL;
	int status = 1;
	if (st && !p)
		cli_fail_ctx(ctx);
	if (p) {
		char *text = loop_prog_print(p);
		fputs(text, stdout);
		free(text);
		status = 0;
	}
	loop_prog_free(p);
	sch_state_free(st);
	tessel_op_release(op);
	cli_set_free(&set);
	tessel_ctx_free(ctx);
	return status;
}

