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

#endif
