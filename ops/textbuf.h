/* A growable text buffer for generating .te source.  Running out of memory
 * is sticky: later appends do nothing and textbuf_take returns NULL, so a
 * generator checks once at the end. */
#ifndef TESSEL_OPS_TEXTBUF_H
#define TESSEL_OPS_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct textbuf {
	char *data;   /* NUL-terminated once anything was appended */
	size_t len;
	size_t cap;
	bool failed;  /* an allocation failed */
} textbuf;

void textbuf_init(textbuf *tb);
void textbuf_free(textbuf *tb);
/* Append "s" to "tb"; a NULL "s" (the text of a failed buffer) marks
 * "tb" failed, so failures propagate through nested buffers. */
void textbuf_puts(textbuf *tb, const char *s);
/* Append printf-formatted text to "tb". */
void textbuf_printf(textbuf *tb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Return the text of "tb" ("" when empty), or NULL when it failed. */
const char *textbuf_str(textbuf *tb);
/* Return the text of "tb", malloc'ed, and leave "tb" empty; NULL when an
 * allocation failed. */
char *textbuf_take(textbuf *tb);

#endif
