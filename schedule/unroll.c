/* unroll: unroll a loop completely.
 *
 * requires: a live loop of extent at most 4096
 * guarantees: the loop is marked unrolled (always legal: order kept) */
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_unroll(sch_state *st, const char *loop)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_iter *t = &st->stages[si].iters[it];
	if (t->extent > 4096)
		return sch_refuse(st, "unroll %s: extent %lld is too large to unroll "
			"(at most 4096); split it first", loop, (long long)t->extent);
	if (t->kind != LOOP_SERIAL && t->kind != LOOP_UNROLLED)
		return sch_refuse(st, "unroll %s: the loop is already %s", loop,
			loop_kind_name(t->kind));
	t->kind = LOOP_UNROLLED;
	sch_step step;
	sch_step_init(&step, "unroll");
	sch_step_arg(&step, "%s", loop);
	sch_trace_append(st->trace, &step);
	return 0;
}
