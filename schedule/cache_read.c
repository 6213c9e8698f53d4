/* cache_read: read a tensor through a copy.
 *
 * requires: a tensor (input or stage, not inlined, not computed at a loop)
 *   and one or more stages that read it; scope "local", "shared" or
 *   "global"
 * guarantees: a new stage TENSOR_SCOPE copies the tensor element by
 *   element and the given readers read the copy; computed at a loop of a
 *   reader, the copy holds just the tile that loop needs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rewrite.h"
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_parse_scope(sch_state *st, const char *what, const char *scope,
	loop_scope *out);
void sch_fresh_stage_name(const tessel_op *op, const char *base,
	const char *scope, char *buf, size_t len);

/* Return true when the body of "reader" reads "t" directly. */
static bool reads_directly(const tessel_expr *e, const tessel_stage *t)
{
	switch (e->kind) {
	case TE_ACCESS:
		if (e->u.access.tensor == t)
			return true;
		for (int i = 0; i < e->u.access.n; i++)
			if (reads_directly(e->u.access.index[i], t))
				return true;
		return false;
	case TE_UNARY: return reads_directly(e->u.un.a, t);
	case TE_BINARY:
		return reads_directly(e->u.bin.a, t) || reads_directly(e->u.bin.b, t);
	case TE_SELECT:
		return reads_directly(e->u.sel.cond, t) || reads_directly(e->u.sel.then_, t) ||
		       reads_directly(e->u.sel.else_, t);
	case TE_CAST: return reads_directly(e->u.cast.a, t);
	default: return false;
	}
}

static int mark_readers(sch_state *st, const tessel_stage *t, int n,
	const char *const *readers, bool *marked)
{
	for (int k = 0; k < n; k++) {
		int r = sch_find_stage(st, readers[k]);
		if (r < 0)
			return -1;
		if (!reads_directly(st->stages[r].te->body, t))
			return sch_refuse(st, "cache_read %s: '%s' does not read it", t->name,
				readers[k]);
		if (st->stages[r].attach == SCH_INLINE || st->stages[r].attach == SCH_AFTER)
			return sch_refuse(st, "cache_read %s: reader '%s' is %s", t->name,
				readers[k], st->stages[r].attach == SCH_INLINE ? "inlined"
					: "computed inside its producer's loop");
		int ts = sch_stage_of(st, t);
		if (ts >= 0 && st->stages[ts].attach == SCH_AT &&
		    st->stages[ts].attach_stage == r)
			return sch_refuse(st, "cache_read %s: '%s' is computed inside reader "
				"'%s'; apply cache_read before compute_at", t->name, t->name,
				readers[k]);
		marked[st->stages[r].te->index] = true;
	}
	return 0;
}

int sch_cache_read(sch_state *st, const char *tensor, const char *scope, int n,
	const char *const *readers)
{
	loop_scope sc;
	if (sch_parse_scope(st, "cache_read", scope, &sc))
		return -1;
	tessel_stage *t = te_op_find_stage(st->op, tensor);
	if (!t)
		return sch_refuse(st, "cache_read: no tensor '%s'", tensor);
	int ts = sch_stage_of(st, t);
	if (ts >= 0 && st->stages[ts].attach == SCH_INLINE)
		return sch_refuse(st, "cache_read %s: the stage is inlined", tensor);
	if (ts >= 0 && st->stages[ts].attach == SCH_AT)
		return sch_refuse(st, "cache_read %s: '%s' is computed inside a loop of "
			"'%s', for the stages there only; cache_read it first", tensor, tensor,
			st->stages[st->stages[ts].attach_stage].name);
	if (n < 1 || n > SCH_MAX_ARGS - 2)
		return sch_refuse(st, "cache_read %s: name between 1 and %d readers",
			tensor, SCH_MAX_ARGS - 2);
	bool *marked = calloc((size_t)st->op->nstages + 1, sizeof(bool));
	char name[SCH_NAME_MAX];
	tessel_op *op = NULL;
	sch_step step;
	sch_step_init(&step, "cache_read");
	sch_step_arg(&step, "%s", tensor);
	sch_step_arg(&step, "%s", scope);
	for (int k = 0; k < n; k++)
		sch_step_arg(&step, "%s", readers[k]);
	if (mark_readers(st, t, n, readers, marked) == 0) {
		sch_fresh_stage_name(st->op, tensor, scope, name, sizeof(name));
		op = te_op_cache_read(st->op, t, name, marked);
		if (!op)
			sch_refuse(st, "cache_read %s: %s", tensor,
				tessel_ctx_error(st->ctx)->message);
	}
	free(marked);
	if (!op)
		return -1;
	sch_state_rebase(st, op, "");
	st->stages[sch_find_stage(st, name)].scope = sc;
	sch_step_out(&step, "%s", name);
	sch_trace_append(st->trace, &step);
	return 0;
}
