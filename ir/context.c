/* The context: the last error (kind, message, place) and the ISL context
 * that inference shares across ops. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <isl/ctx.h>
#include <isl/options.h>

#include "ir/memo.h"
#include "ir/te_impl.h"

tessel_ctx *tessel_ctx_new(void)
{
	return calloc(1, sizeof(tessel_ctx));
}

void tessel_ctx_free(tessel_ctx *ctx)
{
	if (!ctx)
		return;
	te_memo_free(ctx->memo);
	if (ctx->isl)
		isl_ctx_free(ctx->isl);
	free(ctx);
}

const tessel_error *tessel_ctx_error(tessel_ctx *ctx)
{
	return &ctx->err;
}

void tessel_ctx_clear_error(tessel_ctx *ctx)
{
	ctx->err.kind = TESSEL_OK;
	ctx->err.message[0] = 0;
	ctx->err.loc = (tessel_loc){ NULL, 0, 0 };
}

void tessel_ctx_print_error(tessel_ctx *ctx, FILE *out)
{
	const tessel_error *e = &ctx->err;
	if (e->loc.file && e->loc.line > 0)
		fprintf(out, "%s:%d:%d: error: %s\n", e->loc.file, e->loc.line,
			e->loc.col, e->message);
	else if (e->loc.file)
		fprintf(out, "%s: error: %s\n", e->loc.file, e->message);
	else
		fprintf(out, "error: %s\n", e->message);
}

int te_error(tessel_ctx *ctx, tessel_error_kind kind, tessel_loc loc,
	const char *fmt, ...)
{
	va_list ap;
	ctx->err.kind = kind;
	ctx->err.loc = loc;
	if (loc.file && loc.file != ctx->err_file) {
		snprintf(ctx->err_file, sizeof(ctx->err_file), "%s", loc.file);
		ctx->err.loc.file = ctx->err_file;
	}
	va_start(ap, fmt);
	vsnprintf(ctx->err.message, sizeof(ctx->err.message), fmt, ap);
	va_end(ap);
	return -1;
}

/* Return the ISL context of "ctx", made on first use; ISL errors do not
 * abort but come back as NULL results that the callers turn into ours. */
struct isl_ctx *te_isl(tessel_ctx *ctx)
{
	if (!ctx->isl) {
		ctx->isl = isl_ctx_alloc();
		isl_options_set_on_error(ctx->isl, ISL_ON_ERROR_CONTINUE);
	}
	return ctx->isl;
}
