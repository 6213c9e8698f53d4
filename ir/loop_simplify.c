/* Simplification of loop programs: what lowering and the schedule
 * primitives leave behind (`io * 32 + ii` divided again by 32, guards that
 * always hold, loops of one iteration) becomes what a person would write.
 *
 * Integer index arithmetic (i64) is put in a canonical affine form: a sum
 * of terms coefficient * atom plus a constant, where an atom is a loop
 * variable or any other expression (a load, a division, a min, ...).
 * Terms are ordered by decreasing coefficient magnitude, then variables by
 * id, then other atoms in the order they appear; positive terms come
 * before negative ones and the constant last (`io * 32 + ii - 1`).  Sums,
 * differences and products by constants are exact in i64's wrapping
 * arithmetic, so this form needs no proof.
 *
 * Everything else is proved by interval arithmetic over the ranges of the
 * enclosing loops (a variable spans [min, min + extent - 1] when the bounds'
 * ranges are known): floor division and modulo by a positive constant
 * split off the terms the divisor divides, and fold when the rest lies in
 * one block of the divisor, or when the rest is g * h + l with g dividing
 * the divisor and l in [0, g) (a lane: (fi * 4 + v) / 32 = fi / 8); min
 * and max pick a side when the difference of the sides has a sign;
 * comparisons of integers fold when the difference has a sign.  A rule
 * that needs a range applies only where every value involved has a known
 * range in i64, so that no rewrite depends on overflow.  Identities that hold for every integer need no range:
 * (x / a) / b = x / (a * b), (x % a) % b = x % b when b divides a, and
 * (x / c) * c + x % c = x, for positive constants.  Float arithmetic is
 * never reassociated or folded, nor is arithmetic on narrower integers
 * (i8, i32: it wraps at their width); their integer subexpressions are
 * simplified.
 *
 * Statements: a loop that never runs (constant extent <= 0) is removed; a
 * loop of one iteration becomes its body with the variable replaced by
 * the loop's min; bound to a GPU block or thread index, it stays (the
 * launch shape is the printer's business) but its body has the variable
 * replaced all the same (a GPU kernel's local array indexed by a thread
 * index the compiler cannot see is 0 goes to local memory); a serial, parallel, vectorized
 * or unrolled loop with constant bounds whose body is a lone `if` is
 * narrowed to the values its comparisons of the variable with constants
 * allow; an `if` whose condition is decided becomes the branch taken,
 * and inside each branch of another, a loop variable that the condition
 * (negated in the else branch) compares with a constant has its range
 * narrowed to where the branch runs, and so has any other integer atom
 * so compared (`t % 4 == 3`: `t % 4` is 3 there and folds to it, `t % 4
 * != 3` leaves it at most 2; an atom matches by structure);
 * empty loops, ifs, allocations and sequences disappear (an `if` with
 * only an else branch is negated), and nested sequences are spliced.
 *
 * Simplifying twice gives the program of simplifying once (the tests
 * check it on random programs). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/intmath.h"
#include "ir/loop.h"
#include "ir/te_impl.h"

#define MAX_TERMS 16
#define MAX_CONJUNCTS 32
#define MAX_FACTS 32

typedef struct range {
	int64_t lo, hi;
	bool known;
} range;

/* The range of an atom that is not a loop variable (`t % 4`), known
 * inside a branch whose condition compares it with a constant. */
typedef struct fact {
	const loop_expr *atom;
	range r;
} fact;

typedef struct term {
	loop_expr *atom;
	int64_t coef;
} term;

/* sum of coef * atom over "t", plus "c"; "ok" is false when the form
 * could not be built (overflow, too many terms) */
typedef struct affine {
	int n;
	term t[MAX_TERMS];
	int64_t c;
	bool ok;
} affine;

typedef struct simplifier {
	loop_prog *p;
	range *ranges;       /* by variable id: its range inside its loop */
	loop_expr **subst;   /* by variable id: its value, for removed loops */
	int nfacts;          /* ranges of other atoms the branches around know */
	fact facts[MAX_FACTS];
} simplifier;

static loop_expr *simplify_expr(simplifier *S, loop_expr *e);

/* ---- integers and ranges ------------------------------------------------ */

static range unknown_range(void)
{
	return (range){ 0, 0, false };
}

static range exact_range(int64_t v)
{
	return (range){ v, v, true };
}

static range make_range(int64_t lo, int64_t hi)
{
	return (range){ lo, hi, true };
}

/* Return the range of the sum of values in "a" and "b". */
static range range_add(range a, range b)
{
	range r = { 0, 0, a.known && b.known };
	if (r.known && (__builtin_add_overflow(a.lo, b.lo, &r.lo) ||
			__builtin_add_overflow(a.hi, b.hi, &r.hi)))
		return unknown_range();
	return r;
}

/* Return the range of "k" times a value in "a". */
static range range_scale(range a, int64_t k)
{
	int64_t x, y;
	if (!a.known || __builtin_mul_overflow(a.lo, k, &x) ||
	    __builtin_mul_overflow(a.hi, k, &y))
		return unknown_range();
	return x <= y ? make_range(x, y) : make_range(y, x);
}

/* Return the range of the product of values in "a" and "b". */
static range range_mul(range a, range b)
{
	if (!a.known || !b.known)
		return unknown_range();
	range r = range_scale(a, b.lo), s = range_scale(a, b.hi);
	if (!r.known || !s.known)
		return unknown_range();
	return make_range(r.lo < s.lo ? r.lo : s.lo, r.hi > s.hi ? r.hi : s.hi);
}

/* Return the range of values in "a" or in "b". */
static range range_union(range a, range b)
{
	if (!a.known || !b.known)
		return unknown_range();
	return make_range(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

/* Return the range of the floor quotient of a value in "a" by "c". */
static range range_div(range a, int64_t c)
{
	if (!a.known || c == 0 || (c == -1 && a.lo == INT64_MIN))
		return unknown_range();
	int64_t x = te_floor_div(a.lo, c), y = te_floor_div(a.hi, c);
	return x <= y ? make_range(x, y) : make_range(y, x);
}

/* Return the range of the floor remainder of a value in "a" by "c". */
static range range_mod(range a, int64_t c)
{
	if (c == 0 || c == -1)
		return c ? exact_range(0) : unknown_range();
	if (c > 0 && a.known && te_floor_div(a.lo, c) == te_floor_div(a.hi, c))
		return make_range(te_floor_mod(a.lo, c), te_floor_mod(a.hi, c));
	return c > 0 ? make_range(0, c - 1) : make_range(c + 1, 0);
}

/* Return the range of the minimum ("is_min") or the maximum of values in
 * "a" and "b". */
static range range_min_max(range a, range b, bool is_min)
{
	if (!a.known || !b.known)
		return unknown_range();
	if (is_min)
		return make_range(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
	return make_range(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

/* Return the range of every value of type "dt" (unknown for i64 and
 * floats, whose ranges say nothing). */
static range dtype_range(tessel_dtype dt)
{
	int64_t lo, hi;
	if (dt == TESSEL_I64 || (!tessel_dtype_is_int(dt) && dt != TESSEL_BOOL))
		return unknown_range();
	tessel_int_limits(dt, &lo, &hi);
	return make_range(lo, hi);
}

static range expr_range(const simplifier *S, const loop_expr *e);

/* Return the range of the binary expression "e" (see expr_range). */
static range binary_range(const simplifier *S, const loop_expr *e)
{
	if (e->dtype != TESSEL_I64)
		return dtype_range(e->dtype);
	range a = expr_range(S, e->u.bin.a), b = expr_range(S, e->u.bin.b);
	const loop_expr *d = e->u.bin.b;
	switch (e->u.bin.op) {
	case TESSEL_ADD: return range_add(a, b);
	case TESSEL_SUB: return range_add(a, range_scale(b, -1));
	case TESSEL_MUL: return range_mul(a, b);
	case TESSEL_DIV: return d->kind == LX_INT ? range_div(a, d->u.ival) : unknown_range();
	case TESSEL_MOD: return d->kind == LX_INT ? range_mod(a, d->u.ival) : unknown_range();
	case TESSEL_MIN: return range_min_max(a, b, true);
	case TESSEL_MAX: return range_min_max(a, b, false);
	default: return unknown_range();
	}
}

/* Return the range of a value in "a" of type "from" converted to the
 * integer or bool type "to". */
static range cast_range(range a, tessel_dtype from, tessel_dtype to)
{
	range t = dtype_range(to);
	if (to == TESSEL_BOOL)
		return t;
	if (!tessel_dtype_is_int(to))
		return unknown_range();
	if (tessel_dtype_is_float(from) || !a.known)
		return t;
	if (t.known && (a.lo < t.lo || a.hi > t.hi))
		return t;
	return a;
}

static range computed_range(const simplifier *S, const loop_expr *e);

/* "r" narrowed by what the branches around know of the atom "e". */
static range with_facts(const simplifier *S, const loop_expr *e, range r)
{
	for (int i = 0; i < S->nfacts; i++)
		if (loop_expr_equal(S->facts[i].atom, e)) {
			const range f = S->facts[i].r;
			if (!r.known)
				r = f;
			else if (f.lo > r.lo || f.hi < r.hi)
				r = make_range(f.lo > r.lo ? f.lo : r.lo, f.hi < r.hi ? f.hi : r.hi);
		}
	return r;
}

/* Return the range of the values of the integer or bool expression "e"
 * in the scope of the loops whose ranges "S" holds. */
static range expr_range(const simplifier *S, const loop_expr *e)
{
	range r = computed_range(S, e);
	return S->nfacts && e->kind != LX_INT && e->kind != LX_BOOL && e->kind != LX_VAR ?
		with_facts(S, e, r) : r;
}

static range computed_range(const simplifier *S, const loop_expr *e)
{
	switch (e->kind) {
	case LX_INT:
	case LX_BOOL:
		return exact_range(e->u.ival);
	case LX_VAR:
		if (e->u.var->id < 0 || e->u.var->id >= S->p->nvars)
			return unknown_range();
		return S->ranges[e->u.var->id];
	case LX_BINARY:
		return binary_range(S, e);
	case LX_UNARY:
		if (e->dtype == TESSEL_I64 && e->u.un.op == TESSEL_NEG)
			return range_scale(expr_range(S, e->u.un.a), -1);
		return dtype_range(e->dtype);
	case LX_SELECT:
		if (e->dtype == TESSEL_I64)
			return range_union(expr_range(S, e->u.sel.then_),
				expr_range(S, e->u.sel.else_));
		return dtype_range(e->dtype);
	case LX_CAST:
		return cast_range(expr_range(S, e->u.cast.a), e->u.cast.a->dtype, e->u.cast.to);
	default:
		return dtype_range(e->dtype);
	}
}

/* ---- structural equality ------------------------------------------------ */

/* The structural equality ir/loop.h declares. */
bool loop_expr_equal(const loop_expr *a, const loop_expr *b)
{
	if (a == b)
		return true;
	if (a->kind != b->kind || a->dtype != b->dtype)
		return false;
	switch (a->kind) {
	case LX_INT:
	case LX_BOOL:
		return a->u.ival == b->u.ival;
	case LX_FLOAT:
		return memcmp(&a->u.fval, &b->u.fval, sizeof(double)) == 0;
	case LX_VAR:
		return a->u.var == b->u.var;
	case LX_LOAD:
		if (a->u.load.buf != b->u.load.buf || a->u.load.n != b->u.load.n)
			return false;
		for (int i = 0; i < a->u.load.n; i++)
			if (!loop_expr_equal(a->u.load.index[i], b->u.load.index[i]))
				return false;
		return true;
	case LX_UNARY:
		return a->u.un.op == b->u.un.op && loop_expr_equal(a->u.un.a, b->u.un.a);
	case LX_BINARY:
		return a->u.bin.op == b->u.bin.op && loop_expr_equal(a->u.bin.a, b->u.bin.a) &&
		       loop_expr_equal(a->u.bin.b, b->u.bin.b);
	case LX_SELECT:
		return loop_expr_equal(a->u.sel.cond, b->u.sel.cond) &&
		       loop_expr_equal(a->u.sel.then_, b->u.sel.then_) &&
		       loop_expr_equal(a->u.sel.else_, b->u.sel.else_);
	case LX_CAST:
		return a->u.cast.to == b->u.cast.to && loop_expr_equal(a->u.cast.a, b->u.cast.a);
	}
	return false;
}

/* ---- affine forms --------------------------------------------------------- */

/* Return the affine form of 0. */
static affine affine_zero(void)
{
	affine A;
	A.n = 0;
	A.c = 0;
	A.ok = true;
	return A;
}

/* Add "v" to the constant of "A". */
static void add_const(affine *A, int64_t v)
{
	if (__builtin_add_overflow(A->c, v, &A->c))
		A->ok = false;
}

/* Add "coef" * "atom" to "A", merging it with an equal atom. */
static void add_term(affine *A, loop_expr *atom, int64_t coef)
{
	if (!A->ok || coef == 0)
		return;
	for (int i = 0; i < A->n; i++) {
		if (!loop_expr_equal(A->t[i].atom, atom))
			continue;
		if (__builtin_add_overflow(A->t[i].coef, coef, &A->t[i].coef))
			A->ok = false;
		return;
	}
	if (A->n == MAX_TERMS) {
		A->ok = false;
		return;
	}
	A->t[A->n++] = (term){ atom, coef };
}

/* Add "k" times "X" to "A". */
static void add_scaled(affine *A, const affine *X, int64_t k)
{
	int64_t c;
	if (!X->ok || __builtin_mul_overflow(X->c, k, &c)) {
		A->ok = false;
		return;
	}
	add_const(A, c);
	for (int i = 0; i < X->n && A->ok; i++) {
		int64_t coef;
		if (__builtin_mul_overflow(X->t[i].coef, k, &coef))
			A->ok = false;
		else
			add_term(A, X->t[i].atom, coef);
	}
}

/* Return the number of terms of "A" with a nonzero coefficient. */
static int live_terms(const affine *A)
{
	int n = 0;
	for (int i = 0; i < A->n; i++)
		n += A->t[i].coef != 0;
	return n;
}

/* Return the range of "A" over the loops of "S": known only when every
 * atom's range is and no bound overflows. */
static range affine_range(const simplifier *S, const affine *A)
{
	if (!A->ok)
		return unknown_range();
	range r = exact_range(A->c);
	for (int i = 0; i < A->n && r.known; i++)
		if (A->t[i].coef)
			r = range_add(r, range_scale(expr_range(S, A->t[i].atom), A->t[i].coef));
	return r;
}

/* Return whether "e" is an i64 literal, variable, sum, difference,
 * product or negation: a node linearize looks into. */
static bool is_linear_node(const loop_expr *e)
{
	if (e->dtype != TESSEL_I64)
		return false;
	if (e->kind == LX_INT || e->kind == LX_VAR)
		return true;
	if (e->kind == LX_UNARY)
		return e->u.un.op == TESSEL_NEG;
	return e->kind == LX_BINARY && e->u.bin.op <= TESSEL_MUL;
}

static void linearize(simplifier *S, loop_expr *e, int64_t scale, affine *A, bool fresh);

static void linearize_product(simplifier *S, loop_expr *a, loop_expr *b, int64_t scale,
	affine *A, bool fresh);

static loop_expr *affine_expr(simplifier *S, const affine *A);

/* Add "scale" * "e" to "A" as an atom, simplified first when "fresh"
 * (and looked into when that makes it linear). */
static void linearize_atom(simplifier *S, loop_expr *e, int64_t scale, affine *A,
	bool fresh)
{
	loop_expr *x = fresh ? simplify_expr(S, e) : e;
	if (fresh && is_linear_node(x))
		linearize(S, x, scale, A, false);
	else
		add_term(A, x, scale);
}

/* Add "scale" * the variable "e" to "A", or its value when its loop was
 * removed. */
static void linearize_var(simplifier *S, loop_expr *e, int64_t scale, affine *A)
{
	int id = e->u.var->id;
	if (id >= 0 && id < S->p->nvars && S->subst[id])
		linearize(S, S->subst[id], scale, A, false);
	else
		add_term(A, e, scale);
}

/* Add "scale" times the value of the i64 expression "e" to "A", building
 * the canonical form of its sums, differences and products by constants;
 * other subexpressions become atoms (simplified first when "fresh"). */
static void linearize(simplifier *S, loop_expr *e, int64_t scale, affine *A, bool fresh)
{
	int64_t v;
	if (!A->ok)
		return;
	if (!is_linear_node(e)) {
		linearize_atom(S, e, scale, A, fresh);
		return;
	}
	switch (e->kind) {
	case LX_INT:
		if (__builtin_mul_overflow(e->u.ival, scale, &v))
			A->ok = false;
		else
			add_const(A, v);
		return;
	case LX_VAR:
		linearize_var(S, e, scale, A);
		return;
	case LX_UNARY:
		if (scale == INT64_MIN)
			A->ok = false;
		else
			linearize(S, e->u.un.a, -scale, A, fresh);
		return;
	default:
		break;
	}
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		linearize(S, e->u.bin.a, scale, A, fresh);
		linearize(S, e->u.bin.b, scale, A, fresh);
		return;
	case TESSEL_SUB:
		linearize(S, e->u.bin.a, scale, A, fresh);
		if (scale == INT64_MIN)
			A->ok = false;
		else
			linearize(S, e->u.bin.b, -scale, A, fresh);
		return;
	default:
		linearize_product(S, e->u.bin.a, e->u.bin.b, scale, A, fresh);
		return;
	}
}

/* Add "scale" * "a" * "b" to "A": scaled when a side is constant, else as
 * the atom of their product. */
static void linearize_product(simplifier *S, loop_expr *a, loop_expr *b, int64_t scale,
	affine *A, bool fresh)
{
	affine x = affine_zero(), y = affine_zero();
	linearize(S, a, 1, &x, fresh);
	linearize(S, b, 1, &y, fresh);
	if (!x.ok || !y.ok) {
		A->ok = false;
		return;
	}
	int64_t k;
	if (live_terms(&y) == 0 && !__builtin_mul_overflow(y.c, scale, &k)) {
		add_scaled(A, &x, k);
	} else if (live_terms(&x) == 0 && !__builtin_mul_overflow(x.c, scale, &k)) {
		add_scaled(A, &y, k);
	} else if (live_terms(&x) && live_terms(&y)) {
		add_term(A, lx_mul(S->p, affine_expr(S, &x), affine_expr(S, &y)), scale);
	} else {
		A->ok = false;
	}
}


/* Return whether the atom "e" is the floor division ("op" TESSEL_DIV) or
 * remainder of some dividend by the positive constant "c". */
static bool is_divmod_atom(const loop_expr *e, tessel_binary op, int64_t c)
{
	return e->kind == LX_BINARY && e->dtype == TESSEL_I64 && e->u.bin.op == op &&
	       e->u.bin.b->kind == LX_INT && e->u.bin.b->u.ival == c && c > 0;
}

/* Replace each pair "k*c * (x / c) + k * (x % c)" of "A" by "k * x"
 * (x = c * floor(x / c) + x mod c for every x). */
static void merge_div_mod_pairs(simplifier *S, affine *A)
{
	for (int i = 0; i < A->n; i++) {
		term *q = &A->t[i];
		if (!q->coef || q->atom->kind != LX_BINARY || q->atom->u.bin.op != TESSEL_DIV)
			continue;
		int64_t c = q->atom->u.bin.b->kind == LX_INT ? q->atom->u.bin.b->u.ival : 0;
		if (!is_divmod_atom(q->atom, TESSEL_DIV, c) || q->coef % c)
			continue;
		int64_t k = q->coef / c;
		for (int j = 0; j < A->n; j++) {
			term *r = &A->t[j];
			if (r->coef != k || !is_divmod_atom(r->atom, TESSEL_MOD, c) ||
			    !loop_expr_equal(r->atom->u.bin.a, q->atom->u.bin.a))
				continue;
			loop_expr *x = q->atom->u.bin.a;
			q->coef = 0;
			r->coef = 0;
			linearize(S, x, k, A, false);
			break;
		}
	}
}

/* Return the affine form of the simplified i64 expression "e". */
static affine affine_of(simplifier *S, loop_expr *e)
{
	affine A = affine_zero();
	linearize(S, e, 1, &A, false);
	merge_div_mod_pairs(S, &A);
	return A;
}

/* Return "a" - "b". */
static affine affine_sub(simplifier *S, const affine *a, const affine *b)
{
	affine d = affine_zero();
	add_scaled(&d, a, 1);
	add_scaled(&d, b, -1);
	merge_div_mod_pairs(S, &d);
	return d;
}

/* ---- building expressions back ------------------------------------------ */

/* Return |"v"|, exact for INT64_MIN. */
static uint64_t magnitude(int64_t v)
{
	return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* Return whether term "a" comes before term "b": larger coefficients
 * first (strides, as a person writes `i * 32 + j`), then variables by id,
 * then other atoms. */
static bool term_before(const term *a, const term *b)
{
	uint64_t ma = magnitude(a->coef), mb = magnitude(b->coef);
	if (ma != mb)
		return ma > mb;
	bool va = a->atom->kind == LX_VAR, vb = b->atom->kind == LX_VAR;
	if (va != vb)
		return va;
	return va && a->atom->u.var->id < b->atom->u.var->id;
}

/* Sort the terms of "A" in canonical order (stable: other atoms keep the
 * order they came in). */
static void sort_terms(affine *A)
{
	for (int i = 1; i < A->n; i++) {
		term t = A->t[i];
		int j = i;
		for (; j > 0 && term_before(&t, &A->t[j - 1]); j--)
			A->t[j] = A->t[j - 1];
		A->t[j] = t;
	}
}

/* Return "coef" * "atom" for a positive "coef" (or INT64_MIN). */
static loop_expr *term_expr(simplifier *S, loop_expr *atom, int64_t coef)
{
	return coef == 1 ? atom : lx_mul(S->p, atom, lx_int(S->p, coef));
}

/* Return the first term of a sum whose terms are all negative: -x, or
 * x * -k. */
static loop_expr *negative_term_expr(simplifier *S, loop_expr *atom, int64_t coef)
{
	if (coef == -1)
		return lx_unary(S->p, TESSEL_NEG, atom, TESSEL_I64);
	return lx_mul(S->p, atom, lx_int(S->p, coef));
}

/* Return "acc" + "c" written with a subtraction when "c" is negative;
 * "c" alone when "acc" is NULL. */
static loop_expr *add_constant_last(simplifier *S, loop_expr *acc, int64_t c)
{
	if (!acc)
		return lx_int(S->p, c);
	if (c < 0 && c != INT64_MIN)
		return lx_sub(S->p, acc, lx_int(S->p, -c));
	return lx_add(S->p, acc, lx_int(S->p, c));
}

/* Return the expression of "A" in canonical order: positive terms, then
 * negative terms subtracted, then the constant; a positive constant leads
 * when every term is negative ("5 - x"). */
static loop_expr *affine_expr(simplifier *S, const affine *A)
{
	affine T = *A;
	sort_terms(&T);
	loop_expr *acc = NULL;
	for (int i = 0; i < T.n; i++) {
		if (T.t[i].coef <= 0 && T.t[i].coef != INT64_MIN)
			continue;
		loop_expr *t = term_expr(S, T.t[i].atom, T.t[i].coef);
		acc = acc ? lx_add(S->p, acc, t) : t;
	}
	int64_t c = T.c;
	if (!acc && c > 0) {
		acc = lx_int(S->p, c);
		c = 0;
	}
	for (int i = 0; i < T.n; i++) {
		if (T.t[i].coef >= 0 || T.t[i].coef == INT64_MIN)
			continue;
		acc = acc ? lx_sub(S->p, acc, term_expr(S, T.t[i].atom, -T.t[i].coef))
			  : negative_term_expr(S, T.t[i].atom, T.t[i].coef);
	}
	return c || !acc ? add_constant_last(S, acc, c) : acc;
}

/* Return "r", converted to "dt" when a rewrite changed its type. */
static loop_expr *fit_type(simplifier *S, tessel_dtype dt, loop_expr *r)
{
	return r->dtype == dt ? r : lx_cast(S->p, dt, r);
}

/* Return "orig" when it is the same expression as "r", to keep nodes
 * shared and programs from growing. */
static loop_expr *prefer_original(loop_expr *orig, loop_expr *r)
{
	return loop_expr_equal(orig, r) ? orig : r;
}

/* Return the binary node "e" with operands "a" and "b" (itself when they
 * are its own). */
static loop_expr *with_operands(simplifier *S, loop_expr *e, loop_expr *a, loop_expr *b)
{
	if (a == e->u.bin.a && b == e->u.bin.b)
		return e;
	if (e->u.bin.op >= TESSEL_LT && e->u.bin.op <= TESSEL_NE)
		return lx_cmp(S->p, e->u.bin.op, a, b);
	return lx_binary(S->p, e->u.bin.op, a, b, e->dtype);
}

/* ---- integer arithmetic ----------------------------------------------------- */

/* Return the unary or binary "e" with its operands simplified and no
 * rewrite of its own. */
static loop_expr *simplify_operands(simplifier *S, loop_expr *e)
{
	if (e->kind == LX_UNARY) {
		loop_expr *a = simplify_expr(S, e->u.un.a);
		return a == e->u.un.a ? e : lx_unary(S->p, e->u.un.op, a, e->dtype);
	}
	return with_operands(S, e, simplify_expr(S, e->u.bin.a), simplify_expr(S, e->u.bin.b));
}

/* Return the sum, difference, product or negation "e" in canonical
 * affine form.  When a constant overflows on the way (the order of "e"
 * can overflow where the sum does not), its operands are simplified and
 * the form is tried once more on them. */
static loop_expr *simplify_linear(simplifier *S, loop_expr *e)
{
	affine A = affine_zero();
	linearize(S, e, 1, &A, true);
	merge_div_mod_pairs(S, &A);
	if (A.ok)
		return prefer_original(e, affine_expr(S, &A));
	loop_expr *r = simplify_operands(S, e);
	A = affine_of(S, r);
	return A.ok ? prefer_original(e, affine_expr(S, &A)) : r;
}

/* Split "A" into "Q" (the variable terms whose coefficients "c" divides,
 * divided by "c") and "R" (the rest, with the constant): A = c * Q + R. */
static void split_by_divisor(const affine *A, int64_t c, affine *Q, affine *R)
{
	*Q = affine_zero();
	*R = affine_zero();
	R->c = A->c;
	for (int i = 0; i < A->n; i++) {
		if (A->t[i].coef % c == 0)
			add_term(Q, A->t[i].atom, A->t[i].coef / c);
		else
			add_term(R, A->t[i].atom, A->t[i].coef);
	}
}

/* Return whether "a" op "c" is "x" op "cx" by the identities
 * (x / c1) / c = x / (c1 * c) and (x % c1) % c = x % c when "c" divides
 * c1, for positive c1 and "c". */
static bool nested_divmod(tessel_binary op, loop_expr *a, int64_t c, loop_expr **x,
	int64_t *cx)
{
	if (a->kind != LX_BINARY || a->dtype != TESSEL_I64 || a->u.bin.op != op ||
	    a->u.bin.b->kind != LX_INT || a->u.bin.b->u.ival <= 0)
		return false;
	int64_t c1 = a->u.bin.b->u.ival;
	*x = a->u.bin.a;
	if (op == TESSEL_DIV)
		return !__builtin_mul_overflow(c1, c, cx);
	*cx = c;
	return c1 % c == 0;
}

static loop_expr *divmod_affine(simplifier *S, tessel_binary op, loop_expr *a, int64_t c);
static loop_expr *divmod_by_constant(simplifier *S, tessel_binary op, loop_expr *a,
	int64_t c);

/* Split "R" as "g" * "H" + "L" for a "g" that divides "c" (1 < g < c)
 * and some of R's coefficients, with "L" (the terms "g" does not divide
 * and the constant's remainder) in [0, g) over the ranges of "S": then
 * R / c = H / (c / g) and R % c = g * (H % (c / g)) + L, since "L" cannot
 * carry into a multiple of "g".  This is what splitting a fused loop by a
 * factor of its inner extent leaves: (fi * 4 + v) / 32 with v in [0, 4)
 * is fi / 8.  The largest such "g" is taken; return whether one was. */
static bool split_lanes(const simplifier *S, const affine *R, int64_t c, affine *H,
	affine *L, int64_t *g)
{
	int64_t best = 0;
	for (int i = 0; i < R->n; i++) {
		int64_t cand = R->t[i].coef ? te_gcd(R->t[i].coef, c) : 0;
		if (cand <= best || cand <= 1 || cand >= c)
			continue;
		affine h = affine_zero(), l = affine_zero();
		add_const(&h, te_floor_div(R->c, cand));
		add_const(&l, te_floor_mod(R->c, cand));
		for (int k = 0; k < R->n; k++) {
			if (R->t[k].coef % cand == 0)
				add_term(&h, R->t[k].atom, R->t[k].coef / cand);
			else
				add_term(&l, R->t[k].atom, R->t[k].coef);
		}
		range lr = affine_range(S, &l);
		if (!h.ok || !l.ok || !lr.known || lr.lo < 0 || lr.hi >= cand)
			continue;
		best = cand;
		*H = h;
		*L = l;
	}
	*g = best;
	return best > 0;
}

/* Return "a" / "c" or "a" % "c" ("op") for "a" = "g" * "H" + "L" of
 * split_lanes. */
static loop_expr *divmod_lanes(simplifier *S, tessel_binary op, const affine *H,
	const affine *L, int64_t g, int64_t c)
{
	loop_expr *h = affine_expr(S, H), *part = divmod_by_constant(S, op, h, c / g);
	if (!part)
		part = lx_binary(S->p, op, h, lx_int(S->p, c / g), TESSEL_I64);
	if (op == TESSEL_DIV)
		return part;
	affine r = *L;
	add_term(&r, part, g);
	return r.ok ? affine_expr(S, &r) : NULL;
}

/* Return "a" / "c" or "a" % "c" ("op") for the positive constant "c",
 * simplified, or NULL when nothing is proved. */
static loop_expr *divmod_by_constant(simplifier *S, tessel_binary op, loop_expr *a,
	int64_t c)
{
	loop_expr *r = divmod_affine(S, op, a, c), *x;
	int64_t cx;
	if (r || !nested_divmod(op, a, c, &x, &cx))
		return r;
	r = divmod_by_constant(S, op, x, cx);
	return r ? r : lx_binary(S->p, op, x, lx_int(S->p, cx), TESSEL_I64);
}

/* Return "a" / "c" or "a" % "c" ("op") for the positive constant "c",
 * simplified by the ranges of "S" (after splitting off the terms "c"
 * divides), or NULL when nothing is proved. */
static loop_expr *divmod_affine(simplifier *S, tessel_binary op, loop_expr *a, int64_t c)
{
	affine A = affine_of(S, a), Q, R;
	if (!A.ok)
		return NULL;
	split_by_divisor(&A, c, &Q, &R);
	range q = affine_range(S, &Q), r = affine_range(S, &R);
	if (!Q.ok || !R.ok || !q.known || !r.known || !affine_range(S, &A).known)
		return NULL;
	int64_t k = te_floor_div(r.lo, c), kc;
	if (k == te_floor_div(r.hi, c) && !__builtin_mul_overflow(k, c, &kc)) {
		if (op == TESSEL_DIV)
			add_const(&Q, k);
		else if (__builtin_sub_overflow(R.c, kc, &R.c))
			R.ok = false;
		affine *result = op == TESSEL_DIV ? &Q : &R;
		return result->ok ? affine_expr(S, result) : NULL;
	}
	affine H, L;
	int64_t g;
	if (split_lanes(S, &R, c, &H, &L, &g)) {
		loop_expr *part = divmod_lanes(S, op, &H, &L, g, c);
		if (!part || op == TESSEL_MOD)
			return part;
		add_term(&Q, part, 1);
		return Q.ok ? affine_expr(S, &Q) : NULL;
	}
	if (live_terms(&Q) == 0)
		return NULL;
	loop_expr *rest = affine_expr(S, &R), *part = divmod_by_constant(S, op, rest, c);
	if (!part)
		part = lx_binary(S->p, op, rest, lx_int(S->p, c), TESSEL_I64);
	if (op == TESSEL_MOD)
		return part;
	add_term(&Q, part, 1);
	return Q.ok ? affine_expr(S, &Q) : NULL;
}

/* Return "e" with the identities of nested_divmod applied before its
 * dividend is simplified (so that (x / 3) / 4 becomes x / 12, not a
 * split of x / 3 divided by 4), or "e". */
static loop_expr *fold_nested_divmod(simplifier *S, loop_expr *e)
{
	loop_expr *x, *b = e->u.bin.b;
	int64_t cx;
	if (b->kind != LX_INT || b->u.ival <= 0 ||
	    !nested_divmod(e->u.bin.op, e->u.bin.a, b->u.ival, &x, &cx))
		return e;
	return fold_nested_divmod(S, lx_binary(S->p, e->u.bin.op, x, lx_int(S->p, cx),
		TESSEL_I64));
}

/* Return the i64 floor division or remainder "e" simplified. */
static loop_expr *simplify_divmod(simplifier *S, loop_expr *e)
{
	loop_expr *folded = fold_nested_divmod(S, e);
	if (folded != e)
		return simplify_expr(S, folded);
	loop_expr *a = simplify_expr(S, e->u.bin.a), *b = simplify_expr(S, e->u.bin.b);
	loop_expr *r = NULL;
	if (b->kind == LX_INT && b->u.ival > 0 && a->dtype == TESSEL_I64 && a->kind != LX_INT) {
		r = divmod_by_constant(S, e->u.bin.op, a, b->u.ival);
	}
	return r ? prefer_original(e, r) : with_operands(S, e, a, b);
}

/* Return whether both of the simplified i64 expressions "a" and "b" have
 * known ranges, with "D" = a - b. */
static bool difference(simplifier *S, loop_expr *a, loop_expr *b, affine *D)
{
	affine A = affine_of(S, a), B = affine_of(S, b);
	*D = affine_sub(S, &A, &B);
	return D->ok && affine_range(S, &A).known && affine_range(S, &B).known;
}

/* Return the i64 min or max "e", one of its sides when the ranges
 * decide it. */
static loop_expr *simplify_min_max(simplifier *S, loop_expr *e)
{
	loop_expr *a = simplify_expr(S, e->u.bin.a), *b = simplify_expr(S, e->u.bin.b);
	if (a->dtype != TESSEL_I64 || b->dtype != TESSEL_I64)
		return with_operands(S, e, a, b);
	affine D;
	bool ranged = difference(S, a, b, &D);
	bool is_min = e->u.bin.op == TESSEL_MIN;
	if (D.ok && live_terms(&D) == 0 && D.c == 0)
		return a;
	range d = ranged ? affine_range(S, &D) : unknown_range();
	if (d.known && d.hi <= 0)
		return is_min ? a : b;
	if (d.known && d.lo >= 0)
		return is_min ? b : a;
	return with_operands(S, e, a, b);
}

/* ---- conditions --------------------------------------------------------- */

/* Return the truth of "d op 0" for every value in "d": 1 or 0, or -1
 * when it depends. */
static int decide(tessel_binary op, range d)
{
	bool neg = d.hi < 0, nonpos = d.hi <= 0, pos = d.lo > 0, nonneg = d.lo >= 0;
	switch (op) {
	case TESSEL_LT: return neg ? 1 : nonneg ? 0 : -1;
	case TESSEL_LE: return nonpos ? 1 : pos ? 0 : -1;
	case TESSEL_GT: return pos ? 1 : nonpos ? 0 : -1;
	case TESSEL_GE: return nonneg ? 1 : neg ? 0 : -1;
	case TESSEL_EQ: return d.lo == 0 && d.hi == 0 ? 1 : (pos || neg) ? 0 : -1;
	default: return d.lo == 0 && d.hi == 0 ? 0 : (pos || neg) ? 1 : -1;
	}
}

/* Return "d op 0" written as "positive terms op negative terms", the
 * constant on the side with terms (the right one when both have them), or
 * NULL when a side's range is unknown. */
static loop_expr *balanced_compare(simplifier *S, tessel_binary op, const affine *D)
{
	affine L = affine_zero(), R = affine_zero();
	if (D->c == INT64_MIN)
		return NULL;
	for (int i = 0; i < D->n; i++) {
		int64_t coef = D->t[i].coef;
		if (coef == INT64_MIN)
			return NULL;
		if (coef > 0)
			add_term(&L, D->t[i].atom, coef);
		else if (coef < 0)
			add_term(&R, D->t[i].atom, -coef);
	}
	if (live_terms(&L))
		R.c = -D->c;
	else
		L.c = D->c;
	if (!L.ok || !R.ok || !affine_range(S, &L).known || !affine_range(S, &R).known)
		return NULL;
	return lx_cmp(S->p, op, affine_expr(S, &L), affine_expr(S, &R));
}

/* Write into "x" and "y" the two values the i64 atom "e" takes one of (the
 * sides of a select, of a min or of a max); return false for other atoms. */
static bool two_cases(const loop_expr *e, loop_expr **x, loop_expr **y)
{
	if (e->dtype != TESSEL_I64)
		return false;
	if (e->kind == LX_SELECT) {
		*x = e->u.sel.then_;
		*y = e->u.sel.else_;
		return true;
	}
	if (e->kind == LX_BINARY && (e->u.bin.op == TESSEL_MIN || e->u.bin.op == TESSEL_MAX)) {
		*x = e->u.bin.a;
		*y = e->u.bin.b;
		return true;
	}
	return false;
}

/* Return the truth of "D op 0" decided case by case: for the first atom
 * of "D" that is one of two values (two_cases), with each in its place,
 * when the ranges decide both alike; -1 otherwise.  What a range of the
 * atom as a whole loses: "x <= min(x + 15, 1023) - 15" holds for x up to
 * 1008, though min(x + 15, 1023) - 15 - x ranges over [-x, 0]. */
static int decide_by_cases(simplifier *S, tessel_binary op, const affine *D)
{
	for (int i = 0; i < D->n; i++) {
		loop_expr *side[2];
		if (!D->t[i].coef || !two_cases(D->t[i].atom, &side[0], &side[1]))
			continue;
		int truth = -1;
		for (int k = 0; k < 2; k++) {
			affine C = *D, X = affine_of(S, side[k]);
			C.t[i].coef = 0;
			add_scaled(&C, &X, D->t[i].coef);
			range r = affine_range(S, &C);
			int t = r.known ? decide(op, r) : -1;
			if (t < 0 || (k == 1 && t != truth))
				return -1;
			truth = t;
		}
		return truth;
	}
	return -1;
}

/* Return the comparison "e": decided when its operands are i64 and the
 * ranges decide it (case by case where an atom is one of two values),
 * else balanced (balanced_compare). */
static loop_expr *simplify_compare(simplifier *S, loop_expr *e)
{
	loop_expr *a = simplify_expr(S, e->u.bin.a), *b = simplify_expr(S, e->u.bin.b);
	tessel_binary op = e->u.bin.op;
	if (a->dtype != TESSEL_I64 || b->dtype != TESSEL_I64)
		return with_operands(S, e, a, b);
	affine D;
	bool ranged = difference(S, a, b, &D);
	if (D.ok && live_terms(&D) == 0 && (op == TESSEL_EQ || op == TESSEL_NE))
		return lx_bool(S->p, (D.c == 0) == (op == TESSEL_EQ));
	range d = ranged ? affine_range(S, &D) : unknown_range();
	if (!d.known)
		return with_operands(S, e, a, b);
	int truth = decide(op, d);
	if (truth < 0)
		truth = decide_by_cases(S, op, &D);
	if (truth >= 0)
		return lx_bool(S->p, truth);
	loop_expr *r = balanced_compare(S, op, &D);
	return r ? prefer_original(e, r) : with_operands(S, e, a, b);
}

/* Return whether "e" is the literal "v". */
static bool is_const_bool(const loop_expr *e, bool v)
{
	return e->kind == LX_BOOL && (e->u.ival != 0) == v;
}

/* Return the && or || "e" with literal and repeated operands folded. */
static loop_expr *simplify_logic(simplifier *S, loop_expr *e)
{
	loop_expr *a = simplify_expr(S, e->u.bin.a), *b = simplify_expr(S, e->u.bin.b);
	bool is_and = e->u.bin.op == TESSEL_AND;
	if (is_const_bool(a, !is_and) || is_const_bool(b, !is_and))
		return lx_bool(S->p, !is_and);
	if (is_const_bool(a, is_and))
		return b;
	if (is_const_bool(b, is_and) || loop_expr_equal(a, b))
		return a;
	return with_operands(S, e, a, b);
}

/* Return whether "e" compares two integers (so that its negation is the
 * opposite comparison; with floats NaN forbids it). */
static bool is_int_compare(const loop_expr *e)
{
	return e->kind == LX_BINARY && e->u.bin.op >= TESSEL_LT && e->u.bin.op <= TESSEL_NE &&
	       tessel_dtype_is_int(e->u.bin.a->dtype) && tessel_dtype_is_int(e->u.bin.b->dtype);
}

/* Return the comparison true exactly when "op" is false. */
static tessel_binary negated_compare(tessel_binary op)
{
	switch (op) {
	case TESSEL_LT: return TESSEL_GE;
	case TESSEL_LE: return TESSEL_GT;
	case TESSEL_GT: return TESSEL_LE;
	case TESSEL_GE: return TESSEL_LT;
	case TESSEL_EQ: return TESSEL_NE;
	default: return TESSEL_EQ;
	}
}

/* Return the negation of the simplified condition "c": a constant, the
 * opposite integer comparison, the operand of a negation, or !c. */
static loop_expr *negation(simplifier *S, loop_expr *c)
{
	if (c->kind == LX_BOOL)
		return lx_bool(S->p, !c->u.ival);
	if (c->kind == LX_UNARY && c->u.un.op == TESSEL_NOT)
		return c->u.un.a;
	if (is_int_compare(c))
		return lx_cmp(S->p, negated_compare(c->u.bin.op), c->u.bin.a, c->u.bin.b);
	return lx_unary(S->p, TESSEL_NOT, c, TESSEL_BOOL);
}

/* ---- expressions ---------------------------------------------------------- */

/* Return the binary "e" simplified by the rule of its operator. */
static loop_expr *simplify_binary(simplifier *S, loop_expr *e)
{
	tessel_binary op = e->u.bin.op;
	if (op == TESSEL_AND || op == TESSEL_OR)
		return simplify_logic(S, e);
	if (op >= TESSEL_LT && op <= TESSEL_NE)
		return simplify_compare(S, e);
	if (e->dtype != TESSEL_I64)
		return simplify_operands(S, e);
	switch (op) {
	case TESSEL_ADD:
	case TESSEL_SUB:
	case TESSEL_MUL:
		return simplify_linear(S, e);
	case TESSEL_DIV:
	case TESSEL_MOD:
		return simplify_divmod(S, e);
	case TESSEL_MIN:
	case TESSEL_MAX:
		return simplify_min_max(S, e);
	default:
		return simplify_operands(S, e);
	}
}

/* Return the unary "e" simplified: i64 negation as affine, ! pushed
 * into comparisons. */
static loop_expr *simplify_unary(simplifier *S, loop_expr *e)
{
	if (e->dtype == TESSEL_I64 && e->u.un.op == TESSEL_NEG)
		return simplify_linear(S, e);
	if (e->u.un.op != TESSEL_NOT || e->u.un.a->dtype != TESSEL_BOOL)
		return simplify_operands(S, e);
	return prefer_original(e, negation(S, simplify_expr(S, e->u.un.a)));
}

/* Return the select "e": its branch when the condition is decided, the
 * branch when both are the same. */
static loop_expr *simplify_select(simplifier *S, loop_expr *e)
{
	loop_expr *c = simplify_expr(S, e->u.sel.cond);
	if (c->kind == LX_BOOL)
		return simplify_expr(S, c->u.ival ? e->u.sel.then_ : e->u.sel.else_);
	loop_expr *a = simplify_expr(S, e->u.sel.then_), *b = simplify_expr(S, e->u.sel.else_);
	if (loop_expr_equal(a, b))
		return a;
	if (c == e->u.sel.cond && a == e->u.sel.then_ && b == e->u.sel.else_)
		return e;
	return lx_select(S->p, c, a, b, e->dtype);
}

/* Return the load "e" with its indices simplified (a new node when one
 * changed: loads may be shared). */
static loop_expr *simplify_load(simplifier *S, loop_expr *e)
{
	loop_expr *index[TESSEL_MAX_DIMS];
	int n = e->u.load.n;
	bool changed = false;
	if (n > TESSEL_MAX_DIMS)
		return e;
	for (int i = 0; i < n; i++) {
		index[i] = simplify_expr(S, e->u.load.index[i]);
		changed |= index[i] != e->u.load.index[i];
	}
	return changed ? lx_load(S->p, e->u.load.buf, n, index) : e;
}

/* Return the variable "e", or its value when its loop was removed. */
static loop_expr *simplify_var(simplifier *S, loop_expr *e)
{
	int id = e->u.var->id;
	return id >= 0 && id < S->p->nvars && S->subst[id] ? S->subst[id] : e;
}

/* Return "e" simplified, possibly of another integer dtype (see
 * simplify_expr). */
static loop_expr *simplify_node(simplifier *S, loop_expr *e)
{
	switch (e->kind) {
	case LX_VAR:
		return simplify_var(S, e);
	case LX_LOAD:
		return simplify_load(S, e);
	case LX_UNARY:
		return simplify_unary(S, e);
	case LX_BINARY:
		return simplify_binary(S, e);
	case LX_SELECT:
		return simplify_select(S, e);
	case LX_CAST: {
		loop_expr *a = simplify_expr(S, e->u.cast.a);
		return a == e->u.cast.a ? e : lx_cast(S->p, e->u.cast.to, a);
	}
	default:
		return e;
	}
}

/* Return "e" simplified in the scope "S"; "e" is not modified (its nodes
 * may be shared), and the result has its dtype. */
static loop_expr *simplify_expr(simplifier *S, loop_expr *e)
{
	loop_expr *r = fit_type(S, e->dtype, simplify_node(S, e));
	if (S->nfacts && r->dtype == TESSEL_I64 && r->kind != LX_INT && r->kind != LX_VAR) {
		range x = with_facts(S, r, unknown_range());
		if (x.known && x.lo == x.hi)
			return lx_int(S->p, x.lo);
	}
	return r;
}

/* ---- statements ------------------------------------------------------------ */

static loop_stmt *simplify_stmt(simplifier *S, loop_stmt *s);

/* Return whether a loop of kind "k" and one iteration may be replaced by
 * its body. */
static bool removable_when_single(loop_kind k)
{
	return k == LOOP_SERIAL || k == LOOP_PARALLEL || k == LOOP_VECTORIZED ||
	       k == LOOP_UNROLLED || k == LOOP_VTHREAD;
}

/* Return whether the bounds of a loop of kind "k" may be narrowed. */
static bool tightenable(loop_kind k)
{
	return k == LOOP_SERIAL || k == LOOP_PARALLEL || k == LOOP_VECTORIZED ||
	       k == LOOP_UNROLLED;
}

/* Return the range of the variable of a loop from "min" to "min" +
 * "extent" while it runs. */
static range loop_var_range(const simplifier *S, const loop_expr *min,
	const loop_expr *extent)
{
	range m = expr_range(S, min), x = expr_range(S, extent);
	int64_t hi;
	if (!m.known || !x.known || x.hi < 1 || __builtin_add_overflow(m.hi, x.hi - 1, &hi))
		return unknown_range();
	return make_range(m.lo, hi);
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

/* Return the comparison "b op a" is when "op" compares "a" with "b". */
static tessel_binary mirrored_compare(tessel_binary op)
{
	switch (op) {
	case TESSEL_LT: return TESSEL_GT;
	case TESSEL_LE: return TESSEL_GE;
	case TESSEL_GT: return TESSEL_LT;
	case TESSEL_GE: return TESSEL_LE;
	default: return op;
	}
}

/* Return the side of the comparison "c" that it compares with a
 * constant, with the comparison as "x op k" in "*op" and "*k"; NULL when
 * "c" is no such comparison. */
static const loop_expr *compared_with_constant(const loop_expr *c, tessel_binary *op,
	int64_t *k)
{
	if (c->kind != LX_BINARY || c->u.bin.op < TESSEL_LT || c->u.bin.op > TESSEL_NE)
		return NULL;
	const loop_expr *x = c->u.bin.a, *y = c->u.bin.b;
	*op = c->u.bin.op;
	if (x->kind == LX_INT) {
		x = c->u.bin.b;
		y = c->u.bin.a;
		*op = mirrored_compare(*op);
	}
	if (y->kind != LX_INT || x->kind == LX_INT)
		return NULL;
	*k = y->u.ival;
	return x;
}

/* Narrow "*lo".."*hi" to the values "x op k" allows (x != k only at an
 * end of the range); return whether it did. */
static bool narrow_bounds(tessel_binary op, int64_t k, int64_t *lo, int64_t *hi)
{
	if (op == TESSEL_NE) {
		if (k == *lo && k < INT64_MAX)
			(*lo)++;
		else if (k == *hi && k > INT64_MIN)
			(*hi)--;
		else
			return false;
		return true;
	}
	if ((op == TESSEL_LT && k == INT64_MIN) || (op == TESSEL_GT && k == INT64_MAX))
		return false;
	int64_t upper = op == TESSEL_LT ? k - 1 : k, lower = op == TESSEL_GT ? k + 1 : k;
	if ((op == TESSEL_LT || op == TESSEL_LE || op == TESSEL_EQ) && upper < *hi)
		*hi = upper;
	if ((op == TESSEL_GT || op == TESSEL_GE || op == TESSEL_EQ) && lower > *lo)
		*lo = lower;
	return true;
}

/* Narrow "*lo".."*hi" by the condition "c" when it compares the variable
 * "v" with a constant; return whether it did. */
static bool bound_of(const loop_expr *c, const loop_var *v, int64_t *lo, int64_t *hi)
{
	tessel_binary op;
	int64_t k;
	const loop_expr *x = compared_with_constant(c, &op, &k);
	return x && x->kind == LX_VAR && x->u.var == v && narrow_bounds(op, k, lo, hi);
}

/* Tighten the loop "s" (constant bounds, body a lone if) to the values of
 * its variable that the if's comparisons with constants allow, keeping
 * the other conjuncts in the if.  Return whether it changed "s". */
static bool tighten_loop(simplifier *S, loop_stmt *s)
{
	loop_stmt *body = s->u.for_.body;
	loop_expr *min = s->u.for_.min, *ext = s->u.for_.extent, *cj[MAX_CONJUNCTS];
	if (!tightenable(s->u.for_.kind) || body->kind != LS_IF || body->u.if_.else_ ||
	    min->kind != LX_INT || ext->kind != LX_INT)
		return false;
	int n = flatten_conjuncts(body->u.if_.cond, cj, 0);
	int64_t lo = min->u.ival, hi;
	if (n <= 0 || __builtin_add_overflow(lo, ext->u.ival - 1, &hi))
		return false;
	loop_expr *rest = NULL;
	bool narrowed = false;
	for (int i = 0; i < n; i++) {
		if (bound_of(cj[i], s->u.for_.var, &lo, &hi))
			narrowed = true;
		else
			rest = lx_and(S->p, rest, cj[i]);
	}
	if (!narrowed)
		return false;
	s->u.for_.min = lx_int(S->p, lo);
	s->u.for_.extent = lx_int(S->p, hi >= lo ? hi - lo + 1 : 0);
	s->u.for_.body = rest ? ls_if(S->p, rest, body->u.if_.then_, NULL) : body->u.if_.then_;
	return true;
}

/* Return the body of the loop "s" of one iteration, its variable replaced
 * by the loop's "min". */
static loop_stmt *inline_single_iteration(simplifier *S, loop_stmt *s, int id)
{
	loop_expr *min = s->u.for_.min;
	S->subst[id] = fit_type(S, TESSEL_I64, min);
	S->ranges[id] = expr_range(S, min);
	loop_stmt *body = simplify_stmt(S, s->u.for_.body);
	S->subst[id] = NULL;
	S->ranges[id] = unknown_range();
	return body;
}

/* Return the loop "s" simplified: removed, inlined, narrowed, or with its
 * bounds and body simplified; NULL when it does nothing. */
static loop_stmt *simplify_for(simplifier *S, loop_stmt *s)
{
	int id = s->u.for_.var->id;
	s->u.for_.min = simplify_expr(S, s->u.for_.min);
	s->u.for_.extent = simplify_expr(S, s->u.for_.extent);
	loop_expr *ext = s->u.for_.extent;
	if (ext->kind == LX_INT && ext->u.ival <= 0)
		return NULL;
	if (id < 0 || id >= S->p->nvars) {
		s->u.for_.body = simplify_stmt(S, s->u.for_.body);
		return s->u.for_.body ? s : NULL;
	}
	if (ext->kind == LX_INT && ext->u.ival == 1) {
		if (removable_when_single(s->u.for_.kind))
			return inline_single_iteration(S, s, id);
		s->u.for_.body = inline_single_iteration(S, s, id);
		return s->u.for_.body ? s : NULL;
	}
	S->ranges[id] = loop_var_range(S, s->u.for_.min, ext);
	s->u.for_.body = simplify_stmt(S, s->u.for_.body);
	S->ranges[id] = unknown_range();
	if (!s->u.for_.body)
		return NULL;
	return tighten_loop(S, s) ? simplify_for(S, s) : s;
}

/* The ranges of loop variables a branch narrows, to restore after it,
 * and the number of facts before it. */
typedef struct saved_ranges {
	int n, nfacts;
	int id[MAX_CONJUNCTS];
	range was[MAX_CONJUNCTS];
} saved_ranges;

/* Narrow, for the branch where "c" holds, the range of each loop variable
 * that a conjunct of "c" compares with a constant, saving the old ones
 * in "saved"; a conjunct that so compares another integer atom (`t % 4
 * == 3`) adds its range to the facts, so that the branch's expressions
 * fold it (to 3 there, and `t % 4 <= 2` in the other branch). */
static void narrow_ranges(simplifier *S, loop_expr *c, saved_ranges *saved)
{
	loop_expr *cj[MAX_CONJUNCTS];
	int n = flatten_conjuncts(c, cj, 0);
	saved->n = 0;
	saved->nfacts = S->nfacts;
	for (int i = 0; i < n; i++) {
		tessel_binary op;
		int64_t k;
		const loop_expr *x = compared_with_constant(cj[i], &op, &k);
		if (!x || x->dtype != TESSEL_I64)
			continue;
		if (x->kind != LX_VAR) {
			range r = expr_range(S, x);
			if (S->nfacts < MAX_FACTS && r.known && narrow_bounds(op, k, &r.lo, &r.hi) &&
			    r.lo <= r.hi)
				S->facts[S->nfacts++] = (fact){ x, r };
			continue;
		}
		int id = x->u.var->id;
		if (id < 0 || id >= S->p->nvars || !S->ranges[id].known)
			continue;
		int64_t lo = S->ranges[id].lo, hi = S->ranges[id].hi;
		if (!narrow_bounds(op, k, &lo, &hi) || lo > hi)
			continue;
		saved->id[saved->n] = id;
		saved->was[saved->n++] = S->ranges[id];
		S->ranges[id] = make_range(lo, hi);
	}
}

static void restore_ranges(simplifier *S, const saved_ranges *saved)
{
	for (int i = saved->n - 1; i >= 0; i--)
		S->ranges[saved->id[i]] = saved->was[i];
	S->nfacts = saved->nfacts;
}

/* Return the branch "s" of an if on "c" (negated in the else branch)
 * simplified, the ranges of the loop variables "c" bounds narrowed in it. */
static loop_stmt *simplify_branch(simplifier *S, loop_expr *c, loop_stmt *s)
{
	saved_ranges saved;
	narrow_ranges(S, c, &saved);
	loop_stmt *r = simplify_stmt(S, s);
	restore_ranges(S, &saved);
	return r;
}

/* Return the if "s" simplified: the branch taken when the condition is
 * decided; NULL when both branches are empty.  In each branch the ranges
 * of the loop variables the condition compares with constants are
 * narrowed to where the branch runs. */
static loop_stmt *simplify_if(simplifier *S, loop_stmt *s)
{
	loop_expr *c = simplify_expr(S, s->u.if_.cond);
	if (c->kind == LX_BOOL) {
		loop_stmt *taken = c->u.ival ? s->u.if_.then_ : s->u.if_.else_;
		return taken ? simplify_stmt(S, taken) : NULL;
	}
	loop_stmt *then_ = simplify_branch(S, c, s->u.if_.then_);
	loop_stmt *else_ = s->u.if_.else_ ?
		simplify_branch(S, negation(S, c), s->u.if_.else_) : NULL;
	if (!then_ && !else_)
		return NULL;
	if (!then_) {
		c = negation(S, c);
		then_ = else_;
		else_ = NULL;
	}
	s->u.if_.cond = c;
	s->u.if_.then_ = then_;
	s->u.if_.else_ = else_;
	return s;
}

/* Return the sequence "s" with its items simplified, empty ones dropped
 * and nested sequences spliced in; its only item, or NULL when empty. */
static loop_stmt *simplify_seq(simplifier *S, loop_stmt *s)
{
	loop_stmt **items = NULL;
	int n = 0;
	for (int i = 0; i < s->u.seq.n; i++) {
		loop_stmt *x = simplify_stmt(S, s->u.seq.items[i]);
		if (x && x->kind == LS_SEQ) {
			for (int j = 0; j < x->u.seq.n; j++)
				te_push(&S->p->arena, (void ***)&items, &n, x->u.seq.items[j]);
		} else if (x) {
			te_push(&S->p->arena, (void ***)&items, &n, x);
		}
	}
	if (n <= 1)
		return n ? items[0] : NULL;
	s->u.seq.items = items;
	s->u.seq.n = n;
	return s;
}

/* Return the store "s" with its indices and value simplified. */
static loop_stmt *simplify_store(simplifier *S, loop_stmt *s)
{
	for (int i = 0; i < s->u.store.n; i++)
		s->u.store.index[i] = simplify_expr(S, s->u.store.index[i]);
	s->u.store.value = simplify_expr(S, s->u.store.value);
	return s;
}

/* Return "s" simplified in the scope "S", or NULL when it does nothing.
 * Statements are rewritten in place (they form a tree). */
static loop_stmt *simplify_stmt(simplifier *S, loop_stmt *s)
{
	switch (s->kind) {
	case LS_FOR:
		return simplify_for(S, s);
	case LS_SEQ:
		return simplify_seq(S, s);
	case LS_STORE:
		return simplify_store(S, s);
	case LS_IF:
		return simplify_if(S, s);
	case LS_ALLOC:
		s->u.alloc.body = simplify_stmt(S, s->u.alloc.body);
		return s->u.alloc.body ? s : NULL;
	case LS_PREFETCH:
		for (int i = 0; i < s->u.prefetch.n; i++)
			s->u.prefetch.index[i] = simplify_expr(S, s->u.prefetch.index[i]);
		return s;
	case LS_BARRIER:
		return s;
	}
	return s;
}

/* requires: "p" passes loop_verify; its statements form a tree
 * guarantees: "p" computes what it computed, passes loop_verify, and is
 *   simplified as the file comment says; p->body is never NULL (an empty
 *   sequence when nothing is left)
 * invalidates: pointers into the old statement tree of "p" (statements
 *   are rewritten, replaced or dropped); expression nodes are never
 *   modified, so expressions shared with other holders stay valid */
void loop_simplify(loop_prog *p)
{
	simplifier S = { .p = p };
	S.ranges = calloc((size_t)p->nvars + 1, sizeof(range));
	S.subst = calloc((size_t)p->nvars + 1, sizeof(loop_expr *));
	if (S.ranges && S.subst && p->body)
		p->body = simplify_stmt(&S, p->body);
	if (!p->body)
		p->body = ls_seq(p, 0, NULL);
	free(S.ranges);
	free(S.subst);
}
