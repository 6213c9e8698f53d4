/* The schedule state: creation, lookup of stages and loops by name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/state.h"
#include "schedule/trace.h"

int sch_refuse(sch_state *st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return te_error(st->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
		"%s", msg);
}

int sch_add_iter(sch_state *st, sch_stage *s, const sch_iter *it)
{
	sch_iter *grown = realloc(s->iters, sizeof(sch_iter) * (size_t)(s->niters + 1));
	if (!grown) {
		te_error(st->ctx, TESSEL_ERR_LIMIT, (tessel_loc){ NULL, 0, 0 },
			"out of memory");
		abort();
	}
	s->iters = grown;
	s->iters[s->niters] = *it;
	return s->niters++;
}

static void add_axis(sch_state *st, sch_stage *s, const tessel_var *v, int axis,
	int64_t extent)
{
	sch_iter it = { 0 };
	snprintf(it.name, sizeof(it.name), "%s", v->name);
	it.extent = extent;
	it.reduce = v->is_reduce;
	it.leaf = true;
	it.origin = SCH_AXIS;
	it.axis = axis;
	it.parent = it.outer = it.inner = it.fused_into = -1;
	it.split_outer = it.split_inner = -1;
	it.kind = LOOP_SERIAL;
	s->leaves[s->nleaves++] = sch_add_iter(st, s, &it);
}

static int64_t var_extent(const tessel_var *v)
{
	int64_t n = 0;
	te_expr_const_int(v->extent, &n);
	return n;
}

static void init_stage(sch_state *st, sch_stage *s, tessel_stage *te)
{
	s->te = te;
	s->name = te->name;
	s->attach = SCH_ROOT;
	s->attach_stage = s->attach_iter = -1;
	s->scope = LOOP_GLOBAL;
	s->init_iter = -1;
	s->leaves = calloc((size_t)(te->ndim + te->nraxes + 1), sizeof(int));
	for (int i = 0; i < te->ndim; i++)
		add_axis(st, s, te->axes[i], i, te->extent[i]);
	for (int i = 0; i < te->nraxes; i++)
		add_axis(st, s, te->raxes[i], te->ndim + i, var_extent(te->raxes[i]));
}

bool sch_stage_is_default(const sch_stage *s)
{
	int naxes = s->te->ndim + s->te->nraxes;
	if (s->niters != naxes || s->nleaves != naxes || s->stream)
		return false;
	for (int i = 0; i < naxes; i++)
		if (s->leaves[i] != i || s->iters[i].kind != LOOP_SERIAL ||
		    s->iters[i].unroll_limit || s->iters[i].min_blocks ||
		    s->iters[i].dot_group || s->iters[i].prefetch[0])
			return false;
	return true;
}

static int old_index_by_name(const sch_state *st, const char *name)
{
	for (int i = 0; i < st->nstages; i++)
		if (strcmp(st->stages[i].name, name) == 0)
			return i;
	return -1;
}

void sch_state_rebase(sch_state *st, tessel_op *op, const char *reset)
{
	sch_shared_memo_clear(st);
	sch_stage *stages = calloc((size_t)op->nstages + 1, sizeof(sch_stage));
	int n = 0, *old_to_new = calloc((size_t)st->nstages + 1, sizeof(int));
	for (int i = 0; i < st->nstages; i++)
		old_to_new[i] = -1;
	for (int i = 0; i < op->nstages; i++) {
		tessel_stage *te = op->stages[i];
		if (te->kind != TE_COMPUTE)
			continue;
		int old = old_index_by_name(st, te->name);
		if (old >= 0 && strcmp(te->name, reset) != 0) {
			stages[n] = st->stages[old];
			stages[n].te = te;
			stages[n].name = te->name;
			st->stages[old].iters = NULL;
			st->stages[old].leaves = NULL;
		} else {
			init_stage(st, &stages[n], te);
		}
		if (old >= 0)
			old_to_new[old] = n;
		n++;
	}
	for (int i = 0; i < n; i++)
		if (sch_is_attached(&stages[i]))
			stages[i].attach_stage = old_to_new[stages[i].attach_stage];
	for (int i = 0; i < st->nstages; i++) {
		free(st->stages[i].iters);
		free(st->stages[i].leaves);
	}
	free(st->stages);
	free(old_to_new);
	st->stages = stages;
	st->nstages = n;
	tessel_op_release(st->op);
	st->op = op;
}

sch_state *sch_state_new(tessel_ctx *ctx, tessel_op *op)
{
	if (!op->bound) {
		te_error(ctx, TESSEL_ERR_VALUE, op->loc,
			"op '%s' has unbound sizes; bind them before scheduling",
			op->name);
		return NULL;
	}
	sch_state *st = calloc(1, sizeof(*st));
	st->ctx = ctx;
	st->op = tessel_op_retain(op);
	st->stages = calloc((size_t)op->nstages + 1, sizeof(sch_stage));
	for (int i = 0; i < op->nstages; i++)
		if (op->stages[i]->kind == TE_COMPUTE)
			init_stage(st, &st->stages[st->nstages++], op->stages[i]);
	st->trace = sch_trace_new();
	return st;
}

void sch_state_free(sch_state *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->nstages; i++) {
		free(st->stages[i].iters);
		free(st->stages[i].leaves);
	}
	free(st->stages);
	sch_trace_free(st->trace);
	sch_shared_memo_clear(st);
	tessel_op_release(st->op);
	free(st);
}

int sch_find_stage(sch_state *st, const char *name)
{
	for (int i = 0; i < st->nstages; i++)
		if (strcmp(st->stages[i].name, name) == 0)
			return i;
	if (te_op_find_stage(st->op, name))
		return sch_refuse(st, "'%s' is an input; only computed stages are scheduled",
			name);
	return sch_refuse(st, "no stage '%s'", name);
}

static int find_iter(const sch_stage *s, const char *name)
{
	for (int i = 0; i < s->niters; i++)
		if (strcmp(s->iters[i].name, name) == 0)
			return i;
	return -1;
}

void sch_snapshot_take(const sch_state *st, sch_snapshot *snap)
{
	snap->nstages = st->nstages;
	snap->nsteps = st->trace->nsteps;
	snap->stages = calloc((size_t)st->nstages + 1, sizeof(sch_stage));
	for (int i = 0; i < st->nstages; i++) {
		const sch_stage *s = &st->stages[i];
		sch_stage *c = &snap->stages[i];
		*c = *s;
		c->iters = malloc(sizeof(sch_iter) * (size_t)(s->niters + 1));
		c->leaves = malloc(sizeof(int) * (size_t)(s->nleaves + 1));
		if (s->niters)
			memcpy(c->iters, s->iters, sizeof(sch_iter) * (size_t)s->niters);
		if (s->nleaves)
			memcpy(c->leaves, s->leaves, sizeof(int) * (size_t)s->nleaves);
	}
}

void sch_snapshot_free(sch_snapshot *snap)
{
	for (int i = 0; snap->stages && i < snap->nstages; i++) {
		free(snap->stages[i].iters);
		free(snap->stages[i].leaves);
	}
	free(snap->stages);
	snap->stages = NULL;
}

void sch_snapshot_restore(sch_state *st, sch_snapshot *snap)
{
	for (int i = 0; i < st->nstages; i++) {
		free(st->stages[i].iters);
		free(st->stages[i].leaves);
	}
	free(st->stages);
	st->stages = snap->stages;
	st->nstages = snap->nstages;
	st->trace->nsteps = snap->nsteps;
	snap->stages = NULL;
}

int sch_stage_after(const sch_state *st, int s)
{
	for (int k = 0; k < st->nstages; k++)
		if (st->stages[k].attach == SCH_AFTER && st->stages[k].attach_stage == s)
			return k;
	return -1;
}

int sch_colocated_producer(const sch_state *st, int s)
{
	const sch_stage *ss = &st->stages[s];
	if (ss->attach != SCH_AT)
		return -1;
	for (int k = 0; k < st->nstages; k++) {
		const sch_stage *ks = &st->stages[k];
		if (k != s && ks->attach == SCH_AT && ks->attach_stage == ss->attach_stage &&
		    ks->attach_iter == ss->attach_iter && sch_reads(st, s, k))
			return k;
	}
	return -1;
}

bool sch_computed_within(const sch_state *st, int k, int c, int it)
{
	const sch_stage *ks = &st->stages[k], *cs = &st->stages[c];
	if (ks->attach != SCH_AT || ks->attach_stage != c)
		return false;
	int at = sch_leaf_pos(cs, it), in = sch_leaf_pos(cs, ks->attach_iter);
	return at >= 0 && in >= at;
}

int sch_reader_outside(const sch_state *st, int p)
{
	const sch_stage *ps = &st->stages[p];
	if (ps->attach != SCH_AT)
		return -1;
	for (int k = 0; k < st->nstages; k++)
		if (k != p && k != ps->attach_stage && st->stages[k].attach != SCH_INLINE &&
		    !sch_computed_within(st, k, ps->attach_stage, ps->attach_iter) &&
		    sch_reads(st, k, p))
			return k;
	return -1;
}

bool sch_name_used(const sch_stage *s, const char *name)
{
	return find_iter(s, name) >= 0;
}

int sch_find_loop(sch_state *st, const char *qualified, int *stage, int *iter)
{
	const char *dot = strrchr(qualified, '.');
	if (!dot || dot == qualified || !dot[1])
		return sch_refuse(st, "'%s' is not a loop name (STAGE.LOOP)", qualified);
	char name[SCH_NAME_MAX * 2];
	snprintf(name, sizeof(name), "%.*s", (int)(dot - qualified), qualified);
	int s = sch_find_stage(st, name);
	if (s < 0)
		return -1;
	int it = find_iter(&st->stages[s], dot + 1);
	if (it < 0)
		return sch_refuse(st, "stage '%s' has no loop '%s'", name, dot + 1);
	if (!st->stages[s].iters[it].leaf)
		return sch_refuse(st, "loop '%s' no longer exists (it was split or fused)",
			qualified);
	*stage = s;
	*iter = it;
	return 0;
}

int sch_find_axis(sch_state *st, const char *what, const char *qualified,
	int *stage, int *axis)
{
	const char *dot = strrchr(qualified, '.');
	if (!dot || dot == qualified || !dot[1])
		return sch_refuse(st, "%s: '%s' is not an axis name (STAGE.AXIS)", what,
			qualified);
	char name[SCH_NAME_MAX * 2];
	snprintf(name, sizeof(name), "%.*s", (int)(dot - qualified), qualified);
	int s = sch_find_stage(st, name);
	if (s < 0)
		return -1;
	const sch_stage *ss = &st->stages[s];
	for (int it = 0; it < ss->niters; it++)
		if (ss->iters[it].origin == SCH_AXIS && !ss->iters[it].reduce &&
		    strcmp(ss->iters[it].name, dot + 1) == 0) {
			*stage = s;
			*axis = ss->iters[it].axis;
			return 0;
		}
	return sch_refuse(st, "%s: stage '%s' has no axis '%s' (its axes are its "
		"index variables)", what, name, dot + 1);
}

int sch_leaf_pos(const sch_stage *s, int iter)
{
	for (int i = 0; i < s->nleaves; i++)
		if (s->leaves[i] == iter)
			return i;
	return -1;
}

int sch_stage_of(const sch_state *st, const tessel_stage *te)
{
	for (int i = 0; i < st->nstages; i++)
		if (st->stages[i].te == te)
			return i;
	return -1;
}

/* Return true when "e" reads "producer" directly or through an inlined
 * stage of "st". */
static bool expr_reads(const sch_state *st, const tessel_expr *e,
	const tessel_stage *producer)
{
	switch (e->kind) {
	case TE_ACCESS: {
		const tessel_stage *t = e->u.access.tensor;
		for (int i = 0; i < e->u.access.n; i++)
			if (expr_reads(st, e->u.access.index[i], producer))
				return true;
		if (t == producer)
			return true;
		int s = sch_stage_of(st, t);
		return s >= 0 && st->stages[s].attach == SCH_INLINE &&
		       expr_reads(st, t->body, producer);
	}
	case TE_UNARY:
		return expr_reads(st, e->u.un.a, producer);
	case TE_BINARY:
		return expr_reads(st, e->u.bin.a, producer) ||
		       expr_reads(st, e->u.bin.b, producer);
	case TE_SELECT:
		return expr_reads(st, e->u.sel.cond, producer) ||
		       expr_reads(st, e->u.sel.then_, producer) ||
		       expr_reads(st, e->u.sel.else_, producer);
	case TE_CAST:
		return expr_reads(st, e->u.cast.a, producer);
	default:
		return false;
	}
}

bool sch_reads(const sch_state *st, int consumer, int producer)
{
	return sch_reads_tensor(st, consumer, st->stages[producer].te);
}

bool sch_reads_tensor(const sch_state *st, int consumer, const tessel_stage *t)
{
	return expr_reads(st, st->stages[consumer].te->body, t);
}

tessel_dtype sch_buffer_dtype(const tessel_stage *t)
{
	bool halves = t->dtype == TESSEL_F16 || t->dtype == TESSEL_BF16;
	return t->reduce != TESSEL_REDUCE_NONE && halves ? TESSEL_F32 : t->dtype;
}
