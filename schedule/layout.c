/* The rules and the rebase that reorder_storage and split_storage
 * share (schedule/layout.h). */
#include <stdio.h>

#include "ir/te_impl.h"
#include "schedule/layout.h"
#include "schedule/primitives.h"

int sch_stage_inside(const sch_state *st, int s);

int sch_layout_check(sch_state *st, int s, const char *prim)
{
	const sch_stage *ss = &st->stages[s];
	const char *name = ss->name;
	if (ss->te->is_output)
		return sch_refuse(st, "%s %s: it is an output of the op; its layout is "
			"the caller's", prim, name);
	if (ss->attach != SCH_ROOT)
		return sch_refuse(st, "%s %s: the stage is %s; apply %s first", prim, name,
			ss->attach == SCH_INLINE ? "inlined" : "computed at a loop", prim);
	if (!sch_stage_is_default(ss))
		return sch_refuse(st, "%s %s: the stage's loops are already transformed; "
			"apply %s first", prim, name, prim);
	for (int d = 0; d < ss->te->ndim; d++)
		if (ss->align_factor[d])
			return sch_refuse(st, "%s %s: apply it before storage_align", prim,
				name);
	int inside = sch_stage_inside(st, s);
	if (inside >= 0)
		return sch_refuse(st, "%s %s: stage '%s' is computed inside it", prim,
			name, st->stages[inside].name);
	return 0;
}

int sch_layout_take(sch_state *st, int s, tessel_op *op, const char *prim,
	const sch_step *step)
{
	char kept[SCH_NAME_MAX];
	snprintf(kept, sizeof(kept), "%s", st->stages[s].name);
	if (!op)
		return sch_refuse(st, "%s %s: %s", prim, kept,
			tessel_ctx_error(st->ctx)->message);
	loop_scope scope = st->stages[s].scope;
	sch_state_rebase(st, op, kept);
	st->stages[sch_find_stage(st, kept)].scope = scope;
	sch_trace_append(st->trace, step);
	return 0;
}
