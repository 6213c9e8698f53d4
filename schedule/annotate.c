/* annotate: attach a key = value annotation to a loop.
 *
 * Known keys:
 *   auto_unroll_max_step  unroll loops below this one whose total trip
 *                         count is at most the value (0..4096; 0 turns
 *                         it off);
 *   min_blocks_per_sm     on a loop bound to a block index: the blocks of
 *                         its kernel that should fit one multiprocessor
 *                         at once (0..32; 0 turns it off).  CUDA prints
 *                         it as __launch_bounds__(threads, value), which
 *                         caps each thread's registers so that they do
 *                         (ptxas spills past the cap); OpenCL has no
 *                         such bound and ignores it;
 *   dot_pairs, dot_quads  1 on a reduction loop of 2 (4) iterations:
 *                         the code generator may sum its products in one
 *                         instruction of pairs (quads): AVX512 BF16's
 *                         vdpbf16ps for bf16 data, AVX512 VNNI's
 *                         vpdpbusd for i8 (codegen/cpu_c.c); a hint that
 *                         changes no value; 0 turns it off.
 * requires: a live loop; a known key; a value in its range; for
 *   min_blocks_per_sm, the loop already bound to blockIdx */
#include <string.h>

#include "schedule/primitives.h"
#include "schedule/trace.h"

/* The most blocks a multiprocessor of any architecture tessel knows
 * holds at once. */
#define MAX_BLOCKS_PER_SM 32

static bool is_block_loop(loop_kind k)
{
	return k == LOOP_BLOCK_X || k == LOOP_BLOCK_Y || k == LOOP_BLOCK_Z;
}

int sch_annotate(sch_state *st, const char *loop, const char *key, int64_t value)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_iter *t = &st->stages[si].iters[it];
	if (strcmp(key, "auto_unroll_max_step") == 0) {
		if (value < 0 || value > 4096)
			return sch_refuse(st, "annotate %s: auto_unroll_max_step must be in "
				"0..4096, not %lld", loop, (long long)value);
		t->unroll_limit = (int)value;
	} else if (strcmp(key, "min_blocks_per_sm") == 0) {
		if (value < 0 || value > MAX_BLOCKS_PER_SM)
			return sch_refuse(st, "annotate %s: min_blocks_per_sm must be in "
				"0..%d, not %lld", loop, MAX_BLOCKS_PER_SM, (long long)value);
		if (!is_block_loop(t->kind))
			return sch_refuse(st, "annotate %s: min_blocks_per_sm needs a loop "
				"bound to blockIdx", loop);
		t->min_blocks = (int)value;
	} else if (strcmp(key, "dot_pairs") == 0 || strcmp(key, "dot_quads") == 0) {
		int group = key[4] == 'p' ? 2 : 4;
		if (value < 0 || value > 1)
			return sch_refuse(st, "annotate %s: %s must be 0 or 1, not %lld",
				loop, key, (long long)value);
		if (value && (!t->reduce || t->extent != group))
			return sch_refuse(st, "annotate %s: %s needs a reduction loop of "
				"%d iterations", loop, key, group);
		t->dot_group = value ? group : 0;
	} else {
		return sch_refuse(st, "annotate %s: unknown annotation '%s' (known: "
			"auto_unroll_max_step, min_blocks_per_sm, dot_pairs, dot_quads)", loop, key);
	}
	sch_step step;
	sch_step_init(&step, "annotate");
	sch_step_arg(&step, "%s", loop);
	sch_step_arg(&step, "%s", key);
	sch_step_arg(&step, "%lld", (long long)value);
	sch_trace_append(st->trace, &step);
	return 0;
}
