/* Barriers for shared buffers: the threads of a block write a shared
 * buffer together and read what the others wrote, so a barrier must
 * separate the writes from the reads, and the reads of one iteration of
 * an enclosing loop from the writes of the next (the refill of a tile
 * in a serial reduction loop).
 *
 * requires: a verified program; a shared buffer is written and read by
 *   distinct statements of the sequence its allocation holds (lowering
 *   makes: alloc S { nest that computes S; the code that reads S })
 * guarantees: in the body of each shared allocation, a barrier before a
 *   statement that writes the buffer when an earlier one since the last
 *   barrier read or wrote it, before a statement that reads it when an
 *   earlier one wrote it, and at its top when a loop of the kernel
 *   encloses it (so the next iteration's writes wait for this one's
 *   reads), one barrier where two would follow each other; none before a
 *   shared allocation that reads the buffer only after a barrier of its
 *   own, and none at the top of a nested shared allocation after a
 *   barrier of the enclosing body (a tile of B nested in a tile of A:
 *   one barrier before both refills, one after).  Every thread
 *   of a block must reach every barrier (OpenCL
 *   1.2, 6.12.8; CUDA's __syncthreads): a barrier under a thread loop
 *   shorter than the block along its index (the printers guard it), a
 *   condition on a thread index, or a loop whose bounds depend on one is
 *   refused, never emitted.  A thread loop as long as the block (the
 *   launch of its kernel, each top-level statement, is the largest
 *   extent bound to each index: codegen/gpu_c.c) is run once by every
 *   thread, unguarded, so a barrier inside it is reached by all; this is
 *   how a shared tile is filled and read inside the thread loops of a
 *   stage with a register accumulator (schedule/shared.c)
 * A buffer marked "fenced" (the tree of a cross-thread reduction, whose
 * statements read and write it) keeps the barriers its maker placed;
 * they are checked like the others.
 *
 * invalidates: nothing (barriers are no-ops for loop_eval and CPU C) */
#include <stdlib.h>

#include "ir/loop.h"
#include "ir/te_impl.h"

typedef struct barrier_walk {
	tessel_ctx *ctx;
	loop_prog *p;
	bool *thread_var;   /* by variable id: its value depends on a thread index */
	int64_t launch[LOOP_THREAD_Z + 1]; /* the kernel's threads per index */
	bool failed;
} barrier_walk;

static bool is_thread_kind(loop_kind k)
{
	return k == LOOP_THREAD_X || k == LOOP_THREAD_Y || k == LOOP_THREAD_Z;
}

static bool is_block_kind(loop_kind k)
{
	return k == LOOP_BLOCK_X || k == LOOP_BLOCK_Y || k == LOOP_BLOCK_Z;
}

/* Return whether "e" depends on a thread index. */
static bool on_thread(const barrier_walk *w, const loop_expr *e)
{
	switch (e->kind) {
	case LX_VAR: return w->thread_var[e->u.var->id];
	case LX_LOAD:
		for (int i = 0; i < e->u.load.n; i++)
			if (on_thread(w, e->u.load.index[i]))
				return true;
		return false;
	case LX_UNARY: return on_thread(w, e->u.un.a);
	case LX_BINARY: return on_thread(w, e->u.bin.a) || on_thread(w, e->u.bin.b);
	case LX_SELECT:
		return on_thread(w, e->u.sel.cond) || on_thread(w, e->u.sel.then_) ||
		       on_thread(w, e->u.sel.else_);
	case LX_CAST: return on_thread(w, e->u.cast.a);
	default: return false;
	}
}

/* Add to "*reads" and "*writes" whether "s" loads from and stores to "b". */
static void accesses(const loop_stmt *s, const loop_buffer *b, bool *reads,
	bool *writes)
{
	switch (s->kind) {
	case LS_FOR:
		*reads |= loop_expr_loads(s->u.for_.min, b) || loop_expr_loads(s->u.for_.extent, b);
		accesses(s->u.for_.body, b, reads, writes);
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			accesses(s->u.seq.items[i], b, reads, writes);
		return;
	case LS_STORE:
		*writes |= s->u.store.buf == b;
		*reads |= loop_expr_loads(s->u.store.value, b);
		for (int i = 0; i < s->u.store.n; i++)
			*reads |= loop_expr_loads(s->u.store.index[i], b);
		return;
	case LS_IF:
		*reads |= loop_expr_loads(s->u.if_.cond, b);
		accesses(s->u.if_.then_, b, reads, writes);
		if (s->u.if_.else_)
			accesses(s->u.if_.else_, b, reads, writes);
		return;
	case LS_ALLOC:
		accesses(s->u.alloc.body, b, reads, writes);
		return;
	case LS_BARRIER:
	case LS_PREFETCH:
		return;
	}
}

/* Record that a barrier for "buffer" (NULL: one already in the program)
 * would lie "why". */
static void refuse(barrier_walk *w, const char *buffer, const char *why)
{
	if (!w->failed && buffer)
		te_error(w->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
			"shared buffer '%s' needs a barrier %s, which not every thread of "
			"the block reaches; compute shared stages outside thread loops and "
			"conditions on thread indices, or inside thread loops that span "
			"the block", buffer, why);
	else if (!w->failed)
		te_error(w->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
			"a barrier lies %s, which not every thread of the block reaches",
			why);
	w->failed = true;
}

static loop_stmt *place(barrier_walk *w, loop_stmt *s, const char *divergent,
	bool repeated);

/* Return whether the thread loop "s" runs once in every thread of the
 * block: from 0 over the block's threads along its index, unguarded. */
static bool spans_block(const barrier_walk *w, const loop_stmt *s)
{
	const loop_expr *min = s->u.for_.min, *ext = s->u.for_.extent;
	return min->kind == LX_INT && min->u.ival == 0 && ext->kind == LX_INT &&
	       ext->u.ival == w->launch[s->u.for_.kind];
}

/* Raise "launch" to the constant extents of the thread loops in "s". */
static void gather_launch(const loop_stmt *s, int64_t *launch)
{
	switch (s->kind) {
	case LS_FOR: {
		const loop_expr *e = s->u.for_.extent;
		if (is_thread_kind(s->u.for_.kind) && e->kind == LX_INT &&
		    e->u.ival > launch[s->u.for_.kind])
			launch[s->u.for_.kind] = e->u.ival;
		gather_launch(s->u.for_.body, launch);
		return;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			gather_launch(s->u.seq.items[i], launch);
		return;
	case LS_IF:
		gather_launch(s->u.if_.then_, launch);
		if (s->u.if_.else_)
			gather_launch(s->u.if_.else_, launch);
		return;
	case LS_ALLOC:
		gather_launch(s->u.alloc.body, launch);
		return;
	default:
		return;
	}
}

/* Drop the barrier that "s", a fenced shared allocation, starts with:
 * the caller has one before it, and nothing between can touch the
 * buffer "s" allocates. */
static void drop_leading_barrier(loop_stmt *s)
{
	if (s->kind != LS_ALLOC || s->u.alloc.buf->scope != LOOP_SHARED)
		return;
	loop_stmt *body = s->u.alloc.body;
	if (body->kind != LS_SEQ || body->u.seq.n == 0 ||
	    body->u.seq.items[0]->kind != LS_BARRIER)
		return;
	body->u.seq.n--;
	for (int i = 0; i < body->u.seq.n; i++)
		body->u.seq.items[i] = body->u.seq.items[i + 1];
}

/* Return whether "s" allocates a buffer whose maker placed its barriers. */
static bool is_fenced(const loop_stmt *s)
{
	return s->kind == LS_ALLOC && s->u.alloc.buf->fenced;
}

/* Return whether the sequence "s" holds a barrier. */
static bool has_barrier(const loop_stmt *s)
{
	for (int i = 0; i < s->u.seq.n; i++)
		if (s->u.seq.items[i]->kind == LS_BARRIER)
			return true;
	return false;
}

/* What comes first in a statement, along the path every thread takes
 * through it: a barrier, a read of a buffer, or neither. */
typedef enum first_seen { SEEN_NEITHER, SEEN_BARRIER, SEEN_READ } first_seen;

/* Return what "s" meets first of a barrier and a read of "b": looking
 * into sequences and allocations (whose statements every thread runs in
 * order), not into loops and conditions, which count as reads when they
 * read "b" anywhere. */
static first_seen first_of_barrier_or_read(const loop_stmt *s, const loop_buffer *b)
{
	if (s->kind == LS_BARRIER)
		return SEEN_BARRIER;
	if (s->kind == LS_ALLOC)
		return first_of_barrier_or_read(s->u.alloc.body, b);
	if (s->kind == LS_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++) {
			first_seen f = first_of_barrier_or_read(s->u.seq.items[i], b);
			if (f != SEEN_NEITHER)
				return f;
		}
		return SEEN_NEITHER;
	}
	bool r = false, wr = false;
	accesses(s, b, &r, &wr);
	return r ? SEEN_READ : SEEN_NEITHER;
}

/* Return the body "body" of the allocation of the shared buffer "b" with
 * its barriers.  Where a statement that reads "b" is itself a shared
 * allocation with a barrier before its first read of "b" (the tile of B
 * nested in the tile of A, filled before the barrier both are read
 * after), no barrier goes before it; and a nested allocation's leading
 * barrier is dropped after an earlier one in "body" (one barrier per
 * refill of both tiles, not three). */
static loop_stmt *fence(barrier_walk *w, const loop_buffer *b, loop_stmt *body,
	const char *divergent, bool repeated)
{
	int n = body->kind == LS_SEQ ? body->u.seq.n : 1;
	loop_stmt *const *items = body->kind == LS_SEQ ? body->u.seq.items : &body;
	loop_stmt *out = ls_seq(w->p, 0, NULL);
	bool wrote = false, read = false, fenced = false;
	if (repeated) {
		ls_seq_append(w->p, out, ls_barrier(w->p));
		fenced = true;
	}
	for (int i = 0; i < n; i++) {
		bool r = false, wr = false;
		accesses(items[i], b, &r, &wr);
		if (r && wr) {
			if (!w->failed)
				te_error(w->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
					"shared buffer '%s' is read and written by one statement; "
					"no barrier can separate them", b->name);
			w->failed = true;
		}
		bool after_barrier = out->u.seq.n &&
			out->u.seq.items[out->u.seq.n - 1]->kind == LS_BARRIER;
		if (after_barrier || (has_barrier(out) && !is_fenced(items[i])))
			drop_leading_barrier(items[i]);
		bool fenced_inside = r && !wr && items[i]->kind == LS_ALLOC &&
			items[i]->u.alloc.buf->scope == LOOP_SHARED &&
			first_of_barrier_or_read(items[i], b) == SEEN_BARRIER;
		if ((wr && (read || wrote)) || (r && wrote && !fenced_inside)) {
			ls_seq_append(w->p, out, ls_barrier(w->p));
			fenced = true;
			read = wrote = false;
			drop_leading_barrier(items[i]);
		}
		if (items[i]->kind == LS_BARRIER || fenced_inside)
			read = wrote = false;
		ls_seq_append(w->p, out, items[i]);
		read |= r;
		wrote |= wr;
	}
	if (fenced && divergent)
		refuse(w, b->name, divergent);
	return out;
}

static loop_stmt *place(barrier_walk *w, loop_stmt *s, const char *divergent,
	bool repeated)
{
	switch (s->kind) {
	case LS_FOR: {
		loop_kind k = s->u.for_.kind;
		const char *inner = divergent;
		bool spans = is_thread_kind(k) && spans_block(w, s);
		if (is_thread_kind(k) || on_thread(w, s->u.for_.min) ||
		    on_thread(w, s->u.for_.extent)) {
			w->thread_var[s->u.for_.var->id] = true;
			if (!spans)
				inner = is_thread_kind(k) ? "inside a loop bound to a thread index "
					"that not every thread of the block runs"
					: "inside a loop whose bounds depend on a thread index";
		}
		s->u.for_.body = place(w, s->u.for_.body, inner,
			repeated || !(is_block_kind(k) || spans));
		return s;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			s->u.seq.items[i] = place(w, s->u.seq.items[i], divergent, repeated);
		return s;
	case LS_IF: {
		const char *inner = on_thread(w, s->u.if_.cond)
			? "under a condition on a thread index" : divergent;
		s->u.if_.then_ = place(w, s->u.if_.then_, inner, repeated);
		if (s->u.if_.else_)
			s->u.if_.else_ = place(w, s->u.if_.else_, inner, repeated);
		return s;
	}
	case LS_ALLOC:
		s->u.alloc.body = place(w, s->u.alloc.body, divergent, repeated);
		if (s->u.alloc.buf->scope == LOOP_SHARED && !s->u.alloc.buf->fenced)
			s->u.alloc.body = fence(w, s->u.alloc.buf, s->u.alloc.body, divergent,
				repeated);
		return s;
	case LS_BARRIER:
		if (divergent)
			refuse(w, NULL, divergent);
		return s;
	case LS_STORE:
	case LS_PREFETCH:
		return s;
	}
	return s;
}

/* Place the barriers of the top-level statement "s": a sequence and a
 * global allocation hold kernels, anything else is a kernel (as the GPU
 * printers split a program, codegen/gpu_c.c). */
static loop_stmt *place_top(barrier_walk *w, loop_stmt *s)
{
	if (s->kind == LS_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			s->u.seq.items[i] = place_top(w, s->u.seq.items[i]);
		return s;
	}
	if (s->kind == LS_ALLOC && s->u.alloc.buf->scope == LOOP_GLOBAL) {
		s->u.alloc.body = place_top(w, s->u.alloc.body);
		return s;
	}
	for (int k = 0; k <= LOOP_THREAD_Z; k++)
		w->launch[k] = 1;
	gather_launch(s, w->launch);
	return place(w, s, NULL, false);
}

int loop_insert_barriers(tessel_ctx *ctx, loop_prog *p)
{
	if (!p->body)
		return 0;
	barrier_walk w = { .ctx = ctx, .p = p,
		.thread_var = calloc((size_t)p->nvars + 1, sizeof(bool)) };
	p->body = place_top(&w, p->body);
	free(w.thread_var);
	return w.failed ? -1 : 0;
}
