/* Measuring candidates: a builder of pthreads, each with its own context,
 * compiling through the kernel cache with the compiler probed once (CPU),
 * checking each launch against the device's limits (OpenCL), or
 * compiling with NVRTC and checking the cubin's resources (CUDA); a
 * runner forking a fresh worker per candidate on the CPU (rt_run_isolated)
 * that loads the kernel, and on a GPU one worker per batch (rt_worker)
 * that opens the device on its first candidate, keeps it open, and for
 * each builds the kernel with clBuildProgram (OpenCL,
 * tuner/runner_opencl.c) or loads the builder's cubin (CUDA,
 * tuner/runner_cuda.c); a worker writes its outputs and timing to shared memory
 * allocated once per measurer; on the CPU, a last pass timing the batch's
 * candidates together in one worker, in turns (tuner/round_robin.h); a
 * check of each new best against the interpreter.  What differs per
 * target kind is one row of "runners". */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/cpu_kernel.h"
#include "codegen/opencl_kernel.h"
#include "ir/compare.h"
#include "runtime/cuda.h"
#include "runtime/isolate.h"
#include "runtime/threadpool.h"
#include "runtime/workspace.h"
#include "tuner/measure.h"
#include "tuner/round_robin.h"
#include "tuner/runner_cuda.h"
#include "tuner/runner_opencl.h"

/* How long past its timeout a worker gets to load, start and exit before
 * it is killed (its timer stops by itself at the timeout). */
#define WORKER_GRACE_S 0.5

/* Before a pass that times the batch together, each candidate runs alone
 * for at most this long: enough to catch a crash or a hang and to plan
 * its visits, not to rank it. */
#define ALONE_MIN_TOTAL_S 0.01

/* What a worker leaves in shared memory for the measurer. */
typedef struct worker_report {
	tune_error error;
	rt_timing timing;
	char msg[256];
	bool no_device;            /* the worker could not open the device */
	double open_s;             /* GPU: opening the device for this job */
	double runner_s;           /* GPU: loading, copying, timing, copying back */
} worker_report;

typedef struct built_kernel built_kernel;

/* What the worker of one candidate runs, in shared memory: written by the
 * measurer before each job, so that a worker serving a batch reads it
 * there (its pointers are to the batch, which the worker was forked
 * after). */
typedef struct worker_job {
	const loop_prog *p;
	built_kernel *kernel;
	rt_timer_opts timer;
} worker_job;

/* What a GPU worker holds open between the jobs of a batch, set in the
 * worker's copy of the measurer only: the measurer itself never opens a
 * device (a process that has initialized CUDA cannot fork workers that
 * use it). */
typedef struct worker_device {
	tune_opencl_session *opencl;
	tune_cuda_session *cuda;
} worker_device;

struct tune_measurer {
	const tune_task *task;
	tune_measure_opts o;
	rt_timer_opts alone_timer; /* of the passes that run candidates alone */
	rt_timer_opts check_timer; /* one run, for a check's outputs */
	int threads;
	int build_jobs;
	int nin, nout;
	tessel_tensor **inputs;    /* seeded random, nin */
	tessel_tensor **ref;       /* the interpreter's outputs, nout */
	bool have_ref;             /* "ref" computed */
	te_check_plan plan;        /* the elements "ref" holds and checks
	                            * compare */
	tessel_tensor *got;        /* views of the shared outputs, nout */
	size_t *out_bytes;         /* of each shared output */
	void **args;               /* inputs, then shared outputs */
	worker_report *report;     /* shared */
	worker_job *job;           /* shared */
	rt_worker *worker;         /* the batch's, on the GPU: one worker
	                            * serves the candidates of a batch */
	worker_device held;        /* in a GPU worker only */
	int workers_started;
	tune_measure_times times;  /* spent so far */
	double best_s;             /* of the best checked (or set) so far */
	char cc_version[256];
	cg_compile_opts cc;
	char disasm[4096];         /* the disassembler; "" when none (not
	                            * asked for, GPU tasks, or none found) */
	int code_unread;           /* built candidates whose code it could
	                            * not read */
	char code_error[256];      /* why, for the last of them */
};

static const char *const error_names[TUNE_ERR_COUNT] = {
	"ok", "lower", "build", "crash", "timeout", "runtime", "wrong"
};

const char *tune_error_name(tune_error e)
{
	return e >= 0 && e < TUNE_ERR_COUNT ? error_names[e] : "?";
}

tune_measure_opts tune_measure_opts_default(void)
{
	tune_measure_opts o = {
		.build_jobs = 0,
		.threads = 0,
		.timeout_s = 10,
		.timer = rt_timer_opts_default(),
		.passes = TUNE_DEFAULT_PASSES,
		.seed = 1,
	};
	o.timer.min_total_s = 0.05;
	return o;
}

/* ---- the measurer --------------------------------------------------------- */

/* Return a new C-ordered tensor shaped like the stage "s", or NULL with
 * the reason in "err". */
static tessel_tensor *tensor_like(const tessel_stage *s, char *err, size_t errlen)
{
	int64_t shape[TESSEL_MAX_DIMS];
	for (int d = 0; d < tessel_stage_ndim(s); d++)
		shape[d] = tessel_stage_dim(s, d);
	return tessel_tensor_new(tessel_stage_dtype(s), tessel_stage_ndim(s), shape,
		err, errlen);
}

static size_t tensor_bytes(const tessel_tensor *t)
{
	return (size_t)tessel_tensor_numel(t) * tessel_dtype_size(t->dtype);
}

/* Allocate the seeded random inputs of "m" and point its first arguments
 * at them. */
static int make_inputs(tune_measurer *m, char *err, size_t errlen)
{
	for (int i = 0; i < m->nin; i++) {
		m->inputs[i] = tensor_like(tessel_op_input_at(m->task->op, i), err, errlen);
		if (!m->inputs[i])
			return -1;
		tessel_tensor_fill_random(m->inputs[i], te_input_seed(m->o.seed, i));
		m->args[i] = m->inputs[i]->data;
	}
	return 0;
}

/* Allocate the reference outputs of "m" (computed later) and the shared
 * outputs the workers write, viewed as tensors of the same shape. */
static int make_outputs(tune_measurer *m, char *err, size_t errlen)
{
	for (int i = 0; i < m->nout; i++) {
		m->ref[i] = tensor_like(tessel_op_output_at(m->task->op, i), err, errlen);
		if (!m->ref[i])
			return -1;
		m->out_bytes[i] = tensor_bytes(m->ref[i]);
		m->got[i] = *m->ref[i];
		m->got[i].owns_data = 0;
		m->got[i].data = rt_shared_alloc(m->out_bytes[i]);
		if (!m->got[i].data) {
			snprintf(err, errlen, "out of shared memory for output %d", i);
			return -1;
		}
		m->args[m->nin + i] = m->got[i].data;
	}
	return 0;
}

/* Probe the compiler once for every kernel of "m". */
static int probe_compiler(tune_measurer *m, char *err, size_t errlen)
{
	char why[512];
	if (cg_compiler_version(NULL, m->cc_version, sizeof(m->cc_version), why,
		sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	m->cc.cc_version = m->cc_version;
	if (!m->o.read_code || cg_code_stats_tool(m->disasm, sizeof(m->disasm)))
		m->disasm[0] = 0;
	return 0;
}

static int check_opts(const tune_measure_opts *o, char *err, size_t errlen)
{
	if (!(o->timeout_s > 0))
		snprintf(err, errlen, "the timeout must be positive");
	else if (o->build_jobs < 0 || o->threads < 0)
		snprintf(err, errlen, "negative build jobs or threads");
	else if (o->passes < 1)
		snprintf(err, errlen, "passes must be at least 1, not %d", o->passes);
	else if (o->timer.warmup < 0 || o->timer.min_repeats < 1 ||
		 o->timer.max_repeats < o->timer.min_repeats ||
		 !(o->timer.min_total_s >= 0) || !(o->timer.timeout_s >= 0))
		snprintf(err, errlen, "invalid timer options");
	else
		return 0;
	return -1;
}

/* Whether the last pass of "m" times its batch together, in turns in one
 * worker (tuner/round_robin.h): on the CPU, with two passes or more, when
 * the caches are not flushed between runs. */
static bool times_together(const tune_measurer *m)
{
	return m->task->kind == RT_TARGET_CPU && m->o.passes > 1 && !m->o.timer.flush_cache;
}

/* Return 0 when the first CUDA device exists and is of the architecture
 * of "task", else -1 with the reason (tune_cuda_device asks once per
 * process: `tessel tune` before it opens the store, the measurer again). */
static int cuda_device_fits(const tune_task *task, char *why, size_t len)
{
	rt_gpu_target d;
	char err[512];
	if (tune_cuda_device(&d, err, sizeof(err)))
		snprintf(why, len, "no CUDA device: %s", err);
	else if (d.sm != task->gpu.sm)
		snprintf(why, len, "the task is for sm_%d but the device is %s (sm_%d); give "
			"--target cuda:sm_%d", task->gpu.sm, d.name, d.sm, d.sm);
	else
		return 0;
	return -1;
}

int tune_measure_can_run(const tune_task *task, char *err, size_t errlen)
{
	char why[1024];
	if (task->kind != RT_TARGET_CUDA || (rt_cuda_probe(why, sizeof(why)) == 0 &&
		cuda_device_fits(task, why, sizeof(why)) == 0))
		return 0;
	snprintf(err, errlen, "tessel cannot measure on CUDA here: %s; CUDA tasks "
		"sample GPU sketches and compile them with NVRTC without a device "
		"(docs/gpu.md); tune with --target opencl or a CPU target", why);
	return -1;
}

tune_measurer *tune_measurer_new(const tune_task *task, const tune_measure_opts *o,
	char *err, size_t errlen)
{
	tune_measure_opts defaults = tune_measure_opts_default();
	o = o ? o : &defaults;
	if (check_opts(o, err, errlen) || tune_measure_can_run(task, err, errlen))
		return NULL;
	tune_measurer *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->task = task;
	m->o = *o;
	if (m->o.timer.timeout_s == 0 || m->o.timer.timeout_s > o->timeout_s)
		m->o.timer.timeout_s = o->timeout_s;
	m->alone_timer = m->o.timer;
	if (times_together(m))
		m->alone_timer.min_total_s = fmin(m->o.timer.min_total_s, ALONE_MIN_TOTAL_S);
	m->check_timer = (rt_timer_opts){ .warmup = 0, .min_repeats = 1, .max_repeats = 1,
		.timeout_s = m->o.timer.timeout_s };
	m->threads = o->threads ? o->threads : task->cpu.cores;
	m->build_jobs = o->build_jobs ? o->build_jobs : rt_num_cpus();
	m->best_s = INFINITY;
	m->nin = tessel_op_num_inputs(task->op);
	m->nout = tessel_op_num_outputs(task->op);
	m->inputs = calloc((size_t)m->nin + 1, sizeof(*m->inputs));
	m->ref = calloc((size_t)m->nout + 1, sizeof(*m->ref));
	m->got = calloc((size_t)m->nout + 1, sizeof(*m->got));
	m->out_bytes = calloc((size_t)m->nout + 1, sizeof(*m->out_bytes));
	m->args = calloc((size_t)(m->nin + m->nout) + 1, sizeof(*m->args));
	m->report = rt_shared_alloc(sizeof(*m->report));
	m->job = rt_shared_alloc(sizeof(*m->job));
	if (!m->inputs || !m->ref || !m->got || !m->out_bytes || !m->args || !m->report ||
		!m->job)
		snprintf(err, errlen, "out of memory");
	else if (make_inputs(m, err, errlen) == 0 && make_outputs(m, err, errlen) == 0 &&
		 (tune_task_is_gpu(task) || probe_compiler(m, err, errlen) == 0))
		return m;
	tune_measurer_free(m);
	return NULL;
}

void tune_measurer_free(tune_measurer *m)
{
	if (!m)
		return;
	for (int i = 0; m->inputs && i < m->nin; i++)
		tessel_tensor_free(m->inputs[i]);
	for (int i = 0; m->ref && i < m->nout; i++)
		tessel_tensor_free(m->ref[i]);
	te_check_plan_free(&m->plan);
	for (int i = 0; m->got && i < m->nout; i++)
		rt_shared_free(m->got[i].data, m->out_bytes[i]);
	rt_shared_free(m->report, sizeof(*m->report));
	rt_shared_free(m->job, sizeof(*m->job));
	free(m->inputs);
	free(m->ref);
	free(m->got);
	free(m->out_bytes);
	free(m->args);
	free(m);
}

tune_measure_times tune_measurer_times(const tune_measurer *m)
{
	return m->times;
}

int tune_measurer_workers_started(const tune_measurer *m)
{
	return m->workers_started;
}

void tune_measurer_set_best(tune_measurer *m, double seconds)
{
	m->best_s = seconds;
}

double tune_measurer_min_time(const tune_measurer *m)
{
	return m->o.timer.min_total_s;
}

void tune_measurer_set_min_time(tune_measurer *m, double seconds)
{
	m->o.timer.min_total_s = seconds;
	if (!times_together(m))
		m->alone_timer.min_total_s = seconds;
}

/* ---- results -------------------------------------------------------------- */

static void __attribute__((format(printf, 3, 4)))
set_error(tune_result *r, tune_error e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	r->error = e;
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* Mark "r" as stopped before it was measured. */
static void set_not_run(tune_result *r)
{
	set_error(r, TUNE_ERR_RUNTIME, "not run: interrupted");
	r->not_run = true;
}

/* Reset "r" to a candidate not measured yet. */
static void result_reset(tune_result *r)
{
	*r = (tune_result){
		.error = TUNE_OK,
		.median_s = NAN,
		.min_s = NAN,
		.rel_error = NAN,
		.cpu_wait = NAN,
	};
}

/* Return whether the arguments of "p" are the op's inputs then outputs,
 * with their dtypes and dense shapes; else say which differs in "r". */
static bool args_match(const tune_measurer *m, const loop_prog *p, tune_result *r)
{
	if (p->nargs != m->nin + m->nout) {
		set_error(r, TUNE_ERR_BUILD, "the program has %d arguments, the op %d",
			p->nargs, m->nin + m->nout);
		return false;
	}
	for (int i = 0; i < p->nargs; i++) {
		const loop_buffer *b = p->args[i];
		const tessel_tensor *t = i < m->nin ? m->inputs[i] : m->ref[i - m->nin];
		bool same = b->dtype == t->dtype && b->ndim == t->ndim &&
			    b->is_output == (i >= m->nin);
		for (int d = 0; same && d < t->ndim; d++)
			same = b->shape[d] == t->shape[d] && b->strides[d] == t->strides[d];
		if (!same) {
			set_error(r, TUNE_ERR_BUILD,
				"argument %d ('%s') differs from the op's", i, b->name);
			return false;
		}
	}
	return true;
}

/* ---- the builder ---------------------------------------------------------- */

/* What the builder made of a candidate for its worker. */
struct built_kernel {
	cg_cpu_kernel cpu;          /* CPU: the compiled shared object */
	cg_cuda_program cuda;       /* CUDA: the cubin NVRTC made, checked
	                             * launchable (the worker loads it, so
	                             * that it measures what was checked and
	                             * compiles nothing) */
	char opencl_key[CG_CODE_KEY_LEN]; /* OpenCL: the code key of the
	                             * source the worker builds */
};

/* The code features of a built candidate (CPU, with a disassembler). */
typedef struct code_read {
	bool ok;
	float features[TUNE_CODE_FEATURES];
	char why[256];              /* built, not read: why */
} code_read;

/* A batch being built: the threads take candidates in turn. */
typedef struct builder {
	const tune_measurer *m;
	loop_prog *const *progs;
	int n;
	tune_result *out;
	built_kernel *kernels;
	bool *built;
	code_read *code;            /* each candidate's, kept apart from its
	                             * result, which the passes rewrite */
	volatile const int *stop;
	atomic_int next;
	atomic_bool failed;
} builder;

/* The target-specific half of measuring (see "runners"). */
typedef struct runner {
	/* In a builder thread, with "ctx" for errors: make candidate "i"
	 * of "b" ready to run; return 0, or -1 with its error set. */
	int (*prepare)(builder *b, tessel_ctx *ctx, int i);
	/* In the worker (its copy of "m"): run and time m->job, outputs
	 * into shared memory; return the error class with the reason in
	 * "rep". */
	tune_error (*run)(tune_measurer *m, worker_report *rep);
	/* Whether one worker serves the candidates of a batch, holding its
	 * device open between them (GPU), rather than one per candidate. */
	bool serves_batch;
} runner;

static const runner *runner_of(const tune_measurer *m);

/* CPU: compile through the kernel cache, and read the code's features
 * (a disassembler that fails only leaves them out). */
static int prepare_cpu(builder *b, tessel_ctx *ctx, int i)
{
	if (cg_cpu_kernel_compile(ctx, b->progs[i], &b->m->task->cpu, &b->m->cc,
		&b->kernels[i].cpu)) {
		set_error(&b->out[i], TUNE_ERR_BUILD, "%s", tessel_ctx_error(ctx)->message);
		tessel_ctx_clear_error(ctx);
		return -1;
	}
	cg_code_stats st;
	code_read *c = &b->code[i];
	if (b->m->disasm[0] &&
	    cg_code_stats_of(b->m->disasm, b->kernels[i].cpu.so_path, &st, c->why,
		sizeof(c->why)) == 0) {
		tune_code_features(&st, c->features);
		c->ok = true;
	}
	return 0;
}

/* OpenCL: refuse a launch past the device's limits before it runs (the
 * build itself happens in the worker, where a crashing device compiler
 * takes nothing down); note the code key of its source. */
static int prepare_opencl(builder *b, tessel_ctx *ctx, int i)
{
	(void)ctx;
	tune_result *r = &b->out[i];
	if (tune_opencl_check_limits(b->progs[i], &b->m->task->gpu, b->kernels[i].opencl_key,
		r->msg, sizeof(r->msg))) {
		r->error = TUNE_ERR_BUILD;
		return -1;
	}
	return 0;
}

/* CUDA: compile with NVRTC for the task's architecture and refuse what
 * the cubin's resources or the launches say cannot launch there; keep
 * the cubin for the worker. */
static int prepare_cuda(builder *b, tessel_ctx *ctx, int i)
{
	tune_result *r = &b->out[i];
	if (tune_cuda_prepare(ctx, b->progs[i], &b->m->task->gpu, &b->kernels[i].cuda,
		r->msg, sizeof(r->msg)) == TUNE_CUDA_LAUNCHABLE)
		return 0;
	tessel_ctx_clear_error(ctx);
	r->error = TUNE_ERR_BUILD;
	return -1;
}

/* Compile candidate "i" of "b" with "ctx" for its errors. */
static void build_one(builder *b, tessel_ctx *ctx, int i)
{
	tune_result *r = &b->out[i];
	if (b->stop && *b->stop) {
		set_not_run(r);
		return;
	}
	b->built[i] = runner_of(b->m)->prepare(b, ctx, i) == 0;
}

/* One compiler job: build candidates until none is left. */
static void *build_worker(void *arg)
{
	builder *b = arg;
	tessel_ctx *ctx = tessel_ctx_new();
	if (!ctx) {
		atomic_store(&b->failed, true);
		return NULL;
	}
	for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
		if (b->progs[i] && b->out[i].error == TUNE_OK)
			build_one(b, ctx, i);
	tessel_ctx_free(ctx);
	return NULL;
}

/* Build every candidate of "b" on up to "jobs" threads, the caller's
 * included (fewer when threads cannot be started).  Return 0, or -1 when
 * a job could not get a context. */
static int build_all(builder *b, int jobs)
{
	pthread_t tid[jobs > 1 ? jobs - 1 : 1];
	int started = 0;
	while (started < jobs - 1 && pthread_create(&tid[started], NULL, build_worker, b) == 0)
		started++;
	build_worker(b);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	return atomic_load(&b->failed) ? -1 : 0;
}

/* ---- the runner ----------------------------------------------------------- */

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

/* Fill the shared outputs of "m" with all-ones bytes (NaN, -1), so that
 * an element a kernel leaves unwritten fails the check. */
static void poison_outputs(const tune_measurer *m)
{
	for (int i = 0; i < m->nout; i++)
		memset(m->got[i].data, 0xff, m->out_bytes[i]);
}

/* Time the loaded kernel of m->job on a pool of the measurer's threads;
 * return the error class, with the reason in "rep". */
static tune_error time_kernel(const tune_measurer *m, worker_report *rep)
{
	const worker_job *job = m->job;
	rt_pool *pool = rt_pool_new(m->threads);
	if (!pool) {
		snprintf(rep->msg, sizeof(rep->msg), "cannot start %d threads", m->threads);
		return TUNE_ERR_RUNTIME;
	}
	rt_pool_bind(pool);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	kernel_call call = { job->kernel->cpu.fn, m->args, &env, 0 };
	int r = rt_time(call_kernel, &call, &job->timer, &rep->timing);
	rt_pool_free(pool);
	rt_workspace_release();
	if (call.status)
		snprintf(rep->msg, sizeof(rep->msg), "the kernel returned an error (out of memory?)");
	else if (r == RT_TIME_TIMEOUT)
		snprintf(rep->msg, sizeof(rep->msg), "%d of %d timed runs within %g s",
			rep->timing.runs, job->timer.min_repeats, job->timer.timeout_s);
	else if (r != RT_TIME_OK)
		snprintf(rep->msg, sizeof(rep->msg), "the timer failed (out of memory?)");
	return call.status ? TUNE_ERR_RUNTIME :
	       r == RT_TIME_TIMEOUT ? TUNE_ERR_TIMEOUT :
	       r != RT_TIME_OK ? TUNE_ERR_RUNTIME : TUNE_OK;
}

/* CPU: load the compiled kernel, poison the outputs, time. */
static tune_error run_cpu(tune_measurer *m, worker_report *rep)
{
	const worker_job *job = m->job;
	tessel_ctx *ctx = m->task->ctx;
	if (cg_cpu_kernel_load(ctx, job->p, &job->kernel->cpu)) {
		snprintf(rep->msg, sizeof(rep->msg), "%.255s", tessel_ctx_error(ctx)->message);
		return TUNE_ERR_BUILD;
	}
	poison_outputs(m);
	tune_error e = time_kernel(m, rep);
	cg_cpu_kernel_close(&job->kernel->cpu);
	return e;
}

/* The error class of a GPU runner's status; a device the worker could
 * not open is marked in "rep" (tuning stops: no candidate is at fault),
 * and so are the times the worker spent opening it (from "t0") and in
 * the runner (from "t1" to now). */
static tune_error gpu_error(tune_gpu_status st, worker_report *rep, double t0, double t1)
{
	rep->open_s = t1 - t0;
	rep->runner_s = rt_now_s() - t1;
	rep->no_device = st == TUNE_GPU_NO_DEVICE;
	switch (st) {
	case TUNE_GPU_OK: return TUNE_OK;
	case TUNE_GPU_BUILD: return TUNE_ERR_BUILD;
	case TUNE_GPU_TIMEOUT: return TUNE_ERR_TIMEOUT;
	default: return TUNE_ERR_RUNTIME;
	}
}

/* OpenCL: open the device on the worker's first job, build, upload,
 * poison the outputs on the device, time, download into the shared
 * outputs. */
static tune_error run_opencl(tune_measurer *m, worker_report *rep)
{
	const worker_job *job = m->job;
	poison_outputs(m);
	double t0 = rt_now_s();
	tune_gpu_status st = m->held.opencl ? TUNE_GPU_OK :
		tune_opencl_session_open(&m->held.opencl, rep->msg, sizeof(rep->msg));
	tune_gpu_run run = { job->p, m->args, &job->timer, 0 };
	double t1 = rt_now_s();
	if (st == TUNE_GPU_OK)
		st = tune_opencl_session_time(m->held.opencl, &run, &rep->timing, rep->msg,
			sizeof(rep->msg));
	return gpu_error(st, rep, t0, t1);
}

/* CUDA: open the device on the worker's first job, load the builder's
 * cubin, upload, poison the outputs on the device, time, download into
 * the shared outputs. */
static tune_error run_cuda(tune_measurer *m, worker_report *rep)
{
	const worker_job *job = m->job;
	poison_outputs(m);
	double t0 = rt_now_s();
	tune_gpu_status st = m->held.cuda ? TUNE_GPU_OK :
		tune_cuda_session_open(m->task->gpu.sm, &m->held.cuda, rep->msg,
			sizeof(rep->msg));
	tune_gpu_run run = { job->p, m->args, &job->timer, m->task->gpu.sm };
	double t1 = rt_now_s();
	if (st == TUNE_GPU_OK)
		st = tune_cuda_session_time(m->held.cuda, &run, &job->kernel->cuda,
			&rep->timing, rep->msg, sizeof(rep->msg));
	return gpu_error(st, rep, t0, t1);
}

/* The runners, one per target kind (rt_target_kind). */
static const runner runners[] = {
	[RT_TARGET_CPU] = { prepare_cpu, run_cpu, false },
	[RT_TARGET_OPENCL] = { prepare_opencl, run_opencl, true },
	[RT_TARGET_CUDA] = { prepare_cuda, run_cuda, true },
};

static const runner *runner_of(const tune_measurer *m)
{
	return &runners[m->task->kind];
}

/* The worker process: run the candidate of m->job with its target's
 * runner; report in shared memory.  Return 0 when the kernel ran in
 * time; a worker serving a batch ends after any other candidate, since
 * a failure may have left its device unusable. */
static int worker_main(void *arg)
{
	tune_measurer *m = arg;
	worker_report *rep = m->report;
	rep->error = runner_of(m)->run(m, rep);
	return rep->error != TUNE_OK;
}

/* Turn how the worker ended ("st", "why") and its report into "r". */
static void take_report(tune_measurer *m, rt_run_status st, const char *why,
	tune_result *r)
{
	const worker_report *rep = m->report;
	m->times.open_s += rep->open_s;
	m->times.runner_s += rep->runner_s;
	if (rep->timing.runs > 0 && isfinite(rep->timing.median_s))
		m->times.timed_s += rep->timing.runs * rep->timing.median_s;
	if (st == RT_RUN_CRASHED)
		set_error(r, TUNE_ERR_CRASH, "the worker was %s", why);
	else if (st == RT_RUN_TIMEOUT)
		set_error(r, TUNE_ERR_TIMEOUT, "the worker %s", why);
	else if (st == RT_RUN_FAILED && rep->error != TUNE_OK)
		set_error(r, rep->error, "%s", rep->msg);
	else if (st == RT_RUN_FAILED)
		set_error(r, TUNE_ERR_RUNTIME, "the worker %s", why);
	if (st != RT_RUN_OK)
		return;
	r->median_s = rep->timing.median_s;
	r->min_s = rep->timing.min_s;
	r->runs = rep->timing.runs;
	r->cpu_wait = rep->timing.cpu_wait;
}

/* The time past which a candidate of "m" is measured by one run
 * (TUNE_GIVE_UP_FACTOR times the best, on GPUs), or 0 for never. */
static double give_up_after(const tune_measurer *m)
{
	return tune_task_is_gpu(m->task) && isfinite(m->best_s) ?
		TUNE_GIVE_UP_FACTOR * m->best_s : 0;
}

/* Run the compiled "k" of "p" timed with "timer", in the batch's worker
 * where the runner keeps one (m->worker) and else in a fresh one, and
 * fill "r".  Return 0, or -1 when no worker could be started or the
 * worker could not open the device (the reason in "r"->msg). */
static int run_one(tune_measurer *m, const loop_prog *p, built_kernel *k,
	const rt_timer_opts *timer, tune_result *r)
{
	memset(m->report, 0, sizeof(*m->report));
	m->report->timing.cpu_wait = NAN;
	rt_timer_opts t = *timer;
	if (t.give_up_s == 0)
		t.give_up_s = give_up_after(m);
	*m->job = (worker_job){ p, k, t };
	char why[256];
	double limit_s = m->o.timeout_s + WORKER_GRACE_S;
	rt_run_status st;
	if (m->worker) {
		int before = rt_worker_starts(m->worker);
		st = rt_worker_run(m->worker, limit_s, why, sizeof(why));
		m->workers_started += rt_worker_starts(m->worker) - before;
	} else {
		st = rt_run_isolated(worker_main, m, limit_s, why, sizeof(why));
		m->workers_started += st != RT_RUN_ERROR;
	}
	if (st == RT_RUN_ERROR) {
		snprintf(r->msg, sizeof(r->msg), "%s", why);
		return -1;
	}
	if (m->report->no_device) {
		snprintf(r->msg, sizeof(r->msg), "the worker could not open the device: %.200s",
			m->report->msg);
		return -1;
	}
	take_report(m, st, why, r);
	r->attempts++;
	return 0;
}

int tune_code_key(const tune_task *task, const cg_compile_opts *cc, tessel_ctx *ctx,
	const loop_prog *p, char key[CG_CODE_KEY_LEN])
{
	if (task->kind == RT_TARGET_CPU)
		return cg_cpu_kernel_key(ctx, p, &task->cpu, cc, key) ? -1 : 0;
	if (task->kind == RT_TARGET_OPENCL)
		return cg_opencl_code_key(ctx, p, task->gpu.compiler, key);
	cg_cuda_program c;
	int r = cg_cuda_compile(ctx, p, task->gpu.sm, &c);
	if (r == 0)
		cg_cuda_program_key(&c, key);
	cg_cuda_program_free(&c);
	return r;
}

int tune_measurer_code_key(const tune_measurer *m, tessel_ctx *ctx,
	const loop_prog *p, char key[CG_CODE_KEY_LEN])
{
	return tune_code_key(m->task, &m->cc, ctx, p, key);
}

bool tune_result_disturbed(const tune_result *r)
{
	return r->error == TUNE_OK && r->cpu_wait > RT_DISTURBED_CPU_WAIT;
}

/* How long the measurer pauses before it takes a disturbed measurement
 * again (twice as long before each further retry), so that a burst of
 * other work (a compiler) can end. */
#define DISTURBED_PAUSE_NS 20000000L

/* Run the compiled "k" of "p" as run_one does, and again while the
 * measurement is disturbed, up to TUNE_DISTURBED_RETRIES times, after a
 * pause: keep the least disturbed measurement, or the error of a retry
 * that failed otherwise than by its time limit (a kernel that crashes
 * once is not kept for having run once).  Return 0, or -1 as run_one. */
static int run_undisturbed(tune_measurer *m, const loop_prog *p, built_kernel *k,
	tune_result *r)
{
	if (run_one(m, p, k, &m->alone_timer, r))
		return -1;
	for (int i = 0; i < TUNE_DISTURBED_RETRIES && tune_result_disturbed(r); i++) {
		nanosleep(&(struct timespec){ 0, DISTURBED_PAUSE_NS << i }, NULL);
		tune_result again;
		result_reset(&again);
		if (run_one(m, p, k, &m->alone_timer, &again))
			return -1;
		r->retakes++;
		again.attempts += r->attempts;
		again.retakes = r->retakes;
		if (again.error == TUNE_ERR_TIMEOUT)
			r->attempts = again.attempts;
		else if (again.error != TUNE_OK || again.cpu_wait < r->cpu_wait)
			*r = again;
		else
			r->attempts = again.attempts;
	}
	return 0;
}

/* ---- the check ------------------------------------------------------------ */

/* Compute the interpreter's outputs of "m" on its inputs, once: in full,
 * or at the elements te_check_reference chooses for an op too costly. */
static int ensure_reference(tune_measurer *m, char *err, size_t errlen)
{
	if (m->have_ref)
		return 0;
	int r = te_check_reference(m->task->op, m->inputs, m->ref, m->o.check_full_cost,
		m->o.seed, &m->plan);
	if (r) {
		snprintf(err, errlen, "the reference interpreter failed: %.200s",
			tessel_ctx_error(m->task->ctx)->message);
		return -1;
	}
	m->have_ref = true;
	return 0;
}

/* Compare the shared outputs of the run of "r" with the reference; make
 * it TUNE_ERR_WRONG when one is off by more than its tolerance. */
static void compare_outputs(const tune_measurer *m, tune_result *r)
{
	r->checked = true;
	r->rel_error = 0;
	for (int i = 0; i < m->nout; i++) {
		double e = te_check_error(&m->plan, i, &m->got[i], m->ref[i]);
		double tol = te_tolerance(m->ref[i]->dtype);
		if (!(e <= r->rel_error))
			r->rel_error = e;
		if (!(e <= tol) && r->error == TUNE_OK)
			set_error(r, TUNE_ERR_WRONG,
				"output '%s' differs from the interpreter's: relative "
				"error %.3g (tolerance %g)",
				tessel_stage_name(tessel_op_output_at(m->task->op, i)), e, tol);
	}
}

/* Check "r" when it is the best so far and make it the best when it
 * passes.  Return 0, or -1 when the reference cannot be computed. */
static int check_if_best(tune_measurer *m, tune_result *r)
{
	if (r->error != TUNE_OK || !(r->median_s < m->best_s))
		return 0;
	double t0 = rt_now_s();
	int failed = ensure_reference(m, r->msg, sizeof(r->msg));
	if (!failed)
		compare_outputs(m, r);
	m->times.check_s += rt_now_s() - t0;
	if (failed)
		return -1;
	if (r->error == TUNE_OK)
		m->best_s = r->median_s;
	else
		r->median_s = r->min_s = NAN;
	return 0;
}

/* ---- a batch -------------------------------------------------------------- */

/* Fold the pass "again" into "r", the passes before it: an error of
 * either stays; otherwise the lower median and fastest repeat. */
static void keep_fastest_pass(tune_result *r, const tune_result *again)
{
	int runs = r->runs + again->runs, attempts = r->attempts + again->attempts;
	int retakes = r->retakes + again->retakes;
	double min_s = fmin(r->min_s, again->min_s);
	if (again->error != TUNE_OK || again->median_s < r->median_s)
		*r = *again;
	if (r->error == TUNE_OK)
		r->min_s = min_s;
	r->runs = runs;
	r->attempts = attempts;
	r->retakes = retakes;
}

/* Return whether "r" is past TUNE_GIVE_UP_FACTOR times the best of "m"
 * on a GPU, where run_one gives up on such candidates: a further pass
 * would only time again a candidate that cannot become the best. */
static bool gave_up(const tune_measurer *m, const tune_result *r)
{
	double after = give_up_after(m);
	return after > 0 && r->error == TUNE_OK && r->median_s > after;
}

/* The passes of "m" that run each candidate alone: all of them, or all
 * but the last when that one times the batch together. */
static int passes_alone(const tune_measurer *m)
{
	return m->o.passes - times_together(m);
}

/* Take pass "pass" (from 0) of candidate "i" of "b" into its result, and
 * check it after the last pass, while the shared outputs are its own,
 * unless a pass timing the batch together follows.  Return 0, or -1 as
 * run_one. */
static int run_pass(tune_measurer *m, builder *b, int i, int pass)
{
	tune_result *r = &b->out[i];
	if (pass == 0) {
		if (run_undisturbed(m, b->progs[i], &b->kernels[i], r))
			return -1;
	} else {
		tune_result again;
		result_reset(&again);
		if (run_undisturbed(m, b->progs[i], &b->kernels[i], &again)) {
			snprintf(r->msg, sizeof(r->msg), "%s", again.msg);
			return -1;
		}
		keep_fastest_pass(r, &again);
	}
	return pass == m->o.passes - 1 ? check_if_best(m, r) : 0;
}

/* Run the passes that take candidates of "b" alone, stopping at *"stop":
 * in turn backward and forward, the last forward, so that candidates
 * are checked in batch order.  Return 0, or -1 with the reason in "msg"
 * of size "len". */
static int run_alone(tune_measurer *m, builder *b, char *msg, size_t len)
{
	int passes = passes_alone(m);
	for (int pass = 0; pass < passes; pass++)
		for (int k = 0; k < b->n; k++) {
			bool backward = (passes - 1 - pass) % 2;
			int i = backward ? b->n - 1 - k : k;
			tune_result *r = &b->out[i];
			if (!b->built[i] || (pass > 0 && (r->error != TUNE_OK || gave_up(m, r))))
				continue;
			if (b->stop && *b->stop) {
				set_not_run(r);
				continue;
			}
			if (run_pass(m, b, i, pass)) {
				snprintf(msg, len, "%s", r->msg);
				return -1;
			}
		}
	return 0;
}

/* The worker that times candidates together: "n" of batch "b", the
 * candidates which[0..n-1], with their plans; the logs in shared memory. */
typedef struct together_job {
	const tune_measurer *m;
	builder *b;
	const int *which;
	int n;
	const tune_rr_plan *plans;
	double budget_s;
	tune_rr_log *logs;
	tessel_kernel_env env;
	int status;
} together_job;

static void run_candidate(void *arg, int i)
{
	together_job *j = arg;
	cg_cpu_kernel *k = &j->b->kernels[j->which[i]].cpu;
	j->status |= k->fn(j->m->args, &j->env);
}

/* In the worker: load every kernel of "arg" (a together_job), time them
 * in turns on a pool of the measurer's threads.  Exit 0 when every run
 * returned 0. */
static int together_main(void *arg)
{
	together_job *j = arg;
	tessel_ctx *ctx = j->m->task->ctx;
	int loaded = 0;
	while (loaded < j->n && cg_cpu_kernel_load(ctx, j->b->progs[j->which[loaded]],
		&j->b->kernels[j->which[loaded]].cpu) == 0)
		loaded++;
	rt_pool *pool = loaded == j->n ? rt_pool_new(j->m->threads) : NULL;
	int r = 1;
	if (pool) {
		rt_pool_bind(pool);
		rt_pool_env(pool, &j->env);
		tune_rr_time(j->n, run_candidate, j, j->plans, j->budget_s, j->b->stop,
			j->logs);
		rt_pool_free(pool);
		rt_workspace_release();
		r = j->status != 0;
	}
	for (int i = 0; i < loaded; i++)
		cg_cpu_kernel_close(&j->b->kernels[j->which[i]].cpu);
	return r;
}

/* The last pass on the CPU: time the candidates of "b" still ok together,
 * in turns in one worker, and make each one's median and fastest visit
 * its times.  A candidate that worker did not visit twice (it died or ran
 * out of time: every candidate has run alone already, so this is rare)
 * keeps its time alone.  Candidates are marked not run when *"stop" is
 * set before.  Return 0, or -1 with the reason in "msg" of size "len"
 * when no worker could be started. */
static int run_together(tune_measurer *m, builder *b, char *msg, size_t len)
{
	int n = 0, which[b->n];
	tune_rr_plan plans[b->n];
	double alone[b->n], longest = 0;
	for (int i = 0; i < b->n; i++) {
		tune_result *r = &b->out[i];
		if (!b->built[i] || r->error != TUNE_OK)
			continue;
		if (b->stop && *b->stop) {
			set_not_run(r);
			continue;
		}
		which[n] = i;
		alone[n] = r->median_s;
		plans[n] = tune_rr_plan_for(r->median_s, &m->o.timer);
		longest = fmax(longest, (plans[n].runs + plans[n].warm) * alone[n]);
		n++;
	}
	if (n == 0)
		return 0;
	tune_rr_log *logs = rt_shared_alloc((size_t)n * sizeof(*logs));
	if (!logs) {
		snprintf(msg, len, "out of shared memory for the logs of %d candidates", n);
		return -1;
	}
	together_job job = { .m = m, .b = b, .which = which, .n = n, .plans = plans,
		.budget_s = 2 * tune_rr_estimate_s(plans, alone, n) + 0.5, .logs = logs };
	char why[256];
	rt_run_status st = rt_run_isolated(together_main, &job,
		job.budget_s + 2 * longest + 2 * WORKER_GRACE_S, why, sizeof(why));
	m->workers_started += st != RT_RUN_ERROR;
	for (int k = 0; st != RT_RUN_ERROR && k < n; k++) {
		tune_result *r = &b->out[which[k]];
		rt_timing t;
		tune_rr_summary(&logs[k], &t);
		r->attempts++;
		if (logs[k].visits < 2)
			continue;
		r->median_s = t.median_s;
		r->min_s = t.min_s;
		r->runs += t.runs;
	}
	rt_shared_free(logs, (size_t)n * sizeof(*logs));
	if (st == RT_RUN_ERROR)
		snprintf(msg, len, "%s", why);
	return st == RT_RUN_ERROR ? -1 : 0;
}

/* After a pass that timed "b" together, check in batch order each
 * candidate that becomes the best, run alone once more for its outputs.
 * One that fails that run takes its error; one not checked when *"stop"
 * is set is marked not run, since an unchecked time cannot be the best.
 * Return 0, or -1 with the reason in "msg" of size "len". */
static int check_in_order(tune_measurer *m, builder *b, char *msg, size_t len)
{
	for (int i = 0; i < b->n; i++) {
		tune_result *r = &b->out[i];
		if (!b->built[i] || r->error != TUNE_OK || !(r->median_s < m->best_s))
			continue;
		if (b->stop && *b->stop) {
			set_not_run(r);
			continue;
		}
		tune_result again;
		result_reset(&again);
		if (run_one(m, b->progs[i], &b->kernels[i], &m->check_timer, &again)) {
			snprintf(msg, len, "%s", again.msg);
			return -1;
		}
		r->attempts += again.attempts;
		if (again.error != TUNE_OK) {
			set_error(r, again.error, "%s", again.msg);
			r->median_s = r->min_s = NAN;
		} else if (check_if_best(m, r)) {
			snprintf(msg, len, "%s", r->msg);
			return -1;
		}
	}
	return 0;
}

/* Run, in m->o.passes passes, and check the built candidates of "b",
 * stopping at *"stop".  Return 0, or -1 with the reason in "msg" of size
 * "len". */
static int run_all(tune_measurer *m, builder *b, char *msg, size_t len)
{
	if (run_alone(m, b, msg, len))
		return -1;
	if (!times_together(m))
		return 0;
	return run_together(m, b, msg, len) || check_in_order(m, b, msg, len) ? -1 : 0;
}

/* Set "b" up to build the "n" programs "progs" of "m" into "out" (every
 * result reset; those whose arguments differ from the op's marked, NULL
 * programs skipped); return how many are to be built, or -1 when out of
 * memory. */
static int builder_init(builder *b, tune_measurer *m, loop_prog *const *progs, int n,
	tune_result *out, volatile const int *stop)
{
	*b = (builder){ .m = m, .progs = progs, .n = n, .out = out, .stop = stop };
	b->kernels = calloc((size_t)n, sizeof(*b->kernels));
	b->built = calloc((size_t)n, sizeof(*b->built));
	b->code = calloc((size_t)n, sizeof(*b->code));
	if (!b->kernels || !b->built || !b->code)
		return -1;
	int to_build = 0;
	for (int i = 0; i < n; i++) {
		if (!progs[i])
			continue;
		result_reset(&out[i]);
		to_build += args_match(m, progs[i], &out[i]);
	}
	return to_build;
}

/* Write into "key" the code key of candidate "i" of "b" when it was
 * built, else "". */
static void code_key_of(const tune_measurer *m, const builder *b, int i,
	char key[CG_CODE_KEY_LEN])
{
	key[0] = 0;
	if (!b->built || !b->built[i])
		return;
	if (m->task->kind == RT_TARGET_CPU)
		snprintf(key, CG_CODE_KEY_LEN, "%s", b->kernels[i].cpu.key);
	else if (m->task->kind == RT_TARGET_OPENCL)
		snprintf(key, CG_CODE_KEY_LEN, "%s", b->kernels[i].opencl_key);
	else if (b->kernels[i].cuda.cubin.image)
		cg_cuda_program_key(&b->kernels[i].cuda, key);
}

/* Give each result of "b" its candidate's code key and code features,
 * count in "m" those built whose code was not read, and free "b". */
static void builder_finish(tune_measurer *m, builder *b)
{
	for (int i = 0; b->code && i < b->n; i++) {
		if (!b->progs[i])
			continue;
		code_key_of(m, b, i, b->out[i].code_key);
		b->out[i].has_code = b->code[i].ok;
		memcpy(b->out[i].code, b->code[i].features, sizeof(b->out[i].code));
		if (m->disasm[0] && b->built && b->built[i] && !b->code[i].ok) {
			m->code_unread++;
			snprintf(m->code_error, sizeof(m->code_error), "%s", b->code[i].why);
		}
	}
	for (int i = 0; b->kernels && i < b->n; i++)
		cg_cuda_program_free(&b->kernels[i].cuda);
	free(b->kernels);
	free(b->built);
	free(b->code);
}

/* Build the "to_build" candidates "b" holds, timed; 0 or -1. */
static int build_timed(tune_measurer *m, builder *b, int to_build)
{
	double t0 = rt_now_s();
	int r = build_all(b, to_build < m->build_jobs ? to_build : m->build_jobs);
	m->times.build_s += rt_now_s() - t0;
	return r;
}

int tune_build_batch(tune_measurer *m, loop_prog *const *progs, int n,
	tune_result *out, volatile const int *stop)
{
	if (n <= 0)
		return 0;
	builder b;
	int to_build = builder_init(&b, m, progs, n, out, stop);
	int r = to_build < 0 ? -1 : build_timed(m, &b, to_build);
	if (r)
		snprintf(out[0].msg, sizeof(out[0].msg), "%s", to_build < 0 ? "out of memory" :
			"out of memory for a build job's context");
	builder_finish(m, &b);
	return r;
}

bool tune_measurer_reads_code(const tune_measurer *m)
{
	return m->disasm[0] != 0;
}

int tune_measurer_code_unread(const tune_measurer *m, const char **why)
{
	*why = m->code_error;
	return m->code_unread;
}

int tune_measure_batch(tune_measurer *m, loop_prog *const *progs, int n,
	tune_result *out, volatile const int *stop)
{
	if (n <= 0)
		return 0;
	builder b;
	int to_build = builder_init(&b, m, progs, n, out, stop);
	char msg[sizeof(out->msg)] = "out of memory";
	int r = -1;
	bool ready = to_build >= 0 && (!runner_of(m)->serves_batch ||
		(m->worker = rt_worker_new(worker_main, m)) != NULL);
	if (ready && build_timed(m, &b, to_build))
		snprintf(msg, sizeof(msg), "out of memory for a build job's context");
	else if (ready) {
		double t1 = rt_now_s();
		r = run_all(m, &b, msg, sizeof(msg));
		m->times.run_s += rt_now_s() - t1;
	}
	rt_worker_free(m->worker);
	m->worker = NULL;
	if (r)
		snprintf(out[0].msg, sizeof(out[0].msg), "%s", msg);
	builder_finish(m, &b);
	return r;
}
