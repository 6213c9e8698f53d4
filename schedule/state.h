/* The schedule state: for every compute stage of a bound op, the loops
 * that iterate it (derived from its axes by split and fuse), their order,
 * their annotations, and where the stage is computed (at the root, inlined
 * into its consumers, or inside a loop of a consumer).
 *
 * Primitives (one file each in schedule/) check their legality, change the
 * state, and append themselves to the state's trace; a refused primitive
 * records an error in the context and leaves the state unchanged.
 * Lowering (schedule/lower.c) turns a state into a loop program.  The
 * state never holds loop IR: every program is derived by lowering, so
 * replaying a trace on a fresh state is the only way a schedule exists. */
#ifndef TESSEL_SCHEDULE_STATE_H
#define TESSEL_SCHEDULE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/loop.h"
#include "tessel/te.h"

#define SCH_NAME_MAX 64

/* How a loop was made. */
typedef enum sch_origin {
	SCH_AXIS,         /* an axis of the stage (index or reduction variable) */
	SCH_SPLIT_OUTER,  /* parent = outer * factor + inner */
	SCH_SPLIT_INNER,
	SCH_FUSED         /* fused = outer * extent(inner) + inner */
} sch_origin;

typedef struct sch_iter {
	char name[SCH_NAME_MAX];  /* unique within its stage */
	int64_t extent;
	bool reduce;              /* derived from reduction axes */
	bool leaf;                /* a loop of the current nest (not split or fused away) */
	sch_origin origin;
	int axis;                 /* SCH_AXIS: position in axes, then raxes */
	int parent;               /* SCH_SPLIT_*: the split iter */
	int split_outer;          /* an iter split: its children, else -1 */
	int split_inner;
	int outer, inner;         /* SCH_FUSED: the two iters fused */
	int64_t factor;           /* SCH_SPLIT_*: the inner extent */
	int fused_into;           /* an iter fused away: the fused iter, else -1 */
	loop_kind kind;
	int unroll_limit;         /* annotate auto_unroll_max_step */
	int min_blocks;           /* annotate min_blocks_per_sm */
	int dot_group;            /* annotate dot_pairs (2), dot_quads (4) */
	char prefetch[SCH_NAME_MAX];  /* the input it prefetches, or "" */
	int prefetch_distance;    /* iterations ahead (schedule/prefetch.c) */
} sch_iter;

typedef enum sch_attach_kind {
	SCH_ROOT,     /* its own loop nest at the top level */
	SCH_INLINE,   /* substituted into its consumers */
	SCH_AT,       /* computed inside a loop of a consumer, before its body */
	SCH_AFTER     /* computed inside a loop of a producer, after its body */
} sch_attach_kind;

typedef struct sch_stage {
	tessel_stage *te;         /* the compute stage of the op */
	const char *name;
	int niters;
	sch_iter *iters;          /* every loop ever made, live or not */
	int nleaves;
	int *leaves;              /* the loop nest, outermost first */
	sch_attach_kind attach;
	int attach_stage;         /* SCH_AT: the stage whose loop holds this one */
	int attach_iter;          /* SCH_AT: that loop (an iter index) */
	loop_scope scope;         /* where its buffer lives when not at the root */
	int init_iter;            /* decompose_reduction: initialize before this loop, or -1 */
	int64_t align_factor[TESSEL_MAX_DIMS];  /* storage_align per axis, 0 when none */
	int64_t align_offset[TESSEL_MAX_DIMS];
	bool stream;              /* an output stored streaming (schedule/stream.c) */
} sch_stage;

typedef struct sch_trace sch_trace;

typedef struct sch_shared_memo sch_shared_memo;

typedef struct sch_state {
	tessel_ctx *ctx;
	tessel_op *op;            /* bound; retained */
	int nstages;
	sch_stage *stages;        /* the compute stages, in the op's order */
	sch_trace *trace;
	sch_shared_memo *shared_memo;  /* footprints of shared stages, by what
	                           * they depend on (schedule/shared.c) */
} sch_state;

/* Return the default schedule of the bound op "op": one loop per axis,
 * index variables outside reduction variables, every stage at the root. */
sch_state *sch_state_new(tessel_ctx *ctx, tessel_op *op);
void sch_state_free(sch_state *st);

/* Return the stage called "name", or -1 with an error. */
int sch_find_stage(sch_state *st, const char *name);
/* Resolve "STAGE.LOOP" into a stage and a live loop of it; return 0, or
 * -1 with an error naming what is unknown or no longer exists. */
int sch_find_loop(sch_state *st, const char *qualified, int *stage, int *iter);
/* Resolve "STAGE.AXIS" (a spatial index variable of the stage) into a
 * stage and the axis's position; return 0, or -1 with an error that
 * begins with "what". */
int sch_find_axis(sch_state *st, const char *what, const char *qualified,
	int *stage, int *axis);
/* Return the position of iter "iter" in the nest of stage "s", or -1. */
int sch_leaf_pos(const sch_stage *s, int iter);

/* Replace the op of "st" by "op", a rewrite of it (taken): stages keep
 * their schedules by name, except "reset" and stages new in "op", which
 * get the default schedule. */
void sch_state_rebase(sch_state *st, tessel_op *op, const char *reset);
/* Return true when stage "s" still has its default loops. */
bool sch_stage_is_default(const sch_stage *s);

/* Append a new iter to "s" and return its index. */
int sch_add_iter(sch_state *st, sch_stage *s, const sch_iter *it);
/* A copy of the stages of a state, to undo a primitive made of others. */
typedef struct sch_snapshot {
	int nstages;
	sch_stage *stages;
	int nsteps;
} sch_snapshot;

void sch_snapshot_take(const sch_state *st, sch_snapshot *snap);
/* Put "st" back as "snap" found it (and free the snapshot). */
void sch_snapshot_restore(sch_state *st, sch_snapshot *snap);
void sch_snapshot_free(sch_snapshot *snap);

/* Return true when "s" is computed inside a loop of another stage. */
static inline bool sch_is_attached(const sch_stage *s)
{
	return s->attach == SCH_AT || s->attach == SCH_AFTER;
}

/* Return the stage computed after a loop of stage "s" (reverse_compute_at),
 * or -1. */
int sch_stage_after(const sch_state *st, int s);

/* Return a stage that stage "s" reads and that is computed at the same
 * loop as "s" (to serve it, compute_at): "s" cannot move before it does;
 * -1 when there is none. */
int sch_colocated_producer(const sch_state *st, int s);
/* Return true when stage "k" is computed (compute_at) at loop "it" of
 * stage "c" or at a loop of "c" that "it" encloses. */
bool sch_computed_within(const sch_state *st, int k, int c, int it);
/* Return a stage that reads stage "p" (computed at a loop) although it is
 * neither the stage of that loop nor computed within it (so p's buffer
 * does not exist where it reads); -1 when there is none or "p" is not
 * computed at a loop. */
int sch_reader_outside(const sch_state *st, int p);

/* Return true when "name" names an iter of "s" (live or not). */
bool sch_name_used(const sch_stage *s, const char *name);
/* Return true when stage "consumer" reads stage "producer" (both indices),
 * looking through inlined stages. */
bool sch_reads(const sch_state *st, int consumer, int producer);
/* The same for any tensor "t" of the op (an input included). */
bool sch_reads_tensor(const sch_state *st, int consumer, const tessel_stage *t);
/* Return the position of the compute stage made for the op stage "te". */
int sch_stage_of(const sch_state *st, const tessel_stage *te);

/* Record a refusal of "st"'s primitive and return -1. */
int sch_refuse(sch_state *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Return the dtype of the buffer of the computed stage "t" when it is no
 * argument of the kernel: f32 for a reduction into f16 or bf16, whose
 * partial results would otherwise round at every step (the interpreter
 * rounds a stage once, when it is written), else the stage's own; also
 * that of its cross-thread partials (schedule/lower.c). */
tessel_dtype sch_buffer_dtype(const tessel_stage *t);

/* Write into "strides" the strides (in elements) of a buffer of stage
 * "s" with the shape "shape": dense, innermost axis last, each stride
 * raised to the next value k * factor + offset that storage_align asked
 * for its axis. */
void sch_buffer_strides(const sch_stage *s, const int64_t *shape,
	int64_t *strides);

/* Lower "st" into a loop program (schedule/lower.c); NULL with the error
 * in st->ctx when a schedule cannot be lowered. */
loop_prog *sch_lower(sch_state *st);
/* Lower, verify, simplify and verify again (schedule/pipeline.c): the
 * program every printer and test gets. */
loop_prog *sch_program(sch_state *st);

#endif
