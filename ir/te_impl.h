/* Internal layout of tensor expressions (the public view is tessel/te.h).
 *
 * An op owns an arena; every stage, variable, expression and string of the
 * op is allocated in it and freed with the op.  Nodes are never shared
 * between ops: binding copies. */
#ifndef TESSEL_IR_TE_IMPL_H
#define TESSEL_IR_TE_IMPL_H

#include "tessel/te.h"
#include "ir/arena.h"

#define TE_MAX_DEPTH 200  /* deepest expression nesting accepted */

struct tessel_ctx {
	tessel_error err;
	char err_file[256];  /* err.loc.file points here: errors outlive sources */
	struct isl_ctx *isl;
	struct te_memo *memo;  /* ir/memo.h: ISL texts, region bounds */
};

/* Record an error in "ctx" at "loc"; return -1 for convenience. */
int te_error(tessel_ctx *ctx, tessel_error_kind kind, tessel_loc loc,
	const char *fmt, ...) __attribute__((format(printf, 4, 5)));
struct isl_ctx *te_isl(tessel_ctx *ctx);

typedef enum te_expr_kind {
	TE_INT,     /* integer literal: ival */
	TE_FLOAT,   /* float literal: fval */
	TE_BOOL,    /* boolean literal: ival */
	TE_SYM,     /* size parameter or integer attribute: sym */
	TE_VAR,     /* index or reduction variable: var */
	TE_ACCESS,  /* element of a tensor: access */
	TE_UNARY,   /* unary operator or intrinsic: un */
	TE_BINARY,  /* binary operator, min, max, pow: bin */
	TE_SELECT,  /* select(cond, a, b), evaluating only the chosen side */
	TE_CAST     /* conversion to dtype: cast */
} te_expr_kind;

typedef struct te_sym {
	const char *name;
	int index;          /* position in op->syms */
	bool is_attr;       /* declared "name: int" rather than a size */
	tessel_loc loc;     /* first mention */
} te_sym;

struct tessel_var {
	const char *name;
	tessel_loc loc;
	bool is_reduce;
	int index;            /* position among the stage's axes or raxes */
	tessel_expr *lo;      /* NULL until known; index variables start at 0 */
	tessel_expr *extent;  /* NULL until known */
	tessel_expr *hi;      /* the bound as written in "k in lo..hi", or NULL */
	bool explicit_range;  /* written by the user ("k in 0..K") */
};

/* The type a subexpression has after tessel_op_finish.  Literals and
 * variables are "weak": they take the type of what they meet. */
typedef struct te_type {
	tessel_dtype dtype;
	bool weak;
} te_type;

struct tessel_expr {
	te_expr_kind kind;
	te_type type;
	tessel_loc loc;
	union {
		int64_t ival;
		double fval;
		te_sym *sym;
		tessel_var *var;
		struct {
			tessel_stage *tensor;
			int n;
			tessel_expr **index;
		} access;
		struct {
			tessel_unary op;
			tessel_expr *a;
		} un;
		struct {
			tessel_binary op;
			tessel_expr *a, *b;
		} bin;
		struct {
			tessel_expr *cond, *then_, *else_;
		} sel;
		struct {
			tessel_dtype to;
			tessel_expr *a;
		} cast;
	} u;
};

typedef enum te_stage_kind { TE_INPUT, TE_COMPUTE } te_stage_kind;

struct tessel_stage {
	tessel_op *op;          /* the op that owns the stage */
	const char *name;
	tessel_loc loc;
	te_stage_kind kind;
	int index;              /* position in op->stages */
	tessel_dtype dtype;
	bool has_dtype;         /* dtype known (inputs, explicit, or inferred) */
	bool explicit_shape;    /* "NAME[...] : dtype[dims]" was written */
	int ndim;
	tessel_expr **dims;     /* ndim entries; NULL until known */
	int64_t *extent;        /* ndim entries once bound, else NULL */
	tessel_var **axes;      /* TE_COMPUTE: ndim index variables */
	tessel_reduce reduce;
	int nraxes;
	tessel_var **raxes;
	tessel_expr *body;      /* TE_COMPUTE */
	bool is_output;
};

/* A parameter in declaration order: an input tensor or an attribute. */
typedef struct te_param {
	tessel_stage *input;  /* NULL for an attribute */
	te_sym *attr;
} te_param;

struct tessel_op {
	int refcount;
	tessel_ctx *ctx;
	te_arena arena;
	const char *name;
	tessel_loc loc;
	int nparams;
	te_param *params;
	int nsyms;
	te_sym **syms;            /* unbound sizes and attributes */
	int nstages;
	tessel_stage **stages;    /* inputs and compute stages in order */
	int ninputs;
	tessel_stage **inputs;
	int noutputs;
	tessel_stage **outputs;
	bool finished;
	bool bound;               /* no symbols left, all extents known */
};

struct tessel_module {
	tessel_ctx *ctx;
	int nops;
	tessel_op **ops;
};

/* Helpers shared by the passes of ir/. */
tessel_expr *te_expr_new(tessel_op *op, te_expr_kind kind, tessel_loc loc);
te_sym *te_op_find_sym(const tessel_op *op, const char *name);
te_sym *te_op_add_sym(tessel_op *op, const char *name, bool is_attr,
	tessel_loc loc);
tessel_stage *te_op_find_stage(const tessel_op *op, const char *name);
tessel_var *te_stage_find_var(const tessel_stage *s, const char *name);
/* Append "item" to the arena-allocated array "*arr" of "*n" pointers. */
void te_push(te_arena *a, void ***arr, int *n, void *item);

/* Type-check "op", giving every expression a type and every stage without
 * an explicit dtype the type of its body (ir/te_types.c). */
int te_check_types(tessel_op *op);
/* Infer ranges of variables and shapes of stages with ISL; verify every
 * access in bounds where sizes are known (ir/te_infer.c). */
int te_infer(tessel_op *op);
/* Return "e" with operations on literals folded and x+0, x-0, x*1, x/1
 * simplified (ir/fold.c).  Nodes of "e" may be reused or rewritten. */
tessel_expr *te_fold(tessel_op *op, tessel_expr *e);
/* Fold every expression of "op". */
void te_fold_op(tessel_op *op);
/* Return true when "a" and "b" are the same expression of one op. */
bool te_expr_equal(const tessel_expr *a, const tessel_expr *b);
/* Return true, storing the value in "*v", when "e" is an integer constant. */
bool te_expr_const_int(const tessel_expr *e, int64_t *v);
/* Visit every access below "e", calling "fn" with "under_select" true for
 * accesses inside a branch of a select (which need not be in bounds where
 * their branch is not taken). */
typedef int (*te_access_fn)(tessel_expr *access, bool under_select,
	void *user);
int te_visit_accesses(tessel_expr *e, bool under_select, te_access_fn fn,
	void *user);
/* Names used when printing. */
const char *te_unary_name(tessel_unary u);
const char *te_binary_name(tessel_binary b);
const char *te_reduce_name(tessel_reduce r);

#endif
