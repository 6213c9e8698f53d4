/* A bound on the work ISL may do for one analysis.  Some sets make ISL's
 * exact algorithms take minutes: the tile regions of a GPU conv2d whose
 * block index runs over 25,088 values (batch 32) became hundreds of
 * disjuncts, one mutation of a candidate then took 9 s to over 20
 * minutes, and a tuner on an H200 spent 50 s evolving its first round
 * (bench/RESULTS.md, "Fourth device run").  Within a budget the
 * analysis either finishes with the same answer or gives up, and the
 * caller refuses what it could not analyse.  The count starts at zero for
 * each analysis, so whether one gives up depends on its input alone, not
 * on what the context computed before or remembers (ir/memo.h). */
#ifndef TESSEL_IR_ISL_BUDGET_H
#define TESSEL_IR_ISL_BUDGET_H

#include <stdbool.h>

#include "tessel/te.h"

/* ISL operations (simplex pivots) one analysis may take, about 3 s at
 * worst.  Of the regions of 900 sampled and mutated GPU candidates of
 * matmul 4096^3 and ResNet-50 conv2d layers at batch 1 and 32, and of
 * 600 CPU ones, only the one that made this bound runs out (at 20,000,
 * about one GPU candidate in 200 did). */
#define TE_ISL_BUDGET_OPS 200000UL

/* Start an analysis of at most "ops" ISL operations in the context of
 * "ctx".  Budgets do not nest. */
void te_isl_budget_begin(tessel_ctx *ctx, unsigned long ops);

/* End the analysis begun last: lift the bound and clear ISL's error.
 * Return true when the analysis ran out of its budget, its ISL results
 * then being NULL or partial and to be discarded. */
bool te_isl_budget_end(tessel_ctx *ctx);

#endif
