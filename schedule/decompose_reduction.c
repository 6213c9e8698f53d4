/* decompose_reduction: initialize a reduction's accumulators before a
 * chosen loop, as a nest of its own, instead of before the outermost
 * reduction loop.
 *
 * requires: a stage with a reduction; a live loop of it at or outside its
 *   outermost reduction loop
 * guarantees: lowering emits the initialization just before that loop,
 *   over the spatial loops inside it (later reorders that move a reduction
 *   loop outside it bring the initialization back to that loop) */
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_decompose_reduction(sch_state *st, const char *stage, const char *loop)
{
	int s = sch_find_stage(st, stage), ls, it;
	if (s < 0 || sch_find_loop(st, loop, &ls, &it))
		return -1;
	sch_stage *ss = &st->stages[s];
	if (ls != s)
		return sch_refuse(st, "decompose_reduction %s %s: the loop belongs to '%s'",
			stage, loop, st->stages[ls].name);
	if (ss->te->reduce == TESSEL_REDUCE_NONE)
		return sch_refuse(st, "decompose_reduction %s: '%s' is not a reduction",
			stage, stage);
	int pos = sch_leaf_pos(ss, it);
	for (int p = 0; p < pos; p++)
		if (ss->iters[ss->leaves[p]].reduce)
			return sch_refuse(st, "decompose_reduction %s %s: reduction loop %s.%s "
				"is outside it", stage, loop, stage, ss->iters[ss->leaves[p]].name);
	ss->init_iter = it;
	sch_step step;
	sch_step_init(&step, "decompose_reduction");
	sch_step_arg(&step, "%s", stage);
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}
