/* Dependences within a stage's nest, with ISL.
 *
 * A stage writes element S[a_0..a_{n-1}] from every instance that shares
 * those spatial axes, so two instances depend on each other exactly when
 * their spatial axes agree and their reduction axes differ.  A loop carries
 * a dependence when such a pair agrees on every enclosing loop and differs
 * on this one.  The loops are quasi-affine functions of the axes (split:
 * floor and mod; fuse: outer * extent + inner); the question names each
 * loop made by a split or a fusion as a variable of its own, tied to its
 * parents by affine constraints, so that its text grows with the number
 * of loops.  Nested floor() expressions instead grow with their depth, and
 * ISL took over ten seconds to read seven levels of them. */

#include <isl/ctx.h>
#include <isl/set.h>

#include "ir/isl_budget.h"
#include "ir/isl_text.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"
#include "schedule/deps.h"

/* Write the name of iter "it" of "s" for the instance "p" ("x" or "y"):
 * an axis is p<axis>, any other iter pv<it>. */
static void iter_name(const sch_stage *s, int it, const char *p, te_strbuf *sb)
{
	if (s->iters[it].origin == SCH_AXIS)
		te_sb_printf(sb, "%s%d", p, s->iters[it].axis);
	else
		te_sb_printf(sb, "%sv%d", p, it);
}

/* Write the constraint that defines the iter "it" (not an axis) of "s"
 * from its parents, for the instance "p". */
static void iter_definition(const sch_stage *s, int it, const char *p, te_strbuf *sb)
{
	const sch_iter *t = &s->iters[it];
	long long f = (long long)t->factor;
	switch (t->origin) {
	case SCH_AXIS:
		return;
	case SCH_SPLIT_OUTER:
		te_sb_printf(sb, " and %lld * %sv%d <= ", f, p, it);
		iter_name(s, t->parent, p, sb);
		te_sb_printf(sb, " <= %lld * %sv%d + %lld", f, p, it, f - 1);
		return;
	case SCH_SPLIT_INNER:
		te_sb_printf(sb, " and %sv%d = ", p, it);
		iter_name(s, t->parent, p, sb);
		te_sb_printf(sb, " - %lld * ", f);
		iter_name(s, s->iters[t->parent].split_outer, p, sb);
		return;
	case SCH_FUSED:
		te_sb_printf(sb, " and %sv%d = %lld * ", p, it,
			(long long)s->iters[t->inner].extent);
		iter_name(s, t->outer, p, sb);
		te_sb_puts(sb, " + ");
		iter_name(s, t->inner, p, sb);
		return;
	}
}

/* Write " 0 <= p<k> < extent" for every axis of "s". */
static void domain_text(const sch_stage *s, const char *p, te_strbuf *sb)
{
	for (int k = 0; k < s->niters; k++)
		if (s->iters[k].origin == SCH_AXIS)
			te_sb_printf(sb, " and 0 <= %s%d < %lld", p, s->iters[k].axis,
				(long long)s->iters[k].extent);
}

static int naxes(const sch_stage *s)
{
	return s->te->ndim + s->te->nraxes;
}

/* Write the set of pairs (x, y) of instances of "s" that update the same
 * element, agree on the loops before nest position "pos" and differ on
 * the loop at "pos". */
static void dependence_text(const sch_stage *s, int pos, te_strbuf *sb)
{
	te_sb_puts(sb, "{ [");
	for (int k = 0; k < naxes(s); k++)
		te_sb_printf(sb, "%sx%d, y%d", k ? ", " : "", k, k);
	te_sb_puts(sb, "] : exists (");
	int nvars = 0;
	for (int k = 0; k < s->niters; k++)
		if (s->iters[k].origin != SCH_AXIS)
			te_sb_printf(sb, "%sxv%d, yv%d", nvars++ ? ", " : "", k, k);
	if (nvars == 0)
		te_sb_puts(sb, "unused");
	te_sb_puts(sb, " : 0 = 0");
	domain_text(s, "x", sb);
	domain_text(s, "y", sb);
	for (int k = 0; k < s->niters; k++) {
		iter_definition(s, k, "x", sb);
		iter_definition(s, k, "y", sb);
	}
	for (int k = 0; k < s->te->ndim; k++)
		te_sb_printf(sb, " and x%d = y%d", k, k);
	for (int p = 0; p < pos; p++) {
		te_sb_puts(sb, " and ");
		iter_name(s, s->leaves[p], "x", sb);
		te_sb_puts(sb, " = ");
		iter_name(s, s->leaves[p], "y", sb);
	}
	te_sb_puts(sb, " and (");
	for (int k = 0; k < 2; k++) {
		iter_name(s, s->leaves[pos], "x", sb);
		te_sb_puts(sb, k ? " > " : " < ");
		iter_name(s, s->leaves[pos], "y", sb);
		te_sb_puts(sb, k ? ")) }" : " or ");
	}
}

/* A loop made of spatial axes only (split and fuse never mix the kinds)
 * takes equal values on a dependent pair, whose spatial axes agree, so it
 * carries nothing: ISL is asked about loops of reduction axes only, which
 * keeps the check off the tuner's hot path for parallel and vector loops.
 * ISL works within its budget (ir/isl_budget.h); a question it cannot
 * answer in it is a refusal. */
int sch_loop_carries_dependence(sch_state *st, int stage, int pos, bool *carried)
{
	const sch_stage *s = &st->stages[stage];
	*carried = false;
	if (s->te->nraxes == 0 || !s->iters[s->leaves[pos]].reduce)
		return 0;
	te_strbuf sb = { 0 };
	dependence_text(s, pos, &sb);
	te_isl_budget_begin(st->ctx, TE_ISL_BUDGET_OPS);
	isl_set *pairs = te_isl_read_set(st->ctx, te_sb_str(&sb));
	isl_bool empty = pairs ? isl_set_is_empty(pairs) : isl_bool_error;
	isl_set_free(pairs);
	bool over = te_isl_budget_end(st->ctx);
	te_sb_free(&sb);
	if (over)
		return sch_refuse(st, "cannot tell whether %s.%s carries a dependence: the "
			"splits and fusions of its reduction axes are too complex (over %lu "
			"ISL operations)", s->name, s->iters[s->leaves[pos]].name,
			TE_ISL_BUDGET_OPS);
	if (!pairs)
		return te_error(st->ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ NULL, 0, 0 },
			"ISL rejected the dependence question for stage '%s'", s->name);
	if (empty < 0)
		return -1;
	*carried = !empty;
	return 0;
}
