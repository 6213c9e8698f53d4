/* vectorize: run the iterations of the innermost loop as vector lanes.
 *
 * requires: the innermost live loop of its stage, with no stage computed
 *   at it, and an extent of at most 1024; carrying no dependence (ISL),
 *   or a reduction loop of a float reduction (sum, product, min, max)
 * guarantees: the loop is marked vectorized (codegen emits vector code
 *   where the accesses allow and scalar code otherwise).  A reduction
 *   loop then accumulates into one partial per lane, combined after the
 *   loop: the reduction is reassociated (as rfactor into lanes would),
 *   exactly for min and max, within rounding for sums and products */
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

/* Return whether iter "it" of "s" is a loop of a float reduction whose
 * combiner reassociates. */
static bool reassociable(const sch_stage *s, int it)
{
	return s->iters[it].reduce && s->te->reduce != TESSEL_REDUCE_NONE &&
		tessel_dtype_is_float(s->te->dtype);
}

int sch_refuse_if_carried(sch_state *st, int si, int pos, const char *what,
	const char *loop);

int sch_vectorize(sch_state *st, const char *loop)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_stage *s = &st->stages[si];
	int pos = sch_leaf_pos(s, it);
	if (pos != s->nleaves - 1)
		return sch_refuse(st, "vectorize %s: only the innermost loop of '%s' "
			"(%s.%s) can be vectorized", loop, s->name, s->name,
			s->iters[s->leaves[s->nleaves - 1]].name);
	if (s->iters[it].extent > 1024)
		return sch_refuse(st, "vectorize %s: extent %lld is more than 1024 lanes; "
			"split it first", loop, (long long)s->iters[it].extent);
	if (s->iters[it].kind != LOOP_SERIAL && s->iters[it].kind != LOOP_VECTORIZED)
		return sch_refuse(st, "vectorize %s: the loop is already %s", loop,
			loop_kind_name(s->iters[it].kind));
	for (int k = 0; k < st->nstages; k++)
		if (sch_is_attached(&st->stages[k]) && st->stages[k].attach_stage == si &&
		    st->stages[k].attach_iter == it)
			return sch_refuse(st, "vectorize %s: stage '%s' is computed inside it",
				loop, st->stages[k].name);
	if (!reassociable(s, it) && sch_refuse_if_carried(st, si, pos, "vectorize", loop))
		return -1;
	s->iters[it].kind = LOOP_VECTORIZED;
	sch_step step;
	sch_step_init(&step, "vectorize");
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}
