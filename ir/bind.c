/* Finishing an op (the pipeline that makes a built op usable) and binding
 * its sizes and attributes (a copy with the symbols replaced). */
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"

/* The passes every op goes through, in order: check types (which also
 * bounds the nesting depth the recursive passes see), fold constants,
 * type the folded literals, infer ranges and shapes (and, when bound,
 * verify accesses). */
int tessel_op_finish(tessel_op *op)
{
	if (te_check_types(op))
		return -1;
	te_fold_op(op);
	if (te_check_types(op) || te_infer(op))
		return -1;
	op->finished = true;
	return 0;
}

typedef struct copier {
	const tessel_op *src;
	tessel_op *dst;
	const int64_t *values;  /* by symbol index */
	const bool *given;
	const tessel_stage *stage;  /* whose variables are being mapped */
	const char *file;           /* the copy's own file name for locations */
} copier;

/* Return "loc" pointing at the copy's file name, which lives as long as it. */
static tessel_loc relocate(const copier *c, tessel_loc loc)
{
	if (loc.file)
		loc.file = c->file;
	return loc;
}

static tessel_expr *copy_expr(copier *c, const tessel_expr *e);

static tessel_var *map_var(copier *c, const tessel_var *v, const tessel_stage *owner)
{
	tessel_stage *s = c->dst->stages[owner->index];
	return v->is_reduce ? s->raxes[v->index] : s->axes[v->index];
}

static tessel_expr *copy_expr(copier *c, const tessel_expr *e)
{
	if (!e)
		return NULL;
	tessel_expr *d = te_expr_new(c->dst, e->kind, e->loc);
	*d = *e;
	d->loc = relocate(c, e->loc);
	switch (e->kind) {
	case TE_SYM:
		if (c->given[e->u.sym->index]) {
			d->kind = TE_INT;
			d->u.ival = c->values[e->u.sym->index];
		} else {
			d->u.sym = te_op_find_sym(c->dst, e->u.sym->name);
		}
		break;
	case TE_VAR:
		d->u.var = map_var(c, e->u.var, c->stage);
		break;
	case TE_ACCESS:
		d->u.access.tensor = c->dst->stages[e->u.access.tensor->index];
		d->u.access.index = te_arena_alloc(&c->dst->arena,
			sizeof(tessel_expr *) * (size_t)(e->u.access.n + 1));
		for (int i = 0; i < e->u.access.n; i++)
			d->u.access.index[i] = copy_expr(c, e->u.access.index[i]);
		break;
	case TE_UNARY:
		d->u.un.a = copy_expr(c, e->u.un.a);
		break;
	case TE_BINARY:
		d->u.bin.a = copy_expr(c, e->u.bin.a);
		d->u.bin.b = copy_expr(c, e->u.bin.b);
		break;
	case TE_SELECT:
		d->u.sel.cond = copy_expr(c, e->u.sel.cond);
		d->u.sel.then_ = copy_expr(c, e->u.sel.then_);
		d->u.sel.else_ = copy_expr(c, e->u.sel.else_);
		break;
	case TE_CAST:
		d->u.cast.a = copy_expr(c, e->u.cast.a);
		break;
	default:
		break;
	}
	return d;
}

static tessel_var *copy_var(copier *c, const tessel_var *v)
{
	tessel_var *d = te_arena_alloc(&c->dst->arena, sizeof(*d));
	*d = *v;
	d->name = te_arena_strdup(&c->dst->arena, v->name);
	d->loc = relocate(c, v->loc);
	d->lo = copy_expr(c, v->lo);
	d->hi = copy_expr(c, v->hi);
	d->extent = copy_expr(c, v->extent);
	return d;
}

static tessel_var **copy_vars(copier *c, tessel_var *const *vars, int n)
{
	tessel_var **d = te_arena_alloc(&c->dst->arena,
		sizeof(tessel_var *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		d[i] = copy_var(c, vars[i]);
	return d;
}

static void copy_stage(copier *c, const tessel_stage *s)
{
	tessel_op *dst = c->dst;
	tessel_stage *d = te_arena_alloc(&dst->arena, sizeof(*d));
	*d = *s;
	d->op = dst;
	d->name = te_arena_strdup(&dst->arena, s->name);
	d->loc = relocate(c, s->loc);
	d->extent = NULL;
	d->dims = te_arena_alloc(&dst->arena, sizeof(tessel_expr *) * (size_t)(s->ndim + 1));
	for (int i = 0; i < s->ndim; i++)
		d->dims[i] = copy_expr(c, s->dims[i]);
	te_push(&dst->arena, (void ***)&dst->stages, &dst->nstages, d);
	if (s->kind == TE_INPUT) {
		te_push(&dst->arena, (void ***)&dst->inputs, &dst->ninputs, d);
		return;
	}
	c->stage = s;
	d->axes = copy_vars(c, s->axes, s->ndim);
	d->raxes = copy_vars(c, s->raxes, s->nraxes);
	for (int i = 0; i < s->ndim; i++)
		if (s->axes[i]->extent == s->dims[i])
			d->axes[i]->extent = d->dims[i];
	d->body = copy_expr(c, s->body);
	c->stage = NULL;
}

/* List the outputs of the copy in the order the source declares them. */
static void copy_outputs(copier *c)
{
	for (int i = 0; i < c->src->noutputs; i++)
		te_push(&c->dst->arena, (void ***)&c->dst->outputs, &c->dst->noutputs,
			c->dst->stages[c->src->outputs[i]->index]);
}

/* Copy the unbound symbols of "c->src" into "c->dst", and the parameters
 * that remain (inputs, unbound attributes). */
static void copy_symbols_and_params(copier *c)
{
	const tessel_op *src = c->src;
	tessel_op *dst = c->dst;
	for (int i = 0; i < src->nsyms; i++)
		if (!c->given[i])
			te_op_add_sym(dst, src->syms[i]->name, src->syms[i]->is_attr,
				relocate(c, src->syms[i]->loc));
	dst->params = te_arena_alloc(&dst->arena,
		sizeof(te_param) * (size_t)(src->nparams + 1));
	for (int i = 0; i < src->nparams; i++) {
		const te_param *p = &src->params[i];
		if (p->input)
			dst->params[dst->nparams++] =
				(te_param){ dst->stages[p->input->index], NULL };
		else if (!c->given[p->attr->index])
			dst->params[dst->nparams++] =
				(te_param){ NULL, te_op_find_sym(dst, p->attr->name) };
	}
}

/* Match "names" with the symbols of "op" into "values"/"given"; every name
 * must be a symbol, every size bound and positive. */
static int match_bindings(const tessel_op *op, int n, const char *const *names,
	const int64_t *in, int64_t *values, bool *given)
{
	const tessel_loc no_loc = op->loc;
	for (int i = 0; i < n; i++) {
		te_sym *s = te_op_find_sym(op, names[i] ? names[i] : "");
		if (!s)
			return te_error(op->ctx, TESSEL_ERR_NAME, no_loc,
				"op '%s' has no size or attribute '%s'", op->name,
				names[i] ? names[i] : "");
		if (given[s->index])
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"'%s' is bound twice", s->name);
		if (!s->is_attr && in[i] <= 0)
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"size '%s' must be positive, not %lld", s->name,
				(long long)in[i]);
		given[s->index] = true;
		values[s->index] = in[i];
	}
	for (int i = 0; i < op->nsyms; i++)
		if (!given[i])
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"%s '%s' of op '%s' is not bound; give it with --set %s=...",
				op->syms[i]->is_attr ? "attribute" : "size",
				op->syms[i]->name, op->name, op->syms[i]->name);
	return 0;
}

tessel_op *tessel_op_bind(tessel_op *op, int n, const char *const *names,
	const int64_t *values)
{
	if (!op->finished && tessel_op_finish(op))
		return NULL;
	int64_t *vals = calloc((size_t)op->nsyms + 1, sizeof(int64_t));
	bool *given = calloc((size_t)op->nsyms + 1, sizeof(bool));
	tessel_op *dst = NULL;
	if (!vals || !given ||
	    match_bindings(op, n, names, values, vals, given))
		goto done;
	dst = tessel_op_new(op->ctx, op->name);
	if (!dst)
		goto done;
	copier c = { op, dst, vals, given, NULL,
		op->loc.file ? te_arena_strdup(&dst->arena, op->loc.file) : NULL };
	dst->loc = relocate(&c, op->loc);
	for (int i = 0; i < op->nstages; i++)
		copy_stage(&c, op->stages[i]);
	copy_outputs(&c);
	copy_symbols_and_params(&c);
	if (tessel_op_finish(dst)) {
		tessel_op_release(dst);
		dst = NULL;
	}
done:
	free(vals);
	free(given);
	return dst;
}
