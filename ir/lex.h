/* The tokens of the .te language. */
#ifndef TESSEL_IR_LEX_H
#define TESSEL_IR_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/te.h"

typedef enum te_tok_kind {
	TOK_EOF, TOK_NAME, TOK_INT, TOK_FLOAT,
	TOK_LPAREN, TOK_RPAREN, TOK_LBRACK, TOK_RBRACK, TOK_LBRACE, TOK_RBRACE,
	TOK_COMMA, TOK_COLON, TOK_SEMI, TOK_ASSIGN, TOK_ARROW, TOK_DOTDOT,
	TOK_PLUS, TOK_MINUS, TOK_STAR, TOK_SLASH, TOK_PERCENT,
	TOK_LT, TOK_LE, TOK_GT, TOK_GE, TOK_EQ, TOK_NE,
	TOK_AND, TOK_OR, TOK_NOT,
	TOK_ERROR
} te_tok_kind;

typedef struct te_token {
	te_tok_kind kind;
	const char *start;
	size_t len;
	tessel_loc loc;
	int64_t ival;
	double fval;
	const char *error;  /* TOK_ERROR: what is wrong */
} te_token;

typedef struct te_lexer {
	const char *src, *end, *p;
	const char *file;
	int line;
	const char *line_start;
} te_lexer;

void te_lex_init(te_lexer *lx, const char *file, const char *src, size_t len);
/* Return the next token of "lx"; TOK_ERROR tokens carry a message. */
te_token te_lex_next(te_lexer *lx);
/* Return a short description of "kind" for error messages. */
const char *te_tok_name(te_tok_kind kind);

#endif
