/* The lexer of the .te language: names, integer and float literals,
 * punctuation, and comments from '#' to the end of the line. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/lex.h"

void te_lex_init(te_lexer *lx, const char *file, const char *src, size_t len)
{
	lx->src = src;
	lx->end = src + len;
	lx->p = src;
	lx->file = file;
	lx->line = 1;
	lx->line_start = src;
}

static tessel_loc here(const te_lexer *lx)
{
	return (tessel_loc){ lx->file, lx->line, (int)(lx->p - lx->line_start) + 1 };
}

static void skip_space_and_comments(te_lexer *lx)
{
	while (lx->p < lx->end) {
		char c = *lx->p;
		if (c == '\n') {
			lx->p++;
			lx->line++;
			lx->line_start = lx->p;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			lx->p++;
		} else if (c == '#') {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else {
			return;
		}
	}
}

static bool is_digit_at(const te_lexer *lx, const char *p)
{
	return p < lx->end && isdigit((unsigned char)*p);
}

/* Lex a number starting at lx->p into "t": digits, an optional fraction
 * ("." and digits: "0..K" is an integer followed by ".."), an optional
 * exponent. */
static void lex_number(te_lexer *lx, te_token *t)
{
	const char *p = lx->p;
	bool is_float = false;
	while (is_digit_at(lx, p))
		p++;
	if (p < lx->end && *p == '.' && is_digit_at(lx, p + 1)) {
		is_float = true;
		p++;
		while (is_digit_at(lx, p))
			p++;
	}
	if (p < lx->end && (*p == 'e' || *p == 'E')) {
		const char *q = p + 1;
		if (q < lx->end && (*q == '+' || *q == '-'))
			q++;
		if (is_digit_at(lx, q)) {
			is_float = true;
			p = q;
			while (is_digit_at(lx, p))
				p++;
		}
	}
	size_t len = (size_t)(p - lx->p);
	char buf[64];
	if (len >= sizeof(buf)) {
		t->kind = TOK_ERROR;
		t->error = "number literal too long";
		return;
	}
	memcpy(buf, lx->p, len);
	buf[len] = 0;
	errno = 0;
	if (is_float) {
		t->kind = TOK_FLOAT;
		t->fval = strtod(buf, NULL);
		if (errno == ERANGE && (t->fval > 1.0 || t->fval < -1.0)) {
			t->kind = TOK_ERROR;
			t->error = "float literal out of range";
		}
	} else {
		t->kind = TOK_INT;
		unsigned long long v = strtoull(buf, NULL, 10);
		if (errno == ERANGE || v > INT64_MAX) {
			t->kind = TOK_ERROR;
			t->error = "integer literal out of range";
		}
		t->ival = (int64_t)v;
	}
	t->len = len;
	lx->p = p;
}

/* Two-character and one-character punctuation, longest first. */
static const struct {
	const char *text;
	te_tok_kind kind;
} punct[] = {
	{ "->", TOK_ARROW }, { "..", TOK_DOTDOT }, { "<=", TOK_LE },
	{ ">=", TOK_GE }, { "==", TOK_EQ }, { "!=", TOK_NE }, { "&&", TOK_AND },
	{ "||", TOK_OR }, { "(", TOK_LPAREN }, { ")", TOK_RPAREN },
	{ "[", TOK_LBRACK }, { "]", TOK_RBRACK }, { "{", TOK_LBRACE },
	{ "}", TOK_RBRACE }, { ",", TOK_COMMA }, { ":", TOK_COLON },
	{ ";", TOK_SEMI }, { "=", TOK_ASSIGN }, { "+", TOK_PLUS },
	{ "-", TOK_MINUS }, { "*", TOK_STAR }, { "/", TOK_SLASH },
	{ "%", TOK_PERCENT }, { "<", TOK_LT }, { ">", TOK_GT }, { "!", TOK_NOT },
};

te_token te_lex_next(te_lexer *lx)
{
	skip_space_and_comments(lx);
	te_token t = { 0 };
	t.loc = here(lx);
	t.start = lx->p;
	if (lx->p >= lx->end) {
		t.kind = TOK_EOF;
		return t;
	}
	unsigned char c = (unsigned char)*lx->p;
	if (isalpha(c) || c == '_') {
		const char *p = lx->p;
		while (p < lx->end && (isalnum((unsigned char)*p) || *p == '_'))
			p++;
		t.kind = TOK_NAME;
		t.len = (size_t)(p - lx->p);
		lx->p = p;
		if (t.len > 255) {
			t.kind = TOK_ERROR;
			t.error = "name longer than 255 characters";
		}
		return t;
	}
	if (isdigit(c)) {
		lex_number(lx, &t);
		return t;
	}
	for (size_t i = 0; i < sizeof(punct) / sizeof(punct[0]); i++) {
		size_t n = strlen(punct[i].text);
		if ((size_t)(lx->end - lx->p) >= n &&
		    memcmp(lx->p, punct[i].text, n) == 0) {
			t.kind = punct[i].kind;
			t.len = n;
			lx->p += n;
			return t;
		}
	}
	t.kind = TOK_ERROR;
	t.len = 1;
	t.error = c >= 0x20 && c < 0x7f ? "unexpected character"
					: "unexpected byte (not printable ASCII)";
	lx->p++;
	return t;
}

const char *te_tok_name(te_tok_kind kind)
{
	static const char *name[] = {
		"end of file", "name", "integer", "number", "'('", "')'", "'['",
		"']'", "'{'", "'}'", "','", "':'", "';'", "'='", "'->'", "'..'",
		"'+'", "'-'", "'*'", "'/'", "'%'", "'<'", "'<='", "'>'", "'>='",
		"'=='", "'!='", "'&&'", "'||'", "'!'", "invalid token"
	};
	return name[kind];
}
