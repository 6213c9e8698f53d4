/* storage_align: pad the stride of one axis of a stage's buffer, so that
 * threads reading a column of a shared tile hit different memory banks
 * (TVM's storage_align: stride = k * factor + offset).
 *
 * requires: a computed stage that is not an output (its buffer is a
 *   temporary tessel lays out) and not inlined; "STAGE.AXIS" names one
 *   of its axes (its index variables: ax0, ax1 for a cache stage);
 *   factor >= 1 and 0 <= offset < factor
 * guarantees: every buffer lowering makes for the stage (its region
 *   under compute_at, or the whole tensor at the root) has for that axis
 *   the smallest stride >= the dense one with stride % factor == offset;
 *   the axes outside it grow with it.  Values and indices are unchanged:
 *   only the layout is, so the program computes the same thing
 * invalidates: the sizes of the stage's buffers (shared memory included,
 *   which must still fit: schedule/shared.c) */
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

/* Return the smallest value >= "n" that is "offset" modulo "factor". */
static int64_t aligned(int64_t n, int64_t factor, int64_t offset)
{
	int64_t r = ((n - offset) % factor + factor) % factor;
	return r ? n + factor - r : n;
}

void sch_buffer_strides(const sch_stage *s, const int64_t *shape,
	int64_t *strides)
{
	int64_t stride = 1;
	for (int d = s->te->ndim - 1; d >= 0; d--) {
		if (s->align_factor[d] > 0)
			stride = aligned(stride, s->align_factor[d], s->align_offset[d]);
		strides[d] = stride;
		stride *= shape[d];
	}
}

int sch_storage_align(sch_state *st, const char *axis, int64_t factor,
	int64_t offset)
{
	char what[256];
	snprintf(what, sizeof(what), "storage_align %s %lld %lld", axis,
		(long long)factor, (long long)offset);
	int si, d;
	if (sch_find_axis(st, what, axis, &si, &d))
		return -1;
	sch_stage *s = &st->stages[si];
	const char *stage = s->name;
	if (s->te->is_output)
		return sch_refuse(st, "%s: '%s' is an output of the op; its layout is "
			"the caller's", what, stage);
	if (s->attach == SCH_INLINE)
		return sch_refuse(st, "%s: '%s' is inlined and has no buffer", what, stage);
	if (factor < 1 || factor > 4096)
		return sch_refuse(st, "%s: the factor must be between 1 and 4096", what);
	if (offset < 0 || offset >= factor)
		return sch_refuse(st, "%s: the offset must be between 0 and factor - 1",
			what);
	int64_t old_factor = s->align_factor[d], old_offset = s->align_offset[d];
	s->align_factor[d] = factor;
	s->align_offset[d] = offset;
	if (sch_check_shared(st, what)) {
		s->align_factor[d] = old_factor;
		s->align_offset[d] = old_offset;
		return -1;
	}
	sch_step step;
	sch_step_init(&step, "storage_align");
	sch_step_arg(&step, "%s", axis);
	sch_step_arg(&step, "%lld", (long long)factor);
	sch_step_arg(&step, "%lld", (long long)offset);
	sch_trace_append(st->trace, &step);
	return 0;
}
