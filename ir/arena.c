#include "ir/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct te_arena_chunk {
	te_arena_chunk *next;
	size_t size;
	_Alignas(16) unsigned char data[];
};

void te_arena_init(te_arena *a)
{
	a->head = NULL;
	a->used = 0;
	a->capacity = 0;
}

void te_arena_reset(te_arena *a)
{
	te_arena_chunk *c = a->head;
	while (c) {
		te_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	te_arena_init(a);
}

void *te_arena_alloc(te_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (!a->head || a->capacity - a->used < size) {
		size_t cap = a->head ? a->head->size * 2 : 4096;
		if (cap > (1u << 20))
			cap = 1u << 20;
		if (cap < size)
			cap = size;
		te_arena_chunk *c = malloc(sizeof(*c) + cap);
		if (!c)
			te_out_of_memory();
		c->next = a->head;
		c->size = cap;
		a->head = c;
		a->used = 0;
		a->capacity = cap;
	}
	void *p = a->head->data + a->used;
	a->used += size;
	memset(p, 0, size);
	return p;
}

char *te_arena_strndup(te_arena *a, const char *s, size_t len)
{
	char *d = te_arena_alloc(a, len + 1);
	memcpy(d, s, len);
	d[len] = 0;
	return d;
}

char *te_arena_strdup(te_arena *a, const char *s)
{
	return te_arena_strndup(a, s, strlen(s));
}

void te_out_of_memory(void)
{
	fprintf(stderr, "tessel: out of memory\n");
	abort();
}
