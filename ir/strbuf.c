#include "ir/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/arena.h"

static void reserve(te_strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < sb->len + extra + 1)
		cap *= 2;
	char *d = realloc(sb->data, cap);
	if (!d)
		te_out_of_memory();
	sb->data = d;
	sb->cap = cap;
}

void te_sb_vprintf(te_strbuf *sb, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0) {
		reserve(sb, (size_t)n);
		vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, again);
		sb->len += (size_t)n;
	}
	va_end(again);
}

void te_sb_printf(te_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	te_sb_vprintf(sb, fmt, ap);
	va_end(ap);
}

void te_sb_puts(te_strbuf *sb, const char *s)
{
	size_t n = strlen(s);
	reserve(sb, n);
	memcpy(sb->data + sb->len, s, n + 1);
	sb->len += n;
}

const char *te_sb_str(te_strbuf *sb)
{
	reserve(sb, 0);
	sb->data[sb->len] = 0;
	return sb->data;
}

char *te_sb_take(te_strbuf *sb)
{
	reserve(sb, 0);
	sb->data[sb->len] = 0;
	char *s = sb->data;
	sb->data = NULL;
	sb->len = sb->cap = 0;
	return s;
}

void te_sb_free(te_strbuf *sb)
{
	free(sb->data);
	sb->data = NULL;
	sb->len = sb->cap = 0;
}
