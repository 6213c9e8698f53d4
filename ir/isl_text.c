/* ISL sets and maps read from text, remembered in the context's memo
 * (ir/memo.h) under the text; see isl_text.h. */
#include <stdbool.h>
#include <stdlib.h>

#include "ir/isl_text.h"
#include "ir/memo.h"
#include "ir/strbuf.h"
#include "ir/te_impl.h"

static void free_set(void *s)
{
	isl_set_free(s);
}

static void free_map(void *m)
{
	isl_map_free(m);
}

/* Return what "text" denotes (a set, or a map when "map"), a new
 * reference: remembered, or read and remembered. */
static void *read_text(tessel_ctx *ctx, const char *text, bool map)
{
	te_strbuf key = { 0 };
	te_sb_printf(&key, "%s %s", map ? "isl map" : "isl set", text);
	void *object = (void *)te_memo_get(ctx, te_sb_str(&key));
	if (object) {
		te_sb_free(&key);
		return map ? (void *)isl_map_copy(object) : (void *)isl_set_copy(object);
	}
	isl_ctx *isl = te_isl(ctx);
	object = map ? (void *)isl_map_read_from_str(isl, text)
		     : (void *)isl_set_read_from_str(isl, text);
	if (object)
		te_memo_put(ctx, te_sb_str(&key),
			map ? (void *)isl_map_copy(object) : (void *)isl_set_copy(object),
			map ? free_map : free_set);
	te_sb_free(&key);
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
