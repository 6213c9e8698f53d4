/* Linear algebra: matmul, batch_matmul, dense.  Their sizes stay symbolic
 * in the text (M, N, K, ...) and are bound from the attributes. */
#include <stdio.h>
#include <string.h>

#include "ops/ops_impl.h"

/* Return whether products of "from" values sum in "to" without loss: the
 * same dtype, or a wider one of the same kind (i8 to i32 or i64, i32 to
 * i64, f16 or bf16 to f32 or f64, f32 to f64). */
static bool widens(tessel_dtype from, tessel_dtype to)
{
	int rank[TESSEL_DTYPE_COUNT] = { 0 };
	rank[TESSEL_I8] = 1, rank[TESSEL_I32] = 2, rank[TESSEL_I64] = 3;
	rank[TESSEL_F16] = rank[TESSEL_BF16] = 11, rank[TESSEL_F32] = 12;
	rank[TESSEL_F64] = 13;
	return from == to || (rank[from] && rank[to] > rank[from] &&
		(rank[from] > 10) == (rank[to] > 10));
}

/* Read the element dtype of "a" into "*in" and that of its output and
 * sum ("out_dtype"; "same": the element dtype) into "*out", and the
 * conversion of each element in the sum ("f32(" or "") into "conv". */
static int sum_dtypes(const ops_args *a, tessel_dtype *in, tessel_dtype *out,
	char conv[16])
{
	*in = ops_dtype(a, "dtype");
	const char *o = ops_str(a, "out_dtype");
	if (ops_require_numeric(a, *in))
		return -1;
	*out = strcmp(o, "same") == 0 ? *in : (tessel_dtype)tessel_dtype_parse(o, strlen(o));
	if (!widens(*in, *out))
		return ops_fail(a, TESSEL_ERR_TYPE, "out_dtype %s: products of %s sum in %s "
			"or a wider dtype of the same kind (i8: i32, i64; f16, bf16: f32, "
			"f64; f32: f64; i32: i64)", o, tessel_dtype_name(*in),
			tessel_dtype_name(*in));
	snprintf(conv, 16, "%s%s", *out == *in ? "" : tessel_dtype_name(*out),
		*out == *in ? "" : "(");
	return 0;
}

/* Write ": OUT[dims] " for a stage of "out" unless it is "in". */
static void stage_type(textbuf *tb, tessel_dtype in, tessel_dtype out, const char *dims)
{
	if (out != in)
		textbuf_printf(tb, " : %s[%s]", tessel_dtype_name(out), dims);
}

/* Write the text of matmul: C[M, N] = A * B with optional transposes. */
static int gen_matmul(const ops_args *a, textbuf *tb)
{
	tessel_dtype dt, out;
	char c[16];
	bool trans_a = ops_bool(a, "transpose_a");
	bool trans_b = ops_bool(a, "transpose_b");
	if (sum_dtypes(a, &dt, &out, c))
		return -1;
	const char *t = tessel_dtype_name(dt), *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "A: %s[%s], B: %s[%s]) -> C {\n", t,
		trans_a ? "K, M" : "M, K", t, trans_b ? "N, K" : "K, N");
	textbuf_puts(tb, "  C[i, j]");
	stage_type(tb, dt, out, "M, N");
	textbuf_printf(tb, " = sum(k) %sA[%s]%s * %sB[%s]%s\n}\n", c,
		trans_a ? "k, i" : "i, k", e, c, trans_b ? "j, k" : "k, j", e);
	return 0;
}

/* Write the text of batch_matmul: Z[b] = X[b] * Y[b] for each of B. */
static int gen_batch_matmul(const ops_args *a, textbuf *tb)
{
	tessel_dtype dt, out;
	char c[16];
	bool trans_a = ops_bool(a, "transpose_a");
	bool trans_b = ops_bool(a, "transpose_b");
	if (sum_dtypes(a, &dt, &out, c))
		return -1;
	const char *t = tessel_dtype_name(dt), *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[B, %s], Y: %s[B, %s]) -> Z {\n", t,
		trans_a ? "K, M" : "M, K", t, trans_b ? "N, K" : "K, N");
	textbuf_puts(tb, "  Z[b, i, j]");
	stage_type(tb, dt, out, "B, M, N");
	textbuf_printf(tb, " = sum(k) %sX[b, %s]%s * %sY[b, %s]%s\n}\n", c,
		trans_a ? "k, i" : "i, k", e, c, trans_b ? "j, k" : "k, j", e);
	return 0;
}

/* Write the text of dense: Y = X * W^T (+ Bias), W stored [out, in]; the
 * bias and the output of out_dtype. */
static int gen_dense(const ops_args *a, textbuf *tb)
{
	tessel_dtype dt, out;
	char c[16];
	bool bias = ops_bool(a, "bias");
	if (sum_dtypes(a, &dt, &out, c))
		return -1;
	const char *t = tessel_dtype_name(dt), *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[batch, in_features], "
		"W: %s[out_features, in_features]", t, t);
	if (bias)
		textbuf_printf(tb, ", Bias: %s[out_features]", tessel_dtype_name(out));
	textbuf_puts(tb, ") -> Y {\n");
	textbuf_printf(tb, "  %s[i, j]", bias ? "Z" : "Y");
	stage_type(tb, dt, out, "batch, out_features");
	textbuf_printf(tb, " = sum(k) %sX[i, k]%s * %sW[j, k]%s\n", c, e, c, e);
	if (bias)
		textbuf_puts(tb, "  Y[i, j] = Z[i, j] + Bias[j]\n");
	textbuf_puts(tb, "}\n");
	return 0;
}

/* The dtype of a matmul's output and sum. */
#define OPS_ATTR_OUT_DTYPE \
	{ { "out_dtype", TESSEL_ATTR_STR, "same", "dtype of the output and of the " \
	    "sum: same (dtype), or wider: i32 for i8 inputs (a quantized " \
	    "matmul), f32 for f16 or bf16" }, 0, "same|f64|f32|f16|bf16|i64|i32|i8" }

static const ops_attr matmul_attrs[] = {
	{ { "M", TESSEL_ATTR_INT, NULL, "rows of A and C" }, OPS_SIZE, NULL },
	{ { "N", TESSEL_ATTR_INT, NULL, "columns of B and C" }, OPS_SIZE, NULL },
	{ { "K", TESSEL_ATTR_INT, NULL, "the reduced dimension" }, OPS_SIZE, NULL },
	{ { "transpose_a", TESSEL_ATTR_BOOL, "0", "A is stored [K, M]" }, 0, NULL },
	{ { "transpose_b", TESSEL_ATTR_BOOL, "0", "B is stored [N, K]" }, 0, NULL },
	OPS_ATTR_DTYPE,
	OPS_ATTR_OUT_DTYPE,
};

static const ops_attr batch_matmul_attrs[] = {
	{ { "B", TESSEL_ATTR_INT, NULL, "batch size" }, OPS_SIZE, NULL },
	{ { "M", TESSEL_ATTR_INT, NULL, "rows of X and Z" }, OPS_SIZE, NULL },
	{ { "N", TESSEL_ATTR_INT, NULL, "columns of Y and Z" }, OPS_SIZE, NULL },
	{ { "K", TESSEL_ATTR_INT, NULL, "the reduced dimension" }, OPS_SIZE, NULL },
	{ { "transpose_a", TESSEL_ATTR_BOOL, "0", "X is stored [B, K, M]" }, 0, NULL },
	{ { "transpose_b", TESSEL_ATTR_BOOL, "0", "Y is stored [B, N, K]" }, 0, NULL },
	OPS_ATTR_DTYPE,
	OPS_ATTR_OUT_DTYPE,
};

static const ops_attr dense_attrs[] = {
	{ { "batch", TESSEL_ATTR_INT, NULL, "rows of X and Y" }, OPS_SIZE, NULL },
	{ { "in_features", TESSEL_ATTR_INT, NULL, "columns of X and W" },
	  OPS_SIZE, NULL },
	{ { "out_features", TESSEL_ATTR_INT, NULL, "rows of W, columns of Y" },
	  OPS_SIZE, NULL },
	{ { "bias", TESSEL_ATTR_BOOL, "1", "add the input Bias[out_features]" },
	  0, NULL },
	OPS_ATTR_DTYPE,
	OPS_ATTR_OUT_DTYPE,
};

const ops_def ops_linalg[] = {
	OPS_DEF("matmul",
		"C[M, N] = A[M, K] * B[K, N]; transpose_a/transpose_b read A as "
		"[K, M] / B as [N, K]",
		matmul_attrs, gen_matmul, NULL),
	OPS_DEF("batch_matmul",
		"Z[B, M, N] = X[B, M, K] * Y[B, K, N], one matmul per batch "
		"entry; transposes as matmul",
		batch_matmul_attrs, gen_batch_matmul, NULL),
	OPS_DEF("dense",
		"Y[batch, out_features] = X[batch, in_features] * W^T + Bias; W "
		"is [out_features, in_features] like torch.nn.Linear",
		dense_attrs, gen_dense, NULL),
};

const int ops_linalg_count = OPS_COUNT(ops_linalg);
