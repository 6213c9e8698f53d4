/* Constant folding of tensor expressions.
 *
 * guarantees: no operation has only literal operands where folding is
 *   exact (integer arithmetic without overflow, division by non-zero,
 *   comparisons, logic, negation); x + 0, 0 + x, x - 0, x * 1, 1 * x and
 *   x / 1 (integers) become x.  Float arithmetic other than negation is
 *   left alone so that the interpreter sees the expression as written.
 * Folding is what makes a printed and re-parsed op structurally equal to
 * the original: "-1" parses as a negation and folds to the literal. */
#include "ir/intmath.h"
#include "ir/te_impl.h"

static tessel_expr *int_lit(tessel_op *op, int64_t v, tessel_loc loc)
{
	tessel_expr *e = te_expr_new(op, TE_INT, loc);
	e->u.ival = v;
	return e;
}

static tessel_expr *bool_lit(tessel_op *op, bool v, tessel_loc loc)
{
	tessel_expr *e = te_expr_new(op, TE_BOOL, loc);
	e->u.ival = v;
	return e;
}

/* Fold "e", a binary operation on the integer literals "a" and "b";
 * return "e" itself when the result is not exact. */
static tessel_expr *fold_int_binary(tessel_op *op, tessel_expr *e, int64_t a,
	int64_t b)
{
	int64_t r;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		return __builtin_add_overflow(a, b, &r) ? e : int_lit(op, r, e->loc);
	case TESSEL_SUB:
		return __builtin_sub_overflow(a, b, &r) ? e : int_lit(op, r, e->loc);
	case TESSEL_MUL:
		return __builtin_mul_overflow(a, b, &r) ? e : int_lit(op, r, e->loc);
	case TESSEL_DIV:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return e;
		return int_lit(op, te_floor_div(a, b), e->loc);
	case TESSEL_MOD:
		if (b == 0 || b == -1)
			return e;
		return int_lit(op, te_floor_mod(a, b), e->loc);
	case TESSEL_MIN: return int_lit(op, a < b ? a : b, e->loc);
	case TESSEL_MAX: return int_lit(op, a > b ? a : b, e->loc);
	case TESSEL_LT: return bool_lit(op, a < b, e->loc);
	case TESSEL_LE: return bool_lit(op, a <= b, e->loc);
	case TESSEL_GT: return bool_lit(op, a > b, e->loc);
	case TESSEL_GE: return bool_lit(op, a >= b, e->loc);
	case TESSEL_EQ: return bool_lit(op, a == b, e->loc);
	case TESSEL_NE: return bool_lit(op, a != b, e->loc);
	default: return e;
	}
}

static bool is_int(const tessel_expr *e, int64_t v)
{
	return e->kind == TE_INT && e->u.ival == v;
}

static tessel_expr *fold_binary(tessel_op *op, tessel_expr *e)
{
	tessel_expr *a = e->u.bin.a = te_fold(op, e->u.bin.a);
	tessel_expr *b = e->u.bin.b = te_fold(op, e->u.bin.b);
	tessel_binary o = e->u.bin.op;
	if (a->kind == TE_INT && b->kind == TE_INT)
		return fold_int_binary(op, e, a->u.ival, b->u.ival);
	if (a->kind == TE_BOOL && b->kind == TE_BOOL && (o == TESSEL_AND || o == TESSEL_OR))
		return bool_lit(op, o == TESSEL_AND ? (a->u.ival && b->u.ival)
						    : (a->u.ival || b->u.ival), e->loc);
	if ((o == TESSEL_ADD || o == TESSEL_SUB) && is_int(b, 0))
		return a;
	if (o == TESSEL_ADD && is_int(a, 0))
		return b;
	if ((o == TESSEL_MUL || o == TESSEL_DIV) && is_int(b, 1))
		return a;
	if (o == TESSEL_MUL && is_int(a, 1))
		return b;
	return e;
}

static tessel_expr *fold_unary(tessel_op *op, tessel_expr *e)
{
	tessel_expr *a = e->u.un.a = te_fold(op, e->u.un.a);
	if (e->u.un.op == TESSEL_NEG && a->kind == TE_INT && a->u.ival != INT64_MIN)
		return int_lit(op, -a->u.ival, e->loc);
	if (e->u.un.op == TESSEL_NEG && a->kind == TE_FLOAT) {
		tessel_expr *f = te_expr_new(op, TE_FLOAT, e->loc);
		f->u.fval = -a->u.fval;
		return f;
	}
	if (e->u.un.op == TESSEL_NOT && a->kind == TE_BOOL)
		return bool_lit(op, !a->u.ival, e->loc);
	return e;
}

tessel_expr *te_fold(tessel_op *op, tessel_expr *e)
{
	if (!e)
		return NULL;
	switch (e->kind) {
	case TE_ACCESS:
		for (int i = 0; i < e->u.access.n; i++)
			e->u.access.index[i] = te_fold(op, e->u.access.index[i]);
		return e;
	case TE_UNARY:
		return fold_unary(op, e);
	case TE_BINARY:
		return fold_binary(op, e);
	case TE_SELECT:
		e->u.sel.cond = te_fold(op, e->u.sel.cond);
		e->u.sel.then_ = te_fold(op, e->u.sel.then_);
		e->u.sel.else_ = te_fold(op, e->u.sel.else_);
		return e;
	case TE_CAST:
		e->u.cast.a = te_fold(op, e->u.cast.a);
		return e;
	default:
		return e;
	}
}

static void fold_var(tessel_op *op, tessel_var *v)
{
	v->lo = te_fold(op, v->lo);
	v->hi = te_fold(op, v->hi);
	v->extent = te_fold(op, v->extent);
}

void te_fold_op(tessel_op *op)
{
	for (int i = 0; i < op->nstages; i++) {
		tessel_stage *s = op->stages[i];
		for (int d = 0; d < s->ndim; d++)
			s->dims[d] = te_fold(op, s->dims[d]);
		if (s->kind != TE_COMPUTE)
			continue;
		for (int d = 0; d < s->ndim; d++)
			fold_var(op, s->axes[d]);
		for (int d = 0; d < s->nraxes; d++)
			fold_var(op, s->raxes[d]);
		s->body = te_fold(op, s->body);
	}
}
