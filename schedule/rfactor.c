/* rfactor: turn one reduction loop into a spatial axis of a new stage.
 *
 *   C[i, j] = sum(k) A[i, k] * B[k, j],  split C.k 16 -> C.ko C.ki,
 *   rfactor C C.ki  gives
 *   C_rf[ki, i, j] = sum(ko) select(ko * 16 + ki < K, A[i, ko * 16 + ki] * B[..], 0)
 *   C[i, j]        = sum(ki) C_rf[ki, i, j]
 *
 * so the partial reductions over "ki" are independent and can run in
 * parallel or as vector lanes, and the final reduction is small.
 *
 * requires: a live reduction loop of a stage at the root, with no stage
 *   computed inside the stage
 * guarantees: the op gains the stage STAGE_rf (axes: the factored loop,
 *   then the stage's axes; reductions: the stage's other reduction loops)
 *   and the stage reduces over the factored loop only; both start from
 *   their default loops, so apply rfactor right after the splits that
 *   make the factored loop */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/copy.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_stage_inside(const sch_state *st, int s);
void sch_fresh_stage_name(const tessel_op *op, const char *base,
	const char *scope, char *buf, size_t len);

/* How the new stage sees the old stage's reduction loops. */
typedef struct rfactor_vars {
	tessel_op *dst;
	const sch_stage *s;
	tessel_stage *rf;
	int factored;               /* the iter that becomes an axis */
	int *raxis_of_leaf;         /* iter -> reduction axis of rf, or -1 */
} rfactor_vars;

/* Return the value of reduction iter "it" of the old stage in terms of the
 * new stage's variables. */
static tessel_expr *iter_expr(rfactor_vars *rv, int it)
{
	const sch_stage *s = rv->s;
	const sch_iter *t = &s->iters[it];
	tessel_op *dst = rv->dst;
	if (t->leaf)
		return tessel_var_ref(dst, it == rv->factored ? rv->rf->axes[0]
			: rv->rf->raxes[rv->raxis_of_leaf[it]]);
	if (t->fused_into >= 0) {
		const sch_iter *f = &s->iters[t->fused_into];
		tessel_expr *fv = iter_expr(rv, t->fused_into);
		tessel_expr *n = tessel_int(dst, s->iters[f->inner].extent);
		return tessel_binary_op(dst, it == f->outer ? TESSEL_DIV : TESSEL_MOD, fv, n);
	}
	return tessel_binary_op(dst, TESSEL_ADD,
		tessel_binary_op(dst, TESSEL_MUL, iter_expr(rv, t->split_outer),
			tessel_int(dst, s->iters[t->split_outer].factor)),
		iter_expr(rv, t->split_inner));
}

/* Return the condition that every split reduction iter of the old stage
 * stays inside its extent, or NULL when the splits all divide. */
static tessel_expr *split_guard(rfactor_vars *rv)
{
	const sch_stage *s = rv->s;
	tessel_expr *g = NULL;
	for (int it = 0; it < s->niters; it++) {
		const sch_iter *t = &s->iters[it];
		if (!t->reduce || t->leaf || t->fused_into >= 0)
			continue;
		const sch_iter *o = &s->iters[t->split_outer];
		if (o->extent * o->factor <= t->extent)
			continue;
		tessel_expr *c = tessel_binary_op(rv->dst, TESSEL_LT, iter_expr(rv, it),
			tessel_int(rv->dst, t->extent));
		g = g ? tessel_binary_op(rv->dst, TESSEL_AND, g, c) : c;
	}
	return g;
}

static tessel_expr *identity(tessel_op *dst, const tessel_stage *t)
{
	bool is_max = t->reduce == TESSEL_RMAX;
	if (t->reduce == TESSEL_SUM || t->reduce == TESSEL_PROD)
		return tessel_dtype_is_float(t->dtype)
			? tessel_float(dst, t->reduce == TESSEL_PROD)
			: tessel_int(dst, t->reduce == TESSEL_PROD);
	if (tessel_dtype_is_float(t->dtype))
		return tessel_float(dst, is_max ? -INFINITY : INFINITY);
	if (t->dtype == TESSEL_BOOL)
		return tessel_bool(dst, !is_max);
	int64_t lo, hi;
	tessel_int_limits(t->dtype, &lo, &hi);
	return tessel_cast(dst, t->dtype, tessel_int(dst, is_max ? lo : hi));
}

/* Build the stage "name" of "dst": the partial reductions of the old
 * stage "s", with the iter "factored" as its first axis. */
static tessel_stage *build_rf(te_copier *c, const sch_stage *s, int factored,
	const char *name)
{
	tessel_op *dst = c->dst;
	const tessel_stage *t = s->te;
	const char *names[TESSEL_MAX_DIMS + 1];
	if (t->ndim + 1 > TESSEL_MAX_DIMS)
		return NULL;
	names[0] = s->iters[factored].name;
	for (int d = 0; d < t->ndim; d++)
		names[d + 1] = t->axes[d]->name;
	tessel_stage *rf = tessel_op_compute(dst, name, t->ndim + 1, names);
	if (!rf)
		return NULL;
	rf->loc = t->loc;
	int *raxis_of_leaf = calloc((size_t)s->niters + 1, sizeof(int));
	for (int p = 0; p < s->nleaves; p++) {
		int it = s->leaves[p];
		raxis_of_leaf[it] = -1;
		if (!s->iters[it].reduce || it == factored)
			continue;
		raxis_of_leaf[it] = rf->nraxes;
		tessel_stage_reduce_axis(rf, s->iters[it].name, tessel_int(dst, 0),
			tessel_int(dst, s->iters[it].extent));
	}
	rfactor_vars rv = { dst, s, rf, factored, raxis_of_leaf };
	tessel_expr **subst = calloc((size_t)(t->ndim + t->nraxes) + 1, sizeof(tessel_expr *));
	for (int d = 0; d < t->ndim; d++)
		subst[d] = tessel_var_ref(dst, rf->axes[d + 1]);
	for (int k = 0; k < t->nraxes; k++)
		subst[t->ndim + k] = tessel_binary_op(dst, TESSEL_ADD,
			te_copy_expr(c, t->raxes[k]->lo), iter_expr(&rv, t->ndim + k));
	tessel_expr *body = te_copy_expr_subst(c, t, subst, t->body);
	tessel_expr *guard = split_guard(&rv);
	if (guard)
		body = tessel_select(dst, guard, body, identity(dst, t));
	tessel_expr *dims[TESSEL_MAX_DIMS + 1];
	dims[0] = tessel_int(dst, s->iters[factored].extent);
	for (int d = 0; d < t->ndim; d++)
		dims[d + 1] = tessel_int(dst, t->extent[d]);
	int r = tessel_stage_set_shape(rf, t->dtype, dims);
	if (r == 0 && rf->nraxes == 0) {
		r = tessel_stage_set_body(rf, TESSEL_REDUCE_NONE, body);
	} else if (r == 0) {
		r = tessel_stage_set_body(rf, t->reduce, body);
	}
	free(subst);
	free(raxis_of_leaf);
	return r ? NULL : rf;
}

/* Build the stage that replaces "s": its reduction over the factored axis
 * of "rf". */
static tessel_stage *build_final(tessel_op *dst, const sch_stage *s, int factored,
	tessel_stage *rf)
{
	const tessel_stage *t = s->te;
	const char *names[TESSEL_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++)
		names[d] = t->axes[d]->name;
	tessel_stage *w = tessel_op_compute(dst, t->name, t->ndim, names);
	if (!w)
		return NULL;
	w->loc = t->loc;
	w->is_output = t->is_output;
	int64_t n = s->iters[factored].extent;
	tessel_var *l = tessel_stage_reduce_axis(w, s->iters[factored].name,
		tessel_int(dst, 0), tessel_int(dst, n));
	tessel_expr *index[TESSEL_MAX_DIMS + 1], *dims[TESSEL_MAX_DIMS];
	index[0] = tessel_var_ref(dst, l);
	for (int d = 0; d < t->ndim; d++) {
		index[d + 1] = tessel_var_ref(dst, w->axes[d]);
		dims[d] = tessel_int(dst, t->extent[d]);
	}
	if (!l || tessel_stage_set_shape(w, t->dtype, dims) ||
	    tessel_stage_set_body(w, t->reduce, tessel_access(dst, rf, t->ndim + 1, index)))
		return NULL;
	return w;
}

static tessel_op *rewrite(sch_state *st, const sch_stage *s, int factored,
	const char *name)
{
	const tessel_op *op = st->op;
	tessel_op *dst = tessel_op_new(op->ctx, op->name);
	te_copier c;
	te_copier_init(&c, op, dst, NULL, NULL);
	bool ok = true;
	for (int i = 0; i < op->nstages && ok; i++) {
		if (op->stages[i] != s->te) {
			te_copy_stage(&c, op->stages[i]);
			continue;
		}
		tessel_stage *rf = build_rf(&c, s, factored, name);
		tessel_stage *w = rf ? build_final(dst, s, factored, rf) : NULL;
		ok = w != NULL;
		if (ok)
			c.map[i] = w;
	}
	if (ok) {
		te_copy_outputs(&c);
		te_copy_symbols_and_params(&c);
	}
	te_copier_fini(&c);
	if (!ok || tessel_op_finish(dst)) {
		tessel_op_release(dst);
		return NULL;
	}
	return dst;
}

int sch_rfactor(sch_state *st, const char *loop)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	const sch_stage *s = &st->stages[si];
	if (!s->iters[it].reduce)
		return sch_refuse(st, "rfactor %s: not a reduction loop", loop);
	if (s->attach != SCH_ROOT)
		return sch_refuse(st, "rfactor %s: '%s' is not computed at the root",
			loop, s->name);
	int inside = sch_stage_inside(st, si);
	if (inside >= 0)
		return sch_refuse(st, "rfactor %s: stage '%s' is computed inside '%s'",
			loop, st->stages[inside].name, s->name);
	char name[SCH_NAME_MAX], stage[SCH_NAME_MAX];
	snprintf(stage, sizeof(stage), "%s", s->name);
	sch_fresh_stage_name(st->op, stage, "rf", name, sizeof(name));
	tessel_op *op = rewrite(st, s, it, name);
	if (!op)
		return sch_refuse(st, "rfactor %s: %s", loop, tessel_ctx_error(st->ctx)->message);
	sch_state_rebase(st, op, stage);
	sch_step step;
	sch_step_init(&step, "rfactor");
	sch_step_arg(&step, "%s", loop);
	sch_step_out(&step, "%s", name);
	sch_trace_append(st->trace, &step);
	return 0;
}
