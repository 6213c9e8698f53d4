#include "tools/vendor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const vendor *const vendors[] = { &vendor_openblas, &vendor_onednn,
	&vendor_cublas, &vendor_cudnn };

const vendor *vendor_find(const char *name)
{
	for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
		if (strcmp(vendors[i]->name, name) == 0)
			return vendors[i];
	return NULL;
}

const vendor *vendor_nth(int i)
{
	int n = (int)(sizeof(vendors) / sizeof(vendors[0]));
	return i >= 0 && i < n ? vendors[i] : NULL;
}

void vendor_names(vendor_where where, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]) && used < len; i++)
		if (where == VENDORS_ALL || vendors[i]->cuda == (where == VENDORS_CUDA))
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
				vendors[i]->name);
}

/* Return the text of attribute "name" in "set", or "def". */
static const char *attr_text(const cli_set *set, const char *name, const char *def)
{
	for (int i = 0; i < set->n; i++)
		if (strcmp(set->keys[i], name) == 0)
			return set->values[i];
	return def;
}

/* Return the boolean attribute "name" of "set" (0/1/true/false). */
static bool attr_bool(const cli_set *set, const char *name, bool def)
{
	const char *v = attr_text(set, name, NULL);
	if (!v)
		return def;
	return strcmp(v, "1") == 0 || strcmp(v, "true") == 0;
}

/* Read the attribute "name" of "set", one value or [h, w], into "hw". */
static void attr_pair(const cli_set *set, const char *name, int64_t def,
	int64_t hw[2])
{
	const char *v = attr_text(set, name, NULL);
	hw[0] = hw[1] = def;
	if (!v)
		return;
	char *end;
	hw[0] = hw[1] = strtoll(v + (v[0] == '['), &end, 10);
	if (*end == ',')
		hw[1] = strtoll(end + 1, &end, 10);
}

/* Return extent "i" of input "which" of "op". */
static int64_t in_dim(const tessel_op *op, int which, int i)
{
	return tessel_stage_dim(tessel_op_input_at(op, which), i);
}

static int64_t out_dim(const tessel_op *op, int i)
{
	return tessel_stage_dim(tessel_op_output_at(op, 0), i);
}

/* Return whether the built-in op "name" takes out_dtype (ops/linalg.c,
 * ops/conv.c): its sum may be wider than its inputs, and its bias, the
 * last of three inputs, is of the output's dtype. */
static bool widens(const char *name)
{
	static const char *const ops[] = { "matmul", "batch_matmul", "dense", "conv2d" };
	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		if (strcmp(name, ops[i]) == 0)
			return true;
	return false;
}

/* Set p->dtype, p->weight_dtype and p->out_dtype from the inputs and the
 * output of "op" (vendor_problem).  Else say why in p->why and return
 * false. */
static bool problem_dtypes(vendor_problem *p, const tessel_op *op)
{
	bool gemm = widens(p->op);
	int nin = tessel_op_num_inputs(op);
	p->dtype = tessel_stage_dtype(tessel_op_input_at(op, 0));
	p->weight_dtype = gemm && nin > 1 ? tessel_stage_dtype(tessel_op_input_at(op, 1))
		: p->dtype;
	p->out_dtype = tessel_stage_dtype(tessel_op_output_at(op, 0));
	for (int i = 0; i < nin; i++) {
		bool bias = gemm && nin == 3 && i == 2;
		if (tessel_stage_dtype(tessel_op_input_at(op, i)) !=
		    (bias ? p->out_dtype : gemm && i == 1 ? p->weight_dtype : p->dtype)) {
			snprintf(p->why, sizeof(p->why), "inputs of several dtypes");
			return false;
		}
	}
	tessel_dtype in = p->dtype, w = p->weight_dtype, out = p->out_dtype;
	bool plain = in == out && w == in &&
		(in == TESSEL_F32 || in == TESSEL_F16 || in == TESSEL_BF16);
	bool widened = gemm && ((out == TESSEL_F32 && w == in &&
		(in == TESSEL_F16 || in == TESSEL_BF16)) ||
		((in == TESSEL_I8 || in == TESSEL_U8) && w == TESSEL_I8 && out == TESSEL_I32));
	if (plain || widened)
		return true;
	if (in == out)
		snprintf(p->why, sizeof(p->why), "dtype %s", tessel_dtype_name(in));
	else if (w != in)
		snprintf(p->why, sizeof(p->why), "%s with %s weights into %s",
			tessel_dtype_name(in), tessel_dtype_name(w), tessel_dtype_name(out));
	else
		snprintf(p->why, sizeof(p->why), "%s into %s", tessel_dtype_name(in),
			tessel_dtype_name(out));
	return false;
}

/* matmul and batch_matmul: C[(B,) M, N] = op(A) * op(B). */
static void gemm_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set, int batched)
{
	p->kind = VENDOR_GEMM;
	p->trans_a = attr_bool(set, "transpose_a", false);
	p->trans_b = attr_bool(set, "transpose_b", false);
	p->batch = batched ? out_dim(op, 0) : 1;
	p->m = out_dim(op, batched);
	p->n = out_dim(op, batched + 1);
	p->k = in_dim(op, 0, batched + !p->trans_a);
}

/* dense: Y[batch, out] = X[batch, in] * W[out, in]^T (+ Bias[out]). */
static void dense_problem(vendor_problem *p, const tessel_op *op)
{
	p->kind = VENDOR_GEMM;
	p->batch = 1;
	p->trans_b = true;
	p->bias = tessel_op_num_inputs(op) == 3;
	p->m = out_dim(op, 0);
	p->n = out_dim(op, 1);
	p->k = in_dim(op, 0, 1);
}

/* conv2d in NCHW or NHWC, grouped or not; VENDOR_NONE otherwise. */
static void conv_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set)
{
	const char *layout = attr_text(set, "layout", "NCHW");
	if (strcmp(layout, "NCHW") != 0 && strcmp(layout, "NHWC") != 0) {
		snprintf(p->why, sizeof(p->why), "layout=%s; only NCHW and NHWC", layout);
		return;
	}
	p->channels_last = strcmp(layout, "NHWC") == 0;
	p->groups = strtoll(attr_text(set, "groups", "1"), NULL, 10);
	attr_pair(set, "stride", 1, p->stride);
	attr_pair(set, "padding", 0, p->padding);
	attr_pair(set, "dilation", 1, p->dilation);
	bool cl = p->channels_last;
	p->dims[CONV_N] = in_dim(op, 0, 0);
	p->dims[CONV_C] = in_dim(op, 0, cl ? 3 : 1);
	p->dims[CONV_H] = in_dim(op, 0, cl ? 1 : 2);
	p->dims[CONV_W] = in_dim(op, 0, cl ? 2 : 3);
	p->dims[CONV_F] = in_dim(op, 1, cl ? 3 : 0);
	p->dims[CONV_R] = in_dim(op, 1, cl ? 0 : 2);
	p->dims[CONV_S] = in_dim(op, 1, cl ? 1 : 3);
	p->dims[CONV_OH] = out_dim(op, cl ? 1 : 2);
	p->dims[CONV_OW] = out_dim(op, cl ? 2 : 3);
	if (p->groups < 1 || p->dims[CONV_C] % p->groups || p->dims[CONV_F] % p->groups) {
		snprintf(p->why, sizeof(p->why), "groups=%lld", (long long)p->groups);
		return;
	}
	for (int i = 0; i < 2; i++) {
		int64_t extent = p->dims[CONV_H + i] + 2 * p->padding[i]
			- p->dilation[i] * (p->dims[CONV_R + i] - 1) - 1;
		if (p->stride[i] < 1 || extent / p->stride[i] + 1 != p->dims[CONV_OH + i]) {
			snprintf(p->why, sizeof(p->why), "these stride/padding/dilation");
			return;
		}
	}
	p->kind = VENDOR_CONV2D;
}

/* max_pool2d, avg_pool2d (attributes kernel, stride: the kernel when
 * "[]" or absent, padding, count_include_pad) and global_avg_pool: NCHW
 * windows; VENDOR_NONE where the output's extents disagree with them. */
static void pool_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set)
{
	bool global = strcmp(p->op, "global_avg_pool") == 0;
	for (int d = 0; d < 4; d++)
		p->dims[CONV_N + d] = in_dim(op, 0, d);
	int64_t kernel[2] = { p->dims[CONV_H], p->dims[CONV_W] };
	p->stride[0] = p->stride[1] = 1;
	if (!global) {
		attr_pair(set, "kernel", 1, kernel);
		const char *stride = attr_text(set, "stride", "[]");
		memcpy(p->stride, kernel, sizeof(kernel));
		if (strcmp(stride, "[]") != 0)
			attr_pair(set, "stride", 1, p->stride);
		attr_pair(set, "padding", 0, p->padding);
	}
	p->dims[CONV_R] = kernel[0];
	p->dims[CONV_S] = kernel[1];
	bool rows = tessel_stage_ndim(tessel_op_output_at(op, 0)) == 4;
	p->dims[CONV_OH] = rows ? out_dim(op, 2) : 1;
	p->dims[CONV_OW] = rows ? out_dim(op, 3) : 1;
	for (int i = 0; i < 2; i++) {
		int64_t extent = p->dims[CONV_H + i] + 2 * p->padding[i] - kernel[i];
		if (p->stride[i] < 1 || kernel[i] < 1 || extent < 0 ||
		    extent / p->stride[i] + 1 != p->dims[CONV_OH + i]) {
			snprintf(p->why, sizeof(p->why), "these kernel/stride/padding");
			return;
		}
	}
	p->pool = p->op[0] == 'm' ? POOL_MAX :
		attr_bool(set, "count_include_pad", true) ? POOL_AVG_WITH_PADDING :
		POOL_AVG_WITHOUT_PADDING;
	p->kind = VENDOR_POOL2D;
}

/* Set "p"'s ndim and shape to those of the first input of "op". */
static void input_shape(vendor_problem *p, const tessel_op *op)
{
	const tessel_stage *x = tessel_op_input_at(op, 0);
	p->ndim = tessel_stage_ndim(x);
	for (int d = 0; d < p->ndim; d++)
		p->shape[d] = tessel_stage_dim(x, d);
}

/* transpose: X's shape, and attribute "perm" ("[]": the axes reversed,
 * negative axes from the end), which the op's instantiation checked. */
static void transpose_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set)
{
	input_shape(p, op);
	int n = p->ndim;
	const char *v = attr_text(set, "perm", "[]");
	for (int d = 0; d < n; d++)
		p->perm[d] = n - 1 - d;
	v += strspn(v, "[ ");
	for (int d = 0; d < n && *v && *v != ']'; d++) {
		char *end;
		long a = strtol(v, &end, 10);
		p->perm[d] = (int)(a < 0 ? a + n : a);
		v = end + strspn(end, ", ");
	}
	p->kind = VENDOR_TRANSPOSE;
}

/* softmax and log_softmax: X's shape and attribute "axis" (negative from
 * the end), which the op's instantiation checked. */
static void softmax_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set, bool log)
{
	input_shape(p, op);
	long a = strtol(attr_text(set, "axis", "-1"), NULL, 10);
	p->axis = (int)(a < 0 ? a + p->ndim : a);
	p->log = log;
	p->kind = VENDOR_SOFTMAX;
}

/* layer_norm (attributes axis, negative from the end, and eps; Gamma
 * and Beta when the op has three inputs) and batch_norm (eps; rank 2 to
 * 5, as oneDNN takes it). */
static void norm_problem(vendor_problem *p, const tessel_op *op,
	const cli_set *set, bool layer)
{
	input_shape(p, op);
	p->eps = strtod(attr_text(set, "eps", "1e-5"), NULL);
	if (layer) {
		long a = strtol(attr_text(set, "axis", "-1"), NULL, 10);
		p->axis = (int)(a < 0 ? a + p->ndim : a);
		p->affine = tessel_op_num_inputs(op) == 3;
		p->kind = VENDOR_LAYER_NORM;
	} else if (p->ndim < 2 || p->ndim > 5) {
		snprintf(p->why, sizeof(p->why), "rank %d; oneDNN takes 2 to 5", p->ndim);
	} else {
		p->kind = VENDOR_BATCH_NORM;
	}
}

void vendor_problem_init(vendor_problem *p, const tessel_op *op,
	const cli_set *set, bool builtin)
{
	memset(p, 0, sizeof(*p));
	p->op = tessel_op_name(op);
	if (!builtin) {
		snprintf(p->why, sizeof(p->why), "an op from a .te file");
		return;
	}
	if (!problem_dtypes(p, op))
		return;
	if (strcmp(p->op, "matmul") == 0)
		gemm_problem(p, op, set, 0);
	else if (strcmp(p->op, "batch_matmul") == 0)
		gemm_problem(p, op, set, 1);
	else if (strcmp(p->op, "dense") == 0)
		dense_problem(p, op);
	else if (strcmp(p->op, "conv2d") == 0)
		conv_problem(p, op, set);
	else if (strcmp(p->op, "transpose") == 0)
		transpose_problem(p, op, set);
	else if (strcmp(p->op, "softmax") == 0 || strcmp(p->op, "log_softmax") == 0)
		softmax_problem(p, op, set, p->op[0] == 'l');
	else if (strcmp(p->op, "max_pool2d") == 0 || strcmp(p->op, "avg_pool2d") == 0 ||
		 strcmp(p->op, "global_avg_pool") == 0)
		pool_problem(p, op, set);
	else if (strcmp(p->op, "layer_norm") == 0 || strcmp(p->op, "batch_norm") == 0)
		norm_problem(p, op, set, p->op[0] == 'l');
}
