/* The text form of loop programs: stable and readable, for golden tests,
 * `tessel lower`, and people.
 *
 *   kernel matmul(A: f32[4, 5], B: f32[5, 3]) -> (C: f32[4, 3]) {
 *     for i in 0..4 parallel {
 *       for j in 0..3 {
 *         C[i, j] = 0.0
 *         for k in 0..5 {
 *           C[i, j] = C[i, j] + A[i, k] * B[k, j]
 *         }
 *       }
 *     }
 *   }
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loop.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"

static void print_expr(te_strbuf *sb, const loop_expr *e, int level);

static int expr_level(const loop_expr *e)
{
	if ((e->kind == LX_INT && e->u.ival < 0) ||
	    (e->kind == LX_FLOAT && signbit(e->u.fval)))
		return 7;
	if (e->kind == LX_UNARY && e->u.un.op <= TESSEL_NOT)
		return 7;
	if (e->kind != LX_BINARY)
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

static void print_float(te_strbuf *sb, double v, tessel_dtype dt)
{
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
	te_sb_puts(sb, buf);
	if (!strpbrk(buf, ".eEn"))
		te_sb_puts(sb, ".0");
	if (dt != TESSEL_F32)
		te_sb_printf(sb, "%s", tessel_dtype_name(dt));
}

static void print_index(te_strbuf *sb, const char *name, int n,
	loop_expr *const *index)
{
	te_sb_printf(sb, "%s[", name);
	for (int i = 0; i < n; i++) {
		if (i)
			te_sb_puts(sb, ", ");
		print_expr(sb, index[i], 0);
	}
	te_sb_puts(sb, "]");
}

static void print_binary(te_strbuf *sb, const loop_expr *e)
{
	int level = expr_level(e);
	if (level == 8) {
		te_sb_printf(sb, "%s(", te_binary_name(e->u.bin.op));
		print_expr(sb, e->u.bin.a, 0);
		te_sb_puts(sb, ", ");
		print_expr(sb, e->u.bin.b, 0);
		te_sb_puts(sb, ")");
		return;
	}
	print_expr(sb, e->u.bin.a, level);
	te_sb_printf(sb, " %s ", te_binary_name(e->u.bin.op));
	print_expr(sb, e->u.bin.b, level + 1);
}

static void print_expr(te_strbuf *sb, const loop_expr *e, int level)
{
	bool paren = expr_level(e) < level;
	if (paren)
		te_sb_puts(sb, "(");
	switch (e->kind) {
	case LX_INT:
		te_sb_printf(sb, "%lld", (long long)e->u.ival);
		break;
	case LX_FLOAT:
		print_float(sb, e->u.fval, e->dtype);
		break;
	case LX_BOOL:
		te_sb_puts(sb, e->u.ival ? "true" : "false");
		break;
	case LX_VAR:
		te_sb_puts(sb, e->u.var->name);
		break;
	case LX_LOAD:
		print_index(sb, e->u.load.buf->name, e->u.load.n, e->u.load.index);
		break;
	case LX_UNARY:
		if (e->u.un.op <= TESSEL_NOT) {
			te_sb_puts(sb, te_unary_name(e->u.un.op));
			print_expr(sb, e->u.un.a, 7);
		} else {
			te_sb_printf(sb, "%s(", te_unary_name(e->u.un.op));
			print_expr(sb, e->u.un.a, 0);
			te_sb_puts(sb, ")");
		}
		break;
	case LX_BINARY:
		print_binary(sb, e);
		break;
	case LX_SELECT:
		te_sb_puts(sb, "select(");
		print_expr(sb, e->u.sel.cond, 0);
		te_sb_puts(sb, ", ");
		print_expr(sb, e->u.sel.then_, 0);
		te_sb_puts(sb, ", ");
		print_expr(sb, e->u.sel.else_, 0);
		te_sb_puts(sb, ")");
		break;
	case LX_CAST:
		te_sb_printf(sb, "%s(", tessel_dtype_name(e->u.cast.to));
		print_expr(sb, e->u.cast.a, 0);
		te_sb_puts(sb, ")");
		break;
	}
	if (paren)
		te_sb_puts(sb, ")");
}

static void print_buffer_type(te_strbuf *sb, const loop_buffer *b)
{
	te_sb_printf(sb, "%s[", tessel_dtype_name(b->dtype));
	for (int d = 0; d < b->ndim; d++)
		te_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
	te_sb_puts(sb, "]");
	int64_t stride = 1;
	bool dense = true;
	for (int d = b->ndim - 1; d >= 0; d--) {
		dense &= b->strides[d] == stride;
		stride *= b->shape[d];
	}
	if (dense)
		return;
	te_sb_puts(sb, " strides [");
	for (int d = 0; d < b->ndim; d++)
		te_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)b->strides[d]);
	te_sb_puts(sb, "]");
}

static void indent(te_strbuf *sb, int depth)
{
	for (int i = 0; i < depth; i++)
		te_sb_puts(sb, "  ");
}

static void print_stmt(te_strbuf *sb, const loop_stmt *s, int depth);

static void print_block(te_strbuf *sb, const loop_stmt *s, int depth)
{
	te_sb_puts(sb, " {\n");
	print_stmt(sb, s, depth + 1);
	indent(sb, depth);
	te_sb_puts(sb, "}\n");
}

static void print_for(te_strbuf *sb, const loop_stmt *s, int depth)
{
	te_sb_printf(sb, "for %s in ", s->u.for_.var->name);
	print_expr(sb, s->u.for_.min, 0);
	te_sb_puts(sb, "..");
	long long end;
	if (s->u.for_.min->kind == LX_INT && s->u.for_.extent->kind == LX_INT &&
	    !__builtin_add_overflow(s->u.for_.min->u.ival, s->u.for_.extent->u.ival, &end)) {
		te_sb_printf(sb, "%lld", end);
	} else if (s->u.for_.min->kind == LX_INT && s->u.for_.min->u.ival == 0) {
		print_expr(sb, s->u.for_.extent, 0);
	} else {
		print_expr(sb, s->u.for_.min, 5);
		te_sb_puts(sb, " + ");
		print_expr(sb, s->u.for_.extent, 6);
	}
	if (s->u.for_.kind != LOOP_SERIAL)
		te_sb_printf(sb, " %s", loop_kind_name(s->u.for_.kind));
	if (s->u.for_.unroll_limit)
		te_sb_printf(sb, " unroll_limit=%d", s->u.for_.unroll_limit);
	if (s->u.for_.min_blocks)
		te_sb_printf(sb, " min_blocks=%d", s->u.for_.min_blocks);
	if (s->u.for_.dot_group)
		te_sb_puts(sb, s->u.for_.dot_group == 2 ? " dot_pairs" : " dot_quads");
	if (s->u.for_.prefetch)
		te_sb_printf(sb, " prefetch=%s+%d", s->u.for_.prefetch->name,
			s->u.for_.prefetch_distance);
	print_block(sb, s->u.for_.body, depth);
}

static void print_stmt(te_strbuf *sb, const loop_stmt *s, int depth)
{
	if (s->kind == LS_SEQ) {
		for (int i = 0; i < s->u.seq.n; i++)
			print_stmt(sb, s->u.seq.items[i], depth);
		return;
	}
	indent(sb, depth);
	switch (s->kind) {
	case LS_FOR:
		print_for(sb, s, depth);
		break;
	case LS_STORE:
		print_index(sb, s->u.store.buf->name, s->u.store.n, s->u.store.index);
		te_sb_puts(sb, " = ");
		print_expr(sb, s->u.store.value, 0);
		te_sb_puts(sb, "\n");
		break;
	case LS_IF:
		te_sb_puts(sb, "if ");
		print_expr(sb, s->u.if_.cond, 0);
		if (!s->u.if_.else_) {
			print_block(sb, s->u.if_.then_, depth);
			break;
		}
		te_sb_puts(sb, " {\n");
		print_stmt(sb, s->u.if_.then_, depth + 1);
		indent(sb, depth);
		te_sb_puts(sb, "} else");
		print_block(sb, s->u.if_.else_, depth);
		break;
	case LS_ALLOC:
		te_sb_printf(sb, "alloc %s: ", s->u.alloc.buf->name);
		print_buffer_type(sb, s->u.alloc.buf);
		te_sb_printf(sb, " %s", loop_scope_name(s->u.alloc.buf->scope));
		print_block(sb, s->u.alloc.body, depth);
		break;
	case LS_BARRIER:
		te_sb_puts(sb, "barrier\n");
		break;
	case LS_PREFETCH:
		te_sb_puts(sb, "prefetch ");
		print_index(sb, s->u.prefetch.buf->name, s->u.prefetch.n, s->u.prefetch.index);
		te_sb_puts(sb, "\n");
		break;
	case LS_SEQ:
		break;
	}
}

static void print_args(te_strbuf *sb, const loop_prog *p, bool outputs)
{
	bool first = true;
	for (int i = 0; i < p->nargs; i++) {
		const loop_buffer *b = p->args[i];
		if (b->is_output != outputs)
			continue;
		te_sb_printf(sb, "%s%s: ", first ? "" : ", ", b->name);
		print_buffer_type(sb, b);
		if (b->stream)
			te_sb_puts(sb, " streamed");
		first = false;
	}
}

char *loop_prog_print(const loop_prog *p)
{
	te_strbuf sb = { 0 };
	te_sb_printf(&sb, "kernel %s(", p->name);
	print_args(&sb, p, false);
	te_sb_puts(&sb, ") -> (");
	print_args(&sb, p, true);
	te_sb_puts(&sb, ") {\n");
	if (p->body)
		print_stmt(&sb, p->body, 1);
	te_sb_puts(&sb, "}\n");
	return te_sb_take(&sb);
}
