/* The parser of the .te language (grammar in docs/language.md): a
 * recursive-descent parser that builds ops through ir/build.c and stops at
 * the first error, which it records with its place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/lex.h"
#include "ir/te_impl.h"

typedef struct parser {
	tessel_ctx *ctx;
	te_lexer lx;
	te_token tok;        /* current token */
	te_token next;       /* one token of lookahead */
	tessel_op *op;       /* op being parsed */
	tessel_stage *stage; /* stage whose body is parsed; NULL elsewhere */
	tessel_stage *dim_stage; /* stage whose explicit shape is parsed */
	bool in_dims;        /* unknown names become size parameters */
	int depth;
	const char *file;    /* the op's own copy of the file name */
} parser;

static int advance(parser *p)
{
	p->tok = p->next;
	p->next = te_lex_next(&p->lx);
	if (p->tok.kind == TOK_ERROR && p->tok.len == 1 &&
	    (unsigned char)p->tok.start[0] >= 0x20 && (unsigned char)p->tok.start[0] < 0x7f)
		return te_error(p->ctx, TESSEL_ERR_SYNTAX, p->tok.loc, "%s '%c'",
			p->tok.error, p->tok.start[0]);
	if (p->tok.kind == TOK_ERROR)
		return te_error(p->ctx, TESSEL_ERR_SYNTAX, p->tok.loc, "%s",
			p->tok.error);
	return 0;
}

static tessel_loc loc_of(parser *p, te_token t)
{
	t.loc.file = p->file ? p->file : t.loc.file;
	return t.loc;
}

/* Move the error just recorded to the place of token "at". */
static int error_at(parser *p, te_token at)
{
	tessel_ctx *c = p->ctx;
	snprintf(c->err_file, sizeof(c->err_file), "%s", at.loc.file);
	c->err.loc = at.loc;
	c->err.loc.file = c->err_file;
	return -1;
}

static int syntax_error(parser *p, const char *expected)
{
	te_token t = p->tok;
	if (t.kind == TOK_NAME || t.kind == TOK_INT || t.kind == TOK_FLOAT)
		return te_error(p->ctx, TESSEL_ERR_SYNTAX, t.loc,
			"expected %s, found '%.*s'", expected, (int)t.len, t.start);
	return te_error(p->ctx, TESSEL_ERR_SYNTAX, t.loc, "expected %s, found %s",
		expected, te_tok_name(t.kind));
}

static int expect(parser *p, te_tok_kind kind)
{
	if (p->tok.kind != kind)
		return syntax_error(p, te_tok_name(kind));
	return advance(p);
}

static bool tok_is(const te_token *t, const char *word)
{
	return t->kind == TOK_NAME && t->len == strlen(word) &&
	       memcmp(t->start, word, t->len) == 0;
}

/* Copy the name token "t" into "buf" of 256 bytes. */
static const char *tok_text(const te_token *t, char *buf)
{
	memcpy(buf, t->start, t->len);
	buf[t->len] = 0;
	return buf;
}

static bool is_reserved(const te_token *t)
{
	static const char *words[] = { "op", "in", "true", "false", "int" };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (tok_is(t, words[i]))
			return true;
	return tessel_dtype_parse(t->start, t->len) >= 0;
}

static int expect_name(parser *p, char *buf, const char *what)
{
	if (p->tok.kind != TOK_NAME)
		return syntax_error(p, what);
	if (is_reserved(&p->tok))
		return te_error(p->ctx, TESSEL_ERR_SYNTAX, p->tok.loc,
			"'%.*s' is a keyword and cannot be %s", (int)p->tok.len,
			p->tok.start, what);
	tok_text(&p->tok, buf);
	return advance(p);
}

static tessel_expr *parse_expr(parser *p);

static tessel_expr *located(tessel_expr *e, tessel_loc loc)
{
	if (e)
		e->loc = loc;
	return e;
}

/* Parse "[e, e, ...]" (or "()" with "close" TOK_RPAREN) into "out" of at
 * most TESSEL_MAX_DIMS entries; return the count or -1. */
static int parse_expr_list(parser *p, te_tok_kind close, tessel_expr **out,
	const char *what)
{
	int n = 0;
	if (p->tok.kind == close)
		return advance(p) ? -1 : 0;
	for (;;) {
		if (n == TESSEL_MAX_DIMS)
			return te_error(p->ctx, TESSEL_ERR_LIMIT, p->tok.loc,
				"too many %s (at most %d)", what, TESSEL_MAX_DIMS);
		out[n] = parse_expr(p);
		if (!out[n])
			return -1;
		n++;
		if (p->tok.kind == close)
			return advance(p) ? -1 : n;
		if (p->tok.kind != TOK_COMMA)
			return syntax_error(p, close == TOK_RBRACK ? "',' or ']'" : "',' or ')'");
		if (advance(p))
			return -1;
	}
}

static const struct {
	const char *name;
	tessel_unary op;
} unary_fns[] = {
	{ "exp", TESSEL_EXP }, { "log", TESSEL_LOG }, { "sqrt", TESSEL_SQRT },
	{ "rsqrt", TESSEL_RSQRT }, { "tanh", TESSEL_TANH }, { "erf", TESSEL_ERF },
	{ "sigmoid", TESSEL_SIGMOID }, { "abs", TESSEL_ABS },
	{ "floor", TESSEL_FLOOR },
};

static const struct {
	const char *name;
	tessel_binary op;
} binary_fns[] = {
	{ "min", TESSEL_MIN }, { "max", TESSEL_MAX }, { "pow", TESSEL_POW },
};

static tessel_expr *call_error(parser *p, te_token name, int want, int got)
{
	te_error(p->ctx, TESSEL_ERR_SYNTAX, name.loc,
		"'%.*s' takes %d argument%s, not %d", (int)name.len, name.start,
		want, want == 1 ? "" : "s", got);
	return NULL;
}

/* Parse the call "NAME(args)" after its name token "name". */
static tessel_expr *parse_call(parser *p, te_token name)
{
	tessel_expr *args[TESSEL_MAX_DIMS];
	tessel_loc loc = loc_of(p, name);
	int n = parse_expr_list(p, TOK_RPAREN, args, "arguments");
	if (n < 0)
		return NULL;
	int dt = tessel_dtype_parse(name.start, name.len);
	if (dt >= 0)
		return n == 1 ? located(tessel_cast(p->op, (tessel_dtype)dt, args[0]), loc)
			      : call_error(p, name, 1, n);
	if (tok_is(&name, "select"))
		return n == 3 ? located(tessel_select(p->op, args[0], args[1], args[2]), loc)
			      : call_error(p, name, 3, n);
	for (size_t i = 0; i < sizeof(unary_fns) / sizeof(unary_fns[0]); i++)
		if (tok_is(&name, unary_fns[i].name))
			return n == 1 ? located(tessel_unary_op(p->op, unary_fns[i].op, args[0]), loc)
				      : call_error(p, name, 1, n);
	for (size_t i = 0; i < sizeof(binary_fns) / sizeof(binary_fns[0]); i++)
		if (tok_is(&name, binary_fns[i].name))
			return n == 2 ? located(tessel_binary_op(p->op, binary_fns[i].op, args[0], args[1]), loc)
				      : call_error(p, name, 2, n);
	te_error(p->ctx, TESSEL_ERR_NAME, name.loc, "unknown function '%.*s'",
		(int)name.len, name.start);
	return NULL;
}

static tessel_expr *parse_access(parser *p, te_token name, tessel_stage *t)
{
	tessel_expr *index[TESSEL_MAX_DIMS];
	int n = parse_expr_list(p, TOK_RBRACK, index, "indices");
	if (n < 0)
		return NULL;
	if (n != t->ndim) {
		te_error(p->ctx, TESSEL_ERR_SHAPE, name.loc,
			"'%s' has %d dimension%s but is indexed with %d", t->name,
			t->ndim, t->ndim == 1 ? "" : "s", n);
		return NULL;
	}
	return located(tessel_access(p->op, t, n, index), loc_of(p, name));
}

/* Return the expression the bare name "name" refers to: a variable of the
 * current stage, a size or attribute, or (in dimensions) a new size. */
static tessel_expr *resolve_name(parser *p, te_token name)
{
	char buf[256];
	tok_text(&name, buf);
	tessel_loc loc = loc_of(p, name);
	tessel_var *v = p->stage ? te_stage_find_var(p->stage, buf) : NULL;
	if (v)
		return located(tessel_var_ref(p->op, v), loc);
	te_sym *s = te_op_find_sym(p->op, buf);
	if (p->dim_stage && te_stage_find_var(p->dim_stage, buf)) {
		te_error(p->ctx, TESSEL_ERR_NAME, name.loc,
			"'%s' is an index variable; a dimension is made of sizes", buf);
		return NULL;
	}
	if (!s && p->in_dims && !te_op_find_stage(p->op, buf)) {
		s = te_op_add_sym(p->op, buf, false, loc);
		if (!s) {
			error_at(p, name);
			return NULL;
		}
	}
	if (s) {
		tessel_expr *e = te_expr_new(p->op, TE_SYM, loc);
		e->u.sym = s;
		return e;
	}
	if (te_op_find_stage(p->op, buf))
		te_error(p->ctx, TESSEL_ERR_SHAPE, name.loc,
			"tensor '%s' must be indexed, e.g. %s[...]", buf, buf);
	else
		te_error(p->ctx, TESSEL_ERR_NAME, name.loc, "unknown name '%s'", buf);
	return NULL;
}

static tessel_expr *parse_name_expr(parser *p)
{
	te_token name = p->tok;
	if (advance(p))
		return NULL;
	if (tok_is(&name, "true") || tok_is(&name, "false"))
		return located(tessel_bool(p->op, tok_is(&name, "true")),
			loc_of(p, name));
	if (p->tok.kind == TOK_LPAREN && (tok_is(&name, "sum") || tok_is(&name, "prod"))) {
		te_error(p->ctx, TESSEL_ERR_SYNTAX, name.loc,
			"a reduction must be the whole right-hand side of a stage; "
			"compute it in a stage of its own");
		return NULL;
	}
	if (p->tok.kind == TOK_LPAREN)
		return advance(p) ? NULL : parse_call(p, name);
	if (p->tok.kind == TOK_LBRACK) {
		char buf[256];
		tessel_stage *t = te_op_find_stage(p->op, tok_text(&name, buf));
		if (!t) {
			te_error(p->ctx, TESSEL_ERR_NAME, name.loc,
				"unknown tensor '%s'", buf);
			return NULL;
		}
		return advance(p) ? NULL : parse_access(p, name, t);
	}
	return resolve_name(p, name);
}

static tessel_expr *parse_primary(parser *p)
{
	te_token t = p->tok;
	switch (t.kind) {
	case TOK_INT:
		if (advance(p))
			return NULL;
		return located(tessel_int(p->op, t.ival), loc_of(p, t));
	case TOK_FLOAT:
		if (advance(p))
			return NULL;
		return located(tessel_float(p->op, t.fval), loc_of(p, t));
	case TOK_NAME:
		return parse_name_expr(p);
	case TOK_LPAREN: {
		if (advance(p))
			return NULL;
		tessel_expr *e = parse_expr(p);
		if (!e || expect(p, TOK_RPAREN))
			return NULL;
		return e;
	}
	default:
		syntax_error(p, "an expression");
		return NULL;
	}
}

static tessel_expr *parse_unary(parser *p)
{
	te_token t = p->tok;
	if (t.kind != TOK_MINUS && t.kind != TOK_NOT)
		return parse_primary(p);
	if (++p->depth > TE_MAX_DEPTH) {
		te_error(p->ctx, TESSEL_ERR_LIMIT, t.loc,
			"expression nested more than %d deep", TE_MAX_DEPTH);
		return NULL;
	}
	if (advance(p))
		return NULL;
	tessel_expr *a = parse_unary(p);
	p->depth--;
	return located(tessel_unary_op(p->op,
		t.kind == TOK_MINUS ? TESSEL_NEG : TESSEL_NOT, a), loc_of(p, t));
}

/* Binary operators by precedence level, loosest first. */
static int binary_level(te_tok_kind k, tessel_binary *op)
{
	switch (k) {
	case TOK_OR: *op = TESSEL_OR; return 1;
	case TOK_AND: *op = TESSEL_AND; return 2;
	case TOK_EQ: *op = TESSEL_EQ; return 3;
	case TOK_NE: *op = TESSEL_NE; return 3;
	case TOK_LT: *op = TESSEL_LT; return 4;
	case TOK_LE: *op = TESSEL_LE; return 4;
	case TOK_GT: *op = TESSEL_GT; return 4;
	case TOK_GE: *op = TESSEL_GE; return 4;
	case TOK_PLUS: *op = TESSEL_ADD; return 5;
	case TOK_MINUS: *op = TESSEL_SUB; return 5;
	case TOK_STAR: *op = TESSEL_MUL; return 6;
	case TOK_SLASH: *op = TESSEL_DIV; return 6;
	case TOK_PERCENT: *op = TESSEL_MOD; return 6;
	default: return 0;
	}
}

/* Precedence climbing: parse operands joined by operators of level at
 * least "min_level", all left-associative. */
static tessel_expr *parse_binary(parser *p, int min_level)
{
	if (++p->depth > TE_MAX_DEPTH) {
		te_error(p->ctx, TESSEL_ERR_LIMIT, p->tok.loc,
			"expression nested more than %d deep", TE_MAX_DEPTH);
		return NULL;
	}
	tessel_expr *lhs = parse_unary(p);
	tessel_binary op;
	int level;
	while (lhs && (level = binary_level(p->tok.kind, &op)) >= min_level &&
	       level > 0) {
		te_token t = p->tok;
		if (advance(p))
			return NULL;
		tessel_expr *rhs = parse_binary(p, level + 1);
		lhs = located(tessel_binary_op(p->op, op, lhs, rhs), loc_of(p, t));
	}
	p->depth--;
	return lhs;
}

static tessel_expr *parse_expr(parser *p)
{
	return parse_binary(p, 1);
}

/* Parse a size expression (a dimension or range bound), where unknown
 * names become size parameters when "new_sizes" is true. */
static tessel_expr *parse_size_expr(parser *p, bool new_sizes)
{
	tessel_stage *saved = p->stage;
	bool saved_dims = p->in_dims;
	p->stage = NULL;
	p->in_dims = new_sizes;
	tessel_expr *e = parse_expr(p);
	p->stage = saved;
	p->in_dims = saved_dims;
	return e;
}

/* Parse "dtype[d, d, ...]" into "*dtype", "dims" and "*ndim". */
static int parse_tensor_type(parser *p, tessel_dtype *dtype, tessel_expr **dims,
	int *ndim)
{
	int dt = p->tok.kind == TOK_NAME ? tessel_dtype_parse(p->tok.start, p->tok.len) : -1;
	if (dt < 0)
		return syntax_error(p, "a dtype (f32, f64, f16, bf16, i8, u8, i32, i64, bool)");
	*dtype = (tessel_dtype)dt;
	if (advance(p) || expect(p, TOK_LBRACK))
		return -1;
	*ndim = 0;
	if (p->tok.kind == TOK_RBRACK)
		return advance(p);
	for (;;) {
		if (*ndim == TESSEL_MAX_DIMS)
			return te_error(p->ctx, TESSEL_ERR_LIMIT, p->tok.loc,
				"more than %d dimensions", TESSEL_MAX_DIMS);
		dims[*ndim] = parse_size_expr(p, true);
		if (!dims[*ndim])
			return -1;
		(*ndim)++;
		if (p->tok.kind == TOK_RBRACK)
			return advance(p);
		if (expect(p, TOK_COMMA))
			return -1;
	}
}

static int parse_param(parser *p)
{
	char name[256];
	te_token at = p->tok;
	if (expect_name(p, name, "a parameter name") || expect(p, TOK_COLON))
		return -1;
	if (tok_is(&p->tok, "int")) {
		te_sym *s = te_op_find_sym(p->op, name);
		if (s && !s->is_attr) {
			s->is_attr = true;
		} else if (tessel_op_attr(p->op, name)) {
			return error_at(p, at);
		}
		if (s) {
			te_param *params = te_arena_alloc(&p->op->arena,
				sizeof(te_param) * (size_t)(p->op->nparams + 1));
			if (p->op->nparams)
				memcpy(params, p->op->params,
					sizeof(te_param) * (size_t)p->op->nparams);
			params[p->op->nparams++] = (te_param){ NULL, s };
			p->op->params = params;
		}
		return advance(p);
	}
	tessel_dtype dtype;
	tessel_expr *dims[TESSEL_MAX_DIMS];
	int ndim;
	if (parse_tensor_type(p, &dtype, dims, &ndim))
		return -1;
	tessel_stage *s = tessel_op_input(p->op, name, dtype, ndim, dims);
	if (!s)
		return error_at(p, at);
	s->loc = loc_of(p, at);
	return 0;
}

/* Parse the names of the stage's index variables "NAME[i, j, ...]". */
static int parse_axis_names(parser *p, char names[][256], int *n)
{
	*n = 0;
	if (expect(p, TOK_LBRACK))
		return -1;
	if (p->tok.kind == TOK_RBRACK)
		return advance(p);
	for (;;) {
		if (*n == TESSEL_MAX_DIMS)
			return te_error(p->ctx, TESSEL_ERR_LIMIT, p->tok.loc,
				"more than %d index variables", TESSEL_MAX_DIMS);
		if (expect_name(p, names[*n], "an index variable"))
			return -1;
		(*n)++;
		if (p->tok.kind == TOK_RBRACK)
			return advance(p);
		if (expect(p, TOK_COMMA))
			return -1;
	}
}

static tessel_reduce reduce_kind(const te_token *t)
{
	if (tok_is(t, "sum")) return TESSEL_SUM;
	if (tok_is(t, "prod")) return TESSEL_PROD;
	if (tok_is(t, "max")) return TESSEL_RMAX;
	if (tok_is(t, "min")) return TESSEL_RMIN;
	return TESSEL_REDUCE_NONE;
}

/* Return true when the right-hand side starts a reduction: sum/prod
 * followed by '(', or max/min followed by '(' and a name that is not yet
 * defined (max(a, b) of known values is the binary function). */
static bool at_reduction(parser *p, const tessel_stage *s)
{
	tessel_reduce r = reduce_kind(&p->tok);
	if (r == TESSEL_REDUCE_NONE || p->next.kind != TOK_LPAREN)
		return false;
	if (r == TESSEL_SUM || r == TESSEL_PROD)
		return true;
	te_lexer save = p->lx;
	te_token after = te_lex_next(&p->lx);
	te_token then = te_lex_next(&p->lx);
	p->lx = save;
	if (after.kind != TOK_NAME || is_reserved(&after))
		return false;
	if (then.kind != TOK_COMMA && then.kind != TOK_RPAREN && !tok_is(&then, "in"))
		return false;
	char buf[256];
	tok_text(&after, buf);
	return !te_stage_find_var(s, buf) && !te_op_find_sym(p->op, buf) &&
	       !te_op_find_stage(p->op, buf) && !tok_is(&after, "true") &&
	       !tok_is(&after, "false");
}

static int parse_reduce_var(parser *p, tessel_stage *s)
{
	char name[256];
	te_token at = p->tok;
	if (expect_name(p, name, "a reduction variable"))
		return -1;
	tessel_expr *lo = NULL, *hi = NULL;
	if (tok_is(&p->tok, "in")) {
		if (advance(p) || !(lo = parse_size_expr(p, true)) ||
		    expect(p, TOK_DOTDOT) || !(hi = parse_size_expr(p, true)))
			return -1;
	}
	tessel_var *v = tessel_stage_reduce_axis(s, name, lo, hi);
	if (!v)
		return error_at(p, at);
	v->loc = loc_of(p, at);
	return 0;
}

static int parse_rhs(parser *p, tessel_stage *s)
{
	tessel_reduce r = TESSEL_REDUCE_NONE;
	if (at_reduction(p, s)) {
		r = reduce_kind(&p->tok);
		if (advance(p) || expect(p, TOK_LPAREN))
			return -1;
		for (;;) {
			if (parse_reduce_var(p, s))
				return -1;
			if (p->tok.kind == TOK_RPAREN)
				break;
			if (expect(p, TOK_COMMA))
				return -1;
		}
		if (advance(p))
			return -1;
	}
	p->stage = s;
	p->depth = 0;
	tessel_expr *body = parse_expr(p);
	p->stage = NULL;
	if (!body)
		return -1;
	return tessel_stage_set_body(s, r, body);
}

static int parse_stage(parser *p)
{
	char name[256], axes[TESSEL_MAX_DIMS][256];
	const char *axis_ptrs[TESSEL_MAX_DIMS];
	int n;
	te_token at = p->tok;
	if (expect_name(p, name, "a stage name or '}'") ||
	    parse_axis_names(p, axes, &n))
		return -1;
	for (int i = 0; i < n; i++)
		axis_ptrs[i] = axes[i];
	tessel_stage *s = tessel_op_compute(p->op, name, n, axis_ptrs);
	if (!s)
		return error_at(p, at);
	s->loc = loc_of(p, at);
	if (p->tok.kind == TOK_COLON) {
		tessel_dtype dtype;
		tessel_expr *dims[TESSEL_MAX_DIMS];
		int ndim;
		te_token tt;
		if (advance(p))
			return -1;
		tt = p->tok;
		p->dim_stage = s;
		int r = parse_tensor_type(p, &dtype, dims, &ndim);
		p->dim_stage = NULL;
		if (r)
			return -1;
		if (ndim != n)
			return te_error(p->ctx, TESSEL_ERR_SHAPE, tt.loc,
				"stage '%s' has %d index variables but %d dimensions",
				name, n, ndim);
		if (tessel_stage_set_shape(s, dtype, dims))
			return error_at(p, tt);
	}
	if (expect(p, TOK_ASSIGN) || parse_rhs(p, s))
		return -1;
	if (p->tok.kind == TOK_SEMI)
		return advance(p);
	return 0;
}

static int parse_outputs(parser *p, te_token *names, int *n)
{
	bool paren = p->tok.kind == TOK_LPAREN;
	*n = 0;
	if (paren && advance(p))
		return -1;
	for (;;) {
		if (*n == 64)
			return te_error(p->ctx, TESSEL_ERR_LIMIT, p->tok.loc,
				"more than 64 outputs");
		names[*n] = p->tok;
		char buf[256];
		if (expect_name(p, buf, "an output name"))
			return -1;
		(*n)++;
		if (p->tok.kind != TOK_COMMA)
			break;
		if (advance(p))
			return -1;
	}
	return paren ? expect(p, TOK_RPAREN) : 0;
}

static int bind_outputs(parser *p, const te_token *names, int n)
{
	for (int i = 0; i < n; i++) {
		char buf[256];
		tessel_stage *s = te_op_find_stage(p->op, tok_text(&names[i], buf));
		if (!s)
			return te_error(p->ctx, TESSEL_ERR_NAME, names[i].loc,
				"output '%s' is not defined in the op", buf);
		if (tessel_op_output(p->op, s))
			return error_at(p, names[i]);
	}
	return 0;
}

static tessel_op *parse_op(parser *p)
{
	char name[256];
	te_token at = p->tok, outs[64];
	int nouts;
	if (!tok_is(&p->tok, "op")) {
		syntax_error(p, "'op'");
		return NULL;
	}
	if (advance(p) || expect_name(p, name, "an op name"))
		return NULL;
	p->op = tessel_op_new(p->ctx, name);
	if (!p->op)
		return NULL;
	p->file = p->lx.file ? te_arena_strdup(&p->op->arena, p->lx.file) : NULL;
	p->op->loc = loc_of(p, at);
	if (expect(p, TOK_LPAREN))
		goto fail;
	if (p->tok.kind != TOK_RPAREN)
		for (;;) {
			if (parse_param(p))
				goto fail;
			if (p->tok.kind == TOK_RPAREN)
				break;
			if (expect(p, TOK_COMMA))
				goto fail;
		}
	if (advance(p) || expect(p, TOK_ARROW) || parse_outputs(p, outs, &nouts) ||
	    expect(p, TOK_LBRACE))
		goto fail;
	while (p->tok.kind != TOK_RBRACE)
		if (parse_stage(p))
			goto fail;
	if (bind_outputs(p, outs, nouts) || advance(p) || tessel_op_finish(p->op))
		goto fail;
	return p->op;
fail:
	tessel_op_release(p->op);
	p->op = NULL;
	return NULL;
}

static int check_unique_op(tessel_ctx *ctx, const tessel_module *m,
	const tessel_op *op)
{
	for (int i = 0; i < m->nops; i++)
		if (strcmp(m->ops[i]->name, op->name) == 0)
			return te_error(ctx, TESSEL_ERR_NAME, op->loc,
				"op '%s' is defined twice", op->name);
	return 0;
}

static int module_add(tessel_module *m, tessel_op *op)
{
	tessel_op **ops = realloc(m->ops, sizeof(*ops) * (size_t)(m->nops + 1));
	if (!ops)
		return -1;
	m->ops = ops;
	m->ops[m->nops++] = op;
	return 0;
}

tessel_module *tessel_parse(tessel_ctx *ctx, const char *file, const char *src,
	size_t len)
{
	tessel_module *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->ctx = ctx;
	parser p = { .ctx = ctx };
	tessel_ctx_clear_error(ctx);
	te_lex_init(&p.lx, file ? file : "<input>", src, len);
	p.next = te_lex_next(&p.lx);
	if (advance(&p))
		goto fail;
	if (p.tok.kind == TOK_EOF) {
		te_error(ctx, TESSEL_ERR_SYNTAX, p.tok.loc, "no op in the file");
		goto fail;
	}
	while (p.tok.kind != TOK_EOF) {
		tessel_op *op = parse_op(&p);
		if (!op)
			goto fail;
		if (check_unique_op(ctx, m, op) || module_add(m, op)) {
			tessel_op_release(op);
			goto fail;
		}
	}
	return m;
fail:
	if (ctx->err.kind == TESSEL_OK)
		te_error(ctx, TESSEL_ERR_INTERNAL, p.tok.loc, "parse failed");
	tessel_module_free(m);
	return NULL;
}

#define TE_MAX_SOURCE (64u << 20)

/* Read all of "path" into a malloc'ed buffer, "*len" bytes. */
static char *read_source(tessel_ctx *ctx, const char *path, size_t *len)
{
	tessel_loc loc = { path, 0, 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		te_error(ctx, TESSEL_ERR_IO, loc, "cannot open: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap || cap >= TE_MAX_SOURCE)
			break;
		char *grown = realloc(buf, cap * 2);
		if (!grown) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = grown;
		cap *= 2;
	}
	bool failed = !buf || ferror(f) || n >= TE_MAX_SOURCE;
	fclose(f);
	if (failed) {
		te_error(ctx, TESSEL_ERR_IO, loc, !buf ? "out of memory" :
			n >= TE_MAX_SOURCE ? "file larger than 64 MiB" : "read error");
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

tessel_module *tessel_parse_file(tessel_ctx *ctx, const char *path)
{
	size_t len;
	char *src = read_source(ctx, path, &len);
	if (!src)
		return NULL;
	tessel_module *m = tessel_parse(ctx, path, src, len);
	free(src);
	return m;
}

void tessel_module_free(tessel_module *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nops; i++)
		tessel_op_release(m->ops[i]);
	free(m->ops);
	free(m);
}

int tessel_module_num_ops(const tessel_module *m)
{
	return m->nops;
}

tessel_op *tessel_module_op(const tessel_module *m, int i)
{
	return i >= 0 && i < m->nops ? m->ops[i] : NULL;
}

tessel_op *tessel_module_find(tessel_ctx *ctx, const tessel_module *m,
	const char *name)
{
	if (!name) {
		if (m->nops == 1)
			return m->ops[0];
		te_error(ctx, TESSEL_ERR_NAME, m->ops[0]->loc,
			"the file holds %d ops; pick one with FILE.te:NAME", m->nops);
		return NULL;
	}
	for (int i = 0; i < m->nops; i++)
		if (strcmp(m->ops[i]->name, name) == 0)
			return m->ops[i];
	char names[256] = "";
	for (int i = 0; i < m->nops; i++) {
		size_t l = strlen(names);
		snprintf(names + l, sizeof(names) - l, "%s%s", i ? ", " : "",
			m->ops[i]->name);
	}
	te_error(ctx, TESSEL_ERR_NAME, (tessel_loc){ m->ops[0]->loc.file, 0, 0 },
		"no op '%s' in the file (it defines %s)", name, names);
	return NULL;
}
