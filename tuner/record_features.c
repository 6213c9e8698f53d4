/* Features of a stored record computed again (tuner/record_features.h):
 * the trace is replayed and lowered by the schedule pipeline, exactly as
 * the search made the candidate (tuner/search.c, make_candidate). */
#include "tuner/record_features.h"

#include "codegen/cpu_kernel.h"
#include "ir/te_impl.h"
#include "schedule/trace.h"
#include "tuner/code_features.h"
#include "tuner/features.h"

int tune_trace_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, float *out)
{
	loop_prog *p = sch_trace_program(ctx, op, "record", trace);
	int r = p ? tune_program_features(p, t, out) : -1;
	loop_prog_free(p);
	return r;
}

int tune_trace_code_features(tessel_ctx *ctx, tessel_op *op, const char *trace,
	const rt_cpu_target *t, const char *tool, float *out)
{
	loop_prog *p = sch_trace_program(ctx, op, "record", trace);
	cg_cpu_kernel k;
	cg_code_stats st;
	char why[512];
	int r = p ? cg_cpu_kernel_compile(ctx, p, t, NULL, &k) : -1;
	if (r == 0 && cg_code_stats_of(tool, k.so_path, &st, why, sizeof(why))) {
		te_error(ctx, TESSEL_ERR_IO, (tessel_loc){ NULL, 0, 0 }, "%s", why);
		r = -1;
	}
	if (r == 0)
		tune_code_features(&st, out);
	loop_prog_free(p);
	return r;
}
