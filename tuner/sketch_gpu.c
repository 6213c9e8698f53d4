/* The GPU rules of the search space (tuner/sketch.h, docs/tuner.md): the
 * same analysis of stages as the CPU rules (tuner/sketch.c), other
 * structures, in the primitives of docs/gpu.md.
 *
 *   - elementwise stages that are not outputs are inlined (as on CPUs);
 *   - a reduction with data reuse at the root gets multi-level tiling
 *     (Ansor's "SSSRRSRS" for GPUs, Zheng et al., OSDI 2020, section 4.1;
 *     TVM's cooperative fetching).  Each spatial axis is split into
 *     S0 (block) S1 (virtual thread) S2 (thread) S3 (inner), each
 *     reduction axis into R0 R1 or R0 R1 R2.  "shared": the stage is tiled
 *     in place S0 R0 S2 S1 R1 S3 R2, the S0 loops fused and bound to
 *     blockIdx.x, the S2 loops fused and bound to threadIdx.x (or the
 *     last to threadIdx.x and the others to threadIdx.y); the tensors it
 *     reads are staged in shared memory (cache_read shared) computed at
 *     the innermost R0 loop, which lies between the block and the thread
 *     loops as shared memory requires, their loops fused and fetched by
 *     the block's threads together.  "local": the accumulator is a
 *     cache_write local (or the stage itself, when its only reader is an
 *     elementwise output at the same indices, which then takes the
 *     copy's place), computed at the innermost thread loop of the
 *     copy-out tiled S0 S2 S1 S3, and tiled R0 S1 R1 S3 inside: a
 *     register tile per thread.  "shared+local": both, TVM's classic
 *     GPU matmul: the "local" structure, and the tensors the accumulator
 *     reads staged in shared memory at its innermost R0 loop, inside the
 *     copy-out's thread loops (schedule/shared.c: the tile is the union
 *     of what the block's threads need, fetched by all of them with the
 *     copy-out's thread extents).  S3 loops are unrolled; the S1 loops
 *     are serial loops in each thread, which is what a vthread is in
 *     tessel for now;
 *   - a reduction without reuse (a softmax's or a layer norm's row, a
 *     sum) is, in the "cross-thread" sketch, reduced across the threads
 *     of a block: its spatial loops fused and bound to blockIdx.x, its
 *     first reduction loop split with the inner part moved in front and
 *     bound to threadIdx.x;
 *   - every other stage at the root (schedule/gpu_default.c, with drawn
 *     sizes): its spatial loops fused and split into blocks, threads and
 *     a few elements per thread; reductions serial in each thread.
 * Tile factors are perfect factorizations drawn as decisions of split
 * steps, so a sample replays from its trace and mutates like a CPU one;
 * the threads of a block are drawn within the device's limit (the
 * task's tune_gpu_target); the primitives refuse a block past
 * SCH_MAX_THREADS or SCH_MAX_SHARED_BYTES, and the measurer a launch past
 * the device's own limits. */
#include <stdio.h>
#include <string.h>

#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "tuner/sketch_impl.h"

/* The largest S1 (virtual thread) and S3 (inner) factors, the largest
 * inner reduction factors (R1, R2), and the elements per thread of the
 * plain rule. */
#define MAX_VTHREAD 4
#define MAX_INNER 4
#define MAX_R1 16
#define MAX_R2 4
#define MAX_PER_THREAD 4
/* Draws of a tiling for a block of whole warps, then as many for any
 * block within the limit, before a sample is refused for too many
 * threads. */
#define THREAD_DRAWS 8
#define WARP_THREADS 32
/* Reductions at least this long are reduced across threads in the
 * cross-thread sketch. */
#define CROSS_THREAD_MIN 8
/* Thread counts the plain and cross-thread rules draw from (those above
 * the device's limit or the extent are left out). */
static const int64_t thread_choices[] = { 16, 32, 64, 128, 256, 512, 1024 };
#define NTHREAD_CHOICES (int)(sizeof(thread_choices) / sizeof(*thread_choices))

/* Tile factors of one spatial axis: S0 S1 S2 S3, outermost first. */
typedef int64_t gpu_tile[4];

/* Return whether stage "in" is reduced across threads in a cross-thread
 * sketch. */
static bool wants_cross_thread(const stage_info *in)
{
	return in->nraxes > 0 && in->role != ROLE_TILE && in->reduction >= CROSS_THREAD_MIN;
}

static void add_gpu_sketch(tune_space *sp, tile_mode tile, bool cross_thread)
{
	if (sp->nsketches == MAX_SKETCHES)
		return;
	sketch *k = &sp->sketches[sp->nsketches++];
	*k = (sketch){ .tile = tile, .cross_thread = cross_thread };
	size_t len = 0;
	for (int i = 0; i < sp->nstages && len < sizeof(k->name) - 64; i++) {
		const stage_info *in = &sp->info[i];
		const char *rule = "blocks, threads";
		if (in->role == ROLE_INLINE)
			rule = in->inline_optional ? "inline or root" : "inline";
		else if (in->role == ROLE_TILE && tile == TILE_GPU_SHARED)
			rule = "SSSRRSRS, shared";
		else if (in->role == ROLE_TILE && tile == TILE_GPU_LOCAL)
			rule = in->fusable_consumer >= 0 ? "SSSRRSRS, local, fused consumer" :
			       "SSSRRSRS, local";
		else if (in->role == ROLE_TILE && tile == TILE_GPU_SHARED_LOCAL)
			rule = in->fusable_consumer >= 0 ?
			       "SSSRRSRS, shared+local, fused consumer" : "SSSRRSRS, shared+local";
		else if (cross_thread && wants_cross_thread(in))
			rule = "cross-thread";
		len += (size_t)snprintf(k->name + len, sizeof(k->name) - len, "%s%s: %s",
			i ? "; " : "", in->name, rule);
	}
}

void sk_gpu_add_sketches(tune_space *sp)
{
	bool any_tile = false, any_cross = false;
	for (int i = 0; i < sp->nstages; i++) {
		any_tile |= sp->info[i].role == ROLE_TILE;
		any_cross |= wants_cross_thread(&sp->info[i]);
	}
	if (any_tile) {
		add_gpu_sketch(sp, TILE_GPU_SHARED, false);
		add_gpu_sketch(sp, TILE_GPU_LOCAL, false);
		add_gpu_sketch(sp, TILE_GPU_SHARED_LOCAL, false);
	}
	if (any_cross)
		add_gpu_sketch(sp, TILE_NONE, true);
	add_gpu_sketch(sp, TILE_NONE, false);
}

/* ---- helpers ---------------------------------------------------------------------- */

/* Bind iter "iter" of stage "s" to "axis"; return 0 or -1. */
static int bind_iter(sch_state *st, int s, int iter, const char *axis)
{
	char q[QNAME];
	sk_qname(st, s, iter, q);
	return sch_bind(st, q, axis);
}

/* Draw a thread count for a loop of extent "n": one of thread_choices
 * within the device's limit (the extent itself when it is smaller), or,
 * half of the time, a divisor of "n" within the limit. */
static int64_t draw_threads(const tune_space *sp, uint64_t *rng, int64_t n)
{
	if (sk_chance(rng, 50))
		return sk_random_divisor(rng, n, sp->max_threads, 1);
	int k = 0;
	while (k < NTHREAD_CHOICES && thread_choices[k] <= sp->max_threads &&
	       thread_choices[k] < n)
		k++;
	int64_t t = k ? thread_choices[sk_below(rng, k)] : n;
	return t < sp->max_threads ? t : sp->max_threads;
}

/* Draw the tiles "t" of the "nd" spatial "extent"s, with at most
 * max_threads threads in all, a multiple of WARP_THREADS where one of
 * THREAD_DRAWS draws gives it (a block of 16 threads leaves half of its
 * warp's lanes idle: the best of a first round of matmul 4096^3 on an
 * H200 had 16); return 0, or -1 when no draw fits. */
static int draw_gpu_tiles(const tune_space *sp, uint64_t *rng, const int64_t *extent, int nd,
	gpu_tile *t)
{
	const int64_t max[4] = { 0, MAX_VTHREAD, sp->max_threads, MAX_INNER };
	for (int a = 0; a < 2 * THREAD_DRAWS; a++) {
		int64_t threads = 1;
		for (int d = 0; d < nd; d++) {
			sk_perfect_tile(rng, extent[d], 4, max, 1, t[d]);
			threads *= t[d][2];
		}
		if (threads <= sp->max_threads && (a >= THREAD_DRAWS || threads % WARP_THREADS == 0))
			return 0;
	}
	return -1;
}

/* Fuse the "n" adjacent iters "iters" of "s" and bind the result to
 * "axis"; return 0 or -1. */
static int fuse_bind(sch_state *st, int s, const int *iters, int n, const char *axis)
{
	int f = sk_fuse_iters(st, s, iters, n);
	return f < 0 ? -1 : bind_iter(st, s, f, axis);
}

/* Bind the "nd" adjacent thread loops "l2" of "s": fused to threadIdx.x,
 * or, half of the time with two or more, the last to threadIdx.x and the
 * others fused to threadIdx.y.  Store the innermost thread iter. */
static int bind_threads(sch_state *st, int s, const int *l2, int nd, uint64_t *rng,
	int *innermost)
{
	if (nd >= 2 && sk_chance(rng, 50)) {
		if (fuse_bind(st, s, l2, nd - 1, "threadIdx.y"))
			return -1;
		*innermost = l2[nd - 1];
		return bind_iter(st, s, l2[nd - 1], "threadIdx.x");
	}
	int f = sk_fuse_iters(st, s, l2, nd);
	*innermost = f;
	return f < 0 ? -1 : bind_iter(st, s, f, "threadIdx.x");
}

/* Return the extent of the live loop of "s" bound to "kind", or 1. */
static int64_t bound_extent(const sch_stage *s, loop_kind kind)
{
	for (int p = 0; p < s->nleaves; p++)
		if (s->iters[s->leaves[p]].kind == kind)
			return s->iters[s->leaves[p]].extent;
	return 1;
}

/* The threads the blocks a kernel asks a multiprocessor for
 * (min_blocks_per_sm) may hold together: asking for 256 or fewer caps
 * nothing (255 registers a thread fit), for more than 1024 leaves a
 * thread under 64 registers. */
#define MIN_BLOCKS_THREADS_MIN 256
#define MIN_BLOCKS_THREADS_MAX 1024

/* On CUDA, half of the time, annotate the block loop of the tiled stage
 * "s" with min_blocks_per_sm drawn from sk_min_blocks_steps where it
 * caps the registers of its block's threads (the register tile's
 * accumulators against the blocks that hide each other's waits; the
 * tuner measures which wins).  A refusal is fine. */
static void maybe_min_blocks(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	int64_t threads = bound_extent(ss, LOOP_THREAD_X) * bound_extent(ss, LOOP_THREAD_Y) *
		bound_extent(ss, LOOP_THREAD_Z);
	int64_t fits[SK_MIN_BLOCKS_STEPS];
	int n = 0;
	for (int i = 0; i < SK_MIN_BLOCKS_STEPS; i++) {
		int64_t all = sk_min_blocks_steps[i] * threads;
		if (all > MIN_BLOCKS_THREADS_MIN && all <= MIN_BLOCKS_THREADS_MAX)
			fits[n++] = sk_min_blocks_steps[i];
	}
	if (!sp->launch_bounds || n == 0 || !sk_chance(rng, 50))
		return;
	for (int p = 0; p < ss->nleaves; p++)
		if (ss->iters[ss->leaves[p]].kind == LOOP_BLOCK_X) {
			char q[QNAME];
			sk_qname(st, s, ss->leaves[p], q);
			if (sch_annotate(st, q, "min_blocks_per_sm", fits[sk_below(rng, n)]))
				tessel_ctx_clear_error(st->ctx);
			return;
		}
}

/* Unroll the loops "iters" of "s" longer than 1 (a refusal is fine). */
static void unroll_all(sch_state *st, int s, const int *iters, int n)
{
	for (int i = 0; i < n; i++)
		if (st->stages[s].iters[iters[i]].extent > 1)
			sk_try_annotate(st, s, iters[i], sch_unroll);
}

/* Split the reduction iter "r" of "s" into "levels" (2 or 3) loops
 * drawn as a perfect tiling, outermost first into "out". */
static int split_reduction(sch_state *st, int s, int r, int levels, uint64_t *rng, int *out)
{
	const int64_t max[3] = { 0, MAX_R1, MAX_R2 };
	const int64_t max2[2] = { 0, MAX_R1 };
	int64_t f[3];
	sk_perfect_tile(rng, st->stages[s].iters[r].extent, levels, levels == 3 ? max : max2,
		1, f);
	int rest;
	if (sk_split_iter(st, s, r, levels == 3 ? f[1] * f[2] : f[1], &out[0], &rest))
		return -1;
	if (levels == 2) {
		out[1] = rest;
		return 0;
	}
	return sk_split_iter(st, s, rest, f[2], &out[1], &out[2]);
}

/* ---- multi-level tiling ------------------------------------------------------------- */

static int do_cache_read_shared(sch_state *st, const char *tensor, const char *reader)
{
	return sch_cache_read(st, tensor, "shared", 1, &reader);
}

/* Draw the lanes each thread of "tx" x "ty" fetches at once of the
 * shared stage "s" as one vector: 4 or 2 when they divide the tile's
 * rows (so that a vector never straddles two) and the lanes of all
 * threads divide the tile (so that no guard splits one), with
 * probability 2/3; else 1. */
static int64_t draw_fetch_lanes(const sch_stage *s, int64_t tx, int64_t ty, uint64_t *rng)
{
	if (s->te->dtype != TESSEL_F32 || s->nleaves < 1 || !sk_chance(rng, 67))
		return 1;
	int64_t all = 1, row = s->iters[s->leaves[s->nleaves - 1]].extent;
	for (int p = 0; p < s->nleaves; p++)
		all *= s->iters[s->leaves[p]].extent;
	for (int64_t lanes = 4; lanes >= 2; lanes /= 2)
		if (row % lanes == 0 && all % (lanes * tx * ty) == 0)
			return lanes;
	return 1;
}

/* Fetch the shared stage "sh" by the threads of its reader "c": its
 * loops fused, split by the threadIdx.x extent of "c" with the inner loop
 * bound to it, and the outer loop likewise to threadIdx.y when "c" binds
 * it; sometimes each thread's innermost elements fetched as one vector
 * (draw_fetch_lanes, vectorized: codegen/gpu_c.c prints it as one wide
 * load and store), and sometimes a row padded against bank conflicts, by
 * one element, or by a vector's lanes where a vector fetches it. */
static void cooperative_fetch(sch_state *st, int sh, int c, uint64_t *rng)
{
	int64_t tx = bound_extent(&st->stages[c], LOOP_THREAD_X);
	int64_t ty = bound_extent(&st->stages[c], LOOP_THREAD_Y);
	const sch_stage *s = &st->stages[sh];
	int leaves[MAX_AXES], n = s->nleaves < MAX_AXES ? s->nleaves : MAX_AXES;
	memcpy(leaves, s->leaves, (size_t)n * sizeof(int));
	int64_t lanes = draw_fetch_lanes(s, tx, ty, rng);
	int f = sk_fuse_iters(st, sh, leaves, n), fo, fi, yo, yi, vo, vi;
	if (f >= 0 && lanes > 1) {
		if (sk_split_iter(st, sh, f, lanes, &vo, &vi)) {
			tessel_ctx_clear_error(st->ctx);
			return;
		}
		sk_try_annotate(st, sh, vi, sch_vectorize);
		f = vo;
	}
	if (f < 0 || sk_split_iter(st, sh, f, tx, &fo, &fi) || bind_iter(st, sh, fi, "threadIdx.x")) {
		tessel_ctx_clear_error(st->ctx);
		return;
	}
	if (ty > 1 && (sk_split_iter(st, sh, fo, ty, &yo, &yi) ||
		       bind_iter(st, sh, yi, "threadIdx.y")))
		tessel_ctx_clear_error(st->ctx);
	int ndim = st->stages[sh].te->ndim;
	if (ndim >= 2 && sk_chance(rng, 25)) {
		char axis[QNAME];
		snprintf(axis, sizeof(axis), "%s.ax%d", st->stages[sh].name, ndim - 2);
		if (sch_storage_align(st, axis, 32, lanes))
			tessel_ctx_clear_error(st->ctx);
	}
}

/* Stage the tensors stage "name" reads in shared memory (cache_read
 * refuses those it does not read), computed at its iter "at" (the
 * innermost R0 loop) and fetched by the threads of the root stage
 * "owner" (whose kernel holds the tiles); each but the first with
 * probability 80%.  Return 0, or -1 when none could be staged or one
 * could not be computed there. */
static int stage_inputs_shared(sch_state *st, const char *name, int at, const char *owner,
	uint64_t *rng)
{
	int staged = 0;
	for (int i = 0; i < st->op->nstages; i++) {
		char tensor[SCH_NAME_MAX];
		snprintf(tensor, sizeof(tensor), "%s", st->op->stages[i]->name);
		if (strcmp(tensor, name) == 0 || (staged && !sk_chance(rng, 80)))
			continue;
		int sh = sk_make_stage(st, do_cache_read_shared, tensor, name);
		if (sh < 0) {
			tessel_ctx_clear_error(st->ctx);
			continue;
		}
		char q[QNAME], shname[SCH_NAME_MAX];
		snprintf(shname, sizeof(shname), "%s", st->stages[sh].name);
		sk_qname(st, sk_stage_named(st, name), at, q);
		if (sch_compute_at(st, shname, q))
			return -1;
		cooperative_fetch(st, sk_stage_named(st, shname), sk_stage_named(st, owner), rng);
		staged++;
	}
	return staged ? 0 : -1;
}

/* Rule "SSSRRSRS, shared" for the root stage "s": S0 R0 S2 S1 R1 S3 R2
 * in place, blocks and threads bound, inputs staged in shared memory at
 * the innermost R0 loop. */
static int tile_shared(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n))
		return -1;
	sk_drop_unit_loops(st, s, &n);
	int nd = n.nspatial, nr = n.nreduce;
	if (nd == 0 || nr == 0)
		return -1;
	int64_t extent[MAX_AXES] = { 0 };
	gpu_tile t[MAX_AXES];
	for (int d = 0; d < nd; d++)
		extent[d] = st->stages[s].iters[n.spatial[d]].extent;
	if (draw_gpu_tiles(sp, rng, extent, nd, t))
		return -1;
	int lv[4][MAX_AXES], rv[3][MAX_AXES], rest, rest2;
	for (int d = 0; d < nd; d++)
		if (sk_split_iter(st, s, n.spatial[d], t[d][1] * t[d][2] * t[d][3], &lv[0][d], &rest) ||
		    sk_split_iter(st, s, rest, t[d][1] * t[d][3], &lv[2][d], &rest2) ||
		    sk_split_iter(st, s, rest2, t[d][3], &lv[1][d], &lv[3][d]))
			return -1;
	int rlevels = sk_chance(rng, 50) ? 3 : 2;
	for (int r = 0; r < nr; r++) {
		int out[3];
		if (split_reduction(st, s, n.reduce[r], rlevels, rng, out))
			return -1;
		for (int l = 0; l < rlevels; l++)
			rv[l][r] = out[l];
	}
	int order[7 * MAX_AXES], k = 0;
	const int *levels[7] = { lv[0], rv[0], lv[2], lv[1], rv[1], lv[3], rv[2] };
	const int counts[7] = { nd, nr, nd, nd, nr, nd, rlevels == 3 ? nr : 0 };
	for (int l = 0; l < 7; l++)
		for (int i = 0; i < counts[l]; i++)
			order[k++] = levels[l][i];
	int inner_thread;
	if (sk_reorder_iters(st, s, order, k) || fuse_bind(st, s, lv[0], nd, "blockIdx.x") ||
	    bind_threads(st, s, lv[2], nd, rng, &inner_thread))
		return -1;
	unroll_all(st, s, lv[3], nd);
	maybe_min_blocks(sp, st, s, rng);
	char name[SCH_NAME_MAX];
	snprintf(name, sizeof(name), "%s", st->stages[s].name);
	return stage_inputs_shared(st, name, rv[0][nr - 1], name, rng);
}

/* Tile the accumulator "inner" (computed at a thread loop, its spatial
 * extents S1 * S3) R0 S1 R1 S3 with the S3 factors of "t"; store its
 * innermost R0 loop in "*r0_inner" (-1 when it has no reduction). */
static int tile_accumulator(sch_state *st, int inner, const gpu_tile *t, uint64_t *rng,
	int *r0_inner)
{
	sk_nest n;
	if (sk_nest_of(st, inner, &n))
		return -1;
	int s1[MAX_AXES], s3[MAX_AXES], r0[MAX_AXES], r1[MAX_AXES], ns = 0;
	for (int d = 0; d < n.nspatial; d++) {
		int64_t e = st->stages[inner].iters[n.spatial[d]].extent;
		if (e == 1)
			continue;
		int64_t f = e % t[ns][3] == 0 ? t[ns][3] : 1;
		if (sk_split_iter(st, inner, n.spatial[d], f, &s1[ns], &s3[ns]))
			return -1;
		ns++;
	}
	for (int r = 0; r < n.nreduce; r++) {
		int out[2];
		if (split_reduction(st, inner, n.reduce[r], 2, rng, out))
			return -1;
		r0[r] = out[0];
		r1[r] = out[1];
	}
	int order[4 * MAX_AXES], k = 0;
	for (int r = 0; r < n.nreduce; r++)
		order[k++] = r0[r];
	for (int d = 0; d < ns; d++)
		order[k++] = s1[d];
	for (int r = 0; r < n.nreduce; r++)
		order[k++] = r1[r];
	for (int d = 0; d < ns; d++)
		order[k++] = s3[d];
	if (sk_reorder_iters(st, inner, order, k))
		return -1;
	unroll_all(st, inner, s1, ns);
	unroll_all(st, inner, s3, ns);
	*r0_inner = n.nreduce ? r0[n.nreduce - 1] : -1;
	return 0;
}

/* Tile "outer" (a copy-out or an elementwise consumer at the root,
 * spatial loops only) S0 S2 S1 S3 with blocks and threads bound, and
 * compute the reduction "inner" at its innermost thread loop, tiled by
 * tile_accumulator; with "shared", stage what "inner" reads in shared
 * memory at its innermost R0 loop, fetched by the threads of "outer". */
static int tile_local_two(const tune_space *sp, sch_state *st, int outer, int inner,
	bool shared, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, outer, &n) || n.nreduce)
		return -1;
	sk_drop_unit_loops(st, outer, &n);
	int nd = n.nspatial;
	if (nd == 0)
		return -1;
	int64_t extent[MAX_AXES] = { 0 };
	gpu_tile t[MAX_AXES];
	for (int d = 0; d < nd; d++)
		extent[d] = st->stages[outer].iters[n.spatial[d]].extent;
	if (draw_gpu_tiles(sp, rng, extent, nd, t))
		return -1;
	int lv[4][MAX_AXES], rest, rest2;
	for (int d = 0; d < nd; d++)
		if (sk_split_iter(st, outer, n.spatial[d], t[d][1] * t[d][2] * t[d][3], &lv[0][d],
			&rest) ||
		    sk_split_iter(st, outer, rest, t[d][1] * t[d][3], &lv[2][d], &rest2) ||
		    sk_split_iter(st, outer, rest2, t[d][3], &lv[1][d], &lv[3][d]))
			return -1;
	int order[4 * MAX_AXES], k = 0;
	for (int l = 0; l < 4; l++)
		for (int d = 0; d < nd; d++)
			order[k++] = lv[l == 1 ? 2 : l == 2 ? 1 : l][d];
	int inner_thread;
	if (sk_reorder_iters(st, outer, order, k) ||
	    fuse_bind(st, outer, lv[0], nd, "blockIdx.x") ||
	    bind_threads(st, outer, lv[2], nd, rng, &inner_thread))
		return -1;
	unroll_all(st, outer, lv[1], nd);
	unroll_all(st, outer, lv[3], nd);
	maybe_min_blocks(sp, st, outer, rng);
	char q[QNAME];
	sk_qname(st, outer, inner_thread, q);
	if (sch_compute_at(st, st->stages[inner].name, q))
		return -1;
	int r0;
	if (tile_accumulator(st, inner, t, rng, &r0))
		return -1;
	if (!shared)
		return 0;
	if (r0 < 0)
		return -1;
	char name[SCH_NAME_MAX], owner[SCH_NAME_MAX];
	snprintf(name, sizeof(name), "%s", st->stages[inner].name);
	snprintf(owner, sizeof(owner), "%s", st->stages[outer].name);
	return stage_inputs_shared(st, name, r0, owner, rng);
}

/* Rule "SSSRRSRS, local" (or "shared+local", with "shared") for stage
 * "name"; "consumer" is the fusable consumer that takes the copy-out's
 * place, or NULL. */
static int tile_local(const tune_space *sp, sch_state *st, const char *name,
	const char *consumer, bool shared, uint64_t *rng)
{
	if (consumer) {
		int c = sk_stage_named(st, consumer), s = sk_stage_named(st, name);
		return c < 0 || s < 0 ? -1 : tile_local_two(sp, st, c, s, shared, rng);
	}
	int local = sk_make_stage(st, sk_do_cache_write, name, "local");
	int s = sk_stage_named(st, name);
	return local < 0 || s < 0 ? -1 : tile_local_two(sp, st, s, local, shared, rng);
}

/* ---- stages without reuse ---------------------------------------------------------- */

/* Rule "cross-thread" for the root stage "s": spatial loops fused and
 * bound to blockIdx.x, the first reduction loop split by a drawn thread
 * count, the inner part moved in front and bound to threadIdx.x. */
static int cross_thread(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n) || n.nreduce == 0)
		return -1;
	if (n.nspatial && fuse_bind(st, s, n.spatial, n.nspatial, "blockIdx.x"))
		return -1;
	int r = n.reduce[0], ro, ri;
	int64_t threads = draw_threads(sp, rng, st->stages[s].iters[r].extent);
	if (sk_split_iter(st, s, r, threads, &ro, &ri))
		return -1;
	int order[2] = { ri, ro };
	if (sk_reorder_iters(st, s, order, 2))
		return -1;
	return bind_iter(st, s, ri, "threadIdx.x");
}

/* Rule for every other root stage: spatial loops fused and split into
 * blocks, threads and (sometimes) a few consecutive elements per thread,
 * the first two bound; reductions serial inside. */
static int blocks_threads(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n))
		return -1;
	if (n.nspatial == 0)
		return 0;
	int f = sk_fuse_iters(st, s, n.spatial, n.nspatial);
	if (f < 0)
		return -1;
	int64_t extent = st->stages[s].iters[f].extent;
	int64_t per = sk_chance(rng, 50) ? 1 : sk_random_divisor(rng, extent, MAX_PER_THREAD, 1);
	int64_t threads = draw_threads(sp, rng, extent / per);
	int blocks, rest, th, inner;
	if (sk_split_iter(st, s, f, threads * per, &blocks, &rest))
		return -1;
	if (per > 1) {
		if (sk_split_iter(st, s, rest, per, &th, &inner))
			return -1;
		sk_try_annotate(st, s, inner, sch_unroll);
	} else {
		th = rest;
	}
	if (bind_iter(st, s, blocks, "blockIdx.x"))
		return -1;
	return bind_iter(st, s, th, "threadIdx.x");
}

/* ---- sampling --------------------------------------------------------------------- */

int sk_gpu_apply(const tune_space *sp, const sketch *k, sch_state *st, uint64_t *rng)
{
	bool skip[sp->nstages + 1];
	int fuse[sp->nstages + 1];
	memset(skip, 0, sizeof(skip));
	sk_inline_elementwise(sp, st, rng, skip);
	for (int i = 0; i < sp->nstages; i++) {
		int c = sp->info[i].fusable_consumer;
		fuse[i] = -1;
		bool local = k->tile == TILE_GPU_LOCAL || k->tile == TILE_GPU_SHARED_LOCAL;
		if (local && sp->info[i].role == ROLE_TILE && c >= 0 &&
		    !skip[c] && sk_chance(rng, 75)) {
			fuse[i] = c;
			skip[c] = true;
		}
	}
	for (int i = sp->nstages - 1; i >= 0; i--) {
		const stage_info *in = &sp->info[i];
		int s = skip[i] ? -1 : sk_stage_named(st, in->name);
		if (s < 0 || st->stages[s].attach != SCH_ROOT ||
		    !sch_stage_is_default(&st->stages[s]))
			continue;
		int r;
		if (in->role == ROLE_TILE && k->tile == TILE_GPU_SHARED)
			r = tile_shared(sp, st, s, rng);
		else if (in->role == ROLE_TILE && (k->tile == TILE_GPU_LOCAL ||
						      k->tile == TILE_GPU_SHARED_LOCAL))
			r = tile_local(sp, st, in->name,
				fuse[i] >= 0 ? sp->info[fuse[i]].name : NULL,
				k->tile == TILE_GPU_SHARED_LOCAL, rng);
		else if (k->cross_thread && wants_cross_thread(in) && sk_chance(rng, 75))
			r = cross_thread(sp, st, s, rng);
		else
			r = blocks_threads(sp, st, s, rng);
		if (r)
			return -1;
	}
	return 0;
}
