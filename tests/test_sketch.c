/* Tests of the template-free search space (tuner/sketch.c): every sample
 * and every mutation of every sketch, over ops of the library and a user
 * op, is a trace that replays to the same schedule, lowers, and computes
 * what the interpreter computes; the rules give the structure they
 * promise (multi-level tiling with cache_write, a fused consumer,
 * rfactor, parallel and vector loops). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/compare.h"
#include "ir/loop_eval.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tuner/sketch.h"
#include "tuner/task.h"
#include "tests/support.h"

typedef struct fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	tune_task task;
	tune_space *space;
	int nin, nout;
	tessel_tensor *args[32];
	tessel_tensor *expected[16];
} fixture;

/* The target of the fixtures, unless a test names another. */
#define TARGET "cpu -isa=avx512 -cores=2"

static void fixture_start(fixture *f, const char *target)
{
	char err[512];
	cr_assert_eq(tune_task_init(&f->task, f->ctx, f->op, target, err, sizeof(err)), 0,
		"%s", err);
	f->space = tune_space_new(&f->task);
	cr_assert(f->space);
	f->nin = tessel_op_num_inputs(f->op);
	f->nout = tessel_op_num_outputs(f->op);
	for (int i = 0; i < f->nin; i++) {
		f->args[i] = test_tensor_like(tessel_op_input_at(f->op, i));
		tessel_tensor_fill_random(f->args[i], 7 + (uint64_t)i);
	}
	for (int i = 0; i < f->nout; i++) {
		f->expected[i] = test_tensor_like(tessel_op_output_at(f->op, i));
		f->args[f->nin + i] = test_tensor_like(tessel_op_output_at(f->op, i));
	}
	cr_assert_eq(tessel_interp(f->op, f->args, f->expected), 0);
}

/* The built-in op "name" with the "n" attributes "kv" (name, value), on
 * "target". */
static void fixture_lib_on(fixture *f, const char *name, int n, const char **kv,
	const char *target)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	const char *keys[16], *values[16];
	for (int i = 0; i < n; i++) {
		keys[i] = kv[2 * i];
		values[i] = kv[2 * i + 1];
	}
	f->op = tessel_ops_instantiate(f->ctx, name, n, keys, values);
	cr_assert(f->op, "instantiating %s", name);
	fixture_start(f, target);
}

static void fixture_lib(fixture *f, const char *name, int n, const char **kv)
{
	fixture_lib_on(f, name, n, kv, TARGET);
}

/* conv2d_relu of examples/ops.te: a reduction with an elementwise
 * consumer and a padding stage, written by a user. */
static void fixture_conv_relu(fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse_file(f->ctx, TESSEL_SOURCE_DIR "/examples/ops.te");
	cr_assert(m);
	tessel_op *generic = tessel_module_find(f->ctx, m, "conv2d_relu");
	cr_assert(generic);
	const char *names[] = { "N", "C", "H", "W", "F", "R", "S", "stride", "pad" };
	const int64_t values[] = { 1, 3, 8, 8, 16, 3, 3, 1, 1 };
	f->op = tessel_op_bind(generic, 9, names, values);
	tessel_module_free(m);
	cr_assert(f->op);
	fixture_start(f, TARGET);
}

static void fixture_fini(fixture *f)
{
	for (int i = 0; i < f->nin + f->nout; i++)
		tessel_tensor_free(f->args[i]);
	for (int i = 0; i < f->nout; i++)
		tessel_tensor_free(f->expected[i]);
	tune_space_free(f->space);
	tune_task_clear(&f->task);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

/* Return the largest relative difference between the outputs and the
 * interpreter's (tests/support.h). */
static double output_error(const fixture *f)
{
	return test_outputs_error(f->args + f->nin, f->expected, f->nout);
}

/* Return the error the outputs of "f" may have: 1e-5, or a half type's
 * tolerance (ir/compare.c) where an output is one (a half stage between
 * two computations rounds where the interpreter keeps its value). */
static double tolerance(const fixture *f)
{
	double tol = 1e-5;
	for (int i = 0; i < f->nout; i++) {
		tessel_dtype dt = f->expected[i]->dtype;
		if (dt == TESSEL_F16 || dt == TESSEL_BF16)
			tol = fmax(tol, te_tolerance(dt));
	}
	return tol;
}

/* Check that "st" replays from its text, lowers and computes the right
 * outputs; return its trace text (malloc'ed). */
static char *check_state(fixture *f, sch_state *st, const char *what)
{
	char *text = sch_trace_to_text(st->trace);
	cr_assert(text);
	sch_trace *t = sch_trace_parse(f->ctx, "sample", text);
	cr_assert(t, "%s: the trace does not parse: %s\n%s", what,
		tessel_ctx_error(f->ctx)->message, text);
	sch_state *again = sch_state_new(f->ctx, f->op);
	cr_assert_eq(sch_replay(again, t, "sample"), 0, "%s: the trace does not replay: %s\n%s",
		what, tessel_ctx_error(f->ctx)->message, text);
	char *text2 = sch_trace_to_text(again->trace);
	cr_assert_str_eq(text, text2, "%s: replay changed the trace", what);
	loop_prog *p = sch_program(again);
	cr_assert(p, "%s: the sample does not lower: %s\n%s", what,
		tessel_ctx_error(f->ctx)->message, text);
	for (int i = 0; i < f->nout; i++) {
		tessel_tensor *o = f->args[f->nin + i];
		memset(o->data, 0xff, (size_t)tessel_tensor_numel(o) * tessel_dtype_size(o->dtype));
	}
	cr_assert_eq(loop_eval(f->ctx, p, f->args), 0, "%s: evaluation failed: %s\n%s", what,
		tessel_ctx_error(f->ctx)->message, text);
	double err = output_error(f);
	cr_assert(err < tolerance(f), "%s: error %g for the trace\n%s", what, err, text);
	loop_prog_free(p);
	sch_state_free(again);
	sch_trace_free(t);
	free(text2);
	return text;
}

/* Sample "n" candidates of every sketch and mutate each once; check all.
 * Return how many samples held "needle" in their trace (NULL: 0). */
static int sample_all(fixture *f, int n, uint64_t seed, const char *needle)
{
	uint64_t rng = seed;
	int found = 0;
	for (int k = 0; k < tune_space_num_sketches(f->space); k++) {
		for (int i = 0; i < n; i++) {
			char what[512], mutated[540];
			snprintf(what, sizeof(what), "sketch %d (%s), sample %d", k,
				tune_space_sketch_name(f->space, k), i);
			snprintf(mutated, sizeof(mutated), "%s, mutated", what);
			sch_state *st = tune_space_sample(f->space, k, &rng);
			cr_assert(st, "%s: no sample: %s", what, tessel_ctx_error(f->ctx)->message);
			char *text = check_state(f, st, what);
			found += needle && strstr(text, needle) != NULL;
			sch_state *child = tune_space_mutate(f->space, st->trace, &rng);
			if (child) {
				free(check_state(f, child, mutated));
				sch_state_free(child);
			}
			free(text);
			sch_state_free(st);
		}
	}
	return found;
}

Test(sketch, matmul_tiles_with_cache_write)
{
	const char *kv[] = { "M", "48", "N", "64", "K", "24" };
	fixture f;
	fixture_lib(&f, "matmul", 3, kv);
	cr_assert_geq(tune_space_num_sketches(f.space), 3);
	cr_expect(strstr(tune_space_sketch_name(f.space, 0), "SSRSRS, cache_write"),
		"%s", tune_space_sketch_name(f.space, 0));
	uint64_t rng = 3;
	int parallel = 0, vector = 0;
	for (int i = 0; i < 20; i++) {
		sch_state *st = tune_space_sample(f.space, 0, &rng);
		cr_assert(st);
		char *text = sch_trace_to_text(st->trace);
		cr_expect(strstr(text, "cache_write C local"), "%s", text);
		cr_expect(strstr(text, "compute_at C_local C."), "%s", text);
		parallel += strstr(text, "parallel C.") != NULL;
		vector += strstr(text, "vectorize C_local.") != NULL;
		free(text);
		sch_state_free(st);
	}
	cr_expect_geq(parallel, 15, "parallel in %d of 20 samples", parallel);
	cr_expect_geq(vector, 15, "a vector loop in %d of 20 samples", vector);
	sample_all(&f, 12, 11, NULL);
	fixture_fini(&f);
}

/* Return the index of the sketch whose name holds "needle", or -1. */
static int sketch_named(const fixture *f, const char *needle)
{
	for (int k = 0; k < tune_space_num_sketches(f->space); k++)
		if (strstr(tune_space_sketch_name(f->space, k), needle))
			return k;
	return -1;
}

Test(sketch, an_input_read_across_rows_is_packed)
{
	const char *nn[] = { "M", "48", "N", "64", "K", "24" };
	fixture f;
	fixture_lib(&f, "matmul", 3, nn);
	cr_expect_eq(sketch_named(&f, "packed"), -1, "B[k, j] is read along its rows");
	fixture_fini(&f);

	const char *dense[] = { "batch", "24", "in_features", "40", "out_features", "48" };
	fixture_lib(&f, "dense", 3, dense);
	int k = sketch_named(&f, "W packed");
	cr_assert_geq(k, 0, "dense reads W[j, k] across its rows for lanes along j");
	uint64_t rng = 5;
	for (int i = 0; i < 10; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		char *text = sch_trace_to_text(st->trace);
		cr_expect(strstr(text, "cache_read W global Z -> W_global\n"
			"reorder_storage W_global.ax1 W_global.ax0\n"), "%s", text);
		free(text);
		sch_state_free(st);
	}
	int panel = sample_all(&f, 12, 9, "compute_at W_global ");
	cr_expect_gt(panel, 0, "no sample packed a panel per parallel iteration");
	int around = 0;
	for (int i = 0; i < 40; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		int w = sch_find_stage(st, "W_global"), z = sch_find_stage(st, "Z");
		const sch_stage *ws = &st->stages[w], *zs = &st->stages[z];
		if (ws->attach == SCH_AT && zs->attach == SCH_AT &&
		    zs->attach_stage == ws->attach_stage) {
			const sch_stage *y = &st->stages[ws->attach_stage];
			cr_expect_eq(sch_leaf_pos(y, ws->attach_iter), 0);
			cr_expect_eq(y->iters[ws->attach_iter].kind, LOOP_PARALLEL);
			around += sch_leaf_pos(y, zs->attach_iter) > 0;
		}
		sch_state_free(st);
	}
	cr_expect_gt(around, 0, "no sample packed a panel at the parallel loop for "
		"accumulators computed deeper");
	fixture_fini(&f);

	const char *bmm[] = { "B", "2", "M", "8", "N", "32", "K", "16", "transpose_b", "1" };
	fixture_lib(&f, "batch_matmul", 5, bmm);
	cr_assert_geq(sketch_named(&f, "Y packed"), 0);
	cr_expect_gt(sample_all(&f, 8, 4, "reorder_storage Y_global.ax0 Y_global.ax2 "
		"Y_global.ax1"), 0);
	fixture_fini(&f);
}

/* The panel sketch copies the rows of B that the tiles of every i share
 * next to them: B_local is computed at a loop of C_local's columns or of
 * its outer reduction, outside every loop of its rows. */
Test(sketch, tiles_share_a_packed_panel)
{
	const char *nn[] = { "M", "48", "N", "64", "K", "24" };
	fixture f;
	fixture_lib(&f, "matmul", 3, nn);
	int k = sketch_named(&f, "B panel");
	cr_assert_geq(k, 0, "B[k, j] moves with the lanes j and the reduction k, not with i");
	uint64_t rng = 7;
	for (int i = 0; i < 20; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		char *text = sch_trace_to_text(st->trace);
		cr_expect(strstr(text, "cache_read B local C_local -> B_local\n"
			"compute_at B_local C_local."), "%s", text);
		int b = sch_find_stage(st, "B_local"), c = sch_find_stage(st, "C_local");
		cr_assert(b >= 0 && c >= 0);
		const sch_stage *bs = &st->stages[b], *cs = &st->stages[c];
		cr_expect_eq(bs->attach_stage, c, "%s", text);
		for (int l = sch_leaf_pos(cs, bs->attach_iter); l >= 0; l--) {
			const sch_iter *it = &cs->iters[cs->leaves[l]];
			cr_expect(it->reduce || strncmp(it->name, "j", 1) == 0,
				"B_local inside the row loop %s:\n%s", it->name, text);
		}
		free(text);
		sch_state_free(st);
	}
	cr_expect_gt(sample_all(&f, 12, 13, "cache_read B local"), 0);
	fixture_fini(&f);

	const char *nhwc[] = { "N", "1", "C", "8", "H", "6", "W", "6", "F", "32", "R", "3",
		"S", "3", "layout", "NHWC", "padding", "1" };
	fixture_lib(&f, "conv2d", 9, nhwc);
	cr_expect_geq(sketch_named(&f, "Wt panel"), 0, "the filter Wt[r, s, c, f] moves with "
		"the lanes f, not with the pixels");
	cr_expect_gt(sample_all(&f, 6, 5, "cache_read Wt local"), 0);
	fixture_fini(&f);

	const char *dense[] = { "batch", "24", "in_features", "40", "out_features", "48" };
	fixture_lib(&f, "dense", 3, dense);
	cr_expect_eq(sketch_named(&f, "panel"), -1, "W[j, k] is read across its rows");
	fixture_fini(&f);
}

/* Mutation keeps a register tile (a split whose inner loop the trace
 * unrolls) at most 8 long: a tile of the whole loop, unrolled, costs gcc
 * minutes. */
Test(sketch, mutation_keeps_register_tiles_small)
{
	const char *nn[] = { "M", "256", "N", "64", "K", "32" };
	fixture f;
	fixture_lib(&f, "matmul", 3, nn);
	uint64_t rng = 17;
	int checked = 0;
	for (int i = 0; i < 60; i++) {
		sch_state *st = tune_space_sample(f.space, i % tune_space_num_sketches(f.space), &rng);
		cr_assert(st);
		for (int m = 0; m < 6; m++) {
			sch_state *child = tune_space_mutate(f.space, st->trace, &rng);
			if (!child)
				continue;
			sch_state_free(st);
			st = child;
			const sch_trace *t = st->trace;
			for (int a = 0; a < t->nsteps; a++) {
				if (strcmp(t->steps[a].prim, "split") != 0)
					continue;
				for (int b = a + 1; b < t->nsteps; b++)
					if (strcmp(t->steps[b].prim, "unroll") == 0 &&
					    strcmp(t->steps[b].args[0], t->steps[a].outs[1]) == 0) {
						cr_expect_leq(atoll(t->steps[a].args[1]), 8, "%s %s %s",
							t->steps[a].prim, t->steps[a].args[0],
							t->steps[a].args[1]);
						checked++;
					}
			}
		}
		sch_state_free(st);
	}
	cr_expect_gt(checked, 50);
	fixture_fini(&f);
}

/* Mutation moves a stage between the root and a loop: the packed copy of
 * W leaves the parallel loop for the root and comes back, and every such
 * child computes the op. */
Test(sketch, mutation_moves_the_copy_between_root_and_loop)
{
	const char *dense[] = { "batch", "24", "in_features", "40", "out_features", "48" };
	fixture f;
	fixture_lib(&f, "dense", 3, dense);
	int k = sketch_named(&f, "W packed");
	cr_assert_geq(k, 0);
	uint64_t rng = 11;
	int to_loop = 0, to_root = 0;
	for (int i = 0; i < 24; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		int w = sch_find_stage(st, "W_global");
		bool at = st->stages[w].attach == SCH_AT;
		for (int m = 0; m < 40; m++) {
			sch_state *child = tune_space_mutate(f.space, st->trace, &rng);
			if (!child)
				continue;
			int cw = sch_find_stage(child, "W_global");
			if ((child->stages[cw].attach == SCH_AT) != at) {
				*(at ? &to_root : &to_loop) += 1;
				free(check_state(&f, child, "a copy moved by mutation"));
			}
			sch_state_free(child);
		}
		sch_state_free(st);
	}
	cr_expect_gt(to_loop, 0, "no mutation computed the copy at a loop");
	cr_expect_gt(to_root, 0, "no mutation moved the copy to the root");
	fixture_fini(&f);
}

Test(sketch, conv_relu_fuses_the_consumer)
{
	fixture f;
	fixture_conv_relu(&f);
	int fused = sample_all(&f, 10, 5, "compute_at Z Y.");
	cr_expect_gt(fused, 0, "no sample computed Z inside the tiles of Y");
	fixture_fini(&f);
}

/* Sample "n" candidates of sketch "k" from "seed" and check each; return
 * how many hold every one of the NULL-terminated "needles" in their
 * trace. */
static int samples_holding(fixture *f, int k, int n, uint64_t seed, const char *const *needles)
{
	int found = 0;
	for (int i = 0; i < n; i++) {
		sch_state *st = tune_space_sample(f->space, k, &seed);
		cr_assert(st, "sketch %d, sample %d", k, i);
		char *text = check_state(f, st, tune_space_sketch_name(f->space, k));
		bool all = true;
		for (int j = 0; needles[j]; j++)
			all = all && strstr(text, needles[j]);
		found += all;
		free(text);
		sch_state_free(st);
	}
	return found;
}

/* Y[j, i] = X[i, j]: vectors along i read X a cache line per lane, so
 * the "blocked" sketch splits i and j and takes both outer parts out
 * of the block; a stage that reads every input along its rows gets no
 * such sketch. */
Test(sketch, a_transposition_is_blocked)
{
	const char *kv[] = { "shape", "[128, 96]", "perm", "[1, 0]" };
	fixture f;
	fixture_lib(&f, "transpose", 2, kv);
	int k = sketch_named(&f, "Y: blocked");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	const char *blocks[] = { "split Y.j ", "split Y.i ", "reorder ", "vectorize Y.ii", NULL };
	int blocked = samples_holding(&f, k, 20, 3, blocks);
	cr_expect_eq(blocked, 20, "%d of 20 samples blocked both axes", blocked);
	sample_all(&f, 6, 11, NULL);
	fixture_fini(&f);

	const char *kv2[] = { "a", "[2, 1, 48]", "b", "[4, 48]" };
	fixture_lib(&f, "add", 2, kv2);
	cr_expect_eq(sketch_named(&f, "blocked"), -1, "add reads along the rows");
	fixture_fini(&f);
}

/* A user op whose output reads a transposition through an inlined
 * stage: the output stage's vector lanes read X across its rows, so it
 * gets the blocked sketch too. */
Test(sketch, a_transposition_inlined_into_its_reader_is_blocked)
{
	static const char src[] =
		"op scaled_transpose(X: f32[R, C]) -> Y {\n"
		"  T[j, i] = X[i, j] * 2.0\n"
		"  Y[j, i] = max(T[j, i], 0.0)\n"
		"}\n";
	fixture f;
	memset(&f, 0, sizeof(f));
	f.ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse(f.ctx, "t.te", src, strlen(src));
	cr_assert(m, "%s", tessel_ctx_error(f.ctx)->message);
	const char *names[] = { "R", "C" };
	const int64_t values[] = { 64, 96 };
	f.op = tessel_op_bind(tessel_module_find(f.ctx, m, NULL), 2, names, values);
	tessel_module_free(m);
	cr_assert(f.op);
	fixture_start(&f, TARGET);
	int k = sketch_named(&f, "Y: blocked");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	int blocked = sample_all(&f, 8, 13, "reorder Y.");
	cr_expect_gt(blocked, 0);
	fixture_fini(&f);
}

/* An NCHW conv over 7x7 pixels fills half a vector of 16 lanes along
 * its rows: the "lanes along f" sketch stores the accumulator with the
 * output channels last, vectorizes them, and packs the weights read
 * across their rows by those lanes; matmul, whose rows fill vectors,
 * gets no such sketch.  With a fused consumer (conv2d_relu), the
 * accumulating stage itself is stored with its channels last. */
Test(sketch, lanes_along_another_axis_where_rows_are_short)
{
	const char *kv[] = { "N", "1", "C", "8", "H", "7", "W", "7", "F", "32",
		"R", "3", "S", "3", "padding", "1" };
	fixture f;
	fixture_lib(&f, "conv2d", 8, kv);
	int k = sketch_named(&f, "lanes along f, Wt packed");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	const char *lanes[] = { "reorder_storage Wt_global.ax1 Wt_global.ax2 Wt_global.ax3 "
		"Wt_global.ax0\n", "reorder_storage Y_local.n Y_local.y Y_local.x Y_local.f\n",
		"vectorize Y_local.fi\n", NULL };
	int moved = samples_holding(&f, k, 20, 3, lanes);
	cr_expect_eq(moved, 20, "%d of 20 samples ran the lanes along f", moved);
	sample_all(&f, 6, 17, NULL);
	fixture_fini(&f);

	const char *mm[] = { "M", "48", "N", "64", "K", "24" };
	fixture_lib(&f, "matmul", 3, mm);
	cr_expect_eq(sketch_named(&f, "lanes along"), -1, "64 columns fill vectors");
	fixture_fini(&f);

	fixture_conv_relu(&f);
	k = sketch_named(&f, "lanes along f");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	const char *fused[] = { "reorder_storage Z.n Z.y Z.x Z.f\n", "compute_at Z Y.", NULL };
	cr_expect_gt(samples_holding(&f, k, 20, 4, fused), 0, "no sample fused Y and "
		"stored Z with its channels last");
	fixture_fini(&f);
}

/* The x86-64-v3 and -v4 features (v4 with AVX512 BF16 or without). */
#define V3_FEATURES "sse2,sse3,ssse3,sse4.1,sse4.2,popcnt,avx,f16c,fma,bmi1,bmi2,avx2"
#define V4_FEATURES V3_FEATURES ",avx512f,avx512cd,avx512bw,avx512dq,avx512vl"

/* The op of the .te text "src" bound to M=48, N=64, K=24, on "target". */
static void fixture_te_on(fixture *f, const char *src, const char *target)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse(f->ctx, "t.te", src, strlen(src));
	cr_assert(m, "%s", tessel_ctx_error(f->ctx)->message);
	f->op = tessel_op_bind(tessel_module_find(f->ctx, m, NULL), 3,
		(const char *[]){ "M", "N", "K" }, (const int64_t[]){ 48, 64, 24 });
	tessel_module_free(m);
	cr_assert(f->op, "%s", tessel_ctx_error(f->ctx)->message);
	fixture_start(f, target);
}

/* C = A * B in bf16 on a target with AVX512 BF16: the "bf16 pairs"
 * sketch splits the innermost reduction loop of the tile by 2 and
 * annotates the pair dot_pairs just outside the vectorized loop; every
 * sample and mutation computes the op.  Without the feature, or in f32,
 * there is no such sketch.  A sum of i8 products into i32 on a target
 * with AVX512 VNNI gets "i8 quads" (dot_quads, the reduction split by
 * 4), and so does one of u8 data and i8 weights, with B packed in
 * quads ([k / 4, j, k % 4]) in a sketch of its own, the only one where
 * each element of B is read by many rows.  On an AVX2 target (vectors
 * of 32 bytes) the i8 sum gets "i8 pairs" (dot_pairs, split by 2)
 * instead; on AVX512 without VNNI, neither. */
Test(sketch, products_summed_in_groups)
{
	const char *mm[] = { "M", "48", "N", "64", "K", "24", "dtype", "bf16" };
	fixture f;
	fixture_lib_on(&f, "matmul", 4, mm, "cpu -features=" V4_FEATURES ",avx512_bf16 "
		"-cores=2");
	int k = sketch_named(&f, "bf16 pairs");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	const char *pairs[] = { "cache_write C local -> C_local\n", " dot_pairs 1\n", NULL };
	int paired = samples_holding(&f, k, 20, 8, pairs);
	cr_expect_geq(paired, 15, "%d of 20 samples summed pairs", paired);
	cr_expect_gt(sample_all(&f, 6, 21, "dot_pairs"), 0);
	fixture_fini(&f);

	const char *conv[] = { "N", "1", "C", "8", "H", "7", "W", "7", "F", "32",
		"R", "3", "S", "3", "padding", "1", "dtype", "bf16" };
	fixture_lib_on(&f, "conv2d", 9, conv, "cpu -features=" V4_FEATURES ",avx512_bf16 "
		"-cores=2");
	k = sketch_named(&f, "lanes along f, Wt packed, bf16 pairs");
	cr_assert_geq(k, 0, "NCHW rows of 7: lanes along the channels, in pairs");
	const char *along[] = { "vectorize Y_local.fi\n", " dot_pairs 1\n", NULL };
	cr_expect_gt(samples_holding(&f, k, 10, 4, along), 0);
	fixture_fini(&f);

	const char *dense[] = { "batch", "24", "in_features", "40", "out_features", "48",
		"dtype", "bf16" };
	fixture_lib_on(&f, "dense", 4, dense, "cpu -features=" V4_FEATURES ",avx512_bf16 "
		"-cores=2");
	k = sketch_named(&f, "W packed, bf16 pairs");
	cr_assert_geq(k, 0, "W[j, k] read across its rows: packed, then in pairs");
	const char *packed[] = { "reorder_storage W_global.ax1 W_global.ax0\n",
		" dot_pairs 1\n", NULL };
	cr_expect_gt(samples_holding(&f, k, 10, 5, packed), 0);
	fixture_fini(&f);

	fixture_lib_on(&f, "matmul", 4, mm, "cpu -features=" V4_FEATURES " -cores=2");
	cr_expect_eq(sketch_named(&f, "bf16 pairs"), -1, "no AVX512 BF16");
	fixture_fini(&f);
	fixture_lib_on(&f, "matmul", 3, mm, "cpu -features=" V4_FEATURES ",avx512_bf16 "
		"-cores=2");
	cr_expect_eq(sketch_named(&f, "bf16 pairs"), -1, "f32 data");
	fixture_fini(&f);

	static const char quads[] = "op q(A: i8[M, K], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n";
	fixture_te_on(&f, quads, "cpu -features=" V4_FEATURES ",avx512_vnni -cores=2");
	k = sketch_named(&f, "i8 quads");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	const char *grouped[] = { " dot_quads 1\n", NULL };
	int in_quads = samples_holding(&f, k, 20, 8, grouped);
	cr_expect_geq(in_quads, 15, "%d of 20 samples summed quads", in_quads);
	cr_expect_gt(sample_all(&f, 4, 23, "dot_quads"), 0);
	fixture_fini(&f);

	fixture_te_on(&f, quads, "cpu -features=" V3_FEATURES " -cores=2");
	cr_expect_eq(sketch_named(&f, "i8 quads"), -1, "no AVX512 VNNI");
	k = sketch_named(&f, "i8 pairs");
	cr_assert_geq(k, 0, "%s", tune_space_sketch_name(f.space, 0));
	int in_pairs = samples_holding(&f, k, 20, 8, pairs + 1);
	cr_expect_geq(in_pairs, 15, "%d of 20 samples summed pairs of i8", in_pairs);
	cr_expect_gt(sample_all(&f, 4, 29, "dot_pairs"), 0);
	fixture_fini(&f);
	fixture_te_on(&f, quads, "cpu -features=" V4_FEATURES " -cores=2");
	cr_expect_eq(sketch_named(&f, "i8 pairs"), -1, "vectors of 64 bytes");
	cr_expect_eq(sketch_named(&f, "i8 quads"), -1, "no AVX512 VNNI");
	fixture_fini(&f);

	const char *qmm[] = { "M", "30", "N", "48", "K", "32", "dtype", "u8",
		"weight_dtype", "i8", "out_dtype", "i32" };
	fixture_lib_on(&f, "matmul", 6, qmm, "cpu -features=" V4_FEATURES
		",avx512_vnni -cores=2");
	k = sketch_named(&f, "i8 quads");
	cr_assert_geq(k, 0, "u8 data and i8 weights sum in quads too");
	cr_expect_gt(samples_holding(&f, k, 10, 9, grouped), 0);
	k = sketch_named(&f, "i8 quads of B packed in groups");
	cr_assert_geq(k, 0, "B[k, j] packed [k / 4, j, k %% 4]");
	const char *in_groups[] = { "cache_read B global C -> B_global\n",
		"split_storage B_global.ax0 4\n",
		"reorder_storage B_global.ax0o B_global.ax1 B_global.ax0i\n",
		" dot_quads 1\n", NULL };
	int packed_quads = samples_holding(&f, k, 20, 9, in_groups);
	cr_expect_geq(packed_quads, 15, "%d of 20 samples packed B in groups", packed_quads);
	cr_expect_gt(sample_all(&f, 4, 25, "split_storage"), 0);
	fixture_fini(&f);

	const char *many_rows[] = { "M", "96", "N", "48", "K", "32", "dtype", "u8",
		"weight_dtype", "i8", "out_dtype", "i32" };
	fixture_lib_on(&f, "matmul", 6, many_rows, "cpu -features=" V4_FEATURES
		",avx512_vnni -cores=2");
	k = sketch_named(&f, "i8 quads");
	cr_expect(k >= 0 && strstr(tune_space_sketch_name(f.space, k), "packed in groups"),
		"each element of B read by 96 rows: packed in groups only, not "
		"interleaved in the tiles (%s)", k >= 0 ? tune_space_sketch_name(f.space, k) : "");
	fixture_fini(&f);

	const char *qconv[] = { "N", "1", "C", "8", "H", "7", "W", "7", "F", "32",
		"R", "3", "S", "3", "padding", "1", "dtype", "u8", "weight_dtype", "i8",
		"out_dtype", "i32" };
	fixture_lib_on(&f, "conv2d", 11, qconv, "cpu -features=" V4_FEATURES
		",avx512_vnni -cores=2");
	k = sketch_named(&f, "lanes along f, i8 quads of Wt packed in groups");
	cr_assert_geq(k, 0, "NCHW rows of 7: lanes along the channels, Wt[f, c, r, s] "
		"stored [c / 4, r, s, f, c %% 4]");
	const char *conv_groups[] = { "split_storage Wt_global.ax1 4\n",
		"reorder_storage Wt_global.ax1o Wt_global.ax2 Wt_global.ax3 "
		"Wt_global.ax0 Wt_global.ax1i\n", " dot_quads 1\n", NULL };
	int conv_packed = samples_holding(&f, k, 10, 6, conv_groups);
	cr_expect_geq(conv_packed, 8, "%d of 10 samples sum the channels in quads "
		"(their inner factor drawn in multiples of 4)", conv_packed);
	cr_expect_gt(sample_all(&f, 3, 27, "split_storage"), 0);
	fixture_fini(&f);
}

/* Y[j] = sum(i) X[i, j]: the rfactor sketch makes parallel partials of
 * bands of rows, each summing its rows contiguously into a vectorized
 * row of accumulators; a sum along the rows keeps its vector lanes. */
Test(sketch, a_sum_across_rows_takes_parallel_partials)
{
	const char *kv[] = { "shape", "[64, 48]", "axes", "[0]" };
	fixture f;
	fixture_lib(&f, "reduce_sum", 2, kv);
	int k = sketch_named(&f, "rfactor");
	cr_assert_geq(k, 0);
	const char *bands[] = { "rfactor Y.io", "parallel Y_rf.io",
		"reorder Y_rf.io Y_rf.ii Y_rf.j", "vectorize Y_rf.j", NULL };
	int partials = samples_holding(&f, k, 20, 5, bands);
	cr_expect_eq(partials, 20, "%d of 20 samples summed bands of rows in parallel", partials);
	fixture_fini(&f);

	const char *kv2[] = { "shape", "[48, 256]", "axes", "[1]" };
	fixture_lib(&f, "reduce_sum", 2, kv2);
	k = sketch_named(&f, "rfactor");
	cr_assert_geq(k, 0);
	const char *lanes[] = { "rfactor Y.ji", NULL };
	cr_expect_eq(samples_holding(&f, k, 20, 6, lanes), 20, "a sum along rows made partials");
	fixture_fini(&f);
}

Test(sketch, softmax_rfactor_and_locations)
{
	const char *kv[] = { "shape", "[8, 64]" };
	fixture f;
	fixture_lib(&f, "softmax", 1, kv);
	bool has_rfactor = false;
	for (int k = 0; k < tune_space_num_sketches(f.space); k++)
		has_rfactor |= strstr(tune_space_sketch_name(f.space, k), "rfactor") != NULL;
	cr_expect(has_rfactor, "no rfactor sketch for a row reduction");
	int rf = sample_all(&f, 12, 9, "rfactor");
	cr_expect_gt(rf, 0);
	fixture_fini(&f);
}

Test(sketch, reductions_to_a_scalar)
{
	const char *kv[] = { "shape", "[16, 40]" };
	fixture f;
	fixture_lib(&f, "reduce_sum", 1, kv);
	sample_all(&f, 10, 4, NULL);
	fixture_fini(&f);
}

#define LIB_CASE(test, opname, n, ...)                                        \
	Test(sketch_ops, test)                                                \
	{                                                                     \
		const char *kv[] = { __VA_ARGS__ };                           \
		fixture f;                                                    \
		fixture_lib(&f, opname, (int)(sizeof(kv) / sizeof(kv[0])) / 2, kv); \
		sample_all(&f, n, 1, NULL);                                   \
		fixture_fini(&f);                                             \
	}

LIB_CASE(matmul_odd, "matmul", 6, "M", "9", "N", "35", "K", "7")
LIB_CASE(matmul_transposed, "matmul", 4, "M", "16", "N", "32", "K", "8",
	"transpose_a", "1", "transpose_b", "1")
LIB_CASE(matvec, "matmul", 4, "M", "1", "N", "64", "K", "96")
LIB_CASE(batch_matmul, "batch_matmul", 4, "B", "2", "M", "8", "N", "16", "K", "4")
LIB_CASE(dense, "dense", 4, "batch", "4", "in_features", "12", "out_features", "32")
LIB_CASE(conv2d, "conv2d", 4, "N", "1", "C", "4", "H", "8", "W", "8", "F", "16",
	"R", "3", "S", "3", "padding", "1")
LIB_CASE(conv2d_strided, "conv2d", 3, "N", "1", "C", "2", "H", "9", "W", "8",
	"F", "3", "R", "3", "S", "2", "stride", "2", "dilation", "[1, 2]")
LIB_CASE(conv2d_nhwc, "conv2d", 3, "N", "1", "C", "3", "H", "6", "W", "5",
	"F", "16", "R", "3", "S", "3", "layout", "NHWC", "padding", "1")
LIB_CASE(max_pool2d, "max_pool2d", 4, "N", "1", "C", "2", "H", "9", "W", "9",
	"kernel", "3", "stride", "2", "padding", "1")
LIB_CASE(global_avg_pool, "global_avg_pool", 4, "N", "2", "C", "3", "H", "4", "W", "5")
LIB_CASE(layer_norm, "layer_norm", 6, "shape", "[4, 48]")
LIB_CASE(batch_norm, "batch_norm", 3, "shape", "[2, 3, 4, 4]")
LIB_CASE(log_softmax, "log_softmax", 4, "shape", "[3, 2, 32]")
LIB_CASE(add_broadcast, "add", 4, "a", "[2, 1, 48]", "b", "[4, 48]")
LIB_CASE(gelu, "gelu", 4, "shape", "[6, 40]")
LIB_CASE(reduce_axis0, "reduce_sum", 4, "shape", "[30, 4, 32]", "axes", "[0, 2]")
LIB_CASE(transpose, "transpose", 4, "shape", "[2, 3, 32]", "perm", "[2, 0, 1]")
LIB_CASE(pad, "pad", 4, "shape", "[3, 20]", "pads", "[1, 0, 2, 1]")
LIB_CASE(concat, "concat", 3, "shape", "[5, 17]", "sizes", "[2, 3]", "axis", "0")
LIB_CASE(cross_entropy, "softmax_cross_entropy", 4, "N", "4", "C", "33")

/* Return how many split steps of "t" on a replay from "op" have a factor
 * that does not divide their loop (a partial last tile). */
static int partial_splits(fixture *f, const sch_trace *t)
{
	sch_state *st = sch_state_new(f->ctx, f->op);
	int n = 0;
	for (int i = 0; i < t->nsteps; i++) {
		const sch_step *s = &t->steps[i];
		int si, it;
		if (strcmp(s->prim, "split") == 0 && strncmp(s->args[1], "nparts=", 7) != 0 &&
		    sch_find_loop(st, s->args[0], &si, &it) == 0) {
			int64_t ext = st->stages[si].iters[it].extent;
			int64_t fac = strtoll(s->args[1], NULL, 10);
			n += fac < ext && ext % fac != 0;
		}
		cr_assert_eq(sch_apply_step(st, s), 0);
	}
	sch_state_free(st);
	return n;
}

/* Sample matmul "m" x "n" x "k" on "target" 30 times; return how many
 * samples have partial tiles, checking that those and three mutations
 * of each replay and compute the right values, and in "*mutated" how
 * many of the mutations keep a partial tile. */
static int samples_with_partial_tiles(const char *m, const char *n, const char *k,
	const char *target, int *mutated)
{
	const char *kv[] = { "M", m, "N", n, "K", k };
	fixture f;
	fixture_lib_on(&f, "matmul", 3, kv, target);
	uint64_t rng = 17;
	int partial = 0;
	*mutated = 0;
	for (int i = 0; i < 30; i++) {
		sch_state *st = tune_space_sample(f.space, 0, &rng);
		cr_assert(st);
		int count = partial_splits(&f, st->trace);
		partial += count > 0;
		if (count > 0) {
			free(check_state(&f, st, "a sample with partial tiles"));
			for (int c = 0; c < 3; c++) {
				sch_state *child = tune_space_mutate(f.space, st->trace, &rng);
				if (!child)
					continue;
				*mutated += partial_splits(&f, child->trace) > 0;
				free(check_state(&f, child, "a mutation of a sample with partial tiles"));
				sch_state_free(child);
			}
		}
		sch_state_free(st);
	}
	fixture_fini(&f);
	return partial;
}

/* 40 has no divisor that is a multiple of 16 lanes: tiles of the
 * contiguous axis are sometimes whole vectors with a partial last tile;
 * those samples and their mutations replay and compute the right
 * values, and mutations keep some tiles partial. */
Test(sketch, partial_tiles_where_no_factor_fills_vectors)
{
	int mutated, partial = samples_with_partial_tiles("24", "40", "12", TARGET, &mutated);
	cr_expect_geq(partial, 5, "partial tiles in %d of 30 samples", partial);
	cr_expect_gt(mutated, 0, "no mutation kept a partial tile");
}

/* On 8 lanes only 8 of the widths 8, 16, 24 and 32 divides 40: partial
 * tiles there too (matmul 1000^3 on AVX2 had only 1x40 and 2x8 register
 * tiles); 32 has three, and every tile of it divides it. */
Test(sketch, partial_tiles_where_few_factors_fill_vectors)
{
	const char *avx2 = "cpu -isa=avx2 -cores=2";
	int mutated, partial = samples_with_partial_tiles("24", "40", "12", avx2, &mutated);
	cr_expect_geq(partial, 5, "partial tiles in %d of 30 samples", partial);
	partial = samples_with_partial_tiles("24", "32", "12", avx2, &mutated);
	cr_expect_eq(partial, 0, "partial tiles in %d of 30 samples of a regular shape",
		partial);
}

/* Return how many splits of "t" whose inner loop the trace vectorizes
 * have a factor that is not a multiple of "lanes". */
static int vector_splits_off_width(const sch_trace *t, int64_t lanes)
{
	int n = 0;
	for (int i = 0; i < t->nsteps; i++) {
		const sch_step *s = &t->steps[i];
		if (strcmp(s->prim, "split") != 0 || s->nouts != 2 ||
		    strncmp(s->args[1], "nparts=", 7) == 0)
			continue;
		for (int j = i + 1; j < t->nsteps; j++)
			if (strcmp(t->steps[j].prim, "vectorize") == 0 &&
			    strcmp(t->steps[j].args[0], s->outs[1]) == 0)
				n += strtoll(s->args[1], NULL, 10) % lanes != 0;
	}
	return n;
}

/* Count the samples of every sketch of "f" ("per" each) whose trace
 * has "text", and in "flipped" the mutations of them that drop it. */
static int samples_with(fixture *f, int per, const char *text, int *flipped, uint64_t rng)
{
	int n = 0;
	for (int k = 0; k < tune_space_num_sketches(f->space); k++)
		for (int i = 0; i < per; i++) {
			sch_state *st = tune_space_sample(f->space, k, &rng);
			cr_assert(st);
			char *t = sch_trace_to_text(st->trace);
			bool has = strstr(t, text) != NULL;
			n += has;
			free(t);
			for (int m = 0; has && flipped && m < 40; m++) {
				sch_state *child = tune_space_mutate(f->space, st->trace, &rng);
				if (!child)
					continue;
				t = sch_trace_to_text(child->trace);
				*flipped += strstr(t, text) == NULL;
				free(t);
				sch_state_free(child);
			}
			sch_state_free(st);
		}
	return n;
}

/* The in-place panel sketch is GotoBLAS's order: C itself accumulates
 * across blocks of the reduction, and B_local, a block of the rows k of
 * B, is computed at the loop of those blocks, outside every loop of the
 * rows i but the parallel one; its rows reach beyond the in-place
 * sketch's 16.  C (1 MiB, beyond the two 256 KiB L2 caches) is not
 * stored streaming where it is read back after each block. */
Test(sketch, in_place_tiles_accumulate_across_panel_blocks)
{
	const char *nn[] = { "M", "512", "N", "512", "K", "96" };
	fixture f;
	fixture_lib_on(&f, "matmul", 3, nn, "cpu -isa=avx512 -cores=2 -l2=256K");
	int k = sketch_named(&f, "in place, B panel");
	cr_assert_geq(k, 0, "no in-place panel sketch: %s", tune_space_sketch_name(f.space, 0));
	uint64_t rng = 11;
	int long_rows = 0;
	for (int i = 0; i < 24; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		char *text = sch_trace_to_text(st->trace);
		cr_expect(strstr(text, "cache_read B local C -> B_local\ncompute_at B_local C."),
			"%s", text);
		cr_expect_null(strstr(text, "cache_write"), "%s", text);
		int b = sch_find_stage(st, "B_local"), c = sch_find_stage(st, "C");
		cr_assert(b >= 0 && c >= 0);
		const sch_stage *bs = &st->stages[b], *cs = &st->stages[c];
		cr_expect_eq(bs->attach_stage, c, "%s", text);
		cr_expect(cs->iters[bs->attach_iter].reduce, "B_local is not at a block of k:\n%s",
			text);
		if (cs->iters[bs->attach_iter].extent > 1)
			cr_expect_null(strstr(text, "stream C 1"), "C, read back after every "
				"block of k, is stored streaming:\n%s", text);
		for (int l = sch_leaf_pos(cs, bs->attach_iter) - 1; l > 0; l--) {
			const sch_iter *it = &cs->iters[cs->leaves[l]];
			cr_expect(it->reduce || strncmp(it->name, "j", 1) == 0,
				"B_local inside the row loop %s:\n%s", it->name, text);
		}
		const sch_iter *inner = &cs->iters[cs->leaves[cs->nleaves - 1]];
		for (int l = cs->nleaves - 1; l >= 0 && !inner->reduce; l--)
			inner = &cs->iters[cs->leaves[l]];
		long_rows += inner->reduce && inner->extent > 16;
		free(text);
		sch_state_free(st);
	}
	cr_expect_gt(long_rows, 0, "no sample took more than 16 rows of B a block");
	fixture_fini(&f);

	const char *ragged[] = { "M", "24", "N", "40", "K", "48" };
	fixture_lib_on(&f, "matmul", 3, ragged, "cpu -isa=avx2 -cores=2");
	k = sketch_named(&f, "in place, B panel");
	cr_assert_geq(k, 0);
	int partial = 0;
	for (int i = 0; i < 30; i++) {
		sch_state *st = tune_space_sample(f.space, k, &rng);
		cr_assert(st);
		partial += partial_splits(&f, st->trace) > 0;
		free(check_state(&f, st, "an in-place panel sample"));
		sch_state *child = tune_space_mutate(f.space, st->trace, &rng);
		if (child) {
			free(check_state(&f, child, "a mutation of an in-place panel sample"));
			sch_state_free(child);
		}
		sch_state_free(st);
	}
	cr_expect_gt(partial, 0, "no in-place panel sample had a partial tile of 40 columns");
	fixture_fini(&f);
}

/* An output larger than the L2 caches of the target's cores is stored
 * streaming in some samples and not in others, and mutation flips it;
 * a small output never gets the decision. */
Test(sketch, streaming_output_is_a_decision)
{
	const char *big[] = { "shape", "[4096, 1024]" }, *small[] = { "shape", "[64, 256]" };
	fixture f;
	int flipped = 0;
	fixture_lib_on(&f, "softmax", 1, big, "cpu -isa=avx2 -cores=2 -l2=512K");
	int on = samples_with(&f, 10, "stream Y 1", &flipped, 5);
	int off = samples_with(&f, 10, "stream Y 0", NULL, 6);
	cr_expect_gt(on, 0, "no sample stored the output streaming");
	cr_expect_gt(off, 0, "every sample stored the output streaming");
	cr_expect_gt(flipped, 0, "no mutation turned streaming off");
	fixture_fini(&f);
	fixture_lib_on(&f, "softmax", 1, small, "cpu -isa=avx2 -cores=2 -l2=512K");
	cr_expect_eq(samples_with(&f, 10, "stream Y", NULL, 7), 0,
		"a small output was stored streaming");
	fixture_fini(&f);
}

/* A split whose inner loop is vectorized in whole vectors stays a
 * multiple of the vector width under mutation (a factor of 1 made
 * softmax's output loop scalar); the rfactor sketch vectorizes the
 * reduction of its lanes, and the parallel row loop prefetches the next
 * rows of X in some samples. */
Test(sketch, softmax_vectors_under_mutation)
{
	const char *kv[] = { "shape", "[64, 256]" };
	fixture f;
	fixture_lib(&f, "softmax", 1, kv);
	uint64_t rng = 29;
	int children = 0, final_vector = 0, prefetch = 0;
	for (int k = 0; k < tune_space_num_sketches(f.space); k++) {
		for (int i = 0; i < 20; i++) {
			sch_state *st = tune_space_sample(f.space, k, &rng);
			cr_assert(st);
			char *text = sch_trace_to_text(st->trace);
			final_vector += strstr(text, "vectorize Total.ji") != NULL;
			prefetch += strstr(text, "prefetch Y.") != NULL;
			free(text);
			cr_expect_eq(vector_splits_off_width(st->trace, 16), 0);
			for (int m = 0; m < 4; m++) {
				sch_state *child = tune_space_mutate(f.space, st->trace, &rng);
				if (!child)
					continue;
				children++;
				cr_expect_eq(vector_splits_off_width(child->trace, 16), 0,
					"a mutation split a vector loop off the vector width");
				sch_state_free(child);
			}
			sch_state_free(st);
		}
	}
	cr_expect_gt(children, 20);
	cr_expect_gt(final_vector, 0, "no sample vectorized the sum of the lanes");
	cr_expect_gt(prefetch, 0, "no sample prefetched");
	fixture_fini(&f);
}
