/* Reservoir sampling (tuner/reservoir.h). */
#include "tuner/reservoir.h"

#include "schedule/random.h"

tune_reservoir tune_reservoir_make(int cap, uint64_t seed)
{
	return (tune_reservoir){ cap > 0 ? cap : 0, 0, seed };
}

int tune_reservoir_offer(tune_reservoir *r)
{
	int64_t i = r->seen++;
	if (i < r->cap)
		return (int)i;
	uint64_t j = sch_rng_next(&r->rng) % (uint64_t)(i + 1);
	return j < (uint64_t)r->cap ? (int)j : -1;
}
