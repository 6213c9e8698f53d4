/* Helpers shared by the Criterion suites (tests/support.c). */
#ifndef TESSEL_TESTS_SUPPORT_H
#define TESSEL_TESTS_SUPPORT_H

#include "tessel/te.h"
#include "tessel/tensor.h"

/* Return a new tensor of the dtype and shape of stage "s" (uninitialized
 * data), or NULL when memory runs out. */
tessel_tensor *test_tensor_like(const tessel_stage *s);

/* Return the largest |got - want| / (1 + |want|) over the elements of the
 * "n" pairs "got"[i], "want"[i]: infinite where exactly one of the two is
 * NaN, 0 where both are. */
double test_outputs_error(tessel_tensor *const *got, tessel_tensor *const *want, int n);

#endif
