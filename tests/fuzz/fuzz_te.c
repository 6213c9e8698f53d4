/* libFuzzer target for the .te language: parse, and for every op that
 * parses, print it, parse the print back (it must succeed and be
 * structurally equal), and bind every symbol to a small value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/te.h"

static void check_round_trip(tessel_ctx *ctx, tessel_op *op)
{
	char *text = tessel_op_print(op);
	tessel_module *again = tessel_parse(ctx, "print.te", text, strlen(text));
	if (!again || !tessel_op_equal(op, tessel_module_op(again, 0))) {
		fprintf(stderr, "round trip failed for:\n%s", text);
		if (!again)
			tessel_ctx_print_error(ctx, stderr);
		abort();
	}
	tessel_module_free(again);
	free(text);
}

static void try_bind(tessel_ctx *ctx, tessel_op *op, uint8_t seed)
{
	int n = tessel_op_num_symbols(op);
	if (n > 16)
		return;
	const char *names[16];
	int64_t values[16];
	for (int i = 0; i < n; i++) {
		names[i] = tessel_op_symbol_name(op, i);
		values[i] = 1 + (seed + 3 * i) % 5;
	}
	tessel_op *bound = tessel_op_bind(op, n, names, values);
	if (bound)
		check_round_trip(ctx, bound);
	tessel_op_release(bound);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_module *m = tessel_parse(ctx, "fuzz.te", (const char *)data, size);
	for (int i = 0; m && i < tessel_module_num_ops(m); i++) {
		check_round_trip(ctx, tessel_module_op(m, i));
		try_bind(ctx, tessel_module_op(m, i), size ? data[0] : 0);
	}
	tessel_module_free(m);
	tessel_ctx_free(ctx);
	return 0;
}
