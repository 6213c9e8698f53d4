/* `tessel fuzz-sched`: random legal schedules, each lowered, evaluated,
 * compiled, run in isolation and compared with the interpreter. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen/cpu_kernel.h"
#include "codegen/cuda_kernel.h"
#include "ir/compare.h"
#include "ir/loop_eval.h"
#include "runtime/isolate.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/run_cuda.h"
#include "tools/run_opencl.h"
#include "tools/tensors.h"

static const char fuzz_help[] =
	"usage: tessel fuzz-sched SPEC --set NAME=VALUE,... --count N --seed S\n"
	"                         [--target TARGET] [--keep DIR] [--steps K]\n"
	"\n"
	"Apply N random schedules (K random primitive attempts each, default 12,\n"
	"legal or not: refused ones change nothing) to an op. Each is lowered and\n"
	"evaluated directly, then compiled for TARGET (default: this machine), run\n"
	"in an isolated process and compared with the reference interpreter. A\n"
	"failing schedule is saved as a replayable trace in DIR (default\n"
	"fuzz-failures/). Ends with the line \"N passed, M failed\". With --target\n"
	"opencl the schedules also bind loops to GPU blocks and threads (a third\n"
	"of them start from the default GPU schedule) and run on the OpenCL\n"
	"device. With --target cuda or cuda:sm_NN they are compiled by NVRTC,\n"
	"their launches checked against the architecture's limits (sm_90 for\n"
	"cuda), and run on the CUDA device; without a CUDA driver, a line says\n"
	"so and the schedules are only compiled and checked. Schedules whose\n"
	"launches are over the limits are counted as refused, not failed.\n";

typedef struct fuzz_args {
	const char *spec, *target, *keep;
	cli_set set;
	int count, steps;
	uint64_t seed;
	bool have_count, have_seed;
} fuzz_args;

typedef struct fuzz_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	cg_cpu_kernel *kernel;
	void **args;
	char *error;               /* shared, 512 bytes */
} fuzz_job;

static int fuzz_child(void *arg)
{
	fuzz_job *job = arg;
	if (cg_cpu_kernel_load(job->ctx, job->p, job->kernel)) {
		snprintf(job->error, 512, "%s", tessel_ctx_error(job->ctx)->message);
		return 1;
	}
	rt_pool *pool = rt_pool_new(0);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	int r = job->kernel->fn(job->args, &env);
	rt_pool_free(pool);
	cg_cpu_kernel_close(job->kernel);
	return r;
}

static int parse_fuzz_args(fuzz_args *a, int argc, char **argv)
{
	a->steps = 12;
	a->keep = "fuzz-failures";
	for (int i = 0; i < argc; i++) {
		bool missing = false;
		const char *v;
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			if (cli_set_parse(&a->set, v))
				return -1;
		} else if ((v = cli_option(argc, argv, &i, "--count", &missing))) {
			if (cli_parse_count(v, "--count", 0, 100000000, &a->count))
				return -1;
			a->have_count = true;
		} else if ((v = cli_option(argc, argv, &i, "--seed", &missing))) {
			int s;
			if (cli_parse_count(v, "--seed", 0, 2147483647, &s))
				return -1;
			a->seed = (uint64_t)s;
			a->have_seed = true;
		} else if ((v = cli_option(argc, argv, &i, "--steps", &missing))) {
			if (cli_parse_count(v, "--steps", 1, 1000, &a->steps))
				return -1;
		} else if ((v = cli_option(argc, argv, &i, "--target", &missing))) {
			a->target = v;
		} else if ((v = cli_option(argc, argv, &i, "--keep", &missing))) {
			a->keep = v;
		} else if (missing) {
			return cli_fail("fuzz-sched: %s needs a value", argv[i]);
		} else if (argv[i][0] == '-' || a->spec) {
			return cli_fail("fuzz-sched: unexpected argument '%s' (see tessel fuzz-sched --help)",
				argv[i]);
		} else {
			a->spec = argv[i];
		}
	}
	if (!a->spec || !a->have_count || !a->have_seed)
		return cli_fail("fuzz-sched: SPEC, --count and --seed are required "
			"(see tessel fuzz-sched --help)");
	return 0;
}

/* The data every case shares: inputs, the interpreter's outputs, and
 * outputs in shared memory for the compiled kernels. */
typedef struct fuzz_data {
	int nin, nout;
	tessel_tensor *in[64], *ref[64], *got[64];
	void *shared[64];
	void *args[128];
	tessel_tensor *eval_args[128];
} fuzz_data;

static size_t tensor_bytes(const tessel_tensor *t)
{
	return (size_t)tessel_tensor_numel(t) * tessel_dtype_size(t->dtype);
}

/* Return the worst error of the outputs against the reference, relative to
 * each output's tolerance (<= 1 passes). */
static double worst_error(fuzz_data *d)
{
	double worst = 0;
	for (int i = 0; i < d->nout; i++) {
		double tol = te_tolerance(d->ref[i]->dtype);
		double e = te_rel_error(d->got[i], d->ref[i]);
		double r = tol > 0 ? e / tol : (e > 0 ? INFINITY : 0);
		if (!(r <= worst))
			worst = r;
	}
	return worst;
}

static void poison_outputs(fuzz_data *d)
{
	for (int i = 0; i < d->nout; i++) {
		memset(d->got[i]->data, 0xcd, tensor_bytes(d->got[i]));
		memset(d->shared[i], 0xcd, tensor_bytes(d->got[i]));
	}
}

/* Run "p" on the OpenCL device; NULL when it matches the reference, else
 * what went wrong. */
static const char *check_opencl(tessel_ctx *ctx, const loop_prog *p, fuzz_data *d,
	char *why, size_t len)
{
	if (cli_run_opencl(ctx, p, d->args, NULL, NULL, 60, NULL, why, len))
		return why;
	for (int i = 0; i < d->nout; i++)
		memcpy(d->got[i]->data, d->shared[i], tensor_bytes(d->got[i]));
	if (worst_error(d) > 1) {
		snprintf(why, len, "the OpenCL kernel computes a wrong result");
		return why;
	}
	return NULL;
}

/* The CUDA architecture schedules are compiled for (0: the device's),
 * whether there is no driver to run them on, and whether the launch
 * checks refused the last one. */
typedef struct cuda_fuzz {
	int sm;
	bool no_driver;
	bool refused;
} cuda_fuzz;

/* Compile "p" with NVRTC and check its launches against the limits of
 * cf->sm (sm_90 for 0); return NULL when it fits or the launch checks
 * refuse it (cf->refused set, the reason on stderr: a legal schedule
 * over the limits is no compiler bug), else what went wrong. */
static const char *compile_cuda(tessel_ctx *ctx, const loop_prog *p,
	cuda_fuzz *cf, char *why, size_t len)
{
	rt_gpu_target t;
	cg_cuda_program c;
	char err[512];
	if (rt_gpu_target_for_sm(cf->sm ? cf->sm : RT_CUDA_DEFAULT_SM, &t, err,
			sizeof(err))) {
		snprintf(why, len, "%s", err);
		return why;
	}
	int r = cg_cuda_compile(ctx, p, t.sm, &c);
	if (r == 0 && cg_cuda_check_launch(ctx, &c, &t)) {
		r = tessel_ctx_error(ctx)->kind == TESSEL_ERR_LIMIT ? 0 : -1;
		cf->refused = r == 0;
		if (cf->refused)
			fprintf(stderr, "fuzz-sched: refused: %s\n", tessel_ctx_error(ctx)->message);
	}
	cg_cuda_program_free(&c);
	if (r == 0)
		return NULL;
	snprintf(why, len, "compiling: %s", tessel_ctx_error(ctx)->message);
	return why;
}

/* Compile "p" for CUDA, then run it on the device unless there is no
 * driver (then, the first time, say so and set cf->no_driver); NULL when
 * it fits and matches the reference, else what went wrong. */
static const char *check_cuda(tessel_ctx *ctx, const loop_prog *p, fuzz_data *d,
	cuda_fuzz *cf, char *why, size_t len)
{
	cf->refused = false;
	if (compile_cuda(ctx, p, cf, why, len))
		return why;
	if (cf->no_driver || cf->refused)
		return NULL;
	if (cli_run_cuda(ctx, p, cf->sm, d->args, NULL, NULL, 60, NULL, why, len)) {
		const char *missing = strstr(why, "CUDA driver not found");
		if (!missing)
			return why;
		fprintf(stderr, "fuzz-sched: %s; the schedules are compiled with NVRTC "
			"and their launches checked, not run\n", missing);
		cf->no_driver = true;
		return NULL;
	}
	for (int i = 0; i < d->nout; i++)
		memcpy(d->got[i]->data, d->shared[i], tensor_bytes(d->got[i]));
	if (worst_error(d) > 1) {
		snprintf(why, len, "the CUDA kernel computes a wrong result");
		return why;
	}
	return NULL;
}

/* Check one program: evaluated directly, then compiled and run (for
 * "kind"; "cf" for CUDA).  Return NULL when both match the reference,
 * else what went wrong. */
static const char *check_program(tessel_ctx *ctx, const rt_cpu_target *cpu,
	rt_target_kind kind, cuda_fuzz *cf, const loop_prog *p, fuzz_data *d,
	char *why, size_t len)
{
	poison_outputs(d);
	if (loop_eval(ctx, p, d->eval_args)) {
		snprintf(why, len, "evaluating the loop program: %s", tessel_ctx_error(ctx)->message);
		return why;
	}
	if (worst_error(d) > 1) {
		snprintf(why, len, "the loop program computes a wrong result");
		return why;
	}
	poison_outputs(d);
	if (kind == RT_TARGET_CUDA)
		return check_cuda(ctx, p, d, cf, why, len);
	if (kind == RT_TARGET_OPENCL)
		return check_opencl(ctx, p, d, why, len);
	const char *flags[] = { "-O1", "-march=native", "-fPIC", "-shared", "-std=gnu17", NULL };
	cg_compile_opts o = { .flags = flags };
	cg_cpu_kernel k;
	if (cg_cpu_kernel_compile(ctx, p, cpu, &o, &k)) {
		snprintf(why, len, "compiling: %s", tessel_ctx_error(ctx)->message);
		return why;
	}
	char *error = rt_shared_alloc(512);
	fuzz_job job = { ctx, p, &k, d->args, error };
	char status[256];
	rt_run_status st = rt_run_isolated(fuzz_child, &job, 30, status, sizeof(status));
	if (st != RT_RUN_OK)
		snprintf(why, len, "the kernel %s%s%s", status, error[0] ? ": " : "", error);
	rt_shared_free(error, 512);
	if (st != RT_RUN_OK)
		return why;
	for (int i = 0; i < d->nout; i++)
		memcpy(d->got[i]->data, d->shared[i], tensor_bytes(d->got[i]));
	if (worst_error(d) > 1) {
		snprintf(why, len, "the compiled kernel computes a wrong result "
			"(%.900s)", k.so_path);
		return why;
	}
	return NULL;
}

static void save_failure(const fuzz_args *a, tessel_op *op, const sch_state *st,
	int c, const char *why)
{
	char path[4096];
	if (mkdir(a->keep, 0777) != 0 && errno != EEXIST) {
		cli_fail("--keep %s: %s", a->keep, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s-seed%llu-case%d.trace", a->keep,
		tessel_op_name(op), (unsigned long long)a->seed, c);
	FILE *f = fopen(path, "w");
	char *text = sch_trace_to_text(st->trace);
	if (f) {
		fprintf(f, "# tessel fuzz-sched %s, seed %llu, case %d: %s\n", a->spec,
			(unsigned long long)a->seed, c, why);
		fputs(text, f);
		fclose(f);
	}
	printf("FAIL case %d: %s\n  trace saved as %s\n", c, why, path);
	free(text);
}

static int make_data(const fuzz_args *a, tessel_ctx *ctx, tessel_op *op, fuzz_data *d)
{
	cli_data none = { .seed = a->seed };
	d->nin = tessel_op_num_inputs(op);
	d->nout = tessel_op_num_outputs(op);
	if (d->nin > 64 || d->nout > 64)
		return cli_fail("more than 64 inputs or outputs");
	if (cli_make_inputs(&none, op, d->in) || cli_make_outputs(op, d->ref) ||
	    cli_make_outputs(op, d->got))
		return 1;
	if (tessel_interp(op, d->in, d->ref))
		return cli_fail_ctx(ctx);
	for (int i = 0; i < d->nin; i++) {
		d->args[i] = d->in[i]->data;
		d->eval_args[i] = d->in[i];
	}
	for (int i = 0; i < d->nout; i++) {
		d->shared[i] = rt_shared_alloc(tensor_bytes(d->got[i]));
		d->args[d->nin + i] = d->shared[i];
		d->eval_args[d->nin + i] = d->got[i];
	}
	return 0;
}

static void free_data(fuzz_data *d)
{
	for (int i = 0; i < d->nout; i++)
		if (d->shared[i])
			rt_shared_free(d->shared[i], tensor_bytes(d->got[i]));
	cli_free_tensors(d->in, d->nin);
	cli_free_tensors(d->ref, d->nout);
	cli_free_tensors(d->got, d->nout);
}

static int fuzz_op(const fuzz_args *a, tessel_ctx *ctx, tessel_op *op)
{
	rt_cpu_target cpu;
	rt_target_kind kind;
	char err[512];
	if (rt_target_kind_of(a->target, &kind, err, sizeof(err)) ||
	    (kind == RT_TARGET_CPU &&
	     rt_cpu_target_parse(a->target ? a->target : "cpu", &cpu, err, sizeof(err))))
		return cli_fail_target(err);
	cuda_fuzz cf = { 0, false, false };
	if (kind == RT_TARGET_CUDA && rt_cuda_target_parse(a->target, &cf.sm, err,
			sizeof(err)))
		return cli_fail_target(err);
	bool gpu = kind != RT_TARGET_CPU;
	fuzz_data d = { 0 };
	if (make_data(a, ctx, op, &d)) {
		free_data(&d);
		return 1;
	}
	int passed = 0, failed = 0, refused = 0;
	double start = rt_now_s();
	for (int c = 0; c < a->count; c++) {
		sch_state *st = sch_state_new(ctx, op);
		uint64_t seed = a->seed * 1000003u + (uint64_t)c;
		if (gpu)
			sch_random_gpu_schedule(st, seed, a->steps);
		else
			sch_random_schedule(st, seed, a->steps);
		loop_prog *p = sch_program(st);
		char why[1024];
		const char *bad = p ? check_program(ctx, &cpu, kind, &cf, p, &d, why,
			sizeof(why)) : why;
		if (!p)
			snprintf(why, sizeof(why), "lowering: %s", tessel_ctx_error(ctx)->message);
		if (bad) {
			failed++;
			save_failure(a, op, st, c, bad);
		} else if (cf.refused) {
			refused++;
		} else {
			passed++;
		}
		loop_prog_free(p);
		sch_state_free(st);
	}
	free_data(&d);
	fprintf(stderr, "fuzz-sched: %d schedules in %.1f s\n", a->count, rt_now_s() - start);
	printf("%d passed, %d failed", passed, failed);
	if (refused)
		printf(", %d refused by the launch checks", refused);
	printf("%s\n", cf.no_driver
		? " (compiled by NVRTC and checked, not run: no CUDA driver)" : "");
	return failed ? 1 : 0;
}

int cmd_fuzz_sched(int argc, char **argv)
{
	if (cli_help_asked(argc, argv, fuzz_help))
		return 0;
	fuzz_args a = { 0 };
	int status = 1;
	tessel_ctx *ctx = tessel_ctx_new();
	if (parse_fuzz_args(&a, argc, argv) == 0) {
		tessel_op *op = cli_load_op(ctx, a.spec, &a.set, true);
		if (op) {
			status = fuzz_op(&a, ctx, op);
			tessel_op_release(op);
		}
	}
	cli_set_free(&a.set);
	tessel_ctx_free(ctx);
	return status;
}
