/* Building ops: the constructors of the public API, shared by the parser. */
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"

static const tessel_loc no_loc = { NULL, 0, 0 };

tessel_op *tessel_op_new(tessel_ctx *ctx, const char *name)
{
	tessel_op *op = calloc(1, sizeof(*op));
	if (!op) {
		te_error(ctx, TESSEL_ERR_LIMIT, no_loc, "out of memory");
		return NULL;
	}
	op->refcount = 1;
	op->ctx = ctx;
	te_arena_init(&op->arena);
	op->name = te_arena_strdup(&op->arena, name ? name : "op");
	return op;
}

tessel_op *tessel_op_retain(tessel_op *op)
{
	if (op)
		op->refcount++;
	return op;
}

void tessel_op_release(tessel_op *op)
{
	if (!op || --op->refcount > 0)
		return;
	te_arena_reset(&op->arena);
	free(op);
}

void te_push(te_arena *a, void ***arr, int *n, void *item)
{
	int cap = 4;
	while (cap < *n)
		cap *= 2;
	if (*n == 0 || *n == cap) {
		int newcap = *n == 0 ? 4 : cap * 2;
		void **grown = te_arena_alloc(a, sizeof(void *) * (size_t)newcap);
		if (*n)
			memcpy(grown, *arr, sizeof(void *) * (size_t)*n);
		*arr = grown;
	}
	(*arr)[(*n)++] = item;
}

tessel_expr *te_expr_new(tessel_op *op, te_expr_kind kind, tessel_loc loc)
{
	tessel_expr *e = te_arena_alloc(&op->arena, sizeof(*e));
	e->kind = kind;
	e->loc = loc;
	return e;
}

te_sym *te_op_find_sym(const tessel_op *op, const char *name)
{
	for (int i = 0; i < op->nsyms; i++)
		if (strcmp(op->syms[i]->name, name) == 0)
			return op->syms[i];
	return NULL;
}

tessel_stage *te_op_find_stage(const tessel_op *op, const char *name)
{
	for (int i = 0; i < op->nstages; i++)
		if (strcmp(op->stages[i]->name, name) == 0)
			return op->stages[i];
	return NULL;
}

tessel_var *te_stage_find_var(const tessel_stage *s, const char *name)
{
	if (s->kind != TE_COMPUTE)
		return NULL;
	for (int i = 0; i < s->ndim; i++)
		if (strcmp(s->axes[i]->name, name) == 0)
			return s->axes[i];
	for (int i = 0; i < s->nraxes; i++)
		if (strcmp(s->raxes[i]->name, name) == 0)
			return s->raxes[i];
	return NULL;
}

/* Return true, after recording an error at "loc", when "name" is already
 * the name of a tensor or symbol of "op". */
static bool name_taken(tessel_op *op, const char *name, tessel_loc loc)
{
	if (te_op_find_stage(op, name)) {
		te_error(op->ctx, TESSEL_ERR_NAME, loc,
			"'%s' is already defined as a tensor", name);
		return true;
	}
	if (te_op_find_sym(op, name)) {
		te_error(op->ctx, TESSEL_ERR_NAME, loc,
			"'%s' is already defined as a size or attribute", name);
		return true;
	}
	return false;
}

/* Return true, after recording an error, when the variable name "name"
 * would hide a tensor, size or attribute of "op". */
static bool var_name_taken(tessel_op *op, const char *name, tessel_loc loc)
{
	const char *what = te_op_find_stage(op, name) ? "a tensor"
		: te_op_find_sym(op, name) ? "a size or attribute" : NULL;
	if (!what)
		return false;
	te_error(op->ctx, TESSEL_ERR_NAME, loc,
		"variable '%s' would hide %s of the same name; rename it", name, what);
	return true;
}

static bool valid_name(tessel_op *op, const char *name, tessel_loc loc)
{
	if (!name || !*name) {
		te_error(op->ctx, TESSEL_ERR_NAME, loc, "empty name");
		return false;
	}
	if (tessel_dtype_parse(name, strlen(name)) >= 0 ||
	    strcmp(name, "int") == 0) {
		te_error(op->ctx, TESSEL_ERR_NAME, loc,
			"'%s' is a type name and cannot name a value", name);
		return false;
	}
	return true;
}

te_sym *te_op_add_sym(tessel_op *op, const char *name, bool is_attr,
	tessel_loc loc)
{
	if (!valid_name(op, name, loc) || name_taken(op, name, loc))
		return NULL;
	te_sym *s = te_arena_alloc(&op->arena, sizeof(*s));
	s->name = te_arena_strdup(&op->arena, name);
	s->is_attr = is_attr;
	s->index = op->nsyms;
	s->loc = loc;
	te_push(&op->arena, (void ***)&op->syms, &op->nsyms, s);
	return s;
}

int tessel_op_attr(tessel_op *op, const char *name)
{
	te_sym *s = te_op_add_sym(op, name, true, no_loc);
	if (!s)
		return -1;
	te_param p = { NULL, s };
	te_param *params = te_arena_alloc(&op->arena,
		sizeof(te_param) * (size_t)(op->nparams + 1));
	if (op->nparams)
		memcpy(params, op->params, sizeof(te_param) * (size_t)op->nparams);
	params[op->nparams++] = p;
	op->params = params;
	return 0;
}

static tessel_stage *new_stage(tessel_op *op, const char *name,
	te_stage_kind kind, int ndim)
{
	if (ndim < 0 || ndim > TESSEL_MAX_DIMS) {
		te_error(op->ctx, TESSEL_ERR_LIMIT, no_loc,
			"'%s' has %d dimensions; at most %d are supported",
			name ? name : "?", ndim, TESSEL_MAX_DIMS);
		return NULL;
	}
	if (!valid_name(op, name, no_loc) || name_taken(op, name, no_loc))
		return NULL;
	tessel_stage *s = te_arena_alloc(&op->arena, sizeof(*s));
	s->name = te_arena_strdup(&op->arena, name);
	s->op = op;
	s->kind = kind;
	s->ndim = ndim;
	s->index = op->nstages;
	s->dims = te_arena_alloc(&op->arena, sizeof(tessel_expr *) * (size_t)(ndim + 1));
	te_push(&op->arena, (void ***)&op->stages, &op->nstages, s);
	return s;
}

tessel_stage *tessel_op_input(tessel_op *op, const char *name,
	tessel_dtype dtype, int ndim, tessel_expr *const *dims)
{
	for (int i = 0; i < ndim; i++)
		if (!dims || !dims[i]) {
			te_error(op->ctx, TESSEL_ERR_VALUE, no_loc,
				"input '%s': dimension %d is missing", name, i);
			return NULL;
		}
	if ((unsigned)dtype >= TESSEL_DTYPE_COUNT) {
		te_error(op->ctx, TESSEL_ERR_TYPE, no_loc,
			"input '%s': invalid dtype", name);
		return NULL;
	}
	tessel_stage *s = new_stage(op, name, TE_INPUT, ndim);
	if (!s)
		return NULL;
	s->dtype = dtype;
	s->has_dtype = true;
	s->explicit_shape = true;
	for (int i = 0; i < ndim; i++)
		s->dims[i] = dims[i];
	te_push(&op->arena, (void ***)&op->inputs, &op->ninputs, s);
	te_param *params = te_arena_alloc(&op->arena,
		sizeof(te_param) * (size_t)(op->nparams + 1));
	if (op->nparams)
		memcpy(params, op->params, sizeof(te_param) * (size_t)op->nparams);
	params[op->nparams++] = (te_param){ s, NULL };
	op->params = params;
	return s;
}

static tessel_var *new_var(tessel_op *op, const char *name, bool is_reduce,
	int index)
{
	tessel_var *v = te_arena_alloc(&op->arena, sizeof(*v));
	v->name = te_arena_strdup(&op->arena, name);
	v->is_reduce = is_reduce;
	v->index = index;
	return v;
}

tessel_stage *tessel_op_compute(tessel_op *op, const char *name, int ndim,
	const char *const *axis_names)
{
	for (int i = 0; i < ndim; i++) {
		if (!axis_names || !axis_names[i] || !*axis_names[i]) {
			te_error(op->ctx, TESSEL_ERR_NAME, no_loc,
				"stage '%s': index variable %d has no name", name, i);
			return NULL;
		}
		if (var_name_taken(op, axis_names[i], no_loc))
			return NULL;
		for (int j = 0; j < i; j++)
			if (strcmp(axis_names[i], axis_names[j]) == 0) {
				te_error(op->ctx, TESSEL_ERR_NAME, no_loc,
					"stage '%s': index variable '%s' appears twice",
					name, axis_names[i]);
				return NULL;
			}
	}
	tessel_stage *s = new_stage(op, name, TE_COMPUTE, ndim);
	if (!s)
		return NULL;
	s->axes = te_arena_alloc(&op->arena, sizeof(tessel_var *) * (size_t)(ndim + 1));
	for (int i = 0; i < ndim; i++)
		s->axes[i] = new_var(op, axis_names[i], false, i);
	return s;
}

int tessel_op_output(tessel_op *op, tessel_stage *stage)
{
	if (!stage)
		return -1;
	if (stage->kind != TE_COMPUTE)
		return te_error(op->ctx, TESSEL_ERR_NAME, stage->loc,
			"output '%s' is an input; outputs must be computed",
			stage->name);
	if (stage->is_output)
		return te_error(op->ctx, TESSEL_ERR_NAME, stage->loc,
			"'%s' is listed as an output twice", stage->name);
	stage->is_output = true;
	te_push(&op->arena, (void ***)&op->outputs, &op->noutputs, stage);
	return 0;
}

tessel_var *tessel_stage_axis(tessel_stage *stage, int i)
{
	if (!stage || stage->kind != TE_COMPUTE || i < 0 || i >= stage->ndim)
		return NULL;
	return stage->axes[i];
}

tessel_var *tessel_stage_reduce_axis(tessel_stage *stage, const char *name,
	tessel_expr *lo, tessel_expr *hi)
{
	if (!stage || stage->kind != TE_COMPUTE)
		return NULL;
	tessel_op *op = stage->op;
	if (!name || !*name) {
		te_error(op->ctx, TESSEL_ERR_NAME, stage->loc,
			"stage '%s': reduction variable has no name", stage->name);
		return NULL;
	}
	if (te_stage_find_var(stage, name)) {
		te_error(op->ctx, TESSEL_ERR_NAME, stage->loc,
			"stage '%s': variable '%s' is already defined",
			stage->name, name);
		return NULL;
	}
	if (var_name_taken(op, name, stage->loc))
		return NULL;
	if ((lo == NULL) != (hi == NULL)) {
		te_error(op->ctx, TESSEL_ERR_VALUE, stage->loc,
			"stage '%s': reduction variable '%s' needs both bounds or none",
			stage->name, name);
		return NULL;
	}
	tessel_var *v = new_var(op, name, true, stage->nraxes);
	if (lo) {
		v->lo = lo;
		v->hi = hi;
		v->extent = tessel_binary_op(op, TESSEL_SUB, hi, lo);
		v->explicit_range = true;
	}
	te_push(&op->arena, (void ***)&stage->raxes, &stage->nraxes, v);
	return v;
}

int tessel_stage_set_shape(tessel_stage *stage, tessel_dtype dtype,
	tessel_expr *const *dims)
{
	if (!stage || stage->kind != TE_COMPUTE)
		return -1;
	tessel_op *op = stage->op;
	if ((unsigned)dtype >= TESSEL_DTYPE_COUNT)
		return te_error(op->ctx, TESSEL_ERR_TYPE, stage->loc,
			"stage '%s': invalid dtype", stage->name);
	for (int i = 0; i < stage->ndim; i++)
		if (!dims || !dims[i])
			return te_error(op->ctx, TESSEL_ERR_VALUE, stage->loc,
				"stage '%s': dimension %d is missing",
				stage->name, i);
	stage->dtype = dtype;
	stage->has_dtype = true;
	stage->explicit_shape = true;
	for (int i = 0; i < stage->ndim; i++)
		stage->dims[i] = dims[i];
	return 0;
}

int tessel_stage_set_body(tessel_stage *stage, tessel_reduce reduce,
	tessel_expr *body)
{
	if (!stage || stage->kind != TE_COMPUTE || !body)
		return -1;
	tessel_op *op = stage->op;
	if (reduce != TESSEL_REDUCE_NONE && stage->nraxes == 0)
		return te_error(op->ctx, TESSEL_ERR_VALUE, stage->loc,
			"stage '%s': a reduction needs reduction variables",
			stage->name);
	if (reduce == TESSEL_REDUCE_NONE && stage->nraxes > 0)
		return te_error(op->ctx, TESSEL_ERR_VALUE, stage->loc,
			"stage '%s': reduction variables without a reduction",
			stage->name);
	if ((unsigned)reduce > TESSEL_RMIN)
		return te_error(op->ctx, TESSEL_ERR_VALUE, stage->loc,
			"stage '%s': invalid reduction", stage->name);
	stage->reduce = reduce;
	stage->body = body;
	return 0;
}
