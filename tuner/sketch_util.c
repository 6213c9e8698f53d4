/* Helpers of the sketch rules (tuner/sketch_impl.h): random decisions,
 * and primitives applied to iters by index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule/primitives.h"
#include "schedule/random.h"
#include "tuner/sketch_impl.h"

int64_t sk_below(uint64_t *rng, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(sch_rng_next(rng) % (uint64_t)n);
}

bool sk_chance(uint64_t *rng, int percent)
{
	return sk_below(rng, 100) < percent;
}

/* Return a random divisor of "n" that is at most "max" and, when one
 * exists, a multiple of "multiple" (1: any). */
int64_t sk_random_divisor(uint64_t *rng, int64_t n, int64_t max, int64_t multiple)
{
	int64_t pick[64];
	int np = 0;
	for (int pass = 0; pass < 2 && np == 0; pass++)
		for (int64_t d = 1; d <= n && d <= max && np < 64; d++)
			if (n % d == 0 && (pass == 1 || d % multiple == 0))
				pick[np++] = d;
	return np ? pick[sk_below(rng, np)] : 1;
}

/* Draw a perfect factorization of "n" into "levels" factors, outermost
 * first, into "f": level l (but the outermost) at most "max"[l], the
 * innermost a multiple of "inner_multiple" where possible. */
void sk_perfect_tile(uint64_t *rng, int64_t n, int levels, const int64_t *max,
	int64_t inner_multiple, int64_t *f)
{
	int64_t rest = n;
	for (int l = levels - 1; l > 0; l--) {
		int64_t d = sk_random_divisor(rng, rest, max[l], l == levels - 1 ? inner_multiple : 1);
		f[l] = d;
		rest /= d;
	}
	f[0] = rest;
}

void sk_qname(const sch_state *st, int s, int iter, char buf[QNAME])
{
	snprintf(buf, QNAME, "%s.%s", st->stages[s].name, st->stages[s].iters[iter].name);
}

/* Split iter "iter" of stage "s" by "factor"; store the outer and inner
 * iters.  Return 0 or -1. */
int sk_split_iter(sch_state *st, int s, int iter, int64_t factor, int *outer, int *inner)
{
	char q[QNAME];
	sk_qname(st, s, iter, q);
	if (sch_split(st, q, factor, false, NULL, NULL))
		return -1;
	*outer = st->stages[s].iters[iter].split_outer;
	*inner = st->stages[s].iters[iter].split_inner;
	return 0;
}

/* Put the "n" iters "iters" of stage "s" in this order, in the positions
 * they occupy: one reorder, or, beyond the arguments a step holds, a swap
 * per misplaced loop. */
int sk_reorder_iters(sch_state *st, int s, const int *iters, int n)
{
	if (n < 2)
		return 0;
	char names[SCH_MAX_ARGS][QNAME];
	const char *order[SCH_MAX_ARGS];
	if (n <= SCH_MAX_ARGS) {
		for (int i = 0; i < n; i++) {
			sk_qname(st, s, iters[i], names[i]);
			order[i] = names[i];
		}
		return sch_reorder(st, n, order);
	}
	int pos[6 * MAX_AXES];
	for (int i = 0; i < n; i++)
		pos[i] = sch_leaf_pos(&st->stages[s], iters[i]);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && pos[j] < pos[j - 1]; j--) {
			int t = pos[j];
			pos[j] = pos[j - 1];
			pos[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		int here = st->stages[s].leaves[pos[i]];
		if (here == iters[i])
			continue;
		sk_qname(st, s, iters[i], names[0]);
		sk_qname(st, s, here, names[1]);
		order[0] = names[0];
		order[1] = names[1];
		if (sch_reorder(st, 2, order))
			return -1;
	}
	return 0;
}

/* Fuse the "n" adjacent iters "iters" of stage "s" (outermost first) and
 * return the fused iter, or -1. */
int sk_fuse_iters(sch_state *st, int s, const int *iters, int n)
{
	int fused = iters[0];
	for (int i = 1; i < n; i++) {
		char a[QNAME], b[QNAME];
		sk_qname(st, s, fused, a);
		sk_qname(st, s, iters[i], b);
		if (sch_fuse(st, a, b, NULL))
			return -1;
		fused = st->stages[s].iters[fused].fused_into;
	}
	return fused;
}

/* Apply an optional annotation primitive "prim" to iter "iter" of "s":
 * a refusal leaves the schedule as it was. */
void sk_try_annotate(sch_state *st, int s, int iter,
	int (*prim)(sch_state *, const char *))
{
	char q[QNAME];
	sk_qname(st, s, iter, q);
	if (prim(st, q))
		tessel_ctx_clear_error(st->ctx);
}

/* Return the index of the stage of "st" called "name", or -1 (no error). */
int sk_stage_named(const sch_state *st, const char *name)
{
	for (int i = 0; i < st->nstages; i++)
		if (strcmp(st->stages[i].name, name) == 0)
			return i;
	return -1;
}

/* Return the index of the stage of "st" whose name is not among the
 * "n" names "before" (the stage a primitive just made), or -1. */
static int new_stage(const sch_state *st, char (*before)[SCH_NAME_MAX], int n)
{
	for (int i = 0; i < st->nstages; i++) {
		bool old = false;
		for (int j = 0; j < n && !old; j++)
			old = strcmp(st->stages[i].name, before[j]) == 0;
		if (!old)
			return i;
	}
	return -1;
}

/* Run the stage-making primitive "make" and return the new stage, or -1. */
int sk_make_stage(sch_state *st, int (*make)(sch_state *, const char *, const char *),
	const char *a, const char *b)
{
	int n = st->nstages;
	char (*before)[SCH_NAME_MAX] = malloc((size_t)n * SCH_NAME_MAX);
	if (!before)
		return -1;
	for (int i = 0; i < n; i++)
		snprintf(before[i], SCH_NAME_MAX, "%s", st->stages[i].name);
	int r = make(st, a, b) ? -1 : new_stage(st, before, n);
	free(before);
	return r;
}

int sk_do_cache_write(sch_state *st, const char *stage, const char *scope)
{
	return sch_cache_write(st, stage, scope);
}

/* Fill "n" with the live spatial and reduction iters of stage "s", in
 * nest order; -1 when there are more than MAX_AXES of one kind. */
int sk_nest_of(const sch_state *st, int s, sk_nest *n)
{
	const sch_stage *ss = &st->stages[s];
	n->nspatial = n->nreduce = 0;
	for (int i = 0; i < ss->nleaves; i++) {
		int it = ss->leaves[i];
		if (ss->iters[it].reduce) {
			if (n->nreduce == MAX_AXES)
				return -1;
			n->reduce[n->nreduce++] = it;
		} else {
			if (n->nspatial == MAX_AXES)
				return -1;
			n->spatial[n->nspatial++] = it;
		}
	}
	return 0;
}

/* Drop the spatial loops of extent 1 from "n": tiling leaves them where
 * they are. */
void sk_drop_unit_loops(const sch_state *st, int s, sk_nest *n)
{
	int k = 0;
	for (int d = 0; d < n->nspatial; d++)
		if (st->stages[s].iters[n->spatial[d]].extent > 1)
			n->spatial[k++] = n->spatial[d];
	n->nspatial = k;
}

void sk_inline_elementwise(const tune_space *sp, sch_state *st, uint64_t *rng, bool *skip)
{
	for (int i = 0; i < sp->nstages; i++) {
		const stage_info *in = &sp->info[i];
		if (in->role != ROLE_INLINE || (in->inline_optional && sk_chance(rng, 50)))
			continue;
		if (sch_compute_inline(st, in->name) == 0)
			skip[i] = true;
		else
			tessel_ctx_clear_error(st->ctx);
	}
}
