/* parallel: run the iterations of a loop on the thread pool.
 *
 * requires: a live loop that carries no dependence (ISL), with no
 *   parallel loop around or inside it in its stage
 * guarantees: the loop is marked parallel; stages computed inside it get
 *   private buffers per iteration (lowering allocates them there) */
#include "schedule/deps.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

/* Refuse "what" on the loop at "pos" of stage "si" when it carries a
 * dependence; return 0 when it does not. */
int sch_refuse_if_carried(sch_state *st, int si, int pos, const char *what,
	const char *loop);

int sch_refuse_if_carried(sch_state *st, int si, int pos, const char *what,
	const char *loop)
{
	bool carried;
	if (sch_loop_carries_dependence(st, si, pos, &carried))
		return -1;
	if (carried)
		return sch_refuse(st, "%s %s: the loop carries a dependence (iterations "
			"update the same elements of '%s')", what, loop,
			st->stages[si].name);
	return 0;
}

int sch_parallel(sch_state *st, const char *loop)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_stage *s = &st->stages[si];
	for (int p = 0; p < s->nleaves; p++)
		if (s->leaves[p] != it && s->iters[s->leaves[p]].kind == LOOP_PARALLEL)
			return sch_refuse(st, "parallel %s: %s.%s is already parallel; "
				"nested parallel loops are not supported", loop, s->name,
				s->iters[s->leaves[p]].name);
	if (s->iters[it].kind != LOOP_SERIAL && s->iters[it].kind != LOOP_PARALLEL)
		return sch_refuse(st, "parallel %s: the loop is already %s", loop,
			loop_kind_name(s->iters[it].kind));
	if (sch_refuse_if_carried(st, si, sch_leaf_pos(s, it), "parallel", loop))
		return -1;
	s->iters[it].kind = LOOP_PARALLEL;
	sch_step step;
	sch_step_init(&step, "parallel");
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}
