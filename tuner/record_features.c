/* Features of a stored record computed again (tuner/record_features.h):
 * the trace is replayed and lowered by the schedule pipeline, exactly as
 * the search made the candidate (tuner/search.c, make_candidate). */
#include "tuner/record_features.h"

#include "schedule/trace.h"
#include "tuner/features.h"

int tune_trace_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, float *out)
{
	loop_prog *p = sch_trace_program(ctx, op, "record", trace);
	int r = p ? tune_program_features(p, t, out) : -1;
	loop_prog_free(p);
	return r;
}
