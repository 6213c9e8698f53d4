/* Checking generated code against the reference interpreter
 * (ir/compare.c): the seeds of the random inputs, the relative error of an
 * output and the tolerance of its dtype.  Shared by `tessel run`, `tessel
 * fuzz-sched` and the tuner's measurer, so that all of them see the same
 * inputs for one seed and judge outputs alike. */
#ifndef TESSEL_IR_COMPARE_H
#define TESSEL_IR_COMPARE_H

#include <stdint.h>

#include "tessel/tensor.h"

/* Return the seed for tessel_tensor_fill_random of input "i" of a run with
 * "seed": distinct per input, the same on every machine. */
uint64_t te_input_seed(uint64_t seed, int i);

/* Return max |got - want| / max |want| over all elements (the absolute
 * error when "want" is all zeros); NaN and infinities must match exactly
 * (else the error is infinite).  Integers and bools must be equal (else
 * infinite).  Both tensors are C-ordered with the same dtype and shape. */
double te_rel_error(const tessel_tensor *got, const tessel_tensor *want);

/* Return the largest relative error accepted for outputs of "dt": float
 * rounding of the generated code against the float64 oracle, with
 * reassociated reductions; integers and bools are exact (0). */
double te_tolerance(tessel_dtype dt);

#endif
