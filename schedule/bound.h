/* Loops bound to GPU indices: the facts other primitives check
 * (schedule/bind.c). */
#ifndef TESSEL_SCHEDULE_BOUND_H
#define TESSEL_SCHEDULE_BOUND_H

#include <stdbool.h>

#include "schedule/state.h"

/* The most threads a block may have: CUDA's limit and a common OpenCL
 * one.  A device with a smaller limit refuses the launch (the OpenCL
 * runtime checks CL_DEVICE_MAX_WORK_GROUP_SIZE). */
#define SCH_MAX_THREADS 1024

/* Return whether loops of kind "k" run on GPU blocks or threads (vthread
 * loops run serially in each thread and are not). */
bool sch_kind_is_block(loop_kind k);
bool sch_kind_is_thread(loop_kind k);

/* Return whether stage "s" has a live loop bound to a block or thread. */
bool sch_stage_has_bound(const sch_stage *s);

/* Check the nest "leaves" (outermost first) of stage "si" against its
 * bound loops: thread loops lie inside every block loop, and no stage
 * computed after a loop of it (reverse_compute_at) lies outside a bound
 * loop.  Return 0, or refuse with "what" in front of the message. */
int sch_check_bound_nest(sch_state *st, int si, const int *leaves,
	const char *what);

#endif
