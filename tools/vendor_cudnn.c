/* cuDNN, loaded with dlopen: forward convolution (conv2d, one group) on
 * the CUDA device in fp32 without tensor cores (CUDNN_FMA_MATH: no TF32),
 * with the algorithm cudnnFindConvolutionForwardAlgorithm measures
 * fastest among those that run in FMA math, and the workspace it asks
 * for.  NCHW data and OIHW weights are cuDNN's NCHW formats; NHWC data
 * are its NHWC format, and the HWIO weights are reordered once (untimed)
 * into its NHWC filter layout, OHWI.  The inputs are uploaded once when
 * prepared; "finish" waits and copies the output back.  The few cuDNN
 * types and calls are declared here from cudnn_graph.h, cudnn_ops.h and
 * cudnn_cnn.h, so that building needs no cuDNN headers. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_lib.h"
#include "tools/vendor.h"

typedef int cudnnStatus_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;

enum { CUDNN_STATUS_SUCCESS = 0, CUDNN_DATA_FLOAT = 0, CUDNN_TENSOR_NCHW = 0,
	CUDNN_TENSOR_NHWC = 1, CUDNN_CROSS_CORRELATION = 1, CUDNN_FMA_MATH = 3,
	CUDNN_TENSOR_OP_MATH = 1, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
	FWD_ALGO_COUNT = 8 };

/* cudnnConvolutionFwdAlgoPerf_t. */
typedef struct fwd_algo_perf {
	int algo;
	cudnnStatus_t status;
	float time;
	size_t memory;
	int determinism;
	int math_type;
	int reserved[3];
} fwd_algo_perf;

static const char *const algo_names[FWD_ALGO_COUNT] = { "implicit GEMM",
	"implicit precomputed GEMM", "GEMM", "direct", "FFT", "FFT tiling", "Winograd",
	"Winograd nonfused" };

static struct cudnn_api {
	bool loaded;
	size_t (*GetVersion)(void);
	const char *(*GetErrorString)(cudnnStatus_t);
	cudnnStatus_t (*Create)(cudnnHandle_t *);
	cudnnStatus_t (*Destroy)(cudnnHandle_t);
	cudnnStatus_t (*CreateTensorDescriptor)(cudnnTensorDescriptor_t *);
	cudnnStatus_t (*SetTensor4dDescriptor)(cudnnTensorDescriptor_t, int, int, int, int,
		int, int);
	cudnnStatus_t (*DestroyTensorDescriptor)(cudnnTensorDescriptor_t);
	cudnnStatus_t (*CreateFilterDescriptor)(cudnnFilterDescriptor_t *);
	cudnnStatus_t (*SetFilter4dDescriptor)(cudnnFilterDescriptor_t, int, int, int, int,
		int, int);
	cudnnStatus_t (*DestroyFilterDescriptor)(cudnnFilterDescriptor_t);
	cudnnStatus_t (*CreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t *);
	cudnnStatus_t (*SetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t, int, int,
		int, int, int, int, int, int);
	cudnnStatus_t (*SetConvolutionMathType)(cudnnConvolutionDescriptor_t, int);
	cudnnStatus_t (*DestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t);
	cudnnStatus_t (*GetConvolution2dForwardOutputDim)(cudnnConvolutionDescriptor_t,
		cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, int *, int *, int *, int *);
	cudnnStatus_t (*FindConvolutionForwardAlgorithm)(cudnnHandle_t,
		cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
		cudnnTensorDescriptor_t, int, int *, fwd_algo_perf *);
	cudnnStatus_t (*ConvolutionForward)(cudnnHandle_t, const void *,
		cudnnTensorDescriptor_t, const void *, cudnnFilterDescriptor_t, const void *,
		cudnnConvolutionDescriptor_t, int, void *, size_t, const void *,
		cudnnTensorDescriptor_t, void *);
} dn;

typedef struct conv_job {
	vendor_run *r;
	rt_cuda_device *dev;
	cudnnHandle_t handle;
	cudnnTensorDescriptor_t x_desc, y_desc;
	cudnnFilterDescriptor_t w_desc;
	cudnnConvolutionDescriptor_t conv_desc;
	rt_cuda_buffer *x, *w, *y, *workspace;
	size_t workspace_bytes, out_bytes;
	float *out;
	int algo;
} conv_job;

static bool cudnn_supports(const vendor_problem *p)
{
	if (p->kind != VENDOR_CONV2D || p->dtype != TESSEL_F32 || p->out_dtype != TESSEL_F32 || p->groups != 1)
		return false;
	for (int i = 0; i < 9; i++)
		if (p->dims[i] > INT_MAX)
			return false;
	return true;
}

/* Load cuDNN and its entry points (once). */
static int open_library(char *err, size_t errlen)
{
	static const char *const names[] = { "libcudnn.so.9", "libcudnn.so", NULL };
	if (dn.loaded)
		return 0;
	void *lib = rt_cuda_lib_open("cuDNN", names, "TESSEL_CUDNN", err, errlen);
	if (!lib)
		return -1;
	rt_lib_symbol fns[] = {
#define FN(n) { (void **)&dn.n, "cudnn" #n }
		FN(GetVersion), FN(GetErrorString), FN(Create), FN(Destroy),
		FN(CreateTensorDescriptor), FN(SetTensor4dDescriptor),
		FN(DestroyTensorDescriptor), FN(CreateFilterDescriptor),
		FN(SetFilter4dDescriptor), FN(DestroyFilterDescriptor),
		FN(CreateConvolutionDescriptor), FN(SetConvolution2dDescriptor),
		FN(SetConvolutionMathType), FN(DestroyConvolutionDescriptor),
		FN(GetConvolution2dForwardOutputDim), FN(FindConvolutionForwardAlgorithm),
		FN(ConvolutionForward),
#undef FN
	};
	if (rt_cuda_lib_resolve(lib, "the cuDNN library", fns,
			(int)(sizeof(fns) / sizeof(*fns)), err, errlen))
		return -1;
	dn.loaded = true;
	return 0;
}

static int cudnn_load(const vendor_env *env, char *err, size_t errlen)
{
	if (!env->cuda) {
		snprintf(err, errlen, "no CUDA device is open");
		return -1;
	}
	return open_library(err, errlen);
}

static int cudnn_probe(char *what, size_t len)
{
	if (open_library(what, len))
		return -1;
	size_t v = dn.GetVersion();
	snprintf(what, len, "cuDNN %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
	return 0;
}

/* Write "call: cuDNN's description (status)" into "err"; return -1. */
static int fail(char *err, size_t len, const char *call, cudnnStatus_t s)
{
	const char *text = dn.GetErrorString ? dn.GetErrorString(s) : NULL;
	snprintf(err, len, "%s: %s (%d)", call, text ? text : "unknown status", s);
	return -1;
}

#define CHECK(call, args)                                              \
	do {                                                           \
		cudnnStatus_t s_ = dn.call args;                        \
		if (s_ != CUDNN_STATUS_SUCCESS)                        \
			return fail(err, len, "cudnn" #call, s_);       \
	} while (0)

static void *dev_ptr(const rt_cuda_buffer *b)
{
	return b ? (void *)(uintptr_t)rt_cuda_buffer_address(b) : NULL;
}

static int conv_enqueue(void *arg)
{
	conv_job *j = arg;
	const float one = 1.0f, zero = 0.0f;
	char *err = j->r->error;
	size_t len = sizeof(j->r->error);
	CHECK(ConvolutionForward, (j->handle, &one, j->x_desc, dev_ptr(j->x), j->w_desc,
		dev_ptr(j->w), j->conv_desc, j->algo, dev_ptr(j->workspace),
		j->workspace_bytes, &zero, j->y_desc, dev_ptr(j->y)));
	return 0;
}

static void conv_finish(void *arg)
{
	conv_job *j = arg;
	if (rt_cuda_sync(j->dev, j->r->error, sizeof(j->r->error)) == 0)
		rt_cuda_read(j->y, j->out, j->out_bytes, j->r->error, sizeof(j->r->error));
}

static void conv_release(void *arg)
{
	conv_job *j = arg;
	if (j->x_desc)
		dn.DestroyTensorDescriptor(j->x_desc);
	if (j->y_desc)
		dn.DestroyTensorDescriptor(j->y_desc);
	if (j->w_desc)
		dn.DestroyFilterDescriptor(j->w_desc);
	if (j->conv_desc)
		dn.DestroyConvolutionDescriptor(j->conv_desc);
	if (j->handle)
		dn.Destroy(j->handle);
	rt_cuda_free(j->x);
	rt_cuda_free(j->w);
	rt_cuda_free(j->y);
	rt_cuda_free(j->workspace);
	free(j);
}

/* The descriptors of "p": data, weights, output, convolution; the
 * output's dims cuDNN computes must be the op's. */
static int describe(conv_job *j, const vendor_problem *p, char *err, size_t len)
{
	const int64_t *d = p->dims;
	int format = p->channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
	int n, c, h, w;
	CHECK(Create, (&j->handle));
	CHECK(CreateTensorDescriptor, (&j->x_desc));
	CHECK(CreateTensorDescriptor, (&j->y_desc));
	CHECK(CreateFilterDescriptor, (&j->w_desc));
	CHECK(CreateConvolutionDescriptor, (&j->conv_desc));
	CHECK(SetTensor4dDescriptor, (j->x_desc, format, CUDNN_DATA_FLOAT, (int)d[CONV_N],
		(int)d[CONV_C], (int)d[CONV_H], (int)d[CONV_W]));
	CHECK(SetFilter4dDescriptor, (j->w_desc, CUDNN_DATA_FLOAT, format, (int)d[CONV_F],
		(int)d[CONV_C], (int)d[CONV_R], (int)d[CONV_S]));
	CHECK(SetConvolution2dDescriptor, (j->conv_desc, (int)p->padding[0],
		(int)p->padding[1], (int)p->stride[0], (int)p->stride[1], (int)p->dilation[0],
		(int)p->dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CHECK(SetConvolutionMathType, (j->conv_desc, CUDNN_FMA_MATH));
	CHECK(GetConvolution2dForwardOutputDim, (j->conv_desc, j->x_desc, j->w_desc, &n,
		&c, &h, &w));
	if (n != d[CONV_N] || c != d[CONV_F] || h != d[CONV_OH] || w != d[CONV_OW]) {
		snprintf(err, len, "cuDNN computes an output of %dx%dx%dx%d, the op one of "
			"%lldx%lldx%lldx%lld", n, c, h, w, (long long)d[CONV_N],
			(long long)d[CONV_F], (long long)d[CONV_OH], (long long)d[CONV_OW]);
		return -1;
	}
	CHECK(SetTensor4dDescriptor, (j->y_desc, format, CUDNN_DATA_FLOAT, n, c, h, w));
	return 0;
}

/* Upload the weights "wt" of "p": OIHW as they are, HWIO reordered into
 * OHWI (cuDNN's NHWC filter layout). */
static int upload_weights(conv_job *j, const vendor_problem *p, const float *wt,
	char *err, size_t len)
{
	const int64_t *d = p->dims;
	size_t count = (size_t)(d[CONV_F] * d[CONV_C] * d[CONV_R] * d[CONV_S]);
	if (!p->channels_last)
		return (j->w = rt_cuda_upload(j->dev, wt, count * sizeof(float), err,
			len)) ? 0 : -1;
	float *ohwi = malloc(count * sizeof(float));
	if (!ohwi) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	int64_t f = d[CONV_F], c = d[CONV_C], rs = d[CONV_R] * d[CONV_S];
	for (int64_t o = 0; o < f; o++)
		for (int64_t hw = 0; hw < rs; hw++)
			for (int64_t i = 0; i < c; i++)
				ohwi[(o * rs + hw) * c + i] = wt[(hw * c + i) * f + o];
	j->w = rt_cuda_upload(j->dev, ohwi, count * sizeof(float), err, len);
	free(ohwi);
	return j->w ? 0 : -1;
}

/* Pick the fastest algorithm cuDNN measures that runs in FMA math and
 * allocate its workspace. */
static int choose_algorithm(conv_job *j, char *err, size_t len)
{
	fwd_algo_perf perf[FWD_ALGO_COUNT];
	int n = 0;
	CHECK(FindConvolutionForwardAlgorithm, (j->handle, j->x_desc, j->w_desc,
		j->conv_desc, j->y_desc, FWD_ALGO_COUNT, &n, perf));
	for (int i = 0; i < n; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS ||
		    perf[i].math_type == CUDNN_TENSOR_OP_MATH ||
		    perf[i].math_type == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
			continue;
		j->algo = perf[i].algo;
		j->workspace_bytes = perf[i].memory;
		if (j->workspace_bytes && !(j->workspace = rt_cuda_upload(j->dev, NULL,
				j->workspace_bytes, err, len)))
			return -1;
		return 0;
	}
	snprintf(err, len, "cudnnFindConvolutionForwardAlgorithm found no fp32 FMA "
		"algorithm that runs (%d tried)", n);
	return -1;
}

static int cudnn_prepare(const vendor_env *env, const vendor_problem *p,
	const void *const *in, void *out, vendor_run *r, char *err, size_t errlen)
{
	conv_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const int64_t *d = p->dims;
	j->r = r;
	j->dev = env->cuda;
	j->out = out;
	j->out_bytes = (size_t)(d[CONV_N] * d[CONV_F] * d[CONV_OH] * d[CONV_OW]) *
		sizeof(float);
	size_t x_bytes = (size_t)(d[CONV_N] * d[CONV_C] * d[CONV_H] * d[CONV_W]) *
		sizeof(float);
	if (describe(j, p, err, errlen) ||
	    !(j->x = rt_cuda_upload(j->dev, in[0], x_bytes, err, errlen)) ||
	    upload_weights(j, p, in[1], err, errlen) ||
	    !(j->y = rt_cuda_upload(j->dev, NULL, j->out_bytes, err, errlen)) ||
	    choose_algorithm(j, err, errlen)) {
		conv_release(j);
		return -1;
	}
	size_t v = dn.GetVersion();
	snprintf(r->name, sizeof(r->name), "cuDNN %zu.%zu.%zu %s, %s (fp32 FMA)",
		v / 10000, v / 100 % 100, v % 100, p->channels_last ? "NHWC" : "NCHW",
		j->algo >= 0 && j->algo < FWD_ALGO_COUNT ? algo_names[j->algo] : "algorithm ?");
	r->run = NULL;
	r->enqueue = conv_enqueue;
	r->finish = conv_finish;
	r->release = conv_release;
	r->arg = j;
	return 0;
}

const vendor vendor_cudnn = {
	"cudnn", true, cudnn_supports, cudnn_load, cudnn_prepare, cudnn_probe
};
