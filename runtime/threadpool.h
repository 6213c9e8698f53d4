/* tessel's own fork-join thread pool, the runtime behind the parallel_for
 * of generated kernels (include/tessel/kernel.h).  Linux only: idle workers
 * spin briefly, then sleep on a futex. */
#ifndef TESSEL_RT_THREADPOOL_H
#define TESSEL_RT_THREADPOOL_H

#include <stdint.h>

#include "tessel/kernel.h"

typedef struct rt_pool rt_pool;

/* How long, by default, an idle worker (and a caller waiting for workers)
 * spins before it sleeps, in nanoseconds; the environment variable
 * TESSEL_POOL_SPIN_NS overrides it for the pools a process makes.  10 ms,
 * the order of libgomp's default spin (OpenBLAS spins longer): on a
 * virtual machine a sleeping thread takes from 0.2 ms to milliseconds to
 * wake, and once a caller's and a worker's chunks differ by more than the
 * spin the sleeps chain; with 100 us (the default until 2026-11-25) a
 * 0.9 ms matmul ran at 1.4 to 2.2 ms in 10 of 26 processes, with 10 ms in
 * 1 of 26 (bench/RESULTS.md, "The pool's spin").  The price is a core
 * busy for up to 10 ms after the last parallel loop of a burst.  A pool
 * of more threads than the machine has CPUs spins
 * RT_POOL_OVERSUBSCRIBED_SPIN_NS instead (libgomp throttles its spin
 * likewise): there a spinning thread holds the core another one needs.
 * Past its first RT_POOL_OVERSUBSCRIBED_SPIN_NS every spin yields the
 * core to any other thread that waits for it. */
#define RT_POOL_DEFAULT_SPIN_NS 10000000
#define RT_POOL_OVERSUBSCRIBED_SPIN_NS 100000

/* Return a pool of "num_threads" threads in all, the caller of parallel_for
 * included (so num_threads - 1 workers are started); "num_threads" <= 0
 * means rt_num_cpus() (runtime/target.h).  Return NULL when a thread
 * cannot be started.  A pool does not survive fork(): a child process
 * makes its own. */
rt_pool *rt_pool_new(int num_threads);

/* Stop and join the workers of "pool" and free it.  No parallel_for on
 * "pool" may be running.  NULL is allowed. */
void rt_pool_free(rt_pool *pool);

/* Return the number of threads of "pool", its caller included. */
int rt_pool_num_threads(const rt_pool *pool);

/* Set how long idle threads of "pool" spin before they sleep to "spin_ns"
 * nanoseconds (0: sleep at once), from their next wait on. */
void rt_pool_set_spin(rt_pool *pool, long spin_ns);

/* Pin each thread of "pool" to a CPU of its own among those the calling
 * thread may run on (in turn, when the pool has more threads than
 * there are such CPUs): the caller to the one it runs on, worker i to
 * the i-th after it.  The caller must be the thread that calls parallel_for on
 * "pool"; rt_pool_free, called by it, gives it back the CPUs it had.  What measures
 * kernels pins (the tuner's workers, `tessel run`): unpinned, a new
 * thread of this VM's 2-thread pools often stayed on its creator's CPU,
 * the two took turns on one core, and a 2 us matmul ran at 212 us in
 * about half of the processes (bench/RESULTS.md, "Two threads on one
 * CPU").  Return 0, or -1 when an affinity cannot be set (the pool
 * still works, perhaps partly pinned). */
int rt_pool_bind(rt_pool *pool);

/* Fill "env" so that kernels run their parallel loops on "pool": its thread
 * count, rt_parallel_for, and "pool"; and take their scratch memory from
 * the calling thread's workspace (runtime/workspace.h).  A NULL "pool"
 * gives a serial environment (one thread, loops run inline). */
void rt_pool_env(rt_pool *pool, tessel_kernel_env *env);

/* Run "body" over [0, "n") with "closure", split into contiguous chunks of
 * nearly equal size, one per thread (static schedule; the calling thread
 * runs the first), on the pool of "env", and return when all are done.
 * Fewer threads take part when "n" is smaller than the thread count;
 * "n" <= 0 does nothing.  A call made from inside a parallel body (nested)
 * runs serially on the calling thread.  Several threads may call it on
 * one pool at once: their loops take the pool's workers in turn. */
void rt_parallel_for(const tessel_kernel_env *env, int64_t n,
	tessel_parallel_body body, void *closure);

#endif
