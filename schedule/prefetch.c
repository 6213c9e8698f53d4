/* prefetch: at each iteration of a loop, ask the memory system for what
 * an iteration "distance" later will read of an input (Halide's
 * Func::prefetch; software prefetch on CPUs).  A hint: values never
 * change, and distance 0 removes the loop's prefetch (so that a search
 * can turn it off as a decision).
 *
 * requires: a live loop that is not vectorized nor bound to a GPU index;
 *   "tensor" an input of the op; 0 <= distance <= 64
 * guarantees: lowering annotates the loop (ir/loop.h, for_.prefetch) and
 *   ir/loop_prefetch.c puts at the top of its body prefetches of the
 *   cache lines of the input that the body reads at iteration
 *   var + distance (when that iteration exists); one prefetch per loop
 *   (a later one replaces it)
 * invalidates: nothing; split and fuse of the loop drop it, as they drop
 *   annotations */
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_prefetch(sch_state *st, const char *loop, const char *tensor,
	int64_t distance)
{
	int si, it;
	char what[256];
	snprintf(what, sizeof(what), "prefetch %s %s %lld", loop, tensor,
		(long long)distance);
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_iter *t = &st->stages[si].iters[it];
	const tessel_stage *in = te_op_find_stage(st->op, tensor);
	if (!in)
		return sch_refuse(st, "%s: no tensor '%s'", what, tensor);
	if (in->kind == TE_COMPUTE)
		return sch_refuse(st, "%s: '%s' is a stage; only inputs of the op are "
			"prefetched", what, tensor);
	if (distance < 0 || distance > 64)
		return sch_refuse(st, "%s: the distance must be between 0 (none) and 64",
			what);
	if (t->kind != LOOP_SERIAL && t->kind != LOOP_PARALLEL &&
	    t->kind != LOOP_UNROLLED)
		return sch_refuse(st, "%s: the loop is %s; only serial, parallel and "
			"unrolled loops prefetch", what, loop_kind_name(t->kind));
	snprintf(t->prefetch, sizeof(t->prefetch), "%s", distance ? tensor : "");
	t->prefetch_distance = (int)distance;
	sch_step step;
	sch_step_init(&step, "prefetch");
	sch_step_arg(&step, "%s", loop);
	sch_step_arg(&step, "%s", tensor);
	sch_step_arg(&step, "%lld", (long long)distance);
	sch_trace_append(st->trace, &step);
	return 0;
}
