/* Features of a lowered loop program (tuner/features.h; the list, with
 * indices, is docs/cost-model.md).
 *
 * One walk over the program keeps the stack of enclosing loops, the range
 * of every loop variable and the enclosing guards.  At each store it
 * counts the operations of the value and index expressions, groups the
 * accesses by buffer, and measures each group's footprint under a loop
 * level L (loops at depth >= L vary over their whole range, the outer
 * ones stay at their first value) by interval arithmetic over the index
 * expressions: per dimension, the hull of the accesses' ranges, no wider
 * than the number of iterations of the varying loops the index mentions;
 * in all, no more than the iterations of the varying loops the access
 * mentions.  Quantities are kept raw (double) per store, summed for the
 * program vector, and scaled by log2(1 + x) last. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/features.h"

#define MAX_DEPTH 256
#define MAX_GROUPS 32
#define MAX_GROUP_ACCESSES 16
#define MAX_INDEX_VARS 32

typedef struct ival {
	double lo, hi;
	bool known;
} ival;

typedef struct feat_loop {
	const loop_var *var;
	double extent;
	loop_kind kind;
	int unroll_limit;
} feat_loop;

/* The accesses of one store to one buffer. */
typedef struct feat_group {
	const loop_buffer *buf;
	int naccesses;
	bool read, write;
	int nindex;
	loop_expr *const *index[MAX_GROUP_ACCESSES];
} feat_group;

typedef struct feat_store {
	double raw[TUNE_STORE_FEATURES];
	double weight;
} feat_store;

typedef struct feat_walk {
	const loop_prog *p;
	const rt_cpu_target *t;
	ival *var;
	int *var_depth;
	feat_loop loops[MAX_DEPTH];
	int depth;
	int guards;
	int guard_depth[MAX_DEPTH];
	int nallocs;
	const loop_buffer **allocs;
	feat_store *stores;
	int nstores, cap;
	int nloops;
	double alloc_bytes;
	double launches;
	double stream_bytes;
	bool failed;
} feat_walk;

/* Scratch of one store: its operation counts and buffer groups. */
typedef struct feat_scan {
	double ops[TF_INT_CMP + 1];
	int nloads;
	int ngroups;
	feat_group groups[MAX_GROUPS];
} feat_scan;

float tune_feature_scale(double x)
{
	return x > 0 ? (float)log2(1 + x) : 0.0f;
}

static ival ival_point(double v)
{
	return (ival){ v, v, true };
}

static ival ival_unknown(void)
{
	return (ival){ 0, 0, false };
}

static ival ival_mul(ival a, ival b)
{
	double c[4] = { a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi };
	ival r = { c[0], c[0], a.known && b.known };
	for (int i = 1; i < 4; i++) {
		r.lo = fmin(r.lo, c[i]);
		r.hi = fmax(r.hi, c[i]);
	}
	return r;
}

/* The range of floor("a" / "c") and floor-modulo for a constant "c". */
static ival ival_divmod(ival a, ival b, bool mod)
{
	if (!a.known || !b.known || b.lo != b.hi || b.lo <= 0)
		return mod && b.known && b.lo == b.hi && b.lo > 0 ?
			(ival){ 0, b.lo - 1, true } : ival_unknown();
	double c = b.lo, qlo = floor(a.lo / c), qhi = floor(a.hi / c);
	if (!mod)
		return (ival){ qlo, qhi, true };
	if (qlo != qhi)
		return (ival){ 0, c - 1, true };
	return (ival){ a.lo - qlo * c, a.hi - qlo * c, true };
}

static ival expr_range(const feat_walk *w, const loop_expr *e, int level);

static ival binary_range(const feat_walk *w, const loop_expr *e, int level)
{
	ival a = expr_range(w, e->u.bin.a, level);
	ival b = expr_range(w, e->u.bin.b, level);
	bool known = a.known && b.known;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		return (ival){ a.lo + b.lo, a.hi + b.hi, known };
	case TESSEL_SUB:
		return (ival){ a.lo - b.hi, a.hi - b.lo, known };
	case TESSEL_MUL:
		return ival_mul(a, b);
	case TESSEL_DIV:
		return ival_divmod(a, b, false);
	case TESSEL_MOD:
		return ival_divmod(a, b, true);
	case TESSEL_MIN:
		return (ival){ fmin(a.lo, b.lo), fmin(a.hi, b.hi), known };
	case TESSEL_MAX:
		return (ival){ fmax(a.lo, b.lo), fmax(a.hi, b.hi), known };
	default:
		return (ival){ 0, 1, true };
	}
}

/* The range of the integer expression "e" when the loops at depth >=
 * "level" vary and the outer ones sit at their first value. */
static ival expr_range(const feat_walk *w, const loop_expr *e, int level)
{
	switch (e->kind) {
	case LX_INT:
		return ival_point((double)e->u.ival);
	case LX_BOOL:
		return (ival){ 0, 1, true };
	case LX_VAR: {
		int id = e->u.var->id, d = w->var_depth[id];
		if (d < 0 || !w->var[id].known)
			return ival_unknown();
		return d >= level ? w->var[id] : ival_point(w->var[id].lo);
	}
	case LX_UNARY: {
		ival a = expr_range(w, e->u.un.a, level);
		return e->u.un.op == TESSEL_NEG ? (ival){ -a.hi, -a.lo, a.known } :
			ival_unknown();
	}
	case LX_BINARY:
		return binary_range(w, e, level);
	case LX_SELECT: {
		ival a = expr_range(w, e->u.sel.then_, level);
		ival b = expr_range(w, e->u.sel.else_, level);
		return (ival){ fmin(a.lo, b.lo), fmax(a.hi, b.hi), a.known && b.known };
	}
	case LX_CAST:
		return expr_range(w, e->u.cast.a, level);
	default:
		return ival_unknown();
	}
}

/* Add the ids of the loop variables "e" mentions to "ids" (no repeats). */
static void collect_vars(const loop_expr *e, int *ids, int *n)
{
	switch (e->kind) {
	case LX_VAR:
		for (int i = 0; i < *n; i++)
			if (ids[i] == e->u.var->id)
				return;
		if (*n < MAX_INDEX_VARS)
			ids[(*n)++] = e->u.var->id;
		return;
	case LX_LOAD:
		for (int i = 0; i < e->u.load.n; i++)
			collect_vars(e->u.load.index[i], ids, n);
		return;
	case LX_UNARY:
		collect_vars(e->u.un.a, ids, n);
		return;
	case LX_BINARY:
		collect_vars(e->u.bin.a, ids, n);
		collect_vars(e->u.bin.b, ids, n);
		return;
	case LX_SELECT:
		collect_vars(e->u.sel.cond, ids, n);
		collect_vars(e->u.sel.then_, ids, n);
		collect_vars(e->u.sel.else_, ids, n);
		return;
	case LX_CAST:
		collect_vars(e->u.cast.a, ids, n);
		return;
	default:
		return;
	}
}

/* The product of the extents of the variables "ids" bound at depth >=
 * "level": how many values an expression of them can take. */
static double varying_product(const feat_walk *w, const int *ids, int n, int level)
{
	double prod = 1;
	for (int i = 0; i < n; i++) {
		int d = w->var_depth[ids[i]];
		if (d >= level)
			prod *= w->loops[d].extent;
	}
	return prod;
}

/* The iterations of the varying loops one access "index" of "b" mentions. */
static double access_iterations(const feat_walk *w, const loop_buffer *b,
	loop_expr *const *index, int level)
{
	int ids[MAX_INDEX_VARS], n = 0;
	for (int d = 0; d < b->ndim; d++)
		collect_vars(index[d], ids, &n);
	return varying_product(w, ids, n, level);
}

/* The range of dimension "d" of "g" under "level": the hull of its
 * accesses' ranges clipped to the shape, and the number of distinct
 * values in "distinct". */
static ival dim_range(const feat_walk *w, const feat_group *g, int d, int level,
	double *distinct)
{
	double extent = (double)g->buf->shape[d];
	ival hull = { 0, -1, false };
	double count = 0;
	for (int a = 0; a < g->nindex; a++) {
		const loop_expr *e = g->index[a][d];
		ival r = expr_range(w, e, level);
		if (!r.known)
			r = (ival){ 0, extent - 1, true };
		r.lo = fmax(r.lo, 0);
		r.hi = fmin(r.hi, extent - 1);
		if (r.hi < r.lo)
			r.hi = r.lo;
		hull = hull.known ? (ival){ fmin(hull.lo, r.lo), fmax(hull.hi, r.hi), true } : r;
		int ids[MAX_INDEX_VARS], n = 0;
		collect_vars(e, ids, &n);
		count += varying_product(w, ids, n, level);
	}
	if (!hull.known)
		hull = (ival){ 0, 0, true };
	*distinct = fmin(hull.hi - hull.lo + 1, count);
	return hull;
}

/* The dimension of "b" with the smallest stride (the last among equals). */
static int contiguous_dim(const loop_buffer *b)
{
	int c = b->ndim - 1;
	for (int d = b->ndim - 1; d >= 0; d--)
		if (b->shape[d] > 1 && b->strides[d] < b->strides[c])
			c = d;
	return c;
}

/* The footprint of "g" under "level" in elements, and its cache lines of
 * "line" bytes in "lines" (may be NULL). */
static double group_footprint(const feat_walk *w, const feat_group *g, int level,
	double *lines)
{
	const loop_buffer *b = g->buf;
	double elements = 1, bound = 0, distinct_c = 1, width_c = 1;
	int c = contiguous_dim(b);
	for (int d = 0; d < b->ndim; d++) {
		double distinct;
		ival r = dim_range(w, g, d, level, &distinct);
		elements *= distinct;
		if (d == c) {
			distinct_c = distinct;
			width_c = r.hi - r.lo + 1;
		}
	}
	for (int a = 0; a < g->nindex; a++)
		bound += access_iterations(w, b, g->index[a], level);
	if (g->nindex)
		elements = fmin(elements, bound);
	if (lines) {
		double eb = (double)tessel_dtype_size(b->dtype);
		double line = w->t->line_bytes > 0 ? w->t->line_bytes : 64;
		double stride = b->ndim ? (double)b->strides[c] : 1;
		double per_row = fmin(distinct_c, ceil(width_c * stride * eb / line));
		*lines = distinct_c > 0 ? elements / distinct_c * fmax(per_row, 1) : 0;
	}
	return elements;
}

/* The coefficient of variable "id" in the integer expression "e" (exact
 * for affine expressions, an estimate through divisions and atoms). */
static double expr_coef(const loop_expr *e, int id)
{
	switch (e->kind) {
	case LX_VAR:
		return e->u.var->id == id;
	case LX_UNARY:
		return e->u.un.op == TESSEL_NEG ? -expr_coef(e->u.un.a, id) : 0;
	case LX_CAST:
		return expr_coef(e->u.cast.a, id);
	case LX_LOAD: {
		int ids[MAX_INDEX_VARS], n = 0;
		collect_vars(e, ids, &n);
		for (int i = 0; i < n; i++)
			if (ids[i] == id)
				return 1;
		return 0;
	}
	case LX_SELECT:
		return fmax(fabs(expr_coef(e->u.sel.then_, id)),
			fabs(expr_coef(e->u.sel.else_, id)));
	case LX_BINARY:
		break;
	default:
		return 0;
	}
	const loop_expr *a = e->u.bin.a, *b = e->u.bin.b;
	double ca = expr_coef(a, id), cb = expr_coef(b, id);
	switch (e->u.bin.op) {
	case TESSEL_ADD:
		return ca + cb;
	case TESSEL_SUB:
		return ca - cb;
	case TESSEL_MUL:
		if (b->kind == LX_INT)
			return ca * (double)b->u.ival;
		if (a->kind == LX_INT)
			return cb * (double)a->u.ival;
		return ca + cb;
	case TESSEL_DIV:
		return b->kind == LX_INT && b->u.ival > 0 ? ca / (double)b->u.ival : ca;
	case TESSEL_MOD:
		return b->kind == LX_INT && b->u.ival > 0 ? fmod(ca, (double)b->u.ival) : ca;
	case TESSEL_MIN:
	case TESSEL_MAX:
		return fmax(fabs(ca), fabs(cb));
	default:
		return 0;
	}
}

/* The distance in elements between the addresses of an access "index" of
 * "b" in consecutive iterations of the loop of variable "id". */
static double access_stride(const loop_buffer *b, loop_expr *const *index, int id)
{
	double s = 0;
	for (int d = 0; d < b->ndim; d++)
		s += expr_coef(index[d], id) * (double)b->strides[d];
	return fabs(s);
}

/* The largest stride of the accesses of "g" in the loop at "depth". */
static double group_stride(const feat_walk *w, const feat_group *g, int depth)
{
	double s = 0;
	for (int a = 0; a < g->nindex; a++)
		s = fmax(s, access_stride(g->buf, g->index[a], w->loops[depth].var->id));
	return s;
}

/* Whether some access of "g" mentions the variable of the loop at "depth". */
static bool group_varies(const feat_walk *w, const feat_group *g, int depth)
{
	int id = w->loops[depth].var->id;
	for (int a = 0; a < g->nindex; a++) {
		int ids[MAX_INDEX_VARS], n = 0;
		for (int d = 0; d < g->buf->ndim; d++)
			collect_vars(g->index[a][d], ids, &n);
		for (int i = 0; i < n; i++)
			if (ids[i] == id)
				return true;
	}
	return false;
}

/* Record an access of "b" at "index" ("write": the store) in "sc". */
static void add_access(feat_scan *sc, const loop_buffer *b, loop_expr *const *index,
	bool write)
{
	feat_group *g = NULL;
	for (int i = 0; i < sc->ngroups && !g; i++)
		if (sc->groups[i].buf == b)
			g = &sc->groups[i];
	if (!g && sc->ngroups == MAX_GROUPS)
		return;
	if (!g) {
		g = &sc->groups[sc->ngroups++];
		memset(g, 0, sizeof(*g));
		g->buf = b;
	}
	g->naccesses++;
	g->read |= !write;
	g->write |= write;
	if (g->nindex < MAX_GROUP_ACCESSES)
		g->index[g->nindex++] = index;
}

static void count_binary(feat_scan *sc, const loop_expr *e)
{
	bool fl = tessel_dtype_is_float(e->u.bin.a->dtype);
	switch (e->u.bin.op) {
	case TESSEL_ADD:
	case TESSEL_SUB:
		sc->ops[fl ? TF_FLOAT_ADDSUB : TF_INT_ADDSUB]++;
		return;
	case TESSEL_MUL:
		sc->ops[fl ? TF_FLOAT_MUL : TF_INT_MUL]++;
		return;
	case TESSEL_DIV:
	case TESSEL_MOD:
		sc->ops[fl ? TF_FLOAT_DIV : TF_INT_DIVMOD]++;
		return;
	case TESSEL_POW:
		sc->ops[fl ? TF_FLOAT_MATH : TF_INT_MUL]++;
		return;
	default:
		sc->ops[fl ? TF_FLOAT_CMP : TF_INT_CMP]++;
		return;
	}
}

static void count_unary(feat_scan *sc, const loop_expr *e)
{
	bool fl = tessel_dtype_is_float(e->u.un.a->dtype);
	switch (e->u.un.op) {
	case TESSEL_NEG:
		sc->ops[fl ? TF_FLOAT_ADDSUB : TF_INT_ADDSUB]++;
		return;
	case TESSEL_NOT:
		sc->ops[TF_INT_CMP]++;
		return;
	case TESSEL_ABS:
	case TESSEL_FLOOR:
		sc->ops[fl ? TF_FLOAT_CMP : TF_INT_CMP]++;
		return;
	default:
		sc->ops[fl ? TF_FLOAT_MATH : TF_INT_MUL]++;
		return;
	}
}

/* Count the operations of "e" into "sc" and record its loads. */
static void scan_expr(feat_scan *sc, const loop_expr *e)
{
	switch (e->kind) {
	case LX_LOAD:
		sc->nloads++;
		add_access(sc, e->u.load.buf, e->u.load.index, false);
		for (int i = 0; i < e->u.load.n; i++)
			scan_expr(sc, e->u.load.index[i]);
		return;
	case LX_UNARY:
		count_unary(sc, e);
		scan_expr(sc, e->u.un.a);
		return;
	case LX_BINARY:
		count_binary(sc, e);
		scan_expr(sc, e->u.bin.a);
		scan_expr(sc, e->u.bin.b);
		return;
	case LX_SELECT:
		sc->ops[tessel_dtype_is_float(e->dtype) ? TF_FLOAT_CMP : TF_INT_CMP]++;
		scan_expr(sc, e->u.sel.cond);
		scan_expr(sc, e->u.sel.then_);
		scan_expr(sc, e->u.sel.else_);
		return;
	case LX_CAST:
		sc->ops[TF_CAST]++;
		scan_expr(sc, e->u.cast.a);
		return;
	default:
		return;
	}
}

static bool is_allocated(const feat_walk *w, const loop_buffer *b)
{
	for (int i = 0; i < w->nallocs; i++)
		if (w->allocs[i] == b)
			return true;
	return false;
}

/* The bytes an allocation of "b" takes (strides padded included). */
static double alloc_size(const loop_buffer *b)
{
	double last = 0;
	for (int d = 0; d < b->ndim; d++)
		last += (double)(b->shape[d] - 1) * (double)b->strides[d];
	return (last + 1) * (double)tessel_dtype_size(b->dtype);
}

/* The unique bytes of all groups of "sc" under "level". */
static double working_set(const feat_walk *w, const feat_scan *sc, int level)
{
	double bytes = 0;
	for (int i = 0; i < sc->ngroups; i++)
		bytes += group_footprint(w, &sc->groups[i], level, NULL) *
			(double)tessel_dtype_size(sc->groups[i].buf->dtype);
	return bytes;
}

/* Return whether loops of kind "k" run their iterations at once: a
 * parallel loop on a CPU, a loop bound to GPU blocks or threads (so the
 * parallel features of a GPU program describe its grid and blocks). */
static bool concurrent(loop_kind k)
{
	return k == LOOP_PARALLEL || (k >= LOOP_BLOCK_X && k <= LOOP_THREAD_Z);
}

/* The depth of the outermost enclosing parallel loop, or -1. */
static int outer_parallel(const feat_walk *w)
{
	for (int d = 0; d < w->depth; d++)
		if (concurrent(w->loops[d].kind))
			return d;
	return -1;
}

static void loop_totals(const feat_walk *w, double *raw, double trip, double eb)
{
	double par = 1, lanes = 1, unroll = 1;
	int npar = 0, nvec = 0, nunroll = 0, limit = 0;
	for (int d = 0; d < w->depth; d++) {
		const feat_loop *l = &w->loops[d];
		par *= concurrent(l->kind) ? l->extent : 1;
		npar += concurrent(l->kind);
		lanes *= l->kind == LOOP_VECTORIZED ? l->extent : 1;
		nvec += l->kind == LOOP_VECTORIZED;
		unroll *= l->kind == LOOP_UNROLLED ? l->extent : 1;
		nunroll += l->kind == LOOP_UNROLLED;
		limit = l->unroll_limit > limit ? l->unroll_limit : limit;
	}
	int po = outer_parallel(w);
	double cores = w->t->cores > 0 ? w->t->cores : 1;
	double tasks = po >= 0 ? w->loops[po].extent : 1;
	raw[TF_PARALLEL_PRODUCT] = par;
	raw[TF_PARALLEL_LOOPS] = npar;
	raw[TF_PARALLEL_POSITION] = po + 1;
	raw[TF_PARALLEL_BALANCE] = tasks / (ceil(tasks / cores) * cores);
	raw[TF_TASK_ITERS] = trip / par;
	raw[TF_VECTOR_LANES] = lanes;
	raw[TF_VECTOR_INNERMOST] = w->depth > 0 &&
		w->loops[w->depth - 1].kind == LOOP_VECTORIZED;
	raw[TF_VECTOR_REGS] = nvec && w->t->vector_bytes > 0 ?
		lanes * eb / w->t->vector_bytes : 0;
	raw[TF_UNROLL_PRODUCT] = unroll;
	raw[TF_UNROLL_LOOPS] = nunroll;
	raw[TF_AUTO_UNROLL] = limit;
}

/* The depth of the innermost enclosing vectorized loop, or -1. */
static int inner_vectorized(const feat_walk *w)
{
	for (int d = w->depth - 1; d >= 0; d--)
		if (w->loops[d].kind == LOOP_VECTORIZED)
			return d;
	return -1;
}

static void stride_totals(const feat_walk *w, const feat_scan *sc, double *raw)
{
	int v = inner_vectorized(w);
	bool contiguous = v >= 0;
	for (int i = 0; i < sc->ngroups; i++) {
		if (v >= 0 && group_stride(w, &sc->groups[i], v) > 1)
			contiguous = false;
		if (w->depth > 0 && group_stride(w, &sc->groups[i], w->depth - 1) > 1)
			raw[TF_INNER_STRIDED]++;
	}
	raw[TF_VECTOR_CONTIGUOUS] = contiguous;
}

/* The number of times the bodies of the serial and parallel loops
 * around the store start: loop overhead. */
static double loop_iterations(const feat_walk *w)
{
	double iters = 0, outer = 1;
	for (int d = 0; d < w->depth; d++) {
		outer *= w->loops[d].extent;
		loop_kind k = w->loops[d].kind;
		if (k != LOOP_VECTORIZED && k != LOOP_UNROLLED)
			iters += outer;
	}
	return iters;
}

/* The enclosing conditionals inside the innermost enclosing loop. */
static int inner_guards(const feat_walk *w)
{
	int n = 0;
	for (int i = 0; i < w->guards; i++)
		n += w->depth > 0 && w->guard_depth[i] == w->depth;
	return n;
}

/* Whether the C compiler can vectorize the innermost loop of "sc" by
 * itself: serial, the stored element contiguous in it, every load
 * contiguous or invariant (a reduction into one element is not
 * vectorized without reassociation). */
static bool auto_vectorizable(const feat_walk *w, const feat_scan *sc,
	const loop_buffer *stored)
{
	int d = w->depth - 1;
	if (d < 0 || w->loops[d].kind != LOOP_SERIAL || inner_guards(w) > 0)
		return false;
	for (int i = 0; i < sc->ngroups; i++) {
		double s = group_stride(w, &sc->groups[i], d);
		if (s > 1 || (sc->groups[i].buf == stored && s != 1))
			return false;
	}
	return true;
}

/* The lanes the innermost loop of "sc" likely runs with. */
static double effective_lanes(const feat_walk *w, const feat_scan *sc,
	const loop_buffer *stored, const double *raw)
{
	int d = w->depth - 1;
	double eb = (double)tessel_dtype_size(stored->dtype);
	double width = w->t->vector_bytes > 0 ? w->t->vector_bytes / eb : 1;
	if (d < 0)
		return 1;
	bool vec = w->loops[d].kind == LOOP_VECTORIZED && raw[TF_VECTOR_CONTIGUOUS] > 0;
	if (!vec && !auto_vectorizable(w, sc, stored))
		return 1;
	return fmax(1, fmin(w->loops[d].extent, width));
}

/* The cache lines of all groups of "sc" fetched into a cache of "bytes":
 * the lines under the outermost level whose working set fits, times the
 * iterations of the loops outside it. */
static double cache_misses(const feat_walk *w, const feat_scan *sc, double bytes)
{
	int level = 0;
	while (level < w->depth && working_set(w, sc, level) > bytes)
		level++;
	double lines = 0, outer = 1;
	for (int i = 0; i < sc->ngroups; i++) {
		double l = 0;
		group_footprint(w, &sc->groups[i], level, &l);
		lines += l;
	}
	for (int d = 0; d < level; d++)
		outer *= w->loops[d].extent;
	return lines * outer;
}

/* The serial and parallel loops inside the outermost unrolled loop. */
static int unroll_inner_loops(const feat_walk *w)
{
	int d = 0, n = 0;
	while (d < w->depth && w->loops[d].kind != LOOP_UNROLLED)
		d++;
	for (d++; d < w->depth; d++)
		n += w->loops[d].kind != LOOP_UNROLLED && w->loops[d].kind != LOOP_VECTORIZED;
	return n;
}

static void estimates(const feat_walk *w, const feat_scan *sc,
	const loop_buffer *stored, double flops, double trip, double *raw)
{
	double l1 = w->t->l1d_bytes > 0 ? (double)w->t->l1d_bytes : 32768;
	double l2 = w->t->l2_bytes > 0 ? (double)w->t->l2_bytes : 1 << 20;
	raw[TF_LOOP_ITERS] = loop_iterations(w);
	raw[TF_EFFECTIVE_LANES] = effective_lanes(w, sc, stored, raw);
	raw[TF_VECTOR_OPS] = flops * trip / raw[TF_EFFECTIVE_LANES];
	raw[TF_L1_MISSES] = cache_misses(w, sc, l1);
	raw[TF_L2_MISSES] = cache_misses(w, sc, l2);
	raw[TF_UNROLL_INNER_LOOPS] = unroll_inner_loops(w);
}

static void loop_slots(const feat_walk *w, const feat_scan *sc, double *raw)
{
	for (int s = 0; s < TUNE_LOOP_SLOTS && s < w->depth; s++) {
		int d = w->depth - 1 - s;
		const feat_loop *l = &w->loops[d];
		double *f = raw + TF_LOOP0 + s * TL_COUNT;
		f[TL_EXTENT] = l->extent;
		f[TL_SERIAL] = !concurrent(l->kind) && l->kind != LOOP_VECTORIZED &&
			l->kind != LOOP_UNROLLED;
		f[TL_PARALLEL] = concurrent(l->kind);
		f[TL_VECTORIZED] = l->kind == LOOP_VECTORIZED;
		f[TL_UNROLLED] = l->kind == LOOP_UNROLLED;
		f[TL_POSITION] = d;
		f[TL_WORKING_SET] = working_set(w, sc, d);
	}
}

/* The reuse of "g": the depth of the innermost enclosing loop it does not
 * vary in, or -1. */
static int reuse_depth(const feat_walk *w, const feat_group *g)
{
	for (int d = w->depth - 1; d >= 0; d--)
		if (!group_varies(w, g, d))
			return d;
	return -1;
}

static void buffer_slot(const feat_walk *w, const feat_scan *sc, const feat_group *g,
	double trip, double *f)
{
	double eb = (double)tessel_dtype_size(g->buf->dtype), lines = 0;
	int po = outer_parallel(w);
	f[TB_PRESENT] = 1;
	f[TB_READ] = g->read;
	f[TB_WRITE] = g->write;
	f[TB_BYTES] = g->naccesses * trip * eb;
	f[TB_UNIQUE_BYTES] = group_footprint(w, g, 0, &lines) * eb;
	f[TB_LINES] = lines;
	f[TB_TASK_BYTES] = group_footprint(w, g, po + 1, NULL) * eb;
	if (w->depth > 0)
		f[TB_STRIDE] = group_stride(w, g, w->depth - 1);
	for (int d = w->depth - 1; d >= 0 && f[TB_VARYING_STRIDE] == 0; d--)
		f[TB_VARYING_STRIDE] = group_stride(w, g, d);
	int r = reuse_depth(w, g);
	if (r >= 0) {
		f[TB_REUSE] = 1;
		f[TB_REUSE_COUNT] = w->loops[r].extent;
		f[TB_REUSE_ITERS] = 1;
		for (int d = r + 1; d < w->depth; d++)
			f[TB_REUSE_ITERS] *= w->loops[d].extent;
		f[TB_REUSE_BYTES] = working_set(w, sc, r + 1);
	}
	if (is_allocated(w, g->buf)) {
		f[TB_ALLOCATED] = 1;
		f[TB_LOCAL] = g->buf->scope == LOOP_LOCAL;
		f[TB_ALLOC_BYTES] = alloc_size(g->buf);
	}
}

/* The sort key of "g" in "sc": the stored buffer "stored" first, then by
 * bytes per iteration. */
static double group_key(const feat_group *g, const loop_buffer *stored)
{
	return g->buf == stored ? INFINITY :
		g->naccesses * (double)tessel_dtype_size(g->buf->dtype);
}

/* Order the groups of "sc": the stored buffer "stored" first, then by
 * bytes, largest first; ties keep the order of first access (stable). */
static void sort_groups(feat_scan *sc, const loop_buffer *stored)
{
	for (int i = 1; i < sc->ngroups; i++) {
		feat_group g = sc->groups[i];
		int j = i;
		while (j > 0 && group_key(&sc->groups[j - 1], stored) < group_key(&g, stored)) {
			sc->groups[j] = sc->groups[j - 1];
			j--;
		}
		sc->groups[j] = g;
	}
}

static feat_store *new_store(feat_walk *w)
{
	if (w->nstores == w->cap) {
		int cap = w->cap ? 2 * w->cap : 16;
		feat_store *s = realloc(w->stores, (size_t)cap * sizeof(*s));
		if (!s) {
			w->failed = true;
			return NULL;
		}
		w->stores = s;
		w->cap = cap;
	}
	feat_store *s = &w->stores[w->nstores++];
	memset(s, 0, sizeof(*s));
	return s;
}

/* Whether a store into "b" under the current loops goes to memory with
 * non-temporal stores: "b" is stored streaming and the store is a vector
 * one (what codegen/cpu_c.c streams; halves are converted and stored as
 * usual). */
static bool streamed(const feat_walk *w, const loop_buffer *b)
{
	return b->stream && b->dtype != TESSEL_F16 && b->dtype != TESSEL_BF16 &&
		inner_vectorized(w) >= 0;
}

/* Describe the store "s" under the current loops. */
static void visit_store(feat_walk *w, const loop_stmt *s)
{
	feat_store *fs = new_store(w);
	if (!fs)
		return;
	feat_scan *sc = calloc(1, sizeof(*sc));
	if (!sc) {
		w->failed = true;
		return;
	}
	const loop_buffer *b = s->u.store.buf;
	add_access(sc, b, s->u.store.index, true);
	for (int i = 0; i < s->u.store.n; i++)
		scan_expr(sc, s->u.store.index[i]);
	scan_expr(sc, s->u.store.value);
	double trip = 1, *raw = fs->raw, accesses = 0, flops = 0;
	for (int d = 0; d < w->depth; d++)
		trip *= w->loops[d].extent;
	for (int i = 0; i <= TF_INT_CMP; i++)
		raw[i] = sc->ops[i] * trip;
	for (int i = 0; i <= TF_FLOAT_CMP; i++)
		flops += sc->ops[i];
	raw[TF_TRIP_COUNT] = trip;
	raw[TF_DEPTH] = w->depth;
	raw[TF_GUARDS] = w->guards;
	raw[TF_INNER_GUARDS] = inner_guards(w);
	raw[TF_ELEM_BYTES] = (double)tessel_dtype_size(b->dtype);
	raw[TF_ACCUMULATE] = sc->groups[0].read;
	raw[TF_LOADS] = sc->nloads;
	loop_totals(w, raw, trip, raw[TF_ELEM_BYTES]);
	stride_totals(w, sc, raw);
	estimates(w, sc, b, flops, trip, raw);
	loop_slots(w, sc, raw);
	sort_groups(sc, b);
	for (int i = 0; i < sc->ngroups; i++)
		accesses += sc->groups[i].naccesses;
	for (int i = 0; i < sc->ngroups && i < TUNE_BUF_SLOTS; i++)
		buffer_slot(w, sc, &sc->groups[i], trip, raw + TF_BUF0 + i * TB_COUNT);
	fs->weight = trip * (1 + flops + accesses);
	if (streamed(w, b))
		w->stream_bytes += trip * raw[TF_ELEM_BYTES];
	free(sc);
}

static void walk(feat_walk *w, const loop_stmt *s);

/* Enter the loop "s": push it with the range of its variable. */
static void visit_for(feat_walk *w, const loop_stmt *s)
{
	if (w->depth == MAX_DEPTH) {
		w->failed = true;
		return;
	}
	ival min = expr_range(w, s->u.for_.min, 0);
	ival ext = expr_range(w, s->u.for_.extent, 0);
	double extent = ext.known ? fmax(ext.hi, 0) : 1;
	int id = s->u.for_.var->id;
	if (concurrent(s->u.for_.kind) && outer_parallel(w) < 0) {
		double entries = 1;
		for (int d = 0; d < w->depth; d++)
			entries *= w->loops[d].extent;
		w->launches += entries;
	}
	w->loops[w->depth] = (feat_loop){ s->u.for_.var, extent, s->u.for_.kind,
		s->u.for_.unroll_limit };
	w->var[id] = (ival){ min.lo, min.hi + extent - 1, min.known && ext.known };
	w->var_depth[id] = w->depth++;
	w->nloops++;
	walk(w, s->u.for_.body);
	w->var_depth[id] = -1;
	w->depth--;
}

static void walk(feat_walk *w, const loop_stmt *s)
{
	if (!s || w->failed)
		return;
	switch (s->kind) {
	case LS_FOR:
		visit_for(w, s);
		return;
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			walk(w, s->u.seq.items[i]);
		return;
	case LS_STORE:
		visit_store(w, s);
		return;
	case LS_IF:
		if (w->guards == MAX_DEPTH) {
			w->failed = true;
			return;
		}
		w->guard_depth[w->guards++] = w->depth;
		walk(w, s->u.if_.then_);
		walk(w, s->u.if_.else_);
		w->guards--;
		return;
	case LS_ALLOC:
		w->alloc_bytes += alloc_size(s->u.alloc.buf);
		walk(w, s->u.alloc.body);
		return;
	default:
		return;
	}
}

/* Add the buffers "s" allocates to "w->allocs". */
static int collect_allocs(feat_walk *w, const loop_stmt *s, int cap)
{
	if (!s)
		return 0;
	switch (s->kind) {
	case LS_FOR:
		return collect_allocs(w, s->u.for_.body, cap);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			if (collect_allocs(w, s->u.seq.items[i], cap))
				return -1;
		return 0;
	case LS_IF:
		return collect_allocs(w, s->u.if_.then_, cap) ||
			collect_allocs(w, s->u.if_.else_, cap) ? -1 : 0;
	case LS_ALLOC:
		if (w->nallocs == cap)
			return -1;
		w->allocs[w->nallocs++] = s->u.alloc.buf;
		return collect_allocs(w, s->u.alloc.body, cap);
	default:
		return 0;
	}
}

static void walk_free(feat_walk *w)
{
	free(w->var);
	free(w->var_depth);
	free(w->allocs);
	free(w->stores);
}

/* Walk "p" for "t" into "w" (freed with walk_free, also on failure). */
static int walk_program(feat_walk *w, const loop_prog *p, const rt_cpu_target *t)
{
	memset(w, 0, sizeof(*w));
	w->p = p;
	w->t = t;
	int nvars = p->nvars > 0 ? p->nvars : 1, cap = 1024;
	w->var = calloc((size_t)nvars, sizeof(*w->var));
	w->var_depth = malloc((size_t)nvars * sizeof(*w->var_depth));
	w->allocs = malloc((size_t)cap * sizeof(*w->allocs));
	if (!w->var || !w->var_depth || !w->allocs)
		return -1;
	for (int i = 0; i < nvars; i++)
		w->var_depth[i] = -1;
	if (collect_allocs(w, p->body, cap))
		return -1;
	walk(w, p->body);
	return w->failed ? -1 : 0;
}

int tune_store_features(const loop_prog *p, const rt_cpu_target *t, float *out,
	int max_stores, int *nstores)
{
	feat_walk w;
	int r = walk_program(&w, p, t);
	if (r == 0) {
		for (int s = 0; s < w.nstores && s < max_stores; s++)
			for (int i = 0; i < TUNE_STORE_FEATURES; i++)
				out[(size_t)s * TUNE_STORE_FEATURES + i] =
					tune_feature_scale(w.stores[s].raw[i]);
		*nstores = w.nstores;
	}
	walk_free(&w);
	return r;
}

/* Fill the program totals of "raw" from the walk "w". */
static void program_totals(const feat_walk *w, double *raw)
{
	raw[TP_STORES] = w->nstores;
	raw[TP_LOOPS] = w->nloops;
	raw[TP_ALLOCS] = w->nallocs;
	raw[TP_ALLOC_BYTES] = w->alloc_bytes;
	raw[TP_PARALLEL_LAUNCHES] = w->launches;
	raw[TP_TARGET_VECTOR_BYTES] = w->t->vector_bytes;
	raw[TP_TARGET_CORES] = w->t->cores;
	raw[TP_TARGET_L1] = (double)w->t->l1d_bytes;
	raw[TP_TARGET_L2] = (double)w->t->l2_bytes;
	raw[TP_TARGET_L3] = (double)w->t->l3_bytes;
	raw[TP_STREAM_BYTES] = w->stream_bytes;
	for (int s = 0; s < w->nstores; s++) {
		const double *f = w->stores[s].raw;
		for (int i = 0; i < TUNE_SUM_FEATURES; i++)
			raw[TP_SUM0 + i] += f[i];
		for (int i = 0; i <= TF_FLOAT_CMP; i++)
			raw[TP_FLOAT_OPS] += f[i];
		for (int b = 0; b < TUNE_BUF_SLOTS; b++) {
			const double *g = f + TF_BUF0 + b * TB_COUNT;
			raw[TP_BYTES] += g[TB_BYTES];
			raw[TP_UNIQUE_BYTES] += g[TB_UNIQUE_BYTES];
			raw[TP_LINES] += g[TB_LINES];
		}
	}
}

/* Write into "order" the indices of the "n" stores of "w", heaviest first
 * (program order among equals). */
static void heaviest_stores(const feat_walk *w, int *order, int n)
{
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) {
		int k = order[i], j = i;
		while (j > 0 && w->stores[order[j - 1]].weight < w->stores[k].weight) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = k;
	}
}

int tune_program_features(const loop_prog *p, const rt_cpu_target *t, float *out)
{
	feat_walk w;
	double *raw = calloc(TUNE_PROGRAM_FEATURES, sizeof(*raw));
	int *order = NULL;
	int r = walk_program(&w, p, t);
	if (!raw)
		r = -1;
	if (r == 0 && !(order = malloc((size_t)(w.nstores + 1) * sizeof(*order))))
		r = -1;
	if (r == 0) {
		program_totals(&w, raw);
		heaviest_stores(&w, order, w.nstores);
		for (int s = 0; s < TUNE_PROGRAM_STORES && s < w.nstores; s++)
			memcpy(raw + TP_STORE0 + s * TUNE_STORE_FEATURES,
				w.stores[order[s]].raw, sizeof(w.stores[0].raw));
		for (int i = 0; i < TUNE_PROGRAM_FEATURES; i++)
			out[i] = tune_feature_scale(raw[i]);
	}
	free(order);
	free(raw);
	walk_free(&w);
	return r;
}

static const char *const store_names[TF_LOOP0] = {
	"float_addsub", "float_mul", "float_div", "float_math", "float_cmp",
	"cast", "int_addsub", "int_mul", "int_divmod", "int_cmp",
	"loop_iters", "vector_ops", "l1_misses", "l2_misses", "trip_count",
	"depth", "guards", "inner_guards", "elem_bytes", "accumulate", "loads",
	"parallel_product", "parallel_loops", "parallel_position",
	"parallel_balance", "task_iters", "vector_lanes", "vector_innermost",
	"vector_regs", "unroll_product", "unroll_loops", "auto_unroll",
	"vector_contiguous", "inner_strided", "effective_lanes",
	"unroll_inner_loops"
};

static const char *const loop_names[TL_COUNT] = {
	"extent", "serial", "parallel", "vectorized", "unrolled", "position",
	"working_set"
};

static const char *const buf_names[TB_COUNT] = {
	"present", "read", "write", "bytes", "unique_bytes", "lines", "task_bytes",
	"stride", "varying_stride", "reuse", "reuse_count", "reuse_iters",
	"reuse_bytes", "allocated", "local", "alloc_bytes"
};

static const char *const program_names[TP_SUM0] = {
	"stores", "loops", "allocs", "alloc_bytes", "parallel_launches",
	"float_ops", "bytes", "unique_bytes", "lines", "target_vector_bytes",
	"target_cores", "target_l1", "target_l2", "target_l3"
};

int tune_store_feature_name(int i, char *buf, size_t len)
{
	if (i < 0 || i >= TUNE_STORE_FEATURES)
		return -1;
	if (i < TF_LOOP0)
		snprintf(buf, len, "%s", store_names[i]);
	else if (i < TF_BUF0)
		snprintf(buf, len, "loop%d.%s", (i - TF_LOOP0) / TL_COUNT,
			loop_names[(i - TF_LOOP0) % TL_COUNT]);
	else
		snprintf(buf, len, "buf%d.%s", (i - TF_BUF0) / TB_COUNT,
			buf_names[(i - TF_BUF0) % TB_COUNT]);
	return 0;
}

int tune_program_feature_name(int i, char *buf, size_t len)
{
	if (i < 0 || i >= TUNE_PROGRAM_FEATURES)
		return -1;
	if (i < TP_SUM0) {
		snprintf(buf, len, "%s", program_names[i]);
		return 0;
	}
	if (i < TP_STORE0) {
		snprintf(buf, len, "sum.%s", store_names[i - TP_SUM0]);
		return 0;
	}
	if (i == TP_STREAM_BYTES) {
		snprintf(buf, len, "stream_bytes");
		return 0;
	}
	char inner[64];
	int s = (i - TP_STORE0) / TUNE_STORE_FEATURES;
	tune_store_feature_name((i - TP_STORE0) % TUNE_STORE_FEATURES, inner,
		sizeof(inner));
	snprintf(buf, len, "store%d.%s", s, inner);
	return 0;
}
