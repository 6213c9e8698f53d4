/* The search space of a task without templates (tuner/sketch.c;
 * docs/tuner.md).  Rules that look only at the structure of the op's
 * stages (reductions, data reuse, elementwise producers and consumers,
 * extents) derive sketches: schedules with their decisions left open.
 * Sampling a sketch fills the decisions (tile factors, compute locations,
 * parallel extents, unroll limits, vector loops) at random and applies the
 * primitives, so that every candidate is a schedule state whose trace
 * replays on a fresh state (schedule/trace.h).  Mutation works on traces,
 * so that any recorded trace, including those of earlier runs read from
 * the database, can be a parent.
 *
 * CPU rules (Ansor's, Zheng et al., OSDI 2020, section 4.1, in tessel's
 * primitives):
 *   - inline elementwise stages that are not outputs;
 *   - multi-level tiling "SSRSRS" of stages with data reuse, with
 *     cache_write of the accumulator, or fusion of an elementwise consumer
 *     into the tile (compute_at);
 *   - rfactor of reductions whose reduction dominates and whose spatial
 *     extent is small;
 *   - outer spatial loops fused until there is enough parallel work, then
 *     parallel; innermost contiguous loops vectorized; unroll limits.
 * GPU rules, for a task on a GPU target (tuner/sketch_gpu.c): inlining;
 * multi-level tiling "SSSRRSRS" of stages with reuse, blocks and threads
 * bound, the reused inputs staged in shared memory or the accumulator in
 * registers; cross-thread reductions; blocks and threads for every other
 * stage, within the device's threads per block. */
#ifndef TESSEL_TUNER_SKETCH_H
#define TESSEL_TUNER_SKETCH_H

#include <stdint.h>

#include "schedule/state.h"
#include "schedule/trace.h"
#include "tuner/task.h"

typedef struct tune_space tune_space;

/* Analyse the op of "task" and derive its sketches.  Return NULL with the
 * reason in task->ctx when the op cannot be analysed (out of memory). */
tune_space *tune_space_new(const tune_task *task);
void tune_space_free(tune_space *sp);

/* The number of sketches of "sp" (at least 1: the default schedule, with
 * at least parallel and vector decisions, is always one) and a one-line
 * description of sketch "i" for logs ("C: SSRSRS, cache_write; A_pad:
 * inline"). */
int tune_space_num_sketches(const tune_space *sp);
const char *tune_space_sketch_name(const tune_space *sp, int i);

/* Sample sketch "sketch" (-1: one at random) with random decisions drawn
 * from "rng".  Return a new state of the task's op whose trace is the
 * candidate (the caller frees it), or NULL when no legal sample was found
 * in a bounded number of attempts (the refusal is in task->ctx). */
sch_state *tune_space_sample(tune_space *sp, int sketch, uint64_t *rng);

/* Return a new state made from the trace "parent" by changing one or a
 * few of its decisions: a tile factor (keeping the product of a tiled
 * loop's factors legal), an unroll limit, a compute location, how many
 * outer loops are fused for parallelism; or (one in ten) by moving a
 * stage between the root and a loop (a compute_at dropped or appended).
 * NULL when no legal mutation was found in a bounded number of
 * attempts. */
sch_state *tune_space_mutate(tune_space *sp, const sch_trace *parent, uint64_t *rng);

#endif
