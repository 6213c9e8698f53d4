/* compute_root: compute a stage in its own nest at the top level.
 *
 * requires: a compute stage
 * guarantees: the stage has a global buffer and runs before its consumers */
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_compute_root(sch_state *st, const char *stage)
{
	int s = sch_find_stage(st, stage);
	if (s < 0)
		return -1;
	sch_stage *ss = &st->stages[s];
	ss->attach = SCH_ROOT;
	ss->attach_stage = ss->attach_iter = -1;
	sch_step step;
	sch_step_init(&step, "compute_root");
	sch_step_arg(&step, "%s", stage);
	sch_trace_append(st->trace, &step);
	return 0;
}
