/* A direct-mapped table of texts and what ISL read from them, per
 * context; see isl_text.h. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fnv.h"
#include "ir/isl_text.h"
#include "ir/te_impl.h"

typedef struct slot {
	uint64_t hash;
	char *text;        /* NULL: empty */
	bool map;          /* "object" is an isl_map, else an isl_set */
	void *object;
} slot;

struct te_isl_text_cache {
	slot slots[TE_ISL_TEXT_SLOTS];
};

static void clear_slot(slot *s)
{
	if (s->map)
		isl_map_free(s->object);
	else
		isl_set_free(s->object);
	free(s->text);
	*s = (slot){ 0 };
}

/* Return the slot of "text" in the cache of "ctx" (made on first use),
 * or NULL when memory runs out. */
static slot *slot_of(tessel_ctx *ctx, uint64_t h)
{
	if (!ctx->isl_texts)
		ctx->isl_texts = calloc(1, sizeof(*ctx->isl_texts));
	return ctx->isl_texts ? &ctx->isl_texts->slots[h % TE_ISL_TEXT_SLOTS] : NULL;
}

/* Return what "text" denotes (a set, or a map when "map"), a new
 * reference: remembered, or read and remembered. */
static void *read_text(tessel_ctx *ctx, const char *text, bool map)
{
	uint64_t h = te_fnv1a(text);
	slot *s = slot_of(ctx, h);
	if (s && s->text && s->hash == h && s->map == map && strcmp(s->text, text) == 0)
		return map ? (void *)isl_map_copy(s->object) : (void *)isl_set_copy(s->object);
	isl_ctx *isl = te_isl(ctx);
	void *object = map ? (void *)isl_map_read_from_str(isl, text)
			   : (void *)isl_set_read_from_str(isl, text);
	char *copy = object && s ? strdup(text) : NULL;
	if (!copy)
		return object;
	clear_slot(s);
	*s = (slot){ h, copy, map,
		map ? (void *)isl_map_copy(object) : (void *)isl_set_copy(object) };
	return object;
}

isl_set *te_isl_read_set(tessel_ctx *ctx, const char *text)
{
	return read_text(ctx, text, false);
}

isl_map *te_isl_read_map(tessel_ctx *ctx, const char *text)
{
	return read_text(ctx, text, true);
}

void te_isl_text_cache_free(te_isl_text_cache *cache)
{
	if (!cache)
		return;
	for (int i = 0; i < TE_ISL_TEXT_SLOTS; i++)
		if (cache->slots[i].text)
			clear_slot(&cache->slots[i]);
	free(cache);
}
