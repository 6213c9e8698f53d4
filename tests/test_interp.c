/* The reference interpreter against results worked out by hand: each
 * expected value is a literal, with its arithmetic in a comment, never a
 * second implementation. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/te.h"
#include "tessel/tensor.h"
#include "ir/compare.h"
#include "ir/interp.h"
#include "ir/te_impl.h"
#include "tessel/ops.h"
#include "tests/support.h"

#define MAX_TENSORS 16

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define F64S(...) ((const double[]){ __VA_ARGS__ })
#define I64S(...) ((const int64_t[]){ __VA_ARGS__ })
#define NAMES(...) ((const char *const[]){ __VA_ARGS__ })

/* One evaluation: a parsed module, the bound op, its tensors. */
typedef struct interp_case {
	tessel_ctx *ctx;
	tessel_module *module;
	tessel_op *op;
	int ninputs;
	tessel_tensor *in[MAX_TENSORS];
	int noutputs;
	tessel_tensor *out[MAX_TENSORS];
} interp_case;

/* Parse "src", find the op "name" (NULL: the only one) and bind the "n"
 * sizes "names" to "values" into "c".  Return -1 (error in c->ctx) when
 * binding fails; parsing must succeed. */
static int case_try_open(interp_case *c, const char *src, const char *name,
	int n, const char *const *names, const int64_t *values)
{
	memset(c, 0, sizeof(*c));
	c->ctx = tessel_ctx_new();
	cr_assert_not_null(c->ctx);
	c->module = tessel_parse(c->ctx, "t.te", src, strlen(src));
	cr_assert_not_null(c->module, "parse failed: %d:%d: %s",
		tessel_ctx_error(c->ctx)->loc.line,
		tessel_ctx_error(c->ctx)->loc.col,
		tessel_ctx_error(c->ctx)->message);
	tessel_op *op = tessel_module_find(c->ctx, c->module, name);
	cr_assert_not_null(op, "find failed: %s",
		tessel_ctx_error(c->ctx)->message);
	c->op = tessel_op_bind(op, n, names, values);
	return c->op ? 0 : -1;
}

/* As case_try_open, requiring binding to succeed. */
static void case_open(interp_case *c, const char *src, const char *name,
	int n, const char *const *names, const int64_t *values)
{
	int r = case_try_open(c, src, name, n, names, values);
	cr_assert_eq(r, 0, "bind failed: %d:%d: %s",
		tessel_ctx_error(c->ctx)->loc.line,
		tessel_ctx_error(c->ctx)->loc.col,
		tessel_ctx_error(c->ctx)->message);
}

static int64_t shape_numel(int ndim, const int64_t *shape)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	return n;
}

/* Return a new "dt" tensor of "shape" for "c" to free. */
static tessel_tensor *case_tensor(tessel_dtype dt, int ndim,
	const int64_t *shape)
{
	char err[200] = "";
	tessel_tensor *t = tessel_tensor_new(dt, ndim, shape, err, sizeof(err));
	cr_assert_not_null(t, "tessel_tensor_new: %s", err);
	return t;
}

/* Add an input of "dt" and "shape" to "c", filled with the doubles "v"
 * in C order. */
static tessel_tensor *case_input_f(interp_case *c, tessel_dtype dt, int ndim,
	const int64_t *shape, const double *v)
{
	tessel_tensor *t = case_tensor(dt, ndim, shape);
	for (int64_t i = 0; i < shape_numel(ndim, shape); i++)
		tessel_tensor_set(t, i, v[i]);
	c->in[c->ninputs++] = t;
	return t;
}

/* Add an input of the integer or bool "dt" to "c", filled with "v". */
static tessel_tensor *case_input_i(interp_case *c, tessel_dtype dt, int ndim,
	const int64_t *shape, const int64_t *v)
{
	tessel_tensor *t = case_tensor(dt, ndim, shape);
	for (int64_t i = 0; i < shape_numel(ndim, shape); i++)
		tessel_tensor_set_i64(t, i, v[i]);
	c->in[c->ninputs++] = t;
	return t;
}

/* Allocate every output of the op of "c" with its bound dtype and shape. */
static void case_outputs(interp_case *c)
{
	c->noutputs = tessel_op_num_outputs(c->op);
	for (int i = 0; i < c->noutputs; i++) {
		tessel_stage *s = tessel_op_output_at(c->op, i);
		int64_t shape[TESSEL_MAX_DIMS];
		int ndim = tessel_stage_ndim(s);
		for (int d = 0; d < ndim; d++)
			shape[d] = tessel_stage_dim(s, d);
		c->out[i] = case_tensor(tessel_stage_dtype(s), ndim, shape);
	}
}

/* Allocate the outputs of "c" and run the interpreter; return its result. */
static int case_try_run(interp_case *c)
{
	case_outputs(c);
	return tessel_interp(c->op, c->in, c->out);
}

/* Allocate the outputs of "c" and run the interpreter, which must succeed. */
static void case_run(interp_case *c)
{
	int r = case_try_run(c);
	cr_assert_eq(r, 0, "interp failed: %d:%d: %s",
		tessel_ctx_error(c->ctx)->loc.line,
		tessel_ctx_error(c->ctx)->loc.col,
		tessel_ctx_error(c->ctx)->message);
}

static void case_close(interp_case *c)
{
	for (int i = 0; i < c->ninputs; i++)
		tessel_tensor_free(c->in[i]);
	for (int i = 0; i < c->noutputs; i++)
		tessel_tensor_free(c->out[i]);
	if (c->op)
		tessel_op_release(c->op);
	tessel_module_free(c->module);
	tessel_ctx_free(c->ctx);
}

/* Require the "n" elements of output "k" of "c" to equal "want" within a
 * relative tolerance "tol"; infinities and NaNs must match exactly. */
static void expect_f(const interp_case *c, int k, int64_t n,
	const double *want, double tol)
{
	const tessel_tensor *t = c->out[k];
	cr_assert_eq(tessel_tensor_numel(t), n, "output %d has %ld elements",
		k, (long)tessel_tensor_numel(t));
	for (int64_t i = 0; i < n; i++) {
		double got = tessel_tensor_get(t, i), w = want[i];
		if (isnan(w) || isinf(w)) {
			cr_expect(isnan(w) ? isnan(got) : got == w,
				"output %d [%ld]: got %.17g, want %.17g", k,
				(long)i, got, w);
			continue;
		}
		cr_expect(fabs(got - w) <= tol * fmax(1.0, fabs(w)),
			"output %d [%ld]: got %.17g, want %.17g", k, (long)i,
			got, w);
	}
}

/* Require the "n" elements of output "k" of "c" to equal "want" exactly. */
static void expect_i(const interp_case *c, int k, int64_t n,
	const int64_t *want)
{
	const tessel_tensor *t = c->out[k];
	cr_assert_eq(tessel_tensor_numel(t), n, "output %d has %ld elements",
		k, (long)tessel_tensor_numel(t));
	for (int64_t i = 0; i < n; i++)
		cr_expect_eq(tessel_tensor_get_i64(t, i), want[i],
			"output %d [%ld]: got %ld, want %ld", k, (long)i,
			(long)tessel_tensor_get_i64(t, i), (long)want[i]);
}

/* Require the last error of "c" to be of "kind" with "message". */
static void expect_error(const interp_case *c, tessel_error_kind kind,
	const char *message)
{
	const tessel_error *e = tessel_ctx_error(c->ctx);
	cr_expect_eq(e->kind, kind, "error kind %d, want %d (%s)", e->kind,
		kind, e->message);
	cr_expect_str_eq(e->message, message);
}

/* ---- whole ops ------------------------------------------------------------ */

static const char matmul_src[] =
	"op matmul(A: f32[M, K], B: f32[K, N]) -> C {\n"
	"  C[i, j] = sum(k) A[i, k] * B[k, j]\n"
	"}\n";

Test(interp, matmul_2x3_by_3x2)
{
	interp_case c;
	case_open(&c, matmul_src, NULL, 3, NAMES("M", "K", "N"),
		I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2),
		F64S(7, 8, 9, 10, 11, 12));
	case_run(&c);
	/* 1*7 + 2*9 + 3*11 = 58    1*8 + 2*10 + 3*12 = 64
	 * 4*7 + 5*9 + 6*11 = 139   4*8 + 5*10 + 6*12 = 154 */
	expect_f(&c, 0, 4, F64S(58, 64, 139, 154), 0);
	case_close(&c);
}

Test(interp, output_in_any_strides)
{
	interp_case c;
	double data[4] = { 0 };
	tessel_tensor column_major = {
		.dtype = TESSEL_F64, .ndim = 2, .shape = { 2, 2 },
		.strides = { 1, 2 }, .data = data, .owns_data = 0
	};
	tessel_tensor *outs[1] = { &column_major };
	case_open(&c, "op matmul(A: f32[M, K], B: f32[K, N]) -> C {\n"
		"  C[i, j] : f64[M, N] = sum(k) f64(A[i, k] * B[k, j])\n"
		"}\n", NULL, 3, NAMES("M", "K", "N"), I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2),
		F64S(7, 8, 9, 10, 11, 12));
	cr_assert_eq(tessel_interp(c.op, c.in, outs), 0, "%s",
		tessel_ctx_error(c.ctx)->message);
	/* C = [[58, 64], [139, 154]] stored column by column */
	cr_expect_eq(data[0], 58);
	cr_expect_eq(data[1], 139);
	cr_expect_eq(data[2], 64);
	cr_expect_eq(data[3], 154);
	case_close(&c);
}

Test(interp, two_outputs_in_declared_order)
{
	interp_case c;
	case_open(&c, "op mm2(A: f32[M, K], B: f32[K, N]) -> D, C {\n"
		"  C[i, j] = sum(k) A[i, k] * B[k, j]\n"
		"  D[i, j] = C[i, j] * 2.0 + 1\n"
		"}\n", NULL, 3, NAMES("M", "K", "N"), I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2),
		F64S(7, 8, 9, 10, 11, 12));
	case_run(&c);
	cr_expect_str_eq(tessel_stage_name(tessel_op_output_at(c.op, 0)), "D",
		"the bound op lists its outputs out of the declared order");
	/* D = 2*C + 1: 117 129 279 309 */
	expect_f(&c, 0, 4, F64S(117, 129, 279, 309), 0);
	expect_f(&c, 1, 4, F64S(58, 64, 139, 154), 0);
	case_close(&c);
}

static const char conv_src[] =
	"op conv2d_relu(X: f32[N, C, H, W], Wt: f32[F, C, R, S], stride: int, pad: int) -> Y {\n"
	"  P[n, c, h, w] : f32[N, C, H + 2*pad, W + 2*pad] =\n"
	"      select(h >= pad && h < H + pad && w >= pad && w < W + pad, X[n, c, h - pad, w - pad], 0.0)\n"
	"  Z[n, f, y, x] : f32[N, F, (H + 2*pad - R) / stride + 1, (W + 2*pad - S) / stride + 1] =\n"
	"      sum(c, r, s) P[n, c, y*stride + r, x*stride + s] * Wt[f, c, r, s]\n"
	"  Y[n, f, y, x] = max(Z[n, f, y, x], 0.0)\n"
	"}\n";

/* Bind conv2d_relu with N=C=F=1, H=W=3, R=S=2, pad 1 and "stride"; X is
 * [[1 2 3] [4 5 6] [7 8 9]], Wt is [[-1 2] [3 1]]. */
static void conv_open(interp_case *c, int64_t stride)
{
	case_open(c, conv_src, NULL, 9,
		NAMES("N", "C", "H", "W", "F", "R", "S", "stride", "pad"),
		(const int64_t[]){ 1, 1, 3, 3, 1, 2, 2, stride, 1 });
	case_input_f(c, TESSEL_F32, 4, SHAPE(1, 1, 3, 3),
		F64S(1, 2, 3, 4, 5, 6, 7, 8, 9));
	case_input_f(c, TESSEL_F32, 4, SHAPE(1, 1, 2, 2), F64S(-1, 2, 3, 1));
}

Test(interp, conv2d_relu_pad1_stride1)
{
	interp_case c;
	conv_open(&c, 1);
	case_run(&c);
	cr_assert_eq(tessel_stage_dim(tessel_op_output_at(c.op, 0), 2), 4);
	/* P is X padded with zeros to 5x5; Z[y, x] = -P[y, x] + 2 P[y, x+1]
	 * + 3 P[y+1, x] + P[y+1, x+1]:
	 *  y=0:  1        3+2=5     6+3=9      9
	 *  y=1:  2+4=6    -1+4+12+5=20   -2+6+15+6=25   -3+18=15
	 *  y=2:  8+7=15   -4+10+21+8=35  -5+12+24+9=40  -6+27=21
	 *  y=3:  14       -7+16=9        -8+18=10       -9 -> relu 0 */
	expect_f(&c, 0, 16, F64S(1, 5, 9, 9, 6, 20, 25, 15, 15, 35, 40, 21,
		14, 9, 10, 0), 0);
	case_close(&c);
}

Test(interp, conv2d_relu_pad1_stride2)
{
	interp_case c;
	conv_open(&c, 2);
	case_run(&c);
	/* (3 + 2 - 2) / 2 + 1 = 2: Z at (0,0) (0,2) (2,0) (2,2) of stride 1 */
	cr_assert_eq(tessel_stage_dim(tessel_op_output_at(c.op, 0), 2), 2);
	expect_f(&c, 0, 4, F64S(1, 9, 15, 40), 0);
	case_close(&c);
}

Test(interp, softmax_2x3)
{
	interp_case c;
	case_open(&c, "op softmax(X: f64[N, D]) -> Y {\n"
		"  M[i] = max(j) X[i, j]\n"
		"  E[i, j] = exp(X[i, j] - M[i])\n"
		"  S[i] = sum(j) E[i, j]\n"
		"  Y[i, j] = E[i, j] / S[i]\n"
		"}\n", NULL, 2, NAMES("N", "D"), I64S(2, 3));
	case_input_f(&c, TESSEL_F64, 2, SHAPE(2, 3), F64S(0, 1, 2, 5, 5, 5));
	case_run(&c);
	/* row 0: M = 2, E = e^-2, e^-1, 1, S = 1 + e^-1 + e^-2
	 *   = 1 + 0.36787944117144233 + 0.1353352832366127 = 1.5032147244080550
	 *   Y = 0.09003057317038046, 0.24472847105479764, 0.6652409557748219
	 * row 1: all equal: 1/3 each */
	expect_f(&c, 0, 6, F64S(0.09003057317038046, 0.24472847105479764,
		0.6652409557748219, 1.0 / 3, 1.0 / 3, 1.0 / 3), 1e-12);
	case_close(&c);
}

/* ---- reductions ------------------------------------------------------------ */

Test(interp, every_reduction)
{
	interp_case c;
	case_open(&c, "op r(X: f64[N, D]) -> S, P, Mx, Mn {\n"
		"  S[i] = sum(j) X[i, j]\n"
		"  P[i] = prod(j) X[i, j]\n"
		"  Mx[i] = max(j) X[i, j]\n"
		"  Mn[i] = min(j) X[i, j]\n"
		"}\n", NULL, 2, NAMES("N", "D"), I64S(2, 3));
	case_input_f(&c, TESSEL_F64, 2, SHAPE(2, 3),
		F64S(1, -2, 3, 0.5, 4, -1));
	case_run(&c);
	/* sums 1-2+3 = 2, 0.5+4-1 = 3.5; products -6, -2 */
	expect_f(&c, 0, 2, F64S(2, 3.5), 0);
	expect_f(&c, 1, 2, F64S(-6, -2), 0);
	expect_f(&c, 2, 2, F64S(3, 4), 0);
	expect_f(&c, 3, 2, F64S(-2, -1), 0);
	case_close(&c);
}

Test(interp, integer_reductions)
{
	interp_case c;
	case_open(&c, "op r(X: i32[N, D]) -> S, P, Mx, Mn {\n"
		"  S[i] = sum(j) X[i, j]\n"
		"  P[i] = prod(j) X[i, j]\n"
		"  Mx[i] = max(j) X[i, j]\n"
		"  Mn[i] = min(j) X[i, j]\n"
		"}\n", NULL, 2, NAMES("N", "D"), I64S(2, 3));
	case_input_i(&c, TESSEL_I32, 2, SHAPE(2, 3),
		I64S(-5, 7, 2, 65536, 65536, -3));
	case_run(&c);
	/* row 1: 65536 * 65536 = 2^32 wraps to 0 in i32, times -3 = 0 */
	expect_i(&c, 0, 2, I64S(4, 131069));
	expect_i(&c, 1, 2, I64S(-70, 0));
	expect_i(&c, 2, 2, I64S(7, 65536));
	expect_i(&c, 3, 2, I64S(-5, -3));
	case_close(&c);
}

static const char identity_src[] =
	"op ident(X: f64[N], Y: i32[N], K: int) -> S, P, Mx, Mn, IS, IP, IMx, IMn {\n"
	"  S[i] = sum(k in 0..K) X[i]\n"
	"  P[i] = prod(k in 0..K) X[i]\n"
	"  Mx[i] = max(k in 0..K) X[i]\n"
	"  Mn[i] = min(k in 0..K) X[i]\n"
	"  IS[i] = sum(k in 0..K) Y[i]\n"
	"  IP[i] = prod(k in 0..K) Y[i]\n"
	"  IMx[i] = max(k in 0..K) Y[i]\n"
	"  IMn[i] = min(k in 0..K) Y[i]\n"
	"}\n";

Test(interp, reduction_identities_over_empty_range)
{
	interp_case c;
	if (case_try_open(&c, identity_src, NULL, 2, NAMES("N", "K"),
		I64S(2, 0)) < 0) {
		cr_log_warn("bind refuses the empty range 0..0: %s",
			tessel_ctx_error(c.ctx)->message);
		cr_expect_neq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_INTERNAL);
		case_close(&c);
		return;
	}
	case_input_f(&c, TESSEL_F64, 1, SHAPE(2), F64S(3, 4));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(2), I64S(3, 4));
	case_run(&c);
	expect_f(&c, 0, 2, F64S(0, 0), 0);
	expect_f(&c, 1, 2, F64S(1, 1), 0);
	expect_f(&c, 2, 2, F64S(-INFINITY, -INFINITY), 0);
	expect_f(&c, 3, 2, F64S(INFINITY, INFINITY), 0);
	expect_i(&c, 4, 2, I64S(0, 0));
	expect_i(&c, 5, 2, I64S(1, 1));
	expect_i(&c, 6, 2, I64S(INT32_MIN, INT32_MIN));
	expect_i(&c, 7, 2, I64S(INT32_MAX, INT32_MAX));
	case_close(&c);
}

Test(interp, reduction_over_explicit_range_counts_iterations)
{
	interp_case c;
	case_open(&c, identity_src, NULL, 2, NAMES("N", "K"), I64S(2, 3));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(2), F64S(3, 0.5));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(2), I64S(-2, 4));
	case_run(&c);
	/* three identical terms: 3x, x^3, x, x */
	expect_f(&c, 0, 2, F64S(9, 1.5), 0);
	expect_f(&c, 1, 2, F64S(27, 0.125), 0);
	expect_f(&c, 2, 2, F64S(3, 0.5), 0);
	expect_f(&c, 3, 2, F64S(3, 0.5), 0);
	expect_i(&c, 4, 2, I64S(-6, 12));
	expect_i(&c, 5, 2, I64S(-8, 64));
	expect_i(&c, 6, 2, I64S(-2, 4));
	expect_i(&c, 7, 2, I64S(-2, 4));
	case_close(&c);
}

Test(interp, reduction_over_several_variables)
{
	interp_case c;
	case_open(&c, "op r(X: f64[B, N, D]) -> S, M {\n"
		"  S[b] = sum(i, j) X[b, i, j]\n"
		"  M[j] = max(b, i) X[b, i, j] * (j + 1)\n"
		"}\n", NULL, 3, NAMES("B", "N", "D"), I64S(2, 2, 3));
	case_input_f(&c, TESSEL_F64, 3, SHAPE(2, 2, 3),
		F64S(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -12));
	case_run(&c);
	/* S[0] = 1+2+3+4+5+6 = 21; S[1] = 7+8+9+10+11-12 = 33
	 * M[j] = max over the 4 values of column j, times j+1:
	 *   j=0: max(1,4,7,10)*1 = 10; j=1: max(2,5,8,11)*2 = 22;
	 *   j=2: max(3,6,9,-12)*3 = 27 */
	expect_f(&c, 0, 2, F64S(21, 33), 0);
	expect_f(&c, 1, 3, F64S(10, 22, 27), 0);
	case_close(&c);
}

Test(interp, reduction_with_nonzero_lower_bound)
{
	interp_case c;
	case_open(&c, "op r(X: f64[N, D]) -> S, P {\n"
		"  S[i] = sum(k in 1..4) X[i, k]\n"
		"  P[i] = prod(k in 1..4) X[i, k] + k\n"
		"}\n", NULL, 2, NAMES("N", "D"), I64S(2, 5));
	case_input_f(&c, TESSEL_F64, 2, SHAPE(2, 5),
		F64S(1, 2, 3, 4, 5, 10, 20, 30, 40, 50));
	case_run(&c);
	/* S: 2+3+4 = 9, 20+30+40 = 90
	 * P: (2+1)(3+2)(4+3) = 3*5*7 = 105, (20+1)(30+2)(40+3) = 21*32*43
	 *    = 28896 */
	expect_f(&c, 0, 2, F64S(9, 90), 0);
	expect_f(&c, 1, 2, F64S(105, 28896), 0);
	case_close(&c);
}

Test(interp, bool_max_min_reductions)
{
	interp_case c;
	case_open(&c, "op r(X: f64[N, D]) -> Any, All {\n"
		"  Any[i] = max(j) X[i, j] > 0.0\n"
		"  All[i] = min(j) X[i, j] > 0.0\n"
		"}\n", NULL, 2, NAMES("N", "D"), I64S(3, 2));
	case_input_f(&c, TESSEL_F64, 2, SHAPE(3, 2),
		F64S(1, -1, -1, -2, 3, 4));
	case_run(&c);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, 0)),
		TESSEL_BOOL);
	expect_i(&c, 0, 3, I64S(1, 0, 1));
	expect_i(&c, 1, 3, I64S(0, 0, 1));
	case_close(&c);
}

/* ---- integer semantics ---------------------------------------------------- */

Test(interp, floor_division_and_modulo)
{
	interp_case c;
	case_open(&c, "op dm(A: i32[N], B: i32[N]) -> Q, R, L {\n"
		"  Q[i] = A[i] / B[i]\n"
		"  R[i] = A[i] % B[i]\n"
		"  L[i] = (A[i] / 2) * 10 + A[i] % -3\n"
		"}\n", NULL, 1, NAMES("N"), I64S(5));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(5), I64S(-7, 7, -7, 7, 6));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(5), I64S(2, -2, -2, 2, 3));
	case_run(&c);
	/* -7/2 = -3.5 -> -4, r = -7 - (-4)(2) = 1
	 *  7/-2 = -3.5 -> -4, r = 7 - (-4)(-2) = -1
	 * -7/-2 = 3.5 -> 3,   r = -7 - (3)(-2) = -1
	 *  7/2 = 3, r = 1;  6/3 = 2, r = 0 */
	expect_i(&c, 0, 5, I64S(-4, -4, 3, 3, 2));
	expect_i(&c, 1, 5, I64S(1, -1, -1, 1, 0));
	/* A/2: -4 3 -4 3 3; A % -3: -7 -> -1 (-7 = 2*-3 - 1), 7 -> -2
	 * (7 = -3*-3 - 2), 6 -> 0: -40-1 30-2 -40-1 30-2 30+0 */
	expect_i(&c, 2, 5, I64S(-41, 28, -41, 28, 30));
	case_close(&c);
}

Test(interp, float_division_and_modulo)
{
	interp_case c;
	case_open(&c, "op dm(A: f64[N], B: f64[N]) -> Q, R {\n"
		"  Q[i] = A[i] / B[i]\n"
		"  R[i] = A[i] % B[i]\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(-7, 7, 5.5));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(2, -2, 2));
	case_run(&c);
	/* x - floor(x/y)*y: -7 - (-4)(2) = 1; 7 - (-4)(-2) = -1;
	 * 5.5 - 2*2 = 1.5 */
	expect_f(&c, 0, 3, F64S(-3.5, -3.5, 2.75), 0);
	expect_f(&c, 1, 3, F64S(1, -1, 1.5), 0);
	case_close(&c);
}

Test(interp, i8_stages_wrap)
{
	interp_case c;
	case_open(&c, "op w(A: i8[N], B: i32[N], S: i8[N, K]) -> C, D, T {\n"
		"  C[i] = A[i] * 2 + 1\n"
		"  D[i] : i8[N] = B[i] + 1\n"
		"  T[i] = sum(j) S[i, j]\n"
		"}\n", NULL, 2, NAMES("N", "K"), I64S(3, 3));
	case_input_i(&c, TESSEL_I8, 1, SHAPE(3), I64S(100, -100, 127));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(3), I64S(127, 255, -129));
	case_input_i(&c, TESSEL_I8, 2, SHAPE(3, 3),
		I64S(100, 100, 100, -100, -100, -100, 1, 2, 3));
	case_run(&c);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, 0)),
		TESSEL_I8);
	/* 201 - 256 = -55; -199 + 256 = 57; 255 - 256 = -1 */
	expect_i(&c, 0, 3, I64S(-55, 57, -1));
	/* 128 -> -128; 256 -> 0; -128 stays */
	expect_i(&c, 1, 3, I64S(-128, 0, -128));
	/* 300 - 256 = 44; -300 + 256 = -44; 6 */
	expect_i(&c, 2, 3, I64S(44, -44, 6));
	case_close(&c);
}

/* u8 arithmetic wraps modulo 256, u8 with i8 promotes to i32, casts to u8
 * wrap from integers and saturate from floats, and min over u8 starts at
 * 255, not at i8's 127. */
Test(interp, u8_stages_wrap_and_promote)
{
	interp_case c;
	case_open(&c, "op w(A: u8[N], B: i8[N], S: u8[N, K]) -> C, D, E, F, T {\n"
		"  C[i] = A[i] * 2 + 1\n"
		"  D[i] = A[i] + B[i]\n"
		"  E[i] = u8(B[i])\n"
		"  F[i] = u8(f64(A[i]) * 2.0 - 250.0)\n"
		"  T[i] = min(j) S[i, j]\n"
		"}\n", NULL, 2, NAMES("N", "K"), I64S(3, 3));
	case_input_i(&c, TESSEL_U8, 1, SHAPE(3), I64S(100, 200, 255));
	case_input_i(&c, TESSEL_I8, 1, SHAPE(3), I64S(-100, 27, -128));
	case_input_i(&c, TESSEL_U8, 2, SHAPE(3, 3),
		I64S(200, 130, 250, 255, 255, 255, 0, 9, 3));
	case_run(&c);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, 0)), TESSEL_U8);
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, 1)), TESSEL_I32);
	/* 201; 401 - 256 = 145; 511 - 256 = 255 */
	expect_i(&c, 0, 3, I64S(201, 145, 255));
	expect_i(&c, 1, 3, I64S(0, 227, 127));
	/* -100 + 256 = 156; 27; -128 + 256 = 128 */
	expect_i(&c, 2, 3, I64S(156, 27, 128));
	/* -50 saturates to 0; 150; 260 saturates to 255 */
	expect_i(&c, 3, 3, I64S(0, 150, 255));
	expect_i(&c, 4, 3, I64S(130, 255, 0));
	case_close(&c);
}

Test(interp, integer_unary_operators)
{
	interp_case c;
	case_open(&c, "op u(A: i32[N]) -> Ab, Ng, Fl {\n"
		"  Ab[i] = abs(A[i])\n"
		"  Ng[i] = -A[i]\n"
		"  Fl[i] = floor(A[i])\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(3), I64S(-5, 7, INT32_MIN));
	case_run(&c);
	/* -(-2^31) = 2^31 wraps back to -2^31 in i32 */
	expect_i(&c, 0, 3, I64S(5, 7, INT32_MIN));
	expect_i(&c, 1, 3, I64S(5, -7, INT32_MIN));
	expect_i(&c, 2, 3, I64S(-5, 7, INT32_MIN));
	case_close(&c);
}

Test(interp, index_variables_as_values)
{
	interp_case c;
	case_open(&c, "op v(X: f64[N]) -> Y, Z {\n"
		"  Y[i] = X[i] * i\n"
		"  Z[i] : i32[N] = i * 3 - 4\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(0.5, 0.5, 0.5));
	case_run(&c);
	expect_f(&c, 0, 3, F64S(0, 0.5, 1), 0);
	expect_i(&c, 1, 3, I64S(-4, -1, 2));
	case_close(&c);
}

/* ---- casts ---------------------------------------------------------------- */

Test(interp, float_to_int_casts_saturate)
{
	interp_case c;
	case_open(&c, "op c(X: f64[N]) -> A, B, L, T {\n"
		"  A[i] = i8(X[i])\n"
		"  B[i] = i32(X[i])\n"
		"  L[i] = i64(X[i])\n"
		"  T[i] = bool(X[i])\n"
		"}\n", NULL, 1, NAMES("N"), I64S(8));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(8),
		F64S(300, -300, 1.9, -1.9, NAN, -1e20, 1e20, 0));
	case_run(&c);
	/* truncation toward zero, saturation, NaN -> 0 */
	expect_i(&c, 0, 8, I64S(127, -128, 1, -1, 0, -128, 127, 0));
	expect_i(&c, 1, 8, I64S(300, -300, 1, -1, 0, INT32_MIN, INT32_MAX, 0));
	expect_i(&c, 2, 8, I64S(300, -300, 1, -1, 0, INT64_MIN, INT64_MAX, 0));
	/* != 0: NaN is not zero */
	expect_i(&c, 3, 8, I64S(1, 1, 1, 1, 1, 1, 1, 0));
	case_close(&c);
}

Test(interp, int_to_int_casts_wrap)
{
	interp_case c;
	case_open(&c, "op c(A: i64[N]) -> B, C, D {\n"
		"  B[i] = i8(A[i])\n"
		"  C[i] = i32(A[i])\n"
		"  D[i] = f64(i32(A[i])) / 2.0\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_i(&c, TESSEL_I64, 1, SHAPE(3),
		I64S(300, 4294967297, -129));
	case_run(&c);
	/* 300 - 256 = 44; 2^32 + 1 -> 1 (i8: 1, i32: 1); -129 + 256 = 127 */
	expect_i(&c, 0, 3, I64S(44, 1, 127));
	expect_i(&c, 1, 3, I64S(300, 1, -129));
	expect_f(&c, 2, 3, F64S(150, 0.5, -64.5), 0);
	case_close(&c);
}

Test(interp, float_casts_round)
{
	interp_case c;
	case_open(&c, "op c(X: f64[N]) -> H, B, F, K {\n"
		"  H[i] = f64(f16(X[i]))\n"
		"  B[i] = f64(bf16(X[i]))\n"
		"  F[i] = f64(f32(X[i]))\n"
		"  K[i] = f64(f16(X[i] * 1000000.0))\n"
		"}\n", NULL, 1, NAMES("N"), I64S(1));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(1), F64S(0.1));
	case_run(&c);
	/* 0.1 = 1.6 * 2^-4: f16 keeps 10 mantissa bits, 1638.4 -> 1638,
	 * 1638/1024/16 = 0.0999755859375; bf16 keeps 7, 204.8 -> 205,
	 * 205/128/16 = 0.10009765625; f32 keeps 23: 13421772.8 -> 13421773,
	 * 13421773 / 2^27 = 0.100000001490116119384765625;
	 * 100000 overflows f16 (max 65504) -> inf */
	expect_f(&c, 0, 1, F64S(0.0999755859375), 0);
	expect_f(&c, 1, 1, F64S(0.10009765625), 0);
	expect_f(&c, 2, 1, F64S(0.100000001490116119384765625), 0);
	expect_f(&c, 3, 1, F64S(INFINITY), 0);
	case_close(&c);
}

Test(interp, float_stages_keep_float64)
{
	interp_case c;
	case_open(&c, "op k(X: f16[N]) -> Y {\n"
		"  T[i] = X[i] / 3.0\n"
		"  Y[i] = f64(T[i])\n"
		"}\n", NULL, 1, NAMES("N"), I64S(1));
	case_input_f(&c, TESSEL_F16, 1, SHAPE(1), F64S(1));
	case_run(&c);
	/* T is an f16 stage, but the oracle keeps 1/3 in double; only the
	 * explicit cast rounds (to f64: nothing) */
	expect_f(&c, 0, 1, F64S(0.33333333333333331), 0);
	case_close(&c);
}

/* ---- intrinsics, comparisons, logic, select, pow, min, max -------------- */

Test(interp, float_intrinsics)
{
	interp_case c;
	case_open(&c, "op f(X: f64[N]) -> Ex, Lg, Sq, Rs, Th, Ef, Sg, Ab, Fl {\n"
		"  Ex[i] = exp(X[i])\n"
		"  Lg[i] = log(X[i])\n"
		"  Sq[i] = sqrt(X[i])\n"
		"  Rs[i] = rsqrt(X[i])\n"
		"  Th[i] = tanh(X[i])\n"
		"  Ef[i] = erf(X[i])\n"
		"  Sg[i] = sigmoid(X[i])\n"
		"  Ab[i] = abs(-X[i])\n"
		"  Fl[i] = floor(X[i] * -1.5)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(4));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(4), F64S(0.5, 1, 2, 4));
	case_run(&c);
	/* e^x: e^0.5, e, e^2, e^4 */
	expect_f(&c, 0, 4, F64S(1.6487212707001282, 2.718281828459045,
		7.38905609893065, 54.598150033144236), 1e-12);
	/* ln: -ln 2, 0, ln 2, 2 ln 2 */
	expect_f(&c, 1, 4, F64S(-0.6931471805599453, 0, 0.6931471805599453,
		1.3862943611198906), 1e-12);
	expect_f(&c, 2, 4, F64S(0.7071067811865476, 1, 1.4142135623730951,
		2), 1e-12);
	expect_f(&c, 3, 4, F64S(1.4142135623730951, 1, 0.7071067811865476,
		0.5), 1e-12);
	/* tanh x = (e^2x - 1) / (e^2x + 1): (e - 1)/(e + 1) = 0.46211715726 */
	expect_f(&c, 4, 4, F64S(0.46211715726000974, 0.7615941559557649,
		0.9640275800758169, 0.999329299739067), 1e-12);
	expect_f(&c, 5, 4, F64S(0.5204998778130465, 0.8427007929497149,
		0.9953222650189527, 0.9999999845827421), 1e-12);
	/* 1 / (1 + e^-x) */
	expect_f(&c, 6, 4, F64S(0.6224593312018546, 0.7310585786300049,
		0.8807970779778823, 0.9820137900379085), 1e-12);
	expect_f(&c, 7, 4, F64S(0.5, 1, 2, 4), 0);
	/* floor of -0.75, -1.5, -3, -6 */
	expect_f(&c, 8, 4, F64S(-1, -2, -3, -6), 0);
	case_close(&c);
}

Test(interp, comparisons_give_bools)
{
	interp_case c;
	case_open(&c, "op cmp(A: i32[N], B: i32[N]) -> Lt, Le, Gt, Ge, Eq, Ne, Fl {\n"
		"  Lt[i] = A[i] < B[i]\n"
		"  Le[i] = A[i] <= B[i]\n"
		"  Gt[i] = A[i] > B[i]\n"
		"  Ge[i] = A[i] >= B[i]\n"
		"  Eq[i] = A[i] == B[i]\n"
		"  Ne[i] = A[i] != B[i]\n"
		"  Fl[i] = A[i] < 2.5\n"
		"}\n", NULL, 1, NAMES("N"), I64S(4));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(4), I64S(1, 5, -3, 4));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(4), I64S(2, 5, -4, 0));
	case_run(&c);
	for (int k = 0; k < 7; k++)
		cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, k)),
			TESSEL_BOOL);
	expect_i(&c, 0, 4, I64S(1, 0, 0, 0));
	expect_i(&c, 1, 4, I64S(1, 1, 0, 0));
	expect_i(&c, 2, 4, I64S(0, 0, 1, 1));
	expect_i(&c, 3, 4, I64S(0, 1, 1, 1));
	expect_i(&c, 4, 4, I64S(0, 1, 0, 0));
	expect_i(&c, 5, 4, I64S(1, 0, 1, 1));
	/* compared in double: 1 < 2.5, 5, -3 < 2.5, 4 */
	expect_i(&c, 6, 4, I64S(1, 0, 1, 0));
	case_close(&c);
}

Test(interp, logic_and_select)
{
	interp_case c;
	case_open(&c, "op l(A: i32[N], B: i32[N]) -> An, Or, Nt, Sl, Ix, Sc, Sm {\n"
		"  An[i] = A[i] > 0 && B[i] > 0\n"
		"  Or[i] = A[i] < 0 || B[i] == 0\n"
		"  Nt[i] = !(A[i] == B[i])\n"
		"  Sl[i] = select(A[i] > B[i], A[i], B[i])\n"
		"  Ix[i] = select(A[i] < B[i], 1, 0)\n"
		"  Sc[i] = B[i] != 0 && A[i] / B[i] > 0\n"
		"  Sm[i] = B[i] == 0 || A[i] % B[i] == 0\n"
		"}\n", NULL, 1, NAMES("N"), I64S(4));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(4), I64S(1, 5, -3, 4));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(4), I64S(2, 5, -4, 0));
	case_run(&c);
	expect_i(&c, 0, 4, I64S(1, 1, 0, 0));
	expect_i(&c, 1, 4, I64S(0, 0, 1, 1));
	expect_i(&c, 2, 4, I64S(1, 0, 1, 1));
	expect_i(&c, 3, 4, I64S(2, 5, -3, 4));
	cr_expect_eq(tessel_stage_dtype(tessel_op_output_at(c.op, 4)),
		TESSEL_I64);
	expect_i(&c, 4, 4, I64S(1, 0, 0, 0));
	/* short-circuit skips the division by B[3] = 0:
	 * 1/2 = 0, 5/5 = 1, -3/-4 = 0 (0.75 floored) */
	expect_i(&c, 5, 4, I64S(0, 1, 0, 0));
	/* 1 % 2 = 1, 5 % 5 = 0, -3 % -4 = -3, B = 0 */
	expect_i(&c, 6, 4, I64S(0, 1, 0, 1));
	case_close(&c);
}

Test(interp, float_pow)
{
	interp_case c;
	case_open(&c, "op p(X: f64[N]) -> R, C {\n"
		"  R[i] = pow(X[i], 0.5)\n"
		"  C[i] = pow(X[i], 3.0)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(2, 9, 0.5));
	case_run(&c);
	expect_f(&c, 0, 3, F64S(1.4142135623730951, 3, 0.7071067811865476),
		1e-15);
	/* 8, 729, 0.125 */
	expect_f(&c, 1, 3, F64S(8, 729, 0.125), 1e-15);
	case_close(&c);
}

Test(interp, integer_pow_wraps)
{
	interp_case c;
	case_open(&c, "op p(A: i32[N], E: i32[N], L: i64[N]) -> R, W {\n"
		"  R[i] = pow(A[i], E[i])\n"
		"  W[i] = pow(L[i], 40)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(5));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(5), I64S(2, -3, 0, 7, 2));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(5), I64S(10, 3, 0, 1, 31));
	case_input_i(&c, TESSEL_I64, 1, SHAPE(5), I64S(3, -1, 0, 1, 2));
	case_run(&c);
	/* 2^10 = 1024, (-3)^3 = -27, 0^0 = 1, 7, 2^31 wraps to -2^31 */
	expect_i(&c, 0, 5, I64S(1024, -27, 1, 7, INT32_MIN));
	/* 3^40 = 12157665459056928801 - 2^64 = -6289078614652622815;
	 * (-1)^40 = 1; 0; 1; 2^40 = 1099511627776 */
	expect_i(&c, 1, 5, I64S(-6289078614652622815, 1, 0, 1,
		1099511627776));
	case_close(&c);
}

Test(interp, min_and_max)
{
	interp_case c;
	case_open(&c, "op m(X: f64[N], Y: f64[N], A: i32[N]) -> Lo, Hi, Re, Cl {\n"
		"  Lo[i] = min(X[i], Y[i])\n"
		"  Hi[i] = max(X[i], Y[i])\n"
		"  Re[i] = max(A[i], 0)\n"
		"  Cl[i] = min(3, max(A[i], -2))\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(1.5, -2, 0));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(3), F64S(-1, 3, 0));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(3), I64S(-3, 4, 1));
	case_run(&c);
	expect_f(&c, 0, 3, F64S(-1, -2, 0), 0);
	expect_f(&c, 1, 3, F64S(1.5, 3, 0), 0);
	expect_i(&c, 2, 3, I64S(0, 4, 1));
	expect_i(&c, 3, 3, I64S(-2, 3, 1));
	case_close(&c);
}

/* ---- errors --------------------------------------------------------------- */

Test(interp, integer_division_by_zero_is_an_error)
{
	interp_case c;
	case_open(&c, "op d(A: i32[N], B: i32[N]) -> Q {\n"
		"  Q[i] = A[i] / B[i]\n"
		"}\n", NULL, 1, NAMES("N"), I64S(2));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(2), I64S(4, 5));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(2), I64S(2, 0));
	cr_assert_eq(case_try_run(&c), -1);
	expect_error(&c, TESSEL_ERR_VALUE, "integer division by zero");
	/* the '/' on line 2, column 15 */
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.line, 2);
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.col, 15);
	cr_expect_str_eq(tessel_ctx_error(c.ctx)->loc.file, "t.te");
	/* outputs are untouched on error */
	expect_i(&c, 0, 2, I64S(0, 0));
	case_close(&c);
}

Test(interp, integer_modulo_by_zero_is_an_error)
{
	interp_case c;
	case_open(&c, "op d(A: i64[N]) -> Q {\n"
		"  Q[i] = A[i] % (A[i] - 5)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(2));
	case_input_i(&c, TESSEL_I64, 1, SHAPE(2), I64S(7, 5));
	cr_assert_eq(case_try_run(&c), -1);
	expect_error(&c, TESSEL_ERR_VALUE, "integer division by zero");
	case_close(&c);
}

Test(interp, negative_integer_exponent_is_an_error)
{
	interp_case c;
	case_open(&c, "op p(A: i32[N]) -> R {\n"
		"  R[i] = pow(A[i], A[i] - 2)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(2));
	case_input_i(&c, TESSEL_I32, 1, SHAPE(2), I64S(3, 1));
	cr_assert_eq(case_try_run(&c), -1);
	cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_VALUE);
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.line, 2);
	case_close(&c);
}

Test(interp, input_shape_mismatch)
{
	interp_case c;
	case_open(&c, matmul_src, NULL, 3, NAMES("M", "K", "N"),
		I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2), F64S(1, 2, 3, 4, 5, 6));
	cr_assert_eq(case_try_run(&c), -1);
	expect_error(&c, TESSEL_ERR_SHAPE,
		"input 'A': expected f32[2, 3], got f32[3, 2]");
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.line, 1);
	case_close(&c);
}

Test(interp, input_dtype_mismatch)
{
	interp_case c;
	case_open(&c, matmul_src, NULL, 3, NAMES("M", "K", "N"),
		I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F64, 2, SHAPE(3, 2), F64S(1, 2, 3, 4, 5, 6));
	cr_assert_eq(case_try_run(&c), -1);
	expect_error(&c, TESSEL_ERR_SHAPE,
		"input 'B': expected f32[3, 2], got f64[3, 2]");
	case_close(&c);
}

Test(interp, output_shape_mismatch)
{
	interp_case c;
	case_open(&c, matmul_src, NULL, 3, NAMES("M", "K", "N"),
		I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(3, 2), F64S(1, 2, 3, 4, 5, 6));
	c.noutputs = 1;
	c.out[0] = case_tensor(TESSEL_F32, 1, SHAPE(4));
	cr_assert_eq(tessel_interp(c.op, c.in, c.out), -1);
	expect_error(&c, TESSEL_ERR_SHAPE,
		"output 'C': expected f32[2, 2], got f32[4]");
	case_close(&c);
}

Test(interp, missing_tensor_is_an_error)
{
	interp_case c;
	case_open(&c, matmul_src, NULL, 3, NAMES("M", "K", "N"),
		I64S(2, 3, 2));
	case_input_f(&c, TESSEL_F32, 2, SHAPE(2, 3), F64S(1, 2, 3, 4, 5, 6));
	c.in[1] = NULL;
	cr_assert_eq(case_try_run(&c), -1);
	cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_VALUE);
	case_close(&c);
}

Test(interp, unbound_op_is_an_error)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse(ctx, "t.te", matmul_src,
		strlen(matmul_src));
	cr_assert_not_null(m);
	tessel_op *op = tessel_module_find(ctx, m, NULL);
	cr_assert_not_null(op);
	cr_assert_eq(tessel_interp(op, NULL, NULL), -1);
	cr_expect_eq(tessel_ctx_error(ctx)->kind, TESSEL_ERR_VALUE);
	tessel_module_free(m);
	tessel_ctx_free(ctx);
}

Test(interp, bind_rejects_out_of_bounds_explicit_shape)
{
	interp_case c;
	int r = case_try_open(&c, "op o(X: f64[N]) -> Y {\n"
		"  Y[i] : f64[N] = X[i + 1]\n"
		"}\n", NULL, 1, NAMES("N"), I64S(4));
	cr_expect_eq(r, -1, "bind accepted X[i + 1] over i in 0..4");
	if (r < 0)
		cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_SHAPE,
			"kind %d: %s", tessel_ctx_error(c.ctx)->kind,
			tessel_ctx_error(c.ctx)->message);
	case_close(&c);
}

Test(interp, out_of_bounds_access_is_an_error_not_a_crash)
{
	interp_case c;
	case_open(&c, "op o(X: f64[N, M]) -> Y {\n"
		"  Y[i, j] = X[i, j] * 2.0\n"
		"}\n", NULL, 2, NAMES("N", "M"), I64S(4, 2));
	tessel_stage *x = tessel_op_input_at(c.op, 0);
	x->extent[0] = 3;
	case_input_f(&c, TESSEL_F64, 2, SHAPE(3, 2), F64S(1, 2, 3, 4, 5, 6));
	cr_assert_eq(case_try_run(&c), -1);
	/* Y ranges over 4 rows of an X that now has 3: X[3, 0] is the
	 * first access outside */
	expect_error(&c, TESSEL_ERR_SHAPE,
		"index out of bounds: X[3, 0] outside shape [3, 2]");
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.line, 2);
	cr_expect_eq(tessel_ctx_error(c.ctx)->loc.col, 13);
	case_close(&c);
}

/* A stage of enough reduction steps is evaluated in chunks on every CPU
 * (2^22 here: 128 x 128 elements of 256 steps), in full and at chosen
 * elements; its values are those of the elements evaluated in order, a
 * row at a time (too few steps for threads), bit for bit. */
Test(interp, a_costly_stage_in_parallel_gives_the_values_in_order)
{
	interp_case c;
	case_open(&c, matmul_src, "matmul", 3, NAMES("M", "N", "K"), I64S(128, 128, 256));
	cr_assert_geq(te_interp_cost(c.op), INT64_C(1) << 22);
	c.in[0] = tessel_tensor_new(TESSEL_F32, 2, SHAPE(128, 256), NULL, 0);
	c.in[1] = tessel_tensor_new(TESSEL_F32, 2, SHAPE(256, 128), NULL, 0);
	c.ninputs = 2;
	tessel_tensor_fill_random(c.in[0], 5);
	tessel_tensor_fill_random(c.in[1], 6);
	case_run(&c);
	int64_t n = 128 * 128, row = 128;
	int64_t *all = malloc(sizeof(int64_t) * (size_t)n);
	for (int64_t k = 0; k < n; k++)
		all[k] = k;
	tessel_tensor *at_points = tessel_tensor_new(TESSEL_F32, 2, SHAPE(128, 128), NULL, 0);
	tessel_tensor *in_order = tessel_tensor_new(TESSEL_F32, 2, SHAPE(128, 128), NULL, 0);
	const int64_t *const every[] = { all };
	cr_assert_eq(te_interp_points(c.op, c.in, &at_points, every, &n), 0, "%s",
		tessel_ctx_error(c.ctx)->message);
	for (int64_t i = 0; i < 128; i++) {
		const int64_t *const one_row[] = { all + i * 128 };
		cr_assert_eq(te_interp_points(c.op, c.in, &in_order, one_row, &row), 0, "%s",
			tessel_ctx_error(c.ctx)->message);
	}
	int64_t differ = 0;
	for (int64_t k = 0; k < n; k++)
		differ += tessel_tensor_get(c.out[0], k) != tessel_tensor_get(in_order, k) ||
			  tessel_tensor_get(at_points, k) != tessel_tensor_get(in_order, k);
	cr_expect_eq(differ, 0, "%lld of %lld elements differ", (long long)differ,
		(long long)n);
	tessel_tensor_free(at_points);
	tessel_tensor_free(in_order);
	free(all);
	case_close(&c);
}

/* An error in a stage evaluated in parallel, in full or at chosen
 * elements, is the first in C order, as in order: here every row from
 * 2000 on reads outside X, in the chunks of every thread but the
 * first. */
Test(interp, a_costly_stage_in_parallel_reports_the_first_error)
{
	interp_case c;
	case_open(&c, "op o(X: f64[N, M]) -> Y {\n"
		"  Y[i] = sum(k) X[i, k] * 2.0\n"
		"}\n", NULL, 2, NAMES("N", "M"), I64S(4096, 1024));
	cr_assert_geq(te_interp_cost(c.op), INT64_C(1) << 22);
	tessel_stage *x = tessel_op_input_at(c.op, 0);
	x->extent[0] = 2000;
	c.in[0] = tessel_tensor_new(TESSEL_F64, 2, SHAPE(2000, 1024), NULL, 0);
	c.ninputs = 1;
	tessel_tensor_fill_random(c.in[0], 7);
	const char *want = "index out of bounds: X[2000, 0] outside shape [2000, 1024]";
	cr_assert_eq(case_try_run(&c), -1);
	expect_error(&c, TESSEL_ERR_SHAPE, want);
	tessel_ctx_clear_error(c.ctx);
	int64_t n = 4096, *all = malloc(sizeof(int64_t) * (size_t)n);
	for (int64_t k = 0; k < n; k++)
		all[k] = k;
	const int64_t *const every[] = { all };
	cr_assert_eq(te_interp_points(c.op, c.in, c.out, every, &n), -1);
	expect_error(&c, TESSEL_ERR_SHAPE, want);
	free(all);
	case_close(&c);
}

Test(interp, padding_reads_only_the_taken_branch)
{
	interp_case c;
	case_open(&c, "op pad(X: f64[N]) -> Y {\n"
		"  Y[i] : f64[N + 2] = select(i >= 1 && i < N + 1, X[i - 1], -1.0)\n"
		"}\n", NULL, 1, NAMES("N"), I64S(2));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(2), F64S(10, 20));
	case_run(&c);
	expect_f(&c, 0, 4, F64S(-1, 10, 20, -1), 0);
	case_close(&c);
}

Test(interp, huge_stage_is_refused)
{
	interp_case c;
	case_open(&c, "op h(X: f64[N]) -> Y {\n"
		"  T[i, j] : f64[N, N] = X[i] * X[j]\n"
		"  Y[i] = sum(j) T[i, j]\n"
		"}\n", NULL, 1, NAMES("N"), I64S(65536));
	/* T has 2^32 elements: refused before any allocation */
	case_input_f(&c, TESSEL_F64, 1, SHAPE(1), F64S(0));
	tessel_tensor_free(c.in[0]);
	c.in[0] = case_tensor(TESSEL_F64, 1, SHAPE(65536));
	cr_assert_eq(case_try_run(&c), -1);
	cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_LIMIT, "%s",
		tessel_ctx_error(c.ctx)->message);
	case_close(&c);
}

Test(interp, outputs_may_alias_inputs)
{
	interp_case c;
	case_open(&c, "op rev(X: f64[N]) -> Y {\n"
		"  Y[i] = X[N - 1 - i] + 0.5\n"
		"}\n", NULL, 1, NAMES("N"), I64S(3));
	tessel_tensor *x = case_input_f(&c, TESSEL_F64, 1, SHAPE(3),
		F64S(1, 2, 3));
	tessel_tensor *outs[1] = { x };
	cr_assert_eq(tessel_interp(c.op, c.in, outs), 0, "%s",
		tessel_ctx_error(c.ctx)->message);
	/* reversed and + 0.5, from the inputs as they were before */
	cr_expect_eq(tessel_tensor_get(x, 0), 3.5);
	cr_expect_eq(tessel_tensor_get(x, 1), 2.5);
	cr_expect_eq(tessel_tensor_get(x, 2), 1.5);
	case_close(&c);
}

Test(interp, malformed_ir_is_refused_not_crashed_on)
{
	interp_case c;
	case_open(&c, "op m(X: f64[N]) -> Y {\n"
		"  Y[i] = X[i] * 2.0\n"
		"}\n", NULL, 1, NAMES("N"), I64S(2));
	case_input_f(&c, TESSEL_F64, 1, SHAPE(2), F64S(1, 2));
	tessel_stage *y = tessel_op_output_at(c.op, 0);
	tessel_dtype saved = y->body->type.dtype;
	y->body->type.dtype = (tessel_dtype)99;
	cr_assert_eq(case_try_run(&c), -1);
	cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_INTERNAL);
	y->body->type.dtype = saved;
	y->axes[0]->extent->u.ival = 3;
	cr_assert_eq(tessel_interp(c.op, c.in, c.out), -1);
	cr_expect_eq(tessel_ctx_error(c.ctx)->kind, TESSEL_ERR_INTERNAL);
	y->axes[0]->extent->u.ival = 2;
	cr_expect_eq(tessel_interp(c.op, c.in, c.out), 0);
	case_close(&c);
}

/* ---- on demand (ir/interp.h) ------------------------------------------- */

/* Return whether "a" and "b" are the same value (NaN equal to NaN). */
static bool same_value(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

/* For every library op: the outputs on demand at every third element
 * (and the last) are the full evaluation's, bit for bit, and the other
 * elements are left as they were. */
Test(interp_points, give_the_full_evaluation_at_the_chosen_elements)
{
	for (int i = 0; i < tessel_ops_count(); i++) {
		const char *name = tessel_ops_name(i);
		test_fixture f;
		test_fixture_init(&f, name, test_library_spec(name));
		test_fixture_clear_outputs(&f);
		int64_t *points[16], npoints[16];
		for (int o = 0; o < f.nout; o++) {
			int64_t n = tessel_tensor_numel(f.expected[o]);
			points[o] = malloc(sizeof(int64_t) * (size_t)(n / 3 + 2));
			npoints[o] = 0;
			for (int64_t k = 0; k < n; k += 3)
				points[o][npoints[o]++] = k;
			if ((n - 1) % 3)
				points[o][npoints[o]++] = n - 1;
		}
		cr_assert_eq(te_interp_points(f.op, f.args, f.args + f.nin,
			(const int64_t *const *)points, npoints), 0, "%s: %s", name,
			tessel_ctx_error(f.ctx)->message);
		for (int o = 0; o < f.nout; o++) {
			for (int64_t k = 0; k < npoints[o]; k++) {
				double got = tessel_tensor_get(f.args[f.nin + o], points[o][k]);
				double want = tessel_tensor_get(f.expected[o], points[o][k]);
				cr_assert(same_value(got, want), "%s: element %lld: %g, not %g", name,
					(long long)points[o][k], got, want);
			}
			if (tessel_tensor_numel(f.expected[o]) > 2 &&
			    tessel_dtype_is_float(f.expected[o]->dtype))
				cr_expect(isnan(tessel_tensor_get(f.args[f.nin + o], 1)),
					"%s: an element not asked for was written", name);
			free(points[o]);
		}
		test_fixture_fini(&f);
	}
}

Test(interp_points, a_point_outside_its_output_is_refused)
{
	test_fixture f;
	test_fixture_init(&f, "matmul", "M=4;N=5;K=6");
	int64_t bad[] = { 3, 20 }, n = 2;
	const int64_t *points[] = { bad };
	cr_expect_eq(te_interp_points(f.op, f.args, f.args + f.nin, points, &n), -1);
	cr_expect(strstr(tessel_ctx_error(f.ctx)->message, "point 20 of 'C' is outside its "
		"20 elements"), "%s", tessel_ctx_error(f.ctx)->message);
	cr_expect_eq(te_interp_cost(f.op), 4 * 5 * 6);
	cr_expect_eq(te_interp_point_cost(f.op), 6);
	test_fixture_fini(&f);
}

/* The chosen elements: sorted, distinct, inside the tensor, the same for
 * a seed, and about half of them on a face (an index first or last). */
Test(interp_points, chosen_elements_cover_the_faces)
{
	int64_t shape[] = { 64, 48, 30 }, points[4000], again[4000];
	int64_t n = te_check_points(3, shape, 4000, 7, points);
	cr_assert_gt(n, 3500);
	cr_expect_eq(te_check_points(3, shape, 4000, 7, again), n);
	cr_expect_eq(memcmp(points, again, sizeof(int64_t) * (size_t)n), 0);
	int64_t on_face = 0;
	for (int64_t k = 0; k < n; k++) {
		cr_assert(points[k] >= 0 && points[k] < 64 * 48 * 30);
		if (k)
			cr_assert_gt(points[k], points[k - 1]);
		int64_t i = points[k] / (48 * 30), j = points[k] / 30 % 48, l = points[k] % 30;
		on_face += i == 0 || i == 63 || j == 0 || j == 47 || l == 0 || l == 29;
	}
	cr_expect_gt(on_face, n / 2, "%lld of %lld on a face", (long long)on_face, (long long)n);
}

/* A check of an op too costly to evaluate in full (here by a lowered
 * threshold) holds the interpreter's values at the chosen elements, and
 * its error compares those only. */
Test(check_plan, an_op_too_costly_is_checked_at_chosen_elements, .timeout = 120)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { "M", "N", "K" }, *values[] = { "48", "48", "32768" };
	tessel_op *op = tessel_ops_instantiate(ctx, "matmul", 3, keys, values);
	cr_assert(op, "%s", tessel_ctx_error(ctx)->message);
	int64_t sa[] = { 48, 32768 }, sb[] = { 32768, 48 }, sc[] = { 48, 48 };
	tessel_tensor *in[] = { tessel_tensor_new(TESSEL_F32, 2, sa, NULL, 0),
		tessel_tensor_new(TESSEL_F32, 2, sb, NULL, 0) };
	tessel_tensor *ref = tessel_tensor_new(TESSEL_F32, 2, sc, NULL, 0);
	tessel_tensor *got = tessel_tensor_new(TESSEL_F32, 2, sc, NULL, 0);
	tessel_tensor_fill_random(in[0], 1);
	tessel_tensor_fill_random(in[1], 2);
	te_check_plan plan;
	cr_assert_eq(te_check_reference(op, in, &ref, 1, 3, &plan), 0, "%s",
		tessel_ctx_error(ctx)->message);
	cr_assert(plan.points);
	int64_t n = te_check_count(&plan, 0);
	cr_expect(n > 500 && n <= 2048, "%lld elements", (long long)n);
	for (int64_t k = 0; k < n; k += n / 16) {
		int64_t at = plan.points[0][k], i = at / 48, j = at % 48;
		double want = 0;
		for (int64_t l = 0; l < 32768; l++)
			want += tessel_tensor_get(in[0], i * 32768 + l) *
				tessel_tensor_get(in[1], l * 48 + j);
		cr_expect_leq(fabs(tessel_tensor_get(ref, at) - want), 1e-3 * (1 + fabs(want)));
	}
	for (int64_t k = 0; k < n; k++)
		tessel_tensor_set(got, plan.points[0][k], tessel_tensor_get(ref, plan.points[0][k]));
	cr_expect_leq(te_check_error(&plan, 0, got, ref), 0);
	tessel_tensor_set(got, plan.points[0][n / 2], 1e6);
	cr_expect_gt(te_check_error(&plan, 0, got, ref), 1);
	te_check_plan_free(&plan);
	cr_expect_null(plan.points);
	tessel_tensor_free(in[0]);
	tessel_tensor_free(in[1]);
	tessel_tensor_free(ref);
	tessel_tensor_free(got);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}
