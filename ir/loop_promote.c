/* Promotion of accumulators into local buffers (scalar replacement, Carr
 * and Kennedy; LLVM's promotion of memory to registers in LICM).
 *
 * A serial loop L of constant extent whose body updates a fixed tile of a
 * global buffer X in every iteration,
 *
 *     for k in 0..K:                       alloc X_acc: [e1, .., em] local {
 *       for t1 in 0..e1 unrolled:            for t..: X_acc[t] = X[I(t)]
 *         for t2 in 0..e2 vectorized:   =>   for k in 0..K:
 *           X[I(t)] = X[I(t)] + f              for t..: X_acc[t] = X_acc[t] + f
 *                                            for t..: X[I(t)] = X_acc[t]
 *                                          }
 *
 * reads the tile once before L into a local buffer, works on it, and
 * writes it back after.  It applies when
 *   - every load and store of X inside L has the same indices I, which
 *     hold no load, no variable of L, and, of the variables bound inside
 *     L, only those of unrolled and vectorized loops (the tile's, t) of
 *     constant extent that start where they start in every iteration of
 *     L (a serial loop's tile would stay in memory: nothing to gain);
 *   - I is affine in t and reaches each element from one t only (the
 *     offsets' coefficients, sorted by size, each exceed the span of the
 *     smaller ones), so X_acc[t] and X[I(t)] name the same element;
 *   - no access of X lies under a condition, and every loop between L
 *     and one runs at least once with a constant extent, so that every
 *     element read before L is one the loop reads (none outside X);
 *   - L holds only serial, unrolled and vectorized loops, stores and
 *     sequences (no allocation, barrier or prefetch), and the tile fits
 *     the target's vector registers (a larger one would be stored and
 *     reloaded in every iteration either way, and the copies cost).
 * Values are unchanged: the loop reads and writes the same elements in the
 * same order, through a copy no other buffer can alias.  What it changes
 * is what the C compiler may do: it keeps a local array in registers,
 * but not the elements of a buffer that it cannot prove apart from the
 * loop's other reads (the kernel's buffers reach a parallel loop's body
 * through a closure), so an accumulation in place stores and reloads
 * every element in every iteration of L.
 *
 * Programs with GPU-bound loops are left alone: their printers have not
 * been measured with it.  Innermost loops first: a loop whose body holds
 * a promoted loop is no longer a tile. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/loop.h"

#define MAX_TILE_VARS 8

typedef struct promoter {
	loop_prog *p;
	const loop_stmt *outer;            /* L */
	loop_buffer *buf;                  /* X */
	int64_t max_bytes;                 /* the largest tile promoted */
	loop_expr *const *index;           /* I: the indices of its first access */
	int nindex;
	bool refused;
	/* the loops inside L around the walk */
	int depth;
	const loop_stmt *path[64];
	/* the tile's variables, outermost first, and their loops */
	int nvars;
	const loop_stmt *tile[MAX_TILE_VARS];
	/* while copying: new variables by tile position */
	loop_var *fresh[MAX_TILE_VARS];
	loop_buffer *acc;
} promoter;

static bool const_int(const loop_expr *e, int64_t *v)
{
	if (e->kind != LX_INT)
		return false;
	*v = e->u.ival;
	return true;
}

/* ---- recognizing a promotable tile ------------------------------------------ */

/* Return whether "e" has the same value in every iteration of L and of
 * the loops inside it around the walk (so that it can be evaluated
 * before L). */
static bool invariant(const promoter *P, const loop_expr *e)
{
	if (loop_expr_has_load(e) || loop_expr_uses_var(e, P->outer->u.for_.var))
		return false;
	for (int k = 0; k < P->depth; k++)
		if (loop_expr_uses_var(e, P->path[k]->u.for_.var))
			return false;
	return true;
}

/* Check the indices of one access of X at the current depth of the walk:
 * the same as the first access's, and mentioning no variable bound inside
 * L but the tile's; record the tile's loops on the first access. */
static void check_access(promoter *P, int n, loop_expr *const *index)
{
	if (!P->index) {
		P->index = index;
		P->nindex = n;
		for (int i = 0; i < n; i++)
			if (loop_expr_has_load(index[i]) ||
			    loop_expr_uses_var(index[i], P->outer->u.for_.var))
				P->refused = true;
		for (int k = 0; k < P->depth && !P->refused; k++) {
			const loop_stmt *f = P->path[k];
			bool used = false;
			for (int i = 0; i < n && !used; i++)
				used = loop_expr_uses_var(index[i], f->u.for_.var);
			if (!used)
				continue;
			if (P->nvars == MAX_TILE_VARS || f->u.for_.kind == LOOP_SERIAL)
				P->refused = true;
			else
				P->tile[P->nvars++] = f;
		}
		return;
	}
	if (n != P->nindex) {
		P->refused = true;
		return;
	}
	for (int i = 0; i < n; i++)
		if (!loop_expr_equal(index[i], P->index[i]))
			P->refused = true;
}

static void scan_expr(promoter *P, const loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		if (e->u.load.buf == P->buf)
			check_access(P, e->u.load.n, e->u.load.index);
		for (int i = 0; i < e->u.load.n; i++)
			scan_expr(P, e->u.load.index[i]);
		return;
	case LX_UNARY:
		scan_expr(P, e->u.un.a);
		return;
	case LX_BINARY:
		scan_expr(P, e->u.bin.a);
		scan_expr(P, e->u.bin.b);
		return;
	case LX_SELECT:
		scan_expr(P, e->u.sel.cond);
		scan_expr(P, e->u.sel.then_);
		scan_expr(P, e->u.sel.else_);
		return;
	case LX_CAST:
		scan_expr(P, e->u.cast.a);
		return;
	default:
		return;
	}
}

/* Walk the body of L, checking every access of X and the statements
 * around them. */
static void scan_stmt(promoter *P, const loop_stmt *s)
{
	if (P->refused || !s)
		return;
	switch (s->kind) {
	case LS_FOR: {
		int64_t extent;
		loop_kind k = s->u.for_.kind;
		if ((k != LOOP_SERIAL && k != LOOP_UNROLLED && k != LOOP_VECTORIZED) ||
		    !invariant(P, s->u.for_.min) ||
		    !const_int(s->u.for_.extent, &extent) || extent < 1 ||
		    P->depth == (int)(sizeof(P->path) / sizeof(P->path[0]))) {
			P->refused = true;
			return;
		}
		P->path[P->depth++] = s;
		scan_stmt(P, s->u.for_.body);
		P->depth--;
		return;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			scan_stmt(P, s->u.seq.items[i]);
		return;
	case LS_STORE:
		if (s->u.store.buf == P->buf)
			check_access(P, s->u.store.n, s->u.store.index);
		for (int i = 0; i < s->u.store.n; i++)
			scan_expr(P, s->u.store.index[i]);
		scan_expr(P, s->u.store.value);
		return;
	default:
		P->refused = true;
		return;
	}
}

/* Add to "coef" the coefficients, times "scale", of the tile's variables
 * in "e", an affine form of them plus terms free of them; false when "e"
 * is not one. */
static bool affine(const promoter *P, const loop_expr *e, int64_t scale, int64_t *coef)
{
	bool mentions = false;
	for (int j = 0; j < P->nvars && !mentions; j++)
		mentions = loop_expr_uses_var(e, P->tile[j]->u.for_.var);
	if (!mentions)
		return true;
	if (e->kind == LX_VAR) {
		for (int j = 0; j < P->nvars; j++)
			if (e->u.var == P->tile[j]->u.for_.var &&
			    __builtin_add_overflow(coef[j], scale, &coef[j]))
				return false;
		return true;
	}
	if (e->kind != LX_BINARY)
		return false;
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	int64_t c, s;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		return affine(P, a, scale, coef) && affine(P, b, scale, coef);
	case TESSEL_SUB:
		return affine(P, a, scale, coef) && affine(P, b, -scale, coef);
	case TESSEL_MUL:
		if (const_int(b, &c) && !__builtin_mul_overflow(scale, c, &s))
			return affine(P, a, s, coef);
		if (const_int(a, &c) && !__builtin_mul_overflow(scale, c, &s))
			return affine(P, b, s, coef);
		return false;
	default:
		return false;
	}
}

/* Return whether "e" mentions variables of the tile and no others. */
static bool affine_in_tile_only(const promoter *P, const loop_expr *e)
{
	switch (e->kind) {
	case LX_VAR:
		for (int j = 0; j < P->nvars; j++)
			if (e->u.var == P->tile[j]->u.for_.var)
				return true;
		return false;
	case LX_BINARY:
		return affine_in_tile_only(P, e->u.bin.a) && affine_in_tile_only(P, e->u.bin.b);
	case LX_UNARY:
		return affine_in_tile_only(P, e->u.un.a);
	case LX_INT:
		return true;
	default:
		return false;
	}
}

static int by_magnitude(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;
	int64_t ma = llabs(a[0]), mb = llabs(b[0]);
	return (ma > mb) - (ma < mb);
}

/* Return whether the tile reaches each element of X from one value of its
 * variables, and is small enough. */
static bool injective(const promoter *P)
{
	int64_t coef[TESSEL_MAX_DIMS][MAX_TILE_VARS] = { { 0 } };
	int64_t step[MAX_TILE_VARS][2];
	int64_t elems = 1;
	for (int i = 0; i < P->nindex; i++)
		if (!affine(P, P->index[i], 1, coef[i]))
			return false;
	for (int j = 0; j < P->nvars; j++) {
		int64_t offset = 0, term, extent = P->tile[j]->u.for_.extent->u.ival;
		for (int i = 0; i < P->nindex; i++)
			if (__builtin_mul_overflow(coef[i][j], P->buf->strides[i], &term) ||
			    __builtin_add_overflow(offset, term, &offset))
				return false;
		step[j][0] = offset;
		step[j][1] = extent;
		if (__builtin_mul_overflow(elems, extent, &elems) ||
		    elems * (int64_t)tessel_dtype_size(P->buf->dtype) > P->max_bytes)
			return false;
	}
	qsort(step, (size_t)P->nvars, sizeof(step[0]), by_magnitude);
	int64_t span = 0;
	for (int j = 0; j < P->nvars; j++) {
		int64_t m = llabs(step[j][0]);
		if (step[j][1] > 1 && m <= span)
			return false;
		span += m * (step[j][1] - 1);
	}
	return true;
}

/* Return whether X is a local buffer that only the tile's variables
 * index: then it is the tile already. */
static bool already_tile(const promoter *P)
{
	if (P->buf->scope != LOOP_LOCAL)
		return false;
	for (int i = 0; i < P->nindex; i++)
		if (!affine_in_tile_only(P, P->index[i]))
			return false;
	return true;
}

/* ---- rewriting ---------------------------------------------------------------- */

/* Return "e" with the tile's variables replaced by the fresh ones. */
static loop_expr *renamed(promoter *P, loop_expr *e)
{
	const loop_var *from[MAX_TILE_VARS];
	for (int j = 0; j < P->nvars; j++)
		from[j] = P->tile[j]->u.for_.var;
	return loop_expr_rename(P->p, e, P->nvars, from, P->fresh);
}

/* The indices of the tile's element in X_acc: each variable less its
 * loop's start; with "fresh", of the fresh variables. */
static void acc_index(promoter *P, bool fresh, loop_expr **ix)
{
	for (int j = 0; j < P->nvars; j++) {
		const loop_stmt *f = P->tile[j];
		loop_expr *v = lx_var(P->p, fresh ? P->fresh[j] : f->u.for_.var);
		ix[j] = lx_sub(P->p, v, f->u.for_.min);
	}
	if (P->nvars == 0)
		ix[0] = lx_int(P->p, 0);
}

/* Replace every access of X in "e" by one of X_acc. */
static void retarget_expr(promoter *P, loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		if (e->u.load.buf == P->buf) {
			loop_expr *ix[MAX_TILE_VARS];
			acc_index(P, false, ix);
			*e = *lx_load(P->p, P->acc, P->acc->ndim, ix);
			return;
		}
		for (int i = 0; i < e->u.load.n; i++)
			retarget_expr(P, e->u.load.index[i]);
		return;
	case LX_UNARY:
		retarget_expr(P, e->u.un.a);
		return;
	case LX_BINARY:
		retarget_expr(P, e->u.bin.a);
		retarget_expr(P, e->u.bin.b);
		return;
	case LX_SELECT:
		retarget_expr(P, e->u.sel.cond);
		retarget_expr(P, e->u.sel.then_);
		retarget_expr(P, e->u.sel.else_);
		return;
	case LX_CAST:
		retarget_expr(P, e->u.cast.a);
		return;
	default:
		return;
	}
}

static void retarget_stmt(promoter *P, loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		retarget_stmt(P, s->u.for_.body);
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			retarget_stmt(P, s->u.seq.items[i]);
		return;
	case LS_STORE:
		retarget_expr(P, s->u.store.value);
		if (s->u.store.buf == P->buf) {
			loop_expr *ix[MAX_TILE_VARS];
			acc_index(P, false, ix);
			*s = *ls_store(P->p, P->acc, P->acc->ndim, ix, s->u.store.value,
				s->u.store.stage);
		}
		return;
	default:
		return;
	}
}

/* A nest of fresh loops over the tile, like the tile's own, around the
 * copy into X_acc ("in") or back out of it. */
static loop_stmt *copy_nest(promoter *P, bool in)
{
	loop_prog *p = P->p;
	for (int j = 0; j < P->nvars; j++)
		P->fresh[j] = loop_var_new(p, P->tile[j]->u.for_.var->name);
	loop_expr *ix[TESSEL_MAX_DIMS], *acc_ix[MAX_TILE_VARS];
	for (int i = 0; i < P->nindex; i++)
		ix[i] = renamed(P, P->index[i]);
	acc_index(P, true, acc_ix);
	loop_buffer *X = P->buf;
	loop_stmt *s = in ?
		ls_store(p, P->acc, P->acc->ndim, acc_ix, lx_load(p, X, P->nindex, ix), NULL) :
		ls_store(p, X, P->nindex, ix, lx_load(p, P->acc, P->acc->ndim, acc_ix), NULL);
	for (int j = P->nvars - 1; j >= 0; j--) {
		const loop_stmt *f = P->tile[j];
		loop_kind k = f->u.for_.kind == LOOP_VECTORIZED && j == P->nvars - 1 ?
			LOOP_VECTORIZED : LOOP_UNROLLED;
		s = ls_for(p, P->fresh[j], f->u.for_.min, f->u.for_.extent, k, s);
	}
	return s;
}

/* Promote X in the loop "*slot" (L) when it qualifies; return whether it
 * did. */
static bool promote(loop_prog *p, loop_stmt **slot, loop_buffer *X,
	int64_t max_bytes)
{
	promoter P = { .p = p, .outer = *slot, .buf = X, .max_bytes = max_bytes };
	scan_stmt(&P, (*slot)->u.for_.body);
	if (P.refused || !P.index || !injective(&P) || already_tile(&P))
		return false;
	int64_t shape[MAX_TILE_VARS] = { 1 };
	for (int j = 0; j < P.nvars; j++)
		shape[j] = P.tile[j]->u.for_.extent->u.ival;
	char name[300];
	snprintf(name, sizeof(name), "%s_acc", X->name);
	P.acc = loop_buffer_new(p, name, X->dtype, P.nvars ? P.nvars : 1, shape, LOOP_LOCAL);
	retarget_stmt(&P, (*slot)->u.for_.body);
	loop_stmt *items[3] = { copy_nest(&P, true), *slot, copy_nest(&P, false) };
	*slot = ls_alloc(p, P.acc, ls_seq(p, 3, items));
	return true;
}

/* The global buffers stored in "s", gathered into "bufs" (at most "cap"). */
static void stored_buffers(const loop_stmt *s, loop_buffer **bufs, int *n, int cap)
{
	if (!s)
		return;
	switch (s->kind) {
	case LS_FOR:
		stored_buffers(s->u.for_.body, bufs, n, cap);
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			stored_buffers(s->u.seq.items[i], bufs, n, cap);
		return;
	case LS_STORE:
		if (s->u.store.buf->scope == LOOP_SHARED)
			return;
		for (int i = 0; i < *n; i++)
			if (bufs[i] == s->u.store.buf)
				return;
		if (*n < cap)
			bufs[(*n)++] = s->u.store.buf;
		return;
	default:
		return;
	}
}

/* Promote in the statement "*slot" and everything inside it; return the
 * number of buffers promoted. */
static int promote_stmt(loop_prog *p, loop_stmt **slot, int64_t max_bytes)
{
	loop_stmt *s = *slot;
	int count = 0;
	switch (s->kind) {
	case LS_FOR:
		count += promote_stmt(p, &s->u.for_.body, max_bytes);
		break;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			count += promote_stmt(p, &s->u.seq.items[i], max_bytes);
		return count;
	case LS_IF:
		count += promote_stmt(p, &s->u.if_.then_, max_bytes);
		if (s->u.if_.else_)
			count += promote_stmt(p, &s->u.if_.else_, max_bytes);
		return count;
	case LS_ALLOC:
		return promote_stmt(p, &s->u.alloc.body, max_bytes);
	default:
		return 0;
	}
	int64_t extent;
	if (s->u.for_.kind != LOOP_SERIAL || count > 0 ||
	    !const_int(s->u.for_.extent, &extent) || extent < 2)
		return count;
	loop_buffer *bufs[8];
	int n = 0;
	stored_buffers(s->u.for_.body, bufs, &n, 8);
	loop_stmt **at = slot;
	for (int i = 0; i < n; i++)
		if (promote(p, at, bufs[i], max_bytes)) {
			count++;
			/* the loop now sits in the allocation's sequence */
			at = &(*at)->u.alloc.body->u.seq.items[1];
		}
	return count;
}

/* Return whether "s" holds a loop bound to a GPU index. */
static bool gpu_bound(const loop_stmt *s)
{
	if (!s)
		return false;
	switch (s->kind) {
	case LS_FOR:
		return s->u.for_.kind >= LOOP_BLOCK_X || gpu_bound(s->u.for_.body);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (gpu_bound(s->u.seq.items[i]))
				return true;
		return false;
	case LS_IF:
		return gpu_bound(s->u.if_.then_) || gpu_bound(s->u.if_.else_);
	case LS_ALLOC:
		return gpu_bound(s->u.alloc.body);
	default:
		return false;
	}
}

int loop_promote_accumulators(loop_prog *p, int64_t max_tile_bytes)
{
	if (!p->body || gpu_bound(p->body))
		return 0;
	return promote_stmt(p, &p->body, max_tile_bytes);
}
