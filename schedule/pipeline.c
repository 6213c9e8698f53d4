/* The pipeline from a schedule to a program ready for a printer.  Every
 * pass is listed here, in order, with the verifier between them. */
#include "ir/loop.h"
#include "schedule/state.h"

/* The cache line prefetches step by: that of every CPU tessel targets
 * (a longer line only has some lines asked for twice). */
#define PREFETCH_LINE_BYTES 64

/* Verify "p" after a pass, simplify it and verify it again; return
 * whether it passed both (the violation is in the state's context). */
static bool simplified(sch_state *st, loop_prog *p)
{
	if (loop_verify(st->ctx, p))
		return false;
	loop_simplify(p);
	return loop_verify(st->ctx, p) == 0;
}

loop_prog *sch_program(sch_state *st)
{
	loop_prog *p = sch_lower(st);
	if (!p || loop_verify(st->ctx, p))
		goto fail;
	loop_simplify(p);
	if (loop_expand_prefetch(p, PREFETCH_LINE_BYTES) > 0) {
		if (loop_verify(st->ctx, p))
			goto fail;
		loop_simplify(p);
	}
	if (loop_insert_barriers(st->ctx, p) || loop_verify(st->ctx, p))
		goto fail;
	loop_partition(p);
	if (!simplified(st, p))
		goto fail;
	if (loop_specialize(p) > 0) {
		if (!simplified(st, p))
			goto fail;
		loop_partition(p);
		if (!simplified(st, p))
			goto fail;
	}
	if (loop_partition_lanes(p) > 0 && !simplified(st, p))
		goto fail;
	return p;
fail:
	loop_prog_free(p);
	return NULL;
}
