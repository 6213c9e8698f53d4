/* Features of a lowered loop program for the cost model (tuner/features.c;
 * every feature, with its index, is listed in docs/cost-model.md).
 *
 * Per store statement (the unit Ansor's features describe: Zheng et al.,
 * "Ansor", OSDI 2020, appendix B) a fixed-length vector: arithmetic by
 * kind times the store's trip count, the structure of its enclosing loops
 * (the innermost TUNE_LOOP_SLOTS loops: extent, kind, position, working
 * set), parallel, vector and unroll totals, and for each buffer it touches
 * (the stored one, then up to TUNE_BUF_SLOTS - 1 loaded ones, largest
 * first) bytes accessed, unique bytes, cache lines, strides, reuse and
 * allocation size.  Footprints come from interval arithmetic over the
 * index expressions with the loop ranges.
 *
 * Per program a fixed-length vector: program totals, sums of the
 * additive store features over all stores, the vectors of the
 * TUNE_PROGRAM_STORES heaviest stores (by operations and accesses), and
 * the bytes stored with non-temporal stores (the `stream` primitive).  This
 * is the vector the model is trained on: one row per candidate, so that
 * XGBoost's own objectives (squared error, pairwise ranking) apply
 * without a custom gradient.
 *
 * Every value is log2(1 + x) of a non-negative raw quantity. */
#ifndef TESSEL_TUNER_FEATURES_H
#define TESSEL_TUNER_FEATURES_H

#include "ir/loop.h"
#include "runtime/target.h"

/* Bumped whenever a feature changes meaning: models trained on another
 * version are not to be loaded (tuner/model.c checks it). */
#define TUNE_FEATURES_VERSION 2

#define TUNE_LOOP_SLOTS 5
#define TUNE_BUF_SLOTS 4
#define TUNE_PROGRAM_STORES 3

/* One enclosing loop: slot 0 is the innermost loop of the store. */
enum tune_loop_feature {
	TL_EXTENT,        /* iterations (the largest, for bounds that vary) */
	TL_SERIAL,        /* kind one-hot; GPU bindings count as serial */
	TL_PARALLEL,
	TL_VECTORIZED,
	TL_UNROLLED,
	TL_POSITION,      /* depth from the outermost loop (0 = outermost) */
	TL_WORKING_SET,   /* unique bytes of all the store's buffers under one
	                   * iteration of the loop enclosing this one (this
	                   * loop and the loops inside it varying) */
	TL_COUNT
};

/* One buffer the store touches: slot 0 the stored buffer. */
enum tune_buf_feature {
	TB_PRESENT,
	TB_READ,          /* loaded by the store's value */
	TB_WRITE,         /* stored */
	TB_BYTES,         /* bytes accessed: accesses * trip count * element size */
	TB_UNIQUE_BYTES,  /* footprint over all enclosing loops */
	TB_LINES,         /* cache lines of that footprint */
	TB_TASK_BYTES,    /* footprint under one iteration of the outermost
	                   * parallel loop (the whole footprint without one) */
	TB_STRIDE,        /* elements between consecutive iterations of the
	                   * innermost loop (0: invariant in it) */
	TB_VARYING_STRIDE,/* the same for the innermost loop the access varies in */
	TB_REUSE,         /* 1 when some enclosing loop leaves the access invariant */
	TB_REUSE_COUNT,   /* extent of the innermost such loop */
	TB_REUSE_ITERS,   /* iterations between reuses: product of the extents
	                   * of the loops inside it */
	TB_REUSE_BYTES,   /* unique bytes of all the store's buffers between
	                   * reuses (under one iteration of the reuse loop) */
	TB_ALLOCATED,     /* allocated inside the program (cache stages) */
	TB_LOCAL,         /* that allocation is in local scope */
	TB_ALLOC_BYTES,   /* its allocation size */
	TB_COUNT
};

enum tune_store_feature {
	TF_FLOAT_ADDSUB,  /* per iteration times the trip count: */
	TF_FLOAT_MUL,
	TF_FLOAT_DIV,
	TF_FLOAT_MATH,    /* exp log sqrt rsqrt tanh erf sigmoid pow */
	TF_FLOAT_CMP,     /* comparisons, min, max, abs, floor, select */
	TF_CAST,
	TF_INT_ADDSUB,    /* integer arithmetic, index expressions included */
	TF_INT_MUL,
	TF_INT_DIVMOD,
	TF_INT_CMP,       /* integer comparisons, min, max, logic */
	TF_LOOP_ITERS,    /* loop iterations run around the store: for each
	                   * serial or parallel loop, how often its body starts */
	TF_VECTOR_OPS,    /* float operations / effective lanes (below) */
	TF_L1_MISSES,     /* cache lines fetched into L1, estimated: the lines
	                   * under the outermost loop whose working set fits the
	                   * target's L1, times the iterations around it */
	TF_L2_MISSES,     /* the same for L2 */
	TF_TRIP_COUNT,    /* executions of the store */
	TF_DEPTH,         /* enclosing loops */
	TF_GUARDS,        /* enclosing conditionals */
	TF_INNER_GUARDS,  /* enclosing conditionals inside the innermost loop */
	TF_ELEM_BYTES,    /* element size of the stored buffer */
	TF_ACCUMULATE,    /* 1 when the value reads the element it stores */
	TF_LOADS,         /* loads per iteration */
	TF_PARALLEL_PRODUCT, /* product of the extents of parallel loops */
	TF_PARALLEL_LOOPS,
	TF_PARALLEL_POSITION,/* 1 + depth of the outermost parallel loop; 0: none */
	TF_PARALLEL_BALANCE, /* tasks / (rounds * cores) of the outermost
	                      * parallel loop on the target's cores */
	TF_TASK_ITERS,    /* trip count / parallel product */
	TF_VECTOR_LANES,  /* product of the extents of vectorized loops */
	TF_VECTOR_INNERMOST, /* 1 when the innermost loop is vectorized */
	TF_VECTOR_REGS,   /* lanes * element size / the target's vector bytes */
	TF_UNROLL_PRODUCT,/* product of the extents of unrolled loops */
	TF_UNROLL_LOOPS,
	TF_AUTO_UNROLL,   /* the largest auto-unroll limit of an enclosing loop */
	TF_VECTOR_CONTIGUOUS, /* 1 when every access is contiguous or invariant
	                       * in the innermost vectorized loop (what the
	                       * code generator emits as vector types) */
	TF_INNER_STRIDED, /* buffers accessed with a stride > 1 element in the
	                   * innermost loop */
	TF_EFFECTIVE_LANES, /* lanes the innermost loop likely runs with: its
	                     * extent (at most the target's vector) when it is
	                     * vectorized and contiguous, or serial, unguarded
	                     * inside, with the stored element varying
	                     * contiguously and every load contiguous or
	                     * invariant (what the C compiler vectorizes
	                     * itself); else 1 */
	TF_UNROLL_INNER_LOOPS, /* loops not unrolled inside the outermost
	                        * unrolled loop (unrolling that does not pay) */
	TF_LOOP0,         /* TUNE_LOOP_SLOTS slots of TL_COUNT features */
	TF_BUF0 = TF_LOOP0 + TUNE_LOOP_SLOTS * TL_COUNT, /* TUNE_BUF_SLOTS slots of TB_COUNT */
	TUNE_STORE_FEATURES = TF_BUF0 + TUNE_BUF_SLOTS * TB_COUNT
};

/* The store features that add up over stores (the program sums). */
#define TUNE_SUM_FEATURES (TF_L2_MISSES + 1)

enum tune_program_feature {
	TP_STORES,
	TP_LOOPS,
	TP_ALLOCS,
	TP_ALLOC_BYTES,      /* sum of the allocation sizes */
	TP_PARALLEL_LAUNCHES,/* times an outermost parallel loop starts */
	TP_FLOAT_OPS,        /* all float operations of all stores */
	TP_BYTES,            /* bytes accessed by all stores */
	TP_UNIQUE_BYTES,     /* sum over stores and buffers */
	TP_LINES,            /* sum over stores and buffers */
	TP_TARGET_VECTOR_BYTES,
	TP_TARGET_CORES,
	TP_TARGET_L1,
	TP_TARGET_L2,
	TP_TARGET_L3,
	TP_SUM0,             /* TUNE_SUM_FEATURES sums over all stores */
	TP_STORE0 = TP_SUM0 + TUNE_SUM_FEATURES, /* TUNE_PROGRAM_STORES store vectors */
	TP_STREAM_BYTES = TP_STORE0 + TUNE_PROGRAM_STORES * TUNE_STORE_FEATURES,
	                     /* bytes stored with non-temporal stores (the
	                      * vector stores of an output under `stream`,
	                      * schedule/stream.c); since version 2 */
	TUNE_PROGRAM_FEATURES
};

/* Stored records are told apart by the length of their vector (tuner/
 * record_features.h): a new version must have a new length.  Version 1
 * had 433 features, version 2 (streaming stores) has 434. */
_Static_assert(TUNE_FEATURES_VERSION == 2 && TUNE_PROGRAM_FEATURES == 434,
	"a new TUNE_FEATURES_VERSION needs a new length, and a new length a new version");

/* The index of feature "f" (enum tune_loop_feature) of loop slot "slot". */
static inline int tune_loop_feature(int slot, int f)
{
	return TF_LOOP0 + slot * TL_COUNT + f;
}

/* The index of feature "f" (enum tune_buf_feature) of buffer slot "slot". */
static inline int tune_buf_feature(int slot, int f)
{
	return TF_BUF0 + slot * TB_COUNT + f;
}

/* Write into "out" (max_stores * TUNE_STORE_FEATURES floats, row-major)
 * the vectors of the first "max_stores" stores of "p" in program order,
 * for the target "t" (its cache line, vector width and cores), and the
 * number of stores of "p" into "nstores" (which may exceed "max_stores").
 * Return 0, or -1 when "p" nests loops deeper than the walk allows (256)
 * or memory runs out. */
int tune_store_features(const loop_prog *p, const rt_cpu_target *t, float *out,
	int max_stores, int *nstores);

/* Write the TUNE_PROGRAM_FEATURES floats of "p" for the target "t" into
 * "out".  Return 0, or -1 as tune_store_features does. */
int tune_program_features(const loop_prog *p, const rt_cpu_target *t, float *out);

/* Write the name of store feature "i" ("loop1.extent", "buf0.unique_bytes")
 * or of program feature "i" ("store0.trip_count") into "buf" of size
 * "len".  Return 0, or -1 when "i" is out of range. */
int tune_store_feature_name(int i, char *buf, size_t len);
int tune_program_feature_name(int i, char *buf, size_t len);

/* Return log2(1 + "x") for "x" >= 0 (0 for smaller or NaN "x"): the
 * scaling of every feature. */
float tune_feature_scale(double x);

#endif
