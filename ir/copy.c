/* Copying ops: the machinery behind binding (ir/bind.c) and the rewrites
 * schedules make (ir/rewrite.c).  A copy maps every source stage to its
 * copy, optionally replaces symbols by constants, and can redirect the
 * reads of one tensor by chosen readers to another stage. */
#include <stdlib.h>
#include <string.h>

#include "ir/copy.h"

void te_copier_init(te_copier *c, const tessel_op *src, tessel_op *dst,
	const int64_t *values, const bool *given)
{
	memset(c, 0, sizeof(*c));
	c->src = src;
	c->dst = dst;
	c->values = values;
	c->given = given;
	c->file = src->loc.file ? te_arena_strdup(&dst->arena, src->loc.file) : NULL;
	c->map = calloc((size_t)src->nstages + 1, sizeof(tessel_stage *));
	dst->loc = src->loc;
	if (dst->loc.file)
		dst->loc.file = c->file;
}

void te_copier_fini(te_copier *c)
{
	free(c->map);
	c->map = NULL;
}

/* Return the copy a read of "t" in the stage being copied goes to. */
static tessel_stage *copy_target(te_copier *c, const tessel_stage *t)
{
	if (c->redirect_to && t == c->redirect_from && c->stage &&
	    c->redirect_readers[c->stage->index])
		return c->redirect_to;
	return c->map[t->index];
}


/* Return "loc" pointing at the copy's file name, which lives as long as it. */
static tessel_loc relocate(const te_copier *c, tessel_loc loc)
{
	if (loc.file)
		loc.file = c->file;
	return loc;
}


static tessel_var *map_var(te_copier *c, const tessel_var *v, const tessel_stage *owner)
{
	tessel_stage *s = c->map[owner->index];
	return v->is_reduce ? s->raxes[v->index] : s->axes[v->index];
}

tessel_expr *te_copy_expr(te_copier *c, const tessel_expr *e)
{
	if (!e)
		return NULL;
	tessel_expr *d = te_expr_new(c->dst, e->kind, e->loc);
	*d = *e;
	d->loc = relocate(c, e->loc);
	switch (e->kind) {
	case TE_SYM:
		if (c->given && c->given[e->u.sym->index]) {
			d->kind = TE_INT;
			d->u.ival = c->values[e->u.sym->index];
		} else {
			d->u.sym = te_op_find_sym(c->dst, e->u.sym->name);
		}
		break;
	case TE_VAR:
		if (c->subst && c->stage == c->subst_stage) {
			const tessel_var *v = e->u.var;
			return c->subst[v->is_reduce ? c->stage->ndim + v->index : v->index];
		}
		d->u.var = map_var(c, e->u.var, c->stage);
		break;
	case TE_ACCESS:
		d->u.access.tensor = copy_target(c, e->u.access.tensor);
		d->u.access.index = te_arena_alloc(&c->dst->arena,
			sizeof(tessel_expr *) * (size_t)(e->u.access.n + 1));
		for (int i = 0; i < e->u.access.n; i++)
			d->u.access.index[i] = te_copy_expr(c, e->u.access.index[i]);
		break;
	case TE_UNARY:
		d->u.un.a = te_copy_expr(c, e->u.un.a);
		break;
	case TE_BINARY:
		d->u.bin.a = te_copy_expr(c, e->u.bin.a);
		d->u.bin.b = te_copy_expr(c, e->u.bin.b);
		break;
	case TE_SELECT:
		d->u.sel.cond = te_copy_expr(c, e->u.sel.cond);
		d->u.sel.then_ = te_copy_expr(c, e->u.sel.then_);
		d->u.sel.else_ = te_copy_expr(c, e->u.sel.else_);
		break;
	case TE_CAST:
		d->u.cast.a = te_copy_expr(c, e->u.cast.a);
		break;
	default:
		break;
	}
	return d;
}

tessel_expr *te_copy_expr_subst(te_copier *c, const tessel_stage *s,
	tessel_expr *const *subst, const tessel_expr *e)
{
	c->stage = s;
	c->subst_stage = s;
	c->subst = subst;
	tessel_expr *d = te_copy_expr(c, e);
	c->stage = NULL;
	c->subst_stage = NULL;
	c->subst = NULL;
	return d;
}

static tessel_var *copy_var(te_copier *c, const tessel_var *v)
{
	tessel_var *d = te_arena_alloc(&c->dst->arena, sizeof(*d));
	*d = *v;
	d->name = te_arena_strdup(&c->dst->arena, v->name);
	d->loc = relocate(c, v->loc);
	d->lo = te_copy_expr(c, v->lo);
	d->hi = te_copy_expr(c, v->hi);
	d->extent = te_copy_expr(c, v->extent);
	return d;
}

static tessel_var **copy_vars(te_copier *c, tessel_var *const *vars, int n)
{
	tessel_var **d = te_arena_alloc(&c->dst->arena,
		sizeof(tessel_var *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		d[i] = copy_var(c, vars[i]);
	return d;
}

tessel_stage *te_copy_stage(te_copier *c, const tessel_stage *s)
{
	tessel_op *dst = c->dst;
	tessel_stage *d = te_arena_alloc(&dst->arena, sizeof(*d));
	*d = *s;
	d->op = dst;
	d->name = te_arena_strdup(&dst->arena, s->name);
	d->loc = relocate(c, s->loc);
	d->extent = NULL;
	d->index = dst->nstages;
	c->map[s->index] = d;
	d->dims = te_arena_alloc(&dst->arena, sizeof(tessel_expr *) * (size_t)(s->ndim + 1));
	for (int i = 0; i < s->ndim; i++)
		d->dims[i] = te_copy_expr(c, s->dims[i]);
	te_push(&dst->arena, (void ***)&dst->stages, &dst->nstages, d);
	if (s->kind == TE_INPUT) {
		te_push(&dst->arena, (void ***)&dst->inputs, &dst->ninputs, d);
		return d;
	}
	c->stage = s;
	d->axes = copy_vars(c, s->axes, s->ndim);
	d->raxes = copy_vars(c, s->raxes, s->nraxes);
	for (int i = 0; i < s->ndim; i++)
		if (s->axes[i]->extent == s->dims[i])
			d->axes[i]->extent = d->dims[i];
	d->body = te_copy_expr(c, s->body);
	c->stage = NULL;
	return d;
}

void te_copy_outputs(te_copier *c)
{
	for (int i = 0; i < c->src->noutputs; i++)
		te_push(&c->dst->arena, (void ***)&c->dst->outputs, &c->dst->noutputs,
			c->map[c->src->outputs[i]->index]);
}

void te_copy_symbols_and_params(te_copier *c)
{
	const tessel_op *src = c->src;
	tessel_op *dst = c->dst;
	for (int i = 0; i < src->nsyms; i++)
		if (!c->given || !c->given[i])
			te_op_add_sym(dst, src->syms[i]->name, src->syms[i]->is_attr,
				relocate(c, src->syms[i]->loc));
	dst->params = te_arena_alloc(&dst->arena,
		sizeof(te_param) * (size_t)(src->nparams + 1));
	for (int i = 0; i < src->nparams; i++) {
		const te_param *p = &src->params[i];
		if (p->input)
			dst->params[dst->nparams++] =
				(te_param){ c->map[p->input->index], NULL };
		else if (!c->given || !c->given[p->attr->index])
			dst->params[dst->nparams++] =
				(te_param){ NULL, te_op_find_sym(dst, p->attr->name) };
	}
}

