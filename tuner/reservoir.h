/* A uniform random sample of at most K items of a stream of unknown
 * length (reservoir sampling, Vitter's Algorithm R; tuner/reservoir.c).
 * The search trains its model on every record of its own task and on a
 * sample of the records of the store's other workloads, so that a store
 * that grows over months keeps each retraining bounded
 * (docs/cost-model.md, "Other workloads in the store"). */
#ifndef TESSEL_TUNER_RESERVOIR_H
#define TESSEL_TUNER_RESERVOIR_H

#include <stdint.h>

typedef struct tune_reservoir {
	int cap;        /* K, >= 0 */
	int64_t seen;   /* items offered so far */
	uint64_t rng;   /* splitmix64 state */
} tune_reservoir;

/* A reservoir of "cap" slots; "seed" fixes which items it keeps. */
tune_reservoir tune_reservoir_make(int cap, uint64_t seed);

/* Offer the next item of the stream.  Return the slot in [0, cap) it
 * takes (slot i of the first cap items is i; a later item takes a slot
 * with probability cap / items seen, replacing the one there), or -1
 * when it is left out.  After any number of offers every item seen is
 * in the sample with the same probability. */
int tune_reservoir_offer(tune_reservoir *r);

#endif
