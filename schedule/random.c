/* Random schedules: random primitive calls with random decisions, legal or
 * not.  Refused calls leave the state unchanged, so what remains is a
 * random legal trace: the compiler's equivalent of SQLite's
 * fuzzinvariants (every such schedule must compute what the interpreter
 * computes). */
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/gpu_default.h"
#include "schedule/primitives.h"
#include "schedule/random.h"
#include "schedule/trace.h"

uint64_t sch_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int64_t below(uint64_t *rng, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(sch_rng_next(rng) % (uint64_t)n);
}

/* Write the qualified name of a random live loop of stage "s" into "buf";
 * return its nest position, or -1 when the stage has no loops. */
static int random_loop(const sch_state *st, int s, uint64_t *rng, char *buf,
	size_t len)
{
	const sch_stage *ss = &st->stages[s];
	if (ss->nleaves == 0)
		return -1;
	int pos = (int)below(rng, ss->nleaves);
	snprintf(buf, len, "%s.%s", ss->name, ss->iters[ss->leaves[pos]].name);
	return pos;
}

static void loop_at(const sch_state *st, int s, int pos, char *buf, size_t len)
{
	const sch_stage *ss = &st->stages[s];
	snprintf(buf, len, "%s.%s", ss->name, ss->iters[ss->leaves[pos]].name);
}

/* A factor for a loop of extent "n": often a divisor, sometimes not. */
static int64_t random_factor(uint64_t *rng, int64_t n)
{
	int64_t f = 1 + below(rng, n < 64 ? n : 64);
	if (below(rng, 3) == 0)
		return f;
	while (f > 1 && n % f)
		f--;
	return f;
}

static int try_split(sch_state *st, int s, uint64_t *rng)
{
	char loop[160];
	int pos = random_loop(st, s, rng, loop, sizeof(loop));
	if (pos < 0)
		return -1;
	int64_t n = st->stages[s].iters[st->stages[s].leaves[pos]].extent;
	bool nparts = below(rng, 4) == 0;
	return sch_split(st, loop, random_factor(rng, n), nparts, NULL, NULL);
}

static int try_fuse(sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	if (ss->nleaves < 2)
		return -1;
	int pos = (int)below(rng, ss->nleaves - 1);
	char a[160], b[160];
	loop_at(st, s, pos, a, sizeof(a));
	loop_at(st, s, pos + 1, b, sizeof(b));
	return sch_fuse(st, a, b, NULL);
}

static int try_reorder(sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	int n = ss->nleaves < SCH_MAX_ARGS ? ss->nleaves : SCH_MAX_ARGS;
	if (n < 2)
		return -1;
	char names[SCH_MAX_ARGS][160];
	const char *order[SCH_MAX_ARGS];
	for (int i = 0; i < n; i++)
		loop_at(st, s, i, names[i], sizeof(names[i]));
	for (int i = n - 1; i > 0; i--) {
		int j = (int)below(rng, i + 1);
		char tmp[160];
		memcpy(tmp, names[i], sizeof(tmp));
		memcpy(names[i], names[j], sizeof(tmp));
		memcpy(names[j], tmp, sizeof(tmp));
	}
	int k = 2 + (int)below(rng, n - 1);
	for (int i = 0; i < k; i++)
		order[i] = names[i];
	return sch_reorder(st, k, order);
}

static int try_tile(sch_state *st, int s, uint64_t *rng)
{
	char a[160], b[160];
	int pa = random_loop(st, s, rng, a, sizeof(a));
	int pb = random_loop(st, s, rng, b, sizeof(b));
	if (pa < 0 || pb < 0)
		return -1;
	const sch_stage *ss = &st->stages[s];
	return sch_tile(st, a, b,
		random_factor(rng, ss->iters[ss->leaves[pa]].extent),
		random_factor(rng, ss->iters[ss->leaves[pb]].extent));
}

static int try_annotation(sch_state *st, int s, uint64_t *rng, int which)
{
	char loop[160];
	int pos = random_loop(st, s, rng, loop, sizeof(loop));
	if (pos < 0)
		return -1;
	if (which == 0)
		return sch_parallel(st, loop);
	if (which == 1) {
		loop_at(st, s, st->stages[s].nleaves - 1, loop, sizeof(loop));
		return sch_vectorize(st, loop);
	}
	if (which == 2)
		return sch_unroll(st, loop);
	return sch_annotate(st, loop, "auto_unroll_max_step", 16 << below(rng, 4));
}

/* compute_at at a random loop, or (mostly) at the loop where a
 * stage that reads "s" is computed, to serve it and the stage there, or
 * (a third of those times) at a loop of the same stage around that one. */
static int try_compute_at(sch_state *st, int s, uint64_t *rng)
{
	char loop[160];
	int readers[64], n = 0;
	for (int k = 0; k < st->nstages && n < 64; k++)
		if (k != s && st->stages[k].attach == SCH_AT && sch_reads(st, k, s))
			readers[n++] = k;
	if (n > 0 && below(rng, 4)) {
		const sch_stage *ks = &st->stages[readers[below(rng, (uint64_t)n)]];
		const sch_stage *cs = &st->stages[ks->attach_stage];
		int pos = sch_leaf_pos(cs, ks->attach_iter);
		if (pos > 0 && below(rng, 3) == 0)
			pos = (int)below(rng, (uint64_t)pos);
		snprintf(loop, sizeof(loop), "%s.%s", cs->name, cs->iters[cs->leaves[pos]].name);
		return sch_compute_at(st, st->stages[s].name, loop);
	}
	int k = (int)below(rng, st->nstages);
	if (random_loop(st, k, rng, loop, sizeof(loop)) < 0)
		return -1;
	return sch_compute_at(st, st->stages[s].name, loop);
}

static int try_decompose(sch_state *st, int s, uint64_t *rng)
{
	char loop[160];
	if (random_loop(st, s, rng, loop, sizeof(loop)) < 0)
		return -1;
	return sch_decompose_reduction(st, st->stages[s].name, loop);
}

static const char *random_scope(uint64_t *rng)
{
	static const char *scopes[] = { "local", "global", "shared" };
	return scopes[below(rng, 3)];
}

/* cache_read of a random tensor (input or stage) for one of its readers. */
static int try_cache_read(sch_state *st, int s, uint64_t *rng)
{
	const tessel_op *op = st->op;
	const tessel_stage *t = op->stages[below(rng, op->nstages)];
	const char *reader = st->stages[s].name;
	return sch_cache_read(st, t->name, random_scope(rng), 1, &reader);
}

/* storage_align of a random axis of a random stage. */
static int try_storage_align(sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	if (ss->te->ndim == 0)
		return -1;
	int64_t factor = 1 << below(rng, 6);
	char axis[160];
	snprintf(axis, sizeof(axis), "%s.%s", ss->name,
		ss->iters[below(rng, ss->te->ndim)].name);
	return sch_storage_align(st, axis, factor, below(rng, factor));
}

/* split_storage of a random axis of stage "s" by 2 or 4, then, half the
 * time, reorder_storage moving the inner part innermost (a layout of
 * groups, as the tuner packs inputs for dot_pairs and dot_quads). */
static int try_split_storage(sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	int n = ss->te->ndim;
	if (n == 0 || n >= TESSEL_MAX_DIMS)
		return -1;
	int d = (int)below(rng, n);
	const char *name = ss->te->axes[d]->name;
	char stage[SCH_NAME_MAX], axis[160], names[TESSEL_MAX_DIMS][160];
	snprintf(stage, sizeof(stage), "%s", ss->name);
	snprintf(axis, sizeof(axis), "%s.%s", stage, name);
	if (sch_split_storage(st, axis, 2 << below(rng, 2)))
		return -1;
	if (below(rng, 2))
		return 0;
	const tessel_stage *t = st->stages[sch_find_stage(st, stage)].te;
	const char *order[TESSEL_MAX_DIMS];
	for (int k = 0, o = 0; k < t->ndim; k++)
		if (k != d + 1)
			snprintf(names[o++], sizeof(names[0]), "%s.%s", stage, t->axes[k]->name);
	snprintf(names[t->ndim - 1], sizeof(names[0]), "%s.%s", stage, t->axes[d + 1]->name);
	for (int k = 0; k < t->ndim; k++)
		order[k] = names[k];
	sch_reorder_storage(st, t->ndim, order);
	return 0;
}

/* prefetch of a random input at a random loop of stage "s", 0 to 3
 * iterations ahead. */
static int try_prefetch(sch_state *st, int s, uint64_t *rng)
{
	const tessel_op *op = st->op;
	if (op->ninputs == 0)
		return -1;
	char loop[160];
	if (random_loop(st, s, rng, loop, sizeof(loop)) < 0)
		return -1;
	return sch_prefetch(st, loop, op->inputs[below(rng, op->ninputs)]->name,
		below(rng, 4));
}

/* Streaming stores of a random output of the op, on three times in four. */
static int try_stream(sch_state *st, uint64_t *rng)
{
	const tessel_op *op = st->op;
	if (op->noutputs == 0)
		return -1;
	return sch_stream(st, op->outputs[below(rng, op->noutputs)]->name,
		below(rng, 4) != 0);
}

int sch_random_step(sch_state *st, uint64_t *rng)
{
	int s = (int)below(rng, st->nstages);
	if (st->stages[s].attach == SCH_INLINE && below(rng, 4) != 0)
		return -1;
	switch (below(rng, 24)) {
	case 0: case 1: case 2: return try_split(st, s, rng);
	case 3: return try_fuse(st, s, rng);
	case 4: case 5: return try_reorder(st, s, rng);
	case 6: return try_tile(st, s, rng);
	case 7: return try_annotation(st, s, rng, 0);
	case 8: return try_annotation(st, s, rng, 1);
	case 9: return try_annotation(st, s, rng, 2 + (int)below(rng, 2));
	case 10: return sch_compute_inline(st, st->stages[s].name);
	case 11: return sch_compute_root(st, st->stages[s].name);
	case 12: return try_decompose(st, s, rng);
	case 13: return sch_cache_write(st, st->stages[s].name, random_scope(rng));
	case 14: return try_cache_read(st, s, rng);
	case 16: {
		int pidx = (int)below(rng, st->nstages);
		char loop[160];
		if (random_loop(st, pidx, rng, loop, sizeof(loop)) < 0)
			return -1;
		return sch_reverse_compute_at(st, st->stages[s].name, loop);
	}
	case 17: return try_storage_align(st, s, rng);
	case 22: return below(rng, 2) ? try_prefetch(st, s, rng) : try_stream(st, rng);
	case 23: return try_split_storage(st, s, rng);
	case 15: {
		char loop[160];
		if (random_loop(st, s, rng, loop, sizeof(loop)) < 0)
			return -1;
		return sch_rfactor(st, loop);
	}
	default: return try_compute_at(st, s, rng);
	}
}

int sch_random_schedule(sch_state *st, uint64_t seed, int attempts)
{
	uint64_t rng = seed;
	int applied = 0;
	for (int i = 0; i < attempts; i++)
		if (sch_random_step(st, &rng) == 0)
			applied++;
	tessel_ctx_clear_error(st->ctx);
	return applied;
}

/* bind of a random loop of stage "s": block and thread x most often. */
static int try_bind(sch_state *st, int s, uint64_t *rng)
{
	static const char *const axes[] = {
		"blockIdx.x", "threadIdx.x", "blockIdx.x", "threadIdx.x",
		"blockIdx.y", "threadIdx.y", "blockIdx.z", "threadIdx.z", "vthread"
	};
	char loop[160];
	if (random_loop(st, s, rng, loop, sizeof(loop)) < 0)
		return -1;
	return sch_bind(st, loop, axes[below(rng, sizeof(axes) / sizeof(*axes))]);
}

/* min_blocks_per_sm 1 to 4 on a random loop of stage "s" (refused
 * unless it is bound to a block index). */
static int try_min_blocks(sch_state *st, int s, uint64_t *rng)
{
	char loop[160];
	if (random_loop(st, s, rng, loop, sizeof(loop)) < 0)
		return -1;
	return sch_annotate(st, loop, "min_blocks_per_sm", 1 + (int64_t)below(rng, 4));
}

int sch_random_gpu_step(sch_state *st, uint64_t *rng)
{
	int64_t which = below(rng, 13);
	if (which < 4)
		return try_bind(st, (int)below(rng, st->nstages), rng);
	if (which == 4)
		return try_storage_align(st, (int)below(rng, st->nstages), rng);
	if (which == 5)
		return try_min_blocks(st, (int)below(rng, st->nstages), rng);
	return sch_random_step(st, rng);
}

/* Return the position of the first loop of stage "s" bound to a thread
 * index, or -1. */
static int first_thread_loop(const sch_stage *s)
{
	for (int p = 0; p < s->nleaves; p++) {
		loop_kind k = s->iters[s->leaves[p]].kind;
		if (k >= LOOP_THREAD_X && k <= LOOP_THREAD_Z)
			return p;
	}
	return -1;
}

/* Move the first reduction loop of the root stage "c" that follows its
 * thread loops in front of them, split by a random factor: the serial
 * loop that refills a shared tile. */
static void hoist_reduction(sch_state *st, const char *c, uint64_t *rng)
{
	int si = sch_find_stage(st, c);
	const sch_stage *s = &st->stages[si];
	int tx = first_thread_loop(s), r = tx;
	while (r >= 0 && r < s->nleaves && !s->iters[s->leaves[r]].reduce)
		r++;
	if (tx < 0 || r >= s->nleaves || r - tx + 1 > SCH_MAX_ARGS)
		return;
	char name[160], loops[SCH_MAX_ARGS][160];
	const char *order[SCH_MAX_ARGS];
	loop_at(st, si, r, name, sizeof(name));
	if (sch_split(st, name, random_factor(rng, s->iters[s->leaves[r]].extent),
			false, NULL, NULL))
		return;
	for (int p = tx; p <= r; p++) {
		loop_at(st, si, p == tx ? r : p - 1, loops[p - tx], sizeof(loops[0]));
		order[p - tx] = loops[p - tx];
	}
	sch_reorder(st, r - tx + 1, order);
}

/* Tile the first two loops of stage "si" (spatial, at the root) into
 * blocks of "ty" x "tx" threads; return 0, or -1 when it cannot. */
static int tile_2d(sch_state *st, int si, int64_t ty, int64_t tx)
{
	const sch_stage *s = &st->stages[si];
	if (s->attach != SCH_ROOT || s->nleaves < 2 || s->iters[s->leaves[0]].reduce ||
	    s->iters[s->leaves[1]].reduce)
		return -1;
	char a[160], b[160];
	loop_at(st, si, 0, a, sizeof(a));
	loop_at(st, si, 1, b, sizeof(b));
	if (sch_tile(st, a, b, ty, tx))
		return -1;
	static const char *const axes[] = { "blockIdx.y", "blockIdx.x", "threadIdx.y",
		"threadIdx.x" };
	for (int p = 0; p < 4; p++) {
		loop_at(st, si, p, a, sizeof(a));
		if (sch_bind(st, a, axes[p]))
			return -1;
	}
	return 0;
}

/* Return the extent of the loop of root stage "c" bound to "kind", or 1. */
static int64_t bound_extent(const sch_stage *c, loop_kind kind)
{
	for (int p = 0; p < c->nleaves; p++)
		if (c->iters[c->leaves[p]].kind == kind)
			return c->iters[c->leaves[p]].extent;
	return 1;
}

/* Fetch the shared stage "name" cooperatively: fuse its loops, split the
 * result by the consumer's threadIdx.x extent and bind the inner loop to
 * it, and the outer one likewise to threadIdx.y when the consumer has it;
 * half of the time first split off 2 or 4 elements each thread fetches in
 * a vectorized loop (dividing or not: the GPU printers make one vector
 * copy of it only where that is exact, codegen/gpu_c.c); sometimes pad a
 * row of it. */
static void cooperative_fetch(sch_state *st, const char *name, int c,
	uint64_t *rng)
{
	int64_t threads = bound_extent(&st->stages[c], LOOP_THREAD_X);
	int64_t rows = bound_extent(&st->stages[c], LOOP_THREAD_Y);
	char a[160], b[160];
	int si = sch_find_stage(st, name);
	while (st->stages[si].nleaves > 1) {
		loop_at(st, si, 0, a, sizeof(a));
		loop_at(st, si, 1, b, sizeof(b));
		if (sch_fuse(st, a, b, NULL))
			break;
	}
	int last = 1;
	if (below(rng, 2) == 0) {
		loop_at(st, si, st->stages[si].nleaves - 1, a, sizeof(a));
		if (sch_split(st, a, 2 << below(rng, 2), false, NULL, NULL) == 0) {
			loop_at(st, si, st->stages[si].nleaves - 1, a, sizeof(a));
			sch_vectorize(st, a);
			last = 2;
		}
	}
	if (below(rng, 4) != 0) {
		loop_at(st, si, st->stages[si].nleaves - last, a, sizeof(a));
		if (sch_split(st, a, threads, false, NULL, NULL) == 0) {
			loop_at(st, si, st->stages[si].nleaves - last, a, sizeof(a));
			sch_bind(st, a, "threadIdx.x");
			loop_at(st, si, st->stages[si].nleaves - last - 1, a, sizeof(a));
			if (rows > 1 && sch_split(st, a, rows, false, NULL, NULL) == 0) {
				loop_at(st, si, st->stages[si].nleaves - last - 1, a, sizeof(a));
				sch_bind(st, a, "threadIdx.y");
			}
		}
	}
	if (below(rng, 2) == 0)
		try_storage_align(st, si, rng);
}

/* Read one or two tensors that stage "reader" reads through shared
 * copies, their names into "shared"; return how many. */
static int read_shared(sch_state *st, const char *reader, uint64_t *rng, char (*shared)[80])
{
	int n = 0, want = 1 + (int)below(rng, 2);
	for (int k = 0; k < 8 && n < want; k++) {
		const tessel_op *op = st->op;
		const tessel_stage *t = op->stages[below(rng, op->nstages)];
		if (sch_cache_read(st, t->name, "shared", 1, &reader) == 0)
			snprintf(shared[n++], sizeof(shared[0]), "%s",
				st->trace->steps[st->trace->nsteps - 1].outs[0]);
	}
	return n;
}

/* Stage one or two tensors that the root stage "c" reads in shared
 * memory, computed at a loop between its block and thread loops. */
static void stage_in_shared(sch_state *st, int c, uint64_t *rng)
{
	char cname[SCH_NAME_MAX], shared[2][80];
	snprintf(cname, sizeof(cname), "%s", st->stages[c].name);
	int n = read_shared(st, cname, rng, shared);
	if (n == 0)
		return;
	hoist_reduction(st, cname, rng);
	int ci = sch_find_stage(st, cname);
	int tx = first_thread_loop(&st->stages[ci]);
	for (int k = 0; k < n && tx > 0; k++) {
		char loop[160];
		loop_at(st, ci, (int)below(rng, tx), loop, sizeof(loop));
		if (sch_compute_at(st, shared[k], loop) == 0)
			cooperative_fetch(st, shared[k], sch_find_stage(st, cname), rng);
	}
}

/* Compute stage "si" (a reduction at the root, default loops) into a
 * register accumulator STAGE_local at a thread loop of its copy-out,
 * tiled in 2D blocks of "ty" x "tx" threads, its first reduction loop
 * split by a random factor and the outer part moved in front; write its
 * name into "local".  Return 0, or -1 when it cannot. */
static int local_accumulator(sch_state *st, int si, int64_t ty, int64_t tx, uint64_t *rng,
	char *local, size_t len)
{
	const sch_stage *s = &st->stages[si];
	if (s->attach != SCH_ROOT || s->te->reduce == TESSEL_REDUCE_NONE || s->te->is_output == 0 ||
	    !sch_stage_is_default(s))
		return -1;
	char cname[SCH_NAME_MAX], loop[160];
	snprintf(cname, sizeof(cname), "%s", s->name);
	if (sch_cache_write(st, cname, "local"))
		return -1;
	snprintf(local, len, "%s", st->trace->steps[st->trace->nsteps - 1].outs[0]);
	int ci = sch_find_stage(st, cname);
	if (tile_2d(st, ci, ty, tx))
		return -1;
	loop_at(st, ci, 2 + (int)below(rng, 2), loop, sizeof(loop));
	if (sch_compute_at(st, local, loop))
		return -1;
	int li = sch_find_stage(st, local);
	const sch_stage *l = &st->stages[li];
	int r = 0;
	while (r < l->nleaves && !l->iters[l->leaves[r]].reduce)
		r++;
	if (r == l->nleaves)
		return 0;
	loop_at(st, li, r, loop, sizeof(loop));
	if (sch_split(st, loop, random_factor(rng, l->iters[l->leaves[r]].extent), false,
			NULL, NULL))
		return 0;
	char first[160], outer[160];
	loop_at(st, li, 0, first, sizeof(first));
	loop_at(st, li, r, outer, sizeof(outer));
	const char *order[2] = { outer, first };
	if (r > 0)
		sch_reorder(st, 2, order);
	return 0;
}

/* Stage one or two tensors that the register accumulator "local" reads
 * in shared memory, computed at a random loop of it (inside the thread
 * loops of its copy-out "c", which fetches them). */
static void stage_local_in_shared(sch_state *st, const char *local, const char *c,
	uint64_t *rng)
{
	char shared[2][80];
	int n = read_shared(st, local, rng, shared);
	for (int k = 0; k < n; k++) {
		int li = sch_find_stage(st, local);
		char loop[160];
		loop_at(st, li, (int)below(rng, st->stages[li].nleaves), loop, sizeof(loop));
		if (sch_compute_at(st, shared[k], loop) == 0)
			cooperative_fetch(st, shared[k], sch_find_stage(st, c), rng);
	}
}

/* Return a random stage, one with a thread loop where a few tries find
 * one. */
static int bound_stage(const sch_state *st, uint64_t *rng)
{
	int s = (int)below(rng, st->nstages);
	for (int k = 0; k < 8 && first_thread_loop(&st->stages[s]) < 1; k++)
		s = (int)below(rng, st->nstages);
	return s;
}

/* Reduce stage "si" (at the root, default loops) across "threads"
 * threads per element: its spatial loops fused and bound to blockIdx.x,
 * its first reduction loop split by "threads" with the inner loop moved
 * in front and bound to threadIdx.x. */
static void cross_thread(sch_state *st, int si, int64_t threads)
{
	const sch_stage *s = &st->stages[si];
	if (s->attach != SCH_ROOT || s->te->reduce == TESSEL_REDUCE_NONE ||
	    !sch_stage_is_default(s))
		return;
	char a[160], b[160];
	int spatial = s->te->ndim;
	for (; spatial > 1; spatial--) {
		loop_at(st, si, 0, a, sizeof(a));
		loop_at(st, si, 1, b, sizeof(b));
		if (sch_fuse(st, a, b, NULL))
			return;
	}
	loop_at(st, si, 0, a, sizeof(a));
	if (spatial == 1 && sch_bind(st, a, "blockIdx.x"))
		return;
	loop_at(st, si, spatial, a, sizeof(a));
	if (sch_split(st, a, threads, false, NULL, NULL))
		return;
	loop_at(st, si, spatial, a, sizeof(a));
	loop_at(st, si, spatial + 1, b, sizeof(b));
	const char *order[2] = { b, a };
	if (sch_reorder(st, 2, order) == 0) {
		loop_at(st, si, spatial, a, sizeof(a));
		sch_bind(st, a, "threadIdx.x");
	}
}

int sch_random_gpu_schedule(sch_state *st, uint64_t seed, int attempts)
{
	uint64_t rng = seed;
	int applied = 0;
	int64_t start = below(&rng, 8), threads = 1 << (2 + below(&rng, 5));
	int tiled = start >= 4 && start < 6 ? (int)below(&rng, st->nstages) : -1;
	char local[80] = "", copy[SCH_NAME_MAX] = "";
	if (start == 5) {
		snprintf(copy, sizeof(copy), "%s", st->stages[tiled].name);
		if (local_accumulator(st, tiled, 1 << below(&rng, 3), 2 << below(&rng, 4), &rng,
				local, sizeof(local)) == 0)
			tiled = -1;
		else
			local[0] = 0;
	}
	if (tiled >= 0 && !local[0] &&
	    tile_2d(st, tiled, 1 << below(&rng, 4), 2 << below(&rng, 5)))
		tiled = -1;
	for (int si = 0; start == 6 && si < st->nstages; si++)
		cross_thread(st, si, 1 + below(&rng, 16));
	if (start < 7 && sch_gpu_default(st, (int)threads) == 0) {
		applied++;
		if (local[0])
			stage_local_in_shared(st, local, copy, &rng);
		else if (start >= 2 && start < 6)
			stage_in_shared(st, tiled >= 0 ? sch_find_stage(st,
				st->stages[tiled].name) : bound_stage(st, &rng), &rng);
	}
	for (int i = 0; i < attempts; i++)
		if (sch_random_gpu_step(st, &rng) == 0)
			applied++;
	tessel_ctx_clear_error(st->ctx);
	return applied;
}
