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
/* The most shared memory a block may use, in bytes: CUDA's static limit
 * and the OpenCL minimum for CL_DEVICE_LOCAL_MEM_SIZE on GPUs is 32 KiB;
 * 48 KiB holds on every GPU tessel targets.  The OpenCL runtime checks
 * the device's own limit at launch. */
#define SCH_MAX_SHARED_BYTES 49152

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

/* Check the shared-memory rules of every stage of "st" whose scope is
 * shared and that is computed at a loop (schedule/shared.c): the
 * consumer is at the root, the loop inside a block loop of it and outside
 * its thread loops; or the consumer is computed at a loop of a root
 * stage inside a block loop, whose thread loops around it span the
 * block; the stage is no reduction; its own bound
 * loops are thread loops made by split (their extent does not depend on
 * the region); the threads of the block and its shared bytes fit
 * SCH_MAX_THREADS and SCH_MAX_SHARED_BYTES.  Return 0, or refuse with
 * "what" in front of the message. */
int sch_check_shared(sch_state *st, const char *what);
/* Forget the footprints of shared stages "st" remembers (when its op is
 * replaced, and when it is freed). */
void sch_shared_memo_clear(sch_state *st);
/* For tests: compute again the footprint of every shared stage of "st"
 * that the memo holds under what it depends on now, add their number to
 * "*held", and return how many differ from the memo's (-1 when one
 * cannot be computed). */
int sch_shared_memo_check(sch_state *st, int *held);

/* Return the root stage whose kernel holds the shared stage "si",
 * computed at a loop: its consumer when at the root, else the root stage
 * its consumer is computed at; -1 when neither. */
int sch_shared_owner(const sch_state *st, int si);

#endif
