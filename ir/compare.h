/* Checking generated code against the reference interpreter
 * (ir/compare.c): the seeds of the random inputs, the relative error of an
 * output and the tolerance of its dtype.  Shared by `tessel run`, `tessel
 * fuzz-sched` and the tuner's measurer, so that all of them see the same
 * inputs for one seed and judge outputs alike. */
#ifndef TESSEL_IR_COMPARE_H
#define TESSEL_IR_COMPARE_H

#include <stdint.h>

#include "tessel/te.h"
#include "tessel/tensor.h"

/* Return the seed for tessel_tensor_fill_random of input "i" of a run with
 * "seed": distinct per input, the same on every machine. */
uint64_t te_input_seed(uint64_t seed, int i);

/* Return max |got - want| / max |want| over all elements (the absolute
 * error when "want" is all zeros); NaN and infinities must match exactly
 * (else the error is infinite).  Integers and bools must be equal (else
 * infinite).  Both tensors are C-ordered with the same dtype and shape. */
double te_rel_error(const tessel_tensor *got, const tessel_tensor *want);

/* te_rel_error over the "n" elements "points" (flat C-order indices) of
 * "got" and "want" only, its scale the largest of those of "want". */
double te_rel_error_at(const tessel_tensor *got, const tessel_tensor *want,
	const int64_t *points, int64_t n);

/* Choose "n" elements of a C-ordered tensor of "ndim" dimensions "shape"
 * (n at most its size) to check a kernel's output at when the whole is
 * too costly to evaluate (ir/interp.h), seeded by "seed": half anywhere,
 * half on its faces (one index first or last, where the tails of tiles
 * and the guards of loops meet), as sorted distinct flat indices into
 * "points".  Return how many were chosen (fewer than "n" when draws
 * coincide). */
int64_t te_check_points(int ndim, const int64_t *shape, int64_t n, uint64_t seed,
	int64_t *points);

/* Which elements of an op's outputs a check compares: every one, or
 * chosen ones when evaluating the op in full would cost too much. */
typedef struct te_check_plan {
	int nout;
	int64_t **points;          /* per output, sorted flat indices; NULL:
	                            * every element of every output */
	int64_t *npoints;
} te_check_plan;

/* The interpreter evaluates about 31 M reduction steps a second on one
 * CPU of the build machine (a large stage on every CPU: ir/interp.c): an
 * op is evaluated in full up to TE_CHECK_FULL_COST steps
 * (te_interp_cost; matmul 1024^3, about 35 s on one CPU), else at chosen
 * elements of each output, about TE_CHECK_POINT_COST steps' worth and at
 * least TE_CHECK_MIN_POINTS (matmul 4096^3: about 15 thousand of 16.8 M,
 * in 3 s against 37 minutes in full). */
#define TE_CHECK_FULL_COST (INT64_C(1) << 30)
#define TE_CHECK_POINT_COST (INT64_C(1) << 26)
#define TE_CHECK_MIN_POINTS 1024

/* Compute the interpreter's outputs "ref" of the bound op "op" on
 * "inputs" for checking a kernel: in full when te_interp_cost(op) is at
 * most "full_cost" (0: TE_CHECK_FULL_COST), else only at the elements
 * te_check_points chooses for each output (seeded by "seed"), which
 * "plan" then lists.  Return 0, or -1 with the error in the op's context
 * or "out of memory". */
int te_check_reference(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *ref, int64_t full_cost, uint64_t seed, te_check_plan *plan);
/* The relative error of output "i" of a kernel, "got", against "ref",
 * over the elements "plan" compares (te_rel_error, te_rel_error_at). */
double te_check_error(const te_check_plan *plan, int i, const tessel_tensor *got,
	const tessel_tensor *ref);
/* The number of elements of output "i" that "plan" compares, or -1 for
 * every one. */
int64_t te_check_count(const te_check_plan *plan, int i);
void te_check_plan_free(te_check_plan *plan);

/* Return the largest relative error accepted for outputs of "dt": float
 * rounding of the generated code against the float64 oracle, with
 * reassociated reductions; integers and bools are exact (0). */
double te_tolerance(tessel_dtype dt);

#endif
