/* Dense tensors: allocation, element access in every dtype, and seeded random
 * filling that gives the same bits on every machine. */
#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/tensor.h"

/* Write the message "fmt" into "err" of size "errlen", when "err" is not
 * NULL, always NUL-terminated. */
static void __attribute__((format(printf, 3, 4)))
report(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Check that "ndim" and "shape" describe a tensor whose element count, and
 * whose byte count with elements of "itemsize" bytes, fit in a ptrdiff_t.
 * The product of the non-zero extents must fit too, so that every stride is
 * representable even when some extent is zero.  Store the element count in
 * "numel" and return 0, or return -1 with a message in "err". */
static int check_shape(int ndim, const int64_t *shape, size_t itemsize,
	int64_t *numel, char *err, size_t errlen)
{
	if (ndim < 0 || ndim > TESSEL_MAX_DIMS) {
		report(err, errlen, "tensor: %d dimensions; expected 0 to %d",
		       ndim, TESSEL_MAX_DIMS);
		return -1;
	}
	if (ndim > 0 && !shape) {
		report(err, errlen, "tensor: %d dimensions but no shape", ndim);
		return -1;
	}
	int64_t nonzero_product = 1;
	bool has_zero_extent = false;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 0) {
			report(err, errlen,
			       "tensor: dimension %d has negative extent %lld", d,
			       (long long)shape[d]);
			return -1;
		}
		has_zero_extent |= shape[d] == 0;
		if (shape[d] > 0 &&
		    (__builtin_mul_overflow(nonzero_product, shape[d],
					    &nonzero_product) ||
		     nonzero_product > PTRDIFF_MAX / (int64_t)itemsize)) {
			report(err, errlen,
			       "tensor: element count or byte size overflows "
			       "at dimension %d", d);
			return -1;
		}
	}
	*numel = has_zero_extent ? 0 : nonzero_product;
	return 0;
}

/* Fill "strides" with the C-order strides of "shape". */
static void set_c_order_strides(int ndim, const int64_t *shape,
	int64_t *strides)
{
	int64_t stride = 1;
	for (int d = ndim - 1; d >= 0; d--) {
		strides[d] = stride;
		stride *= shape[d] == 0 ? 1 : shape[d];
	}
}

/* Return zero-filled storage of at least "bytes" bytes aligned to
 * TESSEL_ALIGNMENT, never NULL for a valid size (a zero-size tensor gets one
 * aligned block), or NULL when memory runs out. */
static void *alloc_aligned_zeroed(size_t bytes)
{
	size_t rounded = (bytes + TESSEL_ALIGNMENT - 1) /
			 TESSEL_ALIGNMENT * TESSEL_ALIGNMENT;
	if (rounded == 0)
		rounded = TESSEL_ALIGNMENT;
	void *data = aligned_alloc(TESSEL_ALIGNMENT, rounded);
	if (data)
		memset(data, 0, rounded);
	return data;
}

tessel_tensor *tessel_tensor_new(tessel_dtype dtype, int ndim,
	const int64_t *shape, char *err, size_t errlen)
{
	if ((unsigned)dtype >= TESSEL_DTYPE_COUNT) {
		report(err, errlen, "tensor: invalid dtype %d", (int)dtype);
		return NULL;
	}
	size_t itemsize = tessel_dtype_size(dtype);
	int64_t numel;
	if (check_shape(ndim, shape, itemsize, &numel, err, errlen) < 0)
		return NULL;
	size_t bytes = (size_t)numel * itemsize;
	tessel_tensor *t = calloc(1, sizeof *t);
	void *data = t ? alloc_aligned_zeroed(bytes) : NULL;
	if (!data) {
		free(t);
		report(err, errlen, "tensor: out of memory for %zu bytes",
		       bytes);
		return NULL;
	}
	t->dtype = dtype;
	t->ndim = ndim;
	if (ndim > 0)
		memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
	set_c_order_strides(ndim, t->shape, t->strides);
	t->data = data;
	t->owns_data = 1;
	return t;
}

void tessel_tensor_free(tessel_tensor *t)
{
	if (!t)
		return;
	if (t->owns_data)
		free(t->data);
	free(t);
}

int64_t tessel_tensor_numel(const tessel_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

/* Return the address of the element at flat C-order position "i" of "t",
 * following its strides.  Requires 0 <= "i" < numel. */
static void *element_address(const tessel_tensor *t, int64_t i)
{
	assert(i >= 0 && i < tessel_tensor_numel(t));
	int64_t offset = 0;
	for (int d = t->ndim - 1; d >= 0; d--) {
		offset += (i % t->shape[d]) * t->strides[d];
		i /= t->shape[d];
	}
	return (char *)t->data + offset * (int64_t)tessel_dtype_size(t->dtype);
}

/* Return the integer element of type "dtype" stored at "p". */
static int64_t load_int(tessel_dtype dtype, const void *p)
{
	int32_t i32;
	int64_t i64;
	switch (dtype) {
	case TESSEL_BOOL: return *(const uint8_t *)p != 0;
	case TESSEL_I8: return *(const int8_t *)p;
	case TESSEL_U8: return *(const uint8_t *)p;
	case TESSEL_I32: memcpy(&i32, p, 4); return i32;
	default: memcpy(&i64, p, 8); return i64;
	}
}

/* Return the float element of type "dtype" stored at "p". */
static double load_float(tessel_dtype dtype, const void *p)
{
	uint16_t h;
	float f;
	double d;
	switch (dtype) {
	case TESSEL_F16: memcpy(&h, p, 2); return tessel_f16_to_f32(h);
	case TESSEL_BF16: memcpy(&h, p, 2); return tessel_bf16_to_f32(h);
	case TESSEL_F32: memcpy(&f, p, 4); return f;
	default: memcpy(&d, p, 8); return d;
	}
}

/* Store "v", already in the range of the integer type "dtype", at "p". */
static void store_int(tessel_dtype dtype, void *p, int64_t v)
{
	int8_t i8 = (int8_t)v;
	int32_t i32 = (int32_t)v;
	switch (dtype) {
	case TESSEL_BOOL: *(uint8_t *)p = v != 0; break;
	case TESSEL_I8: memcpy(p, &i8, 1); break;
	case TESSEL_U8: *(uint8_t *)p = (uint8_t)v; break;
	case TESSEL_I32: memcpy(p, &i32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

/* Store "v" rounded to the float type "dtype" at "p". */
static void store_float(tessel_dtype dtype, void *p, double v)
{
	uint16_t h;
	float f = (float)v;
	switch (dtype) {
	case TESSEL_F16: h = tessel_f32_to_f16(f); memcpy(p, &h, 2); break;
	case TESSEL_BF16: h = tessel_f32_to_bf16(f); memcpy(p, &h, 2); break;
	case TESSEL_F32: memcpy(p, &f, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

double tessel_tensor_get(const tessel_tensor *t, int64_t i)
{
	const void *p = element_address(t, i);
	if (tessel_dtype_is_float(t->dtype))
		return load_float(t->dtype, p);
	return (double)load_int(t->dtype, p);
}

void tessel_tensor_set(tessel_tensor *t, int64_t i, double v)
{
	void *p = element_address(t, i);
	if (tessel_dtype_is_float(t->dtype))
		store_float(t->dtype, p, v);
	else
		store_int(t->dtype, p, tessel_float_to_int(t->dtype, v));
}

int64_t tessel_tensor_get_i64(const tessel_tensor *t, int64_t i)
{
	const void *p = element_address(t, i);
	if (tessel_dtype_is_float(t->dtype))
		return tessel_float_to_int(TESSEL_I64, load_float(t->dtype, p));
	return load_int(t->dtype, p);
}

void tessel_tensor_set_i64(tessel_tensor *t, int64_t i, int64_t v)
{
	void *p = element_address(t, i);
	if (tessel_dtype_is_float(t->dtype))
		store_float(t->dtype, p, (double)v);
	else
		store_int(t->dtype, p, tessel_wrap_int(t->dtype, v));
}

/* Advance the splitmix64 generator "state" and return its next output
 * (Steele, Lea, Flood: "Fast splittable pseudorandom number generators",
 * OOPSLA 2014; constants from Vigna's reference splitmix64.c). */
static uint64_t splitmix64_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* Return the number of significand bits (with the implicit one) of the
 * float type "dtype". */
static int significand_bits(tessel_dtype dtype)
{
	switch (dtype) {
	case TESSEL_F16: return 11;
	case TESSEL_BF16: return 8;
	case TESSEL_F32: return 24;
	default: return 53;
	}
}

/* Return a value uniform in [-1, 1) from the top bits of "bits": the top p
 * bits, p the significand width of "dtype", read as k in [0, 2^p), give
 * k * 2^(1-p) - 1, which "dtype" represents exactly, so no rounding (and no
 * machine dependence) follows. */
static double random_float(tessel_dtype dtype, uint64_t bits)
{
	int p = significand_bits(dtype);
	return ldexp((double)(bits >> (64 - p)), 1 - p) - 1.0;
}

/* Return a value of the integer type "dtype" from the top bits of "bits":
 * uniform in [-8, 8) for the signed types, over the whole of [0, 256) for
 * u8, so that its values above 127 are met. */
static int64_t random_int(tessel_dtype dtype, uint64_t bits)
{
	if (dtype == TESSEL_U8)
		return (int64_t)(bits >> 56);
	return (int64_t)(bits >> 60) - 8;
}

void tessel_tensor_fill_random(tessel_tensor *t, uint64_t seed)
{
	uint64_t state = seed;
	int64_t n = tessel_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		uint64_t bits = splitmix64_next(&state);
		if (tessel_dtype_is_float(t->dtype))
			tessel_tensor_set(t, i, random_float(t->dtype, bits));
		else if (t->dtype == TESSEL_BOOL)
			tessel_tensor_set_i64(t, i, (int64_t)(bits >> 63));
		else
			tessel_tensor_set_i64(t, i, random_int(t->dtype, bits));
	}
}
