/* Helpers shared by the Criterion suites. */
#include <math.h>

#include "tests/support.h"

tessel_tensor *test_tensor_like(const tessel_stage *s)
{
	int64_t shape[TESSEL_MAX_DIMS];
	for (int d = 0; d < tessel_stage_ndim(s); d++)
		shape[d] = tessel_stage_dim(s, d);
	return tessel_tensor_new(tessel_stage_dtype(s), tessel_stage_ndim(s), shape,
		NULL, 0);
}

double test_outputs_error(tessel_tensor *const *got, tessel_tensor *const *want, int n)
{
	double worst = 0;
	for (int i = 0; i < n; i++)
		for (int64_t k = 0; k < tessel_tensor_numel(want[i]); k++) {
			double a = tessel_tensor_get(want[i], k), b = tessel_tensor_get(got[i], k);
			double e = fabs(a - b) / (1.0 + fabs(a));
			if (isnan(a) || isnan(b))
				e = isnan(a) == isnan(b) ? 0 : INFINITY;
			if (e > worst)
				worst = e;
		}
	return worst;
}
