/* `tessel interp`: evaluate an op with the reference interpreter. */
#include <math.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/tensors.h"

static const char interp_help[] =
	"usage: tessel interp SPEC --set NAME=VALUE,... [--in NAME=FILE.npy ...]\n"
	"                     [--seed S] [--out DIR]\n"
	"\n"
	"Evaluate an op with the float64 reference interpreter. Inputs not given\n"
	"with --in are seeded random (the same seed gives the same data on every\n"
	"machine; default seed 0). With --out, every output is written as\n"
	"DIR/NAME.npy. A summary of each output is printed.\n";

/* Options of `tessel interp`. */
typedef struct interp_args {
	const char *spec;
	cli_set set;
	cli_data data;
} interp_args;

static int parse_interp_args(interp_args *a, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		int r = cli_data_option(&a->data, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&a->set, v))
				return -1;
		} else if (missing) {
			return cli_fail("interp: %s needs a value", argv[i]);
		} else if (argv[i][0] == '-' || a->spec) {
			return cli_fail("interp: unexpected argument '%s' (see tessel interp --help)",
				argv[i]);
		} else {
			a->spec = argv[i];
		}
	}
	if (!a->spec)
		return cli_fail("interp: missing SPEC (see tessel interp --help)");
	return 0;
}

static int run_interp(interp_args *a, tessel_ctx *ctx, tessel_op *op)
{
	tessel_tensor *in[64] = { 0 }, *out[64] = { 0 };
	if (tessel_op_num_inputs(op) > 64 || tessel_op_num_outputs(op) > 64)
		return cli_fail("more than 64 inputs or outputs");
	if (cli_make_inputs(&a->data, op, in))
		return 1;
	int status = cli_make_outputs(op, out);
	if (status == 0 && tessel_interp(op, in, out))
		status = cli_fail_ctx(ctx);
	for (int i = 0; status == 0 && i < tessel_op_num_outputs(op); i++)
		cli_summarize(tessel_stage_name(tessel_op_output_at(op, i)), out[i]);
	if (status == 0 && a->data.out_dir)
		status = cli_write_outputs(&a->data, op, out);
	cli_free_tensors(in, tessel_op_num_inputs(op));
	if (out[0])
		cli_free_tensors(out, tessel_op_num_outputs(op));
	return status;
}

int cmd_interp(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, interp_help))
		return 0;
	interp_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_interp_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = run_interp(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_data_free(&a.data);
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}

