/* The default GPU schedule: one thread per element of each root stage's
 * output, in blocks of SCH_GPU_DEFAULT_THREADS, what every op gets on a
 * GPU target when no schedule is given (correct everywhere, fast
 * nowhere: tuning does better). */
#include <stdio.h>

#include "schedule/bound.h"
#include "schedule/gpu_default.h"
#include "schedule/primitives.h"

/* Write the qualified name of the loop at nest position "pos" of stage
 * "si" into "buf". */
static void loop_name(const sch_state *st, int si, int pos, char *buf, size_t len)
{
	const sch_stage *s = &st->stages[si];
	snprintf(buf, len, "%s.%s", s->name, s->iters[s->leaves[pos]].name);
}

/* Return the number of spatial loops of stage "si" in front of its nest. */
static int leading_spatial(const sch_state *st, int si)
{
	const sch_stage *s = &st->stages[si];
	int n = 0;
	while (n < s->nleaves && !s->iters[s->leaves[n]].reduce)
		n++;
	return n;
}

/* Fuse the spatial loops of stage "si", split the result by "threads"
 * and bind the two loops. */
static int schedule_stage(sch_state *st, int si, int threads)
{
	char a[160], b[160];
	for (int n = leading_spatial(st, si); n > 1; n--) {
		loop_name(st, si, 0, a, sizeof(a));
		loop_name(st, si, 1, b, sizeof(b));
		if (sch_fuse(st, a, b, NULL))
			return -1;
	}
	const sch_stage *s = &st->stages[si];
	int64_t n = s->iters[s->leaves[0]].extent;
	loop_name(st, si, 0, a, sizeof(a));
	if (sch_split(st, a, n < threads ? n : threads, false, NULL, NULL))
		return -1;
	loop_name(st, si, 0, a, sizeof(a));
	loop_name(st, si, 1, b, sizeof(b));
	if (sch_bind(st, a, "blockIdx.x"))
		return -1;
	return sch_bind(st, b, "threadIdx.x");
}

int sch_gpu_default(sch_state *st, int threads)
{
	for (int si = 0; si < st->nstages; si++)
		if (st->stages[si].attach == SCH_ROOT && leading_spatial(st, si) > 0 &&
		    !sch_stage_has_bound(&st->stages[si]) && schedule_stage(st, si, threads))
			return -1;
	return 0;
}
