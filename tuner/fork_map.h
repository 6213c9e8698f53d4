/* Independent jobs of the search run in forked copies of the tuner
 * (tuner/fork_map.c).  Evolving a GPU population replays, lowers and
 * describes about 190 candidates a round in one ISL context, which took
 * 15 to 75 s a round on the 16-CPU host of a lent H200 while the GPU
 * waited.  The copies are forked once, when the search has analysed its
 * op, and serve every generation after it, so that what each has
 * learned (ISL's sets read from text, shared footprints) stays warm; a
 * job gets its input as bytes and writes back bytes, and must not depend
 * on what changed in the parent since the fork. */
#ifndef TESSEL_TUNER_FORK_MAP_H
#define TESSEL_TUNER_FORK_MAP_H

#include <stddef.h>

/* One job: run job number "i" on the input "in" of "in_len" bytes with
 * "arg" and write its result into "*out" of "*len" bytes (malloc'd;
 * NULL and 0 for none). */
typedef void (*tune_map_job)(int i, const void *in, size_t in_len, void *arg, void **out,
	size_t *len);

typedef struct tune_fork_pool tune_fork_pool;

/* Fork "workers" copies of this process that will run "job" with "arg"
 * (as this process holds them now).  Return the pool, or NULL when
 * "workers" is below 2 or nothing could be forked (tune_fork_map then
 * runs the jobs here). */
tune_fork_pool *tune_fork_pool_new(int workers, tune_map_job job, void *arg);

/* Run the jobs 0 to n-1, job i on in[i] of in_len[i] bytes, in the
 * pool's copies ("pool" NULL: in this process, in order, with "job" and
 * "arg"), and store job i's result in out[i] (malloc'd, the caller frees
 * it) of len[i] bytes: NULL for a job without a result.  A copy that
 * dies loses its jobs of this call and is not used again; its share of
 * later calls runs here; so does a copy silent for longer than the
 * pool's patience (tune_fork_pool_set_patience), which is ended. */
void tune_fork_map(tune_fork_pool *pool, tune_map_job job, void *arg, int n,
	const void *const *in, const size_t *in_len, void **out, size_t *len);

/* Set how long tune_fork_map waits for a silent copy before it ends it
 * as stuck and loses its jobs of the call (default 300 s; "seconds" > 0;
 * "pool" may be NULL). */
void tune_fork_pool_set_patience(tune_fork_pool *pool, double seconds);
/* End the copies and free "pool" (may be NULL). */
void tune_fork_pool_free(tune_fork_pool *pool);

#endif
