/* The reference interpreter: evaluates a bound op in float64 (integers
 * exactly, wrapped to their dtypes), stage after stage, into one buffer per
 * stage.  It is the oracle every generated kernel is compared against, so
 * it favours plain, checkable semantics over speed: a recursive evaluator
 * over the expression tree and an odometer over each index space.
 *
 * Semantics (tessel/te.h, tessel/dtype.h):
 *  - float values are computed and kept in double; only explicit casts
 *    round (tessel_round_to); outputs round when written to their tensors;
 *  - integer values are wrapped to their node's dtype (tessel_wrap_int),
 *    arithmetic in int64 through unsigned operations, never signed
 *    overflow; DIV and MOD are floor division and floor modulo;
 *  - a binary node computes in double when its result or an operand is a
 *    float, else in int64; comparisons in double when an operand is a
 *    float; AND, OR and select evaluate only what they need;
 *  - min and max of floats (binary and reductions) are fmin and fmax: a
 *    NaN operand is ignored, as in C's and CUDA's fminf/fmaxf;
 *  - a reduction converts each body value to the stage's dtype and
 *    combines it with the accumulator, starting from the identity (sum 0,
 *    prod 1, max -inf or the dtype's minimum, min +inf or its maximum);
 *  - every access is bounds-checked; errors come back as -1 with the
 *    error recorded in the op's context. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/intmath.h"
#include "ir/interp.h"
#include "ir/te_impl.h"
#include "runtime/target.h"

#define INTERP_MAX_ELEMS (INT64_C(1) << 31)  /* per stage and in all */
#define INTERP_MAX_DEPTH (4 * TE_MAX_DEPTH)   /* expression nesting */

/* One value; its dtype (a node's type.dtype, a stage's dtype) says which
 * member is meant: "f" for floats, "i" for integers and bools (0 or 1). */
typedef union interp_value {
	double f;
	int64_t i;
} interp_value;

/* The state of one evaluation.  "buf" holds a buffer per stage, indexed
 * by stage->index, in C order: inputs are copied in before evaluation, so
 * that accesses are plain loads and outputs may alias inputs.  "axis"
 * holds the values of the current stage's index variables, "rax" of its
 * reduction variables, ranging over ["rax_lo", "rax_hi"). */
typedef struct interp {
	const tessel_op *op;
	tessel_ctx *ctx;
	interp_value **buf;
	uint8_t **known;          /* on demand (te_interp_points): per compute
	                           * stage, which elements "buf" holds; NULL
	                           * when every stage is evaluated in full */
	int nscratch;             /* entries of each counter array, less one */
	int64_t *scratch;
	int64_t *axis;
	int64_t *rax;
	int64_t *rax_lo;
	int64_t *rax_hi;
} interp;

/* A short-lived text buffer for messages. */
typedef struct interp_text {
	char s[400];
	size_t len;
} interp_text;

/* Append the printf-formatted "fmt" to "t", truncating silently. */
__attribute__((format(printf, 2, 3)))
static void text_add(interp_text *t, const char *fmt, ...)
{
	va_list ap;
	if (t->len >= sizeof(t->s) - 1)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
	if (t->len > sizeof(t->s) - 1)
		t->len = sizeof(t->s) - 1;
}

/* Append "[d0, d1, ...]" for the "n" values "v" to "t". */
static void text_add_list(interp_text *t, int n, const int64_t *v)
{
	text_add(t, "[");
	for (int d = 0; d < n; d++)
		text_add(t, "%s%" PRId64, d ? ", " : "", v[d]);
	text_add(t, "]");
}

/* Return whether "dt" is one of the dtypes. */
static bool dtype_valid(tessel_dtype dt)
{
	return (unsigned)dt < TESSEL_DTYPE_COUNT;
}

/* Return whether "dt" is a float dtype (values held in "f"). */
static bool is_float(tessel_dtype dt)
{
	return tessel_dtype_is_float(dt);
}

/* Return "v" of dtype "dt" as a double. */
static double as_double(tessel_dtype dt, interp_value v)
{
	return is_float(dt) ? v.f : (double)v.i;
}

/* Return whether "v" of dtype "dt" is true (non-zero). */
static bool as_truth(tessel_dtype dt, interp_value v)
{
	return is_float(dt) ? v.f != 0.0 : v.i != 0;
}

/* Return the double "f" as a value of dtype "dt": unchanged for floats,
 * converted with tessel's cast semantics for integers. */
static interp_value from_double(tessel_dtype dt, double f)
{
	interp_value v;
	if (is_float(dt))
		v.f = f;
	else
		v.i = tessel_float_to_int(dt, f);
	return v;
}

/* Return the integer "i" as a value of dtype "dt": wrapped for integers,
 * 0 or 1 for bools. */
static interp_value from_int(tessel_dtype dt, int64_t i)
{
	interp_value v;
	if (is_float(dt))
		v.f = (double)i;
	else
		v.i = tessel_wrap_int(dt, i);
	return v;
}

/* Return "v" of dtype "from" converted to dtype "to" without rounding
 * floats (the oracle keeps float64). */
static interp_value convert(tessel_dtype to, tessel_dtype from,
	interp_value v)
{
	if (to == from)
		return v;
	if (is_float(from))
		return from_double(to, v.f);
	return from_int(to, v.i);
}

/* Return "a" + "b", wrapping in two's complement. */
static int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Return "a" - "b", wrapping in two's complement. */
static int64_t wrap_sub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* Return "a" * "b", wrapping in two's complement. */
static int64_t wrap_mul(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* Return -"a", wrapping in two's complement. */
static int64_t wrap_neg(int64_t a)
{
	return (int64_t)(0 - (uint64_t)a);
}

/* Return "a" divided by the non-zero "b", rounded toward minus infinity,
 * wrapping for INT64_MIN / -1. */
static int64_t floor_div(int64_t a, int64_t b)
{
	return b == -1 ? wrap_neg(a) : te_floor_div(a, b);
}

/* Return "a" modulo the non-zero "b", with the sign of "b". */
static int64_t floor_mod(int64_t a, int64_t b)
{
	return b == -1 ? 0 : te_floor_mod(a, b);
}

/* Return "base" to the power "exp" >= 0, wrapping, by squaring. */
static int64_t int_pow(int64_t base, int64_t exp)
{
	uint64_t result = 1;
	uint64_t b = (uint64_t)base;
	uint64_t e = (uint64_t)exp;
	while (e) {
		if (e & 1)
			result *= b;
		b *= b;
		e >>= 1;
	}
	return (int64_t)result;
}

/* Return the smallest value of the integer or bool dtype "dt". */
static int64_t int_min_of(tessel_dtype dt)
{
	int64_t lo, hi;
	tessel_int_limits(dt, &lo, &hi);
	return lo;
}

/* Return the largest value of the integer or bool dtype "dt". */
static int64_t int_max_of(tessel_dtype dt)
{
	int64_t lo, hi;
	tessel_int_limits(dt, &lo, &hi);
	return hi;
}

/* ---- checking the op ---------------------------------------------------- */

/* Return the location of "s", or of "op" when "s" has none. */
static tessel_loc stage_loc(const tessel_op *op, const tessel_stage *s)
{
	return s && s->loc.line > 0 ? s->loc : op->loc;
}

/* Record an internal error about malformed IR of "op" at "loc". */
__attribute__((format(printf, 3, 4)))
static int malformed(const tessel_op *op, tessel_loc loc, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return te_error(op->ctx, TESSEL_ERR_INTERNAL, loc,
		"interpreter: malformed op '%s': %s",
		op->name ? op->name : "?", msg);
}

/* Return whether "s" is the stage of "op" at its own index. */
static bool stage_of_op(const tessel_op *op, const tessel_stage *s)
{
	return s && s->index >= 0 && s->index < op->nstages &&
		op->stages[s->index] == s;
}

/* Check that "v" is a variable of the stage "s" of "op". */
static int check_var(const tessel_op *op, const tessel_stage *s,
	const tessel_expr *e)
{
	const tessel_var *v = e->u.var;
	if (!v)
		return malformed(op, e->loc, "variable node without variable");
	if (v->is_reduce) {
		if (s->reduce == TESSEL_REDUCE_NONE || v->index < 0 ||
		    v->index >= s->nraxes || s->raxes[v->index] != v)
			return malformed(op, e->loc,
				"'%s' is not a reduction variable of '%s'",
				v->name ? v->name : "?", s->name);
	} else if (v->index < 0 || v->index >= s->ndim ||
		   s->axes[v->index] != v) {
		return malformed(op, e->loc,
			"'%s' is not an index variable of '%s'",
			v->name ? v->name : "?", s->name);
	}
	return 0;
}

/* Check that the access "e" in stage "s" of "op" reads an input or an
 * earlier stage with the right number of integer indices. */
static int check_access(const tessel_op *op, const tessel_stage *s,
	const tessel_expr *e)
{
	const tessel_stage *t = e->u.access.tensor;
	if (!stage_of_op(op, t))
		return malformed(op, e->loc, "access to a foreign tensor");
	if (t->index >= s->index)
		return malformed(op, e->loc,
			"'%s' reads '%s', which is not computed before it",
			s->name, t->name);
	if (e->u.access.n != t->ndim || (t->ndim > 0 && !e->u.access.index))
		return malformed(op, e->loc, "'%s' accessed with %d indices, "
			"has %d dimensions", t->name, e->u.access.n, t->ndim);
	for (int d = 0; d < t->ndim; d++) {
		const tessel_expr *x = e->u.access.index[d];
		if (x && dtype_valid(x->type.dtype) && is_float(x->type.dtype))
			return te_error(op->ctx, TESSEL_ERR_TYPE, x->loc,
				"index %d of '%s' is not an integer", d,
				t->name);
	}
	return 0;
}

static int check_expr(const tessel_op *op, const tessel_stage *s,
	const tessel_expr *e, int depth);

/* Check the children of "e" (in stage "s" of "op") at "depth". */
static int check_children(const tessel_op *op, const tessel_stage *s,
	const tessel_expr *e, int depth)
{
	switch (e->kind) {
	case TE_ACCESS:
		for (int d = 0; d < e->u.access.n; d++)
			if (check_expr(op, s, e->u.access.index[d], depth) < 0)
				return -1;
		return 0;
	case TE_UNARY:
		if ((unsigned)e->u.un.op >= TESSEL_UNARY_COUNT)
			return malformed(op, e->loc, "unknown unary operator");
		return check_expr(op, s, e->u.un.a, depth);
	case TE_BINARY:
		if ((unsigned)e->u.bin.op >= TESSEL_BINARY_COUNT)
			return malformed(op, e->loc, "unknown binary operator");
		if (check_expr(op, s, e->u.bin.a, depth) < 0)
			return -1;
		return check_expr(op, s, e->u.bin.b, depth);
	case TE_SELECT:
		if (check_expr(op, s, e->u.sel.cond, depth) < 0 ||
		    check_expr(op, s, e->u.sel.then_, depth) < 0)
			return -1;
		return check_expr(op, s, e->u.sel.else_, depth);
	case TE_CAST:
		if (!dtype_valid(e->u.cast.to))
			return malformed(op, e->loc, "cast to unknown dtype");
		return check_expr(op, s, e->u.cast.a, depth);
	default:
		return 0;
	}
}

/* Check that "e", in stage "s" of "op" at nesting "depth", is typed,
 * bound and well-formed, so that evaluating it cannot crash. */
static int check_expr(const tessel_op *op, const tessel_stage *s,
	const tessel_expr *e, int depth)
{
	if (!e)
		return malformed(op, stage_loc(op, s), "missing expression "
			"in '%s'", s->name);
	if (depth > INTERP_MAX_DEPTH)
		return te_error(op->ctx, TESSEL_ERR_LIMIT, e->loc,
			"expression nested deeper than %d", INTERP_MAX_DEPTH);
	if (!dtype_valid(e->type.dtype))
		return malformed(op, e->loc, "untyped expression");
	switch (e->kind) {
	case TE_INT:
	case TE_FLOAT:
	case TE_BOOL:
		return 0;
	case TE_SYM:
		return te_error(op->ctx, TESSEL_ERR_VALUE, e->loc,
			"'%s' is not bound",
			e->u.sym && e->u.sym->name ? e->u.sym->name : "?");
	case TE_VAR:
		return check_var(op, s, e);
	case TE_ACCESS:
		if (check_access(op, s, e) < 0)
			return -1;
		break;
	case TE_UNARY:
	case TE_BINARY:
	case TE_SELECT:
	case TE_CAST:
		break;
	default:
		return malformed(op, e->loc, "unknown expression kind %d",
			(int)e->kind);
	}
	return check_children(op, s, e, depth + 1);
}

/* Check that the variable "v" of "s" in "op" has a literal range. */
static int check_reduce_var(const tessel_op *op, const tessel_stage *s,
	const tessel_var *v)
{
	int64_t hi;
	if (!v)
		return malformed(op, stage_loc(op, s), "missing reduction "
			"variable in '%s'", s->name);
	if (!v->lo || !v->extent || v->lo->kind != TE_INT ||
	    v->extent->kind != TE_INT)
		return malformed(op, v->loc, "range of '%s' is not a literal",
			v->name ? v->name : "?");
	if (__builtin_add_overflow(v->lo->u.ival, v->extent->u.ival, &hi))
		return te_error(op->ctx, TESSEL_ERR_LIMIT, v->loc,
			"range of '%s' overflows", v->name ? v->name : "?");
	return 0;
}

/* Check the extents of "s" in "op" and add its element count to
 * "*total", refusing a stage, or stages in all, larger than
 * INTERP_MAX_ELEMS. */
static int check_extent(const tessel_op *op, const tessel_stage *s,
	int64_t *total)
{
	int64_t numel = 1;
	if (s->ndim < 0 || (s->ndim > 0 && !s->extent))
		return malformed(op, stage_loc(op, s), "'%s' has no extents",
			s->name);
	for (int d = 0; d < s->ndim; d++) {
		if (s->extent[d] < 0)
			return te_error(op->ctx, TESSEL_ERR_SHAPE,
				stage_loc(op, s), "'%s' has negative extent "
				"%" PRId64, s->name, s->extent[d]);
		if (__builtin_mul_overflow(numel, s->extent[d], &numel) ||
		    numel > INTERP_MAX_ELEMS)
			numel = INTERP_MAX_ELEMS + 1;
	}
	*total += numel;
	if (numel > INTERP_MAX_ELEMS || *total > INTERP_MAX_ELEMS)
		return te_error(op->ctx, TESSEL_ERR_LIMIT, stage_loc(op, s),
			"'%s' is too large to interpret (more than %" PRId64
			" elements)", s->name, INTERP_MAX_ELEMS);
	return 0;
}

/* Check that the index variable "v" of dimension "d" of "s" in "op"
 * ranges over [0, extent[d]), written as literals. */
static int check_axis(const tessel_op *op, const tessel_stage *s, int d,
	const tessel_var *v)
{
	if (!v)
		return malformed(op, stage_loc(op, s), "missing index "
			"variable in '%s'", s->name);
	if (!v->lo || !v->extent || v->lo->kind != TE_INT ||
	    v->extent->kind != TE_INT || v->lo->u.ival != 0 ||
	    v->extent->u.ival != s->extent[d])
		return malformed(op, v->loc, "range of '%s' is not [0, %"
			PRId64 ")", v->name ? v->name : "?", s->extent[d]);
	return 0;
}

/* Check the compute stage "s" of "op": variables, ranges and body. */
static int check_compute(const tessel_op *op, const tessel_stage *s)
{
	if (s->ndim > 0 && !s->axes)
		return malformed(op, stage_loc(op, s), "'%s' has no index "
			"variables", s->name);
	for (int d = 0; d < s->ndim; d++)
		if (check_axis(op, s, d, s->axes[d]) < 0)
			return -1;
	if ((unsigned)s->reduce > TESSEL_RMIN || s->nraxes < 0 ||
	    (s->nraxes > 0 && !s->raxes) ||
	    (s->reduce == TESSEL_REDUCE_NONE && s->nraxes > 0))
		return malformed(op, stage_loc(op, s), "bad reduction in '%s'",
			s->name);
	for (int r = 0; r < s->nraxes; r++)
		if (check_reduce_var(op, s, s->raxes[r]) < 0)
			return -1;
	return check_expr(op, s, s->body, 0);
}

/* Check that "op" is bound and well-formed: every stage sized, every
 * expression typed and free of symbols, every access to an input or an
 * earlier stage, the buffers within INTERP_MAX_ELEMS. */
static int check_op(const tessel_op *op)
{
	int64_t total = 0;
	if (!op->bound)
		return te_error(op->ctx, TESSEL_ERR_VALUE, op->loc,
			"op '%s' is not bound: bind its sizes first",
			op->name ? op->name : "?");
	if (op->nstages < 0 || op->ninputs < 0 || op->noutputs < 0)
		return malformed(op, op->loc, "negative counts");
	for (int i = 0; i < op->nstages; i++) {
		const tessel_stage *s = op->stages[i];
		if (!stage_of_op(op, s))
			return malformed(op, op->loc, "stage %d misplaced", i);
		if (!s->name)
			return malformed(op, op->loc, "stage %d unnamed", i);
		if (!dtype_valid(s->dtype))
			return malformed(op, stage_loc(op, s), "'%s' untyped",
				s->name);
		if (check_extent(op, s, &total) < 0)
			return -1;
		if (s->kind == TE_COMPUTE && check_compute(op, s) < 0)
			return -1;
	}
	for (int i = 0; i < op->ninputs; i++)
		if (!stage_of_op(op, op->inputs[i]) ||
		    op->inputs[i]->kind != TE_INPUT)
			return malformed(op, op->loc, "input %d misplaced", i);
	for (int i = 0; i < op->noutputs; i++)
		if (!stage_of_op(op, op->outputs[i]))
			return malformed(op, op->loc, "output %d misplaced", i);
	return 0;
}

/* ---- checking the tensors ------------------------------------------------ */

/* Return whether "t" has the dtype and shape of the stage "s". */
static bool tensor_matches(const tessel_tensor *t, const tessel_stage *s)
{
	if (t->dtype != s->dtype || t->ndim != s->ndim ||
	    t->ndim > TESSEL_MAX_DIMS)
		return false;
	for (int d = 0; d < s->ndim; d++)
		if (t->shape[d] != s->extent[d])
			return false;
	return true;
}

/* Return whether "t" has data wherever it has elements. */
static bool tensor_has_data(const tessel_tensor *t)
{
	for (int d = 0; d < t->ndim; d++)
		if (t->shape[d] == 0)
			return true;
	return t->data != NULL;
}

/* Check the tensor "t" given as the "role" (input or output) "s" of "op". */
static int check_tensor(const tessel_op *op, const char *role,
	const tessel_stage *s, const tessel_tensor *t)
{
	interp_text msg = { .len = 0 };
	if (!t)
		return te_error(op->ctx, TESSEL_ERR_VALUE, stage_loc(op, s),
			"%s '%s': no tensor given", role, s->name);
	if (tensor_matches(t, s))
		return tensor_has_data(t) ? 0 : te_error(op->ctx,
			TESSEL_ERR_VALUE, stage_loc(op, s),
			"%s '%s': tensor has no data", role, s->name);
	text_add(&msg, "%s '%s': expected %s", role, s->name,
		tessel_dtype_name(s->dtype));
	text_add_list(&msg, s->ndim, s->extent);
	text_add(&msg, ", got %s", tessel_dtype_name(t->dtype));
	if (t->ndim >= 0 && t->ndim <= TESSEL_MAX_DIMS)
		text_add_list(&msg, t->ndim, t->shape);
	else
		text_add(&msg, " with %d dimensions", t->ndim);
	return te_error(op->ctx, TESSEL_ERR_SHAPE, stage_loc(op, s), "%s",
		msg.s);
}

/* Check "inputs" and "outputs" against the inputs and outputs of "op". */
static int check_tensors(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *outputs)
{
	if (op->ninputs > 0 && !inputs)
		return te_error(op->ctx, TESSEL_ERR_VALUE, op->loc,
			"op '%s' needs %d inputs, none given", op->name,
			op->ninputs);
	if (op->noutputs > 0 && !outputs)
		return te_error(op->ctx, TESSEL_ERR_VALUE, op->loc,
			"op '%s' needs %d outputs, none given", op->name,
			op->noutputs);
	for (int i = 0; i < op->ninputs; i++)
		if (check_tensor(op, "input", op->inputs[i], inputs[i]) < 0)
			return -1;
	for (int i = 0; i < op->noutputs; i++)
		if (check_tensor(op, "output", op->outputs[i], outputs[i]) < 0)
			return -1;
	return 0;
}

/* ---- evaluating expressions ------------------------------------------- */

static int eval(interp *in, const tessel_expr *e, interp_value *out);
static int evaluate_element(interp *in, const tessel_stage *s, int64_t flat);
static double reduction_points(const tessel_stage *s);

/* A stage of at least this many reduction steps (elements times points
 * of its reductions) is evaluated on every CPU: about 0.1 s of one. */
#define INTERP_PARALLEL_STEPS (INT64_C(1) << 22)

/* Return the number of elements of the stage "s". */
static int64_t stage_numel(const tessel_stage *s)
{
	int64_t n = 1;
	for (int d = 0; d < s->ndim; d++)
		n *= s->extent[d];
	return n;
}

/* Record that the access "e" is out of bounds, evaluating its indices
 * again to name them all. */
static int access_out_of_bounds(interp *in, const tessel_expr *e)
{
	const tessel_stage *t = e->u.access.tensor;
	interp_text msg = { .len = 0 };
	text_add(&msg, "index out of bounds: %s[", t->name);
	for (int d = 0; d < t->ndim; d++) {
		const tessel_expr *x = e->u.access.index[d];
		interp_value v;
		if (eval(in, x, &v) < 0)
			text_add(&msg, "%s?", d ? ", " : "");
		else
			text_add(&msg, "%s%" PRId64, d ? ", " : "", v.i);
	}
	text_add(&msg, "] outside shape ");
	text_add_list(&msg, t->ndim, t->extent);
	return te_error(in->ctx, TESSEL_ERR_SHAPE, e->loc, "%s", msg.s);
}

/* Evaluate the access "e" into "out", checking every index. */
static int eval_access(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_stage *t = e->u.access.tensor;
	int64_t flat = 0;
	for (int d = 0; d < t->ndim; d++) {
		const tessel_expr *x = e->u.access.index[d];
		interp_value v;
		if (eval(in, x, &v) < 0)
			return -1;
		if (v.i < 0 || v.i >= t->extent[d])
			return access_out_of_bounds(in, e);
		flat = flat * t->extent[d] + v.i;
	}
	if (in->known && in->known[t->index] && !in->known[t->index][flat] &&
	    evaluate_element(in, t, flat) < 0)
		return -1;
	*out = convert(e->type.dtype, t->dtype, in->buf[t->index][flat]);
	return 0;
}

/* Return the float intrinsic or operator "u" applied to "x". */
static double float_unary(tessel_unary u, double x)
{
	switch (u) {
	case TESSEL_NEG: return -x;
	case TESSEL_NOT: return x == 0.0;
	case TESSEL_EXP: return exp(x);
	case TESSEL_LOG: return log(x);
	case TESSEL_SQRT: return sqrt(x);
	case TESSEL_RSQRT: return 1.0 / sqrt(x);
	case TESSEL_TANH: return tanh(x);
	case TESSEL_ERF: return erf(x);
	case TESSEL_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case TESSEL_ABS: return fabs(x);
	case TESSEL_FLOOR: return floor(x);
	default: return NAN;
	}
}

/* Return whether "u" on an integer stays an integer operation. */
static bool int_unary_exact(tessel_unary u)
{
	return u == TESSEL_NEG || u == TESSEL_NOT || u == TESSEL_ABS ||
		u == TESSEL_FLOOR;
}

/* Return the integer operator "u" (NEG, NOT, ABS or FLOOR) on "x",
 * wrapping. */
static int64_t int_unary(tessel_unary u, int64_t x)
{
	switch (u) {
	case TESSEL_NEG: return wrap_neg(x);
	case TESSEL_NOT: return x == 0;
	case TESSEL_ABS: return x < 0 ? wrap_neg(x) : x;
	default: return x;
	}
}

/* Evaluate the unary node "e" into "out". */
static int eval_unary(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_expr *a = e->u.un.a;
	tessel_unary u = e->u.un.op;
	interp_value v;
	if (eval(in, a, &v) < 0)
		return -1;
	if (u == TESSEL_NOT)
		*out = from_int(e->type.dtype, !as_truth(a->type.dtype, v));
	else if (is_float(a->type.dtype) || is_float(e->type.dtype) ||
		 !int_unary_exact(u))
		*out = from_double(e->type.dtype,
			float_unary(u, as_double(a->type.dtype, v)));
	else
		*out = from_int(e->type.dtype, int_unary(u, v.i));
	return 0;
}

/* Return whether "b" compares its operands into a bool. */
static bool is_comparison(tessel_binary b)
{
	return b >= TESSEL_LT && b <= TESSEL_NE;
}

/* Return the comparison "b" of the doubles "x" and "y". */
static bool compare_float(tessel_binary b, double x, double y)
{
	switch (b) {
	case TESSEL_LT: return x < y;
	case TESSEL_LE: return x <= y;
	case TESSEL_GT: return x > y;
	case TESSEL_GE: return x >= y;
	case TESSEL_EQ: return x == y;
	default: return x != y;
	}
}

/* Return the comparison "b" of the integers "x" and "y". */
static bool compare_int(tessel_binary b, int64_t x, int64_t y)
{
	switch (b) {
	case TESSEL_LT: return x < y;
	case TESSEL_LE: return x <= y;
	case TESSEL_GT: return x > y;
	case TESSEL_GE: return x >= y;
	case TESSEL_EQ: return x == y;
	default: return x != y;
	}
}

/* Return the arithmetic operator "b" on the doubles "x" and "y". */
static double float_binary(tessel_binary b, double x, double y)
{
	switch (b) {
	case TESSEL_ADD: return x + y;
	case TESSEL_SUB: return x - y;
	case TESSEL_MUL: return x * y;
	case TESSEL_DIV: return x / y;
	case TESSEL_MOD: return x - floor(x / y) * y;
	case TESSEL_MIN: return fmin(x, y);
	case TESSEL_MAX: return fmax(x, y);
	case TESSEL_POW: return pow(x, y);
	default: return NAN;
	}
}

/* Compute the integer operator of "e" on "x" and "y" into "*r", wrapping
 * in int64; division and modulo by zero and negative exponents are
 * errors. */
static int int_binary(interp *in, const tessel_expr *e, int64_t x, int64_t y,
	int64_t *r)
{
	tessel_binary b = e->u.bin.op;
	if ((b == TESSEL_DIV || b == TESSEL_MOD) && y == 0)
		return te_error(in->ctx, TESSEL_ERR_VALUE, e->loc,
			"integer division by zero");
	if (b == TESSEL_POW && y < 0)
		return te_error(in->ctx, TESSEL_ERR_VALUE, e->loc,
			"negative integer exponent %" PRId64, y);
	switch (b) {
	case TESSEL_ADD: *r = wrap_add(x, y); break;
	case TESSEL_SUB: *r = wrap_sub(x, y); break;
	case TESSEL_MUL: *r = wrap_mul(x, y); break;
	case TESSEL_DIV: *r = floor_div(x, y); break;
	case TESSEL_MOD: *r = floor_mod(x, y); break;
	case TESSEL_MIN: *r = x < y ? x : y; break;
	case TESSEL_MAX: *r = x > y ? x : y; break;
	default: *r = int_pow(x, y); break;
	}
	return 0;
}

/* Evaluate the logical AND or OR node "e" into "out", evaluating its
 * right operand only when the left one does not decide. */
static int eval_logical(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_expr *a = e->u.bin.a, *b = e->u.bin.b;
	bool is_and = e->u.bin.op == TESSEL_AND;
	interp_value v;
	if (eval(in, a, &v) < 0)
		return -1;
	bool truth = as_truth(a->type.dtype, v);
	if (truth == is_and) {
		if (eval(in, b, &v) < 0)
			return -1;
		truth = as_truth(b->type.dtype, v);
	}
	*out = from_int(e->type.dtype, truth);
	return 0;
}

/* Evaluate the binary node "e" into "out". */
static int eval_binary(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	tessel_dtype ta = a->type.dtype, tb = b->type.dtype;
	tessel_dtype tr = e->type.dtype;
	interp_value x, y;
	int64_t r = 0;
	if (op == TESSEL_AND || op == TESSEL_OR)
		return eval_logical(in, e, out);
	if (eval(in, a, &x) < 0 || eval(in, b, &y) < 0)
		return -1;
	bool in_float = is_float(ta) || is_float(tb);
	if (is_comparison(op))
		*out = from_int(tr, in_float ?
			compare_float(op, as_double(ta, x), as_double(tb, y)) :
			compare_int(op, x.i, y.i));
	else if (in_float || is_float(tr))
		*out = from_double(tr, float_binary(op, as_double(ta, x),
			as_double(tb, y)));
	else if (int_binary(in, e, x.i, y.i, &r) < 0)
		return -1;
	else
		*out = from_int(tr, r);
	return 0;
}

/* Evaluate the select node "e" into "out", evaluating only the branch its
 * condition chooses. */
static int eval_select(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_expr *c = e->u.sel.cond;
	interp_value v;
	if (eval(in, c, &v) < 0)
		return -1;
	const tessel_expr *branch = as_truth(c->type.dtype, v) ?
		e->u.sel.then_ : e->u.sel.else_;
	if (eval(in, branch, &v) < 0)
		return -1;
	*out = convert(e->type.dtype, branch->type.dtype, v);
	return 0;
}

/* Return "v" of dtype "from" cast to "to" with tessel's cast semantics:
 * floats round to "to", floats to integers truncate and saturate (NaN to
 * 0), integers wrap, anything to bool is "!= 0". */
static interp_value cast_value(tessel_dtype to, tessel_dtype from,
	interp_value v)
{
	interp_value r;
	if (is_float(to))
		r.f = tessel_round_to(to, as_double(from, v));
	else if (is_float(from))
		r.i = tessel_float_to_int(to, v.f);
	else
		r.i = tessel_wrap_int(to, v.i);
	return r;
}

/* Evaluate the cast node "e" into "out". */
static int eval_cast(interp *in, const tessel_expr *e, interp_value *out)
{
	const tessel_expr *a = e->u.cast.a;
	tessel_dtype to = e->u.cast.to;
	interp_value v;
	if (eval(in, a, &v) < 0)
		return -1;
	*out = convert(e->type.dtype, to, cast_value(to, a->type.dtype, v));
	return 0;
}

/* Return the current value of the variable "v" as a value of "dt". */
static interp_value var_value(interp *in, const tessel_var *v,
	tessel_dtype dt)
{
	return from_int(dt, v->is_reduce ? in->rax[v->index] :
		in->axis[v->index]);
}

/* Evaluate "e" at the current point into "out", as a value of its own
 * dtype.  Requires "e" to have passed check_expr. */
static int eval(interp *in, const tessel_expr *e, interp_value *out)
{
	tessel_dtype dt = e->type.dtype;
	switch (e->kind) {
	case TE_INT: *out = from_int(dt, e->u.ival); return 0;
	case TE_BOOL: *out = from_int(dt, e->u.ival != 0); return 0;
	case TE_FLOAT: *out = from_double(dt, e->u.fval); return 0;
	case TE_VAR: *out = var_value(in, e->u.var, dt); return 0;
	case TE_ACCESS: return eval_access(in, e, out);
	case TE_UNARY: return eval_unary(in, e, out);
	case TE_BINARY: return eval_binary(in, e, out);
	case TE_SELECT: return eval_select(in, e, out);
	case TE_CAST: return eval_cast(in, e, out);
	default:
		return te_error(in->ctx, TESSEL_ERR_INTERNAL, e->loc,
			"interpreter: unexpected expression kind %d",
			(int)e->kind);
	}
}

/* ---- evaluating stages -------------------------------------------------- */

/* Advance the "n" counters "v", each ranging over ["lo", "hi"), to the
 * next point in C order; return false after the last one (all counters
 * back at "lo").  "lo" NULL means all start at 0. */
static bool odometer_next(int64_t *v, const int64_t *lo, const int64_t *hi,
	int n)
{
	for (int d = n - 1; d >= 0; d--) {
		if (++v[d] < hi[d])
			return true;
		v[d] = lo ? lo[d] : 0;
	}
	return false;
}

/* Return the identity of the reduction "r" in the dtype "dt". */
static interp_value reduce_identity(tessel_reduce r, tessel_dtype dt)
{
	interp_value v;
	bool f = is_float(dt);
	switch (r) {
	case TESSEL_PROD:
		return from_int(dt, 1);
	case TESSEL_RMAX:
		if (f)
			v.f = -INFINITY;
		else
			v.i = int_min_of(dt);
		return v;
	case TESSEL_RMIN:
		if (f)
			v.f = INFINITY;
		else
			v.i = int_max_of(dt);
		return v;
	default:
		return from_int(dt, 0);
	}
}

/* Return "acc" combined with "v" by the reduction "r", both of "dt";
 * integers wrap to "dt". */
static interp_value reduce_step(tessel_reduce r, tessel_dtype dt,
	interp_value acc, interp_value v)
{
	if (is_float(dt)) {
		switch (r) {
		case TESSEL_PROD: acc.f *= v.f; break;
		case TESSEL_RMAX: acc.f = fmax(acc.f, v.f); break;
		case TESSEL_RMIN: acc.f = fmin(acc.f, v.f); break;
		default: acc.f += v.f; break;
		}
		return acc;
	}
	switch (r) {
	case TESSEL_PROD: return from_int(dt, wrap_mul(acc.i, v.i));
	case TESSEL_RMAX: return v.i > acc.i ? v : acc;
	case TESSEL_RMIN: return v.i < acc.i ? v : acc;
	default: return from_int(dt, wrap_add(acc.i, v.i));
	}
}

/* Evaluate the body of "s" at the current point as a value of the
 * stage's dtype, into "out". */
static int eval_body(interp *in, const tessel_stage *s, interp_value *out)
{
	interp_value v;
	if (eval(in, s->body, &v) < 0)
		return -1;
	*out = convert(s->dtype, s->body->type.dtype, v);
	return 0;
}

/* Set the reduction counters to the ranges of the variables of "s";
 * return false when one of the ranges is empty. */
static bool start_reduction(interp *in, const tessel_stage *s)
{
	bool nonempty = true;
	for (int r = 0; r < s->nraxes; r++) {
		const tessel_var *v = s->raxes[r];
		in->rax_lo[r] = v->lo->u.ival;
		in->rax_hi[r] = v->lo->u.ival + v->extent->u.ival;
		in->rax[r] = in->rax_lo[r];
		if (in->rax_hi[r] <= in->rax_lo[r])
			nonempty = false;
	}
	return nonempty;
}

/* Reduce the body of "s" over all its reduction variables at the current
 * point into "out". */
static int eval_reduction(interp *in, const tessel_stage *s,
	interp_value *out)
{
	interp_value acc = reduce_identity(s->reduce, s->dtype), v;
	if (start_reduction(in, s)) {
		do {
			if (eval_body(in, s, &v) < 0)
				return -1;
			acc = reduce_step(s->reduce, s->dtype, acc, v);
		} while (odometer_next(in->rax, in->rax_lo, in->rax_hi,
			s->nraxes));
	}
	*out = acc;
	return 0;
}

/* Point the counters of "in" into "scratch" (4 arrays of nscratch + 1
 * entries). */
static void use_counters(interp *in, int64_t *scratch)
{
	int64_t n1 = (int64_t)in->nscratch + 1;
	in->scratch = scratch;
	in->axis = scratch;
	in->rax = in->axis + n1;
	in->rax_lo = in->rax + n1;
	in->rax_hi = in->rax_lo + n1;
}

/* Set the index counters of "in" to the element "flat" (C order) of
 * "s". */
static void set_axis(interp *in, const tessel_stage *s, int64_t flat)
{
	for (int64_t d = s->ndim - 1; d >= 0; d--) {
		in->axis[d] = flat % s->extent[d];
		flat /= s->extent[d];
	}
}

/* Evaluate the elements "from" to "to" (exclusive, C order) of the
 * compute stage "s" into its buffer. */
static int eval_range(interp *in, const tessel_stage *s, int64_t from, int64_t to)
{
	interp_value *buf = in->buf[s->index];
	set_axis(in, s, from);
	for (int64_t flat = from; flat < to; flat++) {
		int r = s->reduce == TESSEL_REDUCE_NONE ?
			eval_body(in, s, &buf[flat]) :
			eval_reduction(in, s, &buf[flat]);
		if (r < 0)
			return -1;
		odometer_next(in->axis, NULL, s->extent, s->ndim);
	}
	return 0;
}

/* One thread's share of a stage evaluated in parallel: its own counters
 * and a context of its own for errors, the buffers shared.  It evaluates
 * the elements "from" to "to" in C order or, with "points", the elements
 * points[from] to points[to - 1]. */
typedef struct stage_chunk {
	interp in;
	const tessel_stage *s;
	const int64_t *points;
	int64_t from, to;
	int status;
	pthread_t thread;
} stage_chunk;

static void *eval_chunk(void *arg)
{
	stage_chunk *c = arg;
	if (!c->points) {
		c->status = eval_range(&c->in, c->s, c->from, c->to);
		return NULL;
	}
	for (int64_t k = c->from; k < c->to && c->status == 0; k++)
		c->status = evaluate_element(&c->in, c->s, c->points[k]);
	return NULL;
}

/* Evaluate the "n" elements of "s" (all of them in C order when "points"
 * is NULL, else those listed) in "nthreads" chunks, one thread each;
 * return 0, or -1 when a chunk failed or a thread could not start (the
 * caller then evaluates them again in order, for the first error). */
static int eval_parallel(const interp *in, const tessel_stage *s, const int64_t *points,
	int64_t n, int nthreads)
{
	stage_chunk *c = calloc((size_t)nthreads, sizeof(*c));
	int64_t *scratch = calloc((size_t)nthreads * 4 * (size_t)(in->nscratch + 1),
		sizeof(int64_t));
	int started = 0, failed = !c || !scratch;
	int64_t n1 = (int64_t)in->nscratch + 1;
	for (int t = 0; !failed && t < nthreads; t++, started++) {
		c[t].in = *in;
		c[t].in.ctx = tessel_ctx_new();
		use_counters(&c[t].in, scratch + (size_t)t * 4 * (size_t)n1);
		c[t].s = s;
		c[t].points = points;
		c[t].from = n * t / nthreads;
		c[t].to = n * (t + 1) / nthreads;
		if (!c[t].in.ctx || pthread_create(&c[t].thread, NULL, eval_chunk, &c[t])) {
			tessel_ctx_free(c[t].in.ctx);
			failed = 1;
			break;
		}
	}
	for (int t = 0; t < started; t++) {
		pthread_join(c[t].thread, NULL);
		failed |= c[t].status != 0;
		tessel_ctx_free(c[t].in.ctx);
	}
	free(scratch);
	free(c);
	return failed ? -1 : 0;
}

/* Return the threads to evaluate "n" elements of "s" with: every CPU
 * (at most one an element) when they take at least INTERP_PARALLEL_STEPS
 * reduction steps, else 1. */
static int threads_for(const tessel_stage *s, int64_t n)
{
	int nthreads = rt_num_cpus();
	if (nthreads > n)
		nthreads = (int)n;
	return (double)n * reduction_points(s) >= (double)INTERP_PARALLEL_STEPS ?
		nthreads : 1;
}

/* Evaluate the compute stage "s" at every point of its index space into
 * its buffer: in chunks on every CPU when that pays (threads_for; each
 * element is still computed in order, so the values are the same), in C
 * order otherwise and after a chunk failed, so that the error reported
 * is the first. */
static int eval_stage(interp *in, const tessel_stage *s)
{
	int64_t numel = stage_numel(s);
	int nthreads = threads_for(s, numel);
	if (nthreads > 1 && eval_parallel(in, s, NULL, numel, nthreads) == 0)
		return 0;
	return eval_range(in, s, 0, numel);
}

/* Evaluate the element "flat" (C order) of the compute stage "s" into its
 * buffer and mark it known, keeping the point being evaluated (this is
 * called from an access of another stage's body). */
static int evaluate_element(interp *in, const tessel_stage *s, int64_t flat)
{
	int64_t saved[4 * (in->nscratch + 1)];
	memcpy(saved, in->scratch, sizeof(saved));
	set_axis(in, s, flat);
	interp_value *v = &in->buf[s->index][flat];
	int r = s->reduce == TESSEL_REDUCE_NONE ? eval_body(in, s, v) :
		eval_reduction(in, s, v);
	if (r == 0)
		in->known[s->index][flat] = 1;
	memcpy(in->scratch, saved, sizeof(saved));
	return r;
}

/* Write the stage "s" into the tensor "t" of the same shape. */
static void write_output(interp *in, const tessel_stage *s, tessel_tensor *t)
{
	int64_t numel = stage_numel(s);
	for (int64_t flat = 0; flat < numel; flat++) {
		interp_value v = in->buf[s->index][flat];
		if (is_float(s->dtype))
			tessel_tensor_set(t, flat, v.f);
		else
			tessel_tensor_set_i64(t, flat, v.i);
	}
}

/* Copy the tensor "t" into the buffer "buf" of the input stage "s", as
 * values of its dtype in C order. */
static void load_input(const tessel_stage *s, const tessel_tensor *t,
	interp_value *buf)
{
	int64_t numel = stage_numel(s);
	for (int64_t flat = 0; flat < numel; flat++) {
		if (is_float(s->dtype))
			buf[flat].f = tessel_tensor_get(t, flat);
		else
			buf[flat].i = tessel_wrap_int(s->dtype,
				tessel_tensor_get_i64(t, flat));
	}
}

/* Allocate a buffer for every stage of "in" and fill those of the inputs
 * from "inputs". */
static int alloc_buffers(interp *in, tessel_tensor *const *inputs)
{
	const tessel_op *op = in->op;
	for (int i = 0; i < op->nstages; i++) {
		const tessel_stage *s = op->stages[i];
		int64_t numel = stage_numel(s);
		in->buf[i] = malloc(numel > 0 ?
			(size_t)numel * sizeof(interp_value) : 1);
		if (!in->buf[i])
			return te_error(op->ctx, TESSEL_ERR_LIMIT,
				stage_loc(op, s), "out of memory for '%s' "
				"(%" PRId64 " elements)", s->name, numel);
	}
	for (int i = 0; i < op->ninputs; i++)
		load_input(op->inputs[i], inputs[i],
			in->buf[op->inputs[i]->index]);
	return 0;
}

/* Allocate the buffers and counters of "in" for "op" on "inputs". */
static int interp_init(interp *in, const tessel_op *op,
	tessel_tensor *const *inputs)
{
	int nscratch = 0, n = op->nstages;
	in->op = op;
	in->ctx = op->ctx;
	in->buf = calloc(n > 0 ? (size_t)n : 1, sizeof(*in->buf));
	if (!in->buf)
		return te_error(op->ctx, TESSEL_ERR_LIMIT, op->loc,
			"out of memory");
	if (alloc_buffers(in, inputs) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const tessel_stage *s = op->stages[i];
		if (s->ndim > nscratch)
			nscratch = s->ndim;
		if (s->nraxes > nscratch)
			nscratch = s->nraxes;
	}
	in->nscratch = nscratch;
	in->scratch = calloc(4 * (size_t)(nscratch + 1), sizeof(int64_t));
	if (!in->scratch)
		return te_error(op->ctx, TESSEL_ERR_LIMIT, op->loc,
			"out of memory");
	use_counters(in, in->scratch);
	return 0;
}

/* Free everything "in" allocated. */
static void interp_free(interp *in)
{
	if (in->buf)
		for (int i = 0; i < in->op->nstages; i++)
			free(in->buf[i]);
	free(in->buf);
	if (in->known)
		for (int i = 0; i < in->op->nstages; i++)
			free(in->known[i]);
	free(in->known);
	free(in->scratch);
}

/* Evaluate every compute stage of "in" in order, then write the outputs
 * of its op to "outputs". */
static int interp_run(interp *in, tessel_tensor *const *outputs)
{
	const tessel_op *op = in->op;
	for (int i = 0; i < op->nstages; i++)
		if (op->stages[i]->kind == TE_COMPUTE &&
		    eval_stage(in, op->stages[i]) < 0)
			return -1;
	for (int i = 0; i < op->noutputs; i++)
		write_output(in, op->outputs[i], outputs[i]);
	return 0;
}

/* Evaluate the bound op "op" on "inputs" into "outputs" (see tessel/te.h).
 * Inputs are read first and outputs written only after every stage
 * succeeded: outputs may alias inputs, and on error they are untouched. */
static int run_points(interp *in, tessel_tensor *const *outputs,
	const int64_t *const *points, const int64_t *npoints);
static int alloc_known(interp *in);

/* Check "op" and its tensors, then evaluate it in full ("points" NULL)
 * or at the "points" of each output. */
static int evaluate(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *outputs, const int64_t *const *points,
	const int64_t *npoints)
{
	interp in = { .op = op };
	if (!op)
		return -1;
	if (check_op(op) < 0 || check_tensors(op, inputs, outputs) < 0)
		return -1;
	int r = interp_init(&in, op, inputs);
	if (r == 0 && points)
		r = alloc_known(&in);
	if (r == 0)
		r = points ? run_points(&in, outputs, points, npoints) : interp_run(&in, outputs);
	interp_free(&in);
	return r;
}

int tessel_interp(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *outputs)
{
	return evaluate(op, inputs, outputs, NULL, NULL);
}

/* Return the points of the reductions of "s" (1 without), as a double
 * so that large products saturate rather than wrap. */
static double reduction_points(const tessel_stage *s)
{
	double n = 1;
	for (int r = 0; r < s->nraxes; r++)
		n *= (double)s->raxes[r]->extent->u.ival;
	return n;
}

/* Return "n" as an int64_t, INT64_MAX when it is larger. */
static int64_t saturate(double n)
{
	return n >= (double)INT64_MAX ? INT64_MAX : (int64_t)n;
}

int64_t te_interp_cost(const tessel_op *op)
{
	double cost = 0;
	for (int i = 0; op && i < op->nstages; i++)
		if (op->stages[i]->kind == TE_COMPUTE)
			cost += (double)stage_numel(op->stages[i]) * reduction_points(op->stages[i]);
	return saturate(cost);
}

int64_t te_interp_point_cost(const tessel_op *op)
{
	double cost = 0;
	for (int i = 0; op && i < op->nstages; i++)
		if (op->stages[i]->kind == TE_COMPUTE)
			cost += reduction_points(op->stages[i]);
	return saturate(cost);
}

/* Make the "known" maps of "in": one per compute stage, all unknown. */
static int alloc_known(interp *in)
{
	const tessel_op *op = in->op;
	in->known = calloc((size_t)op->nstages + 1, sizeof(*in->known));
	if (!in->known)
		return te_error(op->ctx, TESSEL_ERR_LIMIT, op->loc, "out of memory");
	for (int i = 0; i < op->nstages; i++) {
		const tessel_stage *s = op->stages[i];
		if (s->kind != TE_COMPUTE)
			continue;
		int64_t numel = stage_numel(s);
		if (!(in->known[i] = calloc(numel > 0 ? (size_t)numel : 1, 1)))
			return te_error(op->ctx, TESSEL_ERR_LIMIT, stage_loc(op, s),
				"out of memory for '%s' (%" PRId64 " elements)", s->name, numel);
	}
	return 0;
}

/* Evaluate the "n" elements "p" of the output stage "s" of "in" not
 * known yet, in order. */
static int eval_points(interp *in, const tessel_stage *s, const int64_t *p, int64_t n)
{
	int64_t numel = stage_numel(s);
	for (int64_t k = 0; k < n; k++) {
		if (p[k] < 0 || p[k] >= numel)
			return te_error(in->op->ctx, TESSEL_ERR_SHAPE, stage_loc(in->op, s),
				"point %" PRId64 " of '%s' is outside its %" PRId64
				" elements", p[k], s->name, numel);
		if (!in->known[s->index][p[k]] && evaluate_element(in, s, p[k]) < 0)
			return -1;
	}
	return 0;
}

/* Return true when the "n" elements "p" of "s" may be evaluated in
 * parallel: "s" is the op's only compute stage (no element of another
 * is evaluated on demand, by two threads at once) and "p" lists
 * distinct elements of it in increasing order. */
static bool points_in_parallel(const interp *in, const tessel_stage *s, const int64_t *p,
	int64_t n)
{
	for (int i = 0; i < in->op->nstages; i++)
		if (in->op->stages[i]->kind == TE_COMPUTE && in->op->stages[i] != s)
			return false;
	int64_t numel = stage_numel(s);
	for (int64_t k = 0; k < n; k++)
		if (p[k] < 0 || p[k] >= numel || (k && p[k] <= p[k - 1]))
			return false;
	return true;
}

/* Evaluate the listed elements of each output of "in" and write them to
 * "outputs": on every CPU where points_in_parallel and threads_for allow,
 * else (and after a chunk failed, for the first error) in order. */
static int run_points(interp *in, tessel_tensor *const *outputs,
	const int64_t *const *points, const int64_t *npoints)
{
	const tessel_op *op = in->op;
	for (int o = 0; o < op->noutputs; o++) {
		const tessel_stage *s = op->outputs[o];
		int nthreads = threads_for(s, npoints[o]);
		if (nthreads > 1 && points_in_parallel(in, s, points[o], npoints[o]) &&
		    eval_parallel(in, s, points[o], npoints[o], nthreads) == 0)
			continue;
		if (eval_points(in, s, points[o], npoints[o]) < 0)
			return -1;
	}
	for (int o = 0; o < op->noutputs; o++) {
		const tessel_stage *s = op->outputs[o];
		for (int64_t k = 0; k < npoints[o]; k++) {
			interp_value v = in->buf[s->index][points[o][k]];
			if (is_float(s->dtype))
				tessel_tensor_set(outputs[o], points[o][k], v.f);
			else
				tessel_tensor_set_i64(outputs[o], points[o][k], v.i);
		}
	}
	return 0;
}

int te_interp_points(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *outputs, const int64_t *const *points,
	const int64_t *npoints)
{
	return evaluate(op, inputs, outputs, points, npoints);
}
