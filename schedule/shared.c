/* Shared memory: the rules a stage in scope "shared" computed at a loop
 * must keep, checked by every primitive that may break them (compute_at,
 * compute_root, reverse_compute_at, bind, split, fuse, reorder,
 * compute_inline, storage_align) and again by lowering.
 *
 * A shared buffer is one per block: the threads of the block compute
 * the stage together (its split-inner loops bound to threadIdx share
 * the copy out; along a thread index it does not bind, only the threads
 * of index 0 take part: schedule/lower.c), a barrier follows
 * (ir/loop_barriers.c), then the threads read it.  So the region must
 * be the same for every thread of the block, and every thread must
 * reach the barriers.  Two places keep both:
 *
 *   - a loop of a root stage inside a block loop and outside the thread
 *     loops (TVM's cooperative fetching);
 *   - a loop of a stage X computed at a loop of a root stage R inside a
 *     block loop, also inside R's thread loops (TVM's matmul: the
 *     register accumulator C_local at C's thread loop, A_shared at
 *     C_local's outer reduction loop).  The region is then the union of
 *     what every thread's X needs (schedule/region.c, sch_region_block),
 *     and R's thread loops around X must span the block along their index
 *     (unguarded), so that every thread runs X's loops, all of constant
 *     trip counts, and meets the barriers in them.
 *
 * R, the root stage whose kernel holds the buffer, is the block's owner:
 * its thread loops and those of its shared stages set the block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/strbuf.h"
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

static int64_t compute_shared_bytes(sch_state *st, int si);

/* ---- remembered footprints ----------------------------------------------- */

/* The footprint of a shared stage is a function of the stages that read
 * it (transitively), the stages they and it are computed at, and its own
 * placement and alignment, never of its own loops nor of stages outside
 * those.  Primitives on a shared stage's loops (the cooperative fetch:
 * splits, fuses, binds) or on another shared stage leave that text the
 * same, so each guard after them would compute the same region with ISL
 * again; the memo keeps each footprint under the exact text of what it
 * depends on (compared whole, not by hash). */
typedef struct memo_entry {
	char *key;
	size_t len;
	int64_t bytes;
} memo_entry;

struct sch_shared_memo {
	int n, cap;
	memo_entry *entries;
};

void sch_shared_memo_clear(sch_state *st)
{
	sch_shared_memo *m = st->shared_memo;
	if (!m)
		return;
	for (int i = 0; i < m->n; i++)
		free(m->entries[i].key);
	free(m->entries);
	free(m);
	st->shared_memo = NULL;
}

/* Mark in "in" the stages the footprint of "si" depends on: its readers,
 * theirs, and the stages any of them is computed at, to a fixpoint. */
static void dependencies(const sch_state *st, int si, bool *in)
{
	in[si] = true;
	for (bool grew = true; grew;) {
		grew = false;
		for (int k = 0; k < st->nstages; k++) {
			if (in[k])
				continue;
			for (int r = 0; r < st->nstages && !in[k]; r++)
				if (in[r] && (sch_reads(st, k, r) ||
					(st->stages[r].attach == SCH_AT && st->stages[r].attach_stage == k) ||
					(st->stages[r].attach == SCH_AFTER && st->stages[r].attach_stage == k)))
					in[k] = grew = true;
		}
	}
}

/* Append the placement of stage "s" to "sb" (which op stage it is goes
 * without saying: the memo is cleared whenever the op is replaced). */
static void put_placement(te_strbuf *sb, const sch_stage *s)
{
	te_sb_printf(sb, "%d %d %d %d %d |", (int)s->attach, s->attach_stage,
		s->attach_iter, (int)s->scope, s->init_iter);
	for (int d = 0; d < TESSEL_MAX_DIMS; d++)
		te_sb_printf(sb, " %lld/%lld", (long long)s->align_factor[d],
			(long long)s->align_offset[d]);
}

/* Append the loops of stage "s" to "sb". */
static void put_loops(te_strbuf *sb, const sch_stage *s)
{
	te_sb_printf(sb, " leaves");
	for (int p = 0; p < s->nleaves; p++)
		te_sb_printf(sb, " %d", s->leaves[p]);
	for (int i = 0; i < s->niters; i++) {
		const sch_iter *t = &s->iters[i];
		te_sb_printf(sb, "; %s %lld %d%d %d %d %d %d %d %d %d %lld %d %d %d %d %s %d",
			t->name, (long long)t->extent, t->reduce, t->leaf, (int)t->origin, t->axis,
			t->parent, t->split_outer, t->split_inner, t->outer, t->inner,
			(long long)t->factor, t->fused_into, (int)t->kind, t->unroll_limit,
			t->dot_group, t->prefetch, t->prefetch_distance);
	}
}

/* Write into "sb" the text of what the footprint of "si" depends on. */
static void memo_key(const sch_state *st, int si, te_strbuf *sb)
{
	bool *in = calloc((size_t)st->nstages + 1, sizeof(bool));
	if (!in)
		return;
	dependencies(st, si, in);
	te_sb_printf(sb, "%d:", si);
	for (int k = 0; k < st->nstages; k++) {
		if (!in[k])
			continue;
		te_sb_printf(sb, "\n%d ", k);
		put_placement(sb, &st->stages[k]);
		if (k != si)
			put_loops(sb, &st->stages[k]);
	}
	free(in);
}

/* Return the remembered footprint under "key", or -1. */
static int64_t memo_find(const sch_state *st, const char *key, size_t len)
{
	const sch_shared_memo *m = st->shared_memo;
	for (int i = 0; m && i < m->n; i++)
		if (m->entries[i].len == len && memcmp(m->entries[i].key, key, len) == 0)
			return m->entries[i].bytes;
	return -1;
}

/* Remember "bytes" under "key" (nothing when out of memory). */
static void memo_add(sch_state *st, const char *key, size_t len, int64_t bytes)
{
	if (!st->shared_memo && !(st->shared_memo = calloc(1, sizeof(*st->shared_memo))))
		return;
	sch_shared_memo *m = st->shared_memo;
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 16;
		memo_entry *e = realloc(m->entries, sizeof(*e) * (size_t)cap);
		if (!e)
			return;
		m->entries = e;
		m->cap = cap;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, key, len + 1);
	m->entries[m->n++] = (memo_entry){ copy, len, bytes };
}

/* Return the footprint of "si" remembered under what it depends on now
 * (its key, left in "key"), or -1. */
static int64_t remembered(const sch_state *st, int si, te_strbuf *key)
{
	memo_key(st, si, key);
	const char *text = te_sb_str(key);
	return text[0] ? memo_find(st, text, strlen(text)) : -1;
}

int sch_shared_memo_check(sch_state *st, int *held)
{
	int differ = 0;
	for (int si = 0; si < st->nstages; si++) {
		if (st->stages[si].scope != LOOP_SHARED || st->stages[si].attach != SCH_AT)
			continue;
		te_strbuf key = { 0 };
		int64_t bytes = remembered(st, si, &key);
		te_sb_free(&key);
		if (bytes < 0)
			continue;
		(*held)++;
		int64_t fresh = compute_shared_bytes(st, si);
		if (fresh < 0)
			return -1;
		differ += fresh != bytes;
	}
	return differ;
}

/* ---- the rules ----------------------------------------------------------- */

/* Return the bytes of the buffer of the shared stage "si" (its region,
 * padded by storage_align), remembered or computed, or -1 with a
 * refusal. */
static int64_t shared_bytes(sch_state *st, int si)
{
	te_strbuf key = { 0 };
	int64_t bytes = remembered(st, si, &key);
	const char *text = te_sb_str(&key);
	if (bytes < 0 && (bytes = compute_shared_bytes(st, si)) >= 0 && text[0])
		memo_add(st, text, strlen(text), bytes);
	te_sb_free(&key);
	return bytes;
}

/* Compute what shared_bytes returns. */
static int64_t compute_shared_bytes(sch_state *st, int si)
{
	const sch_stage *s = &st->stages[si];
	const sch_stage *c = &st->stages[s->attach_stage];
	int pos = sch_leaf_pos(c, s->attach_iter);
	sch_region r;
	if (c->attach == SCH_ROOT) {
		if (sch_region_compute(st, si, c, false, pos, &r))
			return -1;
	} else {
		sch_stage eff;
		if (sch_region_effective(st, s->attach_stage, &eff))
			return -1;
		int rc = sch_region_block(st, si, &eff, pos, &r);
		free(eff.iters);
		if (rc)
			return -1;
	}
	int64_t strides[TESSEL_MAX_DIMS], span = 1;
	sch_buffer_strides(s, r.shape, strides);
	for (int d = 0; d < s->te->ndim; d++)
		span += (r.shape[d] - 1) * strides[d];
	sch_region_free(&r);
	return span * (int64_t)tessel_dtype_size(sch_buffer_dtype(s->te));
}

int sch_shared_owner(const sch_state *st, int si)
{
	const sch_stage *s = &st->stages[si];
	const sch_stage *c = &st->stages[s->attach_stage];
	if (c->attach == SCH_ROOT)
		return s->attach_stage;
	if (c->attach == SCH_AT && st->stages[c->attach_stage].attach == SCH_ROOT)
		return c->attach_stage;
	return -1;
}

/* Return the nest position in the owner "r" of the loop that holds the
 * shared stage "s": its attach loop, or that of the stage it is computed
 * in. */
static int owner_pos(const sch_state *st, const sch_stage *s, const sch_stage *r)
{
	const sch_stage *c = &st->stages[s->attach_stage];
	return sch_leaf_pos(r, c->attach == SCH_ROOT ? s->attach_iter : c->attach_iter);
}

/* Check where the shared stage "si" is computed, and its own loops. */
static int check_place(sch_state *st, int si, const char *what)
{
	const sch_stage *s = &st->stages[si];
	const sch_stage *c = &st->stages[s->attach_stage];
	const char *loop = c->iters[s->attach_iter].name;
	int ri = sch_shared_owner(st, si);
	if (ri < 0)
		return sch_refuse(st, "%s: shared stage '%s' is computed at %s.%s, but "
			"'%s' is neither at the root nor computed at a loop of a stage at "
			"the root; shared memory belongs to a block of a root stage's "
			"kernel", what, s->name, c->name, loop, c->name);
	const sch_stage *r = &st->stages[ri];
	bool nested = ri != s->attach_stage;
	if (nested && (c->scope == LOOP_SHARED || sch_stage_has_bound(c)))
		return sch_refuse(st, "%s: shared stage '%s' is computed at %s.%s, but "
			"'%s' is %s; a shared stage is computed at a loop of a root stage "
			"or of a private stage computed in one", what, s->name, c->name, loop,
			c->name, c->scope == LOOP_SHARED ? "in shared memory itself"
			: "fetched by bound loops");
	if (s->te->reduce != TESSEL_REDUCE_NONE)
		return sch_refuse(st, "%s: shared stage '%s' is a reduction; the threads "
			"of a block would update the same elements (cross-thread "
			"reductions are not supported yet)", what, s->name);
	int pos = owner_pos(st, s, r);
	bool in_block = false;
	for (int p = 0; p <= pos; p++) {
		const sch_iter *t = &r->iters[r->leaves[p]];
		in_block |= sch_kind_is_block(t->kind);
		if (!nested && sch_kind_is_thread(t->kind))
			return sch_refuse(st, "%s: shared stage '%s' would be computed at "
				"%s.%s, inside the thread loop %s.%s; the threads of a block "
				"fill shared memory together, outside threadIdx loops (or "
				"inside them at a loop of a stage computed there)", what,
				s->name, c->name, loop, c->name, t->name);
	}
	if (!in_block)
		return sch_refuse(st, "%s: shared stage '%s' is computed at %s.%s, which "
			"is not inside a loop bound to blockIdx; shared memory belongs to "
			"a block", what, s->name, c->name, loop);
	for (int p = 0; nested && p < r->nleaves; p++) {
		const sch_iter *t = &r->iters[r->leaves[p]];
		if (t->reduce && sch_kind_is_thread(t->kind))
			return sch_refuse(st, "%s: shared stage '%s' is computed inside "
				"'%s', whose kernel reduces across threads (%s.%s); a shared "
				"stage there must be computed at a loop of '%s' itself", what,
				s->name, r->name, r->name, t->name, r->name);
	}
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

/* Check that the thread loops of the owner "r" around the shared stage
 * "si", computed inside them, span the block ("threads" per index): a
 * shorter one is guarded, and the threads past it would miss the
 * barriers of the stage. */
static int check_uniform(sch_state *st, int si, const sch_stage *r, const int64_t *threads,
	const char *what)
{
	const sch_stage *s = &st->stages[si];
	int pos = owner_pos(st, s, r);
	for (int p = 0; p <= pos; p++) {
		const sch_iter *t = &r->iters[r->leaves[p]];
		if (!sch_kind_is_thread(t->kind))
			continue;
		int64_t n = threads[t->kind - LOOP_THREAD_X];
		if (t->extent < n)
			return sch_refuse(st, "%s: shared stage '%s' is computed inside %s.%s, "
				"bound to %s with %lld iterations, but the block has %lld "
				"threads along it; the threads past %lld would skip the loop "
				"and miss the barriers around '%s'", what, s->name, r->name,
				t->name, loop_kind_name(t->kind), (long long)t->extent,
				(long long)n, (long long)t->extent, s->name);
	}
	return 0;
}

/* Check the block of root stage "ci": its threads and the shared bytes of
 * the stages computed in it (and of its cross-thread reduction), and the
 * thread loops around the shared stages computed inside them.  A shared
 * stage binds only indices the root stage binds too: along any other
 * index every thread would run the root stage's updates (a reduction
 * would race with itself). */
static int check_block(sch_state *st, int ci, const char *what)
{
	const sch_stage *c = &st->stages[ci];
	int64_t threads[3] = { 1, 1, 1 }, bytes = 0;
	gather_threads(c, threads);
	for (int p = 0; p < c->nleaves; p++) {
		const sch_iter *t = &c->iters[c->leaves[p]];
		if (t->reduce && sch_kind_is_thread(t->kind))
			bytes += t->extent * (int64_t)tessel_dtype_size(sch_buffer_dtype(c->te));
	}
	for (int si = 0; si < st->nstages; si++) {
		const sch_stage *s = &st->stages[si];
		if (s->scope != LOOP_SHARED || s->attach != SCH_AT ||
		    sch_shared_owner(st, si) != ci)
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
		int64_t b = shared_bytes(st, si);
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
	for (int si = 0; si < st->nstages; si++) {
		const sch_stage *s = &st->stages[si];
		if (s->scope == LOOP_SHARED && s->attach == SCH_AT && s->attach_stage != ci &&
		    sch_shared_owner(st, si) == ci && check_uniform(st, si, c, threads, what))
			return -1;
	}
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
		if (rc == 0)
			holds[sch_shared_owner(st, si)] = true;
	}
	for (int ci = 0; holds && ci < st->nstages && rc == 0; ci++)
		if (holds[ci])
			rc = check_block(st, ci, what);
	free(holds);
	return rc;
}
