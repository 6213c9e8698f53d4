/* Random legal schedules, for fuzzing the compiler (schedule/random.c). */
#ifndef TESSEL_SCHEDULE_RANDOM_H
#define TESSEL_SCHEDULE_RANDOM_H

#include <stdint.h>

#include "schedule/state.h"

/* The next value of the splitmix64 generator "state". */
uint64_t sch_rng_next(uint64_t *state);
/* Attempt one random primitive with random arguments on "st"; return 0
 * when it was applied, -1 when refused (the state is then unchanged). */
int sch_random_step(sch_state *st, uint64_t *rng);
/* Make "attempts" random attempts from "seed"; return how many applied. */
int sch_random_schedule(sch_state *st, uint64_t seed, int attempts);

/* The same for GPU targets: sch_random_step's primitives and binds of
 * random loops to random GPU indices.  The CPU functions above never
 * bind (CPU C refuses bound loops). */
int sch_random_gpu_step(sch_state *st, uint64_t *rng);
/* Make "attempts" random GPU attempts from "seed" on top of: the default
 * GPU schedule (a quarter of the time); it with one or two tensors a
 * stage reads staged in shared memory (cache_read, compute_at between the
 * block and thread loops, often after a reduction loop moved there,
 * cooperative fetch, storage_align; a quarter), the same with that stage
 * first tiled into 2D blocks of threads (a quarter); the reductions
 * reduced across threads (an eighth); nothing (an eighth).  Return how
 * many applied. */
int sch_random_gpu_schedule(sch_state *st, uint64_t seed, int attempts);

#endif
