/* The printer of the .te language, and the canonical form behind
 * structural equality and the workload hash.
 *
 * The readable form is normalized: every known shape and range is written
 * out, so that `tessel check` shows what inference decided, and parsing
 * the text back gives a structurally equal op.  The canonical form names
 * tensors, variables and symbols by position and writes floats exactly,
 * so it is equal for ops that differ only in names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fnv.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"

typedef struct printer {
	te_strbuf sb;
	bool canonical;
} printer;

static void print_expr(printer *pr, const tessel_expr *e, int level);

/* Binding strength of "e" as an operand: 1 (||) to 6 (* / %), 7 unary,
 * 8 primary. */
static int expr_level(const tessel_expr *e)
{
	if (e->kind == TE_INT && e->u.ival < 0)
		return 7;
	if (e->kind == TE_FLOAT && signbit(e->u.fval))
		return 7;
	if (e->kind == TE_UNARY && e->u.un.op <= TESSEL_NOT)
		return 7;
	if (e->kind != TE_BINARY)
		return 8;
	switch (e->u.bin.op) {
	case TESSEL_OR: return 1;
	case TESSEL_AND: return 2;
	case TESSEL_EQ: case TESSEL_NE: return 3;
	case TESSEL_LT: case TESSEL_LE: case TESSEL_GT: case TESSEL_GE: return 4;
	case TESSEL_ADD: case TESSEL_SUB: return 5;
	case TESSEL_MUL: case TESSEL_DIV: case TESSEL_MOD: return 6;
	default: return 8;
	}
}

static void print_float(printer *pr, double v)
{
	if (pr->canonical) {
		te_sb_printf(&pr->sb, "%a", v);
		return;
	}
	char buf[64];
	snprintf(buf, sizeof(buf), "%.17g", v);
	for (int digits = 1; digits < 17; digits++) {
		char shorter[64];
		snprintf(shorter, sizeof(shorter), "%.*g", digits, v);
		if (strtod(shorter, NULL) == v) {
			memcpy(buf, shorter, sizeof(shorter));
			break;
		}
	}
	te_sb_puts(&pr->sb, buf);
	if (!strpbrk(buf, ".eEn"))
		te_sb_puts(&pr->sb, ".0");
}

static void print_var_name(printer *pr, const tessel_var *v)
{
	if (pr->canonical)
		te_sb_printf(&pr->sb, "%c%d", v->is_reduce ? 'r' : 'v', v->index);
	else
		te_sb_puts(&pr->sb, v->name);
}

static void print_tensor_name(printer *pr, const tessel_stage *s)
{
	if (pr->canonical)
		te_sb_printf(&pr->sb, "t%d", s->index);
	else
		te_sb_puts(&pr->sb, s->name);
}

static void print_sym_name(printer *pr, const te_sym *s)
{
	if (pr->canonical)
		te_sb_printf(&pr->sb, "s%d", s->index);
	else
		te_sb_puts(&pr->sb, s->name);
}

static void print_list(printer *pr, tessel_expr *const *es, int n)
{
	for (int i = 0; i < n; i++) {
		if (i)
			te_sb_puts(&pr->sb, ", ");
		print_expr(pr, es[i], 0);
	}
}

static void print_binary(printer *pr, const tessel_expr *e)
{
	int level = expr_level(e);
	if (level == 8) {
		te_sb_printf(&pr->sb, "%s(", te_binary_name(e->u.bin.op));
		print_expr(pr, e->u.bin.a, 0);
		te_sb_puts(&pr->sb, ", ");
		print_expr(pr, e->u.bin.b, 0);
		te_sb_puts(&pr->sb, ")");
		return;
	}
	print_expr(pr, e->u.bin.a, level);
	te_sb_printf(&pr->sb, " %s ", te_binary_name(e->u.bin.op));
	print_expr(pr, e->u.bin.b, level + 1);
}

/* Print "e", in parentheses when it binds less tightly than "level". */
static void print_expr(printer *pr, const tessel_expr *e, int level)
{
	bool paren = expr_level(e) < level;
	if (paren)
		te_sb_puts(&pr->sb, "(");
	switch (e->kind) {
	case TE_INT:
		te_sb_printf(&pr->sb, "%lld", (long long)e->u.ival);
		break;
	case TE_FLOAT:
		print_float(pr, e->u.fval);
		break;
	case TE_BOOL:
		te_sb_puts(&pr->sb, e->u.ival ? "true" : "false");
		break;
	case TE_SYM:
		print_sym_name(pr, e->u.sym);
		break;
	case TE_VAR:
		print_var_name(pr, e->u.var);
		break;
	case TE_ACCESS:
		print_tensor_name(pr, e->u.access.tensor);
		te_sb_puts(&pr->sb, "[");
		print_list(pr, e->u.access.index, e->u.access.n);
		te_sb_puts(&pr->sb, "]");
		break;
	case TE_UNARY:
		if (e->u.un.op <= TESSEL_NOT) {
			te_sb_puts(&pr->sb, te_unary_name(e->u.un.op));
			print_expr(pr, e->u.un.a, 7);
		} else {
			te_sb_printf(&pr->sb, "%s(", te_unary_name(e->u.un.op));
			print_expr(pr, e->u.un.a, 0);
			te_sb_puts(&pr->sb, ")");
		}
		break;
	case TE_BINARY:
		print_binary(pr, e);
		break;
	case TE_SELECT:
		te_sb_puts(&pr->sb, "select(");
		print_expr(pr, e->u.sel.cond, 0);
		te_sb_puts(&pr->sb, ", ");
		print_expr(pr, e->u.sel.then_, 0);
		te_sb_puts(&pr->sb, ", ");
		print_expr(pr, e->u.sel.else_, 0);
		te_sb_puts(&pr->sb, ")");
		break;
	case TE_CAST:
		te_sb_printf(&pr->sb, "%s(", tessel_dtype_name(e->u.cast.to));
		print_expr(pr, e->u.cast.a, 0);
		te_sb_puts(&pr->sb, ")");
		break;
	}
	if (paren)
		te_sb_puts(&pr->sb, ")");
}

static void print_tensor_type(printer *pr, const tessel_stage *s)
{
	te_sb_printf(&pr->sb, "%s[", tessel_dtype_name(s->dtype));
	print_list(pr, s->dims, s->ndim);
	te_sb_puts(&pr->sb, "]");
}

static bool dims_known(const tessel_stage *s)
{
	for (int i = 0; i < s->ndim; i++)
		if (!s->dims[i])
			return false;
	return true;
}

static void print_params(printer *pr, const tessel_op *op)
{
	for (int i = 0; i < op->nparams; i++) {
		const te_param *p = &op->params[i];
		if (i)
			te_sb_puts(&pr->sb, ", ");
		if (p->input) {
			print_tensor_name(pr, p->input);
			te_sb_puts(&pr->sb, ": ");
			print_tensor_type(pr, p->input);
		} else {
			print_sym_name(pr, p->attr);
			te_sb_puts(&pr->sb, ": int");
		}
	}
}

static void print_reduce_var(printer *pr, const tessel_var *v)
{
	print_var_name(pr, v);
	if (!v->extent)
		return;
	te_sb_puts(&pr->sb, " in ");
	print_expr(pr, v->lo, 0);
	te_sb_puts(&pr->sb, "..");
	print_expr(pr, v->hi ? v->hi : v->extent, 0);
}

static void print_stage(printer *pr, const tessel_stage *s)
{
	te_sb_puts(&pr->sb, "  ");
	print_tensor_name(pr, s);
	te_sb_puts(&pr->sb, "[");
	for (int i = 0; i < s->ndim; i++) {
		if (i)
			te_sb_puts(&pr->sb, ", ");
		print_var_name(pr, s->axes[i]);
	}
	te_sb_puts(&pr->sb, "]");
	if (s->has_dtype && dims_known(s)) {
		te_sb_puts(&pr->sb, " : ");
		print_tensor_type(pr, s);
	}
	te_sb_puts(&pr->sb, " =");
	if (s->reduce != TESSEL_REDUCE_NONE) {
		te_sb_printf(&pr->sb, " %s(", te_reduce_name(s->reduce));
		for (int i = 0; i < s->nraxes; i++) {
			if (i)
				te_sb_puts(&pr->sb, ", ");
			print_reduce_var(pr, s->raxes[i]);
		}
		te_sb_puts(&pr->sb, ")");
	}
	te_sb_puts(&pr->sb, " ");
	print_expr(pr, s->body, 0);
	te_sb_puts(&pr->sb, "\n");
}

static char *print_op(const tessel_op *op, bool canonical)
{
	printer pr = { { 0 }, canonical };
	te_sb_printf(&pr.sb, "op %s(", canonical ? "_" : op->name);
	print_params(&pr, op);
	te_sb_puts(&pr.sb, ") -> ");
	for (int i = 0; i < op->noutputs; i++) {
		if (i)
			te_sb_puts(&pr.sb, ", ");
		print_tensor_name(&pr, op->outputs[i]);
	}
	te_sb_puts(&pr.sb, " {\n");
	for (int i = 0; i < op->nstages; i++)
		if (op->stages[i]->kind == TE_COMPUTE)
			print_stage(&pr, op->stages[i]);
	te_sb_puts(&pr.sb, "}\n");
	return te_sb_take(&pr.sb);
}

char *tessel_op_print(const tessel_op *op)
{
	return print_op(op, false);
}

bool tessel_op_equal(const tessel_op *a, const tessel_op *b)
{
	char *ca = print_op(a, true), *cb = print_op(b, true);
	bool eq = strcmp(ca, cb) == 0;
	free(ca);
	free(cb);
	return eq;
}

/* FNV-1a (ir/fnv.h) over the canonical text. */
uint64_t tessel_op_hash(const tessel_op *op)
{
	char *c = print_op(op, true);
	uint64_t h = te_fnv1a(c);
	free(c);
	return h;
}
