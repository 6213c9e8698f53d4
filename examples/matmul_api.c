/* Build a matmul through the C API (the same IR the .te language makes),
 * bind its sizes, evaluate it with the reference interpreter and check one
 * element by hand.
 *
 *   op matmul(A: f32[M, K], B: f32[K, N]) -> C {
 *     C[i, j] = sum(k) A[i, k] * B[k, j]
 *   }
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tessel/te.h"

/* Declare the matmul op in "ctx"; NULL on error. */
static tessel_op *declare_matmul(tessel_ctx *ctx)
{
	tessel_op *op = tessel_op_new(ctx, "matmul");
	tessel_expr *a_dims[] = { tessel_size(op, "M"), tessel_size(op, "K") };
	tessel_expr *b_dims[] = { tessel_size(op, "K"), tessel_size(op, "N") };
	tessel_stage *a = tessel_op_input(op, "A", TESSEL_F32, 2, a_dims);
	tessel_stage *b = tessel_op_input(op, "B", TESSEL_F32, 2, b_dims);
	const char *axes[] = { "i", "j" };
	tessel_stage *c = tessel_op_compute(op, "C", 2, axes);
	tessel_var *k = tessel_stage_reduce_axis(c, "k", NULL, NULL);
	tessel_expr *a_idx[] = { tessel_var_ref(op, tessel_stage_axis(c, 0)),
				 tessel_var_ref(op, k) };
	tessel_expr *b_idx[] = { tessel_var_ref(op, k),
				 tessel_var_ref(op, tessel_stage_axis(c, 1)) };
	tessel_expr *body = tessel_binary_op(op, TESSEL_MUL,
		tessel_access(op, a, 2, a_idx), tessel_access(op, b, 2, b_idx));
	if (!a || !b || !c || !k || tessel_stage_set_body(c, TESSEL_SUM, body) ||
	    tessel_op_output(op, c) || tessel_op_finish(op)) {
		tessel_op_release(op);
		return NULL;
	}
	return op;
}

int main(void)
{
	tessel_ctx *ctx = tessel_ctx_new();
	tessel_op *generic = declare_matmul(ctx);
	const char *names[] = { "M", "N", "K" };
	const int64_t values[] = { 4, 3, 5 };
	tessel_op *op = generic ? tessel_op_bind(generic, 3, names, values) : NULL;
	if (!op) {
		tessel_ctx_print_error(ctx, stderr);
		return 1;
	}
	char *text = tessel_op_print(op);
	printf("%s", text);
	free(text);

	int64_t a_shape[] = { 4, 5 }, b_shape[] = { 5, 3 }, c_shape[] = { 4, 3 };
	tessel_tensor *a = tessel_tensor_new(TESSEL_F32, 2, a_shape, NULL, 0);
	tessel_tensor *b = tessel_tensor_new(TESSEL_F32, 2, b_shape, NULL, 0);
	tessel_tensor *c = tessel_tensor_new(TESSEL_F32, 2, c_shape, NULL, 0);
	tessel_tensor_fill_random(a, 1);
	tessel_tensor_fill_random(b, 2);
	tessel_tensor *in[] = { a, b }, *out[] = { c };
	int status = tessel_interp(op, in, out);
	if (status)
		tessel_ctx_print_error(ctx, stderr);

	double expect = 0;
	for (int k = 0; k < 5; k++)
		expect += tessel_tensor_get(a, 1 * 5 + k) * tessel_tensor_get(b, k * 3 + 2);
	double got = tessel_tensor_get(c, 1 * 3 + 2);
	printf("C[1, 2] = %.6f (by hand %.6f)\n", got, expect);
	if (fabs(got - (float)expect) > 1e-5)
		status = 1;

	tessel_tensor_free(a);
	tessel_tensor_free(b);
	tessel_tensor_free(c);
	tessel_op_release(op);
	tessel_op_release(generic);
	tessel_ctx_free(ctx);
	return status ? 1 : 0;
}
