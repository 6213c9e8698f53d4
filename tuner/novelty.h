/* How often the search has measured each schedule structure (tuner/
 * novelty.c).  A structure is a trace with its integers taken out, its
 * "skeleton": the sketch, the compute locations and the loops each step
 * names, without the split factors, unroll limits and prefetch distances.
 * The cost model ranks structures it was never trained on poorly (docs/
 * cost-model.md, "Exploring the structures"), so the search spends its
 * exploration picks on the structures it has measured least. */
#ifndef TESSEL_TUNER_NOVELTY_H
#define TESSEL_TUNER_NOVELTY_H

#include <stdint.h>

typedef struct tune_novelty {
	int n, cap;
	uint64_t *skeleton;
	int *count;
} tune_novelty;

/* The hash of the skeleton of the trace text "trace": every integer that
 * stands alone (not part of a name such as "ax0") read as one symbol.
 * Never 0. */
uint64_t tune_trace_skeleton(const char *trace);

/* The measurements of "skeleton" counted in "nv" (0 when none). */
int tune_novelty_count(const tune_novelty *nv, uint64_t skeleton);

/* Count one more measurement of "skeleton".  Return 0, or -1 when memory
 * runs out. */
int tune_novelty_add(tune_novelty *nv, uint64_t skeleton);

void tune_novelty_clear(tune_novelty *nv);

#endif
