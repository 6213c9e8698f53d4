/* Tests of runtime tensors, their seeded random filling, the f16/bf16
 * conversions of dtype.h, and the .npy reader and writer. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessel/tensor.h"
#include "tests/support.h"

#define ERR_LEN 256

/* Return the directory of the NumPy-written test files: tests/data/npy
 * under TESSEL_SOURCE_DIR when the build defines it, else beside this
 * source file. */
static const char *data_dir(char *buf, size_t len)
{
#ifdef TESSEL_SOURCE_DIR
	snprintf(buf, len, "%s/tests/data/npy", TESSEL_SOURCE_DIR);
#else
	const char *slash = strrchr(__FILE__, '/');
	int dir_len = slash ? (int)(slash - __FILE__) : 1;
	snprintf(buf, len, "%.*s/data/npy", dir_len, slash ? __FILE__ : ".");
#endif
	return buf;
}

/* Write "dir"/"file" into "out". */
static char *join(char *out, size_t len, const char *dir, const char *file)
{
	snprintf(out, len, "%s/%s", dir, file);
	return out;
}

/* Return the number of entries (besides . and ..) in "dir". */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Return the contents of "path" in a new buffer, its length in "len". */
static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)size + 1);
	cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return buf;
}

/* Return a new tensor of "dtype" and shape "shape" ("ndim" dims), failing
 * the test if it cannot be made. */
static tessel_tensor *make(tessel_dtype dtype, int ndim, const int64_t *shape)
{
	char err[ERR_LEN];
	tessel_tensor *t = tessel_tensor_new(dtype, ndim, shape, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	return t;
}

/* Return the bits of the 2-byte element "i" of "t". */
static uint16_t bits16(const tessel_tensor *t, int64_t i)
{
	uint16_t b;
	memcpy(&b, (const char *)t->data + 2 * i, 2);
	return b;
}

/* ------------------------------------------------------------------ */
/* Tensors */

Test(tensor, new_is_zeroed_aligned_and_c_ordered)
{
	tessel_tensor *t = make(TESSEL_F32, 3, (int64_t[]){ 2, 3, 4 });
	cr_assert_eq(tessel_tensor_numel(t), 24);
	cr_assert_eq((uintptr_t)t->data % TESSEL_ALIGNMENT, 0);
	cr_assert_eq(t->strides[0], 12);
	cr_assert_eq(t->strides[1], 4);
	cr_assert_eq(t->strides[2], 1);
	cr_assert(t->owns_data);
	for (int64_t i = 0; i < 24; i++)
		cr_assert_eq(tessel_tensor_get(t, i), 0.0);
	tessel_tensor_free(t);
}

Test(tensor, scalar_and_zero_size)
{
	tessel_tensor *s = make(TESSEL_I64, 0, NULL);
	cr_assert_eq(tessel_tensor_numel(s), 1);
	tessel_tensor_set_i64(s, 0, -5);
	cr_assert_eq(tessel_tensor_get_i64(s, 0), -5);
	tessel_tensor_free(s);
	tessel_tensor *z = make(TESSEL_F64, 3, (int64_t[]){ 3, 0, 2 });
	cr_assert_eq(tessel_tensor_numel(z), 0);
	cr_assert_not_null(z->data);
	cr_assert_eq((uintptr_t)z->data % TESSEL_ALIGNMENT, 0);
	tessel_tensor_free(z);
}

/* Check that tessel_tensor_new refuses "dtype"/"ndim"/"shape" with a
 * message containing "expected". */
static void check_new_fails(tessel_dtype dtype, int ndim,
	const int64_t *shape, const char *expected)
{
	char err[ERR_LEN] = "";
	cr_assert_null(tessel_tensor_new(dtype, ndim, shape, err, sizeof err));
	cr_assert(strstr(err, expected), "message '%s' lacks '%s'", err,
		  expected);
	cr_assert_null(tessel_tensor_new(dtype, ndim, shape, NULL, 0));
}

Test(tensor, new_rejects_bad_shapes)
{
	int64_t nine[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	check_new_fails(TESSEL_F32, -1, nine, "-1 dimensions");
	check_new_fails(TESSEL_F32, 9, nine, "9 dimensions");
	check_new_fails(TESSEL_F32, 2, (int64_t[]){ 3, -2 }, "negative");
	check_new_fails(TESSEL_F32, 2, (int64_t[]){ 1LL << 40, 1LL << 40 },
			"overflows");
	check_new_fails(TESSEL_F64, 1, (int64_t[]){ 1LL << 61 }, "overflows");
	check_new_fails(TESSEL_F32, 3, (int64_t[]){ 0, 1LL << 40, 1LL << 40 },
			"overflows");
	check_new_fails((tessel_dtype)99, 0, NULL, "dtype");
	check_new_fails(TESSEL_F32, 1, NULL, "no shape");
}

Test(tensor, zero_extent_beside_large_extents_is_allowed)
{
	tessel_tensor *t = make(TESSEL_I8, 2, (int64_t[]){ 0, 1LL << 40 });
	cr_assert_eq(tessel_tensor_numel(t), 0);
	tessel_tensor_free(t);
}

Test(tensor, free_null_is_a_no_op)
{
	tessel_tensor_free(NULL);
}

Test(tensor, set_and_get_as_double_in_every_dtype)
{
	static const double values[] = { 0.0, 1.0, -2.0, 0.5, 100.0 };
	for (int dt = 0; dt < TESSEL_DTYPE_COUNT; dt++) {
		tessel_tensor *t = make((tessel_dtype)dt, 1, (int64_t[]){ 5 });
		for (int i = 0; i < 5; i++)
			tessel_tensor_set(t, i, values[i]);
		for (int i = 0; i < 5; i++) {
			double want = tessel_dtype_is_float((tessel_dtype)dt)
					      ? values[i]
					      : (double)tessel_float_to_int(
							(tessel_dtype)dt, values[i]);
			cr_assert_eq(tessel_tensor_get(t, i), want,
				     "%s element %d", tessel_dtype_name(dt), i);
		}
		tessel_tensor_free(t);
	}
}

Test(tensor, integer_conversions_wrap_and_saturate)
{
	tessel_tensor *i8 = make(TESSEL_I8, 1, (int64_t[]){ 4 });
	tessel_tensor_set_i64(i8, 0, 300);
	tessel_tensor_set_i64(i8, 1, -129);
	tessel_tensor_set(i8, 2, 300.0);
	tessel_tensor_set(i8, 3, -2.7);
	cr_assert_eq(tessel_tensor_get_i64(i8, 0), 44);
	cr_assert_eq(tessel_tensor_get_i64(i8, 1), 127);
	cr_assert_eq(tessel_tensor_get_i64(i8, 2), 127);
	cr_assert_eq(tessel_tensor_get_i64(i8, 3), -2);
	tessel_tensor_free(i8);

	tessel_tensor *i32 = make(TESSEL_I32, 1, (int64_t[]){ 3 });
	tessel_tensor_set(i32, 0, -1e10);
	tessel_tensor_set(i32, 1, NAN);
	tessel_tensor_set_i64(i32, 2, (1LL << 32) + 7);
	cr_assert_eq(tessel_tensor_get_i64(i32, 0), INT32_MIN);
	cr_assert_eq(tessel_tensor_get_i64(i32, 1), 0);
	cr_assert_eq(tessel_tensor_get_i64(i32, 2), 7);
	tessel_tensor_free(i32);

	tessel_tensor *i64 = make(TESSEL_I64, 1, (int64_t[]){ 2 });
	tessel_tensor_set_i64(i64, 0, (1LL << 62) + 1);
	tessel_tensor_set(i64, 1, 1e30);
	cr_assert_eq(tessel_tensor_get_i64(i64, 0), (1LL << 62) + 1);
	cr_assert_eq(tessel_tensor_get_i64(i64, 1), INT64_MAX);
	tessel_tensor_free(i64);
}

Test(tensor, bools_are_stored_as_one_byte_zero_or_one)
{
	tessel_tensor *b = make(TESSEL_BOOL, 1, (int64_t[]){ 4 });
	tessel_tensor_set(b, 0, 0.5);
	tessel_tensor_set_i64(b, 1, 42);
	tessel_tensor_set(b, 2, 0.0);
	tessel_tensor_set_i64(b, 3, -1);
	const uint8_t *bytes = b->data;
	cr_assert_eq(bytes[0], 1);
	cr_assert_eq(bytes[1], 1);
	cr_assert_eq(bytes[2], 0);
	cr_assert_eq(bytes[3], 1);
	cr_assert_eq(tessel_tensor_get(b, 1), 1.0);
	tessel_tensor_free(b);
}

Test(tensor, floats_round_to_their_dtype)
{
	tessel_tensor *h = make(TESSEL_F16, 1, (int64_t[]){ 2 });
	tessel_tensor_set(h, 0, 0.1);
	tessel_tensor_set_i64(h, 1, 65504);
	cr_assert_eq(bits16(h, 0), 0x2e66);
	cr_assert_eq(bits16(h, 1), 0x7bff);
	cr_assert_eq(tessel_tensor_get_i64(h, 1), 65504);
	tessel_tensor_free(h);

	tessel_tensor *b = make(TESSEL_BF16, 1, (int64_t[]){ 1 });
	tessel_tensor_set(b, 0, 1.0);
	cr_assert_eq(bits16(b, 0), 0x3f80);
	tessel_tensor_free(b);

	tessel_tensor *f = make(TESSEL_F32, 1, (int64_t[]){ 1 });
	tessel_tensor_set(f, 0, 0.1);
	cr_assert_eq(tessel_tensor_get(f, 0), (double)0.1f);
	cr_assert_eq(tessel_tensor_get_i64(f, 0), 0);
	tessel_tensor_free(f);
}

Test(tensor, access_follows_strides)
{
	tessel_tensor *t = make(TESSEL_I32, 2, (int64_t[]){ 3, 4 });
	for (int64_t i = 0; i < 12; i++)
		tessel_tensor_set_i64(t, i, i);
	tessel_tensor view = *t;
	view.owns_data = 0;
	view.shape[0] = 4;
	view.shape[1] = 3;
	view.strides[0] = 1;
	view.strides[1] = 4;
	for (int64_t r = 0; r < 4; r++)
		for (int64_t c = 0; c < 3; c++)
			cr_assert_eq(tessel_tensor_get_i64(&view, r * 3 + c),
				     c * 4 + r);
	tessel_tensor_set_i64(&view, 1, 99);
	cr_assert_eq(tessel_tensor_get_i64(t, 4), 99);
	tessel_tensor_free(t);
}

/* ------------------------------------------------------------------ */
/* Seeded random filling: splitmix64, one output per element in C order. */

Test(random, same_seed_same_values_other_seed_other_values)
{
	for (int dt = 0; dt < TESSEL_DTYPE_COUNT; dt++) {
		tessel_tensor *a = make((tessel_dtype)dt, 1, (int64_t[]){ 64 });
		tessel_tensor *b = make((tessel_dtype)dt, 1, (int64_t[]){ 64 });
		tessel_tensor *c = make((tessel_dtype)dt, 1, (int64_t[]){ 64 });
		tessel_tensor_fill_random(a, 7);
		tessel_tensor_fill_random(b, 7);
		tessel_tensor_fill_random(c, 8);
		size_t bytes = 64 * tessel_dtype_size((tessel_dtype)dt);
		cr_assert_eq(memcmp(a->data, b->data, bytes), 0);
		cr_assert_neq(memcmp(a->data, c->data, bytes), 0);
		tessel_tensor_free(a);
		tessel_tensor_free(b);
		tessel_tensor_free(c);
	}
}

/* splitmix64 from seed 0 gives 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4,
 * 0x06c45d188009454f, 0xf88bb8a8724c81ec; a float type with a p-bit
 * significand takes the top p bits k and yields k * 2^(1-p) - 1, an int
 * takes the top 4 bits minus 8, a bool the top bit. */
Test(random, known_values_from_seed_zero)
{
	tessel_tensor *f64 = make(TESSEL_F64, 1, (int64_t[]){ 2 });
	tessel_tensor_fill_random(f64, 0);
	cr_assert_eq(tessel_tensor_get(f64, 0),
		     ldexp((double)(0xe220a8397b1dcdafull >> 11), -52) - 1.0);
	cr_assert_eq(tessel_tensor_get(f64, 1),
		     ldexp((double)(0x6e789e6aa1b965f4ull >> 11), -52) - 1.0);
	tessel_tensor_free(f64);

	tessel_tensor *f32 = make(TESSEL_F32, 1, (int64_t[]){ 1 });
	tessel_tensor_fill_random(f32, 0);
	cr_assert_eq(tessel_tensor_get(f32, 0), ldexp(0xe220a8, -23) - 1.0);
	tessel_tensor_free(f32);

	tessel_tensor *f16 = make(TESSEL_F16, 1, (int64_t[]){ 1 });
	tessel_tensor_fill_random(f16, 0);
	cr_assert_eq(tessel_tensor_get(f16, 0), 0.7666015625);
	tessel_tensor_free(f16);

	tessel_tensor *bf16 = make(TESSEL_BF16, 1, (int64_t[]){ 1 });
	tessel_tensor_fill_random(bf16, 0);
	cr_assert_eq(tessel_tensor_get(bf16, 0), 0.765625);
	tessel_tensor_free(bf16);

	tessel_tensor *i32 = make(TESSEL_I32, 1, (int64_t[]){ 4 });
	tessel_tensor_fill_random(i32, 0);
	int64_t want_ints[] = { 6, -2, -8, 7 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tessel_tensor_get_i64(i32, i), want_ints[i]);
	tessel_tensor_free(i32);

	tessel_tensor *b = make(TESSEL_BOOL, 1, (int64_t[]){ 4 });
	tessel_tensor_fill_random(b, 0);
	int64_t want_bools[] = { 1, 0, 0, 1 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tessel_tensor_get_i64(b, i), want_bools[i]);
	tessel_tensor_free(b);
}

Test(random, values_stay_in_range_and_cover_it)
{
	int64_t n = 4096;
	for (int dt = 0; dt < TESSEL_DTYPE_COUNT; dt++) {
		tessel_tensor *t = make((tessel_dtype)dt, 1, &n);
		tessel_tensor_fill_random(t, 12345);
		double lo = INFINITY, hi = -INFINITY;
		for (int64_t i = 0; i < n; i++) {
			double v = tessel_tensor_get(t, i);
			lo = fmin(lo, v);
			hi = fmax(hi, v);
		}
		if (tessel_dtype_is_float((tessel_dtype)dt)) {
			cr_assert(lo >= -1.0 && lo < -0.9 && hi < 1.0 && hi > 0.9,
				  "%s in [%g, %g]", tessel_dtype_name(dt), lo, hi);
		} else if (dt == TESSEL_BOOL) {
			cr_assert(lo == 0.0 && hi == 1.0);
		} else if (dt == TESSEL_U8) {
			cr_assert(lo == 0.0 && hi == 255.0, "u8 in [%g, %g]", lo, hi);
		} else {
			cr_assert(lo == -8.0 && hi == 7.0, "%s in [%g, %g]",
				  tessel_dtype_name(dt), lo, hi);
		}
		tessel_tensor_free(t);
	}
}

/* ------------------------------------------------------------------ */
/* f16 and bf16 conversions (dtype.h) */

Test(f16, known_bit_patterns)
{
	cr_assert_eq(tessel_f32_to_f16(1.0f), 0x3c00);
	cr_assert_eq(tessel_f32_to_f16(-2.0f), 0xc000);
	cr_assert_eq(tessel_f32_to_f16(65504.0f), 0x7bff);
	cr_assert_eq(tessel_f32_to_f16(0.1f), 0x2e66);
	cr_assert_eq(tessel_f32_to_f16(0.0f), 0x0000);
	cr_assert_eq(tessel_f32_to_f16(-0.0f), 0x8000);
	cr_assert_eq(tessel_f32_to_f16(ldexpf(1.0f, -14)), 0x0400);
	cr_assert_eq(tessel_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
	cr_assert_eq(tessel_f32_to_f16(1e-8f), 0x0000);
	cr_assert_eq(tessel_f32_to_f16(3e-8f), 0x0001);
	cr_assert_eq(tessel_f32_to_f16(1e5f), 0x7c00);
	cr_assert_eq(tessel_f32_to_f16(INFINITY), 0x7c00);
	cr_assert_eq(tessel_f32_to_f16(-INFINITY), 0xfc00);
	uint16_t nan = tessel_f32_to_f16(NAN);
	cr_assert((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
}

Test(f16, ties_round_to_even)
{
	cr_assert_eq(tessel_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
	cr_assert_eq(tessel_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
	cr_assert_eq(tessel_f32_to_f16(1.0f + 1.01f * ldexpf(1.0f, -11)),
		     0x3c01);
	cr_assert_eq(tessel_f32_to_f16(65520.0f), 0x7c00);
	cr_assert_eq(tessel_f32_to_f16(65519.0f), 0x7bff);
	cr_assert_eq(tessel_f32_to_f16(ldexpf(1.0f, -25)), 0x0000);
	cr_assert_eq(tessel_f32_to_f16(3 * ldexpf(1.0f, -25)), 0x0002);
	cr_assert_eq(tessel_f32_to_f16(1.5f * ldexpf(1.0f, -25)), 0x0001);
}

Test(f16, decodes_to_exact_floats)
{
	cr_assert_eq(tessel_f16_to_f32(0x3c00), 1.0f);
	cr_assert_eq(tessel_f16_to_f32(0x7bff), 65504.0f);
	cr_assert_eq(tessel_f16_to_f32(0x0001), ldexpf(1.0f, -24));
	cr_assert_eq(tessel_f16_to_f32(0x03ff), 1023 * ldexpf(1.0f, -24));
	cr_assert_eq(tessel_f16_to_f32(0xc000), -2.0f);
	cr_assert(isinf(tessel_f16_to_f32(0x7c00)));
	cr_assert(isnan(tessel_f16_to_f32(0x7e00)));
	for (uint32_t h = 0; h < 0x10000; h++)
		if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0)
			cr_assert_eq(tessel_f32_to_f16(tessel_f16_to_f32(
					     (uint16_t)h)),
				     h, "half 0x%04x does not round trip", h);
}

Test(bf16, known_bit_patterns_and_ties_to_even)
{
	cr_assert_eq(tessel_f32_to_bf16(1.0f), 0x3f80);
	cr_assert_eq(tessel_f32_to_bf16(-2.0f), 0xc000);
	cr_assert_eq(tessel_f32_to_bf16(0.1f), 0x3dcd);
	cr_assert_eq(tessel_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
	cr_assert_eq(tessel_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
	cr_assert_eq(tessel_f32_to_bf16(INFINITY), 0x7f80);
	cr_assert(isnan(tessel_bf16_to_f32(tessel_f32_to_bf16(NAN))));
	cr_assert_eq(tessel_bf16_to_f32(0x3f80), 1.0f);
	cr_assert_eq(tessel_bf16_to_f32(0x4049), 3.140625f);
}

/* ------------------------------------------------------------------ */
/* .npy writing and reading back */

TestSuite(npy, .fini = test_scratch_remove);

/* Check that "b" has the dtype, shape and values of "a", allowing for
 * bf16 coming back as f32. */
static void check_same_tensor(const tessel_tensor *a, const tessel_tensor *b)
{
	tessel_dtype want = a->dtype == TESSEL_BF16 ? TESSEL_F32 : a->dtype;
	cr_assert_eq(b->dtype, want, "dtype %s came back as %s",
		     tessel_dtype_name(a->dtype), tessel_dtype_name(b->dtype));
	cr_assert_eq(b->ndim, a->ndim);
	for (int d = 0; d < a->ndim; d++)
		cr_assert_eq(b->shape[d], a->shape[d]);
	int64_t n = tessel_tensor_numel(a);
	for (int64_t i = 0; i < n; i++) {
		cr_assert_eq(tessel_tensor_get_i64(b, i),
			     tessel_tensor_get_i64(a, i));
		cr_assert_eq(tessel_tensor_get(b, i), tessel_tensor_get(a, i),
			     "%s element %lld", tessel_dtype_name(a->dtype),
			     (long long)i);
	}
}

/* Save "t" to a scratch file, load it back, compare, and check the file's
 * layout: version 1.0, data at a multiple of 64, header ending in '\n'. */
static void check_round_trip(const tessel_tensor *t)
{
	char path[600], err[ERR_LEN];
	test_scratch_file(path, sizeof path, "rt.npy");
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), 0, "%s", err);
	tessel_tensor *back = tessel_npy_load(path, err, sizeof err);
	cr_assert_not_null(back, "%s", err);
	check_same_tensor(t, back);
	tessel_tensor_free(back);
	size_t len;
	uint8_t *bytes = read_all(path, &len);
	size_t header_len = bytes[8] | (size_t)bytes[9] << 8;
	size_t itemsize = t->dtype == TESSEL_BF16 ? 4 : tessel_dtype_size(t->dtype);
	cr_assert_eq(bytes[6], 1);
	cr_assert_eq((10 + header_len) % 64, 0);
	cr_assert_eq(bytes[10 + header_len - 1], '\n');
	cr_assert_eq(len, 10 + header_len + itemsize * (size_t)tessel_tensor_numel(t));
	free(bytes);
}

Test(npy, round_trip_every_dtype_and_shape)
{
	static const struct { int ndim; int64_t shape[TESSEL_MAX_DIMS]; } shapes[] = {
		{ 0, { 0 } },
		{ 1, { 5 } },
		{ 2, { 2, 3 } },
		{ 3, { 2, 1, 33 } },
		{ 1, { 0 } },
		{ 3, { 3, 0, 2 } },
		{ 8, { 1, 2, 1, 2, 1, 2, 1, 3 } },
		{ 1, { 5000 } },
	};
	for (int dt = 0; dt < TESSEL_DTYPE_COUNT; dt++)
		for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
			tessel_tensor *t = make((tessel_dtype)dt, shapes[s].ndim,
						shapes[s].shape);
			tessel_tensor_fill_random(t, dt * 100 + s);
			check_round_trip(t);
			tessel_tensor_free(t);
		}
	cr_assert_eq(count_entries(test_scratch_dir()), 1, "a temporary file was left");
}

Test(npy, round_trip_extreme_values)
{
	tessel_tensor *t = make(TESSEL_F64, 1, (int64_t[]){ 5 });
	double values[] = { INFINITY, -INFINITY, 1e-310, -0.0, 1.7976931348623157e308 };
	for (int i = 0; i < 5; i++)
		tessel_tensor_set(t, i, values[i]);
	check_round_trip(t);
	tessel_tensor_free(t);
	tessel_tensor *i = make(TESSEL_I64, 1, (int64_t[]){ 2 });
	tessel_tensor_set_i64(i, 0, INT64_MIN);
	tessel_tensor_set_i64(i, 1, INT64_MAX);
	check_round_trip(i);
	tessel_tensor_free(i);
}

Test(npy, saves_a_strided_view_in_c_order)
{
	tessel_tensor *t = make(TESSEL_F32, 2, (int64_t[]){ 3, 4 });
	tessel_tensor_fill_random(t, 3);
	tessel_tensor view = *t;
	view.owns_data = 0;
	view.shape[0] = 4;
	view.shape[1] = 3;
	view.strides[0] = 1;
	view.strides[1] = 4;
	check_round_trip(&view);
	tessel_tensor_free(t);
}

Test(npy, header_text_matches_numpy)
{
	char path[600], err[ERR_LEN];
	test_scratch_file(path, sizeof path, "h.npy");
	tessel_tensor *t = make(TESSEL_I32, 2, (int64_t[]){ 2, 3 });
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), 0, "%s", err);
	size_t len;
	uint8_t *bytes = read_all(path, &len);
	const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
	cr_assert_eq(memcmp(bytes, "\x93NUMPY\x01\x00\x76\x00", 10), 0);
	cr_assert_eq(memcmp(bytes + 10, dict, strlen(dict)), 0);
	free(bytes);
	tessel_tensor *one = make(TESSEL_BOOL, 1, (int64_t[]){ 7 });
	cr_assert_eq(tessel_npy_save(path, one, err, sizeof err), 0, "%s", err);
	bytes = read_all(path, &len);
	dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }";
	cr_assert_eq(memcmp(bytes + 10, dict, strlen(dict)), 0);
	free(bytes);
	tessel_tensor_free(t);
	tessel_tensor_free(one);
}

Test(npy, save_replaces_an_existing_file)
{
	char path[600], err[ERR_LEN];
	test_scratch_file(path, sizeof path, "x.npy");
	FILE *f = fopen(path, "w");
	fputs("old contents", f);
	fclose(f);
	tessel_tensor *t = make(TESSEL_I8, 1, (int64_t[]){ 3 });
	tessel_tensor_fill_random(t, 1);
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), 0, "%s", err);
	tessel_tensor *back = tessel_npy_load(path, err, sizeof err);
	cr_assert_not_null(back, "%s", err);
	check_same_tensor(t, back);
	cr_assert_eq(count_entries(test_scratch_dir()), 1);
	tessel_tensor_free(back);
	tessel_tensor_free(t);
}

Test(npy, save_reports_io_errors_and_leaves_nothing)
{
	char path[600], err[ERR_LEN] = "";
	test_scratch_file(path, sizeof path, "missing/dir/x.npy");
	tessel_tensor *t = make(TESSEL_F32, 1, (int64_t[]){ 3 });
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), -1);
	cr_assert_eq(strncmp(err, path, strlen(path)), 0, "%s", err);
	cr_assert(strstr(err, "No such file or directory"), "%s", err);
	cr_assert_eq(count_entries(test_scratch_dir()), 0);
	cr_assert_eq(tessel_npy_save(path, t, NULL, 0), -1);
	cr_assert_eq(tessel_npy_save(path, NULL, err, sizeof err), -1);
	cr_assert(strstr(err, "no tensor"), "%s", err);
	tessel_tensor_free(t);
}

Test(npy, failed_write_keeps_the_old_file_and_leaves_no_temporary)
{
	char path[600], err[ERR_LEN] = "";
	test_scratch_file(path, sizeof path, "x.npy");
	FILE *f = fopen(path, "w");
	fputs("old contents", f);
	fclose(f);
	signal(SIGXFSZ, SIG_IGN);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &(struct rlimit){ 4096, 4096 }), 0);
	tessel_tensor *t = make(TESSEL_F32, 1, (int64_t[]){ 100000 });
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), -1);
	cr_assert_eq(strncmp(err, path, strlen(path)), 0, "%s", err);
	cr_assert(strstr(err, "write failed: File too large"), "%s", err);
	cr_assert_eq(count_entries(test_scratch_dir()), 1);
	size_t len;
	uint8_t *bytes = read_all(path, &len);
	cr_assert(len == 12 && memcmp(bytes, "old contents", 12) == 0);
	free(bytes);
	tessel_tensor_free(t);
}

Test(npy, save_reports_a_failed_rename)
{
	char path[600], err[ERR_LEN] = "";
	test_scratch_file(path, sizeof path, "dir.npy");
	cr_assert_eq(mkdir(path, 0777), 0);
	tessel_tensor *t = make(TESSEL_F32, 1, (int64_t[]){ 3 });
	cr_assert_eq(tessel_npy_save(path, t, err, sizeof err), -1);
	cr_assert(strstr(err, "into place: Is a directory"), "%s", err);
	cr_assert_eq(count_entries(test_scratch_dir()), 1);
	tessel_tensor_free(t);
}

Test(npy, save_rejects_invalid_tensors)
{
	char path[600], err[ERR_LEN] = "";
	test_scratch_file(path, sizeof path, "x.npy");
	tessel_tensor *t = make(TESSEL_F32, 1, (int64_t[]){ 3 });
	tessel_tensor bad = *t;
	bad.ndim = TESSEL_MAX_DIMS + 1;
	cr_assert_eq(tessel_npy_save(path, &bad, err, sizeof err), -1);
	cr_assert(strstr(err, "invalid tensor"), "%s", err);
	bad = *t;
	bad.dtype = TESSEL_DTYPE_COUNT;
	cr_assert_eq(tessel_npy_save(path, &bad, err, sizeof err), -1);
	cr_assert(strstr(err, "invalid tensor"), "%s", err);
	bad = *t;
	bad.shape[0] = -1;
	cr_assert_eq(tessel_npy_save(path, &bad, err, sizeof err), -1);
	cr_assert(strstr(err, "invalid tensor"), "%s", err);
	bad = *t;
	bad.data = NULL;
	cr_assert_eq(tessel_npy_save(path, &bad, err, sizeof err), -1);
	cr_assert(strstr(err, "no data"), "%s", err);
	cr_assert_eq(tessel_npy_save(NULL, t, err, sizeof err), -1);
	cr_assert_str_eq(err, "<null>: no path to save to");
	cr_assert_eq(count_entries(test_scratch_dir()), 0);
	tessel_tensor_free(t);
}

Test(npy, load_reports_missing_files_and_directories)
{
	char err[ERR_LEN] = "";
	cr_assert_null(tessel_npy_load("/nonexistent/x.npy", err, sizeof err));
	cr_assert_str_eq(err, "/nonexistent/x.npy: cannot open: No such file or directory");
	cr_assert_null(tessel_npy_load(test_scratch_dir(), err, sizeof err));
	cr_assert_eq(strncmp(err, test_scratch_dir(), strlen(test_scratch_dir())), 0, "%s", err);
	cr_assert_null(tessel_npy_load(NULL, NULL, 0));
}

/* ------------------------------------------------------------------ */
/* Hand-made files */

/* Build in "out" a .npy file of format "major".0 with the header text
 * "header" (taken as is, newline included) and "data_len" bytes of "data";
 * return its length. */
static size_t build(uint8_t *out, int major, const char *header,
	const void *data, size_t data_len)
{
	size_t header_len = strlen(header);
	size_t len_bytes = major == 1 ? 2 : 4;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (uint8_t)major;
	out[7] = 0;
	for (size_t i = 0; i < len_bytes; i++)
		out[8 + i] = (uint8_t)(header_len >> (8 * i));
	memcpy(out + 8 + len_bytes, header, header_len);
	if (data_len)
		memcpy(out + 8 + len_bytes + header_len, data, data_len);
	return 8 + len_bytes + header_len + data_len;
}

/* Parse the "len" bytes at "bytes" as "x.npy" and return the tensor,
 * failing the test if parsing fails. */
static tessel_tensor *parse_ok(const uint8_t *bytes, size_t len)
{
	char err[ERR_LEN] = "";
	tessel_tensor *t = tessel_npy_parse(bytes, len, "x.npy", err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	return t;
}

/* Check that parsing the "len" bytes at "bytes" fails with a message that
 * starts with "x.npy: " and contains "expected". */
static void parse_fails(const uint8_t *bytes, size_t len, const char *expected)
{
	char err[ERR_LEN] = "";
	cr_assert_null(tessel_npy_parse(bytes, len, "x.npy", err, sizeof err),
		       "accepted, expected '%s'", expected);
	cr_assert_eq(strncmp(err, "x.npy: ", 7), 0, "%s", err);
	cr_assert(strstr(err, expected), "message '%s' lacks '%s'", err, expected);
	cr_assert_null(tessel_npy_parse(bytes, len, "x.npy", NULL, 0));
}

/* Check that the header "header" with "data_len" bytes of data fails in
 * every format version with a message containing "expected". */
static void header_fails(const char *header, size_t data_len, const char *expected)
{
	static uint8_t buf[4096];
	static const uint8_t zeros[256];
	for (int major = 1; major <= 3; major++)
		parse_fails(buf, build(buf, major, header, zeros, data_len), expected);
}

static const float f32_values[6] = { 0.5f, -1.25f, 2.0f, 3.5f, -4.0f, 1e-3f };

Test(parse, every_version_reads_the_same_tensor)
{
	uint8_t buf[512];
	const char *header =
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n";
	for (int major = 1; major <= 3; major++) {
		tessel_tensor *t = parse_ok(buf, build(buf, major, header, f32_values, 24));
		cr_assert_eq(t->dtype, TESSEL_F32);
		cr_assert_eq(t->ndim, 2);
		cr_assert_eq(t->shape[0], 2);
		cr_assert_eq(t->shape[1], 3);
		cr_assert_eq((uintptr_t)t->data % TESSEL_ALIGNMENT, 0);
		for (int i = 0; i < 6; i++)
			cr_assert_eq(tessel_tensor_get(t, i), f32_values[i]);
		tessel_tensor_free(t);
	}
}

Test(parse, headers_in_any_layout)
{
	static const char *headers[] = {
		"{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}\n",
		"{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(6,)}\n",
		"  { 'descr' : '<f4' ,\n 'fortran_order' : False ,\t'shape' : ( 6 , ) , }  \n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }\n",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }\n",
	};
	uint8_t buf[512];
	for (size_t h = 0; h < sizeof headers / sizeof *headers; h++) {
		tessel_tensor *t = parse_ok(buf, build(buf, 1, headers[h], f32_values, 24));
		cr_assert_eq(tessel_tensor_numel(t), 6, "header %zu", h);
		cr_assert_eq(tessel_tensor_get(t, 5), f32_values[5]);
		tessel_tensor_free(t);
	}
}

Test(parse, scalar_and_zero_size_shapes)
{
	uint8_t buf[512];
	int64_t v = -77;
	tessel_tensor *s = parse_ok(buf, build(buf, 1,
		"{'descr': '<i8', 'fortran_order': False, 'shape': (), }\n", &v, 8));
	cr_assert_eq(s->ndim, 0);
	cr_assert_eq(tessel_tensor_get_i64(s, 0), -77);
	tessel_tensor_free(s);
	tessel_tensor *z = parse_ok(buf, build(buf, 1,
		"{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1099511627776), }\n",
		NULL, 0));
	cr_assert_eq(z->ndim, 2);
	cr_assert_eq(tessel_tensor_numel(z), 0);
	tessel_tensor_free(z);
}

Test(parse, single_byte_types_take_any_byte_order)
{
	static const char *descrs[] = { "|i1", "<i1", "=i1", ">i1" };
	uint8_t buf[512];
	char header[128];
	int8_t data[2] = { -3, 100 };
	for (int i = 0; i < 4; i++) {
		snprintf(header, sizeof header,
			 "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }\n",
			 descrs[i]);
		tessel_tensor *t = parse_ok(buf, build(buf, 1, header, data, 2));
		cr_assert_eq(t->dtype, TESSEL_I8);
		cr_assert_eq(tessel_tensor_get_i64(t, 0), -3);
		cr_assert_eq(tessel_tensor_get_i64(t, 1), 100);
		tessel_tensor_free(t);
	}
}

Test(parse, every_supported_descr)
{
	static const struct { const char *descr; tessel_dtype dtype; } cases[] = {
		{ "<f4", TESSEL_F32 }, { "<f8", TESSEL_F64 }, { "<f2", TESSEL_F16 },
		{ "<i4", TESSEL_I32 }, { "<i8", TESSEL_I64 }, { "|i1", TESSEL_I8 },
		{ "|b1", TESSEL_BOOL },
	};
	uint8_t buf[512], zeros[8] = { 0 };
	char header[128];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(header, sizeof header,
			 "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }\n",
			 cases[i].descr);
		tessel_tensor *t = parse_ok(buf, build(buf, 1, header, zeros,
			tessel_dtype_size(cases[i].dtype)));
		cr_assert_eq(t->dtype, cases[i].dtype, "%s", cases[i].descr);
		tessel_tensor_free(t);
	}
}

Test(parse, bools_are_normalized_to_zero_or_one)
{
	uint8_t buf[512], data[3] = { 0, 2, 255 };
	tessel_tensor *t = parse_ok(buf, build(buf, 1,
		"{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", data, 3));
	const uint8_t *bytes = t->data;
	cr_assert(bytes[0] == 0 && bytes[1] == 1 && bytes[2] == 1);
	tessel_tensor_free(t);
}

/* The header of a valid f32 file of shape (2, 3). */
#define F32_2x3 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n"

Test(parse, rejects_bad_data_sizes)
{
	uint8_t buf[512], extra[28] = { 0 };
	parse_fails(buf, build(buf, 1, F32_2x3, f32_values, 20),
		    "x.npy: data truncated: expected 24 bytes, found 20");
	parse_fails(buf, build(buf, 3, F32_2x3, f32_values, 0),
		    "x.npy: data truncated: expected 24 bytes, found 0");
	parse_fails(buf, build(buf, 1, F32_2x3, extra, 28),
		    "x.npy: data too long: expected 24 bytes, found 28");
}

Test(parse, rejects_bad_preambles)
{
	uint8_t buf[512];
	size_t len = build(buf, 1, F32_2x3, f32_values, 24);
	char err[ERR_LEN];
	parse_fails(buf, 0, "x.npy: truncated: 0 bytes");
	parse_fails(buf, 7, "truncated: 7 bytes");
	parse_fails(buf, 9, "header length is missing");
	parse_fails((const uint8_t *)"PK\x03\x04 zip file", 14, "x.npy: not a .npy file (bad magic)");
	buf[0] = 0x92;
	parse_fails(buf, len, "bad magic");
	buf[0] = 0x93;
	buf[6] = 4;
	parse_fails(buf, len, "unsupported .npy format version 4.0");
	buf[6] = 1;
	buf[7] = 1;
	parse_fails(buf, len, "unsupported .npy format version 1.1");
	buf[7] = 0;
	cr_assert_null(tessel_npy_parse(NULL, 5, "x.npy", err, sizeof err));
}

Test(parse, rejects_lying_header_lengths)
{
	uint8_t buf[512];
	size_t len = build(buf, 1, F32_2x3, f32_values, 24);
	buf[8] = 0xff;
	buf[9] = 0xff;
	parse_fails(buf, len, "x.npy: header length 65535 exceeds the 84 bytes left in the file");
	len = build(buf, 2, F32_2x3, f32_values, 24);
	buf[11] = 0x80;
	parse_fails(buf, len, "header length 2147483708 exceeds the 84 bytes left");
	len = build(buf, 1, F32_2x3, f32_values, 24);
	buf[8] -= 4;
	parse_fails(buf, len, "header does not end with a newline");
	buf[8] += 8;
	parse_fails(buf, len, "header does not end with a newline");
	build(buf, 1, F32_2x3, f32_values, 24);
	parse_fails(buf, 30, "header length 60 exceeds the 20 bytes left");
	len = build(buf, 1, "", NULL, 0);
	parse_fails(buf, len, "header does not end with a newline");
}

Test(parse, rejects_headers_over_the_size_limit)
{
	size_t header_len = (1u << 20) + 64;
	uint8_t *buf = malloc(12 + header_len);
	memcpy(buf, "\x93NUMPY\x02\x00", 8);
	for (int i = 0; i < 4; i++)
		buf[8 + i] = (uint8_t)(header_len >> (8 * i));
	memset(buf + 12, ' ', header_len);
	parse_fails(buf, 12 + header_len,
		    "header length 1048640 exceeds the limit of 1048576 bytes");
	free(buf);
}

Test(parse, rejects_a_missing_newline)
{
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }  ",
		     24, "header does not end with a newline");
}

Test(parse, rejects_unsupported_dtypes)
{
	header_fails("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "header: big-endian dtype '>f4' is not supported");
	header_fails("{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }\n",
		     24, "big-endian");
	header_fails("{'descr': '=f4', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "dtype '=f4' does not say little-endian");
	header_fails("{'descr': '|f4', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "does not say little-endian");
	header_fails("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }\n",
		     24, "x.npy: header: unsupported dtype '<c8'");
	header_fails("{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }\n",
		     6, "unsupported dtype '<V2'");
	header_fails("{'descr': '<f4 ', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "unsupported dtype '<f4 '");
	header_fails("{'descr': '', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "unsupported dtype ''");
	header_fails("{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "unsupported dtype 'f4'");
	header_fails("{'descr': '\x01\xff?', 'fortran_order': False, 'shape': (3,), }\n",
		     12, "unsupported dtype '\\x01\\xff?'");
	header_fails("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }\n",
		     12, "expected a string");
	header_fails("{'descr': 'O', 'fortran_order': False, 'shape': (3,), }\n",
		     24, "unsupported dtype 'O'");
	header_fails("{'descr': '0123456789012345678901234567890123456789ABCDEF', "
		     "'fortran_order': False, 'shape': (3,), }\n",
		     24, "unsupported dtype '0123456789012345678901234567890123456789...'");
}

Test(parse, rejects_fortran_order)
{
	header_fails("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n",
		     24, "x.npy: header: fortran_order True (column-major data) is not supported");
}

Test(parse, rejects_bad_shapes)
{
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n",
		     0, "header: shape has too many elements");
	header_fails("{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,), }\n",
		     0, "too many elements");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
		     0, "dimension too large");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\n",
		     0, "negative dimension");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n",
		     4, "shape has more than 8 dimensions");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n",
		     12, "'shape' must be a tuple");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': [3], }\n",
		     12, "'shape' must be a tuple");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,,), }\n",
		     12, "expected a dimension");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }\n",
		     12, "expected ',' or ')'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,), }\n",
		     12, "expected ',' or ')'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (,), }\n",
		     0, "expected a dimension");
}

Test(parse, rejects_garbage_dicts)
{
	header_fails("hello\n", 0, "header: expected '{' at offset 0");
	header_fails("\n", 0, "expected '{'");
	header_fails("{'descr': '<f4', 'fortran_order': False}\n", 0, "missing key 'shape'");
	header_fails("{}\n", 0, "missing key 'descr'");
	header_fails("{'descr': '<f4', 'shape': (3,)}\n", 12, "missing key 'fortran_order'");
	header_fails("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\n",
		     12, "duplicate key 'descr'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}\n",
		     12, "unexpected key 'extra'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,) junk}\n",
		     12, "expected ',' or '}'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x\n",
		     12, "unexpected text after the dict");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}}\n",
		     12, "unexpected text after the dict");
	header_fails("{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}\n",
		     12, "unsupported dtype '<f4, '");
	header_fails("{'descr' '<f4'}\n", 12, "expected ':' after a key");
	header_fails("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (3,)}\n",
		     12, "'fortran_order' must be True or False");
	header_fails("{'descr': '<f4', 'fortran_order': 'False', 'shape': (3,)}\n",
		     12, "'fortran_order' must be True or False");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)\n",
		     12, "expected ',' or '}'");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (3,),,}\n",
		     12, "expected a string");
	header_fails("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (3,)}\n",
		     12, "unsupported escape in a string");
	header_fails("{'descr': '<f4', 'fortran_order': False, 'sha\n",
		     12, "unterminated string at offset 45");
	header_fails("{'descr\n", 12, "unterminated string");
	header_fails("{descr: '<f4'}\n", 12, "expected a string");
}

Test(parse, messages_fit_small_buffers)
{
	uint8_t buf[512];
	size_t len = build(buf, 1, F32_2x3, f32_values, 20);
	char err[8];
	memset(err, 'x', sizeof err);
	cr_assert_null(tessel_npy_parse(buf, len, "x.npy", err, sizeof err));
	cr_assert_str_eq(err, "x.npy: ");
	cr_assert_null(tessel_npy_parse(buf, len, NULL, err, 1));
	cr_assert_eq(err[0], '\0');
}

/* Load the "len" bytes at "bytes" through a pipe, where the reader cannot
 * know the size beforehand; return the tensor, or NULL with "err" set. */
static tessel_tensor *load_through_pipe(const uint8_t *bytes, size_t len,
	char *err, size_t errlen)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	cr_assert_eq(write(fds[1], bytes, len), (ssize_t)len);
	close(fds[1]);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
	tessel_tensor *t = tessel_npy_load(path, err, errlen);
	close(fds[0]);
	return t;
}

Test(parse, streams_of_unknown_size)
{
	if (access("/proc/self/fd", R_OK) != 0)
		cr_skip_test("no /proc/self/fd");
	uint8_t buf[512], extra[28] = { 0 };
	char err[ERR_LEN] = "";
	tessel_tensor *t = load_through_pipe(buf,
		build(buf, 2, F32_2x3, f32_values, 24), err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(tessel_tensor_get(t, 5), f32_values[5]);
	tessel_tensor_free(t);
	cr_assert_null(load_through_pipe(buf,
		build(buf, 1, F32_2x3, f32_values, 20), err, sizeof err));
	cr_assert(strstr(err, "data truncated: expected 24 bytes, found 20"), "%s", err);
	cr_assert_null(load_through_pipe(buf,
		build(buf, 1, F32_2x3, extra, 28), err, sizeof err));
	cr_assert(strstr(err, "data too long: trailing bytes after the expected 24"), "%s", err);
	cr_assert_null(load_through_pipe(buf, 30, err, sizeof err));
	cr_assert(strstr(err, "header truncated: expected 60 bytes, found 20"), "%s", err);
}

/* ------------------------------------------------------------------ */
/* Files written by NumPy 2.x (tests/data/npy) */

/* Load the NumPy-written test file "file", failing the test if it does not
 * load. */
static tessel_tensor *load_data(const char *file)
{
	char dir[600], path[700], err[ERR_LEN];
	join(path, sizeof path, data_dir(dir, sizeof dir), file);
	tessel_tensor *t = tessel_npy_load(path, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	return t;
}

Test(numpy_files, format_1_0)
{
	tessel_tensor *f = load_data("f32_2x3_v1.npy");
	cr_assert_eq(f->dtype, TESSEL_F32);
	cr_assert(f->ndim == 2 && f->shape[0] == 2 && f->shape[1] == 3);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(tessel_tensor_get(f, i), i / 4.0 - 0.5);
	tessel_tensor_free(f);

	tessel_tensor *s = load_data("i64_scalar_v1.npy");
	cr_assert(s->dtype == TESSEL_I64 && s->ndim == 0);
	cr_assert_eq(tessel_tensor_get_i64(s, 0), -1234567890123);
	tessel_tensor_free(s);

	tessel_tensor *b = load_data("bool_4_v1.npy");
	cr_assert(b->dtype == TESSEL_BOOL && b->shape[0] == 4);
	int64_t want_bools[] = { 1, 0, 0, 1 };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tessel_tensor_get_i64(b, i), want_bools[i]);
	tessel_tensor_free(b);

	tessel_tensor *h = load_data("f16_3_v1.npy");
	cr_assert_eq(h->dtype, TESSEL_F16);
	cr_assert_eq(bits16(h, 0), 0x3c00);
	cr_assert_eq(bits16(h, 1), 0x7bff);
	cr_assert_eq(bits16(h, 2), 0xae66);
	tessel_tensor_free(h);

	tessel_tensor *z = load_data("i8_0x3_v1.npy");
	cr_assert(z->dtype == TESSEL_I8 && z->ndim == 2);
	cr_assert(z->shape[0] == 0 && z->shape[1] == 3);
	tessel_tensor_free(z);
}

Test(numpy_files, format_2_0)
{
	tessel_tensor *t = load_data("f64_3_v2.npy");
	cr_assert(t->dtype == TESSEL_F64 && t->ndim == 1 && t->shape[0] == 3);
	cr_assert_eq(tessel_tensor_get(t, 0), 1.5);
	cr_assert_eq(tessel_tensor_get(t, 1), -2.25);
	cr_assert_eq(tessel_tensor_get(t, 2), 1e300);
	tessel_tensor_free(t);
}

Test(numpy_files, format_3_0)
{
	tessel_tensor *t = load_data("i32_2x2_v3.npy");
	cr_assert(t->dtype == TESSEL_I32 && t->ndim == 2);
	int64_t want[] = { 1, -2, INT32_MAX, INT32_MIN };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(tessel_tensor_get_i64(t, i), want[i]);
	tessel_tensor_free(t);
}
