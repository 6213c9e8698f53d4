/* Expansion of prefetch annotations (schedule/prefetch.c) into prefetch
 * statements.
 *
 * A loop "for v in min..min+extent" annotated "prefetch B at distance d"
 * gets, at the top of its body,
 *
 *     if v + d < min + extent
 *         for each row r of the box:          (every index but the last)
 *             for q in 0..(hi - lo) / L + 1:  prefetch B[r, lo + q * L]
 *             prefetch B[r, hi]
 *
 * where the box [lo, hi] bounds, per dimension, the indices of every load
 * of B in the body, over the loops inside it, with v replaced by v + d:
 * what iteration v + d will read.  L is the number of elements in a cache
 * line; the last prefetch catches the line a box not aligned to lines
 * ends in (none when the last index is one point).  The test also asks for a non-empty box.  Bounds are interval arithmetic on the index expressions (sums,
 * products by constants, floor division and modulo by positive constants,
 * min, max, select), with an inner loop variable ranging over its loop;
 * they may hold the variables of enclosing loops.  An index that holds no
 * inner loop variable is one point, kept exact (the modulo of a fused
 * loop's variable bounds one row, not every row).  Guards inside the body
 * are ignored, so the box is clamped to the buffer's shape: it may be
 * larger than what is read, never outside the buffer.  A load whose
 * indices cannot be bounded (a load inside an index) is not prefetched.
 *
 * Prefetches do not change values; loop_eval checks that each lies in its
 * buffer. */
#include <stdio.h>

#include "ir/loop.h"

#define MAX_INNER 64

typedef struct expander {
	loop_prog *p;
	int line_bytes;
	const loop_var *target;     /* the annotated loop's variable */
	loop_expr *shifted;         /* target + distance */
	const loop_buffer *buf;     /* what it prefetches */
	int ninner;                 /* loops inside the target around the walk */
	const loop_stmt *inner[MAX_INNER];
	bool any;                   /* a load of buf was bounded */
	bool too_deep;
	loop_expr *lo[TESSEL_MAX_DIMS], *hi[TESSEL_MAX_DIMS];
} expander;

static bool bound(expander *X, const loop_expr *e, loop_expr **lo, loop_expr **hi);

/* Bound the variable "v": the shifted target, an inner loop's range, or
 * itself (a variable of a loop around the target). */
static bool bound_var(expander *X, loop_var *v, loop_expr **lo, loop_expr **hi)
{
	if (v == X->target) {
		*lo = *hi = X->shifted;
		return true;
	}
	for (int k = X->ninner - 1; k >= 0; k--) {
		const loop_stmt *f = X->inner[k];
		if (f->u.for_.var != v)
			continue;
		loop_expr *min_lo, *min_hi, *ext_lo, *ext_hi;
		if (!bound(X, f->u.for_.min, &min_lo, &min_hi) ||
		    !bound(X, f->u.for_.extent, &ext_lo, &ext_hi))
			return false;
		*lo = min_lo;
		*hi = lx_sub(X->p, lx_add(X->p, min_hi, ext_hi), lx_int(X->p, 1));
		return true;
	}
	*lo = *hi = lx_var(X->p, v);
	return true;
}

/* Bound the integer binary expression "e". */
static bool bound_binary(expander *X, const loop_expr *e, loop_expr **lo,
	loop_expr **hi)
{
	loop_prog *p = X->p;
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	loop_expr *al, *ah, *bl, *bh;
	tessel_binary op = e->u.bin.op;
	if (op == TESSEL_MUL && a->kind == LX_INT) {
		const loop_expr *t = a;
		a = b;
		b = t;
	}
	if (!bound(X, a, &al, &ah))
		return false;
	if (op == TESSEL_MUL || op == TESSEL_DIV || op == TESSEL_MOD) {
		if (b->kind != LX_INT || (op != TESSEL_MUL && b->u.ival <= 0))
			return false;
		int64_t c = b->u.ival;
		if (al == ah) {
			*lo = *hi = lx_binary(p, op, al, lx_int(p, c), TESSEL_I64);
		} else if (op == TESSEL_MOD) {
			*lo = lx_int(p, 0);
			*hi = lx_int(p, c - 1);
		} else if (op == TESSEL_DIV) {
			*lo = lx_div(p, al, lx_int(p, c));
			*hi = lx_div(p, ah, lx_int(p, c));
		} else {
			*lo = lx_mul(p, c >= 0 ? al : ah, lx_int(p, c));
			*hi = lx_mul(p, c >= 0 ? ah : al, lx_int(p, c));
		}
		return true;
	}
	if (!bound(X, b, &bl, &bh))
		return false;
	if (al == ah && bl == bh && (op == TESSEL_ADD || op == TESSEL_SUB ||
				     op == TESSEL_MIN || op == TESSEL_MAX)) {
		*lo = *hi = lx_binary(p, op, al, bl, TESSEL_I64);
		return true;
	}
	switch (op) {
	case TESSEL_ADD:
		*lo = lx_add(p, al, bl);
		*hi = lx_add(p, ah, bh);
		return true;
	case TESSEL_SUB:
		*lo = lx_sub(p, al, bh);
		*hi = lx_sub(p, ah, bl);
		return true;
	case TESSEL_MIN:
		*lo = lx_min(p, al, bl);
		*hi = lx_min(p, ah, bh);
		return true;
	case TESSEL_MAX:
		*lo = lx_max(p, al, bl);
		*hi = lx_max(p, ah, bh);
		return true;
	default:
		return false;
	}
}

/* Set "*lo" and "*hi" to expressions with lo <= e <= hi wherever the
 * walk is, over the loops inside the target; false when "e" is not an
 * integer expression of the forms the file comment lists. */
static bool bound(expander *X, const loop_expr *e, loop_expr **lo, loop_expr **hi)
{
	if (e->dtype != TESSEL_I64)
		return false;
	switch (e->kind) {
	case LX_INT:
		*lo = *hi = (loop_expr *)e;
		return true;
	case LX_VAR:
		return bound_var(X, e->u.var, lo, hi);
	case LX_BINARY:
		return bound_binary(X, e, lo, hi);
	case LX_SELECT: {
		loop_expr *tl, *th, *el, *eh;
		if (!bound(X, e->u.sel.then_, &tl, &th) || !bound(X, e->u.sel.else_, &el, &eh))
			return false;
		*lo = lx_min(X->p, tl, el);
		*hi = lx_max(X->p, th, eh);
		return true;
	}
	default:
		return false;
	}
}

/* Grow the box by the load "e" of the prefetched buffer. */
static void add_load(expander *X, const loop_expr *e)
{
	loop_expr *lo[TESSEL_MAX_DIMS], *hi[TESSEL_MAX_DIMS];
	for (int d = 0; d < e->u.load.n; d++)
		if (!bound(X, e->u.load.index[d], &lo[d], &hi[d]))
			return;
	for (int d = 0; d < e->u.load.n; d++) {
		X->lo[d] = X->any ? lx_min(X->p, X->lo[d], lo[d]) : lo[d];
		X->hi[d] = X->any ? lx_max(X->p, X->hi[d], hi[d]) : hi[d];
	}
	X->any = true;
}

/* Add the loads of the prefetched buffer in "e" to the box. */
static void scan_expr(expander *X, const loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		if (e->u.load.buf == X->buf)
			add_load(X, e);
		for (int d = 0; d < e->u.load.n; d++)
			scan_expr(X, e->u.load.index[d]);
		return;
	case LX_UNARY:
		scan_expr(X, e->u.un.a);
		return;
	case LX_BINARY:
		scan_expr(X, e->u.bin.a);
		scan_expr(X, e->u.bin.b);
		return;
	case LX_SELECT:
		scan_expr(X, e->u.sel.cond);
		scan_expr(X, e->u.sel.then_);
		scan_expr(X, e->u.sel.else_);
		return;
	case LX_CAST:
		scan_expr(X, e->u.cast.a);
		return;
	default:
		return;
	}
}

/* Add the loads of the prefetched buffer in "s" to the box. */
static void scan_stmt(expander *X, const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		scan_expr(X, s->u.for_.min);
		scan_expr(X, s->u.for_.extent);
		if (X->ninner == MAX_INNER) {
			X->too_deep = true;
			return;
		}
		X->inner[X->ninner++] = s;
		scan_stmt(X, s->u.for_.body);
		X->ninner--;
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			scan_stmt(X, s->u.seq.items[i]);
		return;
	case LS_STORE:
		for (int d = 0; d < s->u.store.n; d++)
			scan_expr(X, s->u.store.index[d]);
		scan_expr(X, s->u.store.value);
		return;
	case LS_IF:
		scan_expr(X, s->u.if_.cond);
		scan_stmt(X, s->u.if_.then_);
		if (s->u.if_.else_)
			scan_stmt(X, s->u.if_.else_);
		return;
	case LS_ALLOC:
		scan_stmt(X, s->u.alloc.body);
		return;
	case LS_BARRIER:
	case LS_PREFETCH:
		return;
	}
}

/* Return the prefetches of the box "lo".."hi" (non-empty, inside the
 * buffer), row by row, a line apart along the last dimension. */
static loop_stmt *prefetch_box(expander *X, loop_expr **lo, loop_expr **hi)
{
	loop_prog *p = X->p;
	const loop_buffer *b = X->buf;
	int n = b->ndim, size = tessel_dtype_size(b->dtype);
	int64_t line = X->line_bytes / size > 0 ? X->line_bytes / size : 1;
	loop_expr *idx[TESSEL_MAX_DIMS];
	loop_var *row[TESSEL_MAX_DIMS];
	for (int d = 0; d + 1 < n; d++) {
		char name[16];
		snprintf(name, sizeof(name), "pf_d%d", d);
		row[d] = loop_var_new(p, name);
		idx[d] = lx_var(p, row[d]);
	}
	loop_var *q = loop_var_new(p, "pf");
	loop_expr *last_lo = lo[n - 1], *last_hi = hi[n - 1];
	idx[n - 1] = lx_add(p, last_lo, lx_mul(p, lx_var(p, q), lx_int(p, line)));
	loop_expr *lines = lx_add(p, lx_div(p, lx_sub(p, last_hi, last_lo), lx_int(p, line)),
		lx_int(p, 1));
	loop_stmt *along = ls_for(p, q, lx_int(p, 0), lines, LOOP_SERIAL,
		ls_prefetch(p, (loop_buffer *)b, n, idx));
	loop_stmt *body = ls_seq(p, 0, NULL);
	ls_seq_append(p, body, along);
	idx[n - 1] = last_hi;
	if (last_hi != last_lo)
		ls_seq_append(p, body, ls_prefetch(p, (loop_buffer *)b, n, idx));
	for (int d = n - 2; d >= 0; d--)
		body = ls_for(p, row[d], lo[d], lx_add(p, lx_sub(p, hi[d], lo[d]),
			lx_int(p, 1)), LOOP_SERIAL, body);
	return body;
}

/* Return whether loops of kind "k" may hold prefetches: not vectorized
 * ones (their bodies are single vector statements) nor GPU-bound ones. */
static bool prefetches_in(loop_kind k)
{
	return k == LOOP_SERIAL || k == LOOP_PARALLEL || k == LOOP_UNROLLED;
}

/* Put the prefetches of the annotated loop "f" at the top of its body;
 * return 1, or 0 when there is nothing to prefetch. */
static int expand_loop(loop_prog *p, int line_bytes, loop_stmt *f)
{
	expander X = { .p = p, .line_bytes = line_bytes, .target = f->u.for_.var,
		.buf = f->u.for_.prefetch };
	loop_expr *v = lx_var(p, f->u.for_.var);
	X.shifted = lx_add(p, v, lx_int(p, f->u.for_.prefetch_distance));
	f->u.for_.prefetch = NULL;
	scan_stmt(&X, f->u.for_.body);
	if (!X.any || X.too_deep || X.buf->ndim == 0)
		return 0;
	loop_expr *end = lx_add(p, f->u.for_.min, f->u.for_.extent);
	loop_expr *cond = lx_cmp(p, TESSEL_LT, X.shifted, end);
	loop_expr *lo[TESSEL_MAX_DIMS], *hi[TESSEL_MAX_DIMS];
	for (int d = 0; d < X.buf->ndim; d++) {
		loop_expr *last = lx_int(p, X.buf->shape[d] - 1);
		lo[d] = lx_max(p, X.lo[d], lx_int(p, 0));
		if (X.lo[d] == X.hi[d])
			lo[d] = hi[d] = lx_min(p, lo[d], last);
		else
			hi[d] = lx_min(p, X.hi[d], last);
		cond = lx_and(p, cond, lx_cmp(p, TESSEL_LE, lo[d], hi[d]));
	}
	loop_stmt *guarded = ls_if(p, cond, prefetch_box(&X, lo, hi), NULL);
	loop_stmt *body = ls_seq(p, 0, NULL);
	ls_seq_append(p, body, guarded);
	ls_seq_append(p, body, f->u.for_.body);
	f->u.for_.body = body;
	return 1;
}

/* Expand the annotated loops in "s"; return how many got prefetches. */
static int expand_stmt(loop_prog *p, int line_bytes, loop_stmt *s)
{
	int n = 0;
	switch (s->kind) {
	case LS_FOR:
		n = expand_stmt(p, line_bytes, s->u.for_.body);
		if (s->u.for_.prefetch && prefetches_in(s->u.for_.kind))
			n += expand_loop(p, line_bytes, s);
		s->u.for_.prefetch = NULL;
		return n;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			n += expand_stmt(p, line_bytes, s->u.seq.items[i]);
		return n;
	case LS_IF:
		n = expand_stmt(p, line_bytes, s->u.if_.then_);
		if (s->u.if_.else_)
			n += expand_stmt(p, line_bytes, s->u.if_.else_);
		return n;
	case LS_ALLOC:
		return expand_stmt(p, line_bytes, s->u.alloc.body);
	default:
		return 0;
	}
}

int loop_expand_prefetch(loop_prog *p, int line_bytes)
{
	return p->body ? expand_stmt(p, line_bytes, p->body) : 0;
}
