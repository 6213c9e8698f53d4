/* Finishing an op (the pipeline that makes a built op usable) and binding
 * its sizes and attributes (a copy with the symbols replaced). */
#include <stdlib.h>
#include <string.h>

#include "ir/copy.h"

/* The passes every op goes through, in order: check types (which also
 * bounds the nesting depth the recursive passes see), fold constants,
 * type the folded literals, infer ranges and shapes (and, when bound,
 * verify accesses). */
int tessel_op_finish(tessel_op *op)
{
	if (te_check_types(op))
		return -1;
	te_fold_op(op);
	if (te_check_types(op) || te_infer(op))
		return -1;
	op->finished = true;
	return 0;
}

/* Match "names" with the symbols of "op" into "values"/"given"; every name
 * must be a symbol, every size bound and positive. */
static int match_bindings(const tessel_op *op, int n, const char *const *names,
	const int64_t *in, int64_t *values, bool *given)
{
	const tessel_loc no_loc = op->loc;
	for (int i = 0; i < n; i++) {
		te_sym *s = te_op_find_sym(op, names[i] ? names[i] : "");
		if (!s)
			return te_error(op->ctx, TESSEL_ERR_NAME, no_loc,
				"op '%s' has no size or attribute '%s'", op->name,
				names[i] ? names[i] : "");
		if (given[s->index])
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"'%s' is bound twice", s->name);
		if (!s->is_attr && in[i] <= 0)
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"size '%s' must be positive, not %lld", s->name,
				(long long)in[i]);
		given[s->index] = true;
		values[s->index] = in[i];
	}
	for (int i = 0; i < op->nsyms; i++)
		if (!given[i])
			return te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"%s '%s' of op '%s' is not bound; give it with --set %s=...",
				op->syms[i]->is_attr ? "attribute" : "size",
				op->syms[i]->name, op->name, op->syms[i]->name);
	return 0;
}

tessel_op *tessel_op_bind(tessel_op *op, int n, const char *const *names,
	const int64_t *values)
{
	if (!op->finished && tessel_op_finish(op))
		return NULL;
	int64_t *vals = calloc((size_t)op->nsyms + 1, sizeof(int64_t));
	bool *given = calloc((size_t)op->nsyms + 1, sizeof(bool));
	tessel_op *dst = NULL;
	if (!vals || !given ||
	    match_bindings(op, n, names, values, vals, given))
		goto done;
	dst = tessel_op_new(op->ctx, op->name);
	if (!dst)
		goto done;
	te_copier c;
	te_copier_init(&c, op, dst, vals, given);
	for (int i = 0; i < op->nstages; i++)
		te_copy_stage(&c, op->stages[i]);
	te_copy_outputs(&c);
	te_copy_symbols_and_params(&c);
	te_copier_fini(&c);
	if (tessel_op_finish(dst)) {
		tessel_op_release(dst);
		dst = NULL;
	}
done:
	free(vals);
	free(given);
	return dst;
}
