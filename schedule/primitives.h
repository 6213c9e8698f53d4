/* Schedule primitives, one file each in schedule/.  Loops are named
 * "STAGE.LOOP".  Every primitive either succeeds, changing "st" and
 * appending itself to st->trace, or refuses with a precise message in
 * st->ctx and leaves "st" unchanged. */
#ifndef TESSEL_SCHEDULE_PRIMITIVES_H
#define TESSEL_SCHEDULE_PRIMITIVES_H

#include "schedule/state.h"

/* Split "loop" into an outer and an inner loop; the inner extent is
 * "factor" (or, when "nparts" is true, the outer extent is at most
 * "factor").  A factor that does not divide the extent leaves a guard.
 * The new loops are named "outer" and "inner" (NULL: LOOPo and LOOPi). */
int sch_split(sch_state *st, const char *loop, int64_t factor, bool nparts,
	const char *outer, const char *inner);
/* Fuse the adjacent loops "outer" and "inner" (outer directly around
 * inner, both spatial or both reductions) into "fused" (NULL: outer.inner
 * names joined). */
int sch_fuse(sch_state *st, const char *outer, const char *inner,
	const char *fused);
/* Put the "n" loops "loops" of one stage in this order, in the positions
 * they occupy now. */
int sch_reorder(sch_state *st, int n, const char *const *loops);
/* Split "x" and "y" by "fx" and "fy" and order xo, yo, xi, yi. */
int sch_tile(sch_state *st, const char *x, const char *y, int64_t fx,
	int64_t fy);
/* Annotate "loop": run its iterations in parallel / as vector lanes /
 * unrolled.  Refused where the loop carries a dependence (ISL). */
int sch_parallel(sch_state *st, const char *loop);
int sch_vectorize(sch_state *st, const char *loop);
int sch_unroll(sch_state *st, const char *loop);
/* Bind "loop" to the GPU index "axis": blockIdx.x|y|z, threadIdx.x|y|z or
 * vthread (schedule/bind.c has the rules). */
int sch_bind(sch_state *st, const char *loop, const char *axis);
/* Attach the annotation "key" = "value" to "loop"; known keys:
 * auto_unroll_max_step, min_blocks_per_sm (schedule/annotate.c). */
int sch_annotate(sch_state *st, const char *loop, const char *key,
	int64_t value);
/* At each iteration of "loop", prefetch what the iteration "distance"
 * later reads of the input "tensor"; distance 0 removes it
 * (schedule/prefetch.c). */
int sch_prefetch(sch_state *st, const char *loop, const char *tensor,
	int64_t distance);
/* Store the output "stage" with non-temporal stores ("on" 1) or plain
 * ones ("on" 0) (schedule/stream.c). */
int sch_stream(sch_state *st, const char *stage, int64_t on);
/* Substitute stage "stage" into its consumers (refused for outputs and
 * reductions). */
int sch_compute_inline(sch_state *st, const char *stage);
/* Compute "stage" in its own nest at the top level again. */
int sch_compute_root(sch_state *st, const char *stage);
/* Compute "stage" inside "loop" of its consumer: per iteration of that
 * loop, exactly the region the consumer needs there (ISL). */
int sch_compute_at(sch_state *st, const char *stage, const char *loop);
/* Check that every stage computed at a loop is read only by the stage of
 * that loop and by stages computed at that loop or at loops of the same
 * stage inside it (its buffer exists just there).  Return 0, or refuse
 * with "what" in front of the message. */
int sch_check_readers_within(sch_state *st, const char *what);

/* Initialize the accumulators of the reduction "stage" just before its
 * "loop" (at or outside its outermost reduction loop). */
int sch_decompose_reduction(sch_state *st, const char *stage, const char *loop);
/* Compute the consumer "stage" inside "loop" of its producer, after the
 * producer's body, over the elements that iteration produced. */
int sch_reverse_compute_at(sch_state *st, const char *stage, const char *loop);
/* Make the reduction loop "loop" an axis of a new stage STAGE_rf of
 * partial reductions, which the stage then reduces. */
int sch_rfactor(sch_state *st, const char *loop);
/* Compute "stage" into a new stage STAGE_SCOPE ("local", "shared",
 * "global") and copy it out; requires the stage's default loops. */
int sch_cache_write(sch_state *st, const char *stage, const char *scope);
/* Read "tensor" through a new copy TENSOR_SCOPE in the "n" stages
 * "readers". */
int sch_cache_read(sch_state *st, const char *tensor, const char *scope, int n,
	const char *const *readers);
/* Store the computed stage whose axes "axes" ("STAGE.AXIS", every one,
 * outermost first) name with its axes in that order; its readers index
 * it to match (schedule/reorder_storage.c). */
int sch_reorder_storage(sch_state *st, int n, const char *const *axes);
/* Store the axis "axis" ("STAGE.AXIS") of a computed stage as two, of
 * extents extent / "factor" and "factor"; its readers index it to match
 * (schedule/split_storage.c). */
int sch_split_storage(sch_state *st, const char *axis, int64_t factor);
/* Pad the stride of axis "axis" ("STAGE.AXIS") of the stage's buffers to
 * the next k * "factor" + "offset" (schedule/storage_align.c). */
int sch_storage_align(sch_state *st, const char *axis, int64_t factor,
	int64_t offset);

#endif
