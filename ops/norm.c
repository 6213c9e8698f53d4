/* Normalizations: softmax and log_softmax over one axis, layer_norm over
 * the trailing axes, batch_norm (inference) over the channel axis 1.  All
 * are rank-polymorphic: the shape is written into the text. */
#include <inttypes.h>

#include "ops/ops_impl.h"

/* Write "  NAME[kept] = RED(reduced) " for a rank-"n" stage reducing the
 * axes in "mask"; the caller writes the body. */
static void emit_reduce_head(textbuf *tb, const char *name, int n,
	unsigned mask, const char *reduce)
{
	textbuf_printf(tb, "  %s = %s(", ref_except(name, n, mask).text, reduce);
	emit_vars_except(tb, n, ~mask);
	textbuf_puts(tb, ") ");
}

/* Store the attribute "shape" of "a" in "*shape" and its axis attribute
 * "attr", normalized, in "*axis"; check a float dtype and rank >= 1. */
static int read_shape_axis(const ops_args *a, const char *attr,
	const ops_value **shape, int *axis)
{
	*shape = ops_get(a, "shape");
	if (ops_require_float(a, ops_dtype(a, "dtype")))
		return -1;
	if ((*shape)->n == 0)
		return ops_fail(a, TESSEL_ERR_SHAPE,
			"needs a shape of rank 1 or more, not []");
	return ops_axis(a, attr, ops_int(a, attr), (*shape)->n, axis);
}

/* Write the text of softmax ("log" false) or log_softmax ("log" true).
 * Softmax multiplies by the reciprocal of the row's sum: one division a
 * row, hoisted out of the loops over the row, instead of one an element. */
static int gen_softmax_common(const ops_args *a, textbuf *tb, bool log)
{
	const ops_value *shape;
	int axis;
	if (read_shape_axis(a, "axis", &shape, &axis))
		return -1;
	int n = shape->n;
	unsigned mask = 1u << axis;
	ops_ref x = ref_vars("X", n);
	ops_ref max = ref_except("Max", n, mask);
	ops_ref total = ref_except("Total", n, mask);
	emit_x_input(tb, a);
	textbuf_puts(tb, ") -> Y {\n");
	emit_reduce_head(tb, "Max", n, mask, "max");
	textbuf_printf(tb, "%s\n", x.text);
	if (log) {
		emit_reduce_head(tb, "Total", n, mask, "sum");
		textbuf_printf(tb, "exp(%s - %s)\n", x.text, max.text);
		textbuf_printf(tb, "  %s = %s - %s - log(%s)\n}\n",
			ref_vars("Y", n).text, x.text, max.text, total.text);
		return 0;
	}
	ops_ref e = ref_vars("E", n);
	textbuf_printf(tb, "  %s = exp(%s - %s)\n", e.text, x.text, max.text);
	emit_reduce_head(tb, "Total", n, mask, "sum");
	textbuf_printf(tb, "%s\n", e.text);
	textbuf_printf(tb, "  %s = %s * (1.0 / %s)\n}\n", ref_vars("Y", n).text,
		e.text, total.text);
	return 0;
}

/* Write the text of softmax. */
static int gen_softmax(const ops_args *a, textbuf *tb)
{
	return gen_softmax_common(a, tb, false);
}

/* Write the text of log_softmax. */
static int gen_log_softmax(const ops_args *a, textbuf *tb)
{
	return gen_softmax_common(a, tb, true);
}

/* Return the eps attribute of "a" in "*eps", checking it is not negative. */
static int read_eps(const ops_args *a, double *eps)
{
	*eps = ops_float(a, "eps");
	if (*eps < 0)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'eps' must not be negative");
	return 0;
}

/* Write the text of layer_norm over axes [axis, rank). */
static int gen_layer_norm(const ops_args *a, textbuf *tb)
{
	const ops_value *shape;
	int axis;
	double eps;
	if (read_shape_axis(a, "axis", &shape, &axis) || read_eps(a, &eps))
		return -1;
	int n = shape->n;
	bool affine = ops_bool(a, "affine");
	unsigned mask = (1u << n) - (1u << axis);
	int64_t count = 1;
	for (int d = axis; d < n; d++)
		count *= shape->ints[d];
	tessel_dtype dt = ops_dtype(a, "dtype");
	ops_ref x = ref_vars("X", n), c = ref_vars("Centered", n);
	ops_ref mean = ref_except("Mean", n, mask);
	ops_ref sumsq = ref_except("SumSq", n, mask);
	ops_ref rstd = ref_except("Rstd", n, mask);
	emit_x_input(tb, a);
	if (affine) {
		textbuf_puts(tb, ", Gamma: ");
		emit_type(tb, dt, shape->ints + axis, n - axis);
		textbuf_puts(tb, ", Beta: ");
		emit_type(tb, dt, shape->ints + axis, n - axis);
	}
	textbuf_puts(tb, ") -> Y {\n");
	emit_reduce_head(tb, "Total", n, mask, "sum");
	textbuf_printf(tb, "%s\n  %s = %s / %" PRId64 "\n", x.text, mean.text,
		ref_except("Total", n, mask).text, count);
	textbuf_printf(tb, "  %s = %s - %s\n", c.text, x.text, mean.text);
	emit_reduce_head(tb, "SumSq", n, mask, "sum");
	textbuf_printf(tb, "%s * %s\n  %s = rsqrt(%s / %" PRId64 " + ", c.text,
		c.text, rstd.text, sumsq.text, count);
	emit_float(tb, eps);
	textbuf_printf(tb, ")\n  %s = %s * %s", ref_vars("Y", n).text, c.text,
		rstd.text);
	if (affine)
		textbuf_printf(tb, " * %s + %s", ref_except("Gamma", n, ~mask).text,
			ref_except("Beta", n, ~mask).text);
	textbuf_puts(tb, "\n}\n");
	return 0;
}

/* Write the text of batch_norm (inference) over channel axis 1. */
static int gen_batch_norm(const ops_args *a, textbuf *tb)
{
	const ops_value *shape = ops_get(a, "shape");
	tessel_dtype dt = ops_dtype(a, "dtype");
	double eps;
	if (ops_require_float(a, dt) || read_eps(a, &eps))
		return -1;
	if (shape->n < 2)
		return ops_fail(a, TESSEL_ERR_SHAPE,
			"needs a shape [N, C, ...] of rank 2 or more");
	int n = shape->n;
	static const char *const params[] = { "Mean", "Var", "Gamma", "Beta" };
	emit_x_input(tb, a);
	for (int k = 0; k < 4; k++) {
		textbuf_printf(tb, ", %s: ", params[k]);
		emit_type(tb, dt, shape->ints + 1, 1);
	}
	textbuf_puts(tb, ") -> Y {\n  Scale[j] = Gamma[j] * rsqrt(Var[j] + ");
	emit_float(tb, eps);
	textbuf_printf(tb, ")\n  %s = (%s - Mean[j]) * Scale[j] + Beta[j]\n}\n",
		ref_vars("Y", n).text, ref_vars("X", n).text);
	return 0;
}

#define NORM_EPS_ATTR \
	{ { "eps", TESSEL_ATTR_FLOAT, "1e-5", "added to the variance" }, 0, NULL }

static const ops_attr softmax_attrs[] = {
	OPS_ATTR_SHAPE("shape of X and Y"),
	{ { "axis", TESSEL_ATTR_INT, "-1",
	    "the axis normalized (negative: from the end)" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr layer_norm_attrs[] = {
	OPS_ATTR_SHAPE("shape of X and Y"),
	{ { "axis", TESSEL_ATTR_INT, "-1",
	    "first normalized axis; normalizes over axis..rank-1 (as ONNX)" },
	  0, NULL },
	NORM_EPS_ATTR,
	{ { "affine", TESSEL_ATTR_BOOL, "1",
	    "scale by Gamma and shift by Beta (shape[axis:])" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr batch_norm_attrs[] = {
	OPS_ATTR_SHAPE("shape of X and Y: [N, C, ...]"),
	NORM_EPS_ATTR,
	OPS_ATTR_DTYPE,
};

const ops_def ops_norm[] = {
	OPS_DEF("softmax",
		"Y = exp(X - max) / sum(exp(X - max)) along axis",
		softmax_attrs, gen_softmax, NULL),
	OPS_DEF("log_softmax",
		"Y = X - max - log(sum(exp(X - max))) along axis",
		softmax_attrs, gen_log_softmax, NULL),
	OPS_DEF("layer_norm",
		"Y = (X - mean) / sqrt(var + eps) * Gamma + Beta, mean and biased "
		"variance over axes axis..rank-1",
		layer_norm_attrs, gen_layer_norm, NULL),
	OPS_DEF("batch_norm",
		"inference batch norm over channel axis 1: Y = (X - Mean[c]) / "
		"sqrt(Var[c] + eps) * Gamma[c] + Beta[c]; inputs X, Mean, Var, "
		"Gamma, Beta",
		batch_norm_attrs, gen_batch_norm, NULL),
};

const int ops_norm_count = OPS_COUNT(ops_norm);
