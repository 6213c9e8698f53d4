/* Construction of loop programs.  Integer index arithmetic folds constants
 * as it is built, so lowering can write `outer * 32 + inner` without
 * leaving `0 * 32 + x` behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/intmath.h"
#include "ir/loop.h"
#include "ir/te_impl.h"

loop_prog *loop_prog_new(const char *name)
{
	loop_prog *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	te_arena_init(&p->arena);
	p->name = te_arena_strdup(&p->arena, name ? name : "kernel");
	return p;
}

void loop_prog_free(loop_prog *p)
{
	if (!p)
		return;
	te_arena_reset(&p->arena);
	free(p);
}

loop_buffer *loop_buffer_new(loop_prog *p, const char *name, tessel_dtype dt,
	int ndim, const int64_t *shape, loop_scope scope)
{
	loop_buffer *b = te_arena_alloc(&p->arena, sizeof(*b));
	b->name = te_arena_strdup(&p->arena, name);
	b->dtype = dt;
	b->ndim = ndim;
	b->scope = scope;
	b->arg = -1;
	int64_t stride = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		b->shape[d] = shape[d];
		b->strides[d] = stride;
		stride *= shape[d];
	}
	return b;
}

loop_var *loop_var_new(loop_prog *p, const char *base)
{
	loop_var *v = te_arena_alloc(&p->arena, sizeof(*v));
	char name[300];
	snprintf(name, sizeof(name), "%s", base);
	v->id = p->nvars++;
	v->name = te_arena_strdup(&p->arena, name);
	return v;
}

static loop_expr *new_expr(loop_prog *p, loop_expr_kind kind, tessel_dtype dt)
{
	loop_expr *e = te_arena_alloc(&p->arena, sizeof(*e));
	e->kind = kind;
	e->dtype = dt;
	return e;
}

loop_expr *lx_int(loop_prog *p, int64_t v)
{
	loop_expr *e = new_expr(p, LX_INT, TESSEL_I64);
	e->u.ival = v;
	return e;
}

loop_expr *lx_float(loop_prog *p, double v, tessel_dtype dt)
{
	loop_expr *e = new_expr(p, LX_FLOAT, dt);
	e->u.fval = v;
	return e;
}

loop_expr *lx_bool(loop_prog *p, bool v)
{
	loop_expr *e = new_expr(p, LX_BOOL, TESSEL_BOOL);
	e->u.ival = v;
	return e;
}

loop_expr *lx_var(loop_prog *p, loop_var *v)
{
	loop_expr *e = new_expr(p, LX_VAR, TESSEL_I64);
	e->u.var = v;
	return e;
}

loop_expr *lx_load(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index)
{
	loop_expr *e = new_expr(p, LX_LOAD, b->dtype);
	e->u.load.buf = b;
	e->u.load.n = n;
	e->u.load.index = te_arena_alloc(&p->arena, sizeof(loop_expr *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		e->u.load.index[i] = index[i];
	return e;
}

loop_expr *lx_unary(loop_prog *p, tessel_unary op, loop_expr *a, tessel_dtype dt)
{
	if (op == TESSEL_NEG && a->kind == LX_INT && a->u.ival != INT64_MIN)
		return lx_int(p, -a->u.ival);
	loop_expr *e = new_expr(p, LX_UNARY, dt);
	e->u.un.op = op;
	e->u.un.a = a;
	return e;
}

static bool is_int(const loop_expr *e, int64_t v)
{
	return e->kind == LX_INT && e->u.ival == v;
}

/* Fold the integer operation "op" on literals "a" and "b" into "*r";
 * false when it would overflow or divide by zero. */
static bool fold_ints(tessel_binary op, int64_t a, int64_t b, int64_t *r)
{
	switch (op) {
	case TESSEL_ADD: return !__builtin_add_overflow(a, b, r);
	case TESSEL_SUB: return !__builtin_sub_overflow(a, b, r);
	case TESSEL_MUL: return !__builtin_mul_overflow(a, b, r);
	case TESSEL_DIV:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return false;
		*r = te_floor_div(a, b);
		return true;
	case TESSEL_MOD:
		if (b == 0 || b == -1)
			return false;
		*r = te_floor_mod(a, b);
		return true;
	case TESSEL_MIN: *r = a < b ? a : b; return true;
	case TESSEL_MAX: *r = a > b ? a : b; return true;
	default: return false;
	}
}

/* Return the simplification of integer "a op b" by identities, or NULL. */
static loop_expr *integer_identity(loop_prog *p, tessel_binary op, loop_expr *a,
	loop_expr *b)
{
	switch (op) {
	case TESSEL_ADD:
		return is_int(a, 0) ? b : is_int(b, 0) ? a : NULL;
	case TESSEL_SUB:
		return is_int(b, 0) ? a : NULL;
	case TESSEL_MUL:
		if (is_int(a, 0) || is_int(b, 0))
			return lx_int(p, 0);
		return is_int(a, 1) ? b : is_int(b, 1) ? a : NULL;
	case TESSEL_DIV:
		return is_int(b, 1) ? a : NULL;
	case TESSEL_MOD:
		return is_int(b, 1) ? lx_int(p, 0) : NULL;
	default:
		return NULL;
	}
}

loop_expr *lx_binary(loop_prog *p, tessel_binary op, loop_expr *a, loop_expr *b,
	tessel_dtype dt)
{
	int64_t r;
	if (a->kind == LX_INT && b->kind == LX_INT && dt == TESSEL_I64 &&
	    fold_ints(op, a->u.ival, b->u.ival, &r))
		return lx_int(p, r);
	if (dt == TESSEL_I64) {
		loop_expr *s = integer_identity(p, op, a, b);
		if (s)
			return s;
	}
	loop_expr *e = new_expr(p, LX_BINARY, dt);
	e->u.bin.op = op;
	e->u.bin.a = a;
	e->u.bin.b = b;
	return e;
}

loop_expr *lx_add(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_ADD, a, b, TESSEL_I64);
}

loop_expr *lx_sub(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_SUB, a, b, TESSEL_I64);
}

loop_expr *lx_mul(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_MUL, a, b, TESSEL_I64);
}

loop_expr *lx_div(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_DIV, a, b, TESSEL_I64);
}

loop_expr *lx_mod(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_MOD, a, b, TESSEL_I64);
}

loop_expr *lx_min(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_MIN, a, b, TESSEL_I64);
}

loop_expr *lx_max(loop_prog *p, loop_expr *a, loop_expr *b)
{
	return lx_binary(p, TESSEL_MAX, a, b, TESSEL_I64);
}

loop_expr *lx_cmp(loop_prog *p, tessel_binary op, loop_expr *a, loop_expr *b)
{
	if (a->kind == LX_INT && b->kind == LX_INT) {
		int64_t x = a->u.ival, y = b->u.ival;
		switch (op) {
		case TESSEL_LT: return lx_bool(p, x < y);
		case TESSEL_LE: return lx_bool(p, x <= y);
		case TESSEL_GT: return lx_bool(p, x > y);
		case TESSEL_GE: return lx_bool(p, x >= y);
		case TESSEL_EQ: return lx_bool(p, x == y);
		case TESSEL_NE: return lx_bool(p, x != y);
		default: break;
		}
	}
	loop_expr *e = new_expr(p, LX_BINARY, TESSEL_BOOL);
	e->u.bin.op = op;
	e->u.bin.a = a;
	e->u.bin.b = b;
	return e;
}

loop_expr *lx_and(loop_prog *p, loop_expr *a, loop_expr *b)
{
	if (!a)
		return b;
	if (a->kind == LX_BOOL)
		return a->u.ival ? b : a;
	if (b->kind == LX_BOOL)
		return b->u.ival ? a : b;
	loop_expr *e = new_expr(p, LX_BINARY, TESSEL_BOOL);
	e->u.bin.op = TESSEL_AND;
	e->u.bin.a = a;
	e->u.bin.b = b;
	return e;
}

loop_expr *lx_select(loop_prog *p, loop_expr *c, loop_expr *a, loop_expr *b,
	tessel_dtype dt)
{
	if (c->kind == LX_BOOL)
		return c->u.ival ? a : b;
	loop_expr *e = new_expr(p, LX_SELECT, dt);
	e->u.sel.cond = c;
	e->u.sel.then_ = a;
	e->u.sel.else_ = b;
	return e;
}

loop_expr *lx_cast(loop_prog *p, tessel_dtype to, loop_expr *a)
{
	if (a->dtype == to && a->kind != LX_FLOAT)
		return a;
	loop_expr *e = new_expr(p, LX_CAST, to);
	e->u.cast.to = to;
	e->u.cast.a = a;
	return e;
}

static loop_stmt *new_stmt(loop_prog *p, loop_stmt_kind kind)
{
	loop_stmt *s = te_arena_alloc(&p->arena, sizeof(*s));
	s->kind = kind;
	return s;
}

loop_stmt *ls_for(loop_prog *p, loop_var *v, loop_expr *min, loop_expr *extent,
	loop_kind kind, loop_stmt *body)
{
	loop_stmt *s = new_stmt(p, LS_FOR);
	s->u.for_.var = v;
	s->u.for_.min = min;
	s->u.for_.extent = extent;
	s->u.for_.kind = kind;
	s->u.for_.body = body;
	return s;
}

loop_stmt *ls_seq(loop_prog *p, int n, loop_stmt *const *items)
{
	loop_stmt *s = new_stmt(p, LS_SEQ);
	for (int i = 0; i < n; i++)
		ls_seq_append(p, s, items[i]);
	return s;
}

void ls_seq_append(loop_prog *p, loop_stmt *seq, loop_stmt *s)
{
	te_push(&p->arena, (void ***)&seq->u.seq.items, &seq->u.seq.n, s);
}

loop_stmt *ls_store(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index,
	loop_expr *value, const char *stage)
{
	loop_stmt *s = new_stmt(p, LS_STORE);
	s->u.store.buf = b;
	s->u.store.n = n;
	s->u.store.index = te_arena_alloc(&p->arena, sizeof(loop_expr *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		s->u.store.index[i] = index[i];
	s->u.store.value = value;
	s->u.store.stage = stage ? te_arena_strdup(&p->arena, stage) : NULL;
	return s;
}

loop_stmt *ls_if(loop_prog *p, loop_expr *cond, loop_stmt *then_, loop_stmt *else_)
{
	loop_stmt *s = new_stmt(p, LS_IF);
	s->u.if_.cond = cond;
	s->u.if_.then_ = then_;
	s->u.if_.else_ = else_;
	return s;
}

loop_stmt *ls_alloc(loop_prog *p, loop_buffer *b, loop_stmt *body)
{
	loop_stmt *s = new_stmt(p, LS_ALLOC);
	s->u.alloc.buf = b;
	s->u.alloc.body = body;
	return s;
}

loop_stmt *ls_barrier(loop_prog *p)
{
	return new_stmt(p, LS_BARRIER);
}

loop_stmt *ls_prefetch(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index)
{
	loop_stmt *s = new_stmt(p, LS_PREFETCH);
	s->u.prefetch.buf = b;
	s->u.prefetch.n = n;
	s->u.prefetch.index = te_arena_alloc(&p->arena, sizeof(loop_expr *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		s->u.prefetch.index[i] = index[i];
	return s;
}

/* ---- copies --------------------------------------------------------------- */

static loop_expr *clone_expr(loop_prog *q, const loop_expr *e)
{
	loop_expr *c = new_expr(q, e->kind, e->dtype);
	c->u = e->u;
	switch (e->kind) {
	case LX_LOAD:
		c->u.load.index = te_arena_alloc(&q->arena,
			sizeof(loop_expr *) * (size_t)(e->u.load.n + 1));
		for (int i = 0; i < e->u.load.n; i++)
			c->u.load.index[i] = clone_expr(q, e->u.load.index[i]);
		break;
	case LX_UNARY:
		c->u.un.a = clone_expr(q, e->u.un.a);
		break;
	case LX_BINARY:
		c->u.bin.a = clone_expr(q, e->u.bin.a);
		c->u.bin.b = clone_expr(q, e->u.bin.b);
		break;
	case LX_SELECT:
		c->u.sel.cond = clone_expr(q, e->u.sel.cond);
		c->u.sel.then_ = clone_expr(q, e->u.sel.then_);
		c->u.sel.else_ = clone_expr(q, e->u.sel.else_);
		break;
	case LX_CAST:
		c->u.cast.a = clone_expr(q, e->u.cast.a);
		break;
	default:
		break;
	}
	return c;
}

static loop_expr **clone_index(loop_prog *q, int n, loop_expr *const *index)
{
	loop_expr **c = te_arena_alloc(&q->arena, sizeof(loop_expr *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		c[i] = clone_expr(q, index[i]);
	return c;
}

static loop_stmt *clone_stmt(loop_prog *q, const loop_stmt *s)
{
	if (!s)
		return NULL;
	loop_stmt *c = new_stmt(q, s->kind);
	c->u = s->u;
	switch (s->kind) {
	case LS_FOR:
		c->u.for_.min = clone_expr(q, s->u.for_.min);
		c->u.for_.extent = clone_expr(q, s->u.for_.extent);
		c->u.for_.body = clone_stmt(q, s->u.for_.body);
		break;
	case LS_SEQ:
		c->u.seq.n = 0;
		c->u.seq.items = NULL;
		for (int i = 0; i < s->u.seq.n; i++)
			ls_seq_append(q, c, clone_stmt(q, s->u.seq.items[i]));
		break;
	case LS_STORE:
		c->u.store.index = clone_index(q, s->u.store.n, s->u.store.index);
		c->u.store.value = clone_expr(q, s->u.store.value);
		break;
	case LS_IF:
		c->u.if_.cond = clone_expr(q, s->u.if_.cond);
		c->u.if_.then_ = clone_stmt(q, s->u.if_.then_);
		c->u.if_.else_ = clone_stmt(q, s->u.if_.else_);
		break;
	case LS_ALLOC:
		c->u.alloc.body = clone_stmt(q, s->u.alloc.body);
		break;
	case LS_PREFETCH:
		c->u.prefetch.index = clone_index(q, s->u.prefetch.n, s->u.prefetch.index);
		break;
	default:
		break;
	}
	return c;
}

loop_prog *loop_prog_clone(const loop_prog *p)
{
	loop_prog *q = loop_prog_new(p->name);
	if (!q)
		return NULL;
	q->nargs = p->nargs;
	q->args = p->args;
	q->nvars = p->nvars;
	q->body = clone_stmt(q, p->body);
	return q;
}

bool loop_expr_uses_var(const loop_expr *e, const loop_var *v)
{
	switch (e->kind) {
	case LX_VAR:
		return e->u.var == v;
	case LX_LOAD:
		for (int i = 0; i < e->u.load.n; i++)
			if (loop_expr_uses_var(e->u.load.index[i], v))
				return true;
		return false;
	case LX_UNARY:
		return loop_expr_uses_var(e->u.un.a, v);
	case LX_BINARY:
		return loop_expr_uses_var(e->u.bin.a, v) || loop_expr_uses_var(e->u.bin.b, v);
	case LX_SELECT:
		return loop_expr_uses_var(e->u.sel.cond, v) ||
		       loop_expr_uses_var(e->u.sel.then_, v) ||
		       loop_expr_uses_var(e->u.sel.else_, v);
	case LX_CAST:
		return loop_expr_uses_var(e->u.cast.a, v);
	default:
		return false;
	}
}

bool loop_expr_has_load(const loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		return true;
	case LX_UNARY:
		return loop_expr_has_load(e->u.un.a);
	case LX_BINARY:
		return loop_expr_has_load(e->u.bin.a) || loop_expr_has_load(e->u.bin.b);
	case LX_SELECT:
		return loop_expr_has_load(e->u.sel.cond) || loop_expr_has_load(e->u.sel.then_) ||
		       loop_expr_has_load(e->u.sel.else_);
	case LX_CAST:
		return loop_expr_has_load(e->u.cast.a);
	default:
		return false;
	}
}

loop_expr *loop_expr_rename(loop_prog *p, loop_expr *e, int n,
	const loop_var *const *from, loop_var *const *to)
{
	switch (e->kind) {
	case LX_VAR:
		for (int j = 0; j < n; j++)
			if (e->u.var == from[j])
				return lx_var(p, to[j]);
		return e;
	case LX_LOAD: {
		loop_expr *ix[TESSEL_MAX_DIMS];
		for (int i = 0; i < e->u.load.n; i++)
			ix[i] = loop_expr_rename(p, e->u.load.index[i], n, from, to);
		return lx_load(p, e->u.load.buf, e->u.load.n, ix);
	}
	case LX_UNARY:
		return lx_unary(p, e->u.un.op, loop_expr_rename(p, e->u.un.a, n, from, to),
			e->dtype);
	case LX_BINARY:
		return lx_binary(p, e->u.bin.op, loop_expr_rename(p, e->u.bin.a, n, from, to),
			loop_expr_rename(p, e->u.bin.b, n, from, to), e->dtype);
	case LX_SELECT:
		return lx_select(p, loop_expr_rename(p, e->u.sel.cond, n, from, to),
			loop_expr_rename(p, e->u.sel.then_, n, from, to),
			loop_expr_rename(p, e->u.sel.else_, n, from, to), e->dtype);
	case LX_CAST:
		return lx_cast(p, e->u.cast.to, loop_expr_rename(p, e->u.cast.a, n, from, to));
	default:
		return e;
	}
}

bool loop_expr_loads(const loop_expr *e, const loop_buffer *b)
{
	switch (e->kind) {
	case LX_LOAD:
		if (e->u.load.buf == b)
			return true;
		for (int i = 0; i < e->u.load.n; i++)
			if (loop_expr_loads(e->u.load.index[i], b))
				return true;
		return false;
	case LX_UNARY: return loop_expr_loads(e->u.un.a, b);
	case LX_BINARY: return loop_expr_loads(e->u.bin.a, b) || loop_expr_loads(e->u.bin.b, b);
	case LX_SELECT:
		return loop_expr_loads(e->u.sel.cond, b) || loop_expr_loads(e->u.sel.then_, b) ||
		       loop_expr_loads(e->u.sel.else_, b);
	case LX_CAST: return loop_expr_loads(e->u.cast.a, b);
	default: return false;
	}
}

const char *loop_kind_name(loop_kind k)
{
	static const char *name[LOOP_KIND_COUNT] = {
		"serial", "parallel", "vectorized", "unrolled",
		"blockIdx.x", "blockIdx.y", "blockIdx.z",
		"threadIdx.x", "threadIdx.y", "threadIdx.z", "vthread"
	};
	return name[k];
}

const char *loop_scope_name(loop_scope s)
{
	static const char *name[] = { "global", "shared", "local" };
	return name[s];
}
