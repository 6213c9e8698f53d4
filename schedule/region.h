/* The region of a producer that a consumer needs under one of its loops,
 * computed with ISL (used by compute_at to check and by lowering to size
 * and place the producer). */
#ifndef TESSEL_SCHEDULE_REGION_H
#define TESSEL_SCHEDULE_REGION_H

#include <isl/aff.h>

#include "schedule/state.h"

/* The box [lo_d, hi_d] per dimension of the producer, as functions of the
 * parameters q0..q<pos> (the consumer's loops up to and including the
 * attach loop) and o0..o<n-1> (the origin of the consumer's own region
 * when the consumer is itself computed inside another stage). */
typedef struct sch_region {
	int ndim;
	isl_pw_aff *lo[TESSEL_MAX_DIMS];
	isl_pw_aff *hi[TESSEL_MAX_DIMS];
	int64_t shape[TESSEL_MAX_DIMS];   /* the largest extent, per dimension */
	bool full[TESSEL_MAX_DIMS];       /* the extent is always the largest */
	bool nonempty;                    /* every iteration of the loops needs some */
	isl_set *box;                     /* the ranges of the consumer's loops */
} sch_region;

/* Compute the region of stage "producer" read by "consumer" (a stage
 * whose iter extents are the effective ones: a region's shape when it is
 * attached, "attached" true) in one iteration of its nest position "pos".
 * The region also holds what the other stages computed at that loop read
 * of the producer, over the whole boxes they compute there.
 * Return 0, or -1 with a refusal naming why the region is unknown. */
int sch_region_compute(sch_state *st, int producer, const sch_stage *consumer,
	bool attached, int pos, sch_region *r);
/* Compute the box of elements the stage "p" (at the root, effective
 * extents) writes in one iteration of its loop at nest position "pos",
 * with parameters as for sch_region_compute.  Return 0, or -1. */
int sch_write_region(sch_state *st, const sch_stage *p, int pos, sch_region *r);
/* Compute the region of the shared stage "producer" computed at nest
 * position "pos" of "x" (effective extents), itself computed at a loop
 * of a root stage R inside R's thread loops: the union over all threads
 * of the block of what each needs, so that its shape and origin are the
 * same for every thread.  The box is a function of the parameters q<k>
 * (x's loops up to "pos") and w<p> (R's leaf at nest position p, for
 * those enclosing x's attach loop that are not bound to a thread index;
 * those bound to one are projected out).  Return 0, or -1 with a
 * refusal. */
int sch_region_block(sch_state *st, int producer, const sch_stage *x, int pos,
	sch_region *r);
/* Give stage "s" the extents of its region "shape": its spatial axes span
 * the region, and split and fused loops follow. */
void sch_region_set_extents(sch_stage *s, const int64_t *shape);
/* Fill "eff" with stage "x", computed at a loop of a root stage, with the
 * extents of the region it computes there (eff->iters is allocated; the
 * caller frees it).  Return 0, or -1 with a refusal. */
int sch_region_effective(sch_state *st, int x, sch_stage *eff);
void sch_region_free(sch_region *r);
/* Return whether iter "it" of consumer "c" is a parameter q<it> of its
 * regions at nest position "pos": fixed by the loops up to "pos", and the
 * nearest such iter to the axes. */
bool sch_region_param(const sch_stage *c, int it, int pos);

#endif
