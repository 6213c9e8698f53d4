/* Dense tensors: the data users hand to tessel and get back.  Implemented in
 * runtime/, which an exported library links alone. */
#ifndef TESSEL_TENSOR_H
#define TESSEL_TENSOR_H

#include <stdint.h>
#include <stdio.h>

#include "tessel/api.h"
#include "tessel/dtype.h"

#define TESSEL_MAX_DIMS 8
#define TESSEL_ALIGNMENT 64

/* A strided view of elements of one dtype.  Strides count elements, not
 * bytes.  A tensor made by tessel_tensor_new owns its storage, aligned to
 * TESSEL_ALIGNMENT bytes and C-ordered. */
typedef struct tessel_tensor {
	tessel_dtype dtype;
	int ndim;
	int64_t shape[TESSEL_MAX_DIMS];
	int64_t strides[TESSEL_MAX_DIMS];
	void *data;
	int owns_data;
} tessel_tensor;

/* Return a new zero-filled C-ordered tensor, or NULL (with a message in
 * "err" of size "errlen" when not NULL) if the shape is invalid, its
 * element count overflows, or memory runs out. */
TESSEL_API __tessel_give tessel_tensor *tessel_tensor_new(tessel_dtype dtype,
	int ndim, const int64_t *shape, char *err, size_t errlen);
TESSEL_API void tessel_tensor_free(__tessel_take tessel_tensor *t);

/* Return the number of elements of "t". */
TESSEL_API int64_t tessel_tensor_numel(__tessel_keep const tessel_tensor *t);

/* Read or write the element at flat C-order position "i" of "t" as a double
 * (integers above 2^53 lose precision: use the _i64 forms for those). */
TESSEL_API double tessel_tensor_get(__tessel_keep const tessel_tensor *t,
	int64_t i);
TESSEL_API void tessel_tensor_set(__tessel_keep tessel_tensor *t, int64_t i,
	double v);
TESSEL_API int64_t tessel_tensor_get_i64(__tessel_keep const tessel_tensor *t,
	int64_t i);
TESSEL_API void tessel_tensor_set_i64(__tessel_keep tessel_tensor *t,
	int64_t i, int64_t v);

/* Fill "t" with values drawn from "seed": floats uniform in [-1, 1), ints
 * uniform in [-8, 8), u8 in [0, 256), bools fair.  The same seed gives the
 * same data on every machine. */
TESSEL_API void tessel_tensor_fill_random(__tessel_keep tessel_tensor *t,
	uint64_t seed);

/* Read a NumPy .npy file (format 1.0, 2.0 or 3.0, little-endian, C order).
 * Return NULL and a message naming "path" in "err" on any malformed,
 * truncated or unsupported file. */
TESSEL_API __tessel_give tessel_tensor *tessel_npy_load(const char *path,
	char *err, size_t errlen);
/* As tessel_npy_load, from the "size" bytes at "data"; "name" labels errors. */
TESSEL_API __tessel_give tessel_tensor *tessel_npy_parse(const void *data,
	size_t size, const char *name, char *err, size_t errlen);
/* Write "t" to "path" as .npy (format 1.0, or 2.0 when the header needs
 * it).  Return 0, or -1 with a message in "err". */
TESSEL_API int tessel_npy_save(const char *path,
	__tessel_keep const tessel_tensor *t, char *err, size_t errlen);

#endif
