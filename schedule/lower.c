/* Lowering: a schedule state becomes a loop program.
 *
 * requires: a state whose primitives all succeeded
 * guarantees: a program that computes the op (checked by loop_verify and,
 *   in the tests, against the interpreter): root stages in the op's order,
 *   each a nest of its live loops; stages computed at a loop appear first
 *   in that loop's body, over the region ISL computes, in a buffer
 *   allocated there; reductions initialize before their outermost
 *   reduction loop; non-dividing splits and partial regions are guarded;
 *   inlined stages are evaluated at each read; buffers have the strides
 *   storage_align asked for, and stages in shared memory computed at a
 *   loop keep their scope (after schedule/shared.c accepts the state;
 *   barriers come later, ir/loop_barriers.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/id.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#include "ir/te_impl.h"
#include "schedule/bound.h"
#include "schedule/region.h"
#include "schedule/state.h"

int sch_map_reverse_read(const sch_state *st, int c, int p, int *axis);

typedef struct lowering {
	sch_state *st;
	loop_prog *p;
	loop_buffer **buf;      /* by op stage index */
	sch_stage *eff;         /* stages with the extents they have when run */
	bool *attached;         /* by schedule stage: computed inside a loop */
	bool *relative;         /* its buffer holds just its region (compute_at) */
	loop_expr ***origin;    /* attached stages: the region's first element */
	loop_expr ***last;      /* attached stages: the region's last element */
	sch_region *region;     /* attached stages: what ISL knows of the region */
	loop_expr ***leaves;    /* by stage, while its nest is emitted: its loop
	                         * values by nest position */
	loop_buffer *acc;       /* set: updates of stage acc_stage go to acc[0]
	                         * (cross-thread partials) */
	int acc_stage;
	int parallel_depth;
	int nnames;
	const char **names;
	bool failed;
} lowering;

/* The variables of the stage whose expression is translated. */
typedef struct var_env {
	const tessel_stage *te;
	loop_expr *vals[2 * TESSEL_MAX_DIMS + 64];
} var_env;

static loop_stmt *emit_stage(lowering *L, int si);

static int fail(lowering *L, const char *fmt, const char *a, const char *b)
{
	L->failed = true;
	return te_error(L->st->ctx, TESSEL_ERR_VALUE, (tessel_loc){ NULL, 0, 0 },
		fmt, a, b);
}

/* Return a variable named after "base" that no other variable of the
 * program has. */
static loop_var *fresh_var(lowering *L, const char *base)
{
	char name[SCH_NAME_MAX * 2 + 16];
	snprintf(name, sizeof(name), "%s", base);
	for (int n = 1;; n++) {
		bool used = false;
		for (int i = 0; i < L->nnames && !used; i++)
			used = strcmp(L->names[i], name) == 0;
		if (!used)
			break;
		snprintf(name, sizeof(name), "%s_%d", base, n);
	}
	loop_var *v = loop_var_new(L->p, name);
	const char **grown = realloc(L->names, sizeof(char *) * (size_t)(L->nnames + 1));
	L->names = grown;
	L->names[L->nnames++] = v->name;
	return v;
}

/* ---- expressions ------------------------------------------------------- */

static loop_expr *tr_expr(lowering *L, const var_env *env, const tessel_expr *e);

static bool is_float_dt(tessel_dtype dt)
{
	return tessel_dtype_is_float(dt);
}

/* Return "x" converted to "dt" when its type differs. */
static loop_expr *as_type(lowering *L, loop_expr *x, tessel_dtype dt)
{
	return x->dtype == dt ? x : lx_cast(L->p, dt, x);
}

/* Return the dtype an operation of type "dt" computes in with the
 * operand "x": "dt", or x's where both are floats and x's is wider (a
 * read of the f32 buffer of a sum into halves, sch_buffer_dtype), so
 * that the operand is not rounded to a half type: the interpreter keeps
 * every value of a stage unrounded, and rounds outputs once. */
static tessel_dtype computed_in(tessel_dtype dt, const loop_expr *x)
{
	bool wider = is_float_dt(dt) && is_float_dt(x->dtype) &&
		tessel_dtype_size(x->dtype) > tessel_dtype_size(dt);
	return wider ? x->dtype : dt;
}

static tessel_dtype promoted(tessel_dtype a, tessel_dtype b)
{
	if (is_float_dt(a) && !is_float_dt(b))
		return a;
	if (is_float_dt(b) && !is_float_dt(a))
		return b;
	return a >= b ? a : b;
}

static loop_expr *tr_binary(lowering *L, const var_env *env, const tessel_expr *e)
{
	loop_expr *a = tr_expr(L, env, e->u.bin.a), *b = tr_expr(L, env, e->u.bin.b);
	tessel_binary op = e->u.bin.op;
	tessel_dtype dt = e->type.dtype;
	if (op >= TESSEL_LT && op <= TESSEL_NE) {
		tessel_dtype c = promoted(a->dtype, b->dtype);
		return lx_cmp(L->p, op, as_type(L, a, c), as_type(L, b, c));
	}
	if (op == TESSEL_AND || op == TESSEL_OR)
		return lx_binary(L->p, op, a, b, TESSEL_BOOL);
	dt = computed_in(computed_in(dt, a), b);
	return lx_binary(L->p, op, as_type(L, a, dt), as_type(L, b, dt), dt);
}

/* Translate the read "e" of an inlined stage: its body with its axes bound
 * to the read's indices. */
static loop_expr *tr_inlined(lowering *L, const var_env *env, const tessel_expr *e)
{
	const tessel_stage *t = e->u.access.tensor;
	var_env *inner = calloc(1, sizeof(*inner));
	inner->te = t;
	for (int d = 0; d < t->ndim; d++)
		inner->vals[d] = tr_expr(L, env, e->u.access.index[d]);
	loop_expr *x = as_type(L, tr_expr(L, inner, t->body), t->dtype);
	free(inner);
	return x;
}

static loop_expr *tr_access(lowering *L, const var_env *env, const tessel_expr *e)
{
	const tessel_stage *t = e->u.access.tensor;
	int si = sch_stage_of(L->st, t);
	if (si >= 0 && L->st->stages[si].attach == SCH_INLINE)
		return tr_inlined(L, env, e);
	loop_expr *idx[TESSEL_MAX_DIMS];
	for (int d = 0; d < e->u.access.n; d++) {
		idx[d] = tr_expr(L, env, e->u.access.index[d]);
		if (si >= 0 && L->relative[si])
			idx[d] = lx_sub(L->p, idx[d], L->origin[si][d]);
	}
	return lx_load(L->p, L->buf[t->index], e->u.access.n, idx);
}

static loop_expr *tr_literal(lowering *L, const tessel_expr *e)
{
	switch (e->kind) {
	case TE_INT:
		return e->type.dtype == TESSEL_I64 ? lx_int(L->p, e->u.ival)
			: lx_cast(L->p, e->type.dtype, lx_int(L->p, e->u.ival));
	case TE_FLOAT:
		return lx_float(L->p, e->u.fval, e->type.dtype);
	default:
		return lx_bool(L->p, e->u.ival != 0);
	}
}

static loop_expr *tr_expr(lowering *L, const var_env *env, const tessel_expr *e)
{
	switch (e->kind) {
	case TE_INT:
	case TE_FLOAT:
	case TE_BOOL:
		return tr_literal(L, e);
	case TE_VAR: {
		const tessel_var *v = e->u.var;
		return env->vals[v->is_reduce ? env->te->ndim + v->index : v->index];
	}
	case TE_ACCESS:
		return tr_access(L, env, e);
	case TE_UNARY: {
		loop_expr *a = tr_expr(L, env, e->u.un.a);
		tessel_dtype dt = e->u.un.op == TESSEL_NOT ? e->type.dtype :
			computed_in(e->type.dtype, a);
		return lx_unary(L->p, e->u.un.op,
			e->u.un.op == TESSEL_NOT ? a : as_type(L, a, dt), dt);
	}
	case TE_BINARY:
		return tr_binary(L, env, e);
	case TE_SELECT: {
		loop_expr *x = tr_expr(L, env, e->u.sel.then_);
		loop_expr *y = tr_expr(L, env, e->u.sel.else_);
		tessel_dtype dt = computed_in(computed_in(e->type.dtype, x), y);
		return lx_select(L->p, tr_expr(L, env, e->u.sel.cond), as_type(L, x, dt),
			as_type(L, y, dt), dt);
	}
	case TE_CAST:
		return lx_cast(L->p, e->u.cast.to, tr_expr(L, env, e->u.cast.a));
	case TE_SYM:
		break;
	}
	fail(L, "internal: unbound symbol in a bound op%s%s", "", "");
	return lx_int(L->p, 0);
}

/* ---- loop structure ---------------------------------------------------- */

/* Return the value of iter "it" of "s" from the leaf values "leaf" (by
 * nest position; NULL where unknown). */
static loop_expr *iter_value(lowering *L, const sch_stage *s, int it,
	loop_expr **leaf)
{
	const sch_iter *t = &s->iters[it];
	if (t->leaf) {
		loop_expr *v = leaf[sch_leaf_pos(s, it)];
		return v ? v : lx_int(L->p, 0);
	}
	if (t->fused_into >= 0) {
		const sch_iter *f = &s->iters[t->fused_into];
		loop_expr *fv = iter_value(L, s, t->fused_into, leaf);
		loop_expr *n = lx_int(L->p, s->iters[f->inner].extent);
		return it == f->outer ? lx_div(L->p, fv, n) : lx_mod(L->p, fv, n);
	}
	return lx_add(L->p, lx_mul(L->p, iter_value(L, s, t->split_outer, leaf),
			lx_int(L->p, s->iters[t->split_outer].factor)),
		iter_value(L, s, t->split_inner, leaf));
}

/* Return the conjunction of the guards of "s" for the given leaf values:
 * split iters whose outer * factor overshoots their extent, and regions
 * that end before the buffer does or leave the stage's domain (a region
 * computed for consumer iterations that the consumer's own guards skip
 * has no meaningful bounds).  Only spatial iters when "spatial". */
static loop_expr *guards(lowering *L, int si, loop_expr **leaf, bool spatial)
{
	const sch_stage *s = &L->eff[si];
	loop_expr *g = NULL;
	for (int it = 0; it < s->niters; it++) {
		const sch_iter *t = &s->iters[it];
		if (t->leaf || t->fused_into >= 0 || (spatial && t->reduce))
			continue;
		const sch_iter *o = &s->iters[t->split_outer];
		if (o->extent * o->factor <= t->extent)
			continue;
		g = lx_and(L->p, g, lx_cmp(L->p, TESSEL_LT, iter_value(L, s, it, leaf),
			lx_int(L->p, t->extent)));
	}
	for (int d = 0; L->attached[si] && d < s->te->ndim; d++) {
		const sch_region *r = &L->region[si];
		loop_expr *x = lx_add(L->p, L->origin[si][d], iter_value(L, s, d, leaf));
		if (!r->full[d])
			g = lx_and(L->p, g, lx_cmp(L->p, TESSEL_LE, x, L->last[si][d]));
		if (r->nonempty)
			continue;
		g = lx_and(L->p, g, lx_cmp(L->p, TESSEL_GE, x, lx_int(L->p, 0)));
		g = lx_and(L->p, g, lx_cmp(L->p, TESSEL_LT, x, lx_int(L->p, s->te->extent[d])));
	}
	return g;
}

static loop_stmt *guarded(lowering *L, loop_expr *g, loop_stmt *s)
{
	return g ? ls_if(L->p, g, s, NULL) : s;
}

/* Fill "env" with the values of the axes of stage "si" (absolute indices)
 * from leaf values. */
static void axis_values(lowering *L, int si, loop_expr **leaf, var_env *env)
{
	const sch_stage *s = &L->eff[si];
	env->te = s->te;
	for (int d = 0; d < s->te->ndim; d++) {
		loop_expr *v = iter_value(L, s, d, leaf);
		env->vals[d] = L->attached[si] ? lx_add(L->p, L->origin[si][d], v) : v;
	}
	for (int k = 0; k < s->te->nraxes; k++) {
		int64_t lo = 0;
		te_expr_const_int(s->te->raxes[k]->lo, &lo);
		env->vals[s->te->ndim + k] = lx_add(L->p, lx_int(L->p, lo),
			iter_value(L, s, s->te->ndim + k, leaf));
	}
}

/* Return the indices of the element of stage "si" that "env" points at, in
 * its buffer. */
static void store_index(lowering *L, int si, const var_env *env, loop_expr **idx)
{
	for (int d = 0; d < L->eff[si].te->ndim; d++)
		idx[d] = L->relative[si] ? lx_sub(L->p, env->vals[d], L->origin[si][d])
					 : env->vals[d];
}

/* Return the identity of the reduction of "t" in dtype "dt". */
static loop_expr *identity(lowering *L, const tessel_stage *t, tessel_dtype dt)
{
	bool is_max = t->reduce == TESSEL_RMAX;
	if (t->reduce == TESSEL_SUM || t->reduce == TESSEL_PROD) {
		int one = t->reduce == TESSEL_PROD;
		return is_float_dt(dt) ? lx_float(L->p, one, dt)
				       : as_type(L, lx_int(L->p, one), dt);
	}
	if (is_float_dt(dt))
		return lx_float(L->p, is_max ? -__builtin_inf() : __builtin_inf(), dt);
	int64_t lo, hi;
	tessel_int_limits(dt, &lo, &hi);
	return as_type(L, lx_int(L->p, is_max ? lo : hi), dt);
}

/* Return "a" combined with "b" by the reduction of "t", in dtype "dt". */
static loop_expr *reduce_op(lowering *L, const tessel_stage *t, loop_expr *a,
	loop_expr *b, tessel_dtype dt)
{
	static const tessel_binary combine[] = {
		TESSEL_ADD, TESSEL_ADD, TESSEL_MUL, TESSEL_MAX, TESSEL_MIN
	};
	return lx_binary(L->p, combine[t->reduce], a, b, dt);
}

static loop_stmt *emit_update(lowering *L, int si, loop_expr **leaf)
{
	const tessel_stage *t = L->eff[si].te;
	var_env *env = calloc(1, sizeof(*env));
	axis_values(L, si, leaf, env);
	loop_expr *idx[TESSEL_MAX_DIMS];
	store_index(L, si, env, idx);
	loop_buffer *b = L->buf[t->index];
	loop_expr *value = as_type(L, tr_expr(L, env, t->body), t->dtype);
	free(env);
	if (L->acc && si == L->acc_stage) {
		b = L->acc;
		idx[0] = lx_int(L->p, 0);
		loop_stmt *s = ls_store(L->p, b, 1, idx, reduce_op(L, t, lx_load(L->p, b, 1,
			idx), as_type(L, value, b->dtype), b->dtype), t->name);
		return guarded(L, guards(L, si, leaf, false), s);
	}
	if (t->reduce != TESSEL_REDUCE_NONE)
		value = reduce_op(L, t, lx_load(L->p, b, t->ndim, idx),
			as_type(L, value, b->dtype), b->dtype);
	loop_stmt *s = ls_store(L->p, b, t->ndim, idx, value, t->name);
	return guarded(L, guards(L, si, leaf, false), s);
}

/* Return the nest position before which the accumulators of "s" are
 * initialized: its first reduction loop, or the loop decompose_reduction
 * chose when that is further out; nleaves when "s" is no reduction. */
static int init_position(const sch_stage *s)
{
	if (s->te->reduce == TESSEL_REDUCE_NONE)
		return s->nleaves;
	int first = s->nleaves;
	for (int p = s->nleaves - 1; p >= 0; p--)
		if (s->iters[s->leaves[p]].reduce)
			first = p;
	int chosen = s->init_iter >= 0 ? sch_leaf_pos(s, s->init_iter) : -1;
	return chosen >= 0 && chosen < first ? chosen : first;
}

/* Return the kind of the initialization copy of a spatial loop of kind
 * "k": vector and GPU-bound loops keep theirs (each thread initializes
 * the elements it then updates), the others run serially. */
static loop_kind init_kind(loop_kind k)
{
	return k == LOOP_PARALLEL || k == LOOP_UNROLLED ? LOOP_SERIAL : k;
}

/* Emit the initialization of the accumulators of stage "si": a nest over
 * the spatial loops inside nest position "pos". */
static loop_stmt *emit_init(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_stage *s = &L->eff[si];
	loop_expr *init_leaf[64];
	memcpy(init_leaf, leaf, sizeof(loop_expr *) * (size_t)s->nleaves);
	loop_var *vars[64] = { 0 };
	for (int p = pos; p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[s->leaves[p]];
		init_leaf[p] = NULL;
		if (!t->reduce) {
			char name[SCH_NAME_MAX + 8];
			snprintf(name, sizeof(name), "%s_init", t->name);
			vars[p] = fresh_var(L, name);
			init_leaf[p] = lx_var(L->p, vars[p]);
		}
	}
	var_env *env = calloc(1, sizeof(*env));
	axis_values(L, si, init_leaf, env);
	loop_expr *idx[TESSEL_MAX_DIMS];
	store_index(L, si, env, idx);
	free(env);
	loop_buffer *b = L->buf[s->te->index];
	loop_stmt *body = ls_store(L->p, b, s->te->ndim, idx, identity(L, s->te, b->dtype),
		s->te->name);
	body = guarded(L, guards(L, si, init_leaf, true), body);
	for (int p = s->nleaves - 1; p >= pos; p--)
		if (vars[p])
			body = ls_for(L->p, vars[p], lx_int(L->p, 0),
				lx_int(L->p, s->iters[s->leaves[p]].extent),
				init_kind(s->iters[s->leaves[p]].kind), body);
	return body;
}

/* ---- attached stages ------------------------------------------------------ */

typedef struct ast_names {
	lowering *L;
	const sch_stage *c; /* the consumer */
	loop_expr **leaf;   /* its loop values by nest position */
	loop_expr **o;      /* its region origin, or NULL */
	loop_expr **root;   /* the loop values of the root stage the consumer is
	                     * computed in (block regions: sch_region_block) */
} ast_names;

static loop_expr *from_ast(const ast_names *n, isl_ast_expr *e);

static loop_expr *ast_id(const ast_names *n, isl_ast_expr *e)
{
	isl_id *id = isl_ast_expr_get_id(e);
	const char *name = isl_id_get_name(id);
	int k = atoi(name + 1);
	loop_expr *x = name[0] == 'q' ? iter_value(n->L, n->c, k, n->leaf)
		: name[0] == 'w' ? n->root[k] : n->o[k];
	isl_id_free(id);
	return x;
}

static loop_expr *ast_op(const ast_names *n, isl_ast_expr *e)
{
	loop_prog *p = n->L->p;
	int nargs = isl_ast_expr_op_get_n_arg(e);
	loop_expr *a[3] = { 0 };
	for (int i = 0; i < nargs && i < 3; i++) {
		isl_ast_expr *arg = isl_ast_expr_op_get_arg(e, i);
		a[i] = from_ast(n, arg);
		isl_ast_expr_free(arg);
	}
	enum isl_ast_expr_op_type type = isl_ast_expr_op_get_type(e);
	if ((type == isl_ast_expr_op_max || type == isl_ast_expr_op_min) && nargs > 2) {
		loop_expr *acc = a[0];
		for (int i = 1; i < nargs; i++) {
			isl_ast_expr *arg = isl_ast_expr_op_get_arg(e, i);
			loop_expr *x = from_ast(n, arg);
			isl_ast_expr_free(arg);
			acc = type == isl_ast_expr_op_max ? lx_max(p, acc, x) : lx_min(p, acc, x);
		}
		return acc;
	}
	switch (type) {
	case isl_ast_expr_op_and:
	case isl_ast_expr_op_and_then: return lx_and(p, a[0], a[1]);
	case isl_ast_expr_op_or:
	case isl_ast_expr_op_or_else: return lx_binary(p, TESSEL_OR, a[0], a[1], TESSEL_BOOL);
	case isl_ast_expr_op_max: return lx_max(p, a[0], a[1]);
	case isl_ast_expr_op_min: return lx_min(p, a[0], a[1]);
	case isl_ast_expr_op_minus: return lx_sub(p, lx_int(p, 0), a[0]);
	case isl_ast_expr_op_add: return lx_add(p, a[0], a[1]);
	case isl_ast_expr_op_sub: return lx_sub(p, a[0], a[1]);
	case isl_ast_expr_op_mul: return lx_mul(p, a[0], a[1]);
	case isl_ast_expr_op_div:
	case isl_ast_expr_op_fdiv_q:
	case isl_ast_expr_op_pdiv_q: return lx_div(p, a[0], a[1]);
	case isl_ast_expr_op_pdiv_r:
	case isl_ast_expr_op_zdiv_r: return lx_mod(p, a[0], a[1]);
	case isl_ast_expr_op_cond:
	case isl_ast_expr_op_select: return lx_select(p, a[0], a[1], a[2], TESSEL_I64);
	case isl_ast_expr_op_eq: return lx_cmp(p, TESSEL_EQ, a[0], a[1]);
	case isl_ast_expr_op_le: return lx_cmp(p, TESSEL_LE, a[0], a[1]);
	case isl_ast_expr_op_lt: return lx_cmp(p, TESSEL_LT, a[0], a[1]);
	case isl_ast_expr_op_ge: return lx_cmp(p, TESSEL_GE, a[0], a[1]);
	case isl_ast_expr_op_gt: return lx_cmp(p, TESSEL_GT, a[0], a[1]);
	default:
		fail(n->L, "internal: unexpected ISL expression%s%s", "", "");
		return lx_int(p, 0);
	}
}

static loop_expr *from_ast(const ast_names *n, isl_ast_expr *e)
{
	switch (isl_ast_expr_get_type(e)) {
	case isl_ast_expr_id:
		return ast_id(n, e);
	case isl_ast_expr_int: {
		isl_val *v = isl_ast_expr_get_val(e);
		loop_expr *x = lx_int(n->L->p, isl_val_get_num_si(v));
		isl_val_free(v);
		return x;
	}
	case isl_ast_expr_op:
		return ast_op(n, e);
	default:
		fail(n->L, "internal: bad ISL expression%s%s", "", "");
		return lx_int(n->L->p, 0);
	}
}

/* Return the piecewise function "pa" (kept) as an expression over the
 * consumer's loops "n", which lie in "box". */
static loop_expr *pw_aff_expr(const ast_names *n, isl_pw_aff *pa, isl_set *box)
{
	isl_ast_build *b = isl_ast_build_from_context(isl_set_copy(box));
	isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(b, isl_pw_aff_copy(pa));
	loop_expr *x = e ? from_ast(n, e) : NULL;
	isl_ast_expr_free(e);
	isl_ast_build_free(b);
	if (!x) {
		fail(n->L, "internal: ISL could not print a region bound%s%s", "", "");
		x = lx_int(n->L->p, 0);
	}
	return x;
}

/* Prepare stage "pi", computed at nest position "pos" of stage "ci" whose
 * loops have the values "leaf": its region's bounds, extents and buffer,
 * so that the consumer's reads can be translated.  Return the buffer. */
static loop_buffer *prepare_attached(lowering *L, int pi, int ci, int pos,
	loop_expr **leaf)
{
	sch_region r;
	const sch_stage *c = &L->st->stages[ci];
	bool block = L->st->stages[pi].scope == LOOP_SHARED && c->attach == SCH_AT;
	if (block ? sch_region_block(L->st, pi, &L->eff[ci], pos, &r)
		  : sch_region_compute(L->st, pi, &L->eff[ci], L->attached[ci], pos, &r)) {
		L->failed = true;
		return NULL;
	}
	const tessel_stage *t = L->eff[pi].te;
	ast_names names = { L, &L->eff[ci], leaf, L->attached[ci] ? L->origin[ci] : NULL,
		block ? L->leaves[c->attach_stage] : NULL };
	L->attached[pi] = true;
	L->relative[pi] = true;
	L->origin[pi] = te_arena_alloc(&L->p->arena, sizeof(loop_expr *) * TESSEL_MAX_DIMS);
	L->last[pi] = te_arena_alloc(&L->p->arena, sizeof(loop_expr *) * TESSEL_MAX_DIMS);
	for (int d = 0; d < t->ndim; d++) {
		L->origin[pi][d] = pw_aff_expr(&names, r.lo[d], r.box);
		L->last[pi][d] = pw_aff_expr(&names, r.hi[d], r.box);
	}
	sch_region_set_extents(&L->eff[pi], r.shape);
	L->region[pi].nonempty = r.nonempty;
	memcpy(L->region[pi].full, r.full, sizeof(r.full));
	loop_scope scope = L->st->stages[pi].scope;
	loop_buffer *b = loop_buffer_new(L->p, t->name, sch_buffer_dtype(t), t->ndim, r.shape,
		scope == LOOP_GLOBAL ? LOOP_LOCAL : scope);
	sch_buffer_strides(&L->st->stages[pi], r.shape, b->strides);
	L->buf[t->index] = b;
	sch_region_free(&r);
	return b;
}

/* Prepare the consumer "ci", computed after the body of the loop at nest
 * position "pos" of its producer "pi" (loop values "leaf"): its axes span
 * the box the producer wrote in that iteration (the axes it reads the
 * producer with) or their whole extent (the others). */
static void prepare_after(lowering *L, int ci, int pi, int pos, loop_expr **leaf)
{
	sch_region r;
	int axis[TESSEL_MAX_DIMS];
	if (sch_map_reverse_read(L->st, ci, pi, axis) ||
	    sch_write_region(L->st, &L->eff[pi], pos, &r)) {
		L->failed = true;
		return;
	}
	const tessel_stage *t = L->eff[ci].te;
	ast_names names = { L, &L->eff[pi], leaf, NULL, NULL };
	int64_t shape[TESSEL_MAX_DIMS];
	L->attached[ci] = true;
	L->origin[ci] = te_arena_alloc(&L->p->arena, sizeof(loop_expr *) * TESSEL_MAX_DIMS);
	L->last[ci] = te_arena_alloc(&L->p->arena, sizeof(loop_expr *) * TESSEL_MAX_DIMS);
	for (int a = 0; a < t->ndim; a++) {
		L->origin[ci][a] = lx_int(L->p, 0);
		L->last[ci][a] = lx_int(L->p, t->extent[a] - 1);
		L->region[ci].full[a] = true;
		shape[a] = t->extent[a];
	}
	for (int d = 0; d < r.ndim; d++) {
		int a = axis[d];
		L->origin[ci][a] = pw_aff_expr(&names, r.lo[d], r.box);
		L->last[ci][a] = pw_aff_expr(&names, r.hi[d], r.box);
		L->region[ci].full[a] = r.full[d];
		shape[a] = r.shape[d];
	}
	L->region[ci].nonempty = r.nonempty;
	sch_region_set_extents(&L->eff[ci], shape);
	sch_region_free(&r);
}

/* Return whether a live loop of "s" is bound to "kind". */
static bool stage_binds(const sch_stage *s, loop_kind kind)
{
	for (int p = 0; p < s->nleaves; p++)
		if (s->iters[s->leaves[p]].kind == kind)
			return true;
	return false;
}

/* Return "nest", the nest of stage "pi", run by the threads of index 0
 * along every thread index the owner of its block binds and it does not,
 * when it is in shared memory: a loop of one iteration bound to the index
 * (the kernel guards it), so that no two threads store the same
 * element. */
static loop_stmt *first_threads_only(lowering *L, int pi, loop_stmt *nest)
{
	const sch_stage *s = &L->st->stages[pi];
	if (s->scope != LOOP_SHARED)
		return nest;
	const sch_stage *c = &L->st->stages[sch_shared_owner(L->st, pi)];
	for (int d = 0; d < 3; d++) {
		loop_kind k = (loop_kind)(LOOP_THREAD_X + d);
		if (!stage_binds(c, k) || stage_binds(s, k))
			continue;
		char name[SCH_NAME_MAX + 16];
		snprintf(name, sizeof(name), "%s_t%c", s->name, 'x' + d);
		nest = ls_for(L->p, fresh_var(L, name), lx_int(L->p, 0), lx_int(L->p, 1), k,
			nest);
	}
	return nest;
}

/* Return "rest" (the consumer's code inside the loop) preceded by the nest
 * of the prepared stage "pi", in the scope of its buffer "b". */
static loop_stmt *wrap_attached(lowering *L, int pi, loop_buffer *b, loop_stmt *rest)
{
	loop_stmt *seq = ls_seq(L->p, 0, NULL);
	ls_seq_append(L->p, seq, first_threads_only(L, pi, emit_stage(L, pi)));
	ls_seq_append(L->p, seq, rest);
	return ls_alloc(L->p, b, seq);
}

/* ---- nests ---------------------------------------------------------------- */

static loop_stmt *emit_level(lowering *L, int si, int pos, loop_expr **leaf);
static loop_stmt *emit_inside(lowering *L, int si, int pos, loop_expr **leaf);
static loop_stmt *emit_cross_thread(lowering *L, int si, int pos, loop_expr **leaf);

/* Write into "order" the stages that have a buffer in "bufs" (those
 * computed at one loop), each after the ones it reads; return how many. */
static int producers_first(const sch_state *st, loop_buffer *const *bufs, int *order)
{
	int n = 0, total = 0;
	bool *done = calloc((size_t)st->nstages + 1, sizeof(bool));
	for (int k = 0; k < st->nstages; k++)
		total += bufs[k] != NULL;
	while (n < total) {
		int before = n;
		for (int k = 0; k < st->nstages; k++) {
			if (!bufs[k] || done[k])
				continue;
			bool ready = true;
			for (int j = 0; j < st->nstages && ready; j++)
				ready = !bufs[j] || done[j] || j == k || !sch_reads(st, k, j);
			if (ready) {
				done[k] = true;
				order[n++] = k;
			}
		}
		if (n == before)
			break;
	}
	free(done);
	return n;
}

/* Emit the body of the loop at nest position "pos": the consumer's inner
 * loops, preceded by the stages computed at this loop (producers before
 * the stages there that read them). */
static loop_stmt *emit_inside(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_stage *s = &L->eff[si];
	loop_buffer **bufs = calloc((size_t)L->st->nstages + 1, sizeof(loop_buffer *));
	for (int k = 0; k < L->st->nstages; k++) {
		const sch_stage *a = &L->st->stages[k];
		if (a->attach == SCH_AT && a->attach_stage == si &&
		    a->attach_iter == s->leaves[pos])
			bufs[k] = prepare_attached(L, k, si, pos, leaf);
	}
	loop_stmt *rest = L->failed ? ls_seq(L->p, 0, NULL) : emit_level(L, si, pos + 1, leaf);
	int *order = malloc(sizeof(int) * ((size_t)L->st->nstages + 1));
	int n = producers_first(L->st, bufs, order);
	for (int k = n - 1; k >= 0 && !L->failed; k--)
		rest = wrap_attached(L, order[k], bufs[order[k]], rest);
	free(order);
	free(bufs);
	for (int k = 0; k < L->st->nstages && !L->failed; k++) {
		const sch_stage *a = &L->st->stages[k];
		if (a->attach != SCH_AFTER || a->attach_stage != si ||
		    a->attach_iter != s->leaves[pos])
			continue;
		prepare_after(L, k, si, pos, leaf);
		if (L->failed)
			break;
		loop_stmt *seq = ls_seq(L->p, 0, NULL);
		ls_seq_append(L->p, seq, rest);
		ls_seq_append(L->p, seq, emit_stage(L, k));
		rest = seq;
	}
	return rest;
}

static loop_stmt *emit_loop(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_iter *t = &L->eff[si].iters[L->eff[si].leaves[pos]];
	loop_var *v = fresh_var(L, t->name);
	loop_kind kind = t->kind;
	if (kind == LOOP_PARALLEL && L->parallel_depth > 0)
		kind = LOOP_SERIAL;
	leaf[pos] = lx_var(L->p, v);
	L->parallel_depth += kind == LOOP_PARALLEL;
	loop_stmt *body = emit_inside(L, si, pos, leaf);
	L->parallel_depth -= kind == LOOP_PARALLEL;
	loop_stmt *f = ls_for(L->p, v, lx_int(L->p, 0), lx_int(L->p, t->extent), kind, body);
	f->u.for_.unroll_limit = t->unroll_limit;
	f->u.for_.min_blocks = t->min_blocks;
	f->u.for_.dot_group = t->dot_group;
	const tessel_stage *in = t->prefetch[0] ? te_op_find_stage(L->st->op, t->prefetch) : NULL;
	if (in && L->buf[in->index]) {
		f->u.for_.prefetch = L->buf[in->index];
		f->u.for_.prefetch_distance = t->prefetch_distance;
	}
	return f;
}

/* Return whether stage "si", an output that reduces into f16 or bf16,
 * reduces in a scalar accumulator of f32 from nest position "pos" (its
 * init position) on: only reduction loops, none bound to threads, lie
 * inside it, so that each element is reduced whole before the next.
 * Elsewhere such an output's partial results stay in its buffer and
 * round to its dtype at every step (a stage that is no output reduces in
 * an f32 buffer: sch_buffer_dtype; cache_write makes one). */
static bool half_scalar_accumulator(const lowering *L, int si, int pos)
{
	const sch_stage *s = &L->eff[si];
	tessel_dtype own = L->buf[s->te->index]->dtype;
	if (sch_buffer_dtype(s->te) != TESSEL_F32 || own == TESSEL_F32)
		return false;
	for (int p = pos; p < s->nleaves; p++) {
		const sch_iter *t = &s->iters[s->leaves[p]];
		if (!t->reduce || sch_kind_is_thread(t->kind))
			return false;
	}
	return true;
}

/* Emit the loops of stage "si" from nest position "pos", its init
 * position, reducing each element of the half dtype into a scalar f32
 * accumulator stored, rounded, after them. */
static loop_stmt *emit_half_reduction(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_stage *s = &L->eff[si];
	const tessel_stage *te = s->te;
	loop_prog *p = L->p;
	char name[SCH_NAME_MAX + 16];
	snprintf(name, sizeof(name), "%s_acc", te->name);
	loop_buffer *acc = loop_buffer_new(p, name, TESSEL_F32, 1, (int64_t[]){ 1 },
		LOOP_LOCAL);
	loop_expr *zero = lx_int(p, 0);
	loop_stmt *body = ls_seq(p, 0, NULL);
	ls_seq_append(p, body, ls_store(p, acc, 1, &zero, identity(L, te, TESSEL_F32),
		te->name));
	loop_buffer *outer_acc = L->acc;
	int outer_stage = L->acc_stage;
	L->acc = acc;
	L->acc_stage = si;
	ls_seq_append(p, body, emit_loop(L, si, pos, leaf));
	L->acc = outer_acc;
	L->acc_stage = outer_stage;
	loop_expr *out_leaf[64];
	memcpy(out_leaf, leaf, sizeof(loop_expr *) * (size_t)s->nleaves);
	for (int q = pos; q < s->nleaves; q++)
		out_leaf[q] = NULL;
	var_env *env = calloc(1, sizeof(*env));
	axis_values(L, si, out_leaf, env);
	loop_expr *idx[TESSEL_MAX_DIMS];
	store_index(L, si, env, idx);
	free(env);
	ls_seq_append(p, body, guarded(L, guards(L, si, out_leaf, true),
		ls_store(p, L->buf[te->index], te->ndim, idx,
			as_type(L, lx_load(p, acc, 1, &zero), te->dtype), te->name)));
	return ls_alloc(p, acc, body);
}

static loop_stmt *emit_level(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_stage *s = &L->eff[si];
	if (pos == s->nleaves)
		return emit_update(L, si, leaf);
	const sch_iter *t = &s->iters[s->leaves[pos]];
	if (t->reduce && sch_kind_is_thread(t->kind))
		return emit_cross_thread(L, si, pos, leaf);
	if (pos == init_position(s) && half_scalar_accumulator(L, si, pos))
		return emit_half_reduction(L, si, pos, leaf);
	loop_stmt *loop = emit_loop(L, si, pos, leaf);
	if (pos != init_position(s))
		return loop;
	loop_expr *outer[64];
	memcpy(outer, leaf, sizeof(outer));
	loop_stmt *seq = ls_seq(L->p, 0, NULL);
	ls_seq_append(L->p, seq, emit_init(L, si, pos, outer));
	ls_seq_append(L->p, seq, loop);
	return seq;
}

/* ---- cross-thread reductions ------------------------------------------------ */

/* Return a loop "for v in 0..n" of kind "kind" over a fresh variable
 * named after "base" (returned in "*v"), its body to be set. */
static loop_stmt *thread_loop(lowering *L, const char *base, int64_t n,
	loop_kind kind, loop_var **v)
{
	*v = fresh_var(L, base);
	return ls_for(L->p, *v, lx_int(L->p, 0), lx_int(L->p, n), kind, NULL);
}

/* Emit the reduction of stage "si" over its loop at nest position "pos",
 * bound to a thread index (schedule/bind.c allows it only as the first
 * reduction loop, with no thread loop outside it): each thread reduces
 * the loops inside it into a private partial, the partials go to a
 * shared buffer of one slot per thread, a tree halves them (a barrier
 * after each step; slots past the extent count as the identity), and
 * thread 0 stores the element.  After Harris, "Optimizing parallel
 * reduction in CUDA" (sequential addressing), and TVM's allreduce. */
static loop_stmt *emit_cross_thread(lowering *L, int si, int pos, loop_expr **leaf)
{
	const sch_stage *s = &L->eff[si];
	const sch_iter *t = &s->iters[s->leaves[pos]];
	const tessel_stage *te = s->te;
	loop_prog *p = L->p;
	int64_t n = t->extent, half = 1;
	while (half * 2 < n)
		half *= 2;
	char name[SCH_NAME_MAX + 16];
	snprintf(name, sizeof(name), "%s_red", te->name);
	tessel_dtype dt = sch_buffer_dtype(te);
	loop_buffer *red = loop_buffer_new(p, name, dt, 1, &n, LOOP_SHARED);
	red->fenced = true;
	snprintf(name, sizeof(name), "%s_acc", te->name);
	loop_buffer *acc = loop_buffer_new(p, name, dt, 1, (int64_t[]){ 1 },
		LOOP_LOCAL);
	loop_expr *zero = lx_int(p, 0);
	loop_var *v;
	loop_stmt *partial = thread_loop(L, t->name, n, t->kind, &v);
	leaf[pos] = lx_var(p, v);
	loop_stmt *inner = ls_seq(p, 0, NULL);
	ls_seq_append(p, inner, ls_store(p, acc, 1, &zero, identity(L, te, dt),
		te->name));
	L->acc = acc;
	L->acc_stage = si;
	ls_seq_append(p, inner, emit_inside(L, si, pos, leaf));
	L->acc = NULL;
	loop_expr *slot = lx_var(p, v);
	ls_seq_append(p, inner, ls_store(p, red, 1, &slot, lx_load(p, acc, 1, &zero),
		te->name));
	partial->u.for_.body = ls_alloc(p, acc, inner);
	loop_stmt *body = ls_seq(p, 0, NULL);
	ls_seq_append(p, body, partial);
	ls_seq_append(p, body, ls_barrier(p));
	for (int64_t h = half; h >= 1 && n > 1; h /= 2) {
		loop_stmt *step = thread_loop(L, t->name, n, t->kind, &v);
		loop_expr *x = lx_var(p, v), *y = lx_add(p, lx_var(p, v), lx_int(p, h));
		loop_expr *c = lx_and(p, lx_cmp(p, TESSEL_LT, lx_var(p, v), lx_int(p, h)),
			lx_cmp(p, TESSEL_LT, y, lx_int(p, n)));
		step->u.for_.body = ls_if(p, c, ls_store(p, red, 1, &x, reduce_op(L, te,
			lx_load(p, red, 1, &x), lx_load(p, red, 1, &y), dt), te->name),
			NULL);
		ls_seq_append(p, body, step);
		ls_seq_append(p, body, ls_barrier(p));
	}
	loop_stmt *last = thread_loop(L, t->name, n, t->kind, &v);
	leaf[pos] = lx_int(p, 0);
	var_env *env = calloc(1, sizeof(*env));
	axis_values(L, si, leaf, env);
	loop_expr *idx[TESSEL_MAX_DIMS];
	store_index(L, si, env, idx);
	free(env);
	loop_stmt *out = guarded(L, guards(L, si, leaf, true), ls_store(p,
		L->buf[te->index], te->ndim, idx, as_type(L, lx_load(p, red, 1, &zero),
			L->buf[te->index]->dtype), te->name));
	last->u.for_.body = ls_if(p, lx_cmp(p, TESSEL_EQ, lx_var(p, v), zero), out, NULL);
	ls_seq_append(p, body, last);
	return ls_alloc(p, red, body);
}

static loop_stmt *emit_stage(lowering *L, int si)
{
	loop_expr *leaf[64] = { 0 };
	if (L->eff[si].nleaves > 64) {
		fail(L, "stage '%s' has more than 64 loops%s", L->eff[si].name, "");
		return ls_seq(L->p, 0, NULL);
	}
	if (L->eff[si].nleaves == 0) {
		loop_stmt *seq = ls_seq(L->p, 0, NULL);
		if (L->eff[si].te->reduce != TESSEL_REDUCE_NONE)
			ls_seq_append(L->p, seq, emit_init(L, si, 0, leaf));
		ls_seq_append(L->p, seq, emit_update(L, si, leaf));
		return seq;
	}
	L->leaves[si] = leaf;
	loop_stmt *nest = emit_level(L, si, 0, leaf);
	L->leaves[si] = NULL;
	return nest;
}

/* ---- the program ---------------------------------------------------------- */

static void make_arguments(lowering *L)
{
	tessel_op *op = L->st->op;
	L->p->args = te_arena_alloc(&L->p->arena,
		sizeof(loop_buffer *) * (size_t)(op->ninputs + op->noutputs + 1));
	for (int i = 0; i < op->ninputs + op->noutputs; i++) {
		bool out = i >= op->ninputs;
		tessel_stage *t = out ? op->outputs[i - op->ninputs] : op->inputs[i];
		loop_buffer *b = loop_buffer_new(L->p, t->name, t->dtype, t->ndim,
			t->extent, LOOP_GLOBAL);
		b->arg = i;
		b->is_output = out;
		int si = out ? sch_stage_of(L->st, t) : -1;
		b->stream = si >= 0 && L->st->stages[si].stream;
		L->p->args[L->p->nargs++] = b;
		L->buf[t->index] = b;
	}
}

static void copy_effective_stages(lowering *L)
{
	for (int i = 0; i < L->st->nstages; i++) {
		L->eff[i] = L->st->stages[i];
		L->eff[i].iters = malloc(sizeof(sch_iter) * (size_t)(L->eff[i].niters + 1));
		if (L->eff[i].niters)
			memcpy(L->eff[i].iters, L->st->stages[i].iters,
				sizeof(sch_iter) * (size_t)L->eff[i].niters);
	}
}

static loop_stmt *emit_program(lowering *L)
{
	loop_stmt *seq = ls_seq(L->p, 0, NULL);
	for (int i = 0; i < L->st->nstages && !L->failed; i++)
		if (L->st->stages[i].attach == SCH_ROOT)
			ls_seq_append(L->p, seq, emit_stage(L, i));
	loop_stmt *body = seq;
	for (int i = L->st->nstages - 1; i >= 0; i--) {
		const tessel_stage *t = L->st->stages[i].te;
		sch_attach_kind a = L->st->stages[i].attach;
		if ((a != SCH_ROOT && a != SCH_AFTER) || t->is_output)
			continue;
		loop_buffer *b = L->buf[t->index];
		b->scope = LOOP_GLOBAL;
		body = ls_alloc(L->p, b, body);
	}
	return body;
}

/* Check that every stage computed at a loop (compute_at) is read only by
 * the stage of that loop and by stages computed at that loop or inside
 * it: its buffer exists just there.  Return 0, or -1 with the error in
 * "L". */
static int check_readers(lowering *L)
{
	for (int p = 0; p < L->st->nstages; p++) {
		int k = sch_reader_outside(L->st, p);
		if (k >= 0)
			return fail(L, "cannot lower: '%s' is computed inside a loop of "
				"another stage but also read by '%s', computed outside it",
				L->st->stages[p].name, L->st->stages[k].name);
	}
	return 0;
}

loop_prog *sch_lower(sch_state *st)
{
	tessel_op *op = st->op;
	if (sch_check_shared(st, "lower"))
		return NULL;
	lowering L = { .st = st };
	L.p = loop_prog_new(op->name);
	L.buf = calloc((size_t)op->nstages + 1, sizeof(loop_buffer *));
	L.eff = calloc((size_t)st->nstages + 1, sizeof(sch_stage));
	L.attached = calloc((size_t)st->nstages + 1, sizeof(bool));
	L.relative = calloc((size_t)st->nstages + 1, sizeof(bool));
	L.origin = calloc((size_t)st->nstages + 1, sizeof(loop_expr **));
	L.last = calloc((size_t)st->nstages + 1, sizeof(loop_expr **));
	L.region = calloc((size_t)st->nstages + 1, sizeof(sch_region));
	L.leaves = calloc((size_t)st->nstages + 1, sizeof(loop_expr **));
	make_arguments(&L);
	for (int i = 0; i < st->nstages; i++) {
		const tessel_stage *t = st->stages[i].te;
		if (!L.buf[t->index]) {
			L.buf[t->index] = loop_buffer_new(L.p, t->name, sch_buffer_dtype(t),
				t->ndim, t->extent, LOOP_GLOBAL);
			sch_buffer_strides(&st->stages[i], t->extent, L.buf[t->index]->strides);
		}
	}
	copy_effective_stages(&L);
	if (check_readers(&L) == 0)
		L.p->body = emit_program(&L);
	for (int i = 0; i < st->nstages; i++)
		free(L.eff[i].iters);
	free(L.eff);
	free(L.buf);
	free(L.attached);
	free(L.relative);
	free(L.origin);
	free(L.last);
	free(L.region);
	free(L.leaves);
	free(L.names);
	if (L.failed) {
		loop_prog_free(L.p);
		return NULL;
	}
	return L.p;
}
