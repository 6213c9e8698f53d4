/* Element types shared by every layer of tessel, with the conversions the
 * interpreter, the .npy reader and exported kernels need.  Header-only so
 * that a program linking only the runtime can use it. */
#ifndef TESSEL_DTYPE_H
#define TESSEL_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Later dtypes are appended, so that a value keeps its meaning in
 * programs built against an earlier header. */
typedef enum tessel_dtype {
	TESSEL_BOOL,
	TESSEL_I8,
	TESSEL_I32,
	TESSEL_I64,
	TESSEL_F16,
	TESSEL_BF16,
	TESSEL_F32,
	TESSEL_F64,
	TESSEL_U8,
	TESSEL_DTYPE_COUNT
} tessel_dtype;

/* Return the size in bytes of one element of "dt". */
static inline size_t tessel_dtype_size(tessel_dtype dt)
{
	static const size_t size[TESSEL_DTYPE_COUNT] = { 1, 1, 4, 8, 2, 2, 4, 8, 1 };
	return size[dt];
}

/* Return the name of "dt" as the .te language spells it ("f32", ...). */
static inline const char *tessel_dtype_name(tessel_dtype dt)
{
	static const char *name[TESSEL_DTYPE_COUNT] = {
		"bool", "i8", "i32", "i64", "f16", "bf16", "f32", "f64", "u8"
	};
	return (unsigned)dt < TESSEL_DTYPE_COUNT ? name[dt] : "?";
}

/* Return the dtype named "name" (of length "len"), or -1. */
static inline int tessel_dtype_parse(const char *name, size_t len)
{
	for (int dt = 0; dt < TESSEL_DTYPE_COUNT; dt++) {
		const char *n = tessel_dtype_name((tessel_dtype)dt);
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return dt;
	}
	return -1;
}

static inline bool tessel_dtype_is_float(tessel_dtype dt)
{
	return dt >= TESSEL_F16 && dt <= TESSEL_F64;
}

static inline bool tessel_dtype_is_int(tessel_dtype dt)
{
	return (dt >= TESSEL_I8 && dt <= TESSEL_I64) || dt == TESSEL_U8;
}

/* Return the least and the greatest value of the integer type "dt" (bool
 * counts as 0 and 1). */
static inline void tessel_int_limits(tessel_dtype dt, int64_t *lo, int64_t *hi)
{
	switch (dt) {
	case TESSEL_BOOL: *lo = 0, *hi = 1; break;
	case TESSEL_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
	case TESSEL_U8: *lo = 0, *hi = UINT8_MAX; break;
	case TESSEL_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
	default: *lo = INT64_MIN, *hi = INT64_MAX; break;
	}
}

/* Round the float "f" to the nearest half (IEEE 754 binary16), ties to
 * even, and return its bits. */
static inline uint16_t tessel_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t exp = (x >> 23) & 0xffu;
	uint32_t mant = x & 0x7fffffu;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		mant |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = mant >> shift;
		uint32_t rem = mant & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
	uint32_t rem = mant & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
		half++;
	return (uint16_t)(sign | half);
}

/* Return the float whose half bits are "h". */
static inline float tessel_f16_to_f32(uint16_t h)
{
	uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	uint32_t x;
	if (exp == 0x1f) {
		x = sign | 0x7f800000u | (mant << 13);
	} else if (exp == 0) {
		if (mant == 0) {
			x = sign;
		} else {
			int e = -1;
			do {
				e++;
				mant <<= 1;
			} while (!(mant & 0x400u));
			x = sign | ((uint32_t)(127 - 15 - e) << 23) |
			    ((mant & 0x3ffu) << 13);
		}
	} else {
		x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

/* Round "f" to bfloat16, ties to even, and return its bits. */
static inline uint16_t tessel_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

static inline float tessel_bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

/* Return "v" rounded to the precision of the float type "dt". */
static inline double tessel_round_to(tessel_dtype dt, double v)
{
	switch (dt) {
	case TESSEL_F16: return tessel_f16_to_f32(tessel_f32_to_f16((float)v));
	case TESSEL_BF16: return tessel_bf16_to_f32(tessel_f32_to_bf16((float)v));
	case TESSEL_F32: return (float)v;
	default: return v;
	}
}

/* Return "v" converted to the integer type "dt": truncation toward zero,
 * saturation at the type's limits, NaN to 0.  These are tessel's cast
 * semantics everywhere (interpreter and generated code). */
static inline int64_t tessel_float_to_int(tessel_dtype dt, double v)
{
	double lo, hi;
	switch (dt) {
	case TESSEL_BOOL: return v != 0.0;
	case TESSEL_I8: lo = -128.0; hi = 127.0; break;
	case TESSEL_U8: lo = 0.0; hi = 255.0; break;
	case TESSEL_I32: lo = -2147483648.0; hi = 2147483647.0; break;
	default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
	}
	if (isnan(v))
		return 0;
	if (v <= lo)
		return (int64_t)lo;
	if (v >= hi)
		return dt == TESSEL_I64 ? INT64_MAX : (int64_t)hi;
	return (int64_t)v;
}

/* Return "v" wrapped to the integer type "dt" (two's complement). */
static inline int64_t tessel_wrap_int(tessel_dtype dt, int64_t v)
{
	switch (dt) {
	case TESSEL_BOOL: return v != 0;
	case TESSEL_I8: return (int8_t)(uint8_t)(uint64_t)v;
	case TESSEL_U8: return (uint8_t)(uint64_t)v;
	case TESSEL_I32: return (int32_t)(uint32_t)(uint64_t)v;
	default: return v;
	}
}

#endif
