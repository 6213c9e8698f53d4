/* The reference interpreter on demand (ir/interp.c): for ops too large to
 * evaluate in full within a check, the outputs at chosen elements only,
 * each element of another stage evaluated when one of those needs it. */
#ifndef TESSEL_IR_INTERP_H
#define TESSEL_IR_INTERP_H

#include <stdint.h>

#include "tessel/te.h"

/* Return the work of evaluating "op" in full: over its compute stages,
 * elements times the points of their reductions (saturating). */
int64_t te_interp_cost(const tessel_op *op);

/* Return an estimate of the work of evaluating one output element of
 * "op" on demand: the points of the reductions of its compute stages,
 * summed (the stages it reads elementwise each add one). */
int64_t te_interp_point_cost(const tessel_op *op);

/* Evaluate the bound op "op" on "inputs" as tessel_interp does, with the
 * same semantics and checks, but only the elements "points"[o][k] (flat
 * C-order indices, k < "npoints"[o]) of each output o, written to
 * "outputs"[o]; its other elements are left as they are.  Elements of
 * other compute stages are evaluated once, when an evaluated element
 * reads them.  A point outside its output is refused. */
int te_interp_points(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *outputs, const int64_t *const *points,
	const int64_t *npoints);

#endif
