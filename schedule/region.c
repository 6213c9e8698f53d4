/* Regions with ISL: the elements of a producer that one iteration of a
 * consumer's loop reads (through inlined stages), as a box whose bounds
 * are piecewise quasi-affine functions of the enclosing loops.
 *
 *   R(q, o) = { p : exists a : a in domain(consumer), leaf_j(a) = q_j for
 *               j <= pos, p = index(a) for some read of the producer }
 *             union, for each stage S computed at the same loop that reads
 *             the producer, { p : exists s in box(R_S(q, o)), p read by
 *             computing S[s] }
 *                 intersected with the producer's domain
 *   lo_d = min_d R, hi_d = max_d R, shape_d = max over q, o of hi - lo + 1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/space.h>
#include <isl/set.h>
#include <isl/val.h>

#include "ir/isl_budget.h"
#include "ir/isl_text.h"
#include "ir/memo.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/region.h"

/* ISL text of the variables of the stage whose body is walked. */
typedef struct text_env {
	const tessel_stage *te;
	char vars[2 * TESSEL_MAX_DIMS + 64][128];
} text_env;

typedef struct region_walk {
	sch_state *st;
	const tessel_stage *producer;
	const char *context;       /* "[params] -> { [p..] : exists (a.. : ", or
	                            * "{ [a..] -> [p..] : exists (r.. : " */
	bool map;                  /* the context is a map's: the region is a
	                            * wrapped map from reader to producer */
	isl_set *region;
	const char *failure;       /* why a read is not affine, or NULL */
} region_walk;

/* Write "e", an index expression, to "sb" in ISL syntax under "env";
 * false when it is not quasi-affine. */
static bool index_text(const text_env *env, const tessel_expr *e, te_strbuf *sb)
{
	int64_t c;
	switch (e->kind) {
	case TE_INT:
		te_sb_printf(sb, "(%lld)", (long long)e->u.ival);
		return true;
	case TE_VAR: {
		const tessel_var *v = e->u.var;
		int k = v->is_reduce ? env->te->ndim + v->index : v->index;
		te_sb_printf(sb, "(%s)", env->vars[k]);
		return true;
	}
	case TE_UNARY:
		if (e->u.un.op != TESSEL_NEG)
			return false;
		te_sb_puts(sb, "(-");
		bool ok = index_text(env, e->u.un.a, sb);
		te_sb_puts(sb, ")");
		return ok;
	case TE_BINARY:
		break;
	default:
		return false;
	}
	const tessel_expr *a = e->u.bin.a, *b = e->u.bin.b;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
	case TESSEL_SUB:
		te_sb_puts(sb, "(");
		if (!index_text(env, a, sb))
			return false;
		te_sb_puts(sb, e->u.bin.op == TESSEL_ADD ? " + " : " - ");
		if (!index_text(env, b, sb))
			return false;
		te_sb_puts(sb, ")");
		return true;
	case TESSEL_MUL:
		if (te_expr_const_int(a, &c)) {
			const tessel_expr *t = a;
			a = b;
			b = t;
		}
		if (!te_expr_const_int(b, &c))
			return false;
		te_sb_printf(sb, "(%lld * ", (long long)c);
		if (!index_text(env, a, sb))
			return false;
		te_sb_puts(sb, ")");
		return true;
	case TESSEL_DIV:
	case TESSEL_MOD:
		if (!te_expr_const_int(b, &c) || c <= 0)
			return false;
		te_sb_puts(sb, e->u.bin.op == TESSEL_DIV ? "floor((" : "((");
		if (!index_text(env, a, sb))
			return false;
		te_sb_printf(sb, e->u.bin.op == TESSEL_DIV ? ")/%lld)" : ") mod %lld)",
			(long long)c);
		return true;
	default:
		return false;
	}
}

static void walk_reads(region_walk *w, const text_env *env, const tessel_expr *e);

/* Add the elements of the producer read by the access "e" to the region. */
static void add_read(region_walk *w, const text_env *env, const tessel_expr *e)
{
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, w->context);
	for (int d = 0; d < e->u.access.n; d++) {
		te_sb_printf(&sb, " and p%d = ", d);
		if (!index_text(env, e->u.access.index[d], &sb)) {
			w->failure = "an index of the read is not affine";
			te_sb_free(&sb);
			return;
		}
	}
	te_sb_puts(&sb, ") }");
	tessel_ctx *ctx = w->st->ctx;
	isl_set *s = w->map ? isl_map_wrap(te_isl_read_map(ctx, te_sb_str(&sb))) :
		te_isl_read_set(ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	if (!s) {
		w->failure = "ISL rejected the read";
		return;
	}
	w->region = w->region ? isl_set_union(w->region, s) : s;
}

/* Walk the body of the inlined stage read by "e", its axes bound to the
 * access's indices. */
static void walk_inlined(region_walk *w, const text_env *env, const tessel_expr *e)
{
	const tessel_stage *t = e->u.access.tensor;
	text_env *inner = calloc(1, sizeof(*inner));
	inner->te = t;
	for (int d = 0; d < e->u.access.n; d++) {
		te_strbuf sb = { 0 };
		if (!index_text(env, e->u.access.index[d], &sb) || sb.len >= 127)
			w->failure = "an index into an inlined stage is not affine";
		snprintf(inner->vars[d], sizeof(inner->vars[d]), "%s", te_sb_str(&sb));
		te_sb_free(&sb);
	}
	if (!w->failure)
		walk_reads(w, inner, t->body);
	free(inner);
}

static void walk_reads(region_walk *w, const text_env *env, const tessel_expr *e)
{
	if (w->failure)
		return;
	switch (e->kind) {
	case TE_ACCESS: {
		for (int i = 0; i < e->u.access.n; i++)
			walk_reads(w, env, e->u.access.index[i]);
		const tessel_stage *t = e->u.access.tensor;
		int s = sch_stage_of(w->st, t);
		if (t == w->producer)
			add_read(w, env, e);
		else if (s >= 0 && w->st->stages[s].attach == SCH_INLINE)
			walk_inlined(w, env, e);
		return;
	}
	case TE_UNARY:
		walk_reads(w, env, e->u.un.a);
		return;
	case TE_BINARY:
		walk_reads(w, env, e->u.bin.a);
		walk_reads(w, env, e->u.bin.b);
		return;
	case TE_SELECT:
		walk_reads(w, env, e->u.sel.cond);
		walk_reads(w, env, e->u.sel.then_);
		walk_reads(w, env, e->u.sel.else_);
		return;
	case TE_CAST:
		walk_reads(w, env, e->u.cast.a);
		return;
	default:
		return;
	}
}

/* Return whether iter "it" of "c" is fixed by the loops at nest positions
 * up to "pos" (a leaf among them, a split iter whose two halves are, an
 * iter fused into a fixed one). */
static bool fixed(const sch_stage *c, int it, int pos)
{
	const sch_iter *t = &c->iters[it];
	if (t->leaf)
		return sch_leaf_pos(c, it) <= pos;
	if (t->fused_into >= 0)
		return fixed(c, t->fused_into, pos);
	return fixed(c, t->split_outer, pos) && fixed(c, t->split_inner, pos);
}

bool sch_region_param(const sch_stage *c, int it, int pos)
{
	const sch_iter *t = &c->iters[it];
	if (t->origin == SCH_FUSED || !fixed(c, it, pos))
		return false;
	return t->origin == SCH_AXIS || !fixed(c, t->parent, pos);
}

/* Write "[q.., o..] -> { [p0, ..] : exists (x0, .. : constraints" for the
 * consumer "c" and its nest position "pos".  Every loop of the consumer is
 * a variable x<k> related to the others affinely (split: parent = outer *
 * factor + inner; fuse: fused = outer * extent + inner), and the loops the
 * outer loops fix, nearest the axes, are the parameters q<k>: so the region
 * comes out affine in them, without the floors and remainders of the
 * loops themselves. */
static void context_text(const sch_stage *c, bool attached, int pos, int pdim,
	te_strbuf *sb)
{
	te_sb_puts(sb, "[");
	bool first = true;
	for (int k = 0; k < c->niters; k++)
		if (sch_region_param(c, k, pos)) {
			te_sb_printf(sb, "%sq%d", first ? "" : ", ", k);
			first = false;
		}
	for (int d = 0; attached && d < c->te->ndim; d++) {
		te_sb_printf(sb, "%so%d", first ? "" : ", ", d);
		first = false;
	}
	te_sb_puts(sb, "] -> { [");
	for (int d = 0; d < pdim; d++)
		te_sb_printf(sb, "%sp%d", d ? ", " : "", d);
	te_sb_puts(sb, "] : exists (");
	for (int k = 0; k < c->niters; k++)
		te_sb_printf(sb, "%sx%d", k ? ", " : "", k);
	te_sb_puts(sb, " : (0 = 0)");
	for (int k = 0; k < c->niters; k++) {
		const sch_iter *t = &c->iters[k];
		te_sb_printf(sb, " and 0 <= x%d < %lld", k, (long long)t->extent);
		if (!t->leaf && t->fused_into < 0)
			te_sb_printf(sb, " and x%d = %lld * x%d + x%d", k,
				(long long)c->iters[t->split_outer].factor, t->split_outer,
				t->split_inner);
		if (t->origin == SCH_FUSED)
			te_sb_printf(sb, " and x%d = %lld * x%d + x%d", k,
				(long long)c->iters[t->inner].extent, t->outer, t->inner);
		if (sch_region_param(c, k, pos))
			te_sb_printf(sb, " and x%d = q%d", k, k);
	}
	for (int d = 0; attached && d < c->te->ndim; d++)
		te_sb_printf(sb, " and 0 <= o%d + x%d < %lld", d, d,
			(long long)c->te->extent[d]);
}

static void consumer_env(const sch_stage *c, bool attached, text_env *env)
{
	env->te = c->te;
	for (int d = 0; d < c->te->ndim; d++)
		snprintf(env->vars[d], sizeof(env->vars[d]),
			attached ? "o%d + x%d" : "x%d", d, d);
	for (int k = 0; k < c->te->nraxes; k++) {
		int64_t lo = 0;
		te_expr_const_int(c->te->raxes[k]->lo, &lo);
		snprintf(env->vars[c->te->ndim + k], sizeof(env->vars[0]),
			"%lld + x%d", (long long)lo, c->te->ndim + k);
	}
}

/* Return the largest value of "extent" over its parameters, or -1. */
static int64_t largest(isl_pw_aff *extent)
{
	isl_set *s = isl_set_from_pw_aff(extent);
	s = isl_set_project_out(s, isl_dim_param, 0, isl_set_dim(s, isl_dim_param));
	isl_val *v = isl_set_dim_max_val(s, 0);
	int64_t n = v && isl_val_is_int(v) ? isl_val_get_num_si(v) : -1;
	isl_val_free(v);
	return n;
}

/* Return the largest value iter "it" of "c" takes while the loops run
 * (beyond its extent when a split below it does not divide). */
static int64_t largest_value(const sch_stage *c, int it)
{
	const sch_iter *t = &c->iters[it];
	if (t->leaf)
		return t->extent - 1;
	if (t->fused_into >= 0) {
		const sch_iter *f = &c->iters[t->fused_into];
		int64_t fv = largest_value(c, t->fused_into);
		int64_t inner = c->iters[f->inner].extent;
		return it == f->outer ? fv / inner : (fv < inner - 1 ? fv : inner - 1);
	}
	return largest_value(c, t->split_outer) * c->iters[t->split_outer].factor +
	       largest_value(c, t->split_inner);
}

/* Append to "sb" the names "prefix"<k> of the region parameters of "c"
 * at nest position "pos" (sch_region_param), comma-separated after the
 * names already there ("*first" false). */
static void put_region_params(te_strbuf *sb, const sch_stage *c, int pos, char prefix,
	bool *first)
{
	for (int k = 0; k < c->niters; k++)
		if (sch_region_param(c, k, pos)) {
			te_sb_printf(sb, "%s%c%d", *first ? "" : ", ", prefix, k);
			*first = false;
		}
}

/* Return the parameter set of the values the parameters q<k> of the
 * consumer's region take while its loops run. */
static isl_set *loop_box(sch_state *st, const sch_stage *c, int pos,
	isl_space *params)
{
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, "[");
	bool first = true;
	put_region_params(&sb, c, pos, 'q', &first);
	te_sb_puts(&sb, "] -> { : (0 = 0)");
	for (int k = 0; k < c->niters; k++)
		if (sch_region_param(c, k, pos))
			te_sb_printf(&sb, " and 0 <= q%d <= %lld", k,
				(long long)largest_value(c, k));
	te_sb_puts(&sb, " }");
	isl_set *box = te_isl_read_set(st->ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	return isl_set_align_params(box, params);
}

/* Return true when "ext" equals "n" wherever it is defined. */
static bool always(isl_pw_aff *ext, int64_t n, isl_ctx *ctx)
{
	isl_set *dom = isl_pw_aff_domain(isl_pw_aff_copy(ext));
	isl_pw_aff *cst = isl_pw_aff_val_on_domain(isl_set_copy(dom),
		isl_val_int_from_si(ctx, n));
	isl_set *eq = isl_pw_aff_eq_set(isl_pw_aff_copy(ext), cst);
	isl_bool sub = isl_set_is_subset(dom, eq);
	isl_set_free(dom);
	isl_set_free(eq);
	return sub == isl_bool_true;
}

/* Bound "region" (elements of a stage of "pdim" dimensions) over the
 * parameter set "box" into "r": per dimension the lowest and highest
 * element as piecewise functions of the parameters, the largest extent
 * and whether it always is that.  Return -1, or the first dimension that
 * cannot be bounded. */
static int bound_box(isl_ctx *ctx, isl_set *region, int pdim, sch_region *r, isl_set *box)
{
	r->ndim = pdim;
	r->nonempty = true;
	for (int d = 0; d < pdim; d++) {
		r->lo[d] = isl_set_dim_min(isl_set_copy(region), d);
		r->hi[d] = isl_set_dim_max(isl_set_copy(region), d);
		isl_set *dom = isl_pw_aff_domain(isl_pw_aff_copy(r->lo[d]));
		r->nonempty &= isl_set_is_subset(box, dom) == isl_bool_true;
		isl_set_free(dom);
		r->lo[d] = isl_pw_aff_coalesce(isl_pw_aff_gist_params(r->lo[d],
			isl_set_copy(box)));
		r->hi[d] = isl_pw_aff_coalesce(isl_pw_aff_gist_params(r->hi[d],
			isl_set_copy(box)));
		isl_pw_aff *ext = isl_pw_aff_intersect_params(isl_pw_aff_add_constant_val(
			isl_pw_aff_sub(isl_pw_aff_copy(r->hi[d]), isl_pw_aff_copy(r->lo[d])),
			isl_val_one(ctx)), isl_set_copy(box));
		r->full[d] = false;
		r->shape[d] = largest(isl_pw_aff_copy(ext));
		if (r->shape[d] >= 1)
			r->full[d] = always(ext, r->shape[d], ctx);
		isl_pw_aff_free(ext);
		if (!r->lo[d] || !r->hi[d] || r->shape[d] < 1)
			return d;
	}
	return -1;
}

/* A bounded region as the context remembers it (ir/memo.h): bound_box's
 * result, without the box. */
typedef struct box_memo {
	sch_region r;
	int failed;       /* the dimension that could not be bounded, or -1 */
	bool over;        /* ISL ran out of its budget (ir/isl_budget.h) */
} box_memo;

static void free_box_memo(void *p)
{
	box_memo *m = p;
	sch_region_free(&m->r);
	free(m);
}

/* Copy the bounds of "from" into "to" (new references; not the box). */
static void copy_bounds(sch_region *to, const sch_region *from)
{
	to->ndim = from->ndim;
	to->nonempty = from->nonempty;
	for (int d = 0; d < from->ndim; d++) {
		to->lo[d] = isl_pw_aff_copy(from->lo[d]);
		to->hi[d] = isl_pw_aff_copy(from->hi[d]);
		to->shape[d] = from->shape[d];
		to->full[d] = from->full[d];
	}
}

/* Bound "region" of the stage "pname" over "box" into "r" (bound_box),
 * remembered per context under the texts of both: a tuner bounds the
 * same shared tiles for every mutation of a parent.  Return 0, or -1
 * with a refusal. */
static int box_of(sch_state *st, isl_set *region, int pdim, sch_region *r,
	const char *pname, isl_set *box)
{
	char *rt = isl_set_to_str(region), *bt = isl_set_to_str(box);
	te_strbuf key = { 0 };
	if (rt && bt)
		te_sb_printf(&key, "region box %d %s | %s", pdim, rt, bt);
	free(rt);
	free(bt);
	const char *k = key.len ? te_sb_str(&key) : NULL;
	const box_memo *m = k ? te_memo_get(st->ctx, k) : NULL;
	int failed;
	bool over;
	if (m) {
		copy_bounds(r, &m->r);
		failed = m->failed;
		over = m->over;
	} else {
		te_isl_budget_begin(st->ctx, TE_ISL_BUDGET_OPS);
		failed = bound_box(te_isl(st->ctx), region, pdim, r, box);
		over = te_isl_budget_end(st->ctx);
		box_memo *keep = k ? calloc(1, sizeof(*keep)) : NULL;
		if (keep) {
			copy_bounds(&keep->r, r);
			keep->failed = failed;
			keep->over = over;
			te_memo_put(st->ctx, k, keep, free_box_memo);
		}
	}
	te_sb_free(&key);
	if (over)
		return sch_refuse(st, "the region of '%s' needed there is too complex to "
			"bound (over %lu ISL operations)", pname, TE_ISL_BUDGET_OPS);
	if (failed >= 0)
		return sch_refuse(st, "cannot bound the region of '%s' needed "
			"there (dimension %d)", pname, failed);
	return 0;
}

/* Return the set of elements of "producer" that the body of "consumer"
 * reads (directly or through inlined stages) in one iteration of its nest
 * position "pos", or NULL with "*failure" set when a read is not affine or
 * (failure NULL) when it reads none. */
static isl_set *direct_reads(sch_state *st, int producer, const sch_stage *consumer,
	bool attached, int pos, const char **failure)
{
	const tessel_stage *p = st->stages[producer].te;
	te_strbuf ctx = { 0 };
	context_text(consumer, attached, pos, p->ndim, &ctx);
	text_env *env = calloc(1, sizeof(*env));
	consumer_env(consumer, attached, env);
	region_walk w = { st, p, te_sb_str(&ctx), false, NULL, NULL };
	walk_reads(&w, env, consumer->te->body);
	free(env);
	te_sb_free(&ctx);
	*failure = w.failure;
	if (w.failure) {
		isl_set_free(w.region);
		return NULL;
	}
	return w.region;
}

/* Return the map from the elements of stage "reader" (its spatial axes)
 * to the elements of "producer" that computing them reads, over all of
 * its reduction, or NULL with "*failure" set. */
static isl_map *reader_map(sch_state *st, int reader, int producer,
	const char **failure)
{
	const sch_stage *rs = &st->stages[reader];
	const tessel_stage *t = rs->te, *p = st->stages[producer].te;
	te_strbuf ctx = { 0 };
	te_sb_puts(&ctx, "{ [");
	for (int d = 0; d < t->ndim; d++)
		te_sb_printf(&ctx, "%sa%d", d ? ", " : "", d);
	te_sb_puts(&ctx, "] -> [");
	for (int d = 0; d < p->ndim; d++)
		te_sb_printf(&ctx, "%sp%d", d ? ", " : "", d);
	te_sb_puts(&ctx, "] : exists (z");
	for (int k = 0; k < t->nraxes; k++)
		te_sb_printf(&ctx, ", r%d", k);
	te_sb_puts(&ctx, " : z = 0");
	text_env *env = calloc(1, sizeof(*env));
	env->te = t;
	for (int d = 0; d < t->ndim; d++)
		snprintf(env->vars[d], sizeof(env->vars[d]), "a%d", d);
	for (int k = 0; k < t->nraxes; k++) {
		int64_t lo = 0;
		te_expr_const_int(t->raxes[k]->lo, &lo);
		te_sb_printf(&ctx, " and 0 <= r%d < %lld", k,
			(long long)rs->iters[t->ndim + k].extent);
		snprintf(env->vars[t->ndim + k], sizeof(env->vars[0]), "%lld + r%d",
			(long long)lo, k);
	}
	region_walk w = { st, p, te_sb_str(&ctx), true, NULL, NULL };
	walk_reads(&w, env, t->body);
	free(env);
	te_sb_free(&ctx);
	*failure = w.failure ? w.failure : w.region ? NULL : "it reads none";
	if (*failure) {
		isl_set_free(w.region);
		return NULL;
	}
	return isl_set_unwrap(w.region);
}

/* Return the set of the elements of stage "t" as an ISL set over p0.. */
static isl_set *domain_set(sch_state *st, const tessel_stage *t)
{
	te_strbuf dom = { 0 };
	te_sb_puts(&dom, "{ [");
	for (int d = 0; d < t->ndim; d++)
		te_sb_printf(&dom, "%sp%d", d ? ", " : "", d);
	te_sb_puts(&dom, "] : (0 = 0)");
	for (int d = 0; d < t->ndim; d++)
		te_sb_printf(&dom, " and 0 <= p%d < %lld", d, (long long)t->extent[d]);
	te_sb_puts(&dom, " }");
	isl_set *domain = te_isl_read_set(st->ctx, te_sb_str(&dom));
	te_sb_free(&dom);
	return domain;
}

/* Return the box [min, max] per dimension that holds the set "s" (taken),
 * as a set over the same parameters. */
static isl_set *bounding_box(isl_set *s)
{
	int n = (int)isl_set_dim(s, isl_dim_set);
	isl_set *box = NULL;
	for (int d = 0; d < n; d++) {
		isl_set *one = isl_set_project_out(isl_set_copy(s), isl_dim_set, d + 1,
			(unsigned)(n - d - 1));
		one = isl_set_project_out(one, isl_dim_set, 0, (unsigned)d);
		isl_space *space = isl_set_get_space(one);
		isl_set *above = isl_set_apply(isl_set_copy(one),
			isl_map_lex_le(isl_space_copy(space)));
		isl_set *below = isl_set_apply(one, isl_map_lex_ge(space));
		isl_set *hull = isl_set_intersect(above, below);
		box = box ? isl_set_flat_product(box, hull) : hull;
	}
	isl_set_free(s);
	return box;
}

/* Return the elements of "producer" (within its domain) that one
 * iteration of nest position "pos" of "consumer" needs: those the
 * consumer reads, and those that the stages computed at that loop or at
 * loops inside it read over their whole boxes (lowering computes such a
 * stage over the box of what it is needed for; one computed deeper, over
 * a box within the box of what the whole iteration needs of it).  NULL
 * with a refusal. */
static isl_set *needed_set(sch_state *st, int producer, const sch_stage *consumer,
	bool attached, int pos, int depth)
{
	const tessel_stage *p = st->stages[producer].te;
	const char *failure = NULL;
	isl_set *region = direct_reads(st, producer, consumer, attached, pos, &failure);
	int ci = sch_stage_of(st, consumer->te);
	for (int k = 0; k < st->nstages && !failure; k++) {
		const sch_stage *ks = &st->stages[k];
		if (k == producer || k == ci || ks->attach != SCH_AT || ks->attach_stage != ci ||
		    sch_leaf_pos(consumer, ks->attach_iter) < pos || !sch_reads(st, k, producer))
			continue;
		if (depth > st->nstages) {
			failure = "the stages computed there read each other";
			break;
		}
		isl_set *reader = needed_set(st, k, consumer, attached, pos, depth + 1);
		if (!reader) {
			isl_set_free(region);
			return NULL;
		}
		isl_map *m = reader_map(st, k, producer, &failure);
		if (!m) {
			isl_set_free(reader);
			break;
		}
		isl_set *reads = isl_set_apply(bounding_box(reader), m);
		region = region ? isl_set_union(region, reads) : reads;
	}
	if (failure || !region) {
		isl_set_free(region);
		sch_refuse(st, "cannot compute the region of '%s' that '%s' needs: %s",
			p->name, consumer->name, failure ? failure : "it reads none");
		return NULL;
	}
	return isl_set_intersect(region,
		isl_set_align_params(domain_set(st, p), isl_set_get_space(region)));
}

/* Fill "r" with the box of "region" (taken), the elements of stage
 * "producer" needed, over the parameter values "box" (taken, kept in
 * "r"); return 0, or -1 with "r" freed. */
static int region_in_box(sch_state *st, int producer, isl_set *region, isl_set *box,
	sch_region *r)
{
	const tessel_stage *p = st->stages[producer].te;
	int rc = box_of(st, region, p->ndim, r, p->name, box);
	r->box = box;
	isl_set_free(region);
	if (rc)
		sch_region_free(r);
	return rc;
}

int sch_region_compute(sch_state *st, int producer, const sch_stage *consumer,
	bool attached, int pos, sch_region *r)
{
	memset(r, 0, sizeof(*r));
	isl_set *region = needed_set(st, producer, consumer, attached, pos, 0);
	if (!region)
		return -1;
	isl_set *box = loop_box(st, consumer, pos, isl_set_get_space(region));
	return region_in_box(st, producer, region, box, r);
}

int sch_write_region(sch_state *st, const sch_stage *p, int pos, sch_region *r)
{
	memset(r, 0, sizeof(*r));
	te_strbuf sb = { 0 };
	context_text(p, false, pos, p->te->ndim, &sb);
	for (int d = 0; d < p->te->ndim; d++)
		te_sb_printf(&sb, " and p%d = x%d", d, d);
	te_sb_puts(&sb, ") }");
	isl_set *region = te_isl_read_set(st->ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	if (!region)
		return sch_refuse(st, "ISL rejected the region written by '%s'", p->name);
	isl_set *box = loop_box(st, p, pos, isl_set_get_space(region));
	int rc = box_of(st, region, p->te->ndim, r, p->name, box);
	r->box = box;
	isl_set_free(region);
	if (rc)
		sch_region_free(r);
	return rc;
}

void sch_region_free(sch_region *r)
{
	for (int d = 0; d < r->ndim; d++) {
		isl_pw_aff_free(r->lo[d]);
		isl_pw_aff_free(r->hi[d]);
		r->lo[d] = r->hi[d] = NULL;
	}
	r->ndim = 0;
	isl_set_free(r->box);
	r->box = NULL;
}

void sch_region_set_extents(sch_stage *s, const int64_t *shape)
{
	for (int it = 0; it < s->niters; it++) {
		sch_iter *t = &s->iters[it];
		switch (t->origin) {
		case SCH_AXIS:
			if (!t->reduce)
				t->extent = shape[t->axis];
			break;
		case SCH_SPLIT_OUTER:
			t->extent = (s->iters[t->parent].extent + t->factor - 1) / t->factor;
			break;
		case SCH_SPLIT_INNER:
			t->extent = t->factor;
			break;
		case SCH_FUSED:
			t->extent = s->iters[t->outer].extent * s->iters[t->inner].extent;
			break;
		}
	}
}

int sch_region_effective(sch_state *st, int x, sch_stage *eff)
{
	const sch_stage *s = &st->stages[x];
	const sch_stage *c = &st->stages[s->attach_stage];
	*eff = *s;
	eff->iters = malloc(sizeof(sch_iter) * (size_t)(s->niters + 1));
	if (s->niters)
		memcpy(eff->iters, s->iters, sizeof(sch_iter) * (size_t)s->niters);
	sch_region r;
	if (sch_region_compute(st, x, c, false, sch_leaf_pos(c, s->attach_iter), &r)) {
		free(eff->iters);
		eff->iters = NULL;
		return -1;
	}
	sch_region_set_extents(eff, r.shape);
	sch_region_free(&r);
	return 0;
}

/* Return whether leaf "p" of the root stage "c" is a parameter w<p> of a
 * block region under its nest position "pos": enclosing it and not bound
 * to a thread index. */
static bool block_param(const sch_stage *c, int p, int pos)
{
	return p <= pos && !sch_kind_is_thread(c->iters[c->leaves[p]].kind);
}

/* Return the parameter set relating the parameters q<k> of the regions
 * of the root stage "c" at nest position "pos", renamed r<k>, to its
 * leaves at positions up to "pos": w<p> where block_param, the others
 * (thread loops) existential. */
static isl_set *root_loops(sch_state *st, const sch_stage *c, int pos)
{
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, "[");
	bool first = true;
	put_region_params(&sb, c, pos, 'r', &first);
	for (int p = 0; p <= pos; p++)
		if (block_param(c, p, pos)) {
			te_sb_printf(&sb, "%sw%d", first ? "" : ", ", p);
			first = false;
		}
	te_sb_puts(&sb, "] -> { : exists (");
	for (int k = 0; k < c->niters; k++)
		te_sb_printf(&sb, "%sx%d", k ? ", " : "", k);
	te_sb_puts(&sb, " : (0 = 0)");
	for (int k = 0; k < c->niters; k++) {
		const sch_iter *t = &c->iters[k];
		te_sb_printf(&sb, " and 0 <= x%d < %lld", k, (long long)t->extent);
		if (!t->leaf && t->fused_into < 0)
			te_sb_printf(&sb, " and x%d = %lld * x%d + x%d", k,
				(long long)c->iters[t->split_outer].factor, t->split_outer,
				t->split_inner);
		if (t->origin == SCH_FUSED)
			te_sb_printf(&sb, " and x%d = %lld * x%d + x%d", k,
				(long long)c->iters[t->inner].extent, t->outer, t->inner);
		if (sch_region_param(c, k, pos))
			te_sb_printf(&sb, " and x%d = r%d", k, k);
	}
	for (int p = 0; p <= pos; p++)
		if (block_param(c, p, pos))
			te_sb_printf(&sb, " and x%d = w%d", c->leaves[p], p);
	te_sb_puts(&sb, ") }");
	isl_set *s = te_isl_read_set(st->ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	return s;
}

/* Return the parameter set { o<d> = "lo" } over the parameters of "lo"
 * (taken) and o<d>. */
static isl_set *origin_equals(isl_pw_aff *lo, int d)
{
	isl_space *sp = isl_pw_aff_get_domain_space(lo);
	unsigned n = isl_space_dim(sp, isl_dim_param);
	char name[32];
	snprintf(name, sizeof(name), "o%d", d);
	sp = isl_space_add_dims(sp, isl_dim_param, 1);
	sp = isl_space_set_dim_name(sp, isl_dim_param, n, name);
	isl_pw_aff *o = isl_pw_aff_from_aff(isl_aff_var_on_domain(
		isl_local_space_from_space(sp), isl_dim_param, n));
	lo = isl_pw_aff_align_params(lo, isl_pw_aff_get_space(o));
	return isl_pw_aff_eq_set(o, lo);
}

/* Rename the parameters of "s" that start with "from" to start with
 * "to". */
static isl_set *rename_params(isl_set *s, char from, char to)
{
	int n = (int)isl_set_dim(s, isl_dim_param);
	for (int i = 0; i < n; i++) {
		const char *name = isl_set_get_dim_name(s, isl_dim_param, (unsigned)i);
		if (!name || name[0] != from)
			continue;
		char renamed[32];
		snprintf(renamed, sizeof(renamed), "%c%s", to, name + 1);
		s = isl_set_set_dim_name(s, isl_dim_param, (unsigned)i, renamed);
	}
	return s;
}

/* Project out of "s" the parameters whose names start with "prefix". */
static isl_set *project_params(isl_set *s, char prefix)
{
	for (int i = (int)isl_set_dim(s, isl_dim_param) - 1; i >= 0; i--) {
		const char *name = isl_set_get_dim_name(s, isl_dim_param, (unsigned)i);
		if (name && name[0] == prefix)
			s = isl_set_project_out(s, isl_dim_param, (unsigned)i, 1);
	}
	return s;
}

/* Return the parameter set of the values the parameters q<k> of "x" at
 * "pos" and w<p> of the root "c" at "rpos" take while the loops run. */
static isl_set *block_box(sch_state *st, const sch_stage *x, int pos, const sch_stage *c,
	int rpos, isl_space *params)
{
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, "[");
	bool first = true;
	for (int p = 0; p <= rpos; p++)
		if (block_param(c, p, rpos)) {
			te_sb_printf(&sb, "%sw%d", first ? "" : ", ", p);
			first = false;
		}
	te_sb_puts(&sb, "] -> { : (0 = 0)");
	for (int p = 0; p <= rpos; p++)
		if (block_param(c, p, rpos))
			te_sb_printf(&sb, " and 0 <= w%d < %lld", p,
				(long long)c->iters[c->leaves[p]].extent);
	te_sb_puts(&sb, " }");
	isl_set *w = te_isl_read_set(st->ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	isl_set *q = loop_box(st, x, pos, isl_space_copy(params));
	return isl_set_intersect_params(q, isl_set_align_params(w, params));
}

int sch_region_block(sch_state *st, int producer, const sch_stage *x, int pos,
	sch_region *r)
{
	memset(r, 0, sizeof(*r));
	int xi = sch_stage_of(st, x->te);
	const sch_stage *c = &st->stages[x->attach_stage];
	int rpos = sch_leaf_pos(c, x->attach_iter);
	sch_region rx;
	if (sch_region_compute(st, xi, c, false, rpos, &rx))
		return -1;
	isl_set *region = needed_set(st, producer, x, true, pos, 0);
	if (!region) {
		sch_region_free(&rx);
		return -1;
	}
	isl_set *origin = isl_set_copy(rx.box);
	for (int d = 0; d < x->te->ndim; d++)
		origin = isl_set_intersect(isl_set_align_params(origin,
			isl_pw_aff_get_domain_space(rx.lo[d])), origin_equals(isl_pw_aff_copy(rx.lo[d]), d));
	sch_region_free(&rx);
	origin = rename_params(isl_set_params(origin), 'q', 'r');
	isl_set *loops = root_loops(st, c, rpos);
	origin = isl_set_intersect_params(isl_set_align_params(origin,
		isl_set_get_space(loops)), loops);
	region = isl_set_align_params(region, isl_set_get_space(origin));
	origin = isl_set_align_params(origin, isl_set_get_space(region));
	region = isl_set_intersect_params(region, origin);
	region = project_params(project_params(region, 'o'), 'r');
	isl_set *params = isl_set_params(isl_set_copy(region));
	isl_set *box = block_box(st, x, pos, c, rpos, isl_set_get_space(params));
	isl_set_free(params);
	box = isl_set_align_params(box, isl_set_get_space(region));
	return region_in_box(st, producer, region, box, r);
}
