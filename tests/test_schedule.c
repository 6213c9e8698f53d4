/* Tests of schedules: random legal traces over the operator library
 * (lowered, evaluated, compared with the interpreter), trace text round
 * trips, replay determinism, and refusals. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "schedule/primitives.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tests/support.h"

/* An op with its inputs, the interpreter's outputs, and scratch outputs. */
typedef struct fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	int nin, nout;
	tessel_tensor *args[32];     /* inputs, then scratch outputs */
	tessel_tensor *expected[16];
} fixture;

static void fixture_init(fixture *f, const char *name, int n, const char **keys,
	const char **values)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	f->op = tessel_ops_instantiate(f->ctx, name, n, keys, values);
	if (!f->op)
		tessel_ctx_print_error(f->ctx, stderr);
	cr_assert(f->op, "instantiating %s", name);
	f->nin = tessel_op_num_inputs(f->op);
	f->nout = tessel_op_num_outputs(f->op);
	for (int i = 0; i < f->nin; i++) {
		f->args[i] = test_tensor_like(tessel_op_input_at(f->op, i));
		tessel_tensor_fill_random(f->args[i], 100 + (uint64_t)i);
	}
	for (int i = 0; i < f->nout; i++) {
		f->expected[i] = test_tensor_like(tessel_op_output_at(f->op, i));
		f->args[f->nin + i] = test_tensor_like(tessel_op_output_at(f->op, i));
	}
	cr_assert_eq(tessel_interp(f->op, f->args, f->expected), 0);
}

static void fixture_fini(fixture *f)
{
	for (int i = 0; i < f->nin + f->nout; i++)
		tessel_tensor_free(f->args[i]);
	for (int i = 0; i < f->nout; i++)
		tessel_tensor_free(f->expected[i]);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

/* Return the largest relative difference between the outputs and the
 * interpreter's (tests/support.h). */
static double output_error(const fixture *f)
{
	return test_outputs_error(f->args + f->nin, f->expected, f->nout);
}

static void clear_outputs(fixture *f)
{
	for (int i = 0; i < f->nout; i++) {
		tessel_tensor *t = f->args[f->nin + i];
		memset(t->data, 0xff, (size_t)tessel_tensor_numel(t) * tessel_dtype_size(t->dtype));
	}
}

/* Return whether a stage of "st" computed at a loop serves another stage
 * computed there too (compute_at of a stage for several readers), or,
 * when "deeper", one computed at a loop inside it. */
static bool has_served_reader(const sch_state *st, bool deeper)
{
	for (int p = 0; p < st->nstages; p++) {
		const sch_stage *ps = &st->stages[p];
		if (ps->attach != SCH_AT)
			continue;
		for (int k = 0; k < st->nstages; k++) {
			const sch_stage *ks = &st->stages[k];
			if (k == p || !sch_reads(st, k, p) ||
			    !sch_computed_within(st, k, ps->attach_stage, ps->attach_iter))
				continue;
			if ((ks->attach_iter != ps->attach_iter) == deeper)
				return true;
		}
	}
	return false;
}

/* How fuzz_counting draws its schedules and what it counts. */
typedef struct fuzz_opts {
	int steps;            /* random primitive attempts per schedule */
	const char *prefix;   /* a trace applied before them, or NULL */
	int *shared;          /* when not NULL: schedules computing a stage at
	                       * one loop for several readers */
	int *nested;          /* when not NULL: at a loop around its reader's */
} fuzz_opts;

/* Run "count" random schedules of "f" from "seed"; return how many failed
 * (each failure's trace is printed), counting as "o" asks.
 * TESSEL_FUZZ_SCALE multiplies the count and TESSEL_FUZZ_SEED shifts the
 * seeds, for longer runs by hand. */
static int fuzz_counting(fixture *f, const char *what, int count, uint64_t seed,
	const fuzz_opts *o)
{
	const char *scale = getenv("TESSEL_FUZZ_SCALE");
	const char *shift = getenv("TESSEL_FUZZ_SEED");
	if (scale && atoi(scale) > 0)
		count *= atoi(scale);
	if (shift)
		seed += 1000 * (uint64_t)strtoull(shift, NULL, 10);
	sch_trace *prefix = o->prefix ? sch_trace_parse(f->ctx, "prefix", o->prefix) : NULL;
	cr_assert(!o->prefix || prefix, "%s", tessel_ctx_error(f->ctx)->message);
	int failed = 0;
	for (int c = 0; c < count; c++) {
		sch_state *st = sch_state_new(f->ctx, f->op);
		cr_assert(st);
		cr_assert(!prefix || sch_replay(st, prefix, "prefix") == 0, "%s",
			tessel_ctx_error(f->ctx)->message);
		sch_random_schedule(st, seed * 7919 + (uint64_t)c, o->steps);
		if (o->shared)
			*o->shared += has_served_reader(st, false);
		if (o->nested)
			*o->nested += has_served_reader(st, true);
		loop_prog *p = sch_program(st);
		clear_outputs(f);
		bool ran = p && loop_eval(f->ctx, p, f->args) == 0;
		double err = ran ? output_error(f) : INFINITY;
		if (err > 1e-5) {
			char *t = sch_trace_to_text(st->trace);
			cr_log_error("%s: random schedule %d (seed %llu) gives error %g%s%s:\n%s",
				what, c, (unsigned long long)seed, err, ran ? "" : ": ",
				ran ? "" : tessel_ctx_error(f->ctx)->message, t);
			free(t);
			failed++;
		}
		loop_prog_free(p);
		sch_state_free(st);
	}
	sch_trace_free(prefix);
	return failed;
}

static int fuzz(fixture *f, const char *what, int count, uint64_t seed)
{
	return fuzz_counting(f, what, count, seed, &(fuzz_opts){ .steps = 12 });
}

#define FUZZ_CASE(test, opname, count, ...)                                   \
	Test(random_schedules, test)                                          \
	{                                                                     \
		const char *kv[] = { __VA_ARGS__ };                           \
		int n = (int)(sizeof(kv) / sizeof(kv[0])) / 2;                \
		const char *keys[16], *values[16];                            \
		for (int i = 0; i < n; i++) {                                 \
			keys[i] = kv[2 * i];                                  \
			values[i] = kv[2 * i + 1];                            \
		}                                                             \
		fixture f;                                                    \
		fixture_init(&f, opname, n, keys, values);                    \
		cr_expect_eq(fuzz(&f, #test, count, __LINE__), 0);            \
		fixture_fini(&f);                                             \
	}

FUZZ_CASE(matmul, "matmul", 60, "M", "12", "N", "10", "K", "7")
FUZZ_CASE(matmul_transposed, "matmul", 30, "M", "9", "N", "8", "K", "6",
	"transpose_a", "1", "transpose_b", "1")
FUZZ_CASE(batch_matmul, "batch_matmul", 30, "B", "2", "M", "5", "N", "6", "K", "4")
FUZZ_CASE(dense, "dense", 30, "batch", "3", "in_features", "7", "out_features", "5")
FUZZ_CASE(conv2d, "conv2d", 40, "N", "1", "C", "3", "H", "7", "W", "6", "F", "4",
	"R", "3", "S", "3", "padding", "1")
FUZZ_CASE(conv2d_strided, "conv2d", 25, "N", "1", "C", "2", "H", "9", "W", "8",
	"F", "3", "R", "3", "S", "2", "stride", "2", "dilation", "[1, 2]")
FUZZ_CASE(conv2d_depthwise, "conv2d", 25, "N", "1", "C", "4", "H", "6", "W", "6",
	"F", "4", "R", "3", "S", "3", "groups", "4", "padding", "1")
FUZZ_CASE(conv2d_nhwc, "conv2d", 25, "N", "1", "C", "3", "H", "6", "W", "5",
	"F", "2", "R", "3", "S", "3", "layout", "NHWC", "padding", "1")
FUZZ_CASE(max_pool2d, "max_pool2d", 25, "N", "1", "C", "2", "H", "7", "W", "7",
	"kernel", "3", "stride", "2", "padding", "1")
FUZZ_CASE(avg_pool2d, "avg_pool2d", 25, "N", "1", "C", "2", "H", "6", "W", "6",
	"kernel", "2")
FUZZ_CASE(global_avg_pool, "global_avg_pool", 15, "N", "2", "C", "3", "H", "4", "W", "5")
FUZZ_CASE(softmax, "softmax", 30, "shape", "[5, 7]")
FUZZ_CASE(log_softmax, "log_softmax", 20, "shape", "[3, 2, 6]")
FUZZ_CASE(layer_norm, "layer_norm", 30, "shape", "[4, 9]")
FUZZ_CASE(batch_norm, "batch_norm", 15, "shape", "[2, 3, 4, 4]")
FUZZ_CASE(add_broadcast, "add", 20, "a", "[2, 1, 3]", "b", "[4, 3]")
FUZZ_CASE(gelu, "gelu", 15, "shape", "[6, 5]")
FUZZ_CASE(reduce_sum, "reduce_sum", 20, "shape", "[3, 4, 5]", "axes", "[0, 2]")
FUZZ_CASE(reduce_max, "reduce_max", 15, "shape", "[6, 5]", "axes", "[1]", "keepdims", "1")
FUZZ_CASE(transpose, "transpose", 15, "shape", "[2, 3, 4]", "perm", "[2, 0, 1]")
FUZZ_CASE(reshape, "reshape", 15, "shape", "[4, 6]", "newshape", "[3, -1]")
FUZZ_CASE(pad, "pad", 15, "shape", "[3, 4]", "pads", "[1, 0, 2, 1]")
FUZZ_CASE(concat, "concat", 15, "shape", "[5, 3]", "sizes", "[2, 3]", "axis", "0")
FUZZ_CASE(cross_entropy, "softmax_cross_entropy", 20, "N", "4", "C", "5")

/* Stages computed at one loop for several readers (softmax's E for Total
 * and Y, Max for E) come up in random schedules and compute the op. */
Test(random_schedules, shared_locations)
{
	const char *keys[] = { "shape" }, *values[] = { "[5, 37]" };
	const char *ops[] = { "softmax", "log_softmax", "layer_norm" };
	for (int i = 0; i < 3; i++) {
		fixture f;
		fixture_init(&f, ops[i], 1, keys, values);
		int shared = 0;
		cr_expect_eq(fuzz_counting(&f, ops[i], 1000, 77 + (uint64_t)i,
			&(fuzz_opts){ .steps = 12, .shared = &shared }), 0);
		cr_log_info("%s: %d of 1000 share a loop", ops[i], shared);
		cr_expect_geq(shared, 6, "%s: %d of 1000 random schedules share a loop",
			ops[i], shared);
		fixture_fini(&f);
	}
}

/* Stages computed at a loop around the one their reader is computed at
 * (a copy of B per column panel, read by the accumulator of each row
 * tile inside it) come up in random schedules and compute the op: from
 * an accumulator and a copy of the weights, random steps. */
Test(random_schedules, outer_locations)
{
	const char *ops[] = { "matmul", "dense" };
	const char *keys[][3] = { { "M", "N", "K" }, { "batch", "in_features", "out_features" } };
	const char *values[][3] = { { "13", "10", "7" }, { "6", "7", "9" } };
	const char *prefix[] = {
		"cache_write C local -> C_local\ncache_read B global C_local -> B_global\n",
		"cache_write Z local -> Z_local\ncache_read W global Z_local -> W_global\n",
	};
	for (int i = 0; i < 2; i++) {
		fixture f;
		fixture_init(&f, ops[i], 3, keys[i], values[i]);
		int nested = 0;
		cr_expect_eq(fuzz_counting(&f, ops[i], 600, 31 + (uint64_t)i,
			&(fuzz_opts){ .steps = 16, .prefix = prefix[i], .nested = &nested }), 0);
		cr_log_info("%s: %d of 600 at a loop around their reader's", ops[i], nested);
		cr_expect_geq(nested, 6, "%s: %d of 600 random schedules compute a stage at "
			"a loop around its reader's", ops[i], nested);
		fixture_fini(&f);
	}
}

Test(trace, text_round_trip_and_replay)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3,
		(const char *[]){ "M", "N", "K" }, (const char *[]){ "64", "48", "30" });
	cr_assert(op);
	for (uint64_t seed = 1; seed <= 40; seed++) {
		sch_state *a = sch_state_new(ctx, op);
		sch_random_schedule(a, seed, 12);
		char *text = sch_trace_to_text(a->trace);
		sch_trace *t = sch_trace_parse(ctx, "t.trace", text);
		cr_assert(t, "%s", text);
		sch_state *b = sch_state_new(ctx, op);
		cr_assert_eq(sch_replay(b, t, "t.trace"), 0, "%s: %s", text,
			tessel_ctx_error(ctx)->message);
		char *again = sch_trace_to_text(b->trace);
		cr_expect_str_eq(text, again);
		loop_prog *pa = sch_lower(a), *pb = sch_lower(b);
		cr_assert(pa && pb);
		char *la = loop_prog_print(pa), *lb = loop_prog_print(pb);
		cr_expect_str_eq(la, lb, "replay must give the same program");
		free(la);
		free(lb);
		loop_prog_free(pa);
		loop_prog_free(pb);
		free(again);
		free(text);
		sch_trace_free(t);
		sch_state_free(a);
		sch_state_free(b);
	}
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}
