/* The default GPU schedule (schedule/gpu_default.c). */
#ifndef TESSEL_SCHEDULE_GPU_DEFAULT_H
#define TESSEL_SCHEDULE_GPU_DEFAULT_H

#include "schedule/state.h"

/* The threads per block of the default GPU schedule. */
#define SCH_GPU_DEFAULT_THREADS 64

/* Schedule every stage of "st" computed at the root for a GPU: its
 * spatial loops fused into one, split by "threads" (at most; less when
 * the loop is shorter), the outer loop bound to blockIdx.x and the inner
 * one to threadIdx.x; reduction loops stay serial inside each thread.
 * Stages with a bound loop already keep their schedule.
 * Every step is recorded in the trace.  Return 0, or -1 with the error
 * of the primitive that was refused (the steps before it stay). */
int sch_gpu_default(sch_state *st, int threads);

#endif
