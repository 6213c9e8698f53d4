/* split_storage: store one axis of a stage as two, an outer one of
 * extent / F and an inner one of F (TVM's transform_layout for a split).
 * With reorder_storage after it, the inner part can move innermost: a
 * packed input B[k, j] stored [k / 4, j, k % 4] holds the four k of each
 * j side by side, the groups that vpdpbusd and vdpbf16ps multiply.
 *
 * requires: a computed stage that is not an output, reduces nothing, at
 *   the root with its default loops and no stage computed inside it, no
 *   storage_align yet, fewer than the most axes; "STAGE.AXIS" one of its
 *   axes, whose extent F (at least 2) divides
 * guarantees: the stage's axis AXIS becomes AXISo (extent / F) and AXISi
 *   (F), in that order where AXIS was, the element [.., o, i, ..] being
 *   the old [.., o * F + i, ..]; every read [.., e, ..] of it reads
 *   [.., e / F, e % F, ..]: values are unchanged, so the program computes
 *   the same thing */
#include <stdio.h>

#include "ir/rewrite.h"
#include "ir/te_impl.h"
#include "schedule/layout.h"
#include "schedule/primitives.h"

int sch_split_storage(sch_state *st, const char *axis, int64_t factor)
{
	int s, d;
	if (sch_find_axis(st, "split_storage", axis, &s, &d))
		return -1;
	const tessel_stage *t = st->stages[s].te;
	const char *name = st->stages[s].name;
	if (sch_layout_check(st, s, "split_storage"))
		return -1;
	if (t->nraxes)
		return sch_refuse(st, "split_storage %s: the stage reduces; split the "
			"storage of a stage that copies or computes elementwise", name);
	if (t->ndim >= TESSEL_MAX_DIMS)
		return sch_refuse(st, "split_storage %s: the stage has %d axes already, "
			"the most a stage has", name, t->ndim);
	if (factor < 2 || t->extent[d] % factor)
		return sch_refuse(st, "split_storage %s: factor %lld must be at least 2 "
			"and divide the extent %lld", axis, (long long)factor,
			(long long)t->extent[d]);
	sch_step step;
	sch_step_init(&step, "split_storage");
	sch_step_arg(&step, "%s", axis);
	sch_step_arg(&step, "%lld", (long long)factor);
	return sch_layout_take(st, s, te_op_split_storage(st->op, t, d, factor),
		"split_storage", &step);
}
