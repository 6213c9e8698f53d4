/* The guard around the primitives that move loops or stages: rules that
 * hold between stages, not within the primitive's own arguments, are
 * checked on the result and the state restored when one breaks. */
#ifndef TESSEL_SCHEDULE_GUARD_H
#define TESSEL_SCHEDULE_GUARD_H

#include "schedule/state.h"

/* Take a snapshot of "st" into "snap" when a rule could break (a stage
 * is computed at a loop or lives in shared memory), else nothing.  Pass
 * the primitive's result "rc" to sch_guard_end, which returns it, or -1
 * with the state restored when the primitive succeeded but broke a rule:
 * the shared-memory rules (sch_check_shared) or the nesting of the
 * readers of a stage computed at a loop (sch_check_readers_within).
 * "what" names the primitive in the refusal. */
void sch_guard_begin(const sch_state *st, sch_snapshot *snap);
int sch_guard_end(sch_state *st, sch_snapshot *snap, int rc, const char *what);

#endif
