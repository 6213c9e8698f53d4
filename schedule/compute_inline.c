/* compute_inline: substitute a stage into its consumers.
 *
 * requires: a compute stage that is not an output, not a reduction, and
 *   has no stage computed inside its loops
 * guarantees: lowering evaluates the stage's expression at each read; its
 *   loops and buffer disappear */
#include <stdio.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

/* Return the stage computed at a loop of stage "s", or -1. */
int sch_stage_inside(const sch_state *st, int s);

int sch_stage_inside(const sch_state *st, int s)
{
	for (int k = 0; k < st->nstages; k++)
		if (sch_is_attached(&st->stages[k]) && st->stages[k].attach_stage == s)
			return k;
	return -1;
}

static int compute_inline_unchecked(sch_state *st, const char *stage)
{
	int s = sch_find_stage(st, stage);
	if (s < 0)
		return -1;
	sch_stage *ss = &st->stages[s];
	if (ss->te->is_output)
		return sch_refuse(st, "compute_inline %s: '%s' is an output of the op",
			stage, stage);
	if (ss->te->reduce != TESSEL_REDUCE_NONE)
		return sch_refuse(st, "compute_inline %s: '%s' is a reduction; only "
			"elementwise stages can be inlined", stage, stage);
	int inside = sch_stage_inside(st, s);
	if (inside >= 0)
		return sch_refuse(st, "compute_inline %s: stage '%s' is computed inside "
			"its loops; move it first", stage, st->stages[inside].name);
	ss->attach = SCH_INLINE;
	ss->attach_stage = ss->attach_iter = -1;
	sch_step step;
	sch_step_init(&step, "compute_inline");
	sch_step_arg(&step, "%s", stage);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_compute_inline(sch_state *st, const char *stage)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "compute_inline %s", stage);
	sch_guard_begin(st, &snap);
	int rc = compute_inline_unchecked(st, stage);
	return sch_guard_end(st, &snap, rc, what);
}
