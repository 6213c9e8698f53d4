/* Tests of the loop IR: the text form of programs built with the
 * constructors, the checker (every invariant accepted when it holds and
 * refused, with its message, when one program breaks it), the simplifier
 * on each of its rules (text before and after), and the simplifier's
 * fuzz invariant: random programs compute the same outputs, bit for bit,
 * before and after simplification (the SQLite fuzzinvariants idea). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "ir/te_impl.h"
#include "tessel/te.h"
#include "tessel/tensor.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NEXPRS(...) ((int)(sizeof((loop_expr *[]){ __VA_ARGS__ }) / sizeof(loop_expr *)))
#define LOAD(p, b, ...) lx_load(p, b, NEXPRS(__VA_ARGS__), (loop_expr *[]){ __VA_ARGS__ })
#define STORE(p, b, v, ...) \
	ls_store(p, b, NEXPRS(__VA_ARGS__), (loop_expr *[]){ __VA_ARGS__ }, v, NULL)
#define SEQ(p, ...) \
	ls_seq(p, (int)(sizeof((loop_stmt *[]){ __VA_ARGS__ }) / sizeof(loop_stmt *)), \
		(loop_stmt *[]){ __VA_ARGS__ })

/* ---- building programs ------------------------------------------------- */

/* Add the argument "name" of "dt" and "shape" (an output when "output")
 * to "p". */
static loop_buffer *add_arg(loop_prog *p, const char *name, tessel_dtype dt, int ndim,
	const int64_t *shape, bool output)
{
	loop_buffer *b = loop_buffer_new(p, name, dt, ndim, shape, LOOP_GLOBAL);
	b->arg = p->nargs;
	b->is_output = output;
	te_push(&p->arena, (void ***)&p->args, &p->nargs, b);
	return b;
}

static loop_expr *V(loop_prog *p, loop_var *v)
{
	return lx_var(p, v);
}

static loop_expr *I(loop_prog *p, int64_t v)
{
	return lx_int(p, v);
}

static loop_expr *F32(loop_prog *p, double v)
{
	return lx_float(p, v, TESSEL_F32);
}

static loop_expr *add_v(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_ADD, a, b, a->dtype);
}

static loop_expr *mul_v(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_MUL, a, b, a->dtype);
}

static loop_stmt *loop(loop_prog *p, loop_var *v, int64_t min, int64_t extent,
	loop_kind kind, loop_stmt *body)
{
	return ls_for(p, v, I(p, min), I(p, extent), kind, body);
}

/* C = A @ B with the accumulator initialized in the j loop. */
static loop_prog *build_matmul(void)
{
	loop_prog *p = loop_prog_new("matmul");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, 5), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 2, SHAPE(5, 3), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(4, 3), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j"), *k = loop_var_new(p, "k");
	loop_stmt *init = STORE(p, C, F32(p, 0), V(p, i), V(p, j));
	loop_expr *prod = mul_v(p, LOAD(p, A, V(p, i), V(p, k)), LOAD(p, B, V(p, k), V(p, j)));
	loop_stmt *update = STORE(p, C, add_v(p, LOAD(p, C, V(p, i), V(p, j)), prod),
		V(p, i), V(p, j));
	loop_stmt *inner = SEQ(p, init, loop(p, k, 0, 5, LOOP_SERIAL, update));
	p->body = loop(p, i, 0, 4, LOOP_PARALLEL, loop(p, j, 0, 3, LOOP_SERIAL, inner));
	return p;
}

static const char matmul_text[] =
	"kernel matmul(A: f32[4, 5], B: f32[5, 3]) -> (C: f32[4, 3]) {\n"
	"  for i in 0..4 parallel {\n"
	"    for j in 0..3 {\n"
	"      C[i, j] = 0.0\n"
	"      for k in 0..5 {\n"
	"        C[i, j] = C[i, j] + A[i, k] * B[k, j]\n"
	"      }\n"
	"    }\n"
	"  }\n"
	"}\n";

/* B = A * 2 over "n" elements, split by 32 into "outer" * 32 iterations
 * with the guard `io * 32 + ii < n`. */
static loop_prog *build_split(int64_t n, int64_t outer)
{
	loop_prog *p = loop_prog_new("scale");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(n), true);
	loop_var *io = loop_var_new(p, "io"), *ii = loop_var_new(p, "ii");
	loop_expr *x = lx_add(p, lx_mul(p, V(p, io), I(p, 32)), V(p, ii));
	loop_stmt *store = STORE(p, B, mul_v(p, LOAD(p, A, x), F32(p, 2)), x);
	loop_stmt *guarded = ls_if(p, lx_cmp(p, TESSEL_LT, x, I(p, n)), store, NULL);
	p->body = loop(p, io, 0, outer, LOOP_PARALLEL,
		loop(p, ii, 0, 32, LOOP_VECTORIZED, guarded));
	return p;
}

static const char split_text[] =
	"kernel scale(A: f32[1000]) -> (B: f32[1000]) {\n"
	"  for io in 0..32 parallel {\n"
	"    for ii in 0..32 vectorized {\n"
	"      if io * 32 + ii < 1000 {\n"
	"        B[io * 32 + ii] = A[io * 32 + ii] * 2.0\n"
	"      }\n"
	"    }\n"
	"  }\n"
	"}\n";

/* C = A + 1 over a 4x3 array, its two loops fused into one. */
static loop_prog *build_fused(void)
{
	loop_prog *p = loop_prog_new("inc");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, 3), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(4, 3), true);
	loop_var *f = loop_var_new(p, "i_j");
	loop_expr *i = lx_div(p, V(p, f), I(p, 3)), *j = lx_mod(p, V(p, f), I(p, 3));
	p->body = loop(p, f, 0, 12, LOOP_SERIAL,
		STORE(p, C, add_v(p, LOAD(p, A, i, j), F32(p, 1)), i, j));
	return p;
}

static const char fused_text[] =
	"kernel inc(A: f32[4, 3]) -> (C: f32[4, 3]) {\n"
	"  for i_j in 0..12 {\n"
	"    C[i_j / 3, i_j % 3] = A[i_j / 3, i_j % 3] + 1.0\n"
	"  }\n"
	"}\n";

/* A GPU-style program: blocks of 8 threads stage A in shared memory
 * (padded rows) and write it reversed; a local buffer is filled by an
 * unrolled loop. */
static loop_prog *build_staged(void)
{
	loop_prog *p = loop_prog_new("reverse");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(64), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(64), true);
	loop_buffer *S = loop_buffer_new(p, "S", TESSEL_F32, 2, SHAPE(1, 8), LOOP_SHARED);
	S->strides[0] = 9;
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1, SHAPE(4), LOOP_LOCAL);
	loop_var *bx = loop_var_new(p, "bx"), *tx = loop_var_new(p, "tx");
	loop_var *u = loop_var_new(p, "u");
	loop_expr *g = lx_add(p, lx_mul(p, V(p, bx), I(p, 8)), V(p, tx));
	loop_expr *rev = lx_sub(p, I(p, 7), V(p, tx));
	loop_stmt *fill = loop(p, u, 0, 4, LOOP_UNROLLED,
		STORE(p, T, F32(p, 0.5), V(p, u)));
	fill->u.for_.unroll_limit = 16;
	loop_stmt *threads = loop(p, tx, 0, 8, LOOP_THREAD_X, SEQ(p,
		STORE(p, S, LOAD(p, A, g), I(p, 0), V(p, tx)),
		ls_barrier(p),
		ls_alloc(p, T, SEQ(p, fill,
			STORE(p, B, add_v(p, LOAD(p, S, I(p, 0), rev), LOAD(p, T, I(p, 3))), g)))));
	p->body = loop(p, bx, 0, 8, LOOP_BLOCK_X, ls_alloc(p, S, threads));
	return p;
}

/* Give the kernel of "p" (build_staged's) a second thread loop of 16
 * threads after its tile: the block has 16 threads along x, and the
 * tile's loop of 8 is guarded. */
static void widen_block(loop_prog *p)
{
	loop_buffer *B = p->args[1];
	loop_var *t = loop_var_new(p, "t16");
	loop_stmt *bx = p->body;
	bx->u.for_.body = SEQ(p, bx->u.for_.body, loop(p, t, 0, 16, LOOP_THREAD_X,
		STORE(p, B, F32(p, 1.0), V(p, t))));
}

static const char staged_text[] =
	"kernel reverse(A: f32[64]) -> (B: f32[64]) {\n"
	"  for bx in 0..8 blockIdx.x {\n"
	"    alloc S: f32[1, 8] strides [9, 1] shared {\n"
	"      for tx in 0..8 threadIdx.x {\n"
	"        S[0, tx] = A[bx * 8 + tx]\n"
	"        barrier\n"
	"        alloc T: f32[4] local {\n"
	"          for u in 0..4 unrolled unroll_limit=16 {\n"
	"            T[u] = 0.5\n"
	"          }\n"
	"          B[bx * 8 + tx] = S[0, 7 - tx] + T[3]\n"
	"        }\n"
	"      }\n"
	"    }\n"
	"  }\n"
	"}\n";

/* Conditionals, selects, casts, min/max and negation over int data. */
static loop_prog *build_misc(void)
{
	loop_prog *p = loop_prog_new("misc");
	loop_buffer *X = add_arg(p, "X", TESSEL_I32, 1, SHAPE(10), false);
	loop_buffer *Y = add_arg(p, "Y", TESSEL_F64, 1, SHAPE(10), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *x = LOAD(p, X, V(p, i));
	loop_expr *pos = lx_cmp(p, TESSEL_GT, x, lx_cast(p, TESSEL_I32, I(p, 0)));
	loop_expr *sel = lx_select(p, pos, lx_cast(p, TESSEL_F64, x),
		lx_unary(p, TESSEL_NEG, lx_float(p, 1, TESSEL_F64), TESSEL_F64), TESSEL_F64);
	loop_expr *even = lx_cmp(p, TESSEL_EQ, lx_mod(p, V(p, i), I(p, 2)), I(p, 0));
	loop_expr *clamp = lx_min(p, lx_max(p, lx_sub(p, V(p, i), I(p, 1)), I(p, 0)), I(p, 5));
	loop_stmt *branches = ls_if(p, even,
		STORE(p, Y, lx_cast(p, TESSEL_F64, LOAD(p, X, clamp)), V(p, i)),
		STORE(p, Y, sel, V(p, i)));
	p->body = loop(p, i, 0, 10, LOOP_SERIAL, branches);
	return p;
}

static const char misc_text[] =
	"kernel misc(X: i32[10]) -> (Y: f64[10]) {\n"
	"  for i in 0..10 {\n"
	"    if i % 2 == 0 {\n"
	"      Y[i] = f64(X[min(max(i - 1, 0), 5)])\n"
	"    } else {\n"
	"      Y[i] = select(X[i] > i32(0), f64(X[i]), -1.0f64)\n"
	"    }\n"
	"  }\n"
	"}\n";

static char *print_program(const loop_prog *p)
{
	char *s = loop_prog_print(p);
	cr_assert_not_null(s);
	return s;
}

static void expect_text(const loop_prog *p, const char *expected)
{
	char *s = print_program(p);
	cr_expect_str_eq(s, expected, "got:\n%s\nexpected:\n%s", s, expected);
	free(s);
}

static void expect_valid(loop_prog *p)
{
	tessel_ctx *ctx = tessel_ctx_new();
	int r = loop_verify(ctx, p);
	cr_expect_eq(r, 0, "loop_verify: %s", tessel_ctx_error(ctx)->message);
	tessel_ctx_free(ctx);
}

/* ---- printing ------------------------------------------------------------- */

Test(loop_print, matmul_nest_with_init)
{
	loop_prog *p = build_matmul();
	expect_text(p, matmul_text);
	loop_prog_free(p);
}

Test(loop_print, split_loop_with_guard)
{
	loop_prog *p = build_split(1000, 32);
	expect_text(p, split_text);
	loop_prog_free(p);
}

Test(loop_print, fused_loop_with_div_mod)
{
	loop_prog *p = build_fused();
	expect_text(p, fused_text);
	loop_prog_free(p);
}

Test(loop_print, allocations_barriers_and_loop_kinds)
{
	loop_prog *p = build_staged();
	expect_text(p, staged_text);
	loop_prog_free(p);
}

/* A tile of A in shared memory refilled per step of ko by 4 threads,
 * read reversed: "guard" puts the allocation under a condition on the
 * thread index instead (every thread then fills its own copy). */
static loop_prog *build_refilled(bool guard)
{
	loop_prog *p = loop_prog_new("refill");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(24), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(8), true);
	loop_buffer *S = loop_buffer_new(p, "S", TESSEL_F32, 1, SHAPE(4), LOOP_SHARED);
	loop_var *bx = loop_var_new(p, "bx"), *ko = loop_var_new(p, "ko");
	loop_var *t = loop_var_new(p, "t"), *u = loop_var_new(p, "u");
	loop_expr *src = lx_add(p, lx_add(p, lx_mul(p, V(p, bx), I(p, 12)),
		lx_mul(p, V(p, ko), I(p, 4))), V(p, t));
	loop_expr *out = lx_add(p, lx_mul(p, V(p, bx), I(p, 4)), V(p, u));
	loop_stmt *fill = loop(p, t, 0, 4, guard ? LOOP_SERIAL : LOOP_THREAD_X,
		STORE(p, S, LOAD(p, A, src), V(p, t)));
	loop_stmt *use = STORE(p, B, add_v(p, LOAD(p, B, out),
		LOAD(p, S, lx_sub(p, I(p, 3), V(p, u)))), out);
	loop_stmt *tile = ls_alloc(p, S, SEQ(p, fill, guard ? use
		: loop(p, u, 0, 4, LOOP_THREAD_X, use)));
	if (guard)
		tile = loop(p, u, 0, 4, LOOP_THREAD_X,
			ls_if(p, lx_cmp(p, TESSEL_LT, V(p, u), I(p, 3)), tile, NULL));
	p->body = loop(p, bx, 0, 2, LOOP_BLOCK_X, loop(p, ko, 0, 3, LOOP_SERIAL, tile));
	return p;
}

static const char refilled_text[] =
	"kernel refill(A: f32[24]) -> (B: f32[8]) {\n"
	"  for bx in 0..2 blockIdx.x {\n"
	"    for ko in 0..3 {\n"
	"      alloc S: f32[4] shared {\n"
	"        barrier\n"
	"        for t in 0..4 threadIdx.x {\n"
	"          S[t] = A[bx * 12 + ko * 4 + t]\n"
	"        }\n"
	"        barrier\n"
	"        for u in 0..4 threadIdx.x {\n"
	"          B[bx * 4 + u] = B[bx * 4 + u] + S[3 - u]\n"
	"        }\n"
	"      }\n"
	"    }\n"
	"  }\n"
	"}\n";

Test(loop_barriers, after_the_writes_and_before_each_refill)
{
	loop_prog *p = build_refilled(false);
	tessel_ctx *ctx = tessel_ctx_new();
	cr_assert_eq(loop_insert_barriers(ctx, p), 0, "%s", tessel_ctx_error(ctx)->message);
	expect_text(p, refilled_text);
	tessel_ctx_free(ctx);
	loop_prog_free(p);
}

/* Two tiles refilled per step of ko, the tile of B nested in the tile
 * of A, as lowering nests the shared stages of a matmul: "early" reads
 * the tile of A while filling the tile of B (before any barrier inside
 * it), else both are read only after the fills. */
static loop_prog *build_two_tiles(bool early)
{
	loop_prog *p = loop_prog_new("two");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(24), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(24), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 1, SHAPE(4), true);
	loop_buffer *SA = loop_buffer_new(p, "SA", TESSEL_F32, 1, SHAPE(4), LOOP_SHARED);
	loop_buffer *SB = loop_buffer_new(p, "SB", TESSEL_F32, 1, SHAPE(4), LOOP_SHARED);
	loop_var *ko = loop_var_new(p, "ko"), *t = loop_var_new(p, "t");
	loop_var *s = loop_var_new(p, "s"), *u = loop_var_new(p, "u");
	loop_expr *src_t = lx_add(p, lx_mul(p, V(p, ko), I(p, 4)), V(p, t));
	loop_expr *src_s = lx_add(p, lx_mul(p, V(p, ko), I(p, 4)), V(p, s));
	loop_stmt *fill_a = loop(p, t, 0, 4, LOOP_THREAD_X, STORE(p, SA, LOAD(p, A, src_t), V(p, t)));
	loop_expr *b_value = LOAD(p, B, src_s);
	if (early)
		b_value = add_v(p, b_value, LOAD(p, SA, lx_sub(p, I(p, 3), V(p, s))));
	loop_stmt *fill_b = loop(p, s, 0, 4, LOOP_THREAD_X, STORE(p, SB, b_value, V(p, s)));
	loop_stmt *use = loop(p, u, 0, 4, LOOP_THREAD_X, STORE(p, C, add_v(p, LOAD(p, C, V(p, u)),
		add_v(p, LOAD(p, SA, lx_sub(p, I(p, 3), V(p, u))), LOAD(p, SB, V(p, u)))), V(p, u)));
	p->body = loop(p, ko, 0, 6, LOOP_SERIAL,
		ls_alloc(p, SA, SEQ(p, fill_a, ls_alloc(p, SB, SEQ(p, fill_b, use)))));
	return p;
}

/* One barrier before both refills and one after them, not three: the
 * refill of the tile of A already waits for the last step's reads of the
 * tile of B, and the barrier after the tile of B is filled also follows
 * the fill of A.  When the fill of B reads the tile of A, a barrier
 * must come between the two fills. */
Test(loop_barriers, nested_tiles_share_their_barriers)
{
	static const char *const want[2] = {
		"    alloc SA: f32[4] shared {\n"
		"      barrier\n"
		"      for t in 0..4 threadIdx.x {\n"
		"        SA[t] = A[ko * 4 + t]\n"
		"      }\n"
		"      alloc SB: f32[4] shared {\n"
		"        for s in 0..4 threadIdx.x {\n"
		"          SB[s] = B[ko * 4 + s]\n"
		"        }\n"
		"        barrier\n"
		"        for u in 0..4 threadIdx.x {\n",
		"    alloc SA: f32[4] shared {\n"
		"      barrier\n"
		"      for t in 0..4 threadIdx.x {\n"
		"        SA[t] = A[ko * 4 + t]\n"
		"      }\n"
		"      barrier\n"
		"      alloc SB: f32[4] shared {\n"
		"        for s in 0..4 threadIdx.x {\n"
		"          SB[s] = B[ko * 4 + s] + SA[3 - s]\n"
		"        }\n"
		"        barrier\n"
		"        for u in 0..4 threadIdx.x {\n",
	};
	for (int early = 0; early < 2; early++) {
		loop_prog *p = build_two_tiles(early);
		tessel_ctx *ctx = tessel_ctx_new();
		cr_assert_eq(loop_insert_barriers(ctx, p), 0, "%s", tessel_ctx_error(ctx)->message);
		char *text = print_program(p);
		cr_expect(strstr(text, want[early]), "early %d:\n%s", early, text);
		int barriers = 0;
		for (const char *at = text; (at = strstr(at, "barrier")); at++)
			barriers++;
		cr_expect_eq(barriers, 2 + early, "early %d:\n%s", early, text);
		free(text);
		tessel_ctx_free(ctx);
		loop_prog_free(p);
	}
}

Test(loop_barriers, refused_where_threads_diverge)
{
	tessel_ctx *ctx = tessel_ctx_new();
	loop_prog *p = build_refilled(true);
	cr_expect_neq(loop_insert_barriers(ctx, p), 0);
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "shared buffer 'S' needs a "
		"barrier under a condition on a thread index"), "%s",
		tessel_ctx_error(ctx)->message);
	loop_prog_free(p);
	p = build_staged();
	widen_block(p);
	cr_expect_neq(loop_insert_barriers(ctx, p), 0);
	cr_expect(strstr(tessel_ctx_error(ctx)->message, "a barrier lies inside a loop "
		"bound to a thread index that not every thread of the block runs"), "%s",
		tessel_ctx_error(ctx)->message);
	loop_prog_free(p);
	tessel_ctx_free(ctx);
}

/* A shared buffer allocated inside a thread loop as long as the block
 * (as a tile of a stage computed inside the thread loops is) is fenced
 * there: each thread runs the loop's body once, unguarded, so every
 * thread reaches the barrier.  Inside a shorter thread loop it is
 * refused. */
Test(loop_barriers, inside_a_thread_loop_that_spans_the_block)
{
	for (int wide = 0; wide < 2; wide++) {
		tessel_ctx *ctx = tessel_ctx_new();
		loop_prog *p = loop_prog_new("reverse");
		loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(64), false);
		loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(64), true);
		loop_buffer *S = loop_buffer_new(p, "S", TESSEL_F32, 1, SHAPE(8), LOOP_SHARED);
		loop_var *bx = loop_var_new(p, "bx"), *tx = loop_var_new(p, "tx");
		loop_expr *g = lx_add(p, lx_mul(p, V(p, bx), I(p, 8)), V(p, tx));
		loop_stmt *threads = loop(p, tx, 0, 8, LOOP_THREAD_X, ls_alloc(p, S, SEQ(p,
			STORE(p, S, LOAD(p, A, g), V(p, tx)),
			STORE(p, B, LOAD(p, S, lx_sub(p, I(p, 7), V(p, tx))), g))));
		p->body = loop(p, bx, 0, 8, LOOP_BLOCK_X, threads);
		if (wide)
			widen_block(p);
		int rc = loop_insert_barriers(ctx, p);
		if (wide) {
			cr_expect_neq(rc, 0);
			cr_expect(strstr(tessel_ctx_error(ctx)->message, "shared buffer 'S' "
				"needs a barrier inside a loop bound to a thread index that not "
				"every thread of the block runs"), "%s",
				tessel_ctx_error(ctx)->message);
		} else {
			cr_expect_eq(rc, 0, "%s", tessel_ctx_error(ctx)->message);
			expect_text(p,
				"kernel reverse(A: f32[64]) -> (B: f32[64]) {\n"
				"  for bx in 0..8 blockIdx.x {\n"
				"    for tx in 0..8 threadIdx.x {\n"
				"      alloc S: f32[8] shared {\n"
				"        S[tx] = A[bx * 8 + tx]\n"
				"        barrier\n"
				"        B[bx * 8 + tx] = S[7 - tx]\n"
				"      }\n"
				"    }\n"
				"  }\n"
				"}\n");
		}
		loop_prog_free(p);
		tessel_ctx_free(ctx);
	}
}

Test(loop_print, conditionals_selects_casts)
{
	loop_prog *p = build_misc();
	expect_text(p, misc_text);
	loop_prog_free(p);
}

Test(loop_print, symbolic_bounds_and_every_kind)
{
	loop_prog *p = loop_prog_new("kinds");
	loop_buffer *Y = add_arg(p, "Y", TESSEL_I64, 1, SHAPE(4), true);
	loop_var *v[LOOP_KIND_COUNT];
	char name[8];
	for (int k = 0; k < LOOP_KIND_COUNT; k++) {
		snprintf(name, sizeof(name), "v%d", k);
		v[k] = loop_var_new(p, name);
	}
	loop_stmt *body = STORE(p, Y, V(p, v[LOOP_KIND_COUNT - 1]), I(p, 0));
	for (int k = LOOP_KIND_COUNT - 1; k >= 1; k--)
		body = ls_for(p, v[k], k == 1 ? I(p, 1) : V(p, v[k - 1]),
			k == 2 ? lx_add(p, V(p, v[1]), I(p, 1)) : I(p, 1), (loop_kind)k, body);
	p->body = ls_for(p, v[0], I(p, 0), I(p, 1), LOOP_SERIAL, body);
	expect_text(p,
		"kernel kinds() -> (Y: i64[4]) {\n"
		"  for v0 in 0..1 {\n"
		"    for v1 in 1..2 parallel {\n"
		"      for v2 in v1..v1 + (v1 + 1) vectorized {\n"
		"        for v3 in v2..v2 + 1 unrolled {\n"
		"          for v4 in v3..v3 + 1 blockIdx.x {\n"
		"            for v5 in v4..v4 + 1 blockIdx.y {\n"
		"              for v6 in v5..v5 + 1 blockIdx.z {\n"
		"                for v7 in v6..v6 + 1 threadIdx.x {\n"
		"                  for v8 in v7..v7 + 1 threadIdx.y {\n"
		"                    for v9 in v8..v8 + 1 threadIdx.z {\n"
		"                      for v10 in v9..v9 + 1 vthread {\n"
		"                        Y[0] = v10\n"
		"                      }\n"
		"                    }\n"
		"                  }\n"
		"                }\n"
		"              }\n"
		"            }\n"
		"          }\n"
		"        }\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n");
	loop_prog_free(p);
}

/* ---- verification ---------------------------------------------------------- */

Test(loop_verify, accepts_well_formed_programs)
{
	loop_prog *p[] = { build_matmul(), build_split(1000, 32), build_fused(),
		build_staged(), build_misc() };
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		expect_valid(p[i]);
		loop_prog_free(p[i]);
	}
}

Test(loop_verify, accepts_an_empty_program)
{
	loop_prog *p = loop_prog_new("empty");
	expect_valid(p);
	p->body = ls_seq(p, 0, NULL);
	expect_valid(p);
	loop_prog_free(p);
}

/* Expect loop_verify to refuse "p" with "message"; free "p". */
static void expect_violation(loop_prog *p, const char *message)
{
	tessel_ctx *ctx = tessel_ctx_new();
	cr_expect_eq(loop_verify(ctx, p), -1, "accepted, expected: %s", message);
	const tessel_error *e = tessel_ctx_error(ctx);
	cr_expect_eq(e->kind, TESSEL_ERR_INTERNAL);
	cr_expect_str_eq(e->message, message);
	tessel_ctx_free(ctx);
	loop_prog_free(p);
}

/* A one-loop program for the refusals: Y[i] = X[i] over 0..8, with its
 * pieces at hand to break. */
typedef struct small {
	loop_prog *p;
	loop_buffer *X, *Y;
	loop_var *i;
} small;

static small small_new(void)
{
	small s;
	s.p = loop_prog_new("copy");
	s.X = add_arg(s.p, "X", TESSEL_F32, 1, SHAPE(8), false);
	s.Y = add_arg(s.p, "Y", TESSEL_F32, 1, SHAPE(8), true);
	s.i = loop_var_new(s.p, "i");
	return s;
}

/* Make the body of "s" the loop over "i" around "body". */
static void small_loop(small *s, loop_stmt *body)
{
	s->p->body = loop(s->p, s->i, 0, 8, LOOP_SERIAL, body);
}

Test(loop_verify, refuses_a_variable_used_outside_its_loop)
{
	small s = small_new();
	loop_var *j = loop_var_new(s.p, "j");
	small_loop(&s, STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, j)), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: variable 'j' is used outside the loop that binds it");
}

Test(loop_verify, refuses_a_variable_after_its_loop)
{
	small s = small_new();
	loop_stmt *first = loop(s.p, s.i, 0, 8, LOOP_SERIAL,
		STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, s.i)), V(s.p, s.i)));
	s.p->body = SEQ(s.p, first, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: variable 'i' is used outside the loop that binds it");
}

Test(loop_verify, refuses_a_loop_bound_using_its_own_variable)
{
	small s = small_new();
	s.p->body = ls_for(s.p, s.i, I(s.p, 0), lx_add(s.p, V(s.p, s.i), I(s.p, 1)),
		LOOP_SERIAL, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: variable 'i' is used outside the loop that binds it");
}

Test(loop_verify, refuses_a_variable_bound_twice)
{
	small s = small_new();
	loop_stmt *body = STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, s.i)), V(s.p, s.i));
	s.p->body = SEQ(s.p, loop(s.p, s.i, 0, 8, LOOP_SERIAL, body),
		loop(s.p, s.i, 0, 8, LOOP_SERIAL, body));
	expect_violation(s.p, "loop IR: variable 'i' is bound by two loops");
}

Test(loop_verify, refuses_a_variable_id_out_of_range)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, s.i)), V(s.p, s.i)));
	s.i->id = 5;
	expect_violation(s.p, "loop IR: variable 'i' has id 5, outside the program's 1 variables");
}

Test(loop_verify, refuses_a_load_of_a_buffer_out_of_scope)
{
	small s = small_new();
	loop_buffer *T = loop_buffer_new(s.p, "T", TESSEL_F32, 1, SHAPE(8), LOOP_LOCAL);
	loop_stmt *fill = ls_alloc(s.p, T, STORE(s.p, T, F32(s.p, 1), V(s.p, s.i)));
	small_loop(&s, SEQ(s.p, fill,
		STORE(s.p, s.Y, LOAD(s.p, T, V(s.p, s.i)), V(s.p, s.i))));
	expect_violation(s.p, "loop IR: load of 'T': the buffer is neither an argument nor "
		"allocated by an enclosing alloc");
}

Test(loop_verify, refuses_a_store_to_an_unknown_buffer)
{
	small s = small_new();
	loop_buffer *Z = loop_buffer_new(s.p, "Z", TESSEL_F32, 1, SHAPE(8), LOOP_GLOBAL);
	small_loop(&s, STORE(s.p, Z, F32(s.p, 1), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: store to 'Z': the buffer is neither an argument nor "
		"allocated by an enclosing alloc");
}

Test(loop_verify, refuses_a_wrong_number_of_indices)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, s.i), I(s.p, 0)), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: load of 'X' has 2 indices, the buffer has 1 dimensions");
}

Test(loop_verify, refuses_a_float_index)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, F32(s.p, 0), lx_cast(s.p, TESSEL_F32, V(s.p, s.i))));
	expect_violation(s.p, "loop IR: index 0 of the store to 'Y' has type f32, "
		"not an integer type");
}

Test(loop_verify, refuses_a_bool_index)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y,
		LOAD(s.p, s.X, lx_cmp(s.p, TESSEL_LT, V(s.p, s.i), I(s.p, 3))), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: index 0 of the load of 'X' has type bool, "
		"not an integer type");
}

Test(loop_verify, accepts_indices_of_any_integer_type)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y,
		LOAD(s.p, s.X, lx_cast(s.p, TESSEL_I32, V(s.p, s.i))),
		lx_cast(s.p, TESSEL_I8, V(s.p, s.i))));
	expect_valid(s.p);
	loop_prog_free(s.p);
}

Test(loop_verify, refuses_a_constant_index_out_of_bounds)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, LOAD(s.p, s.X, I(s.p, 8)), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: constant index 8 in dimension 0 of the load of 'X' "
		"is outside 0..8");
}

Test(loop_verify, refuses_a_negative_constant_index)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, F32(s.p, 0), I(s.p, -1)));
	expect_violation(s.p, "loop IR: constant index -1 in dimension 0 of the store to 'Y' "
		"is outside 0..8");
}

Test(loop_verify, refuses_a_stored_value_of_another_type)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, lx_float(s.p, 1, TESSEL_F64), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: store to 'Y' of a f64 value, the buffer holds f32");
}

Test(loop_verify, refuses_a_load_typed_unlike_its_buffer)
{
	small s = small_new();
	loop_expr *x = LOAD(s.p, s.X, V(s.p, s.i));
	x->dtype = TESSEL_F64;
	small_loop(&s, STORE(s.p, s.Y, lx_cast(s.p, TESSEL_F32, x), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: load of 'X' has type f64, the buffer holds f32");
}

Test(loop_verify, refuses_an_integer_if_condition)
{
	small s = small_new();
	small_loop(&s, ls_if(s.p, lx_mod(s.p, V(s.p, s.i), I(s.p, 2)),
		STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)), NULL));
	expect_violation(s.p, "loop IR: condition of an if has type i64, not bool");
}

Test(loop_verify, refuses_a_float_select_condition)
{
	small s = small_new();
	loop_expr *x = LOAD(s.p, s.X, V(s.p, s.i));
	small_loop(&s, STORE(s.p, s.Y, lx_select(s.p, x, x, F32(s.p, 0), TESSEL_F32),
		V(s.p, s.i)));
	expect_violation(s.p, "loop IR: condition of a select has type f32, not bool");
}

Test(loop_verify, refuses_select_branches_of_another_type)
{
	small s = small_new();
	loop_expr *c = lx_cmp(s.p, TESSEL_LT, V(s.p, s.i), I(s.p, 4));
	small_loop(&s, STORE(s.p, s.Y,
		lx_select(s.p, c, F32(s.p, 1), lx_float(s.p, 2, TESSEL_F64), TESSEL_F32),
		V(s.p, s.i)));
	expect_violation(s.p, "loop IR: branches of a select have types f32 and f64 "
		"in a f32 expression");
}

Test(loop_verify, refuses_mixed_float_operands)
{
	small s = small_new();
	loop_expr *x = LOAD(s.p, s.X, V(s.p, s.i));
	small_loop(&s, STORE(s.p, s.Y,
		lx_binary(s.p, TESSEL_ADD, x, lx_float(s.p, 1, TESSEL_F64), TESSEL_F32),
		V(s.p, s.i)));
	expect_violation(s.p, "loop IR: operands of '+' have types f32 and f64 in a f32 expression");
}

Test(loop_verify, refuses_float_operands_in_index_math)
{
	small s = small_new();
	loop_expr *x = LOAD(s.p, s.X, V(s.p, s.i));
	small_loop(&s, STORE(s.p, s.Y, F32(s.p, 0),
		lx_binary(s.p, TESSEL_MUL, V(s.p, s.i), x, TESSEL_I64)));
	expect_violation(s.p, "loop IR: operands of '*' have types i64 and f32 in a i64 expression");
}

Test(loop_verify, refuses_a_comparison_of_a_float_with_an_integer)
{
	small s = small_new();
	loop_expr *x = LOAD(s.p, s.X, V(s.p, s.i));
	small_loop(&s, ls_if(s.p, lx_cmp(s.p, TESSEL_LT, x, V(s.p, s.i)),
		STORE(s.p, s.Y, x, V(s.p, s.i)), NULL));
	expect_violation(s.p, "loop IR: operands of '<' have types f32 and i64 in a bool expression");
}

Test(loop_verify, refuses_a_conjunction_of_integers)
{
	small s = small_new();
	loop_expr *c = lx_binary(s.p, TESSEL_AND, V(s.p, s.i), I(s.p, 1), TESSEL_BOOL);
	small_loop(&s, ls_if(s.p, c, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)), NULL));
	expect_violation(s.p, "loop IR: operands of '&&' have types i64 and i64 in a bool expression");
}

Test(loop_verify, refuses_a_negation_of_an_integer)
{
	small s = small_new();
	loop_expr *c = lx_unary(s.p, TESSEL_NOT, V(s.p, s.i), TESSEL_BOOL);
	small_loop(&s, ls_if(s.p, c, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)), NULL));
	expect_violation(s.p, "loop IR: operand of '!' has type i64 in a bool expression");
}

Test(loop_verify, refuses_a_float_loop_extent)
{
	small s = small_new();
	s.p->body = ls_for(s.p, s.i, I(s.p, 0), F32(s.p, 8), LOOP_SERIAL,
		STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: extent of loop 'i' has type f32, not an integer type");
}

Test(loop_verify, refuses_a_bool_loop_min)
{
	small s = small_new();
	s.p->body = ls_for(s.p, s.i, lx_bool(s.p, false), I(s.p, 8), LOOP_SERIAL,
		STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: min of loop 'i' has type bool, not an integer type");
}

Test(loop_verify, refuses_a_vectorized_loop_of_symbolic_extent)
{
	small s = small_new();
	loop_var *j = loop_var_new(s.p, "j");
	loop_stmt *inner = ls_for(s.p, j, I(s.p, 0), lx_add(s.p, V(s.p, s.i), I(s.p, 1)),
		LOOP_VECTORIZED, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, j)));
	small_loop(&s, inner);
	expect_violation(s.p, "loop IR: vectorized loop 'j' needs a constant positive extent");
}

Test(loop_verify, refuses_a_vectorized_loop_of_no_iterations)
{
	small s = small_new();
	s.p->body = loop(s.p, s.i, 0, 0, LOOP_VECTORIZED,
		STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i)));
	expect_violation(s.p, "loop IR: vectorized loop 'i' needs a constant positive extent");
}

Test(loop_verify, refuses_an_allocated_argument)
{
	small s = small_new();
	small_loop(&s, ls_alloc(s.p, s.Y, STORE(s.p, s.Y, F32(s.p, 0), V(s.p, s.i))));
	expect_violation(s.p, "loop IR: argument 'Y' is allocated by an alloc");
}

Test(loop_verify, refuses_an_allocation_inside_itself)
{
	small s = small_new();
	loop_buffer *T = loop_buffer_new(s.p, "T", TESSEL_F32, 1, SHAPE(8), LOOP_LOCAL);
	small_loop(&s, ls_alloc(s.p, T, ls_alloc(s.p, T,
		STORE(s.p, T, F32(s.p, 0), V(s.p, s.i)))));
	expect_violation(s.p, "loop IR: buffer 'T' is allocated inside its own allocation");
}

Test(loop_verify, accepts_sibling_allocations_of_one_buffer)
{
	small s = small_new();
	loop_buffer *T = loop_buffer_new(s.p, "T", TESSEL_F32, 1, SHAPE(8), LOOP_LOCAL);
	loop_stmt *use = STORE(s.p, T, F32(s.p, 0), V(s.p, s.i));
	small_loop(&s, SEQ(s.p, ls_alloc(s.p, T, use), ls_alloc(s.p, T, use)));
	expect_valid(s.p);
	loop_prog_free(s.p);
}

Test(loop_verify, refuses_an_argument_out_of_position)
{
	small s = small_new();
	small_loop(&s, STORE(s.p, s.Y, LOAD(s.p, s.X, V(s.p, s.i)), V(s.p, s.i)));
	s.Y->arg = 0;
	expect_violation(s.p, "loop IR: argument 'Y' is at position 1 but has arg 0");
}

/* ---- simplification: expressions ------------------------------------------- */

/* A program whose one store, Y[0] = value, sits inside loops io in
 * 0..outer and ii in 0..32: the scope of the expression tests. */
typedef struct scope {
	loop_prog *p;
	loop_buffer *Y, *Z;
	loop_var *io, *ii;
	int64_t outer;
} scope;

static scope scope_new(int64_t outer)
{
	scope s;
	s.p = loop_prog_new("e");
	s.Z = add_arg(s.p, "Z", TESSEL_I64, 1, SHAPE(8), false);
	s.Y = add_arg(s.p, "Y", TESSEL_I64, 1, SHAPE(1), true);
	s.io = loop_var_new(s.p, "io");
	s.ii = loop_var_new(s.p, "ii");
	s.outer = outer;
	return s;
}

static loop_expr *io(scope *s)
{
	return lx_var(s->p, s->io);
}

static loop_expr *ii(scope *s)
{
	return lx_var(s->p, s->ii);
}

/* Return the text of "value" simplified in the scope "s" (malloc'ed);
 * free the program of "s". */
static char *simplified(scope *s, loop_expr *value)
{
	loop_prog *p = s->p;
	if (value->dtype != TESSEL_I64)
		value = lx_cast(p, TESSEL_I64, value);
	p->body = loop(p, s->io, 0, s->outer, LOOP_SERIAL,
		loop(p, s->ii, 0, 32, LOOP_SERIAL, STORE(p, s->Y, value, I(p, 0))));
	expect_valid(p);
	loop_simplify(p);
	expect_valid(p);
	char *text = print_program(p), *at = strstr(text, "Y[0] = ");
	cr_assert_not_null(at, "no store left in:\n%s", text);
	at += strlen("Y[0] = ");
	char *r = strndup(at, strcspn(at, "\n"));
	free(text);
	loop_prog_free(p);
	return r;
}

#define EXPECT_SIMPLIFIED(outer, expr, expected)                              \
	do {                                                                  \
		scope s_ = scope_new(outer);                                  \
		scope *s = &s_;                                               \
		char *got_ = simplified(s, (expr));                           \
		cr_expect_str_eq(got_, expected, "%s: got '%s', expected '%s'", \
			#expr, got_, expected);                               \
		free(got_);                                                   \
	} while (0)

#define P (s->p)

Test(loop_simplify, folds_nested_constants)
{
	EXPECT_SIMPLIFIED(4, lx_add(P, lx_add(P, io(s), I(P, 2)), I(P, 3)), "io + 5");
	EXPECT_SIMPLIFIED(4, lx_mul(P, lx_mul(P, io(s), I(P, 4)), I(P, 2)), "io * 8");
	EXPECT_SIMPLIFIED(4, lx_sub(P, io(s), io(s)), "0");
	EXPECT_SIMPLIFIED(4, lx_sub(P, lx_add(P, io(s), I(P, 3)), lx_add(P, io(s), I(P, 1))), "2");
	EXPECT_SIMPLIFIED(4, lx_mul(P, lx_add(P, io(s), I(P, 1)), I(P, 3)), "io * 3 + 3");
	EXPECT_SIMPLIFIED(4, lx_sub(P, lx_sub(P, I(P, 10), io(s)), I(P, 3)), "7 - io");
	EXPECT_SIMPLIFIED(4, lx_sub(P, lx_unary(P, TESSEL_NEG, io(s), TESSEL_I64), I(P, 1)),
		"-io - 1");
	EXPECT_SIMPLIFIED(4, lx_mul(P, io(s), I(P, -2)), "io * -2");
	EXPECT_SIMPLIFIED(4, lx_sub(P, I(P, 0), lx_mul(P, lx_sub(P, io(s), ii(s)), I(P, 2))),
		"ii * 2 - io * 2");
}

Test(loop_simplify, orders_affine_terms_by_variable)
{
	EXPECT_SIMPLIFIED(4, lx_add(P, ii(s), lx_mul(P, io(s), I(P, 32))), "io * 32 + ii");
	EXPECT_SIMPLIFIED(4, lx_add(P, lx_add(P, I(P, 5), ii(s)), io(s)), "io + ii + 5");
	EXPECT_SIMPLIFIED(4, lx_sub(P, ii(s), io(s)), "ii - io");
	EXPECT_SIMPLIFIED(4, lx_add(P, LOAD(P, s->Z, ii(s)), lx_mul(P, io(s), I(P, 2))),
		"io * 2 + Z[ii]");
	EXPECT_SIMPLIFIED(4, lx_sub(P, LOAD(P, s->Z, ii(s)), LOAD(P, s->Z, ii(s))), "0");
}

Test(loop_simplify, divides_split_indices)
{
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 32)),
		"io");
	EXPECT_SIMPLIFIED(4, lx_mod(P, lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 32)),
		"ii");
	EXPECT_SIMPLIFIED(4, lx_mod(P, lx_mul(P, io(s), I(P, 8)), I(P, 4)), "0");
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_mul(P, io(s), I(P, 8)), I(P, 4)), "io * 2");
	EXPECT_SIMPLIFIED(4, lx_div(P, ii(s), I(P, 32)), "0");
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_add(P, ii(s), I(P, 64)), I(P, 32)), "2");
	EXPECT_SIMPLIFIED(4, lx_mod(P, lx_add(P, ii(s), I(P, 64)), I(P, 32)), "ii");
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_add(P, lx_mul(P, io(s), I(P, 64)),
		lx_add(P, ii(s), I(P, 32))), I(P, 64)), "io");
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 16)),
		"io * 2 + ii / 16");
	EXPECT_SIMPLIFIED(4, lx_mod(P, lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 16)),
		"ii % 16");
	EXPECT_SIMPLIFIED(4, lx_div(P, lx_add(P, lx_mul(P, io(s), I(P, 32)),
		lx_add(P, ii(s), I(P, 5))), I(P, 32)), "io + (ii + 5) / 32");
	EXPECT_SIMPLIFIED(4, lx_mod(P, lx_add(P, lx_mul(P, io(s), I(P, 32)),
		lx_add(P, ii(s), I(P, 5))), I(P, 32)), "(ii + 5) % 32");
}

/* A fused loop split by a factor of its inner extent: the lane (ii % 4,
 * in [0, 4)) cannot carry into a multiple of 4, so it leaves the division
 * and stays beside the remainder, as vectorized accesses need. */
Test(loop_simplify, divides_around_a_lane)
{
#define FUSED(P) lx_add(P, lx_mul(P, io(s), I(P, 4)), lx_mod(P, ii(s), I(P, 4)))
	EXPECT_SIMPLIFIED(64, lx_div(P, FUSED(P), I(P, 32)), "io / 8");
	EXPECT_SIMPLIFIED(64, lx_mod(P, FUSED(P), I(P, 32)), "io % 8 * 4 + ii % 4");
	EXPECT_SIMPLIFIED(64, lx_div(P, lx_add(P, FUSED(P), I(P, 2)), I(P, 32)),
		"(io * 4 + ii % 4 + 2) / 32");
	EXPECT_SIMPLIFIED(64, lx_mod(P, lx_add(P, FUSED(P), I(P, 8)), I(P, 32)),
		"(io + 2) % 8 * 4 + ii % 4");
	EXPECT_SIMPLIFIED(64, lx_div(P, lx_add(P, lx_mul(P, io(s), I(P, 4)), ii(s)),
		I(P, 32)), "(io * 4 + ii) / 32");
#undef FUSED
}

Test(loop_simplify, nested_divisions_and_remainders)
{
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_div(P, io(s), I(P, 4)), I(P, 8)), "io / 32");
	EXPECT_SIMPLIFIED(100, lx_mod(P, lx_mod(P, io(s), I(P, 32)), I(P, 8)), "io % 8");
	EXPECT_SIMPLIFIED(100, lx_mod(P, lx_mod(P, io(s), I(P, 8)), I(P, 32)), "io % 8");
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_mod(P, io(s), I(P, 8)), I(P, 8)), "0");
	EXPECT_SIMPLIFIED(100, lx_add(P, lx_mul(P, lx_div(P, io(s), I(P, 6)), I(P, 6)),
		lx_mod(P, io(s), I(P, 6))), "io");
	EXPECT_SIMPLIFIED(100, lx_div(P, io(s), I(P, 7)), "io / 7");
}

Test(loop_simplify, leaves_unproved_and_signed_divisions)
{
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_sub(P, ii(s), I(P, 16)), I(P, 32)), "(ii - 16) / 32");
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_mul(P, io(s), I(P, 8)), I(P, -4)), "io * 8 / -4");
	EXPECT_SIMPLIFIED(100, lx_mod(P, LOAD(P, s->Z, I(P, 0)), I(P, 4)), "Z[0] % 4");
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_mul(P, LOAD(P, s->Z, I(P, 0)), I(P, 8)), I(P, 4)),
		"Z[0] * 8 / 4");
	EXPECT_SIMPLIFIED(100, lx_div(P, lx_mul(P, io(s), ii(s)), I(P, 4)), "io * ii / 4");
}

Test(loop_simplify, min_max_by_ranges)
{
	EXPECT_SIMPLIFIED(4, lx_min(P, lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 200)),
		"io * 32 + ii");
	EXPECT_SIMPLIFIED(4, lx_max(P, lx_sub(P, ii(s), I(P, 40)), I(P, 0)), "0");
	EXPECT_SIMPLIFIED(4, lx_min(P, lx_add(P, io(s), I(P, 3)), lx_add(P, io(s), I(P, 8))),
		"io + 3");
	EXPECT_SIMPLIFIED(4, lx_max(P, ii(s), io(s)), "max(ii, io)");
	EXPECT_SIMPLIFIED(4, lx_min(P, LOAD(P, s->Z, ii(s)), LOAD(P, s->Z, ii(s))), "Z[ii]");
}

static loop_expr *as_int(scope *s, loop_expr *c)
{
	return lx_select(s->p, c, I(s->p, 1), I(s->p, 0), TESSEL_I64);
}

Test(loop_simplify, comparisons_by_ranges)
{
	EXPECT_SIMPLIFIED(4, as_int(s, lx_cmp(P, TESSEL_LT,
		lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 128))), "1");
	EXPECT_SIMPLIFIED(5, as_int(s, lx_cmp(P, TESSEL_LT,
		lx_add(P, lx_mul(P, io(s), I(P, 32)), ii(s)), I(P, 128))),
		"select(io * 32 + ii < 128, 1, 0)");
	EXPECT_SIMPLIFIED(4, as_int(s, lx_cmp(P, TESSEL_GE, ii(s), I(P, 0))), "1");
	EXPECT_SIMPLIFIED(4, as_int(s, lx_cmp(P, TESSEL_GT, io(s), I(P, 3))), "0");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_cmp(P, TESSEL_LT, lx_add(P, io(s), I(P, 1)),
		I(P, 10))), "select(io < 9, 1, 0)");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_cmp(P, TESSEL_LT,
		lx_add(P, lx_mul(P, io(s), I(P, 4)), ii(s)),
		lx_add(P, lx_mul(P, io(s), I(P, 4)), I(P, 8)))), "select(ii < 8, 1, 0)");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_cmp(P, TESSEL_GT, I(P, 10), io(s))),
		"select(10 > io, 1, 0)");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_cmp(P, TESSEL_EQ, LOAD(P, s->Z, ii(s)),
		LOAD(P, s->Z, ii(s)))), "1");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_cmp(P, TESSEL_LT, LOAD(P, s->Z, ii(s)),
		lx_add(P, LOAD(P, s->Z, ii(s)), I(P, 1)))), "select(Z[ii] < Z[ii] + 1, 1, 0)");
}

/* A comparison with a select, min or max inside is decided when both of
 * its values decide it alike, as a partition's guards need: "x <=
 * min(x + 15, 1023) - 15" holds for every x up to 1008. */
static loop_expr *io16(scope *s)
{
	return lx_mul(s->p, io(s), I(s->p, 16));
}

Test(loop_simplify, comparisons_case_by_case)
{
	EXPECT_SIMPLIFIED(64, as_int(s, lx_cmp(P, TESSEL_LE, io16(s), lx_sub(P, lx_select(P,
		lx_cmp(P, TESSEL_GE, io16(s), I(P, 1008)), I(P, 1023),
		lx_add(P, io16(s), I(P, 15)), TESSEL_I64), I(P, 15)))), "1");
	EXPECT_SIMPLIFIED(64, as_int(s, lx_cmp(P, TESSEL_LE, io16(s), lx_sub(P,
		lx_min(P, lx_add(P, io16(s), I(P, 15)), I(P, 1023)), I(P, 15)))), "1");
	EXPECT_SIMPLIFIED(64, as_int(s, lx_cmp(P, TESSEL_GT, io16(s), lx_select(P,
		lx_cmp(P, TESSEL_LT, ii(s), I(P, 3)), lx_add(P, io16(s), I(P, 1)),
		lx_add(P, io16(s), I(P, 2)), TESSEL_I64))), "0");
	EXPECT_SIMPLIFIED(65, as_int(s, lx_cmp(P, TESSEL_LE, io16(s), lx_sub(P,
		lx_min(P, lx_add(P, io16(s), I(P, 15)), I(P, 1023)), I(P, 15)))),
		"select(io * 16 <= min(io * 16 + 15, 1023) - 15, 1, 0)");
}

Test(loop_simplify, boolean_logic)
{
	EXPECT_SIMPLIFIED(100, as_int(s, lx_unary(P, TESSEL_NOT,
		lx_cmp(P, TESSEL_LT, io(s), I(P, 5)), TESSEL_BOOL)), "select(io >= 5, 1, 0)");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_and(P, lx_cmp(P, TESSEL_LT, ii(s), I(P, 40)),
		lx_cmp(P, TESSEL_LT, io(s), I(P, 5)))), "select(io < 5, 1, 0)");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_binary(P, TESSEL_OR,
		lx_cmp(P, TESSEL_LT, io(s), I(P, 5)),
		lx_cmp(P, TESSEL_GE, ii(s), I(P, 0)), TESSEL_BOOL)), "1");
	EXPECT_SIMPLIFIED(100, as_int(s, lx_binary(P, TESSEL_OR,
		lx_cmp(P, TESSEL_LT, io(s), I(P, 5)),
		lx_cmp(P, TESSEL_LT, ii(s), I(P, 0)), TESSEL_BOOL)), "select(io < 5, 1, 0)");
	EXPECT_SIMPLIFIED(100, lx_select(P, lx_cmp(P, TESSEL_LT, io(s), I(P, 5)),
		ii(s), ii(s), TESSEL_I64), "ii");
}

Test(loop_simplify, leaves_float_and_narrow_integer_math_alone)
{
	EXPECT_SIMPLIFIED(4, lx_cast(P, TESSEL_I64, lx_binary(P, TESSEL_ADD,
		lx_binary(P, TESSEL_ADD, lx_cast(P, TESSEL_F64, io(s)), lx_float(P, 1, TESSEL_F64),
			TESSEL_F64), lx_float(P, 2, TESSEL_F64), TESSEL_F64)),
		"i64(f64(io) + 1.0f64 + 2.0f64)");
	EXPECT_SIMPLIFIED(4, lx_cast(P, TESSEL_I64, lx_binary(P, TESSEL_ADD,
		lx_binary(P, TESSEL_ADD, lx_cast(P, TESSEL_I32, io(s)),
			lx_cast(P, TESSEL_I32, I(P, 1)), TESSEL_I32),
		lx_cast(P, TESSEL_I32, I(P, 2)), TESSEL_I32)),
		"i64(i32(io) + i32(1) + i32(2))");
	EXPECT_SIMPLIFIED(4, lx_cast(P, TESSEL_I64, lx_binary(P, TESSEL_ADD,
		lx_cast(P, TESSEL_F64, lx_add(P, lx_add(P, io(s), I(P, 1)), I(P, 1))),
		lx_float(P, 0.5, TESSEL_F64), TESSEL_F64)), "i64(f64(io + 2) + 0.5f64)");
}

#undef P

/* ---- simplification: programs ---------------------------------------------- */

/* Expect "p" to print "before", and "after" once simplified, twice
 * (simplification is idempotent), valid throughout; free "p". */
static void expect_simplified(loop_prog *p, const char *before, const char *after)
{
	expect_text(p, before);
	expect_valid(p);
	loop_simplify(p);
	expect_text(p, after);
	expect_valid(p);
	loop_simplify(p);
	expect_text(p, after);
	loop_prog_free(p);
}

Test(loop_simplify, keeps_a_guard_that_can_fail)
{
	expect_simplified(build_split(1000, 32), split_text, split_text);
}

Test(loop_simplify, drops_a_guard_that_always_holds)
{
	expect_simplified(build_split(128, 4),
		"kernel scale(A: f32[128]) -> (B: f32[128]) {\n"
		"  for io in 0..4 parallel {\n"
		"    for ii in 0..32 vectorized {\n"
		"      if io * 32 + ii < 128 {\n"
		"        B[io * 32 + ii] = A[io * 32 + ii] * 2.0\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel scale(A: f32[128]) -> (B: f32[128]) {\n"
		"  for io in 0..4 parallel {\n"
		"    for ii in 0..32 vectorized {\n"
		"      B[io * 32 + ii] = A[io * 32 + ii] * 2.0\n"
		"    }\n"
		"  }\n"
		"}\n");
}

/* With io in 0..31, io * 32 + ii is at most 30 * 32 + 31 = 991. */
Test(loop_simplify, drops_a_guard_bounded_by_the_last_outer_iteration)
{
	loop_prog *p = build_split(1000, 31);
	loop_simplify(p);
	expect_text(p,
		"kernel scale(A: f32[1000]) -> (B: f32[1000]) {\n"
		"  for io in 0..31 parallel {\n"
		"    for ii in 0..32 vectorized {\n"
		"      B[io * 32 + ii] = A[io * 32 + ii] * 2.0\n"
		"    }\n"
		"  }\n"
		"}\n");
	loop_prog_free(p);
}

Test(loop_simplify, leaves_canonical_programs_unchanged)
{
	expect_simplified(build_matmul(), matmul_text, matmul_text);
	expect_simplified(build_fused(), fused_text, fused_text);
	expect_simplified(build_staged(), staged_text, staged_text);
	expect_simplified(build_misc(), misc_text, misc_text);
}

Test(loop_simplify, inlines_loops_of_one_iteration)
{
	loop_prog *p = loop_prog_new("one");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, 3), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(4, 3), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j"), *k = loop_var_new(p, "k");
	loop_stmt *store = STORE(p, C, LOAD(p, A, V(p, i), lx_sub(p, V(p, j), I(p, 2))),
		V(p, i), lx_add(p, V(p, j), V(p, k)));
	p->body = loop(p, i, 0, 4, LOOP_SERIAL, loop(p, j, 2, 1, LOOP_SERIAL,
		loop(p, k, 0, 1, LOOP_VECTORIZED, store)));
	expect_simplified(p,
		"kernel one(A: f32[4, 3]) -> (C: f32[4, 3]) {\n"
		"  for i in 0..4 {\n"
		"    for j in 2..3 {\n"
		"      for k in 0..1 vectorized {\n"
		"        C[i, j + k] = A[i, j - 2]\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel one(A: f32[4, 3]) -> (C: f32[4, 3]) {\n"
		"  for i in 0..4 {\n"
		"    C[i, 2] = A[i, 0]\n"
		"  }\n"
		"}\n");
}

Test(loop_simplify, substitutes_symbolic_minima_of_single_iterations)
{
	loop_prog *p = loop_prog_new("sub");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(16), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_stmt *store = STORE(p, C, lx_sub(p, V(p, j), V(p, i)), lx_add(p, V(p, j), I(p, 1)));
	p->body = loop(p, i, 0, 8, LOOP_SERIAL,
		ls_for(p, j, lx_mul(p, V(p, i), I(p, 2)), I(p, 1), LOOP_UNROLLED, store));
	expect_simplified(p,
		"kernel sub() -> (C: i64[16]) {\n"
		"  for i in 0..8 {\n"
		"    for j in i * 2..i * 2 + 1 unrolled {\n"
		"      C[j + 1] = j - i\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel sub() -> (C: i64[16]) {\n"
		"  for i in 0..8 {\n"
		"    C[i * 2 + 1] = i\n"
		"  }\n"
		"}\n");
}

/* A bound loop of one iteration stays (it shapes the launch), and its
 * variable, always the loop's min, is folded into the body. */
Test(loop_simplify, keeps_gpu_loops_of_one_iteration)
{
	loop_prog *p = loop_prog_new("gpu");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(4), true);
	loop_var *b = loop_var_new(p, "b"), *t = loop_var_new(p, "t");
	p->body = loop(p, b, 0, 4, LOOP_BLOCK_X, loop(p, t, 0, 1, LOOP_THREAD_X,
		STORE(p, C, lx_add(p, V(p, b), V(p, t)), lx_add(p, V(p, b), V(p, t)))));
	expect_simplified(p,
		"kernel gpu() -> (C: i64[4]) {\n"
		"  for b in 0..4 blockIdx.x {\n"
		"    for t in 0..1 threadIdx.x {\n"
		"      C[b + t] = b + t\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel gpu() -> (C: i64[4]) {\n"
		"  for b in 0..4 blockIdx.x {\n"
		"    for t in 0..1 threadIdx.x {\n"
		"      C[b] = b\n"
		"    }\n"
		"  }\n"
		"}\n");
}

Test(loop_simplify, removes_loops_that_never_run)
{
	loop_prog *p = loop_prog_new("none");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(4), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	p->body = SEQ(p, loop(p, i, 0, 0, LOOP_SERIAL, STORE(p, C, V(p, i), V(p, i))),
		loop(p, j, 3, -2, LOOP_PARALLEL, STORE(p, C, V(p, j), V(p, j))));
	expect_simplified(p,
		"kernel none() -> (C: i64[4]) {\n"
		"  for i in 0..0 {\n"
		"    C[i] = i\n"
		"  }\n"
		"  for j in 3..1 parallel {\n"
		"    C[j] = j\n"
		"  }\n"
		"}\n",
		"kernel none() -> (C: i64[4]) {\n"
		"}\n");
}

Test(loop_simplify, takes_the_branch_a_condition_decides)
{
	loop_prog *p = loop_prog_new("branch");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(8), true);
	loop_var *i = loop_var_new(p, "i");
	loop_stmt *never = ls_if(p, lx_cmp(p, TESSEL_GE, V(p, i), I(p, 8)),
		STORE(p, C, I(p, 1), V(p, i)), STORE(p, C, I(p, 2), V(p, i)));
	loop_stmt *always = ls_if(p, lx_cmp(p, TESSEL_LT, lx_mod(p, V(p, i), I(p, 4)), I(p, 4)),
		STORE(p, C, I(p, 3), V(p, i)), NULL);
	loop_stmt *dead = ls_if(p, lx_cmp(p, TESSEL_LT, V(p, i), I(p, 0)),
		STORE(p, C, I(p, 4), V(p, i)), NULL);
	p->body = loop(p, i, 0, 8, LOOP_SERIAL, SEQ(p, never, always, dead));
	expect_simplified(p,
		"kernel branch() -> (C: i64[8]) {\n"
		"  for i in 0..8 {\n"
		"    if i >= 8 {\n"
		"      C[i] = 1\n"
		"    } else {\n"
		"      C[i] = 2\n"
		"    }\n"
		"    if i % 4 < 4 {\n"
		"      C[i] = 3\n"
		"    }\n"
		"    if i < 0 {\n"
		"      C[i] = 4\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel branch() -> (C: i64[8]) {\n"
		"  for i in 0..8 {\n"
		"    C[i] = 2\n"
		"    C[i] = 3\n"
		"  }\n"
		"}\n");
}

/* Inside a branch on `t % 4 == 3`, the atom `t % 4` is 3 and folds; in
 * the else branch it is at most 2, which decides the inner guard. */
Test(loop_simplify, knows_the_atoms_a_branch_compares)
{
	loop_prog *p = loop_prog_new("atoms");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(8), true);
	loop_var *t = loop_var_new(p, "t");
	loop_expr *m = lx_mod(p, V(p, t), I(p, 4));
	loop_stmt *inner = ls_if(p, lx_cmp(p, TESSEL_LE, m, I(p, 2)),
		STORE(p, C, I(p, 1), V(p, t)), NULL);
	loop_stmt *branches = ls_if(p, lx_cmp(p, TESSEL_EQ, m, I(p, 3)),
		STORE(p, C, lx_div(p, V(p, t), I(p, 4)), lx_mul(p, m, I(p, 2))), inner);
	p->body = loop(p, t, 0, 8, LOOP_SERIAL, branches);
	expect_simplified(p,
		"kernel atoms() -> (C: i64[8]) {\n"
		"  for t in 0..8 {\n"
		"    if t % 4 == 3 {\n"
		"      C[t % 4 * 2] = t / 4\n"
		"    } else {\n"
		"      if t % 4 <= 2 {\n"
		"        C[t] = 1\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel atoms() -> (C: i64[8]) {\n"
		"  for t in 0..8 {\n"
		"    if t % 4 == 3 {\n"
		"      C[6] = t / 4\n"
		"    } else {\n"
		"      C[t] = 1\n"
		"    }\n"
		"  }\n"
		"}\n");
}

Test(loop_simplify, removes_empty_statements_and_flattens_sequences)
{
	loop_prog *p = loop_prog_new("flat");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(8), true);
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_I64, 1, SHAPE(8), LOOP_LOCAL);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_stmt *empty_if = ls_if(p, lx_cmp(p, TESSEL_LT, V(p, i), I(p, 3)),
		ls_seq(p, 0, NULL), NULL);
	loop_stmt *else_only = ls_if(p, lx_cmp(p, TESSEL_LT, V(p, i), I(p, 3)),
		ls_seq(p, 0, NULL), STORE(p, C, I(p, 1), V(p, i)));
	loop_stmt *empty_loop = loop(p, j, 0, 4, LOOP_SERIAL, SEQ(p, ls_seq(p, 0, NULL)));
	loop_stmt *empty_alloc = ls_alloc(p, T, ls_seq(p, 0, NULL));
	loop_stmt *nested = SEQ(p, SEQ(p, STORE(p, C, I(p, 5), V(p, i))),
		SEQ(p, ls_seq(p, 0, NULL), STORE(p, C, I(p, 6), V(p, i))));
	p->body = loop(p, i, 0, 8, LOOP_SERIAL,
		SEQ(p, empty_if, else_only, empty_loop, empty_alloc, nested));
	loop_simplify(p);
	expect_text(p,
		"kernel flat() -> (C: i64[8]) {\n"
		"  for i in 0..8 {\n"
		"    if i >= 3 {\n"
		"      C[i] = 1\n"
		"    }\n"
		"    C[i] = 5\n"
		"    C[i] = 6\n"
		"  }\n"
		"}\n");
	loop_stmt *body = p->body->u.for_.body;
	cr_expect_eq(body->kind, LS_SEQ);
	cr_expect_eq(body->u.seq.n, 3);
	for (int k = 0; k < body->u.seq.n; k++)
		cr_expect_neq(body->u.seq.items[k]->kind, LS_SEQ);
	expect_valid(p);
	loop_prog_free(p);
}

Test(loop_simplify, tightens_loops_to_their_guards)
{
	loop_prog *p = loop_prog_new("tight");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(16), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *c = lx_and(p, lx_and(p, lx_cmp(p, TESSEL_LT, V(p, i), I(p, 10)),
		lx_cmp(p, TESSEL_LE, I(p, 2), V(p, i))),
		lx_cmp(p, TESSEL_NE, lx_mod(p, V(p, i), I(p, 3)), I(p, 0)));
	loop_stmt *first = loop(p, i, 0, 16, LOOP_VECTORIZED,
		ls_if(p, c, STORE(p, C, V(p, i), V(p, i)), NULL));
	loop_stmt *second = loop(p, j, 0, 16, LOOP_SERIAL,
		ls_if(p, lx_cmp(p, TESSEL_GT, lx_add(p, V(p, j), I(p, 2)), I(p, 16)),
			STORE(p, C, V(p, j), V(p, j)), NULL));
	p->body = SEQ(p, first, second);
	expect_simplified(p,
		"kernel tight() -> (C: i64[16]) {\n"
		"  for i in 0..16 vectorized {\n"
		"    if i < 10 && 2 <= i && i % 3 != 0 {\n"
		"      C[i] = i\n"
		"    }\n"
		"  }\n"
		"  for j in 0..16 {\n"
		"    if j + 2 > 16 {\n"
		"      C[j] = j\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel tight() -> (C: i64[16]) {\n"
		"  for i in 2..10 vectorized {\n"
		"    if i % 3 != 0 {\n"
		"      C[i] = i\n"
		"    }\n"
		"  }\n"
		"  C[15] = 15\n"
		"}\n");
}

Test(loop_simplify, tightens_to_a_single_iteration_and_inlines_it)
{
	loop_prog *p = loop_prog_new("single");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 1, SHAPE(16), true);
	loop_var *i = loop_var_new(p, "i");
	p->body = loop(p, i, 0, 16, LOOP_SERIAL,
		ls_if(p, lx_cmp(p, TESSEL_EQ, V(p, i), I(p, 5)),
			STORE(p, C, lx_mul(p, V(p, i), I(p, 2)), V(p, i)), NULL));
	loop_simplify(p);
	expect_text(p,
		"kernel single() -> (C: i64[16]) {\n"
		"  C[5] = 10\n"
		"}\n");
	expect_valid(p);
	loop_prog_free(p);
}

/* What compute_at leaves: a producer's region starts at io * 4, its
 * buffer is indexed relative to it, and its guards compare with the
 * region's ends. */
Test(loop_simplify, cancels_region_origins)
{
	loop_prog *p = loop_prog_new("at");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(16), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(16), true);
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1, SHAPE(4), LOOP_LOCAL);
	loop_var *io = loop_var_new(p, "io"), *t = loop_var_new(p, "t"), *ii = loop_var_new(p, "ii");
	loop_expr *origin = lx_mul(p, V(p, io), I(p, 4));
	loop_expr *last = lx_min(p, lx_add(p, origin, I(p, 3)), I(p, 15));
	loop_expr *x = lx_add(p, origin, V(p, t));
	loop_expr *guard = lx_and(p, lx_cmp(p, TESSEL_LE, x, last),
		lx_cmp(p, TESSEL_GE, x, I(p, 0)));
	loop_stmt *produce = loop(p, t, 0, 4, LOOP_SERIAL, ls_if(p, guard,
		STORE(p, T, mul_v(p, LOAD(p, A, x), F32(p, 2)), lx_sub(p, x, origin)), NULL));
	loop_expr *y = lx_add(p, lx_mul(p, V(p, io), I(p, 4)), V(p, ii));
	loop_stmt *consume = loop(p, ii, 0, 4, LOOP_SERIAL,
		STORE(p, B, LOAD(p, T, lx_sub(p, y, origin)), y));
	p->body = loop(p, io, 0, 4, LOOP_PARALLEL, ls_alloc(p, T, SEQ(p, produce, consume)));
	expect_simplified(p,
		"kernel at(A: f32[16]) -> (B: f32[16]) {\n"
		"  for io in 0..4 parallel {\n"
		"    alloc T: f32[4] local {\n"
		"      for t in 0..4 {\n"
		"        if io * 4 + t <= min(io * 4 + 3, 15) && io * 4 + t >= 0 {\n"
		"          T[io * 4 + t - io * 4] = A[io * 4 + t] * 2.0\n"
		"        }\n"
		"      }\n"
		"      for ii in 0..4 {\n"
		"        B[io * 4 + ii] = T[io * 4 + ii - io * 4]\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel at(A: f32[16]) -> (B: f32[16]) {\n"
		"  for io in 0..4 parallel {\n"
		"    alloc T: f32[4] local {\n"
		"      for t in 0..4 {\n"
		"        T[t] = A[io * 4 + t] * 2.0\n"
		"      }\n"
		"      for ii in 0..4 {\n"
		"        B[io * 4 + ii] = T[ii]\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n");
}

/* j spans 0..14 (i + (8 - i) - 1 over i in 0..7), so "j < 8" stays; inside
 * the if, j is below 8 and j % 8 is j. */
Test(loop_simplify, uses_ranges_of_symbolic_loop_bounds)
{
	loop_prog *p = loop_prog_new("tri");
	loop_buffer *C = add_arg(p, "C", TESSEL_I64, 2, SHAPE(8, 8), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *inside = lx_cmp(p, TESSEL_LT, V(p, j), I(p, 8));
	p->body = loop(p, i, 0, 8, LOOP_SERIAL,
		ls_for(p, j, V(p, i), lx_sub(p, I(p, 8), V(p, i)), LOOP_SERIAL,
			ls_if(p, inside, STORE(p, C, lx_mod(p, V(p, j), I(p, 8)), V(p, i), V(p, j)),
				NULL)));
	expect_simplified(p,
		"kernel tri() -> (C: i64[8, 8]) {\n"
		"  for i in 0..8 {\n"
		"    for j in i..i + (8 - i) {\n"
		"      if j < 8 {\n"
		"        C[i, j] = j % 8\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n",
		"kernel tri() -> (C: i64[8, 8]) {\n"
		"  for i in 0..8 {\n"
		"    for j in i..i + (8 - i) {\n"
		"      if j < 8 {\n"
		"        C[i, j] = j\n"
		"      }\n"
		"    }\n"
		"  }\n"
		"}\n");
}

/* ---- simplification preserves meaning: random programs ---------------------- */

typedef struct rng {
	uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static int rng_below(rng *r, int n)
{
	return (int)(rng_next(r) % (uint64_t)n);
}

static int64_t rng_between(rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

#define OUT 6   /* extent of every dimension of the outputs */

/* The state of one random program under construction. */
typedef struct gen {
	rng r;
	loop_prog *p;
	loop_var *scope[4];
	int depth;         /* loops around the statement being made */
	int nloops, nallocs;
	loop_buffer *A, *I, *O, *P;
	loop_buffer *T;    /* the innermost allocated buffer, or NULL */
	bool big;          /* draw constants and loop minima near the limits */
	bool cpu;          /* no loops bound to GPU indices */
} gen;

static loop_expr *gen_int(gen *g, int depth);
static loop_stmt *gen_block(gen *g, int level);

/* Return a constant near the limits of i64, where rewrites that ignore
 * overflow would change results. */
static int64_t big_constant(gen *g)
{
	static const int64_t k[] = {
		INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, INT64_MAX / 2 + 1,
		INT64_MIN / 2, (int64_t)1 << 62, -((int64_t)1 << 62), (int64_t)1 << 32,
		-((int64_t)1 << 32) - 1, INT64_MAX / 31
	};
	return k[rng_below(&g->r, (int)(sizeof(k) / sizeof(k[0])))];
}

static loop_expr *gen_leaf(gen *g)
{
	if (g->big && rng_below(&g->r, 4) == 0)
		return lx_int(g->p, big_constant(g));
	if (g->depth && rng_below(&g->r, 3))
		return lx_var(g->p, g->scope[rng_below(&g->r, g->depth)]);
	return lx_int(g->p, rng_between(&g->r, -5, 12));
}

static loop_expr *in_range(gen *g, loop_expr *e, int64_t n)
{
	return lx_mod(g->p, e, lx_int(g->p, n));
}

static int64_t gen_divisor(gen *g)
{
	static const int64_t d[] = { 1, 2, 3, 4, 5, 8, 16, 32, -1, -2, -3, -4 };
	return d[rng_below(&g->r, 12)];
}

static loop_expr *gen_cond(gen *g, int depth)
{
	static const tessel_binary cmp[] = {
		TESSEL_LT, TESSEL_LE, TESSEL_GT, TESSEL_GE, TESSEL_EQ, TESSEL_NE
	};
	loop_prog *p = g->p;
	if (depth <= 0 || rng_below(&g->r, 3))
		return lx_cmp(p, cmp[rng_below(&g->r, 6)], gen_int(g, 2), gen_int(g, 2));
	switch (rng_below(&g->r, 4)) {
	case 0: return lx_and(p, gen_cond(g, depth - 1), gen_cond(g, depth - 1));
	case 1: return lx_binary(p, TESSEL_OR, gen_cond(g, depth - 1), gen_cond(g, depth - 1),
		TESSEL_BOOL);
	case 2: return lx_unary(p, TESSEL_NOT, gen_cond(g, depth - 1), TESSEL_BOOL);
	default: return lx_bool(p, rng_below(&g->r, 2));
	}
}

static loop_expr *gen_int(gen *g, int depth)
{
	loop_prog *p = g->p;
	if (depth <= 0 || rng_below(&g->r, 5) == 0)
		return gen_leaf(g);
	int d = depth - 1;
	switch (rng_below(&g->r, 13)) {
	case 0:
	case 1: return lx_add(p, gen_int(g, d), gen_int(g, d));
	case 2: return lx_sub(p, gen_int(g, d), gen_int(g, d));
	case 3: return lx_mul(p, gen_int(g, d), lx_int(p, rng_between(&g->r, -4, 33)));
	case 4: return lx_mul(p, gen_leaf(g), gen_int(g, d));
	case 5: return lx_div(p, gen_int(g, d), lx_int(p, gen_divisor(g)));
	case 6: return lx_mod(p, gen_int(g, d), lx_int(p, gen_divisor(g)));
	case 7: return lx_min(p, gen_int(g, d), gen_int(g, d));
	case 8: return lx_max(p, gen_int(g, d), gen_int(g, d));
	case 9: return lx_select(p, gen_cond(g, 1), gen_int(g, d), gen_int(g, d), TESSEL_I64);
	case 10: return lx_unary(p, TESSEL_NEG, gen_int(g, d), TESSEL_I64);
	case 11: return lx_add(p, lx_mul(p, lx_div(p, gen_leaf(g), lx_int(p, 4)), lx_int(p, 4)),
		lx_mod(p, gen_leaf(g), lx_int(p, 4)));
	default: {
		loop_expr *at = in_range(g, gen_int(g, d), 16);
		return lx_load(p, g->I, 1, &at);
	}
	}
}

/* O[...] = f64(e) + A[...], P[k] = P[k] * 31 + e (a running hash of
 * every value stored), or a store to the allocated buffer. */
static loop_stmt *gen_store(gen *g)
{
	loop_prog *p = g->p;
	int what = rng_below(&g->r, g->T ? 3 : 2);
	if (what == 0) {
		loop_expr *idx[3];
		for (int d = 0; d < 3; d++)
			idx[d] = in_range(g, gen_int(g, 2), OUT);
		loop_expr *at = in_range(g, gen_int(g, 2), 16);
		loop_expr *v = lx_binary(p, TESSEL_ADD, lx_cast(p, TESSEL_F64, gen_int(g, 4)),
			lx_load(p, g->A, 1, &at), TESSEL_F64);
		return ls_store(p, g->O, 3, idx, v, "O");
	}
	loop_buffer *b = what == 1 ? g->P : g->T;
	loop_expr *slot = in_range(g, gen_int(g, 2), OUT);
	loop_expr *v = gen_int(g, 4);
	if (g->T && rng_below(&g->r, 2)) {
		loop_expr *at = in_range(g, gen_int(g, 1), OUT);
		v = lx_add(p, v, lx_load(p, g->T, 1, &at));
	}
	loop_expr *acc = lx_add(p, lx_mul(p, lx_load(p, b, 1, &slot), lx_int(p, 31)), v);
	return ls_store(p, b, 1, &slot, acc, b->name);
}

static loop_kind gen_kind(gen *g, bool constant_positive)
{
	static const loop_kind kinds[] = {
		LOOP_SERIAL, LOOP_SERIAL, LOOP_SERIAL, LOOP_PARALLEL, LOOP_UNROLLED,
		LOOP_VECTORIZED, LOOP_THREAD_X, LOOP_VTHREAD
	};
	loop_kind k = kinds[rng_below(&g->r, 8)];
	if (g->cpu && (k == LOOP_THREAD_X || k == LOOP_VTHREAD))
		k = LOOP_UNROLLED;
	return k == LOOP_VECTORIZED && !constant_positive ? LOOP_SERIAL : k;
}

/* A loop over a new variable with constant or symbolic bounds; its body
 * is a block, or a guard comparing the variable with a constant. */
static loop_stmt *gen_loop(gen *g, int level)
{
	loop_prog *p = g->p;
	char name[16];
	snprintf(name, sizeof(name), "v%d", g->nloops++);
	loop_var *v = loop_var_new(p, name);
	loop_expr *min = lx_int(p, rng_between(&g->r, -2, 3));
	if (g->big && rng_below(&g->r, 3) == 0)
		min = lx_int(p, rng_below(&g->r, 2) ? INT64_MAX - 8 : INT64_MIN + 1 + rng_below(&g->r, 3));
	else if (!g->big && g->depth && rng_below(&g->r, 4) == 0)
		min = lx_add(p, gen_leaf(g), lx_int(p, rng_between(&g->r, -1, 2)));
	loop_expr *extent = lx_int(p, rng_between(&g->r, 0, 5));
	if (g->depth && rng_below(&g->r, 5) == 0)
		extent = lx_add(p, in_range(g, gen_leaf(g), 3), lx_int(p, rng_between(&g->r, -1, 2)));
	loop_kind kind = gen_kind(g, extent->kind == LX_INT && extent->u.ival > 0);
	g->scope[g->depth++] = v;
	loop_stmt *body;
	if (rng_below(&g->r, 4) == 0) {
		static const tessel_binary cmp[] = {
			TESSEL_LT, TESSEL_LE, TESSEL_GT, TESSEL_GE, TESSEL_EQ
		};
		loop_expr *c = lx_cmp(p, cmp[rng_below(&g->r, 5)], lx_var(p, v),
			lx_int(p, rng_between(&g->r, -1, 6)));
		if (rng_below(&g->r, 2))
			c = lx_and(p, c, gen_cond(g, 1));
		body = ls_if(p, c, gen_block(g, level + 1), NULL);
	} else {
		body = gen_block(g, level + 1);
	}
	g->depth--;
	return ls_for(p, v, min, extent, kind, body);
}

/* alloc T { T[..] = ..; block; P[..] = P[..] * 31 + T[..] } */
static loop_stmt *gen_alloc(gen *g, int level)
{
	loop_prog *p = g->p;
	char name[16];
	snprintf(name, sizeof(name), "T%d", g->nallocs++);
	loop_buffer *saved = g->T;
	g->T = loop_buffer_new(p, name, TESSEL_I64, 1, SHAPE(OUT), LOOP_LOCAL);
	loop_stmt *seq = ls_seq(p, 0, NULL);
	loop_expr *slot = in_range(g, gen_int(g, 2), OUT);
	ls_seq_append(p, seq, ls_store(p, g->T, 1, &slot, gen_int(g, 3), name));
	ls_seq_append(p, seq, gen_block(g, level + 1));
	loop_expr *at = in_range(g, gen_int(g, 2), OUT), *pslot = in_range(g, gen_int(g, 1), OUT);
	loop_expr *acc = lx_add(p, lx_mul(p, lx_load(p, g->P, 1, &pslot), lx_int(p, 31)),
		lx_load(p, g->T, 1, &at));
	ls_seq_append(p, seq, ls_store(p, g->P, 1, &pslot, acc, "P"));
	loop_stmt *s = ls_alloc(p, g->T, seq);
	g->T = saved;
	return s;
}

static loop_stmt *gen_stmt(gen *g, int level)
{
	loop_prog *p = g->p;
	int choice = rng_below(&g->r, 10);
	if (choice < 3 && g->depth < 3 && level < 6)
		return gen_loop(g, level);
	if (choice == 3 && level < 6) {
		loop_stmt *then_ = gen_block(g, level + 1);
		loop_stmt *else_ = rng_below(&g->r, 2) ? gen_block(g, level + 1) : NULL;
		return ls_if(p, gen_cond(g, 2), then_, else_);
	}
	if (choice == 4 && level < 6)
		return gen_block(g, level + 1);
	if (choice == 5 && level < 4)
		return gen_alloc(g, level);
	return gen_store(g);
}

static loop_stmt *gen_block(gen *g, int level)
{
	loop_stmt *seq = ls_seq(g->p, 0, NULL);
	int n = rng_below(&g->r, 4);
	for (int i = 0; i < n; i++)
		ls_seq_append(g->p, seq, gen_stmt(g, level));
	return seq;
}

/* Return the random program of "seed", with constants near the limits
 * of i64 when "big", without GPU loops when "cpu". */
static loop_prog *gen_program_for(uint64_t seed, bool big, bool cpu)
{
	gen g = { .r = { seed * 0x9e3779b97f4a7c15ull + 1 }, .big = big, .cpu = cpu };
	g.p = loop_prog_new("random");
	g.A = add_arg(g.p, "A", TESSEL_F64, 1, SHAPE(16), false);
	g.I = add_arg(g.p, "I", TESSEL_I64, 1, SHAPE(16), false);
	g.O = add_arg(g.p, "O", TESSEL_F64, 3, SHAPE(OUT, OUT, OUT), true);
	g.P = add_arg(g.p, "P", TESSEL_I64, 1, SHAPE(OUT), true);
	loop_stmt *body = ls_seq(g.p, 0, NULL);
	for (int i = 0; i < 2; i++)
		ls_seq_append(g.p, body, gen_loop(&g, 0));
	ls_seq_append(g.p, body, gen_stmt(&g, 0));
	g.p->body = body;
	return g.p;
}

static loop_prog *gen_program(uint64_t seed, bool big)
{
	return gen_program_for(seed, big, false);
}

/* The arguments of a random program: inputs from "seed", outputs set to
 * fixed values. */
typedef struct run_args {
	tessel_tensor *t[4];
} run_args;

static void args_init(run_args *a, uint64_t seed)
{
	a->t[0] = tessel_tensor_new(TESSEL_F64, 1, SHAPE(16), NULL, 0);
	a->t[1] = tessel_tensor_new(TESSEL_I64, 1, SHAPE(16), NULL, 0);
	a->t[2] = tessel_tensor_new(TESSEL_F64, 3, SHAPE(OUT, OUT, OUT), NULL, 0);
	a->t[3] = tessel_tensor_new(TESSEL_I64, 1, SHAPE(OUT), NULL, 0);
	tessel_tensor_fill_random(a->t[0], seed);
	tessel_tensor_fill_random(a->t[1], seed + 1);
	for (int64_t i = 0; i < OUT * OUT * OUT; i++)
		tessel_tensor_set(a->t[2], i, 0.25);
	for (int64_t i = 0; i < OUT; i++)
		tessel_tensor_set_i64(a->t[3], i, 7);
}

static void args_fini(run_args *a)
{
	for (int i = 0; i < 4; i++)
		tessel_tensor_free(a->t[i]);
}

static bool same_outputs(const run_args *x, const run_args *y)
{
	return memcmp(x->t[2]->data, y->t[2]->data, sizeof(double) * OUT * OUT * OUT) == 0 &&
	       memcmp(x->t[3]->data, y->t[3]->data, sizeof(int64_t) * OUT) == 0;
}

typedef enum verdict { SAME, CHANGED, SKIPPED } verdict;

/* Check the random program of "seed" (see gen_program for "big"): valid
 * before and after, the same outputs bit for bit, idempotent.  A program
 * whose evaluation fails (INT64_MIN / -1) is skipped; what failed is
 * logged. */
static verdict check_random_program(uint64_t seed, bool big)
{
	tessel_ctx *ctx = tessel_ctx_new();
	loop_prog *p = gen_program(seed, big);
	char *before = loop_prog_print(p);
	run_args x, y;
	args_init(&x, seed);
	args_init(&y, seed);
	const char *failure = NULL;
	bool skipped = false;
	if (loop_verify(ctx, p))
		failure = "the generated program is invalid";
	else if (loop_eval(ctx, p, x.t))
		skipped = true;
	loop_simplify(p);
	char *after = loop_prog_print(p);
	if (!failure && loop_verify(ctx, p))
		failure = "the simplified program is invalid";
	else if (!failure && !skipped && loop_eval(ctx, p, y.t))
		failure = "the simplified program fails";
	else if (!failure && !skipped && !same_outputs(&x, &y))
		failure = "the outputs differ";
	loop_simplify(p);
	char *again = loop_prog_print(p);
	if (!failure && strcmp(after, again) != 0)
		failure = "simplifying twice changes the program";
	if (failure)
		cr_log_error("seed %llu%s: %s (%s)\nbefore:\n%s\nafter:\n%s\nagain:\n%s",
			(unsigned long long)seed, big ? " (big)" : "", failure,
			tessel_ctx_error(ctx)->message, before, after, again);
	free(before);
	free(after);
	free(again);
	args_fini(&x);
	args_fini(&y);
	loop_prog_free(p);
	tessel_ctx_free(ctx);
	return failure ? CHANGED : skipped ? SKIPPED : SAME;
}

/* Check "count" random programs from seed 1; expect none to change and
 * at most "max_skipped" to be skipped. */
static void check_random_programs(int count, bool big, int max_skipped)
{
	int changed = 0, skipped = 0;
	for (int seed = 1; seed <= count; seed++) {
		verdict v = check_random_program((uint64_t)seed, big);
		changed += v == CHANGED;
		skipped += v == SKIPPED;
	}
	cr_expect_eq(changed, 0, "%d of %d random programs changed", changed, count);
	cr_expect_leq(skipped, max_skipped, "%d of %d random programs skipped", skipped, count);
}

Test(loop_simplify, random_programs_keep_their_meaning)
{
	check_random_programs(600, false, 0);
}

Test(loop_simplify, random_programs_near_the_limits_keep_their_meaning)
{
	check_random_programs(400, true, 40);
}

/* The random programs must exercise the simplifier: most of them change. */
Test(loop_simplify, random_programs_are_simplified)
{
	int changed = 0;
	for (uint64_t seed = 1; seed <= 100; seed++) {
		loop_prog *p = gen_program(seed, false);
		char *before = loop_prog_print(p);
		loop_simplify(p);
		char *after = loop_prog_print(p);
		changed += strcmp(before, after) != 0;
		free(before);
		free(after);
		loop_prog_free(p);
	}
	cr_expect_geq(changed, 80, "only %d of 100 random programs changed", changed);
}

/* ---- the CPU printer's passes preserve meaning: random programs ---------- */

/* Promote accumulators and pin loads (ir/loop_promote.c,
 * ir/loop_pin_loads.c) in copies of random CPU programs: each copy stays
 * valid and computes the same outputs bit for bit.  Enough of them must
 * change for the check to mean something. */
Test(loop_promote, random_programs_keep_their_meaning)
{
	int changed = 0, failed = 0, count = 600;
	for (uint64_t seed = 1; seed <= (uint64_t)count; seed++) {
		tessel_ctx *ctx = tessel_ctx_new();
		loop_prog *p = gen_program_for(seed, false, true);
		run_args x, y;
		args_init(&x, seed);
		args_init(&y, seed);
		cr_assert_eq(loop_verify(ctx, p), 0, "seed %llu: invalid program",
			(unsigned long long)seed);
		if (loop_eval(ctx, p, x.t) == 0) {
			loop_prog *q = loop_prog_clone(p);
			cr_assert(q);
			int n = loop_promote_accumulators(q, 512) + loop_pin_loads(q, 32, 16);
			loop_simplify(q);
			const char *failure = loop_verify(ctx, q) ? "the result is invalid" :
				loop_eval(ctx, q, y.t) ? "the result fails" :
				!same_outputs(&x, &y) ? "the outputs differ" : NULL;
			if (failure) {
				char *before = loop_prog_print(p), *after = loop_prog_print(q);
				cr_log_error("seed %llu: %s (%s)\nbefore:\n%s\nafter:\n%s",
					(unsigned long long)seed, failure,
					tessel_ctx_error(ctx)->message, before, after);
				free(before);
				free(after);
				failed++;
			}
			changed += n > 0;
			loop_prog_free(q);
		}
		args_fini(&x);
		args_fini(&y);
		loop_prog_free(p);
		tessel_ctx_free(ctx);
	}
	cr_expect_eq(failed, 0, "%d of %d random programs changed meaning", failed, count);
	cr_expect_geq(changed, 25, "only %d of %d random programs promoted", changed, count);
}
