/* Features of compiled code (tuner/code_features.h). */
#include "tuner/code_features.h"

#include <math.h>
#include <stdio.h>

static const char *const names[TUNE_CODE_FEATURES] = {
	"instructions", "fma", "vector_loads", "vector_stores", "stack_refs",
	"broadcasts", "zmm", "loops", "inner_instructions", "inner_fma",
	"inner_vector_loads", "inner_vector_stores", "inner_stack_refs",
	"frame_bytes", "inner_fma_per_load", "inner_stack_share", "fma_share",
};

static float lg(int x)
{
	return (float)log2(1.0 + (x > 0 ? x : 0));
}

void tune_code_features(const cg_code_stats *s, float *out)
{
	const cg_code_counts *a = &s->all, *in = &s->inner;
	out[TC_INSTRUCTIONS] = lg(a->instructions);
	out[TC_FMA] = lg(a->fma);
	out[TC_VECTOR_LOADS] = lg(a->vector_loads);
	out[TC_VECTOR_STORES] = lg(a->vector_stores);
	out[TC_STACK_REFS] = lg(a->stack_refs);
	out[TC_BROADCASTS] = lg(a->broadcasts);
	out[TC_ZMM] = lg(a->zmm);
	out[TC_LOOPS] = lg(s->loops);
	out[TC_INNER_INSTRUCTIONS] = lg(in->instructions);
	out[TC_INNER_FMA] = lg(in->fma);
	out[TC_INNER_VECTOR_LOADS] = lg(in->vector_loads);
	out[TC_INNER_VECTOR_STORES] = lg(in->vector_stores);
	out[TC_INNER_STACK_REFS] = lg(in->stack_refs);
	out[TC_FRAME_BYTES] = lg(s->frame_bytes);
	out[TC_INNER_FMA_PER_LOAD] = lg(in->fma) - lg(in->vector_loads);
	out[TC_INNER_STACK_SHARE] = lg(in->stack_refs) - lg(in->instructions);
	out[TC_FMA_SHARE] = lg(a->fma) - lg(a->instructions);
}

int tune_code_feature_name(int i, char *buf, size_t len)
{
	if (i < 0 || i >= TUNE_CODE_FEATURES)
		return -1;
	snprintf(buf, len, "code.%s", names[i]);
	return 0;
}
