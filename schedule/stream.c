/* stream: store an output of the op with non-temporal (streaming)
 * stores, which write whole cache lines to memory without reading them
 * first and without keeping them in the caches.  An output written once
 * and larger than the caches then costs its bytes once instead of twice
 * (the read for ownership of every line goes), and does not evict what
 * the kernel reads; one the next kernel reads from the cache loses.  A
 * hint: values never change, and "on" 0 removes it (so that a search
 * can turn it off as a decision).
 *
 * requires: "stage" an output of the op; on is 0 or 1
 * guarantees: lowering marks the output's buffer (loop_buffer.stream);
 *   the CPU code generator stores whole vectors to it with the
 *   non-temporal store of the vector width where the address is aligned
 *   to it (plain stores elsewhere, and for scalar remainders) and fences
 *   the function's streaming stores before it returns; GPU dialects store
 *   as usual
 * invalidates: nothing; cache_write of the stage resets it with the rest
 *   of its schedule */
#include <stdio.h>

#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_stream(sch_state *st, const char *stage, int64_t on)
{
	char what[256];
	snprintf(what, sizeof(what), "stream %s %lld", stage, (long long)on);
	int si = sch_find_stage(st, stage);
	if (si < 0)
		return -1;
	if (!st->stages[si].te->is_output)
		return sch_refuse(st, "%s: '%s' is not an output of the op; only outputs "
			"are stored streaming", what, stage);
	if (on != 0 && on != 1)
		return sch_refuse(st, "%s: the flag must be 0 (plain stores) or 1 "
			"(streaming stores)", what);
	st->stages[si].stream = on == 1;
	sch_step step;
	sch_step_init(&step, "stream");
	sch_step_arg(&step, "%s", stage);
	sch_step_arg(&step, "%lld", (long long)on);
	sch_trace_append(st->trace, &step);
	return 0;
}
