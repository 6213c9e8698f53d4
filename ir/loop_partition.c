/* Loop partitioning: a loop whose body is guarded by conditions on its
 * variable is split into a guard-free main part and the rest, so that
 * full tiles run without the guards of non-dividing splits and partial
 * regions (TVM's LoopPartition; Halide's boundary splitting of the
 * "steady state", Ragan-Kelley et al., PLDI 2013, section 4.3).
 *
 * For a loop of variable v and each integer comparison that is a
 * conjunct of an `if` inside it and mentions v: the comparison is written
 * as f <= 0, where f is affine in the variables of the loops between v
 * and the `if` (those with constant bounds) plus a rest that mentions
 * none of them.  Its maximum over those loops' ranges is taken at a
 * corner of the box, so "max f <= 0" holds exactly when the comparison
 * holds in every iteration of the inner loops.  Then:
 *   - when the maximum is affine in v (c * v + r, r free of v), the values
 *     of v where it holds form an interval: the loop becomes up to three
 *     loops, [min, lo) and [hi, end) with the body as it was and [lo, hi)
 *     with those conjuncts dropped (their bounds are floor divisions of
 *     the rest, clamped to the loop's range);
 *     A parallel loop keeps its ranges in one loop instead, `if (v in
 *     [lo, hi)) body' else body` (split_parallel_loop);
 *   - otherwise (v fused, divided: `t / 2 * 6 + i <= ...`) the body is
 *     unswitched: `if (max f <= 0 for each) body' else body`, body'
 *     without those conjuncts.
 * Dropping a conjunct in a place where it is proven to hold changes
 * nothing, so the pass is exact for any program; the tests compare
 * partitioned programs with the interpreter and the schedule fuzzer runs
 * it on every random schedule.
 *
 * Loops are visited outside in, and each copy's inner loops after.
 * Vectorized loops (they need constant extents), loops bound to GPU
 * indices and loops whose bodies hold a barrier (a branch around one
 * would diverge) are left alone.  A second entry, loop_partition_lanes,
 * run once the program is simplified, takes the innermost vector loops
 * whose guards are still there (a partial tile of a fused loop: its
 * bounds are known only at run time): `if (the guards hold on every
 * lane) vector loop without them else scalar loops over the parts`,
 * so a partial tile no longer tests every lane.  A third entry,
 * loop_specialize, unswitches parallel loops on the conditions of
 * integer selects that hold or fail for a whole iteration (the bounds of
 * a fused loop's partial block), each copy with those selects decided,
 * so that the simplifier and a second partitioning find constant bounds
 * in them.
 * Copies get fresh loop variables and share buffers and expressions.
 * Duplication is bounded: a loop is not partitioned or specialized once
 * the statements copied in the program would exceed PARTITION_BUDGET. */
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/te_impl.h"

#define MAX_TERMS 16
#define MAX_CONJUNCTS 32
#define MAX_CANDIDATES 64
#define PARTITION_BUDGET 20000
#define SPECIALIZE_CONDITIONS 4
#define SPECIALIZE_BUDGET 4000

typedef enum var_place {
	VAR_OUTSIDE,     /* bound outside the loop partitioned, or v itself */
	VAR_BOXED,       /* bound inside it by a loop of constant bounds */
	VAR_UNBOXED      /* bound inside it otherwise */
} var_place;

typedef struct partitioner {
	loop_prog *p;
	unsigned char *place;   /* by variable id, while a loop is analysed */
	int64_t *lo, *hi;       /* by variable id: boxed loops' ranges */
	loop_expr **subst;      /* by variable id, while a body is copied */
	int nslots;             /* size of the arrays above */
	int copied;             /* statements copied so far */
	int nbufs;              /* buffers allocated in the copy being made */
	bool lanes;             /* loop_partition_lanes: vector loops only */
	bool specializing;      /* loop_specialize: selects, not guards */
	int split;              /* vector loops split */
	loop_expr *decided;     /* while a body is copied: a select condition */
	bool decided_value;     /* whose selects take this side in the copy */
	int specialized;        /* loop bodies specialized */
	loop_buffer *from[64], *to[64];
} partitioner;

/* f = sum coef * var + rest + c, where the vars are boxed or v */
typedef struct lin_form {
	int n;
	const loop_var *var[MAX_TERMS];
	int64_t coef[MAX_TERMS];
	int64_t c;
	loop_expr *rest;    /* NULL when 0 */
	bool ok;
} lin_form;

/* What a comparison gives the loop of "v". */
typedef struct candidate {
	loop_expr *conjunct;
	bool interval;      /* true: c * v + r <= 0 with "cv", "bound" = -r */
	int64_t cv;
	loop_expr *bound;
	loop_expr *live;    /* "bound" for the smallest value of f: beyond it
			       the conjunct never holds (NULL: unknown) */
	loop_expr *test;    /* unswitch: the condition under which it holds */
} candidate;

typedef struct analysis {
	const loop_var *v;
	int n;
	candidate c[MAX_CANDIDATES];
} analysis;

static loop_stmt *partition_stmt(partitioner *P, loop_stmt *s);

/* ---- variables --------------------------------------------------------------- */

/* Return "p" grown to "bytes"; out of memory, stop as the IR does. */
static void *grow_or_die(void *p, size_t bytes)
{
	void *q = realloc(p, bytes);
	if (!q)
		te_out_of_memory();
	return q;
}

/* Make room for the variables of "P"'s program in its arrays. */
static void grow_slots(partitioner *P)
{
	int n = P->p->nvars + 1;
	if (n <= P->nslots)
		return;
	P->place = grow_or_die(P->place, (size_t)n);
	P->lo = grow_or_die(P->lo, sizeof(int64_t) * (size_t)n);
	P->hi = grow_or_die(P->hi, sizeof(int64_t) * (size_t)n);
	P->subst = grow_or_die(P->subst, sizeof(loop_expr *) * (size_t)n);
	for (int i = P->nslots; i < n; i++) {
		P->place[i] = VAR_OUTSIDE;
		P->subst[i] = NULL;
	}
	P->nslots = n;
}

static var_place place_of(const partitioner *P, const loop_var *v)
{
	return v->id >= 0 && v->id < P->nslots ? P->place[v->id] : VAR_OUTSIDE;
}

/* Return whether "e" mentions a variable bound inside the loop analysed,
 * or, when "v" is not NULL, "v". */
static bool mentions(const partitioner *P, const loop_expr *e, const loop_var *v)
{
	switch (e->kind) {
	case LX_VAR:
		return e->u.var == v || place_of(P, e->u.var) != VAR_OUTSIDE;
	case LX_LOAD:
		for (int i = 0; i < e->u.load.n; i++)
			if (mentions(P, e->u.load.index[i], v))
				return true;
		return false;
	case LX_UNARY:
		return mentions(P, e->u.un.a, v);
	case LX_BINARY:
		return mentions(P, e->u.bin.a, v) || mentions(P, e->u.bin.b, v);
	case LX_SELECT:
		return mentions(P, e->u.sel.cond, v) || mentions(P, e->u.sel.then_, v) ||
		       mentions(P, e->u.sel.else_, v);
	case LX_CAST:
		return mentions(P, e->u.cast.a, v);
	default:
		return false;
	}
}

/* ---- affine forms ------------------------------------------------------------- */

static void form_add_term(lin_form *F, const loop_var *var, int64_t coef)
{
	for (int i = 0; i < F->n; i++)
		if (F->var[i] == var) {
			if (__builtin_add_overflow(F->coef[i], coef, &F->coef[i]))
				F->ok = false;
			return;
		}
	if (F->n == MAX_TERMS) {
		F->ok = false;
		return;
	}
	F->var[F->n] = var;
	F->coef[F->n++] = coef;
}

/* Add "scale" * "e" to the rest of "F". */
static void form_add_rest(partitioner *P, lin_form *F, loop_expr *e, int64_t scale)
{
	loop_expr *x = scale == 1 || scale == -1 ? e : lx_mul(P->p, e, lx_int(P->p, scale));
	if (!F->rest)
		F->rest = scale == -1 ? lx_sub(P->p, lx_int(P->p, 0), x) : x;
	else
		F->rest = scale == -1 ? lx_sub(P->p, F->rest, x) : lx_add(P->p, F->rest, x);
}

/* Add "scale" * the i64 expression "e" to "F": boxed variables and, when
 * "v" is not NULL, "v" as terms (they may appear only in sums, differences
 * and products by constants), subexpressions free of them in the rest. */
static void form_add(partitioner *P, lin_form *F, loop_expr *e, int64_t scale,
	const loop_var *v)
{
	int64_t k;
	if (!F->ok)
		return;
	if (e->dtype != TESSEL_I64 || !mentions(P, e, v)) {
		if (e->kind == LX_INT && e->dtype == TESSEL_I64) {
			if (__builtin_mul_overflow(e->u.ival, scale, &k) ||
			    __builtin_add_overflow(F->c, k, &F->c))
				F->ok = false;
		} else if (e->dtype == TESSEL_I64) {
			form_add_rest(P, F, e, scale);
		} else {
			F->ok = false;
		}
		return;
	}
	if (e->kind == LX_VAR) {
		if (e->u.var != v && place_of(P, e->u.var) != VAR_BOXED)
			F->ok = false;
		else
			form_add_term(F, e->u.var, scale);
		return;
	}
	if (e->kind == LX_UNARY && e->u.un.op == TESSEL_NEG && scale != INT64_MIN) {
		form_add(P, F, e->u.un.a, -scale, v);
		return;
	}
	if (e->kind != LX_BINARY) {
		F->ok = false;
		return;
	}
	loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		form_add(P, F, a, scale, v);
		form_add(P, F, b, scale, v);
		return;
	case TESSEL_SUB:
		form_add(P, F, a, scale, v);
		if (scale == INT64_MIN)
			F->ok = false;
		else
			form_add(P, F, b, -scale, v);
		return;
	case TESSEL_MUL:
		if (b->kind == LX_INT && !__builtin_mul_overflow(scale, b->u.ival, &k))
			form_add(P, F, a, k, v);
		else if (a->kind == LX_INT && !__builtin_mul_overflow(scale, a->u.ival, &k))
			form_add(P, F, b, k, v);
		else
			F->ok = false;
		return;
	default:
		F->ok = false;
		return;
	}
}

/* Write the integer comparison "cmp" as f <= 0 in "F" (see form_add),
 * then replace each boxed term by its largest value on its loop's range
 * (its smallest when "least").  Return whether "F" is valid. */
static bool extreme_form(partitioner *P, const loop_expr *cmp, const loop_var *v,
	bool least, lin_form *F)
{
	tessel_binary op = cmp->u.bin.op;
	int64_t s = op == TESSEL_LT || op == TESSEL_LE ? 1 : -1;
	*F = (lin_form){ .ok = true, .c = op == TESSEL_LT || op == TESSEL_GT };
	form_add(P, F, cmp->u.bin.a, s, v);
	form_add(P, F, cmp->u.bin.b, -s, v);
	int k = 0;
	for (int i = 0; i < F->n && F->ok; i++) {
		const loop_var *w = F->var[i];
		int64_t c = F->coef[i], x;
		if (c == 0)
			continue;
		if (w == v) {
			F->var[k] = w;
			F->coef[k++] = c;
			continue;
		}
		int64_t at = (c > 0) != least ? P->hi[w->id] : P->lo[w->id];
		if (__builtin_mul_overflow(c, at, &x) || __builtin_add_overflow(F->c, x, &F->c))
			F->ok = false;
	}
	F->n = k;
	return F->ok;
}

/* ---- analysis ----------------------------------------------------------------- */

static bool is_int_compare(const loop_expr *e)
{
	return e->kind == LX_BINARY && e->u.bin.op >= TESSEL_LT && e->u.bin.op <= TESSEL_GE &&
	       e->u.bin.a->dtype == TESSEL_I64 && e->u.bin.b->dtype == TESSEL_I64;
}

/* Store the conjuncts of "c" in "out" from position "n"; return the new
 * count, or -1 when there are more than MAX_CONJUNCTS. */
static int flatten_conjuncts(loop_expr *c, loop_expr **out, int n)
{
	if (c->kind == LX_BINARY && c->u.bin.op == TESSEL_AND && n >= 0) {
		n = flatten_conjuncts(c->u.bin.a, out, n);
		return n < 0 ? n : flatten_conjuncts(c->u.bin.b, out, n);
	}
	if (n < 0 || n == MAX_CONJUNCTS)
		return -1;
	out[n] = c;
	return n + 1;
}

/* Return -(rest + c) of "F": c * v <= it is the condition on v. */
static loop_expr *bound_of(partitioner *P, const lin_form *F)
{
	return F->rest ? lx_sub(P->p, lx_int(P->p, -F->c), F->rest) : lx_int(P->p, -F->c);
}

/* Add what the conjunct "cmp" tells the loop of A->v to "A": an interval
 * of v, or a test on v and the outer loops; nothing when it does not
 * mention v or is not affine in the boxed loops. */
static void analyse_conjunct(partitioner *P, analysis *A, loop_expr *cmp)
{
	lin_form F;
	for (int i = 0; i < A->n; i++)
		if (A->c[i].conjunct == cmp)
			return;
	if (A->n == MAX_CANDIDATES || !is_int_compare(cmp) || !mentions(P, cmp, A->v))
		return;
	candidate *c = &A->c[A->n];
	*c = (candidate){ .conjunct = cmp };
	if (extreme_form(P, cmp, A->v, false, &F) && F.n == 1 && F.c != INT64_MIN) {
		c->interval = true;
		c->cv = F.coef[0];
		c->bound = bound_of(P, &F);
		if (extreme_form(P, cmp, A->v, true, &F) && F.n == 1 && F.c != INT64_MIN)
			c->live = bound_of(P, &F);
		A->n++;
		return;
	}
	if (!extreme_form(P, cmp, NULL, false, &F) || !F.rest || F.c == INT64_MIN ||
	    !mentions(P, F.rest, A->v))
		return;
	c->test = lx_cmp(P->p, TESSEL_LE, F.rest, lx_int(P->p, -F.c));
	A->n++;
}

/* Gather into "A" the candidates of the ifs in "s", marking the
 * variables of the loops on the way. */
static void analyse_stmt(partitioner *P, analysis *A, loop_stmt *s)
{
	loop_expr *cj[MAX_CONJUNCTS];
	switch (s->kind) {
	case LS_FOR: {
		const loop_var *w = s->u.for_.var;
		loop_expr *min = s->u.for_.min, *ext = s->u.for_.extent;
		bool boxed = min->kind == LX_INT && ext->kind == LX_INT && ext->u.ival > 0 &&
			!__builtin_add_overflow(min->u.ival, ext->u.ival - 1, &P->hi[w->id]);
		P->lo[w->id] = boxed ? min->u.ival : 0;
		P->place[w->id] = boxed ? VAR_BOXED : VAR_UNBOXED;
		analyse_stmt(P, A, s->u.for_.body);
		P->place[w->id] = VAR_OUTSIDE;
		return;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			analyse_stmt(P, A, s->u.seq.items[i]);
		return;
	case LS_IF: {
		int n = flatten_conjuncts(s->u.if_.cond, cj, 0);
		for (int i = 0; i < n; i++)
			analyse_conjunct(P, A, cj[i]);
		analyse_stmt(P, A, s->u.if_.then_);
		if (s->u.if_.else_)
			analyse_stmt(P, A, s->u.if_.else_);
		return;
	}
	case LS_ALLOC:
		analyse_stmt(P, A, s->u.alloc.body);
		return;
	default:
		return;
	}
}

/* ---- copies -------------------------------------------------------------------- */

static loop_expr *copy_expr(partitioner *P, loop_expr *e);

/* Return the copy of buffer "b" in the copy being made, or "b". */
static loop_buffer *copy_buf(const partitioner *P, loop_buffer *b)
{
	for (int i = P->nbufs - 1; i >= 0; i--)
		if (P->from[i] == b)
			return P->to[i];
	return b;
}

/* Return "e" with the variables that "P" substitutes replaced (itself
 * when none occurs). */
static loop_expr *copy_expr(partitioner *P, loop_expr *e)
{
	loop_prog *p = P->p;
	switch (e->kind) {
	case LX_VAR: {
		int id = e->u.var->id;
		return id >= 0 && id < P->nslots && P->subst[id] ? P->subst[id] : e;
	}
	case LX_LOAD: {
		loop_expr *idx[TESSEL_MAX_DIMS];
		loop_buffer *b = copy_buf(P, e->u.load.buf);
		bool changed = b != e->u.load.buf;
		for (int i = 0; i < e->u.load.n; i++) {
			idx[i] = copy_expr(P, e->u.load.index[i]);
			changed |= idx[i] != e->u.load.index[i];
		}
		return changed ? lx_load(p, b, e->u.load.n, idx) : e;
	}
	case LX_UNARY: {
		loop_expr *a = copy_expr(P, e->u.un.a);
		return a == e->u.un.a ? e : lx_unary(p, e->u.un.op, a, e->dtype);
	}
	case LX_BINARY: {
		loop_expr *a = copy_expr(P, e->u.bin.a), *b = copy_expr(P, e->u.bin.b);
		return a == e->u.bin.a && b == e->u.bin.b ? e
			: lx_binary(p, e->u.bin.op, a, b, e->dtype);
	}
	case LX_SELECT: {
		if (P->decided && loop_expr_equal(e->u.sel.cond, P->decided))
			return copy_expr(P, P->decided_value ? e->u.sel.then_ : e->u.sel.else_);
		loop_expr *c = copy_expr(P, e->u.sel.cond);
		loop_expr *a = copy_expr(P, e->u.sel.then_), *b = copy_expr(P, e->u.sel.else_);
		return c == e->u.sel.cond && a == e->u.sel.then_ && b == e->u.sel.else_ ? e
			: lx_select(p, c, a, b, e->dtype);
	}
	case LX_CAST: {
		loop_expr *a = copy_expr(P, e->u.cast.a);
		return a == e->u.cast.a ? e : lx_cast(p, e->u.cast.to, a);
	}
	default:
		return e;
	}
}

/* Return whether "x" is the conjunct of a candidate of "A" that "drop"
 * selects (NULL: none). */
static bool dropped(const analysis *A, const bool *drop, const loop_expr *x)
{
	for (int i = 0; drop && i < A->n; i++)
		if (drop[i] && A->c[i].conjunct == x)
			return true;
	return false;
}

static loop_stmt *copy_stmt(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop);
static loop_stmt *copy_alloc(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop);

/* Return a copy of the if "s" without the dropped conjuncts. */
static loop_stmt *copy_if(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop)
{
	loop_expr *cj[MAX_CONJUNCTS], *cond = NULL;
	int n = flatten_conjuncts(s->u.if_.cond, cj, 0);
	if (n < 0) {
		cond = s->u.if_.cond;
	} else {
		for (int i = 0; i < n; i++)
			if (!dropped(A, drop, cj[i]))
				cond = lx_and(P->p, cond, cj[i]);
	}
	loop_stmt *then_ = copy_stmt(P, s->u.if_.then_, A, drop);
	if (!cond)
		return then_;
	loop_stmt *else_ = s->u.if_.else_ ? copy_stmt(P, s->u.if_.else_, A, drop) : NULL;
	return ls_if(P->p, copy_expr(P, cond), then_, else_);
}

/* Return a copy of the allocation "s" of a new buffer like its own (two
 * allocations of one buffer may end up in one C scope). */
static loop_stmt *copy_alloc(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop)
{
	loop_buffer *b = s->u.alloc.buf;
	if (P->nbufs == 64)
		return ls_alloc(P->p, b, copy_stmt(P, s->u.alloc.body, A, drop));
	loop_buffer *nb = te_arena_alloc(&P->p->arena, sizeof(*nb));
	*nb = *b;
	P->from[P->nbufs] = b;
	P->to[P->nbufs++] = nb;
	loop_stmt *body = copy_stmt(P, s->u.alloc.body, A, drop);
	P->nbufs--;
	return ls_alloc(P->p, nb, body);
}

/* Return a copy of "s" with fresh loop variables, without the conjuncts
 * of "A" that "drop" selects. */
static loop_stmt *copy_stmt(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop)
{
	loop_prog *p = P->p;
	P->copied++;
	switch (s->kind) {
	case LS_FOR: {
		loop_var *w = s->u.for_.var, *nw = loop_var_new(p, w->name);
		grow_slots(P);
		loop_expr *min = copy_expr(P, s->u.for_.min), *ext = copy_expr(P, s->u.for_.extent);
		P->subst[w->id] = lx_var(p, nw);
		loop_stmt *body = copy_stmt(P, s->u.for_.body, A, drop);
		P->subst[w->id] = NULL;
		loop_stmt *f = ls_for(p, nw, min, ext, s->u.for_.kind, body);
		f->u.for_.unroll_limit = s->u.for_.unroll_limit;
		f->u.for_.min_blocks = s->u.for_.min_blocks;
		f->u.for_.prefetch = s->u.for_.prefetch;
		f->u.for_.prefetch_distance = s->u.for_.prefetch_distance;
		f->u.for_.dot_group = s->u.for_.dot_group;
		return f;
	}
	case LS_SEQ: {
		loop_stmt *seq = ls_seq(p, 0, NULL);
		for (int i = 0; i < s->u.seq.n; i++)
			ls_seq_append(p, seq, copy_stmt(P, s->u.seq.items[i], A, drop));
		return seq;
	}
	case LS_STORE: {
		loop_expr *idx[TESSEL_MAX_DIMS];
		for (int i = 0; i < s->u.store.n; i++)
			idx[i] = copy_expr(P, s->u.store.index[i]);
		return ls_store(p, copy_buf(P, s->u.store.buf), s->u.store.n, idx,
			copy_expr(P, s->u.store.value), s->u.store.stage);
	}
	case LS_IF:
		return copy_if(P, s, A, drop);
	case LS_ALLOC:
		return copy_alloc(P, s, A, drop);
	case LS_PREFETCH: {
		loop_expr *idx[TESSEL_MAX_DIMS];
		for (int i = 0; i < s->u.prefetch.n; i++)
			idx[i] = copy_expr(P, s->u.prefetch.index[i]);
		return ls_prefetch(p, copy_buf(P, s->u.prefetch.buf), s->u.prefetch.n, idx);
	}
	default:
		return ls_barrier(p);
	}
}

/* Return the number of statements of "s", and whether it holds a
 * barrier in "*barrier". */
static int count_stmts(const loop_stmt *s, bool *barrier)
{
	switch (s->kind) {
	case LS_FOR:
		return 1 + count_stmts(s->u.for_.body, barrier);
	case LS_SEQ: {
		int n = 1;
		for (int i = 0; i < s->u.seq.n; i++)
			n += count_stmts(s->u.seq.items[i], barrier);
		return n;
	}
	case LS_IF:
		return 1 + count_stmts(s->u.if_.then_, barrier) +
		       (s->u.if_.else_ ? count_stmts(s->u.if_.else_, barrier) : 0);
	case LS_ALLOC:
		return 1 + count_stmts(s->u.alloc.body, barrier);
	case LS_BARRIER:
		*barrier = true;
		return 1;
	default:
		return 1;
	}
}

/* ---- partitioning ------------------------------------------------------------- */

/* Return a loop like "s" over [min, min + extent) with the body "body",
 * under a fresh copy of its variable. */
static loop_stmt *loop_over(partitioner *P, loop_stmt *s, loop_expr *min, loop_expr *end,
	loop_stmt *body, loop_var *var)
{
	loop_stmt *f = ls_for(P->p, var, min, lx_sub(P->p, end, min), s->u.for_.kind, body);
	f->u.for_.unroll_limit = s->u.for_.unroll_limit;
	f->u.for_.min_blocks = s->u.for_.min_blocks;
	f->u.for_.prefetch = s->u.for_.prefetch;
	f->u.for_.prefetch_distance = s->u.for_.prefetch_distance;
	f->u.for_.dot_group = s->u.for_.dot_group;
	return f;
}

/* Return a copy of the body of loop "s" with its variable replaced by
 * "value", without the conjuncts "drop" selects. */
static loop_stmt *body_at(partitioner *P, loop_stmt *s, loop_expr *value, const analysis *A,
	const bool *drop)
{
	int id = s->u.for_.var->id;
	P->subst[id] = value;
	loop_stmt *b = copy_stmt(P, s->u.for_.body, A, drop);
	P->subst[id] = NULL;
	return b;
}

/* Return a copy of the body of loop "s" under the variable "nv",
 * without the conjuncts "drop" selects. */
static loop_stmt *body_under(partitioner *P, loop_stmt *s, loop_var *nv, const analysis *A,
	const bool *drop)
{
	return body_at(P, s, lx_var(P->p, nv), A, drop);
}

/* Return whether every store in "s" lies in the then-branch of an if
 * that has the conjunct "x". */
static bool stores_guarded_by(loop_stmt *s, const loop_expr *x)
{
	loop_expr *cj[MAX_CONJUNCTS];
	switch (s->kind) {
	case LS_FOR:
		return stores_guarded_by(s->u.for_.body, x);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (!stores_guarded_by(s->u.seq.items[i], x))
				return false;
		return true;
	case LS_IF: {
		int n = flatten_conjuncts(s->u.if_.cond, cj, 0);
		bool has = false;
		for (int i = 0; i < n && !has; i++)
			has = cj[i] == x;
		if (s->u.if_.else_ && !stores_guarded_by(s->u.if_.else_, x))
			return false;
		return has || stores_guarded_by(s->u.if_.then_, x);
	}
	case LS_ALLOC:
		return stores_guarded_by(s->u.alloc.body, x);
	case LS_STORE:
		return false;
	default:
		return true;
	}
}

/* Return "x" clamped to [lo, hi] (lo <= hi). */
static loop_expr *clamp(loop_prog *p, loop_expr *x, loop_expr *lo, loop_expr *hi)
{
	return lx_min(p, lx_max(p, x, lo), hi);
}

/* Narrow "*lo" and "*hi" (the values of v, hi exclusive) to c * v <= "bound"
 * for each interval candidate of "A" selected in "use", with "bound" the
 * candidate's bound ("live" false) or live bound ("live" true). */
static void narrow(partitioner *P, const analysis *A, const bool *use, bool live,
	loop_expr **lo, loop_expr **hi)
{
	loop_prog *p = P->p;
	for (int i = 0; i < A->n; i++) {
		const candidate *c = &A->c[i];
		loop_expr *b = live ? c->live : c->bound;
		if (!use[i] || !b)
			continue;
		int64_t m = c->cv > 0 ? c->cv : -c->cv;
		loop_expr *q = lx_div(p, b, lx_int(p, m));
		if (c->cv > 0)
			*hi = lx_min(p, *hi, lx_add(p, q, lx_int(p, 1)));
		else
			*lo = lx_max(p, *lo, lx_sub(p, lx_int(p, 0), q));
	}
}

/* Return whether the part of the loop above ("upper") or below the main
 * part may run a store: not when a candidate that bounds it there guards
 * every store and holds wherever it may hold. */
static bool rest_runs(const analysis *A, const bool *drop, const bool *covers, bool upper)
{
	for (int i = 0; i < A->n; i++)
		if (drop[i] && (A->c[i].cv > 0) == upper &&
		    !(covers[i] && loop_expr_equal(A->c[i].live, A->c[i].bound)))
			return true;
	return false;
}

/* The ranges split_loop and split_parallel_loop make of the loop "s":
 * [a, b) where its stores may run (candidates that guard every store
 * bound them; the rest of the loop does nothing), and in it [lo, hi)
 * where every candidate of "A" selected in "drop" holds; whether the
 * ranges below and above [lo, hi) may run a store. */
typedef struct loop_ranges {
	loop_expr *a, *lo, *hi, *b;
	bool below, above;
} loop_ranges;

static loop_ranges ranges_of(partitioner *P, loop_stmt *s, const analysis *A, const bool *drop)
{
	loop_prog *p = P->p;
	loop_expr *min = s->u.for_.min, *end = lx_add(p, min, s->u.for_.extent);
	bool covers[MAX_CANDIDATES] = { false };
	for (int i = 0; i < A->n; i++)
		covers[i] = drop[i] && A->c[i].live &&
			stores_guarded_by(s->u.for_.body, A->c[i].conjunct);
	loop_ranges r;
	r.a = min;
	r.b = end;
	narrow(P, A, covers, true, &r.a, &r.b);
	r.a = lx_min(p, r.a, end);
	r.b = clamp(p, r.b, r.a, end);
	r.lo = r.a;
	r.hi = r.b;
	narrow(P, A, drop, false, &r.lo, &r.hi);
	r.lo = clamp(p, r.lo, r.a, r.b);
	r.hi = clamp(p, r.hi, r.lo, r.b);
	r.below = rest_runs(A, drop, covers, false);
	r.above = rest_runs(A, drop, covers, true);
	return r;
}

/* Split the loop "s" by the interval candidates of "A" (selected in
 * "drop") into its ranges "r" (ranges_of): the loops [a, lo) and [hi, b)
 * keep the body; [lo, hi) runs without the candidates. */
static loop_stmt *loops_over(partitioner *P, loop_stmt *s, const analysis *A, const bool *drop,
	loop_ranges r)
{
	loop_prog *p = P->p;
	grow_slots(P);
	loop_var *v = s->u.for_.var;
	loop_stmt *seq = ls_seq(p, 0, NULL);
	loop_var *nv = loop_var_new(p, v->name);
	grow_slots(P);
	if (r.below)
		ls_seq_append(p, seq, loop_over(P, s, r.a, r.lo, body_under(P, s, nv, A, NULL), nv));
	loop_var *mv = loop_var_new(p, v->name);
	grow_slots(P);
	ls_seq_append(p, seq, loop_over(P, s, r.lo, r.hi, body_under(P, s, mv, A, drop), mv));
	if (r.above)
		ls_seq_append(p, seq, loop_over(P, s, r.hi, r.b, s->u.for_.body, v));
	return seq;
}

static loop_stmt *split_loop(partitioner *P, loop_stmt *s, const analysis *A, const bool *drop)
{
	return loops_over(P, s, A, drop, ranges_of(P, s, A, drop));
}

/* The iteration "x" of the loop "s" where it lies in [lo, hi): a copy
 * of the body at "x", or, when [lo, hi) is one iteration known now, a
 * serial loop over it (which loop_simplify turns into the body at that
 * value: its own loops are then partitioned with constant bounds). */
static loop_stmt *rest_at(partitioner *P, loop_stmt *s, loop_expr *lo, loop_expr *hi,
	loop_expr *x, const analysis *A)
{
	loop_prog *p = P->p;
	loop_expr *n = lx_sub(p, hi, lo);
	if (lo->kind != LX_INT || n->kind != LX_INT || n->u.ival != 1)
		return body_at(P, s, x, A, NULL);
	loop_var *nv = loop_var_new(p, s->u.for_.var->name);
	grow_slots(P);
	loop_stmt *f = loop_over(P, s, lo, hi, body_under(P, s, nv, A, NULL), nv);
	f->u.for_.kind = LOOP_SERIAL;
	return f;
}

/* Split the parallel loop "s" as split_loop would, but keep its ranges
 * in one parallel loop over [a, b), whose body runs the guard-free copy
 * in [lo, hi) and the body elsewhere (rest_at): split into loops, the
 * partial tile would run alone after the parallel ones, while the other
 * threads wait. */
static loop_stmt *split_parallel_loop(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop)
{
	loop_prog *p = P->p;
	loop_ranges r = ranges_of(P, s, A, drop);
	grow_slots(P);
	loop_expr *x = lx_var(p, s->u.for_.var);
	loop_stmt *body = body_at(P, s, x, A, drop);
	if (r.above)
		body = ls_if(p, lx_cmp(p, TESSEL_LT, x, r.hi), body, rest_at(P, s, r.hi, r.b, x, A));
	if (r.below)
		body = ls_if(p, lx_cmp(p, TESSEL_LT, x, r.lo), rest_at(P, s, r.a, r.lo, x, A), body);
	return loop_over(P, s, r.a, r.b, body, s->u.for_.var);
}

/* Give the loop "s" the body `if (tests) body' else body`, body' without
 * the unswitch candidates of "A" (selected in "drop"). */
static void unswitch_loop(partitioner *P, loop_stmt *s, const analysis *A, const bool *drop)
{
	loop_expr *test = NULL;
	for (int i = 0; i < A->n; i++) {
		bool repeated = false;
		for (int j = 0; j < i && !repeated; j++)
			repeated = drop[j] && loop_expr_equal(A->c[j].test, A->c[i].test);
		if (drop[i] && !repeated)
			test = lx_and(P->p, test, A->c[i].test);
	}
	grow_slots(P);
	loop_stmt *fast = body_under(P, s, s->u.for_.var, A, drop);
	s->u.for_.body = ls_if(P->p, test, fast, s->u.for_.body);
}

/* Return whether "s" holds a loop. */
static bool holds_loop(const loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		return true;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (holds_loop(s->u.seq.items[i]))
				return true;
		return false;
	case LS_IF:
		return holds_loop(s->u.if_.then_) || (s->u.if_.else_ && holds_loop(s->u.if_.else_));
	case LS_ALLOC:
		return holds_loop(s->u.alloc.body);
	default:
		return false;
	}
}

/* Return whether "P" partitions the loop "s": a serial, parallel or
 * unrolled loop, or in its lanes mode an innermost vector loop. */
static bool partitionable(const partitioner *P, const loop_stmt *s)
{
	loop_kind k = s->u.for_.kind;
	if (P->lanes)
		return k == LOOP_VECTORIZED && !holds_loop(s->u.for_.body);
	return k == LOOP_SERIAL || k == LOOP_PARALLEL || k == LOOP_UNROLLED;
}

/* The vector loop "s" keeps its constant extent: where the interval
 * candidates of "A" (selected in "drop") hold over its whole range, it
 * runs without them on vectors; elsewhere (a partial tile whose bounds
 * are known only at run time, as in a fused loop) it is split as
 * split_loop does, its parts scalar loops with variable extents (the
 * middle one without the guards, which the C compiler can vectorize),
 * rather than one guard per lane. */
static loop_stmt *split_vector_loop(partitioner *P, loop_stmt *s, const analysis *A,
	const bool *drop)
{
	loop_prog *p = P->p;
	loop_expr *min = s->u.for_.min, *end = lx_add(p, min, s->u.for_.extent);
	loop_ranges r = ranges_of(P, s, A, drop);
	loop_expr *whole = lx_and(p, lx_cmp(p, TESSEL_LE, r.lo, min),
		lx_cmp(p, TESSEL_GE, r.hi, end));
	loop_var *nv = loop_var_new(p, s->u.for_.var->name);
	grow_slots(P);
	loop_stmt *fast = ls_for(p, nv, min, s->u.for_.extent, LOOP_VECTORIZED,
		body_under(P, s, nv, A, drop));
	loop_stmt *parts = loops_over(P, s, A, drop, r);
	for (int i = 0; i < parts->u.seq.n; i++)
		parts->u.seq.items[i]->u.for_.kind = LOOP_SERIAL;
	return ls_if(p, whole, fast, parts);
}

/* Partition the loop "s" when its body has candidates; return what
 * replaces it, its parts' bodies partitioned in turn. */
static loop_stmt *partition_for(partitioner *P, loop_stmt *s)
{
	if (!partitionable(P, s)) {
		s->u.for_.body = partition_stmt(P, s->u.for_.body);
		return s;
	}
	bool barrier = false;
	int size = count_stmts(s->u.for_.body, &barrier);
	analysis *A = calloc(1, sizeof(*A));
	A->v = s->u.for_.var;
	if (!barrier && P->copied + (P->lanes ? 4 : 2) * size <= PARTITION_BUDGET) {
		grow_slots(P);
		analyse_stmt(P, A, s->u.for_.body);
	}
	bool drop[MAX_CANDIDATES] = { false }, any_interval = false, any_test = false;
	for (int i = 0; i < A->n; i++)
		any_interval |= A->c[i].interval;
	for (int i = 0; i < A->n; i++) {
		drop[i] = A->c[i].interval == any_interval;
		any_test |= drop[i];
	}
	loop_stmt *r = s;
	if (P->lanes) {
		if (any_interval) {
			r = split_vector_loop(P, s, A, drop);
			P->split++;
		}
		free(A);
		return r;
	}
	bool parallel = s->u.for_.kind == LOOP_PARALLEL;
	if (any_interval)
		r = (parallel ? split_parallel_loop : split_loop)(P, s, A, drop);
	else if (any_test)
		unswitch_loop(P, s, A, drop);
	free(A);
	if (r->kind == LS_FOR) {
		r->u.for_.body = partition_stmt(P, r->u.for_.body);
		return r;
	}
	for (int i = 0; i < r->u.seq.n; i++) {
		loop_stmt *f = r->u.seq.items[i];
		f->u.for_.body = partition_stmt(P, f->u.for_.body);
	}
	return r;
}

static loop_stmt *partition_stmt(partitioner *P, loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		return partition_for(P, s);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			s->u.seq.items[i] = partition_stmt(P, s->u.seq.items[i]);
		return s;
	case LS_IF:
		s->u.if_.then_ = partition_stmt(P, s->u.if_.then_);
		if (s->u.if_.else_)
			s->u.if_.else_ = partition_stmt(P, s->u.if_.else_);
		return s;
	case LS_ALLOC:
		s->u.alloc.body = partition_stmt(P, s->u.alloc.body);
		return s;
	default:
		return s;
	}
}

/* ---- specialization ----------------------------------------------------------- */

/* Return whether "e" compares two integers, equality included. */
static bool is_int_relation(const loop_expr *e)
{
	return is_int_compare(e) || (e->kind == LX_BINARY &&
		(e->u.bin.op == TESSEL_EQ || e->u.bin.op == TESSEL_NE) &&
		e->u.bin.a->dtype == TESSEL_I64 && e->u.bin.b->dtype == TESSEL_I64);
}

/* Return the condition of an integer select in "e" (a bound or an index,
 * not a value: `select(t % 4 == 3, 999, ...)`, not a padding) that is an
 * integer comparison of loop variables and constants, none bound inside
 * the loop analysed (no load: the body may store what it reads); NULL
 * when none. */
static loop_expr *invariant_select_in(const partitioner *P, loop_expr *e)
{
	loop_expr *c = NULL;
	switch (e->kind) {
	case LX_LOAD:
		for (int i = 0; i < e->u.load.n && !c; i++)
			c = invariant_select_in(P, e->u.load.index[i]);
		return c;
	case LX_UNARY:
		return invariant_select_in(P, e->u.un.a);
	case LX_BINARY:
		c = invariant_select_in(P, e->u.bin.a);
		return c ? c : invariant_select_in(P, e->u.bin.b);
	case LX_SELECT:
		if (e->dtype == TESSEL_I64 && is_int_relation(e->u.sel.cond) &&
		    !loop_expr_has_load(e->u.sel.cond) && !mentions(P, e->u.sel.cond, NULL))
			return e->u.sel.cond;
		c = invariant_select_in(P, e->u.sel.cond);
		c = c ? c : invariant_select_in(P, e->u.sel.then_);
		return c ? c : invariant_select_in(P, e->u.sel.else_);
	case LX_CAST:
		return invariant_select_in(P, e->u.cast.a);
	default:
		return NULL;
	}
}

/* Return the condition of the first select in "s" that invariant_select_in
 * finds, marking the variables of the loops on the way as bound inside. */
static loop_expr *invariant_select(partitioner *P, loop_stmt *s)
{
	loop_expr *c = NULL;
	switch (s->kind) {
	case LS_FOR: {
		c = invariant_select_in(P, s->u.for_.min);
		c = c ? c : invariant_select_in(P, s->u.for_.extent);
		int id = s->u.for_.var->id;
		P->place[id] = VAR_UNBOXED;
		c = c ? c : invariant_select(P, s->u.for_.body);
		P->place[id] = VAR_OUTSIDE;
		return c;
	}
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n && !c; i++)
			c = invariant_select(P, s->u.seq.items[i]);
		return c;
	case LS_STORE:
		for (int i = 0; i < s->u.store.n && !c; i++)
			c = invariant_select_in(P, s->u.store.index[i]);
		return c ? c : invariant_select_in(P, s->u.store.value);
	case LS_IF:
		c = invariant_select_in(P, s->u.if_.cond);
		c = c ? c : invariant_select(P, s->u.if_.then_);
		return c || !s->u.if_.else_ ? c : invariant_select(P, s->u.if_.else_);
	case LS_ALLOC:
		return invariant_select(P, s->u.alloc.body);
	case LS_PREFETCH:
		for (int i = 0; i < s->u.prefetch.n && !c; i++)
			c = invariant_select_in(P, s->u.prefetch.index[i]);
		return c;
	default:
		return NULL;
	}
}

/* Return a copy of "s" in which the selects on "cond" take the side
 * "value". */
static loop_stmt *copy_decided(partitioner *P, loop_stmt *s, loop_expr *cond, bool value)
{
	P->decided = cond;
	P->decided_value = value;
	loop_stmt *r = copy_stmt(P, s, NULL, NULL);
	P->decided = NULL;
	return r;
}

/* Give the parallel loop "s", while its body has a select whose
 * condition holds or fails for the whole of an iteration, the body `if
 * (cond) body' else body''`, each copy with the selects decided, at most
 * SPECIALIZE_CONDITIONS times and within SPECIALIZE_BUDGET.  Only
 * parallel loops: where every loop nest inside did so too, the copies
 * multiplied (a trace with partial blocks at four levels made 1945
 * lines of C that gcc took minutes over, against 775). */
static void specialize_loop(partitioner *P, loop_stmt *s)
{
	bool barrier = false;
	if (s->u.for_.kind != LOOP_PARALLEL)
		return;
	for (int i = 0; i < SPECIALIZE_CONDITIONS; i++) {
		int size = count_stmts(s->u.for_.body, &barrier);
		if (barrier || P->copied + 2 * size > SPECIALIZE_BUDGET)
			break;
		grow_slots(P);
		loop_expr *c = invariant_select(P, s->u.for_.body);
		if (!c)
			break;
		loop_stmt *then_ = copy_decided(P, s->u.for_.body, c, true);
		loop_stmt *else_ = copy_decided(P, s->u.for_.body, c, false);
		s->u.for_.body = ls_if(P->p, c, then_, else_);
		P->specialized++;
	}
}

/* Specialize the loops of "s", outside in. */
static void specialize_stmt(partitioner *P, loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		specialize_loop(P, s);
		specialize_stmt(P, s->u.for_.body);
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			specialize_stmt(P, s->u.seq.items[i]);
		return;
	case LS_IF:
		specialize_stmt(P, s->u.if_.then_);
		if (s->u.if_.else_)
			specialize_stmt(P, s->u.if_.else_);
		return;
	case LS_ALLOC:
		specialize_stmt(P, s->u.alloc.body);
		return;
	default:
		return;
	}
}

/* Partition "p" as "P" says. */
static void partition_prog(partitioner *P, loop_prog *p)
{
	P->p = p;
	grow_slots(P);
	if (p->body && P->specializing)
		specialize_stmt(P, p->body);
	else if (p->body)
		p->body = partition_stmt(P, p->body);
	free(P->place);
	free(P->lo);
	free(P->hi);
	free(P->subst);
}

/* requires: "p" passes loop_verify (best simplified first: guards that
 *   always hold are gone); its statements form a tree
 * guarantees: "p" computes what it computed and passes loop_verify; loops
 *   with guards on their variable are split or unswitched as the file
 *   comment says (run loop_simplify after it to drop what became empty
 *   and to narrow the new loops)
 * invalidates: pointers into the statement tree of "p" */
void loop_partition(loop_prog *p)
{
	partitioner P = { .lanes = false };
	partition_prog(&P, p);
}

/* requires: "p" passed loop_partition and loop_simplify (so that the
 *   guards left on vector loops are those known only at run time)
 * guarantees: as loop_partition's, for innermost vector loops: each
 *   guarded by an interval of its variable runs unguarded on vectors
 *   where the interval covers it, else as scalar loops over its parts;
 *   returns how many were split (run loop_simplify after it when not 0)
 * invalidates: pointers into the statement tree of "p" */
int loop_partition_lanes(loop_prog *p)
{
	partitioner P = { .lanes = true };
	partition_prog(&P, p);
	return P.split;
}

/* requires: "p" passes loop_verify; its statements form a tree
 * guarantees: "p" computes what it computed and passes loop_verify; a
 *   parallel loop whose body holds a select on an integer
 *   comparison that mentions no variable bound inside the body (the
 *   bounds of a fused loop's partial block: `select(t % 4 == 3, 999, t %
 *   4 * 256 + 255)`) has the body `if (c) body' else body''`, the selects
 *   on c decided in each copy, so that loop_simplify and loop_partition
 *   find constant bounds in them; returns how many bodies it specialized
 *   (run loop_simplify and loop_partition again when not 0)
 * invalidates: pointers into the statement tree of "p" */
int loop_specialize(loop_prog *p)
{
	partitioner P = { .specializing = true };
	partition_prog(&P, p);
	return P.specialized;
}
