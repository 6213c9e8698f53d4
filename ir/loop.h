/* Loop IR: how an op is computed.  Lowering (schedule/lower.c) turns a
 * schedule state into a loop program; the C-family printers (codegen/)
 * turn a loop program into source; the tuner reads features from it.
 *
 * A program is a tree of statements over buffers.  Loops carry their kind
 * (serial, parallel, vectorized, unrolled, or bound to a GPU block/thread
 * index); buffers carry their scope (global arguments and temporaries,
 * shared, local).  Every node of a program lives in the program's arena. */
#ifndef TESSEL_IR_LOOP_H
#define TESSEL_IR_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/arena.h"
#include "tessel/te.h"

typedef enum loop_scope {
	LOOP_GLOBAL,   /* kernel argument or heap temporary */
	LOOP_SHARED,   /* GPU shared memory (one copy per block) */
	LOOP_LOCAL     /* registers / stack (one copy per thread) */
} loop_scope;

typedef struct loop_buffer {
	const char *name;
	tessel_dtype dtype;
	int ndim;
	int64_t shape[TESSEL_MAX_DIMS];
	int64_t strides[TESSEL_MAX_DIMS];  /* in elements; padded by storage_align */
	loop_scope scope;
	int arg;          /* position among the kernel arguments, or -1 */
	bool is_output;
	bool fenced;      /* shared: its maker placed its barriers (cross-thread
	                   * reductions); loop_insert_barriers adds none */
	bool stream;      /* an output stored with non-temporal stores where
	                   * the code generator can (schedule/stream.c) */
	bool pinned;      /* local: each vector stored in it is kept in a
	                   * register (ir/loop_pin_loads.c) */
} loop_buffer;

typedef struct loop_var {
	const char *name;  /* unique in its program */
	int id;
} loop_var;

typedef enum loop_expr_kind {
	LX_INT, LX_FLOAT, LX_BOOL, LX_VAR, LX_LOAD,
	LX_UNARY, LX_BINARY, LX_SELECT, LX_CAST
} loop_expr_kind;

typedef struct loop_expr loop_expr;
struct loop_expr {
	loop_expr_kind kind;
	tessel_dtype dtype;   /* the value's type; integer index math is i64 */
	union {
		int64_t ival;
		double fval;
		loop_var *var;
		struct {
			loop_buffer *buf;
			int n;
			loop_expr **index;
		} load;
		struct {
			tessel_unary op;
			loop_expr *a;
		} un;
		struct {
			tessel_binary op;
			loop_expr *a, *b;
		} bin;
		struct {
			loop_expr *cond, *then_, *else_;
		} sel;
		struct {
			tessel_dtype to;
			loop_expr *a;
		} cast;
	} u;
};

typedef enum loop_kind {
	LOOP_SERIAL, LOOP_PARALLEL, LOOP_VECTORIZED, LOOP_UNROLLED,
	LOOP_BLOCK_X, LOOP_BLOCK_Y, LOOP_BLOCK_Z,
	LOOP_THREAD_X, LOOP_THREAD_Y, LOOP_THREAD_Z,
	LOOP_VTHREAD,
	LOOP_KIND_COUNT
} loop_kind;

typedef enum loop_stmt_kind {
	LS_FOR, LS_SEQ, LS_STORE, LS_IF, LS_ALLOC, LS_BARRIER, LS_PREFETCH
} loop_stmt_kind;

typedef struct loop_stmt loop_stmt;
struct loop_stmt {
	loop_stmt_kind kind;
	union {
		struct {
			loop_var *var;
			loop_expr *min, *extent;
			loop_kind kind;
			int unroll_limit;    /* auto-unroll annotation, 0 when none */
			/* on a loop bound to a block index: blocks of its
			 * kernel that should fit a multiprocessor at once
			 * (CUDA's __launch_bounds__ minimum, which caps the
			 * registers per thread), 0 when none */
			int min_blocks;
			/* prefetch annotation (schedule/prefetch.c), until
			 * loop_expand_prefetch turns it into LS_PREFETCH
			 * statements: each iteration fetches what iteration
			 * var + prefetch_distance reads of this buffer; or NULL */
			loop_buffer *prefetch;
			int prefetch_distance;
			/* annotate dot_pairs or dot_quads (schedule/annotate.c):
			 * a reduction loop of 2 or 4 iterations, its extent here,
			 * whose products the code generator may sum in one
			 * instruction of groups (AVX512 BF16's vdpbf16ps, AVX512
			 * VNNI's vpdpbusd); 0 for none.  A hint: the loop's
			 * meaning is unchanged */
			int dot_group;
			loop_stmt *body;
		} for_;
		struct {
			int n;
			loop_stmt **items;
		} seq;
		struct {
			loop_buffer *buf;
			int n;
			loop_expr **index;
			loop_expr *value;
			const char *stage;   /* the stage this store computes */
		} store;
		struct {
			loop_expr *cond;
			loop_stmt *then_, *else_;  /* else_ may be NULL */
		} if_;
		struct {
			loop_buffer *buf;
			loop_stmt *body;
		} alloc;
		struct {              /* a hint: bring the cache line holding
		                       * buf[index] closer; no effect on values */
			loop_buffer *buf;
			int n;
			loop_expr **index;
		} prefetch;
	} u;
};

typedef struct loop_prog {
	te_arena arena;
	const char *name;
	int nargs;
	loop_buffer **args;   /* inputs, then outputs, in the op's order */
	int nvars;
	loop_stmt *body;
} loop_prog;

/* ---- construction (ir/loop.c) ------------------------------------------ */

loop_prog *loop_prog_new(const char *name);
void loop_prog_free(loop_prog *p);
/* Return a copy of "p" whose statements and expressions are its own, to
 * be changed without changing "p"; its buffers, variables and names are
 * those of "p", which must outlive it.  NULL when memory runs out. */
loop_prog *loop_prog_clone(const loop_prog *p);

loop_buffer *loop_buffer_new(loop_prog *p, const char *name, tessel_dtype dt,
	int ndim, const int64_t *shape, loop_scope scope);
/* Return a new variable named "base" made unique in "p". */
loop_var *loop_var_new(loop_prog *p, const char *base);

loop_expr *lx_int(loop_prog *p, int64_t v);
loop_expr *lx_float(loop_prog *p, double v, tessel_dtype dt);
loop_expr *lx_bool(loop_prog *p, bool v);
loop_expr *lx_var(loop_prog *p, loop_var *v);
loop_expr *lx_load(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index);
loop_expr *lx_unary(loop_prog *p, tessel_unary op, loop_expr *a, tessel_dtype dt);
/* Integer index arithmetic on i64 values; constants fold on the spot. */
loop_expr *lx_binary(loop_prog *p, tessel_binary op, loop_expr *a, loop_expr *b,
	tessel_dtype dt);
loop_expr *lx_add(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_sub(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_mul(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_div(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_mod(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_min(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_max(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_cmp(loop_prog *p, tessel_binary op, loop_expr *a, loop_expr *b);
loop_expr *lx_and(loop_prog *p, loop_expr *a, loop_expr *b);
loop_expr *lx_select(loop_prog *p, loop_expr *c, loop_expr *a, loop_expr *b,
	tessel_dtype dt);
loop_expr *lx_cast(loop_prog *p, tessel_dtype to, loop_expr *a);

loop_stmt *ls_for(loop_prog *p, loop_var *v, loop_expr *min, loop_expr *extent,
	loop_kind kind, loop_stmt *body);
loop_stmt *ls_seq(loop_prog *p, int n, loop_stmt *const *items);
/* Append "s" to the sequence "seq" (made by ls_seq). */
void ls_seq_append(loop_prog *p, loop_stmt *seq, loop_stmt *s);
loop_stmt *ls_store(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index,
	loop_expr *value, const char *stage);
loop_stmt *ls_if(loop_prog *p, loop_expr *cond, loop_stmt *then_, loop_stmt *else_);
loop_stmt *ls_alloc(loop_prog *p, loop_buffer *b, loop_stmt *body);
loop_stmt *ls_barrier(loop_prog *p);
loop_stmt *ls_prefetch(loop_prog *p, loop_buffer *b, int n, loop_expr *const *index);

/* ---- reading ------------------------------------------------------------- */

const char *loop_kind_name(loop_kind k);
const char *loop_scope_name(loop_scope s);
/* Print "p" in the loop-IR text form (stable; golden-tested); malloc'ed. */
char *loop_prog_print(const loop_prog *p);
/* Return "e" with each variable from[j] (of "n") replaced by to[j]: new
 * nodes in "p" where a variable changes, "e"'s own where none does. */
loop_expr *loop_expr_rename(loop_prog *p, loop_expr *e, int n,
	const loop_var *const *from, loop_var *const *to);
/* Return whether the variable "v" occurs in "e", load indices included. */
bool loop_expr_uses_var(const loop_expr *e, const loop_var *v);
/* Return whether "e" reads a buffer anywhere. */
bool loop_expr_has_load(const loop_expr *e);
/* Return true when "e" loads from "b" (indices of loads included). */
bool loop_expr_loads(const loop_expr *e, const loop_buffer *b);
/* Return true when "a" and "b" are the same expression: the same tree of
 * operators, constants, variables and loads (ir/loop_simplify.c). */
bool loop_expr_equal(const loop_expr *a, const loop_expr *b);
/* Check the invariants of "p": variables defined before use and bound
 * once, loads and stores with the buffer's rank, allocations enclosing
 * their uses, types consistent.  Return 0, or -1 with the first violation
 * in "ctx" (TESSEL_ERR_INTERNAL). */
int loop_verify(tessel_ctx *ctx, const loop_prog *p);
/* Simplify "p" in place: fold constants, simplify affine index arithmetic,
 * tighten loop bounds, drop conditions that always hold and branches that
 * never run (ir/loop_simplify.c). */
void loop_simplify(loop_prog *p);
/* Place the barriers the shared buffers of "p" need, in place
 * (ir/loop_barriers.c has the rules).  Return 0, or -1 with the error in
 * "ctx" when a barrier would lie where not every thread of a block
 * reaches it (a thread loop, a condition on a thread index). */
int loop_insert_barriers(tessel_ctx *ctx, loop_prog *p);
/* Split loops whose bodies are guarded by conditions on their variable
 * into guard-free main parts and guarded rests, or unswitch them
 * (ir/loop_partition.c); run loop_simplify after it. */
void loop_partition(loop_prog *p);
/* After loop_partition and loop_simplify: split the innermost vector
 * loops still guarded on their variable (bounds known at run time) into
 * a whole-vector case and scalar parts; return how many (run
 * loop_simplify after it when not 0). */
int loop_partition_lanes(loop_prog *p);
/* After loop_partition and loop_simplify: unswitch parallel loops on
 * the conditions of integer selects that a whole iteration
 * decides, the selects decided in each copy; return how many bodies (run
 * loop_simplify and loop_partition again when not 0). */
int loop_specialize(loop_prog *p);
/* Replace every prefetch annotation of a loop of "p" by prefetches of
 * the cache lines (of "line_bytes") that the loop's body reads from the
 * buffer "distance" iterations later, at the top of the body and under a
 * test that that iteration exists (ir/loop_prefetch.c).  Reads whose
 * indices it cannot bound (loads in indices) are not prefetched, and
 * vectorized or GPU-bound loops prefetch nothing.  Return the number of
 * loops given prefetches; run loop_simplify after it when not 0. */
int loop_expand_prefetch(loop_prog *p, int line_bytes);
/* Move the tiles (of at most "max_tile_bytes") that a serial loop
 * updates in every iteration (an accumulation in place: X[I(t)] =
 * X[I(t)] + f over unrolled and vectorized loops t) into local buffers
 * read before the loop and written after it, so that the C compiler can
 * keep them in registers (ir/loop_promote.c has the rules).  Programs
 * with GPU-bound loops are left alone.  Return the number of buffers
 * promoted; run loop_simplify after it when not 0. */
int loop_promote_accumulators(loop_prog *p, int64_t max_tile_bytes);
/* In serial loops whose bodies are register tiles (unrolled and
 * vectorized loops of constant bounds around stores into local buffers),
 * read each vector load that some unrolled loop repeats once per
 * iteration into a pinned local buffer (ir/loop_pin_loads.c), while the
 * tile and the pinned vectors leave two of the target's "registers"
 * vectors of "vector_bytes" free.  Return the number of loads pinned;
 * run loop_simplify after it when not 0. */
int loop_pin_loads(loop_prog *p, int vector_bytes, int registers);

#endif
