/* What the primitives that lay out a computed stage's buffer
 * (reorder_storage, split_storage) share: their rules, and taking the
 * rewritten op (schedule/layout.c). */
#ifndef TESSEL_SCHEDULE_LAYOUT_H
#define TESSEL_SCHEDULE_LAYOUT_H

#include "schedule/state.h"
#include "schedule/trace.h"

/* Return 0 when the layout of stage "s" may change: not an output, at
 * the root with its default loops, no storage_align yet, no stage
 * computed inside it; else refuse, naming the primitive "prim". */
int sch_layout_check(sch_state *st, int s, const char *prim);
/* Rebase "st" on "op" (the stage "s" laid out anew, or NULL with the
 * reason in the context: refused, naming "prim"), keeping the stage's
 * scope, and append "step" to the trace.  Return 0 or -1. */
int sch_layout_take(sch_state *st, int s, tessel_op *op, const char *prim,
	const sch_step *step);

#endif
