/* Elementwise ops of any shape: unary functions of X, and binary ops of A
 * and B with NumPy broadcasting.  The shapes are written into the text. */
#include <inttypes.h>
#include <stdio.h>

#include "ops/ops_impl.h"

/* A unary op: its body with "$a" for the element of X, for float dtypes
 * and (when not NULL) for integer dtypes. */
typedef struct unary_def {
	const char *float_body;
	const char *int_body;
} unary_def;

/* A binary op: its body over "$a" and "$b", and the dtypes it takes. */
typedef struct binary_def {
	const char *body;
	bool float_only;
} binary_def;

/* Write the text of the unary op described by "a->def->data". */
static int gen_unary(const ops_args *a, textbuf *tb)
{
	const unary_def *u = a->def->data;
	const ops_value *shape = ops_get(a, "shape");
	tessel_dtype dt = ops_dtype(a, "dtype");
	if (u->int_body ? ops_require_numeric(a, dt) : ops_require_float(a, dt))
		return -1;
	const char *body = tessel_dtype_is_float(dt) ? u->float_body : u->int_body;
	emit_x_input(tb, a);
	textbuf_printf(tb, ") -> Y {\n  %s = ", ref_vars("Y", shape->n).text);
	emit_template(tb, body, ref_vars("X", shape->n).text, NULL);
	textbuf_puts(tb, "\n}\n");
	return 0;
}

/* Compute in "out" the NumPy broadcast of the shapes "x" and "y"; an error
 * naming both when they are incompatible. */
static int broadcast_shapes(const ops_args *a, const ops_value *x,
	const ops_value *y, ops_value *out)
{
	out->n = x->n > y->n ? x->n : y->n;
	for (int d = 0; d < out->n; d++) {
		int dx = d - (out->n - x->n), dy = d - (out->n - y->n);
		int64_t ex = dx >= 0 ? x->ints[dx] : 1;
		int64_t ey = dy >= 0 ? y->ints[dy] : 1;
		if (ex != ey && ex != 1 && ey != 1) {
			textbuf sx, sy;
			textbuf_init(&sx);
			textbuf_init(&sy);
			emit_list(&sx, x->ints, x->n);
			emit_list(&sy, y->ints, y->n);
			ops_fail(a, TESSEL_ERR_SHAPE,
				"shapes %s (a) and %s (b) do not broadcast: "
				"dimension %d from the end is %" PRId64 " vs %" PRId64,
				textbuf_str(&sx) ? textbuf_str(&sx) : "?",
				textbuf_str(&sy) ? textbuf_str(&sy) : "?",
				out->n - d, ex, ey);
			textbuf_free(&sx);
			textbuf_free(&sy);
			return -1;
		}
		out->ints[d] = ex > ey ? ex : ey;
	}
	return 0;
}

/* Return the access of input "name" of shape "in" broadcast to the output
 * shape "out": the output's variables, 0 where "in" has extent 1 and the
 * output does not. */
static ops_ref ref_broadcast(const char *name, const ops_value *in,
	const ops_value *out)
{
	ops_ref r;
	int offset = out->n - in->n;
	size_t len = (size_t)snprintf(r.text, sizeof(r.text), "%s[", name);
	for (int d = 0; d < in->n && len < sizeof(r.text); d++) {
		bool stretched = in->ints[d] == 1 && out->ints[d + offset] != 1;
		len += (size_t)snprintf(r.text + len, sizeof(r.text) - len, "%s%s",
			d ? ", " : "", stretched ? "0" : emit_var(d + offset));
	}
	if (len < sizeof(r.text))
		snprintf(r.text + len, sizeof(r.text) - len, "]");
	return r;
}

/* Write the text of the binary op described by "a->def->data". */
static int gen_binary(const ops_args *a, textbuf *tb)
{
	const binary_def *b = a->def->data;
	const ops_value *sa = ops_get(a, "a"), *sb = ops_get(a, "b");
	tessel_dtype dt = ops_dtype(a, "dtype");
	ops_value out;
	if (b->float_only ? ops_require_float(a, dt) : ops_require_numeric(a, dt))
		return -1;
	if (broadcast_shapes(a, sa, sb, &out))
		return -1;
	emit_op_start(tb, a);
	textbuf_puts(tb, "A: ");
	emit_type(tb, dt, sa->ints, sa->n);
	textbuf_puts(tb, ", B: ");
	emit_type(tb, dt, sb->ints, sb->n);
	textbuf_printf(tb, ") -> C {\n  %s = ", ref_vars("C", out.n).text);
	emit_template(tb, b->body, ref_broadcast("A", sa, &out).text,
		ref_broadcast("B", sb, &out).text);
	textbuf_puts(tb, "\n}\n");
	return 0;
}

static const unary_def relu_def = { "max($a, 0.0)", "max($a, 0)" };
static const unary_def neg_def = { "-$a", "-$a" };
static const unary_def abs_def = { "abs($a)", "abs($a)" };
static const unary_def exp_def = { "exp($a)", NULL };
static const unary_def log_def = { "log($a)", NULL };
static const unary_def sqrt_def = { "sqrt($a)", NULL };
static const unary_def rsqrt_def = { "rsqrt($a)", NULL };
static const unary_def tanh_def = { "tanh($a)", NULL };
static const unary_def erf_def = { "erf($a)", NULL };
static const unary_def sigmoid_def = { "sigmoid($a)", NULL };
static const unary_def floor_def = { "floor($a)", NULL };
static const unary_def gelu_def = {
	"0.5 * $a * (1.0 + erf($a * 0.7071067811865476))", NULL
};

static const binary_def add_def = { "$a + $b", false };
static const binary_def sub_def = { "$a - $b", false };
static const binary_def mul_def = { "$a * $b", false };
static const binary_def div_def = { "$a / $b", false };
static const binary_def maximum_def = { "max($a, $b)", false };
static const binary_def minimum_def = { "min($a, $b)", false };
static const binary_def pow_def = { "pow($a, $b)", true };
static const binary_def equal_def = { "$a == $b", false };
static const binary_def not_equal_def = { "$a != $b", false };
static const binary_def less_def = { "$a < $b", false };
static const binary_def less_equal_def = { "$a <= $b", false };
static const binary_def greater_def = { "$a > $b", false };
static const binary_def greater_equal_def = { "$a >= $b", false };

static const ops_attr unary_attrs[] = {
	OPS_ATTR_SHAPE("shape of X and Y ([] for a scalar)"),
	OPS_ATTR_DTYPE,
};

static const ops_attr binary_attrs[] = {
	{ { "a", TESSEL_ATTR_INTS, NULL, "shape of A" }, OPS_SHAPE, NULL },
	{ { "b", TESSEL_ATTR_INTS, NULL, "shape of B" }, OPS_SHAPE, NULL },
	{ { "dtype", TESSEL_ATTR_DTYPE, "f32", "element type of A and B" }, 0, NULL },
};

#define UNARY(name, doc) \
	OPS_DEF(#name, doc, unary_attrs, gen_unary, &name##_def)
#define BINARY(name, doc) \
	OPS_DEF(#name, doc, binary_attrs, gen_binary, &name##_def)

const ops_def ops_elementwise[] = {
	UNARY(relu, "Y = max(X, 0)"),
	UNARY(neg, "Y = -X"),
	UNARY(exp, "Y = exp(X)"),
	UNARY(log, "Y = log(X)"),
	UNARY(sqrt, "Y = sqrt(X)"),
	UNARY(rsqrt, "Y = 1 / sqrt(X)"),
	UNARY(tanh, "Y = tanh(X)"),
	UNARY(erf, "Y = erf(X)"),
	UNARY(sigmoid, "Y = 1 / (1 + exp(-X))"),
	UNARY(abs, "Y = |X|"),
	UNARY(floor, "Y = floor(X)"),
	UNARY(gelu, "Y = X * (1 + erf(X / sqrt(2))) / 2 (exact GELU)"),
	BINARY(add, "C = A + B with NumPy broadcasting"),
	BINARY(sub, "C = A - B with NumPy broadcasting"),
	BINARY(mul, "C = A * B with NumPy broadcasting"),
	BINARY(div, "C = A / B with NumPy broadcasting (floor division on integers)"),
	BINARY(maximum, "C = max(A, B) with NumPy broadcasting"),
	BINARY(minimum, "C = min(A, B) with NumPy broadcasting"),
	BINARY(pow, "C = A ** B with NumPy broadcasting (float dtypes)"),
	BINARY(equal, "C = (A == B), bool, with NumPy broadcasting"),
	BINARY(not_equal, "C = (A != B), bool, with NumPy broadcasting"),
	BINARY(less, "C = (A < B), bool, with NumPy broadcasting"),
	BINARY(less_equal, "C = (A <= B), bool, with NumPy broadcasting"),
	BINARY(greater, "C = (A > B), bool, with NumPy broadcasting"),
	BINARY(greater_equal, "C = (A >= B), bool, with NumPy broadcasting"),
};

const int ops_elementwise_count = OPS_COUNT(ops_elementwise);
