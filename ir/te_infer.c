/* Inference of ranges and shapes, and verification of accesses, with ISL.
 *
 * requires: te_check_types(op) passed; constants folded
 * guarantees: every variable whose range the accesses decide has lo and
 *   extent; stages without explicit shapes get dims from their index
 *   variables.  When "op" is bound (no symbols left) every range must be
 *   decided, every dimension is a positive constant kept in extent[], and
 *   every access whose indices and guarding conditions are affine is
 *   proved in bounds.  Accesses under a data-dependent condition or with
 *   data-dependent indices are left to run-time checks.
 *
 * The range of a variable v is the largest [0, e) such that every access
 * position mentioning v (and otherwise only variables already known) stays
 * in bounds for all values of the known variables: e is the least v >= 0
 * for which some such access is out of bounds (ISL: subtract the valid set
 * from the box, project onto v, take the minimum).  With symbolic sizes
 * the ranges are parametric; an access that is not affine in the sizes
 * (y*stride + r) is skipped until the op is bound. */
#include <string.h>

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/set.h>
#include <isl/val.h>

#include "ir/isl_budget.h"
#include "ir/isl_text.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"

typedef enum affine_result { AFF_OK, AFF_NONAFFINE, AFF_UNKNOWN_VAR } affine_result;

typedef struct infer {
	tessel_op *op;
	isl_ctx *isl;
	bool bound;
	tessel_stage *s;
	int nvars;
	tessel_var **vars;   /* the stage's axes, then its reduction axes */
	bool *known;         /* range known and affine */
} infer;

static int var_pos(const infer *in, const tessel_var *v)
{
	return v->is_reduce ? in->s->ndim + v->index : v->index;
}

/* Write "e" to "sb" in ISL syntax (symbols p<i>, variables v<i>) if it is
 * quasi-affine in the symbols and the variables for which "allowed" is
 * true.  "allowed" NULL allows no variable. */
static affine_result affine_text(const infer *in, const tessel_expr *e,
	const bool *allowed, te_strbuf *sb)
{
	affine_result r;
	int64_t c;
	switch (e->kind) {
	case TE_INT:
		te_sb_printf(sb, "(%lld)", (long long)e->u.ival);
		return AFF_OK;
	case TE_SYM:
		te_sb_printf(sb, "p%d", e->u.sym->index);
		return AFF_OK;
	case TE_VAR: {
		int k = var_pos(in, e->u.var);
		if (!allowed || !allowed[k])
			return AFF_UNKNOWN_VAR;
		te_sb_printf(sb, "v%d", k);
		return AFF_OK;
	}
	case TE_UNARY:
		if (e->u.un.op != TESSEL_NEG)
			return AFF_NONAFFINE;
		te_sb_puts(sb, "(-");
		r = affine_text(in, e->u.un.a, allowed, sb);
		te_sb_puts(sb, ")");
		return r;
	case TE_BINARY:
		break;
	default:
		return AFF_NONAFFINE;
	}
	const tessel_expr *a = e->u.bin.a, *b = e->u.bin.b;
	switch (e->u.bin.op) {
	case TESSEL_ADD:
	case TESSEL_SUB:
		te_sb_puts(sb, "(");
		r = affine_text(in, a, allowed, sb);
		if (r != AFF_OK)
			return r;
		te_sb_puts(sb, e->u.bin.op == TESSEL_ADD ? " + " : " - ");
		r = affine_text(in, b, allowed, sb);
		te_sb_puts(sb, ")");
		return r;
	case TESSEL_MUL:
		if (te_expr_const_int(b, &c)) {
			const tessel_expr *t = a;
			a = b;
			b = t;
		}
		if (!te_expr_const_int(a, &c))
			return AFF_NONAFFINE;
		te_sb_printf(sb, "(%lld * ", (long long)c);
		r = affine_text(in, b, allowed, sb);
		te_sb_puts(sb, ")");
		return r;
	case TESSEL_DIV:
	case TESSEL_MOD:
		if (!te_expr_const_int(b, &c) || c == 0)
			return AFF_NONAFFINE;
		{
			te_strbuf num = { 0 };
			r = affine_text(in, a, allowed, &num);
			if (r == AFF_OK) {
				const char *n = te_sb_str(&num);
				long long d = c > 0 ? c : -c;
				const char *sign = c > 0 ? "" : "-";
				if (e->u.bin.op == TESSEL_DIV)
					te_sb_printf(sb, "floor((%s%s)/%lld)", sign, n, d);
				else
					te_sb_printf(sb, "(%s %c %lld * floor((%s%s)/%lld))",
						n, c > 0 ? '-' : '+', d, sign, n, d);
			}
			te_sb_free(&num);
			return r;
		}
	default:
		return AFF_NONAFFINE;
	}
}

/* Write the condition "e" (negated when "neg") as an ISL constraint; false
 * when it is not an affine condition. */
static bool cond_text(const infer *in, const tessel_expr *e, bool neg,
	const bool *allowed, te_strbuf *sb)
{
	static const char *cmp[] = { "<", "<=", ">", ">=", "=", "!=" };
	static const char *neg_cmp[] = { ">=", ">", "<=", "<", "!=", "=" };
	switch (e->kind) {
	case TE_BOOL:
		te_sb_puts(sb, (e->u.ival != 0) != neg ? "(0 = 0)" : "(1 = 0)");
		return true;
	case TE_UNARY:
		return e->u.un.op == TESSEL_NOT &&
		       cond_text(in, e->u.un.a, !neg, allowed, sb);
	case TE_BINARY:
		break;
	default:
		return false;
	}
	tessel_binary op = e->u.bin.op;
	if (op == TESSEL_AND || op == TESSEL_OR) {
		bool conj = (op == TESSEL_AND) != neg;
		te_sb_puts(sb, "(");
		if (!cond_text(in, e->u.bin.a, neg, allowed, sb))
			return false;
		te_sb_puts(sb, conj ? " and " : " or ");
		if (!cond_text(in, e->u.bin.b, neg, allowed, sb))
			return false;
		te_sb_puts(sb, ")");
		return true;
	}
	if (op < TESSEL_LT || op > TESSEL_NE)
		return false;
	const char *rel = (neg ? neg_cmp : cmp)[op - TESSEL_LT];
	te_strbuf a = { 0 }, b = { 0 };
	bool ok = affine_text(in, e->u.bin.a, allowed, &a) == AFF_OK &&
		  affine_text(in, e->u.bin.b, allowed, &b) == AFF_OK;
	if (ok && strcmp(rel, "!=") == 0)
		te_sb_printf(sb, "(%s < %s or %s > %s)", te_sb_str(&a),
			te_sb_str(&b), te_sb_str(&a), te_sb_str(&b));
	else if (ok)
		te_sb_printf(sb, "(%s %s %s)", te_sb_str(&a), rel, te_sb_str(&b));
	te_sb_free(&a);
	te_sb_free(&b);
	return ok;
}

/* Write "[p0, ...] -> { [v0, ...] : " to "sb". */
static void set_prefix(const infer *in, te_strbuf *sb)
{
	te_sb_puts(sb, "[");
	for (int i = 0; i < in->op->nsyms; i++)
		te_sb_printf(sb, "%sp%d", i ? ", " : "", i);
	te_sb_puts(sb, "] -> { [");
	for (int i = 0; i < in->nvars; i++)
		te_sb_printf(sb, "%sv%d", i ? ", " : "", i);
	te_sb_puts(sb, "] : (0 = 0)");
	for (int i = 0; i < in->op->nsyms; i++)
		if (!in->op->syms[i]->is_attr)
			te_sb_printf(sb, " and p%d >= 1", i);
}

/* Append the range constraints of the known variables selected by "which"
 * (all known ones when NULL). */
static void box_text(const infer *in, const bool *which, te_strbuf *sb)
{
	for (int k = 0; k < in->nvars; k++) {
		if (!in->known[k] || (which && !which[k]))
			continue;
		te_strbuf lo = { 0 }, ext = { 0 };
		affine_text(in, in->vars[k]->lo, NULL, &lo);
		affine_text(in, in->vars[k]->extent, NULL, &ext);
		te_sb_printf(sb, " and %s <= v%d and v%d < %s + %s", te_sb_str(&lo),
			k, k, te_sb_str(&lo), te_sb_str(&ext));
		te_sb_free(&lo);
		te_sb_free(&ext);
	}
}

static bool mentions_var(const tessel_expr *e, const tessel_var *v)
{
	switch (e->kind) {
	case TE_VAR: return e->u.var == v;
	case TE_ACCESS:
		for (int i = 0; i < e->u.access.n; i++)
			if (mentions_var(e->u.access.index[i], v))
				return true;
		return false;
	case TE_UNARY: return mentions_var(e->u.un.a, v);
	case TE_BINARY:
		return mentions_var(e->u.bin.a, v) || mentions_var(e->u.bin.b, v);
	case TE_SELECT:
		return mentions_var(e->u.sel.cond, v) ||
		       mentions_var(e->u.sel.then_, v) ||
		       mentions_var(e->u.sel.else_, v);
	case TE_CAST: return mentions_var(e->u.cast.a, v);
	default: return false;
	}
}

/* The constraints that decide the range of one variable. */
typedef struct range_query {
	infer *in;
	int k;             /* position of the variable */
	bool *allowed;     /* known variables and k */
	te_strbuf valid;   /* constraints of usable access positions */
	int nused;
	bool skipped;      /* a position mentioning k was not affine */
	bool *mentioned;   /* variables the usable positions mention */
	tessel_expr *bare_dim;  /* the dim of positions indexed by k alone */
	bool only_bare;    /* every position mentioning k is k alone, same dim */
} range_query;

/* Note a position that mentions the variable: when all of them are the
 * bare variable over one dimension D, its range is [0, D) even where D is
 * not affine ((H - R) / stride + 1). */
static void note_bare(range_query *q, const tessel_expr *e, tessel_expr *dim)
{
	bool bare = e->kind == TE_VAR && dim;
	if (!bare)
		q->only_bare = false;
	else if (!q->bare_dim)
		q->bare_dim = dim;
	else if (!te_expr_equal(q->bare_dim, dim))
		q->only_bare = false;
}

static int collect_position(tessel_expr *acc, bool under_select, void *user)
{
	range_query *q = user;
	if (under_select)
		return 0;
	tessel_stage *t = acc->u.access.tensor;
	for (int p = 0; p < acc->u.access.n; p++) {
		tessel_expr *e = acc->u.access.index[p];
		if (!mentions_var(e, q->in->vars[q->k]))
			continue;
		note_bare(q, e, t->dims[p]);
		if (!t->dims[p])
			continue;
		te_strbuf idx = { 0 }, dim = { 0 };
		affine_result r = affine_text(q->in, e, q->allowed, &idx);
		affine_result rd = affine_text(q->in, t->dims[p], NULL, &dim);
		if (r == AFF_OK && rd == AFF_OK) {
			te_sb_printf(&q->valid, " and 0 <= %s and %s < %s",
				te_sb_str(&idx), te_sb_str(&idx), te_sb_str(&dim));
			q->nused++;
			for (int k = 0; k < q->in->nvars; k++)
				q->mentioned[k] |= mentions_var(e, q->in->vars[k]);
		} else if (r == AFF_NONAFFINE || rd == AFF_NONAFFINE) {
			q->skipped = true;
		}
		te_sb_free(&idx);
		te_sb_free(&dim);
	}
	return 0;
}

static tessel_expr *add_term(tessel_op *op, tessel_expr *sum, long coef,
	tessel_expr *term)
{
	if (sum && coef < 0)
		return tessel_binary_op(op, TESSEL_SUB, sum,
			add_term(op, NULL, -coef, term));
	if (coef != 1)
		term = tessel_binary_op(op, TESSEL_MUL, tessel_int(op, coef), term);
	return sum ? tessel_binary_op(op, TESSEL_ADD, sum, term) : term;
}

static tessel_expr *aff_to_expr(tessel_op *op, isl_aff *aff);

/* Return floor("div") as an expression: floor(num / den) with the numerator
 * made integral by scaling with the denominator. */
static tessel_expr *floor_to_expr(tessel_op *op, isl_aff *div)
{
	isl_val *den = isl_aff_get_denominator_val(div);
	long d = isl_val_get_num_si(den);
	isl_aff *num = isl_aff_scale_val(div, den);
	tessel_expr *e = aff_to_expr(op, num);
	isl_aff_free(num);
	if (!e || d == 1)
		return e;
	return tessel_binary_op(op, TESSEL_DIV, e, tessel_int(op, d));
}

/* Convert the integral affine function "aff" (kept) of the symbols, with
 * floor divisions, into an expression of "op"; NULL when it is not
 * integral. */
static tessel_expr *aff_to_expr(tessel_op *op, isl_aff *aff)
{
	if (!aff)
		return NULL;
	isl_val *den = isl_aff_get_denominator_val(aff);
	bool integral = den && isl_val_is_one(den);
	isl_val_free(den);
	if (!integral)
		return NULL;
	tessel_expr *e = NULL;
	for (int i = 0; i < op->nsyms; i++) {
		isl_val *c = isl_aff_get_coefficient_val(aff, isl_dim_param, i);
		long coef = isl_val_get_num_si(c);
		isl_val_free(c);
		if (coef != 0)
			e = add_term(op, e, coef, tessel_size(op, op->syms[i]->name));
	}
	for (int i = 0; i < isl_aff_dim(aff, isl_dim_div); i++) {
		isl_val *c = isl_aff_get_coefficient_val(aff, isl_dim_div, i);
		long coef = isl_val_get_num_si(c);
		isl_val_free(c);
		if (coef == 0)
			continue;
		tessel_expr *f = floor_to_expr(op, isl_aff_get_div(aff, i));
		if (!f)
			return NULL;
		e = add_term(op, e, coef, f);
	}
	isl_val *cst = isl_aff_get_constant_val(aff);
	long k = isl_val_get_num_si(cst);
	isl_val_free(cst);
	if (!e)
		return tessel_int(op, k);
	if (k > 0)
		return tessel_binary_op(op, TESSEL_ADD, e, tessel_int(op, k));
	if (k < 0)
		return tessel_binary_op(op, TESSEL_SUB, e, tessel_int(op, -k));
	return e;
}

static isl_stat take_single_aff(isl_set *dom, isl_aff *aff, void *user)
{
	isl_set_free(dom);
	*(isl_aff **)user = aff;
	return isl_stat_ok;
}

/* Return the least v >= 0 in the one-dimensional set "bad" (taken), as an
 * expression of the symbols; NULL when "bad" has no such point (no upper
 * bound) or the minimum is not a single affine piece. */
static tessel_expr *least_bad(infer *in, isl_set *bad)
{
	bad = isl_set_lower_bound_si(bad, isl_dim_set, 0, 0);
	if (!bad || isl_set_is_empty(bad) != isl_bool_false) {
		isl_set_free(bad);
		return NULL;
	}
	isl_pw_aff *min = isl_set_dim_min(bad, 0);
	if (!min || isl_pw_aff_n_piece(min) != 1) {
		isl_pw_aff_free(min);
		return NULL;
	}
	isl_aff *aff = NULL;
	isl_pw_aff_foreach_piece(min, &take_single_aff, &aff);
	isl_pw_aff_free(min);
	tessel_expr *e = aff_to_expr(in->op, aff);
	isl_aff_free(aff);
	return e;
}

/* Try to decide the range of variable "k"; return 1 when decided, 0 when
 * the accesses do not decide it yet, -1 on error.  "*skipped" tells that
 * a non-affine access mentioned it. */
static int infer_var(infer *in, int k, bool *skipped)
{
	bool allowed[64], mentioned[64] = { false };
	for (int i = 0; i < in->nvars; i++)
		allowed[i] = in->known[i] || i == k;
	range_query q = { in, k, allowed, { 0 }, 0, false, mentioned, NULL, true };
	te_visit_accesses(in->s->body, false, collect_position, &q);
	*skipped = q.skipped;
	if (q.skipped && q.only_bare && q.bare_dim) {
		te_sb_free(&q.valid);
		in->vars[k]->lo = tessel_int(in->op, 0);
		in->vars[k]->extent = q.bare_dim;
		return 1;
	}
	if (q.nused == 0) {
		te_sb_free(&q.valid);
		return 0;
	}
	te_strbuf box = { 0 }, valid = { 0 };
	set_prefix(in, &box);
	mentioned[k] = false;
	box_text(in, mentioned, &box);
	te_sb_puts(&valid, te_sb_str(&box));
	te_sb_puts(&valid, te_sb_str(&q.valid));
	te_sb_puts(&box, " }");
	te_sb_puts(&valid, " }");
	isl_set *sbox = te_isl_read_set(in->op->ctx, te_sb_str(&box));
	isl_set *svalid = te_isl_read_set(in->op->ctx, te_sb_str(&valid));
	te_sb_free(&box);
	te_sb_free(&valid);
	te_sb_free(&q.valid);
	if (!sbox || !svalid) {
		isl_set_free(sbox);
		isl_set_free(svalid);
		return te_error(in->op->ctx, TESSEL_ERR_INTERNAL, in->s->loc,
			"ISL rejected the constraints of stage '%s'", in->s->name);
	}
	isl_set *bad = isl_set_subtract(sbox, svalid);
	bad = isl_set_project_out(bad, isl_dim_set, k + 1, in->nvars - k - 1);
	bad = isl_set_project_out(bad, isl_dim_set, 0, k);
	tessel_expr *extent = least_bad(in, bad);
	if (!extent) {
		*skipped |= !in->bound;
		return 0;
	}
	tessel_var *v = in->vars[k];
	int64_t n;
	if (te_expr_const_int(extent, &n) && n <= 0)
		return te_error(in->op->ctx, TESSEL_ERR_SHAPE, v->loc.line ? v->loc : in->s->loc,
			"no value of '%s' keeps the accesses of stage '%s' in bounds",
			v->name, in->s->name);
	v->lo = tessel_int(in->op, 0);
	v->extent = extent;
	return 1;
}

static bool range_is_affine(infer *in, tessel_var *v)
{
	te_strbuf sb = { 0 };
	bool ok = v->lo && v->extent &&
		  affine_text(in, v->lo, NULL, &sb) == AFF_OK &&
		  affine_text(in, v->extent, NULL, &sb) == AFF_OK;
	te_sb_free(&sb);
	return ok;
}

static int undecided_error(infer *in, tessel_var *v)
{
	tessel_stage *s = in->s;
	tessel_loc loc = v->loc.line ? v->loc : s->loc;
	if (v->is_reduce)
		return te_error(in->op->ctx, TESSEL_ERR_SHAPE, loc,
			"cannot infer the range of reduction variable '%s' in stage "
			"'%s'; give it one, e.g. %s(%s in 0..N)", v->name, s->name,
			te_reduce_name(s->reduce), v->name);
	return te_error(in->op->ctx, TESSEL_ERR_SHAPE, loc,
		"cannot infer the range of index variable '%s' in stage '%s'; "
		"give the stage an explicit shape, e.g. %s[...] : %s[...]",
		v->name, s->name, s->name, tessel_dtype_name(s->dtype));
}

/* Decide the ranges of the stage's variables, repeating while progress is
 * made (a range may depend on others). */
static int infer_ranges(infer *in, bool *decided)
{
	bool skipped[64] = { false };
	bool progress = true;
	while (progress) {
		progress = false;
		for (int k = 0; k < in->nvars; k++) {
			if (decided[k])
				continue;
			int r = infer_var(in, k, &skipped[k]);
			if (r < 0)
				return -1;
			if (r > 0) {
				decided[k] = true;
				in->known[k] = range_is_affine(in, in->vars[k]);
				progress = true;
			}
		}
	}
	for (int k = 0; k < in->nvars; k++)
		if (!decided[k] && (in->bound || !skipped[k]))
			return undecided_error(in, in->vars[k]);
	return 0;
}

/* The walk that proves accesses in bounds under their path conditions. */
typedef struct verifier {
	infer *in;
	bool *all;         /* every variable allowed */
} verifier;

static int verify_position(verifier *vf, tessel_expr *acc, int p,
	const char *domain)
{
	infer *in = vf->in;
	tessel_stage *t = acc->u.access.tensor;
	te_strbuf idx = { 0 }, sb = { 0 };
	if (affine_text(in, acc->u.access.index[p], vf->all, &idx) != AFF_OK) {
		te_sb_free(&idx);
		return 0;
	}
	te_sb_puts(&sb, "[] -> { [");
	for (int i = 0; i < in->nvars; i++)
		te_sb_printf(&sb, "%sv%d", i ? ", " : "", i);
	te_sb_printf(&sb, "] -> [(%s)] }", te_sb_str(&idx));
	isl_set *dom = te_isl_read_set(in->op->ctx, domain);
	isl_aff *aff = isl_aff_read_from_str(in->isl, te_sb_str(&sb));
	te_sb_free(&idx);
	te_sb_free(&sb);
	int r = 0;
	if (!dom || !aff) {
		r = te_error(in->op->ctx, TESSEL_ERR_INTERNAL, acc->loc,
			"ISL rejected an access of stage '%s'", in->s->name);
	} else if (isl_set_is_empty(dom) == isl_bool_false) {
		isl_val *lo = isl_set_min_val(dom, aff);
		isl_val *hi = isl_set_max_val(dom, aff);
		long l = isl_val_get_num_si(lo), h = isl_val_get_num_si(hi);
		int64_t n = t->extent[p];
		if (!isl_val_is_int(lo) || !isl_val_is_int(hi) || l < 0 || h >= n)
			r = te_error(in->op->ctx, TESSEL_ERR_SHAPE, acc->loc,
				"access to '%s' out of bounds: index %d ranges over "
				"[%ld, %ld] but the dimension has extent %lld",
				t->name, p, l, h, (long long)n);
		isl_val_free(lo);
		isl_val_free(hi);
	}
	isl_set_free(dom);
	isl_aff_free(aff);
	return r;
}

/* Verify the accesses in "e", evaluated only where the constraint text
 * "path" holds (NULL: under a data-dependent condition). */
static int verify_expr(verifier *vf, tessel_expr *e, const char *path);

static int verify_guarded(verifier *vf, tessel_expr *e, const char *path,
	const tessel_expr *cond, bool neg)
{
	if (!path)
		return verify_expr(vf, e, NULL);
	te_strbuf sb = { 0 };
	te_sb_puts(&sb, path);
	te_sb_puts(&sb, " and ");
	bool ok = cond_text(vf->in, cond, neg, vf->all, &sb);
	int r = verify_expr(vf, e, ok ? te_sb_str(&sb) : NULL);
	te_sb_free(&sb);
	return r;
}

static int verify_expr(verifier *vf, tessel_expr *e, const char *path)
{
	switch (e->kind) {
	case TE_ACCESS:
		for (int p = 0; p < e->u.access.n; p++) {
			if (verify_expr(vf, e->u.access.index[p], path))
				return -1;
			if (path) {
				te_strbuf dom = { 0 };
				te_sb_printf(&dom, "%s }", path);
				int r = verify_position(vf, e, p, te_sb_str(&dom));
				te_sb_free(&dom);
				if (r)
					return -1;
			}
		}
		return 0;
	case TE_UNARY:
		return verify_expr(vf, e->u.un.a, path);
	case TE_BINARY:
		if (verify_expr(vf, e->u.bin.a, path))
			return -1;
		if (e->u.bin.op == TESSEL_AND || e->u.bin.op == TESSEL_OR)
			return verify_guarded(vf, e->u.bin.b, path, e->u.bin.a,
				e->u.bin.op == TESSEL_OR);
		return verify_expr(vf, e->u.bin.b, path);
	case TE_SELECT:
		return verify_expr(vf, e->u.sel.cond, path) ||
		       verify_guarded(vf, e->u.sel.then_, path, e->u.sel.cond, false) ||
		       verify_guarded(vf, e->u.sel.else_, path, e->u.sel.cond, true);
	case TE_CAST:
		return verify_expr(vf, e->u.cast.a, path);
	default:
		return 0;
	}
}

static int verify_stage(infer *in)
{
	bool all[64];
	for (int k = 0; k < in->nvars; k++)
		all[k] = true;
	te_strbuf path = { 0 };
	set_prefix(in, &path);
	box_text(in, NULL, &path);
	verifier vf = { in, all };
	int r = verify_expr(&vf, in->s->body, te_sb_str(&path));
	te_sb_free(&path);
	return r;
}

/* Return true when "e" divides by the literal 0 somewhere. */
static bool divides_by_zero(const tessel_expr *e)
{
	if (!e)
		return false;
	switch (e->kind) {
	case TE_UNARY:
		return divides_by_zero(e->u.un.a);
	case TE_BINARY:
		if ((e->u.bin.op == TESSEL_DIV || e->u.bin.op == TESSEL_MOD) &&
		    e->u.bin.b->kind == TE_INT && e->u.bin.b->u.ival == 0)
			return true;
		return divides_by_zero(e->u.bin.a) || divides_by_zero(e->u.bin.b);
	default:
		return false;
	}
}

/* Evaluate the dims of "s" (constants once bound) into s->extent. */
static int fix_extents(infer *in, tessel_stage *s)
{
	s->extent = te_arena_alloc(&in->op->arena, sizeof(int64_t) * (size_t)(s->ndim + 1));
	int64_t numel = 1;
	for (int d = 0; d < s->ndim; d++) {
		int64_t n;
		tessel_loc loc = s->dims[d]->loc.line ? s->dims[d]->loc : s->loc;
		if (divides_by_zero(s->dims[d]))
			return te_error(in->op->ctx, TESSEL_ERR_VALUE, loc,
				"dimension %d of '%s' divides by zero with these sizes",
				d, s->name);
		if (!te_expr_const_int(s->dims[d], &n))
			return te_error(in->op->ctx, TESSEL_ERR_INTERNAL, loc,
				"dimension %d of '%s' is not a constant after binding",
				d, s->name);
		if (n <= 0)
			return te_error(in->op->ctx, TESSEL_ERR_SHAPE, loc,
				"dimension %d of '%s' is %lld; dimensions must be positive",
				d, s->name, (long long)n);
		if (__builtin_mul_overflow(numel, n, &numel) ||
		    numel > ((int64_t)1 << 62) / 8)
			return te_error(in->op->ctx, TESSEL_ERR_LIMIT, loc,
				"'%s' has too many elements (the count overflows)",
				s->name);
		s->extent[d] = n;
	}
	return 0;
}

/* Refuse explicit reduction ranges that run backwards; once bound, every
 * range must be constant. */
static int check_reduce_extents(infer *in)
{
	for (int k = in->s->ndim; k < in->nvars; k++) {
		tessel_var *v = in->vars[k];
		int64_t lo, n;
		bool constant = te_expr_const_int(v->lo, &lo) &&
				te_expr_const_int(v->extent, &n);
		if (!constant && in->bound && v->extent)
			return te_error(in->op->ctx, TESSEL_ERR_INTERNAL, v->loc,
				"range of '%s' is not constant after binding", v->name);
		if (constant && n < 0)
			return te_error(in->op->ctx, TESSEL_ERR_SHAPE, v->loc,
				"the range %lld..%lld of '%s' runs backwards",
				(long long)lo, (long long)(lo + n), v->name);
	}
	return 0;
}

static void set_known_ranges(infer *in, bool *decided)
{
	tessel_stage *s = in->s;
	for (int k = 0; k < in->nvars; k++) {
		tessel_var *v = in->vars[k];
		if (k < s->ndim && s->dims[k] && !v->extent) {
			v->lo = tessel_int(in->op, 0);
			v->extent = s->dims[k];
		}
		decided[k] = v->extent != NULL;
		in->known[k] = decided[k] && range_is_affine(in, v);
	}
}

static int infer_stage(infer *in, tessel_stage *s)
{
	bool decided[64], known[64];
	tessel_var *vars[64];
	if (s->ndim + s->nraxes > 64)
		return te_error(in->op->ctx, TESSEL_ERR_LIMIT, s->loc,
			"stage '%s' has more than 64 variables", s->name);
	in->s = s;
	in->nvars = 0;
	in->vars = vars;
	in->known = known;
	for (int i = 0; i < s->ndim; i++)
		vars[in->nvars++] = s->axes[i];
	for (int i = 0; i < s->nraxes; i++)
		vars[in->nvars++] = s->raxes[i];
	set_known_ranges(in, decided);
	if (check_reduce_extents(in) || infer_ranges(in, decided))
		return -1;
	for (int d = 0; d < s->ndim; d++)
		if (!s->dims[d] && decided[d])
			s->dims[d] = s->axes[d]->extent;
	if (!in->bound)
		return 0;
	if (fix_extents(in, s) || check_reduce_extents(in))
		return -1;
	return verify_stage(in);
}

/* infer_stage within an ISL budget (ir/isl_budget.h): conditions and
 * indices that would keep ISL's exact algorithms busy for minutes (a
 * sum under a dozen modular conditions took 40 s) make an error at the
 * stage instead, whatever the analysis had concluded when it gave up. */
static int infer_stage_within_budget(infer *in, tessel_stage *s)
{
	te_isl_budget_begin(in->op->ctx, TE_ISL_BUDGET_OPS);
	int r = infer_stage(in, s);
	if (!te_isl_budget_end(in->op->ctx))
		return r;
	tessel_ctx_clear_error(in->op->ctx);
	return te_error(in->op->ctx, TESSEL_ERR_LIMIT, s->loc,
		"the accesses of stage '%s' are too complex to analyse (over %lu ISL "
		"operations); simplify its indices or conditions", s->name,
		TE_ISL_BUDGET_OPS);
}

int te_infer(tessel_op *op)
{
	infer in = { .op = op, .isl = te_isl(op->ctx), .bound = op->nsyms == 0 };
	for (int i = 0; i < op->nstages; i++) {
		tessel_stage *s = op->stages[i];
		if (s->kind == TE_INPUT) {
			if (in.bound && fix_extents(&in, s))
				return -1;
			continue;
		}
		if (infer_stage_within_budget(&in, s))
			return -1;
	}
	op->bound = in.bound;
	return 0;
}
