/* reorder: loops of one stage change places.
 *
 * requires: distinct live loops of one stage
 * guarantees: the loops occupy the positions they held, in the given
 *   order; stages computed at a loop move with it.  Any order is legal:
 *   spatial iterations are independent and reductions (sum, prod, max,
 *   min) are reassociated, as every tensor compiler does. */
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

static int compare_ints(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Refuse the nest "leaves" of stage "si" when a consumer computed after a
 * loop of it (reverse_compute_at) would have a reduction loop around it:
 * the elements would not be finished when the consumer reads them. */
static int check_finished(sch_state *st, int si, const int *leaves)
{
	const sch_stage *s = &st->stages[si];
	for (int k = 0; k < st->nstages; k++) {
		const sch_stage *c = &st->stages[k];
		if (c->attach != SCH_AFTER || c->attach_stage != si)
			continue;
		for (int p = 0; p < s->nleaves; p++) {
			if (s->iters[leaves[p]].reduce)
				return sch_refuse(st, "reorder: reduction loop %s.%s would enclose "
					"%s.%s, after which '%s' is computed", s->name,
					s->iters[leaves[p]].name, s->name,
					s->iters[c->attach_iter].name, c->name);
			if (leaves[p] == c->attach_iter)
				break;
		}
	}
	return 0;
}

static int reorder_unchecked(sch_state *st, int n, const char *const *loops)
{
	if (n < 1 || n > SCH_MAX_ARGS)
		return sch_refuse(st, "reorder: give between 1 and %d loops", SCH_MAX_ARGS);
	int stage = -1, iters[SCH_MAX_ARGS], pos[SCH_MAX_ARGS];
	for (int k = 0; k < n; k++) {
		int s;
		if (sch_find_loop(st, loops[k], &s, &iters[k]))
			return -1;
		if (stage >= 0 && s != stage)
			return sch_refuse(st, "reorder: %s and %s belong to different stages",
				loops[0], loops[k]);
		stage = s;
		for (int j = 0; j < k; j++)
			if (iters[j] == iters[k])
				return sch_refuse(st, "reorder: %s appears twice", loops[k]);
		pos[k] = sch_leaf_pos(&st->stages[s], iters[k]);
	}
	sch_stage *s = &st->stages[stage];
	qsort(pos, (size_t)n, sizeof(int), compare_ints);
	int *leaves = malloc(sizeof(int) * (size_t)(s->nleaves + 1));
	memcpy(leaves, s->leaves, sizeof(int) * (size_t)s->nleaves);
	for (int k = 0; k < n; k++)
		leaves[pos[k]] = iters[k];
	if (check_finished(st, stage, leaves) ||
	    sch_check_bound_nest(st, stage, leaves, "reorder")) {
		free(leaves);
		return -1;
	}
	free(s->leaves);
	s->leaves = leaves;
	sch_step step;
	sch_step_init(&step, "reorder");
	for (int k = 0; k < n; k++)
		sch_step_arg(&step, "%s", loops[k]);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_reorder(sch_state *st, int n, const char *const *loops)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "reorder %s", n > 0 ? loops[0] : "");
	sch_guard_begin(st, &snap);
	return sch_guard_end(st, &snap, reorder_unchecked(st, n, loops), what);
}
