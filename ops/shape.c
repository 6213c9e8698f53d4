/* Data movement: transpose, reshape, pad, concat, for tensors of any
 * shape and dtype.  The shapes are written into the text; outputs whose
 * indices are computed get an explicit shape. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops_impl.h"

/* Write "  Y[i, j] : dt[dims] = " for an output of shape "dims". */
static void emit_y_head(textbuf *tb, tessel_dtype dt, const int64_t *dims,
	int n)
{
	textbuf_printf(tb, "  %s : ", ref_vars("Y", n).text);
	emit_type(tb, dt, dims, n);
	textbuf_puts(tb, " = ");
}

/* Store in "perm" the permutation of attribute "perm" for rank "n" (the
 * reversed axes when it is []), checking it is one. */
static int read_perm(const ops_args *a, int n, int *perm)
{
	const ops_value *p = ops_get(a, "perm");
	unsigned seen = 0;
	if (p->n != 0 && p->n != n)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'perm' has %d axes for a shape of rank %d", p->n, n);
	for (int d = 0; d < n; d++) {
		if (p->n == 0)
			perm[d] = n - 1 - d;
		else if (ops_axis(a, "perm", p->ints[d], n, &perm[d]))
			return -1;
		if (seen & (1u << perm[d]))
			return ops_fail(a, TESSEL_ERR_VALUE,
				"attribute 'perm' names axis %d twice", perm[d]);
		seen |= 1u << perm[d];
	}
	return 0;
}

/* Write the text of transpose: Y's axis d is X's axis perm[d]. */
static int gen_transpose(const ops_args *a, textbuf *tb)
{
	int n = ops_get(a, "shape")->n;
	int perm[TESSEL_MAX_DIMS];
	if (read_perm(a, n, perm))
		return -1;
	emit_x_input(tb, a);
	textbuf_puts(tb, ") -> Y {\n  Y[");
	for (int d = 0; d < n; d++)
		textbuf_printf(tb, "%s%s", d ? ", " : "", emit_var(perm[d]));
	textbuf_printf(tb, "] = %s\n}\n", ref_vars("X", n).text);
	return 0;
}

/* Return the number of elements of a tensor of extents "dims" of rank "n",
 * INT64_MAX when that overflows. */
static int64_t numel(const int64_t *dims, int n)
{
	int64_t count = 1;
	for (int d = 0; d < n; d++)
		if (__builtin_mul_overflow(count, dims[d], &count))
			return INT64_MAX;
	return count;
}

/* Store in "out" the attribute "newshape" with its -1 (if any) resolved so
 * that it holds as many elements as "shape". */
static int resolve_newshape(const ops_args *a, const ops_value *shape,
	ops_value *out)
{
	const ops_value *ns = ops_get(a, "newshape");
	int wild = -1;
	*out = *ns;
	if (ns->n > TESSEL_MAX_DIMS)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'newshape' has %d dimensions; at most %d are "
			"supported", ns->n, TESSEL_MAX_DIMS);
	for (int d = 0; d < ns->n; d++) {
		if (ns->ints[d] == -1 && wild < 0)
			wild = d;
		else if (ns->ints[d] < 1)
			return ops_fail(a, TESSEL_ERR_VALUE,
				"attribute 'newshape': extents must be positive, with "
				"at most one -1");
	}
	int64_t total = numel(shape->ints, shape->n);
	if (wild >= 0) {
		out->ints[wild] = 1;
		int64_t known = numel(out->ints, out->n);
		out->ints[wild] = total % known == 0 ? total / known : -1;
	}
	if (numel(out->ints, out->n) == total)
		return 0;
	textbuf from, to;
	textbuf_init(&from);
	textbuf_init(&to);
	emit_list(&from, shape->ints, shape->n);
	emit_list(&to, ns->ints, ns->n);
	ops_fail(a, TESSEL_ERR_SHAPE,
		"cannot reshape %s (%" PRId64 " elements) into %s",
		textbuf_str(&from) ? textbuf_str(&from) : "?", total,
		textbuf_str(&to) ? textbuf_str(&to) : "?");
	textbuf_free(&from);
	textbuf_free(&to);
	return -1;
}

/* Write into "flat" the C-order position of Y's element at its variables,
 * "i*6 + j" for a [4, 6] output, in parentheses when it is a sum. */
static void emit_flat_position(textbuf *flat, const ops_value *out)
{
	int64_t stride = numel(out->ints, out->n);
	int terms = 0;
	for (int d = 0; d < out->n; d++)
		terms += out->ints[d] > 1;
	textbuf_puts(flat, terms == 0 ? "0" : terms > 1 ? "(" : "");
	for (int d = 0, k = 0; d < out->n; d++) {
		stride /= out->ints[d];
		if (out->ints[d] == 1)
			continue;
		textbuf_puts(flat, k++ ? " + " : "");
		emit_scaled(flat, emit_var(d), stride);
	}
	textbuf_puts(flat, terms > 1 ? ")" : "");
}

/* Write X's index along each axis for the position "flat" in C order. */
static void emit_unflatten(textbuf *tb, const ops_value *shape,
	const char *flat)
{
	int64_t stride = numel(shape->ints, shape->n);
	bool outer = true;
	for (int d = 0; d < shape->n; d++) {
		stride /= shape->ints[d];
		textbuf_puts(tb, d ? ", " : "");
		if (shape->ints[d] == 1) {
			textbuf_puts(tb, "0");
			continue;
		}
		textbuf_puts(tb, flat);
		if (stride > 1)
			textbuf_printf(tb, " / %" PRId64, stride);
		if (!outer)
			textbuf_printf(tb, " %% %" PRId64, shape->ints[d]);
		outer = false;
	}
}

/* Write the text of reshape: Y holds X's elements in C order. */
static int gen_reshape(const ops_args *a, textbuf *tb)
{
	const ops_value *shape = ops_get(a, "shape");
	ops_value out;
	if (resolve_newshape(a, shape, &out))
		return -1;
	textbuf flat;
	textbuf_init(&flat);
	emit_flat_position(&flat, &out);
	emit_x_input(tb, a);
	textbuf_puts(tb, ") -> Y {\n");
	emit_y_head(tb, ops_dtype(a, "dtype"), out.ints, out.n);
	textbuf_puts(tb, "X[");
	emit_unflatten(tb, shape, textbuf_str(&flat));
	textbuf_puts(tb, "]\n}\n");
	textbuf_free(&flat);
	return 0;
}

/* Check the attribute "value" of pad can be stored in "dt". */
static int check_pad_value(const ops_args *a, tessel_dtype dt, double v)
{
	if (dt == TESSEL_BOOL && v != 0.0 && v != 1.0)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'value' must be 0 or 1 for bool");
	if (tessel_dtype_is_int(dt) &&
	    (v != (double)(int64_t)v || tessel_wrap_int(dt, (int64_t)v) != (int64_t)v))
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'value' must be an integer that fits %s",
			tessel_dtype_name(dt));
	return 0;
}

/* Write the condition that Y's element at its variables lies inside X
 * (before[d] elements before, "shape" long on axis d); return whether any
 * axis needed one. */
static bool emit_inside_x(textbuf *tb, const ops_value *shape,
	const int64_t *before, const int64_t *out)
{
	bool any = false;
	for (int d = 0; d < shape->n; d++) {
		const char *v = emit_var(d);
		if (before[d] > 0) {
			textbuf_printf(tb, "%s%s >= %" PRId64, any ? " && " : "", v,
				before[d]);
			any = true;
		}
		if (out[d] > before[d] + shape->ints[d]) {
			textbuf_printf(tb, "%s%s < %" PRId64, any ? " && " : "", v,
				before[d] + shape->ints[d]);
			any = true;
		}
	}
	return any;
}

/* Write the text of pad: constant padding, pads[d] before and
 * pads[rank + d] after axis d (negative values crop). */
static int gen_pad(const ops_args *a, textbuf *tb)
{
	const ops_value *shape = ops_get(a, "shape"), *pads = ops_get(a, "pads");
	tessel_dtype dt = ops_dtype(a, "dtype");
	double value = ops_float(a, "value");
	int n = shape->n;
	int64_t out[TESSEL_MAX_DIMS];
	if (pads->n != 2 * n)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'pads' needs %d values (before each axis, then "
			"after each), not %d", 2 * n, pads->n);
	for (int d = 0; d < n; d++) {
		out[d] = pads->ints[d] + shape->ints[d] + pads->ints[n + d];
		if (out[d] < 1)
			return ops_fail(a, TESSEL_ERR_SHAPE,
				"padding axis %d to %" PRId64 " elements", d, out[d]);
	}
	if (check_pad_value(a, dt, value))
		return -1;
	textbuf cond, x;
	textbuf_init(&cond);
	textbuf_init(&x);
	bool any = emit_inside_x(&cond, shape, pads->ints, out);
	textbuf_puts(&x, "X[");
	for (int d = 0; d < n; d++) {
		textbuf_printf(&x, "%s%s", d ? ", " : "", emit_var(d));
		emit_offset(&x, -pads->ints[d]);
	}
	textbuf_puts(&x, "]");
	emit_x_input(tb, a);
	textbuf_puts(tb, ") -> Y {\n");
	emit_y_head(tb, dt, out, n);
	if (any) {
		textbuf_printf(tb, "select(%s, %s, ", textbuf_str(&cond),
			textbuf_str(&x));
		emit_scalar(tb, dt, value);
		textbuf_puts(tb, ")\n}\n");
	} else {
		textbuf_printf(tb, "%s\n}\n", textbuf_str(&x));
	}
	textbuf_free(&cond);
	textbuf_free(&x);
	return 0;
}

/* Check the concat attributes: "sizes" sum to shape[axis]. */
static int check_concat(const ops_args *a, const ops_value *shape,
	const ops_value *sizes, int axis)
{
	int64_t total = 0;
	if (sizes->n == 0)
		return ops_fail(a, TESSEL_ERR_VALUE,
			"attribute 'sizes' needs at least one input");
	for (int k = 0; k < sizes->n; k++)
		total += sizes->ints[k];
	if (total != shape->ints[axis])
		return ops_fail(a, TESSEL_ERR_SHAPE,
			"attribute 'sizes' sums to %" PRId64 " but shape[%d] is %"
			PRId64, total, axis, shape->ints[axis]);
	return 0;
}

/* Write "Xk[...]", input "k" at Y's variables, shifted by "start" on
 * "axis". */
static void emit_concat_input(textbuf *tb, int k, int n, int axis,
	int64_t start)
{
	textbuf_printf(tb, "X%d[", k);
	for (int d = 0; d < n; d++) {
		textbuf_printf(tb, "%s%s", d ? ", " : "", emit_var(d));
		if (d == axis)
			emit_offset(tb, -start);
	}
	textbuf_puts(tb, "]");
}

/* Write the text of concat: inputs X0, X1, ... joined along axis. */
static int gen_concat(const ops_args *a, textbuf *tb)
{
	const ops_value *shape = ops_get(a, "shape"), *sizes = ops_get(a, "sizes");
	tessel_dtype dt = ops_dtype(a, "dtype");
	int n = shape->n, axis;
	if (n == 0)
		return ops_fail(a, TESSEL_ERR_SHAPE, "cannot concatenate scalars");
	if (ops_axis(a, "axis", ops_int(a, "axis"), n, &axis) ||
	    check_concat(a, shape, sizes, axis))
		return -1;
	int64_t dims[TESSEL_MAX_DIMS];
	memcpy(dims, shape->ints, sizeof(int64_t) * (size_t)n);
	emit_op_start(tb, a);
	for (int k = 0; k < sizes->n; k++) {
		dims[axis] = sizes->ints[k];
		textbuf_printf(tb, "%sX%d: ", k ? ", " : "", k);
		emit_type(tb, dt, dims, n);
	}
	textbuf_puts(tb, ") -> Y {\n");
	emit_y_head(tb, dt, shape->ints, n);
	int64_t start = 0;
	for (int k = 0; k + 1 < sizes->n; k++) {
		textbuf_printf(tb, "\n      select(%s < %" PRId64 ", ",
			emit_var(axis), start + sizes->ints[k]);
		emit_concat_input(tb, k, n, axis, start);
		textbuf_puts(tb, ",");
		start += sizes->ints[k];
	}
	textbuf_puts(tb, sizes->n > 1 ? "\n      " : "");
	emit_concat_input(tb, sizes->n - 1, n, axis, start);
	for (int k = 0; k + 1 < sizes->n; k++)
		textbuf_puts(tb, ")");
	textbuf_puts(tb, "\n}\n");
	return 0;
}

static const ops_attr transpose_attrs[] = {
	OPS_ATTR_SHAPE("shape of X"),
	{ { "perm", TESSEL_ATTR_INTS, "[]",
	    "Y's axis d is X's axis perm[d]; [] reverses the axes" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr reshape_attrs[] = {
	OPS_ATTR_SHAPE("shape of X"),
	{ { "newshape", TESSEL_ATTR_INTS, NULL,
	    "shape of Y; one extent may be -1 (inferred)" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr pad_attrs[] = {
	OPS_ATTR_SHAPE("shape of X"),
	{ { "pads", TESSEL_ATTR_INTS, NULL,
	    "[before_0, ..., before_n-1, after_0, ..., after_n-1] (as ONNX); "
	    "negative crops" }, 0, NULL },
	{ { "value", TESSEL_ATTR_FLOAT, "0", "the padding value" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

static const ops_attr concat_attrs[] = {
	OPS_ATTR_SHAPE("shape of Y"),
	{ { "sizes", TESSEL_ATTR_INTS, NULL,
	    "extent of each input X0, X1, ... along axis; sums to shape[axis]" },
	  OPS_POSITIVE, NULL },
	{ { "axis", TESSEL_ATTR_INT, "0", "the axis joined (negative: from the end)" },
	  0, NULL },
	OPS_ATTR_DTYPE,
};

const ops_def ops_shape[] = {
	OPS_DEF("transpose", "Y = X with its axes permuted by perm",
		transpose_attrs, gen_transpose, NULL),
	OPS_DEF("reshape", "Y = X's elements in C order in the shape newshape",
		reshape_attrs, gen_reshape, NULL),
	OPS_DEF("pad", "Y = X with constant padding before and after each axis",
		pad_attrs, gen_pad, NULL),
	OPS_DEF("concat",
		"Y = X0, X1, ... joined along axis; X_k is shape with shape[axis] = "
		"sizes[k]",
		concat_attrs, gen_concat, NULL),
};

const int ops_shape_count = OPS_COUNT(ops_shape);
