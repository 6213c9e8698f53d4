/* cache_write: compute a stage into a cache, then copy it out.
 *
 * requires: a computed stage with its default loops, at the root, with no
 *   stage computed inside it; scope "local" or "global" ("shared" is
 *   accepted for GPU schedules)
 * guarantees: a new stage STAGE_SCOPE computes what the stage computed
 *   (with its reduction) and the stage copies it element by element; the
 *   new stage is usually computed at a loop of the copy next, so that its
 *   accumulators stay in a small buffer (registers, on the CPU) */
#include <stdio.h>
#include <string.h>

#include "ir/rewrite.h"
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_stage_inside(const sch_state *st, int s);

int sch_parse_scope(sch_state *st, const char *what, const char *scope,
	loop_scope *out)
{
	if (strcmp(scope, "local") == 0)
		*out = LOOP_LOCAL;
	else if (strcmp(scope, "shared") == 0)
		*out = LOOP_SHARED;
	else if (strcmp(scope, "global") == 0)
		*out = LOOP_GLOBAL;
	else
		return sch_refuse(st, "%s: unknown scope '%s' (local, shared or global)",
			what, scope);
	return 0;
}

/* Write into "buf" a stage name made of "base" and "scope" that "op" does
 * not use yet. */
void sch_fresh_stage_name(const tessel_op *op, const char *base,
	const char *scope, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%s", base, scope);
	for (int n = 1; te_op_find_stage(op, buf) || te_op_find_sym(op, buf); n++)
		snprintf(buf, len, "%s_%s%d", base, scope, n);
}

int sch_cache_write(sch_state *st, const char *stage, const char *scope)
{
	int s = sch_find_stage(st, stage);
	loop_scope sc;
	if (s < 0 || sch_parse_scope(st, "cache_write", scope, &sc))
		return -1;
	sch_stage *ss = &st->stages[s];
	if (ss->attach != SCH_ROOT)
		return sch_refuse(st, "cache_write %s: the stage is %s; apply cache_write "
			"first", stage, ss->attach == SCH_INLINE ? "inlined" : "computed at a loop");
	if (!sch_stage_is_default(ss))
		return sch_refuse(st, "cache_write %s: the stage's loops are already "
			"transformed; apply cache_write first", stage);
	int inside = sch_stage_inside(st, s);
	if (inside >= 0)
		return sch_refuse(st, "cache_write %s: stage '%s' is computed inside it",
			stage, st->stages[inside].name);
	char name[SCH_NAME_MAX];
	sch_fresh_stage_name(st->op, stage, scope, name, sizeof(name));
	sch_step step;
	sch_step_init(&step, "cache_write");
	sch_step_arg(&step, "%s", stage);
	sch_step_arg(&step, "%s", scope);
	sch_step_out(&step, "%s", name);
	tessel_op *op = te_op_cache_write(st->op, ss->te, name);
	if (!op)
		return sch_refuse(st, "cache_write %s: %s", step.args[0],
			tessel_ctx_error(st->ctx)->message);
	sch_state_rebase(st, op, step.args[0]);
	st->stages[sch_find_stage(st, name)].scope = sc;
	sch_trace_append(st->trace, &step);
	return 0;
}
