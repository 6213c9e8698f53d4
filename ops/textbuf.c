/* A growable text buffer (see textbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/textbuf.h"

void textbuf_init(textbuf *tb)
{
	tb->data = NULL;
	tb->len = 0;
	tb->cap = 0;
	tb->failed = false;
}

void textbuf_free(textbuf *tb)
{
	free(tb->data);
	textbuf_init(tb);
}

/* Make room in "tb" for "extra" more bytes and a NUL; return false (and
 * mark "tb" failed) when memory runs out. */
static bool reserve(textbuf *tb, size_t extra)
{
	if (tb->failed)
		return false;
	if (tb->len + extra + 1 <= tb->cap)
		return true;
	size_t cap = tb->cap ? tb->cap : 256;
	while (cap < tb->len + extra + 1)
		cap *= 2;
	char *grown = realloc(tb->data, cap);
	if (!grown) {
		tb->failed = true;
		return false;
	}
	tb->data = grown;
	tb->cap = cap;
	return true;
}

void textbuf_puts(textbuf *tb, const char *s)
{
	if (!s) {
		tb->failed = true;
		return;
	}
	size_t n = strlen(s);
	if (!reserve(tb, n))
		return;
	memcpy(tb->data + tb->len, s, n + 1);
	tb->len += n;
}

void textbuf_printf(textbuf *tb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		tb->failed = true;
		return;
	}
	if (!reserve(tb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(tb->data + tb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	tb->len += (size_t)n;
}

const char *textbuf_str(textbuf *tb)
{
	if (tb->failed)
		return NULL;
	return tb->data ? tb->data : "";
}

char *textbuf_take(textbuf *tb)
{
	if (tb->failed) {
		textbuf_free(tb);
		return NULL;
	}
	char *s = tb->data ? tb->data : strdup("");
	textbuf_init(tb);
	return s;
}
