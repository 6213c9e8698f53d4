/* Tests of the cost model's two halves:
 *
 * - features (tuner/features.c) of programs lowered by the real pipeline
 *   (matmul and softmax from the op library, under traces) and of
 *   programs built by hand, with exact expected values: float operations
 *   of a store, vector lanes, parallel extent, unique bytes of a tile,
 *   cache lines, strides, reuse, allocations, guards;
 * - the model (tuner/model.c): synthetic records whose label is a known
 *   function of the features are ranked well on held-out records by both
 *   objectives; save/load round trips give identical predictions; every
 *   error path reports; the accuracy and normalization helpers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/te_impl.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tuner/features.h"
#include "tuner/model.h"
#include "tuner/record_features.h"

#define MAX_STORES 16

/* The trace of bench/traces/matmul_1024.trace: a parallel register tile
 * of 8 x 32 in C_local, rows unrolled, 16 lanes vectorized. */
static const char tiled_matmul[] =
	"cache_write C local\n"
	"split C.i 8 -> C.io C.ii\n"
	"split C.j 32 -> C.jo C.ji\n"
	"reorder C.io C.jo C.ii C.ji\n"
	"fuse C.io C.jo -> C.t\n"
	"parallel C.t\n"
	"compute_at C_local C.t\n"
	"reorder C_local.k C_local.i C_local.j\n"
	"split C_local.j 16 -> C_local.jo C_local.ji\n"
	"unroll C_local.i\n"
	"unroll C_local.jo\n"
	"vectorize C_local.ji\n";

/* The features of one program: per store and for the program. */
typedef struct features {
	int nstores;
	float store[MAX_STORES][TUNE_STORE_FEATURES];
	float program[TUNE_PROGRAM_FEATURES];
} features;

static rt_cpu_target test_target(void)
{
	rt_cpu_target t;
	char err[256];
	cr_assert_eq(rt_cpu_target_parse("cpu -arch=x86_64 -isa=avx512 -vector=64 "
		"-cores=4 -l1d=32K -l2=1M -l3=16M -line=64", &t, err, sizeof(err)), 0,
		"%s", err);
	return t;
}

/* Fill "f" with the features of "p" on test_target(). */
static void program_features(const loop_prog *p, features *f)
{
	rt_cpu_target t = test_target();
	cr_assert_eq(tune_store_features(p, &t, &f->store[0][0], MAX_STORES,
		&f->nstores), 0);
	cr_assert_eq(tune_program_features(p, &t, f->program), 0);
}

/* Lower op "name" with attributes "keys"/"values" under "trace" (NULL:
 * the default schedule) and fill "f" with its features. */
static void lowered_features(const char *name, int n, const char *const *keys,
	const char *const *values, const char *trace, features *f)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = tessel_ops_instantiate(ctx, name, n, keys, values);
	cr_assert_not_null(op, "%s", tessel_ctx_error(ctx)->message);
	sch_state *st = sch_state_new(ctx, op);
	cr_assert_not_null(st);
	if (trace) {
		sch_trace *t = sch_trace_parse(ctx, "t.trace", trace);
		cr_assert_not_null(t, "%s", tessel_ctx_error(ctx)->message);
		cr_assert_eq(sch_replay(st, t, "t.trace"), 0, "%s",
			tessel_ctx_error(ctx)->message);
		sch_trace_free(t);
	}
	loop_prog *p = sch_program(st);
	cr_assert_not_null(p, "%s", tessel_ctx_error(ctx)->message);
	program_features(p, f);
	loop_prog_free(p);
	sch_state_free(st);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

static void matmul_features(int m, int n, int k, const char *trace, features *f)
{
	char ms[16], ns[16], ks[16];
	snprintf(ms, sizeof(ms), "%d", m);
	snprintf(ns, sizeof(ns), "%d", n);
	snprintf(ks, sizeof(ks), "%d", k);
	const char *keys[] = { "M", "N", "K" }, *values[] = { ms, ns, ks };
	lowered_features("matmul", 3, keys, values, trace, f);
}

/* Assert that feature "v" (scaled) is the raw value "want". */
static void expect_raw(float v, double want, const char *what)
{
	double got = exp2((double)v) - 1;
	cr_expect(fabs(got - want) <= 1e-4 * fmax(1, want),
		"%s: got %.6g, want %.6g", what, got, want);
}

static void expect_store(const features *f, int s, int i, double want)
{
	char name[64];
	tune_store_feature_name(i, name, sizeof(name));
	char what[96];
	snprintf(what, sizeof(what), "store %d %s", s, name);
	expect_raw(f->store[s][i], want, what);
}

static void expect_program(const features *f, int i, double want)
{
	char name[96];
	tune_program_feature_name(i, name, sizeof(name));
	expect_raw(f->program[i], want, name);
}

Test(features, scale_is_log2_of_one_plus)
{
	cr_expect_float_eq(tune_feature_scale(0), 0.0f, 0);
	cr_expect_float_eq(tune_feature_scale(1), 1.0f, 1e-7);
	cr_expect_float_eq(tune_feature_scale(1023), 10.0f, 1e-6);
	cr_expect_float_eq(tune_feature_scale(-5), 0.0f, 0);
	cr_expect_float_eq(tune_feature_scale(NAN), 0.0f, 0);
}

Test(features, names_cover_every_index)
{
	char name[96];
	cr_assert_eq(tune_store_feature_name(TF_TRIP_COUNT, name, sizeof(name)), 0);
	cr_expect_str_eq(name, "trip_count");
	tune_store_feature_name(tune_loop_feature(1, TL_EXTENT), name, sizeof(name));
	cr_expect_str_eq(name, "loop1.extent");
	tune_store_feature_name(tune_buf_feature(2, TB_UNIQUE_BYTES), name, sizeof(name));
	cr_expect_str_eq(name, "buf2.unique_bytes");
	tune_program_feature_name(TP_STORE0 + TUNE_STORE_FEATURES + TF_VECTOR_LANES,
		name, sizeof(name));
	cr_expect_str_eq(name, "store1.vector_lanes");
	tune_program_feature_name(TP_SUM0 + TF_FLOAT_MUL, name, sizeof(name));
	cr_expect_str_eq(name, "sum.float_mul");
	cr_expect_eq(tune_store_feature_name(TUNE_STORE_FEATURES, name, sizeof(name)), -1);
	cr_expect_eq(tune_program_feature_name(-1, name, sizeof(name)), -1);
	for (int i = 0; i < TUNE_PROGRAM_FEATURES; i++)
		cr_assert_eq(tune_program_feature_name(i, name, sizeof(name)), 0);
}

Test(features, default_matmul_counts_its_flops_and_bytes)
{
	features f;
	matmul_features(64, 64, 64, NULL, &f);
	cr_assert_eq(f.nstores, 2);
	expect_store(&f, 0, TF_TRIP_COUNT, 64 * 64);
	expect_store(&f, 0, TF_FLOAT_ADDSUB, 0);
	expect_store(&f, 1, TF_TRIP_COUNT, 64 * 64 * 64);
	expect_store(&f, 1, TF_FLOAT_ADDSUB, 64 * 64 * 64);
	expect_store(&f, 1, TF_FLOAT_MUL, 64 * 64 * 64);
	expect_store(&f, 1, TF_DEPTH, 3);
	expect_store(&f, 1, TF_ACCUMULATE, 1);
	expect_store(&f, 1, TF_LOADS, 3);
	expect_store(&f, 1, TF_PARALLEL_PRODUCT, 1);
	expect_store(&f, 1, TF_PARALLEL_POSITION, 0);
	expect_store(&f, 1, TF_PARALLEL_BALANCE, 0.25);
	expect_store(&f, 1, TF_VECTOR_LANES, 1);
	expect_store(&f, 1, TF_VECTOR_INNERMOST, 0);
	expect_store(&f, 1, TF_VECTOR_CONTIGUOUS, 0);
	expect_store(&f, 1, TF_INNER_STRIDED, 1);
	expect_store(&f, 1, tune_loop_feature(0, TL_EXTENT), 64);
	expect_store(&f, 1, tune_loop_feature(0, TL_SERIAL), 1);
	expect_store(&f, 1, tune_loop_feature(0, TL_POSITION), 2);
	expect_store(&f, 1, tune_loop_feature(3, TL_EXTENT), 0);
	for (int b = 0; b < 3; b++) {
		expect_store(&f, 1, tune_buf_feature(b, TB_PRESENT), 1);
		expect_store(&f, 1, tune_buf_feature(b, TB_UNIQUE_BYTES), 64 * 64 * 4);
		expect_store(&f, 1, tune_buf_feature(b, TB_LINES), 64 * 4);
		expect_store(&f, 1, tune_buf_feature(b, TB_ALLOCATED), 0);
	}
	expect_store(&f, 1, tune_buf_feature(3, TB_PRESENT), 0);
	expect_store(&f, 1, tune_buf_feature(0, TB_WRITE), 1);
	expect_store(&f, 1, tune_buf_feature(0, TB_READ), 1);
	expect_store(&f, 1, tune_buf_feature(0, TB_BYTES), 2.0 * 64 * 64 * 64 * 4);
	expect_store(&f, 1, tune_buf_feature(1, TB_BYTES), 64.0 * 64 * 64 * 4);
	expect_store(&f, 1, tune_buf_feature(0, TB_STRIDE), 0);
	expect_store(&f, 1, tune_buf_feature(0, TB_REUSE_COUNT), 64);
	expect_store(&f, 1, tune_buf_feature(1, TB_STRIDE), 1);
	expect_store(&f, 1, tune_buf_feature(1, TB_REUSE_COUNT), 64);
	expect_store(&f, 1, tune_buf_feature(1, TB_REUSE_ITERS), 64);
	expect_store(&f, 1, tune_buf_feature(2, TB_STRIDE), 64);
	expect_store(&f, 1, tune_buf_feature(2, TB_REUSE_COUNT), 64);
	expect_store(&f, 1, tune_buf_feature(2, TB_REUSE_ITERS), 64 * 64);
	expect_program(&f, TP_STORES, 2);
	expect_program(&f, TP_LOOPS, 3);
	expect_program(&f, TP_FLOAT_OPS, 2.0 * 64 * 64 * 64);
	expect_program(&f, TP_STORE0 + TF_TRIP_COUNT, 64 * 64 * 64);
	expect_program(&f, TP_STORE0 + TUNE_STORE_FEATURES + TF_TRIP_COUNT, 64 * 64);
	expect_program(&f, TP_STORE0 + 2 * TUNE_STORE_FEATURES + TF_TRIP_COUNT, 0);
	expect_program(&f, TP_TARGET_CORES, 4);
	expect_program(&f, TP_TARGET_VECTOR_BYTES, 64);
}

Test(features, tiled_matmul_sees_tiles_vectors_and_tasks)
{
	features f;
	matmul_features(64, 64, 64, tiled_matmul, &f);
	cr_assert_eq(f.nstores, 3);
	int s = 1;
	expect_store(&f, s, TF_TRIP_COUNT, 64 * 64 * 64);
	expect_store(&f, s, TF_FLOAT_MUL, 64 * 64 * 64);
	expect_store(&f, s, TF_INT_DIVMOD, 2.0 * 64 * 64 * 64);
	expect_store(&f, s, TF_VECTOR_LANES, 16);
	expect_store(&f, s, TF_VECTOR_INNERMOST, 1);
	expect_store(&f, s, TF_VECTOR_REGS, 1);
	expect_store(&f, s, TF_VECTOR_CONTIGUOUS, 1);
	expect_store(&f, s, TF_INNER_STRIDED, 0);
	expect_store(&f, s, TF_PARALLEL_PRODUCT, 16);
	expect_store(&f, s, TF_PARALLEL_LOOPS, 1);
	expect_store(&f, s, TF_PARALLEL_POSITION, 1);
	expect_store(&f, s, TF_PARALLEL_BALANCE, 1);
	expect_store(&f, s, TF_TASK_ITERS, 64 * 64 * 64 / 16);
	expect_store(&f, s, TF_UNROLL_PRODUCT, 16);
	expect_store(&f, s, TF_UNROLL_LOOPS, 2);
	expect_store(&f, s, tune_loop_feature(0, TL_VECTORIZED), 1);
	expect_store(&f, s, tune_loop_feature(1, TL_UNROLLED), 1);
	expect_store(&f, s, tune_loop_feature(2, TL_EXTENT), 8);
	expect_store(&f, s, tune_loop_feature(3, TL_EXTENT), 64);
	expect_store(&f, s, tune_loop_feature(4, TL_PARALLEL), 1);
	expect_store(&f, s, tune_loop_feature(4, TL_POSITION), 0);
	expect_store(&f, s, tune_loop_feature(0, TL_WORKING_SET), 16 * 4 + 4 + 16 * 4);
	expect_store(&f, s, tune_loop_feature(3, TL_WORKING_SET),
		8 * 32 * 4 + 8 * 64 * 4 + 64 * 32 * 4);
	int c_local = 0, a = 1, b = 2;
	expect_store(&f, s, tune_buf_feature(c_local, TB_ALLOCATED), 1);
	expect_store(&f, s, tune_buf_feature(c_local, TB_LOCAL), 1);
	expect_store(&f, s, tune_buf_feature(c_local, TB_ALLOC_BYTES), 8 * 32 * 4);
	expect_store(&f, s, tune_buf_feature(c_local, TB_UNIQUE_BYTES), 8 * 32 * 4);
	expect_store(&f, s, tune_buf_feature(c_local, TB_REUSE_COUNT), 64);
	expect_store(&f, s, tune_buf_feature(c_local, TB_REUSE_ITERS), 8 * 2 * 16);
	expect_store(&f, s, tune_buf_feature(a, TB_UNIQUE_BYTES), 64 * 64 * 4);
	expect_store(&f, s, tune_buf_feature(a, TB_TASK_BYTES), 8 * 64 * 4);
	expect_store(&f, s, tune_buf_feature(a, TB_STRIDE), 0);
	expect_store(&f, s, tune_buf_feature(a, TB_VARYING_STRIDE), 64);
	expect_store(&f, s, tune_buf_feature(a, TB_REUSE_COUNT), 16);
	expect_store(&f, s, tune_buf_feature(a, TB_REUSE_ITERS), 1);
	expect_store(&f, s, tune_buf_feature(b, TB_TASK_BYTES), 64 * 32 * 4);
	expect_store(&f, s, tune_buf_feature(b, TB_STRIDE), 1);
	expect_store(&f, s, tune_buf_feature(b, TB_LINES), 64 * 4);
	expect_store(&f, s, tune_buf_feature(b, TB_REUSE_COUNT), 8);
	expect_store(&f, s, tune_buf_feature(b, TB_REUSE_ITERS), 2 * 16);
	expect_program(&f, TP_STORES, 3);
	expect_program(&f, TP_ALLOCS, 1);
	expect_program(&f, TP_ALLOC_BYTES, 8 * 32 * 4);
	expect_program(&f, TP_PARALLEL_LAUNCHES, 1);
	expect_program(&f, TP_STORE0 + TF_VECTOR_LANES, 16);
	expect_program(&f, TP_STORE0 + TF_TRIP_COUNT, 64 * 64 * 64);
}

Test(features, stored_trace_gives_the_lowered_programs_features)
{
	features f;
	matmul_features(64, 64, 64, tiled_matmul, &f);
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { "M", "N", "K" }, *values[] = { "64", "64", "64" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, keys, values);
	cr_assert_not_null(op, "%s", tessel_ctx_error(ctx)->message);
	rt_cpu_target t = test_target();
	float x[TUNE_PROGRAM_FEATURES];
	cr_assert_eq(tune_trace_features(ctx, op, tiled_matmul, &t, x), 0, "%s",
		tessel_ctx_error(ctx)->message);
	for (int i = 0; i < TUNE_PROGRAM_FEATURES; i++)
		cr_expect_eq(x[i], f.program[i], "feature %d", i);
	cr_expect_eq(tune_trace_features(ctx, op, "split C.nope 4 -> a b\n", &t, x), -1,
		"a trace that no longer replays is refused");
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

Test(features, softmax_counts_math_functions)
{
	features f;
	const char *keys[] = { "shape" }, *values[] = { "[8,32]" };
	lowered_features("softmax", 1, keys, values, NULL, &f);
	int math = 0, div = 0;
	for (int s = 0; s < f.nstores; s++) {
		math += f.store[s][TF_FLOAT_MATH] > 0;
		div += f.store[s][TF_FLOAT_DIV] > 0;
		if (f.store[s][TF_FLOAT_MATH] > 0)
			expect_store(&f, s, TF_FLOAT_MATH, 8 * 32);
	}
	cr_expect_eq(math, 1);
	cr_expect_eq(div, 1);
	expect_program(&f, TP_SUM0 + TF_FLOAT_MATH, 8 * 32);
}

Test(features, streaming_stores_count_their_vector_bytes)
{
	const char *keys[] = { "shape" }, *values[] = { "[8,64]" };
	static const char vector_stream[] =
		"split Y.j 16 -> Y.jo Y.ji\nvectorize Y.ji\nstream Y 1\n";
	static const char vector_plain[] = "split Y.j 16 -> Y.jo Y.ji\nvectorize Y.ji\n";
	static const char scalar_stream[] = "stream Y 1\n";
	features f;
	lowered_features("relu", 1, keys, values, vector_stream, &f);
	expect_program(&f, TP_STREAM_BYTES, 8 * 64 * 4);
	lowered_features("relu", 1, keys, values, vector_plain, &f);
	expect_program(&f, TP_STREAM_BYTES, 0);
	lowered_features("relu", 1, keys, values, scalar_stream, &f);
	expect_program(&f, TP_STREAM_BYTES, 0);
	const char *half_keys[] = { "shape", "dtype" }, *half_values[] = { "[8,64]", "f16" };
	lowered_features("relu", 2, half_keys, half_values, vector_stream, &f);
	expect_program(&f, TP_STREAM_BYTES, 0);
	char name[64];
	cr_assert_eq(tune_program_feature_name(TP_STREAM_BYTES, name, sizeof(name)), 0);
	cr_expect_str_eq(name, "stream_bytes");
}

/* A hand-built program: for i in 0..4, for j in 0..32 (vectorized when
 * "vec"): if i < 3: Y[i, j] = X[j, i] * 2.0; X transposed. */
static loop_prog *transpose_program(bool vec)
{
	loop_prog *p = loop_prog_new("transpose");
	loop_buffer *x = loop_buffer_new(p, "X", TESSEL_F32, 2, (const int64_t[]){ 32, 4 },
		LOOP_GLOBAL);
	loop_buffer *y = loop_buffer_new(p, "Y", TESSEL_F32, 2, (const int64_t[]){ 4, 32 },
		LOOP_GLOBAL);
	x->arg = 0;
	y->arg = 1;
	y->is_output = true;
	te_push(&p->arena, (void ***)&p->args, &p->nargs, x);
	te_push(&p->arena, (void ***)&p->args, &p->nargs, y);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *xi[] = { lx_var(p, j), lx_var(p, i) };
	loop_expr *yi[] = { lx_var(p, i), lx_var(p, j) };
	loop_expr *value = lx_binary(p, TESSEL_MUL, lx_load(p, x, 2, xi),
		lx_float(p, 2.0, TESSEL_F32), TESSEL_F32);
	loop_stmt *st = ls_store(p, y, 2, yi, value, "Y");
	loop_stmt *guard = ls_if(p, lx_cmp(p, TESSEL_LT, lx_var(p, i), lx_int(p, 3)), st, NULL);
	loop_stmt *inner = ls_for(p, j, lx_int(p, 0), lx_int(p, 32),
		vec ? LOOP_VECTORIZED : LOOP_SERIAL, guard);
	p->body = ls_for(p, i, lx_int(p, 0), lx_int(p, 4), LOOP_SERIAL, inner);
	return p;
}

Test(features, hand_built_strides_lines_and_guards)
{
	loop_prog *p = transpose_program(true);
	features f;
	program_features(p, &f);
	loop_prog_free(p);
	cr_assert_eq(f.nstores, 1);
	expect_store(&f, 0, TF_TRIP_COUNT, 128);
	expect_store(&f, 0, TF_FLOAT_MUL, 128);
	expect_store(&f, 0, TF_GUARDS, 1);
	expect_store(&f, 0, TF_ACCUMULATE, 0);
	expect_store(&f, 0, TF_VECTOR_LANES, 32);
	expect_store(&f, 0, TF_VECTOR_REGS, 2);
	expect_store(&f, 0, TF_VECTOR_CONTIGUOUS, 0);
	expect_store(&f, 0, TF_INNER_STRIDED, 1);
	expect_store(&f, 0, tune_buf_feature(0, TB_STRIDE), 1);
	expect_store(&f, 0, tune_buf_feature(0, TB_LINES), 4 * 2);
	expect_store(&f, 0, tune_buf_feature(0, TB_REUSE), 0);
	expect_store(&f, 0, tune_buf_feature(1, TB_STRIDE), 4);
	expect_store(&f, 0, tune_buf_feature(1, TB_UNIQUE_BYTES), 32 * 4 * 4);
	expect_store(&f, 0, tune_buf_feature(1, TB_LINES), 32);
	expect_store(&f, 0, tune_loop_feature(0, TL_WORKING_SET), 32 * 4 + 32 * 4);
	expect_store(&f, 0, tune_loop_feature(1, TL_WORKING_SET), 2 * 4 * 32 * 4);
	expect_store(&f, 0, tune_loop_feature(1, TL_POSITION), 0);
}

Test(features, every_random_schedule_has_features)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { "M", "N", "K" }, *values[] = { "24", "20", "16" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, keys, values);
	cr_assert_not_null(op);
	rt_cpu_target t = test_target();
	float x[TUNE_PROGRAM_FEATURES];
	for (uint64_t seed = 1; seed <= 40; seed++) {
		sch_state *st = sch_state_new(ctx, op);
		sch_random_schedule(st, seed, 12);
		loop_prog *p = sch_program(st);
		cr_assert_not_null(p);
		cr_assert_eq(tune_program_features(p, &t, x), 0);
		for (int i = 0; i < TUNE_PROGRAM_FEATURES; i++)
			cr_assert(isfinite(x[i]) && x[i] >= 0, "seed %llu feature %d = %g",
				(unsigned long long)seed, i, (double)x[i]);
		cr_expect_gt(x[TP_SUM0 + TF_FLOAT_MUL], 0, "seed %llu: no multiply counted",
			(unsigned long long)seed);
		loop_prog_free(p);
		sch_state_free(st);
	}
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

/* ---- the model ---------------------------------------------------------- */

#define NSYN 8

/* The synthetic throughput of the row "x": a known nonlinear function. */
static double synthetic_speed(const float *x)
{
	return 1.0 / (1.0 + exp(-(2 * x[0] - x[1] + 1.5 * x[2] * x[3] - (x[4] > 0.5))));
}

/* Fill "n" synthetic records in 4 tasks: features uniform in [0, 1),
 * labels normalized per task. */
static void synthetic(int n, uint64_t seed, float *X, float *y, uint32_t *task)
{
	double *seconds = malloc((size_t)n * sizeof(double));
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < NSYN; j++)
			X[i * NSYN + j] = (float)((double)(sch_rng_next(&seed) >> 11) * 0x1p-53);
		task[i] = (uint32_t)(i % 4) * 7 + 3;
		seconds[i] = (1 + task[i]) / synthetic_speed(X + i * NSYN);
	}
	cr_assert_eq(tune_normalize_throughput(seconds, task, n, y), 0);
	free(seconds);
}

/* Return a new model of "obj" (60 rounds, one thread) trained on "n" rows
 * of "X" with labels "y" and tasks "task", over "prior" (NULL: none). */
static tune_cost_model *train_over(tune_objective obj, tune_cost_model *prior,
	const float *X, const float *y, const uint32_t *task, int n)
{
	tune_cost_model_opts o = tune_cost_model_opts_default();
	o.objective = obj;
	o.rounds = 60;
	o.nthread = 1;
	char err[512] = "";
	tune_cost_model *m = tune_cost_model_new(NSYN, &o, err, sizeof(err));
	cr_assert_not_null(m, "%s", err);
	cr_assert_eq(tune_cost_model_set_prior(m, prior, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(tune_cost_model_train(m, X, NSYN, y, task, n, err, sizeof(err)), 0,
		"%s", err);
	return m;
}

static tune_cost_model *trained_model(tune_objective obj, float *Xtest, float *ytest,
	uint32_t *ttest, int ntest)
{
	enum { NTRAIN = 300 };
	float *X = malloc(NTRAIN * NSYN * sizeof(float)), *y = malloc(NTRAIN * sizeof(float));
	uint32_t *task = malloc(NTRAIN * sizeof(uint32_t));
	synthetic(NTRAIN, 11, X, y, task);
	synthetic(ntest, 12, Xtest, ytest, ttest);
	tune_cost_model *m = train_over(obj, NULL, X, y, task, NTRAIN);
	cr_assert(tune_cost_model_trained(m));
	free(X);
	free(y);
	free(task);
	return m;
}

static void check_ranks_held_out(tune_objective obj)
{
	enum { NTEST = 120 };
	float X[NTEST * NSYN], y[NTEST], pred[NTEST];
	uint32_t task[NTEST];
	char err[512] = "";
	tune_cost_model *m = trained_model(obj, X, y, task, NTEST);
	cr_assert_eq(tune_cost_model_predict(m, X, NSYN, NTEST, pred, err, sizeof(err)), 0,
		"%s", err);
	double acc = tune_pairwise_accuracy(pred, y, task, NTEST);
	cr_expect_geq(acc, 0.85, "%s: held-out pairwise accuracy %.3f",
		tune_objective_name(obj), acc);
	tune_cost_model_free(m);
}

Test(model, pairwise_ranking_learns_a_known_order)
{
	check_ranks_held_out(TUNE_OBJ_RANK);
}

Test(model, regression_learns_a_known_order)
{
	check_ranks_held_out(TUNE_OBJ_REGRESSION);
}

Test(model, save_load_round_trip_predicts_identically)
{
	enum { NTEST = 40 };
	float X[NTEST * NSYN], y[NTEST], before[NTEST], after[NTEST];
	uint32_t task[NTEST];
	char err[512] = "";
	tune_cost_model *m = trained_model(TUNE_OBJ_REGRESSION, X, y, task, NTEST);
	cr_assert_eq(tune_cost_model_predict(m, X, NSYN, NTEST, before, err, sizeof(err)), 0);
	void *blob = NULL;
	size_t len = 0;
	cr_assert_eq(tune_cost_model_save(m, &blob, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(len, 0);
	cr_expect_eq(((const char *)blob)[0], '{');
	tune_cost_model *l = tune_cost_model_load(blob, len, NSYN, NULL, err, sizeof(err));
	cr_assert_not_null(l, "%s", err);
	cr_expect(tune_cost_model_trained(l));
	cr_expect_eq(tune_cost_model_nfeatures(l), NSYN);
	cr_expect_eq(tune_cost_model_options(l)->objective, TUNE_OBJ_REGRESSION);
	cr_expect_eq(tune_cost_model_options(l)->rounds, 60);
	cr_expect_eq(tune_cost_model_options(l)->pair_samples,
		tune_cost_model_opts_default().pair_samples);
	cr_assert_eq(tune_cost_model_predict(l, X, NSYN, NTEST, after, err, sizeof(err)), 0);
	cr_expect_arr_eq(before, after, sizeof(before));
	void *blob2 = NULL;
	size_t len2 = 0;
	cr_assert_eq(tune_cost_model_save(l, &blob2, &len2, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(len2, len);
	free(blob2);
	cr_expect_null(tune_cost_model_load(blob, len, NSYN + 1, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "features") != NULL, "%s", err);
	free(blob);
	tune_cost_model_free(l);
	tune_cost_model_free(m);
}

/* Replace the first "from" in "blob" of "len" bytes by "to" (same length). */
static void patch(char *blob, size_t len, const char *from, const char *to)
{
	size_t n = strlen(from);
	cr_assert_eq(strlen(to), n);
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(blob + i, from, n) == 0) {
			memcpy(blob + i, to, n);
			return;
		}
	cr_assert_fail("'%s' is not in the saved model", from);
}

Test(model, load_refuses_foreign_and_stale_models)
{
	enum { NTEST = 4 };
	float X[NTEST * NSYN], y[NTEST];
	uint32_t task[NTEST];
	char err[512] = "";
	tune_cost_model *m = trained_model(TUNE_OBJ_RANK, X, y, task, NTEST);
	void *blob = NULL;
	size_t len = 0;
	cr_assert_eq(tune_cost_model_save(m, &blob, &len, err, sizeof(err)), 0, "%s", err);
	char *copy = malloc(len);
	memcpy(copy, blob, len);
	patch(copy, len, "tessel_params", "tessel_paramz");
	cr_expect_null(tune_cost_model_load(copy, len, 0, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "not a tessel model") != NULL, "%s", err);
	memcpy(copy, blob, len);
	char from[64], to[64];
	snprintf(from, sizeof(from), "\"tessel_features_version\":\"%d\"",
		TUNE_FEATURES_VERSION);
	snprintf(to, sizeof(to), "\"tessel_features_version\":\"%d\"",
		TUNE_FEATURES_VERSION + 1);
	if (strlen(from) == strlen(to)) {
		patch(copy, len, from, to);
		cr_expect_null(tune_cost_model_load(copy, len, 0, NULL, err, sizeof(err)));
		cr_expect(strstr(err, "version") != NULL, "%s", err);
	}
	cr_expect_null(tune_cost_model_load("{\"not\": \"a model\"}", 18, 0, NULL, err,
		sizeof(err)));
	cr_expect(strstr(err, "xgboost") != NULL, "%s", err);
	cr_expect_null(tune_cost_model_load(copy, len / 2, 0, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "xgboost") != NULL, "%s", err);
	free(copy);
	free(blob);
	tune_cost_model_free(m);
}

Test(model, errors_are_reported)
{
	char err[512] = "";
	cr_expect_null(tune_cost_model_new(0, NULL, err, sizeof(err)));
	cr_expect(strstr(err, "at least one feature") != NULL, "%s", err);
	tune_cost_model_opts o = tune_cost_model_opts_default();
	o.rounds = 0;
	cr_expect_null(tune_cost_model_new(4, &o, err, sizeof(err)));
	cr_expect(strstr(err, "rounds") != NULL, "%s", err);
	o = tune_cost_model_opts_default();
	o.objective = TUNE_OBJ_COUNT;
	cr_expect_null(tune_cost_model_new(4, &o, err, sizeof(err)));
	o = tune_cost_model_opts_default();
	o.subsample = 0;
	cr_expect_null(tune_cost_model_new(4, &o, err, sizeof(err)));
	o = tune_cost_model_opts_default();
	o.pair_samples = 0;
	cr_expect_null(tune_cost_model_new(4, &o, err, sizeof(err)));
	cr_expect(strstr(err, "pair_samples") != NULL, "%s", err);
	tune_cost_model *m = tune_cost_model_new(4, NULL, err, sizeof(err));
	cr_assert_not_null(m, "%s", err);
	cr_expect(!tune_cost_model_trained(m));
	float X[8] = { 0 }, y[2] = { 1, 0.5f }, pred[2];
	uint32_t task[2] = { 0, 0 };
	cr_expect_eq(tune_cost_model_predict(m, X, 4, 2, pred, err, sizeof(err)), -1);
	cr_expect(strstr(err, "not trained") != NULL, "%s", err);
	void *blob = NULL;
	size_t len = 0;
	cr_expect_eq(tune_cost_model_save(m, &blob, &len, err, sizeof(err)), -1);
	cr_expect_eq(tune_cost_model_train(m, X, 3, y, task, 2, err, sizeof(err)), -1);
	cr_expect(strstr(err, "3 features") != NULL, "%s", err);
	cr_expect_eq(tune_cost_model_train(m, X, 4, y, task, 0, err, sizeof(err)), -1);
	cr_expect(strstr(err, "no records") != NULL, "%s", err);
	y[1] = NAN;
	cr_expect_eq(tune_cost_model_train(m, X, 4, y, task, 2, err, sizeof(err)), -1);
	cr_expect(strstr(err, "not finite") != NULL, "%s", err);
	y[1] = 0.5f;
	cr_assert_eq(tune_cost_model_train(m, X, 4, y, task, 2, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(tune_cost_model_predict(m, X, 5, 1, pred, err, sizeof(err)), -1);
	cr_expect(strstr(err, "5 features") != NULL, "%s", err);
	cr_expect_eq(tune_cost_model_predict(m, X, 4, 2, pred, err, sizeof(err)), 0, "%s", err);
	tune_cost_model_free(m);
	tune_cost_model_free(NULL);
}

Test(model, scores_over_a_prior_add_to_the_priors)
{
	enum { NTRAIN = 300, NTEST = 100 };
	float X[NTRAIN * NSYN], y[NTRAIN], shifted[NTRAIN], Xt[NTEST * NSYN], yt[NTEST];
	float prior_pred[NTEST], pred[NTEST];
	uint32_t task[NTRAIN], tt[NTEST];
	char err[512] = "";
	synthetic(NTRAIN, 21, X, y, task);
	synthetic(NTEST, 22, Xt, yt, tt);
	for (int i = 0; i < NTRAIN; i++)
		shifted[i] = y[i] + 0.5f;
	tune_cost_model *prior = train_over(TUNE_OBJ_REGRESSION, NULL, X, y, task, NTRAIN);
	tune_cost_model *m = train_over(TUNE_OBJ_REGRESSION, prior, X, shifted, task, NTRAIN);
	cr_assert_eq(tune_cost_model_predict(prior, Xt, NSYN, NTEST, prior_pred, err,
		sizeof(err)), 0, "%s", err);
	cr_assert_eq(tune_cost_model_predict(m, Xt, NSYN, NTEST, pred, err, sizeof(err)), 0,
		"%s", err);
	double mean = 0;
	for (int i = 0; i < NTEST; i++)
		mean += (pred[i] - prior_pred[i]) / NTEST;
	cr_expect(fabs(mean - 0.5) < 0.05, "the trees over the prior add %.3f, not 0.5", mean);
	void *blob = NULL;
	size_t len = 0;
	cr_expect_eq(tune_cost_model_save(m, &blob, &len, err, sizeof(err)), -1);
	cr_expect(strstr(err, "prior") != NULL, "%s", err);
	cr_assert_eq(tune_cost_model_set_prior(m, NULL, err, sizeof(err)), 0, "%s", err);
	float bare[NTEST];
	cr_assert_eq(tune_cost_model_predict(m, Xt, NSYN, NTEST, bare, err, sizeof(err)), 0);
	double moved = 0;
	for (int i = 0; i < NTEST; i++)
		moved += fabs(bare[i] - pred[i]) / NTEST;
	cr_expect_gt(moved, 0.1, "taking the prior away changes the scores (%.3f)", moved);
	tune_cost_model_free(m);
	tune_cost_model_free(prior);
}

Test(model, a_prior_orders_a_task_few_records_cannot)
{
	enum { NTRAIN = 300, NFEW = 6, NTEST = 120 };
	float X[NTRAIN * NSYN], y[NTRAIN], Xt[NTEST * NSYN], yt[NTEST];
	float alone[NTEST], over[NTEST];
	uint32_t task[NTRAIN], tt[NTEST];
	char err[512] = "";
	synthetic(NTRAIN, 31, X, y, task);
	synthetic(NTEST, 32, Xt, yt, tt);
	tune_cost_model *prior = train_over(TUNE_OBJ_RANK, NULL, X, y, task, NTRAIN);
	float Xf[NFEW * NSYN], yf[NFEW];
	uint32_t tf[NFEW];
	synthetic(NFEW, 33, Xf, yf, tf);
	for (int i = 0; i < NFEW; i++)
		tf[i] = 99;
	tune_cost_model *m = train_over(TUNE_OBJ_RANK, prior, Xf, yf, tf, NFEW);
	tune_cost_model *a = train_over(TUNE_OBJ_RANK, NULL, Xf, yf, tf, NFEW);
	cr_assert_eq(tune_cost_model_predict(m, Xt, NSYN, NTEST, over, err, sizeof(err)), 0);
	cr_assert_eq(tune_cost_model_predict(a, Xt, NSYN, NTEST, alone, err, sizeof(err)), 0);
	double acc_over = tune_pairwise_accuracy(over, yt, tt, NTEST);
	double acc_alone = tune_pairwise_accuracy(alone, yt, tt, NTEST);
	cr_expect_geq(acc_over, 0.8, "over the prior: %.3f", acc_over);
	cr_expect_gt(acc_over, acc_alone + 0.05, "over the prior %.3f, alone %.3f", acc_over,
		acc_alone);
	tune_cost_model_free(a);
	tune_cost_model_free(m);
	tune_cost_model_free(prior);
}

Test(model, bad_priors_are_refused)
{
	char err[512] = "";
	tune_cost_model *m = tune_cost_model_new(NSYN, NULL, err, sizeof(err));
	tune_cost_model *untrained = tune_cost_model_new(NSYN, NULL, err, sizeof(err));
	tune_cost_model *other = tune_cost_model_new(NSYN + 1, NULL, err, sizeof(err));
	cr_assert(m && untrained && other);
	cr_expect_eq(tune_cost_model_set_prior(m, untrained, err, sizeof(err)), -1);
	cr_expect(strstr(err, "not trained") != NULL, "%s", err);
	float X[2 * (NSYN + 1)] = { 0, 1 }, y[2] = { 1, 0.5f };
	uint32_t task[2] = { 0, 0 };
	cr_assert_eq(tune_cost_model_train(other, X, NSYN + 1, y, task, 2, err, sizeof(err)),
		0, "%s", err);
	cr_expect_eq(tune_cost_model_set_prior(m, other, err, sizeof(err)), -1);
	cr_expect(strstr(err, "features") != NULL, "%s", err);
	cr_assert_eq(tune_cost_model_train(m, X, NSYN, y, task, 2, err, sizeof(err)), 0);
	cr_expect_eq(tune_cost_model_set_prior(m, m, err, sizeof(err)), -1);
	cr_expect(strstr(err, "own prior") != NULL, "%s", err);
	tune_cost_model_free(other);
	tune_cost_model_free(untrained);
	tune_cost_model_free(m);
}

Test(model, objectives_have_names)
{
	cr_expect_str_eq(tune_objective_name(TUNE_OBJ_RANK), "rank:pairwise");
	cr_expect_str_eq(tune_objective_name(TUNE_OBJ_REGRESSION), "reg:squarederror");
	cr_expect_null(tune_objective_name(TUNE_OBJ_COUNT));
	cr_expect_eq(tune_objective_parse("rank"), TUNE_OBJ_RANK);
	cr_expect_eq(tune_objective_parse("reg:squarederror"), TUNE_OBJ_REGRESSION);
	cr_expect_eq(tune_objective_parse("lambdamart"), -1);
}

Test(model, pairwise_accuracy_counts_pairs_within_tasks)
{
	float y[] = { 1, 2, 3, 1, 2 };
	uint32_t task[] = { 0, 0, 0, 1, 1 };
	float right[] = { 0.1f, 0.2f, 0.3f, 5, 6 };
	float wrong[] = { 3, 2, 1, 6, 5 };
	float mixed[] = { 0.1f, 0.2f, 0.3f, 6, 5 };
	float ties[] = { 1, 1, 1, 1, 1 };
	cr_expect_float_eq(tune_pairwise_accuracy(right, y, task, 5), 1.0, 1e-12);
	cr_expect_float_eq(tune_pairwise_accuracy(wrong, y, task, 5), 0.0, 1e-12);
	cr_expect_float_eq(tune_pairwise_accuracy(mixed, y, task, 5), 0.75, 1e-12);
	cr_expect_float_eq(tune_pairwise_accuracy(ties, y, task, 5), 0.5, 1e-12);
	float same[] = { 1, 1, 1 };
	uint32_t alone[] = { 0, 1, 2 };
	cr_expect_float_eq(tune_pairwise_accuracy(right, same, task, 3), -1.0, 0);
	cr_expect_float_eq(tune_pairwise_accuracy(right, y, alone, 3), -1.0, 0);
	cr_expect_float_eq(tune_pairwise_accuracy(right, y, task, 1), -1.0, 0);
}

Test(model, pairwise_counts_are_the_numbers_behind_the_accuracy)
{
	float y[] = { 1, 2, 3, 1, 2 };
	uint32_t task[] = { 0, 0, 0, 1, 1 };
	float mixed[] = { 0.1f, 0.2f, 0.3f, 6, 5 };
	float ties[] = { 1, 1, 1, 1, 1 };
	double correct = -1, pairs = -1;
	cr_assert_eq(tune_pairwise_counts(mixed, y, task, 5, 1, &correct, &pairs), 0);
	cr_expect_float_eq(correct, 3.0, 0);
	cr_expect_float_eq(pairs, 4.0, 0);
	cr_assert_eq(tune_pairwise_counts(ties, y, task, 5, 1, &correct, &pairs), 0);
	cr_expect_float_eq(correct, 2.0, 0);
	cr_expect_float_eq(pairs, 4.0, 0);
	/* Beyond a margin of 1.6: task 0's pairs (1, 2) and (1, 3) and task
	 * 1's (1, 2) count, task 0's (2, 3), 1.5 apart, does not. */
	cr_assert_eq(tune_pairwise_counts(mixed, y, task, 5, 1.6, &correct, &pairs), 0);
	cr_expect_float_eq(pairs, 3.0, 0);
	cr_expect_float_eq(correct, 2.0, 0);
	cr_assert_eq(tune_pairwise_counts(mixed, y, task, 1, 1, &correct, &pairs), 0);
	cr_expect_float_eq(pairs, 0.0, 0);
}

Test(model, pairwise_accuracy_leaves_out_pairs_within_the_margin)
{
	float y[] = { 1, 1.02f, 2, 0, 0.5f };
	uint32_t task[] = { 0, 0, 0, 0, 1 };
	float pred[] = { 2, 1, 3, 0, 7 };
	cr_expect_float_eq(tune_pairwise_accuracy(pred, y, task, 5), 5.0 / 6, 1e-12,
		"the pair (1, 1.02) is ordered wrongly");
	cr_expect_float_eq(tune_pairwise_accuracy_margin(pred, y, task, 5, 1.03), 1.0,
		1e-12, "and left out within 3%%; a failed record (0) stays in");
	float flat[] = { 1, 1.02f, 2, 0, 0.5f };
	cr_expect_float_eq(tune_pairwise_accuracy_margin(pred, flat, task, 5, 3), 1.0,
		1e-12, "within a factor 3 only the pairs with a failure are left");
	cr_expect_float_eq(tune_pairwise_accuracy_margin(pred, flat, task, 3, 3), -1.0, 0,
		"and without the failure, none");
}

Test(model, throughput_is_normalized_per_task)
{
	double seconds[] = { 2, 1, 4, -1, 10, INFINITY, 5 };
	uint32_t task[] = { 9, 9, 9, 9, 2, 2, 2 };
	float y[7];
	cr_assert_eq(tune_normalize_throughput(seconds, task, 7, y), 0);
	float want[] = { 0.5f, 1, 0.25f, 0, 0.5f, 0, 1 };
	for (int i = 0; i < 7; i++)
		cr_expect_float_eq(y[i], want[i], 1e-7, "record %d", i);
}
