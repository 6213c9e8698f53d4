/* cuBLAS, loaded with dlopen: cublasSgemm for matmul and dense,
 * cublasSgemmStridedBatched for batch_matmul, on the CUDA device, fp32
 * without tensor cores (CUBLAS_DEFAULT_MATH, which allows no TF32).
 * cuBLAS is column-major: the row-major C = op(A) op(B) is computed as
 * the column-major C^T = op(B)^T op(A)^T, which reads the same memory
 * with the operands swapped (the leading dimensions are CBLAS's
 * row-major ones).  dense's bias is copied into the output rows on the
 * device first and accumulated with beta = 1, timed, as OpenBLAS does.
 * The inputs are uploaded once when prepared; "finish" waits and copies
 * the output back.  The few cuBLAS types and calls are declared here from
 * cublas_api.h, so that building needs no CUDA headers. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_lib.h"
#include "tools/vendor.h"

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;

enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_OP_N = 0, CUBLAS_OP_T = 1,
	CUBLAS_DEFAULT_MATH = 0 };

static struct cublas_api {
	bool loaded;
	cublasStatus_t (*Create)(cublasHandle_t *);
	cublasStatus_t (*Destroy)(cublasHandle_t);
	cublasStatus_t (*GetVersion)(cublasHandle_t, int *);
	cublasStatus_t (*SetMathMode)(cublasHandle_t, int);
	const char *(*GetStatusString)(cublasStatus_t);
	cublasStatus_t (*Sgemm)(cublasHandle_t, int, int, int, int, int, const float *,
		const float *, int, const float *, int, const float *, float *, int);
	cublasStatus_t (*SgemmStridedBatched)(cublasHandle_t, int, int, int, int, int,
		const float *, const float *, int, long long, const float *, int,
		long long, const float *, float *, int, long long, int);
} cb;

typedef struct gemm_job {
	vendor_run *r;
	rt_cuda_device *dev;
	cublasHandle_t handle;
	rt_cuda_buffer *a, *b, *c, *bias_rows;
	float *out;
	size_t out_bytes;
	int batch, m, n, k;
	bool trans_a, trans_b;
} gemm_job;

static bool cublas_supports(const vendor_problem *p)
{
	return p->kind == VENDOR_GEMM && p->dtype == TESSEL_F32 &&
		p->out_dtype == TESSEL_F32 && p->m <= INT_MAX && p->n <= INT_MAX &&
		p->k <= INT_MAX && p->batch <= INT_MAX;
}

/* Load cuBLAS and its entry points (once). */
static int open_library(char *err, size_t errlen)
{
	static const char *const names[] = { "libcublas.so.13", "libcublas.so.12",
		"libcublas.so", NULL };
	if (cb.loaded)
		return 0;
	void *lib = rt_cuda_lib_open("cuBLAS", names, "TESSEL_CUBLAS", err, errlen);
	if (!lib)
		return -1;
	rt_lib_symbol fns[] = {
		{ (void **)&cb.Create, "cublasCreate_v2" },
		{ (void **)&cb.Destroy, "cublasDestroy_v2" },
		{ (void **)&cb.GetVersion, "cublasGetVersion_v2" },
		{ (void **)&cb.SetMathMode, "cublasSetMathMode" },
		{ (void **)&cb.GetStatusString, "cublasGetStatusString" },
		{ (void **)&cb.Sgemm, "cublasSgemm_v2" },
		{ (void **)&cb.SgemmStridedBatched, "cublasSgemmStridedBatched" },
	};
	if (rt_cuda_lib_resolve(lib, "the cuBLAS library", fns,
			(int)(sizeof(fns) / sizeof(*fns)), err, errlen))
		return -1;
	cb.loaded = true;
	return 0;
}

static int cublas_load(const vendor_env *env, char *err, size_t errlen)
{
	if (!env->cuda) {
		snprintf(err, errlen, "no CUDA device is open");
		return -1;
	}
	return open_library(err, errlen);
}

static int cublas_probe(char *what, size_t len)
{
	if (open_library(what, len))
		return -1;
	snprintf(what, len, "cuBLAS (cublasSgemm_v2, cublasSgemmStridedBatched; its "
		"version needs a device)");
	return 0;
}

/* Write "call: cuBLAS's description (status)" into "err"; return -1. */
static int fail(char *err, size_t len, const char *call, cublasStatus_t s)
{
	const char *text = cb.GetStatusString ? cb.GetStatusString(s) : NULL;
	snprintf(err, len, "%s: %s (%d)", call, text ? text : "unknown status", s);
	return -1;
}

static const float *dev_ptr(const rt_cuda_buffer *b)
{
	return (const float *)(uintptr_t)rt_cuda_buffer_address(b);
}

static int gemm_enqueue(void *arg)
{
	gemm_job *j = arg;
	const float one = 1.0f, beta = j->bias_rows ? 1.0f : 0.0f;
	char *err = j->r->error;
	size_t len = sizeof(j->r->error);
	if (j->bias_rows && rt_cuda_copy_async(j->c, j->bias_rows, j->out_bytes, err, len))
		return -1;
	int op_a = j->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	int op_b = j->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	int lda = j->trans_a ? j->m : j->k, ldb = j->trans_b ? j->k : j->n;
	float *c = (float *)(uintptr_t)rt_cuda_buffer_address(j->c);
	cublasStatus_t s = j->batch == 1
		? cb.Sgemm(j->handle, op_b, op_a, j->n, j->m, j->k, &one, dev_ptr(j->b), ldb,
			dev_ptr(j->a), lda, &beta, c, j->n)
		: cb.SgemmStridedBatched(j->handle, op_b, op_a, j->n, j->m, j->k, &one,
			dev_ptr(j->b), ldb, (long long)j->k * j->n, dev_ptr(j->a), lda,
			(long long)j->m * j->k, &beta, c, j->n, (long long)j->m * j->n,
			j->batch);
	if (s != CUBLAS_STATUS_SUCCESS)
		return fail(err, len, j->batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched",
			s);
	return 0;
}

static void gemm_finish(void *arg)
{
	gemm_job *j = arg;
	if (rt_cuda_sync(j->dev, j->r->error, sizeof(j->r->error)) == 0)
		rt_cuda_read(j->c, j->out, j->out_bytes, j->r->error, sizeof(j->r->error));
}

static void gemm_release(void *arg)
{
	gemm_job *j = arg;
	if (j->handle)
		cb.Destroy(j->handle);
	rt_cuda_free(j->a);
	rt_cuda_free(j->b);
	rt_cuda_free(j->c);
	rt_cuda_free(j->bias_rows);
	free(j);
}

/* The output's rows, each a copy of Bias[n], on the device. */
static rt_cuda_buffer *bias_rows(gemm_job *j, const float *bias, char *err,
	size_t len)
{
	size_t rows = (size_t)j->batch * (size_t)j->m, n = (size_t)j->n;
	float *host = malloc(j->out_bytes);
	if (!host) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < rows; i++)
		memcpy(host + i * n, bias, n * sizeof(float));
	rt_cuda_buffer *b = rt_cuda_upload(j->dev, host, j->out_bytes, err, len);
	free(host);
	return b;
}

/* Upload the operands of "p" and make the handle. */
static int set_up(gemm_job *j, const vendor_problem *p, const void *const *in,
	char *err, size_t len)
{
	size_t e = sizeof(float) * (size_t)p->batch;
	size_t a_bytes = (size_t)(p->m * p->k) * e, b_bytes = (size_t)(p->k * p->n) * e;
	cublasStatus_t s;
	if (!(j->a = rt_cuda_upload(j->dev, in[0], a_bytes, err, len)) ||
	    !(j->b = rt_cuda_upload(j->dev, in[1], b_bytes, err, len)) ||
	    !(j->c = rt_cuda_upload(j->dev, NULL, j->out_bytes, err, len)) ||
	    (p->bias && !(j->bias_rows = bias_rows(j, in[2], err, len))))
		return -1;
	if ((s = cb.Create(&j->handle)) != CUBLAS_STATUS_SUCCESS)
		return fail(err, len, "cublasCreate", s);
	if ((s = cb.SetMathMode(j->handle, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS)
		return fail(err, len, "cublasSetMathMode", s);
	return 0;
}

static int cublas_prepare(const vendor_env *env, const vendor_problem *p,
	const void *const *in, void *out, vendor_run *r, char *err, size_t errlen)
{
	gemm_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*j = (gemm_job){ r, env->cuda, NULL, NULL, NULL, NULL, NULL, out,
		(size_t)p->batch * (size_t)(p->m * p->n) * sizeof(float), (int)p->batch,
		(int)p->m, (int)p->n, (int)p->k, p->trans_a, p->trans_b };
	int version = 0;
	if (set_up(j, p, in, err, errlen)) {
		gemm_release(j);
		return -1;
	}
	if (cb.GetVersion(j->handle, &version) != CUBLAS_STATUS_SUCCESS)
		version = 0;
	snprintf(r->name, sizeof(r->name), "cuBLAS %d.%d.%d %s (fp32, no TF32)",
		version / 10000, version / 100 % 100, version % 100,
		j->batch == 1 ? "cublasSgemm" : "cublasSgemmStridedBatched");
	r->run = NULL;
	r->enqueue = gemm_enqueue;
	r->finish = gemm_finish;
	r->release = gemm_release;
	r->arg = j;
	return 0;
}

const vendor vendor_cublas = {
	"cublas", true, cublas_supports, cublas_load, cublas_prepare, cublas_probe
};
