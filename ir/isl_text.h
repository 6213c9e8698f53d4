/* ISL sets and maps read from text, remembered per context.  Scheduling
 * builds its sets as text (the indices of reads, the boxes of regions)
 * and a tuner replays the same steps of a trace for every candidate it
 * mutates, so most texts come back: of 1,502 read by 32 trials of a GPU
 * conv2d, 224 were distinct, and reading them was a third of the time
 * spent evolving candidates (bench/RESULTS.md, "Evolving GPU
 * candidates").  ISL objects do not change once made, so a remembered
 * one is as good as a new one; they are kept in the context's memo
 * (ir/memo.h). */
#ifndef TESSEL_IR_ISL_TEXT_H
#define TESSEL_IR_ISL_TEXT_H

#include <isl/map.h>
#include <isl/set.h>

#include "tessel/te.h"

/* Return the set "text" denotes in the ISL context of "ctx" (a new
 * reference), or NULL when ISL rejects it. */
isl_set *te_isl_read_set(tessel_ctx *ctx, const char *text);

/* The same for a map. */
isl_map *te_isl_read_map(tessel_ctx *ctx, const char *text);

#endif
