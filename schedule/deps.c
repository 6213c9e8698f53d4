/* Dependences within a stage's nest, with ISL.
 *
 * A stage writes element S[a_0..a_{n-1}] from every instance that shares
 * those spatial axes, so two instances depend on each other exactly when
 * their spatial axes agree and their reduction axes differ.  A loop carries
 * a dependence when such a pair agrees on every enclosing loop and differs
 * on this one; the loops are quasi-affine functions of the axes (split:
 * floor and mod; fuse: outer * extent + inner). */
#include <stdio.h>

#include <isl/ctx.h>
#include <isl/set.h>

#include "ir/isl_text.h"
#include "ir/te_impl.h"
#include "schedule/deps.h"

void sch_iter_text(const sch_stage *s, int it, te_strbuf *sb)
{
	const sch_iter *t = &s->iters[it];
	switch (t->origin) {
	case SCH_AXIS:
		te_sb_printf(sb, "a%d", t->axis);
		return;
	case SCH_SPLIT_OUTER:
		te_sb_puts(sb, "floor((");
		sch_iter_text(s, t->parent, sb);
		te_sb_printf(sb, ")/%lld)", (long long)t->factor);
		return;
	case SCH_SPLIT_INNER:
		te_sb_puts(sb, "((");
		sch_iter_text(s, t->parent, sb);
		te_sb_printf(sb, ") mod %lld)", (long long)t->factor);
		return;
	case SCH_FUSED:
		te_sb_printf(sb, "(%lld * (", (long long)s->iters[t->inner].extent);
		sch_iter_text(s, t->outer, sb);
		te_sb_puts(sb, ") + (");
		sch_iter_text(s, t->inner, sb);
		te_sb_puts(sb, "))");
		return;
	}
}

static int naxes(const sch_stage *s)
{
	return s->te->ndim + s->te->nraxes;
}

void sch_domain_text(const sch_stage *s, const char *prefix, te_strbuf *sb)
{
	for (int k = 0; k < s->niters; k++)
		if (s->iters[k].origin == SCH_AXIS)
			te_sb_printf(sb, " and 0 <= %s%d < %lld", prefix, s->iters[k].axis,
				(long long)s->iters[k].extent);
}

/* Write iter "it" with the axes renamed to "prefix"<k>. */
static void renamed_iter_text(const sch_stage *s, int it, const char *prefix,
	te_strbuf *sb)
{
	te_strbuf raw = { 0 };
	sch_iter_text(s, it, &raw);
	for (const char *c = te_sb_str(&raw); *c; c++) {
		if (*c == 'a' && c[1] >= '0' && c[1] <= '9')
			te_sb_puts(sb, prefix);
		else
			te_sb_printf(sb, "%c", *c);
	}
	te_sb_free(&raw);
}

/* A loop made of spatial axes only (split and fuse never mix the kinds)
 * takes equal values on a dependent pair, whose spatial axes agree, so it
 * carries nothing: ISL is asked about loops of reduction axes only, which
 * keeps the check off the tuner's hot path for parallel and vector loops. */
int sch_loop_carries_dependence(sch_state *st, int stage, int pos, bool *carried)
{
	const sch_stage *s = &st->stages[stage];
	*carried = false;
	if (s->te->nraxes == 0 || !s->iters[s->leaves[pos]].reduce)
		return 0;
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, "{ [");
	for (int k = 0; k < naxes(s); k++)
		te_sb_printf(&sb, "%sx%d, y%d", k ? ", " : "", k, k);
	te_sb_puts(&sb, "] : (0 = 0)");
	sch_domain_text(s, "x", &sb);
	sch_domain_text(s, "y", &sb);
	for (int k = 0; k < s->te->ndim; k++)
		te_sb_printf(&sb, " and x%d = y%d", k, k);
	for (int p = 0; p < pos; p++) {
		te_sb_puts(&sb, " and ");
		renamed_iter_text(s, s->leaves[p], "x", &sb);
		te_sb_puts(&sb, " = ");
		renamed_iter_text(s, s->leaves[p], "y", &sb);
	}
	te_strbuf x = { 0 }, y = { 0 };
	renamed_iter_text(s, s->leaves[pos], "x", &x);
	renamed_iter_text(s, s->leaves[pos], "y", &y);
	te_sb_printf(&sb, " and (%s < %s or %s > %s)", te_sb_str(&x), te_sb_str(&y),
		te_sb_str(&x), te_sb_str(&y));
	te_sb_free(&x);
	te_sb_free(&y);
	te_sb_puts(&sb, " }");
	isl_set *pairs = te_isl_read_set(st->ctx, te_sb_str(&sb));
	te_sb_free(&sb);
	if (!pairs)
		return te_error(st->ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ NULL, 0, 0 },
			"ISL rejected the dependence question for stage '%s'", s->name);
	isl_bool empty = isl_set_is_empty(pairs);
	isl_set_free(pairs);
	if (empty < 0)
		return -1;
	*carried = !empty;
	return 0;
}
