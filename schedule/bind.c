/* bind: run the iterations of a loop on a GPU index: the blocks of the
 * grid (blockIdx.x|y|z), the threads of a block (threadIdx.x|y|z), or
 * virtual threads (vthread: serial inside each thread).
 *
 * requires: a live serial loop of a stage computed at the root (or, for
 *   threadIdx, the inner loop of a split of a stage in shared memory
 *   computed at a loop: a cooperative fetch, schedule/shared.c); the loop
 *   carries no dependence (ISL) and is made of spatial axes, or it is
 *   made of reduction axes and bound to threadIdx: a cross-thread
 *   reduction, when it is the first reduction loop of a root stage with
 *   only spatial loops, none bound to threadIdx, outside it and only
 *   serial reduction loops inside it (lowering: per-thread partials, a
 *   tree in shared memory); the
 *   index is not bound already in the stage; thread loops lie inside
 *   every block loop; at most SCH_MAX_THREADS threads per block; no stage
 *   computed after a loop of the stage (reverse_compute_at) outside it
 * guarantees: the loop is marked with the index; lowering keeps the mark
 *   (on the initialization loops of a reduction too), the GPU dialects
 *   run one block or thread per iteration, and CPU C refuses it */
#include <stdio.h>
#include <string.h>

#include "schedule/bound.h"
#include "schedule/guard.h"
#include "schedule/primitives.h"
#include "schedule/trace.h"

int sch_refuse_if_carried(sch_state *st, int si, int pos, const char *what,
	const char *loop);

bool sch_kind_is_block(loop_kind k)
{
	return k == LOOP_BLOCK_X || k == LOOP_BLOCK_Y || k == LOOP_BLOCK_Z;
}

bool sch_kind_is_thread(loop_kind k)
{
	return k == LOOP_THREAD_X || k == LOOP_THREAD_Y || k == LOOP_THREAD_Z;
}

static bool kind_is_bound(loop_kind k)
{
	return sch_kind_is_block(k) || sch_kind_is_thread(k);
}

bool sch_stage_has_bound(const sch_stage *s)
{
	for (int p = 0; p < s->nleaves; p++)
		if (kind_is_bound(s->iters[s->leaves[p]].kind))
			return true;
	return false;
}

/* Return the position of iter "it" in "leaves" of "n" loops, or -1. */
static int position_in(const int *leaves, int n, int it)
{
	for (int p = 0; p < n; p++)
		if (leaves[p] == it)
			return p;
	return -1;
}

/* Refuse the nest "leaves" of stage "si" when a reduction loop bound to a
 * thread index (a cross-thread reduction, schedule/lower.c) is not the
 * first reduction loop with only spatial loops and no thread loop
 * outside it and only serial reduction loops inside it, or a stage is
 * computed after a loop inside it. */
static int check_cross_thread(sch_state *st, int si, const int *leaves,
	const char *what)
{
	const sch_stage *s = &st->stages[si];
	int red = -1;
	for (int p = 0; p < s->nleaves && red < 0; p++) {
		const sch_iter *t = &s->iters[leaves[p]];
		if (t->reduce && sch_kind_is_thread(t->kind))
			red = p;
	}
	for (int p = 0; red >= 0 && p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[leaves[p]];
		const char *why = NULL;
		if (p < red && t->reduce)
			why = "a reduction loop outside it";
		else if (p < red && sch_kind_is_thread(t->kind))
			why = "a thread loop outside it";
		else if (p > red && !t->reduce)
			why = "a spatial loop inside it";
		else if (p > red && t->kind != LOOP_SERIAL && t->kind != LOOP_UNROLLED)
			why = "a bound or parallel loop inside it";
		for (int k = 0; !why && p >= red && k < st->nstages; k++)
			if (st->stages[k].attach == SCH_AFTER && st->stages[k].attach_stage == si &&
			    st->stages[k].attach_iter == leaves[p])
				why = "a stage computed after a loop inside it";
		if (why)
			return sch_refuse(st, "%s: the cross-thread reduction over %s.%s would "
				"have %s (%s.%s); it must be the first reduction loop, with only "
				"spatial loops, none of them bound to threadIdx, outside it",
				what, s->name, s->iters[leaves[red]].name, why, s->name, t->name);
	}
	return 0;
}

int sch_check_bound_nest(sch_state *st, int si, const int *leaves,
	const char *what)
{
	const sch_stage *s = &st->stages[si];
	if (check_cross_thread(st, si, leaves, what))
		return -1;
	int last_block = -1, first_thread = -1, last_bound = -1;
	for (int p = 0; p < s->nleaves; p++) {
		loop_kind k = s->iters[leaves[p]].kind;
		if (sch_kind_is_block(k))
			last_block = p;
		if (sch_kind_is_thread(k) && first_thread < 0)
			first_thread = p;
		if (kind_is_bound(k))
			last_bound = p;
	}
	if (first_thread >= 0 && last_block > first_thread)
		return sch_refuse(st, "%s: thread loop %s.%s would enclose block loop "
			"%s.%s; threadIdx loops go inside blockIdx loops", what, s->name,
			s->iters[leaves[first_thread]].name, s->name,
			s->iters[leaves[last_block]].name);
	for (int k = 0; k < st->nstages; k++) {
		const sch_stage *c = &st->stages[k];
		if (c->attach != SCH_AFTER || c->attach_stage != si)
			continue;
		int q = position_in(leaves, s->nleaves, c->attach_iter);
		if (q < last_bound)
			return sch_refuse(st, "%s: '%s' is computed after %s.%s, outside "
				"the bound loop %s.%s (it would read what other blocks or "
				"threads write)", what, c->name, s->name,
				s->iters[c->attach_iter].name, s->name,
				s->iters[leaves[last_bound]].name);
	}
	return 0;
}

/* Return the loop kind named "axis", or LOOP_KIND_COUNT. */
static loop_kind parse_axis(const char *axis)
{
	for (int k = LOOP_BLOCK_X; k <= LOOP_VTHREAD; k++)
		if (strcmp(axis, loop_kind_name((loop_kind)k)) == 0)
			return (loop_kind)k;
	return LOOP_KIND_COUNT;
}

/* Refuse binding loop "it" of "s" to "kind" when the index is bound in
 * the stage already or the block would have too many threads. */
static int check_index(sch_state *st, const sch_stage *s, int it, loop_kind kind,
	const char *what)
{
	int64_t threads = sch_kind_is_thread(kind) ? s->iters[it].extent : 1;
	for (int p = 0; p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[s->leaves[p]];
		if (s->leaves[p] == it)
			continue;
		if (t->kind == kind && kind != LOOP_VTHREAD)
			return sch_refuse(st, "%s: %s.%s is already bound to %s", what,
				s->name, t->name, loop_kind_name(kind));
		if (sch_kind_is_thread(t->kind) && sch_kind_is_thread(kind))
			threads *= t->extent;
	}
	if (threads > SCH_MAX_THREADS)
		return sch_refuse(st, "%s: %lld threads per block is more than %d",
			what, (long long)threads, SCH_MAX_THREADS);
	if (sch_kind_is_block(kind) && s->iters[it].extent > 2147483647)
		return sch_refuse(st, "%s: %lld blocks is more than 2^31 - 1", what,
			(long long)s->iters[it].extent);
	return 0;
}

/* Return whether "kind" binds a loop of "s" for a cooperative fetch: "s"
 * is in shared memory at a loop of its consumer, and the threads of the
 * block compute it together (schedule/shared.c checks the rest). */
static bool cooperative(const sch_stage *s, loop_kind kind)
{
	return s->attach == SCH_AT && s->scope == LOOP_SHARED &&
	       sch_kind_is_thread(kind);
}

static int bind_unchecked(sch_state *st, const char *loop, const char *axis)
{
	int si, it;
	char what[256];
	snprintf(what, sizeof(what), "bind %s %s", loop, axis);
	loop_kind kind = parse_axis(axis);
	if (kind == LOOP_KIND_COUNT)
		return sch_refuse(st, "%s: unknown index '%s' (blockIdx.x, blockIdx.y, "
			"blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z or vthread)",
			what, axis);
	if (sch_find_loop(st, loop, &si, &it))
		return -1;
	sch_stage *s = &st->stages[si];
	if (s->attach == SCH_INLINE)
		return sch_refuse(st, "%s: '%s' is inlined", what, s->name);
	if (s->attach != SCH_ROOT && !cooperative(s, kind))
		return sch_refuse(st, "%s: '%s' is computed inside '%s'; only loops of "
			"stages at the root, and threadIdx for stages in shared memory, "
			"can be bound", what, s->name, st->stages[s->attach_stage].name);
	if (s->iters[it].kind != LOOP_SERIAL)
		return sch_refuse(st, "%s: the loop is already %s", what,
			loop_kind_name(s->iters[it].kind));
	bool cross = s->iters[it].reduce && sch_kind_is_thread(kind) &&
		s->attach == SCH_ROOT;
	if (s->iters[it].reduce && !cross)
		return sch_refuse(st, "%s: %s is a reduction loop; only threadIdx can "
			"bind one (a cross-thread reduction)", what, loop);
	if (check_index(st, s, it, kind, what) ||
	    (!cross && sch_refuse_if_carried(st, si, sch_leaf_pos(s, it), "bind", loop)))
		return -1;
	s->iters[it].kind = kind;
	if (sch_check_bound_nest(st, si, s->leaves, what)) {
		s->iters[it].kind = LOOP_SERIAL;
		return -1;
	}
	sch_step step;
	sch_step_init(&step, "bind");
	sch_step_arg(&step, "%s", loop);
	sch_step_arg(&step, "%s", axis);
	sch_trace_append(st->trace, &step);
	return 0;
}

/* The primitive, undone when it breaks the shared-memory rules
 * (schedule/shared.c). */
int sch_bind(sch_state *st, const char *loop, const char *axis)
{
	char what[256];
	sch_snapshot snap;
	snprintf(what, sizeof(what), "bind %s %s", loop, axis);
	sch_guard_begin(st, &snap);
	return sch_guard_end(st, &snap, bind_unchecked(st, loop, axis), what);
}
