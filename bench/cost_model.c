/* The cost model on real measurements: random legal schedules of a few
 * workloads are lowered, described by their program features
 * (tuner/features.h), compiled, timed in an isolated child, and the
 * XGBoost model (tuner/model.h) is trained and evaluated on them with
 * both objectives:
 *
 *   - split by record: train on --train records drawn at random (with
 *     the learning curve at fractions of it), test on the rest;
 *   - split by task: train on every workload but one, test on that one.
 *
 * The score is the pairwise ranking accuracy on the held-out records
 * (tune_pairwise_accuracy) and the normalized throughput of the
 * candidate the model ranks first in each held-out task.
 *
 *   cost_model [--records N] [--train N] [--seed S] [--threads N]
 *              [--min-time S] [--steps K] [--rounds R] [--save FILE]
 *              [--load FILE] [--refeature] [--trees N] [--depth N]
 *              [--eta X] [--min-child-weight X] [--colsample X]
 *              [--subsample X] [--xgb-threads N]
 *
 * Each candidate is measured in R rounds (default 4), each round over
 * all candidates, so that the rounds are minutes apart: one round is the
 * least of the repeats of one isolated run of at least --min-time
 * seconds, and the label is the least time over the rounds (on a shared
 * machine a parallel kernel is often slowed 10x by a descheduled worker;
 * the agreement between the first and second half of the rounds is
 * printed as the ceiling noise puts on any model).  Labels are best time
 * / time within each task.
 *
 * --save writes the records (task, schedule seed, rounds, time per
 * round, features) as CSV; --load evaluates records saved earlier
 * instead of measuring, and with --refeature recomputes their features
 * from the schedule seeds first (same --steps), to evaluate a change to
 * the features on the same measurements.  The other options set the
 * model's (tuner/model.h): boosting rounds, tree depth, learning rate,
 * least hessian weight of a leaf, fractions of features and rows per
 * tree, threads. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/compile.h"
#include "codegen/cpu_kernel.h"
#include "runtime/isolate.h"
#include "runtime/target.h"
#include "runtime/threadpool.h"
#include "runtime/timer.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "tessel/ops.h"
#include "tuner/features.h"
#include "tuner/model.h"

#define NF TUNE_PROGRAM_FEATURES
#define MAX_ATTRS 10

typedef struct workload {
	const char *name;
	const char *op;
	const char *keys[MAX_ATTRS];
	const char *values[MAX_ATTRS];
} workload;

static const workload workloads[] = {
	{ "matmul 64x64x64", "matmul", { "M", "N", "K" }, { "64", "64", "64" } },
	{ "matmul 128x64x96", "matmul", { "M", "N", "K" }, { "128", "64", "96" } },
	{ "conv2d 16x16x16 F16 3x3", "conv2d",
	  { "N", "C", "H", "W", "F", "R", "S", "padding" },
	  { "1", "16", "16", "16", "16", "3", "3", "1" } },
	{ "softmax 64x256", "softmax", { "shape" }, { "[64,256]" } },
	{ "layer_norm 64x256", "layer_norm", { "shape" }, { "[64,256]" } },
};
#define NWORKLOADS ((int)(sizeof(workloads) / sizeof(workloads[0])))

#define MAX_ROUNDS 8

typedef struct bench_args {
	int records, train, threads, steps, rounds;
	bool refeature, quick;
	uint64_t seed;
	double min_time;
	const char *save, *load;
	tune_cost_model_opts model;
} bench_args;

/* Measured records: features, task, schedule seed, and the time of each
 * measurement round (-1: that round failed). */
typedef struct record_set {
	int n, cap, nrounds;
	float *X;
	uint32_t *task;
	uint64_t *sched_seed;
	double *times;
} record_set;

/* A workload being measured: its op and its argument buffers. */
typedef struct bench_task {
	tessel_ctx *ctx;
	tessel_op *op;
	void *args[64];
} bench_task;

/* What the isolated child needs and where it leaves the timing. */
typedef struct bench_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	cg_cpu_kernel *kernel;
	int threads;
	void **args;
	rt_timer_opts timer;
	rt_timing *timing;
} bench_job;

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

/* In the child: load the kernel of "arg" (a bench_job), time it. */
static int time_child(void *arg)
{
	bench_job *job = arg;
	if (cg_cpu_kernel_load(job->ctx, job->p, job->kernel))
		return 1;
	rt_pool *pool = rt_pool_new(job->threads);
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	kernel_call call = { job->kernel->fn, job->args, &env, 0 };
	call_kernel(&call);
	int r = call.status ? -1 : rt_time(call_kernel, &call, &job->timer, job->timing);
	rt_pool_free(pool);
	cg_cpu_kernel_close(job->kernel);
	return call.status || r != RT_TIME_OK;
}

/* Append a record of "x", "task" and "sched_seed" measured "seconds" in
 * its first round to "rs"; return 0 or -1. */
static int record_push(record_set *rs, const float *x, uint32_t task,
	uint64_t sched_seed, const double *times)
{
	if (rs->n == rs->cap) {
		int cap = rs->cap ? 2 * rs->cap : 256;
		float *X = realloc(rs->X, (size_t)cap * NF * sizeof(float));
		if (X)
			rs->X = X;
		uint32_t *t = realloc(rs->task, (size_t)cap * sizeof(uint32_t));
		if (t)
			rs->task = t;
		uint64_t *q = realloc(rs->sched_seed, (size_t)cap * sizeof(uint64_t));
		if (q)
			rs->sched_seed = q;
		double *s = realloc(rs->times, (size_t)cap * MAX_ROUNDS * sizeof(double));
		if (s)
			rs->times = s;
		if (!X || !s || !t || !q)
			return -1;
		rs->cap = cap;
	}
	memcpy(rs->X + (size_t)rs->n * NF, x, NF * sizeof(float));
	for (int r = 0; r < MAX_ROUNDS; r++)
		rs->times[(size_t)rs->n * MAX_ROUNDS + r] = r < rs->nrounds ? times[r] : -1;
	rs->sched_seed[rs->n] = sched_seed;
	rs->task[rs->n++] = task;
	return 0;
}

static void record_free(record_set *rs)
{
	free(rs->X);
	free(rs->task);
	free(rs->sched_seed);
	free(rs->times);
}

/* The least time of record "i" of "rs" over rounds ["from", "to"), or -1
 * when all of them failed. */
static double record_seconds(const record_set *rs, int i, int from, int to)
{
	double best = -1;
	for (int r = from; r < to; r++) {
		double t = rs->times[(size_t)i * MAX_ROUNDS + r];
		if (t > 0 && (best < 0 || t < best))
			best = t;
	}
	return best;
}

/* The bytes of argument buffer "b" (strides included). */
static size_t buffer_bytes(const loop_buffer *b)
{
	int64_t last = 0;
	for (int d = 0; d < b->ndim; d++)
		last += (b->shape[d] - 1) * b->strides[d];
	return (size_t)(last + 1) * tessel_dtype_size(b->dtype);
}

/* Allocate the arguments of "p" into "args", filled with values in
 * [-1, 1) from "rng"; return 0 or -1. */
static int make_args(const loop_prog *p, void **args, uint64_t *rng)
{
	for (int i = 0; i < p->nargs && i < 64; i++) {
		size_t bytes = buffer_bytes(p->args[i]);
		size_t rounded = (bytes + 63) / 64 * 64;
		args[i] = aligned_alloc(64, rounded);
		if (!args[i])
			return -1;
		if (p->args[i]->dtype == TESSEL_F32) {
			float *f = args[i];
			for (size_t k = 0; k < bytes / sizeof(float); k++)
				f[k] = (float)((double)(sch_rng_next(rng) >> 11) * 0x1p-52 - 1);
		} else {
			memset(args[i], 0, rounded);
		}
	}
	return 0;
}

/* Compile and time "p" of "task"; return its time in seconds (the least
 * of its repeats), or -1 when it fails to compile or run. */
static double measure(const bench_args *a, bench_task *task, const loop_prog *p,
	const rt_cpu_target *cpu, const cg_compile_opts *copts, rt_timing *shared)
{
	uint64_t rng = a->seed * 7919 + 1;
	if (!task->args[0] && make_args(p, task->args, &rng))
		return -1;
	cg_cpu_kernel k;
	if (cg_cpu_kernel_compile(task->ctx, p, cpu, copts, &k))
		return -1;
	bench_job job = { task->ctx, p, &k, a->threads, task->args, rt_timer_opts_default(),
		shared };
	job.timer.min_total_s = a->min_time;
	job.timer.min_repeats = 3;
	job.timer.timeout_s = 5;
	char why[256];
	memset(shared, 0, sizeof(*shared));
	if (rt_run_isolated(time_child, &job, 10, why, sizeof(why)) != RT_RUN_OK)
		return -1;
	return shared->min_s > 0 ? shared->min_s : -1;
}

/* FNV-1a of "s". */
static uint64_t text_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static bool seen_before(uint64_t *seen, int *nseen, uint64_t h)
{
	for (int i = 0; i < *nseen; i++)
		if (seen[i] == h)
			return true;
	seen[(*nseen)++] = h;
	return false;
}

/* Instantiate workload "w" into "task"; return 0, or -1 (error printed). */
static int task_open(bench_task *task, int w)
{
	const workload *wl = &workloads[w];
	int nattrs = 0;
	while (nattrs < MAX_ATTRS && wl->keys[nattrs])
		nattrs++;
	memset(task, 0, sizeof(*task));
	task->ctx = tessel_ctx_new();
	task->op = tessel_ops_instantiate(task->ctx, wl->op, nattrs, wl->keys, wl->values);
	if (!task->op)
		tessel_ctx_print_error(task->ctx, stderr);
	return task->op ? 0 : -1;
}

static void task_close(bench_task *task)
{
	for (int i = 0; i < 64; i++)
		free(task->args[i]);
	tessel_op_release(task->op);
	tessel_ctx_free(task->ctx);
}

/* The seed of the random schedule of try "tries" of workload "w". */
static uint64_t schedule_seed(const bench_args *a, int w, int tries)
{
	return a->seed * 1000003 + (uint64_t)w * 10007 + (uint64_t)tries;
}

/* Return the program of "task" under the random schedule of "seed" with
 * "steps" attempts, or NULL. */
static loop_prog *random_program(bench_task *task, uint64_t seed, int steps)
{
	sch_state *st = sch_state_new(task->ctx, task->op);
	if (!st)
		return NULL;
	sch_random_schedule(st, seed, steps);
	loop_prog *p = sch_program(st);
	sch_state_free(st);
	return p;
}

/* Measure (first round) "want" distinct random schedules of workload "w"
 * into "rs". */
static int first_round(const bench_args *a, bench_task *task, int w, int want,
	const rt_cpu_target *cpu, const cg_compile_opts *copts, rt_timing *shared,
	record_set *rs)
{
	uint64_t *seen = calloc((size_t)want * 8 + 8, sizeof(uint64_t));
	int got = 0, tries = 0, failed = 0, nseen = 0, status = seen ? 0 : -1;
	float x[NF];
	double times[MAX_ROUNDS] = { 0 }, t0 = rt_now_s();
	while (status == 0 && got < want && tries < want * 8) {
		uint64_t seed = schedule_seed(a, w, tries++);
		loop_prog *p = random_program(task, seed, a->steps);
		char *text = p ? loop_prog_print(p) : NULL;
		if (p && text && !seen_before(seen, &nseen, text_hash(text))) {
			times[0] = measure(a, task, p, cpu, copts, shared);
			if (times[0] > 0 && tune_program_features(p, cpu, x) == 0)
				status = record_push(rs, x, (uint32_t)w, seed, times);
			got += times[0] > 0;
			failed += times[0] <= 0;
		}
		free(text);
		loop_prog_free(p);
	}
	fprintf(stderr, "%-28s %4d records (%d distinct schedules failed) in %.0f s\n",
		workloads[w].name, got, failed, rt_now_s() - t0);
	free(seen);
	return status;
}

/* Measure every record of "rs" again in rounds 1 .. nrounds - 1, each
 * round over all records, so that rounds are minutes apart. */
static int later_rounds(const bench_args *a, bench_task *tasks, const rt_cpu_target *cpu,
	const cg_compile_opts *copts, rt_timing *shared, record_set *rs)
{
	for (int r = 1; r < rs->nrounds; r++) {
		double t0 = rt_now_s();
		for (int i = 0; i < rs->n; i++) {
			loop_prog *p = random_program(&tasks[rs->task[i]], rs->sched_seed[i], a->steps);
			rs->times[(size_t)i * MAX_ROUNDS + r] = p ?
				measure(a, &tasks[rs->task[i]], p, cpu, copts, shared) : -1;
			loop_prog_free(p);
		}
		fprintf(stderr, "round %d of %d in %.0f s\n", r + 1, rs->nrounds,
			rt_now_s() - t0);
	}
	return 0;
}

static int measure_all(const bench_args *a, record_set *rs)
{
	rt_cpu_target cpu;
	rt_cpu_target_host(&cpu);
	char version[256], err[512];
	cg_compile_opts copts = { 0 };
	if (cg_compiler_version(NULL, version, sizeof(version), err, sizeof(err)) == 0)
		copts.cc_version = version;
	bench_task tasks[NWORKLOADS] = { 0 };
	rt_timing *shared = rt_shared_alloc(sizeof(rt_timing));
	int status = shared ? 0 : -1;
	rs->nrounds = a->rounds;
	for (int w = 0; w < NWORKLOADS && status == 0; w++)
		status = task_open(&tasks[w], w);
	for (int w = 0; w < NWORKLOADS && status == 0; w++) {
		int want = a->records / NWORKLOADS + (w < a->records % NWORKLOADS);
		status = first_round(a, &tasks[w], w, want, &cpu, &copts, shared, rs);
	}
	if (status == 0)
		status = later_rounds(a, tasks, &cpu, &copts, shared, rs);
	for (int w = 0; w < NWORKLOADS; w++)
		task_close(&tasks[w]);
	if (shared)
		rt_shared_free(shared, sizeof(rt_timing));
	return status;
}

/* Recompute the features of every record of "rs" from its schedule seed
 * (after a change to tuner/features.c, without measuring again). */
static int refeature(const bench_args *a, record_set *rs)
{
	rt_cpu_target cpu;
	rt_cpu_target_host(&cpu);
	bench_task tasks[NWORKLOADS] = { 0 };
	int status = 0;
	for (int w = 0; w < NWORKLOADS && status == 0; w++)
		status = task_open(&tasks[w], w);
	for (int i = 0; i < rs->n && status == 0; i++) {
		loop_prog *p = rs->task[i] < NWORKLOADS ?
			random_program(&tasks[rs->task[i]], rs->sched_seed[i], a->steps) : NULL;
		status = p ? tune_program_features(p, &cpu, rs->X + (size_t)i * NF) : -1;
		loop_prog_free(p);
	}
	for (int w = 0; w < NWORKLOADS; w++)
		task_close(&tasks[w]);
	return status;
}

/* Write "rs" to "path" as CSV: task, seed, rounds, a time per round,
 * features. */
static int save_records(const char *path, const record_set *rs)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	for (int i = 0; i < rs->n; i++) {
		fprintf(f, "%u,%llu,%d", rs->task[i], (unsigned long long)rs->sched_seed[i],
			rs->nrounds);
		for (int r = 0; r < rs->nrounds; r++)
			fprintf(f, ",%.9g", rs->times[(size_t)i * MAX_ROUNDS + r]);
		for (int j = 0; j < NF; j++)
			fprintf(f, ",%.9g", (double)rs->X[(size_t)i * NF + j]);
		fprintf(f, "\n");
	}
	return fclose(f);
}

/* Parse one CSV line "line" of save_records into "rs"; features of
 * another count are zeros when "any_features" (to be recomputed).
 * Return 0 or -1. */
static int parse_record(char *line, record_set *rs, bool any_features)
{
	char *end;
	double times[MAX_ROUNDS];
	float x[NF] = { 0 };
	unsigned long task = strtoul(line, &end, 10);
	unsigned long long seed = *end == ',' ? strtoull(end + 1, &end, 10) : 0;
	long nrounds = *end == ',' ? strtol(end + 1, &end, 10) : 0;
	if (nrounds < 1 || nrounds > MAX_ROUNDS || (rs->n && nrounds != rs->nrounds))
		return -1;
	rs->nrounds = (int)nrounds;
	for (int r = 0; r < nrounds; r++) {
		if (*end != ',')
			return -1;
		times[r] = strtod(end + 1, &end);
	}
	int nf = 0;
	for (; *end == ','; nf++) {
		double v = strtod(end + 1, &end);
		if (nf < NF)
			x[nf] = (float)v;
	}
	if (nf != NF && !any_features)
		return -1;
	return record_push(rs, any_features && nf != NF ? (float[NF]){ 0 } : x,
		(uint32_t)task, seed, times);
}

/* Read the records of "path" (save_records) into "rs".  Return 0, or -1
 * naming the line that does not parse (its features of another count,
 * unless "any_features"). */
static int load_records(const char *path, record_set *rs, bool any_features)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int status = 0, lineno = 0;
	while (status == 0 && getline(&line, &cap, f) > 0) {
		lineno++;
		status = parse_record(line, rs, any_features);
		if (status)
			fprintf(stderr, "%s:%d: not a record of %d features%s\n", path, lineno,
				NF, any_features ? "" : " (try --refeature)");
	}
	free(line);
	fclose(f);
	return status;
}

/* Print how well two measurements of the same records agree: the
 * pairwise accuracy of the least time of the first half of the rounds
 * against that of the second half, the ceiling measurement noise puts
 * on any model's accuracy (for labels of half as many rounds). */
static void measurement_agreement(const record_set *rs)
{
	int half = rs->nrounds / 2;
	float *first = malloc((size_t)rs->n * sizeof(float));
	float *second = malloc((size_t)rs->n * sizeof(float));
	uint32_t *task = malloc((size_t)rs->n * sizeof(uint32_t));
	int n = 0;
	for (int i = 0; half > 0 && first && second && task && i < rs->n; i++) {
		double a = record_seconds(rs, i, 0, half);
		double b = record_seconds(rs, i, half, 2 * half);
		if (a > 0 && b > 0) {
			first[n] = (float)-a;
			second[n] = (float)-b;
			task[n++] = rs->task[i];
		}
	}
	if (n > 1)
		printf("measurement agreement (least time of rounds 1-%d against rounds "
		       "%d-%d, %d records): %.3f\n", half, half + 1, 2 * half, n,
			tune_pairwise_accuracy(first, second, task, n));
	free(first);
	free(second);
	free(task);
}

/* The rows "rows"[0..n) of "rs" gathered into "X", "y" (normalized
 * throughput within the gathered rows) and "task". */
typedef struct subset {
	int n;
	float *X, *y;
	uint32_t *task;
} subset;

static void subset_free(subset *s)
{
	free(s->X);
	free(s->y);
	free(s->task);
}

static int gather(const record_set *rs, const int *rows, int n, subset *s)
{
	s->n = n;
	s->X = malloc((size_t)n * NF * sizeof(float));
	s->y = malloc((size_t)n * sizeof(float));
	s->task = malloc((size_t)n * sizeof(uint32_t));
	double *sec = malloc((size_t)n * sizeof(double));
	int status = s->X && s->y && s->task && sec ? 0 : -1;
	for (int i = 0; status == 0 && i < n; i++) {
		memcpy(s->X + (size_t)i * NF, rs->X + (size_t)rows[i] * NF, NF * sizeof(float));
		s->task[i] = rs->task[rows[i]];
		sec[i] = record_seconds(rs, rows[i], 0, rs->nrounds);
	}
	if (status == 0)
		status = tune_normalize_throughput(sec, s->task, n, s->y);
	free(sec);
	return status;
}

/* The mean over tasks of "test" of the normalized throughput of the
 * record "pred" scores highest. */
static double top1_throughput(const subset *test, const float *pred)
{
	double sum = 0;
	int ntasks = 0;
	for (int t = 0; t < NWORKLOADS; t++) {
		int best = -1;
		for (int i = 0; i < test->n; i++)
			if (test->task[i] == (uint32_t)t && (best < 0 || pred[i] > pred[best]))
				best = i;
		if (best >= 0) {
			sum += test->y[best];
			ntasks++;
		}
	}
	return ntasks ? sum / ntasks : 0;
}

/* Train on "train" with "opts", score "test"; accuracy and top-1
 * throughput into "acc" and "top1".  Return 0 or -1. */
static int evaluate(const tune_cost_model_opts *opts, const subset *train,
	const subset *test, double *acc, double *top1)
{
	char err[512];
	tune_cost_model *m = tune_cost_model_new(NF, opts, err, sizeof(err));
	float *pred = malloc((size_t)test->n * sizeof(float));
	int status = m && pred ? 0 : -1;
	double t0 = rt_now_s();
	if (status == 0)
		status = tune_cost_model_train(m, train->X, NF, train->y, train->task, train->n,
			err, sizeof(err));
	if (status == 0)
		status = tune_cost_model_predict(m, test->X, NF, test->n, pred, err, sizeof(err));
	if (status == 0) {
		*acc = tune_pairwise_accuracy(pred, test->y, test->task, test->n);
		*top1 = top1_throughput(test, pred);
		fprintf(stderr, "  trained on %d records in %.2f s: %.3f\n", train->n,
			rt_now_s() - t0, *acc);
	} else {
		fprintf(stderr, "cost_model: %s\n", err);
	}
	free(pred);
	tune_cost_model_free(m);
	return status;
}

/* Shuffle "rows"[0..n) with "rng". */
static void shuffle(int *rows, int n, uint64_t *rng)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(sch_rng_next(rng) % (uint64_t)(i + 1));
		int t = rows[i];
		rows[i] = rows[j];
		rows[j] = t;
	}
}

/* Scores of one objective over several train/test splits. */
typedef struct score {
	double acc_sum, top1_sum, acc_min, acc_max;
	int n;
} score;

static void score_add(score *s, double acc, double top1)
{
	s->acc_min = s->n == 0 || acc < s->acc_min ? acc : s->acc_min;
	s->acc_max = s->n == 0 || acc > s->acc_max ? acc : s->acc_max;
	s->acc_sum += acc;
	s->top1_sum += top1;
	s->n++;
}

/* Train on the first "ntrain" of "rows" and test on the "ntest" rows
 * from "test_from" on, for each objective, adding to "scores". */
static int split_scores(const bench_args *a, const record_set *rs, const int *rows,
	int ntrain, int test_from, int ntest, score scores[TUNE_OBJ_COUNT])
{
	subset train = { 0 }, test = { 0 };
	int status = gather(rs, rows, ntrain, &train) ||
		gather(rs, rows + test_from, ntest, &test) ? -1 : 0;
	for (int o = 0; status == 0 && o < TUNE_OBJ_COUNT; o++) {
		tune_cost_model_opts opts = a->model;
		opts.objective = (tune_objective)o;
		double acc = 0, top1 = 0;
		status = evaluate(&opts, &train, &test, &acc, &top1);
		score_add(&scores[o], acc, top1);
	}
	subset_free(&train);
	subset_free(&test);
	return status;
}

static void print_scores(const char *label, int ntrain, int ntest,
	const score scores[TUNE_OBJ_COUNT])
{
	printf("| %s | %d | %d |", label, ntrain, ntest);
	for (int o = 0; o < TUNE_OBJ_COUNT; o++) {
		const score *s = &scores[o];
		if (s->n > 1)
			printf(" %.3f (%.3f-%.3f) | %.3f |", s->acc_sum / s->n, s->acc_min,
				s->acc_max, s->top1_sum / s->n);
		else
			printf(" %.3f | %.3f |", s->acc_sum, s->top1_sum);
	}
	printf("\n");
	fflush(stdout);
}

/* Arrange "rows" of "n" records into "out": every row but fold "fold"
 * (of "ntest" rows) first, that fold last. */
static void fold_rows(const int *rows, int n, int fold, int ntest, int *out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (i / ntest != fold)
			out[k++] = rows[i];
	for (int i = 0; i < n; i++)
		if (i / ntest == fold)
			out[k++] = rows[i];
}

/* Cross-validation by record: the shuffled records are cut into folds of
 * n - --train records; each fold is tested once, the model trained on
 * (a prefix of) the others; scores are means over folds (min-max). */
static int split_by_record(const bench_args *a, const record_set *rs)
{
	int *rows = malloc((size_t)rs->n * sizeof(int));
	int *order = malloc((size_t)rs->n * sizeof(int));
	if (!rows || !order) {
		free(rows);
		free(order);
		return -1;
	}
	for (int i = 0; i < rs->n; i++)
		rows[i] = i;
	uint64_t rng = a->seed ^ 0x5eedull;
	shuffle(rows, rs->n, &rng);
	int ntest = a->train < rs->n - 1 ? rs->n - a->train : rs->n / 6;
	int folds = rs->n / ntest, status = 0;
	printf("\nSplit by record: %d-fold cross-validation, each fold of %d records "
	       "tested on a model trained on the first N records of the others; mean "
	       "(min-max) over the folds:\n\n", folds, ntest);
	printf("| split | train N | test | rank: accuracy | rank: top-1 | "
	       "reg: accuracy | reg: top-1 |\n|---|---|---|---|---|---|---|\n");
	int ntrain = folds * ntest - ntest;
	for (int k = a->quick ? 5 : 1; status == 0 && k <= 5; k++) {
		score scores[TUNE_OBJ_COUNT] = { 0 };
		for (int f = 0; status == 0 && f < folds; f++) {
			fold_rows(rows, folds * ntest, f, ntest, order);
			status = split_scores(a, rs, order, ntrain * k / 5, ntrain, ntest, scores);
		}
		print_scores("records", ntrain * k / 5, ntest, scores);
	}
	free(rows);
	free(order);
	return status;
}

static int split_by_task(const bench_args *a, const record_set *rs)
{
	int *rows = malloc((size_t)rs->n * sizeof(int));
	if (!rows)
		return -1;
	int status = 0;
	printf("\nSplit by task (train on the other workloads, test on this one):\n\n");
	printf("| held-out task | train | test | rank: accuracy | rank: top-1 | "
	       "reg: accuracy | reg: top-1 |\n|---|---|---|---|---|---|---|\n");
	for (int t = 0; status == 0 && t < NWORKLOADS; t++) {
		int n = 0;
		for (int i = 0; i < rs->n; i++)
			if (rs->task[i] != (uint32_t)t)
				rows[n++] = i;
		int ntrain = n;
		for (int i = 0; i < rs->n; i++)
			if (rs->task[i] == (uint32_t)t)
				rows[n++] = i;
		score scores[TUNE_OBJ_COUNT] = { 0 };
		if (n > ntrain)
			status = split_scores(a, rs, rows, ntrain, ntrain, n - ntrain, scores);
		print_scores(workloads[t].name, ntrain, n - ntrain, scores);
	}
	free(rows);
	return status;
}

static int parse_args(bench_args *a, int argc, char **argv)
{
	*a = (bench_args){ .records = 600, .train = 500, .threads = 0, .steps = 12, .rounds = 4,
		.seed = 1, .min_time = 0.005, .model = tune_cost_model_opts_default() };
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(k, "--refeature") == 0 || strcmp(k, "--quick") == 0) {
			a->refeature |= strcmp(k, "--refeature") == 0;
			a->quick |= strcmp(k, "--quick") == 0;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (strcmp(k, "--records") == 0)
			a->records = atoi(v);
		else if (strcmp(k, "--train") == 0)
			a->train = atoi(v);
		else if (strcmp(k, "--seed") == 0)
			a->seed = strtoull(v, NULL, 10);
		else if (strcmp(k, "--threads") == 0)
			a->threads = atoi(v);
		else if (strcmp(k, "--steps") == 0)
			a->steps = atoi(v);
		else if (strcmp(k, "--min-time") == 0)
			a->min_time = atof(v);
		else if (strcmp(k, "--save") == 0)
			a->save = v;
		else if (strcmp(k, "--load") == 0)
			a->load = v;
		else if (strcmp(k, "--trees") == 0)
			a->model.rounds = atoi(v);
		else if (strcmp(k, "--rounds") == 0)
			a->rounds = atoi(v);
		else if (strcmp(k, "--depth") == 0)
			a->model.max_depth = atoi(v);
		else if (strcmp(k, "--eta") == 0)
			a->model.eta = atof(v);
		else if (strcmp(k, "--min-child-weight") == 0)
			a->model.min_child_weight = atof(v);
		else if (strcmp(k, "--colsample") == 0)
			a->model.colsample = atof(v);
		else if (strcmp(k, "--subsample") == 0)
			a->model.subsample = atof(v);
		else if (strcmp(k, "--xgb-threads") == 0)
			a->model.nthread = atoi(v);
		else
			return -1;
	}
	return a->records > 1 && a->rounds >= 1 && a->rounds <= MAX_ROUNDS ? 0 : -1;
}

int main(int argc, char **argv)
{
	bench_args a;
	if (parse_args(&a, argc, argv)) {
		fprintf(stderr, "usage: cost_model [--records N] [--train N] [--seed S] "
			"[--threads N] [--min-time S] [--steps K] [--save FILE] [--load FILE] "
			"[--rounds N] [--refeature] [--trees N] [--depth N] [--eta X] "
			"[--min-child-weight X] [--colsample X] [--subsample X] "
			"[--xgb-threads N]\n");
		return 2;
	}
	record_set rs = { 0 };
	double t0 = rt_now_s();
	int status = a.load ? load_records(a.load, &rs, a.refeature) : measure_all(&a, &rs);
	if (status == 0 && a.load && a.refeature)
		status = refeature(&a, &rs);
	if (status == 0 && a.save)
		status = save_records(a.save, &rs);
	if (status == 0) {
		printf("%d records, %d features, measured or loaded in %.0f s; model: %d "
		       "trees, depth %d, eta %g, min_child_weight %g, colsample %g, "
		       "subsample %g\n", rs.n, NF, rt_now_s() - t0, a.model.rounds,
			a.model.max_depth, a.model.eta, a.model.min_child_weight,
			a.model.colsample, a.model.subsample);
		measurement_agreement(&rs);
		status = split_by_record(&a, &rs) || (!a.quick && split_by_task(&a, &rs)) ?
			-1 : 0;
	}
	if (status)
		fprintf(stderr, "cost_model: failed\n");
	record_free(&rs);
	return status ? 1 : 0;
}
