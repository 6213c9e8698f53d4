/* compute_root: compute a stage in its own nest at the top level.
 *
 * requires: a compute stage that does not read a stage computed at its
 *   loop for it (compute_at)
 * guarantees: the stage has a global buffer and runs before its consumers;
 *   undone when a shared stage computed at its loop would break the
 *   shared-memory rules (schedule/shared.c: a register accumulator moved
 *   out of a kernel's thread loops takes its tiles out of the block) */
#include <stdio.h>

#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

static int compute_root_unchecked(sch_state *st, const char *stage)
{
	int s = sch_find_stage(st, stage);
	if (s < 0)
		return -1;
	sch_stage *ss = &st->stages[s];
	int colocated = sch_colocated_producer(st, s);
	if (colocated >= 0)
		return sch_refuse(st, "compute_root %s: '%s' reads '%s', computed at the "
			"same loop for it; move '%s' first", stage, stage,
			st->stages[colocated].name, st->stages[colocated].name);
	ss->attach = SCH_ROOT;
	ss->attach_stage = ss->attach_iter = -1;
	sch_step step;
	sch_step_init(&step, "compute_root");
	sch_step_arg(&step, "%s", stage);
	sch_trace_append(st->trace, &step);
	return 0;
}

int sch_compute_root(sch_state *st, const char *stage)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "compute_root %s", stage);
	sch_guard_begin(st, &snap);
	return sch_guard_end(st, &snap, compute_root_unchecked(st, stage), what);
}
