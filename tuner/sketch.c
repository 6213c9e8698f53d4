/* The search space of a task without templates: rules over the structure
 * of the op's stages derive sketches, sampling fills their decisions, and
 * mutation changes the decisions of any trace or moves a stage between
 * the root and a loop (tuner/sketch.h).
 *
 * The rules (Ansor, Zheng et al., OSDI 2020, section 4.1), in tessel's
 * primitives:
 *   - an elementwise stage that is not an output is inlined (one whose
 *     body selects, such as a padding, or computes costly math, or that
 *     several stages read, is inlined or kept at the root: a decision,
 *     since recomputing it in every reader can cost more than the copy);
 *   - a reduction with data reuse (an access that does not vary with some
 *     spatial axis: matmul, convolution) gets multi-level tiling.  With
 *     "cache_write", the tiles of the stage's copy-out (or of its single
 *     elementwise consumer, which is then fused with it) are split twice
 *     (S0 S1 S2), the outer S0 loops fused and run in parallel, and the
 *     accumulating stage is computed inside, at an S1 or S0 loop, tiled
 *     R0 S2 R1 S3 with S3 unrolled and the innermost S3 vectorized: the
 *     CPU structure SSRSRS.  "in place" tiles the stage itself
 *     S0 S1 R0 S2 R1 S3;
 *   - a tiled stage whose vector lanes would read an input across its
 *     rows (B[j, k] of C[i, j] = sum(k) A[i, k] * B[j, k]) gets a
 *     "packed" sketch: the input read through a copy stored with the
 *     lanes' dimension last (cache_read global, reorder_storage), the
 *     copy a blocked transposition at the root or, at the parallel
 *     loop around the accumulator, one panel per iteration;
 *   - a tiled stage with an input that its vector lanes read along the
 *     input's rows, that a reduction axis indexes too and some spatial
 *     axis does not (B[k, j] of C[i, j] = sum(k) A[i, k] * B[k, j]) gets
 *     a "panel" sketch: the accumulator's S2 loops of the axes that index
 *     the input go outside the others, and the input is read through a
 *     local copy computed at the innermost of them: the R1 rows of the
 *     panel that every tile along the other axes reads, contiguous and
 *     copied once for all of them (the packing of GotoBLAS).  Its R1
 *     factors are drawn up to MAX_R1_PANEL and the S2 factors of the
 *     other axes up to MAX_S2_PANEL, so that many tiles share a copy;
 *     and an "in place" panel sketch in GotoBLAS's order: no cache, the
 *     R0 loops outside the S1 loops of the other axes, the copy (a block
 *     of R1 rows) computed at the innermost R0 loop, the tiles
 *     accumulating in the stage itself across the blocks;
 *   - a tiled stage whose innermost spatial extent is no multiple of
 *     the vector lanes while another one's is (the output channels of an
 *     NCHW conv over 7x7 pixels) gets a "lanes along" sketch: the
 *     accumulator stored with that axis last (reorder_storage), the
 *     vector lanes of the register tile along it, an input they read
 *     across its rows packed as above;
 *   - an elementwise stage whose vector lanes would read an input across
 *     its rows (Y[j, i] = X[i, j]) gets a "blocked" sketch: the vector
 *     loop and the loop of the input's contiguous axis split, the outer
 *     parts outside the inner ones, so that a block reads each line of
 *     the input once;
 *   - other reductions and elementwise stages: computed at a loop of
 *     their consumer or at the root, outer spatial loops fused until the
 *     parallel work is enough and run in parallel, the innermost
 *     contiguous loop vectorized; "rfactor" sketches factor the innermost
 *     reduction loop into vector lanes (or, when the spatial extent is
 *     too small for the cores or the reduction runs across the rows of
 *     its input, the outer one into parallel partials);
 *   - auto_unroll_max_step on the outermost loop of tiled stages.
 * Tile sizes are drawn as perfect factorizations of the extents, the
 * innermost factor of the contiguous axis a multiple of the vector width
 * where one divides; where none does (1000 and 16 lanes), or few do
 * (1000 and 8 lanes: only 8 of 8 to 32), half the time a multiple of the
 * vector width that leaves a partial last tile, which loop partitioning
 * keeps apart from the full ones.  Every choice goes into the trace as a primitive's
 * argument, so a sampled candidate replays with the schedule layer alone.
 *
 * Every primitive checks its own legality: a refused sample is drawn
 * again, and an optional step (parallel, vectorize, unroll, a compute
 * location) that is refused is left out. */
#include "tuner/sketch_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/intmath.h"
#include "ir/te_impl.h"
#include "schedule/primitives.h"
#include "schedule/random.h"
#include "schedule/region.h"

#define SAMPLE_ATTEMPTS 16
#define MUTATE_ATTEMPTS 8
/* The share of mutations that move a stage between the root and a loop
 * (the others change one decision). */
#define LOCATION_PERCENT 10
/* The largest register tile factor of a non-contiguous axis, and of the
 * vector loop in vectors. */
#define MAX_S3 8
#define MAX_S3_VECTORS 4
/* The largest middle tile factors (S2, S1) and inner reduction factor. */
#define MAX_S2 16
#define MAX_S1 64
#define MAX_R1 16
static const int64_t reduce_max[2] = { 0, MAX_R1 };
/* A panel sketch's largest S2 factor of an axis the panel does not move
 * with (its tiles share one copy of the panel) and inner reduction
 * factor (the rows of the panel). */
#define MAX_S2_PANEL 256
#define MAX_R1_PANEL 512
static const int64_t panel_reduce_max[2] = { 0, MAX_R1_PANEL };
/* The auto_unroll_max_step values tried (Ansor's for CPUs but 512, whose
 * fully unrolled register tiles cost gcc seconds per candidate). */
#define UNROLL_CHOICES 3
static const int64_t unroll_steps[UNROLL_CHOICES] = { 0, 16, 64 };
/* The prefetch distances tried, in iterations of the loop (0: none). */
#define PREFETCH_CHOICES 3
static const int64_t prefetch_steps[PREFETCH_CHOICES] = { 0, 1, 2 };
/* Parallel work wanted per core before fusing stops. */
#define PAR_PER_CORE 4
/* The most parallel partials per core of an rfactor across rows. */
#define MAX_PARTS_PER_CORE 4

/* ---- analysis --------------------------------------------------------------- */

/* Or into "*mask" a bit per axis of the stage that "e" uses: its spatial
 * axes, or with "reduce" its reduction axes. */
static void axis_vars(const tessel_expr *e, bool reduce, uint64_t *mask)
{
	switch (e->kind) {
	case TE_VAR:
		if (e->u.var->is_reduce == reduce && e->u.var->index < 64)
			*mask |= 1ull << e->u.var->index;
		return;
	case TE_ACCESS:
		for (int i = 0; i < e->u.access.n; i++)
			axis_vars(e->u.access.index[i], reduce, mask);
		return;
	case TE_UNARY: axis_vars(e->u.un.a, reduce, mask); return;
	case TE_BINARY:
		axis_vars(e->u.bin.a, reduce, mask);
		axis_vars(e->u.bin.b, reduce, mask);
		return;
	case TE_SELECT:
		axis_vars(e->u.sel.cond, reduce, mask);
		axis_vars(e->u.sel.then_, reduce, mask);
		axis_vars(e->u.sel.else_, reduce, mask);
		return;
	case TE_CAST: axis_vars(e->u.cast.a, reduce, mask); return;
	default: return;
	}
}

static void spatial_vars(const tessel_expr *e, uint64_t *mask)
{
	axis_vars(e, false, mask);
}

typedef struct read_scan_count {
	const tessel_stage *producer;
	int reads;
} read_scan_count;

typedef struct reuse_scan {
	uint64_t all;
	bool reuse;
} reuse_scan;

static int access_reuse(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	reuse_scan *r = user;
	uint64_t used = 0;
	spatial_vars(access, &used);
	if ((used & r->all) != r->all)
		r->reuse = true;
	return 0;
}

/* Return whether some access of the body of "s" is invariant in a spatial
 * axis, so that tiles reuse its data. */
static bool has_reuse(const tessel_stage *s)
{
	reuse_scan r = { s->ndim >= 64 ? ~0ull : (1ull << s->ndim) - 1, false };
	te_visit_accesses(s->body, false, access_reuse, &r);
	return r.reuse;
}

/* Return whether "e" selects or calls costly math (transcendentals,
 * roots, pow), which a consumer would recompute per use if inlined. */
static bool costly_to_recompute(const tessel_expr *e)
{
	switch (e->kind) {
	case TE_SELECT: return true;
	case TE_ACCESS:
		for (int i = 0; i < e->u.access.n; i++)
			if (costly_to_recompute(e->u.access.index[i]))
				return true;
		return false;
	case TE_UNARY:
		return (e->u.un.op >= TESSEL_EXP && e->u.un.op <= TESSEL_ERF) ||
		       e->u.un.op == TESSEL_SIGMOID || costly_to_recompute(e->u.un.a);
	case TE_BINARY:
		return e->u.bin.op == TESSEL_POW || costly_to_recompute(e->u.bin.a) ||
		       costly_to_recompute(e->u.bin.b);
	case TE_CAST: return costly_to_recompute(e->u.cast.a);
	default: return false;
	}
}

static int count_reads(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	read_scan_count *r = user;
	r->reads += access->u.access.tensor == r->producer;
	return 0;
}

/* Return how many compute stages of "st" read stage "p". */
static int readers_of(const sch_state *st, int p)
{
	int n = 0;
	for (int c = 0; c < st->nstages; c++) {
		read_scan_count r = { st->stages[p].te, 0 };
		te_visit_accesses(st->stages[c].te->body, false, count_reads, &r);
		n += r.reads > 0;
	}
	return n;
}

typedef struct read_scan {
	const tessel_stage *producer;
	int reads;
	bool identity;
} read_scan;

static int access_identity(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	read_scan *r = user;
	if (access->u.access.tensor != r->producer)
		return 0;
	r->reads++;
	for (int i = 0; i < access->u.access.n; i++) {
		const tessel_expr *ix = access->u.access.index[i];
		if (ix->kind != TE_VAR || ix->u.var->is_reduce || ix->u.var->index != i)
			r->identity = false;
	}
	return 0;
}

/* Return the compute stage (index in "st") that alone reads stage "p",
 * elementwise and at the same indices, or -1. */
static int fusable_consumer(const sch_state *st, int p)
{
	const tessel_stage *pt = st->stages[p].te;
	int found = -1;
	for (int c = 0; c < st->nstages; c++) {
		const tessel_stage *ct = st->stages[c].te;
		read_scan r = { pt, 0, true };
		te_visit_accesses(ct->body, false, access_identity, &r);
		if (r.reads == 0)
			continue;
		if (found >= 0 || !r.identity || ct->nraxes || ct->ndim != pt->ndim)
			return -1;
		found = c;
	}
	return found;
}

typedef struct pack_scan {
	int vector_axis;          /* the stage's innermost spatial axis */
	const char *input;
	int dim;
} pack_scan;

static int access_across_rows(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	pack_scan *p = user;
	const tessel_stage *t = access->u.access.tensor;
	int n = access->u.access.n;
	uint64_t last = 0;
	if (p->input || t->kind != TE_INPUT || n < 2)
		return 0;
	spatial_vars(access->u.access.index[n - 1], &last);
	if (last & (1ull << p->vector_axis))
		return 0;
	for (int d = 0; d < n - 1; d++) {
		const tessel_expr *ix = access->u.access.index[d];
		if (ix->kind == TE_VAR && !ix->u.var->is_reduce &&
		    ix->u.var->index == p->vector_axis) {
			p->input = t->name;
			p->dim = d;
			break;
		}
	}
	return 0;
}

/* Find an input that the spatial axis "axis" of "t" (the vector lanes of
 * its tiles) indexes in a dimension other than the input's contiguous
 * last one, while that one does not move with it: the lanes would read
 * across rows (B[j, k] of C[i, j] = sum(k) A[i, k] * B[j, k]).  Store it
 * and that dimension in "*input" and "*dim" (NULL and -1: none). */
static void find_pack_input(const tessel_stage *t, int axis, const char **input, int *dim)
{
	pack_scan p = { axis, NULL, -1 };
	if (axis >= 0 && axis < 64)
		te_visit_accesses(t->body, false, access_across_rows, &p);
	*input = p.input;
	*dim = p.dim;
}

/* Return the innermost spatial axis of "t" whose extent is a multiple of
 * "lanes" when the innermost axis's extent is not, else -1: vectors
 * along the innermost axis of an NCHW conv over 7x7 pixels fill half a
 * vector of 16 lanes, along its output channels whole ones. */
static int find_lane_axis(const tessel_stage *t, int64_t lanes)
{
	int last = t->ndim - 1;
	if (last < 1 || lanes < 2 || t->extent[last] % lanes == 0)
		return -1;
	for (int a = last - 1; a >= 0; a--)
		if (t->extent[a] % lanes == 0)
			return a;
	return -1;
}

typedef struct panel_scan {
	int vector_axis;          /* the stage's innermost spatial axis */
	uint64_t all;             /* every spatial axis of the stage */
	const char *input;
	uint64_t axes;
} panel_scan;

static int access_panel(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	panel_scan *p = user;
	const tessel_stage *t = access->u.access.tensor;
	int n = access->u.access.n;
	uint64_t used = 0, last = 0, reduce = 0;
	if (p->input || t->kind != TE_INPUT || n < 1)
		return 0;
	spatial_vars(access, &used);
	spatial_vars(access->u.access.index[n - 1], &last);
	axis_vars(access, true, &reduce);
	if ((last & (1ull << p->vector_axis)) && reduce && (used & p->all) != p->all) {
		p->input = t->name;
		p->axes = used;
	}
	return 0;
}

/* Find an input whose panels the tiles of "t" can share: the vector axis
 * indexes its contiguous last dimension, a reduction axis indexes it too,
 * and some spatial axis does not (B[k, j] of C[i, j] = sum(k) A[i, k] *
 * B[k, j]: the tiles of every i read the same rows k of columns j). */
static void find_panel_input(const tessel_stage *t, stage_info *info)
{
	panel_scan p = { t->ndim - 1, t->ndim >= 64 ? ~0ull : (1ull << t->ndim) - 1, NULL, 0 };
	if (t->ndim > 0 && t->ndim <= 64)
		te_visit_accesses(t->body, false, access_panel, &p);
	info->panel_input = p.input;
	info->panel_axes = p.axes;
}

typedef struct rows_scan {
	int axis;                 /* the reduction axis */
	bool used, contiguous;
} rows_scan;

static int access_reduce_rows(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	rows_scan *r = user;
	int n = access->u.access.n;
	uint64_t all = 0, last = 0;
	axis_vars(access, true, &all);
	if (n > 0)
		axis_vars(access->u.access.index[n - 1], true, &last);
	r->used |= (all >> r->axis) & 1;
	r->contiguous |= (last >> r->axis) & 1;
	return 0;
}

/* Return whether the innermost reduction axis of "t" reads across rows:
 * some access uses it and none in its last, contiguous dimension
 * (Y[j] = sum(i) X[i, j]), so that a loop over it strides by rows. */
static bool reduces_across_rows(const tessel_stage *t)
{
	rows_scan r = { t->nraxes - 1, false, false };
	if (t->nraxes == 0 || r.axis >= 64)
		return false;
	te_visit_accesses(t->body, false, access_reduce_rows, &r);
	return r.used && !r.contiguous;
}

/* The depth of elementwise producers looked through (a chain of
 * inlined stages) when looking for a transposed read. */
#define MAX_BLOCK_DEPTH 4

typedef struct block_scan {
	int vector_axis;          /* the stage's innermost spatial axis */
	const int *map;           /* the stage's axis of each axis of the
	                           * producer scanned, or NULL: itself */
	int depth;
	int axis;                 /* found: the axis of the input's last index */
} block_scan;

static int access_transposed(tessel_expr *access, bool under_select, void *user);

/* Scan the elementwise producer that "access" reads at plain spatial
 * indices, its axes mapped through them to the stage's: when it is
 * inlined, its reads are the stage's. */
static void scan_producer(block_scan *b, const tessel_expr *access)
{
	const tessel_stage *t = access->u.access.tensor;
	int n = access->u.access.n, map[TESSEL_MAX_DIMS];
	if (t->kind != TE_COMPUTE || t->nraxes || n != t->ndim || n > TESSEL_MAX_DIMS ||
	    b->depth == MAX_BLOCK_DEPTH)
		return;
	for (int d = 0; d < n; d++) {
		const tessel_expr *ix = access->u.access.index[d];
		if (ix->kind != TE_VAR || ix->u.var->is_reduce)
			return;
		map[d] = b->map ? b->map[ix->u.var->index] : ix->u.var->index;
	}
	block_scan inner = { b->vector_axis, map, b->depth + 1, -1 };
	te_visit_accesses(t->body, false, access_transposed, &inner);
	b->axis = inner.axis;
}

static int access_transposed(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	block_scan *b = user;
	int n = access->u.access.n;
	if (b->axis >= 0 || n < 1)
		return 0;
	const tessel_expr *last = access->u.access.index[n - 1];
	uint64_t vars = 0, rows = 0;
	for (int d = 0; d < n - 1; d++)
		spatial_vars(access->u.access.index[d], &vars);
	for (int v = 0; v < 64; v++)
		if ((vars >> v) & 1)
			rows |= 1ull << (b->map ? b->map[v] : v);
	int axis = -1;
	if (last->kind == TE_VAR && !last->u.var->is_reduce)
		axis = b->map ? b->map[last->u.var->index] : last->u.var->index;
	if (axis >= 0 && axis != b->vector_axis && (rows & (1ull << b->vector_axis)))
		b->axis = axis;
	else
		scan_producer(b, access);
	return 0;
}

/* Return the spatial axis of the elementwise stage "t" that indexes the
 * contiguous last dimension of a tensor it reads, itself or through the
 * elementwise producers inlined into it, where its innermost spatial
 * axis indexes another dimension (Y[j, i] = X[i, j]: j), or -1.  Vector
 * lanes along the innermost axis read such a tensor a cache line per
 * element; blocking both axes reads each line once. */
static int find_block_axis(const tessel_stage *t)
{
	block_scan b = { t->ndim - 1, NULL, 0, -1 };
	if (t->nraxes == 0 && t->ndim >= 2 && t->ndim <= 64)
		te_visit_accesses(t->body, false, access_transposed, &b);
	return b.axis;
}

/* Fill "info" for stage "i" of the fresh "st" on a target of vectors of
 * "vector_bytes". */
static void analyse_stage(const sch_state *st, int i, int vector_bytes, stage_info *info)
{
	const tessel_stage *t = st->stages[i].te;
	int64_t size = tessel_dtype_size(t->dtype);
	int64_t lanes = size > 0 ? vector_bytes / size : 1;
	info->name = t->name;
	info->is_output = t->is_output;
	info->inline_optional = costly_to_recompute(t->body) || readers_of(st, i) > 1;
	info->ndim = t->ndim;
	info->nraxes = t->nraxes;
	info->spatial = 1;
	info->reduction = 1;
	for (int a = 0; a < st->stages[i].niters; a++) {
		const sch_iter *it = &st->stages[i].iters[a];
		if (it->leaf)
			*(it->reduce ? &info->reduction : &info->spatial) *= it->extent;
	}
	info->bytes = info->spatial * size;
	if (t->nraxes == 0)
		info->role = t->is_output ? ROLE_SIMPLE : ROLE_INLINE;
	else if (t->ndim > 0 && has_reuse(t))
		info->role = ROLE_TILE;
	else
		info->role = ROLE_REDUCE;
	info->lane_axis = -1;
	if (info->role == ROLE_TILE) {
		find_pack_input(t, t->ndim - 1, &info->pack_input, &info->pack_dim);
		find_panel_input(t, info);
		info->lane_axis = find_lane_axis(t, lanes);
		info->lane_axis_name = info->lane_axis >= 0 ? t->axes[info->lane_axis]->name : NULL;
		find_pack_input(t, info->lane_axis, &info->lane_pack_input,
			&info->lane_pack_dim);
	}
	info->fusable_consumer = t->is_output ? -1 : fusable_consumer(st, i);
	info->block_axis = find_block_axis(t);
	info->reduce_across_rows = reduces_across_rows(t);
}

/* Return "e" without the conversions to "dt" around it. */
static const tessel_expr *uncast_to(const tessel_expr *e, tessel_dtype dt)
{
	while (e->kind == TE_CAST && e->u.cast.to == dt)
		e = e->u.cast.a;
	return e;
}

/* Return whether "e" is an element of a tensor of dtype "dt" or "alt",
 * converted to "acc" or not. */
static bool is_access_of(const tessel_expr *e, tessel_dtype acc, tessel_dtype dt,
	tessel_dtype alt)
{
	e = uncast_to(e, acc);
	return e->kind == TE_ACCESS &&
	       (e->u.access.tensor->dtype == dt || e->u.access.tensor->dtype == alt);
}

/* Return whether "t" sums products of the elements of two tensors of
 * dtype "dt" or "alt", converted to "acc" or not. */
static bool sums_products(const tessel_stage *t, tessel_dtype acc, tessel_dtype dt,
	tessel_dtype alt)
{
	const tessel_expr *e = t->reduce == TESSEL_SUM ? uncast_to(t->body, acc) : NULL;
	return e && e->kind == TE_BINARY && e->u.bin.op == TESSEL_MUL &&
	       is_access_of(e->u.bin.a, acc, dt, alt) &&
	       is_access_of(e->u.bin.b, acc, dt, alt);
}

/* The reads of each element from which an input summed in quads is
 * packed in groups only, not interleaved in the tiles. */
#define PACK_IN_GROUPS_REUSE 64

typedef struct group_scan {
	int lane_axis;
	int group;
	const char *input;
	int dim, lane_dim, raxis;
	uint64_t axes;            /* the spatial axes that index the input */
} group_scan;

/* Note in "user" (a group_scan) the input "access" one of whose
 * dimensions the lane axis alone indexes, and the dimension indexed by
 * the innermost reduction axis whose extent the group divides, alone. */
static int access_in_groups(tessel_expr *access, bool under_select, void *user)
{
	(void)under_select;
	group_scan *g = user;
	const tessel_stage *t = access->u.access.tensor;
	int lane_dim = -1;
	for (int d = 0; d < access->u.access.n; d++) {
		const tessel_expr *ix = access->u.access.index[d];
		if (ix->kind == TE_VAR && !ix->u.var->is_reduce &&
		    ix->u.var->index == g->lane_axis)
			lane_dim = d;
	}
	if (t->kind != TE_INPUT || lane_dim < 0)
		return 0;
	for (int d = 0; d < access->u.access.n; d++) {
		const tessel_expr *ix = access->u.access.index[d];
		const tessel_var *v = ix->kind == TE_VAR ? ix->u.var : NULL;
		if (v && v->is_reduce && v->index > g->raxis && t->extent[d] % g->group == 0) {
			g->input = t->name;
			g->dim = d;
			g->lane_dim = lane_dim;
			g->raxis = v->index;
			g->axes = 0;
			for (int k = 0; k < access->u.access.n; k++)
				spatial_vars(access->u.access.index[k], &g->axes);
		}
	}
	return 0;
}

/* Find the input of the tiled stage "t", summing in groups of "group",
 * whose elements its vector lanes along "lane_axis" multiply, the
 * dimension of it that the group's reduction axis indexes and the one the
 * lanes index (stage_info's group_input). */
static void find_group_input(const tessel_stage *t, int lane_axis, int group,
	const char **input, int *dim, int *lane_dim, int *raxis, int64_t *reuse)
{
	group_scan g = { lane_axis, group, NULL, -1, -1, -1, 0 };
	if (lane_axis >= 0 && lane_axis < 64)
		te_visit_accesses(t->body, false, access_in_groups, &g);
	*input = g.input;
	*dim = g.dim;
	*lane_dim = g.lane_dim;
	*raxis = g.raxis;
	*reuse = 1;
	for (int a = 0; a < t->ndim && a < 64; a++)
		if (!(g.axes & (1ull << a)))
			*reuse *= t->extent[a];
}

/* Return the dot group of the tiled stage "t" on the CPU "cpu" with
 * vectors of "vector_bytes" (stage_info.dot_group): bf16 pairs and i8
 * quads with AVX512's dot instructions, and on AVX2 pairs of 8-bit
 * integers widened to i16 (vpmaddwd). */
static int dot_group_of(const tessel_stage *t, const rt_cpu_target *cpu, int vector_bytes)
{
	if (vector_bytes == 32 && rt_cpu_has(cpu, RT_CPU_AVX2) && t->dtype == TESSEL_I32 &&
	    sums_products(t, TESSEL_I32, TESSEL_I8, TESSEL_U8))
		return 2;
	if (vector_bytes < 64)
		return 0;
	if (rt_cpu_has(cpu, RT_CPU_AVX512_BF16) &&
	    (t->dtype == TESSEL_BF16 || t->dtype == TESSEL_F32) &&
	    sums_products(t, TESSEL_F32, TESSEL_BF16, TESSEL_BF16))
		return 2;
	if (rt_cpu_has(cpu, RT_CPU_AVX512_VNNI) && t->dtype == TESSEL_I32 &&
	    sums_products(t, TESSEL_I32, TESSEL_I8, TESSEL_U8))
		return 4;
	return 0;
}

/* Set the dot group of the tiled stage "t" of "in" on the CPU "cpu" with
 * vectors of "vector_bytes", and where it has one, the inputs its lanes
 * multiply that could be packed in groups (stage_info). */
static void analyse_groups(const tessel_stage *t, const rt_cpu_target *cpu,
	int vector_bytes, stage_info *in)
{
	in->dot_group = dot_group_of(t, cpu, vector_bytes);
	if (!in->dot_group)
		return;
	in->dot_name = in->dot_group == 4 ? "i8 quads" : t->dtype == TESSEL_I32 ? "i8 pairs" :
		"bf16 pairs";
	find_group_input(t, t->ndim - 1, in->dot_group, &in->group_input, &in->group_dim,
		&in->group_lane_dim, &in->group_raxis, &in->group_reuse);
	find_group_input(t, in->lane_axis, in->dot_group, &in->lane_group_input,
		&in->lane_group_dim, &in->lane_group_lane_dim, &in->lane_group_raxis,
		&in->lane_group_reuse);
}

/* Return whether a reduction of "info" has too little spatial work or
 * too long a reduction for plain loops, so that rfactor pays. */
static bool rfactor_pays(const tune_space *sp, const stage_info *info)
{
	return info->nraxes > 0 && info->reduction >= 64 &&
	       (info->role == ROLE_REDUCE || info->spatial < (int64_t)sp->cores * 16);
}

/* Return whether sketch "k" runs the vector lanes of the tiles of "in"
 * along its lane_axis. */
static bool moves_lanes(const sketch *k, const stage_info *in)
{
	return k->lanes_moved && k->tile == TILE_CACHE && in->role == ROLE_TILE &&
	       in->lane_axis >= 0;
}

/* Return the input that sketch "k" packs for the tiles of "in", and in
 * "*dim" the dimension of it that the lanes index; NULL when none. */
static const char *packed_input(const sketch *k, const stage_info *in, int *dim)
{
	if (moves_lanes(k, in)) {
		*dim = in->lane_pack_dim;
		return in->lane_pack_input;
	}
	*dim = in->pack_dim;
	return k->pack && in->role == ROLE_TILE ? in->pack_input : NULL;
}

/* Return the input that sketch "k" packs in groups for the tiles of
 * "in", and in "*dim" and "*lane_dim" the dimensions the group's
 * reduction axis and the lanes index; NULL when none. */
static const char *grouped_input(const sketch *k, const stage_info *in, int *dim,
	int *lane_dim)
{
	if (!k->groups_packed || !k->dot_groups || !in->dot_group)
		return NULL;
	bool lanes = moves_lanes(k, in);
	*dim = lanes ? in->lane_group_dim : in->group_dim;
	*lane_dim = lanes ? in->lane_group_lane_dim : in->group_lane_dim;
	return lanes ? in->lane_group_input : in->group_input;
}

/* Add sketch "k" (its rules; the name is made here) to "sp". */
static void add_sketch(tune_space *sp, sketch k)
{
	if (sp->nsketches == MAX_SKETCHES)
		return;
	size_t len = 0;
	k.name[0] = '\0';
	for (int i = 0; i < sp->nstages && len < sizeof(k.name) - 64; i++) {
		const stage_info *in = &sp->info[i];
		const char *rule = "parallel, vectorize";
		if (in->role == ROLE_INLINE)
			rule = in->inline_optional ? "inline or root" : "inline";
		else if (in->role == ROLE_TILE && k.tile == TILE_CACHE)
			rule = in->fusable_consumer >= 0 ? "SSRSRS, fused consumer" :
			       "SSRSRS, cache_write";
		else if (in->role == ROLE_TILE && k.tile == TILE_IN_PLACE)
			rule = "SSRSRS in place";
		else if (k.rfactor && rfactor_pays(sp, in))
			rule = "rfactor";
		else if (k.block && in->block_axis >= 0)
			rule = "blocked, parallel, vectorize";
		len += (size_t)snprintf(k.name + len, sizeof(k.name) - len, "%s%s: %s",
			i ? "; " : "", in->name, rule);
		int dim, gdim, ldim;
		const char *grouped = grouped_input(&k, in, &gdim, &ldim);
		const char *pack = grouped ? NULL : packed_input(&k, in, &dim);
		if (moves_lanes(&k, in) && len < sizeof(k.name))
			len += (size_t)snprintf(k.name + len, sizeof(k.name) - len,
				", lanes along %s", in->lane_axis_name);
		if (pack && len < sizeof(k.name))
			len += (size_t)snprintf(k.name + len, sizeof(k.name) - len,
				", %s packed", pack);
		if (k.panel && in->role == ROLE_TILE && in->panel_input && len < sizeof(k.name))
			len += (size_t)snprintf(k.name + len, sizeof(k.name) - len,
				", %s panel", in->panel_input);
		if (k.dot_groups && in->dot_group && len < sizeof(k.name))
			len += (size_t)snprintf(k.name + len, sizeof(k.name) - len,
				", %s", in->dot_name);
		if (grouped && len < sizeof(k.name))
			len += (size_t)snprintf(k.name + len, sizeof(k.name) - len,
				" of %s packed in groups", grouped);
	}
	sp->sketches[sp->nsketches++] = k;
}

/* Return whether packing the input "input" of a stage that sums in
 * groups of "group", whose every element "reuse" rows of tiles read,
 * surely pays for the copy, so that no tile need interleave it: quads,
 * whose interleave takes ten instructions a vector at every read, read
 * many times (docs/tuner.md, "packed in groups").  The pairs' interleave
 * takes four, and the search measures both forms. */
static bool pack_in_groups_pays(const char *input, int group, int64_t reuse)
{
	return input && group == 4 && reuse >= PACK_IN_GROUPS_REUSE;
}

tune_space *tune_space_new(const tune_task *task)
{
	sch_state *st = sch_state_new(task->ctx, task->op);
	tune_space *sp = calloc(1, sizeof(*sp));
	if (!st || !sp || !(sp->info = calloc((size_t)st->nstages + 1, sizeof(stage_info)))) {
		sch_state_free(st);
		tune_space_free(sp);
		te_error(task->ctx, TESSEL_ERR_LIMIT, (tessel_loc){ 0 }, "out of memory");
		return NULL;
	}
	sp->task = task;
	sp->nstages = st->nstages;
	sp->cores = task->cpu.cores > 0 ? task->cpu.cores : 1;
	sp->vector_bytes = task->cpu.vector_bytes > 0 ? task->cpu.vector_bytes : 16;
	bool any_tile = false, any_rfactor = false, any_pack = false, any_panel = false,
	     any_block = false, any_lanes = false, any_groups = false,
	     any_group_input = false, any_lane_group_input = false,
	     groups_interleaved = false, lane_groups_interleaved = false;
	for (int i = 0; i < st->nstages; i++) {
		stage_info *in = &sp->info[i];
		analyse_stage(st, i, sp->vector_bytes, in);
		if (in->role == ROLE_TILE && !tune_task_is_gpu(task))
			analyse_groups(st->stages[i].te, &task->cpu, sp->vector_bytes, in);
		any_groups |= in->dot_group > 0;
		any_group_input |= in->group_input != NULL;
		any_lane_group_input |= in->lane_group_input != NULL;
		groups_interleaved |= in->dot_group && !pack_in_groups_pays(in->group_input,
			in->dot_group, in->group_reuse);
		lane_groups_interleaved |= in->dot_group && !pack_in_groups_pays(
			in->lane_group_input, in->dot_group, in->lane_group_reuse);
		any_tile |= sp->info[i].role == ROLE_TILE;
		any_rfactor |= rfactor_pays(sp, &sp->info[i]);
		any_pack |= sp->info[i].pack_input != NULL;
		any_panel |= sp->info[i].panel_input != NULL;
		any_block |= sp->info[i].block_axis >= 0;
		any_lanes |= sp->info[i].lane_axis >= 0;
	}
	sch_state_free(st);
	if (tune_task_is_gpu(task)) {
		sp->gpu = true;
		sp->max_threads = task->gpu.max_threads > 0 ? task->gpu.max_threads : 1;
		sp->shared_bytes = task->gpu.shared_bytes;
		sp->launch_bounds = task->kind == RT_TARGET_CUDA;
		sk_gpu_add_sketches(sp);
		return sp;
	}
	tile_mode tile = any_tile ? TILE_CACHE : TILE_NONE;
	if (any_tile) {
		add_sketch(sp, (sketch){ .tile = TILE_CACHE });
		add_sketch(sp, (sketch){ .tile = TILE_IN_PLACE });
	}
	if (any_pack)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .pack = true });
	if (any_panel) {
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .panel = true });
		add_sketch(sp, (sketch){ .tile = TILE_IN_PLACE, .panel = true });
	}
	if (any_lanes)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .lanes_moved = true });
	if (any_groups && groups_interleaved)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .dot_groups = true });
	if (any_groups && groups_interleaved && any_pack)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .pack = true, .dot_groups = true });
	if (any_groups && lane_groups_interleaved && any_lanes)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .lanes_moved = true,
			.dot_groups = true });
	if (any_group_input)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .dot_groups = true,
			.groups_packed = true });
	if (any_lane_group_input)
		add_sketch(sp, (sketch){ .tile = TILE_CACHE, .lanes_moved = true,
			.dot_groups = true, .groups_packed = true });
	if (any_rfactor)
		add_sketch(sp, (sketch){ .tile = tile, .rfactor = true });
	if (any_block)
		add_sketch(sp, (sketch){ .tile = tile, .block = true });
	add_sketch(sp, (sketch){ .tile = TILE_NONE });
	return sp;
}

void tune_space_free(tune_space *sp)
{
	if (!sp)
		return;
	free(sp->info);
	free(sp);
}

int tune_space_num_sketches(const tune_space *sp)
{
	return sp->nsketches;
}

const char *tune_space_sketch_name(const tune_space *sp, int i)
{
	return i >= 0 && i < sp->nsketches ? sp->sketches[i].name : "";
}

/* ---- random decisions ------------------------------------------------------------ */

/* Return how many multiples of "multiple" in [multiple, max] divide "n":
 * the tile sizes that fill vectors (or registers) exactly. */
static int64_t good_divisors(int64_t n, int64_t max, int64_t multiple)
{
	int64_t count = 0;
	for (int64_t d = multiple > 1 ? multiple : 2; d <= n && d <= max; d += multiple)
		count += n % d == 0;
	return count;
}

/* Whether the innermost tile factor of an axis of extent "n" (at most
 * "max", a multiple of "multiple") has too few sizes that divide "n" to
 * choose from: none at all, or, on a vector axis, fewer than half the
 * whole numbers of vectors up to "max" (1000 on 8 lanes: only 8 of 8,
 * 16, 24 and 32 divides it, and its best register tiles were 1x40 and
 * 2x8, where 1024 has 4x16). */
static bool few_divisors(int64_t n, int64_t max, int64_t multiple)
{
	int64_t good = good_divisors(n, max, multiple);
	return good == 0 || (multiple > 1 && 2 * good < max / multiple);
}

/* Draw tile factors of an axis of extent "n" into "levels" factors,
 * outermost first, as sk_perfect_tile does; but where "n" has few
 * divisors that fill the innermost level (few_divisors, up to
 * "max"[levels - 1], multiples of "inner_multiple"), half the time the
 * innermost factor is such a multiple that need not divide "n", and
 * the levels above it a perfect factorization of the number of tiles.
 * The last tile of each level is then partial: lowering guards it and
 * loop partitioning (ir/loop_partition.c) keeps the guards out of the
 * full tiles. */
static void draw_tile(uint64_t *rng, int64_t n, int levels, const int64_t *max,
	int64_t inner_multiple, int64_t *f)
{
	int64_t top = max[levels - 1], m = inner_multiple > 0 ? inner_multiple : 1;
	if (levels < 2 || top < m || !few_divisors(n, top, m) || sk_chance(rng, 50)) {
		sk_perfect_tile(rng, n, levels, max, inner_multiple, f);
		return;
	}
	int64_t inner = m * (1 + sk_below(rng, top / m));
	if (inner >= n) {
		sk_perfect_tile(rng, n, levels, max, inner_multiple, f);
		return;
	}
	sk_perfect_tile(rng, (n + inner - 1) / inner, levels - 1, max, 1, f);
	f[levels - 1] = inner;
}

/* Vector lanes of stage "s"'s elements on the target (of its buffer:
 * f32 for a sum into halves). */
static int64_t lanes_of(const tune_space *sp, const sch_stage *s)
{
	int64_t size = tessel_dtype_size(sch_buffer_dtype(s->te));
	int64_t lanes = size > 0 ? sp->vector_bytes / size : 1;
	return lanes > 0 ? lanes : 1;
}

static int do_rfactor(sch_state *st, const char *loop, const char *unused)
{
	(void)unused;
	return sch_rfactor(st, loop);
}

/* Return how many of the "n" outer loops of "extent" to fuse for the
 * parallel loop: the fewest that give each core enough work, sometimes
 * one more or one fewer. */
static int fuse_count(const tune_space *sp, uint64_t *rng, const int64_t *extent, int n)
{
	if (n == 0)
		return 0;
	int k = 1;
	int64_t work = extent[0];
	while (k < n && work < (int64_t)sp->cores * PAR_PER_CORE)
		work *= extent[k++];
	int64_t r = sk_below(rng, 4);
	if (r == 0 && k < n)
		k++;
	else if (r == 1 && k > 1)
		k--;
	return k;
}

/* Fuse the "n" outermost iters "outer" of "s" as "fuse_count" says and
 * make the result parallel; return the parallel iter (or the outermost
 * iter when parallel was refused), -1 on failure. */
static int parallel_outer(const tune_space *sp, sch_state *st, int s, const int *outer,
	int n, uint64_t *rng)
{
	int64_t ext[MAX_AXES];
	for (int i = 0; i < n; i++)
		ext[i] = st->stages[s].iters[outer[i]].extent;
	int k = fuse_count(sp, rng, ext, n);
	if (k == 0)
		return -1;
	int p = sk_fuse_iters(st, s, outer, k);
	if (p < 0)
		return -1;
	if (sp->cores > 1)
		sk_try_annotate(st, s, p, sch_parallel);
	return p;
}

static void maybe_auto_unroll(sch_state *st, int s, uint64_t *rng)
{
	int64_t v = unroll_steps[sk_below(rng, UNROLL_CHOICES)];
	const sch_stage *ss = &st->stages[s];
	if (v == 0 || ss->nleaves == 0)
		return;
	char q[QNAME];
	sk_qname(st, s, ss->leaves[0], q);
	if (sch_annotate(st, q, "auto_unroll_max_step", v))
		tessel_ctx_clear_error(st->ctx);
}

/* ---- multi-level tiling -------------------------------------------------------------- */

/* Tile factors of one spatial axis: S0 S1 S2 S3, outermost first (S0
 * the number of tiles, rounded up). */
typedef int64_t tile4[4];

static void draw_spatial_tiles(uint64_t *rng, int64_t lanes, const int64_t *extent, int n,
	uint64_t wide, int lane_dim, tile4 *t)
{
	for (int d = 0; d < n; d++) {
		bool contiguous = d == lane_dim;
		const int64_t max[4] = { 0, MAX_S1, (wide >> d) & 1 ? MAX_S2_PANEL : MAX_S2,
			contiguous ? lanes * MAX_S3_VECTORS : MAX_S3 };
		draw_tile(rng, extent[d], 4, max, contiguous ? lanes : 1, t[d]);
	}
}

static int do_cache_read_local(sch_state *st, const char *tensor, const char *reader)
{
	return sch_cache_read(st, tensor, "local", 1, &reader);
}

/* Return whether iter "it" of stage "s" (one of its axes) indexes the
 * panel of "panel". */
static bool in_panel(const sch_state *st, int s, int it, const stage_info *panel)
{
	const sch_iter *i = &st->stages[s].iters[it];
	return i->origin == SCH_AXIS && i->axis < 64 && ((panel->panel_axes >> i->axis) & 1);
}

/* Rule "panel", after the tiling of "s": read the panel input of "panel"
 * through a local copy computed at "at", the innermost loop whose
 * iterations read another panel.  Each copy holds the R1 rows of the
 * panel that the tiles of the S2 loops inside read, contiguous, and
 * every one of those tiles reads it from there. */
static int copy_panel(sch_state *st, int s, int at, const stage_info *panel, uint64_t *rng)
{
	const char *reader = st->stages[s].name;
	char loop[QNAME];
	sk_qname(st, s, at, loop);
	int c = sk_make_stage(st, do_cache_read_local, panel->panel_input, reader);
	if (c < 0)
		return -1;
	char copy[SCH_NAME_MAX];
	snprintf(copy, sizeof(copy), "%s", st->stages[c].name);
	if (sch_compute_at(st, copy, loop))
		return -1;
	c = sk_stage_named(st, copy);
	sk_nest n;
	if (c >= 0 && sk_chance(rng, 50) && sk_nest_of(st, c, &n) == 0 && n.nspatial)
		sk_try_annotate(st, c, n.spatial[n.nspatial - 1], sch_vectorize);
	return 0;
}

/* Append to "order" (at "*k") those of the "n" iters "iters" whose flag
 * in "which" equals "want", in their order; return the last appended,
 * or -1 when none was. */
static int append_where(int *order, int *k, const int *iters, int n, const bool *which,
	bool want)
{
	int last = -1;
	for (int d = 0; d < n; d++)
		if (which[d] == want)
			order[(*k)++] = last = iters[d];
	return last;
}

/* Tile the reduction "inner" (its loops R0 S2 R1 S3) with the spatial
 * factors "t", S3 unrolled and the innermost vectorized.  With "panel",
 * the S2 loops of the axes that index its panel input go outside the
 * others, R1 is drawn up to MAX_R1_PANEL, and copy_panel packs the
 * panel at the innermost of them.  The R1 factor of the reduction axis
 * "group_raxis" (>= 0: an input packed in groups of "group" along it) is
 * a multiple of the group, so that a group of consecutive values can be
 * split from it. */
static int tile_inner(const tune_space *sp, sch_state *st, int s, tile4 *t,
	const stage_info *panel, int group, int group_raxis, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n))
		return -1;
	sk_drop_unit_loops(st, s, &n);
	int order[4 * MAX_AXES], k = 0;
	int s2[MAX_AXES], s3[MAX_AXES], r0[MAX_AXES], r1[MAX_AXES];
	bool moves[MAX_AXES];
	for (int d = 0; d < n.nspatial; d++) {
		moves[d] = panel && in_panel(st, s, n.spatial[d], panel);
		if (sk_split_iter(st, s, n.spatial[d], t[d][3], &s2[d], &s3[d]))
			return -1;
	}
	for (int r = 0; r < n.nreduce; r++) {
		const sch_iter *it = &st->stages[s].iters[n.reduce[r]];
		const int64_t *max = panel ? panel_reduce_max : reduce_max;
		int64_t f[2], g = group_raxis >= 0 && it->origin == SCH_AXIS &&
			it->axis == st->stages[s].te->ndim + group_raxis &&
			it->extent % group == 0 ? group : 1;
		int64_t max_in_groups[2] = { 0, max[1] / g };
		sk_perfect_tile(rng, it->extent / g, 2, max_in_groups, 1, f);
		if (sk_split_iter(st, s, n.reduce[r], f[1] * g, &r0[r], &r1[r]))
			return -1;
	}
	for (int r = 0; r < n.nreduce; r++)
		order[k++] = r0[r];
	int at = append_where(order, &k, s2, n.nspatial, moves, true);
	if (at < 0)
		at = n.nreduce ? r0[n.nreduce - 1] : -1;
	append_where(order, &k, s2, n.nspatial, moves, false);
	for (int r = 0; r < n.nreduce; r++)
		order[k++] = r1[r];
	for (int d = 0; d < n.nspatial; d++)
		order[k++] = s3[d];
	if (sk_reorder_iters(st, s, order, k))
		return -1;
	for (int d = 0; d + 1 < n.nspatial; d++)
		if (t[d][3] > 1)
			sk_try_annotate(st, s, s3[d], sch_unroll);
	if (n.nspatial)
		sk_try_annotate(st, s, s3[n.nspatial - 1], sch_vectorize);
	maybe_auto_unroll(st, s, rng);
	if (panel && at >= 0)
		return copy_panel(st, s, at, panel, rng);
	(void)sp;
	return 0;
}

/* Tile "outer" (a copy-out or an elementwise consumer, spatial loops only)
 * S0 S1 S2 with "t", run the fused S0 loops in parallel, and compute the
 * reduction "inner" inside, tiled by tile_inner.  The vector lanes run
 * along the innermost axis, or with "lane_axis" >= 0 along that axis of
 * "outer", which "inner" stores last (store_axis_last). */
static int tile_two_stages(const tune_space *sp, sch_state *st, int outer, int inner,
	const stage_info *panel, int lane_axis, int group, int group_raxis, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, outer, &n) || n.nreduce)
		return -1;
	sk_drop_unit_loops(st, outer, &n);
	if (n.nspatial == 0)
		return -1;
	int nd = n.nspatial, lane_dim = lane_axis >= 0 ? -1 : nd - 1;
	int64_t extent[MAX_AXES] = { 0 };
	tile4 t[MAX_AXES], t_inner[MAX_AXES];
	uint64_t wide = 0;
	for (int d = 0; d < nd; d++) {
		const sch_iter *it = &st->stages[outer].iters[n.spatial[d]];
		extent[d] = it->extent;
		if (panel && !in_panel(st, outer, n.spatial[d], panel))
			wide |= 1ull << d;
		if (lane_axis >= 0 && it->origin == SCH_AXIS && it->axis == lane_axis)
			lane_dim = d;
	}
	if (lane_dim < 0)
		return -1;
	draw_spatial_tiles(rng, lanes_of(sp, &st->stages[inner]), extent, nd, wide, lane_dim, t);
	for (int d = 0, k = 0; d < nd; d++)
		if (d != lane_dim)
			memcpy(t_inner[k++], t[d], sizeof(tile4));
	memcpy(t_inner[nd - 1], t[lane_dim], sizeof(tile4));
	int l0[MAX_AXES], l1[MAX_AXES], l2[MAX_AXES], rest;
	for (int d = 0; d < nd; d++)
		if (sk_split_iter(st, outer, n.spatial[d], t[d][1] * t[d][2] * t[d][3], &l0[d], &rest) ||
		    sk_split_iter(st, outer, rest, t[d][2] * t[d][3], &l1[d], &l2[d]))
			return -1;
	int order[3 * MAX_AXES], k = 0;
	for (int l = 0; l < 3; l++)
		for (int d = 0; d < nd; d++)
			order[k++] = (l == 0 ? l0 : l == 1 ? l1 : l2)[d];
	if (sk_reorder_iters(st, outer, order, k))
		return -1;
	int p = parallel_outer(sp, st, outer, l0, nd, rng);
	if (p < 0)
		return -1;
	int at = sk_chance(rng, 75) ? l1[nd - 1] : p;
	char q[QNAME];
	sk_qname(st, outer, at, q);
	if (sch_compute_at(st, st->stages[inner].name, q))
		return -1;
	if (lane_dim == nd - 1)
		sk_try_annotate(st, outer, l2[nd - 1], sch_vectorize);
	return tile_inner(sp, st, inner, t_inner, panel, group, group_raxis, rng);
}

static int do_cache_read_global(sch_state *st, const char *tensor, const char *reader)
{
	return sch_cache_read(st, tensor, "global", 1, &reader);
}

/* The blocking factors tried for each of the two axes a packing copy
 * transposes: one row of blocks stays within a few pages either way. */
#define PACK_CHOICES 4
static const int64_t pack_blocks[PACK_CHOICES] = { 8, 16, 32, 64 };

/* Return a packing block factor for an axis of extent "n": a drawn one
 * that divides it, else the largest that does, else "n". */
static int64_t pack_block(uint64_t *rng, int64_t n)
{
	int64_t b = pack_blocks[sk_below(rng, PACK_CHOICES)];
	for (int i = PACK_CHOICES - 1; n % b && i >= 0; i--)
		b = pack_blocks[i];
	return n % b == 0 && b < n ? b : n;
}

/* Store the stage "name" (not an output, at the root with its default
 * loops) with its axis "last" last and the others in their order
 * (reorder_storage): vector lanes along that axis are then adjacent. */
static int store_axis_last(sch_state *st, const char *name, int last)
{
	int s = sk_stage_named(st, name);
	if (s < 0)
		return -1;
	const tessel_stage *t = st->stages[s].te;
	char axes[TESSEL_MAX_DIMS][QNAME];
	const char *names[TESSEL_MAX_DIMS];
	int n = t->ndim, k = 0;
	if (last >= n)
		return -1;
	for (int d = 0; d <= n; d++) {
		if (d == last)
			continue;
		snprintf(axes[k], QNAME, "%s.%s", name, t->axes[d == n ? last : d]->name);
		names[k] = axes[k];
		k++;
	}
	return sch_reorder_storage(st, n, names);
}

/* Rule "packed input" of the tiled stage "reader", its first half
 * (before the stage is tiled): its input "input" is read through a copy
 * (cache_read global) stored with dimension "dim" last
 * (reorder_storage), so that the vector lanes of the tiles read it
 * contiguously.  Store the copy's name in "copy". */
static int pack_input(sch_state *st, const char *reader, const char *input, int dim,
	char copy[SCH_NAME_MAX])
{
	int p = sk_make_stage(st, do_cache_read_global, input, reader);
	if (p < 0)
		return -1;
	snprintf(copy, SCH_NAME_MAX, "%s", st->stages[p].name);
	return store_axis_last(st, copy, dim);
}

/* Rule "packed in groups" of the tiled stage "reader" (before it is
 * tiled), which sums products in groups of "group": its input "input" is
 * read through a copy whose dimension "dim" (the group's reduction axis)
 * is stored split by the group (split_storage), the inner part last,
 * after the dimension "lane_dim" the vector lanes index (reorder_storage):
 * each lane's group side by side, lane after lane, one vector load of
 * the groups of the lanes.  Store the copy's name in "copy". */
static int pack_in_groups(sch_state *st, const char *reader, const char *input,
	int dim, int lane_dim, int group, char copy[SCH_NAME_MAX])
{
	int p = sk_make_stage(st, do_cache_read_global, input, reader);
	if (p < 0)
		return -1;
	snprintf(copy, SCH_NAME_MAX, "%s", st->stages[p].name);
	char axis[QNAME], names[TESSEL_MAX_DIMS][QNAME];
	const char *order[TESSEL_MAX_DIMS];
	const tessel_stage *t = st->stages[p].te;
	int n = t->ndim, k = 0;
	if (n >= TESSEL_MAX_DIMS)
		return -1;
	snprintf(axis, QNAME, "%s.%s", copy, t->axes[dim]->name);
	if (sch_split_storage(st, axis, group))
		return -1;
	t = st->stages[sk_stage_named(st, copy)].te;
	int inner = dim + 1, lanes = lane_dim > dim ? lane_dim + 1 : lane_dim;
	for (int d = 0; d <= n; d++)
		if (d != inner && d != lanes)
			snprintf(names[k++], QNAME, "%s.%s", copy, t->axes[d]->name);
	snprintf(names[k++], QNAME, "%s.%s", copy, t->axes[lanes]->name);
	snprintf(names[k++], QNAME, "%s.%s", copy, t->axes[inner]->name);
	for (int d = 0; d < k; d++)
		order[d] = names[d];
	return sch_reorder_storage(st, k, order);
}

/* Return how many times over computing the copy "p" at the outermost
 * loop of the root stage "c" would compute its elements: one iteration's
 * region times the iterations, over the whole copy; 0 when unknown. */
static double pack_repeats(sch_state *st, int p, int c)
{
	sch_region r;
	if (sch_region_compute(st, p, &st->stages[c], false, 0, &r)) {
		tessel_ctx_clear_error(st->ctx);
		return 0;
	}
	const tessel_stage *t = st->stages[p].te;
	double once = 1, all = 1;
	for (int d = 0; d < t->ndim; d++) {
		once *= (double)r.shape[d];
		all *= (double)t->extent[d];
	}
	sch_region_free(&r);
	const sch_stage *cs = &st->stages[c];
	return once * (double)cs->iters[cs->leaves[0]].extent / all;
}

/* Its second half (after the tiling): the copy is computed at the root,
 * or, when its reader (the accumulator) is computed at a loop of a stage
 * whose outermost loop is parallel and the iterations of that loop read
 * disjoint panels of it, at that parallel loop: each iteration packs the
 * panel all its tiles read, while it is in cache, and the packing runs
 * in parallel with no pass of its own.  Where the panels overlap so that
 * the copy would be computed at most twice over, that is drawn half the
 * time; beyond, never.
 * It transposes: its last two loops are blocked (tiles of 8 to 64 either
 * way), at the root the loops above the blocks fused and run in
 * parallel; the innermost is sometimes vectorized. */
static int schedule_pack(const tune_space *sp, sch_state *st, const char *copy,
	uint64_t *rng)
{
	int p = sk_stage_named(st, copy);
	if (p < 0)
		return -1;
	for (int r = 0; r < st->nstages; r++) {
		const sch_stage *rs = &st->stages[r];
		if (r == p || !sch_reads(st, r, p) || rs->attach != SCH_AT)
			continue;
		const sch_stage *os = &st->stages[rs->attach_stage];
		if (os->attach == SCH_ROOT && os->nleaves &&
		    os->iters[os->leaves[0]].kind == LOOP_PARALLEL) {
			double repeats = pack_repeats(st, p, rs->attach_stage);
			if (repeats <= 0 || repeats > 2 || (repeats > 1 && sk_chance(rng, 50)))
				break;
			char at[QNAME];
			sk_qname(st, rs->attach_stage, os->leaves[0], at);
			if (sch_compute_at(st, copy, at))
				tessel_ctx_clear_error(st->ctx);
		}
		break;
	}
	sk_nest o;
	int n = st->stages[p].te->ndim;
	if (sk_nest_of(st, p, &o) || o.nspatial != n || n < 2)
		return -1;
	int bo, bi, ao, ai, order[MAX_AXES], c = 0;
	int b = o.spatial[n - 2], a = o.spatial[n - 1];
	if (sk_split_iter(st, p, b, pack_block(rng, st->stages[p].iters[b].extent), &bo, &bi) ||
	    sk_split_iter(st, p, a, pack_block(rng, st->stages[p].iters[a].extent), &ao, &ai))
		return -1;
	for (int d = 0; d < n - 2; d++)
		order[c++] = o.spatial[d];
	order[c++] = bo;
	order[c++] = ao;
	int nouter = c;
	order[c++] = bi;
	order[c++] = ai;
	if (sk_reorder_iters(st, p, order, c))
		return -1;
	if (sk_chance(rng, 50))
		sk_try_annotate(st, p, ai, sch_vectorize);
	if (st->stages[p].attach == SCH_ROOT && parallel_outer(sp, st, p, order, nouter, rng) < 0)
		tessel_ctx_clear_error(st->ctx);
	return 0;
}

/* Rule "SSRSRS, cache_write" (or ", fused consumer") for stage "name";
 * "consumer" is its fusable consumer or NULL; "lane_axis" >= 0 runs the
 * vector lanes along that axis. */
/* Return whether the iter "it" of "ss" is the innermost part of the
 * reduction axis "raxis" of its stage (the inner part of splits of it
 * all the way: consecutive values of it), or of any reduction axis when
 * "raxis" is -1. */
static bool innermost_part(const sch_stage *ss, int it, int raxis)
{
	const sch_iter *i = &ss->iters[it];
	while (i->origin == SCH_SPLIT_INNER)
		i = &ss->iters[i->parent];
	return i->origin == SCH_AXIS && i->reduce &&
	       (raxis < 0 || i->axis == ss->te->ndim + raxis);
}

/* Sum the products of the tile of stage "name" in groups of "group"
 * (annotate dot_pairs or dot_quads; codegen/cpu_c.c): its innermost
 * reduction loop whose extent "group" divides (a convolution's channels,
 * not its window of 3) split by it, the loop of the group moved to just
 * outside the vectorized innermost loop.  With "raxis" >= 0 (an input
 * packed in groups of that reduction axis) the loop must be that axis's
 * innermost part, so that a group is consecutive values of it.  -1 where
 * the tile has no such loop. */
static int group_products(sch_state *st, const char *name, int group, int raxis)
{
	int s = sk_stage_named(st, name);
	const sch_stage *ss = s >= 0 ? &st->stages[s] : NULL;
	int last = ss ? ss->nleaves - 1 : -1, red = -1;
	if (last < 1 || ss->iters[ss->leaves[last]].kind != LOOP_VECTORIZED)
		return -1;
	for (int p = last - 1; p >= 0 && red < 0; p--)
		if (ss->iters[ss->leaves[p]].reduce &&
		    ss->iters[ss->leaves[p]].extent % group == 0 &&
		    (raxis < 0 || innermost_part(ss, ss->leaves[p], raxis)))
			red = p;
	if (red < 0)
		return -1;
	int grp = ss->leaves[red], outer;
	if (ss->iters[grp].extent > group && sk_split_iter(st, s, grp, group, &outer, &grp))
		return -1;
	ss = &st->stages[s];
	int from = sch_leaf_pos(ss, grp), order[4 * MAX_AXES], k = 0;
	if (ss->nleaves - from > 4 * MAX_AXES)
		return -1;
	for (int p = from + 1; p < ss->nleaves - 1; p++)
		order[k++] = ss->leaves[p];
	order[k++] = grp;
	order[k++] = ss->leaves[ss->nleaves - 1];
	if (k > 2 && sk_reorder_iters(st, s, order, k))
		return -1;
	char q[QNAME];
	sk_qname(st, s, grp, q);
	return sch_annotate(st, q, group == 2 ? "dot_pairs" : "dot_quads", 1);
}

static int tile_cached(const tune_space *sp, sch_state *st, const char *name,
	const char *consumer, const stage_info *panel, int lane_axis, int group,
	int group_raxis, uint64_t *rng)
{
	char inner[SCH_NAME_MAX];
	const char *outer = consumer ? consumer : name;
	snprintf(inner, sizeof(inner), "%s", name);
	if (!consumer) {
		int local = sk_make_stage(st, sk_do_cache_write, name, "local");
		if (local < 0)
			return -1;
		snprintf(inner, sizeof(inner), "%s", st->stages[local].name);
	}
	if (lane_axis >= 0 && store_axis_last(st, inner, lane_axis))
		return -1;
	int o = sk_stage_named(st, outer), i = sk_stage_named(st, inner);
	if (o < 0 || i < 0 ||
	    tile_two_stages(sp, st, o, i, panel, lane_axis, group, group_raxis, rng))
		return -1;
	return group ? group_products(st, inner, group, group_raxis) : 0;
}

/* Rule "SSRSRS in place": S0 S1 R0 S2 R1 S3 on the stage itself.  With
 * "panel" (the GotoBLAS order; docs/tuner.md, "in place with a panel"):
 * S0, the S1 loops of the axes that index the panel input, R0, the other
 * S1 loops, the S2 loops of the panel's axes, the other S2 loops, R1, S3;
 * R1 is drawn up to MAX_R1_PANEL and the other axes' S2 up to
 * MAX_S2_PANEL, and the panel input is read through a local copy
 * computed at the innermost R0 loop: a block of R1 rows that every tile
 * of the other axes reads, while the tiles accumulate in the stage's own
 * elements across the R0 blocks. */
static int tile_in_place(const tune_space *sp, sch_state *st, int s,
	const stage_info *panel, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n))
		return -1;
	sk_drop_unit_loops(st, s, &n);
	if (n.nspatial == 0 || (panel && n.nreduce == 0))
		return -1;
	int nd = n.nspatial, nr = n.nreduce;
	int64_t extent[MAX_AXES] = { 0 };
	uint64_t wide = 0;
	bool outer[MAX_AXES];  /* S1 outside R0 and S2 first: the panel's
	                        * axes, or all of them without a panel */
	tile4 t[MAX_AXES];
	for (int d = 0; d < nd; d++) {
		extent[d] = st->stages[s].iters[n.spatial[d]].extent;
		outer[d] = !panel || in_panel(st, s, n.spatial[d], panel);
		if (!outer[d])
			wide |= 1ull << d;
	}
	draw_spatial_tiles(rng, lanes_of(sp, &st->stages[s]), extent, nd, wide, nd - 1, t);
	int lv[4][MAX_AXES], r0[MAX_AXES], r1[MAX_AXES], rest, rest2;
	for (int d = 0; d < nd; d++)
		if (sk_split_iter(st, s, n.spatial[d], t[d][1] * t[d][2] * t[d][3], &lv[0][d], &rest) ||
		    sk_split_iter(st, s, rest, t[d][2] * t[d][3], &lv[1][d], &rest2) ||
		    sk_split_iter(st, s, rest2, t[d][3], &lv[2][d], &lv[3][d]))
			return -1;
	for (int r = 0; r < nr; r++) {
		int64_t f[2];
		sk_perfect_tile(rng, st->stages[s].iters[n.reduce[r]].extent, 2,
			panel ? panel_reduce_max : reduce_max, 1, f);
		if (sk_split_iter(st, s, n.reduce[r], f[1], &r0[r], &r1[r]))
			return -1;
	}
	int order[6 * MAX_AXES], k = 0;
	for (int d = 0; d < nd; d++)
		order[k++] = lv[0][d];
	append_where(order, &k, lv[1], nd, outer, true);
	for (int r = 0; r < nr; r++)
		order[k++] = r0[r];
	append_where(order, &k, lv[1], nd, outer, false);
	append_where(order, &k, lv[2], nd, outer, true);
	append_where(order, &k, lv[2], nd, outer, false);
	for (int r = 0; r < nr; r++)
		order[k++] = r1[r];
	for (int d = 0; d < nd; d++)
		order[k++] = lv[3][d];
	if (sk_reorder_iters(st, s, order, k))
		return -1;
	if (parallel_outer(sp, st, s, lv[0], nd, rng) < 0)
		return -1;
	for (int d = 0; d + 1 < nd; d++)
		if (t[d][3] > 1)
			sk_try_annotate(st, s, lv[3][d], sch_unroll);
	sk_try_annotate(st, s, lv[3][nd - 1], sch_vectorize);
	maybe_auto_unroll(st, s, rng);
	if (panel)
		return copy_panel(st, s, r0[nr - 1], panel, rng);
	return 0;
}

/* ---- stages without reuse ------------------------------------------------------------- */

/* Return in "*c" and "*it" the loop where every stage that reads "s" is
 * computed (compute_at) or whose stage is the only other reader: the one
 * place "s" can be computed once for all of them.  Return 0, or -1 when
 * the readers are elsewhere. */
static int shared_location(const sch_state *st, int s, int *c, int *it)
{
	*c = *it = -1;
	for (int k = 0; k < st->nstages; k++) {
		const sch_stage *ks = &st->stages[k];
		if (k == s || ks->attach == SCH_INLINE || !sch_reads(st, k, s))
			continue;
		if (ks->attach != SCH_AT)
			continue;
		if (*it >= 0 && (ks->attach_stage != *c || ks->attach_iter != *it))
			return -1;
		*c = ks->attach_stage;
		*it = ks->attach_iter;
	}
	for (int k = 0; k < st->nstages && *it >= 0; k++) {
		const sch_stage *ks = &st->stages[k];
		if (k != s && k != *c && ks->attach != SCH_INLINE && ks->attach != SCH_AT &&
		    sch_reads(st, k, s))
			return -1;
	}
	return *it >= 0 ? 0 : -1;
}

/* Try to compute stage "s" inside one of the outer half of the loops of
 * the one stage that reads it, or at the loop where all its readers are
 * computed (then once per iteration for all of them); return 0 when it
 * is computed there. */
static int try_compute_at_consumer(sch_state *st, int s, uint64_t *rng)
{
	int readers[64], nr = 0, c, it;
	for (int k = 0; k < st->nstages && nr < 64; k++)
		if (k != s && st->stages[k].attach != SCH_INLINE && sch_reads(st, k, s))
			readers[nr++] = k;
	char q[QNAME];
	bool shared = shared_location(st, s, &c, &it) == 0;
	if (shared && (nr > 1 || sk_chance(rng, 50))) {
		sk_qname(st, c, it, q);
	} else {
		if (nr != 1)
			return -1;
		const sch_stage *cs = &st->stages[readers[0]];
		int spatial = 0;
		while (spatial < cs->nleaves && !cs->iters[cs->leaves[spatial]].reduce &&
		       cs->iters[cs->leaves[spatial]].kind != LOOP_VECTORIZED)
			spatial++;
		if (spatial == 0)
			return -1;
		int pos = (int)sk_below(rng, (spatial + 1) / 2);
		sk_qname(st, readers[0], cs->leaves[pos], q);
	}
	if (sch_compute_at(st, st->stages[s].name, q) == 0)
		return 0;
	tessel_ctx_clear_error(st->ctx);
	return -1;
}

/* Split spatial iter "iter" of "s" so that its inner part is whole
 * vectors; store the two parts, or "iter" as the inner one.  Return 0,
 * or -1 when the loop is too short or does not split. */
static int split_vectors(const tune_space *sp, sch_state *st, int s, int iter, uint64_t *rng,
	int *outer, int *inner)
{
	int64_t lanes = lanes_of(sp, &st->stages[s]);
	int64_t n = st->stages[s].iters[iter].extent;
	int64_t v = sk_random_divisor(rng, n, lanes * MAX_S3_VECTORS, lanes);
	if (v % lanes)
		v = lanes;
	if (n <= lanes || v >= n || sk_split_iter(st, s, iter, v, outer, inner)) {
		tessel_ctx_clear_error(st->ctx);
		*outer = -1;
		*inner = iter;
		return -1;
	}
	return 0;
}

/* Split spatial iter "iter" of "s", the innermost loop, as split_vectors
 * does and vectorize the inner part (or the loop whole, where it does
 * not split and that is legal); return as split_vectors. */
static int vector_split(const tune_space *sp, sch_state *st, int s, int iter, uint64_t *rng,
	int *outer, int *inner)
{
	int r = split_vectors(sp, st, s, iter, rng, outer, inner);
	sk_try_annotate(st, s, *inner, sch_vectorize);
	return r;
}

/* Put the reduction loops of nest "n" of "s" outside its spatial loops
 * but the first "keep" (which stay outermost), split the innermost
 * spatial loop into whole vectors (split_vectors) and vectorize them:
 * a reduction across rows then reads each row contiguously into a row
 * of accumulators.  Return 0, or -1 when the reorder is refused. */
static int reduce_outside_vectors(const tune_space *sp, sch_state *st, int s,
	const sk_nest *n, int keep, uint64_t *rng)
{
	int order[2 * MAX_AXES + 1], c = 0, outer, inner;
	for (int d = 0; d < keep; d++)
		order[c++] = n->spatial[d];
	for (int d = 0; d < n->nreduce; d++)
		order[c++] = n->reduce[d];
	for (int d = keep; d < n->nspatial; d++)
		order[c++] = n->spatial[d];
	if (split_vectors(sp, st, s, n->spatial[n->nspatial - 1], rng, &outer, &inner) == 0) {
		order[c - 1] = outer;
		order[c++] = inner;
	}
	if (sk_reorder_iters(st, s, order, c))
		return -1;
	sk_try_annotate(st, s, inner, sch_vectorize);
	return 0;
}

/* Vectorize the innermost loop of the elementwise stage "s", computed at
 * a loop of a stage at the root, when the region it computes there spans
 * at least a vector along that axis. */
static void vectorize_attached(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	const sch_stage *ss = &st->stages[s];
	sk_nest n;
	if (ss->te->nraxes > 0 || ss->attach != SCH_AT || sk_nest_of(st, s, &n) ||
	    n.nspatial == 0 || st->stages[ss->attach_stage].attach != SCH_ROOT)
		return;
	const sch_stage *cs = &st->stages[ss->attach_stage];
	int iter = n.spatial[n.nspatial - 1];
	if (ss->iters[iter].origin != SCH_AXIS)
		return;
	sch_region r;
	if (sch_region_compute(st, s, cs, false, sch_leaf_pos(cs, ss->attach_iter), &r)) {
		tessel_ctx_clear_error(st->ctx);
		return;
	}
	int64_t extent = r.shape[ss->iters[iter].axis];
	sch_region_free(&r);
	int outer, inner;
	if (extent >= lanes_of(sp, ss) && extent == ss->iters[iter].extent)
		vector_split(sp, st, s, iter, rng, &outer, &inner);
}

/* Rule for elementwise stages and reductions without reuse: at a loop of
 * the consumer, or at the root with the outer spatial loops parallel and
 * the innermost spatial loop vectorized (for a reduction, sometimes moved
 * inside the reduction loops, which suits reductions over outer axes). */
static int schedule_plain(const tune_space *sp, sch_state *st, int s, uint64_t *rng)
{
	if (!st->stages[s].te->is_output && sk_chance(rng, 60) &&
	    try_compute_at_consumer(st, s, rng) == 0) {
		vectorize_attached(sp, st, s, rng);
		return 0;
	}
	sk_nest n;
	if (sk_nest_of(st, s, &n))
		return -1;
	if (n.nspatial == 0)
		return 0;
	int nouter = n.nspatial, outer, inner;
	if (n.nreduce == 0 || sk_chance(rng, 50)) {
		if (split_vectors(sp, st, s, n.spatial[nouter - 1], rng, &outer, &inner) == 0) {
			n.spatial[nouter - 1] = outer;
			int order[MAX_AXES + 1], k = 0;
			for (int r = 0; r < n.nreduce; r++)
				order[k++] = n.reduce[r];
			order[k++] = inner;
			if (n.nreduce && sk_reorder_iters(st, s, order, k))
				tessel_ctx_clear_error(st->ctx);
		} else if (nouter > 1) {
			nouter--;
		}
		sk_try_annotate(st, s, inner, sch_vectorize);
	}
	if (parallel_outer(sp, st, s, n.spatial, nouter, rng) < 0)
		tessel_ctx_clear_error(st->ctx);
	return 0;
}

/* The largest block factor of the axis that indexes the contiguous
 * dimension of a transposed input (rule "blocked"): the rows of the
 * block, one cache line each, stay within the L1 cache. */
#define MAX_BLOCK_ROWS 512

/* Rule "blocked" for an elementwise stage at the root that reads an
 * input across its rows (stage_info.block_axis): the innermost spatial
 * loop (whole vectors, vectorized) and the loop of the input's
 * contiguous axis are split, their outer parts taken outside the inner
 * ones in either order, and the loops above the block fused and run in
 * parallel, so that each cache line of the input is read once for the
 * block's vectors rather than once per element.  A stage whose input
 * axis is too short to split gets rule "parallel, vectorize". */
static int schedule_blocked(const tune_space *sp, sch_state *st, int s, int axis,
	uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n) || n.nreduce || n.nspatial < 2)
		return -1;
	int a = -1, z = n.nspatial - 1;
	for (int d = 0; d < z; d++) {
		const sch_iter *it = &st->stages[s].iters[n.spatial[d]];
		if (it->origin == SCH_AXIS && it->axis == axis)
			a = d;
	}
	if (a < 0)
		return -1;
	int64_t na = st->stages[s].iters[n.spatial[a]].extent;
	int64_t fa = sk_random_divisor(rng, na, na > MAX_BLOCK_ROWS ? MAX_BLOCK_ROWS : na - 1,
		lanes_of(sp, &st->stages[s]));
	int ao, ai, zo, zi;
	if (fa <= 1)
		return schedule_plain(sp, st, s, rng);
	if (sk_split_iter(st, s, n.spatial[a], fa, &ao, &ai))
		return -1;
	vector_split(sp, st, s, n.spatial[z], rng, &zo, &zi);
	int order[MAX_AXES + 2], k = 0;
	for (int d = 0; d < z; d++)
		if (d != a)
			order[k++] = n.spatial[d];
	bool lines_outer = zo < 0 || sk_chance(rng, 50);
	order[k++] = lines_outer ? ao : zo;
	if (zo >= 0)
		order[k++] = lines_outer ? zo : ao;
	int nouter = k;
	order[k++] = ai;
	order[k++] = zi;
	if (sk_reorder_iters(st, s, order, k))
		return -1;
	if (parallel_outer(sp, st, s, order, nouter, rng) < 0)
		tessel_ctx_clear_error(st->ctx);
	return 0;
}

/* Vectorize the innermost loop of stage "s" when it is a reduction loop
 * (the reduction of an rfactor's lanes: a chain of adds or maxes becomes
 * a vector accumulation and a fold of its lanes). */
static void vectorize_final_reduction(sch_state *st, int s)
{
	sk_nest o;
	if (sk_nest_of(st, s, &o) || o.nreduce == 0)
		return;
	sk_try_annotate(st, s, o.reduce[o.nreduce - 1], sch_vectorize);
}

/* Rule "rfactor" for a reduction: its innermost reduction loop split and
 * factored, the inner part as vector lanes (the partials computed per
 * row of the stage, or at the root), or, when there is too little spatial
 * work for the cores (half the time) or the reduction runs across rows
 * (always), the outer part as parallel partials (across rows, one to
 * MAX_PARTS_PER_CORE per core, each a contiguous band of rows summed
 * into a vectorized row of accumulators, the reduction loops inside a
 * drawn number of the outer spatial loops); the stage's own reduction
 * of the lanes vectorized. */
static int schedule_rfactor(const tune_space *sp, sch_state *st, int s,
	const stage_info *in, uint64_t *rng)
{
	sk_nest n;
	if (sk_nest_of(st, s, &n) || n.nreduce == 0)
		return -1;
	char name[SCH_NAME_MAX];
	snprintf(name, sizeof(name), "%s", st->stages[s].name);
	int k = n.reduce[n.nreduce - 1];
	int64_t m = st->stages[s].iters[k].extent;
	int64_t lanes = lanes_of(sp, &st->stages[s]);
	int64_t spatial = 1;
	for (int d = 0; d < n.nspatial; d++)
		spatial *= st->stages[s].iters[n.spatial[d]].extent;
	bool partials = in->reduce_across_rows || (spatial < sp->cores && sk_chance(rng, 50));
	int64_t f;
	if (!partials)
		f = sk_random_divisor(rng, m, lanes * MAX_S3_VECTORS, lanes);
	else if (spatial < sp->cores)
		f = sk_random_divisor(rng, m, m / 2, 1);
	else
		f = m / sk_random_divisor(rng, m, sp->cores * MAX_PARTS_PER_CORE, sp->cores);
	if (f <= 1 || f >= m)
		return schedule_plain(sp, st, s, rng);
	int ko, ki;
	if (sk_split_iter(st, s, k, f, &ko, &ki))
		return -1;
	char q[QNAME];
	sk_qname(st, s, partials ? ko : ki, q);
	int rf = sk_make_stage(st, do_rfactor, q, NULL);
	sk_nest r;
	if (rf < 0 || sk_nest_of(st, rf, &r) || r.nspatial == 0)
		return -1;
	if (partials) {
		sk_try_annotate(st, rf, r.spatial[0], sch_parallel);
		if (in->reduce_across_rows && r.nspatial > 1 &&
		    reduce_outside_vectors(sp, st, rf, &r,
			    1 + (int)sk_below(rng, r.nspatial - 1), rng))
			tessel_ctx_clear_error(st->ctx);
		return 0;
	}
	int order[2 * MAX_AXES], c = 0;
	for (int d = 1; d < r.nspatial; d++)
		order[c++] = r.spatial[d];
	for (int d = 0; d < r.nreduce; d++)
		order[c++] = r.reduce[d];
	order[c++] = r.spatial[0];
	if (sk_reorder_iters(st, rf, order, c))
		return -1;
	sk_try_annotate(st, rf, r.spatial[0], sch_vectorize);
	s = sk_stage_named(st, name);
	sk_nest o;
	if (s < 0 || sk_nest_of(st, s, &o) || o.nspatial == 0)
		return 0;
	if (!st->stages[s].te->is_output && sk_chance(rng, 50) &&
	    try_compute_at_consumer(st, s, rng) == 0) {
		char at[QNAME];
		sk_qname(st, st->stages[s].attach_stage, st->stages[s].attach_iter, at);
		if (sch_compute_at(st, st->stages[rf].name, at))
			tessel_ctx_clear_error(st->ctx);
		vectorize_final_reduction(st, s);
		return 0;
	}
	if (sk_chance(rng, 50)) {
		char at[QNAME];
		sk_qname(st, s, o.spatial[o.nspatial - 1], at);
		if (sch_compute_at(st, st->stages[rf].name, at))
			tessel_ctx_clear_error(st->ctx);
	}
	if (sch_stage_is_default(&st->stages[s]) &&
	    parallel_outer(sp, st, s, o.spatial, o.nspatial, rng) < 0)
		tessel_ctx_clear_error(st->ctx);
	if (st->stages[rf].attach == SCH_ROOT && r.nspatial > 1)
		sk_try_annotate(st, rf, order[0], sch_parallel);
	vectorize_final_reduction(st, s);
	return 0;
}

/* ---- prefetch ------------------------------------------------------------------------- */

/* Return whether stage "s", or a stage computed inside its loops, reads
 * the input "t". */
static bool nest_reads(const sch_state *st, int s, const tessel_stage *t, int depth)
{
	if (depth > st->nstages)
		return false;
	if (sch_reads_tensor(st, s, t))
		return true;
	for (int k = 0; k < st->nstages; k++)
		if (k != s && sch_is_attached(&st->stages[k]) &&
		    st->stages[k].attach_stage == s && nest_reads(st, k, t, depth + 1))
			return true;
	return false;
}

/* Rule "prefetch": the parallel outer loop of a root stage, half of the
 * time, prefetches one of the inputs its nest reads (drawn; a loop
 * prefetches one) one or two iterations ahead: what the next rows of a
 * row-wise pass will read, while this one computes.  Memory-bound passes
 * gain; the search drops it elsewhere. */
static void maybe_prefetch(sch_state *st, uint64_t *rng)
{
	for (int s = 0; s < st->nstages; s++) {
		const sch_stage *ss = &st->stages[s];
		if (ss->attach != SCH_ROOT || ss->nleaves == 0 ||
		    ss->iters[ss->leaves[0]].kind != LOOP_PARALLEL || !sk_chance(rng, 50))
			continue;
		const tessel_stage *read[64];
		int n = 0;
		for (int i = 0; i < st->op->ninputs && n < 64; i++)
			if (nest_reads(st, s, st->op->inputs[i], 0))
				read[n++] = st->op->inputs[i];
		if (n == 0)
			continue;
		char q[QNAME];
		sk_qname(st, s, ss->leaves[0], q);
		int64_t d = prefetch_steps[1 + sk_below(rng, PREFETCH_CHOICES - 1)];
		if (sch_prefetch(st, q, read[sk_below(rng, n)]->name, d))
			tessel_ctx_clear_error(st->ctx);
	}
}

/* ---- streaming stores ------------------------------------------------------------------ */

/* Return whether stage "s" has a vectorized loop. */
static bool has_vector_loop(const sch_stage *s)
{
	for (int i = 0; i < s->nleaves; i++)
		if (s->iters[s->leaves[i]].kind == LOOP_VECTORIZED)
			return true;
	return false;
}

/* Return whether stage "s" reads its own elements back across a loop:
 * a reduction loop of it runs outside one of its spatial loops (more
 * than one iteration), so that it accumulates in place block by block. */
static bool accumulates_in_place(const sch_stage *s)
{
	bool reduce = false;
	for (int i = 0; i < s->nleaves; i++) {
		const sch_iter *it = &s->iters[s->leaves[i]];
		if (it->reduce)
			reduce = true;
		else if (reduce && it->extent > 1)
			return true;
	}
	return false;
}

/* Rule "stream": an output of the op that is stored in vectors and
 * larger than the L2 caches of all the cores together (so that it
 * leaves them anyway) is stored streaming or not, drawn, as a decision
 * the search can flip: a row-wise pass over memory then writes its
 * output once instead of reading it first (schedule/stream.c).  Not
 * one that accumulates in place across blocks of its reduction, whose
 * every streamed line would be read back from memory. */
static void maybe_stream(const tune_space *sp, sch_state *st, uint64_t *rng)
{
	const rt_cpu_target *cpu = &sp->task->cpu;
	int64_t l2 = (cpu->l2_bytes > 0 ? cpu->l2_bytes : 256 * 1024) * sp->cores;
	for (int i = 0; i < sp->nstages; i++) {
		const stage_info *in = &sp->info[i];
		int s = in->is_output && in->bytes > l2 ? sk_stage_named(st, in->name) : -1;
		if (s < 0 || !has_vector_loop(&st->stages[s]) ||
		    accumulates_in_place(&st->stages[s]))
			continue;
		if (sch_stream(st, in->name, sk_chance(rng, 50)))
			tessel_ctx_clear_error(st->ctx);
	}
}

/* ---- sampling ------------------------------------------------------------------------- */

/* Apply sketch "k" with random decisions to the fresh state "st": inline
 * first, decide which tiled stages fuse their consumer, then the rules
 * from the last stage to the first, so that a consumer's loops exist
 * when its producers are computed at them. */
static int apply_sketch(const tune_space *sp, const sketch *k, sch_state *st, uint64_t *rng)
{
	bool *skip = calloc((size_t)sp->nstages + 1, sizeof(bool));
	int *fuse = malloc(((size_t)sp->nstages + 1) * sizeof(int));
	int r = skip && fuse ? 0 : -1;
	if (r == 0)
		sk_inline_elementwise(sp, st, rng, skip);
	for (int i = 0; r == 0 && i < sp->nstages; i++) {
		int c = sp->info[i].fusable_consumer;
		fuse[i] = -1;
		if (k->tile == TILE_CACHE && sp->info[i].role == ROLE_TILE && c >= 0 &&
		    !skip[c] && sk_chance(rng, 75)) {
			fuse[i] = c;
			skip[c] = true;
		}
	}
	for (int i = sp->nstages - 1; i >= 0 && r == 0; i--) {
		const stage_info *in = &sp->info[i];
		int s = skip[i] ? -1 : sk_stage_named(st, in->name);
		if (s < 0)
			continue;
		char copy[SCH_NAME_MAX] = "";
		int dim, gdim, ldim;
		const char *grouped = grouped_input(k, in, &gdim, &ldim);
		const char *pack = grouped ? NULL : packed_input(k, in, &dim);
		if ((grouped && (pack_in_groups(st, in->name, grouped, gdim, ldim,
				in->dot_group, copy) || (s = sk_stage_named(st, in->name)) < 0)) ||
		    (pack && (pack_input(st, in->name, pack, dim, copy) ||
			      (s = sk_stage_named(st, in->name)) < 0))) {
			r = -1;
			break;
		}
		if (in->role == ROLE_TILE && k->tile == TILE_CACHE) {
			r = tile_cached(sp, st, in->name,
				fuse[i] >= 0 ? sp->info[fuse[i]].name : NULL,
				k->panel && in->panel_input ? in : NULL,
				moves_lanes(k, in) ? in->lane_axis : -1,
				k->dot_groups ? in->dot_group : 0, !grouped ? -1 :
				moves_lanes(k, in) ? in->lane_group_raxis : in->group_raxis, rng);
			if (r == 0 && copy[0])
				r = schedule_pack(sp, st, copy, rng);
		}
		else if (in->role == ROLE_TILE && k->tile == TILE_IN_PLACE)
			r = tile_in_place(sp, st, s, k->panel && in->panel_input ? in : NULL, rng);
		else if (k->rfactor && rfactor_pays(sp, in) && st->stages[s].attach == SCH_ROOT)
			r = schedule_rfactor(sp, st, s, in, rng);
		else if (k->block && in->block_axis >= 0 && sch_stage_is_default(&st->stages[s]))
			r = schedule_blocked(sp, st, s, in->block_axis, rng);
		else if (sch_stage_is_default(&st->stages[s]))
			r = schedule_plain(sp, st, s, rng);
	}
	if (r == 0) {
		maybe_prefetch(st, rng);
		maybe_stream(sp, st, rng);
	}
	free(skip);
	free(fuse);
	return r;
}

sch_state *tune_space_sample(tune_space *sp, int sketch_index, uint64_t *rng)
{
	const tune_task *task = sp->task;
	for (int a = 0; a < SAMPLE_ATTEMPTS; a++) {
		int k = sketch_index >= 0 && sketch_index < sp->nsketches ? sketch_index :
			(int)sk_below(rng, sp->nsketches);
		sch_state *st = sch_state_new(task->ctx, task->op);
		if (!st)
			return NULL;
		if ((sp->gpu ? sk_gpu_apply(sp, &sp->sketches[k], st, rng) :
			       apply_sketch(sp, &sp->sketches[k], st, rng)) == 0) {
			tessel_ctx_clear_error(task->ctx);
			return st;
		}
		sch_state_free(st);
	}
	return NULL;
}

/* ---- mutation --------------------------------------------------------------------------- */

/* Return the loop argument a decision at argument "arg" of "s" sizes, or
 * NULL: split's factor sizes its loop, tile's factors their loops. */
static const char *decision_loop(const sch_step *s, int arg)
{
	if (strcmp(s->prim, "split") == 0 && arg == 1)
		return s->args[0];
	if (strcmp(s->prim, "tile") == 0 && (arg == 2 || arg == 3))
		return s->args[arg - 2];
	return NULL;
}

static int64_t loop_extent(sch_state *st, const char *loop)
{
	int s, it;
	if (sch_find_loop(st, loop, &s, &it))
		return -1;
	return st->stages[s].iters[it].extent;
}

/* Return a new value for the tile factor "v" of a loop of extent "n": a
 * neighbouring divisor (twice or half, or another small prime factor
 * moved) most of the time, any divisor otherwise, at most "cap" (0: no
 * cap).  A factor that does not divide "n" (a tile with a partial last
 * one) moves to a neighbour that need not divide it either, and so does
 * a whole number of vectors where few such numbers divide "n"
 * (few_divisors, as draw_tile); a factor that is a multiple of
 * "multiple" (the vector width of a vectorized inner loop) stays one. */
static int64_t mutate_factor(uint64_t *rng, int64_t v, int64_t n, int64_t multiple,
	int64_t cap)
{
	static const int64_t primes[] = { 2, 2, 2, 3, 5, 7 };
	bool whole_vectors = multiple > 1 && v % multiple == 0;
	bool ragged = n % v != 0 ||
		(whole_vectors && few_divisors(n, multiple * MAX_S3_VECTORS, multiple));
	for (int a = 0; a < 8 && n > 1; a++) {
		int64_t p = primes[sk_below(rng, 6)];
		int64_t w = sk_chance(rng, 50) ? v * p : v / p;
		if (sk_chance(rng, 20))
			w = sk_random_divisor(rng, n, cap > 0 ? cap : n, whole_vectors ? multiple : 1);
		if (w >= 1 && w <= n && (ragged || n % w == 0) && w != v &&
		    (!whole_vectors || w % multiple == 0) && (cap <= 0 || w <= cap))
			return w;
	}
	return v;
}

/* Return the largest factor a mutation may give the split at step
 * "target" of "t" when the trace unrolls its inner loop completely (a
 * register tile: MAX_S3), else 0 (no cap): an unrolled loop of hundreds
 * of iterations, a register tile moved to where its loop is long, cost
 * the C compiler over its time limit. */
static int64_t unrolled_cap(const sch_trace *t, int target)
{
	const sch_step *s = &t->steps[target];
	if (strcmp(s->prim, "split") != 0 || s->nouts != 2)
		return 0;
	for (int i = target + 1; i < t->nsteps; i++)
		if (strcmp(t->steps[i].prim, "unroll") == 0 &&
		    strcmp(t->steps[i].args[0], s->outs[1]) == 0)
			return MAX_S3;
	return 0;
}

/* Return the vector width of the stage that step "target" of "t" splits
 * ("st" replayed up to it) when the trace vectorizes the inner loop it
 * makes, else 1. */
static int64_t vectorized_inner(const tune_space *sp, sch_state *st,
	const sch_trace *t, int target)
{
	const sch_step *s = &t->steps[target];
	int si, it;
	if (strcmp(s->prim, "split") != 0 || s->nouts != 2)
		return 1;
	for (int i = target + 1; i < t->nsteps; i++) {
		if (strcmp(t->steps[i].prim, "vectorize") != 0 ||
		    strcmp(t->steps[i].args[0], s->outs[1]) != 0)
			continue;
		if (sch_find_loop(st, s->args[0], &si, &it) == 0)
			return lanes_of(sp, &st->stages[si]);
		tessel_ctx_clear_error(st->ctx);
		return 1;
	}
	return 1;
}

/* Replay step "s" on "st", first making a split whose factor divided its
 * loop in the parent (replayed to this step in "parent") divide it again
 * (the loops above it may have been resized by the mutation); a split
 * that was partial in the parent stays as it is. */
static int replay_repaired(sch_state *st, sch_state *parent, sch_step *s)
{
	const char *loop = decision_loop(s, 1);
	if (loop && strncmp(s->args[1], "nparts=", 7) != 0) {
		int64_t n = loop_extent(st, loop), f = strtoll(s->args[1], NULL, 10);
		int64_t was = loop_extent(parent, loop);
		if (n > 0 && f > 0 && n % f && f < n && was > 0 && was % f == 0)
			snprintf(s->args[1], sizeof(s->args[1]), "%lld", (long long)te_gcd(n, f));
	}
	return sch_apply_step(st, s);
}

/* Change one decision of step "step" of "st" (replayed up to it): a tile
 * factor (a multiple of "multiple" when it was one: the vector width of
 * a loop the trace vectorizes; at most "cap" when not 0), an unroll limit, the blocks a kernel asks
 * to fit a multiprocessor (0, 2 or 4), a prefetch distance, streaming
 * stores on or off, a compute location.  Return 0, or -1 when the step has no decision that
 * can change. */
static int mutate_step(sch_state *st, sch_step *step, uint64_t *rng, int64_t multiple,
	int64_t cap)
{
	sch_decision d[SCH_MAX_ARGS];
	int nd = sch_step_decisions(step, d);
	if (nd == 0)
		return -1;
	const sch_decision *pick = &d[sk_below(rng, nd)];
	char *arg = step->args[pick->arg];
	if (strcmp(step->prim, "annotate") == 0 &&
	    strcmp(step->args[1], "min_blocks_per_sm") == 0) {
		int64_t v = sk_min_blocks_steps[sk_below(rng, SK_MIN_BLOCKS_STEPS)];
		if (v == pick->value)
			return -1;
		snprintf(arg, sizeof(step->args[0]), "%lld", (long long)v);
		return 0;
	}
	if (strcmp(step->prim, "stream") == 0) {
		snprintf(arg, sizeof(step->args[0]), "%d", pick->value ? 0 : 1);
		return 0;
	}
	if (strcmp(step->prim, "annotate") == 0 || strcmp(step->prim, "prefetch") == 0) {
		bool unroll = step->prim[0] == 'a';
		int64_t v = unroll ? unroll_steps[sk_below(rng, UNROLL_CHOICES)] :
		            prefetch_steps[sk_below(rng, PREFETCH_CHOICES)];
		if (v == pick->value)
			return -1;
		snprintf(arg, sizeof(step->args[0]), "%lld", (long long)v);
		return 0;
	}
	if (!pick->is_int) {
		int s, it;
		if (sch_find_loop(st, arg, &s, &it))
			return -1;
		const sch_stage *ss = &st->stages[s];
		int pos = sch_leaf_pos(ss, it);
		int np = pos + (sk_chance(rng, 50) ? 1 : -1);
		if (np < 0 || np >= ss->nleaves)
			return -1;
		char q[QNAME];
		sk_qname(st, s, ss->leaves[np], q);
		if (strlen(q) >= sizeof(step->args[0]))
			return -1;
		snprintf(arg, sizeof(step->args[0]), "%s", q);
		return 0;
	}
	const char *loop = decision_loop(step, pick->arg);
	int64_t n = loop ? loop_extent(st, loop) : -1;
	if (n <= 1 || strncmp(arg, "nparts=", 7) == 0)
		return -1;
	int64_t v = mutate_factor(rng, pick->value, n, multiple, cap);
	if (v == pick->value)
		return -1;
	snprintf(arg, sizeof(step->args[0]), "%lld", (long long)v);
	return 0;
}

/* One mutation attempt of "parent"; NULL when it was refused. */
static sch_state *mutate_once(tune_space *sp, const sch_trace *parent, uint64_t *rng)
{
	const tune_task *task = sp->task;
	int *with = malloc(((size_t)parent->nsteps + 1) * sizeof(int)), nwith = 0;
	for (int i = 0; with && i < parent->nsteps; i++) {
		sch_decision d[SCH_MAX_ARGS];
		if (sch_step_decisions(&parent->steps[i], d) > 0)
			with[nwith++] = i;
	}
	int target = nwith ? with[sk_below(rng, nwith)] : -1;
	free(with);
	if (target < 0)
		return NULL;
	sch_state *st = sch_state_new(task->ctx, task->op);
	sch_state *was = sch_state_new(task->ctx, task->op);
	if (!st || !was)
		goto refused;
	for (int i = 0; i < parent->nsteps; i++) {
		sch_step step = parent->steps[i];
		if (i == target && mutate_step(st, &step, rng,
			vectorized_inner(sp, st, parent, target), unrolled_cap(parent, target)))
			goto refused;
		if ((i <= target ? sch_apply_step(st, &step) : replay_repaired(st, was, &step)))
			goto refused;
		if (sch_apply_step(was, &parent->steps[i]))
			goto refused;
	}
	tessel_ctx_clear_error(task->ctx);
	sch_state_free(was);
	return st;
refused:
	tessel_ctx_clear_error(task->ctx);
	sch_state_free(st);
	sch_state_free(was);
	return NULL;
}

/* Return a stage of "st" (the parent replayed) that could be computed at
 * the outermost loop of a root stage instead of the root: not an output,
 * at the root, read only by that stage or by stages computed at its
 * loops; write that loop into "loop".  -1 when there is none. */
static int stage_to_attach(const sch_state *st, uint64_t *rng, char loop[QNAME])
{
	int found = -1, seen = 0;
	for (int p = 0; p < st->nstages; p++) {
		const sch_stage *ps = &st->stages[p];
		if (ps->attach != SCH_ROOT || ps->te->is_output)
			continue;
		int c = -1;
		bool ok = true;
		for (int k = 0; k < st->nstages && ok; k++) {
			const sch_stage *ks = &st->stages[k];
			if (k == p || ks->attach == SCH_INLINE || !sch_reads(st, k, p))
				continue;
			int root = ks->attach == SCH_ROOT ? k : ks->attach == SCH_AT ? ks->attach_stage : -1;
			ok = root >= 0 && st->stages[root].attach == SCH_ROOT && (c < 0 || c == root);
			c = root;
		}
		if (!ok || c < 0 || !st->stages[c].nleaves || sk_below(rng, (uint64_t)++seen))
			continue;
		found = p;
		sk_qname(st, c, st->stages[c].leaves[0], loop);
	}
	return found;
}

/* One mutation of the compute location of a stage between the root and
 * a loop: a compute_at step of "parent" dropped (the stage at the root,
 * its own loops as the trace leaves them), or one appended for a stage
 * at the root (stage_to_attach), at the outermost loop of the stage
 * that reads it.  NULL when it was refused. */
static sch_state *mutate_location(tune_space *sp, const sch_trace *parent, uint64_t *rng)
{
	const tune_task *task = sp->task;
	sch_state *st = sch_state_new(task->ctx, task->op);
	if (!st || sch_replay(st, parent, "parent"))
		goto refused;
	int ndrops = 0;
	for (int i = 0; i < parent->nsteps; i++)
		ndrops += strcmp(parent->steps[i].prim, "compute_at") == 0;
	char loop[QNAME];
	int p = stage_to_attach(st, rng, loop);
	if (p >= 0 && (!ndrops || sk_chance(rng, 50))) {
		if (sch_compute_at(st, st->stages[p].name, loop))
			goto refused;
	} else if (ndrops) {
		int drop = (int)sk_below(rng, (uint64_t)ndrops);
		sch_state_free(st);
		st = sch_state_new(task->ctx, task->op);
		for (int i = 0; st && i < parent->nsteps; i++) {
			bool at = strcmp(parent->steps[i].prim, "compute_at") == 0;
			if (!(at && drop-- == 0) && sch_apply_step(st, &parent->steps[i]))
				goto refused;
		}
		if (!st)
			goto refused;
	} else {
		goto refused;
	}
	tessel_ctx_clear_error(task->ctx);
	return st;
refused:
	tessel_ctx_clear_error(task->ctx);
	sch_state_free(st);
	return NULL;
}

sch_state *tune_space_mutate(tune_space *sp, const sch_trace *parent, uint64_t *rng)
{
	for (int a = 0; a < MUTATE_ATTEMPTS; a++) {
		sch_state *st = sk_chance(rng, LOCATION_PERCENT) ?
			mutate_location(sp, parent, rng) : mutate_once(sp, parent, rng);
		if (st)
			return st;
	}
	return NULL;
}
