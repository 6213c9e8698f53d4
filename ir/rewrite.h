/* Rewrites of ops for schedules (ir/rewrite.c). */
#ifndef TESSEL_IR_REWRITE_H
#define TESSEL_IR_REWRITE_H

#include "ir/te_impl.h"

/* Return a copy of the bound "op" in which the computation of stage "s"
 * moves into a new stage "name" placed before it (with its reduction),
 * and "s" copies that stage element by element. */
tessel_op *te_op_cache_write(const tessel_op *op, const tessel_stage *s,
	const char *name);
/* Return a copy of the bound "op" with a new stage "name" that copies the
 * tensor "t", placed right after it; the stages marked in "readers" (by
 * index in "op") read the copy instead of "t". */
tessel_op *te_op_cache_read(const tessel_op *op, const tessel_stage *t,
	const char *name, const bool *readers);
/* Return a copy of the bound "op" in which the computed stage "s" (not an
 * output) stores its elements with its axes in the order "perm" (axis d
 * of the copy is axis perm[d] of "s"), and every read of it is indexed
 * accordingly: the same values, another layout in memory. */
tessel_op *te_op_reorder_storage(const tessel_op *op, const tessel_stage *s,
	const int *perm);
/* Return a copy of the bound "op" in which the computed stage "s" (not an
 * output, no reduction) stores its axis "axis" as two, of extents
 * extent / "factor" (which must divide it) and "factor", and every read
 * [.., e, ..] of it reads [.., e / factor, e % factor, ..]: the same
 * values, another layout in memory. */
tessel_op *te_op_split_storage(const tessel_op *op, const tessel_stage *s, int axis,
	int64_t factor);

#endif
