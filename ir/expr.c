/* Expression constructors, names of operators, and walks over expressions. */
#include <string.h>

#include "ir/te_impl.h"

static const tessel_loc no_loc = { NULL, 0, 0 };

tessel_expr *tessel_int(tessel_op *op, int64_t v)
{
	tessel_expr *e = te_expr_new(op, TE_INT, no_loc);
	e->u.ival = v;
	return e;
}

tessel_expr *tessel_float(tessel_op *op, double v)
{
	tessel_expr *e = te_expr_new(op, TE_FLOAT, no_loc);
	e->u.fval = v;
	return e;
}

tessel_expr *tessel_bool(tessel_op *op, bool v)
{
	tessel_expr *e = te_expr_new(op, TE_BOOL, no_loc);
	e->u.ival = v;
	return e;
}

tessel_expr *tessel_size(tessel_op *op, const char *name)
{
	te_sym *s = te_op_find_sym(op, name ? name : "");
	if (!s)
		s = te_op_add_sym(op, name, false, no_loc);
	if (!s)
		return NULL;
	tessel_expr *e = te_expr_new(op, TE_SYM, no_loc);
	e->u.sym = s;
	return e;
}

tessel_expr *tessel_var_ref(tessel_op *op, tessel_var *var)
{
	if (!var)
		return NULL;
	tessel_expr *e = te_expr_new(op, TE_VAR, no_loc);
	e->u.var = var;
	return e;
}

tessel_expr *tessel_access(tessel_op *op, tessel_stage *t, int n,
	tessel_expr *const *index)
{
	if (!t)
		return NULL;
	if (t->op != op) {
		te_error(op->ctx, TESSEL_ERR_NAME, no_loc,
			"tensor '%s' belongs to another op", t->name);
		return NULL;
	}
	if (n != t->ndim) {
		te_error(op->ctx, TESSEL_ERR_SHAPE, no_loc,
			"'%s' has %d dimensions but is indexed with %d", t->name,
			t->ndim, n);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (!index[i])
			return NULL;
	tessel_expr *e = te_expr_new(op, TE_ACCESS, no_loc);
	e->u.access.tensor = t;
	e->u.access.n = n;
	e->u.access.index = te_arena_alloc(&op->arena,
		sizeof(tessel_expr *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		e->u.access.index[i] = index[i];
	return e;
}

tessel_expr *tessel_unary_op(tessel_op *op, tessel_unary u, tessel_expr *a)
{
	if (!a)
		return NULL;
	if ((unsigned)u >= TESSEL_UNARY_COUNT) {
		te_error(op->ctx, TESSEL_ERR_VALUE, no_loc, "invalid unary operator");
		return NULL;
	}
	tessel_expr *e = te_expr_new(op, TE_UNARY, a->loc);
	e->u.un.op = u;
	e->u.un.a = a;
	return e;
}

tessel_expr *tessel_binary_op(tessel_op *op, tessel_binary b, tessel_expr *a,
	tessel_expr *c)
{
	if (!a || !c)
		return NULL;
	if ((unsigned)b >= TESSEL_BINARY_COUNT) {
		te_error(op->ctx, TESSEL_ERR_VALUE, no_loc, "invalid binary operator");
		return NULL;
	}
	tessel_expr *e = te_expr_new(op, TE_BINARY, a->loc);
	e->u.bin.op = b;
	e->u.bin.a = a;
	e->u.bin.b = c;
	return e;
}

tessel_expr *tessel_select(tessel_op *op, tessel_expr *cond,
	tessel_expr *then_, tessel_expr *else_)
{
	if (!cond || !then_ || !else_)
		return NULL;
	tessel_expr *e = te_expr_new(op, TE_SELECT, cond->loc);
	e->u.sel.cond = cond;
	e->u.sel.then_ = then_;
	e->u.sel.else_ = else_;
	return e;
}

tessel_expr *tessel_cast(tessel_op *op, tessel_dtype dt, tessel_expr *a)
{
	if (!a)
		return NULL;
	if ((unsigned)dt >= TESSEL_DTYPE_COUNT) {
		te_error(op->ctx, TESSEL_ERR_TYPE, no_loc, "invalid cast dtype");
		return NULL;
	}
	tessel_expr *e = te_expr_new(op, TE_CAST, a->loc);
	e->u.cast.to = dt;
	e->u.cast.a = a;
	return e;
}

const char *te_unary_name(tessel_unary u)
{
	static const char *name[TESSEL_UNARY_COUNT] = {
		"-", "!", "exp", "log", "sqrt", "rsqrt", "tanh", "erf",
		"sigmoid", "abs", "floor"
	};
	return name[u];
}

const char *te_binary_name(tessel_binary b)
{
	static const char *name[TESSEL_BINARY_COUNT] = {
		"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=",
		"&&", "||", "min", "max", "pow"
	};
	return name[b];
}

const char *te_reduce_name(tessel_reduce r)
{
	static const char *name[] = { "", "sum", "prod", "max", "min" };
	return name[r];
}

bool te_expr_equal(const tessel_expr *a, const tessel_expr *b)
{
	if (a == b)
		return true;
	if (!a || !b || a->kind != b->kind)
		return false;
	switch (a->kind) {
	case TE_INT:
	case TE_BOOL:
		return a->u.ival == b->u.ival;
	case TE_FLOAT:
		return memcmp(&a->u.fval, &b->u.fval, sizeof(double)) == 0;
	case TE_SYM:
		return a->u.sym == b->u.sym;
	case TE_VAR:
		return a->u.var == b->u.var;
	case TE_ACCESS:
		if (a->u.access.tensor != b->u.access.tensor)
			return false;
		for (int i = 0; i < a->u.access.n; i++)
			if (!te_expr_equal(a->u.access.index[i], b->u.access.index[i]))
				return false;
		return true;
	case TE_UNARY:
		return a->u.un.op == b->u.un.op && te_expr_equal(a->u.un.a, b->u.un.a);
	case TE_BINARY:
		return a->u.bin.op == b->u.bin.op &&
		       te_expr_equal(a->u.bin.a, b->u.bin.a) &&
		       te_expr_equal(a->u.bin.b, b->u.bin.b);
	case TE_SELECT:
		return te_expr_equal(a->u.sel.cond, b->u.sel.cond) &&
		       te_expr_equal(a->u.sel.then_, b->u.sel.then_) &&
		       te_expr_equal(a->u.sel.else_, b->u.sel.else_);
	case TE_CAST:
		return a->u.cast.to == b->u.cast.to &&
		       te_expr_equal(a->u.cast.a, b->u.cast.a);
	}
	return false;
}

bool te_expr_const_int(const tessel_expr *e, int64_t *v)
{
	if (e && e->kind == TE_INT) {
		*v = e->u.ival;
		return true;
	}
	return false;
}

int te_visit_accesses(tessel_expr *e, bool under_select, te_access_fn fn,
	void *user)
{
	switch (e->kind) {
	case TE_ACCESS:
		for (int i = 0; i < e->u.access.n; i++)
			if (te_visit_accesses(e->u.access.index[i], under_select,
					fn, user))
				return -1;
		return fn(e, under_select, user);
	case TE_UNARY:
		return te_visit_accesses(e->u.un.a, under_select, fn, user);
	case TE_BINARY:
		if (te_visit_accesses(e->u.bin.a, under_select, fn, user))
			return -1;
		return te_visit_accesses(e->u.bin.b,
			under_select || e->u.bin.op == TESSEL_AND ||
				e->u.bin.op == TESSEL_OR,
			fn, user);
	case TE_SELECT:
		if (te_visit_accesses(e->u.sel.cond, under_select, fn, user))
			return -1;
		if (te_visit_accesses(e->u.sel.then_, true, fn, user))
			return -1;
		return te_visit_accesses(e->u.sel.else_, true, fn, user);
	case TE_CAST:
		return te_visit_accesses(e->u.cast.a, under_select, fn, user);
	default:
		return 0;
	}
}

const char *tessel_op_name(const tessel_op *op)
{
	return op->name;
}

int tessel_op_num_inputs(const tessel_op *op)
{
	return op->ninputs;
}

tessel_stage *tessel_op_input_at(const tessel_op *op, int i)
{
	return i >= 0 && i < op->ninputs ? op->inputs[i] : NULL;
}

int tessel_op_num_outputs(const tessel_op *op)
{
	return op->noutputs;
}

tessel_stage *tessel_op_output_at(const tessel_op *op, int i)
{
	return i >= 0 && i < op->noutputs ? op->outputs[i] : NULL;
}

int tessel_op_num_symbols(const tessel_op *op)
{
	return op->nsyms;
}

const char *tessel_op_symbol_name(const tessel_op *op, int i)
{
	return i >= 0 && i < op->nsyms ? op->syms[i]->name : NULL;
}

bool tessel_op_symbol_is_attr(const tessel_op *op, int i)
{
	return i >= 0 && i < op->nsyms && op->syms[i]->is_attr;
}

bool tessel_op_is_bound(const tessel_op *op)
{
	return op->bound;
}

const char *tessel_stage_name(const tessel_stage *s)
{
	return s->name;
}

tessel_dtype tessel_stage_dtype(const tessel_stage *s)
{
	return s->dtype;
}

int tessel_stage_ndim(const tessel_stage *s)
{
	return s->ndim;
}

int64_t tessel_stage_dim(const tessel_stage *s, int i)
{
	if (!s->extent || i < 0 || i >= s->ndim)
		return -1;
	return s->extent[i];
}
