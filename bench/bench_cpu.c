/* Side by side on the CPU: tessel kernels under hand-written traces
 * against the vendor libraries, at the same thread count, in one process.
 *
 *   matmul 1024x1024x1024 f32      tessel vs OpenBLAS cblas_sgemm
 *   conv2d ResNet-50 3x3 layer     tessel vs oneDNN convolution forward
 *     (N=1, C=F=64, H=W=56, R=S=3, padding 1, stride 1, NCHW/OIHW)
 *
 *   bench_cpu [--threads N] [--rounds R] [--min-time S] [--settle S]
 *             [--spin-ns NS] [--matmul TRACE]... [--conv TRACE]...
 *             [--conv-nhwc TRACE]... [--only matmul|conv]
 *
 * TRACE is a trace file (default: bench/traces/matmul_1024.trace and
 * conv_resnet3x3.trace); a file ending in ".c" is taken as a generated
 * kernel edited by hand (`tessel codegen` output), compiled with the flags
 * tessel uses, to measure what a change to the code generator would give.
 * --conv-nhwc schedules tessel's conv2d with layout=NHWC (weights HWIO)
 * instead, on transposed copies of the same inputs (the transposes are
 * not timed; its output is transposed back to be checked): a different
 * problem from the NCHW one, shown for information.
 *
 * Every round times each implementation in turn, odd rounds in reverse
 * order (rt_time: one warm-up, repeats for at least --min-time seconds,
 * median), pausing --settle
 * seconds between implementations so that the idle threads of one runtime
 * (OpenBLAS and libgomp spin after a call) have gone to sleep before the
 * next runs.  --spin-ns sets how long tessel's idle pool threads spin
 * before they sleep (default RT_POOL_DEFAULT_SPIN_NS, 10 ms; libgomp
 * spins about 300000 iterations, OpenBLAS about 2^28 cycles).  The table
 * gives, per implementation, the median over rounds of each round's median
 * GFLOP/s, and the median over rounds of the ratio to the vendor measured
 * in the same round.  Outputs are checked against the vendor's:
 * max |got - want| / max |want|.  The results and the command that
 * produces them (bench/run_cpu.sh) are in bench/RESULTS.md.
 *
 * oneDNN runs the convolution twice: with the layouts it picks itself
 * (format_tag::any, blocked; inputs reordered once before timing, the
 * reorders are not timed) as the reference, and with plain NCHW/OIHW
 * memory for information.  Thread counts: OpenBLAS reads
 * OPENBLAS_NUM_THREADS and oneDNN (OpenMP) OMP_NUM_THREADS when they are
 * loaded, so the program sets both to --threads (and OPENBLAS_CORETYPE to
 * SkylakeX when unset: OpenBLAS 0.3.21 misdetects these CPUs) and
 * re-executes itself when they differ. */
#include <cblas.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "codegen/cpu_kernel.h"
#include "runtime/module.h"
#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/tensor.h"

#ifndef BENCH_TRACE_DIR
#define BENCH_TRACE_DIR "bench/traces"
#endif

#define MAX_ROUNDS 64
#define MAX_TRACES 12
#define MAX_IMPLS (2 * MAX_TRACES + 2)

typedef struct bench_opts {
	int threads;
	int rounds;
	double min_time;
	double settle;
	long spin_ns;
	int nmatmul, nconv, nnhwc;
	const char *matmul[MAX_TRACES];
	const char *conv[MAX_TRACES];
	const char *nhwc[MAX_TRACES];
	bool do_matmul, do_conv;
} bench_opts;

/* One implementation of a workload: how to run it once, where its output
 * lands, and what was measured. */
typedef struct bench_impl {
	char name[128];
	void (*run)(void *arg);
	void (*finish)(void *arg);  /* after a run, makes "out" current; or NULL */
	void *arg;
	const float *out;
	bool reference;
	double gflops[MAX_ROUNDS];
	double ratio[MAX_ROUNDS];
	double error;
} bench_impl;

typedef struct bench_workload {
	const char *name;
	double flops;
	int64_t out_numel;
	int nimpls;
	bench_impl impls[MAX_IMPLS];
} bench_workload;

/* A compiled tessel kernel and the arguments it is called with. */
typedef struct tessel_job {
	cg_cpu_kernel kernel;
	void *args[3];
	tessel_kernel_env env;
	tessel_tensor *out;
	tessel_tensor *nchw;       /* NHWC conv: its output transposed, or NULL */
} tessel_job;

typedef struct sgemm_job {
	const float *a, *b;
	float *c;
	int m, n, k;
} sgemm_job;

/* A oneDNN convolution primitive with its memories (the user's NCHW/OIHW
 * ones, and its own where it chose other layouts) and the NCHW copy of its
 * output (filled by dnnl_job_output after a run, outside timing). */
typedef struct dnnl_job {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t conv;
	dnnl_memory_t mem[3];
	dnnl_memory_t user[3];
	dnnl_exec_arg_t args[3];
	tessel_tensor *out;
	char impl[96];
} dnnl_job;

static int compare_doubles(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* Return the median of the "n" values of "v" (reordered). */
static double median_of(double *v, int n)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, compare_doubles);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Sleep "s" seconds. */
static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* Return max |got - want| / max |want| over "n" floats; infinity when
 * "got" holds a NaN where "want" does not. */
static double max_rel_error(const float *got, const float *want, int64_t n)
{
	double scale = 0, worst = 0;
	for (int64_t i = 0; i < n; i++)
		if (fabs((double)want[i]) > scale)
			scale = fabs((double)want[i]);
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)got[i] - (double)want[i]);
		if (isnan(e) && !isnan(want[i]))
			return INFINITY;
		if (e > worst)
			worst = e;
	}
	return scale > 0 ? worst / scale : worst;
}

/* Return a new f32 tensor of shape "shape", filled from "seed" (0: zeros),
 * or exit. */
static tessel_tensor *new_tensor(int ndim, const int64_t *shape, uint64_t seed)
{
	char err[256];
	tessel_tensor *t = tessel_tensor_new(TESSEL_F32, ndim, shape, err, sizeof(err));
	if (!t) {
		fprintf(stderr, "bench_cpu: %s\n", err);
		exit(1);
	}
	if (seed)
		tessel_tensor_fill_random(t, seed);
	return t;
}

/* Return the contents of the file "path", malloc'ed, or NULL. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (len + 1 == cap) {
			char *more = realloc(buf, cap *= 2);
			if (!more)
				free(buf);
			buf = more;
		}
	}
	fclose(f);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* Fill "job" to run its kernel on "pool" with "in0", "in1" and a new output
 * shaped as the output of "op". */
static void tessel_job_args(tessel_job *job, tessel_op *op, rt_pool *pool,
	tessel_tensor *in0, tessel_tensor *in1)
{
	tessel_stage *y = tessel_op_output_at(op, 0);
	int64_t shape[8];
	for (int i = 0; i < tessel_stage_ndim(y); i++)
		shape[i] = tessel_stage_dim(y, i);
	job->out = new_tensor(tessel_stage_ndim(y), shape, 0);
	job->args[0] = in0->data;
	job->args[1] = in1->data;
	job->args[2] = job->out->data;
	rt_pool_env(pool, &job->env);
}

/* Compile the C kernel source in "path" (a generated kernel edited by
 * hand, for code generation experiments) with the flags tessel uses for
 * this CPU and load its function named after "op" into "job".  Return 0,
 * or -1 after printing why. */
static int load_c_kernel(tessel_op *op, const char *path, tessel_job *job)
{
	char *text = read_text(path);
	char err[2048];
	const char *flags[10];
	rt_cpu_target cpu;
	rt_cpu_target_host(&cpu);
	cg_cpu_flags(&cpu, flags);
	cg_compile_opts co = { .flags = flags };
	int r = text ? cg_compile_c(&co, text, job->kernel.so_path,
		sizeof(job->kernel.so_path), err, sizeof(err)) : -1;
	free(text);
	if (r == 0)
		job->kernel.module = rt_module_open(job->kernel.so_path, err, sizeof(err));
	if (r == 0 && job->kernel.module)
		job->kernel.fn = (tessel_kernel_fn)rt_module_symbol(job->kernel.module,
			tessel_op_name(op), err, sizeof(err));
	if (r == 0 && job->kernel.fn)
		return 0;
	fprintf(stderr, "bench_cpu: %s: %s\n", path, text ? err : "cannot read it");
	return -1;
}

/* Schedule "op" with the trace file "path" (or take the C kernel in
 * "path" when it ends in ".c"), compile it for this CPU and fill "job" to
 * run it on "pool" with "in0", "in1" and a new output.  Return 0, or -1
 * after printing why. */
static int tessel_job_init(tessel_ctx *ctx, tessel_op *op, const char *path,
	rt_pool *pool, tessel_tensor *in0, tessel_tensor *in1, tessel_job *job)
{
	size_t len = strlen(path);
	if (len > 2 && strcmp(path + len - 2, ".c") == 0) {
		if (load_c_kernel(op, path, job))
			return -1;
		tessel_job_args(job, op, pool, in0, in1);
		return 0;
	}
	char *text = read_text(path);
	if (!text) {
		fprintf(stderr, "bench_cpu: cannot read %s\n", path);
		return -1;
	}
	sch_state *st = sch_state_new(ctx, op);
	sch_trace *t = st ? sch_trace_parse(ctx, path, text) : NULL;
	int r = t ? sch_replay(st, t, path) : -1;
	loop_prog *p = r == 0 ? sch_program(st) : NULL;
	rt_cpu_target cpu;
	rt_cpu_target_host(&cpu);
	if (p)
		r = cg_cpu_kernel_build(ctx, p, &cpu, NULL, &job->kernel);
	if (!p || r) {
		fprintf(stderr, "bench_cpu: %s: ", path);
		tessel_ctx_print_error(ctx, stderr);
		r = -1;
	}
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	free(text);
	if (r)
		return -1;
	tessel_job_args(job, op, pool, in0, in1);
	return 0;
}

/* Close the kernel of "job" and free its outputs; a job never set up is
 * all zeros and left alone. */
static void tessel_job_free(tessel_job *job)
{
	if (job->kernel.module)
		cg_cpu_kernel_close(&job->kernel);
	tessel_tensor_free(job->out);
	tessel_tensor_free(job->nchw);
}

static void tessel_run(void *arg)
{
	tessel_job *job = arg;
	job->kernel.fn(job->args, &job->env);
}

static void sgemm_run(void *arg)
{
	sgemm_job *j = arg;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->m, j->n, j->k,
		1.0f, j->a, j->k, j->b, j->n, 0.0f, j->c, j->n);
}

static void dnnl_run(void *arg)
{
	dnnl_job *j = arg;
	dnnl_primitive_execute(j->conv, j->stream, 3, j->args);
	dnnl_stream_wait(j->stream);
}

static int dnnl_check(dnnl_status_t s, const char *what)
{
	if (s == dnnl_success)
		return 0;
	fprintf(stderr, "bench_cpu: oneDNN: %s failed (status %d)\n", what, (int)s);
	return -1;
}

/* Run a oneDNN reorder from "from" to "to" once. */
static int dnnl_reorder_once(dnnl_job *j, dnnl_memory_t from, dnnl_memory_t to)
{
	const dnnl_memory_desc_t *fmd, *tmd;
	dnnl_primitive_desc_t rpd;
	dnnl_primitive_t r;
	if (dnnl_check(dnnl_memory_get_memory_desc(from, &fmd), "memory desc") ||
	    dnnl_check(dnnl_memory_get_memory_desc(to, &tmd), "memory desc") ||
	    dnnl_check(dnnl_reorder_primitive_desc_create(&rpd, fmd, j->engine, tmd,
			j->engine, NULL), "reorder desc"))
		return -1;
	int st = dnnl_check(dnnl_primitive_create(&r, rpd), "reorder");
	dnnl_primitive_desc_destroy(rpd);
	if (st)
		return -1;
	dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
	st = dnnl_check(dnnl_primitive_execute(r, j->stream, 2, a), "reorder");
	dnnl_stream_wait(j->stream);
	dnnl_primitive_destroy(r);
	return st;
}

/* Return the memory for argument "which" of the convolution in "j": the
 * user's when the primitive takes its layout, else a new one in the
 * primitive's layout. */
static int dnnl_arg_memory(dnnl_job *j, int i, dnnl_query_t which)
{
	const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(j->pd, which, 0);
	const dnnl_memory_desc_t *have;
	if (dnnl_check(dnnl_memory_get_memory_desc(j->user[i], &have), "memory desc"))
		return -1;
	if (dnnl_memory_desc_equal(want, have)) {
		j->mem[i] = j->user[i];
		return 0;
	}
	return dnnl_check(dnnl_memory_create(&j->mem[i], want, j->engine,
		DNNL_MEMORY_ALLOCATE), "memory");
}

/* Build the convolution of "j" over the user tensors "x", "w" (NCHW,
 * OIHW) with the layout tag "tag" for the primitive (dnnl_format_tag_any:
 * oneDNN chooses), reorder the inputs into its layouts once, and prepare
 * the reorder of its output back to NCHW.  Return 0 or -1. */
static int dnnl_job_init(dnnl_job *j, dnnl_format_tag_t tag, tessel_tensor *x,
	tessel_tensor *w)
{
	dnnl_dims_t xd = { 1, 64, 56, 56 }, wd = { 64, 64, 3, 3 }, yd = { 1, 64, 56, 56 };
	dnnl_dims_t strides = { 1, 1 }, pad = { 1, 1 };
	dnnl_memory_desc_t ux, uw, uy, cx, cw, cy;
	int64_t yshape[4] = { 1, 64, 56, 56 };
	j->out = new_tensor(4, yshape, 0);
	if (dnnl_check(dnnl_engine_create(&j->engine, dnnl_cpu, 0), "engine") ||
	    dnnl_check(dnnl_stream_create(&j->stream, j->engine,
			dnnl_stream_default_flags), "stream"))
		return -1;
	dnnl_memory_desc_init_by_tag(&ux, 4, xd, dnnl_f32, dnnl_nchw);
	dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, dnnl_oihw);
	dnnl_memory_desc_init_by_tag(&uy, 4, yd, dnnl_f32, dnnl_nchw);
	bool any = tag == dnnl_format_tag_any;
	dnnl_memory_desc_init_by_tag(&cx, 4, xd, dnnl_f32, any ? tag : dnnl_nchw);
	dnnl_memory_desc_init_by_tag(&cw, 4, wd, dnnl_f32, any ? tag : dnnl_oihw);
	dnnl_memory_desc_init_by_tag(&cy, 4, yd, dnnl_f32, any ? tag : dnnl_nchw);
	dnnl_convolution_desc_t cd;
	if (dnnl_check(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
			dnnl_convolution_direct, &cx, &cw, NULL, &cy, strides, pad, pad),
		"convolution desc") ||
	    dnnl_check(dnnl_primitive_desc_create(&j->pd, &cd, NULL, j->engine, NULL),
		"convolution primitive desc") ||
	    dnnl_check(dnnl_primitive_create(&j->conv, j->pd), "convolution"))
		return -1;
	const char *impl = NULL;
	dnnl_primitive_desc_query(j->pd, dnnl_query_impl_info_str, 0, &impl);
	snprintf(j->impl, sizeof(j->impl), "%s", impl ? impl : "?");
	if (dnnl_check(dnnl_memory_create(&j->user[0], &ux, j->engine, x->data), "memory") ||
	    dnnl_check(dnnl_memory_create(&j->user[1], &uw, j->engine, w->data), "memory") ||
	    dnnl_check(dnnl_memory_create(&j->user[2], &uy, j->engine, j->out->data),
		"memory") ||
	    dnnl_arg_memory(j, 0, dnnl_query_src_md) ||
	    dnnl_arg_memory(j, 1, dnnl_query_weights_md) ||
	    dnnl_arg_memory(j, 2, dnnl_query_dst_md))
		return -1;
	for (int i = 0; i < 2; i++)
		if (j->mem[i] != j->user[i] && dnnl_reorder_once(j, j->user[i], j->mem[i]))
			return -1;
	j->args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, j->mem[0] };
	j->args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, j->mem[1] };
	j->args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, j->mem[2] };
	return 0;
}

/* Bring the output of the oneDNN job "arg" into its NCHW user tensor. */
static void dnnl_job_output(void *arg)
{
	dnnl_job *j = arg;
	if (j->mem[2] != j->user[2] && dnnl_reorder_once(j, j->mem[2], j->user[2]))
		exit(1);
}

static void dnnl_job_free(dnnl_job *j)
{
	for (int i = 0; i < 3; i++) {
		if (j->mem[i] && j->mem[i] != j->user[i])
			dnnl_memory_destroy(j->mem[i]);
		if (j->user[i])
			dnnl_memory_destroy(j->user[i]);
	}
	if (j->conv)
		dnnl_primitive_destroy(j->conv);
	if (j->pd)
		dnnl_primitive_desc_destroy(j->pd);
	if (j->stream)
		dnnl_stream_destroy(j->stream);
	if (j->engine)
		dnnl_engine_destroy(j->engine);
	tessel_tensor_free(j->out);
}

/* Append to "w" the implementation "name" that "run"("arg") runs, leaving
 * its output in "out", and return it. */
static bench_impl *add_impl(bench_workload *w, const char *name, void (*run)(void *),
	void *arg, const float *out)
{
	bench_impl *im = &w->impls[w->nimpls++];
	snprintf(im->name, sizeof(im->name), "%s", name);
	im->run = run;
	im->arg = arg;
	im->out = out;
	return im;
}

/* Return the op "name" instantiated with the "n" attributes "keys" =
 * "values", or exit. */
static tessel_op *instantiate(tessel_ctx *ctx, const char *name, int n,
	const char *const *keys, const char *const *values)
{
	tessel_op *op = tessel_ops_instantiate(ctx, name, n, keys, values);
	if (!op) {
		fprintf(stderr, "bench_cpu: %s: ", name);
		tessel_ctx_print_error(ctx, stderr);
		exit(1);
	}
	return op;
}

/* Return the last path component of "path". */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Run each implementation of "w" once, then compute its error against the
 * reference implementation's output. */
static void check_outputs(bench_workload *w)
{
	const float *ref = NULL;
	for (int i = 0; i < w->nimpls; i++) {
		w->impls[i].run(w->impls[i].arg);
		if (w->impls[i].finish)
			w->impls[i].finish(w->impls[i].arg);
		if (w->impls[i].reference)
			ref = w->impls[i].out;
	}
	for (int i = 0; i < w->nimpls; i++)
		w->impls[i].error = ref && w->impls[i].out ?
			max_rel_error(w->impls[i].out, ref, w->out_numel) : NAN;
}

/* Time every implementation of "w" once more (round "round"); odd rounds
 * go in reverse order, so that no implementation always follows another. */
static void time_round(bench_workload *w, const bench_opts *o, int round)
{
	double ref = 0;
	for (int n = 0; n < w->nimpls; n++) {
		int i = round % 2 ? w->nimpls - 1 - n : n;
		bench_impl *im = &w->impls[i];
		rt_timer_opts t = rt_timer_opts_default();
		t.min_total_s = o->min_time;
		rt_timing tm = { 0 };
		sleep_s(o->settle);
		rt_time(im->run, im->arg, &t, &tm);
		im->gflops[round] = tm.median_s > 0 ? w->flops / tm.median_s * 1e-9 : 0;
		if (im->reference)
			ref = im->gflops[round];
	}
	for (int i = 0; i < w->nimpls; i++)
		w->impls[i].ratio[round] = ref > 0 ? w->impls[i].gflops[round] / ref : 0;
}

/* Print one table row per implementation of "w": median GFLOP/s over the
 * rounds, their range, median ratio to the reference, error. */
static void print_rows(bench_workload *w, const bench_opts *o)
{
	for (int i = 0; i < w->nimpls; i++) {
		bench_impl *im = &w->impls[i];
		double g[MAX_ROUNDS], r[MAX_ROUNDS];
		memcpy(g, im->gflops, sizeof(g));
		memcpy(r, im->ratio, sizeof(r));
		double med = median_of(g, o->rounds), lo = g[0], hi = g[o->rounds - 1];
		printf("| %-22s | %d | %-44s | %7.1f | %6.1f-%-6.1f | %5.3f | %.2e |\n",
			w->name, o->threads, im->name, med, lo, hi, median_of(r, o->rounds),
			im->error);
	}
}

/* Return the 1-minute load average, or -1. */
static double load_average(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* Print the date, the machine, the thread counts, the libraries and the
 * load, as comment lines. */
static void print_header(const bench_opts *o)
{
	rt_cpu_target cpu;
	char desc[RT_CPU_TARGET_STR_MAX];
	rt_cpu_target_host(&cpu);
	rt_cpu_target_print(&cpu, desc, sizeof(desc));
	time_t now = time(NULL);
	char date[64];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	const dnnl_version_t *v = dnnl_version();
	printf("# bench_cpu  %s\n# target: %s\n", date, desc);
	printf("# threads %d (tessel pool spinning %ld us, OPENBLAS_NUM_THREADS=%s, "
	       "OMP_NUM_THREADS=%s); rounds %d; min time %.2f s per measurement\n",
		o->threads, o->spin_ns / 1000, getenv("OPENBLAS_NUM_THREADS"),
		getenv("OMP_NUM_THREADS"), o->rounds, o->min_time);
	const char *l2 = getenv("OPENBLAS_L2_SIZE");
	printf("# OpenBLAS %s, core %s (OPENBLAS_CORETYPE=%s%s%s); oneDNN %d.%d.%d\n",
		openblas_get_config(), openblas_get_corename(),
		getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset",
		l2 ? ", OPENBLAS_L2_SIZE=" : "", l2 ? l2 : "", v->major, v->minor, v->patch);
	printf("# load average at start: %.2f\n", load_average());
}

/* Set the thread counts of the vendor libraries to "threads" in the
 * environment (and OPENBLAS_CORETYPE to SkylakeX when unset) and
 * re-execute this program when they were not set so: the libraries read
 * them when they are loaded.  Return only when nothing changed. */
static void ensure_env(int threads, char **argv)
{
	char want[16];
	snprintf(want, sizeof(want), "%d", threads);
	bool changed = false;
	const char *names[] = { "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS" };
	for (int i = 0; i < 2; i++) {
		const char *v = getenv(names[i]);
		if (!v || strcmp(v, want) != 0) {
			setenv(names[i], want, 1);
			changed = true;
		}
	}
	if (!getenv("OPENBLAS_CORETYPE")) {
		setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
		changed = true;
	}
	if (!changed)
		return;
	execv("/proc/self/exe", argv);
	perror("bench_cpu: re-executing with the thread counts set");
	exit(1);
}

/* The matmul workload: tessel under each trace of "o", OpenBLAS. */
static void setup_matmul(bench_workload *w, const bench_opts *o, tessel_ctx *ctx,
	rt_pool *pool, tessel_tensor **keep, tessel_job *jobs, sgemm_job *sg)
{
	static const char *keys[] = { "M", "N", "K" };
	static const char *values[] = { "1024", "1024", "1024" };
	int64_t shape[2] = { 1024, 1024 };
	tessel_op *op = instantiate(ctx, "matmul", 3, keys, values);
	keep[0] = new_tensor(2, shape, 1);
	keep[1] = new_tensor(2, shape, 2);
	keep[2] = new_tensor(2, shape, 0);
	w->name = "matmul 1024^3 f32";
	w->flops = 2.0 * 1024 * 1024 * 1024;
	w->out_numel = 1024 * 1024;
	for (int i = 0; i < o->nmatmul; i++) {
		char name[128];
		if (tessel_job_init(ctx, op, o->matmul[i], pool, keep[0], keep[1], &jobs[i]))
			continue;
		snprintf(name, sizeof(name), "tessel %s", base_name(o->matmul[i]));
		add_impl(w, name, tessel_run, &jobs[i], jobs[i].out->data);
	}
	*sg = (sgemm_job){ keep[0]->data, keep[1]->data, keep[2]->data, 1024, 1024, 1024 };
	add_impl(w, "OpenBLAS cblas_sgemm", sgemm_run, sg, keep[2]->data)->reference = true;
	tessel_op_release(op);
}

/* Return "t" ([1, C, H, W] or [F, C, R, S]) with its axes permuted to
 * [1, H, W, C] or [R, S, C, F] (NHWC, HWIO). */
static tessel_tensor *to_channels_last(const tessel_tensor *t, bool weights)
{
	int64_t a = t->shape[0], b = t->shape[1], h = t->shape[2], w = t->shape[3];
	int64_t shape[4] = { a, h, w, b };
	if (weights)
		shape[0] = h, shape[1] = w, shape[2] = b, shape[3] = a;
	tessel_tensor *r = new_tensor(4, shape, 0);
	const float *src = t->data;
	float *dst = r->data;
	for (int64_t i = 0; i < a; i++)
		for (int64_t j = 0; j < b; j++)
			for (int64_t y = 0; y < h; y++)
				for (int64_t x = 0; x < w; x++) {
					int64_t to = weights ? ((y * w + x) * b + j) * a + i
						: ((i * h + y) * w + x) * b + j;
					dst[to] = src[((i * b + j) * h + y) * w + x];
				}
	return r;
}

/* Transpose the NHWC output of the tessel job "arg" into its NCHW copy. */
static void nhwc_output(void *arg)
{
	tessel_job *job = arg;
	const float *src = job->out->data;
	float *dst = job->nchw->data;
	int64_t c = job->out->shape[3], h = job->out->shape[1], w = job->out->shape[2];
	for (int64_t y = 0; y < h; y++)
		for (int64_t x = 0; x < w; x++)
			for (int64_t k = 0; k < c; k++)
				dst[(k * h + y) * w + x] = src[(y * w + x) * c + k];
}

/* Add tessel's NHWC conv under each --conv-nhwc trace of "o" to "w", on
 * channels-last copies of "keep"[0] and "keep"[1] (kept in "keep"[3],
 * "keep"[4]). */
static void setup_conv_nhwc(bench_workload *w, const bench_opts *o, tessel_ctx *ctx,
	rt_pool *pool, tessel_tensor **keep, tessel_job *jobs)
{
	static const char *keys[] = { "N", "C", "H", "W", "F", "R", "S", "padding",
		"layout" };
	static const char *values[] = { "1", "64", "56", "56", "64", "3", "3", "1",
		"NHWC" };
	if (o->nnhwc == 0)
		return;
	tessel_op *op = instantiate(ctx, "conv2d", 9, keys, values);
	keep[3] = to_channels_last(keep[0], false);
	keep[4] = to_channels_last(keep[1], true);
	int64_t ys[4] = { 1, 64, 56, 56 };
	for (int i = 0; i < o->nnhwc; i++) {
		char name[128];
		if (tessel_job_init(ctx, op, o->nhwc[i], pool, keep[3], keep[4], &jobs[i]))
			continue;
		jobs[i].nchw = new_tensor(4, ys, 0);
		snprintf(name, sizeof(name), "tessel NHWC %s", base_name(o->nhwc[i]));
		add_impl(w, name, tessel_run, &jobs[i], jobs[i].nchw->data)->finish = nhwc_output;
	}
	tessel_op_release(op);
}

/* The conv workload: tessel under each trace of "o", oneDNN with its own
 * layouts (the reference) and with plain NCHW. */
static void setup_conv(bench_workload *w, const bench_opts *o, tessel_ctx *ctx,
	rt_pool *pool, tessel_tensor **keep, tessel_job *jobs, dnnl_job *dj)
{
	static const char *keys[] = { "N", "C", "H", "W", "F", "R", "S", "padding" };
	static const char *values[] = { "1", "64", "56", "56", "64", "3", "3", "1" };
	int64_t xs[4] = { 1, 64, 56, 56 }, ws[4] = { 64, 64, 3, 3 };
	tessel_op *op = instantiate(ctx, "conv2d", 8, keys, values);
	keep[0] = new_tensor(4, xs, 3);
	keep[1] = new_tensor(4, ws, 4);
	w->name = "conv2d 3x3 56x56 64->64";
	w->flops = 2.0 * 64 * 56 * 56 * 64 * 3 * 3;
	w->out_numel = 64 * 56 * 56;
	for (int i = 0; i < o->nconv; i++) {
		char name[128];
		if (tessel_job_init(ctx, op, o->conv[i], pool, keep[0], keep[1], &jobs[i]))
			continue;
		snprintf(name, sizeof(name), "tessel %s", base_name(o->conv[i]));
		add_impl(w, name, tessel_run, &jobs[i], jobs[i].out->data);
	}
	setup_conv_nhwc(w, o, ctx, pool, keep, jobs + o->nconv);
	dnnl_format_tag_t tags[2] = { dnnl_format_tag_any, dnnl_nchw };
	for (int i = 0; i < 2; i++) {
		char name[128];
		if (dnnl_job_init(&dj[i], tags[i], keep[0], keep[1]))
			exit(1);
		snprintf(name, sizeof(name), "oneDNN %s (%s)", i ? "nchw" : "own layouts",
			dj[i].impl);
		bench_impl *im = add_impl(w, name, dnnl_run, &dj[i], dj[i].out->data);
		im->finish = dnnl_job_output;
		im->reference = i == 0;
	}
	tessel_op_release(op);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_cpu [--threads N] [--rounds R] [--min-time S] "
		"[--settle S] [--spin-ns NS]\n                 [--matmul TRACE]... [--conv TRACE]... "
		"[--conv-nhwc TRACE]...\n                 [--only matmul|conv]\n");
	return 2;
}

static int parse_opts(bench_opts *o, int argc, char **argv)
{
	*o = (bench_opts){ .threads = rt_num_cpus(), .rounds = 5, .min_time = 0.3,
		.settle = 0.2, .spin_ns = RT_POOL_DEFAULT_SPIN_NS, .do_matmul = true,
		.do_conv = true };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage();
		i++;
		if (strcmp(a, "--threads") == 0)
			o->threads = atoi(v);
		else if (strcmp(a, "--rounds") == 0)
			o->rounds = atoi(v);
		else if (strcmp(a, "--min-time") == 0)
			o->min_time = atof(v);
		else if (strcmp(a, "--settle") == 0)
			o->settle = atof(v);
		else if (strcmp(a, "--spin-ns") == 0)
			o->spin_ns = atol(v);
		else if (strcmp(a, "--matmul") == 0 && o->nmatmul < MAX_TRACES)
			o->matmul[o->nmatmul++] = v;
		else if (strcmp(a, "--conv") == 0 && o->nconv < MAX_TRACES)
			o->conv[o->nconv++] = v;
		else if (strcmp(a, "--conv-nhwc") == 0 && o->nnhwc < MAX_TRACES)
			o->nhwc[o->nnhwc++] = v;
		else if (strcmp(a, "--only") == 0) {
			o->do_matmul = strcmp(v, "matmul") == 0;
			o->do_conv = strcmp(v, "conv") == 0;
		} else
			return usage();
	}
	if (o->threads < 1 || o->rounds < 1 || o->rounds > MAX_ROUNDS || o->min_time < 0 ||
	    o->settle < 0 || o->spin_ns < 0)
		return usage();
	if (o->nmatmul == 0)
		o->matmul[o->nmatmul++] = BENCH_TRACE_DIR "/matmul_1024.trace";
	if (o->nconv == 0)
		o->conv[o->nconv++] = BENCH_TRACE_DIR "/conv_resnet3x3.trace";
	return 0;
}

int main(int argc, char **argv)
{
	bench_opts o;
	int st = parse_opts(&o, argc, argv);
	if (st)
		return st;
	ensure_env(o.threads, argv);
	print_header(&o);
	tessel_ctx *ctx = tessel_ctx_new();
	rt_pool *pool = rt_pool_new(o.threads);
	rt_pool_set_spin(pool, o.spin_ns);
	static bench_workload work[2];
	static tessel_job mm_jobs[MAX_TRACES], conv_jobs[2 * MAX_TRACES];
	static sgemm_job sg;
	static dnnl_job dj[2];
	tessel_tensor *keep[8] = { 0 };
	int nwork = 0;
	if (o.do_matmul)
		setup_matmul(&work[nwork++], &o, ctx, pool, keep, mm_jobs, &sg);
	if (o.do_conv)
		setup_conv(&work[nwork++], &o, ctx, pool, keep + 3, conv_jobs, dj);
	for (int i = 0; i < nwork; i++)
		check_outputs(&work[i]);
	for (int r = 0; r < o.rounds; r++) {
		for (int i = 0; i < nwork; i++)
			time_round(&work[i], &o, r);
		fprintf(stderr, "round %d/%d done (load %.2f)\n", r + 1, o.rounds, load_average());
	}
	printf("# load average at end: %.2f\n", load_average());
	printf("| workload | threads | implementation | GFLOP/s | range | vs vendor "
	       "| max rel err |\n|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < nwork; i++)
		print_rows(&work[i], &o);
	for (int i = 0; i < 2; i++)
		if (dj[i].engine)
			dnnl_job_free(&dj[i]);
	for (int i = 0; i < MAX_TRACES; i++)
		tessel_job_free(&mm_jobs[i]);
	for (int i = 0; i < 2 * MAX_TRACES; i++)
		tessel_job_free(&conv_jobs[i]);
	for (int i = 0; i < 8; i++)
		tessel_tensor_free(keep[i]);
	rt_pool_free(pool);
	tessel_ctx_free(ctx);
	return 0;
}
