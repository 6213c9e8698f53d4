/* libFuzzer target for the .npy reader: any bytes must give a tensor whose
 * size matches the input, or an error that names the input; never a crash,
 * an out-of-bounds read or a leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/tensor.h"

#define FUZZ_NAME "fuzz.npy"

/* Abort unless "err" is a message that starts with the input's name. */
static void check_error_message(const char *err)
{
	size_t n = strlen(FUZZ_NAME ": ");
	if (strncmp(err, FUZZ_NAME ": ", n) != 0 || err[n] == '\0')
		abort();
}

/* Abort unless every element of "t" reads back, its data fits in the
 * "size" input bytes, and bools hold 0 or 1. */
static void check_tensor(const tessel_tensor *t, size_t size)
{
	int64_t n = tessel_tensor_numel(t);
	if (n < 0 || (uint64_t)n * tessel_dtype_size(t->dtype) > size)
		abort();
	for (int64_t i = 0; i < n; i++) {
		int64_t v = tessel_tensor_get_i64(t, i);
		if (t->dtype == TESSEL_BOOL && v != 0 && v != 1)
			abort();
		(void)tessel_tensor_get(t, i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "";
	tessel_tensor *t = tessel_npy_parse(data, size, FUZZ_NAME, err,
					    sizeof err);
	if (t)
		check_tensor(t, size);
	else
		check_error_message(err);
	tessel_tensor_free(t);
	return 0;
}
