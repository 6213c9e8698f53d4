/* `tessel lower`: print the loop program of an op under a schedule. */
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "runtime/target.h"
#include "tools/best_schedule.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "schedule/state.h"
#include "schedule/trace.h"

static const char lower_help[] =
	"usage: tessel lower SPEC --set NAME=VALUE,... [--sched TRACE | --db PATH]\n"
	"                    [--target TARGET]\n"
	"\n"
	"Print the loop program of an op: its default schedule, or the schedule\n"
	"the trace file TRACE gives (one primitive per line, docs/schedules.md).\n"
	"--db PATH (instead of --sched) uses the best record of the op on TARGET\n"
	"(default: this machine's CPU; opencl, cuda, cuda:sm_NN as `tessel tune`\n"
	"takes them) in the record store PATH, or the default schedule when PATH\n"
	"has none or its trace no longer replays; a line on standard error says\n"
	"which. With a GPU TARGET, the default schedule is the default GPU one.\n";

/* Return the schedule of "op" the options give, saying on stderr which
 * record gave it with "db"; NULL after printing the error. */
static sch_state *load_schedule(tessel_ctx *ctx, tessel_op *op, const char *sched,
	const char *db, const char *target)
{
	rt_target_kind kind;
	rt_cpu_target cpu;
	char err[512], said[4500];
	if (rt_target_kind_of(target, &kind, err, sizeof(err)) ||
	    (kind == RT_TARGET_CPU &&
	     rt_cpu_target_parse(target ? target : "cpu", &cpu, err, sizeof(err)))) {
		cli_fail_target(err);
		return NULL;
	}
	sch_state *st = cli_load_chosen_schedule(ctx, op, sched, db, target,
		kind != RT_TARGET_CPU, said, sizeof(said));
	if (st && db)
		fprintf(stderr, "schedule: %s\n", said);
	return st;
}

int cmd_lower(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, lower_help))
		return 0;
	cli_set set = { 0 };
	const char *spec = NULL, *sched = NULL, *db = NULL, *target = NULL;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&set, v))
				return cli_set_free(&set), 1;
		} else if ((v = cli_option(argc, argv, &i, "--sched", &missing))) {
			sched = v;
		} else if ((v = cli_option(argc, argv, &i, "--db", &missing))) {
			db = v;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			target = v;
		} else if (missing || argv[i][0] == '-' || spec) {
			cli_set_free(&set);
			return cli_fail("lower: unexpected argument '%s' (see tessel lower --help)",
				argv[i]);
		} else {
			spec = argv[i];
		}
	}
	if (!spec || (db && sched)) {
		cli_set_free(&set);
		if (!spec)
			return cli_fail("lower: missing SPEC (see tessel lower --help)");
		return cli_fail("lower: --db and --sched both give the schedule; use one");
	}
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = cli_load_op(ctx, spec, &set, true);
	sch_state *st = op ? load_schedule(ctx, op, sched, db, target) : NULL;
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

