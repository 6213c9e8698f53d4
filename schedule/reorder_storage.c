/* reorder_storage: store a stage's elements with its axes in another order
 * (Halide's reorder_storage; TVM's transform_layout for a permutation).
 * With cache_read it packs an input: a matrix read along its rows by the
 * vector lanes of a tile becomes a copy in which those lanes are adjacent.
 *
 * requires: a computed stage that is not an output (its buffer is a
 *   temporary tessel lays out), at the root with its default loops and
 *   no stage computed inside it, no storage_align yet; every one of its
 *   axes named once ("STAGE.AXIS", outermost first)
 * guarantees: the stage's buffer is laid out with the axes in the given
 *   order (the last one contiguous), its default loops follow that order,
 *   and every read of it is indexed to match: values are unchanged, so
 *   the program computes the same thing */
#include <stdio.h>

#include "ir/rewrite.h"
#include "ir/te_impl.h"
#include "schedule/layout.h"
#include "schedule/primitives.h"

/* Store in "*stage" the stage that "axes" (each "STAGE.AXIS") all name
 * and in "perm" the position of each among the stage's axes; refuse
 * unless they name every axis of one stage once. */
static int parse_axes(sch_state *st, int n, const char *const *axes, int *stage,
	int *perm)
{
	*stage = -1;
	bool seen[TESSEL_MAX_DIMS] = { false };
	for (int i = 0; i < n; i++) {
		int s, d;
		if (sch_find_axis(st, "reorder_storage", axes[i], &s, &d))
			return -1;
		if (*stage >= 0 && s != *stage)
			return sch_refuse(st, "reorder_storage: '%s' and '%s' are axes of "
				"different stages", axes[0], axes[i]);
		if (seen[d])
			return sch_refuse(st, "reorder_storage: axis '%s' is named twice",
				axes[i]);
		*stage = s;
		seen[d] = true;
		perm[i] = d;
	}
	if (*stage < 0 || n != st->stages[*stage].te->ndim)
		return sch_refuse(st, "reorder_storage: name every axis of the stage "
			"once, outermost first (%d given)", n);
	return 0;
}

int sch_reorder_storage(sch_state *st, int n, const char *const *axes)
{
	int s, perm[TESSEL_MAX_DIMS];
	if (n < 1 || n > TESSEL_MAX_DIMS)
		return sch_refuse(st, "reorder_storage: name between 1 and %d axes",
			TESSEL_MAX_DIMS);
	if (parse_axes(st, n, axes, &s, perm))
		return -1;
	if (sch_layout_check(st, s, "reorder_storage"))
		return -1;
	sch_step step;
	sch_step_init(&step, "reorder_storage");
	for (int i = 0; i < n; i++)
		sch_step_arg(&step, "%s", axes[i]);
	return sch_layout_take(st, s, te_op_reorder_storage(st->op, st->stages[s].te, perm),
		"reorder_storage", &step);
}
