#include "ir/compare.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ir/interp.h"
#include "ir/te_impl.h"

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

double te_rel_error_at(const tessel_tensor *got, const tessel_tensor *want,
	const int64_t *points, int64_t n)
{
	bool is_float = tessel_dtype_is_float(want->dtype);
	double scale = 0, worst = 0;
	for (int64_t k = 0; is_float && k < n; k++) {
		double w = tessel_tensor_get(want, points[k]);
		if (isfinite(w) && fabs(w) > scale)
			scale = fabs(w);
	}
	for (int64_t k = 0; k < n; k++) {
		if (!is_float) {
			if (tessel_tensor_get_i64(got, points[k]) !=
			    tessel_tensor_get_i64(want, points[k]))
				return INFINITY;
			continue;
		}
		double w = tessel_tensor_get(want, points[k]), g = tessel_tensor_get(got, points[k]);
		if (!isfinite(w) || !isfinite(g)) {
			if (!same_special(w, g))
				return INFINITY;
			continue;
		}
		if (fabs(g - w) > worst)
			worst = fabs(g - w);
	}
	return scale > 0 ? worst / scale : worst;
}

/* Advance the splitmix64 state "s" and return its next output. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int by_value(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int64_t te_check_points(int ndim, const int64_t *shape, int64_t n, uint64_t seed,
	int64_t *points)
{
	uint64_t state = seed;
	for (int64_t k = 0; k < n; k++) {
		int face = ndim > 0 && k % 2 ? (int)(next_random(&state) % (uint64_t)ndim) : -1;
		bool last = next_random(&state) & 1;
		int64_t flat = 0;
		for (int d = 0; d < ndim; d++) {
			int64_t i = (int64_t)(next_random(&state) % (uint64_t)shape[d]);
			if (d == face)
				i = last ? shape[d] - 1 : 0;
			flat = flat * shape[d] + i;
		}
		points[k] = flat;
	}
	qsort(points, (size_t)n, sizeof(*points), by_value);
	int64_t m = 0;
	for (int64_t k = 0; k < n; k++)
		if (m == 0 || points[k] != points[m - 1])
			points[m++] = points[k];
	return m;
}

/* Choose the elements of each output of "op" a check compares into
 * "plan"; return 0, or -1 out of memory. */
static int choose_points(const tessel_op *op, tessel_tensor *const *ref, uint64_t seed,
	te_check_plan *plan)
{
	int64_t per_point = te_interp_point_cost(op);
	int64_t want = TE_CHECK_POINT_COST / (per_point > 0 ? per_point : 1) /
		(plan->nout > 0 ? plan->nout : 1);
	if (want < TE_CHECK_MIN_POINTS)
		want = TE_CHECK_MIN_POINTS;
	plan->points = calloc((size_t)plan->nout + 1, sizeof(*plan->points));
	plan->npoints = calloc((size_t)plan->nout + 1, sizeof(*plan->npoints));
	if (!plan->points || !plan->npoints)
		return -1;
	for (int i = 0; i < plan->nout; i++) {
		const tessel_tensor *t = ref[i];
		int64_t numel = tessel_tensor_numel(t), n = want < numel ? want : numel;
		if (!(plan->points[i] = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1))))
			return -1;
		if (n == numel) {
			for (int64_t k = 0; k < n; k++)
				plan->points[i][k] = k;
			plan->npoints[i] = n;
		} else {
			plan->npoints[i] = te_check_points(t->ndim, t->shape, n,
				te_input_seed(seed, 1000 + i), plan->points[i]);
		}
	}
	return 0;
}

int te_check_reference(const tessel_op *op, tessel_tensor *const *inputs,
	tessel_tensor *const *ref, int64_t full_cost, uint64_t seed, te_check_plan *plan)
{
	*plan = (te_check_plan){ .nout = tessel_op_num_outputs(op) };
	if (te_interp_cost(op) <= (full_cost > 0 ? full_cost : TE_CHECK_FULL_COST))
		return tessel_interp(op, inputs, ref);
	if (choose_points(op, ref, seed, plan)) {
		te_check_plan_free(plan);
		return te_error(op->ctx, TESSEL_ERR_LIMIT, op->loc, "out of memory");
	}
	return te_interp_points(op, inputs, ref, (const int64_t *const *)plan->points,
		plan->npoints);
}

double te_check_error(const te_check_plan *plan, int i, const tessel_tensor *got,
	const tessel_tensor *ref)
{
	return plan->points ? te_rel_error_at(got, ref, plan->points[i], plan->npoints[i])
		: te_rel_error(got, ref);
}

int64_t te_check_count(const te_check_plan *plan, int i)
{
	return plan->points ? plan->npoints[i] : -1;
}

void te_check_plan_free(te_check_plan *plan)
{
	for (int i = 0; plan->points && i < plan->nout; i++)
		free(plan->points[i]);
	free(plan->points);
	free(plan->npoints);
	*plan = (te_check_plan){ 0 };
}
