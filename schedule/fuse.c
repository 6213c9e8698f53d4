/* fuse: two adjacent loops become one.
 *
 * requires: "outer" directly encloses "inner" in one stage's nest; both
 *   spatial or both reduction loops; no stage computed at "outer" (its
 *   place would vanish)
 * guarantees: outer = fused / extent(inner), inner = fused % extent(inner)
 * invalidates: the names of the two loops */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

static bool has_stage_attached(const sch_state *st, int stage, int iter)
{
	for (int k = 0; k < st->nstages; k++)
		if (sch_is_attached(&st->stages[k]) && st->stages[k].attach_stage == stage &&
		    st->stages[k].attach_iter == iter)
			return true;
	return false;
}

static int check_fusable(sch_state *st, const char *outer, const char *inner,
	int so, int io, int si, int ii)
{
	if (so != si)
		return sch_refuse(st, "fuse %s %s: the loops belong to different stages",
			outer, inner);
	sch_stage *s = &st->stages[so];
	if (sch_leaf_pos(s, ii) != sch_leaf_pos(s, io) + 1)
		return sch_refuse(st, "fuse %s %s: %s does not directly enclose %s",
			outer, inner, outer, inner);
	if (s->iters[io].reduce != s->iters[ii].reduce)
		return sch_refuse(st, "fuse %s %s: cannot fuse a spatial loop with a "
			"reduction loop", outer, inner);
	if (has_stage_attached(st, so, io))
		return sch_refuse(st, "fuse %s %s: a stage is computed at %s; move it first",
			outer, inner, outer);
	if (__builtin_mul_overflow(s->iters[io].extent, s->iters[ii].extent,
			&(int64_t){ 0 }))
		return sch_refuse(st, "fuse %s %s: the fused extent overflows", outer, inner);
	return 0;
}

static int fuse_unchecked(sch_state *st, const char *outer, const char *inner,
	const char *fused)
{
	int so, io, si, ii;
	if (sch_find_loop(st, outer, &so, &io) || sch_find_loop(st, inner, &si, &ii) ||
	    check_fusable(st, outer, inner, so, io, si, ii))
		return -1;
	sch_stage *s = &st->stages[so];
	char name[SCH_NAME_MAX];
	if (fused)
		snprintf(name, sizeof(name), "%s", fused);
	else
		snprintf(name, sizeof(name), "%.30s_%.30s", s->iters[io].name,
			s->iters[ii].name);
	if (!name[0] || strchr(name, '.') || sch_name_used(s, name))
		return sch_refuse(st, "fuse: '%s' is not a free loop name in stage '%s'",
			name, s->name);
	sch_iter f = { 0 };
	snprintf(f.name, sizeof(f.name), "%s", name);
	f.extent = s->iters[io].extent * s->iters[ii].extent;
	f.reduce = s->iters[io].reduce;
	f.leaf = true;
	f.origin = SCH_FUSED;
	f.axis = f.parent = f.fused_into = f.split_outer = f.split_inner = -1;
	f.outer = io;
	f.inner = ii;
	f.kind = LOOP_SERIAL;
	int pos = sch_leaf_pos(s, io);
	int fi = sch_add_iter(st, s, &f);
	s->iters[io].leaf = s->iters[ii].leaf = false;
	s->iters[io].fused_into = s->iters[ii].fused_into = fi;
	s->leaves[pos] = fi;
	memmove(&s->leaves[pos + 1], &s->leaves[pos + 2],
		sizeof(int) * (size_t)(s->nleaves - pos - 2));
	s->nleaves--;
	for (int k = 0; k < st->nstages; k++)
		if (sch_is_attached(&st->stages[k]) && st->stages[k].attach_stage == so &&
		    st->stages[k].attach_iter == ii)
			st->stages[k].attach_iter = fi;
	if (s->init_iter == io || s->init_iter == ii)
		s->init_iter = fi;
	sch_step step;
	sch_step_init(&step, "fuse");
	sch_step_arg(&step, "%s", outer);
	sch_step_arg(&step, "%s", inner);
	sch_step_out(&step, "%s.%s", s->name, name);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_fuse(sch_state *st, const char *outer, const char *inner, const char *fused)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "fuse %s %s", outer, inner);
	sch_guard_begin(st, &snap);
	int rc = fuse_unchecked(st, outer, inner, fused);
	return sch_guard_end(st, &snap, rc, what);
}
