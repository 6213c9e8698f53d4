#include "ir/compare.h"

#include <math.h>
#include <stdbool.h>

uint64_t te_input_seed(uint64_t seed, int i)
{
	return seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1;
}

double te_tolerance(tessel_dtype dt)
{
	switch (dt) {
	case TESSEL_F64: return 1e-9;
	case TESSEL_F32: return 1e-4;
	case TESSEL_F16: return 1e-2;
	case TESSEL_BF16: return 5e-2;
	default: return 0;
	}
}

/* Return true when "a" and "b" are both NaN or the same infinity. */
static bool same_special(double a, double b)
{
	return (isnan(a) && isnan(b)) || (isinf(a) && a == b);
}

/* Return 0 when the integers of "got" and "want" are equal, else inf. */
static double integer_error(const tessel_tensor *got, const tessel_tensor *want)
{
	int64_t n = tessel_tensor_numel(want);
	for (int64_t i = 0; i < n; i++)
		if (tessel_tensor_get_i64(got, i) != tessel_tensor_get_i64(want, i))
			return INFINITY;
	return 0;
}

double te_rel_error(const tessel_tensor *got, const tessel_tensor *want)
{
	if (!tessel_dtype_is_float(want->dtype))
		return integer_error(got, want);
	double scale = 0, worst = 0;
	int64_t n = tessel_tensor_numel(want);
	for (int64_t i = 0; i < n; i++) {
		double w = tessel_tensor_get(want, i);
		if (isfinite(w) && fabs(w) > scale)
			scale = fabs(w);
	}
	for (int64_t i = 0; i < n; i++) {
		double w = tessel_tensor_get(want, i), g = tessel_tensor_get(got, i);
		if (!isfinite(w) || !isfinite(g)) {
			if (!same_special(w, g))
				return INFINITY;
			continue;
		}
		double e = fabs(g - w);
		if (e > worst)
			worst = e;
	}
	return scale > 0 ? worst / scale : worst;
}
