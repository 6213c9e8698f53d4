/* Linear algebra: matmul, batch_matmul, dense.  Their sizes stay symbolic
 * in the text (M, N, K, ...) and are bound from the attributes. */
#include "ops/ops_impl.h"

/* Write ": OUT[dims] " for a stage of "out" unless it is "in". */
static void stage_type(textbuf *tb, tessel_dtype in, tessel_dtype out, const char *dims)
{
	if (out != in)
		textbuf_printf(tb, " : %s[%s]", tessel_dtype_name(out), dims);
}

/* Write the text of matmul: C[M, N] = A * B with optional transposes. */
static int gen_matmul(const ops_args *a, textbuf *tb)
{
	ops_sum_types st;
	bool trans_a = ops_bool(a, "transpose_a");
	bool trans_b = ops_bool(a, "transpose_b");
	if (ops_sum_dtypes(a, &st))
		return -1;
	const char *c = st.conv, *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "A: %s[%s], B: %s[%s]) -> C {\n", tessel_dtype_name(st.in),
		trans_a ? "K, M" : "M, K", tessel_dtype_name(st.weight),
		trans_b ? "N, K" : "K, N");
	textbuf_puts(tb, "  C[i, j]");
	stage_type(tb, st.in, st.out, "M, N");
	textbuf_printf(tb, " = sum(k) %sA[%s]%s * %sB[%s]%s\n}\n", c,
		trans_a ? "k, i" : "i, k", e, c, trans_b ? "j, k" : "k, j", e);
	return 0;
}

/* Write the text of batch_matmul: Z[b] = X[b] * Y[b] for each of B. */
static int gen_batch_matmul(const ops_args *a, textbuf *tb)
{
	ops_sum_types st;
	bool trans_a = ops_bool(a, "transpose_a");
	bool trans_b = ops_bool(a, "transpose_b");
	if (ops_sum_dtypes(a, &st))
		return -1;
	const char *c = st.conv, *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[B, %s], Y: %s[B, %s]) -> Z {\n",
		tessel_dtype_name(st.in), trans_a ? "K, M" : "M, K",
		tessel_dtype_name(st.weight), trans_b ? "N, K" : "K, N");
	textbuf_puts(tb, "  Z[b, i, j]");
	stage_type(tb, st.in, st.out, "B, M, N");
	textbuf_printf(tb, " = sum(k) %sX[b, %s]%s * %sY[b, %s]%s\n}\n", c,
		trans_a ? "k, i" : "i, k", e, c, trans_b ? "j, k" : "k, j", e);
	return 0;
}

/* Write the text of dense: Y = X * W^T (+ Bias), W stored [out, in]; the
 * bias and the output of out_dtype. */
static int gen_dense(const ops_args *a, textbuf *tb)
{
	ops_sum_types st;
	bool bias = ops_bool(a, "bias");
	if (ops_sum_dtypes(a, &st))
		return -1;
	const char *c = st.conv, *e = c[0] ? ")" : "";
	emit_op_start(tb, a);
	textbuf_printf(tb, "X: %s[batch, in_features], "
		"W: %s[out_features, in_features]", tessel_dtype_name(st.in),
		tessel_dtype_name(st.weight));
	if (bias)
		textbuf_printf(tb, ", Bias: %s[out_features]", tessel_dtype_name(st.out));
	textbuf_puts(tb, ") -> Y {\n");
	textbuf_printf(tb, "  %s[i, j]", bias ? "Z" : "Y");
	stage_type(tb, st.in, st.out, "batch, out_features");
	textbuf_printf(tb, " = sum(k) %sX[i, k]%s * %sW[j, k]%s\n", c, e, c, e);
	if (bias)
		textbuf_puts(tb, "  Y[i, j] = Z[i, j] + Bias[j]\n");
	textbuf_puts(tb, "}\n");
	return 0;
}

static const ops_attr matmul_attrs[] = {
	{ { "M", TESSEL_ATTR_INT, NULL, "rows of A and C" }, OPS_SIZE, NULL },
	{ { "N", TESSEL_ATTR_INT, NULL, "columns of B and C" }, OPS_SIZE, NULL },
	{ { "K", TESSEL_ATTR_INT, NULL, "the reduced dimension" }, OPS_SIZE, NULL },
	{ { "transpose_a", TESSEL_ATTR_BOOL, "0", "A is stored [K, M]" }, 0, NULL },
	{ { "transpose_b", TESSEL_ATTR_BOOL, "0", "B is stored [N, K]" }, 0, NULL },
	OPS_ATTR_DTYPE,
	OPS_ATTR_WEIGHT_DTYPE("B"),
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
	OPS_ATTR_WEIGHT_DTYPE("Y"),
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
	OPS_ATTR_WEIGHT_DTYPE("W"),
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
