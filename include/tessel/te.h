/* Tensor expressions: the public C API for declaring operators.  The .te
 * language (tessel_parse) builds exactly the same IR through these calls.
 * Ownership and error conventions are in tessel/api.h. */
#ifndef TESSEL_TE_H
#define TESSEL_TE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessel/api.h"
#include "tessel/dtype.h"
#include "tessel/tensor.h"

typedef struct tessel_ctx tessel_ctx;
typedef struct tessel_op tessel_op;
typedef struct tessel_stage tessel_stage;
typedef struct tessel_var tessel_var;
typedef struct tessel_expr tessel_expr;

/* Error kinds: a user mistake in the input (syntax, names, types, shapes,
 * sizes), an I/O problem, a limit (out of memory, too deep, too large), or
 * an internal bug. */
typedef enum tessel_error_kind {
	TESSEL_OK = 0,
	TESSEL_ERR_SYNTAX,
	TESSEL_ERR_NAME,
	TESSEL_ERR_TYPE,
	TESSEL_ERR_SHAPE,
	TESSEL_ERR_VALUE,
	TESSEL_ERR_IO,
	TESSEL_ERR_LIMIT,
	TESSEL_ERR_INTERNAL
} tessel_error_kind;

/* A place in a source text; "file" is NULL for ops built through the API. */
typedef struct tessel_loc {
	const char *file;
	int line;
	int col;
} tessel_loc;

typedef struct tessel_error {
	tessel_error_kind kind;
	tessel_loc loc;
	char message[512];
} tessel_error;

TESSEL_API __tessel_give tessel_ctx *tessel_ctx_new(void);
TESSEL_API void tessel_ctx_free(__tessel_take tessel_ctx *ctx);
/* Return the last error recorded in "ctx" (kind TESSEL_OK when none). */
TESSEL_API const tessel_error *tessel_ctx_error(__tessel_keep tessel_ctx *ctx);
TESSEL_API void tessel_ctx_clear_error(__tessel_keep tessel_ctx *ctx);
/* Write the last error of "ctx" as "FILE:LINE:COL: error: MESSAGE\n". */
TESSEL_API void tessel_ctx_print_error(__tessel_keep tessel_ctx *ctx,
	FILE *out);

/* ---- building an op ---------------------------------------------------- */

typedef enum tessel_unary {
	TESSEL_NEG, TESSEL_NOT,
	TESSEL_EXP, TESSEL_LOG, TESSEL_SQRT, TESSEL_RSQRT, TESSEL_TANH,
	TESSEL_ERF, TESSEL_SIGMOID, TESSEL_ABS, TESSEL_FLOOR,
	TESSEL_UNARY_COUNT
} tessel_unary;

/* DIV is true division on floats and floor division on integers; MOD is
 * the matching floor modulo (the result has the sign of the divisor). */
typedef enum tessel_binary {
	TESSEL_ADD, TESSEL_SUB, TESSEL_MUL, TESSEL_DIV, TESSEL_MOD,
	TESSEL_LT, TESSEL_LE, TESSEL_GT, TESSEL_GE, TESSEL_EQ, TESSEL_NE,
	TESSEL_AND, TESSEL_OR,
	TESSEL_MIN, TESSEL_MAX, TESSEL_POW,
	TESSEL_BINARY_COUNT
} tessel_binary;

typedef enum tessel_reduce {
	TESSEL_REDUCE_NONE, TESSEL_SUM, TESSEL_PROD, TESSEL_RMAX, TESSEL_RMIN
} tessel_reduce;

/* Return a new op named "name" (reference count 1). */
TESSEL_API __tessel_give tessel_op *tessel_op_new(__tessel_keep tessel_ctx *ctx,
	const char *name);
TESSEL_API __tessel_give tessel_op *tessel_op_retain(__tessel_keep tessel_op *op);
TESSEL_API void tessel_op_release(__tessel_take tessel_op *op);

/* Declare the integer attribute "name" (a parameter "name: int"). */
TESSEL_API int tessel_op_attr(__tessel_keep tessel_op *op, const char *name);
/* Declare the input tensor "name" with "ndim" dimensions "dims" (integer
 * expressions over sizes and attributes; a name never declared becomes a
 * size parameter when used in a dimension). */
TESSEL_API tessel_stage *tessel_op_input(__tessel_keep tessel_op *op,
	const char *name, tessel_dtype dtype, int ndim, tessel_expr *const *dims);
/* Begin the compute stage "name" with index variables "axis_names".  Give
 * it a body with tessel_stage_set_body. */
TESSEL_API tessel_stage *tessel_op_compute(__tessel_keep tessel_op *op,
	const char *name, int ndim, const char *const *axis_names);
/* Mark "stage" as an output of "op", in the order of the calls. */
TESSEL_API int tessel_op_output(__tessel_keep tessel_op *op,
	tessel_stage *stage);

TESSEL_API tessel_var *tessel_stage_axis(tessel_stage *stage, int i);
/* Add the reduction variable "name" ranging over ["lo", "hi"); with both
 * NULL the range is inferred from the accesses. */
TESSEL_API tessel_var *tessel_stage_reduce_axis(tessel_stage *stage,
	const char *name, tessel_expr *lo, tessel_expr *hi);
/* Give "stage" an explicit dtype and shape instead of inferred ones. */
TESSEL_API int tessel_stage_set_shape(tessel_stage *stage, tessel_dtype dtype,
	tessel_expr *const *dims);
/* Set the body of "stage": "body" alone, or reduced with "reduce" over all
 * of the stage's reduction variables. */
TESSEL_API int tessel_stage_set_body(tessel_stage *stage, tessel_reduce reduce,
	tessel_expr *body);

/* Expression constructors.  Each returns NULL (with the error in the op's
 * context) on a bad argument; NULL arguments propagate, so nested calls
 * need one check at the end. */
TESSEL_API tessel_expr *tessel_int(tessel_op *op, int64_t v);
TESSEL_API tessel_expr *tessel_float(tessel_op *op, double v);
TESSEL_API tessel_expr *tessel_bool(tessel_op *op, bool v);
TESSEL_API tessel_expr *tessel_size(tessel_op *op, const char *name);
TESSEL_API tessel_expr *tessel_var_ref(tessel_op *op, tessel_var *var);
TESSEL_API tessel_expr *tessel_access(tessel_op *op, tessel_stage *t, int n,
	tessel_expr *const *index);
TESSEL_API tessel_expr *tessel_unary_op(tessel_op *op, tessel_unary u,
	tessel_expr *a);
TESSEL_API tessel_expr *tessel_binary_op(tessel_op *op, tessel_binary b,
	tessel_expr *a, tessel_expr *c);
TESSEL_API tessel_expr *tessel_select(tessel_op *op, tessel_expr *cond,
	tessel_expr *then_, tessel_expr *else_);
TESSEL_API tessel_expr *tessel_cast(tessel_op *op, tessel_dtype dt,
	tessel_expr *a);

/* Check names and types and infer every missing range and shape.  Sizes
 * that are still symbolic stay symbolic where inference allows.  Required
 * before an op is bound, printed as normalized, hashed or evaluated. */
TESSEL_API int tessel_op_finish(__tessel_keep tessel_op *op);

/* Return a new op equal to "op" with its sizes and attributes bound to
 * "values" (names[i] = values[i]), shapes inferred and verified with every
 * access in bounds.  Every size must be bound and positive; attributes may
 * be any integer. */
TESSEL_API __tessel_give tessel_op *tessel_op_bind(__tessel_keep tessel_op *op,
	int n, const char *const *names, const int64_t *values);

/* ---- inspecting an op --------------------------------------------------- */

TESSEL_API const char *tessel_op_name(const tessel_op *op);
TESSEL_API int tessel_op_num_inputs(const tessel_op *op);
TESSEL_API tessel_stage *tessel_op_input_at(const tessel_op *op, int i);
TESSEL_API int tessel_op_num_outputs(const tessel_op *op);
TESSEL_API tessel_stage *tessel_op_output_at(const tessel_op *op, int i);
/* Names of the op's sizes and attributes still unbound, in order. */
TESSEL_API int tessel_op_num_symbols(const tessel_op *op);
TESSEL_API const char *tessel_op_symbol_name(const tessel_op *op, int i);
TESSEL_API bool tessel_op_symbol_is_attr(const tessel_op *op, int i);
TESSEL_API bool tessel_op_is_bound(const tessel_op *op);

TESSEL_API const char *tessel_stage_name(const tessel_stage *s);
TESSEL_API tessel_dtype tessel_stage_dtype(const tessel_stage *s);
TESSEL_API int tessel_stage_ndim(const tessel_stage *s);
/* Return the extent of dimension "i" of "s" in a bound op, or -1. */
TESSEL_API int64_t tessel_stage_dim(const tessel_stage *s, int i);

/* Return the floating-point operations one evaluation of the bound "op"
 * performs (a multiply-add counts 2; integer index math does not count). */
TESSEL_API double tessel_op_flops(const tessel_op *op);
/* Return the integer operations on data one evaluation performs, counted
 * as tessel_op_flops counts float ones (a quantized matmul: 2 per
 * multiply-add; index math does not count). */
TESSEL_API double tessel_op_int_ops(const tessel_op *op);

/* Print "op" in the .te language, normalized (explicit shapes and ranges
 * wherever they are known).  Return a malloc'ed string. */
TESSEL_API char *tessel_op_print(const tessel_op *op);
/* Structural equality and hash: names of tensors, variables and the op do
 * not matter; dtypes, shapes, bound sizes and computations do.  The hash
 * is stable across runs and machines (the tuner's workload key). */
TESSEL_API bool tessel_op_equal(const tessel_op *a, const tessel_op *b);
TESSEL_API uint64_t tessel_op_hash(const tessel_op *op);

/* ---- the .te language ---------------------------------------------------- */

/* A parsed .te file: one or more ops. */
typedef struct tessel_module tessel_module;

/* Parse the .te text "src" of length "len"; "file" names it in errors. */
TESSEL_API __tessel_give tessel_module *tessel_parse(__tessel_keep tessel_ctx *ctx,
	const char *file, const char *src, size_t len);
TESSEL_API __tessel_give tessel_module *tessel_parse_file(
	__tessel_keep tessel_ctx *ctx, const char *path);
TESSEL_API void tessel_module_free(__tessel_take tessel_module *m);
TESSEL_API int tessel_module_num_ops(const tessel_module *m);
TESSEL_API tessel_op *tessel_module_op(const tessel_module *m, int i);
/* Return the op called "name", or the only op when "name" is NULL. */
TESSEL_API tessel_op *tessel_module_find(__tessel_keep tessel_ctx *ctx,
	const tessel_module *m, const char *name);

/* ---- the reference interpreter ------------------------------------------ */

/* Evaluate the bound op "op" in float64 (integers exactly) on "inputs"
 * (one per input, in order, matching dtype and shape) into "outputs"
 * (allocated by the caller, one per output, matching dtype and shape).
 * A stage of 2^22 reduction steps or more is evaluated by one thread per
 * CPU the caller may run on, started and joined within the call. */
TESSEL_API int tessel_interp(__tessel_keep const tessel_op *op,
	tessel_tensor *const *inputs, tessel_tensor *const *outputs);

#endif
