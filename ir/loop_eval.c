/* A direct evaluator of loop programs, in float64 (integers in int64),
 * with every load and store bounds-checked.  It checks lowering apart from
 * code generation: a schedule whose program evaluates to the interpreter's
 * answer and whose compiled kernel does not points at the printer, and the
 * other way round.  Values are not rounded to their dtypes except where
 * the program casts, like the reference interpreter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/intmath.h"
#include "ir/loop.h"
#include "ir/loop_eval.h"
#include "ir/te_impl.h"

typedef union slot {
	double f;
	int64_t i;
} slot;

typedef struct evaluator {
	tessel_ctx *ctx;
	const loop_prog *p;
	int64_t *vars;          /* by loop_var id */
	slot **data;            /* by buffer: its elements */
	const loop_buffer **bufs;
	int nbufs;
	bool failed;
} evaluator;

static bool is_float(tessel_dtype dt)
{
	return tessel_dtype_is_float(dt);
}

static int buffer_slot(evaluator *ev, const loop_buffer *b)
{
	for (int i = 0; i < ev->nbufs; i++)
		if (ev->bufs[i] == b)
			return i;
	return -1;
}

static void eval_fail(evaluator *ev, const char *what, const char *name)
{
	if (!ev->failed)
		te_error(ev->ctx, TESSEL_ERR_SHAPE, (tessel_loc){ NULL, 0, 0 },
			"loop program: %s '%s'", what, name);
	ev->failed = true;
}

static slot eval(evaluator *ev, const loop_expr *e);

static int64_t as_int(evaluator *ev, const loop_expr *e)
{
	slot v = eval(ev, e);
	return is_float(e->dtype) ? (int64_t)v.f : v.i;
}

static double as_float(evaluator *ev, const loop_expr *e)
{
	slot v = eval(ev, e);
	return is_float(e->dtype) ? v.f : (double)v.i;
}

/* Return the flat offset of the element "index" of "b", or -1 when it is
 * out of bounds. */
static int64_t offset_of(evaluator *ev, const loop_buffer *b, int n,
	loop_expr *const *index)
{
	int64_t off = 0;
	for (int d = 0; d < n; d++) {
		int64_t x = as_int(ev, index[d]);
		if (x < 0 || x >= b->shape[d])
			return -1;
		off += x * b->strides[d];
	}
	return off;
}

static slot eval_float_binary(tessel_binary op, double a, double b)
{
	slot r;
	switch (op) {
	case TESSEL_ADD: r.f = a + b; break;
	case TESSEL_SUB: r.f = a - b; break;
	case TESSEL_MUL: r.f = a * b; break;
	case TESSEL_DIV: r.f = a / b; break;
	case TESSEL_MOD: r.f = a - floor(a / b) * b; break;
	case TESSEL_MIN: r.f = fmin(a, b); break;
	case TESSEL_MAX: r.f = fmax(a, b); break;
	case TESSEL_POW: r.f = pow(a, b); break;
	default: r.f = 0; break;
	}
	return r;
}

static slot eval_int_binary(evaluator *ev, tessel_binary op, int64_t a, int64_t b,
	tessel_dtype dt)
{
	slot r = { .i = 0 };
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	switch (op) {
	case TESSEL_ADD: r.i = (int64_t)(ua + ub); break;
	case TESSEL_SUB: r.i = (int64_t)(ua - ub); break;
	case TESSEL_MUL: r.i = (int64_t)(ua * ub); break;
	case TESSEL_DIV:
	case TESSEL_MOD:
		if (b == 0 || (a == INT64_MIN && b == -1)) {
			eval_fail(ev, "integer division by zero in", ev->p->name);
			break;
		}
		r.i = op == TESSEL_DIV ? te_floor_div(a, b) : te_floor_mod(a, b);
		break;
	case TESSEL_MIN: r.i = a < b ? a : b; break;
	case TESSEL_MAX: r.i = a > b ? a : b; break;
	case TESSEL_POW: {
		int64_t acc = 1;
		for (int64_t k = 0; k < b && k < 64; k++)
			acc = (int64_t)((uint64_t)acc * ua);
		r.i = acc;
		break;
	}
	default: break;
	}
	r.i = tessel_wrap_int(dt, r.i);
	return r;
}

static slot eval_compare(evaluator *ev, const loop_expr *e)
{
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	int c;
	if (is_float(a->dtype) || is_float(b->dtype)) {
		double x = as_float(ev, a), y = as_float(ev, b);
		c = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
	} else {
		int64_t x = as_int(ev, a), y = as_int(ev, b);
		c = x < y ? -1 : x > y;
	}
	slot r;
	switch (e->u.bin.op) {
	case TESSEL_LT: r.i = c == -1; break;
	case TESSEL_LE: r.i = c == -1 || c == 0; break;
	case TESSEL_GT: r.i = c == 1; break;
	case TESSEL_GE: r.i = c == 1 || c == 0; break;
	case TESSEL_EQ: r.i = c == 0; break;
	default: r.i = c != 0; break;
	}
	return r;
}

static slot eval_binary(evaluator *ev, const loop_expr *e)
{
	tessel_binary op = e->u.bin.op;
	if (op >= TESSEL_LT && op <= TESSEL_NE)
		return eval_compare(ev, e);
	if (op == TESSEL_AND || op == TESSEL_OR) {
		slot r;
		int64_t a = as_int(ev, e->u.bin.a);
		r.i = op == TESSEL_AND ? (a && as_int(ev, e->u.bin.b))
				       : (a || as_int(ev, e->u.bin.b));
		return r;
	}
	if (is_float(e->dtype))
		return eval_float_binary(op, as_float(ev, e->u.bin.a),
			as_float(ev, e->u.bin.b));
	return eval_int_binary(ev, op, as_int(ev, e->u.bin.a), as_int(ev, e->u.bin.b),
		e->dtype);
}

static slot eval_unary(evaluator *ev, const loop_expr *e)
{
	slot r;
	if (!is_float(e->dtype)) {
		int64_t a = as_int(ev, e->u.un.a);
		switch (e->u.un.op) {
		case TESSEL_NEG: r.i = (int64_t)(0 - (uint64_t)a); break;
		case TESSEL_NOT: r.i = !a; break;
		case TESSEL_ABS: r.i = a < 0 ? (int64_t)(0 - (uint64_t)a) : a; break;
		default: r.i = a; break;
		}
		r.i = tessel_wrap_int(e->dtype, r.i);
		return r;
	}
	double a = as_float(ev, e->u.un.a);
	switch (e->u.un.op) {
	case TESSEL_NEG: r.f = -a; break;
	case TESSEL_EXP: r.f = exp(a); break;
	case TESSEL_LOG: r.f = log(a); break;
	case TESSEL_SQRT: r.f = sqrt(a); break;
	case TESSEL_RSQRT: r.f = 1.0 / sqrt(a); break;
	case TESSEL_TANH: r.f = tanh(a); break;
	case TESSEL_ERF: r.f = erf(a); break;
	case TESSEL_SIGMOID: r.f = 1.0 / (1.0 + exp(-a)); break;
	case TESSEL_ABS: r.f = fabs(a); break;
	case TESSEL_FLOOR: r.f = floor(a); break;
	default: r.f = a; break;
	}
	return r;
}

static slot eval_cast(evaluator *ev, const loop_expr *e)
{
	slot r;
	const loop_expr *a = e->u.cast.a;
	tessel_dtype to = e->u.cast.to;
	if (is_float(to))
		r.f = tessel_round_to(to, as_float(ev, a));
	else if (is_float(a->dtype))
		r.i = tessel_float_to_int(to, as_float(ev, a));
	else
		r.i = tessel_wrap_int(to, as_int(ev, a));
	return r;
}

static slot eval_load(evaluator *ev, const loop_expr *e)
{
	const loop_buffer *b = e->u.load.buf;
	int k = buffer_slot(ev, b);
	int64_t off = k >= 0 ? offset_of(ev, b, e->u.load.n, e->u.load.index) : -1;
	if (k < 0 || !ev->data[k] || off < 0) {
		eval_fail(ev, k < 0 || !ev->data[k] ? "load from a buffer not in scope"
						    : "load out of bounds of", b->name);
		return (slot){ .i = 0 };
	}
	return ev->data[k][off];
}

static slot eval(evaluator *ev, const loop_expr *e)
{
	slot r = { .i = 0 };
	if (ev->failed)
		return r;
	switch (e->kind) {
	case LX_INT:
	case LX_BOOL: r.i = e->u.ival; return r;
	case LX_FLOAT: r.f = e->u.fval; return r;
	case LX_VAR: r.i = ev->vars[e->u.var->id]; return r;
	case LX_LOAD: return eval_load(ev, e);
	case LX_UNARY: return eval_unary(ev, e);
	case LX_BINARY: return eval_binary(ev, e);
	case LX_SELECT:
		return as_int(ev, e->u.sel.cond) ? eval(ev, e->u.sel.then_)
						 : eval(ev, e->u.sel.else_);
	case LX_CAST: return eval_cast(ev, e);
	}
	return r;
}

static void run(evaluator *ev, const loop_stmt *s);

static void run_store(evaluator *ev, const loop_stmt *s)
{
	const loop_buffer *b = s->u.store.buf;
	int k = buffer_slot(ev, b);
	int64_t off = k >= 0 ? offset_of(ev, b, s->u.store.n, s->u.store.index) : -1;
	if (k < 0 || !ev->data[k] || off < 0) {
		eval_fail(ev, k < 0 || !ev->data[k] ? "store to a buffer not in scope"
						    : "store out of bounds of", b->name);
		return;
	}
	slot v = eval(ev, s->u.store.value), stored = v;
	if (!is_float(b->dtype))
		stored.i = tessel_wrap_int(b->dtype, is_float(s->u.store.value->dtype)
			? tessel_float_to_int(b->dtype, v.f) : v.i);
	else if (!is_float(s->u.store.value->dtype))
		stored.f = (double)v.i;
	ev->data[k][off] = stored;
}

static void run_alloc(evaluator *ev, const loop_stmt *s)
{
	const loop_buffer *b = s->u.alloc.buf;
	int k = buffer_slot(ev, b);
	int64_t n = 1;
	for (int d = 0; d < b->ndim; d++)
		n += (b->shape[d] - 1) * b->strides[d];
	slot *saved = ev->data[k];
	ev->data[k] = calloc((size_t)n + 1, sizeof(slot));
	run(ev, s->u.alloc.body);
	free(ev->data[k]);
	ev->data[k] = saved;
}

static void run(evaluator *ev, const loop_stmt *s)
{
	if (ev->failed)
		return;
	switch (s->kind) {
	case LS_FOR: {
		int64_t lo = as_int(ev, s->u.for_.min), n = as_int(ev, s->u.for_.extent);
		for (int64_t i = 0; i < n && !ev->failed; i++) {
			ev->vars[s->u.for_.var->id] = lo + i;
			run(ev, s->u.for_.body);
		}
		return;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			run(ev, s->u.seq.items[i]);
		return;
	case LS_STORE:
		run_store(ev, s);
		return;
	case LS_IF:
		if (as_int(ev, s->u.if_.cond))
			run(ev, s->u.if_.then_);
		else if (s->u.if_.else_)
			run(ev, s->u.if_.else_);
		return;
	case LS_ALLOC:
		run_alloc(ev, s);
		return;
	case LS_PREFETCH:
		if (offset_of(ev, s->u.prefetch.buf, s->u.prefetch.n, s->u.prefetch.index) < 0)
			eval_fail(ev, "prefetch out of bounds of", s->u.prefetch.buf->name);
		return;
	case LS_BARRIER:
		return;
	}
}

/* Register every buffer of "s" that is allocated in it. */
static void collect_buffers(evaluator *ev, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR: collect_buffers(ev, s->u.for_.body); return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			collect_buffers(ev, s->u.seq.items[i]);
		return;
	case LS_IF:
		collect_buffers(ev, s->u.if_.then_);
		if (s->u.if_.else_)
			collect_buffers(ev, s->u.if_.else_);
		return;
	case LS_ALLOC:
		ev->bufs[ev->nbufs++] = s->u.alloc.buf;
		collect_buffers(ev, s->u.alloc.body);
		return;
	default:
		return;
	}
}

static int count_allocs(const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR: return count_allocs(s->u.for_.body);
	case LS_SEQ: {
		int n = 0;
		for (int i = 0; i < s->u.seq.n; i++)
			n += count_allocs(s->u.seq.items[i]);
		return n;
	}
	case LS_IF:
		return count_allocs(s->u.if_.then_) +
		       (s->u.if_.else_ ? count_allocs(s->u.if_.else_) : 0);
	case LS_ALLOC: return 1 + count_allocs(s->u.alloc.body);
	default: return 0;
	}
}

static void load_argument(evaluator *ev, int k, const tessel_tensor *t)
{
	int64_t n = tessel_tensor_numel(t);
	ev->data[k] = calloc((size_t)n + 1, sizeof(slot));
	for (int64_t i = 0; i < n; i++) {
		if (is_float(t->dtype))
			ev->data[k][i].f = tessel_tensor_get(t, i);
		else
			ev->data[k][i].i = tessel_tensor_get_i64(t, i);
	}
}

static void store_argument(evaluator *ev, int k, tessel_tensor *t)
{
	int64_t n = tessel_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		if (is_float(t->dtype))
			tessel_tensor_set(t, i, ev->data[k][i].f);
		else
			tessel_tensor_set_i64(t, i, ev->data[k][i].i);
	}
}

int loop_eval(tessel_ctx *ctx, const loop_prog *p, tessel_tensor *const *args)
{
	int nbufs = p->nargs + count_allocs(p->body);
	evaluator ev = { .ctx = ctx, .p = p };
	ev.vars = calloc((size_t)p->nvars + 1, sizeof(int64_t));
	ev.data = calloc((size_t)nbufs + 1, sizeof(slot *));
	ev.bufs = calloc((size_t)nbufs + 1, sizeof(loop_buffer *));
	for (int i = 0; i < p->nargs; i++) {
		ev.bufs[ev.nbufs++] = p->args[i];
		load_argument(&ev, i, args[i]);
	}
	collect_buffers(&ev, p->body);
	run(&ev, p->body);
	for (int i = 0; i < p->nargs; i++) {
		if (!ev.failed && p->args[i]->is_output)
			store_argument(&ev, i, args[i]);
		free(ev.data[i]);
	}
	free(ev.vars);
	free(ev.data);
	free(ev.bufs);
	return ev.failed ? -1 : 0;
}
