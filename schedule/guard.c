/* The guard around the primitives that move loops or stages
 * (schedule/guard.h). */
#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"

void sch_guard_begin(const sch_state *st, sch_snapshot *snap)
{
	snap->stages = NULL;
	for (int si = 0; si < st->nstages; si++)
		if (st->stages[si].scope == LOOP_SHARED || st->stages[si].attach == SCH_AT) {
			sch_snapshot_take(st, snap);
			return;
		}
}

int sch_guard_end(sch_state *st, sch_snapshot *snap, int rc, const char *what)
{
	if (!snap->stages)
		return rc;
	if (rc == 0 && (sch_check_shared(st, what) || sch_check_readers_within(st, what))) {
		sch_snapshot_restore(st, snap);
		return -1;
	}
	sch_snapshot_free(snap);
	return rc;
}
