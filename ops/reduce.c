/* Reductions over a set of axes of a tensor of any shape: sum, mean, max,
 * min, prod, with or without the reduced axes kept as extent 1. */
#include <inttypes.h>

#include "ops/ops_impl.h"

/* A reduction: the .te reduction it uses, and whether it divides by the
 * number of elements reduced (mean). */
typedef struct reduce_def {
	const char *reduce;
	bool mean;
} reduce_def;

/* Store in "*mask" the axes of "a" to reduce over a tensor of rank "n":
 * those of attribute "axes", or all of them when it is []. */
static int read_axes(const ops_args *a, int n, unsigned *mask)
{
	const ops_value *axes = ops_get(a, "axes");
	*mask = axes->n == 0 ? (1u << n) - 1 : 0;
	for (int k = 0; k < axes->n; k++) {
		int axis;
		if (ops_axis(a, "axes", axes->ints[k], n, &axis))
			return -1;
		if (*mask & (1u << axis))
			return ops_fail(a, TESSEL_ERR_VALUE,
				"attribute 'axes' names axis %d twice", axis);
		*mask |= 1u << axis;
	}
	return 0;
}

/* Write "  Y[...] : dt[...] = " for the output of a reduction of the axes
 * in "mask" of "shape": the kept axes only, or all with the reduced ones
 * of extent 1 when "keepdims". */
static void emit_output_head(textbuf *tb, const ops_value *shape,
	unsigned mask, bool keepdims, tessel_dtype dt)
{
	int n = shape->n;
	if (!keepdims) {
		textbuf_printf(tb, "  %s = ", ref_except("Y", n, mask).text);
		return;
	}
	int64_t dims[TESSEL_MAX_DIMS];
	for (int d = 0; d < n; d++)
		dims[d] = mask & (1u << d) ? 1 : shape->ints[d];
	textbuf_printf(tb, "  %s : ", ref_vars("Y", n).text);
	emit_type(tb, dt, dims, n);
	textbuf_puts(tb, " = ");
}

/* Write the text of the reduction described by "a->def->data". */
static int gen_reduce(const ops_args *a, textbuf *tb)
{
	const reduce_def *r = a->def->data;
	const ops_value *shape = ops_get(a, "shape");
	tessel_dtype dt = ops_dtype(a, "dtype");
	bool keepdims = ops_bool(a, "keepdims");
	int n = shape->n;
	unsigned mask;
	if (r->mean ? ops_require_float(a, dt) : ops_require_numeric(a, dt))
		return -1;
	if (read_axes(a, n, &mask))
		return -1;
	int64_t count = 1;
	for (int d = 0; d < n; d++)
		count *= mask & (1u << d) ? shape->ints[d] : 1;
	bool staged = keepdims || r->mean;
	emit_x_input(tb, a);
	textbuf_puts(tb, ") -> Y {\n");
	if (mask == 0) {
		textbuf_printf(tb, "  %s = %s\n}\n", ref_vars("Y", n).text,
			ref_vars("X", n).text);
		return 0;
	}
	if (staged)
		textbuf_printf(tb, "  %s = %s(", ref_except("Reduced", n, mask).text,
			r->reduce);
	else
		textbuf_printf(tb, "  %s = %s(", ref_except("Y", n, mask).text,
			r->reduce);
	emit_vars_except(tb, n, ~mask);
	textbuf_printf(tb, ") %s\n", ref_vars("X", n).text);
	if (!staged) {
		textbuf_puts(tb, "}\n");
		return 0;
	}
	emit_output_head(tb, shape, mask, keepdims, dt);
	textbuf_puts(tb, ref_except("Reduced", n, mask).text);
	if (r->mean)
		textbuf_printf(tb, " / %" PRId64, count);
	textbuf_puts(tb, "\n}\n");
	return 0;
}

static const reduce_def reduce_sum_def = { "sum", false };
static const reduce_def reduce_mean_def = { "sum", true };
static const reduce_def reduce_max_def = { "max", false };
static const reduce_def reduce_min_def = { "min", false };
static const reduce_def reduce_prod_def = { "prod", false };

static const ops_attr reduce_attrs[] = {
	OPS_ATTR_SHAPE("shape of X"),
	{ { "axes", TESSEL_ATTR_INTS, "[]",
	    "axes reduced (negative: from the end); [] = all" }, 0, NULL },
	{ { "keepdims", TESSEL_ATTR_BOOL, "0",
	    "keep reduced axes with extent 1 (NumPy's keepdims)" }, 0, NULL },
	OPS_ATTR_DTYPE,
};

#define REDUCE(name, doc) \
	OPS_DEF(#name, doc, reduce_attrs, gen_reduce, &name##_def)

const ops_def ops_reduce[] = {
	REDUCE(reduce_sum, "Y = sum of X over axes"),
	REDUCE(reduce_mean, "Y = mean of X over axes (float dtypes)"),
	REDUCE(reduce_max, "Y = maximum of X over axes"),
	REDUCE(reduce_min, "Y = minimum of X over axes"),
	REDUCE(reduce_prod, "Y = product of X over axes"),
};

const int ops_reduce_count = OPS_COUNT(ops_reduce);
