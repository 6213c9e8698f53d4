/* Features of a stored record computed again (tuner/record_features.h):
 * the trace is replayed and lowered by the schedule pipeline, exactly as
 * the search made the candidate (tuner/search.c, make_candidate). */
#include "tuner/record_features.h"

#include "schedule/state.h"
#include "schedule/trace.h"
#include "tuner/features.h"

int tune_trace_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, float *out)
{
	sch_state *st = sch_state_new(ctx, op);
	sch_trace *tr = st ? sch_trace_parse(ctx, "record", trace) : NULL;
	loop_prog *p = tr && sch_replay(st, tr, "record") == 0 ? sch_program(st) : NULL;
	int r = p ? tune_program_features(p, t, out) : -1;
	loop_prog_free(p);
	sch_trace_free(tr);
	sch_state_free(st);
	return r;
}
