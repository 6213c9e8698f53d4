/* A bound on the work ISL may do for one analysis (ir/isl_budget.h). */
#include "ir/isl_budget.h"

#include <isl/ctx.h>

#include "ir/te_impl.h"

void te_isl_budget_begin(tessel_ctx *ctx, unsigned long ops)
{
	isl_ctx *isl = te_isl(ctx);
	isl_ctx_reset_error(isl);
	isl_ctx_reset_operations(isl);
	isl_ctx_set_max_operations(isl, ops);
}

bool te_isl_budget_end(tessel_ctx *ctx)
{
	isl_ctx *isl = te_isl(ctx);
	bool over = isl_ctx_last_error(isl) == isl_error_quota;
	isl_ctx_set_max_operations(isl, 0);
	isl_ctx_reset_operations(isl);
	isl_ctx_reset_error(isl);
	return over;
}
