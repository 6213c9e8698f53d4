/* split: one loop becomes an outer and an inner loop.
 *
 * requires: "loop" is a live loop; factor >= 1
 * guarantees: parent = outer * factor + inner; when the factor does not
 *   divide the extent, lowering guards the body with parent < extent
 * invalidates: the name of the split loop */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

static int check_names(sch_state *st, const sch_stage *s, const char *outer,
	const char *inner)
{
	if (!outer[0] || !inner[0] || strchr(outer, '.') || strchr(inner, '.'))
		return sch_refuse(st, "split: loop names must be non-empty and without '.'");
	if (strcmp(outer, inner) == 0)
		return sch_refuse(st, "split: both new loops are named '%s'", outer);
	if (sch_name_used(s, outer) || sch_name_used(s, inner))
		return sch_refuse(st, "split: stage '%s' already has a loop named '%s'",
			s->name, sch_name_used(s, outer) ? outer : inner);
	return 0;
}

static int split_unchecked(sch_state *st, const char *loop, int64_t factor,
	bool nparts, const char *outer, const char *inner)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_stage *s = &st->stages[si];
	if (factor < 1)
		return sch_refuse(st, "split %s: %s must be positive, not %lld", loop,
			nparts ? "nparts" : "factor", (long long)factor);
	char oname[SCH_NAME_MAX], iname[SCH_NAME_MAX];
	snprintf(oname, sizeof(oname), "%s", outer ? outer : "");
	snprintf(iname, sizeof(iname), "%s", inner ? inner : "");
	if (!outer)
		snprintf(oname, sizeof(oname), "%.*so", SCH_NAME_MAX - 2, s->iters[it].name);
	if (!inner)
		snprintf(iname, sizeof(iname), "%.*si", SCH_NAME_MAX - 2, s->iters[it].name);
	if (check_names(st, s, oname, iname))
		return -1;
	int64_t extent = s->iters[it].extent;
	int64_t inner_extent = nparts ? (extent + factor - 1) / factor : factor;
	if (inner_extent > extent)
		inner_extent = extent;
	sch_iter o = s->iters[it], i = s->iters[it];
	snprintf(o.name, sizeof(o.name), "%s", oname);
	snprintf(i.name, sizeof(i.name), "%s", iname);
	o.origin = SCH_SPLIT_OUTER;
	i.origin = SCH_SPLIT_INNER;
	o.parent = i.parent = it;
	o.factor = i.factor = inner_extent;
	o.extent = (extent + inner_extent - 1) / inner_extent;
	i.extent = inner_extent;
	o.kind = i.kind = LOOP_SERIAL;
	o.unroll_limit = i.unroll_limit = 0;
	o.min_blocks = i.min_blocks = 0;
	o.dot_group = i.dot_group = 0;
	o.prefetch[0] = i.prefetch[0] = '\0';
	o.outer = o.inner = i.outer = i.inner = o.fused_into = i.fused_into = -1;
	o.split_outer = o.split_inner = i.split_outer = i.split_inner = -1;
	int pos = sch_leaf_pos(s, it);
	int oi = sch_add_iter(st, s, &o);
	int ii = sch_add_iter(st, s, &i);
	s->iters[it].leaf = false;
	s->iters[it].split_outer = oi;
	s->iters[it].split_inner = ii;
	int *grown = realloc(s->leaves, sizeof(int) * (size_t)(s->nleaves + 1));
	s->leaves = grown;
	memmove(&s->leaves[pos + 2], &s->leaves[pos + 1],
		sizeof(int) * (size_t)(s->nleaves - pos - 1));
	s->leaves[pos] = oi;
	s->leaves[pos + 1] = ii;
	s->nleaves++;
	for (int k = 0; k < st->nstages; k++)
		if (sch_is_attached(&st->stages[k]) && st->stages[k].attach_stage == si &&
		    st->stages[k].attach_iter == it)
			st->stages[k].attach_iter = ii;
	if (s->init_iter == it)
		s->init_iter = oi;
	sch_step step;
	sch_step_init(&step, "split");
	sch_step_arg(&step, "%s", loop);
	if (nparts)
		sch_step_arg(&step, "nparts=%lld", (long long)factor);
	else
		sch_step_arg(&step, "%lld", (long long)factor);
	sch_step_out(&step, "%s.%s", s->name, oname);
	sch_step_out(&step, "%s.%s", s->name, iname);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_split(sch_state *st, const char *loop, int64_t factor, bool nparts,
	const char *outer, const char *inner)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "split %s", loop);
	sch_guard_begin(st, &snap);
	int rc = split_unchecked(st, loop, factor, nparts, outer, inner);
	return sch_guard_end(st, &snap, rc, what);
}
