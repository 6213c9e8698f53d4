/* The operator library: every built-in op instantiated on small cases,
 * evaluated by the reference interpreter on seeded random inputs, and
 * compared with a reference written here as plain C loops straight from the
 * op's mathematical definition (never from the generated .te text).  Also
 * every attribute error path of the registry. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/ops.h"
#include "tessel/te.h"
#include "tessel/tensor.h"

#define MAX_TENSORS 16
#define MAX_ATTRS 16
#define TOL 1e-9      /* relative, for f64 ops */
#define TOL_F32 1e-6  /* relative, for f32 outputs */

/* One instantiated op and its tensors. */
typedef struct op_case {
	tessel_ctx *ctx;
	tessel_op *op;
	int ninputs;
	tessel_tensor *in[MAX_TENSORS];
	int noutputs;
	tessel_tensor *out[MAX_TENSORS];
	char *ref_buf;
} op_case;

/* Return the end of the word of "s" that starts at "p": the next space
 * outside brackets, or the end. */
static char *word_end(char *p)
{
	int depth = 0;
	for (; *p && (*p != ' ' || depth > 0); p++)
		depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
	return p;
}

/* Split "attrs", "key=value key=value ..." (spaces allowed inside [...]),
 * into "keys" and "values" pointing into "buf" (a copy the caller frees);
 * return the count. */
static int split_attrs(const char *attrs, char **buf, const char **keys,
	const char **values)
{
	int n = 0;
	*buf = strdup(attrs);
	for (char *p = *buf; *p;) {
		if (*p == ' ') {
			p++;
			continue;
		}
		char *end = word_end(p);
		bool last = *end == 0;
		*end = 0;
		char *eq = strchr(p, '=');
		cr_assert_not_null(eq, "attribute '%s' has no '='", p);
		cr_assert_lt(n, MAX_ATTRS);
		*eq = 0;
		keys[n] = p;
		values[n] = eq + 1;
		n++;
		p = last ? end : end + 1;
	}
	return n;
}

/* Return op "name" instantiated with "attrs" in "ctx", or NULL. */
static tessel_op *instantiate(tessel_ctx *ctx, const char *name,
	const char *attrs)
{
	const char *keys[MAX_ATTRS], *values[MAX_ATTRS];
	char *buf;
	int n = split_attrs(attrs, &buf, keys, values);
	tessel_op *op = tessel_ops_instantiate(ctx, name, n, keys, values);
	free(buf);
	return op;
}

/* Return the source of op "name" for "attrs", or NULL. */
static char *source(tessel_ctx *ctx, const char *name, const char *attrs)
{
	const char *keys[MAX_ATTRS], *values[MAX_ATTRS];
	char *buf;
	int n = split_attrs(attrs, &buf, keys, values);
	char *src = tessel_ops_source(ctx, name, n, keys, values);
	free(buf);
	return src;
}

static tessel_tensor *new_tensor(tessel_dtype dt, int ndim,
	const int64_t *shape)
{
	char err[200] = "";
	tessel_tensor *t = tessel_tensor_new(dt, ndim, shape, err, sizeof(err));
	cr_assert_not_null(t, "tessel_tensor_new: %s", err);
	return t;
}

/* Return a tensor for stage "s" of a bound op. */
static tessel_tensor *tensor_for(const tessel_stage *s)
{
	int64_t shape[TESSEL_MAX_DIMS];
	int ndim = tessel_stage_ndim(s);
	for (int d = 0; d < ndim; d++)
		shape[d] = tessel_stage_dim(s, d);
	return new_tensor(tessel_stage_dtype(s), ndim, shape);
}

/* Instantiate op "name" with "attrs" into "c" and make its inputs, filled
 * from "seed" (input k from seed + k), and its outputs. */
static void case_open(op_case *c, const char *name, const char *attrs,
	uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	c->ctx = tessel_ctx_new();
	c->op = instantiate(c->ctx, name, attrs);
	cr_assert_not_null(c->op, "%s %s: %s", name, attrs,
		tessel_ctx_error(c->ctx)->message);
	c->ninputs = tessel_op_num_inputs(c->op);
	for (int k = 0; k < c->ninputs; k++) {
		c->in[k] = tensor_for(tessel_op_input_at(c->op, k));
		tessel_tensor_fill_random(c->in[k], seed + (uint64_t)k);
	}
	c->noutputs = tessel_op_num_outputs(c->op);
	for (int k = 0; k < c->noutputs; k++)
		c->out[k] = tensor_for(tessel_op_output_at(c->op, k));
}

static void case_run(op_case *c)
{
	int r = tessel_interp(c->op, c->in, c->out);
	cr_assert_eq(r, 0, "interp failed: %s", tessel_ctx_error(c->ctx)->message);
}

static void case_close(op_case *c)
{
	for (int k = 0; k < c->ninputs; k++)
		tessel_tensor_free(c->in[k]);
	for (int k = 0; k < c->noutputs; k++)
		tessel_tensor_free(c->out[k]);
	tessel_op_release(c->op);
	tessel_ctx_free(c->ctx);
}

/* Replace every element x of "t" by |x| + "lo" (inputs of log, sqrt...). */
static void make_positive(tessel_tensor *t, double lo)
{
	for (int64_t i = 0; i < tessel_tensor_numel(t); i++)
		tessel_tensor_set(t, i, fabs(tessel_tensor_get(t, i)) + lo);
}

/* Return the C-order position of the element "idx" of "t". */
static int64_t flat(const tessel_tensor *t, const int64_t *idx)
{
	int64_t f = 0;
	for (int d = 0; d < t->ndim; d++)
		f = f * t->shape[d] + idx[d];
	return f;
}

static double get(const tessel_tensor *t, const int64_t *idx)
{
	return tessel_tensor_get(t, flat(t, idx));
}

#define AT(t, ...) get((t), (const int64_t[]){ __VA_ARGS__ })
#define DIMS(...) ((const int64_t[]){ __VA_ARGS__ })

/* Step the multi-index "idx" over "shape" of rank "n" in C order; return
 * false after the last one. */
static bool next_index(int64_t *idx, const int64_t *shape, int n)
{
	for (int d = n - 1; d >= 0; d--) {
		if (++idx[d] < shape[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

/* Require output "k" of "c" to have rank "n" and extents "dims". */
static void expect_shape(const op_case *c, int k, int n, const int64_t *dims)
{
	const tessel_tensor *t = c->out[k];
	cr_assert_eq(t->ndim, n, "output %d has rank %d, want %d", k, t->ndim, n);
	for (int d = 0; d < n; d++)
		cr_assert_eq(t->shape[d], dims[d], "output %d dim %d is %ld, want %ld",
			k, d, (long)t->shape[d], (long)dims[d]);
}

/* Require output "k" of "c" to equal "want" (C order) within the relative
 * tolerance "tol". */
static void expect_close(const op_case *c, int k, const double *want,
	double tol)
{
	const tessel_tensor *t = c->out[k];
	int64_t n = tessel_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		double got = tessel_tensor_get(t, i), w = want[i];
		cr_assert(fabs(got - w) <= tol * fmax(1.0, fabs(w)),
			"output %d [%ld]: got %.17g, want %.17g", k, (long)i, got, w);
	}
}

static double *new_ref(const op_case *c, int k)
{
	double *ref = calloc((size_t)tessel_tensor_numel(c->out[k]) + 1,
		sizeof(double));
	cr_assert_not_null(ref);
	return ref;
}

/* Require instantiating "name" with "attrs" to fail with "kind" and a
 * message containing "text". */
static void expect_error(const char *name, const char *attrs,
	tessel_error_kind kind, const char *text)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = instantiate(ctx, name, attrs);
	const tessel_error *e = tessel_ctx_error(ctx);
	cr_expect_null(op, "%s %s: instantiated, want an error", name, attrs);
	cr_expect_eq(e->kind, kind, "%s %s: error kind %d, want %d (%s)", name,
		attrs, e->kind, kind, e->message);
	cr_expect(strstr(e->message, text) != NULL,
		"%s %s: message '%s' lacks '%s'", name, attrs, e->message, text);
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

/* ---- linear algebra ------------------------------------------------------- */

/* Check matmul M x K by K x N with the given transposes on f64 inputs. */
static void check_matmul(int64_t M, int64_t N, int64_t K, int ta, int tb)
{
	op_case c;
	char attrs[200];
	snprintf(attrs, sizeof(attrs),
		"M=%ld N=%ld K=%ld transpose_a=%d transpose_b=%d dtype=f64",
		(long)M, (long)N, (long)K, ta, tb);
	case_open(&c, "matmul", attrs, 11);
	case_run(&c);
	expect_shape(&c, 0, 2, DIMS(M, N));
	double *ref = new_ref(&c, 0);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			for (int64_t k = 0; k < K; k++) {
				double a = ta ? AT(c.in[0], k, i) : AT(c.in[0], i, k);
				double b = tb ? AT(c.in[1], j, k) : AT(c.in[1], k, j);
				s += a * b;
			}
			ref[i * N + j] = s;
		}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_linalg, matmul_non_square)
{
	check_matmul(3, 5, 4, 0, 0);
}

Test(ops_linalg, matmul_transposes)
{
	check_matmul(3, 5, 4, 1, 0);
	check_matmul(3, 5, 4, 0, 1);
	check_matmul(2, 3, 7, 1, 1);
}

Test(ops_linalg, matmul_shapes_of_inputs)
{
	op_case c;
	case_open(&c, "matmul", "M=2 N=3 K=4 transpose_a=1 transpose_b=1", 1);
	cr_expect_eq(c.in[0]->shape[0], 4);
	cr_expect_eq(c.in[0]->shape[1], 2);
	cr_expect_eq(c.in[1]->shape[0], 3);
	cr_expect_eq(c.in[1]->shape[1], 4);
	cr_expect_eq(c.in[0]->dtype, TESSEL_F32);
	case_close(&c);
}

/* Expect the integer output of the matmul "c" (A[M, K], B[K, N]) to be
 * the exact sum of products of its inputs as tessel reads them. */
static void expect_int_matmul(const op_case *c, int64_t m, int64_t n, int64_t k)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			int64_t s = 0;
			for (int64_t l = 0; l < k; l++)
				s += tessel_tensor_get_i64(c->in[0], i * k + l) *
				     tessel_tensor_get_i64(c->in[1], l * n + j);
			cr_expect_eq(tessel_tensor_get_i64(c->out[0], i * n + j), s,
				"C[%lld, %lld]", (long long)i, (long long)j);
		}
}

Test(ops_linalg, matmul_f32_and_i32)
{
	op_case c;
	case_open(&c, "matmul", "M=3 N=2 K=5", 3);
	case_run(&c);
	double *ref = new_ref(&c, 0);
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 2; j++)
			for (int64_t k = 0; k < 5; k++)
				ref[i * 2 + j] += AT(c.in[0], i, k) * AT(c.in[1], k, j);
	expect_close(&c, 0, ref, TOL_F32);
	free(ref);
	case_close(&c);

	case_open(&c, "matmul", "M=3 N=2 K=5 dtype=i32", 4);
	case_run(&c);
	cr_expect_eq(c.out[0]->dtype, TESSEL_I32);
	expect_int_matmul(&c, 3, 2, 5);
	case_close(&c);
}

static void check_batch_matmul(int ta, int tb)
{
	op_case c;
	char attrs[200];
	const int64_t B = 2, M = 3, N = 4, K = 5;
	snprintf(attrs, sizeof(attrs),
		"B=2 M=3 N=4 K=5 transpose_a=%d transpose_b=%d dtype=f64", ta, tb);
	case_open(&c, "batch_matmul", attrs, 21);
	case_run(&c);
	expect_shape(&c, 0, 3, DIMS(B, M, N));
	double *ref = new_ref(&c, 0);
	for (int64_t b = 0; b < B; b++)
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double s = 0;
				for (int64_t k = 0; k < K; k++)
					s += (ta ? AT(c.in[0], b, k, i) : AT(c.in[0], b, i, k)) *
					     (tb ? AT(c.in[1], b, j, k) : AT(c.in[1], b, k, j));
				ref[(b * M + i) * N + j] = s;
			}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_linalg, batch_matmul)
{
	check_batch_matmul(0, 0);
	check_batch_matmul(1, 0);
	check_batch_matmul(0, 1);
	check_batch_matmul(1, 1);
}

static void check_dense(int bias)
{
	op_case c;
	const int64_t batch = 3, in = 5, out = 4;
	case_open(&c, "dense", bias ? "batch=3 in_features=5 out_features=4 dtype=f64"
				    : "batch=3 in_features=5 out_features=4 bias=0 dtype=f64", 31);
	cr_assert_eq(c.ninputs, bias ? 3 : 2);
	expect_shape(&c, 0, 2, DIMS(batch, out));
	cr_expect_eq(c.in[1]->shape[0], out);
	cr_expect_eq(c.in[1]->shape[1], in);
	case_run(&c);
	double *ref = new_ref(&c, 0);
	for (int64_t i = 0; i < batch; i++)
		for (int64_t o = 0; o < out; o++) {
			double s = bias ? AT(c.in[2], o) : 0.0;
			for (int64_t k = 0; k < in; k++)
				s += AT(c.in[0], i, k) * AT(c.in[1], o, k);
			ref[i * out + o] = s;
		}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_linalg, dense_with_and_without_bias)
{
	check_dense(1);
	check_dense(0);
}

/* out_dtype i32 over i8 inputs: the products summed in i32, past i8's
 * range (a quantized matmul); 2 integer operations per multiply-add,
 * no float ones.  u8 data with i8 weights (quantized activations) reads
 * each as its own type.  bf16 into f32 keeps the sum in f32. */
Test(ops_linalg, quantized_matmul_sums_in_i32)
{
	op_case c;
	case_open(&c, "matmul", "M=3 N=2 K=40 dtype=i8 out_dtype=i32", 5);
	for (int64_t i = 0; i < 3 * 40; i++)
		tessel_tensor_set_i64(c.in[0], i, 100 + i % 28);
	for (int64_t i = 0; i < 40 * 2; i++)
		tessel_tensor_set_i64(c.in[1], i, -128 + i % 3);
	case_run(&c);
	cr_expect_eq(c.in[0]->dtype, TESSEL_I8);
	cr_expect_eq(c.out[0]->dtype, TESSEL_I32);
	expect_int_matmul(&c, 3, 2, 40);
	cr_expect_eq(tessel_op_int_ops(c.op), 2.0 * 3 * 2 * 40);
	cr_expect_eq(tessel_op_flops(c.op), 0);
	case_close(&c);

	case_open(&c, "matmul", "M=3 N=2 K=40 dtype=u8 weight_dtype=i8 out_dtype=i32", 5);
	cr_expect_eq(c.in[0]->dtype, TESSEL_U8);
	cr_expect_eq(c.in[1]->dtype, TESSEL_I8);
	for (int64_t i = 0; i < 3 * 40; i++)
		tessel_tensor_set_i64(c.in[0], i, 200 + i % 56);
	for (int64_t i = 0; i < 40 * 2; i++)
		tessel_tensor_set_i64(c.in[1], i, -128 + i % 3);
	case_run(&c);
	cr_expect_eq(tessel_tensor_get_i64(c.in[0], 0), 200, "u8 data read unsigned");
	cr_expect_eq(tessel_tensor_get_i64(c.in[1], 0), -128, "i8 weights signed");
	expect_int_matmul(&c, 3, 2, 40);
	case_close(&c);

	case_open(&c, "dense", "batch=2 in_features=6 out_features=3 dtype=bf16 "
		"out_dtype=f32", 6);
	cr_expect_eq(c.in[2]->dtype, TESSEL_F32, "the bias in the output's dtype");
	cr_expect_eq(tessel_op_flops(c.op), 2.0 * 2 * 3 * 6 + 2 * 3);
	cr_expect_eq(tessel_op_int_ops(c.op), 0);
	case_close(&c);
}

Test(ops_linalg, errors)
{
	expect_error("matmul", "M=2 N=3", TESSEL_ERR_VALUE,
		"op 'matmul' needs attribute 'K'");
	expect_error("matmul", "M=0 N=3 K=2", TESSEL_ERR_VALUE,
		"attribute 'M' of op 'matmul': expected a positive integer, not '0'");
	expect_error("matmul", "M=2 N=3 K=2 dtype=bool", TESSEL_ERR_TYPE,
		"not bool");
	expect_error("dense", "batch=2 in_features=3 out_features=2 out_dtype=f16",
		TESSEL_ERR_TYPE, "out_dtype f16: products of f32 sum in f32 or a wider dtype");
	expect_error("matmul", "M=2 N=3 K=2 dtype=i8 out_dtype=f32", TESSEL_ERR_TYPE,
		"out_dtype f32: products of i8 sum in i8 or a wider dtype");
	expect_error("matmul", "M=2 N=3 K=2 dtype=u8 weight_dtype=i8", TESSEL_ERR_TYPE,
		"weight_dtype i8 with dtype u8: weights differ from the data only as the "
		"other 8-bit integer type");
	expect_error("conv2d", "N=1 C=2 H=4 W=4 F=2 R=3 S=3 weight_dtype=i8",
		TESSEL_ERR_TYPE, "weight_dtype i8 with dtype f32");
	expect_error("dense", "batch=2 in_features=3 out_features=2 weight_dtype=f16",
		TESSEL_ERR_VALUE, "weight_dtype");
}

/* ---- convolution ---------------------------------------------------------- */

typedef struct conv_params {
	int64_t N, C, H, W, F, R, S;
	int64_t sh, sw, ph, pw, dh, dw, groups;
	bool nhwc;
} conv_params;

/* Return the output extent of a window of "k" (dilation "d") over "n"
 * with padding "p" on each side and stride "s". */
static int64_t conv_out(int64_t n, int64_t k, int64_t p, int64_t d, int64_t s)
{
	return (n + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Return X[n, c, h, w] of "x" in the layout of "p", 0 outside X. */
static double conv_x(const conv_params *p, const tessel_tensor *x, int64_t n,
	int64_t c, int64_t h, int64_t w)
{
	if (h < 0 || h >= p->H || w < 0 || w >= p->W)
		return 0.0;
	return p->nhwc ? AT(x, n, h, w, c) : AT(x, n, c, h, w);
}

/* Return the weight for output channel "f", channel "c" within its group,
 * kernel position "r", "s", in the layout of "p" (OIHW or HWIO). */
static double conv_w(const conv_params *p, const tessel_tensor *wt, int64_t f,
	int64_t c, int64_t r, int64_t s)
{
	return p->nhwc ? AT(wt, r, s, c, f) : AT(wt, f, c, r, s);
}

/* Check conv2d with "p" against the definition: Y[n, f, y, x] = sum over
 * the channels c of f's group and kernel r, s of X[n, g*C/G + c, y*sh -
 * ph + r*dh, x*sw - pw + s*dw] * W[f, c, r, s]. */
static void check_conv(const conv_params *p)
{
	op_case c;
	char attrs[400];
	snprintf(attrs, sizeof(attrs),
		"N=%ld C=%ld H=%ld W=%ld F=%ld R=%ld S=%ld stride=[%ld,%ld] "
		"padding=[%ld,%ld] dilation=[%ld,%ld] groups=%ld layout=%s dtype=f64",
		(long)p->N, (long)p->C, (long)p->H, (long)p->W, (long)p->F,
		(long)p->R, (long)p->S, (long)p->sh, (long)p->sw, (long)p->ph,
		(long)p->pw, (long)p->dh, (long)p->dw, (long)p->groups,
		p->nhwc ? "NHWC" : "NCHW");
	case_open(&c, "conv2d", attrs, 41);
	int64_t OH = conv_out(p->H, p->R, p->ph, p->dh, p->sh);
	int64_t OW = conv_out(p->W, p->S, p->pw, p->dw, p->sw);
	int64_t cg = p->C / p->groups, fg = p->F / p->groups;
	if (p->nhwc) {
		expect_shape(&c, 0, 4, DIMS(p->N, OH, OW, p->F));
		cr_expect_eq(c.in[1]->shape[2], cg);
		cr_expect_eq(c.in[1]->shape[3], p->F);
	} else {
		expect_shape(&c, 0, 4, DIMS(p->N, p->F, OH, OW));
		cr_expect_eq(c.in[1]->shape[0], p->F);
		cr_expect_eq(c.in[1]->shape[1], cg);
	}
	case_run(&c);
	double *ref = new_ref(&c, 0);
	for (int64_t n = 0; n < p->N; n++)
		for (int64_t f = 0; f < p->F; f++)
			for (int64_t y = 0; y < OH; y++)
				for (int64_t x = 0; x < OW; x++) {
					double s = 0;
					int64_t g = f / fg;
					for (int64_t ci = 0; ci < cg; ci++)
						for (int64_t r = 0; r < p->R; r++)
							for (int64_t q = 0; q < p->S; q++)
								s += conv_x(p, c.in[0], n, g * cg + ci,
									y * p->sh - p->ph + r * p->dh,
									x * p->sw - p->pw + q * p->dw) *
								     conv_w(p, c.in[1], f, ci, r, q);
					int64_t at = p->nhwc ? ((n * OH + y) * OW + x) * p->F + f
							     : ((n * p->F + f) * OH + y) * OW + x;
					ref[at] = s;
				}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

static conv_params conv_base(void)
{
	return (conv_params){ .N = 2, .C = 3, .H = 7, .W = 6, .F = 4, .R = 3,
		.S = 2, .sh = 1, .sw = 1, .ph = 0, .pw = 0, .dh = 1, .dw = 1,
		.groups = 1 };
}

Test(ops_conv, nchw_non_square)
{
	conv_params p = conv_base();
	check_conv(&p);
}

Test(ops_conv, nchw_stride2_padding_dilation2)
{
	conv_params p = conv_base();
	p.sh = 2;
	p.sw = 2;
	p.ph = 1;
	p.pw = 2;
	p.dh = 2;
	p.dw = 2;
	check_conv(&p);
	p.sw = 1;
	p.ph = 2;
	p.pw = 0;
	p.dw = 1;
	check_conv(&p);
}

Test(ops_conv, nchw_groups2)
{
	conv_params p = conv_base();
	p.C = 4;
	p.F = 6;
	p.groups = 2;
	p.ph = p.pw = 1;
	check_conv(&p);
	p.F = 2;
	p.sh = 2;
	check_conv(&p);
}

Test(ops_conv, nchw_depthwise)
{
	conv_params p = conv_base();
	p.C = p.F = p.groups = 4;
	p.R = p.S = 3;
	p.ph = p.pw = 1;
	check_conv(&p);
	p.F = 8;
	p.sh = p.sw = 2;
	check_conv(&p);
}

Test(ops_conv, nhwc)
{
	conv_params p = conv_base();
	p.nhwc = true;
	check_conv(&p);
	p.C = 4;
	p.F = 6;
	p.groups = 2;
	p.sh = 2;
	p.ph = p.pw = 1;
	p.dw = 2;
	check_conv(&p);
	p.C = p.F = p.groups = 4;
	check_conv(&p);
}

Test(ops_conv, single_value_attributes_apply_to_both_axes)
{
	op_case c;
	case_open(&c, "conv2d",
		"N=1 C=2 H=9 W=8 F=3 R=3 S=3 stride=2 padding=1 dilation=2", 5);
	expect_shape(&c, 0, 4, DIMS(1, 3, 4, 3));
	case_close(&c);
}

Test(ops_conv, source_keeps_sizes_symbolic)
{
	tessel_ctx *ctx = tessel_ctx_new();
	char *src = source(ctx, "conv2d", "");
	cr_assert_not_null(src, "%s", tessel_ctx_error(ctx)->message);
	cr_expect(strstr(src, "X: f32[N, C, H, W], Wt: f32[F, C, R, S]") != NULL,
		"%s", src);
	free(src);
	src = source(ctx, "conv2d", "groups=2 layout=NHWC");
	cr_assert_not_null(src, "%s", tessel_ctx_error(ctx)->message);
	cr_expect(strstr(src, "Wt: f32[R, S, C / 2, F]") != NULL, "%s", src);
	free(src);
	tessel_ctx_free(ctx);
}

Test(ops_conv, errors)
{
	const char *sizes = "N=1 C=3 H=5 W=5 F=4 R=3 S=3";
	char attrs[200];
	snprintf(attrs, sizeof(attrs), "%s groups=2", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE,
		"groups=2 does not divide C=3");
	snprintf(attrs, sizeof(attrs), "%s R=7", "N=1 C=3 H=5 W=5 F=4 S=3");
	expect_error("conv2d", attrs, TESSEL_ERR_SHAPE,
		"the kernel (R=7, dilation 1) is larger than the padded input");
	snprintf(attrs, sizeof(attrs), "%s dilation=3", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_SHAPE, "is larger than");
	snprintf(attrs, sizeof(attrs), "%s layout=NCWH", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE,
		"attribute 'layout' of op 'conv2d': expected one of NCHW|NHWC, not 'NCWH'");
	snprintf(attrs, sizeof(attrs), "%s stride=[1,2,3]", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE,
		"attribute 'stride' of op 'conv2d': expected one value or two");
	snprintf(attrs, sizeof(attrs), "%s stride=0", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE, "positive");
	snprintf(attrs, sizeof(attrs), "%s padding=-1", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE, "non-negative");
	snprintf(attrs, sizeof(attrs), "%s groups=0", sizes);
	expect_error("conv2d", attrs, TESSEL_ERR_VALUE, "positive");
}

/* ---- pooling -------------------------------------------------------------- */

typedef struct pool_params {
	int64_t N, C, H, W, kh, kw, sh, sw, ph, pw;
} pool_params;

/* Check max_pool2d ("max") or avg_pool2d against the definition: the max or
 * mean over the window rows y*sh - ph + r, columns x*sw - pw + s, r < kh,
 * s < kw, of the elements inside X (max, and avg without count_include_pad)
 * or of the whole window counting padding as zeros (avg with it). */
static void check_pool(const pool_params *p, bool max, int count_pad,
	const char *extra)
{
	op_case c;
	char attrs[300];
	snprintf(attrs, sizeof(attrs),
		"N=%ld C=%ld H=%ld W=%ld kernel=[%ld,%ld] padding=[%ld,%ld] "
		"dtype=f64%s%s",
		(long)p->N, (long)p->C, (long)p->H, (long)p->W, (long)p->kh,
		(long)p->kw, (long)p->ph, (long)p->pw, extra, max ? "" :
		count_pad ? " count_include_pad=1" : " count_include_pad=0");
	case_open(&c, max ? "max_pool2d" : "avg_pool2d", attrs, 51);
	case_run(&c);
	int64_t OH = (p->H + 2 * p->ph - p->kh) / p->sh + 1;
	int64_t OW = (p->W + 2 * p->pw - p->kw) / p->sw + 1;
	expect_shape(&c, 0, 4, DIMS(p->N, p->C, OH, OW));
	double *ref = new_ref(&c, 0);
	for (int64_t n = 0; n < p->N; n++)
		for (int64_t ch = 0; ch < p->C; ch++)
			for (int64_t y = 0; y < OH; y++)
				for (int64_t x = 0; x < OW; x++) {
					double best = -INFINITY, sum = 0;
					int64_t count = 0;
					for (int64_t r = 0; r < p->kh; r++)
						for (int64_t s = 0; s < p->kw; s++) {
							int64_t h = y * p->sh - p->ph + r;
							int64_t w = x * p->sw - p->pw + s;
							if (h < 0 || h >= p->H || w < 0 || w >= p->W)
								continue;
							double v = AT(c.in[0], n, ch, h, w);
							best = fmax(best, v);
							sum += v;
							count++;
						}
					double avg = sum / (double)(count_pad ? p->kh * p->kw : count);
					ref[((n * p->C + ch) * OH + y) * OW + x] = max ? best : avg;
				}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_pool, max_pool_kernel3_stride2_padding1)
{
	pool_params p = { 2, 3, 5, 6, 3, 3, 2, 2, 1, 1 };
	check_pool(&p, true, 0, " stride=2");
}

Test(ops_pool, max_pool_default_stride_is_kernel)
{
	pool_params p = { 1, 2, 6, 7, 2, 3, 2, 3, 0, 0 };
	check_pool(&p, true, 0, "");
	pool_params q = { 1, 2, 6, 7, 2, 3, 1, 2, 1, 0 };
	check_pool(&q, true, 0, " stride=[1,2]");
}

Test(ops_pool, max_pool_all_negative_input_with_padding)
{
	op_case c;
	case_open(&c, "max_pool2d", "N=1 C=1 H=3 W=3 kernel=3 stride=1 padding=1", 5);
	for (int64_t i = 0; i < 9; i++)
		tessel_tensor_set(c.in[0], i, -100.0 - (double)i);
	case_run(&c);
	double want[9] = { -100, -100, -101, -100, -100, -101, -103, -103, -104 };
	expect_close(&c, 0, want, 0);
	case_close(&c);
}

Test(ops_pool, avg_pool_count_include_pad)
{
	pool_params p = { 2, 3, 5, 6, 3, 3, 2, 2, 1, 1 };
	check_pool(&p, false, 1, " stride=2");
	check_pool(&p, false, 0, " stride=2");
	pool_params q = { 1, 2, 6, 7, 2, 3, 2, 3, 0, 0 };
	check_pool(&q, false, 0, "");
	pool_params r = { 1, 2, 5, 7, 3, 2, 1, 2, 1, 1 };
	check_pool(&r, false, 0, " stride=[1,2]");
	check_pool(&r, false, 1, " stride=[1,2]");
}

Test(ops_pool, avg_pool_default_includes_pad)
{
	op_case c;
	case_open(&c, "avg_pool2d", "N=1 C=1 H=2 W=2 kernel=2 stride=1 padding=1 dtype=f64", 5);
	for (int64_t i = 0; i < 4; i++)
		tessel_tensor_set(c.in[0], i, 4.0);
	case_run(&c);
	double want[9] = { 1, 2, 1, 2, 4, 2, 1, 2, 1 };
	expect_close(&c, 0, want, TOL);
	case_close(&c);
}

static void check_global_avg_pool(int keepdims)
{
	op_case c;
	case_open(&c, "global_avg_pool", keepdims ? "N=2 C=3 H=4 W=5 dtype=f64"
		: "N=2 C=3 H=4 W=5 keepdims=0 dtype=f64", 61);
	case_run(&c);
	if (keepdims)
		expect_shape(&c, 0, 4, DIMS(2, 3, 1, 1));
	else
		expect_shape(&c, 0, 2, DIMS(2, 3));
	double ref[6] = { 0 };
	for (int64_t n = 0; n < 2; n++)
		for (int64_t ch = 0; ch < 3; ch++) {
			for (int64_t h = 0; h < 4; h++)
				for (int64_t w = 0; w < 5; w++)
					ref[n * 3 + ch] += AT(c.in[0], n, ch, h, w);
			ref[n * 3 + ch] /= 20.0;
		}
	expect_close(&c, 0, ref, TOL);
	case_close(&c);
}

Test(ops_pool, global_avg_pool)
{
	check_global_avg_pool(1);
	check_global_avg_pool(0);
}

Test(ops_pool, errors)
{
	expect_error("max_pool2d", "N=1 C=1 H=5 W=5 kernel=3 padding=2",
		TESSEL_ERR_VALUE, "padding 2 is more than half the kernel 3");
	expect_error("avg_pool2d", "N=1 C=1 H=2 W=5 kernel=3",
		TESSEL_ERR_SHAPE, "the kernel 3 is larger than the padded input (H=2 + 2*0)");
	expect_error("max_pool2d", "N=1 C=1 H=5 W=5", TESSEL_ERR_VALUE,
		"op 'max_pool2d' needs attribute 'kernel'");
	expect_error("max_pool2d", "N=1 C=1 H=5 W=5 kernel=[]", TESSEL_ERR_VALUE,
		"attribute 'kernel' of op 'max_pool2d': expected one value or two");
	expect_error("max_pool2d", "N=1 C=1 H=5 W=5 kernel=2 dtype=i32",
		TESSEL_ERR_TYPE, "dtype must be a float type");
	expect_error("global_avg_pool", "N=1 C=1 H=5", TESSEL_ERR_VALUE,
		"needs attribute 'W'");
}

/* ---- normalization -------------------------------------------------------- */

/* Return the number of elements of "shape" of rank "n". */
static int64_t numel(const int64_t *shape, int n)
{
	int64_t count = 1;
	for (int d = 0; d < n; d++)
		count *= shape[d];
	return count;
}

/* Return the C-order position in "shape" of "idx" with axis "axis" set to
 * "v". */
static int64_t pos_with(const int64_t *shape, int n, const int64_t *idx,
	int axis, int64_t v)
{
	int64_t f = 0;
	for (int d = 0; d < n; d++)
		f = f * shape[d] + (d == axis ? v : idx[d]);
	return f;
}

/* Check softmax or log_softmax ("take_log") over "axis" (as given; "norm_axis"
 * normalized) of "shape": Y = exp(x - m) / sum exp(x - m) along the axis. */
static void check_softmax(bool take_log, const int64_t *shape, int n,
	int axis, int norm_axis)
{
	op_case c;
	char attrs[200], dims[100] = "";
	for (int d = 0; d < n; d++)
		snprintf(dims + strlen(dims), sizeof(dims) - strlen(dims), "%s%ld",
			d ? "," : "", (long)shape[d]);
	snprintf(attrs, sizeof(attrs), "shape=[%s] axis=%d dtype=f64", dims, axis);
	case_open(&c, take_log ? "log_softmax" : "softmax", attrs, 71);
	case_run(&c);
	expect_shape(&c, 0, n, shape);
	double *ref = new_ref(&c, 0);
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	do {
		int64_t len = shape[norm_axis];
		double m = -INFINITY, s = 0;
		for (int64_t v = 0; v < len; v++)
			m = fmax(m, tessel_tensor_get(c.in[0], pos_with(shape, n, idx, norm_axis, v)));
		for (int64_t v = 0; v < len; v++)
			s += exp(tessel_tensor_get(c.in[0], pos_with(shape, n, idx, norm_axis, v)) - m);
		double x = tessel_tensor_get(c.in[0], flat(c.in[0], idx));
		ref[flat(c.in[0], idx)] = take_log ? x - m - log(s) : exp(x - m) / s;
	} while (next_index(idx, shape, n));
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_norm, softmax)
{
	check_softmax(false, DIMS(3, 5), 2, -1, 1);
	check_softmax(false, DIMS(2, 3, 4), 3, 1, 1);
	check_softmax(false, DIMS(2, 3, 4), 3, -3, 0);
	check_softmax(false, DIMS(6), 1, 0, 0);
}

Test(ops_norm, log_softmax)
{
	check_softmax(true, DIMS(3, 5), 2, -1, 1);
	check_softmax(true, DIMS(2, 3, 4), 3, -2, 1);
}

Test(ops_norm, softmax_is_stable_for_large_inputs)
{
	op_case c;
	case_open(&c, "softmax", "shape=[2] dtype=f64", 1);
	tessel_tensor_set(c.in[0], 0, 1000.0);
	tessel_tensor_set(c.in[0], 1, 1000.0);
	case_run(&c);
	expect_close(&c, 0, (const double[]){ 0.5, 0.5 }, TOL);
	case_close(&c);
}

/* Check layer_norm of "shape" over axes [axis, n): (x - mean) / sqrt(var +
 * eps) * gamma + beta, with the biased variance. */
static void check_layer_norm(const char *attrs, const int64_t *shape, int n,
	int axis, double eps, bool affine)
{
	op_case c;
	case_open(&c, "layer_norm", attrs, 81);
	cr_assert_eq(c.ninputs, affine ? 3 : 1);
	case_run(&c);
	expect_shape(&c, 0, n, shape);
	int64_t inner = numel(shape + axis, n - axis);
	int64_t outer = numel(shape, axis);
	double *ref = new_ref(&c, 0);
	for (int64_t o = 0; o < outer; o++) {
		double mean = 0, var = 0;
		for (int64_t k = 0; k < inner; k++)
			mean += tessel_tensor_get(c.in[0], o * inner + k);
		mean /= (double)inner;
		for (int64_t k = 0; k < inner; k++) {
			double d = tessel_tensor_get(c.in[0], o * inner + k) - mean;
			var += d * d;
		}
		var /= (double)inner;
		for (int64_t k = 0; k < inner; k++) {
			double x = tessel_tensor_get(c.in[0], o * inner + k);
			double y = (x - mean) / sqrt(var + eps);
			if (affine)
				y = y * tessel_tensor_get(c.in[1], k) +
				    tessel_tensor_get(c.in[2], k);
			ref[o * inner + k] = y;
		}
	}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_norm, layer_norm)
{
	check_layer_norm("shape=[3,5] dtype=f64", DIMS(3, 5), 2, 1, 1e-5, true);
	check_layer_norm("shape=[2,3,4] axis=1 eps=0.01 dtype=f64", DIMS(2, 3, 4),
		3, 1, 0.01, true);
	check_layer_norm("shape=[2,3,4] axis=-2 affine=0 dtype=f64", DIMS(2, 3, 4),
		3, 1, 1e-5, false);
	check_layer_norm("shape=[4] affine=false eps=0 dtype=f64", DIMS(4), 1, 0,
		0.0, false);
}

Test(ops_norm, layer_norm_gamma_shape)
{
	op_case c;
	case_open(&c, "layer_norm", "shape=[2,3,4] axis=1", 1);
	cr_assert_eq(c.in[1]->ndim, 2);
	cr_expect_eq(c.in[1]->shape[0], 3);
	cr_expect_eq(c.in[1]->shape[1], 4);
	case_close(&c);
}

/* Check batch_norm of "shape" (channels on axis 1). */
static void check_batch_norm(const char *attrs, const int64_t *shape, int n,
	double eps)
{
	op_case c;
	case_open(&c, "batch_norm", attrs, 91);
	cr_assert_eq(c.ninputs, 5);
	make_positive(c.in[2], 0.1);
	case_run(&c);
	expect_shape(&c, 0, n, shape);
	int64_t C = shape[1], inner = numel(shape + 2, n - 2);
	double *ref = new_ref(&c, 0);
	for (int64_t i = 0; i < numel(shape, n); i++) {
		int64_t ch = i / inner % C;
		double mean = tessel_tensor_get(c.in[1], ch);
		double var = tessel_tensor_get(c.in[2], ch);
		double gamma = tessel_tensor_get(c.in[3], ch);
		double beta = tessel_tensor_get(c.in[4], ch);
		ref[i] = (tessel_tensor_get(c.in[0], i) - mean) / sqrt(var + eps) *
			 gamma + beta;
	}
	expect_close(&c, 0, ref, TOL);
	free(ref);
	case_close(&c);
}

Test(ops_norm, batch_norm)
{
	check_batch_norm("shape=[2,3,4,5] dtype=f64", DIMS(2, 3, 4, 5), 4, 1e-5);
	check_batch_norm("shape=[4,3] eps=0.5 dtype=f64", DIMS(4, 3), 2, 0.5);
}

Test(ops_norm, errors)
{
	expect_error("softmax", "shape=[2,3] axis=2", TESSEL_ERR_VALUE,
		"attribute 'axis': axis 2 is out of range for rank 2");
	expect_error("softmax", "shape=[2,3] axis=-3", TESSEL_ERR_VALUE,
		"out of range");
	expect_error("softmax", "shape=[]", TESSEL_ERR_SHAPE, "rank 1 or more");
	expect_error("log_softmax", "shape=[2] dtype=i32", TESSEL_ERR_TYPE,
		"dtype must be a float type (f16, bf16, f32, f64), not i32");
	expect_error("layer_norm", "shape=[2,3] eps=-1", TESSEL_ERR_VALUE,
		"'eps' must not be negative");
	expect_error("layer_norm", "shape=[2,3] eps=abc", TESSEL_ERR_VALUE,
		"attribute 'eps' of op 'layer_norm': expected a finite number, not 'abc'");
	expect_error("layer_norm", "shape=[2,3] eps=inf", TESSEL_ERR_VALUE,
		"finite number");
	expect_error("batch_norm", "shape=[3]", TESSEL_ERR_SHAPE, "rank 2 or more");
}

/* ---- elementwise ---------------------------------------------------------- */

typedef double (*unary_fn)(double);

static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_neg(double x) { return -x; }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static const struct {
	const char *name;
	unary_fn fn;
	bool positive;  /* defined for positive inputs only */
} unaries[] = {
	{ "relu", ref_relu, false }, { "neg", ref_neg, false },
	{ "exp", exp, false }, { "log", log, true }, { "sqrt", sqrt, true },
	{ "rsqrt", ref_rsqrt, true }, { "tanh", tanh, false },
	{ "erf", erf, false }, { "sigmoid", ref_sigmoid, false },
	{ "abs", fabs, false }, { "floor", floor, false },
	{ "gelu", ref_gelu, false },
};

Test(ops_elementwise, every_unary_f64)
{
	for (size_t u = 0; u < sizeof(unaries) / sizeof(unaries[0]); u++) {
		op_case c;
		case_open(&c, unaries[u].name, "shape=[2,3,4] dtype=f64", 100 + u);
		for (int64_t i = 0; i < 24; i++)
			tessel_tensor_set(c.in[0], i, 3.0 * tessel_tensor_get(c.in[0], i));
		if (unaries[u].positive)
			make_positive(c.in[0], 0.05);
		case_run(&c);
		expect_shape(&c, 0, 3, DIMS(2, 3, 4));
		double ref[24];
		for (int64_t i = 0; i < 24; i++)
			ref[i] = unaries[u].fn(tessel_tensor_get(c.in[0], i));
		expect_close(&c, 0, ref, TOL);
		case_close(&c);
	}
}

Test(ops_elementwise, unary_f32_and_scalar)
{
	op_case c;
	case_open(&c, "tanh", "shape=[5]", 7);
	case_run(&c);
	double ref[5];
	for (int64_t i = 0; i < 5; i++)
		ref[i] = tanh(tessel_tensor_get(c.in[0], i));
	expect_close(&c, 0, ref, TOL_F32);
	case_close(&c);
	case_open(&c, "gelu", "shape=[] dtype=f64", 8);
	case_run(&c);
	expect_shape(&c, 0, 0, NULL);
	double x = tessel_tensor_get(c.in[0], 0);
	expect_close(&c, 0, (const double[]){ ref_gelu(x) }, TOL);
	case_close(&c);
}

Test(ops_elementwise, integer_unaries)
{
	static const char *const names[] = { "relu", "neg", "abs" };
	for (int u = 0; u < 3; u++) {
		op_case c;
		case_open(&c, names[u], "shape=[4,3] dtype=i32", 9);
		case_run(&c);
		cr_expect_eq(c.out[0]->dtype, TESSEL_I32);
		for (int64_t i = 0; i < 12; i++) {
			int64_t x = tessel_tensor_get_i64(c.in[0], i);
			int64_t want = u == 0 ? (x > 0 ? x : 0) : u == 1 ? -x : llabs(x);
			cr_expect_eq(tessel_tensor_get_i64(c.out[0], i), want,
				"%s(%ld)", names[u], (long)x);
		}
		case_close(&c);
	}
}

typedef double (*binary_fn)(double, double);

static double ref_add(double a, double b) { return a + b; }
static double ref_sub(double a, double b) { return a - b; }
static double ref_mul(double a, double b) { return a * b; }
static double ref_div(double a, double b) { return a / b; }
static double ref_eq(double a, double b) { return a == b; }
static double ref_ne(double a, double b) { return a != b; }
static double ref_lt(double a, double b) { return a < b; }
static double ref_le(double a, double b) { return a <= b; }
static double ref_gt(double a, double b) { return a > b; }
static double ref_ge(double a, double b) { return a >= b; }

static const struct {
	const char *name;
	binary_fn fn;
	bool compare;
} binaries[] = {
	{ "add", ref_add, false }, { "sub", ref_sub, false },
	{ "mul", ref_mul, false }, { "div", ref_div, false },
	{ "maximum", fmax, false }, { "minimum", fmin, false },
	{ "pow", pow, false }, { "equal", ref_eq, true },
	{ "not_equal", ref_ne, true }, { "less", ref_lt, true },
	{ "less_equal", ref_le, true }, { "greater", ref_gt, true },
	{ "greater_equal", ref_ge, true },
};

/* Return the element of input "t" (shape "s" of rank "n") that NumPy
 * broadcasting pairs with output index "idx" of rank "out_n". */
static double broadcast_get(const tessel_tensor *t, const int64_t *idx,
	int out_n)
{
	int64_t at[TESSEL_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++) {
		int od = d + out_n - t->ndim;
		at[d] = t->shape[d] == 1 ? 0 : idx[od];
	}
	return get(t, at);
}

/* Check binary op "b" on shapes "a" and "bshape" (text) whose broadcast
 * is "out" of rank "n". */
static void check_binary(int b, const char *a_text, const char *b_text,
	const int64_t *out, int n, const char *dtype, double tol)
{
	op_case c;
	char attrs[200];
	snprintf(attrs, sizeof(attrs), "a=%s b=%s dtype=%s", a_text, b_text, dtype);
	case_open(&c, binaries[b].name, attrs, 200 + (uint64_t)b);
	if (strcmp(binaries[b].name, "pow") == 0 || strcmp(binaries[b].name, "div") == 0)
		make_positive(c.in[1], 0.25);
	if (strcmp(binaries[b].name, "pow") == 0)
		make_positive(c.in[0], 0.0);
	if (binaries[b].compare && tessel_tensor_numel(c.in[1]) > 1)
		tessel_tensor_set(c.in[1], 1, tessel_tensor_get(c.in[0], 0));
	case_run(&c);
	expect_shape(&c, 0, n, out);
	cr_expect_eq(c.out[0]->dtype, binaries[b].compare ? TESSEL_BOOL
		: c.in[0]->dtype);
	double *ref = new_ref(&c, 0);
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	int64_t k = 0;
	do {
		ref[k++] = binaries[b].fn(broadcast_get(c.in[0], idx, n),
			broadcast_get(c.in[1], idx, n));
	} while (next_index(idx, out, n));
	expect_close(&c, 0, ref, tol);
	free(ref);
	case_close(&c);
}

Test(ops_elementwise, every_binary_with_broadcasting)
{
	for (int b = 0; b < (int)(sizeof(binaries) / sizeof(binaries[0])); b++) {
		check_binary(b, "[2,1,3]", "[3]", DIMS(2, 1, 3), 3, "f64", TOL);
		check_binary(b, "[4,1]", "[1,5]", DIMS(4, 5), 2, "f64", TOL);
		check_binary(b, "[3]", "[2,4,1]", DIMS(2, 4, 3), 3, "f64", TOL);
		check_binary(b, "[2,3]", "[2,3]", DIMS(2, 3), 2, "f64", TOL);
		check_binary(b, "[]", "[3]", DIMS(3), 1, "f64", TOL);
		check_binary(b, "[]", "[]", NULL, 0, "f64", TOL);
	}
}

Test(ops_elementwise, binary_f32)
{
	check_binary(2, "[2,1,3]", "[3]", DIMS(2, 1, 3), 3, "f32", TOL_F32);
	check_binary(3, "[4,1]", "[1,5]", DIMS(4, 5), 2, "f16", 1e-3);
}

Test(ops_elementwise, integer_binaries)
{
	op_case c;
	case_open(&c, "div", "a=[4,3] b=[3] dtype=i64", 17);
	tessel_tensor_set_i64(c.in[1], 0, -3);
	tessel_tensor_set_i64(c.in[1], 1, 2);
	tessel_tensor_set_i64(c.in[1], 2, 5);
	case_run(&c);
	for (int64_t i = 0; i < 4; i++)
		for (int64_t j = 0; j < 3; j++) {
			int64_t x = tessel_tensor_get_i64(c.in[0], i * 3 + j);
			int64_t y = tessel_tensor_get_i64(c.in[1], j);
			int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
			cr_expect_eq(tessel_tensor_get_i64(c.out[0], i * 3 + j), q,
				"%ld / %ld", (long)x, (long)y);
		}
	case_close(&c);
	case_open(&c, "maximum", "a=[4,1] b=[1,5] dtype=i8", 18);
	case_run(&c);
	for (int64_t i = 0; i < 4; i++)
		for (int64_t j = 0; j < 5; j++) {
			int64_t x = tessel_tensor_get_i64(c.in[0], i);
			int64_t y = tessel_tensor_get_i64(c.in[1], j);
			cr_expect_eq(tessel_tensor_get_i64(c.out[0], i * 5 + j),
				x > y ? x : y);
		}
	case_close(&c);
}

Test(ops_elementwise, errors)
{
	expect_error("add", "a=[2,3] b=[4]", TESSEL_ERR_SHAPE,
		"op 'add': shapes [2, 3] (a) and [4] (b) do not broadcast: "
		"dimension 1 from the end is 3 vs 4");
	expect_error("mul", "a=[2,3,4] b=[5,1,1]", TESSEL_ERR_SHAPE,
		"shapes [2, 3, 4] (a) and [5, 1, 1] (b)");
	expect_error("exp", "shape=[2] dtype=i32", TESSEL_ERR_TYPE,
		"op 'exp': dtype must be a float type");
	expect_error("relu", "shape=[2] dtype=bool", TESSEL_ERR_TYPE,
		"op 'relu': dtype must be a number type, not bool");
	expect_error("pow", "a=[2] b=[2] dtype=i32", TESSEL_ERR_TYPE,
		"float type");
	expect_error("add", "a=[2] b=[2] dtype=bool", TESSEL_ERR_TYPE, "not bool");
	expect_error("add", "a=[2]", TESSEL_ERR_VALUE,
		"op 'add' needs attribute 'b' (shape of B)");
	expect_error("relu", "shape=[2,0]", TESSEL_ERR_VALUE,
		"attribute 'shape' of op 'relu': expected positive integers, not '[2,0]'");
	expect_error("relu", "shape=[1,1,1,1,1,1,1,1,1]", TESSEL_ERR_VALUE,
		"attribute 'shape' of op 'relu': 9 dimensions; at most 8");
}

/* ---- reductions ----------------------------------------------------------- */

/* Check reduction "name" ("sum", "mean", "max", "min", "prod") of "shape"
 * over the axes whose bit is set in "mask", against plain loops. */
static void check_reduce(const char *name, const char *attrs,
	const int64_t *shape, int n, unsigned mask, bool keepdims)
{
	op_case c;
	char full[100];
	snprintf(full, sizeof(full), "reduce_%s", name);
	case_open(&c, full, attrs, 300);
	case_run(&c);
	int64_t out_dims[TESSEL_MAX_DIMS];
	int out_n = 0;
	for (int d = 0; d < n; d++)
		if (!(mask & (1u << d)) || keepdims)
			out_dims[out_n++] = mask & (1u << d) ? 1 : shape[d];
	expect_shape(&c, 0, out_n, out_dims);
	int64_t nout = tessel_tensor_numel(c.out[0]);
	double *ref = new_ref(&c, 0);
	int64_t *count = calloc((size_t)nout, sizeof(int64_t));
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	do {
		int64_t o = 0;
		for (int d = 0; d < n; d++)
			if (!(mask & (1u << d)))
				o = o * shape[d] + idx[d];
		double x = tessel_tensor_get(c.in[0], flat(c.in[0], idx));
		bool first = count[o]++ == 0;
		if (strcmp(name, "max") == 0)
			ref[o] = first ? x : fmax(ref[o], x);
		else if (strcmp(name, "min") == 0)
			ref[o] = first ? x : fmin(ref[o], x);
		else if (strcmp(name, "prod") == 0)
			ref[o] = first ? x : ref[o] * x;
		else
			ref[o] += x;
	} while (next_index(idx, shape, n));
	if (strcmp(name, "mean") == 0)
		for (int64_t o = 0; o < nout; o++)
			ref[o] /= (double)count[o];
	expect_close(&c, 0, ref, TOL);
	free(count);
	free(ref);
	case_close(&c);
}

Test(ops_reduce, sum_over_one_axis)
{
	check_reduce("sum", "shape=[2,3,4] axes=[1] dtype=f64", DIMS(2, 3, 4), 3,
		1u << 1, false);
	check_reduce("sum", "shape=[2,3,4] axes=1 keepdims=1 dtype=f64",
		DIMS(2, 3, 4), 3, 1u << 1, true);
}

Test(ops_reduce, negative_axes_and_several)
{
	check_reduce("sum", "shape=[2,3,4] axes=[-1,0] dtype=f64", DIMS(2, 3, 4),
		3, 1u << 0 | 1u << 2, false);
	check_reduce("mean", "shape=[2,3,4] axes=[0,-1] keepdims=true dtype=f64",
		DIMS(2, 3, 4), 3, 1u << 0 | 1u << 2, true);
}

Test(ops_reduce, all_axes)
{
	check_reduce("sum", "shape=[2,3,4] dtype=f64", DIMS(2, 3, 4), 3, 7, false);
	check_reduce("max", "shape=[2,3] axes=[] keepdims=1 dtype=f64",
		DIMS(2, 3), 2, 3, true);
	check_reduce("mean", "shape=[5] dtype=f64", DIMS(5), 1, 1, false);
}

Test(ops_reduce, max_min_prod_mean)
{
	check_reduce("max", "shape=[3,4,2] axes=[1] dtype=f64", DIMS(3, 4, 2), 3,
		1u << 1, false);
	check_reduce("min", "shape=[3,4,2] axes=[0,2] dtype=f64", DIMS(3, 4, 2),
		3, 1u << 0 | 1u << 2, false);
	check_reduce("prod", "shape=[3,4] axes=[-1] keepdims=1 dtype=f64",
		DIMS(3, 4), 2, 1u << 1, true);
	check_reduce("mean", "shape=[3,4] axes=[0] dtype=f64", DIMS(3, 4), 2,
		1u << 0, false);
	check_reduce("sum", "shape=[3,4] axes=[0]", DIMS(3, 4), 2, 1u << 0, false);
}

Test(ops_reduce, integer_sum)
{
	op_case c;
	case_open(&c, "reduce_sum", "shape=[3,4] axes=[1] dtype=i32", 5);
	case_run(&c);
	for (int64_t i = 0; i < 3; i++) {
		int64_t s = 0;
		for (int64_t j = 0; j < 4; j++)
			s += tessel_tensor_get_i64(c.in[0], i * 4 + j);
		cr_expect_eq(tessel_tensor_get_i64(c.out[0], i), s);
	}
	case_close(&c);
}

Test(ops_reduce, errors)
{
	expect_error("reduce_sum", "shape=[2,3] axes=[1,-1]", TESSEL_ERR_VALUE,
		"op 'reduce_sum': attribute 'axes' names axis 1 twice");
	expect_error("reduce_max", "shape=[2,3] axes=[2]", TESSEL_ERR_VALUE,
		"attribute 'axes': axis 2 is out of range for rank 2 (valid: -2..1)");
	expect_error("reduce_mean", "shape=[2,3] dtype=i32", TESSEL_ERR_TYPE,
		"float type");
	expect_error("reduce_sum", "shape=[2,3] axes=[1;2]", TESSEL_ERR_VALUE,
		"attribute 'axes' of op 'reduce_sum': expected a list of integers");
	expect_error("reduce_sum", "shape=[2,3] keepdims=2", TESSEL_ERR_VALUE,
		"attribute 'keepdims' of op 'reduce_sum': expected 0, 1, true or false, not '2'");
}

/* ---- data movement -------------------------------------------------------- */

static void check_transpose(const char *attrs, const int64_t *shape, int n,
	const int *perm)
{
	op_case c;
	case_open(&c, "transpose", attrs, 400);
	case_run(&c);
	int64_t out[TESSEL_MAX_DIMS];
	for (int d = 0; d < n; d++)
		out[d] = shape[perm[d]];
	expect_shape(&c, 0, n, out);
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	do {
		int64_t src[TESSEL_MAX_DIMS];
		for (int d = 0; d < n; d++)
			src[perm[d]] = idx[d];
		cr_expect_eq(get(c.out[0], idx), get(c.in[0], src));
	} while (next_index(idx, out, n));
	case_close(&c);
}

Test(ops_shape, transpose)
{
	check_transpose("shape=[2,3,4] perm=[2,0,1]", DIMS(2, 3, 4), 3,
		(const int[]){ 2, 0, 1 });
	check_transpose("shape=[2,3,4]", DIMS(2, 3, 4), 3,
		(const int[]){ 2, 1, 0 });
	check_transpose("shape=[2,3,4,5] perm=[-1,1,0,2] dtype=i64",
		DIMS(2, 3, 4, 5), 4, (const int[]){ 3, 1, 0, 2 });
	check_transpose("shape=[3,2] perm=[1,0] dtype=bool", DIMS(3, 2), 2,
		(const int[]){ 1, 0 });
}

/* Check reshape: the output holds the input's elements in C order. */
static void check_reshape(const char *attrs, const int64_t *out, int n)
{
	op_case c;
	case_open(&c, "reshape", attrs, 500);
	case_run(&c);
	expect_shape(&c, 0, n, out);
	int64_t total = tessel_tensor_numel(c.in[0]);
	cr_assert_eq(tessel_tensor_numel(c.out[0]), total);
	for (int64_t i = 0; i < total; i++)
		cr_expect_eq(tessel_tensor_get(c.out[0], i),
			tessel_tensor_get(c.in[0], i), "element %ld", (long)i);
	case_close(&c);
}

Test(ops_shape, reshape)
{
	check_reshape("shape=[2,3,4] newshape=[4,-1]", DIMS(4, 6), 2);
	check_reshape("shape=[2,3,4] newshape=[3,1,8]", DIMS(3, 1, 8), 3);
	check_reshape("shape=[6,4] newshape=[-1]", DIMS(24), 1);
	check_reshape("shape=[24] newshape=[2,-1,3] dtype=i32", DIMS(2, 4, 3), 3);
	check_reshape("shape=[1,1] newshape=[]", NULL, 0);
	check_reshape("shape=[] newshape=[1,1,1]", DIMS(1, 1, 1), 3);
	check_reshape("shape=[4,1,6] newshape=[2,2,3,2]", DIMS(2, 2, 3, 2), 4);
}

/* Check pad of "shape" with "pads" (before..., after...) and "value". */
static void check_pad(const char *attrs, const int64_t *shape, int n,
	const int64_t *pads, double value)
{
	op_case c;
	case_open(&c, "pad", attrs, 600);
	case_run(&c);
	int64_t out[TESSEL_MAX_DIMS];
	for (int d = 0; d < n; d++)
		out[d] = pads[d] + shape[d] + pads[n + d];
	expect_shape(&c, 0, n, out);
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	do {
		int64_t src[TESSEL_MAX_DIMS];
		bool inside = true;
		for (int d = 0; d < n; d++) {
			src[d] = idx[d] - pads[d];
			inside &= src[d] >= 0 && src[d] < shape[d];
		}
		double want = inside ? get(c.in[0], src) : value;
		cr_expect_eq(get(c.out[0], idx), want);
	} while (next_index(idx, out, n));
	case_close(&c);
}

Test(ops_shape, pad)
{
	check_pad("shape=[2,3] pads=[0,1,1,2] value=1.5 dtype=f64", DIMS(2, 3), 2,
		DIMS(0, 1, 1, 2), 1.5);
	check_pad("shape=[2,3,2] pads=[1,0,2,1,2,0]", DIMS(2, 3, 2), 3,
		DIMS(1, 0, 2, 1, 2, 0), 0.0);
	check_pad("shape=[4,5] pads=[-1,2,0,-2] value=-3 dtype=i32", DIMS(4, 5),
		2, DIMS(-1, 2, 0, -2), -3.0);
	check_pad("shape=[3] pads=[0,0] dtype=bool", DIMS(3), 1, DIMS(0, 0), 0.0);
	check_pad("shape=[3] pads=[1,1] value=1 dtype=bool", DIMS(3), 1,
		DIMS(1, 1), 1.0);
}

/* Check concat of inputs along "axis" with extents "sizes" into "shape". */
static void check_concat(const char *attrs, const int64_t *shape, int n,
	int axis, const int64_t *sizes, int ninputs)
{
	op_case c;
	case_open(&c, "concat", attrs, 700);
	cr_assert_eq(c.ninputs, ninputs);
	case_run(&c);
	expect_shape(&c, 0, n, shape);
	int64_t idx[TESSEL_MAX_DIMS] = { 0 };
	do {
		int64_t src[TESSEL_MAX_DIMS];
		int k = 0;
		memcpy(src, idx, sizeof(src));
		while (src[axis] >= sizes[k])
			src[axis] -= sizes[k++];
		cr_expect_eq(get(c.out[0], idx), get(c.in[k], src));
	} while (next_index(idx, shape, n));
	case_close(&c);
}

Test(ops_shape, concat)
{
	check_concat("shape=[2,9,4] sizes=[3,1,5] axis=1", DIMS(2, 9, 4), 3, 1,
		DIMS(3, 1, 5), 3);
	check_concat("shape=[2,3,7] sizes=[4,3] axis=-1 dtype=i64", DIMS(2, 3, 7),
		3, 2, DIMS(4, 3), 2);
	check_concat("shape=[5,2] sizes=[1,1,2,1]", DIMS(5, 2), 2, 0,
		DIMS(1, 1, 2, 1), 4);
	check_concat("shape=[3] sizes=[3]", DIMS(3), 1, 0, DIMS(3), 1);
}

Test(ops_shape, errors)
{
	expect_error("reshape", "shape=[2,3] newshape=[4,-1]", TESSEL_ERR_SHAPE,
		"op 'reshape': cannot reshape [2, 3] (6 elements) into [4, -1]");
	expect_error("reshape", "shape=[2,3] newshape=[5]", TESSEL_ERR_SHAPE,
		"into [5]");
	expect_error("reshape", "shape=[2,3] newshape=[-1,-1]", TESSEL_ERR_VALUE,
		"at most one -1");
	expect_error("reshape", "shape=[2,3] newshape=[0,6]", TESSEL_ERR_VALUE,
		"extents must be positive");
	expect_error("transpose", "shape=[2,3] perm=[0,0]", TESSEL_ERR_VALUE,
		"attribute 'perm' names axis 0 twice");
	expect_error("transpose", "shape=[2,3] perm=[0]", TESSEL_ERR_VALUE,
		"attribute 'perm' has 1 axes for a shape of rank 2");
	expect_error("pad", "shape=[2,3] pads=[1,1]", TESSEL_ERR_VALUE,
		"attribute 'pads' needs 4 values");
	expect_error("pad", "shape=[2,3] pads=[0,-2,0,-1]", TESSEL_ERR_SHAPE,
		"padding axis 1 to 0 elements");
	expect_error("pad", "shape=[2] pads=[1,1] value=0.5 dtype=i32",
		TESSEL_ERR_VALUE, "attribute 'value' must be an integer that fits i32");
	expect_error("pad", "shape=[2] pads=[1,1] value=2 dtype=bool",
		TESSEL_ERR_VALUE, "must be 0 or 1 for bool");
	expect_error("concat", "shape=[2,9] sizes=[3,5] axis=1", TESSEL_ERR_SHAPE,
		"attribute 'sizes' sums to 8 but shape[1] is 9");
	expect_error("concat", "shape=[2,9] sizes=[] axis=1", TESSEL_ERR_VALUE,
		"needs at least one input");
	expect_error("concat", "shape=[2,9] sizes=[9] axis=2", TESSEL_ERR_VALUE,
		"out of range");
}

/* ---- losses --------------------------------------------------------------- */

/* Check softmax_cross_entropy: per row, logsumexp(x) - x[label]; then the
 * mean, the sum, or each row. */
static void check_cross_entropy(const char *attrs, int64_t N, int64_t C,
	char reduction, double shift)
{
	op_case c;
	case_open(&c, "softmax_cross_entropy", attrs, 800);
	for (int64_t i = 0; i < N; i++)
		tessel_tensor_set_i64(c.in[1], i, (i * 7 + 3) % C);
	for (int64_t i = 0; i < N * C; i++)
		tessel_tensor_set(c.in[0], i, 4.0 * tessel_tensor_get(c.in[0], i) + shift);
	case_run(&c);
	double losses[64], total = 0;
	for (int64_t i = 0; i < N; i++) {
		double m = -INFINITY, s = 0;
		for (int64_t j = 0; j < C; j++)
			m = fmax(m, AT(c.in[0], i, j));
		for (int64_t j = 0; j < C; j++)
			s += exp(AT(c.in[0], i, j) - m);
		int64_t label = tessel_tensor_get_i64(c.in[1], i);
		losses[i] = m + log(s) - AT(c.in[0], i, label);
		total += losses[i];
	}
	if (reduction == 'n') {
		expect_shape(&c, 0, 1, DIMS(N));
		expect_close(&c, 0, losses, TOL);
	} else {
		expect_shape(&c, 0, 0, NULL);
		double want = reduction == 'm' ? total / (double)N : total;
		expect_close(&c, 0, &want, TOL);
	}
	case_close(&c);
}

Test(ops_loss, softmax_cross_entropy)
{
	check_cross_entropy("N=4 C=5 dtype=f64", 4, 5, 'm', 0.0);
	check_cross_entropy("N=3 C=7 reduction=sum label_dtype=i32 dtype=f64", 3,
		7, 's', 0.0);
	check_cross_entropy("N=5 C=3 reduction=none dtype=f64", 5, 3, 'n', 0.0);
}

Test(ops_loss, softmax_cross_entropy_is_stable)
{
	check_cross_entropy("N=4 C=5 dtype=f64", 4, 5, 'm', 1000.0);
	check_cross_entropy("N=4 C=5 dtype=f64", 4, 5, 'm', -1000.0);
}

Test(ops_loss, errors)
{
	expect_error("softmax_cross_entropy", "N=4 C=5 label_dtype=f32",
		TESSEL_ERR_TYPE, "label_dtype must be an integer type");
	expect_error("softmax_cross_entropy", "N=4 C=5 reduction=avg",
		TESSEL_ERR_VALUE, "expected one of mean|sum|none, not 'avg'");
	expect_error("softmax_cross_entropy", "N=4 C=5 dtype=i64",
		TESSEL_ERR_TYPE, "float type");
}

/* ---- the registry --------------------------------------------------------- */

Test(ops_registry, lists_every_op_with_its_attributes)
{
	static const char *const expected[] = {
		"matmul", "batch_matmul", "dense", "conv2d", "max_pool2d",
		"avg_pool2d", "global_avg_pool", "softmax", "log_softmax",
		"layer_norm", "batch_norm", "relu", "neg", "exp", "log", "sqrt",
		"rsqrt", "tanh", "erf", "sigmoid", "abs", "floor", "gelu", "add",
		"sub", "mul", "div", "maximum", "minimum", "pow", "equal",
		"reduce_sum", "reduce_mean", "reduce_max", "transpose", "reshape",
		"pad", "concat", "softmax_cross_entropy",
	};
	int n = tessel_ops_count();
	for (size_t k = 0; k < sizeof(expected) / sizeof(expected[0]); k++)
		cr_expect_geq(tessel_ops_find(expected[k]), 0, "no op %s", expected[k]);
	for (int i = 0; i < n; i++) {
		const char *name = tessel_ops_name(i);
		cr_assert_not_null(name);
		cr_expect_eq(tessel_ops_find(name), i, "%s listed twice", name);
		cr_expect_not_null(tessel_ops_doc(i));
		cr_expect_gt(tessel_ops_num_attrs(i), 0, "%s", name);
		for (int j = 0; j < tessel_ops_num_attrs(i); j++) {
			const tessel_attr_info *a = tessel_ops_attr(i, j);
			cr_assert_not_null(a);
			cr_expect_not_null(a->name);
			cr_expect_not_null(a->doc, "%s.%s", name, a->name);
		}
		cr_expect_null(tessel_ops_attr(i, tessel_ops_num_attrs(i)));
	}
	cr_expect_null(tessel_ops_name(n));
	cr_expect_null(tessel_ops_name(-1));
	cr_expect_null(tessel_ops_doc(n));
	cr_expect_eq(tessel_ops_num_attrs(n), -1);
	cr_expect_null(tessel_ops_attr(-1, 0));
	cr_expect_eq(tessel_ops_find("nope"), -1);
	cr_expect_eq(tessel_ops_find(NULL), -1);
}

Test(ops_registry, every_default_parses)
{
	for (int i = 0; i < tessel_ops_count(); i++)
		for (int j = 0; j < tessel_ops_num_attrs(i); j++) {
			const tessel_attr_info *a = tessel_ops_attr(i, j);
			if (!a->def)
				continue;
			tessel_ctx *ctx = tessel_ctx_new();
			const char *key = a->name, *value = a->def;
			char *src = tessel_ops_source(ctx, tessel_ops_name(i), 1, &key, &value);
			const tessel_error *e = tessel_ctx_error(ctx);
			cr_expect(src || strstr(e->message, "needs attribute"),
				"%s %s=%s: %s", tessel_ops_name(i), key, value, e->message);
			free(src);
			tessel_ctx_free(ctx);
		}
}

Test(ops_registry, fixed_rank_sources_parse_with_symbolic_sizes)
{
	static const char *const specs[][2] = {
		{ "matmul", "" }, { "matmul", "transpose_a=1 transpose_b=1" },
		{ "batch_matmul", "" }, { "dense", "" }, { "dense", "bias=0" },
		{ "conv2d", "" }, { "conv2d", "stride=2 padding=1 dilation=[1,2]" },
		{ "conv2d", "layout=NHWC padding=[0,1]" },
		{ "max_pool2d", "kernel=3 stride=2 padding=1" },
		{ "avg_pool2d", "kernel=[3,2] padding=1 count_include_pad=0" },
		{ "global_avg_pool", "" }, { "softmax_cross_entropy", "" },
	};
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		tessel_ctx *ctx = tessel_ctx_new();
		char *src = source(ctx, specs[k][0], specs[k][1]);
		cr_assert_not_null(src, "%s %s: %s", specs[k][0], specs[k][1],
			tessel_ctx_error(ctx)->message);
		tessel_module *m = tessel_parse(ctx, "src.te", src, strlen(src));
		cr_expect_not_null(m, "%s %s: %s\n%s", specs[k][0], specs[k][1],
			tessel_ctx_error(ctx)->message, src);
		if (m)
			cr_expect_not_null(tessel_module_find(ctx, m, specs[k][0]));
		tessel_module_free(m);
		free(src);
		tessel_ctx_free(ctx);
	}
}

Test(ops_registry, source_needs_shapes_but_not_sizes)
{
	tessel_ctx *ctx = tessel_ctx_new();
	char *src = source(ctx, "relu", "");
	cr_expect_null(src);
	cr_expect_str_eq(tessel_ctx_error(ctx)->message,
		"op 'relu' needs attribute 'shape' (shape of X and Y ([] for a scalar))");
	src = source(ctx, "matmul", "M=4");
	cr_assert_not_null(src);
	cr_expect(strstr(src, "op matmul(A: f32[M, K], B: f32[K, N]) -> C {") != NULL,
		"%s", src);
	cr_expect(strstr(src, "# matmul M=4 transpose_a=0") == src, "%s", src);
	free(src);
	tessel_ctx_free(ctx);
}

Test(ops_registry, instantiated_ops_are_bound)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *op = instantiate(ctx, "conv2d", "N=1 C=2 H=4 W=4 F=3 R=3 S=3");
	cr_assert_not_null(op, "%s", tessel_ctx_error(ctx)->message);
	cr_expect(tessel_op_is_bound(op));
	cr_expect_eq(tessel_op_num_symbols(op), 0);
	cr_expect_str_eq(tessel_op_name(op), "conv2d");
	tessel_op_release(op);
	op = instantiate(ctx, "relu", "shape=[3]");
	cr_assert_not_null(op);
	cr_expect(tessel_op_is_bound(op));
	tessel_op_release(op);
	tessel_ctx_free(ctx);
}

Test(ops_registry, the_same_attributes_give_equal_ops)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *a = instantiate(ctx, "matmul", "M=2 N=3 K=4");
	tessel_op *b = instantiate(ctx, "matmul", "K=4 N=3 M=2 dtype=f32");
	tessel_op *c = instantiate(ctx, "matmul", "M=2 N=3 K=5");
	cr_assert(a && b && c);
	cr_expect(tessel_op_equal(a, b));
	cr_expect_eq(tessel_op_hash(a), tessel_op_hash(b));
	cr_expect_not(tessel_op_equal(a, c));
	tessel_op_release(a);
	tessel_op_release(b);
	tessel_op_release(c);
	tessel_ctx_free(ctx);
}

Test(ops_registry, attribute_errors)
{
	expect_error("matmull", "M=2", TESSEL_ERR_NAME, "unknown op 'matmull'");
	expect_error("matmul", "M=2 N=3 K=4 Q=1", TESSEL_ERR_NAME,
		"op 'matmul' has no attribute 'Q' (attributes: M, N, K, "
		"transpose_a, transpose_b, dtype, weight_dtype, out_dtype)");
	expect_error("matmul", "N=3 K=4", TESSEL_ERR_VALUE,
		"op 'matmul' needs attribute 'M' (rows of A and C)");
	expect_error("matmul", "M=2 N=3 K=4 M=5", TESSEL_ERR_VALUE,
		"attribute 'M' of op 'matmul' is given twice");
	expect_error("matmul", "M=two N=3 K=4", TESSEL_ERR_VALUE,
		"attribute 'M' of op 'matmul': expected an integer, not 'two'");
	expect_error("matmul", "M=2x N=3 K=4", TESSEL_ERR_VALUE,
		"expected an integer, not '2x'");
	expect_error("matmul", "M=99999999999999999999 N=3 K=4", TESSEL_ERR_VALUE,
		"expected an integer");
	expect_error("matmul", "M=-2 N=3 K=4", TESSEL_ERR_VALUE,
		"expected a positive integer, not '-2'");
	expect_error("matmul", "M=2147483648 N=3 K=4", TESSEL_ERR_LIMIT,
		"attribute 'M' of op 'matmul': 2147483648 is too large");
	expect_error("relu", "shape=[2147483647,2147483647,2147483647]",
		TESSEL_ERR_LIMIT, "the shape has more than 2^62 elements");
	expect_error("reshape", "shape=[2] newshape=[-1,2147483647,2147483647,"
		"2147483647]", TESSEL_ERR_SHAPE, "cannot reshape [2] (2 elements)");
	expect_error("matmul", "M=2 N=3 K=4 transpose_a=yes", TESSEL_ERR_VALUE,
		"attribute 'transpose_a' of op 'matmul': expected 0, 1, true or false, not 'yes'");
	expect_error("matmul", "M=2 N=3 K=4 dtype=f31", TESSEL_ERR_VALUE,
		"attribute 'dtype' of op 'matmul': expected a dtype (f32, f64, f16, "
		"bf16, i8, u8, i32, i64, bool), not 'f31'");
	expect_error("relu", "shape=[2,", TESSEL_ERR_VALUE,
		"attribute 'shape' of op 'relu': expected a list of integers like [4, 1, 3], not '[2,'");
	expect_error("relu", "shape=[2]x", TESSEL_ERR_VALUE, "a list of integers");
	expect_error("relu", "shape=[a]", TESSEL_ERR_VALUE, "a list of integers");
	char many[300] = "shape=[2] axes=[0";
	for (int k = 0; k < 64; k++)
		strcat(many, ",0");
	strcat(many, "]");
	expect_error("reduce_sum", many, TESSEL_ERR_LIMIT,
		"attribute 'axes' of op 'reduce_sum': more than 64 values");
}

Test(ops_registry, attribute_text_forms)
{
	tessel_ctx *ctx = tessel_ctx_new();
	static const char *const ok[][2] = {
		{ "relu", "shape=[ 2 , 3 ] dtype=f64" },
		{ "relu", "shape=4" },
		{ "relu", "shape=[]" },
		{ "matmul", "M=+2 N=3 K=4 transpose_a=true transpose_b=false" },
		{ "layer_norm", "shape=[3] eps=1e-3" },
		{ "layer_norm", "shape=[3] eps=0.5" },
		{ "pad", "shape=[3] pads=[1,1] value=-2.25" },
	};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
		tessel_op *op = instantiate(ctx, ok[k][0], ok[k][1]);
		cr_expect_not_null(op, "%s %s: %s", ok[k][0], ok[k][1],
			tessel_ctx_error(ctx)->message);
		tessel_op_release(op);
	}
	tessel_ctx_free(ctx);
}

Test(ops_registry, null_keys_and_values)
{
	tessel_ctx *ctx = tessel_ctx_new();
	const char *keys[] = { NULL }, *values[] = { "1" };
	cr_expect_null(tessel_ops_instantiate(ctx, "relu", 1, keys, values));
	cr_expect_eq(tessel_ctx_error(ctx)->kind, TESSEL_ERR_NAME);
	const char *keys2[] = { "shape" }, *values2[] = { NULL };
	cr_expect_null(tessel_ops_instantiate(ctx, "relu", 1, keys2, values2));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message,
		"attribute 'shape' of op 'relu' has no value");
	cr_expect_null(tessel_ops_instantiate(ctx, NULL, 0, NULL, NULL));
	cr_expect_str_eq(tessel_ctx_error(ctx)->message, "unknown op '(null)'");
	tessel_ctx_free(ctx);
}
