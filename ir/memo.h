/* Results of costly ISL questions, remembered per context under a text
 * key (ir/memo.c).  The tuner replays a parent's whole trace for every
 * mutation, so the same regions are bounded again and again: on an
 * H200's host, bounding the shared tiles of matmul candidates
 * (schedule/region.c, isl_set_dim_min and dim_max) was 82% of
 * replaying and lowering a good one, and the rounds' evolving grew from
 * 4 to 33 s as the population moved to such tiles.  A value never
 * changes once remembered. */
#ifndef TESSEL_IR_MEMO_H
#define TESSEL_IR_MEMO_H

#include "tessel/te.h"

/* Keys a context remembers (the most recent win a collision): the sets
 * and maps read from text (ir/isl_text.h) and the bounds of regions. */
#define TE_MEMO_SLOTS 8192

typedef struct te_memo te_memo;

/* Return the value remembered under "key" in "ctx" (still owned by the
 * memo, valid until the next te_memo_put), or NULL. */
const void *te_memo_get(tessel_ctx *ctx, const char *key);

/* Remember "value" under "key" in "ctx"; the memo owns it from now and
 * frees it with "free_value" when it is replaced or the context is
 * freed (also at once when memory runs out). */
void te_memo_put(tessel_ctx *ctx, const char *key, void *value,
	void (*free_value)(void *));

/* Free "memo" and its values (before their ISL context). */
void te_memo_free(te_memo *memo);

#endif
