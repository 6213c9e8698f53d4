/* Vector loads of a register tile read once per iteration and kept in
 * registers.
 *
 * A serial loop L whose body is a register tile (unrolled and vectorized
 * loops of constant bounds around stores into local buffers, nothing
 * else) often reads one vector of an input for every row of the tile:
 *
 *     for k in 0..K:
 *       for i in 0..4 unrolled:
 *         for j in 0..16 vectorized:
 *           acc[i, j] = acc[i, j] + A[i, k] * B[k, j]
 *
 * reads B[k, 0..16] four times.  The C compiler loads it once, but then
 * folds the load into each multiply-add as a memory operand, four loads
 * where one would do (on Zen 3, two loads a cycle then bound a 4x16
 * tile).  This pass reads such a load (contiguous in the vector loop, the
 * same in some unrolled loop around it, of a buffer L does not store)
 * into a local buffer at the top of L's body and marks the buffer
 * pinned: the printer keeps each vector stored in it in a register (an
 * empty asm statement that takes the vector in a register, which the
 * compiler cannot see through):
 *
 *     for k in 0..K:
 *       for j' in 0..16 vectorized: B_pin[j'] = B[k, j']
 *       for i in 0..4 unrolled:
 *         for j in 0..16 vectorized:
 *           acc[i, j] = acc[i, j] + A[i, k] * B_pin[j]
 *
 * Values are unchanged (the same elements, read in the same iteration of
 * L).  A load is pinned only while the tile's accumulators and the pinned
 * vectors together leave two of the target's vector registers free. */
#include <stdio.h>

#include "ir/loop.h"

#define MAX_DEPTH 16
#define MAX_PINNED 16
/* Vector registers left for the broadcast operand and a temporary. */
#define FREE_REGISTERS 2

typedef struct pinner {
	loop_prog *p;
	const loop_stmt *outer;      /* L */
	int vector_bytes, registers;
	bool refused;
	int depth;
	const loop_stmt *path[MAX_DEPTH];
	int64_t acc_bytes;           /* of the local buffers the tile stores */
	int nloads;                  /* the loads to pin, and where they are */
	loop_expr *load[MAX_PINNED];
	const loop_stmt *around[MAX_PINNED][MAX_DEPTH];
	int naround[MAX_PINNED];
	int vectors;                 /* the pinned vectors */
} pinner;

/* Return whether "s" stores "b". */
static bool stores(const loop_stmt *s, const loop_buffer *b)
{
	switch (s->kind) {
	case LS_FOR:
		return stores(s->u.for_.body, b);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (stores(s->u.seq.items[i], b))
				return true;
		return false;
	case LS_STORE:
		return s->u.store.buf == b;
	default:
		return false;
	}
}

/* Return the coefficient of "v" in the flat offset of a load of "b" at
 * "index" when each index is "v" times a constant plus terms free of it;
 * 0 when not. */
static int64_t stride_in(const loop_expr *e, const loop_var *v)
{
	if (!loop_expr_uses_var(e, v))
		return 0;
	if (e->kind == LX_VAR)
		return 1;
	if (e->kind != LX_BINARY)
		return 0;
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		return loop_expr_uses_var(a, v) && loop_expr_uses_var(b, v) ? 0 :
		       loop_expr_uses_var(a, v) ? stride_in(a, v) : stride_in(b, v);
	case TESSEL_MUL:
		if (b->kind == LX_INT)
			return stride_in(a, v) * b->u.ival;
		if (a->kind == LX_INT)
			return stride_in(b, v) * a->u.ival;
		return 0;
	default:
		return 0;
	}
}

/* Consider the load "e" at the current place of the walk for pinning
 * (never one in a branch of a select or the right operand of && or ||,
 * which may not run: a padding's load outside its input). */
static void consider(pinner *P, loop_expr *e)
{
	const loop_stmt *vec = P->depth > 0 ? P->path[P->depth - 1] : NULL;
	if (!vec || vec->u.for_.kind != LOOP_VECTORIZED || P->nloads == MAX_PINNED ||
	    stores(P->outer->u.for_.body, e->u.load.buf))
		return;
	const loop_buffer *b = e->u.load.buf;
	int64_t stride = 0;
	for (int i = 0; i < e->u.load.n; i++) {
		if (loop_expr_has_load(e->u.load.index[i]))
			return;
		stride += stride_in(e->u.load.index[i], vec->u.for_.var) * b->strides[i];
	}
	if (stride != 1)
		return;
	/* the unrolled loops it moves with, and whether one it does not */
	int64_t copies = 1;
	bool reused = false;
	int n = 0;
	for (int k = 0; k < P->depth - 1; k++) {
		const loop_stmt *f = P->path[k];
		bool used = false;
		for (int i = 0; i < e->u.load.n && !used; i++)
			used = loop_expr_uses_var(e->u.load.index[i], f->u.for_.var);
		if (used) {
			P->around[P->nloads][n++] = f;
			copies *= f->u.for_.extent->u.ival;
		} else if (f->u.for_.extent->u.ival > 1) {
			reused = true;
		}
	}
	int64_t bytes = vec->u.for_.extent->u.ival * (int64_t)tessel_dtype_size(b->dtype);
	int64_t vectors = copies * ((bytes + P->vector_bytes - 1) / P->vector_bytes);
	if (!reused || vectors > P->registers)
		return;
	P->around[P->nloads][n++] = vec;
	P->naround[P->nloads] = n;
	P->load[P->nloads++] = e;
	P->vectors += (int)vectors;
}

static void scan_expr(pinner *P, loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		if (!e->u.load.buf->pinned)
			consider(P, e);
		return;
	case LX_UNARY:
		scan_expr(P, e->u.un.a);
		return;
	case LX_BINARY:
		scan_expr(P, e->u.bin.a);
		if (e->u.bin.op != TESSEL_AND && e->u.bin.op != TESSEL_OR)
			scan_expr(P, e->u.bin.b);
		return;
	case LX_SELECT:
		scan_expr(P, e->u.sel.cond);
		return;
	case LX_CAST:
		scan_expr(P, e->u.cast.a);
		return;
	default:
		return;
	}
}

/* Walk the tile, checking its form and gathering the loads to pin. */
static void scan_stmt(pinner *P, const loop_stmt *s)
{
	if (P->refused)
		return;
	switch (s->kind) {
	case LS_FOR: {
		loop_kind k = s->u.for_.kind;
		if ((k != LOOP_UNROLLED && k != LOOP_VECTORIZED) ||
		    s->u.for_.min->kind != LX_INT || s->u.for_.extent->kind != LX_INT ||
		    s->u.for_.extent->u.ival < 1 || P->depth == MAX_DEPTH) {
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
	case LS_STORE: {
		const loop_buffer *b = s->u.store.buf;
		if (b->scope != LOOP_LOCAL) {
			P->refused = true;
			return;
		}
		int64_t elems = 1;
		for (int k = 0; k < P->depth; k++)
			elems *= P->path[k]->u.for_.extent->u.ival;
		P->acc_bytes += elems * (int64_t)tessel_dtype_size(b->dtype);
		scan_expr(P, s->u.store.value);
		return;
	}
	default:
		P->refused = true;
		return;
	}
}

/* Pin the "i"th load gathered: a buffer, its fill at the top of L's body
 * ("fill"), and the load redirected to it. */
static loop_buffer *pin(pinner *P, int i, loop_stmt *fill)
{
	loop_prog *p = P->p;
	loop_expr *e = P->load[i];
	const loop_stmt *const *around = P->around[i];
	int n = P->naround[i];
	int64_t shape[MAX_DEPTH];
	loop_var *fresh[MAX_DEPTH];
	const loop_var *old[MAX_DEPTH];
	loop_expr *ix[MAX_DEPTH], *src[TESSEL_MAX_DIMS], *pinned_ix[MAX_DEPTH];
	for (int j = 0; j < n; j++) {
		shape[j] = around[j]->u.for_.extent->u.ival;
		old[j] = around[j]->u.for_.var;
		fresh[j] = loop_var_new(p, old[j]->name);
		ix[j] = lx_sub(p, lx_var(p, fresh[j]), around[j]->u.for_.min);
		pinned_ix[j] = lx_sub(p, lx_var(p, around[j]->u.for_.var), around[j]->u.for_.min);
	}
	char name[300];
	snprintf(name, sizeof(name), "%s_pin", e->u.load.buf->name);
	loop_buffer *b = loop_buffer_new(p, name, e->dtype, n, shape, LOOP_LOCAL);
	b->pinned = true;
	for (int d = 0; d < e->u.load.n; d++)
		src[d] = loop_expr_rename(p, e->u.load.index[d], n, old, fresh);
	loop_stmt *s = ls_store(p, b, n, ix, lx_load(p, e->u.load.buf, e->u.load.n, src), NULL);
	for (int j = n - 1; j >= 0; j--)
		s = ls_for(p, fresh[j], around[j]->u.for_.min, around[j]->u.for_.extent,
			j == n - 1 ? LOOP_VECTORIZED : LOOP_UNROLLED, s);
	ls_seq_append(p, fill, s);
	*e = *lx_load(p, b, n, pinned_ix);
	return b;
}

/* Pin the loads of the tile that is the body of the serial loop "*slot",
 * if it is one; return the number pinned. */
static int pin_tile(pinner *P, loop_stmt **slot)
{
	loop_stmt *L = *slot;
	P->outer = L;
	scan_stmt(P, L->u.for_.body);
	int64_t acc_vectors = (P->acc_bytes + P->vector_bytes - 1) / P->vector_bytes;
	if (P->refused || P->nloads == 0 ||
	    acc_vectors + P->vectors > P->registers - FREE_REGISTERS)
		return 0;
	loop_prog *p = P->p;
	loop_stmt *fill = ls_seq(p, 0, NULL);
	loop_buffer *bufs[MAX_PINNED];
	for (int i = 0; i < P->nloads; i++)
		bufs[i] = pin(P, i, fill);
	loop_stmt *items[2] = { fill, L->u.for_.body };
	L->u.for_.body = ls_seq(p, 2, items);
	for (int i = P->nloads - 1; i >= 0; i--)
		*slot = ls_alloc(p, bufs[i], *slot);
	return P->nloads;
}

static int pin_stmt(loop_prog *p, loop_stmt **slot, int vector_bytes, int registers)
{
	loop_stmt *s = *slot;
	int count = 0;
	switch (s->kind) {
	case LS_FOR:
		if (s->u.for_.kind == LOOP_SERIAL) {
			pinner P = { .p = p, .vector_bytes = vector_bytes, .registers = registers };
			int n = pin_tile(&P, slot);
			if (n > 0)
				return n;
		}
		return pin_stmt(p, &s->u.for_.body, vector_bytes, registers);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			count += pin_stmt(p, &s->u.seq.items[i], vector_bytes, registers);
		return count;
	case LS_IF:
		count += pin_stmt(p, &s->u.if_.then_, vector_bytes, registers);
		if (s->u.if_.else_)
			count += pin_stmt(p, &s->u.if_.else_, vector_bytes, registers);
		return count;
	case LS_ALLOC:
		return pin_stmt(p, &s->u.alloc.body, vector_bytes, registers);
	default:
		return 0;
	}
}

int loop_pin_loads(loop_prog *p, int vector_bytes, int registers)
{
	if (!p->body || vector_bytes <= 0 || registers <= FREE_REGISTERS)
		return 0;
	return pin_stmt(p, &p->body, vector_bytes, registers);
}
