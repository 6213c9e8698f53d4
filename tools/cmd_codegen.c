/* `tessel codegen`: print the source generated for an op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "runtime/target.h"
#include "schedule/state.h"
#include "tools/cli.h"
#include "tools/commands.h"

static const char codegen_help[] =
	"usage: tessel codegen SPEC --set NAME=VALUE,... [--sched TRACE] [--target TARGET]\n"
	"\n"
	"Print the self-contained source generated for an op under its default\n"
	"schedule or the trace file TRACE. TARGET is \"cpu\" (this machine; the\n"
	"default), a CPU target string such as \"cpu -isa=avx2\" or\n"
	"\"cpu -isa=generic\" (plain C), or \"opencl\" (OpenCL C for\n"
	"clBuildProgram; without TRACE, the default GPU schedule: spatial loops\n"
	"fused, split into blocks of 64 threads).\n";

static int print_source(tessel_ctx *ctx, tessel_op *op, const char *sched,
	const char *target)
{
	rt_cpu_target cpu;
	rt_target_kind kind;
	char err[512];
	if (rt_target_kind_of(target, &kind, err, sizeof(err)) ||
	    (kind == RT_TARGET_CPU &&
	     rt_cpu_target_parse(target ? target : "cpu", &cpu, err, sizeof(err))))
		return cli_fail("--target: %s", err);
	bool gpu = kind == RT_TARGET_OPENCL;
	sch_state *st = gpu ? cli_load_gpu_schedule(ctx, op, sched)
		: cli_load_schedule(ctx, op, sched);
	loop_prog *p = st ? sch_program(st) : NULL;
	cg_target t = gpu ? cg_target_opencl() : cg_target_cpu(&cpu);
	char *source = p ? cg_print_c(p, &t, ctx) : NULL;
	int status = 1;
	if (source) {
		fputs(source, stdout);
		status = 0;
	} else if (st) {
		cli_fail_ctx(ctx);
	}
	free(source);
	loop_prog_free(p);
	sch_state_free(st);
	return status;
}

int cmd_codegen(int argc, char **argv)
{
	cli_set set = { 0 };
	const char *spec = NULL, *sched = NULL, *target = NULL;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if (cli_is_help(argv[i])) {
			fputs(codegen_help, stdout);
			return 0;
		} else if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&set, v))
				return cli_set_free(&set), 1;
		} else if ((v = cli_option(argc, argv, &i, "--sched", &missing))) {
			sched = v;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			target = v;
		} else if (missing || argv[i][0] == '-' || spec) {
			cli_set_free(&set);
			return cli_fail("codegen: unexpected argument '%s' (see tessel codegen --help)",
				argv[i]);
		} else {
			spec = argv[i];
		}
	}
	if (!spec)
		return cli_fail("codegen: missing SPEC (see tessel codegen --help)");
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = cli_load_op(ctx, spec, &set, true);
	int status = op ? print_source(ctx, op, sched, target) : 1;
	tessel_op_release(op);
	cli_set_free(&set);
	tessel_ctx_free(ctx);
	return status;
}
