/* A GPU search-space rule (tuner/gpu_redundant.c): code of a kernel
 * outside its thread loops runs in every thread of a block (codegen/
 * gpu_c.c), so a private stage computed at a loop outside them, such as
 * a register tile moved by a mutation from the innermost thread loop to
 * the block loop, is computed whole by each thread.  The result is
 * right and the work is multiplied by the block's threads: on an H200,
 * 7 of 16 candidates of one round of matmul 4096^3 were such programs,
 * at 0.7 to 3.2 s a run against 8.2 ms for the best.  The tuner leaves
 * them out of its GPU populations. */
#ifndef TESSEL_TUNER_GPU_REDUNDANT_H
#define TESSEL_TUNER_GPU_REDUNDANT_H

#include <stdbool.h>

#include "ir/loop.h"

/* Stores a thread of a block may make outside the thread loops of its
 * kernel, whatever it makes inside them (a few initializations). */
#define TUNE_GPU_REDUNDANT_SLACK 64

/* Return whether a kernel of "p" (a top-level statement, as
 * codegen/gpu_c.c splits them) has thread loops and makes more stores
 * per thread outside them than TUNE_GPU_REDUNDANT_SLACK and than inside
 * them: the work of the block repeated by each of its threads.  Loops of
 * extents that are not constants count once. */
bool tune_gpu_repeats_work_per_thread(const loop_prog *p);

#endif
