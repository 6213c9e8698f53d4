/* Arithmetic work of an op: for every compute stage, the number of
 * points of its domain (index and reduction variables) times the float
 * (or integer) operations its body does per point on data, plus one per
 * point for the reduction's combine.  Index arithmetic does not count.
 * This is the convention of GFLOP/s figures (a multiply-add is 2). */
#include "ir/te_impl.h"

/* Return whether a value of "dt" counts: a float, or with "integer" an
 * integer (bool is neither). */
static bool counts(tessel_dtype dt, bool integer)
{
	return integer ? tessel_dtype_is_int(dt) : tessel_dtype_is_float(dt);
}

/* Return the operations of "e" on data of the kind "integer" selects;
 * "index": "e" computes an index, whose arithmetic never counts. */
static double expr_ops(const tessel_expr *e, bool integer, bool index)
{
	switch (e->kind) {
	case TE_ACCESS: {
		double n = 0;
		for (int i = 0; i < e->u.access.n; i++)
			n += expr_ops(e->u.access.index[i], integer, true);
		return n;
	}
	case TE_UNARY:
		return (!index && counts(e->type.dtype, integer) && e->u.un.op != TESSEL_NOT) +
			expr_ops(e->u.un.a, integer, index);
	case TE_BINARY:
		return (!index && counts(e->type.dtype, integer)) +
		       expr_ops(e->u.bin.a, integer, index) + expr_ops(e->u.bin.b, integer, index);
	case TE_SELECT:
		return expr_ops(e->u.sel.cond, integer, index) +
		       expr_ops(e->u.sel.then_, integer, index) +
		       expr_ops(e->u.sel.else_, integer, index);
	case TE_CAST:
		return expr_ops(e->u.cast.a, integer, index);
	default:
		return 0;
	}
}

/* The operations of the bound "op" on data of the kind "integer" selects. */
static double op_ops(const tessel_op *op, bool integer)
{
	double total = 0;
	for (int i = 0; i < op->nstages; i++) {
		const tessel_stage *s = op->stages[i];
		if (s->kind != TE_COMPUTE || !s->extent)
			continue;
		double points = 1;
		for (int d = 0; d < s->ndim; d++)
			points *= (double)s->extent[d];
		for (int k = 0; k < s->nraxes; k++) {
			int64_t n = 0;
			te_expr_const_int(s->raxes[k]->extent, &n);
			points *= (double)n;
		}
		double per_point = expr_ops(s->body, integer, false) +
			(s->reduce != TESSEL_REDUCE_NONE && counts(s->dtype, integer));
		total += points * per_point;
	}
	return total;
}

double tessel_op_flops(const tessel_op *op)
{
	return op_ops(op, false);
}

double tessel_op_int_ops(const tessel_op *op)
{
	return op_ops(op, true);
}
