/* tile: split two loops and order the pieces xo, yo, xi, yi.
 *
 * requires: two distinct live loops of one stage; factors >= 1
 * guarantees: the same as split, split, reorder (recorded as one step) */
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"

#include "schedule/primitives.h"
#include "schedule/trace.h"

static int check_tile(sch_state *st, const char *x, const char *y, int64_t fx,
	int64_t fy)
{
	int sx, ix, sy, iy;
	if (sch_find_loop(st, x, &sx, &ix) || sch_find_loop(st, y, &sy, &iy))
		return -1;
	if (sx != sy || ix == iy)
		return sch_refuse(st, "tile %s %s: need two different loops of one stage",
			x, y);
	if (fx < 1 || fy < 1)
		return sch_refuse(st, "tile %s %s: factors must be positive", x, y);
	const sch_stage *s = &st->stages[sx];
	const char *names[2] = { s->iters[ix].name, s->iters[iy].name };
	for (int k = 0; k < 2; k++) {
		char o[SCH_NAME_MAX + 2], i[SCH_NAME_MAX + 2];
		snprintf(o, sizeof(o), "%so", names[k]);
		snprintf(i, sizeof(i), "%si", names[k]);
		if (strlen(o) >= SCH_NAME_MAX || sch_name_used(s, o) || sch_name_used(s, i))
			return sch_refuse(st, "tile %s %s: loop names %s/%s are taken",
				x, y, o, i);
	}
	return 0;
}

int sch_tile(sch_state *st, const char *x, const char *y, int64_t fx, int64_t fy)
{
	if (check_tile(st, x, y, fx, fy))
		return -1;
	int steps = st->trace->nsteps;
	char stage[SCH_NAME_MAX * 2], xo[SCH_NAME_MAX * 3], xi[SCH_NAME_MAX * 3],
		yo[SCH_NAME_MAX * 3], yi[SCH_NAME_MAX * 3];
	snprintf(stage, sizeof(stage), "%.*s", (int)(strrchr(x, '.') - x), x);
	snprintf(xo, sizeof(xo), "%so", x);
	snprintf(xi, sizeof(xi), "%si", x);
	snprintf(yo, sizeof(yo), "%so", y);
	snprintf(yi, sizeof(yi), "%si", y);
	const char *order[] = { xo, yo, xi, yi };
	sch_snapshot snap;
	sch_snapshot_take(st, &snap);
	if (sch_split(st, x, fx, false, NULL, NULL) ||
	    sch_split(st, y, fy, false, NULL, NULL) ||
	    sch_reorder(st, 4, order)) {
		char why[512];
		snprintf(why, sizeof(why), "%s", tessel_ctx_error(st->ctx)->message);
		sch_snapshot_restore(st, &snap);
		return sch_refuse(st, "tile %s %s: %s", x, y, why);
	}
	sch_snapshot_free(&snap);
	st->trace->nsteps = steps;
	sch_step step;
	sch_step_init(&step, "tile");
	sch_step_arg(&step, "%s", x);
	sch_step_arg(&step, "%s", y);
	sch_step_arg(&step, "%lld", (long long)fx);
	sch_step_arg(&step, "%lld", (long long)fy);
	for (int k = 0; k < 4; k++)
		sch_step_out(&step, "%s", order[k]);
	sch_trace_append(st->trace, &step);
	return 0;
}
