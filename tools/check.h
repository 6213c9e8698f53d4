/* Comparing outputs with the interpreter's (tools/check.c). */
#ifndef TESSEL_TOOLS_CHECK_H
#define TESSEL_TOOLS_CHECK_H

#include "tessel/tensor.h"

/* Return max |got - want| / max |want| over all elements (the absolute
 * error when "want" is all zeros); NaN and infinities must match exactly
 * (else the error is infinite). */
double cli_rel_error(const tessel_tensor *got, const tessel_tensor *want);
/* The largest relative error accepted for outputs of "dt": float rounding
 * of the generated code against the float64 oracle, with reassociated
 * reductions; integers and bools are exact. */
double cli_tolerance(tessel_dtype dt);

#endif
