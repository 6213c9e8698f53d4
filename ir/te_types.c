/* Type checking of tensor expressions.
 *
 * requires: an op built through ir/build.c (or the parser)
 * guarantees: every expression has a type; every compute stage has a
 *   dtype; indices, dimensions and ranges are integer expressions; stages
 *   read only inputs and earlier stages and use only their own variables.
 *
 * Literals, variables and sizes are weak: they take the type of what they
 * meet, so `X[i] * 2.0` is f16 when X is.  Two strong types promote along
 * bool < i8 < i32 < i64 < f16, bf16 < f32 < f64 (f16 with bf16 gives f32).
 * A weak value that must become concrete is i64 (integers) or f32 (floats). */
#include <string.h>

#include "ir/te_impl.h"

typedef struct type_checker {
	tessel_op *op;
	tessel_stage *stage;  /* stage whose body is checked; NULL for dims */
	int depth;
} type_checker;

static te_type weak(tessel_dtype dt)
{
	return (te_type){ dt, true };
}

static te_type strong(tessel_dtype dt)
{
	return (te_type){ dt, false };
}

static bool is_float(te_type t)
{
	return tessel_dtype_is_float(t.dtype);
}

static bool is_integer(te_type t)
{
	return tessel_dtype_is_int(t.dtype);
}

/* Return the dtype a value of type "t" has when stored. */
static tessel_dtype concrete(te_type t)
{
	return t.dtype;
}

static int rank(tessel_dtype dt)
{
	static const int r[TESSEL_DTYPE_COUNT] = { 0, 1, 2, 3, 4, 4, 5, 6, 1 };
	return r[dt];
}

/* Return the type of an arithmetic result over "a" and "b". */
static te_type unify(te_type a, te_type b)
{
	if (a.weak && b.weak)
		return is_float(a) || is_float(b) ? weak(TESSEL_F32) : weak(TESSEL_I64);
	if (a.weak || b.weak) {
		te_type s = a.weak ? b : a, w = a.weak ? a : b;
		if (is_float(w) && !is_float(s))
			return strong(TESSEL_F32);
		return s;
	}
	if (a.dtype == b.dtype)
		return a;
	if ((a.dtype == TESSEL_F16 && b.dtype == TESSEL_BF16) ||
	    (a.dtype == TESSEL_BF16 && b.dtype == TESSEL_F16))
		return strong(TESSEL_F32);
	if ((a.dtype == TESSEL_I8 && b.dtype == TESSEL_U8) ||
	    (a.dtype == TESSEL_U8 && b.dtype == TESSEL_I8))
		return strong(TESSEL_I32);
	return rank(a.dtype) >= rank(b.dtype) ? a : b;
}

static int type_error(type_checker *tc, const tessel_expr *e, const char *fmt,
	const char *a, const char *b)
{
	return te_error(tc->op->ctx, TESSEL_ERR_TYPE, e->loc, fmt, a, b);
}

static const char *type_name(te_type t)
{
	if (t.weak)
		return is_float(t) ? "float literal" : "integer";
	return tessel_dtype_name(t.dtype);
}

static int check(type_checker *tc, tessel_expr *e);

static int check_index(type_checker *tc, tessel_expr *e)
{
	if (check(tc, e))
		return -1;
	if (!is_integer(e->type))
		return type_error(tc, e, "index must be an integer, not %s%s",
			type_name(e->type), "");
	return 0;
}

static int check_var(type_checker *tc, tessel_expr *e)
{
	tessel_stage *s = tc->stage;
	tessel_var *v = e->u.var;
	bool own = false;
	for (int i = 0; s && i < s->ndim; i++)
		own |= s->axes[i] == v;
	for (int i = 0; s && i < s->nraxes; i++)
		own |= s->raxes[i] == v;
	if (!own)
		return te_error(tc->op->ctx, TESSEL_ERR_NAME, e->loc,
			"variable '%s' does not belong to %s", v->name,
			s ? s->name : "a dimension");
	e->type = weak(TESSEL_I64);
	return 0;
}

static int check_access(type_checker *tc, tessel_expr *e)
{
	tessel_stage *t = e->u.access.tensor;
	if (!tc->stage)
		return te_error(tc->op->ctx, TESSEL_ERR_NAME, e->loc,
			"tensor '%s' cannot appear in a dimension", t->name);
	if (t->index >= tc->stage->index)
		return te_error(tc->op->ctx, TESSEL_ERR_NAME, e->loc,
			t == tc->stage ? "stage '%s' reads itself"
				       : "stage '%s' reads '%s', which is defined after it",
			tc->stage->name, t->name);
	for (int i = 0; i < e->u.access.n; i++)
		if (check_index(tc, e->u.access.index[i]))
			return -1;
	e->type = strong(t->dtype);
	return 0;
}

static int check_unary(type_checker *tc, tessel_expr *e)
{
	if (check(tc, e->u.un.a))
		return -1;
	te_type a = e->u.un.a->type;
	const char *name = te_unary_name(e->u.un.op);
	switch (e->u.un.op) {
	case TESSEL_NOT:
		if (a.dtype != TESSEL_BOOL)
			return type_error(tc, e, "'!' needs a bool, not %s%s",
				type_name(a), "");
		e->type = a;
		return 0;
	case TESSEL_NEG:
	case TESSEL_ABS:
	case TESSEL_FLOOR:
		if (a.dtype == TESSEL_BOOL)
			return type_error(tc, e, "'%s' of a bool", name, "");
		e->type = a;
		return 0;
	default:
		if (!is_float(a) && !a.weak)
			return type_error(tc, e,
				"%s needs a float argument, not %s; cast it, e.g. f32(...)",
				name, type_name(a));
		e->type = is_float(a) ? a : weak(TESSEL_F32);
		return 0;
	}
}

static int check_binary(type_checker *tc, tessel_expr *e)
{
	if (check(tc, e->u.bin.a) || check(tc, e->u.bin.b))
		return -1;
	te_type a = e->u.bin.a->type, b = e->u.bin.b->type;
	const char *name = te_binary_name(e->u.bin.op);
	switch (e->u.bin.op) {
	case TESSEL_AND:
	case TESSEL_OR:
		if (a.dtype != TESSEL_BOOL || b.dtype != TESSEL_BOOL)
			return type_error(tc, e, "'%s' needs bool operands, not %s",
				name, type_name(a.dtype != TESSEL_BOOL ? a : b));
		e->type = strong(TESSEL_BOOL);
		return 0;
	case TESSEL_EQ:
	case TESSEL_NE:
		if ((a.dtype == TESSEL_BOOL) != (b.dtype == TESSEL_BOOL))
			return type_error(tc, e, "'%s' compares a bool with %s",
				name, type_name(a.dtype == TESSEL_BOOL ? b : a));
		e->type = strong(TESSEL_BOOL);
		return 0;
	case TESSEL_LT:
	case TESSEL_LE:
	case TESSEL_GT:
	case TESSEL_GE:
		if (a.dtype == TESSEL_BOOL || b.dtype == TESSEL_BOOL)
			return type_error(tc, e, "'%s' of a bool%s", name, "");
		e->type = strong(TESSEL_BOOL);
		return 0;
	default:
		if (a.dtype == TESSEL_BOOL || b.dtype == TESSEL_BOOL)
			return type_error(tc, e,
				"'%s' of a bool; cast it first, e.g. i32(...)%s",
				name, "");
		e->type = unify(a, b);
		return 0;
	}
}

static int check_select(type_checker *tc, tessel_expr *e)
{
	if (check(tc, e->u.sel.cond) || check(tc, e->u.sel.then_) ||
	    check(tc, e->u.sel.else_))
		return -1;
	if (e->u.sel.cond->type.dtype != TESSEL_BOOL)
		return type_error(tc, e->u.sel.cond,
			"select condition must be a bool, not %s%s",
			type_name(e->u.sel.cond->type), "");
	te_type a = e->u.sel.then_->type, b = e->u.sel.else_->type;
	if ((a.dtype == TESSEL_BOOL) != (b.dtype == TESSEL_BOOL))
		return type_error(tc, e, "select mixes a bool with %s%s",
			type_name(a.dtype == TESSEL_BOOL ? b : a), "");
	e->type = a.dtype == TESSEL_BOOL ? strong(TESSEL_BOOL) : unify(a, b);
	return 0;
}

static int check(type_checker *tc, tessel_expr *e)
{
	if (!e)
		return te_error(tc->op->ctx, TESSEL_ERR_INTERNAL,
			(tessel_loc){ NULL, 0, 0 }, "missing expression");
	if (++tc->depth > TE_MAX_DEPTH) {
		tc->depth--;
		return te_error(tc->op->ctx, TESSEL_ERR_LIMIT, e->loc,
			"expression nested more than %d deep", TE_MAX_DEPTH);
	}
	int r = 0;
	switch (e->kind) {
	case TE_INT: e->type = weak(TESSEL_I64); break;
	case TE_FLOAT: e->type = weak(TESSEL_F32); break;
	case TE_BOOL: e->type = strong(TESSEL_BOOL); break;
	case TE_SYM: e->type = weak(TESSEL_I64); break;
	case TE_VAR: r = check_var(tc, e); break;
	case TE_ACCESS: r = check_access(tc, e); break;
	case TE_UNARY: r = check_unary(tc, e); break;
	case TE_BINARY: r = check_binary(tc, e); break;
	case TE_SELECT: r = check_select(tc, e); break;
	case TE_CAST:
		r = check(tc, e->u.cast.a);
		e->type = strong(e->u.cast.to);
		break;
	}
	tc->depth--;
	return r;
}

/* Check that "e", a dimension or range bound, is an integer expression of
 * sizes and attributes; "what" names it in errors. */
static int check_size_expr(type_checker *tc, tessel_expr *e, const char *what)
{
	tessel_stage *saved = tc->stage;
	tc->stage = NULL;
	int r = check(tc, e);
	tc->stage = saved;
	if (r)
		return -1;
	if (!is_integer(e->type))
		return type_error(tc, e, "%s must be an integer, not %s", what,
			type_name(e->type));
	return 0;
}

static int check_stage_body(type_checker *tc, tessel_stage *s)
{
	if (!s->body)
		return te_error(tc->op->ctx, TESSEL_ERR_VALUE, s->loc,
			"stage '%s' has no body", s->name);
	for (int i = 0; i < s->nraxes; i++)
		if (s->raxes[i]->explicit_range &&
		    (check_size_expr(tc, s->raxes[i]->lo, "a range bound") ||
		     check_size_expr(tc, s->raxes[i]->extent, "a range bound")))
			return -1;
	tc->stage = s;
	if (check(tc, s->body))
		return -1;
	te_type t = s->body->type;
	if ((s->reduce == TESSEL_SUM || s->reduce == TESSEL_PROD) &&
	    t.dtype == TESSEL_BOOL)
		return type_error(tc, s->body, "%s of bool values; cast them first%s",
			te_reduce_name(s->reduce), "");
	if (!s->has_dtype) {
		s->dtype = concrete(t);
		s->has_dtype = true;
		return 0;
	}
	if (!tessel_dtype_is_float(s->dtype) && is_float(t))
		return type_error(tc, s->body,
			"stage is %s but its value is %s; cast it explicitly",
			tessel_dtype_name(s->dtype), type_name(t));
	if ((s->dtype == TESSEL_BOOL) != (t.dtype == TESSEL_BOOL))
		return type_error(tc, s->body, "stage is %s but its value is %s",
			tessel_dtype_name(s->dtype), type_name(t));
	return 0;
}

int te_check_types(tessel_op *op)
{
	type_checker tc = { op, NULL, 0 };
	if (op->noutputs == 0)
		return te_error(op->ctx, TESSEL_ERR_VALUE, op->loc,
			"op '%s' has no outputs", op->name);
	for (int i = 0; i < op->nstages; i++) {
		tessel_stage *s = op->stages[i];
		for (int d = 0; d < s->ndim; d++)
			if (s->dims[d] &&
			    check_size_expr(&tc, s->dims[d], "a dimension"))
				return -1;
		if (s->kind == TE_COMPUTE && check_stage_body(&tc, s))
			return -1;
	}
	return 0;
}
