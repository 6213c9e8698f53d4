/* What the CPU rules (tuner/sketch.c) and the GPU rules
 * (tuner/sketch_gpu.c) share: the analysis of a stage, the sketches, the
 * space, and the helpers that draw decisions and apply primitives to
 * iters by index (tuner/sketch_util.c).  Internal to tuner/sketch*.c. */
#ifndef TESSEL_TUNER_SKETCH_IMPL_H
#define TESSEL_TUNER_SKETCH_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "schedule/state.h"
#include "tuner/sketch.h"

/* More than the CPU rules can add for one op (14). */
#define MAX_SKETCHES 16
#define MAX_AXES SCH_MAX_ARGS
#define QNAME 160

typedef enum stage_role {
	ROLE_INLINE,    /* elementwise, not an output */
	ROLE_TILE,      /* a reduction with data reuse */
	ROLE_REDUCE,    /* another reduction */
	ROLE_SIMPLE     /* an elementwise output */
} stage_role;

typedef struct stage_info {
	const char *name;
	stage_role role;
	bool is_output;
	bool inline_optional;     /* a select, costly math, or several readers:
	                           * recomputing it in every reader can cost
	                           * more than a copy */
	int ndim, nraxes;
	int64_t spatial;          /* product of the spatial extents */
	int64_t reduction;        /* product of the reduction extents */
	int64_t bytes;            /* of its buffer: spatial times the element size */
	int fusable_consumer;     /* the only reader, elementwise with identity
	                           * indices: a stage index, or -1 */
	const char *pack_input;   /* ROLE_TILE: an input the stage's vector
	                           * axis reads across its rows, or NULL */
	int pack_dim;             /* the dimension of it that axis indexes */
	int lane_axis;            /* ROLE_TILE: where the innermost spatial
	                           * axis's extent is no multiple of the
	                           * vector lanes, the innermost spatial axis
	                           * whose extent is (the output channels of an
	                           * NCHW conv over 7x7 pixels), else -1 */
	const char *lane_axis_name;  /* its name, or NULL */
	const char *lane_pack_input; /* an input that axis reads across its
	                           * rows, or NULL */
	int lane_pack_dim;        /* the dimension of it that axis indexes */
	const char *panel_input;  /* ROLE_TILE: an input whose panels tiles
	                           * along some spatial axis share, or NULL */
	uint64_t panel_axes;      /* the spatial axes that index it */
	bool reduce_across_rows;  /* its innermost reduction axis indexes no
	                           * access's contiguous last dimension (a
	                           * sum over the rows of a matrix) */
	int dot_group;            /* ROLE_TILE: 2 for a sum of products of two
	                           * bf16 tensors on a target whose vdpbf16ps
	                           * sums them in pairs, or of two i8 or u8
	                           * tensors into i32 on AVX2 (vpmaddwd), 4
	                           * for one of two i8 or u8 tensors into i32
	                           * where vpdpbusd sums them in quads, else 0 */
	const char *dot_name;     /* the groups, in a sketch's name: "bf16
	                           * pairs", "i8 pairs" or "i8 quads" */
	const char *group_input;  /* dot_group: the input whose elements the
	                           * vector lanes along the innermost spatial
	                           * axis multiply, when that axis alone
	                           * indexes one of its dimensions and an
	                           * innermost reduction axis whose extent the
	                           * group divides another, else NULL */
	int group_dim, group_lane_dim;  /* those two dimensions */
	int group_raxis;          /* that reduction axis (among the raxes) */
	int64_t group_reuse;      /* the product of the spatial extents that do
	                           * not index it: how often the tiles read
	                           * each of its elements */
	const char *lane_group_input;   /* the same for lanes along lane_axis */
	int lane_group_dim, lane_group_lane_dim, lane_group_raxis;
	int64_t lane_group_reuse;
	int block_axis;           /* no reduction, and its innermost spatial
	                           * axis reads an input across its rows (a
	                           * transposition): the spatial axis that
	                           * indexes that input's contiguous last
	                           * dimension, else -1 */
} stage_info;

/* How a sketch tiles the stages with reuse: not at all, the CPU's two
 * SSRSRS forms (tuner/sketch.c), the GPU's three SSSRRSRS forms
 * (tuner/sketch_gpu.c). */
typedef enum tile_mode {
	TILE_NONE,
	TILE_CACHE,
	TILE_IN_PLACE,
	TILE_GPU_SHARED,   /* in place, the reused inputs staged in shared memory */
	TILE_GPU_LOCAL,    /* the accumulator in registers (cache_write local) */
	TILE_GPU_SHARED_LOCAL /* both: a register accumulator fed by shared tiles */
} tile_mode;

typedef struct sketch {
	tile_mode tile;
	bool rfactor;
	bool pack;                /* CPU: inputs read across their rows by
	                           * the vector lanes of a tile are packed */
	bool panel;               /* CPU: a panel of an input that tiles
	                           * share is copied next to them */
	bool block;               /* CPU: stages that read an input across
	                           * its rows are blocked along both axes */
	bool lanes_moved;         /* CPU: the vector lanes of a tile run along
	                           * its stage's lane_axis, its accumulator
	                           * stored with that axis last */
	bool dot_groups;          /* CPU: the tiles of the stages with a
	                           * dot_group sum their products in groups
	                           * (annotate dot_pairs, dot_quads) */
	bool groups_packed;       /* CPU, with dot_groups: the group_input is
	                           * read through a copy that stores each
	                           * lane's group side by side, lane after
	                           * lane (in place of the pack of that input) */
	bool cross_thread;        /* GPU: reductions without reuse across the
	                           * threads of a block */
	char name[256];
} sketch;

struct tune_space {
	const tune_task *task;
	int nstages;
	stage_info *info;         /* per compute stage of the op, in order */
	int nsketches;
	sketch sketches[MAX_SKETCHES];
	int cores;
	int vector_bytes;
	bool gpu;                 /* the task's target runs bound loops */
	int64_t max_threads;      /* GPU: per block */
	int64_t shared_bytes;     /* GPU: per block */
	bool launch_bounds;       /* CUDA: kernels may declare the blocks
	                           * that should fit a multiprocessor */
};

/* The blocks per multiprocessor a CUDA kernel may ask for
 * (min_blocks_per_sm), 0 for none: GPU samples draw from the others,
 * mutation redraws from all. */
#define SK_MIN_BLOCKS_STEPS 3
static const int64_t sk_min_blocks_steps[SK_MIN_BLOCKS_STEPS] = { 0, 2, 4 };

/* The live spatial and reduction iters of a stage, in nest order. */
typedef struct sk_nest {
	int nspatial, nreduce;
	int spatial[MAX_AXES], reduce[MAX_AXES];
} sk_nest;

/* Return a random number in 0.."n"-1 (0 when "n" <= 0), and whether a
 * draw falls under "percent" percent. */
int64_t sk_below(uint64_t *rng, int64_t n);
bool sk_chance(uint64_t *rng, int percent);

/* Return a random divisor of "n" that is at most "max" and, when one
 * exists, a multiple of "multiple" (1: any). */
int64_t sk_random_divisor(uint64_t *rng, int64_t n, int64_t max, int64_t multiple);

/* Draw a perfect factorization of "n" into "levels" factors, outermost
 * first, into "f": level l (but the outermost) at most "max"[l], the
 * innermost a multiple of "inner_multiple" where possible. */
void sk_perfect_tile(uint64_t *rng, int64_t n, int levels, const int64_t *max,
	int64_t inner_multiple, int64_t *f);

/* Write the qualified name "STAGE.LOOP" of iter "iter" of stage "s". */
void sk_qname(const sch_state *st, int s, int iter, char buf[QNAME]);

/* Split iter "iter" of stage "s" by "factor"; store the outer and inner
 * iters.  Return 0 or -1. */
int sk_split_iter(sch_state *st, int s, int iter, int64_t factor, int *outer, int *inner);

/* Put the "n" iters "iters" of stage "s" in this order, in the positions
 * they occupy: one reorder, or, beyond the arguments a step holds, a swap
 * per misplaced loop. */
int sk_reorder_iters(sch_state *st, int s, const int *iters, int n);

/* Fuse the "n" adjacent iters "iters" of stage "s" (outermost first) and
 * return the fused iter, or -1. */
int sk_fuse_iters(sch_state *st, int s, const int *iters, int n);

/* Apply an optional annotation primitive "prim" to iter "iter" of "s":
 * a refusal leaves the schedule as it was. */
void sk_try_annotate(sch_state *st, int s, int iter,
	int (*prim)(sch_state *, const char *));

/* Return the index of the stage of "st" called "name", or -1 (no error). */
int sk_stage_named(const sch_state *st, const char *name);

/* Run the stage-making primitive "make" and return the new stage, or -1. */
int sk_make_stage(sch_state *st, int (*make)(sch_state *, const char *, const char *),
	const char *a, const char *b);
/* cache_write as a stage-making primitive (sk_make_stage). */
int sk_do_cache_write(sch_state *st, const char *stage, const char *scope);

/* Fill "n" with the live spatial and reduction iters of stage "s", in
 * nest order; -1 when there are more than MAX_AXES of one kind. */
int sk_nest_of(const sch_state *st, int s, sk_nest *n);

/* Drop the spatial loops of extent 1 from "n": tiling leaves them where
 * they are. */
void sk_drop_unit_loops(const sch_state *st, int s, sk_nest *n);

/* Inline the elementwise stages of "sp" that are not outputs into the
 * fresh "st" (those whose inlining is optional half of the time); mark
 * them in "skip". */
void sk_inline_elementwise(const tune_space *sp, sch_state *st, uint64_t *rng, bool *skip);

/* The GPU rules (tuner/sketch_gpu.c): add the sketches of "sp", and
 * apply sketch "k" with random decisions to the fresh "st". */
void sk_gpu_add_sketches(tune_space *sp);
int sk_gpu_apply(const tune_space *sp, const sketch *k, sch_state *st, uint64_t *rng);

#endif
