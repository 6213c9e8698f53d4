/* `tessel bench`: an op through tessel and through vendor libraries side by
 * side in this process (tools/vendor.h), on the CPU or on a CUDA device,
 * outputs checked against each other, timings interleaved round by round
 * so that the noise of a shared machine falls on every implementation
 * alike. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/cpu_kernel.h"
#include "ir/compare.h"
#include "runtime/cuda_timing.h"
#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "schedule/state.h"
#include "tessel/ops.h"
#include "tools/bench_cuda.h"
#include "tools/best_schedule.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/tensors.h"
#include "tools/vendor.h"

#define BENCH_MAX_ROUNDS 100
#define BENCH_MAX_VENDORS 8

static const char bench_help[] =
	"usage: tessel bench SPEC --set NAME=VALUE,... [--sched TRACE | --db PATH]\n"
	"                    [--compare VENDOR,...] [--target TARGET] [--threads N]\n"
	"                    [--rounds R] [--min-time S] [--settle S] [--json]\n"
	"       tessel bench --vendors\n"
	"\n"
	"Run an op through tessel and through vendor libraries side by side in this\n"
	"process on the same seeded inputs, check that every vendor's output agrees\n"
	"with tessel's (tolerance by dtype), and time them interleaved: each of R\n"
	"rounds (default 5) times every implementation in turn (odd rounds in the\n"
	"reverse order, so that none always follows another), pausing --settle\n"
	"seconds (default 0.2) before each so that the previous library's threads\n"
	"are idle, each timing the median of repeats over at least --min-time\n"
	"seconds (default 0.2). The table gives per implementation the median over\n"
	"rounds of the round medians, its GFLOP/s, and \"tessel/vendor speed\": the\n"
	"median over rounds of the vendor's time / tessel's time in the same round\n"
	"(above 1: tessel is faster).\n"
	"\n"
	"VENDOR (default: all of the target's): on the CPU, openblas (cblas_sgemm:\n"
	"matmul, batch_matmul, dense)\n"
	"and onednn (direct convolution on its own layouts, inputs reordered once and\n"
	"untimed: conv2d NCHW or NHWC, grouped or not; matmul primitive: matmul,\n"
	"batch_matmul, dense; reorder: transpose; softmax, log_softmax; pooling on\n"
	"NCHW: max_pool2d, avg_pool2d, global_avg_pool; layer_norm, batch_norm): f32,\n"
	"and bf16 or f16 (every input and the output of one dtype) where this CPU\n"
	"has oneDNN kernels for them, but for the normalizations; the matmuls and\n"
	"conv2d also from bf16 or f16 into f32 and from i8, or u8 with i8 weights\n"
	"(weight_dtype), into i32 (out_dtype).\n"
	"OpenBLAS, cuBLAS and cuDNN: f32 only.\n"
	"They are loaded at run time (libopenblas.so.0, libdnnl.so.2); one that\n"
	"is missing or has no equivalent of the op gets a line saying so.\n"
	"Every implementation runs on N threads (default: every CPU); OPENBLAS_CORETYPE\n"
	"is set to SkylakeX when unset on AVX-512 CPUs, which OpenBLAS 0.3.21\n"
	"misdetects. The tessel kernel, compiled for TARGET (default: this machine),\n"
	"runs under the trace file TRACE, the best record of the op on TARGET in the\n"
	"record store PATH (--db; a line says which record, or that there is none and\n"
	"the default schedule is used), or the default schedule. Exit 1 when no\n"
	"vendor could run the op or an output disagrees. --json prints one JSON\n"
	"object instead of the table.\n"
	"\n"
	"--target cuda (or cuda:sm_NN) runs everything on the first CUDA device:\n"
	"tessel's kernels compiled by NVRTC (the default GPU schedule without a\n"
	"trace or record), cublas (cublasSgemm, StridedBatched for batch_matmul:\n"
	"matmul, batch_matmul, dense) and cudnn (cudnnConvolutionForward with the\n"
	"algorithm cudnnFindConvolutionForwardAlgorithm measures fastest: conv2d,\n"
	"NCHW or NHWC, one group), all fp32 without tensor cores (no TF32), loaded\n"
	"at run time (libcuda.so.1, libcublas.so.13, libcudnn.so.9). Inputs are\n"
	"uploaded once; a run is the kernels alone, timed by their durations from\n"
	"CUPTI (CUDA events where CUPTI cannot be loaded) with the L2 evicted\n"
	"before each, and the table gives TFLOP/s.\n"
	"\n"
	"--vendors loads every vendor library (no device needed) and prints a line\n"
	"for each: its name, its target, and what it is, or why it is not\n"
	"available.\n";

typedef struct bench_args {
	const char *spec, *sched, *target, *db, *compare;
	rt_target_kind kind;
	const vendor *vendors[BENCH_MAX_VENDORS];
	int nvendors;
	cli_set set;
	int threads, rounds;
	double min_time, settle;
	bool json;
} bench_args;

/* The compiled tessel kernel and the arguments it is called with. */
typedef struct tessel_job {
	tessel_kernel_fn fn;
	void *args[128];
	tessel_kernel_env env;
	vendor_run *run;             /* where a failure is said */
} tessel_job;

/* One implementation: tessel's (the first) or a vendor's. */
typedef struct bench_impl {
	const char *vendor;          /* NULL: tessel */
	vendor_run run;
	tessel_tensor *out;
	double error;
	double median_s[BENCH_MAX_ROUNDS];
	double speed[BENCH_MAX_ROUNDS];
	int disturbed;               /* rounds whose threads waited for
	                              * CPUs (rt_timing_disturbed) */
} bench_impl;

/* Everything one bench holds: implementations, and vendors skipped with
 * the reason. */
typedef struct bench {
	const bench_args *a;
	tessel_op *op;
	vendor_env env;
	char device[256];            /* CUDA: the device's name */
	char clock[600];             /* CUDA: what timed the runs */
	char schedule[4200];
	int nimpls;
	bench_impl impls[1 + BENCH_MAX_VENDORS];
	int nskipped;
	const char *skipped[BENCH_MAX_VENDORS];
	char reasons[BENCH_MAX_VENDORS][512];
} bench;

/* Add the comma-separated vendor names "list" to a->vendors, each one
 * that runs on a->kind; 0, or -1 after printing an error. */
static int parse_vendors(bench_args *a, const char *list)
{
	char names[256];
	bool cuda = a->kind == RT_TARGET_CUDA;
	a->nvendors = 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		const vendor *v = vendor_find(name);
		if (!v) {
			vendor_names(VENDORS_ALL, names, sizeof(names));
			cli_fail("bench: unknown vendor '%s' in --compare (known: %s)", name,
				names);
			return -1;
		}
		if (v->cuda != cuda) {
			vendor_names(cuda ? VENDORS_CUDA : VENDORS_CPU, names, sizeof(names));
			cli_fail("bench: %s runs on %s, not on --target %s (for it: %s)", v->name,
				v->cuda ? "--target cuda" : "the CPU", a->target ? a->target : "cpu",
				names);
			return -1;
		}
		bool seen = false;
		for (int i = 0; i < a->nvendors; i++)
			seen |= a->vendors[i] == v;
		if (!seen)
			a->vendors[a->nvendors++] = v;
		p += len + (p[len] == ',');
	}
	if (a->nvendors == 0) {
		cli_fail("bench: --compare names no vendor");
		return -1;
	}
	return 0;
}

/* Consume the option at argv[*i] into "a": return 0 when it was one, 1
 * when not (*missing set when it lacks its value), -1 after printing an
 * error in its value. */
static int parse_option(bench_args *a, int argc, char **argv, int *i, bool *missing)
{
	const char *v;
	int r = 0;
	if ((v = cli_option(argc, argv, i, "--set", missing)))
		r = cli_set_parse(&a->set, v);
	else if ((v = cli_option(argc, argv, i, "--sched", missing)))
		a->sched = v;
	else if ((v = cli_option(argc, argv, i, "--db", missing)))
		a->db = v;
	else if ((v = cli_option(argc, argv, i, "--target", missing)))
		a->target = v;
	else if ((v = cli_option(argc, argv, i, "--compare", missing)))
		a->compare = v;
	else if ((v = cli_option(argc, argv, i, "--threads", missing)))
		r = cli_parse_count(v, "--threads", 1, 1024, &a->threads);
	else if ((v = cli_option(argc, argv, i, "--rounds", missing)))
		r = cli_parse_count(v, "--rounds", 1, BENCH_MAX_ROUNDS, &a->rounds);
	else if ((v = cli_option(argc, argv, i, "--min-time", missing)))
		r = cli_parse_seconds(v, "--min-time", &a->min_time);
	else if ((v = cli_option(argc, argv, i, "--settle", missing)))
		r = cli_parse_seconds(v, "--settle", &a->settle);
	else if (strcmp(argv[*i], "--json") == 0)
		a->json = true;
	else
		return 1;
	return r ? -1 : 0;
}

static int parse_bench_args(bench_args *a, int argc, char **argv)
{
	a->threads = rt_num_cpus();
	a->rounds = 5;
	a->min_time = 0.2;
	a->settle = 0.2;
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		int r = parse_option(a, argc, argv, &i, &missing);
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		if (missing)
			return cli_fail("bench: %s needs a value", argv[i]);
		if (argv[i][0] == '-' || a->spec)
			return cli_fail("bench: unexpected argument '%s' (see tessel bench "
				"--help)", argv[i]);
		a->spec = argv[i];
	}
	if (!a->spec)
		return cli_fail("bench: missing SPEC (see tessel bench --help)");
	if (a->db && a->sched)
		return cli_fail("bench: --db and --sched both give the schedule; use one");
	char err[512], names[256];
	if (rt_target_kind_of(a->target, &a->kind, err, sizeof(err)))
		return cli_fail_target(err);
	if (a->kind == RT_TARGET_OPENCL)
		return cli_fail("bench: no vendor library runs on OpenCL; give --target cpu "
			"or cuda");
	vendor_names(a->kind == RT_TARGET_CUDA ? VENDORS_CUDA : VENDORS_CPU, names,
		sizeof(names));
	return parse_vendors(a, a->compare ? a->compare : names);
}

/* Return the schedule of b->op that the options ask for, with what it is
 * in b->schedule; NULL after printing the error. */
static sch_state *load_schedule(bench *b, tessel_ctx *ctx)
{
	const bench_args *a = b->a;
	return cli_load_chosen_schedule(ctx, b->op, a->sched, a->db, a->target,
		a->kind != RT_TARGET_CPU, b->schedule, sizeof(b->schedule));
}

/* Compile b->op under its schedule for the --target CPU into "k". */
static int build_kernel(bench *b, tessel_ctx *ctx, cg_cpu_kernel *k)
{
	rt_cpu_target cpu;
	char err[512];
	if (rt_cpu_target_parse(b->a->target ? b->a->target : "cpu", &cpu, err,
			sizeof(err)))
		return cli_fail_target(err);
	sch_state *st = load_schedule(b, ctx);
	loop_prog *p = st ? sch_program(st) : NULL;
	int status = !st ? 1 : !p ? cli_fail_ctx(ctx) : 0;
	if (status == 0 && cg_cpu_kernel_build(ctx, p, &cpu, NULL, k))
		status = cli_fail_ctx(ctx);
	loop_prog_free(p);
	sch_state_free(st);
	return status;
}

static void tessel_run(void *arg)
{
	tessel_job *j = arg;
	if (j->fn(j->args, &j->env) && !j->run->error[0])
		snprintf(j->run->error, sizeof(j->run->error), "the kernel returned an "
			"error (out of memory?)");
}

/* Return a new zero tensor shaped as "t", or NULL after printing why. */
static tessel_tensor *tensor_like(const tessel_tensor *t)
{
	char err[256];
	tessel_tensor *r = tessel_tensor_new(t->dtype, t->ndim, t->shape, err, sizeof(err));
	if (!r)
		cli_fail("%s", err);
	return r;
}

/* Note that vendor "v" is skipped, with the reason "fmt". */
static void __attribute__((format(printf, 3, 4)))
skip(bench *b, const vendor *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	b->skipped[b->nskipped] = v->name;
	vsnprintf(b->reasons[b->nskipped], sizeof(b->reasons[0]), fmt, ap);
	b->nskipped++;
	va_end(ap);
}

/* Add each --compare vendor that runs the op to the implementations of
 * "b", on the inputs "in" and an output shaped as "like"; note the others
 * with the reason. */
static void add_vendors(bench *b, const vendor_problem *prob, tessel_tensor **in,
	const tessel_tensor *like)
{
	const void *data[64];
	for (int i = 0; i < tessel_op_num_inputs(b->op); i++)
		data[i] = in[i]->data;
	for (int i = 0; i < b->a->nvendors; i++) {
		const vendor *v = b->a->vendors[i];
		char err[512] = "";
		bench_impl *im = &b->impls[b->nimpls];
		vendor_problem in_f32 = *prob;
		in_f32.dtype = in_f32.weight_dtype = in_f32.out_dtype = TESSEL_F32;
		bool dtype_only = !prob->why[0] && v->supports(&in_f32);
		if (!v->supports(prob)) {
			if (dtype_only && prob->dtype == prob->out_dtype)
				skip(b, v, "no equivalent of %s in %s", prob->op,
					tessel_dtype_name(prob->dtype));
			else if (dtype_only)
				skip(b, v, "no equivalent of %s from %s%s%s into %s", prob->op,
					tessel_dtype_name(prob->dtype),
					prob->weight_dtype != prob->dtype ? " with weights of " : "",
					prob->weight_dtype != prob->dtype ?
					tessel_dtype_name(prob->weight_dtype) : "",
					tessel_dtype_name(prob->out_dtype));
			else
				skip(b, v, "no equivalent of %s%s%s%s", prob->op,
					prob->why[0] ? " (" : "", prob->why, prob->why[0] ? ")" : "");
		} else if (v->load(&b->env, err, sizeof(err))) {
			skip(b, v, "not available (%s)", err);
		} else if (!(im->out = tensor_like(like))) {
			skip(b, v, "no memory for its output");
		} else if (v->prepare(&b->env, prob, data, im->out->data, &im->run, err,
				sizeof(err))) {
			skip(b, v, "cannot set up %s (%s)", prob->op, err);
			tessel_tensor_free(im->out);
			im->out = NULL;
		} else {
			im->vendor = v->name;
			b->nimpls++;
		}
	}
}

/* Compute the output of "im" once and make it current; a failure is in
 * im->run.error. */
static void run_once(bench_impl *im)
{
	if (im->run.enqueue) {
		if (im->run.enqueue(im->run.arg))
			return;
	} else {
		im->run.run(im->run.arg);
	}
	if (im->run.finish)
		im->run.finish(im->run.arg);
}

/* Run every implementation once and measure each vendor's output against
 * tessel's.  Return 0, or 1 after printing why one failed. */
static int check_outputs(bench *b)
{
	for (int i = 0; i < b->nimpls; i++) {
		bench_impl *im = &b->impls[i];
		run_once(im);
		if (im->run.error[0])
			return cli_fail("bench: %s failed: %s", im->run.name, im->run.error);
	}
	for (int i = 1; i < b->nimpls; i++)
		b->impls[i].error = te_rel_error(b->impls[0].out, b->impls[i].out);
	return 0;
}

/* Sleep "s" seconds. */
static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* Time the device implementation "im" with "o" into "*t": its kernels'
 * durations from CUPTI (else CUDA events), the L2 evicted before each
 * run; what timed it goes into b->clock.  Return 0, or 1 after printing
 * why it failed. */
static int time_on_device(bench *b, bench_impl *im, const rt_timer_opts *o,
	rt_timing *t)
{
	rt_timer_opts flushed = *o;
	flushed.flush_cache = true;
	rt_cuda_timing ct;
	char err[512] = "";
	if (rt_cuda_time_runs(b->env.cuda, im->run.enqueue, im->run.arg, &flushed, &ct,
			err, sizeof(err)) == RT_TIME_ERROR)
		return cli_fail("bench: timing %s failed: %s", im->run.name,
			im->run.error[0] ? im->run.error : err);
	*t = *rt_cuda_timing_best(&ct);
	if (ct.kernels.runs)
		snprintf(b->clock, sizeof(b->clock), "kernel durations from CUPTI, L2 "
			"evicted before each run");
	else
		snprintf(b->clock, sizeof(b->clock), "CUDA events, L2 evicted before each "
			"run; no kernel durations: %s", ct.cupti_error);
	return 0;
}

/* Time every implementation once more, in turn (round "round"; odd
 * rounds in the reverse order, so that whatever one implementation
 * leaves behind, warm caches or threads still winding down, does not
 * always fall on the same other).  Return 0, or 1 after printing why a
 * device implementation failed. */
static int time_round(bench *b, int round)
{
	rt_timer_opts o = rt_timer_opts_default();
	o.min_total_s = b->a->min_time;
	for (int k = 0; k < b->nimpls; k++) {
		int i = round % 2 ? b->nimpls - 1 - k : k;
		rt_timing t = { 0 };
		sleep_s(b->a->settle);
		if (b->impls[i].run.enqueue) {
			if (time_on_device(b, &b->impls[i], &o, &t))
				return 1;
		} else {
			rt_time(b->impls[i].run.run, b->impls[i].run.arg, &o, &t);
		}
		b->impls[i].median_s[round] = t.median_s;
		b->impls[i].disturbed += rt_timing_disturbed(&t);
	}
	double tessel_s = b->impls[0].median_s[round];
	for (int i = 0; i < b->nimpls; i++)
		b->impls[i].speed[round] = tessel_s > 0
			? b->impls[i].median_s[round] / tessel_s : 0;
	return 0;
}

static int compare_doubles(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* Return the median of the "n" values "v" (a copy is sorted), and their
 * range in "lo", "hi" when not NULL. */
static double median_of(const double *v, int n, double *lo, double *hi)
{
	double s[BENCH_MAX_ROUNDS];
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), compare_doubles);
	if (lo)
		*lo = s[0], *hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Return true when vendor output "im" agrees with tessel's within the
 * tolerance of its dtype. */
static bool agrees(const bench_impl *im)
{
	return im->error <= te_tolerance(im->out->dtype);
}

/* Return the bytes of every input and output of "op": what a run moves
 * at the least, each read or written once. */
static double op_bytes(const tessel_op *op)
{
	double bytes = 0;
	for (int i = 0; i < tessel_op_num_inputs(op) + tessel_op_num_outputs(op); i++) {
		const tessel_stage *t = i < tessel_op_num_inputs(op) ? tessel_op_input_at(op, i) :
			tessel_op_output_at(op, i - tessel_op_num_inputs(op));
		double n = (double)tessel_dtype_size(tessel_stage_dtype(t));
		for (int d = 0; d < tessel_stage_ndim(t); d++)
			n *= (double)tessel_stage_dim(t, d);
		bytes += n;
	}
	return bytes;
}

/* The table's rate column: GFLOP/s (TFLOP/s on a GPU); for an op on
 * integers (a quantized matmul), GOP/s; for an op that does no
 * arithmetic (a transposition), GB/s moved. */
static void print_table(const bench *b)
{
	const bench_args *a = b->a;
	double flops = tessel_op_flops(b->op), int_ops = tessel_op_int_ops(b->op);
	bool cuda = b->env.cuda != NULL, moves = flops == 0 && int_ops == 0;
	double unit = cuda ? 1e-12 : 1e-9;
	const char *rate = cuda ? "TFLOP/s" : "GFLOP/s", *work = "GFLOP";
	if (moves) {
		flops = op_bytes(b->op);
		unit = 1e-9;
		rate = "GB/s";
		work = "GB moved";
	} else if (flops == 0) {
		flops = int_ops;
		rate = cuda ? "TOP/s" : "GOP/s";
		work = "GOP";
	}
	int width = 14;
	for (int i = 0; i < b->nimpls; i++)
		if ((int)strlen(b->impls[i].run.name) > width)
			width = (int)strlen(b->impls[i].run.name);
	char where[300];
	if (cuda)
		snprintf(where, sizeof(where), "%s", b->device);
	else
		snprintf(where, sizeof(where), "%d thread%s", a->threads,
			a->threads == 1 ? "" : "s");
	printf("%s: %.4g %s per run, %s, %d round%s of every implementation "
	       "in turn, odd rounds reversed (median of runs over >= %g s each%s%s)\n",
		tessel_op_name(b->op), flops * 1e-9, work, where,
		a->rounds, a->rounds == 1 ? "" : "s", a->min_time,
		cuda ? "; " : "", cuda ? b->clock : "");
	printf("%-*s  %10s  %19s  %9s  %13s  %s\n", width, "implementation",
		"median ms", "round medians ms", rate, "tessel/vendor", "error vs tessel");
	for (int i = 0; i < b->nimpls; i++) {
		const bench_impl *im = &b->impls[i];
		double lo, hi, med = median_of(im->median_s, a->rounds, &lo, &hi);
		printf("%-*s  %10.4f  %8.4f - %-8.4f  %9.2f  ", width, im->run.name,
			med * 1e3, lo * 1e3, hi * 1e3, med > 0 ? flops / med * unit : 0.0);
		if (!im->vendor)
			printf("%13s  %s\n", "-", "-");
		else
			printf("%13.3f  %.2e %s\n", median_of(im->speed, a->rounds, NULL, NULL),
				im->error, agrees(im) ? "ok" : "WRONG");
	}
	printf("tessel/vendor: median over rounds of the vendor's time / tessel's time "
	       "in the same round; above 1: tessel is faster\n");
	for (int i = 0; i < b->nimpls; i++)
		if (b->impls[i].disturbed)
			printf("warning: in %d of %s's %d rounds its threads waited for a CPU "
			       "over %.0f%% of the time (another program, or two threads "
			       "on one CPU); those times may be too slow\n",
				b->impls[i].disturbed, b->impls[i].run.name, a->rounds,
				RT_DISTURBED_CPU_WAIT * 100);
}

static void print_json_impl(const bench *b, const bench_impl *im)
{
	double flops = tessel_op_flops(b->op), lo, hi;
	double med = median_of(im->median_s, b->a->rounds, &lo, &hi);
	printf("{\"name\": ");
	cli_json_string(stdout, im->run.name);
	printf(", \"vendor\": ");
	if (im->vendor)
		cli_json_string(stdout, im->vendor);
	else
		printf("null");
	printf(", \"median_s\": %.9g, \"round_min_s\": %.9g, \"round_max_s\": %.9g, "
	       "\"gflops\": %.6g, \"gbs\": %.6g, \"disturbed_rounds\": %d", med, lo, hi,
		med > 0 ? flops / med * 1e-9 : 0.0, med > 0 ? op_bytes(b->op) / med * 1e-9 : 0.0,
		im->disturbed);
	if (im->vendor)
		printf(", \"tessel_vs_vendor\": %.6g, \"rel_error\": %.6g, \"ok\": %s",
			median_of(im->speed, b->a->rounds, NULL, NULL),
			isfinite(im->error) ? im->error : 1e308, agrees(im) ? "true" : "false");
	printf("}");
}

static void print_json(const bench *b, bool ok)
{
	printf("{\"op\": ");
	cli_json_string(stdout, tessel_op_name(b->op));
	printf(", \"spec\": ");
	cli_json_string(stdout, b->a->spec);
	printf(", \"target\": \"%s\", \"device\": ", b->env.cuda ? "cuda" : "cpu");
	cli_json_string(stdout, b->env.cuda ? b->device : "");
	printf(", \"clock\": ");
	cli_json_string(stdout, b->env.cuda ? b->clock : "wall clock");
	printf(", \"threads\": %d, \"rounds\": %d, \"flops\": %.17g, \"schedule\": ",
		b->a->threads, b->a->rounds, tessel_op_flops(b->op));
	cli_json_string(stdout, b->schedule);
	printf(", \"ok\": %s, \"implementations\": [", ok ? "true" : "false");
	for (int i = 0; i < b->nimpls; i++) {
		printf(i ? ", " : "");
		print_json_impl(b, &b->impls[i]);
	}
	printf("], \"skipped\": [");
	for (int i = 0; i < b->nskipped; i++) {
		printf("%s{\"vendor\": \"%s\", \"reason\": ", i ? ", " : "", b->skipped[i]);
		cli_json_string(stdout, b->reasons[i]);
		printf("}");
	}
	printf("]}\n");
}

/* Print the lines of the vendors skipped on "out". */
static void print_skipped(const bench *b, FILE *out)
{
	for (int i = 0; i < b->nskipped; i++)
		fprintf(out, "%s: %s\n", b->skipped[i], b->reasons[i]);
}

/* Check, time and report the implementations of "b"; the exit status. */
static int measure(bench *b)
{
	if (b->nimpls == 1) {
		print_skipped(b, stderr);
		return cli_fail("bench: no vendor library could run %s",
			tessel_op_name(b->op));
	}
	if (check_outputs(b))
		return 1;
	for (int r = 0; r < b->a->rounds; r++)
		if (time_round(b, r))
			return 1;
	bool ok = true;
	for (int i = 1; i < b->nimpls; i++)
		ok &= agrees(&b->impls[i]);
	if (b->a->json) {
		print_json(b, ok);
	} else {
		printf("schedule: %s\n", b->schedule);
		print_skipped(b, stdout);
		print_table(b);
	}
	if (!ok)
		return cli_fail("bench: a vendor's output disagrees with tessel's");
	return 0;
}

/* Set up tessel's implementation of "b" with "k" on "pool", inputs "in",
 * outputs "out". */
static void add_tessel(bench *b, tessel_job *job, const cg_cpu_kernel *k,
	rt_pool *pool, tessel_tensor **in, tessel_tensor **out)
{
	int nin = tessel_op_num_inputs(b->op);
	job->fn = k->fn;
	for (int i = 0; i < nin; i++)
		job->args[i] = in[i]->data;
	for (int i = 0; i < tessel_op_num_outputs(b->op); i++)
		job->args[nin + i] = out[i]->data;
	rt_pool_env(pool, &job->env);
	bench_impl *im = &b->impls[b->nimpls++];
	snprintf(im->run.name, sizeof(im->run.name), "tessel");
	im->run.run = tessel_run;
	im->run.arg = job;
	job->run = &im->run;
	im->out = out[0];
}

/* Open the first CUDA device into b->env.cuda, refusing one of another
 * architecture than --target names; 0, or 1 after printing why. */
static int open_cuda(bench *b)
{
	char err[1024];
	int sm = 0;
	if (rt_cuda_target_parse(b->a->target, &sm, err, sizeof(err)))
		return cli_fail_target(err);
	rt_cuda_device *d = rt_cuda_open(0, err, sizeof(err));
	if (!d)
		return cli_fail("bench: %s", err);
	b->env.cuda = d;
	const rt_gpu_target *t = rt_cuda_target(d);
	snprintf(b->device, sizeof(b->device), "%.200s (sm_%d, %d SMs)", t->name, t->sm,
		t->sm_count);
	if (sm && sm != t->sm)
		return cli_fail("bench: the target is sm_%d but the device is %s", sm,
			b->device);
	return 0;
}

/* Set up tessel's implementation of "b" on the CUDA device: its kernels
 * under the schedule the options ask for, inputs "in" uploaded, outputs
 * "out".  The schedule comes first: finding a record describes the task
 * from the device in a child process, which must fork before this
 * process initializes the driver.  Return 0, or 1 after printing why. */
static int add_tessel_cuda(bench *b, tessel_ctx *ctx, tessel_tensor **in,
	tessel_tensor **out)
{
	sch_state *st = load_schedule(b, ctx);
	loop_prog *p = st ? sch_program(st) : NULL;
	bench_impl *im = &b->impls[0];
	int status = !st ? 1 : !p ? cli_fail_ctx(ctx) : open_cuda(b);
	if (status == 0 && bench_cuda_prepare(ctx, p, b->env.cuda, in,
			tessel_op_num_inputs(b->op), out, tessel_op_num_outputs(b->op), &im->run))
		status = cli_fail_ctx(ctx);
	if (status == 0) {
		im->out = out[0];
		b->nimpls = 1;
	}
	loop_prog_free(p);
	sch_state_free(st);
	return status;
}

/* What tessel's CPU implementation holds. */
typedef struct cpu_side {
	cg_cpu_kernel k;
	rt_pool *pool;
	tessel_job job;
} cpu_side;

/* Set up tessel's implementation of "b" on the CPU into "c"; 0, or 1
 * after printing why. */
static int add_tessel_cpu(bench *b, tessel_ctx *ctx, cpu_side *c, tessel_tensor **in,
	tessel_tensor **out)
{
	if (build_kernel(b, ctx, &c->k))
		return 1;
	if (!(c->pool = rt_pool_new(b->a->threads)))
		return cli_fail("cannot start %d threads", b->a->threads);
	add_tessel(b, &c->job, &c->k, c->pool, in, out);
	return 0;
}

/* Bench the bound "op" as "a" asks. */
static int bench_op(const bench_args *a, tessel_ctx *ctx, tessel_op *op)
{
	int nin = tessel_op_num_inputs(op), nout = tessel_op_num_outputs(op);
	if (nin > 64 || nout > 64)
		return cli_fail("more than 64 inputs or outputs");
	bench *b = calloc(1, sizeof(*b));
	if (!b)
		return cli_fail("out of memory");
	*b = (bench){ .a = a, .op = op, .env = { a->threads, NULL } };
	cli_data data = { 0 };
	tessel_tensor *in[64] = { 0 }, *out[64] = { 0 };
	cpu_side cpu = { 0 };
	int status = cli_make_inputs(&data, op, in) || cli_make_outputs(op, out);
	if (status == 0)
		status = a->kind == RT_TARGET_CUDA ? add_tessel_cuda(b, ctx, in, out)
			: add_tessel_cpu(b, ctx, &cpu, in, out);
	if (status == 0) {
		vendor_problem prob;
		vendor_problem_init(&prob, op, &a->set, tessel_ops_find(a->spec) >= 0);
		add_vendors(b, &prob, in, out[0]);
		status = measure(b);
	}
	for (int i = 0; i < b->nimpls; i++) {
		if (b->impls[i].run.release)
			b->impls[i].run.release(b->impls[i].run.arg);
		if (i > 0)
			tessel_tensor_free(b->impls[i].out);
	}
	rt_pool_free(cpu.pool);
	if (cpu.k.module)
		cg_cpu_kernel_close(&cpu.k);
	rt_cuda_close(b->env.cuda);
	free(b);
	cli_free_tensors(in, nin);
	cli_free_tensors(out, nout);
	return status;
}

/* Print a line per vendor: name, target, and what its library is or why
 * it cannot be loaded. */
static int list_vendors(void)
{
	const vendor *v;
	for (int i = 0; (v = vendor_nth(i)); i++) {
		char what[1024];
		int r = v->probe(what, sizeof(what));
		printf("%-9s %-5s %s%s\n", v->name, v->cuda ? "cuda" : "cpu",
			r ? "not available: " : "ok: ", what);
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, bench_help))
		return 0;
	if (argc == 1 && strcmp(argv[0], "--vendors") == 0)
		return list_vendors();
	bench_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_bench_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = bench_op(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}
