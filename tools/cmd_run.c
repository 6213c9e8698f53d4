/* `tessel run`: compile an op under a schedule, run it in an isolated
 * process, time it, and check every output against the interpreter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cpu_kernel.h"
#include "tools/run_cuda.h"
#include "tools/run_opencl.h"
#include "ir/compare.h"
#include "runtime/gpu_target.h"
#include "runtime/isolate.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tools/best_schedule.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/tensors.h"

static const char run_help[] =
	"usage: tessel run SPEC --set NAME=VALUE,... [--sched TRACE] [--in NAME=FILE.npy ...]\n"
	"                  [--seed S] [--out DIR] [--target TARGET] [--threads N]\n"
	"                  [--min-time S] [--flush] [--timeout S] [--json] [--db PATH]\n"
	"\n"
	"Compile an op under its default schedule or the trace file TRACE, run it\n"
	"in an isolated process on the inputs (seeded random when not given), time\n"
	"it (median and minimum over repeats of at least --min-time seconds in all,\n"
	"default 0.2; --flush empties the caches between repeats) and compare every\n"
	"output with the reference interpreter (tolerance by dtype; an op whose\n"
	"evaluation would cost over 2^30 reduction steps is compared at chosen\n"
	"elements, and the line says how many). TARGET is a CPU\n"
	"target string (default: this machine), e.g. \"cpu -isa=avx2\", or\n"
	"\"opencl\": the first OpenCL GPU, else the first OpenCL device (PoCL on\n"
	"the CPU), with the default GPU schedule when no TRACE is given (the time\n"
	"is the wall clock of the launches up to clFinish), or \"cuda\" or\n"
	"\"cuda:sm_NN\": the first CUDA GPU (libcuda.so.1), its kernels compiled\n"
	"by NVRTC for its architecture, checked against its limits, and timed by\n"
	"the kernels' durations from CUPTI (CUDA events around the launches where\n"
	"CUPTI cannot be loaded; --flush evicts the L2 between repeats). A kernel\n"
	"that crashes or runs past --timeout (default 60 s) is an error. Exit 1 when\n"
	"an output is wrong. --json prints one JSON object instead of the summary.\n"
	"--db PATH (instead of --sched) uses the best record of the op on TARGET in\n"
	"the record store PATH (`tessel tune` makes them), or the default schedule\n"
	"when PATH has none or its trace no longer replays; a line says which.\n";

typedef struct run_args {
	const char *spec, *sched, *target, *db;
	cli_set set;
	cli_data data;
	int threads;
	double min_time, timeout;
	bool flush, json;
} run_args;

/* What the isolated child needs and where it leaves its results. */
typedef struct run_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	cg_cpu_kernel *kernel;
	int threads;
	int nargs;
	void **args;               /* inputs (copied into the child), outputs (shared) */
	rt_timer_opts timer;
	rt_timing *timing;         /* shared */
	char *error;               /* shared, 512 bytes */
} run_job;

typedef struct kernel_call {
	tessel_kernel_fn fn;
	void *const *args;
	tessel_kernel_env *env;
	int status;
} kernel_call;

static void call_kernel(void *arg)
{
	kernel_call *c = arg;
	c->status |= c->fn(c->args, c->env);
}

static int run_child(void *arg)
{
	run_job *job = arg;
	if (cg_cpu_kernel_load(job->ctx, job->p, job->kernel)) {
		snprintf(job->error, 512, "%s", tessel_ctx_error(job->ctx)->message);
		return 1;
	}
	rt_pool *pool = rt_pool_new(job->threads);
	if (pool)
		rt_pool_bind(pool);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	kernel_call call = { job->kernel->fn, job->args, &env, 0 };
	call_kernel(&call);
	int r = call.status ? -1 : rt_time(call_kernel, &call, &job->timer, job->timing);
	if (call.status)
		snprintf(job->error, 512, "the kernel returned an error (out of memory?)");
	else if (r == RT_TIME_TIMEOUT)
		snprintf(job->error, 512, "timing ran past the time limit");
	rt_pool_free(pool);
	cg_cpu_kernel_close(job->kernel);
	return call.status || r != RT_TIME_OK;
}

static int parse_run_args(run_args *a, int argc, char **argv)
{
	a->threads = 0;
	a->min_time = 0.2;
	a->timeout = 60;
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
		} else if ((v = cli_option(argc, argv, &i, "--sched", &missing))) {
			a->sched = v;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			a->target = v;
		} else if ((v = cli_option(argc, argv, &i, "--db", &missing))) {
			a->db = v;
		} else if ((v = cli_option(argc, argv, &i, "--threads", &missing))) {
			if (cli_parse_count(v, "--threads", 0, 1024, &a->threads))
				return -1;
		} else if ((v = cli_option(argc, argv, &i, "--min-time", &missing))) {
			if (cli_parse_seconds(v, "--min-time", &a->min_time))
				return -1;
		} else if ((v = cli_option(argc, argv, &i, "--timeout", &missing))) {
			if (cli_parse_seconds(v, "--timeout", &a->timeout) || a->timeout <= 0)
				return a->timeout <= 0 ? cli_fail("--timeout must be positive") : -1;
		} else if (strcmp(argv[i], "--flush") == 0) {
			a->flush = true;
		} else if (strcmp(argv[i], "--json") == 0) {
			a->json = true;
		} else if (missing) {
			return cli_fail("run: %s needs a value", argv[i]);
		} else if (argv[i][0] == '-' || a->spec) {
			return cli_fail("run: unexpected argument '%s' (see tessel run --help)",
				argv[i]);
		} else {
			a->spec = argv[i];
		}
	}
	if (!a->spec)
		return cli_fail("run: missing SPEC (see tessel run --help)");
	if (a->db && a->sched)
		return cli_fail("run: --db and --sched both give the schedule; use one");
	return 0;
}

/* Return the schedule of "op" the options give; with --db say which (on
 * stderr with --json, so that stdout stays one JSON object).  NULL after
 * printing the error. */
static sch_state *load_schedule(const run_args *a, tessel_ctx *ctx, tessel_op *op,
	bool gpu)
{
	char said[4500];
	sch_state *st = cli_load_chosen_schedule(ctx, op, a->sched, a->db, a->target,
		gpu, said, sizeof(said));
	if (st && a->db)
		fprintf(a->json ? stderr : stdout, "schedule: %s\n", said);
	return st;
}

/* Bytes of the C-ordered data of "t". */
static size_t tensor_bytes(const tessel_tensor *t)
{
	return (size_t)tessel_tensor_numel(t) * tessel_dtype_size(t->dtype);
}

/* The measured results of one run. */
typedef struct run_result {
	rt_timing timing;
	double error[64];
	int64_t checked[64];   /* elements compared, -1: every one */
	bool ok;
} run_result;

/* Run "p" on the OpenCL device in a child; outputs land in "out". */
static int execute_opencl(const run_args *a, tessel_ctx *ctx, const loop_prog *p,
	tessel_op *op, tessel_tensor **in, tessel_tensor **out, rt_timing *timing)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op);
	void *args[128];
	for (int i = 0; i < nin; i++)
		args[i] = in[i]->data;
	for (int i = 0; i < nout; i++)
		args[nin + i] = rt_shared_alloc(tensor_bytes(out[i]));
	rt_timer_opts timer = rt_timer_opts_default();
	timer.min_total_s = a->min_time;
	timer.timeout_s = a->timeout;
	char why[1024], device[256];
	int status = cli_run_opencl(ctx, p, args, &timer, timing, a->timeout + 30,
		device, why, sizeof(why)) ? cli_fail("%s", why) : 0;
	if (status == 0 && !a->json)
		printf("device: %s (OpenCL)\n", device);
	for (int i = 0; i < nout; i++) {
		if (status == 0)
			memcpy(out[i]->data, args[nin + i], tensor_bytes(out[i]));
		rt_shared_free(args[nin + i], tensor_bytes(out[i]));
	}
	return status;
}

/* Run "p" on the first CUDA device in a child; outputs land in "out". */
static int execute_cuda(const run_args *a, tessel_ctx *ctx, const loop_prog *p,
	tessel_op *op, tessel_tensor **in, tessel_tensor **out, rt_timing *timing)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op), sm = 0;
	char why[1024], device[256];
	if (rt_cuda_target_parse(a->target, &sm, why, sizeof(why)))
		return cli_fail_target(why);
	void *args[128];
	for (int i = 0; i < nin; i++)
		args[i] = in[i]->data;
	for (int i = 0; i < nout; i++)
		args[nin + i] = rt_shared_alloc(tensor_bytes(out[i]));
	rt_timer_opts timer = rt_timer_opts_default();
	timer.min_total_s = a->min_time;
	timer.timeout_s = a->timeout;
	timer.flush_cache = a->flush;
	rt_cuda_timing t;
	int status = cli_run_cuda(ctx, p, sm, args, &timer, &t, a->timeout + 60, device,
		why, sizeof(why)) ? cli_fail("%s", why) : 0;
	if (status == 0)
		*timing = *rt_cuda_timing_best(&t);
	if (status == 0 && !a->json && t.kernels.runs)
		printf("device: %s (CUDA); time: the kernels' durations from CUPTI "
		       "(%d kernel%s per run); CUDA events around the launches: median "
		       "%.6g ms\n", device, t.kernels_per_run, t.kernels_per_run == 1 ? "" : "s",
			t.events.median_s * 1e3);
	else if (status == 0 && !a->json)
		printf("device: %s (CUDA); time: CUDA events around the launches (no "
		       "kernel durations: %s)\n", device, t.cupti_error);
	for (int i = 0; i < nout; i++) {
		if (status == 0)
			memcpy(out[i]->data, args[nin + i], tensor_bytes(out[i]));
		rt_shared_free(args[nin + i], tensor_bytes(out[i]));
	}
	return status;
}

/* Run the compiled "k" on "in" in a child; outputs land in "out". */
static int execute(const run_args *a, tessel_ctx *ctx, const loop_prog *p,
	cg_cpu_kernel *k, tessel_op *op, tessel_tensor **in, tessel_tensor **out,
	rt_timing *timing)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op);
	void *args[128];
	void *shared[64] = { 0 };
	char *error = rt_shared_alloc(512);
	rt_timing *t = rt_shared_alloc(sizeof(rt_timing));
	for (int i = 0; i < nin; i++)
		args[i] = in[i]->data;
	for (int i = 0; i < nout; i++)
		args[nin + i] = shared[i] = rt_shared_alloc(tensor_bytes(out[i]));
	run_job job = { ctx, p, k, a->threads, nin + nout, args,
		rt_timer_opts_default(), t, error };
	job.timer.min_total_s = a->min_time;
	job.timer.flush_cache = a->flush;
	job.timer.timeout_s = a->timeout;
	char why[512];
	rt_run_status st = rt_run_isolated(run_child, &job, a->timeout + 5, why, sizeof(why));
	int status = 0;
	if (st != RT_RUN_OK)
		status = cli_fail("the kernel %s%s%s", why, error[0] ? ": " : "", error);
	for (int i = 0; i < nout; i++) {
		if (status == 0)
			memcpy(out[i]->data, shared[i], tensor_bytes(out[i]));
		rt_shared_free(shared[i], tensor_bytes(out[i]));
	}
	*timing = *t;
	rt_shared_free(t, sizeof(rt_timing));
	rt_shared_free(error, 512);
	return status;
}

static void print_json(const run_args *a, tessel_op *op, const run_result *r,
	const char *so_path)
{
	double flops = tessel_op_flops(op);
	printf("{\"op\": \"%s\", \"spec\": \"%s\", \"ok\": %s, \"median_s\": %.9g, "
	       "\"min_s\": %.9g, \"runs\": %d, \"gflops\": %.6g, \"kernel\": \"%s\", ",
		tessel_op_name(op), a->spec, r->ok ? "true" : "false",
		r->timing.median_s, r->timing.min_s, r->timing.runs,
		r->timing.median_s > 0 ? flops / r->timing.median_s * 1e-9 : 0.0, so_path);
	if (isfinite(r->timing.cpu_wait))
		printf("\"cpu_wait\": %.4g, ", r->timing.cpu_wait);
	else
		printf("\"cpu_wait\": null, ");
	printf("\"outputs\": [");
	for (int i = 0; i < tessel_op_num_outputs(op); i++) {
		tessel_stage *s = tessel_op_output_at(op, i);
		double tol = te_tolerance(tessel_stage_dtype(s));
		printf("%s{\"name\": \"%s\", \"rel_error\": %.6g, \"tolerance\": %g, \"ok\": %s, ",
			i ? ", " : "", tessel_stage_name(s),
			isfinite(r->error[i]) ? r->error[i] : 1e308, tol,
			r->error[i] <= tol ? "true" : "false");
		if (r->checked[i] < 0)
			printf("\"checked_elements\": null}");
		else
			printf("\"checked_elements\": %lld}", (long long)r->checked[i]);
	}
	printf("]}\n");
}

static void print_summary(tessel_op *op, const run_result *r)
{
	double flops = tessel_op_flops(op);
	for (int i = 0; i < tessel_op_num_outputs(op); i++) {
		tessel_stage *s = tessel_op_output_at(op, i);
		double tol = te_tolerance(tessel_stage_dtype(s));
		char where[96] = "";
		int64_t numel = 1;
		for (int d = 0; d < tessel_stage_ndim(s); d++)
			numel *= tessel_stage_dim(s, d);
		if (r->checked[i] >= 0)
			snprintf(where, sizeof(where), " at %lld chosen elements of %lld",
				(long long)r->checked[i], (long long)numel);
		printf("%s: relative error %.3g%s (tolerance %g) %s\n", tessel_stage_name(s),
			r->error[i], where, tol, r->error[i] <= tol ? "ok" : "WRONG");
	}
	printf("time: median %.6g ms, min %.6g ms over %d runs", r->timing.median_s * 1e3,
		r->timing.min_s * 1e3, r->timing.runs);
	double int_ops = tessel_op_int_ops(op);
	if (flops > 0 && r->timing.median_s > 0)
		printf(", %.2f GFLOP/s", flops / r->timing.median_s * 1e-9);
	else if (int_ops > 0 && r->timing.median_s > 0)
		printf(", %.2f GOP/s", int_ops / r->timing.median_s * 1e-9);
	printf("\n");
	if (rt_timing_disturbed(&r->timing))
		printf("warning: the kernel's threads waited for a CPU %.0f%% of the time "
			"they were timed (another program, or two threads on one CPU), so "
			"the time may be too slow\n",
			r->timing.cpu_wait * 100);
}

/* Build the kernel of "op" under the schedule, run and check it. */
static int run_op(run_args *a, tessel_ctx *ctx, tessel_op *op)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op);
	if (nin > 64 || nout > 64)
		return cli_fail("more than 64 inputs or outputs");
	rt_cpu_target cpu;
	rt_target_kind kind;
	char err[512];
	if (rt_target_kind_of(a->target, &kind, err, sizeof(err)) ||
	    (kind == RT_TARGET_CPU &&
	     rt_cpu_target_parse(a->target ? a->target : "cpu", &cpu, err, sizeof(err))))
		return cli_fail_target(err);
	bool gpu = kind != RT_TARGET_CPU;
	tessel_tensor *in[64] = { 0 }, *out[64] = { 0 }, *ref[64] = { 0 };
	if (cli_make_inputs(&a->data, op, in))
		return 1;
	int status = cli_make_outputs(op, out) || cli_make_outputs(op, ref);
	te_check_plan plan = { 0 };
	if (status == 0 && te_check_reference(op, in, ref, 0, a->data.seed, &plan))
		status = cli_fail_ctx(ctx);
	sch_state *st = status ? NULL : load_schedule(a, ctx, op, gpu);
	if (!st)
		status = 1;
	loop_prog *p = st ? sch_program(st) : NULL;
	if (st && !p)
		status = cli_fail_ctx(ctx);
	cg_cpu_kernel k = { .so_path = "opencl" };
	if (kind == RT_TARGET_CUDA)
		snprintf(k.so_path, sizeof(k.so_path), "cuda");
	if (p && !gpu && cg_cpu_kernel_compile(ctx, p, &cpu, NULL, &k))
		status = cli_fail_ctx(ctx);
	run_result r = { .ok = true };
	if (p && status == 0)
		status = kind == RT_TARGET_CUDA
			? execute_cuda(a, ctx, p, op, in, out, &r.timing)
			: gpu ? execute_opencl(a, ctx, p, op, in, out, &r.timing)
			: execute(a, ctx, p, &k, op, in, out, &r.timing);
	for (int i = 0; status == 0 && i < nout; i++) {
		r.error[i] = te_check_error(&plan, i, out[i], ref[i]);
		r.checked[i] = te_check_count(&plan, i);
		r.ok &= r.error[i] <= te_tolerance(out[i]->dtype);
	}
	te_check_plan_free(&plan);
	if (status == 0 && a->json)
		print_json(a, op, &r, k.so_path);
	else if (status == 0)
		print_summary(op, &r);
	if (status == 0 && a->data.out_dir)
		status = cli_write_outputs(&a->data, op, out);
	if (status == 0 && !r.ok)
		status = 1;
	loop_prog_free(p);
	sch_state_free(st);
	cli_free_tensors(in, nin);
	cli_free_tensors(out, nout);
	cli_free_tensors(ref, nout);
	return status;
}

int cmd_run(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, run_help))
		return 0;
	run_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_run_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = run_op(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_data_free(&a.data);
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}
