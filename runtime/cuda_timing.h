/* Timing CUDA launches the way the tuner and `tessel bench` measure GPU
 * kernels: warm-up runs, repeats until a minimum total time, the L2
 * cache optionally evicted before each run, and two clocks per run: the
 * kernels' own durations from CUPTI's activity records (what is used)
 * and CUDA events around the launches (a cross-check, and the fallback
 * where CUPTI cannot be loaded). */
#ifndef TESSEL_RT_CUDA_TIMING_H
#define TESSEL_RT_CUDA_TIMING_H

#include <stddef.h>

#include "runtime/cuda.h"
#include "runtime/timer.h"

typedef struct rt_cuda_timing {
	/* Per run, the summed durations of its kernels (CUPTI); runs is 0
	 * when there are none, with the reason in cupti_error. */
	rt_timing kernels;
	int kernels_per_run;
	char cupti_error[512];
	/* Per run, CUDA events recorded before and after its launches. */
	rt_timing events;
} rt_cuda_timing;

/* Time "enqueue"("arg") on "d": it enqueues one run's kernels on the
 * default stream without waiting and returns 0, or -1 with its own
 * error.  The options are the CPU timer's (runtime/timer.h), counted in
 * event time: o->warmup untimed runs, then runs until o->min_repeats and
 * o->min_total_s, at most o->max_repeats, stopping once o->timeout_s of
 * wall time has passed; o->flush_cache evicts the L2 before each run
 * (rt_cuda_flush_l2; not timed).  A warm-up run slower than
 * o->give_up_s is the measurement (events' time, no timed run): a
 * tuner learns no more from timing a candidate ten times its best
 * again, and on a GPU such a run can take seconds.  Return RT_TIME_OK, RT_TIME_TIMEOUT
 * (fewer than min_repeats runs in time), or RT_TIME_ERROR with the
 * reason in "err" of size "len" (invalid options, an enqueue or driver
 * error). */
int rt_cuda_time_runs(rt_cuda_device *d, int (*enqueue)(void *arg), void *arg,
	const rt_timer_opts *o, rt_cuda_timing *out, char *err, size_t len);

/* The time of a run to report: CUPTI's median when it has one, else the
 * events'. */
const rt_timing *rt_cuda_timing_best(const rt_cuda_timing *t);

#endif
