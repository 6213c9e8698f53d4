/* compute_at: compute a producer inside a loop of its consumer.
 *
 * requires: the producer is not an output; every stage that reads it
 *   (directly or through inlined stages) is the consumer or is computed at
 *   that loop or at a loop of the consumer inside it, and one does; the
 *   consumer is not computed inside the producer; the region needed under
 *   the loop is affine and bounded (ISL)
 * guarantees: per iteration of the loop, lowering computes exactly that
 *   region (clamped to the producer's domain) into a buffer allocated
 *   there, before the loops inside it and before the stages computed
 *   there that read it
 *
 * A stage whose readers are all computed at one loop (softmax's
 * exponentials, read by the row sum and by the output) is computed there
 * once, for all of them: rows then run as one pass over data in cache.
 * A stage read by one computed deeper in the consumer (a packed copy of
 * matmul's B, read by the accumulator of each register tile) can sit at
 * an outer loop (the parallel one): each iteration prepares what all the
 * tiles inside it read.  The primitives that move loops or stages keep
 * that nesting (sch_check_readers_within). */
#include <stdio.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/region.h"
#include "schedule/trace.h"

/* Return true when stage "s" is computed, directly or not, inside a loop
 * of stage "outer". */
static bool nested_in(const sch_state *st, int s, int outer)
{
	for (int k = s, hops = 0; hops <= st->nstages; hops++) {
		if (!sch_is_attached(&st->stages[k]))
			return false;
		k = st->stages[k].attach_stage;
		if (k == outer)
			return true;
	}
	return false;
}

/* Return whether stage "k" is computed at loop "it" of stage "c". */
static bool colocated(const sch_state *st, int k, int c, int it)
{
	const sch_stage *ks = &st->stages[k];
	return ks->attach == SCH_AT && ks->attach_stage == c && ks->attach_iter == it;
}

int sch_check_readers_within(sch_state *st, const char *what)
{
	for (int p = 0; p < st->nstages; p++) {
		int k = sch_reader_outside(st, p);
		if (k < 0)
			continue;
		const sch_stage *ps = &st->stages[p], *cs = &st->stages[ps->attach_stage];
		return sch_refuse(st, "%s: '%s' is computed at %s.%s but read by '%s', "
			"computed outside that loop", what, ps->name, cs->name,
			cs->iters[ps->attach_iter].name, st->stages[k].name);
	}
	return 0;
}

static int check_consumers(sch_state *st, int p, int c, int it, const char *stage,
	const char *loop)
{
	if (p == c)
		return sch_refuse(st, "compute_at %s %s: a stage cannot be computed in "
			"its own loop", stage, loop);
	if (st->stages[p].te->is_output)
		return sch_refuse(st, "compute_at %s %s: '%s' is an output of the op",
			stage, loop, stage);
	if (st->stages[c].attach == SCH_INLINE)
		return sch_refuse(st, "compute_at %s %s: '%s' is inlined", stage, loop,
			st->stages[c].name);
	if (sch_stage_has_bound(&st->stages[p]))
		return sch_refuse(st, "compute_at %s %s: '%s' has loops bound to GPU "
			"indices; only stages at the root can have them", stage, loop, stage);
	if (nested_in(st, c, p))
		return sch_refuse(st, "compute_at %s %s: '%s' is computed inside '%s'",
			stage, loop, st->stages[c].name, stage);
	int after = sch_stage_after(st, p);
	if (after >= 0)
		return sch_refuse(st, "compute_at %s %s: '%s' is computed after a loop of "
			"'%s'; move it first", stage, loop, st->stages[after].name, stage);
	bool read = sch_reads(st, c, p);
	for (int k = 0; k < st->nstages && !read; k++)
		read = k != p && k != c && sch_computed_within(st, k, c, it) && sch_reads(st, k, p);
	if (!read)
		return sch_refuse(st, "compute_at %s %s: '%s' does not read '%s'",
			stage, loop, st->stages[c].name, stage);
	for (int k = 0; k < st->nstages; k++) {
		const sch_stage *ks = &st->stages[k];
		if (k == c || k == p || ks->attach == SCH_INLINE || !sch_reads(st, k, p))
			continue;
		if (!sch_computed_within(st, k, c, it))
			return sch_refuse(st, "compute_at %s %s: '%s' is also read by '%s', "
				"which is not computed at %s or inside it", stage, loop, stage,
				ks->name, loop);
	}
	int producer = sch_colocated_producer(st, p);
	if (producer >= 0 && !colocated(st, p, c, it))
		return sch_refuse(st, "compute_at %s %s: '%s' reads '%s', computed at the "
			"same loop for it; move '%s' first", stage, loop, stage,
			st->stages[producer].name, st->stages[producer].name);
	return 0;
}

static int compute_at_unchecked(sch_state *st, const char *stage,
	const char *loop)
{
	int p = sch_find_stage(st, stage);
	int c, it;
	if (p < 0 || sch_find_loop(st, loop, &c, &it) ||
	    check_consumers(st, p, c, it, stage, loop))
		return -1;
	sch_region r;
	if (st->stages[c].attach == SCH_ROOT) {
		if (sch_region_compute(st, p, &st->stages[c], false,
				sch_leaf_pos(&st->stages[c], it), &r))
			return -1;
		sch_region_free(&r);
	}
	sch_stage *ps = &st->stages[p];
	ps->attach = SCH_AT;
	ps->attach_stage = c;
	ps->attach_iter = it;
	sch_step step;
	sch_step_init(&step, "compute_at");
	sch_step_arg(&step, "%s", stage);
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_compute_at(sch_state *st, const char *stage, const char *loop)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "compute_at %s %s", stage, loop);
	sch_guard_begin(st, &snap);
	int rc = compute_at_unchecked(st, stage, loop);
	return sch_guard_end(st, &snap, rc, what);
}
