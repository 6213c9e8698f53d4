/* Floating-point work of an op: for every compute stage, the number of
 * points of its domain (index and reduction variables) times the float
 * operations its body does per point, plus one per point for the
 * reduction's combine.  Integer index arithmetic does not count.  This is
 * the convention of GFLOP/s figures (a multiply-add is 2). */
#include "ir/te_impl.h"

static double expr_flops(const tessel_expr *e)
{
	switch (e->kind) {
	case TE_ACCESS: {
		double n = 0;
		for (int i = 0; i < e->u.access.n; i++)
			n += expr_flops(e->u.access.index[i]);
		return n;
	}
	case TE_UNARY:
		return (tessel_dtype_is_float(e->type.dtype) &&
			e->u.un.op != TESSEL_NOT) + expr_flops(e->u.un.a);
	case TE_BINARY:
		return (tessel_dtype_is_float(e->type.dtype) ? 1 : 0) +
		       expr_flops(e->u.bin.a) + expr_flops(e->u.bin.b);
	case TE_SELECT:
		return expr_flops(e->u.sel.cond) + expr_flops(e->u.sel.then_) +
		       expr_flops(e->u.sel.else_);
	case TE_CAST:
		return expr_flops(e->u.cast.a);
	default:
		return 0;
	}
}

double tessel_op_flops(const tessel_op *op)
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
		double per_point = expr_flops(s->body) +
			(s->reduce != TESSEL_REDUCE_NONE && tessel_dtype_is_float(s->dtype));
		total += points * per_point;
	}
	return total;
}
