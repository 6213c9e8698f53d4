/* A growable string, for printers and for the text given to ISL. */
#ifndef TESSEL_IR_STRBUF_H
#define TESSEL_IR_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct te_strbuf {
	char *data;   /* NUL-terminated; NULL until the first append */
	size_t len;
	size_t cap;
} te_strbuf;

/* Append printf-formatted text to "sb".  Aborts on out-of-memory. */
void te_sb_printf(te_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with a va_list. */
void te_sb_vprintf(te_strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void te_sb_puts(te_strbuf *sb, const char *s);
/* Return the text of "sb" (never NULL) and keep ownership in "sb". */
const char *te_sb_str(te_strbuf *sb);
/* Return the text of "sb", malloc'ed, and leave "sb" empty. */
char *te_sb_take(te_strbuf *sb);
void te_sb_free(te_strbuf *sb);

#endif
