/* oneDNN, loaded with dlopen: forward convolution (direct algorithm) for
 * CONV2D problems, the matmul primitive for GEMM problems, a reorder
 * (the source described by permuted strides) for TRANSPOSE ones, the
 * softmax and logsoftmax primitives for SOFTMAX ones, and pooling
 * (POOL2D), layer and batch normalization (LAYER_NORM, BATCH_NORM) on
 * the plain data (oneDNN takes the source's layout as given): f32, and
 * bf16 and f16 but for the normalizations (whose statistics and scales
 * oneDNN takes in f32), where the CPU has an implementation.  The
 * convolution runs on the layouts oneDNN picks itself (format_tag::any):
 * the inputs are reordered into them once when prepared, and the output
 * back to NCHW after a run for checking; neither reorder is timed.  The
 * matmul runs on the plain row-major data, transposes given as strides.
 * The calls are declared from oneapi/dnnl/dnnl.h (2.x API: the library's
 * major version must match the header's).  The Debian build threads with
 * OpenMP: OMP_NUM_THREADS is set before loading, and since libgomp may be
 * loaded already (by xgboost), omp_set_num_threads is called too and
 * omp_get_max_threads read back. */
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/vendor.h"

#define DNNL_FUNCTIONS(X) \
	X(dnnl_version) X(dnnl_engine_create) X(dnnl_engine_destroy) \
	X(dnnl_stream_create) X(dnnl_stream_destroy) X(dnnl_stream_wait) \
	X(dnnl_memory_desc_init_by_tag) X(dnnl_memory_desc_init_by_strides) \
	X(dnnl_memory_desc_equal) X(dnnl_memory_create) X(dnnl_memory_destroy) \
	X(dnnl_memory_get_memory_desc) X(dnnl_dilated_convolution_forward_desc_init) \
	X(dnnl_matmul_desc_init) X(dnnl_reorder_primitive_desc_create) \
	X(dnnl_softmax_forward_desc_init) X(dnnl_logsoftmax_forward_desc_init) \
	X(dnnl_pooling_forward_desc_init) X(dnnl_layer_normalization_forward_desc_init) \
	X(dnnl_batch_normalization_forward_desc_init) \
	X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_destroy) \
	X(dnnl_primitive_desc_query) X(dnnl_primitive_desc_query_md) \
	X(dnnl_primitive_create) X(dnnl_primitive_destroy) X(dnnl_primitive_execute)

#define DNNL_POINTER(f) __typeof__(f) *f;
#define DNNL_SYMBOL(f) { #f, offsetof(struct dnnl_api, f) },
#define STRINGIFY(x) #x
#define LIBDNNL_SONAME(major) "libdnnl.so." STRINGIFY(major)

static struct dnnl_api {
	void *lib;
	void (*omp_set_num_threads)(int);
	int (*omp_get_max_threads)(void);
	DNNL_FUNCTIONS(DNNL_POINTER)
} dn;

static const struct dnnl_symbol {
	const char *name;
	size_t offset;
} dnnl_symbols[] = { DNNL_FUNCTIONS(DNNL_SYMBOL) };

/* A oneDNN primitive with its memories: "user" on the caller's data (the
 * last one the output), "mem" what the primitive takes (the same memory
 * where the layouts agree). */
#define DNNL_JOB_ARGS 6

typedef struct dnnl_job {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	int nargs;
	dnnl_memory_t user[DNNL_JOB_ARGS];
	dnnl_memory_t mem[DNNL_JOB_ARGS];
	dnnl_exec_arg_t args[DNNL_JOB_ARGS];
	char err[256];
} dnnl_job;

/* The oneDNN data type of "dt" (one vendor_problem takes). */
static dnnl_data_type_t dnnl_type(tessel_dtype dt)
{
	switch (dt) {
	case TESSEL_BF16: return dnnl_bf16;
	case TESSEL_F16: return dnnl_f16;
	case TESSEL_I8: return dnnl_s8;
	case TESSEL_U8: return dnnl_u8;
	case TESSEL_I32: return dnnl_s32;
	default: return dnnl_f32;
	}
}

/* The oneDNN data type of the problem's inputs. */
static dnnl_data_type_t data_type(const vendor_problem *p)
{
	return dnnl_type(p->dtype);
}

static bool onednn_supports(const vendor_problem *p)
{
	if (p->dtype != TESSEL_F32 &&
	    (p->kind == VENDOR_LAYER_NORM || p->kind == VENDOR_BATCH_NORM))
		return false;
	return p->kind == VENDOR_GEMM || p->kind == VENDOR_CONV2D || p->kind == VENDOR_POOL2D ||
	       ((p->kind == VENDOR_TRANSPOSE || p->kind == VENDOR_SOFTMAX ||
		 p->kind == VENDOR_LAYER_NORM || p->kind == VENDOR_BATCH_NORM) &&
		p->ndim <= DNNL_MAX_NDIMS);
}

/* Find "name" in the loaded library (or what it loaded) into "*fn". */
static int find_symbol(const char *name, void *fn, size_t size, char *err,
	size_t errlen)
{
	void *sym = dlsym(dn.lib, name);
	if (!sym) {
		snprintf(err, errlen, "dlsym: %s", dlerror());
		return -1;
	}
	memcpy(fn, &sym, size);
	return 0;
}

/* Check that the loaded library speaks the API of the header. */
static int check_version(char *err, size_t errlen)
{
	if (find_symbol("dnnl_version", &dn.dnnl_version, sizeof(dn.dnnl_version),
			err, errlen))
		return -1;
	const dnnl_version_t *v = dn.dnnl_version();
	if (v->major == DNNL_VERSION_MAJOR)
		return 0;
	snprintf(err, errlen, "oneDNN %d.%d.%d, but tessel was built against the "
		"%d.x API", v->major, v->minor, v->patch, DNNL_VERSION_MAJOR);
	return -1;
}

/* Open libdnnl and find every call; -1 with why in "err". */
static int open_library(char *err, size_t errlen)
{
	static const char *const names[] = { LIBDNNL_SONAME(DNNL_VERSION_MAJOR),
		"libdnnl.so" };
	for (size_t i = 0; i < 2 && !dn.lib; i++)
		if (!(dn.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) && i == 0)
			snprintf(err, errlen, "dlopen: %s", dlerror());
	if (!dn.lib)
		return -1;
	int r = check_version(err, errlen);
	for (size_t i = 0; r == 0 && i < sizeof(dnnl_symbols) / sizeof(dnnl_symbols[0]); i++)
		r = find_symbol(dnnl_symbols[i].name, (char *)&dn + dnnl_symbols[i].offset,
			sizeof(void (*)(void)), err, errlen);
	if (r == 0)
		r = find_symbol("omp_set_num_threads", &dn.omp_set_num_threads,
			sizeof(dn.omp_set_num_threads), err, errlen);
	if (r == 0)
		r = find_symbol("omp_get_max_threads", &dn.omp_get_max_threads,
			sizeof(dn.omp_get_max_threads), err, errlen);
	if (r) {
		dlclose(dn.lib);
		dn.lib = NULL;
	}
	return r;
}

static int onednn_load(const vendor_env *env, char *err, size_t errlen)
{
	int threads = env->threads;
	char n[16];
	snprintf(n, sizeof(n), "%d", threads);
	setenv("OMP_NUM_THREADS", n, 1);
	if (!dn.lib && open_library(err, errlen))
		return -1;
	dn.omp_set_num_threads(threads);
	return 0;
}

/* Return 0 when "s" is success, else -1 with "what" failed in j->err. */
static int check(dnnl_job *j, dnnl_status_t s, const char *what)
{
	if (s == dnnl_success)
		return 0;
	if (s == dnnl_unimplemented)
		snprintf(j->err, sizeof(j->err), "oneDNN: %s: no implementation on this "
			"CPU", what);
	else
		snprintf(j->err, sizeof(j->err), "oneDNN: %s failed (status %d)", what,
			(int)s);
	return -1;
}

/* Run a reorder from "from" to "to" once. */
static int reorder_once(dnnl_job *j, dnnl_memory_t from, dnnl_memory_t to)
{
	const dnnl_memory_desc_t *fmd, *tmd;
	dnnl_primitive_desc_t rpd;
	dnnl_primitive_t r;
	if (check(j, dn.dnnl_memory_get_memory_desc(from, &fmd), "memory desc") ||
	    check(j, dn.dnnl_memory_get_memory_desc(to, &tmd), "memory desc") ||
	    check(j, dn.dnnl_reorder_primitive_desc_create(&rpd, fmd, j->engine, tmd,
			j->engine, NULL), "reorder desc"))
		return -1;
	int st = check(j, dn.dnnl_primitive_create(&r, rpd), "reorder");
	dn.dnnl_primitive_desc_destroy(rpd);
	if (st)
		return -1;
	dnnl_exec_arg_t a[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };
	st = check(j, dn.dnnl_primitive_execute(r, j->stream, 2, a), "reorder");
	dn.dnnl_stream_wait(j->stream);
	dn.dnnl_primitive_destroy(r);
	return st;
}

/* Make the engine, the stream, and the primitive of "desc" in "j". */
static int create_primitive(dnnl_job *j, const_dnnl_op_desc_t desc)
{
	return check(j, dn.dnnl_engine_create(&j->engine, dnnl_cpu, 0), "engine") ||
		check(j, dn.dnnl_stream_create(&j->stream, j->engine,
			dnnl_stream_default_flags), "stream") ||
		check(j, dn.dnnl_primitive_desc_create(&j->pd, desc, NULL, j->engine,
			NULL), "primitive desc") ||
		check(j, dn.dnnl_primitive_create(&j->prim, j->pd), "primitive") ? -1 : 0;
}

/* Make argument "i" of "j" (exec argument "arg") on the caller's "data"
 * laid out as "md", which the primitive takes as it is. */
static int add_plain_arg(dnnl_job *j, int i, int arg, const dnnl_memory_desc_t *md,
	const void *data)
{
	if (check(j, dn.dnnl_memory_create(&j->user[i], md, j->engine, (void *)data),
			"memory"))
		return -1;
	j->mem[i] = j->user[i];
	j->args[i] = (dnnl_exec_arg_t){ arg, j->user[i] };
	j->nargs = i + 1;
	return 0;
}

/* Make argument "i" of "j" (exec argument "arg", queried as "which"
 * number "index") on the caller's "data" laid out as "md": the user
 * memory, and the primitive's own where it wants another layout (inputs
 * reordered into it now). */
static int add_arg(dnnl_job *j, int i, int arg, dnnl_query_t which, int index,
	const dnnl_memory_desc_t *md, const void *data, bool input)
{
	const dnnl_memory_desc_t *want = dn.dnnl_primitive_desc_query_md(j->pd, which,
		index);
	if (add_plain_arg(j, i, arg, md, data))
		return -1;
	if (dn.dnnl_memory_desc_equal(want, md))
		return 0;
	if (check(j, dn.dnnl_memory_create(&j->mem[i], want, j->engine,
			DNNL_MEMORY_ALLOCATE), "memory"))
		return -1;
	j->args[i].memory = j->mem[i];
	return input ? reorder_once(j, j->user[i], j->mem[i]) : 0;
}

/* Set up a convolution forward (direct) of "p" in "j", oneDNN choosing the
 * layouts; grouped, its weights are 5-D (groups first), the caller's
 * described by their strides. */
static int conv_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	const int64_t *d = p->dims;
	dnnl_dims_t xd = { d[CONV_N], d[CONV_C], d[CONV_H], d[CONV_W] };
	dnnl_dims_t wd = { d[CONV_F], d[CONV_C], d[CONV_R], d[CONV_S] };
	dnnl_dims_t yd = { d[CONV_N], d[CONV_F], d[CONV_OH], d[CONV_OW] };
	dnnl_dims_t stride = { p->stride[0], p->stride[1] };
	dnnl_dims_t dilate = { p->dilation[0] - 1, p->dilation[1] - 1 };
	dnnl_dims_t pad = { p->padding[0], p->padding[1] };
	dnnl_memory_desc_t ux, uw, uy, cx, cw, cy;
	bool cl = p->channels_last;
	dnnl_data_type_t dt = data_type(p), wt = dnnl_type(p->weight_dtype);
	dn.dnnl_memory_desc_init_by_tag(&ux, 4, xd, dt, cl ? dnnl_nhwc : dnnl_nchw);
	dnnl_data_type_t yt = dnnl_type(p->out_dtype);
	dn.dnnl_memory_desc_init_by_tag(&uy, 4, yd, yt, cl ? dnnl_nhwc : dnnl_nchw);
	dn.dnnl_memory_desc_init_by_tag(&cx, 4, xd, dt, dnnl_format_tag_any);
	dn.dnnl_memory_desc_init_by_tag(&cy, 4, yd, yt, dnnl_format_tag_any);
	if (p->groups > 1) {
		int64_t g = p->groups, fg = d[CONV_F] / g, cg = d[CONV_C] / g;
		int64_t r = d[CONV_R], s = d[CONV_S], f = d[CONV_F];
		dnnl_dims_t gd = { g, fg, cg, r, s };
		dnnl_dims_t oihw = { fg * cg * r * s, cg * r * s, r * s, s, 1 };
		dnnl_dims_t hwio = { fg, 1, f, s * cg * f, cg * f };
		dn.dnnl_memory_desc_init_by_strides(&uw, 5, gd, wt, cl ? hwio : oihw);
		dn.dnnl_memory_desc_init_by_tag(&cw, 5, gd, wt, dnnl_format_tag_any);
	} else {
		dn.dnnl_memory_desc_init_by_tag(&uw, 4, wd, wt, cl ? dnnl_hwio : dnnl_oihw);
		dn.dnnl_memory_desc_init_by_tag(&cw, 4, wd, wt, dnnl_format_tag_any);
	}
	dnnl_convolution_desc_t cd;
	if (check(j, dn.dnnl_dilated_convolution_forward_desc_init(&cd,
			dnnl_forward_inference, dnnl_convolution_direct, &cx, &cw, NULL, &cy,
			stride, dilate, pad, pad), "convolution desc") ||
	    create_primitive(j, &cd))
		return -1;
	return add_arg(j, 0, DNNL_ARG_SRC, dnnl_query_src_md, 0, &ux, in[0], true) ||
		add_arg(j, 1, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &uw, in[1], true) ||
		add_arg(j, 2, DNNL_ARG_DST, dnnl_query_dst_md, 0, &uy, out, false) ? -1 : 0;
}

/* Describe the row-major [B,] rows x cols matrix of "dt" in "md"
 * ("transposed": stored cols x rows); "nd" is 2 or 3 (batched). */
static void matrix_desc(dnnl_memory_desc_t *md, dnnl_data_type_t dt, int nd,
	int64_t batch, int64_t rows, int64_t cols, bool transposed)
{
	dnnl_dims_t dims = { batch, rows, cols };
	dnnl_dims_t strides = { rows * cols, transposed ? 1 : cols, transposed ? rows : 1 };
	dn.dnnl_memory_desc_init_by_strides(md, nd, dims + 3 - nd, dt, strides + 3 - nd);
}

/* Set up a matmul of "p" in "j" on the plain data. */
static int matmul_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	int nd = p->batch > 1 ? 3 : 2;
	dnnl_memory_desc_t a, b, bias, c;
	dnnl_data_type_t dt = data_type(p), ct = dnnl_type(p->out_dtype);
	matrix_desc(&a, dt, nd, p->batch, p->m, p->k, p->trans_a);
	matrix_desc(&b, dnnl_type(p->weight_dtype), nd, p->batch, p->k, p->n, p->trans_b);
	matrix_desc(&bias, ct, nd, 1, 1, p->n, false);
	matrix_desc(&c, ct, nd, p->batch, p->m, p->n, false);
	dnnl_matmul_desc_t md;
	if (check(j, dn.dnnl_matmul_desc_init(&md, &a, &b, p->bias ? &bias : NULL, &c),
			"matmul desc") ||
	    create_primitive(j, &md))
		return -1;
	int i = 0;
	if (add_arg(j, i++, DNNL_ARG_SRC, dnnl_query_src_md, 0, &a, in[0], true) ||
	    add_arg(j, i++, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &b, in[1], true) ||
	    (p->bias && add_arg(j, i++, DNNL_ARG_BIAS, dnnl_query_weights_md, 1, &bias,
			in[2], true)))
		return -1;
	return add_arg(j, i, DNNL_ARG_DST, dnnl_query_dst_md, 0, &c, out, false);
}

/* Write into "strides" those of a C-ordered array of the "n" dims "dims". */
static void c_order_strides(int n, const int64_t *dims, dnnl_dims_t strides)
{
	for (int d = n - 1; d >= 0; d--)
		strides[d] = d == n - 1 ? 1 : strides[d + 1] * dims[d + 1];
}

/* Describe in "md" the C-ordered array of "dt" of the "n" dims "dims". */
static void c_order_desc(dnnl_memory_desc_t *md, dnnl_data_type_t dt, int n,
	const int64_t *dims)
{
	dnnl_dims_t d, strides;
	memcpy(d, dims, (size_t)n * sizeof(d[0]));
	c_order_strides(n, d, strides);
	dn.dnnl_memory_desc_init_by_strides(md, n, d, dt, strides);
}

/* Set up a reorder of "p" in "j": X read in Y's dims through strides
 * permuted from its own, written to the C-ordered Y. */
static int transpose_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	int n = p->ndim;
	dnnl_dims_t xstride, dims, from, to;
	c_order_strides(n, p->shape, xstride);
	for (int d = 0; d < n; d++) {
		dims[d] = p->shape[p->perm[d]];
		from[d] = xstride[p->perm[d]];
	}
	c_order_strides(n, dims, to);
	dnnl_memory_desc_t x, y;
	dn.dnnl_memory_desc_init_by_strides(&x, n, dims, data_type(p), from);
	dn.dnnl_memory_desc_init_by_strides(&y, n, dims, data_type(p), to);
	if (check(j, dn.dnnl_engine_create(&j->engine, dnnl_cpu, 0), "engine") ||
	    check(j, dn.dnnl_stream_create(&j->stream, j->engine,
			dnnl_stream_default_flags), "stream") ||
	    check(j, dn.dnnl_reorder_primitive_desc_create(&j->pd, &x, j->engine, &y,
			j->engine, NULL), "reorder desc") ||
	    check(j, dn.dnnl_primitive_create(&j->prim, j->pd), "reorder") ||
	    check(j, dn.dnnl_memory_create(&j->user[0], &x, j->engine, (void *)in[0]),
			"memory") ||
	    check(j, dn.dnnl_memory_create(&j->user[1], &y, j->engine, out), "memory"))
		return -1;
	for (int i = 0; i < 2; i++) {
		j->mem[i] = j->user[i];
		j->args[i] = (dnnl_exec_arg_t){ i ? DNNL_ARG_TO : DNNL_ARG_FROM, j->user[i] };
	}
	j->nargs = 2;
	return 0;
}

/* Set up a softmax (or log_softmax) of "p" in "j" on the C-ordered data. */
static int softmax_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	dnnl_memory_desc_t md;
	c_order_desc(&md, data_type(p), p->ndim, p->shape);
	dnnl_softmax_desc_t sd;
	dnnl_status_t st = p->log ?
		dn.dnnl_logsoftmax_forward_desc_init(&sd, dnnl_forward_inference, &md, p->axis) :
		dn.dnnl_softmax_forward_desc_init(&sd, dnnl_forward_inference, &md, p->axis);
	if (check(j, st, "softmax desc") || create_primitive(j, &sd))
		return -1;
	return add_arg(j, 0, DNNL_ARG_SRC, dnnl_query_src_md, 0, &md, in[0], true) ||
		add_arg(j, 1, DNNL_ARG_DST, dnnl_query_dst_md, 0, &md, out, false) ? -1 : 0;
}

/* Set up a pooling of "p" in "j" on the NCHW data; the right and bottom
 * padding are what the last window reaches past the input. */
static int pool_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	static const dnnl_alg_kind_t alg[] = { dnnl_pooling_max,
		dnnl_pooling_avg_include_padding, dnnl_pooling_avg_exclude_padding };
	const int64_t *d = p->dims;
	dnnl_dims_t xd = { d[CONV_N], d[CONV_C], d[CONV_H], d[CONV_W] };
	dnnl_dims_t yd = { d[CONV_N], d[CONV_C], d[CONV_OH], d[CONV_OW] };
	dnnl_dims_t stride = { p->stride[0], p->stride[1] };
	dnnl_dims_t kernel = { d[CONV_R], d[CONV_S] };
	dnnl_dims_t pad_l = { p->padding[0], p->padding[1] }, pad_r;
	for (int i = 0; i < 2; i++)
		pad_r[i] = (d[CONV_OH + i] - 1) * stride[i] + kernel[i] - d[CONV_H + i] - pad_l[i];
	dnnl_memory_desc_t mx, my;
	dn.dnnl_memory_desc_init_by_tag(&mx, 4, xd, data_type(p), dnnl_nchw);
	dn.dnnl_memory_desc_init_by_tag(&my, 4, yd, data_type(p), dnnl_nchw);
	dnnl_pooling_desc_t pd;
	if (check(j, dn.dnnl_pooling_forward_desc_init(&pd, dnnl_forward_inference,
			alg[p->pool], &mx, &my, stride, kernel, pad_l, pad_r), "pooling desc") ||
	    create_primitive(j, &pd))
		return -1;
	return add_arg(j, 0, DNNL_ARG_SRC, dnnl_query_src_md, 0, &mx, in[0], true) ||
		add_arg(j, 1, DNNL_ARG_DST, dnnl_query_dst_md, 0, &my, out, false) ? -1 : 0;
}

/* Set up a layer or batch normalization of "p" in "j": a layer's data
 * seen as [rows, the normalized elements of a row], the statistics,
 * scales and shifts one dimension each. */
static int norm_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	bool layer = p->kind == VENDOR_LAYER_NORM;
	int64_t rows = 1, cols = 1, channels = p->shape[1];
	for (int d = 0; d < p->ndim; d++)
		*(d < p->axis ? &rows : &cols) *= p->shape[d];
	int64_t data[2] = { rows, cols };
	dnnl_memory_desc_t x, c;
	if (layer)
		c_order_desc(&x, dnnl_f32, 2, data);
	else
		c_order_desc(&x, dnnl_f32, p->ndim, p->shape);
	c_order_desc(&c, dnnl_f32, 1, layer ? &cols : &channels);
	unsigned flags = !layer ? dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift :
		p->affine ? dnnl_use_scale | dnnl_use_shift : 0;
	dnnl_layer_normalization_desc_t ld;
	dnnl_batch_normalization_desc_t bd;
	dnnl_status_t st = layer ?
		dn.dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &x,
			NULL, (float)p->eps, flags) :
		dn.dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &x,
			(float)p->eps, flags);
	if (check(j, st, "normalization desc") ||
	    create_primitive(j, layer ? (const_dnnl_op_desc_t)&ld : (const_dnnl_op_desc_t)&bd))
		return -1;
	int i = 0;
	if (add_plain_arg(j, i++, DNNL_ARG_SRC, &x, in[0]))
		return -1;
	if (!layer && (add_plain_arg(j, i++, DNNL_ARG_MEAN, &c, in[1]) ||
		       add_plain_arg(j, i++, DNNL_ARG_VARIANCE, &c, in[2])))
		return -1;
	if ((flags & dnnl_use_scale) &&
	    (add_plain_arg(j, i++, DNNL_ARG_SCALE, &c, in[layer ? 1 : 3]) ||
	     add_plain_arg(j, i++, DNNL_ARG_SHIFT, &c, in[layer ? 2 : 4])))
		return -1;
	return add_plain_arg(j, i, DNNL_ARG_DST, &x, out);
}

/* Set up the primitive of "p" in "j"; return 0 or -1 (why in j->err). */
static int job_init(dnnl_job *j, const vendor_problem *p, const void *const *in,
	void *out)
{
	switch (p->kind) {
	case VENDOR_CONV2D: return conv_init(j, p, in, out);
	case VENDOR_TRANSPOSE: return transpose_init(j, p, in, out);
	case VENDOR_SOFTMAX: return softmax_init(j, p, in, out);
	case VENDOR_POOL2D: return pool_init(j, p, in, out);
	case VENDOR_LAYER_NORM:
	case VENDOR_BATCH_NORM: return norm_init(j, p, in, out);
	default: return matmul_init(j, p, in, out);
	}
}

/* Return the name of the primitive that computes "p". */
static const char *primitive_name(const vendor_problem *p)
{
	switch (p->kind) {
	case VENDOR_CONV2D: return "convolution";
	case VENDOR_TRANSPOSE: return "reorder";
	case VENDOR_SOFTMAX: return p->log ? "logsoftmax" : "softmax";
	case VENDOR_POOL2D: return "pooling";
	case VENDOR_LAYER_NORM: return "layer_normalization";
	case VENDOR_BATCH_NORM: return "batch_normalization";
	default: return "matmul";
	}
}

static void onednn_run(void *arg)
{
	dnnl_job *j = arg;
	dn.dnnl_primitive_execute(j->prim, j->stream, j->nargs, j->args);
	dn.dnnl_stream_wait(j->stream);
}

/* Bring the output of "arg" into the caller's memory when the primitive
 * wrote it in its own layout. */
static void onednn_finish(void *arg)
{
	dnnl_job *j = arg;
	int out = j->nargs - 1;
	if (j->mem[out] != j->user[out])
		reorder_once(j, j->mem[out], j->user[out]);
}

static void onednn_release(void *arg)
{
	dnnl_job *j = arg;
	for (int i = 0; i < j->nargs; i++) {
		if (j->mem[i] && j->mem[i] != j->user[i])
			dn.dnnl_memory_destroy(j->mem[i]);
		if (j->user[i])
			dn.dnnl_memory_destroy(j->user[i]);
	}
	if (j->prim)
		dn.dnnl_primitive_destroy(j->prim);
	if (j->pd)
		dn.dnnl_primitive_desc_destroy(j->pd);
	if (j->stream)
		dn.dnnl_stream_destroy(j->stream);
	if (j->engine)
		dn.dnnl_engine_destroy(j->engine);
	free(j);
}

static int onednn_probe(char *what, size_t len)
{
	if (!dn.lib && open_library(what, len))
		return -1;
	const dnnl_version_t *v = dn.dnnl_version();
	snprintf(what, len, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch,
		v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "threads");
	return 0;
}

static int onednn_prepare(const vendor_env *env, const vendor_problem *p,
	const void *const *in, void *out, vendor_run *r, char *err, size_t errlen)
{
	(void)env;
	dnnl_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (job_init(j, p, in, out)) {
		snprintf(err, errlen, "%s", j->err);
		onednn_release(j);
		return -1;
	}
	const char *impl = NULL;
	dn.dnnl_primitive_desc_query(j->pd, dnnl_query_impl_info_str, 0, &impl);
	const dnnl_version_t *v = dn.dnnl_version();
	int threads = dn.omp_get_max_threads();
	snprintf(r->name, sizeof(r->name), "oneDNN %d.%d.%d %s (%s%s, %d thread%s)",
		v->major, v->minor, v->patch, primitive_name(p),
		impl ? impl : "?", p->kind == VENDOR_CONV2D ? ", own layouts" : "", threads,
		threads == 1 ? "" : "s");
	r->run = onednn_run;
	r->finish = onednn_finish;
	r->release = onednn_release;
	r->arg = j;
	return 0;
}

const vendor vendor_onednn = {
	"onednn", false, onednn_supports, onednn_load, onednn_prepare, onednn_probe
};
