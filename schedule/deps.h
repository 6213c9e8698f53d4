/* Dependence questions about a stage's loop nest, answered with ISL. */
#ifndef TESSEL_SCHEDULE_DEPS_H
#define TESSEL_SCHEDULE_DEPS_H

#include "schedule/state.h"

/* Set "*carried" to whether the loop at nest position "pos" of stage
 * "stage" carries a dependence: two different instances that update the
 * same element run in the same iteration of every enclosing loop but in
 * different iterations of this one.  Return -1 on an ISL failure, or
 * with a refusal when ISL cannot tell within its budget. */
int sch_loop_carries_dependence(sch_state *st, int stage, int pos,
	bool *carried);

#endif
