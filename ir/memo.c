/* A direct-mapped table of keys and values per context; see memo.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fnv.h"
#include "ir/memo.h"
#include "ir/te_impl.h"

typedef struct slot {
	uint64_t hash;
	char *key;         /* NULL: empty */
	void *value;
	void (*free_value)(void *);
} slot;

struct te_memo {
	slot slots[TE_MEMO_SLOTS];
};

static void clear_slot(slot *s)
{
	if (s->free_value)
		s->free_value(s->value);
	free(s->key);
	*s = (slot){ 0 };
}

const void *te_memo_get(tessel_ctx *ctx, const char *key)
{
	if (!ctx->memo)
		return NULL;
	uint64_t h = te_fnv1a(key);
	const slot *s = &ctx->memo->slots[h % TE_MEMO_SLOTS];
	return s->key && s->hash == h && strcmp(s->key, key) == 0 ? s->value : NULL;
}

void te_memo_put(tessel_ctx *ctx, const char *key, void *value,
	void (*free_value)(void *))
{
	if (!ctx->memo)
		ctx->memo = calloc(1, sizeof(*ctx->memo));
	char *copy = ctx->memo ? strdup(key) : NULL;
	if (!copy) {
		if (free_value)
			free_value(value);
		return;
	}
	uint64_t h = te_fnv1a(key);
	slot *s = &ctx->memo->slots[h % TE_MEMO_SLOTS];
	clear_slot(s);
	*s = (slot){ h, copy, value, free_value };
}

void te_memo_free(te_memo *memo)
{
	if (!memo)
		return;
	for (int i = 0; i < TE_MEMO_SLOTS; i++)
		if (memo->slots[i].key)
			clear_slot(&memo->slots[i]);
	free(memo);
}
