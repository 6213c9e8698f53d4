/* Copying ops (ir/copy.c). */
#ifndef TESSEL_IR_COPY_H
#define TESSEL_IR_COPY_H

#include "ir/te_impl.h"

typedef struct te_copier {
	const tessel_op *src;
	tessel_op *dst;
	const int64_t *values;      /* by symbol index, or NULL */
	const bool *given;          /* which symbols "values" binds, or NULL */
	const tessel_stage *stage;  /* the source stage being copied */
	const char *file;           /* the copy's own file name for locations */
	tessel_stage **map;         /* source stage index -> its copy */
	/* Reads of "redirect_from" by the source stages marked in
	 * "redirect_readers" go to "redirect_to" instead. */
	const tessel_stage *redirect_from;
	tessel_stage *redirect_to;
	const bool *redirect_readers;
	/* While "subst_stage" is copied, its variables (axes, then reduction
	 * axes) become the expressions "subst" of the copy. */
	const tessel_stage *subst_stage;
	tessel_expr *const *subst;
} te_copier;

/* Start copying "src" into the empty op "dst", replacing the symbols
 * "given" by "values" (both NULL: keep every symbol). */
void te_copier_init(te_copier *c, const tessel_op *src, tessel_op *dst,
	const int64_t *values, const bool *given);
void te_copier_fini(te_copier *c);
/* Append a copy of the source stage "s" to the copy; return it. */
tessel_stage *te_copy_stage(te_copier *c, const tessel_stage *s);
tessel_expr *te_copy_expr(te_copier *c, const tessel_expr *e);
/* Copy the expression "e" of the source stage "s" with the variables of
 * "s" (its axes, then its reduction axes) replaced by "subst". */
tessel_expr *te_copy_expr_subst(te_copier *c, const tessel_stage *s,
	tessel_expr *const *subst, const tessel_expr *e);
/* Copy the outputs, in declared order, then the symbols and parameters. */
void te_copy_outputs(te_copier *c);
void te_copy_symbols_and_params(te_copier *c);

#endif
