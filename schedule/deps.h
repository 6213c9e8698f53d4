/* Dependence questions about a stage's loop nest, answered with ISL. */
#ifndef TESSEL_SCHEDULE_DEPS_H
#define TESSEL_SCHEDULE_DEPS_H

#include "ir/strbuf.h"
#include "schedule/state.h"

/* Write the value of iter "it" of stage "s" as a quasi-affine ISL
 * expression of the stage's axes a0, a1, ... (0-based). */
void sch_iter_text(const sch_stage *s, int it, te_strbuf *sb);
/* Write the constraints "0 <= a<k> < extent" of every axis of "s",
 * prefixed by "prefix" on the names (e.g. "x" gives x0, x1, ...). */
void sch_domain_text(const sch_stage *s, const char *prefix, te_strbuf *sb);
/* Set "*carried" to whether the loop at nest position "pos" of stage
 * "stage" carries a dependence: two different instances that update the
 * same element run in the same iteration of every enclosing loop but in
 * different iterations of this one.  Return -1 on an ISL failure. */
int sch_loop_carries_dependence(sch_state *st, int stage, int pos,
	bool *carried);

#endif
