/* Shared memory: the rules a stage in scope "shared" computed at a loop
 * must keep, checked by every primitive that may break them (compute_at,
 * bind, split, fuse, reorder, compute_inline, storage_align) and again
 * by lowering.
 *
 * A shared buffer is one per block: the threads of the block compute
 * the stage together (its split-inner loops bound to threadIdx share
 * the copy out; along a thread index it does not bind, only the threads
 * of index 0 take part: schedule/lower.c), a barrier follows
 * (ir/loop_barriers.c), then the threads read it.  So the region must be the same for every thread of the block:
 * computed at a loop of a root stage inside a block loop and outside
 * the thread loops, as TVM's cooperative fetching. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/region.h"

/* Raise "threads" (per index x, y, z) to the extents of the thread loops
 * of "s". */
static void gather_threads(const sch_stage *s, int64_t *threads)
{
	for (int p = 0; p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[s->leaves[p]];
		if (!sch_kind_is_thread(t->kind))
			continue;
		int d = t->kind - LOOP_THREAD_X;
		if (t->extent > threads[d])
			threads[d] = t->extent;
	}
}

/* Return whether a live loop of "c" is bound to "kind". */
static bool binds(const sch_stage *c, int kind)
{
	for (int p = 0; p < c->nleaves; p++)
		if ((int)c->iters[c->leaves[p]].kind == kind)
			return true;
	return false;
}

/* Return the bytes of the buffer of stage "si" computed at nest position
 * "pos" of the root stage "ci" (its region, padded by storage_align), or
 * -1 with a refusal. */
static int64_t shared_bytes(sch_state *st, int si, int ci, int pos)
{
	sch_region r;
	if (sch_region_compute(st, si, &st->stages[ci], false, pos, &r))
		return -1;
	const sch_stage *s = &st->stages[si];
	int64_t strides[TESSEL_MAX_DIMS], span = 1;
	sch_buffer_strides(s, r.shape, strides);
	for (int d = 0; d < s->te->ndim; d++)
		span += (r.shape[d] - 1) * strides[d];
	sch_region_free(&r);
	return span * (int64_t)tessel_dtype_size(s->te->dtype);
}

/* Check where the shared stage "si" is computed, and its own loops. */
static int check_place(sch_state *st, int si, const char *what)
{
	const sch_stage *s = &st->stages[si];
	const sch_stage *c = &st->stages[s->attach_stage];
	const char *loop = c->iters[s->attach_iter].name;
	if (c->attach != SCH_ROOT)
		return sch_refuse(st, "%s: shared stage '%s' is computed at %s.%s, but "
			"'%s' is not at the root; shared memory belongs to a block of a "
			"root stage's kernel", what, s->name, c->name, loop, c->name);
	if (s->te->reduce != TESSEL_REDUCE_NONE)
		return sch_refuse(st, "%s: shared stage '%s' is a reduction; the threads "
			"of a block would update the same elements (cross-thread "
			"reductions are not supported yet)", what, s->name);
	int pos = sch_leaf_pos(c, s->attach_iter);
	bool in_block = false;
	for (int p = 0; p <= pos; p++) {
		const sch_iter *t = &c->iters[c->leaves[p]];
		in_block |= sch_kind_is_block(t->kind);
		if (sch_kind_is_thread(t->kind))
			return sch_refuse(st, "%s: shared stage '%s' would be computed at "
				"%s.%s, inside the thread loop %s.%s; the threads of a block "
				"fill shared memory together, outside threadIdx loops", what,
				s->name, c->name, loop, c->name, t->name);
	}
	if (!in_block)
		return sch_refuse(st, "%s: shared stage '%s' is computed at %s.%s, which "
			"is not inside a loop bound to blockIdx; shared memory belongs to "
			"a block", what, s->name, c->name, loop);
	for (int p = 0; p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[s->leaves[p]];
		if (sch_kind_is_block(t->kind) ||
		    (sch_kind_is_thread(t->kind) && t->origin != SCH_SPLIT_INNER))
			return sch_refuse(st, "%s: loop %s.%s of shared stage '%s' is bound "
				"to %s; only inner loops of a split can be bound to threadIdx "
				"there", what, s->name, t->name, s->name, loop_kind_name(t->kind));
	}
	return 0;
}

/* Check the block of root stage "ci": its threads and the shared bytes of
 * the stages computed in it (and of its cross-thread reduction).  A shared stage binds only indices the root
 * stage binds too: along any other index every thread would run the root
 * stage's updates (a reduction would race with itself). */
static int check_block(sch_state *st, int ci, const char *what)
{
	const sch_stage *c = &st->stages[ci];
	int64_t threads[3] = { 1, 1, 1 }, bytes = 0;
	gather_threads(c, threads);
	for (int p = 0; p < c->nleaves; p++) {
		const sch_iter *t = &c->iters[c->leaves[p]];
		if (t->reduce && sch_kind_is_thread(t->kind))
			bytes += t->extent * (int64_t)tessel_dtype_size(c->te->dtype);
	}
	for (int si = 0; si < st->nstages; si++) {
		const sch_stage *s = &st->stages[si];
		if (s->scope != LOOP_SHARED || s->attach != SCH_AT || s->attach_stage != ci)
			continue;
		int64_t mine[3] = { 1, 1, 1 };
		gather_threads(s, mine);
		for (int d = 0; d < 3; d++) {
			if (mine[d] > 1 && !binds(c, LOOP_THREAD_X + d))
				return sch_refuse(st, "%s: shared stage '%s' binds %s, which "
					"'%s' does not bind; every thread along it would run the "
					"updates of '%s'", what, s->name,
					loop_kind_name((loop_kind)(LOOP_THREAD_X + d)), c->name, c->name);
			if (mine[d] > threads[d])
				threads[d] = mine[d];
		}
		int64_t b = shared_bytes(st, si, ci, sch_leaf_pos(c, s->attach_iter));
		if (b < 0)
			return -1;
		bytes += b;
	}
	if (threads[0] * threads[1] * threads[2] > SCH_MAX_THREADS)
		return sch_refuse(st, "%s: the kernel of '%s' would have %lld x %lld x %lld "
			"threads per block, more than %d", what, c->name,
			(long long)threads[0], (long long)threads[1], (long long)threads[2],
			SCH_MAX_THREADS);
	if (bytes > SCH_MAX_SHARED_BYTES)
		return sch_refuse(st, "%s: the blocks of '%s' would use %lld bytes of "
			"shared memory, more than %d", what, c->name, (long long)bytes,
			SCH_MAX_SHARED_BYTES);
	return 0;
}

int sch_check_shared(sch_state *st, const char *what)
{
	bool *holds = NULL;
	int rc = 0;
	for (int si = 0; si < st->nstages && rc == 0; si++) {
		const sch_stage *s = &st->stages[si];
		if (s->scope != LOOP_SHARED || s->attach != SCH_AT)
			continue;
		rc = check_place(st, si, what);
		if (!holds)
			holds = calloc((size_t)st->nstages + 1, sizeof(bool));
		holds[s->attach_stage] = true;
	}
	for (int ci = 0; holds && ci < st->nstages && rc == 0; ci++)
		if (holds[ci])
			rc = check_block(st, ci, what);
	free(holds);
	return rc;
}

void sch_shared_begin(const sch_state *st, sch_snapshot *snap)
{
	snap->stages = NULL;
	for (int si = 0; si < st->nstages; si++)
		if (st->stages[si].scope == LOOP_SHARED) {
			sch_snapshot_take(st, snap);
			return;
		}
}

int sch_shared_end(sch_state *st, sch_snapshot *snap, int rc, const char *what)
{
	if (!snap->stages)
		return rc;
	if (rc == 0 && sch_check_shared(st, what)) {
		sch_snapshot_restore(st, snap);
		return -1;
	}
	sch_snapshot_free(snap);
	return rc;
}
