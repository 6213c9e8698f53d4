/* `tessel codegen`: print the source generated for an op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c_printer.h"
#include "codegen/cuda_kernel.h"
#include "runtime/gpu_target.h"
#include "runtime/nvrtc.h"
#include "runtime/target.h"
#include "schedule/state.h"
#include "tools/best_schedule.h"
#include "tools/cli.h"
#include "tools/commands.h"

static const char codegen_help[] =
	"usage: tessel codegen SPEC --set NAME=VALUE,... [--sched TRACE | --db PATH]\n"
	"                      [--target TARGET] [--cubin FILE] [--ptx FILE]\n"
	"\n"
	"Print the self-contained source generated for an op under its default\n"
	"schedule or the trace file TRACE. TARGET is \"cpu\" (this machine; the\n"
	"default), a CPU target string such as \"cpu -isa=avx2\" or\n"
	"\"cpu -isa=generic\" (plain C), \"opencl\" (OpenCL C for\n"
	"clBuildProgram), or \"cuda\" or \"cuda:sm_NN\" (CUDA C for NVRTC; sm_90\n"
	"when not given). For GPU targets without TRACE, the default GPU\n"
	"schedule: spatial loops fused, split into blocks of 64 threads.\n"
	"--db PATH (instead of --sched) uses the best record of the op on TARGET\n"
	"in the record store PATH (`tessel tune` makes them), or the default\n"
	"schedule when PATH has none or its trace no longer replays; a line on\n"
	"standard error says which.\n"
	"\n"
	"With --cubin FILE (CUDA only), compile the source with NVRTC into the\n"
	"cubin FILE instead, and print for each kernel its launch and what ptxas\n"
	"reports it uses (registers, shared memory, stack, spills), and whether\n"
	"it can launch within the limits of the architecture; exit 1 when one\n"
	"cannot. No GPU is needed.\n"
	"\n"
	"With --ptx FILE (CUDA only), compile the source with NVRTC into the PTX\n"
	"FILE for the architecture's virtual one (compute_NN) instead: what the\n"
	"device compiler made of it before ptxas, e.g. which loads became\n"
	"ld.shared.v4.f32. With both, both are written.\n";

/* Write the "size" bytes of "data" into the file "path" given by the
 * option "option". */
static int write_file(const char *option, const char *path, const void *data,
	size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return cli_fail("%s: cannot write %s", option, path);
	bool ok = fwrite(data, 1, size, f) == size;
	ok &= fclose(f) == 0;
	return ok ? 0 : cli_fail("%s: cannot write %s", option, path);
}

/* Print the launch of "l" and what it uses from "c", and whether it
 * fits "t"; return whether it does. */
static bool print_kernel_usage(const cg_cuda_program *c, const cg_launch *l,
	const rt_gpu_target *t)
{
	const rt_kernel_usage *use = rt_cubin_kernel(&c->cubin, l->name);
	char why[512] = "neither the cubin nor ptxas's report gives its resources";
	printf("kernel %s: grid %lld x %lld x %lld, block %lld x %lld x %lld", l->name,
		(long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
		(long long)l->block[0], (long long)l->block[1], (long long)l->block[2]);
	if (use)
		printf("; %d registers, %lld bytes shared, %lld bytes stack, %lld bytes "
			"spill stores, %lld bytes spill loads", use->registers,
			(long long)use->shared_bytes, (long long)use->stack_bytes,
			(long long)use->spill_store_bytes, (long long)use->spill_load_bytes);
	bool fits = use && rt_gpu_launch_check(t, use, l->grid, l->block, false, why,
		sizeof(why)) == 0;
	if (fits)
		printf(": fits %s\n", t->name);
	else
		printf(": cannot launch on %s: %s\n", t->name, why);
	return fits;
}

/* Read the architecture of the CUDA target "target" into "t"; 0, or
 * -1 after saying why. */
static int cuda_arch(const char *target, rt_gpu_target *t)
{
	int sm = 0;
	char err[512];
	if (rt_cuda_target_parse(target, &sm, err, sizeof(err)) ||
	    rt_gpu_target_for_sm(sm ? sm : RT_CUDA_DEFAULT_SM, t, err, sizeof(err))) {
		cli_fail_target(err);
		return -1;
	}
	return 0;
}

/* Compile "p" for the CUDA target "target" into the cubin "path" and
 * print what its kernels use. */
static int compile_cubin(tessel_ctx *ctx, const loop_prog *p, const char *target,
	const char *path)
{
	int major = 0, minor = 0;
	char err[512];
	rt_gpu_target t;
	if (cuda_arch(target, &t))
		return 1;
	cg_cuda_program c;
	if (cg_cuda_compile(ctx, p, t.sm, &c)) {
		cg_cuda_program_free(&c);
		return cli_fail_ctx(ctx);
	}
	int status = write_file("--cubin", path, c.cubin.image, c.cubin.size);
	rt_nvrtc_version(&major, &minor, err, sizeof(err));
	if (status == 0)
		printf("cubin: %s (%s, %zu bytes, NVRTC %d.%d)\n", path, t.name,
			c.cubin.size, major, minor);
	for (int i = 0; status == 0 && i < c.plan.nkernels; i++)
		if (!print_kernel_usage(&c, &c.plan.kernels[i], &t))
			status = 1;
	cg_cuda_program_free(&c);
	return status;
}

/* Compile "p" for the CUDA target "target" into the PTX file "path". */
static int compile_ptx(tessel_ctx *ctx, const loop_prog *p, const char *target,
	const char *path)
{
	int major = 0, minor = 0;
	char err[4096];
	rt_gpu_target t;
	if (cuda_arch(target, &t))
		return 1;
	cg_target ct = cg_target_cuda(t.sm);
	char *source = cg_print_c(p, &ct, ctx), *ptx = NULL;
	if (!source)
		return cli_fail_ctx(ctx);
	int status = rt_nvrtc_ptx(source, "tessel.cu", t.sm, &ptx, err, sizeof(err))
		? cli_fail("--ptx: %s", err) : write_file("--ptx", path, ptx, strlen(ptx));
	rt_nvrtc_version(&major, &minor, err, sizeof(err));
	if (status == 0)
		printf("ptx: %s (compute_%d, %zu bytes, NVRTC %d.%d)\n", path, t.sm,
			strlen(ptx), major, minor);
	free(ptx);
	free(source);
	return status;
}

/* Return the target of the dialect for "kind" (CPU C for "cpu"). */
static cg_target dialect_target(rt_target_kind kind, const rt_cpu_target *cpu)
{
	if (kind == RT_TARGET_OPENCL)
		return cg_target_opencl();
	if (kind == RT_TARGET_CUDA)
		return cg_target_cuda(RT_CUDA_DEFAULT_SM);
	return cg_target_cpu(cpu);
}

static int print_source(tessel_ctx *ctx, tessel_op *op, const char *sched,
	const char *db, const char *target, const char *cubin, const char *ptx)
{
	rt_cpu_target cpu;
	rt_target_kind kind;
	char err[512];
	if (rt_target_kind_of(target, &kind, err, sizeof(err)) ||
	    (kind == RT_TARGET_CPU &&
	     rt_cpu_target_parse(target ? target : "cpu", &cpu, err, sizeof(err))))
		return cli_fail_target(err);
	if (cubin && kind != RT_TARGET_CUDA)
		return cli_fail("codegen: --cubin needs --target cuda or cuda:sm_NN");
	if (ptx && kind != RT_TARGET_CUDA)
		return cli_fail("codegen: --ptx needs --target cuda or cuda:sm_NN");
	char said[4500];
	sch_state *st = cli_load_chosen_schedule(ctx, op, sched, db, target,
		kind != RT_TARGET_CPU, said, sizeof(said));
	if (st && db)
		fprintf(stderr, "schedule: %s\n", said);
	loop_prog *p = st ? sch_program(st) : NULL;
	if (st && !p) {
		sch_state_free(st);
		return cli_fail_ctx(ctx);
	}
	if (p && (cubin || ptx)) {
		int status = cubin ? compile_cubin(ctx, p, target, cubin) : 0;
		if (ptx && compile_ptx(ctx, p, target, ptx))
			status = 1;
		loop_prog_free(p);
		sch_state_free(st);
		return status;
	}
	cg_target t = dialect_target(kind, &cpu);
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
	if (cli_help_asked(argc, argv, codegen_help))
		return 0;
	cli_set set = { 0 };
	const char *spec = NULL, *sched = NULL, *db = NULL, *target = NULL, *cubin = NULL,
		*ptx = NULL;
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
		} else if ((v = cli_option(argc, argv, &i, "--cubin", &missing))) {
			cubin = v;
		} else if ((v = cli_option(argc, argv, &i, "--ptx", &missing))) {
			ptx = v;
		} else if (missing || argv[i][0] == '-' || spec) {
			cli_set_free(&set);
			return cli_fail("codegen: unexpected argument '%s' (see tessel codegen --help)",
				argv[i]);
		} else {
			spec = argv[i];
		}
	}
	if (!spec || (db && sched)) {
		cli_set_free(&set);
		if (!spec)
			return cli_fail("codegen: missing SPEC (see tessel codegen --help)");
		return cli_fail("codegen: --db and --sched both give the schedule; use one");
	}
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = cli_load_op(ctx, spec, &set, true);
	int status = op ? print_source(ctx, op, sched, db, target, cubin, ptx) : 1;
	tessel_op_release(op);
	cli_set_free(&set);
	tessel_ctx_free(ctx);
	return status;
}
