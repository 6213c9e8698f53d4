/* annotate: attach a key = value annotation to a loop.
 *
 * Known keys: auto_unroll_max_step (unroll loops below this one whose
 * total trip count is at most the value; 0 turns it off).
 * requires: a live loop; a known key; a value in its range */
#include <string.h>

#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_annotate(sch_state *st, const char *loop, const char *key, int64_t value)
{
	int si, it;
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	if (strcmp(key, "auto_unroll_max_step") != 0)
		return sch_refuse(st, "annotate %s: unknown annotation '%s' (known: "
			"auto_unroll_max_step)", loop, key);
	if (value < 0 || value > 4096)
		return sch_refuse(st, "annotate %s: auto_unroll_max_step must be in "
			"0..4096, not %lld", loop, (long long)value);
	st->stages[si].iters[it].unroll_limit = (int)value;
	sch_step step;
	sch_step_init(&step, "annotate");
	sch_step_arg(&step, "%s", loop);
	sch_step_arg(&step, "%s", key);
	sch_step_arg(&step, "%lld", (long long)value);
	sch_trace_append(st->trace, &step);
	return 0;
}
