/* The checker of loop programs, run between passes (the QBE `ssacheck`
 * habit): a pass that breaks an invariant is caught where it breaks it,
 * not in the generated code.
 *
 * Invariants:
 *   - argument i has arg == i;
 *   - every variable used is bound by an enclosing loop; each variable is
 *     bound by one loop of the program;
 *   - every buffer loaded or stored is an argument or allocated by an
 *     enclosing alloc; no alloc allocates an argument, nor a buffer that is
 *     already allocated around it;
 *   - loads and stores have one integer index per dimension of their
 *     buffer, and constant indices lie inside its shape;
 *   - a load has its buffer's dtype, a stored value the buffer's dtype;
 *   - conditions (of ifs and selects) and the operands of && || ! are bool;
 *   - arithmetic operands have the node's dtype, or are integers in
 *     integer arithmetic; comparisons compare equal dtypes or integers;
 *   - loop bounds are integers; vectorized loops have a constant positive
 *     extent.
 *
 * The walk allocates two arrays per call (variable states, a stack of
 * allocated buffers), nothing per node. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/loop.h"
#include "ir/te_impl.h"

typedef enum var_state {
	VAR_UNBOUND,  /* no loop has bound it yet */
	VAR_BOUND,    /* bound by an enclosing loop */
	VAR_DONE      /* bound by a loop that has ended */
} var_state;

typedef struct verifier {
	tessel_ctx *ctx;
	const loop_prog *p;
	unsigned char *vars;          /* var_state by variable id */
	const loop_buffer **allocs;   /* buffers allocated around the walk */
	int nallocs, cap;
} verifier;

static int violation(verifier *vf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Record "fmt" as the violation of "vf", prefixed with "loop IR: ". */
static int violation(verifier *vf, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return te_error(vf->ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ 0 },
		"loop IR: %s", msg);
}

/* Return whether "dt" is an integer type (i8, u8, i32, i64; not bool). */
static bool is_int(tessel_dtype dt)
{
	return tessel_dtype_is_int(dt);
}

static const char *dt_name(tessel_dtype dt)
{
	return tessel_dtype_name(dt);
}

/* Return whether "b" is an argument of the program. */
static bool is_argument(const verifier *vf, const loop_buffer *b)
{
	return b->arg >= 0 && b->arg < vf->p->nargs && vf->p->args[b->arg] == b;
}

/* Return whether "b" is allocated by an alloc around the walk. */
static bool is_allocated(const verifier *vf, const loop_buffer *b)
{
	for (int i = vf->nallocs - 1; i >= 0; i--)
		if (vf->allocs[i] == b)
			return true;
	return false;
}

/* Check that each argument knows its position. */
static int check_arguments(verifier *vf)
{
	for (int i = 0; i < vf->p->nargs; i++) {
		const loop_buffer *b = vf->p->args[i];
		if (b->arg != i)
			return violation(vf, "argument '%s' is at position %d but has arg %d",
				b->name, i, b->arg);
	}
	return 0;
}

/* Check that the id of "v" indexes the program's variables. */
static int check_var_id(verifier *vf, const loop_var *v)
{
	if (v->id < 0 || v->id >= vf->p->nvars)
		return violation(vf, "variable '%s' has id %d, outside the program's %d variables",
			v->name, v->id, vf->p->nvars);
	return 0;
}

/* Check that "v" is bound by an enclosing loop. */
static int check_var_use(verifier *vf, const loop_var *v)
{
	if (check_var_id(vf, v))
		return -1;
	if (vf->vars[v->id] != VAR_BOUND)
		return violation(vf, "variable '%s' is used outside the loop that binds it",
			v->name);
	return 0;
}

static int check_expr(verifier *vf, const loop_expr *e);

/* Check the "n" indices "index" of an access ("what": "load of" or
 * "store to") to "b". */
static int check_access(verifier *vf, const char *what, const loop_buffer *b,
	int n, loop_expr *const *index)
{
	if (!is_argument(vf, b) && !is_allocated(vf, b))
		return violation(vf, "%s '%s': the buffer is neither an argument nor "
			"allocated by an enclosing alloc", what, b->name);
	if (n != b->ndim)
		return violation(vf, "%s '%s' has %d indices, the buffer has %d dimensions",
			what, b->name, n, b->ndim);
	for (int d = 0; d < n; d++) {
		const loop_expr *x = index[d];
		if (check_expr(vf, x))
			return -1;
		if (!is_int(x->dtype))
			return violation(vf, "index %d of the %s '%s' has type %s, not an integer type",
				d, what, b->name, dt_name(x->dtype));
		if (x->kind == LX_INT && (x->u.ival < 0 || x->u.ival >= b->shape[d]))
			return violation(vf, "constant index %lld in dimension %d of the %s '%s' "
				"is outside 0..%lld", (long long)x->u.ival, d, what, b->name,
				(long long)b->shape[d]);
	}
	return 0;
}

/* Return whether "op" computes a number (not a comparison or logic). */
static bool is_arithmetic(tessel_binary op)
{
	return op <= TESSEL_MOD || op >= TESSEL_MIN;
}

static bool is_comparison(tessel_binary op)
{
	return op >= TESSEL_LT && op <= TESSEL_NE;
}

/* Whether operands of dtypes "a" and "b" may meet in a node of dtype "dt":
 * equal to it, or integers in integer arithmetic. */
static bool operands_fit(tessel_dtype dt, tessel_dtype a, tessel_dtype b)
{
	if (is_int(dt))
		return is_int(a) && is_int(b);
	return a == dt && b == dt;
}

/* Check the operands of the binary "e" against its operator and dtype. */
static int check_binary(verifier *vf, const loop_expr *e)
{
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	tessel_binary op = e->u.bin.op;
	if (check_expr(vf, a) || check_expr(vf, b))
		return -1;
	bool fit;
	if (is_arithmetic(op))
		fit = operands_fit(e->dtype, a->dtype, b->dtype);
	else if (is_comparison(op))
		fit = e->dtype == TESSEL_BOOL &&
		      (a->dtype == b->dtype || (is_int(a->dtype) && is_int(b->dtype)));
	else
		fit = e->dtype == TESSEL_BOOL && a->dtype == TESSEL_BOOL &&
		      b->dtype == TESSEL_BOOL;
	if (!fit)
		return violation(vf, "operands of '%s' have types %s and %s in a %s expression",
			te_binary_name(op), dt_name(a->dtype), dt_name(b->dtype),
			dt_name(e->dtype));
	return 0;
}

/* Check the operand of the unary "e": bool for !, else as arithmetic. */
static int check_unary(verifier *vf, const loop_expr *e)
{
	const loop_expr *a = e->u.un.a;
	if (check_expr(vf, a))
		return -1;
	bool fit = e->u.un.op == TESSEL_NOT
		? a->dtype == TESSEL_BOOL && e->dtype == TESSEL_BOOL
		: operands_fit(e->dtype, a->dtype, a->dtype);
	if (!fit)
		return violation(vf, "operand of '%s' has type %s in a %s expression",
			te_unary_name(e->u.un.op), dt_name(a->dtype), dt_name(e->dtype));
	return 0;
}

/* Check the condition and branches of the select "e". */
static int check_select(verifier *vf, const loop_expr *e)
{
	const loop_expr *c = e->u.sel.cond, *a = e->u.sel.then_, *b = e->u.sel.else_;
	if (check_expr(vf, c) || check_expr(vf, a) || check_expr(vf, b))
		return -1;
	if (c->dtype != TESSEL_BOOL)
		return violation(vf, "condition of a select has type %s, not bool",
			dt_name(c->dtype));
	if (!operands_fit(e->dtype, a->dtype, b->dtype))
		return violation(vf, "branches of a select have types %s and %s in a %s expression",
			dt_name(a->dtype), dt_name(b->dtype), dt_name(e->dtype));
	return 0;
}

/* Check the access and the dtype of the load "e". */
static int check_load(verifier *vf, const loop_expr *e)
{
	const loop_buffer *b = e->u.load.buf;
	if (check_access(vf, "load of", b, e->u.load.n, e->u.load.index))
		return -1;
	if (e->dtype != b->dtype)
		return violation(vf, "load of '%s' has type %s, the buffer holds %s",
			b->name, dt_name(e->dtype), dt_name(b->dtype));
	return 0;
}

/* Check "e" and its subexpressions in the current scope. */
static int check_expr(verifier *vf, const loop_expr *e)
{
	switch (e->kind) {
	case LX_INT:
	case LX_FLOAT:
	case LX_BOOL:
		return 0;
	case LX_VAR:
		return check_var_use(vf, e->u.var);
	case LX_LOAD:
		return check_load(vf, e);
	case LX_UNARY:
		return check_unary(vf, e);
	case LX_BINARY:
		return check_binary(vf, e);
	case LX_SELECT:
		return check_select(vf, e);
	case LX_CAST:
		return check_expr(vf, e->u.cast.a);
	}
	return violation(vf, "expression of unknown kind %d", (int)e->kind);
}

static int check_stmt(verifier *vf, const loop_stmt *s);

/* Check the bound "x" ("min" or "extent") of the loop over "v". */
static int check_loop_bound(verifier *vf, const loop_var *v, const char *what,
	const loop_expr *x)
{
	if (check_expr(vf, x))
		return -1;
	if (!is_int(x->dtype))
		return violation(vf, "%s of loop '%s' has type %s, not an integer type",
			what, v->name, dt_name(x->dtype));
	return 0;
}

/* Check the loop "s": bounds outside its scope, its variable bound once,
 * its body with the variable bound. */
static int check_for(verifier *vf, const loop_stmt *s)
{
	const loop_var *v = s->u.for_.var;
	if (check_var_id(vf, v) ||
	    check_loop_bound(vf, v, "min", s->u.for_.min) ||
	    check_loop_bound(vf, v, "extent", s->u.for_.extent))
		return -1;
	const loop_expr *ext = s->u.for_.extent;
	if (s->u.for_.kind == LOOP_VECTORIZED && (ext->kind != LX_INT || ext->u.ival <= 0))
		return violation(vf, "vectorized loop '%s' needs a constant positive extent",
			v->name);
	if (s->u.for_.prefetch && s->u.for_.prefetch_distance < 1)
		return violation(vf, "loop '%s' prefetches '%s' at distance %d, not >= 1",
			v->name, s->u.for_.prefetch->name, s->u.for_.prefetch_distance);
	if (vf->vars[v->id] != VAR_UNBOUND)
		return violation(vf, "variable '%s' is bound by two loops", v->name);
	vf->vars[v->id] = VAR_BOUND;
	if (check_stmt(vf, s->u.for_.body))
		return -1;
	vf->vars[v->id] = VAR_DONE;
	return 0;
}

/* Push "b" on the stack of allocated buffers. */
static int push_alloc(verifier *vf, const loop_buffer *b)
{
	if (vf->nallocs == vf->cap) {
		int cap = vf->cap ? 2 * vf->cap : 16;
		const loop_buffer **grown = realloc(vf->allocs, sizeof(*grown) * (size_t)cap);
		if (!grown)
			return violation(vf, "out of memory checking the allocation of '%s'",
				b->name);
		vf->allocs = grown;
		vf->cap = cap;
	}
	vf->allocs[vf->nallocs++] = b;
	return 0;
}

/* Check the alloc "s" and its body with its buffer in scope. */
static int check_alloc(verifier *vf, const loop_stmt *s)
{
	const loop_buffer *b = s->u.alloc.buf;
	for (int i = 0; i < vf->p->nargs; i++)
		if (vf->p->args[i] == b)
			return violation(vf, "argument '%s' is allocated by an alloc", b->name);
	if (b->arg >= 0)
		return violation(vf, "allocated buffer '%s' has arg %d, as if an argument",
			b->name, b->arg);
	if (is_allocated(vf, b))
		return violation(vf, "buffer '%s' is allocated inside its own allocation",
			b->name);
	if (push_alloc(vf, b) || check_stmt(vf, s->u.alloc.body))
		return -1;
	vf->nallocs--;
	return 0;
}

/* Check the access and the value of the store "s". */
static int check_store(verifier *vf, const loop_stmt *s)
{
	const loop_buffer *b = s->u.store.buf;
	const loop_expr *value = s->u.store.value;
	if (check_access(vf, "store to", b, s->u.store.n, s->u.store.index) ||
	    check_expr(vf, value))
		return -1;
	if (value->dtype != b->dtype)
		return violation(vf, "store to '%s' of a %s value, the buffer holds %s",
			b->name, dt_name(value->dtype), dt_name(b->dtype));
	return 0;
}

/* Check the condition and branches of the if "s". */
static int check_if(verifier *vf, const loop_stmt *s)
{
	const loop_expr *c = s->u.if_.cond;
	if (check_expr(vf, c))
		return -1;
	if (c->dtype != TESSEL_BOOL)
		return violation(vf, "condition of an if has type %s, not bool",
			dt_name(c->dtype));
	if (check_stmt(vf, s->u.if_.then_))
		return -1;
	return s->u.if_.else_ ? check_stmt(vf, s->u.if_.else_) : 0;
}

/* Check "s" and what it contains in the current scope. */
static int check_stmt(verifier *vf, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		return check_for(vf, s);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (check_stmt(vf, s->u.seq.items[i]))
				return -1;
		return 0;
	case LS_STORE:
		return check_store(vf, s);
	case LS_IF:
		return check_if(vf, s);
	case LS_ALLOC:
		return check_alloc(vf, s);
	case LS_BARRIER:
		return 0;
	case LS_PREFETCH:
		return check_access(vf, "prefetch of", s->u.prefetch.buf, s->u.prefetch.n,
			s->u.prefetch.index);
	}
	return violation(vf, "statement of unknown kind %d", (int)s->kind);
}

int loop_verify(tessel_ctx *ctx, const loop_prog *p)
{
	verifier vf = { .ctx = ctx, .p = p };
	vf.vars = calloc((size_t)p->nvars + 1, 1);
	if (!vf.vars)
		return te_error(ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ 0 },
			"loop IR: out of memory checking '%s'", p->name);
	int r = check_arguments(&vf);
	if (r == 0 && p->body)
		r = check_stmt(&vf, p->body);
	free(vf.vars);
	free(vf.allocs);
	return r ? -1 : 0;
}
