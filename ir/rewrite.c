/* Rewrites of ops that schedules make: a stage written through a cache,
 * a tensor read through a cache, a stage stored in another axis order or
 * with an axis split in two.
 * Each returns a new op (finished, bound when the source is) and leaves
 * the source unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/copy.h"
#include "ir/rewrite.h"

/* Add to "dst" the compute stage "name" that copies "t" element by element
 * (its dtype, the shape "extent"), with index variables named after
 * "like"'s when it has them. */
static tessel_stage *add_copy_stage(tessel_op *dst, const char *name,
	tessel_stage *t, const int64_t *extent, const tessel_stage *like,
	tessel_loc loc)
{
	char names[TESSEL_MAX_DIMS][32];
	const char *axis_names[TESSEL_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++) {
		if (like && like->kind == TE_COMPUTE)
			snprintf(names[d], sizeof(names[d]), "%.31s", like->axes[d]->name);
		else
			snprintf(names[d], sizeof(names[d]), "ax%d", d);
		axis_names[d] = names[d];
	}
	tessel_stage *s = tessel_op_compute(dst, name, t->ndim, axis_names);
	if (!s)
		return NULL;
	s->loc = loc;
	tessel_expr *index[TESSEL_MAX_DIMS], *dims[TESSEL_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++) {
		index[d] = tessel_var_ref(dst, s->axes[d]);
		dims[d] = tessel_int(dst, extent[d]);
	}
	if (tessel_stage_set_shape(s, t->dtype, dims) ||
	    tessel_stage_set_body(s, TESSEL_REDUCE_NONE,
		    tessel_access(dst, t, t->ndim, index)))
		return NULL;
	return s;
}

static tessel_op *finish_copy(te_copier *c, tessel_op *dst, bool ok)
{
	if (ok) {
		te_copy_outputs(c);
		te_copy_symbols_and_params(c);
	}
	te_copier_fini(c);
	if (!ok || tessel_op_finish(dst)) {
		tessel_op_release(dst);
		return NULL;
	}
	return dst;
}

tessel_op *te_op_cache_write(const tessel_op *op, const tessel_stage *s,
	const char *name)
{
	if (!op->bound || s->kind != TE_COMPUTE) {
		te_error(op->ctx, TESSEL_ERR_VALUE, s->loc,
			"cache_write needs a computed stage of a bound op");
		return NULL;
	}
	tessel_op *dst = tessel_op_new(op->ctx, op->name);
	te_copier c;
	te_copier_init(&c, op, dst, NULL, NULL);
	bool ok = true;
	for (int i = 0; i < op->nstages && ok; i++) {
		tessel_stage *t = te_copy_stage(&c, op->stages[i]);
		if (op->stages[i] != s)
			continue;
		t->name = te_arena_strdup(&dst->arena, name);
		t->is_output = false;
		t->explicit_shape = true;
		tessel_stage *w = add_copy_stage(dst, s->name, t, s->extent, s, s->loc);
		ok = w != NULL;
		if (ok) {
			w->is_output = s->is_output;
			c.map[s->index] = w;
		}
	}
	return finish_copy(&c, dst, ok);
}

tessel_op *te_op_cache_read(const tessel_op *op, const tessel_stage *t,
	const char *name, const bool *readers)
{
	if (!op->bound) {
		te_error(op->ctx, TESSEL_ERR_VALUE, t->loc, "cache_read needs a bound op");
		return NULL;
	}
	tessel_op *dst = tessel_op_new(op->ctx, op->name);
	te_copier c;
	te_copier_init(&c, op, dst, NULL, NULL);
	c.redirect_from = t;
	c.redirect_readers = readers;
	bool ok = true;
	for (int i = 0; i < op->nstages && ok; i++) {
		tessel_stage *copied = te_copy_stage(&c, op->stages[i]);
		if (op->stages[i] != t)
			continue;
		c.redirect_to = add_copy_stage(dst, name, copied, t->extent, NULL, t->loc);
		ok = c.redirect_to != NULL;
	}
	return finish_copy(&c, dst, ok);
}

typedef struct storage_perm {
	const tessel_stage *t;
	const int *perm;
} storage_perm;

static int permute_access(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	const storage_perm *p = user;
	if (access->u.access.tensor != p->t)
		return 0;
	tessel_expr *old[TESSEL_MAX_DIMS];
	int n = access->u.access.n;
	memcpy(old, access->u.access.index, sizeof(tessel_expr *) * (size_t)n);
	for (int d = 0; d < n; d++)
		access->u.access.index[d] = old[p->perm[d]];
	return 0;
}

tessel_op *te_op_reorder_storage(const tessel_op *op, const tessel_stage *s,
	const int *perm)
{
	if (!op->bound || s->kind != TE_COMPUTE || s->is_output) {
		te_error(op->ctx, TESSEL_ERR_VALUE, s->loc,
			"reorder_storage needs a computed stage of a bound op that is "
			"not an output");
		return NULL;
	}
	tessel_op *dst = tessel_op_new(op->ctx, op->name);
	te_copier c;
	te_copier_init(&c, op, dst, NULL, NULL);
	tessel_stage *moved = NULL;
	for (int i = 0; i < op->nstages; i++) {
		tessel_stage *t = te_copy_stage(&c, op->stages[i]);
		if (op->stages[i] == s)
			moved = t;
	}
	tessel_var *axes[TESSEL_MAX_DIMS];
	tessel_expr *dims[TESSEL_MAX_DIMS];
	for (int d = 0; d < s->ndim; d++) {
		axes[d] = moved->axes[perm[d]];
		dims[d] = moved->dims[perm[d]];
	}
	for (int d = 0; d < s->ndim; d++) {
		moved->axes[d] = axes[d];
		moved->axes[d]->index = d;
		moved->dims[d] = dims[d];
	}
	moved->explicit_shape = true;
	storage_perm p = { moved, perm };
	for (int i = 0; i < dst->nstages; i++)
		if (dst->stages[i]->kind == TE_COMPUTE)
			te_visit_accesses(dst->stages[i]->body, false, permute_access, &p);
	return finish_copy(&c, dst, true);
}

typedef struct storage_split {
	const tessel_stage *t;
	int axis;
	int64_t factor;
	tessel_op *op;
} storage_split;

static int split_access(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	const storage_split *p = user;
	if (access->u.access.tensor != p->t)
		return 0;
	int n = access->u.access.n;
	tessel_expr **index = te_arena_alloc(&p->op->arena,
		sizeof(tessel_expr *) * (size_t)(n + 2));
	for (int d = 0, k = 0; d < n; d++) {
		tessel_expr *e = access->u.access.index[d];
		if (d != p->axis) {
			index[k++] = e;
			continue;
		}
		index[k++] = tessel_binary_op(p->op, TESSEL_DIV, e,
			tessel_int(p->op, p->factor));
		index[k++] = tessel_binary_op(p->op, TESSEL_MOD, e,
			tessel_int(p->op, p->factor));
	}
	access->u.access.index = index;
	access->u.access.n = n + 1;
	return 0;
}

/* Add to "c"'s copy the stage "s" with its axis "axis" split into two
 * of extents extent / "factor" and "factor", named after it with "o" and
 * "i": the element [.., o, i, ..] is the one "s" computes at
 * [.., o * factor + i, ..]. */
static tessel_stage *add_split_stage(te_copier *c, const tessel_stage *s, int axis,
	int64_t factor)
{
	tessel_op *dst = c->dst;
	char names[TESSEL_MAX_DIMS][40];
	const char *axis_names[TESSEL_MAX_DIMS];
	int64_t extent[TESSEL_MAX_DIMS];
	for (int d = 0, k = 0; d < s->ndim; d++) {
		if (d == axis) {
			snprintf(names[k], sizeof(names[k]), "%.30so", s->axes[d]->name);
			extent[k++] = s->extent[d] / factor;
			snprintf(names[k], sizeof(names[k]), "%.30si", s->axes[d]->name);
			extent[k++] = factor;
		} else {
			snprintf(names[k], sizeof(names[k]), "%.30s", s->axes[d]->name);
			extent[k++] = s->extent[d];
		}
	}
	for (int d = 0; d <= s->ndim; d++)
		axis_names[d] = names[d];
	tessel_stage *t = tessel_op_compute(dst, s->name, s->ndim + 1, axis_names);
	if (!t)
		return NULL;
	t->loc = s->loc;
	c->map[s->index] = t;
	tessel_expr *dims[TESSEL_MAX_DIMS], *subst[TESSEL_MAX_DIMS];
	for (int d = 0; d <= s->ndim; d++)
		dims[d] = tessel_int(dst, extent[d]);
	for (int d = 0; d < s->ndim; d++) {
		int k = d + (d > axis);
		subst[d] = tessel_var_ref(dst, t->axes[k]);
		if (d == axis)
			subst[d] = tessel_binary_op(dst, TESSEL_ADD, tessel_binary_op(dst,
				TESSEL_MUL, subst[d], tessel_int(dst, factor)),
				tessel_var_ref(dst, t->axes[k + 1]));
	}
	tessel_expr *body = te_copy_expr_subst(c, s, subst, s->body);
	if (tessel_stage_set_shape(t, s->dtype, dims) ||
	    tessel_stage_set_body(t, TESSEL_REDUCE_NONE, body))
		return NULL;
	return t;
}

tessel_op *te_op_split_storage(const tessel_op *op, const tessel_stage *s, int axis,
	int64_t factor)
{
	if (!op->bound || s->kind != TE_COMPUTE || s->is_output || s->nraxes ||
	    s->ndim >= TESSEL_MAX_DIMS || axis < 0 || axis >= s->ndim || factor < 1 ||
	    s->extent[axis] % factor) {
		te_error(op->ctx, TESSEL_ERR_VALUE, s->loc,
			"split_storage needs a computed stage of a bound op that is not "
			"an output, reduces nothing, has fewer than %d axes, and an "
			"axis whose extent the factor divides", TESSEL_MAX_DIMS);
		return NULL;
	}
	tessel_op *dst = tessel_op_new(op->ctx, op->name);
	te_copier c;
	te_copier_init(&c, op, dst, NULL, NULL);
	bool ok = true;
	tessel_stage *split = NULL;
	for (int i = 0; i < op->nstages && ok; i++) {
		if (op->stages[i] != s)
			te_copy_stage(&c, op->stages[i]);
		else
			ok = (split = add_split_stage(&c, s, axis, factor)) != NULL;
	}
	storage_split p = { split, axis, factor, dst };
	for (int i = 0; i < dst->nstages && ok; i++)
		if (dst->stages[i]->kind == TE_COMPUTE && dst->stages[i] != split)
			te_visit_accesses(dst->stages[i]->body, false, split_access, &p);
	return finish_copy(&c, dst, ok);
}
