/* Tests of loop partitioning (ir/loop_partition.c): a loop guarded by a
 * non-dividing split becomes a guard-free main loop and a tail, for
 * extents and factors that divide, do not, exceed the extent or equal
 * it, and prime extents; a fused tile loop is unswitched, and its
 * partial blocks specialized to constant bounds.  Every program
 * is evaluated and compared with the interpreter (or, for programs built
 * by hand, with the values they must compute). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "schedule/primitives.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tests/support.h"

/* Stores of a program, guarded (an if between the store and its
 * innermost loop) or not. */
typedef struct store_count {
	int guarded, free;
} store_count;

static void count_stores(const loop_stmt *s, bool under_if, store_count *c)
{
	switch (s->kind) {
	case LS_FOR:
		count_stores(s->u.for_.body, false, c);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			count_stores(s->u.seq.items[i], under_if, c);
		break;
	case LS_IF:
		count_stores(s->u.if_.then_, true, c);
		if (s->u.if_.else_)
			count_stores(s->u.if_.else_, true, c);
		break;
	case LS_ALLOC:
		count_stores(s->u.alloc.body, under_if, c);
		break;
	case LS_STORE:
		if (under_if)
			c->guarded++;
		else
			c->free++;
		break;
	default:
		break;
	}
}

static store_count stores_of(const loop_prog *p)
{
	store_count c = { 0, 0 };
	count_stores(p->body, false, &c);
	return c;
}

/* ---- a loop built by hand ------------------------------------------------------ */

/* C[i] = A[i] * 2 for i < "n", as lowering writes a split by "f": two
 * loops of ceil(n / f) and f iterations and a guard. */
static loop_prog *build_guarded_copy(int64_t n, int64_t f)
{
	loop_prog *p = loop_prog_new("copy");
	int64_t shape[1] = { n };
	loop_buffer *a = loop_buffer_new(p, "A", TESSEL_F32, 1, shape, LOOP_GLOBAL);
	loop_buffer *c = loop_buffer_new(p, "C", TESSEL_F32, 1, shape, LOOP_GLOBAL);
	a->arg = 0;
	c->arg = 1;
	c->is_output = true;
	p->args = te_arena_alloc(&p->arena, 2 * sizeof(loop_buffer *));
	p->args[0] = a;
	p->args[1] = c;
	p->nargs = 2;
	loop_var *io = loop_var_new(p, "io"), *ii = loop_var_new(p, "ii");
	loop_expr *i = lx_add(p, lx_mul(p, lx_var(p, io), lx_int(p, f)), lx_var(p, ii));
	loop_expr *value = lx_binary(p, TESSEL_MUL, lx_load(p, a, 1, &i),
		lx_float(p, 2.0, TESSEL_F32), TESSEL_F32);
	loop_stmt *body = ls_if(p, lx_cmp(p, TESSEL_LT, i, lx_int(p, n)),
		ls_store(p, c, 1, &i, value, "C"), NULL);
	body = ls_for(p, ii, lx_int(p, 0), lx_int(p, f), LOOP_SERIAL, body);
	p->body = ls_for(p, io, lx_int(p, 0), lx_int(p, (n + f - 1) / f), LOOP_SERIAL, body);
	return p;
}

/* Partition "p" as the pipeline does and check it: valid, and computing
 * C = A * 2. */
static void check_copy(loop_prog *p, int64_t n, int64_t f)
{
	tessel_ctx *ctx = tessel_ctx_new();
	loop_simplify(p);
	loop_partition(p);
	cr_assert_eq(loop_verify(ctx, p), 0, "n %lld f %lld: %s", (long long)n, (long long)f,
		tessel_ctx_error(ctx)->message);
	loop_simplify(p);
	cr_assert_eq(loop_verify(ctx, p), 0);
	int64_t shape[1] = { n };
	tessel_tensor *a = tessel_tensor_new(TESSEL_F32, 1, shape, NULL, 0);
	tessel_tensor *c = tessel_tensor_new(TESSEL_F32, 1, shape, NULL, 0);
	tessel_tensor_fill_random(a, 3);
	memset(c->data, 0xff, (size_t)n * sizeof(float));
	tessel_tensor *args[2] = { a, c };
	cr_assert_eq(loop_eval(ctx, p, args), 0, "%s", tessel_ctx_error(ctx)->message);
	for (int64_t i = 0; i < n; i++)
		cr_assert_float_eq(((float *)c->data)[i], 2 * ((float *)a->data)[i], 0,
			"n %lld f %lld: element %lld", (long long)n, (long long)f, (long long)i);
	tessel_tensor_free(a);
	tessel_tensor_free(c);
	tessel_ctx_free(ctx);
}

Test(loop_partition, guarded_split_becomes_main_and_tail)
{
	loop_prog *p = build_guarded_copy(10, 4);
	check_copy(p, 10, 4);
	char *text = loop_prog_print(p);
	cr_expect_str_eq(text,
		"kernel copy(A: f32[10]) -> (C: f32[10]) {\n"
		"  for io in 0..2 {\n"
		"    for ii in 0..4 {\n"
		"      C[io * 4 + ii] = A[io * 4 + ii] * 2.0\n"
		"    }\n"
		"  }\n"
		"  for ii in 0..2 {\n"
		"    C[ii + 8] = A[ii + 8] * 2.0\n"
		"  }\n"
		"}\n", "%s", text);
	store_count sc = stores_of(p);
	cr_expect_eq(sc.guarded, 0);
	free(text);
	loop_prog_free(p);
}

Test(loop_partition, every_extent_and_factor)
{
	static const int64_t cases[][2] = {
		{ 10, 4 }, { 10, 5 }, { 10, 10 }, { 10, 16 }, { 10, 1 }, { 13, 4 },
		{ 13, 13 }, { 13, 20 }, { 17, 3 }, { 97, 16 }, { 1000, 64 }, { 1, 8 },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		loop_prog *p = build_guarded_copy(cases[k][0], cases[k][1]);
		check_copy(p, cases[k][0], cases[k][1]);
		store_count sc = stores_of(p);
		cr_expect_eq(sc.guarded, 0, "n %lld f %lld: %d guarded stores",
			(long long)cases[k][0], (long long)cases[k][1], sc.guarded);
		cr_expect_gt(sc.free, 0);
		loop_prog_free(p);
	}
}

/* ---- schedules ------------------------------------------------------------------- */

typedef struct fixture {
	tessel_ctx *ctx;
	tessel_op *op;
	tessel_tensor *args[3], *expected[1];
} fixture;

static void matmul_fixture(fixture *f, int64_t m, int64_t n, int64_t k)
{
	char sm[24], sn[24], sk[24];
	snprintf(sm, sizeof(sm), "%lld", (long long)m);
	snprintf(sn, sizeof(sn), "%lld", (long long)n);
	snprintf(sk, sizeof(sk), "%lld", (long long)k);
	const char *keys[] = { "M", "N", "K" }, *values[] = { sm, sn, sk };
	memset(f, 0, sizeof(*f));
	f->ctx = tessel_ctx_new();
	f->op = tessel_ops_instantiate(f->ctx, "matmul", 3, keys, values);
	cr_assert(f->op);
	for (int i = 0; i < 2; i++) {
		f->args[i] = test_tensor_like(tessel_op_input_at(f->op, i));
		tessel_tensor_fill_random(f->args[i], 40 + (uint64_t)i);
	}
	f->args[2] = test_tensor_like(tessel_op_output_at(f->op, 0));
	f->expected[0] = test_tensor_like(tessel_op_output_at(f->op, 0));
	cr_assert_eq(tessel_interp(f->op, f->args, f->expected), 0);
}

static void fixture_fini(fixture *f)
{
	for (int i = 0; i < 3; i++)
		tessel_tensor_free(f->args[i]);
	tessel_tensor_free(f->expected[0]);
	tessel_op_release(f->op);
	tessel_ctx_free(f->ctx);
}

/* Apply the trace "text" to a fresh state of "f", lower it and compare
 * its evaluation with the interpreter; return its store counts. */
static store_count check_trace(fixture *f, const char *text)
{
	sch_trace *t = sch_trace_parse(f->ctx, "test", text);
	cr_assert(t, "%s", tessel_ctx_error(f->ctx)->message);
	sch_state *st = sch_state_new(f->ctx, f->op);
	cr_assert_eq(sch_replay(st, t, "test"), 0, "%s\n%s", tessel_ctx_error(f->ctx)->message,
		text);
	loop_prog *p = sch_program(st);
	cr_assert(p, "%s", tessel_ctx_error(f->ctx)->message);
	memset(f->args[2]->data, 0xff,
		(size_t)tessel_tensor_numel(f->args[2]) * sizeof(float));
	cr_assert_eq(loop_eval(f->ctx, p, f->args), 0, "%s", tessel_ctx_error(f->ctx)->message);
	double err = test_outputs_error(f->args + 2, f->expected, 1);
	char *printed = loop_prog_print(p);
	cr_assert(err < 1e-5, "error %g for\n%s\n%s", err, text, printed);
	free(printed);
	store_count sc = stores_of(p);
	loop_prog_free(p);
	sch_state_free(st);
	sch_trace_free(t);
	return sc;
}

Test(loop_partition, matmul_splits_against_the_interpreter)
{
	static const int64_t sizes[][2] = {
		{ 10, 4 }, { 10, 10 }, { 10, 16 }, { 13, 4 }, { 13, 5 }, { 17, 8 }, { 12, 4 },
	};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int64_t n = sizes[k][0], fac = sizes[k][1];
		fixture f;
		matmul_fixture(&f, n, n + 1, 5);
		char text[512];
		snprintf(text, sizeof(text),
			"split C.i %lld -> C.io C.ii\n"
			"split C.j %lld -> C.jo C.ji\n"
			"reorder C.io C.jo C.k C.ii C.ji\n",
			(long long)fac, (long long)fac);
		store_count sc = check_trace(&f, text);
		cr_expect_eq(sc.guarded, 0, "n %lld factor %lld: %d guarded stores",
			(long long)n, (long long)fac, sc.guarded);
		fixture_fini(&f);
	}
}

/* Tiles of a fused parallel loop, the accumulator computed inside, its
 * columns in vectors of 8: partial tiles where the sizes are not
 * multiples of 6 and 16. */
static const char fused_tiles[] =
	"cache_write C local\n"
	"split C.i 6 -> C.io C.ii\n"
	"split C.j 16 -> C.jo C.ji\n"
	"reorder C.io C.jo C.ii C.ji\n"
	"fuse C.io C.jo -> C.t\n"
	"parallel C.t\n"
	"compute_at C_local C.t\n"
	"reorder C_local.k C_local.i C_local.j\n"
	"split C_local.j 8 -> C_local.jo C_local.ji\n"
	"unroll C_local.i\n"
	"vectorize C_local.ji\n";

Test(loop_partition, fused_tiles_are_unswitched)
{
	static const int64_t sizes[] = { 13, 20, 31, 37 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fixture f;
		matmul_fixture(&f, sizes[k], sizes[k] + 3, 7);
		store_count sc = check_trace(&f, fused_tiles);
		cr_expect_gt(sc.free, 0, "size %lld: no store without a guard",
			(long long)sizes[k]);
		fixture_fini(&f);
	}
}

/* Return the stores of "s" under an if inside a vector loop. */
static int lane_guarded_stores(const loop_stmt *s, bool in_vector, bool under_if)
{
	int n = 0;
	switch (s->kind) {
	case LS_FOR:
		return lane_guarded_stores(s->u.for_.body,
			in_vector || s->u.for_.kind == LOOP_VECTORIZED, false);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			n += lane_guarded_stores(s->u.seq.items[i], in_vector, under_if);
		return n;
	case LS_IF:
		n = lane_guarded_stores(s->u.if_.then_, in_vector, in_vector);
		if (s->u.if_.else_)
			n += lane_guarded_stores(s->u.if_.else_, in_vector, in_vector);
		return n;
	case LS_ALLOC:
		return lane_guarded_stores(s->u.alloc.body, in_vector, under_if);
	case LS_STORE:
		return under_if;
	default:
		return 0;
	}
}

static int lane_guards(const loop_stmt *s)
{
	return lane_guarded_stores(s, false, false);
}

/* Check the trace "text" on "f" against the interpreter (check_trace),
 * and return what "count" counts in its program, whose text goes to
 * "*printed". */
static int count_in_program(fixture *f, const char *text, int (*count)(const loop_stmt *),
	char **printed)
{
	check_trace(f, text);
	sch_trace *t = sch_trace_parse(f->ctx, "test", text);
	sch_state *st = sch_state_new(f->ctx, f->op);
	cr_assert_eq(sch_replay(st, t, "test"), 0);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	*printed = loop_prog_print(p);
	int n = count(p->body);
	loop_prog_free(p);
	sch_state_free(st);
	sch_trace_free(t);
	return n;
}

/* The partial tile of a fused loop has bounds known only at run time: its
 * vector loops run on vectors where the tile is whole and otherwise over
 * the live lanes, never with a guard per lane. */
Test(loop_partition, vector_loops_of_partial_tiles_have_no_lane_guards)
{
	static const int64_t sizes[] = { 20, 31, 37 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fixture f;
		matmul_fixture(&f, sizes[k], sizes[k] + 3, 7);
		char *printed;
		int n = count_in_program(&f, fused_tiles, lane_guards, &printed);
		cr_expect_eq(n, 0, "size %lld: a store guarded per lane\n%s",
			(long long)sizes[k], printed);
		free(printed);
		fixture_fini(&f);
	}
}

/* A fused loop's partial blocks have bounds that selects on the fused
 * variable give (`select(t % 2 == 1, 22, ...)`); each body is
 * specialized by them (ir/loop_partition.c, loop_specialize), so that
 * every block, partial ones included, runs with constant bounds: no
 * store guarded, no select or minimum left. */
Test(loop_partition, partial_blocks_of_a_fused_loop_get_constant_bounds)
{
	static const int64_t sizes[][2] = { { 20, 23 }, { 31, 34 }, { 13, 19 }, { 25, 40 } };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fixture f;
		matmul_fixture(&f, sizes[k][0], sizes[k][1], 7);
		store_count sc = check_trace(&f, fused_tiles);
		char *printed;
		count_in_program(&f, fused_tiles, lane_guards, &printed);
		cr_expect_eq(sc.guarded, 0, "%lld x %lld: %d guarded stores\n%s",
			(long long)sizes[k][0], (long long)sizes[k][1], sc.guarded, printed);
		cr_expect(!strstr(printed, "select") && !strstr(printed, "min("),
			"%lld x %lld: bounds left to run time\n%s", (long long)sizes[k][0],
			(long long)sizes[k][1], printed);
		free(printed);
		fixture_fini(&f);
	}
}

/* Return the stores of "s" outside every parallel loop. */
static int serial_stores(const loop_stmt *s)
{
	int n = 0;
	switch (s->kind) {
	case LS_FOR:
		return s->u.for_.kind == LOOP_PARALLEL ? 0 : serial_stores(s->u.for_.body);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			n += serial_stores(s->u.seq.items[i]);
		return n;
	case LS_IF:
		return serial_stores(s->u.if_.then_) +
		       (s->u.if_.else_ ? serial_stores(s->u.if_.else_) : 0);
	case LS_ALLOC:
		return serial_stores(s->u.alloc.body);
	case LS_STORE:
		return 1;
	default:
		return 0;
	}
}

/* The partial last tile of a parallel loop runs as one of its iterations,
 * not alone after it while the other threads wait; inside, its loops get
 * constant bounds, so that no store of it is guarded. */
Test(loop_partition, the_partial_tile_of_a_parallel_loop_stays_in_it)
{
	static const int64_t sizes[] = { 13, 20, 31 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		fixture f;
		matmul_fixture(&f, sizes[k], sizes[k] + 3, 7);
		const char *text =
			"split C.i 6 -> C.io C.ii\n"
			"split C.j 16 -> C.jo C.ji\n"
			"reorder C.io C.jo C.k C.ii C.ji\n"
			"parallel C.io\n";
		store_count sc = check_trace(&f, text);
		cr_expect_eq(sc.guarded, 0, "size %lld: %d guarded stores", (long long)sizes[k],
			sc.guarded);
		char *printed;
		cr_expect_eq(count_in_program(&f, text, serial_stores, &printed), 0,
			"size %lld: stores outside the parallel loop\n%s", (long long)sizes[k],
			printed);
		free(printed);
		fixture_fini(&f);
	}
}
