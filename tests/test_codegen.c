/* Tests of the C printer: loop programs built by hand are printed,
 * compiled with the system compiler, loaded, run on seeded random
 * arguments and compared element by element with the loop-program
 * evaluator (ir/loop_eval.c, float64) within a tolerance per dtype; the
 * printed text is pinned for two small programs.  CG_DUMP=1 in the
 * environment writes every compiled kernel's source to stderr. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/c_printer.h"
#include "codegen/code_stats.h"
#include "codegen/compile.h"
#include "codegen/cpu_kernel.h"
#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "ir/te_impl.h"
#include "runtime/module.h"
#include "runtime/threadpool.h"
#include "runtime/workspace.h"
#include "schedule/random.h"
#include "schedule/state.h"
#include "schedule/trace.h"
#include "tessel/kernel.h"
#include "tessel/ops.h"
#include "tessel/te.h"
#include "tessel/tensor.h"
#include "tests/support.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define MAX_ARGS 16

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* ---- building programs ------------------------------------------------------ */

/* Add the argument "name" of "p" (an output when "output"). */
static loop_buffer *add_arg(loop_prog *p, const char *name, tessel_dtype dt,
	int ndim, const int64_t *shape, bool output)
{
	loop_buffer *b = loop_buffer_new(p, name, dt, ndim, shape, LOOP_GLOBAL);
	b->arg = p->nargs;
	b->is_output = output;
	te_push(&p->arena, (void ***)&p->args, &p->nargs, b);
	return b;
}

/* Return the load of "b" at the b->ndim indices that follow. */
static loop_expr *load(loop_prog *p, loop_buffer *b, ...)
{
	loop_expr *index[TESSEL_MAX_DIMS];
	va_list ap;
	va_start(ap, b);
	for (int d = 0; d < b->ndim; d++)
		index[d] = va_arg(ap, loop_expr *);
	va_end(ap);
	return lx_load(p, b, b->ndim, index);
}

/* Return the store of "value" into "b" at the b->ndim indices that follow. */
static loop_stmt *store(loop_prog *p, loop_buffer *b, loop_expr *value, ...)
{
	loop_expr *index[TESSEL_MAX_DIMS];
	va_list ap;
	va_start(ap, value);
	for (int d = 0; d < b->ndim; d++)
		index[d] = va_arg(ap, loop_expr *);
	va_end(ap);
	return ls_store(p, b, b->ndim, index, value, b->name);
}

/* Return the loop of "kind" over "v" in [0, "extent"). */
static loop_stmt *loop(loop_prog *p, loop_var *v, int64_t extent, loop_kind kind,
	loop_stmt *body)
{
	return ls_for(p, v, lx_int(p, 0), lx_int(p, extent), kind, body);
}

/* Return "a op b" in the dtype of "a" (or of "b" when "a" is an integer
 * literal). */
static loop_expr *op2(loop_prog *p, tessel_binary op, loop_expr *a, loop_expr *b)
{
	tessel_dtype dt = a->kind == LX_INT ? b->dtype : a->dtype;
	return lx_binary(p, op, a, b, dt);
}

/* Return "op a" in the dtype of "a". */
static loop_expr *op1(loop_prog *p, tessel_unary op, loop_expr *a)
{
	return lx_unary(p, op, a, a->dtype);
}

/* Return the f32 literal "v". */
static loop_expr *f32(loop_prog *p, double v)
{
	return lx_float(p, v, TESSEL_F32);
}

/* Return a use of "v". */
static loop_expr *var(loop_prog *p, loop_var *v)
{
	return lx_var(p, v);
}

/* Return the sequence of the "n" statements that follow. */
static loop_stmt *seq(loop_prog *p, int n, ...)
{
	loop_stmt *s = ls_seq(p, 0, NULL);
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		ls_seq_append(p, s, va_arg(ap, loop_stmt *));
	va_end(ap);
	return s;
}

/* ---- printing, compiling, running ------------------------------------------ */

/* A compiled kernel and the module holding it. */
typedef struct kernel {
	char *source;
	rt_module *module;
	tessel_kernel_fn fn;
} kernel;

/* Print "p" for "vector_bytes" or fail the test; the caller frees. */
static char *print_or_fail(const loop_prog *p, int vector_bytes)
{
	tessel_ctx *ctx = tessel_ctx_new();
	cg_target t = { CG_DIALECT_C, vector_bytes, 0 };
	char *src = cg_print_c(p, &t, ctx);
	if (!src)
		tessel_ctx_print_error(ctx, stderr);
	cr_assert(src, "printing %s", p->name);
	tessel_ctx_free(ctx);
	return src;
}

/* A temporary compile cache (mkdtemp's template) and a shared object in it. */
typedef struct compiled {
	char dir[32];
	char so[4096];
} compiled;

/* Compile the kernel source "source" of "p" with "flags" (NULL: the
 * defaults) into a fresh temporary cache "c"; the caller removes c->dir. */
static void compile_in_temp(const loop_prog *p, const char *source,
	const char *const *flags, compiled *c)
{
	static const char *const extra[] = { "-lm", NULL };
	char err[4096];
	snprintf(c->dir, sizeof(c->dir), "/tmp/tessel-codegen-XXXXXX");
	cr_assert(mkdtemp(c->dir), "mkdtemp");
	cg_compile_opts opts = { .cache_dir = c->dir, .flags = flags, .extra_flags = extra };
	int r = cg_compile_c(&opts, source, c->so, sizeof(c->so), err, sizeof(err));
	if (r != CG_COMPILE_OK)
		fprintf(stderr, "%s\n%s\n", err, source);
	cr_assert_eq(r, CG_COMPILE_OK, "compiling %s: %s", p->name, err);
}

/* Print "p" for "vector_bytes", compile it with "flags" (NULL: the
 * defaults) in a temporary cache and load it into "k". */
static void build_with(const loop_prog *p, int vector_bytes,
	const char *const *flags, kernel *k)
{
	char err[4096], name[256];
	compiled c;
	k->source = print_or_fail(p, vector_bytes);
	compile_in_temp(p, k->source, flags, &c);
	k->module = rt_module_open(c.so, err, sizeof(err));
	cr_assert(k->module, "%s", err);
	cg_kernel_name(p, name, sizeof(name));
	k->fn = (tessel_kernel_fn)rt_module_symbol(k->module, name, err, sizeof(err));
	cr_assert(k->fn, "%s", err);
	test_remove_tree(c.dir);
}

/* Set up the arguments of a check after they are filled at random. */
typedef void (*fill_fn)(tessel_tensor *const *args);

/* Return the tolerance of "dt", relative to max(1, |expected|). */
static double tolerance(tessel_dtype dt)
{
	switch (dt) {
	case TESSEL_F16:
	case TESSEL_BF16:
		return 1e-2;
	case TESSEL_F32:
		return 1e-5;
	case TESSEL_F64:
		return 1e-12;
	default:
		return 0;
	}
}

/* Compare the output "got" of "p" with "want" element by element. */
static void compare_output(const loop_buffer *b, const tessel_tensor *want,
	const tessel_tensor *got)
{
	for (int64_t i = 0; i < tessel_tensor_numel(want); i++) {
		if (!tessel_dtype_is_float(b->dtype)) {
			int64_t x = tessel_tensor_get_i64(want, i);
			int64_t y = tessel_tensor_get_i64(got, i);
			cr_assert_eq(x, y, "%s[%lld]: expected %lld, got %lld", b->name,
				(long long)i, (long long)x, (long long)y);
			continue;
		}
		double x = tessel_tensor_get(want, i), y = tessel_tensor_get(got, i);
		bool ok = (isnan(x) && isnan(y)) || x == y ||
			fabs(x - y) <= tolerance(b->dtype) * fmax(1.0, fabs(x));
		cr_assert(ok, "%s[%lld]: expected %.9g, got %.9g", b->name,
			(long long)i, x, y);
	}
}

/* Compile "p" for "vector_bytes" with the compiler flags "flags" (NULL:
 * the default), run it with "threads" threads (1: the serial environment)
 * and the evaluator on the same arguments (random from "seed", then
 * "fill"), compare every output, and return the printed source (the
 * caller frees). */
static char *check_program_with(loop_prog *p, int vector_bytes, int threads,
	fill_fn fill, const char *const *flags)
{
	tessel_tensor *want[MAX_ARGS], *got[MAX_ARGS];
	void *data[MAX_ARGS];
	kernel k;
	cr_assert(p->nargs <= MAX_ARGS);
	for (int i = 0; i < p->nargs; i++) {
		const loop_buffer *b = p->args[i];
		want[i] = tessel_tensor_new(b->dtype, b->ndim, b->shape, NULL, 0);
		got[i] = tessel_tensor_new(b->dtype, b->ndim, b->shape, NULL, 0);
		cr_assert(want[i] && got[i]);
		tessel_tensor_fill_random(want[i], 1000 + (uint64_t)i);
	}
	if (fill)
		fill(want);
	for (int i = 0; i < p->nargs; i++) {
		memcpy(got[i]->data, want[i]->data, (size_t)tessel_tensor_numel(want[i]) *
			tessel_dtype_size(want[i]->dtype));
		data[i] = got[i]->data;
	}
	tessel_ctx *ctx = tessel_ctx_new();
	if (loop_eval(ctx, p, want) < 0)
		tessel_ctx_print_error(ctx, stderr);
	tessel_ctx_free(ctx);
	build_with(p, vector_bytes, flags, &k);
	if (getenv("CG_DUMP"))
		fprintf(stderr, "%s", k.source);
	rt_pool *pool = threads > 1 ? rt_pool_new(threads) : NULL;
	tessel_kernel_env env;
	rt_pool_env(pool, &env);
	int status = k.fn(data, &env);
	rt_pool_free(pool);
	cr_assert_eq(status, 0, "kernel %s returned %d", p->name, status);
	for (int i = 0; i < p->nargs; i++)
		if (p->args[i]->is_output)
			compare_output(p->args[i], want[i], got[i]);
	for (int i = 0; i < p->nargs; i++) {
		tessel_tensor_free(want[i]);
		tessel_tensor_free(got[i]);
	}
	rt_module_close(k.module);
	return k.source;
}

/* As check_program_with, compiled with the default flags. */
static char *check_program(loop_prog *p, int vector_bytes, int threads,
	fill_fn fill)
{
	return check_program_with(p, vector_bytes, threads, fill, NULL);
}

/* As check_program, dropping the source. */
static void check(loop_prog *p, int vector_bytes, int threads, fill_fn fill)
{
	free(check_program(p, vector_bytes, threads, fill));
}

/* Check that "text" is in "src" when "present", else that it is not. */
static void expect_text(const char *src, const char *text, bool present)
{
	bool found = strstr(src, text) != NULL;
	if (found != present)
		fprintf(stderr, "%s\n", src);
	cr_assert_eq(found, present, "expected %s\"%s\" in the source",
		present ? "" : "no ", text);
}

/* ---- programs ---------------------------------------------------------------- */

/* C[4, 20] = A[4, 5] @ B[5, 20] with an initialization nest; the outer
 * loop is "outer", the two loops over columns "inner". */
static loop_prog *matmul(int64_t m, int64_t k, int64_t n, loop_kind outer,
	loop_kind inner)
{
	loop_prog *p = loop_prog_new("matmul");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(m, k), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 2, SHAPE(k, n), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(m, n), true);
	loop_var *i = loop_var_new(p, "i"), *j0 = loop_var_new(p, "j_init");
	loop_var *kk = loop_var_new(p, "k"), *j = loop_var_new(p, "j");
	loop_stmt *init = loop(p, j0, n, inner,
		store(p, C, f32(p, 0), var(p, i), var(p, j0)));
	loop_expr *prod = op2(p, TESSEL_MUL, load(p, A, var(p, i), var(p, kk)),
		load(p, B, var(p, kk), var(p, j)));
	loop_stmt *update = loop(p, kk, k, LOOP_SERIAL, loop(p, j, n, inner,
		store(p, C, op2(p, TESSEL_ADD, load(p, C, var(p, i), var(p, j)), prod),
			var(p, i), var(p, j))));
	p->body = loop(p, i, m, outer, seq(p, 2, init, update));
	return p;
}

Test(codegen, matmul_serial)
{
	loop_prog *p = matmul(4, 5, 20, LOOP_SERIAL, LOOP_SERIAL);
	char *src = check_program(p, 0, 1, NULL);
	expect_text(src, "C[i * 20 + j] += A[i * 5 + k] * B[k * 20 + j];", true);
	expect_text(src, "const float *restrict A = args[0];", true);
	expect_text(src, "float *restrict C = args[2];", true);
	free(src);
	loop_prog_free(p);
}

Test(codegen, matmul_parallel_vectorized)
{
	loop_prog *p = matmul(64, 32, 48, LOOP_PARALLEL, LOOP_VECTORIZED);
	for (int w = 0; w <= 64; w = w ? 2 * w : 16) {
		char *src = check_program(p, w, 4, NULL);
		expect_text(src, "env->parallel_for(env, 64, matmul_parallel0, &closure0);", true);
		expect_text(src, "tsl_vload_", w != 0);
		free(src);
	}
	loop_prog_free(p);
}

/* An output stored streaming (C of a matmul, which the kernel also reads
 * back as it accumulates): whole vectors go through the non-temporal
 * store of their width, each function that stores them fences them, and
 * the values are the interpreter's at every width, from a parallel loop;
 * an output that is not aligned to the vector takes plain stores and
 * gets the same values. */
Test(codegen, streaming_stores)
{
	static const struct {
		int vector_bytes;
		const char *store;
	} cases[] = {
		{ 64, "_mm512_stream_si512((__m512i *)p, (__m512i)v);" },
		{ 32, "_mm256_stream_si256((__m256i *)p, (__m256i)v);" },
		{ 16, "_mm_stream_si128((__m128i *)p, (__m128i)v);" },
	};
	loop_prog *p = matmul(64, 32, 48, LOOP_PARALLEL, LOOP_VECTORIZED);
	p->args[2]->stream = true;
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		char *src = check_program(p, cases[c].vector_bytes, 4, NULL);
		expect_text(src, cases[c].store, true);
		expect_text(src, "tsl_vstream_f32x", true);
		expect_text(src, "\t\t}\n\t}\n\ttsl_stream_fence();\n}\n", true);
		free(src);
	}
	float *a = calloc(64 * 32, sizeof(float)), *b = calloc(32 * 48, sizeof(float));
	float *want = calloc(64 * 48, sizeof(float)), *got = calloc(64 * 48 + 1, sizeof(float));
	cr_assert(a && b && want && got);
	for (int i = 0; i < 64 * 32; i++)
		a[i] = (float)(i % 13) - 6;
	for (int i = 0; i < 32 * 48; i++)
		b[i] = (float)(i % 7) - 3;
	kernel k;
	build_with(p, 32, NULL, &k);
	tessel_kernel_env env;
	rt_pool_env(NULL, &env);
	void *aligned[] = { a, b, want }, *shifted[] = { a, b, got + 1 };
	cr_assert_eq(k.fn(aligned, &env), 0);
	cr_assert_eq(k.fn(shifted, &env), 0);
	cr_assert(memcmp(want, got + 1, 64 * 48 * sizeof(float)) == 0,
		"a misaligned streaming output differs from an aligned one");
	free(k.source);
	rt_module_close(k.module);
	free(a);
	free(b);
	free(want);
	free(got);
	loop_prog_free(p);
}

/* ---- register tiles --------------------------------------------------------- */

/* How a tile of C is indexed in tiled_matmul: as a matmul does, or in
 * ways that leave it no fixed tile of distinct elements. */
typedef enum tile_form {
	TILE_FIXED,         /* C[i * rows + ia, jo * cols + j] */
	TILE_MOVES_WITH_K,  /* C[(i * rows + ia + k) % m, ...] */
	TILE_OVERLAPS,      /* C[i * rows, jo * cols + ia + j]: rows share elements */
	TILE_GUARDED,       /* the update under "if j < cols - 1" */
} tile_form;

/* C[m, n] = A[m, k] @ B[k, n] accumulated in place over register tiles
 * of "rows" x "cols": for i in 0..m/rows (parallel), jo in 0..n/cols
 * { zero the tile; for kk in 0..k { for ia in 0..rows unrolled { for j in
 * 0..cols vectorized { C[..] = C[..] + A[i * rows + ia, kk] * B[kk,
 * jo * cols + j] } } } }, the tile's indices by "form". */
static loop_prog *tiled_matmul(int64_t m, int64_t k, int64_t n, int64_t rows,
	int64_t cols, tile_form form)
{
	loop_prog *p = loop_prog_new("tiled");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(m, k), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 2, SHAPE(k, n), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(m, n), true);
	loop_var *i = loop_var_new(p, "i"), *jo = loop_var_new(p, "jo");
	loop_var *ia0 = loop_var_new(p, "ia_init"), *j0 = loop_var_new(p, "j_init");
	loop_var *kk = loop_var_new(p, "k"), *ia = loop_var_new(p, "ia");
	loop_var *j = loop_var_new(p, "j");
	loop_expr *row0 = lx_add(p, lx_mul(p, var(p, i), lx_int(p, rows)), var(p, ia0));
	loop_expr *col0 = lx_add(p, lx_mul(p, var(p, jo), lx_int(p, cols)), var(p, j0));
	loop_stmt *init = loop(p, ia0, rows, LOOP_UNROLLED, loop(p, j0, cols,
		LOOP_VECTORIZED, store(p, C, f32(p, 0), row0, col0)));
	loop_expr *row = lx_add(p, lx_mul(p, var(p, i), lx_int(p, rows)), var(p, ia));
	loop_expr *col = lx_add(p, lx_mul(p, var(p, jo), lx_int(p, cols)), var(p, j));
	loop_expr *c_row = row, *c_col = col;
	if (form == TILE_MOVES_WITH_K)
		c_row = lx_mod(p, lx_add(p, row, var(p, kk)), lx_int(p, m));
	if (form == TILE_OVERLAPS) {
		c_row = lx_mul(p, var(p, i), lx_int(p, rows));
		c_col = lx_add(p, lx_add(p, lx_mul(p, var(p, jo), lx_int(p, cols)),
			var(p, ia)), var(p, j));
	}
	loop_expr *prod = op2(p, TESSEL_MUL, load(p, A, row, var(p, kk)),
		load(p, B, var(p, kk), col));
	loop_stmt *update = store(p, C, op2(p, TESSEL_ADD, load(p, C, c_row, c_col), prod),
		c_row, c_col);
	if (form == TILE_GUARDED)
		update = ls_if(p, lx_cmp(p, TESSEL_LT, var(p, j), lx_int(p, cols - 1)),
			update, NULL);
	loop_stmt *tile = loop(p, kk, k, LOOP_SERIAL, loop(p, ia, rows, LOOP_UNROLLED,
		loop(p, j, form == TILE_OVERLAPS ? cols - rows : cols, LOOP_VECTORIZED,
			update)));
	p->body = loop(p, i, m / rows, LOOP_PARALLEL,
		loop(p, jo, n / cols, LOOP_SERIAL, seq(p, 2, init, tile)));
	return p;
}

/* A tile accumulated in place across the serial k loop is read into a
 * local buffer before it and written back after (ir/loop_promote.c), and
 * the vector of B each row of it reads is read once per k and kept in a
 * register (ir/loop_pin_loads.c), at every vector width, with the
 * interpreter's values; the loop program the schedule lowered to is left
 * as it was. */
Test(register_tiles, an_accumulation_in_place_becomes_a_register_tile)
{
	loop_prog *p = tiled_matmul(32, 24, 64, 4, 16, TILE_FIXED);
	char *before = loop_prog_print(p);
	for (int w = 0; w <= 64; w = w ? 2 * w : 16) {
		char *src = check_program(p, w, 2, NULL);
		expect_text(src, "float C_acc[64] __attribute__((aligned(64)));", true);
		if (w == 32) {
			expect_text(src, "float B_pin[16] __attribute__((aligned(64)));", true);
			expect_text(src, "TSL_IN_REGISTER_32(*(tsl_f32x8 *)&B_pin[", true);
			expect_text(src, "*(tsl_f32x8 *)&C_acc[", true);
		}
		/* 16 vectors of 16 bytes hold the tile: no register left for B */
		expect_text(src, "B_pin", w >= 32);
		free(src);
	}
	char *after = loop_prog_print(p);
	cr_expect_str_eq(after, before);
	free(before);
	free(after);
	loop_prog_free(p);
}

/* Tiles that are not a fixed set of distinct elements in every iteration
 * of the loop stay where they are, and keep their values. */
Test(register_tiles, tiles_that_are_not_fixed_stay_in_place)
{
	static const tile_form forms[] = { TILE_MOVES_WITH_K, TILE_OVERLAPS, TILE_GUARDED };
	for (size_t f = 0; f < sizeof(forms) / sizeof(*forms); f++) {
		loop_prog *p = tiled_matmul(32, 24, 64, 4, 16, forms[f]);
		loop_prog *q = loop_prog_clone(p);
		cr_assert(q);
		cr_expect_eq(loop_promote_accumulators(q, 4096), 0, "form %zu promoted", f);
		loop_prog_free(q);
		char *src = check_program(p, 32, 2, NULL);
		expect_text(src, "C_acc", false);
		free(src);
		loop_prog_free(p);
	}
}

/* B[i] = select(i >= 2 && i < 18, A[i - 2], 0), a padding guard. */
static loop_prog *padded(loop_kind kind)
{
	loop_prog *p = loop_prog_new("pad");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(16), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(20), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *inside = lx_and(p, lx_cmp(p, TESSEL_GE, var(p, i), lx_int(p, 2)),
		lx_cmp(p, TESSEL_LT, var(p, i), lx_int(p, 18)));
	loop_expr *value = lx_select(p, inside,
		load(p, A, lx_sub(p, var(p, i), lx_int(p, 2))), f32(p, 0), TESSEL_F32);
	p->body = loop(p, i, 20, kind, store(p, B, value, var(p, i)));
	return p;
}

Test(codegen, select_padding_guard)
{
	loop_prog *p = padded(LOOP_SERIAL);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "B[i] = i >= 2 && i < 18 ? A[i - 2] : 0.0f;", true);
	free(src);
	loop_prog_free(p);
	p = padded(LOOP_VECTORIZED);
	src = check_program(p, 64, 1, NULL);
	expect_text(src, "#pragma GCC ivdep", true);
	expect_text(src, "tsl_vload", false);
	free(src);
	loop_prog_free(p);
}

/* A fused loop "f" over O[4, 12] read through f / 12 and f % 12, and
 * floor division and modulo of negative numbers, by constants and by
 * loaded values. */
static loop_prog *floor_ops(void)
{
	loop_prog *p = loop_prog_new("floor_ops");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, 12), false);
	loop_buffer *X = add_arg(p, "X", TESSEL_I32, 1, SHAPE(48), false);
	loop_buffer *Y = add_arg(p, "Y", TESSEL_I32, 1, SHAPE(48), false);
	loop_buffer *O = add_arg(p, "O", TESSEL_F32, 2, SHAPE(4, 12), true);
	loop_buffer *Q = add_arg(p, "Q", TESSEL_I64, 2, SHAPE(48, 4), true);
	loop_buffer *R = add_arg(p, "R", TESSEL_I32, 2, SHAPE(48, 2), true);
	loop_var *f = loop_var_new(p, "i.j.fused");
	loop_expr *row = lx_div(p, var(p, f), lx_int(p, 12));
	loop_expr *col = lx_mod(p, var(p, f), lx_int(p, 12));
	loop_expr *shifted = lx_sub(p, var(p, f), lx_int(p, 24));
	loop_expr *x = load(p, X, var(p, f)), *y = load(p, Y, var(p, f));
	loop_stmt *body = seq(p, 9,
		store(p, O, op2(p, TESSEL_MUL, load(p, A, row, col), f32(p, 2)), row, col),
		store(p, Q, lx_div(p, shifted, lx_int(p, 5)), var(p, f), lx_int(p, 0)),
		store(p, Q, lx_mod(p, shifted, lx_int(p, 5)), var(p, f), lx_int(p, 1)),
		store(p, Q, lx_div(p, shifted, lx_int(p, -4)), var(p, f), lx_int(p, 2)),
		store(p, Q, lx_mod(p, shifted, lx_int(p, -4)), var(p, f), lx_int(p, 3)),
		store(p, R, lx_binary(p, TESSEL_DIV, x, y, TESSEL_I32), var(p, f), lx_int(p, 0)),
		store(p, R, lx_binary(p, TESSEL_MOD, x, y, TESSEL_I32), var(p, f), lx_int(p, 1)),
		ls_seq(p, 0, NULL), ls_barrier(p));
	p->body = loop(p, f, 48, LOOP_SERIAL, body);
	return p;
}

/* Make the divisors (argument 2) non-zero. */
static void nonzero_divisors(tessel_tensor *const *args)
{
	for (int64_t i = 0; i < 48; i++) {
		int64_t v = tessel_tensor_get_i64(args[2], i);
		tessel_tensor_set_i64(args[2], i, v == 0 ? -3 : v);
	}
}

Test(codegen, floor_division)
{
	loop_prog *p = floor_ops();
	char *src = check_program(p, 64, 1, nonzero_divisors);
	expect_text(src, "A[i_j_fused / 12 * 12 + i_j_fused % 12]", true);
	expect_text(src, "tsl_floordiv(i_j_fused - 24, 5)", true);
	expect_text(src, "tsl_floormod(X[i_j_fused], Y[i_j_fused])", true);
	free(src);
	loop_prog_free(p);
}

/* Casts of floats to integers (saturating, NaN to 0) and bool, of
 * integers to narrower ones (wrapping) and to half types (rounding). */
static loop_prog *casts(void)
{
	loop_prog *p = loop_prog_new("casts");
	loop_buffer *X = add_arg(p, "X", TESSEL_F32, 1, SHAPE(16), false);
	loop_buffer *L = add_arg(p, "L", TESSEL_I64, 1, SHAPE(16), false);
	loop_buffer *I8 = add_arg(p, "I8", TESSEL_I8, 1, SHAPE(16), true);
	loop_buffer *I32 = add_arg(p, "I32", TESSEL_I32, 1, SHAPE(16), true);
	loop_buffer *I64 = add_arg(p, "I64", TESSEL_I64, 1, SHAPE(16), true);
	loop_buffer *Bo = add_arg(p, "Bo", TESSEL_BOOL, 1, SHAPE(16), true);
	loop_buffer *W = add_arg(p, "W", TESSEL_I8, 1, SHAPE(16), true);
	loop_buffer *W32 = add_arg(p, "W32", TESSEL_I32, 1, SHAPE(16), true);
	loop_buffer *H = add_arg(p, "H", TESSEL_F32, 1, SHAPE(16), true);
	loop_buffer *G = add_arg(p, "G", TESSEL_F32, 1, SHAPE(16), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *x = load(p, X, var(p, i)), *l = load(p, L, var(p, i));
	loop_stmt *body = seq(p, 8,
		store(p, I8, lx_cast(p, TESSEL_I8, x), var(p, i)),
		store(p, I32, lx_cast(p, TESSEL_I32, x), var(p, i)),
		store(p, I64, lx_cast(p, TESSEL_I64, x), var(p, i)),
		store(p, Bo, lx_cast(p, TESSEL_BOOL, x), var(p, i)),
		store(p, W, lx_cast(p, TESSEL_I8, l), var(p, i)),
		store(p, W32, lx_binary(p, TESSEL_ADD, lx_cast(p, TESSEL_I32, l),
			lx_cast(p, TESSEL_I32, l), TESSEL_I32), var(p, i)),
		store(p, H, lx_cast(p, TESSEL_F32, lx_cast(p, TESSEL_F16,
			lx_cast(p, TESSEL_I32, l))), var(p, i)),
		store(p, G, lx_cast(p, TESSEL_F32, lx_cast(p, TESSEL_BF16, x)), var(p, i)));
	p->body = loop(p, i, 16, LOOP_SERIAL, body);
	return p;
}

/* Fill the float (argument 0) and i64 (argument 1) inputs of casts()
 * with values at and beyond the limits of the integer types. */
static void cast_values(tessel_tensor *const *args)
{
	static const double x[16] = { 0.5, -0.5, 1e10, -1e10, NAN, INFINITY,
		-INFINITY, 127.9, -128.9, 200, -3.7, 2.5e9, -2.5e9, 1e19, -1e19, 3.14159 };
	static const int64_t l[16] = { 0, 127, 128, -129, 255, 256, -1,
		INT64_MAX, INT64_MIN, 2147483648LL, 4294967295LL, 1LL << 40, 3000,
		-70000, 65519, 65521 };
	for (int i = 0; i < 16; i++) {
		tessel_tensor_set(args[0], i, x[i]);
		tessel_tensor_set_i64(args[1], i, l[i]);
	}
}

Test(codegen, casts_saturate_and_wrap)
{
	loop_prog *p = casts();
	char *src = check_program(p, 0, 1, cast_values);
	expect_text(src, "I8[i] = tsl_f2i_i8(X[i]);", true);
	expect_text(src, "Bo[i] = X[i] != 0;", true);
	expect_text(src, "W[i] = (int8_t)L[i];", true);
	free(src);
	loop_prog_free(p);
}

/* F = H * G + 1 in f16, O = bf16(H) + G, S = f32(H) * f32(G), with H
 * f16 and G bf16. */
static loop_prog *halves(loop_kind kind)
{
	loop_prog *p = loop_prog_new("halves");
	loop_buffer *H = add_arg(p, "H", TESSEL_F16, 1, SHAPE(40), false);
	loop_buffer *G = add_arg(p, "G", TESSEL_BF16, 1, SHAPE(40), false);
	loop_buffer *F = add_arg(p, "F", TESSEL_F16, 1, SHAPE(40), true);
	loop_buffer *O = add_arg(p, "O", TESSEL_BF16, 1, SHAPE(40), true);
	loop_buffer *S = add_arg(p, "S", TESSEL_F32, 1, SHAPE(40), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *h = load(p, H, var(p, i)), *g = load(p, G, var(p, i));
	loop_expr *fv = lx_binary(p, TESSEL_ADD,
		lx_binary(p, TESSEL_MUL, h, lx_cast(p, TESSEL_F16, g), TESSEL_F16),
		lx_float(p, 1.0, TESSEL_F16), TESSEL_F16);
	loop_expr *ov = lx_binary(p, TESSEL_ADD, lx_cast(p, TESSEL_BF16, h), g,
		TESSEL_BF16);
	loop_expr *sv = op2(p, TESSEL_MUL, lx_cast(p, TESSEL_F32, h),
		lx_cast(p, TESSEL_F32, g));
	p->body = loop(p, i, 40, kind, seq(p, 3, store(p, F, fv, var(p, i)),
		store(p, O, ov, var(p, i)), store(p, S, sv, var(p, i))));
	return p;
}

Test(codegen, f16_and_bf16)
{
	loop_prog *p = halves(LOOP_SERIAL);
	char *src = check_program(p, 0, 1, NULL);
	expect_text(src, "F[i] = tsl_f32_to_f16(tsl_f16_to_f32(H[i]) * "
		"tsl_round_f16(tsl_bf16_to_f32(G[i])) + 1.0f);", true);
	free(src);
	loop_prog_free(p);
	p = halves(LOOP_VECTORIZED);
	src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_vload_f16_f32x16(&H[i])", true);
	expect_text(src, "tsl_vstore_bf16_f32x16(&O[i]", true);
	expect_text(src, "_mm512_cvtph_ps(h)", true);
	expect_text(src, "_mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT", true);
	free(src);
	src = check_program(p, 32, 1, NULL);
	expect_text(src, "_mm256_cvtph_ps(h)", true);
	free(src);
	loop_prog_free(p);
}

/* W = f32(H), F = f16(S) over "n" values, in loops of "kind". */
static loop_prog *f16_conversions(int n, loop_kind kind)
{
	loop_prog *p = loop_prog_new("f16_exact");
	loop_buffer *H = add_arg(p, "H", TESSEL_F16, 1, SHAPE(n), false);
	loop_buffer *S = add_arg(p, "S", TESSEL_F32, 1, SHAPE(3 * n), false);
	loop_buffer *W = add_arg(p, "W", TESSEL_F32, 1, SHAPE(n), true);
	loop_buffer *F = add_arg(p, "F", TESSEL_F16, 1, SHAPE(3 * n), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	p->body = seq(p, 2,
		loop(p, i, n, kind, store(p, W,
			lx_cast(p, TESSEL_F32, load(p, H, var(p, i))), var(p, i))),
		loop(p, j, 3 * n, kind, store(p, F,
			lx_cast(p, TESSEL_F16, load(p, S, var(p, j))), var(p, j))));
	return p;
}

/* Conversions of f16 (F16C's where the target has them, in vectors and
 * in scalars) agree bit for bit with tessel/dtype.h's: every f16 value
 * widened, and the f32 halfway points between neighbouring f16 values
 * (ties to even), and points just off them, narrowed; a NaN stays a
 * NaN. */
Test(codegen, f16_conversions_exact)
{
	enum { N = 65536 };
	uint16_t *h = malloc(N * sizeof(*h)), *f = malloc(3 * N * sizeof(*f));
	float *sv = malloc(3 * N * sizeof(*sv)), *w = malloc(N * sizeof(*w));
	cr_assert(h && f && sv && w);
	for (int k = 0; k < N; k++) {
		h[k] = (uint16_t)k;
		float a = tessel_f16_to_f32((uint16_t)k);
		float b = tessel_f16_to_f32((uint16_t)(k + 1 < N ? k + 1 : k));
		float mid = isfinite(a) && isfinite(b) ? (float)(((double)a + b) / 2) : a;
		sv[3 * k] = mid;
		sv[3 * k + 1] = nextafterf(mid, INFINITY);
		sv[3 * k + 2] = nextafterf(mid, -INFINITY);
	}
	static const struct {
		loop_kind kind;
		int vector_bytes;
		const char *f16c;  /* the conversion's F16C code */
	} cases[] = {
		{ LOOP_VECTORIZED, 64, "_mm512_cvtph_ps(h)" },
		{ LOOP_VECTORIZED, 32, "_mm256_cvtph_ps(h)" },
		{ LOOP_SERIAL, 64, "return _cvtsh_ss(h);" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		loop_prog *p = f16_conversions(N, cases[c].kind);
		int vb = cases[c].vector_bytes;
		kernel k;
		build_with(p, vb, NULL, &k);
		expect_text(k.source, cases[c].f16c, true);
		void *data[] = { h, sv, w, f };
		tessel_kernel_env env;
		rt_pool_env(NULL, &env);
		cr_assert_eq(k.fn(data, &env), 0);
		for (int x = 0; x < N; x++) {
			float want = tessel_f16_to_f32(h[x]);
			cr_assert(isnan(want) ? isnan(w[x]) : memcmp(&want, &w[x], 4) == 0,
				"f16 %#06x widened to %a, not %a (case %zu)", x, w[x], want, c);
		}
		for (int x = 0; x < 3 * N; x++) {
			uint16_t want = tessel_f32_to_f16(sv[x]);
			bool nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
			bool got_nan = (f[x] & 0x7c00) == 0x7c00 && (f[x] & 0x3ff);
			cr_assert(nan ? got_nan : f[x] == want, "%a narrowed to %#06x, not "
				"%#06x (case %zu)", sv[x], f[x], want, c);
		}
		free(k.source);
		rt_module_close(k.module);
		loop_prog_free(p);
	}
	free(h);
	free(f);
	free(sv);
	free(w);
}

/* The kernel ABI in the source is tessel/kernel.h's, verbatim. */
Test(codegen, kernel_abi_copied_verbatim)
{
	char path[4096], text[8192];
	snprintf(path, sizeof(path), "%s/include/tessel/kernel.h", TESSEL_SOURCE_DIR);
	FILE *f = fopen(path, "r");
	cr_assert(f, "opening %s", path);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	char *start = strstr(text, "/* The body of a parallel loop");
	char *end = strstr(text, "tessel_kernel_fn)");
	cr_assert(start && end);
	end = strchr(end, '\n') + 1;
	*end = 0;
	loop_prog *p = padded(LOOP_SERIAL);
	char *src = print_or_fail(p, 0);
	expect_text(src, start, true);
	free(src);
	loop_prog_free(p);
}

/* ---- parallel loops ----------------------------------------------------- */

/* C[i, j] = A[i, j] + i over i in 0..6 and j in 2..34 (shifted by its
 * min), with "outer" and "inner" kinds. */
static loop_prog *shifted_rows(loop_kind outer, loop_kind inner)
{
	loop_prog *p = loop_prog_new("rows");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(6, 32), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(6, 32), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *col = lx_sub(p, var(p, j), lx_int(p, 2));
	loop_expr *value = op2(p, TESSEL_ADD, load(p, A, var(p, i), col),
		lx_cast(p, TESSEL_F32, var(p, i)));
	loop_stmt *inner_loop = ls_for(p, j, lx_int(p, 2), lx_int(p, 32), inner,
		store(p, C, value, var(p, i), col));
	p->body = loop(p, i, 6, outer, inner_loop);
	return p;
}

Test(codegen, parallel_captures_outer_variables)
{
	loop_prog *p = shifted_rows(LOOP_SERIAL, LOOP_PARALLEL);
	char *src = check_program(p, 64, 4, NULL);
	expect_text(src, "for (int64_t j = 2 + begin; j < 2 + end; j++) {", true);
	expect_text(src, "int64_t i = captured->i;", true);
	free(src);
	loop_prog_free(p);
}

Test(codegen, nested_parallel_loops)
{
	loop_prog *p = shifted_rows(LOOP_PARALLEL, LOOP_PARALLEL);
	char *src = check_program(p, 64, 3, NULL);
	expect_text(src, "static void rows_parallel1(", true);
	expect_text(src, "const tessel_kernel_env *env = captured->env;", true);
	free(src);
	check(p, 0, 1, NULL);
	loop_prog_free(p);
}

/* ---- vector loops ----------------------------------------------------------- */

/* B[i] = exp(A[i]) * 2 + A[i] over "n" elements, vectorized. */
static loop_prog *exp_scale(int64_t n)
{
	loop_prog *p = loop_prog_new("exp_scale");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(n), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *a = load(p, A, var(p, i));
	loop_expr *v = op2(p, TESSEL_ADD, op2(p, TESSEL_MUL, op1(p, TESSEL_EXP, a),
		f32(p, 2)), a);
	p->body = loop(p, i, n, LOOP_VECTORIZED, store(p, B, v, var(p, i)));
	return p;
}

Test(codegen, vector_extent_16)
{
	loop_prog *p = exp_scale(16);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "for (int64_t i = 0; i < 16; i += 16) {", true);
	expect_text(src, "tsl_vstore_f32x16(&B[i], tsl_vexp_f32x16(tsl_vload_f32x16(&A[i])) * "
		"tsl_splat_f32x16(2.0f) + tsl_vload_f32x16(&A[i]));", true);
	expect_text(src, "i++", false);
	free(src);
	loop_prog_free(p);
}

/* B[i] = op(A[i]) over "n" elements, vectorized. */
static loop_prog *unary_vector(tessel_unary op, int64_t n)
{
	loop_prog *p = loop_prog_new("unary_vector");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(n), true);
	loop_var *i = loop_var_new(p, "i");
	p->body = loop(p, i, n, LOOP_VECTORIZED,
		store(p, B, op1(p, op, load(p, A, var(p, i))), var(p, i)));
	return p;
}

/* Fill the first argument evenly from "lo" to "hi" (exp of that when
 * "log_spaced"), then put the "n" values "special" at every 7th element. */
static void fill_range(tessel_tensor *const *args, double lo, double hi, bool log_spaced,
	const double *special, size_t n)
{
	int64_t count = tessel_tensor_numel(args[0]);
	for (int64_t i = 0; i < count; i++) {
		double v = lo + (hi - lo) * (double)i / (double)(count - 1);
		tessel_tensor_set(args[0], i, log_spaced ? exp(v) : v);
	}
	for (size_t i = 0; i < n; i++)
		tessel_tensor_set(args[0], (int64_t)i * 7, special[i]);
}

/* Inputs across the whole range of expf: overflow, underflow, the edges
 * of the clamped range, infinities and NaN. */
static void exp_range(tessel_tensor *const *args)
{
	static const double special[] = { INFINITY, -INFINITY, NAN, 88.7, 88.73, -87.3,
		-87.4, -103.9, -104.0, 0.0, -0.0, 1e-8, 88.5, 88.3763, 88.72283,
		88.7228394, -87.33654, -87.0 };
	fill_range(args, -120.0, 120.0, false, special, sizeof(special) / sizeof(*special));
}

/* Inputs from 86 up to the overflow bound of expf, where 2^n of the
 * reduction reaches 2^128. */
static void exp_top(tessel_tensor *const *args)
{
	fill_range(args, 86.0, 88.72283, false, NULL, 0);
}

/* The vector exp agrees with expf everywhere (within the f32 tolerance),
 * in the forms the host compiles for 64, 32 and 16-byte vectors
 * (AVX-512, AVX2 with FMA where it has them), and in the portable form
 * for 32-byte vectors; a bare exp, so that nothing after it hides an
 * error near overflow. */
Test(codegen, vector_exp_over_its_range)
{
	static const char *const generic[] = { "-O3", "-march=x86-64", "-fPIC", "-shared",
		"-std=gnu17", NULL };
	loop_prog *p = unary_vector(TESSEL_EXP, 1024);
	char *src = check_program(p, 64, 1, exp_range);
	expect_text(src, "_mm512_scalef_ps", true);
	expect_text(src, "__builtin_convertvector", true);
	free(src);
	check(p, 64, 1, exp_top);
	src = check_program(p, 32, 1, exp_range);
	expect_text(src, "_mm512_scalef_ps", false);
	expect_text(src, "_mm256_round_ps", true);
	free(src);
	check(p, 32, 1, exp_top);
	free(check_program_with(p, 32, 1, exp_range, generic));
	free(check_program_with(p, 32, 1, exp_top, generic));
	check(p, 16, 1, exp_range);
	check(p, 16, 1, exp_top);
	loop_prog_free(p);
}

/* Inputs from -8 to 8, with the edges of the pieces of the vector erf
 * (0.875, 3.92) and tanh (0.625), infinities, NaN and signed zeros. */
static void erf_range(tessel_tensor *const *args)
{
	static const double special[] = { INFINITY, -INFINITY, NAN, 0.875, -0.875,
		0.87500001, 3.92, -3.93, 0.0, -0.0, 1e-30, -1e-6, 60.0, -100.0, 0.625,
		-0.62499999 };
	fill_range(args, -8.0, 8.0, false, special, sizeof(special) / sizeof(*special));
}

/* erf, sigmoid and tanh of floats run on vectors over the vector exp (no
 * erff, tanhf or expf per lane) and agree with the interpreter over their range,
 * in the AVX-512 form and in the portable one. */
Test(codegen, vector_erf_sigmoid_tanh)
{
	static const char *const avx2[] = { "-O3", "-march=x86-64-v3", "-fPIC",
		"-shared", "-std=gnu17", NULL };
	static const tessel_unary ops[] = { TESSEL_ERF, TESSEL_SIGMOID, TESSEL_TANH };
	static const char *const helper[] = { "tsl_verf_f32x16(", "tsl_vsigmoid_f32x16(",
		"tsl_vtanh_f32x16(" };
	for (int k = 0; k < 3; k++) {
		loop_prog *p = unary_vector(ops[k], 1024);
		char *src = check_program(p, 64, 1, erf_range);
		expect_text(src, helper[k], true);
		expect_text(src, "tsl_vexp_f32x16(", true);
		expect_text(src, "erff(", false);
		expect_text(src, "tanhf(", false);
		expect_text(src, "expf(", false);
		free(src);
		free(check_program_with(p, 64, 1, erf_range, avx2));
		free(check_program(p, 16, 1, erf_range));
		loop_prog_free(p);
	}
}

/* Positive floats from the smallest denormal to near the largest,
 * log-spaced, with zeros, negatives, infinities, NaN and the edges of
 * the vector log's reduction. */
static void log_range(tessel_tensor *const *args)
{
	static const double special[] = { 0.0, -0.0, -1.0, INFINITY, -INFINITY, NAN,
		1.4e-45, 1.17549435e-38, 1.1754942e-38, 1.41421356, 1.4142137, 1.0,
		0.70710678, 3.4e38 };
	fill_range(args, -103.0, 88.0, true, special, sizeof(special) / sizeof(*special));
}

/* Floats from 0.5 to 2, where log is small and its error shows. */
static void near_one(tessel_tensor *const *args)
{
	fill_range(args, 0.5, 2.0, false, NULL, 0);
}

/* log of floats runs on vectors (no logf per lane) and agrees with the
 * interpreter from denormals to the largest floats, in both forms. */
Test(codegen, vector_log)
{
	static const char *const avx2[] = { "-O3", "-march=x86-64-v3", "-fPIC",
		"-shared", "-std=gnu17", NULL };
	loop_prog *p = unary_vector(TESSEL_LOG, 1024);
	char *src = check_program(p, 64, 1, log_range);
	expect_text(src, "tsl_vlog_f32x16(", true);
	expect_text(src, "logf(", false);
	free(src);
	free(check_program_with(p, 64, 1, log_range, avx2));
	free(check_program(p, 16, 1, log_range));
	free(check_program(p, 64, 1, near_one));
	loop_prog_free(p);
}

/* Kernels are compiled without errno from math functions (cg_cpu_flags):
 * a vector sqrt is an instruction, and its object calls no sqrtf. */
Test(codegen, vector_sqrt_calls_no_libm)
{
	loop_prog *p = unary_vector(TESSEL_SQRT, 256);
	const char *flags[10];
	cg_cpu_flags(NULL, flags);
	bool no_errno = false;
	for (int i = 0; flags[i]; i++)
		no_errno |= strcmp(flags[i], "-fno-math-errno") == 0;
	cr_expect(no_errno, "cg_cpu_flags keeps errno");
	char *src = check_program(p, 64, 1, NULL);
	compiled c;
	compile_in_temp(p, src, flags, &c);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "nm -D --undefined-only '%s'", c.so);
	FILE *nm = popen(cmd, "r");
	cr_assert(nm);
	char line[512];
	bool calls = false;
	while (fgets(line, sizeof(line), nm))
		calls |= strstr(line, "sqrtf") != NULL;
	cr_expect_eq(pclose(nm), 0, "%s failed", cmd);
	cr_expect(!calls, "the kernel calls sqrtf");
	test_remove_tree(c.dir);
	free(src);
	loop_prog_free(p);
}

/* S[r] = op over k of A[r, k] * 2, the k loop vectorized: a reduction
 * (schedule/vectorize.c allows it) that runs on vector lanes. */
static loop_prog *reduce_rows(tessel_binary op, int64_t rows, int64_t n)
{
	loop_prog *p = loop_prog_new("reduce_rows");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(rows, n), false);
	loop_buffer *S = add_arg(p, "S", TESSEL_F32, 1, SHAPE(rows), true);
	loop_var *r = loop_var_new(p, "r"), *k = loop_var_new(p, "k");
	double init = op == TESSEL_ADD ? 0 : op == TESSEL_MUL ? 1 :
		op == TESSEL_MAX ? -INFINITY : INFINITY;
	loop_expr *x = op2(p, TESSEL_MUL, load(p, A, var(p, r), var(p, k)), f32(p, 2));
	loop_stmt *update = store(p, S, op2(p, op, load(p, S, var(p, r)), x), var(p, r));
	p->body = loop(p, r, rows, LOOP_SERIAL, seq(p, 2, store(p, S, f32(p, init), var(p, r)),
		loop(p, k, n, LOOP_VECTORIZED, update)));
	return p;
}

/* NaN in some rows, which max and min skip as fmax and fmin do. */
static void some_nans(tessel_tensor *const *args)
{
	tessel_tensor_set(args[0], 5, NAN);
	tessel_tensor_set(args[0], 37 + 36, NAN);
}

/* Vectorized reductions: lanes accumulate apart over whole vectors, are
 * folded into the element, and the remainder runs after; the result
 * agrees with the serial one (exactly for min and max, within rounding
 * for sums and products), NaN included. */
Test(codegen, vector_reductions)
{
	static const tessel_binary ops[] = { TESSEL_ADD, TESSEL_MUL, TESSEL_MAX, TESSEL_MIN };
	static const char *const acc[] = { "k_acc = k_acc + ", "k_acc = k_acc * ",
		"k_acc = tsl_vmax_f32x16(k_acc, ", "k_acc = tsl_vmin_f32x16(k_acc, " };
	for (int i = 0; i < 4; i++) {
		loop_prog *p = reduce_rows(ops[i], 3, 37);
		char *src = check_program(p, 64, 1, i >= 2 ? some_nans : NULL);
		expect_text(src, "for (int64_t k = 0; k < 32; k += 16) {", true);
		expect_text(src, acc[i], true);
		expect_text(src, "for (int k_l = 0; k_l < 16; k_l++) {", true);
		expect_text(src, "for (int64_t k = 32; k < 37; k++) {", true);
		free(src);
		loop_prog_free(p);
	}
}

/* A loop that updates an element with a value read from the same buffer
 * is not a reduction the vectors can reorder: it stays scalar. */
Test(codegen, vector_reduction_reading_itself_stays_scalar)
{
	loop_prog *p = loop_prog_new("prefix");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(40), true);
	loop_var *k = loop_var_new(p, "k");
	loop_expr *v = op2(p, TESSEL_ADD, load(p, A, lx_int(p, 0)), load(p, A, var(p, k)));
	p->body = loop(p, k, 40, LOOP_VECTORIZED, store(p, A, v, lx_int(p, 0)));
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "_acc", false);
	free(src);
	loop_prog_free(p);
}

/* The portable form of the 16-lane exp, compiled without AVX-512, agrees
 * with expf as well. */
Test(codegen, vector_exp_portable_form)
{
	static const char *const avx2[] = { "-O3", "-march=x86-64-v3", "-fPIC",
		"-shared", "-std=gnu17", NULL };
	loop_prog *p = unary_vector(TESSEL_EXP, 1024);
	char *src = check_program_with(p, 64, 1, exp_range, avx2);
	expect_text(src, "__builtin_convertvector", true);
	free(src);
	free(check_program_with(p, 64, 1, exp_top, avx2));
	loop_prog_free(p);
}

/* The remainder of a vector loop runs on narrower vectors while they
 * fit, down to 16 bytes, then as scalar code. */
Test(codegen, vector_extent_20_remainder)
{
	loop_prog *p = exp_scale(20);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "for (int64_t i = 0; i < 16; i += 16) {", true);
	expect_text(src, "for (int64_t i = 16; i < 20; i += 4) {", true);
	expect_text(src, "tsl_vexp_f32x4(", true);
	expect_text(src, "i++", false);
	free(src);
	src = check_program(p, 32, 1, NULL);
	expect_text(src, "for (int64_t i = 0; i < 16; i += 8) {", true);
	expect_text(src, "for (int64_t i = 16; i < 20; i += 4) {", true);
	free(src);
	loop_prog_free(p);
	p = exp_scale(23);
	src = check_program(p, 64, 1, NULL);
	expect_text(src, "for (int64_t i = 16; i < 20; i += 4) {", true);
	expect_text(src, "for (int64_t i = 20; i < 23; i++) {", true);
	free(src);
	loop_prog_free(p);
}

/* C[i, j] = A[i, j] * s[0] + v[i], j vectorized: invariant loads are
 * broadcast. */
Test(codegen, vector_broadcast)
{
	loop_prog *p = loop_prog_new("bcast");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(3, 24), false);
	loop_buffer *s = add_arg(p, "s", TESSEL_F32, 1, SHAPE(1), false);
	loop_buffer *v = add_arg(p, "v", TESSEL_F32, 1, SHAPE(3), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(3, 24), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *value = op2(p, TESSEL_ADD, op2(p, TESSEL_MUL,
		load(p, A, var(p, i), var(p, j)), load(p, s, lx_int(p, 0))),
		load(p, v, var(p, i)));
	p->body = loop(p, i, 3, LOOP_SERIAL, loop(p, j, 24, LOOP_VECTORIZED,
		store(p, C, value, var(p, i), var(p, j))));
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_splat_f32x16(s[0])", true);
	expect_text(src, "tsl_splat_f32x16(v[i])", true);
	free(src);
	loop_prog_free(p);
}

/* C[j, i] = A[j, i] + 1 with j vectorized: strided, so scalar. */
Test(codegen, vector_non_contiguous_falls_back)
{
	loop_prog *p = loop_prog_new("strided");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(16, 5), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F32, 2, SHAPE(16, 5), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	p->body = loop(p, i, 5, LOOP_SERIAL, loop(p, j, 16, LOOP_VECTORIZED,
		store(p, C, op2(p, TESSEL_ADD, load(p, A, var(p, j), var(p, i)), f32(p, 1)),
			var(p, j), var(p, i))));
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_v", false);
	expect_text(src, "#pragma GCC ivdep\n\t\tfor (int64_t j = 0; j < 16; j++) {", true);
	free(src);
	loop_prog_free(p);
}

/* C[i, j] = max(A[i, 2j], A[i, 2j + 1]) with j vectorized, a pooling
 * window of stride 2: every other element, two vector loads and a
 * shuffle each, also in the remainder; the last lane of a row reads the
 * last element of A, and nothing after it.  A stride of 3 stays scalar. */
static loop_prog *every_other(tessel_dtype dt, int64_t n, int64_t stride)
{
	loop_prog *p = loop_prog_new("pairs");
	loop_buffer *A = add_arg(p, "A", dt, 2, SHAPE(3, stride * n), false);
	loop_buffer *C = add_arg(p, "C", dt, 2, SHAPE(3, n), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *at = op2(p, TESSEL_MUL, var(p, j), lx_int(p, stride));
	loop_expr *next = op2(p, TESSEL_ADD, op2(p, TESSEL_MUL, var(p, j), lx_int(p, stride)),
		lx_int(p, 1));
	p->body = loop(p, i, 3, LOOP_SERIAL, loop(p, j, n, LOOP_VECTORIZED,
		store(p, C, op2(p, TESSEL_MAX, load(p, A, var(p, i), at),
			load(p, A, var(p, i), next)), var(p, i), var(p, j))));
	return p;
}

Test(codegen, vector_every_other_element)
{
	loop_prog *p = every_other(TESSEL_F32, 20, 2);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_vload_s2_f32x16(&A[", true);
	expect_text(src, "tsl_vload_s2_f32x4(&A[", true);
	expect_text(src, "__builtin_shufflevector(tsl_vload_f32x16(p), "
		"tsl_vload_f32x16(p + 16 - 1), 0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, "
		"25, 27, 29, 31)", true);
	free(src);
	src = check_program(p, 32, 1, NULL);
	expect_text(src, "tsl_vload_s2_f32x8(&A[", true);
	free(src);
	loop_prog_free(p);
	p = every_other(TESSEL_F64, 12, 2);
	src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_vload_s2_f64x8(&A[", true);
	free(src);
	loop_prog_free(p);
	p = every_other(TESSEL_F32, 16, 3);
	src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_vload", false);
	free(src);
	loop_prog_free(p);
}

/* Every float operator on vectors: intrinsics lane by lane, min and max
 * with NaNs, select on a mask, conversions to double and back. */
static loop_prog *all_float_ops(int64_t n, loop_kind kind)
{
	loop_prog *p = loop_prog_new("float_ops");
	loop_buffer *X = add_arg(p, "X", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *Y = add_arg(p, "Y", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *O = add_arg(p, "O", TESSEL_F32, 2, SHAPE(20, n), true);
	loop_buffer *D = add_arg(p, "D", TESSEL_F64, 1, SHAPE(n), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *x = load(p, X, var(p, i)), *y = load(p, Y, var(p, i));
	loop_expr *ax = op1(p, TESSEL_ABS, x);
	loop_expr *v[20] = {
		op1(p, TESSEL_EXP, x),
		op1(p, TESSEL_LOG, op2(p, TESSEL_ADD, ax, f32(p, 1))),
		op1(p, TESSEL_SQRT, ax),
		op1(p, TESSEL_RSQRT, op2(p, TESSEL_ADD, ax, f32(p, 0.5))),
		op1(p, TESSEL_TANH, x),
		op1(p, TESSEL_ERF, x),
		op1(p, TESSEL_SIGMOID, x),
		ax,
		op1(p, TESSEL_FLOOR, op2(p, TESSEL_MUL, x, f32(p, 4))),
		op1(p, TESSEL_NEG, x),
		op2(p, TESSEL_POW, ax, f32(p, 1.5)),
		op2(p, TESSEL_MIN, x, y),
		op2(p, TESSEL_MAX, x, y),
		op2(p, TESSEL_MOD, x, f32(p, 0.3)),
		lx_select(p, lx_cmp(p, TESSEL_GT, x, y), f32(p, 1), f32(p, -1), TESSEL_F32),
		op2(p, TESSEL_DIV, x, op2(p, TESSEL_ADD, ax, f32(p, 1))),
		lx_select(p, lx_binary(p, TESSEL_OR, lx_unary(p, TESSEL_NOT,
			lx_cmp(p, TESSEL_LT, x, f32(p, -0.5)), TESSEL_BOOL),
			lx_bool(p, false), TESSEL_BOOL), f32(p, 3), f32(p, 4), TESSEL_F32),
		lx_cast(p, TESSEL_F32, op2(p, TESSEL_MUL, lx_cast(p, TESSEL_F64, x),
			lx_float(p, 1.0 / 3.0, TESSEL_F64))),
		op2(p, TESSEL_SUB, lx_cast(p, TESSEL_F32, lx_cast(p, TESSEL_F16, x)), y),
		lx_select(p, lx_cmp(p, TESSEL_EQ, lx_int(p, 0), lx_int(p, 0)), x, y,
			TESSEL_F32),
	};
	loop_stmt *body = ls_seq(p, 0, NULL);
	for (int k = 0; k < 20; k++)
		ls_seq_append(p, body, store(p, O, v[k], lx_int(p, k), var(p, i)));
	ls_seq_append(p, body, store(p, D, op2(p, TESSEL_ADD,
		op1(p, TESSEL_EXP, lx_cast(p, TESSEL_F64, x)), lx_cast(p, TESSEL_F64, y)),
		var(p, i)));
	p->body = loop(p, i, n, kind, body);
	return p;
}

/* Put NaNs and equal pairs among the inputs. */
static void nans(tessel_tensor *const *args)
{
	tessel_tensor_set(args[0], 1, NAN);
	tessel_tensor_set(args[1], 2, NAN);
	tessel_tensor_set(args[0], 3, NAN);
	tessel_tensor_set(args[1], 3, NAN);
	tessel_tensor_set(args[0], 4, 0.25);
	tessel_tensor_set(args[1], 4, 0.25);
}

Test(codegen, vector_float_operators)
{
	for (int w = 0; w <= 64; w = w ? 2 * w : 16) {
		loop_prog *p = all_float_ops(37, LOOP_VECTORIZED);
		char *src = check_program(p, w, 1, nans);
		if (w == 64) {
			expect_text(src, "tsl_vtanh_f32x8(", true);
			expect_text(src, "tsl_vmin_f64x8(", false);
			expect_text(src, "tsl_vselect_f32x8(", true);
			expect_text(src, "#pragma GCC ivdep", false);
		}
		free(src);
		loop_prog_free(p);
	}
	loop_prog *p = all_float_ops(37, LOOP_SERIAL);
	check(p, 0, 1, nans);
	loop_prog_free(p);
}

/* B[i] = select(A[i] < 0 || A[i + 1] > 0, 1, 2): the right side of ||
 * loads, so the loop stays scalar. */
Test(codegen, vector_logical_with_load_falls_back)
{
	loop_prog *p = loop_prog_new("logical");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(17), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(16), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *c = lx_binary(p, TESSEL_OR,
		lx_cmp(p, TESSEL_LT, load(p, A, var(p, i)), f32(p, 0)),
		lx_cmp(p, TESSEL_GT, load(p, A, lx_add(p, var(p, i), lx_int(p, 1))),
			f32(p, 0)), TESSEL_BOOL);
	p->body = loop(p, i, 16, LOOP_VECTORIZED, store(p, B,
		lx_select(p, c, f32(p, 1), f32(p, 2), TESSEL_F32), var(p, i)));
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "#pragma GCC ivdep", true);
	expect_text(src, "B[i] = A[i] < 0.0f || A[i + 1] > 0.0f ? 1.0f : 2.0f;", true);
	free(src);
	loop_prog_free(p);
}

/* A vectorized loop under an invariant condition and with a condition
 * that varies (scalar then). */
Test(codegen, vector_conditions)
{
	loop_prog *p = loop_prog_new("cond");
	loop_buffer *A = add_arg(p, "A", TESSEL_F64, 2, SHAPE(3, 10), false);
	loop_buffer *C = add_arg(p, "C", TESSEL_F64, 2, SHAPE(3, 10), true);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_var *k = loop_var_new(p, "k");
	loop_stmt *inv = ls_if(p, lx_cmp(p, TESSEL_LT, var(p, i), lx_int(p, 2)),
		store(p, C, load(p, A, var(p, i), var(p, j)), var(p, i), var(p, j)),
		store(p, C, lx_float(p, 7, TESSEL_F64), var(p, i), var(p, j)));
	loop_stmt *vary = ls_if(p, lx_cmp(p, TESSEL_LT, var(p, k), lx_int(p, 5)),
		store(p, C, op2(p, TESSEL_MUL, load(p, C, var(p, i), var(p, k)),
			lx_float(p, 2, TESSEL_F64)), var(p, i), var(p, k)), NULL);
	p->body = loop(p, i, 3, LOOP_SERIAL, seq(p, 2,
		loop(p, j, 10, LOOP_VECTORIZED, inv), loop(p, k, 10, LOOP_VECTORIZED, vary)));
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "tsl_vstore_f64x8(&C[i * 10 + j], tsl_vload_f64x8(&A[i * 10 + j]));",
		true);
	expect_text(src, "for (int64_t j = 8; j < 10; j += 2) {", true);
	expect_text(src, "#pragma GCC ivdep\n\t\tfor (int64_t k = 0; k < 10; k++) {", true);
	free(src);
	loop_prog_free(p);
}

/* ---- integers ----------------------------------------------------------------- */

/* Make the i32 (argument 1) and i64 (argument 2) values large. */
static void big_ints(tessel_tensor *const *args)
{
	for (int64_t i = 0; i < 32; i++) {
		int64_t v = tessel_tensor_get_i64(args[1], i);
		tessel_tensor_set_i64(args[1], i, v * 300007 + (i % 3 ? 0 : INT32_MIN));
		tessel_tensor_set_i64(args[2], i, tessel_tensor_get_i64(args[2], i) *
			(INT64_C(1) << 59));
	}
}

/* Integer arithmetic that wraps: i8 and i32 products, i64 helpers, pow,
 * abs, neg, min and max of loaded values. */
Test(codegen, integer_wrapping)
{
	loop_prog *p = loop_prog_new("ints");
	loop_buffer *A = add_arg(p, "A", TESSEL_I8, 1, SHAPE(32), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_I32, 1, SHAPE(32), false);
	loop_buffer *L = add_arg(p, "L", TESSEL_I64, 1, SHAPE(32), false);
	loop_buffer *O8 = add_arg(p, "O8", TESSEL_I8, 2, SHAPE(3, 32), true);
	loop_buffer *O32 = add_arg(p, "O32", TESSEL_I32, 2, SHAPE(3, 32), true);
	loop_buffer *O64 = add_arg(p, "O64", TESSEL_I64, 2, SHAPE(5, 32), true);
	loop_var *i = loop_var_new(p, "i");
	loop_expr *a = load(p, A, var(p, i)), *b = load(p, B, var(p, i));
	loop_expr *l = load(p, L, var(p, i));
	loop_expr *k100 = lx_cast(p, TESSEL_I8, lx_int(p, 100));
	loop_stmt *body = seq(p, 11,
		store(p, O8, lx_binary(p, TESSEL_ADD, lx_binary(p, TESSEL_MUL, a, a,
			TESSEL_I8), k100, TESSEL_I8), lx_int(p, 0), var(p, i)),
		store(p, O8, lx_unary(p, TESSEL_NEG, a, TESSEL_I8), lx_int(p, 1), var(p, i)),
		store(p, O8, lx_unary(p, TESSEL_ABS, a, TESSEL_I8), lx_int(p, 2), var(p, i)),
		store(p, O32, lx_binary(p, TESSEL_MUL, b, b, TESSEL_I32), lx_int(p, 0), var(p, i)),
		store(p, O32, lx_binary(p, TESSEL_POW, b, lx_cast(p, TESSEL_I32, lx_int(p, 3)),
			TESSEL_I32), lx_int(p, 1), var(p, i)),
		store(p, O32, lx_binary(p, TESSEL_SUB, b, lx_cast(p, TESSEL_I32, var(p, i)),
			TESSEL_I32), lx_int(p, 2), var(p, i)),
		store(p, O64, lx_binary(p, TESSEL_MUL, l, l, TESSEL_I64), lx_int(p, 0), var(p, i)),
		store(p, O64, lx_binary(p, TESSEL_ADD, l, l, TESSEL_I64), lx_int(p, 1), var(p, i)),
		store(p, O64, lx_binary(p, TESSEL_MIN, l, lx_int(p, 3), TESSEL_I64),
			lx_int(p, 2), var(p, i)),
		store(p, O64, lx_binary(p, TESSEL_MAX, l, lx_cast(p, TESSEL_I64, a),
			TESSEL_I64), lx_int(p, 3), var(p, i)),
		store(p, O64, lx_select(p, lx_binary(p, TESSEL_AND,
			lx_cmp(p, TESSEL_LT, var(p, i), lx_int(p, 16)),
			lx_cmp(p, TESSEL_GT, load(p, L, lx_add(p, var(p, i), lx_int(p, 16))),
				lx_int(p, 0)), TESSEL_BOOL), l, lx_int(p, -1), TESSEL_I64),
			lx_int(p, 4), var(p, i)));
	p->body = loop(p, i, 16, LOOP_SERIAL, body);
	char *src = check_program(p, 64, 1, big_ints);
	expect_text(src, "O8[i] = (int8_t)((int8_t)(A[i] * A[i]) + 100);", true);
	expect_text(src, "O8[i + 32] = (int8_t)(-A[i]);", true);
	expect_text(src, "O32[i] = (int32_t)tsl_wrap_mul(B[i], B[i]);", true);
	expect_text(src, "O64[i] = tsl_wrap_mul(L[i], L[i]);", true);
	free(src);
	loop_prog_free(p);
}

/* ---- allocations ------------------------------------------------------------ */

/* T[i] = A[i] * 2 in a temporary of "n" elements, then
 * B[i] = T[i] + T[n - 1 - i]. */
static loop_prog *temporary(int64_t n, loop_scope scope)
{
	loop_prog *p = loop_prog_new("temp");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(n), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(n), true);
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1, SHAPE(n), scope);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_stmt *fill = loop(p, i, n, LOOP_SERIAL, store(p, T,
		op2(p, TESSEL_MUL, load(p, A, var(p, i)), f32(p, 2)), var(p, i)));
	loop_stmt *use = loop(p, j, n, LOOP_SERIAL, store(p, B,
		op2(p, TESSEL_ADD, load(p, T, var(p, j)),
			load(p, T, lx_sub(p, lx_int(p, n - 1), var(p, j)))), var(p, j)));
	p->body = ls_alloc(p, T, seq(p, 2, fill, use));
	return p;
}

Test(codegen, allocation_on_the_stack)
{
	loop_prog *p = temporary(16, LOOP_LOCAL);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "float T[16] __attribute__((aligned(64)));", true);
	expect_text(src, "tsl_workspace", false);
	free(src);
	loop_prog_free(p);
}

Test(codegen, allocation_on_the_heap)
{
	loop_prog *p = temporary(100000, LOOP_GLOBAL);
	char *src = check_program(p, 64, 1, NULL);
	expect_text(src, "float *restrict T = tsl_workspace(env, 400000);", true);
	expect_text(src, "\tenv->workspace_pop(env, 1);\n\treturn 0;\n", true);
	free(src);
	loop_prog_free(p);
}

/* Per-row temporaries inside a parallel loop: one of "n" floats for
 * each chunk, T[j] = A[r, j] * 2, then B[r, j] = T[j] + r. */
static loop_prog *parallel_temporary(int64_t n)
{
	loop_prog *p = loop_prog_new("ptemp");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, n), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 2, SHAPE(4, n), true);
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1, SHAPE(n), LOOP_LOCAL);
	loop_var *r = loop_var_new(p, "r"), *i = loop_var_new(p, "i");
	loop_var *j = loop_var_new(p, "j");
	loop_stmt *fill = loop(p, i, n, LOOP_VECTORIZED, store(p, T,
		op2(p, TESSEL_MUL, load(p, A, var(p, r), var(p, i)), f32(p, 2)), var(p, i)));
	loop_stmt *use = loop(p, j, n, LOOP_SERIAL, store(p, B,
		op2(p, TESSEL_ADD, load(p, T, var(p, j)), lx_cast(p, TESSEL_F32, var(p, r))),
		var(p, r), var(p, j)));
	p->body = loop(p, r, 4, LOOP_PARALLEL, ls_alloc(p, T, seq(p, 2, fill, use)));
	return p;
}

Test(codegen, allocation_in_parallel_body)
{
	loop_prog *p = parallel_temporary(20000);
	char *src = check_program(p, 64, 4, NULL);
	expect_text(src, "__atomic_store_n(&captured->status, 1, __ATOMIC_RELAXED);", true);
	expect_text(src, "if (closure0.status) {\n\t\tstatus = 1;\n\t}", true);
	expect_text(src, "return status;", true);
	free(src);
	loop_prog_free(p);
	p = parallel_temporary(100);
	src = check_program(p, 64, 4, NULL);
	expect_text(src, "float T[100] __attribute__((aligned(64)));", true);
	expect_text(src, "status", false);
	free(src);
	loop_prog_free(p);
}

/* A heap temporary comes from the runtime's workspace: every block a
 * call takes is given back, and the next call reuses it, from the
 * kernel and from the chunks of a parallel body. */
Test(codegen, heap_temporaries_reuse_the_workspace)
{
	for (int outlined = 0; outlined < 2; outlined++) {
		loop_prog *p = outlined ? parallel_temporary(20000)
			: temporary(100000, LOOP_GLOBAL);
		kernel k;
		build_with(p, 64, NULL, &k);
		int64_t n = outlined ? 4 * 20000 : 100000;
		size_t block = (outlined ? 20000 : 100000) * sizeof(float);
		float *a = calloc((size_t)n, sizeof(float));
		float *b = calloc((size_t)n, sizeof(float));
		void *args[2] = { a, b };
		rt_pool *pool = rt_pool_new(outlined ? 2 : 1);
		tessel_kernel_env env;
		rt_pool_env(pool, &env);
		rt_workspace_release();
		cr_expect_eq(k.fn(args, &env), 0);
		cr_expect_eq(rt_workspace_taken(), 0);
		void *first = rt_workspace_alloc(block);
		rt_workspace_pop(1);
		for (int call = 0; call < 3; call++) {
			cr_expect_eq(k.fn(args, &env), 0);
			cr_expect_eq(rt_workspace_taken(), 0);
		}
		void *again = rt_workspace_alloc(block);
		cr_expect_eq(again, first, "the calls took and gave back the block kept");
		rt_workspace_pop(1);
		rt_workspace_release();
		rt_pool_free(pool);
		rt_module_close(k.module);
		free(k.source);
		free(a);
		free(b);
		loop_prog_free(p);
	}
}

/* An allocation the system refuses makes the kernel return 1, from the
 * kernel and from a parallel body.  Compiled without optimization, so
 * that the compiler cannot elide the allocation (clang does). */
Test(codegen, allocation_failure_returns_nonzero)
{
#ifdef UNDER_ASAN
	cr_skip_test("AddressSanitizer aborts on impossible allocations");
#else
	static const char *const unoptimized[] = { "-O0", "-fPIC", "-shared",
		"-std=gnu17", NULL };
	for (int outlined = 0; outlined < 2; outlined++) {
		loop_prog *p = loop_prog_new("huge");
		loop_buffer *A = add_arg(p, "A", TESSEL_F32, 1, SHAPE(4), true);
		loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1,
			SHAPE(INT64_C(1) << 50), LOOP_GLOBAL);
		loop_var *i = loop_var_new(p, "i");
		loop_stmt *body = seq(p, 2, store(p, T, f32(p, 1), var(p, i)),
			store(p, A, load(p, T, var(p, i)), var(p, i)));
		p->body = outlined ?
			loop(p, i, 4, LOOP_PARALLEL, ls_alloc(p, T, body)) :
			ls_alloc(p, T, loop(p, i, 4, LOOP_SERIAL, body));
		kernel k;
		build_with(p, 64, unoptimized, &k);
		float data[4] = { 0 };
		void *args[1] = { data };
		rt_pool *pool = rt_pool_new(2);
		tessel_kernel_env env;
		rt_pool_env(pool, &env);
		cr_expect_eq(k.fn(args, &env), 1);
		rt_pool_free(pool);
		rt_module_close(k.module);
		free(k.source);
		loop_prog_free(p);
	}
#endif
}

/* ---- refusals, names, pragmas -------------------------------------------------- */

Test(codegen, gpu_loops_refused_on_the_cpu)
{
	loop_prog *p = shifted_rows(LOOP_BLOCK_X, LOOP_THREAD_X);
	tessel_ctx *ctx = tessel_ctx_new();
	cg_target t = { CG_DIALECT_C, 64, 0 };
	cr_assert_null(cg_print_c(p, &t, ctx));
	cr_assert(strstr(tessel_ctx_error(ctx)->message,
		"loop bound to blockIdx.x cannot run on the CPU"),
		"%s", tessel_ctx_error(ctx)->message);
	t.dialect = CG_DIALECT_CUDA;
	char *cuda = cg_print_c(p, &t, ctx);
	cr_assert(cuda, "%s", tessel_ctx_error(ctx)->message);
	cr_expect(strstr(cuda, "(int64_t)blockIdx.x"), "%s", cuda);
	free(cuda);
	t = (cg_target){ CG_DIALECT_C, 24, 0 };
	cr_assert_null(cg_print_c(p, &t, ctx));
	cr_assert(strstr(tessel_ctx_error(ctx)->message, "vector width 24"));
	tessel_ctx_free(ctx);
	loop_prog_free(p);
}

/* IR names with dots, C keywords and helper prefixes become distinct
 * C identifiers. */
Test(codegen, names_made_identifiers)
{
	loop_prog *p = loop_prog_new("my.kernel");
	loop_buffer *A = add_arg(p, "for", TESSEL_F32, 2, SHAPE(3, 4), false);
	loop_buffer *B = add_arg(p, "tsl_x", TESSEL_F32, 2, SHAPE(3, 4), true);
	loop_var *a = loop_var_new(p, "i.o"), *b = loop_var_new(p, "i_o");
	loop_var *c = loop_var_new(p, "int");
	loop_expr *value = op2(p, TESSEL_ADD, load(p, A, var(p, a), var(p, b)),
		lx_cast(p, TESSEL_F32, var(p, c)));
	p->body = loop(p, c, 2, LOOP_SERIAL, loop(p, a, 3, LOOP_PARALLEL,
		loop(p, b, 4, LOOP_SERIAL, store(p, B, value, var(p, a), var(p, b)))));
	char *src = check_program(p, 64, 2, NULL);
	expect_text(src, "int my_kernel(void *const *args", true);
	expect_text(src, "const float *restrict for_1 = args[0];", true);
	expect_text(src, "float *restrict vtsl_x = args[1];", true);
	expect_text(src, "vtsl_x[i_o * 4 + i_o_1] = for_1[i_o * 4 + i_o_1] + (float)int_1;",
		true);
	free(src);
	char name[64];
	cg_kernel_name(p, name, sizeof(name));
	cr_assert_str_eq(name, "my_kernel");
	loop_prog_free(p);
}

/* A kernel named like a math function ("exp", an op of the library)
 * compiles: its symbol is "kernel_exp"; a buffer named "expf" too. */
Test(codegen, kernel_named_like_a_library_function)
{
	loop_prog *p = loop_prog_new("exp");
	loop_buffer *A = add_arg(p, "expf", TESSEL_F32, 1, SHAPE(8), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(8), true);
	loop_var *i = loop_var_new(p, "i");
	p->body = loop(p, i, 8, LOOP_SERIAL, store(p, B,
		op1(p, TESSEL_EXP, load(p, A, var(p, i))), var(p, i)));
	char *src = check_program(p, 0, 1, NULL);
	expect_text(src, "int kernel_exp(void *const *args", true);
	expect_text(src, "B[i] = expf(expf_1[i]);", true);
	free(src);
	loop_prog_free(p);
}

Test(codegen, unroll_pragmas)
{
	loop_prog *p = shifted_rows(LOOP_SERIAL, LOOP_UNROLLED);
	p->body->u.for_.unroll_limit = 8;
	char *src = check_program(p, 0, 1, NULL);
	expect_text(src, "#pragma GCC unroll", true);
	expect_text(src, "#pragma GCC unroll 6\n", false);
	expect_text(src, "\t\t#pragma GCC unroll 32\n\t\tfor (int64_t j = 2; j < 34; j++) {",
		true);
	free(src);
	p->body->u.for_.unroll_limit = 6 * 32;
	src = check_program(p, 0, 1, NULL);
	expect_text(src, "#pragma GCC unroll 6\n\tfor (int64_t i = 0; i < 6; i++) {", true);
	free(src);
	loop_prog_free(p);
}

/* auto_unroll_max_step unrolls the loops inside the annotated one whose
 * whole run fits, and not the annotated loop when it does not. */
Test(codegen, auto_unroll_inner_loops)
{
	loop_prog *p = shifted_rows(LOOP_SERIAL, LOOP_SERIAL);
	p->body->u.for_.unroll_limit = 32;
	char *src = check_program(p, 0, 1, NULL);
	expect_text(src, "\t\t#pragma GCC unroll 32\n\t\tfor (int64_t j = 2; j < 34; j++) {",
		true);
	expect_text(src, "#pragma GCC unroll 6\n", false);
	free(src);
	p->body->u.for_.unroll_limit = 31;
	src = check_program(p, 0, 1, NULL);
	expect_text(src, "#pragma GCC unroll", false);
	free(src);
	loop_prog_free(p);
}

/* ---- random schedules -------------------------------------------------------- */

/* Lowered random schedules of library ops (vectorized, parallel, split,
 * fused, computed at, inlined) print, compile and match the evaluator,
 * with vectors and without. */
Test(codegen, random_schedules_match_evaluator)
{
	static const char *const cases[][17] = {
		{ "matmul", "M", "12", "N", "10", "K", "7" },
		{ "conv2d", "N", "1", "C", "3", "H", "7", "W", "6", "F", "4", "R", "3",
		  "S", "3", "padding", "1" },
		{ "softmax", "shape", "[5, 7]" },
		{ "layer_norm", "shape", "[4, 9]" },
		{ "gelu", "shape", "[6, 5]" },
		{ "max_pool2d", "N", "1", "C", "2", "H", "7", "W", "7", "kernel", "3",
		  "stride", "2", "padding", "1" },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		const char *keys[8], *values[8];
		int n = 0;
		while (n < 8 && cases[c][1 + 2 * n]) {
			keys[n] = cases[c][1 + 2 * n];
			values[n] = cases[c][2 + 2 * n];
			n++;
		}
		tessel_ctx *ctx = tessel_ctx_new();
		tessel_op *op = tessel_ops_instantiate(ctx, cases[c][0], n, keys, values);
		cr_assert(op, "instantiating %s", cases[c][0]);
		for (int k = 0; k < 4; k++) {
			sch_state *st = sch_state_new(ctx, op);
			sch_random_schedule(st, 4242 + 7919 * (uint64_t)k + c, 12);
			loop_prog *p = sch_program(st);
			cr_assert(p, "lowering %s", cases[c][0]);
			check(p, 64, 2, NULL);
			check(p, 0, 1, NULL);
			loop_prog_free(p);
			sch_state_free(st);
		}
		tessel_op_release(op);
		tessel_ctx_free(ctx);
	}
}

/* The relative error against the interpreter of "op" (three
 * arguments: two inputs, one output) compiled under the schedule "text",
 * printed for vectors of "vector_bytes", with "flags" (NULL: the
 * defaults, this machine's); expect its loop
 * program to hold "line" and its source to hold "needle" or not, where
 * given.  Releases "op". */
static double scheduled_error(tessel_ctx *ctx, tessel_op *op, const char *text,
	const char *const *flags, const char *line, const char *needle, bool present,
	int vector_bytes)
{
	sch_state *st = sch_state_new(ctx, op);
	sch_trace *t = sch_trace_parse(ctx, "t.trace", text);
	cr_assert(t && sch_replay(st, t, "t.trace") == 0, "%s",
		tessel_ctx_error(ctx)->message);
	loop_prog *p = sch_program(st);
	cr_assert(p);
	char *printed = line ? loop_prog_print(p) : NULL;
	cr_expect(!line || strstr(printed, line), "no \"%s\" in\n%s", line, printed);
	free(printed);
	tessel_tensor *args[3], *want[1];
	void *data[3];
	for (int i = 0; i < 3; i++) {
		const loop_buffer *b = p->args[i];
		args[i] = tessel_tensor_new(b->dtype, b->ndim, b->shape, NULL, 0);
		cr_assert(args[i]);
		tessel_tensor_fill_random(args[i], 500 + (uint64_t)i);
		data[i] = args[i]->data;
	}
	want[0] = tessel_tensor_new(p->args[2]->dtype, 2, p->args[2]->shape, NULL, 0);
	cr_assert(want[0] && tessel_interp(op, args, want) == 0);
	kernel kern;
	build_with(p, vector_bytes, flags, &kern);
	if (needle)
		expect_text(kern.source, needle, present);
	tessel_kernel_env env;
	rt_pool_env(NULL, &env);
	cr_assert_eq(kern.fn(data, &env), 0);
	double err = test_outputs_error(args + 2, want, 1);
	free(kern.source);
	rt_module_close(kern.module);
	for (int i = 0; i < 3; i++)
		tessel_tensor_free(args[i]);
	tessel_tensor_free(want[0]);
	loop_prog_free(p);
	sch_trace_free(t);
	sch_state_free(st);
	tessel_op_release(op);
	return err;
}

/* scheduled_error of the built-in matmul with the six attributes "kv"
 * (name, value). */
static double matmul_error(const char *const *kv, const char *text,
	const char *const *flags, const char *needle, bool present)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 6,
		(const char *[]){ kv[0], kv[2], kv[4], kv[6], kv[8], kv[10] },
		(const char *[]){ kv[1], kv[3], kv[5], kv[7], kv[9], kv[11] });
	cr_assert(op, "%s", tessel_ctx_error(ctx)->message);
	double err = scheduled_error(ctx, op, text, flags, NULL, needle, present, 64);
	tessel_ctx_free(ctx);
	return err;
}

/* The largest relative error against the interpreter of f16 matmul
 * 4x4x"k" compiled under the schedule "text"; expect the loop program to
 * hold "line". */
static double f16_sum_error(const char *k, const char *text, const char *line)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 4,
		(const char *[]){ "M", "N", "K", "dtype" },
		(const char *[]){ "4", "4", k, "f16" });
	cr_assert(op);
	double err = scheduled_error(ctx, op, text, NULL, line, NULL, false, 64);
	tessel_ctx_free(ctx);
	return err;
}

/* An f16 sum accumulates in f32 and rounds once, as the interpreter
 * does: an output whose elements are reduced one after the other (the
 * default schedule) in a scalar accumulator, a stage that is no output
 * (a cache) in an f32 buffer.  Over 4096 terms an output whose element
 * loop runs inside the reduction, summed in its own f16 buffer, is off
 * by about 1e-2. */
Test(codegen, f16_sums_accumulate_in_f32)
{
	double scalar = f16_sum_error("4096", "", "alloc C_acc: f32[1] local");
	double cached = f16_sum_error("4096", "cache_write C local -> C_local\n"
		"compute_at C_local C.j\n", "alloc C_local: f32[1, 1] local");
	double own = f16_sum_error("4096", "reorder C.i C.k C.j\n",
		"C[i, j] = C[i, j] + A[i, k] * B[k, j]");
	cr_log_info("f16 sum of 4096 terms: error %g with a scalar accumulator, %g "
		"through a cache, %g in the f16 output", scalar, cached, own);
	cr_expect_lt(scalar, 1e-3, "error %g with a scalar accumulator", scalar);
	cr_expect_lt(cached, 1e-3, "error %g through the cache", cached);
	cr_expect_gt(own, 3 * fmax(scalar, cached), "error %g in the f16 output", own);
}

/* A register tile of C = A * B, 6 rows by a column split of "%d",
 * summing pairs of k in one instruction (dot_pairs). */
static const char pairs_trace[] =
	"cache_write C local -> C_local\n"
	"split C.i 6 -> C.io C.ii\n"
	"split C.j %d -> C.jo C.ji\n"
	"reorder C.io C.jo C.ii C.ji\n"
	"compute_at C_local C.jo\n"
	"split C_local.k 2 -> C_local.ko C_local.kk\n"
	"reorder C_local.ko C_local.i C_local.kk C_local.j\n"
	"unroll C_local.i\n"
	"vectorize C_local.j\n"
	"annotate C_local.kk dot_pairs 1\n";

/* A loop of two reduction iterations annotated dot_pairs around a
 * vector loop of bf16 products sums them with vdpbf16ps, in the loop's
 * order (the results are the plain loop's, bit for bit: a product of two
 * bf16 values is exact in f32), the broadcast pair adjacent in A or a
 * row apart (A transposed), the lanes past the last whole vector (24 =
 * 16 + 8) in plain loops after; compiled for the host without AVX512
 * BF16 it runs the plain loop.  A vector loop of 8 lanes (no whole
 * vector), or lanes that read B across its rows (B transposed), stay
 * plain.  B packed in pairs ([k / 2, j, k % 2], plain or transposed) is
 * one load a vector, its halves swapped, and sums as the plain loop. */
Test(codegen, bf16_dot_pairs)
{
	char t32[1024], t24[1024], t8[1024];
	snprintf(t32, sizeof(t32), pairs_trace, 32);
	snprintf(t24, sizeof(t24), pairs_trace, 24);
	snprintf(t8, sizeof(t8), pairs_trace, 8);
	const char *plain[] = { "M", "30", "N", "64", "K", "40", "transpose_a", "0",
		"transpose_b", "0", "dtype", "bf16" };
	const char *n48[] = { "M", "30", "N", "48", "K", "40", "transpose_a", "0",
		"transpose_b", "0", "dtype", "bf16" };
	const char *at[] = { "M", "30", "N", "64", "K", "40", "transpose_a", "1",
		"transpose_b", "0", "dtype", "bf16" };
	const char *bt[] = { "M", "30", "N", "64", "K", "40", "transpose_a", "0",
		"transpose_b", "1", "dtype", "bf16" };
	const char *no_bf16[] = { "-O3", "-march=native", "-mno-avx512bf16", "-fPIC",
		"-shared", "-std=gnu17", NULL };
	double e1 = matmul_error(plain, t32, NULL, "_mm512_dpbf16_ps(tsl_acc", true);
	double e2 = matmul_error(at, t32, NULL, "_mm512_dpbf16_ps(tsl_acc", true);
	double e3 = matmul_error(plain, t32, no_bf16, "_mm512_dpbf16_ps(tsl_acc", true);
	double e4 = matmul_error(n48, t24, NULL, "_mm512_dpbf16_ps(tsl_acc", true);
	double e5 = matmul_error(bt, t32, NULL, "_mm512_dpbf16_ps", false);
	double e6 = matmul_error(n48, t8, NULL, "_mm512_dpbf16_ps", false);
	cr_expect(e1 < 1e-2 && e2 < 1e-2 && e3 < 1e-2 && e4 < 1e-2 && e5 < 1e-2 &&
		e6 < 1e-2, "errors %g %g %g %g %g %g", e1, e2, e3, e4, e5, e6);
	cr_expect_eq(e4, matmul_error(n48, t24, no_bf16, NULL, false),
		"the remainder lanes sum as the plain loop does");
	cr_expect_eq(e1, e3, "paired %g, plain %g", e1, e3);
	char packed[1200], packed_bt[1200];
	snprintf(packed, sizeof(packed), "cache_read B global C -> B_global\n"
		"split_storage B_global.ax0 2\n"
		"reorder_storage B_global.ax0o B_global.ax1 B_global.ax0i\n%s", t32);
	snprintf(packed_bt, sizeof(packed_bt), "cache_read B global C -> B_global\n"
		"split_storage B_global.ax1 2\n"
		"reorder_storage B_global.ax1o B_global.ax0 B_global.ax1i\n%s", t32);
	cr_expect_eq(matmul_error(plain, packed, NULL, "_mm512_rol_epi32(tsl_lanes[0], 16)",
		true), e3, "B packed in pairs sums as the plain loop does");
	cr_expect_eq(matmul_error(bt, packed_bt, NULL, "_mm512_rol_epi32(tsl_lanes[0], 16)",
		true), matmul_error(bt, packed_bt, no_bf16, NULL, false),
		"B transposed, packed in pairs");
}

/* scheduled_error of the op in the .te text "src" bound to M=30, N=64,
 * K=40, printed for vectors of "vector_bytes". */
static double te_op_error_at(const char *src, const char *text,
	const char *const *flags, const char *needle, bool present, int vector_bytes)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse(ctx, "q.te", src, strlen(src));
	cr_assert(m, "%s", tessel_ctx_error(ctx)->message);
	tessel_op *op = tessel_op_bind(tessel_module_find(ctx, m, NULL), 3,
		(const char *[]){ "M", "N", "K" }, (const int64_t[]){ 30, 64, 40 });
	tessel_module_free(m);
	cr_assert(op, "%s", tessel_ctx_error(ctx)->message);
	double err = scheduled_error(ctx, op, text, flags, NULL, needle, present,
		vector_bytes);
	tessel_ctx_free(ctx);
	return err;
}

static double te_op_error(const char *src, const char *text,
	const char *const *flags, const char *needle, bool present)
{
	return te_op_error_at(src, text, flags, needle, present, 64);
}

/* A register tile of C = A * B, 6 rows by 32 columns, summing A's
 * quads of k in vpdpbusd; and the flags of a target without AVX512 VNNI
 * (its plain loop). */
static const char quads_trace[] =
	"cache_write C local -> C_local\n"
	"split C.i 6 -> C.io C.ii\n"
	"split C.j 32 -> C.jo C.ji\n"
	"reorder C.io C.jo C.ii C.ji\n"
	"compute_at C_local C.jo\n"
	"split C_local.k 4 -> C_local.ko C_local.kk\n"
	"reorder C_local.ko C_local.i C_local.kk C_local.j\n"
	"unroll C_local.i\n"
	"vectorize C_local.j\n"
	"annotate C_local.kk dot_quads 1\n";
static const char *const no_vnni[] = { "-O3", "-march=native", "-mno-avx512vnni", "-fPIC",
	"-shared", "-std=gnu17", NULL };

/* A loop of four reduction iterations annotated dot_quads around a
 * vector loop of products of i8 values summed into i32 runs on
 * vpdpbusd (unsigned by signed bytes: one side offset by 128, the
 * offset's products taken off), exactly, the quad of the invariant
 * operand adjacent in A or a row apart; compiled for the host without
 * AVX512 VNNI (and on a host without it) it runs the plain loop. */
Test(codegen, i8_dot_quads)
{
	static const char *const src[] = {
		"op q(A: i8[M, K], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: i8[K, M], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[k, i]) * i32(B[k, j])\n}\n",
	};
	for (int i = 0; i < 2; i++)
		cr_expect_eq(te_op_error(src[i], quads_trace, NULL, "_mm512_dpbusd_epi32(tsl_acc",
			true), 0, "%s", src[i]);
	cr_expect_eq(te_op_error(src[0], quads_trace, no_vnni, "_mm512_dpbusd_epi32(tsl_acc",
		true), 0);
}

/* Quads of u8 with i8 in either operand (vpdpbusd's own form, no offset)
 * and of two u8 operands (the contiguous one offset by -128, 128 times
 * the invariant quad's sum added back) sum exactly, over u8 inputs drawn
 * from all of [0, 256), as the plain loop does without AVX512 VNNI; with
 * B packed in quads ([k / 4, j, k % 4]) each vector of quads is one load,
 * and A's quad, adjacent, one load of 4 bytes. */
Test(codegen, u8_dot_quads)
{
	static const char *const src[] = {
		"op q(A: u8[M, K], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: i8[M, K], B: u8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: u8[M, K], B: u8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
	};
	static const char *const form[] = {
		"_mm512_dpbusd_epi32(tsl_acc, tsl_quad, tsl_quads)",
		"_mm512_dpbusd_epi32(tsl_acc, tsl_quads, tsl_quad)",
		"_mm512_add_epi32(_mm512_dpbusd_epi32(tsl_acc, tsl_quad, _mm512_xor_si512",
	};
	char packed[1200];
	snprintf(packed, sizeof(packed), "cache_read B global C -> B_global\n"
		"split_storage B_global.ax0 4\n"
		"reorder_storage B_global.ax0o B_global.ax1 B_global.ax0i\n%s", quads_trace);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(te_op_error(src[i], quads_trace, NULL, form[i], true), 0, "%s",
			src[i]);
		cr_expect_eq(te_op_error(src[i], quads_trace, no_vnni, form[i], true), 0, "%s",
			src[i]);
		cr_expect_eq(te_op_error(src[i], packed, NULL, "__m512i tsl_lanes[1];",
			true), 0, "B packed in quads: %s", src[i]);
		cr_expect_eq(te_op_error(src[i], packed, NULL, "memcpy(&tsl_bytes, &A[",
			true), 0, "A's quad one load: %s", src[i]);
	}
}

/* A register tile of C = A * B in pairs of k, 6 rows by 24 columns on a
 * target with vectors of 32 bytes (AVX2), so that vpmaddwd sums each
 * pair of 8-bit products widened to i16: exactly, for i8 and u8 in
 * either operand, over u8 values drawn from all of [0, 256).  The 64
 * columns of N leave a tile of 16, and a vector loop of 12 lanes (in
 * the second trace) one whole vector and 4 plain lanes.  Compiled for
 * x86-64 without AVX2 it runs the plain loop; B packed in pairs
 * ([k / 2, j, k % 2]) is one load of 16 bytes a vector.  With vectors
 * of 64 bytes the loop stays plain. */
Test(codegen, int8_dot_pairs_avx2)
{
	static const char *const src[] = {
		"op q(A: i8[M, K], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: u8[M, K], B: i8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: i8[M, K], B: u8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[i, k]) * i32(B[k, j])\n}\n",
		"op q(A: u8[K, M], B: u8[K, N]) -> C {\n"
		"  C[i, j] : i32[M, N] = sum(k) i32(A[k, i]) * i32(B[k, j])\n}\n",
	};
	static const char *const widen[] = { "_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(",
		"_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(", "_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(",
		"_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(" };
	static const char *const generic[] = { "-O3", "-march=x86-64", "-fPIC", "-shared",
		"-std=gnu17", NULL };
	char t24[1024], t12[1024], packed[1400];
	snprintf(t24, sizeof(t24), pairs_trace, 24);
	snprintf(t12, sizeof(t12), pairs_trace, 12);
	snprintf(packed, sizeof(packed), "cache_read B global C -> B_global\n"
		"split_storage B_global.ax0 2\n"
		"reorder_storage B_global.ax0o B_global.ax1 B_global.ax0i\n%s", t24);
	const char *sum = "_mm256_add_epi32(tsl_acc, _mm256_madd_epi16(tsl_quads";
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(te_op_error_at(src[i], t24, NULL, sum, true, 32), 0, "%s", src[i]);
		cr_expect_eq(te_op_error_at(src[i], t24, NULL, widen[i], true, 32), 0, "%s",
			src[i]);
		cr_expect_eq(te_op_error_at(src[i], t12, NULL, sum, true, 32), 0,
			"a vector and 4 lanes: %s", src[i]);
		cr_expect_eq(te_op_error_at(src[i], t24, generic, sum, true, 32), 0,
			"the plain loop: %s", src[i]);
		cr_expect_eq(te_op_error_at(src[i], packed, NULL, "(tsl_lanes[0]);", true, 32),
			0, "B packed in pairs: %s", src[i]);
		cr_expect_eq(te_op_error_at(src[i], t24, NULL, "_mm256_madd_epi16", false, 64),
			0, "no int pairs with vectors of 64 bytes: %s", src[i]);
	}
}

/* ---- golden text ---------------------------------------------------------------- */

static const char golden_scalar[] =
	"static inline float tsl_fmax_f32(float a, float b)\n"
	"{\n"
	"\treturn (a > b || b != b) ? a : b;\n"
	"}\n"
	"\n"
	"#if defined(__F16C__)\n"
	"#include <immintrin.h>\n"
	"#endif\n"
	"static inline float tsl_f16_to_f32(uint16_t h)\n"
	"{\n"
	"#if defined(__F16C__)\n"
	"\treturn _cvtsh_ss(h);\n"
	"#else\n"
	"\tuint32_t sign = ((uint32_t)h & 0x8000u) << 16;\n"
	"\tuint32_t exp = (h >> 10) & 0x1fu;\n"
	"\tuint32_t mant = h & 0x3ffu;\n"
	"\tuint32_t x;\n"
	"\tif (exp == 0x1f) {\n"
	"\t\tx = sign | 0x7f800000u | (mant << 13);\n"
	"\t} else if (exp == 0) {\n"
	"\t\tif (mant == 0) {\n"
	"\t\t\tx = sign;\n"
	"\t\t} else {\n"
	"\t\t\tint e = -1;\n"
	"\t\t\tdo {\n"
	"\t\t\t\te++;\n"
	"\t\t\t\tmant <<= 1;\n"
	"\t\t\t} while (!(mant & 0x400u));\n"
	"\t\t\tx = sign | ((uint32_t)(127 - 15 - e) << 23) |\n"
	"\t\t\t    ((mant & 0x3ffu) << 13);\n"
	"\t\t}\n"
	"\t} else {\n"
	"\t\tx = sign | ((exp + 127 - 15) << 23) | (mant << 13);\n"
	"\t}\n"
	"\tfloat f;\n"
	"\tmemcpy(&f, &x, 4);\n"
	"\treturn f;\n"
	"#endif\n"
	"}\n"
	"\n"
	"static inline int64_t tsl_floordiv(int64_t a, int64_t b)\n"
	"{\n"
	"\tif (b == 0)\n"
	"\t\treturn 0;\n"
	"\tif (b == -1)\n"
	"\t\treturn (int64_t)(0 - (uint64_t)a);\n"
	"\tint64_t q = a / b;\n"
	"\treturn (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
	"}\n"
	"\n"
	"int pool_pad(void *const *args, const tessel_kernel_env *env)\n"
	"{\n"
	"\tconst uint16_t *restrict A = args[0];\n"
	"\tfloat *restrict B = args[1];\n"
	"\t(void)env;\n"
	"\tfloat T[3] __attribute__((aligned(64)));\n"
	"\t#pragma GCC unroll 3\n"
	"\tfor (int64_t i = 0; i < 3; i++) {\n"
	"\t\tT[i] = tsl_fmax_f32(tsl_f16_to_f32(A[i * 2]), tsl_f16_to_f32(A[i * 2 + 1]));\n"
	"\t}\n"
	"\tfor (int64_t j = 0; j < 3; j++) {\n"
	"\t\tB[j] = (j >= 1 ? T[j - 1] : 0.0f) + (float)tsl_floordiv(j - 2, 2);\n"
	"\t}\n"
	"\treturn 0;\n"
	"}\n";
static const char golden_scale[] =
	"typedef float tsl_f32x8 __attribute__((vector_size(32)));\n"
	"\n"
	"typedef int32_t tsl_i32x8 __attribute__((vector_size(32)));\n"
	"\n"
	"static inline tsl_f32x8 tsl_vselect_f32x8(tsl_i32x8 m, tsl_f32x8 a, tsl_f32x8 b)\n"
	"{\n"
	"\treturn (tsl_f32x8)(((tsl_i32x8)a & m) | ((tsl_i32x8)b & ~m));\n"
	"}\n"
	"\n"
	"static inline tsl_f32x8 tsl_vmax_f32x8(tsl_f32x8 a, tsl_f32x8 b)\n"
	"{\n"
	"\treturn tsl_vselect_f32x8((a > b) | (b != b), a, b);\n"
	"}\n"
	"\n"
	"static inline tsl_f32x8 tsl_vload_f32x8(const float *p)\n"
	"{\n"
	"\ttsl_f32x8 r;\n"
	"\tmemcpy(&r, p, sizeof(r));\n"
	"\treturn r;\n"
	"}\n"
	"\n"
	"static inline tsl_f32x8 tsl_splat_f32x8(float x)\n"
	"{\n"
	"\treturn (tsl_f32x8){ x, x, x, x, x, x, x, x };\n"
	"}\n"
	"\n"
	"static inline void tsl_vstore_f32x8(float *p, tsl_f32x8 v)\n"
	"{\n"
	"\tmemcpy(p, &v, sizeof(v));\n"
	"}\n"
	"\n"
	"static inline float tsl_fmax_f32(float a, float b)\n"
	"{\n"
	"\treturn (a > b || b != b) ? a : b;\n"
	"}\n"
	"\n"
	"typedef struct scale_parallel0_closure {\n"
	"\tconst float *restrict A;\n"
	"\tfloat *restrict B;\n"
	"} scale_parallel0_closure;\n"
	"\n"
	"static void scale_parallel0(int64_t begin, int64_t end, void *closure)\n"
	"{\n"
	"\tscale_parallel0_closure *captured = closure;\n"
	"\tconst float *restrict A = captured->A;\n"
	"\tfloat *restrict B = captured->B;\n"
	"\tfor (int64_t r = begin; r < end; r++) {\n"
	"\t\tfor (int64_t c_i = 0; c_i < 8; c_i += 8) {\n"
	"\t\t\ttsl_vstore_f32x8(&B[r * 10 + c_i], tsl_vmax_f32x8(tsl_vload_f32x8(&A[r * 10 + c_i]) * tsl_splat_f32x8(2.0f), tsl_splat_f32x8(0.0f)));\n"
	"\t\t}\n"
	"\t\tfor (int64_t c_i = 8; c_i < 10; c_i++) {\n"
	"\t\t\tB[r * 10 + c_i] = tsl_fmax_f32(A[r * 10 + c_i] * 2.0f, 0.0f);\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"int scale(void *const *args, const tessel_kernel_env *env)\n"
	"{\n"
	"\tconst float *restrict A = args[0];\n"
	"\tfloat *restrict B = args[1];\n"
	"\tscale_parallel0_closure closure0 = {\n"
	"\t\t.A = A,\n"
	"\t\t.B = B,\n"
	"\t};\n"
	"\tenv->parallel_for(env, 4, scale_parallel0, &closure0);\n"
	"\treturn 0;\n"
	"}\n";

/* Return the source of "p" for "vector_bytes" from the line after the
 * kernel ABI on (the ABI is checked on its own). */
static char *body_text(const loop_prog *p, int vector_bytes)
{
	char *src = print_or_fail(p, vector_bytes);
	char *end = strstr(src, "#endif\n\n");
	cr_assert(end);
	char *text = strdup(end + strlen("#endif\n\n"));
	free(src);
	return text;
}

/* T[i] = max(A[2i], A[2i + 1]) from halves into a stack temporary, then
 * B[j] = select(j >= 1, T[j - 1], 0) + (j - 2) / 2 (floor division). */
Test(codegen, golden_scalar)
{
	loop_prog *p = loop_prog_new("pool.pad");
	loop_buffer *A = add_arg(p, "A", TESSEL_F16, 1, SHAPE(6), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 1, SHAPE(3), true);
	loop_buffer *T = loop_buffer_new(p, "T", TESSEL_F32, 1, SHAPE(3), LOOP_LOCAL);
	loop_var *i = loop_var_new(p, "i"), *j = loop_var_new(p, "j");
	loop_expr *two_i = lx_mul(p, var(p, i), lx_int(p, 2));
	loop_expr *m = op2(p, TESSEL_MAX, lx_cast(p, TESSEL_F32, load(p, A, two_i)),
		lx_cast(p, TESSEL_F32, load(p, A, lx_add(p, two_i, lx_int(p, 1)))));
	loop_expr *shifted = lx_select(p, lx_cmp(p, TESSEL_GE, var(p, j), lx_int(p, 1)),
		load(p, T, lx_sub(p, var(p, j), lx_int(p, 1))), f32(p, 0), TESSEL_F32);
	loop_expr *half = lx_cast(p, TESSEL_F32,
		lx_div(p, lx_sub(p, var(p, j), lx_int(p, 2)), lx_int(p, 2)));
	p->body = ls_alloc(p, T, seq(p, 2,
		loop(p, i, 3, LOOP_UNROLLED, store(p, T, m, var(p, i))),
		loop(p, j, 3, LOOP_SERIAL, store(p, B, op2(p, TESSEL_ADD, shifted, half),
			var(p, j)))));
	char *text = body_text(p, 0);
	if (strcmp(text, golden_scalar) != 0)
		fprintf(stderr, "%s", text);
	cr_assert_str_eq(text, golden_scalar);
	free(text);
	check(p, 0, 1, NULL);
	loop_prog_free(p);
}

/* B[r, c] = max(A[r, c] * 2, 0) with r parallel and c vectorized. */
Test(codegen, golden_parallel_vector)
{
	loop_prog *p = loop_prog_new("scale");
	loop_buffer *A = add_arg(p, "A", TESSEL_F32, 2, SHAPE(4, 10), false);
	loop_buffer *B = add_arg(p, "B", TESSEL_F32, 2, SHAPE(4, 10), true);
	loop_var *r = loop_var_new(p, "r"), *c = loop_var_new(p, "c.i");
	loop_expr *v = op2(p, TESSEL_MAX, op2(p, TESSEL_MUL,
		load(p, A, var(p, r), var(p, c)), f32(p, 2)), f32(p, 0));
	p->body = loop(p, r, 4, LOOP_PARALLEL, loop(p, c, 10, LOOP_VECTORIZED,
		store(p, B, v, var(p, r), var(p, c))));
	char *text = body_text(p, 32);
	if (strcmp(text, golden_scale) != 0)
		fprintf(stderr, "%s", text);
	cr_assert_str_eq(text, golden_scale);
	free(text);
	loop_prog_free(p);
}

/* ---- counting the compiled code ---------------------------------------------- */

/* A listing as `objdump -d --no-show-raw-insn` prints it: a loop nest
 * whose inner loop holds two FMAs, a spill and a reload. */
static const char listing[] =
	"/tmp/k.so:     file format elf64-x86-64\n"
	"\n\nDisassembly of section .text:\n\n"
	"0000000000001100 <kernel>:\n"
	"    1100:\tpush   %rbp\n"
	"    1101:\tmov    %rsp,%rbp\n"
	"    1104:\tand    $0xffffffffffffffc0,%rsp\n"
	"    1108:\tsub    $0x1c0,%rsp\n"
	"    110f:\txor    %eax,%eax\n"
	"    1111:\tvmovups (%rdi,%rax,4),%zmm0\n"
	"    1118:\tvbroadcastss (%rsi),%zmm1\n"
	"    111e:\tvfmadd231ps %zmm1,%zmm0,%zmm2\n"
	"    1124:\tvfmadd231ps 0x40(%rdx),%zmm0,%zmm3\n"
	"    112b:\tvmovaps %zmm2,0x40(%rsp)\n"
	"    1133:\tadd    $0x10,%rax\n"
	"    1137:\tcmp    %rcx,%rax\n"
	"    113a:\tjne    1111 <kernel+0x11>\n"
	"    113c:\tvmovups %zmm3,(%r8)\n"
	"    1142:\tadd    $0x1,%r9\n"
	"    1146:\tcmp    %r10,%r9\n"
	"    1149:\tjb     110f <kernel+0xf>\n"
	"    114b:\tvmovaps 0x40(%rsp),%zmm4\n"
	"    1153:\tjmp    1100 <kernel>\n"
	"    1155:\tret\n";

Test(code_stats, a_listing_is_counted_and_its_inner_loop_found)
{
	cg_code_stats s;
	cr_assert_eq(cg_code_stats_parse(listing, &s), 0);
	cr_expect_eq(s.all.instructions, 20);
	cr_expect_eq(s.all.fma, 2);
	cr_expect_eq(s.all.vector_loads, 3, "vmovups, vbroadcastss and the reload");
	cr_expect_eq(s.all.vector_stores, 2, "the spill and the store to %%r8");
	cr_expect_eq(s.all.stack_refs, 2);
	cr_expect_eq(s.all.broadcasts, 1);
	cr_expect_eq(s.all.zmm, 7);
	cr_expect_eq(s.loops, 2, "backward conditional branches; jmp is not one");
	cr_expect_eq(s.frame_bytes, 0x1c0);
	cr_expect_eq(s.inner.instructions, 8, "1111 to 113a");
	cr_expect_eq(s.inner.fma, 2);
	cr_expect_eq(s.inner.vector_loads, 2);
	cr_expect_eq(s.inner.vector_stores, 1);
	cr_expect_eq(s.inner.stack_refs, 1);
	cr_expect_eq(cg_code_stats_parse("no instructions here\n", &s), -1);
}

/* A kernel compiled by the system compiler, disassembled by objdump:
 * its loop is found, and with FMA on this CPU it is fused. */
Test(code_stats, a_compiled_kernel_is_disassembled_and_counted)
{
	char tool[4096], so[4096], err[4096];
	if (cg_code_stats_tool(tool, sizeof(tool)))
		cr_skip_test("no disassembler (objdump)");
	char dir[] = "/tmp/tessel-code-XXXXXX";
	cr_assert(mkdtemp(dir));
	cg_compile_opts opts = { .cache_dir = dir };
	const char *src =
		"void axpy(float *restrict y, const float *restrict x, float a, int n)\n"
		"{\n\tfor (int i = 0; i < n; i++)\n\t\ty[i] += a * x[i];\n}\n";
	cr_assert_eq(cg_compile_c(&opts, src, so, sizeof(so), err, sizeof(err)),
		CG_COMPILE_OK, "%s", err);
	cg_code_stats s;
	cr_assert_eq(cg_code_stats_of(tool, so, &s, err, sizeof(err)), 0, "%s", err);
	cr_expect_gt(s.all.instructions, 5);
	cr_expect_geq(s.loops, 1);
	cr_expect_gt(s.inner.instructions, 0);
	__builtin_cpu_init();
	if (__builtin_cpu_supports("fma"))
		cr_expect_geq(s.inner.fma, 1, "-march=native contracts a * x + y");
	test_remove_tree(dir);
}

/* The counts are kept beside the object: read again without running the
 * disassembler, and counted again when the file is of another format. */
Test(code_stats, the_counts_are_kept_beside_the_kernel)
{
	char tool[4096], so[4096], kept[4200], err[4096];
	if (cg_code_stats_tool(tool, sizeof(tool)))
		cr_skip_test("no disassembler (objdump)");
	char dir[] = "/tmp/tessel-code-XXXXXX";
	cr_assert(mkdtemp(dir));
	cg_compile_opts opts = { .cache_dir = dir };
	cr_assert_eq(cg_compile_c(&opts, "int twice(int x) { return 2 * x; }\n", so,
		sizeof(so), err, sizeof(err)), CG_COMPILE_OK, "%s", err);
	cg_code_stats first, again;
	cr_assert_eq(cg_code_stats_of(tool, so, &first, err, sizeof(err)), 0, "%s", err);
	snprintf(kept, sizeof(kept), "%s.stats", so);
	cr_assert_eq(access(kept, R_OK), 0, "%s is written", kept);
	memset(&again, 0xff, sizeof(again));
	cr_assert_eq(cg_code_stats_of("/nonexistent/objdump", so, &again, err,
		sizeof(err)), 0, "%s", err);
	cr_expect_eq(memcmp(&first, &again, sizeof(first)), 0);
	FILE *f = fopen(kept, "w");
	cr_assert(f);
	fputs("tessel-code-stats-0 1 2 3\n", f);
	fclose(f);
	cr_expect_eq(cg_code_stats_of("/nonexistent/objdump", so, &again, err,
		sizeof(err)), -1, "a file of another format is not trusted");
	cr_expect_eq(cg_code_stats_of(tool, so, &again, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(memcmp(&first, &again, sizeof(first)), 0);
	test_remove_tree(dir);
}

Test(code_stats, what_cannot_be_disassembled_is_an_error)
{
	char tool[4096], err[512];
	cg_code_stats s;
	cr_expect_eq(cg_code_stats_of("/nonexistent/objdump", "/bin/sh", &s, err,
		sizeof(err)), -1);
	cr_expect(strstr(err, "cannot be run"), "%s", err);
	if (cg_code_stats_tool(tool, sizeof(tool)))
		cr_skip_test("no disassembler (objdump)");
	char path[] = "/tmp/tessel-code-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "not an object\n", 14), 14);
	close(fd);
	cr_expect_eq(cg_code_stats_of(tool, path, &s, err, sizeof(err)), -1);
	cr_expect(strstr(err, path), "the message names the file: %s", err);
	unlink(path);
}
