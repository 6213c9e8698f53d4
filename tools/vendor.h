/* Vendor libraries that `tessel bench` runs beside a tessel kernel, one
 * file each (tools/vendor_NAME.c): OpenBLAS and oneDNN on the CPU, cuBLAS
 * and cuDNN on a CUDA device.  Each is loaded with dlopen when first
 * used: the tessel binary never links them and works without them. */
#ifndef TESSEL_TOOLS_VENDOR_H
#define TESSEL_TOOLS_VENDOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/cuda.h"
#include "tessel/te.h"
#include "tools/cli.h"

typedef enum vendor_kind {
	VENDOR_NONE,   /* no vendor library computes it */
	VENDOR_GEMM,   /* batch x (op(A) * op(B) (+ bias)), row-major */
	VENDOR_CONV2D, /* NCHW x OIHW -> NCHW (or NHWC x HWIO), grouped */
	VENDOR_TRANSPOSE, /* Y = X with its axes permuted */
	VENDOR_SOFTMAX, /* softmax or log_softmax along one axis */
	VENDOR_POOL2D, /* max or average over windows, NCHW */
	VENDOR_LAYER_NORM, /* normalized over the trailing axes */
	VENDOR_BATCH_NORM  /* inference: given statistics per channel */
} vendor_kind;

/* POOL2D: what a window computes. */
typedef enum vendor_pool {
	POOL_MAX,
	POOL_AVG_WITH_PADDING,    /* divided by the window's size */
	POOL_AVG_WITHOUT_PADDING  /* divided by its elements inside the input */
} vendor_pool;

/* A workload in the terms vendor libraries take, its inputs of "dtype"
 * and its output of "out_dtype" (the data as tessel stores them): one of
 * f32, f16 or bf16 throughout, or for GEMM and CONV2D, bf16 or f16 into
 * f32 and i8 or u8 into i32 (a bias of the output's dtype), the weights
 * (B, Wt) of "weight_dtype": "dtype", or i8 with u8 data.
 * GEMM: for each of "batch" entries, C[M, N] = A[M, K] * B[K, N], A stored
 * [K, M] when "trans_a", B stored [N, K] when "trans_b", plus Bias[N] on
 * every row when "bias"; inputs A, B (Bias), output C, batches
 * contiguous.  CONV2D: X[n, c, h, w] * Wt[f, c, r, s] -> Y[n, f, oh, ow]
 * with "stride", "padding" (each side) and "dilation" as [h, w]; when
 * "channels_last", the data are laid out X[n, h, w, c], Wt[r, s, c, f]
 * and Y[n, oh, ow, f] (the dims keep their meaning); with "groups" > 1
 * the filter holds c / groups input channels (Wt[f, c / groups, r, s]),
 * output channel f reading the inputs of its group f / (f / groups).
 * TRANSPOSE: X of
 * "ndim" dims "shape", C-ordered, into Y whose axis d is X's axis
 * "perm"[d], C-ordered.  SOFTMAX: X and Y of "ndim" dims "shape",
 * C-ordered, normalized along "axis" ("log": log_softmax).  POOL2D:
 * X[n, c, h, w] -> Y[n, c, oh, ow] ("dims" n c h w, r s the window's
 * extents, oh ow; "stride" and "padding" as for CONV2D; windows end
 * inside the padded input) computing "pool".  LAYER_NORM: X of "ndim"
 * dims "shape", C-ordered, normalized over its axes "axis".. (mean and
 * biased variance), "eps" added to the variance; with "affine", scaled
 * by Gamma and shifted by Beta, each of the normalized axes' shape;
 * inputs X (Gamma, Beta).  BATCH_NORM: X of "ndim" (2 to 5) dims
 * "shape", channels on axis 1, (X - Mean[c]) / sqrt(Var[c] + "eps") *
 * Gamma[c] + Beta[c]; inputs X, Mean, Var, Gamma, Beta.  Both output Y
 * of X's shape. */
typedef struct vendor_problem {
	vendor_kind kind;
	const char *op;
	tessel_dtype dtype, weight_dtype, out_dtype;
	char why[128];               /* VENDOR_NONE: what has no equivalent */
	int64_t batch, m, n, k;
	bool trans_a, trans_b, bias;
	bool channels_last;          /* CONV2D: NHWC data, HWIO weights */
	int64_t dims[9];             /* n c h w f r s oh ow */
	int64_t stride[2], padding[2], dilation[2];
	int64_t groups;              /* CONV2D */
	int ndim;                    /* TRANSPOSE, SOFTMAX */
	int64_t shape[TESSEL_MAX_DIMS];
	int perm[TESSEL_MAX_DIMS];   /* TRANSPOSE */
	int axis;                    /* SOFTMAX */
	bool log;
	vendor_pool pool;            /* POOL2D */
	double eps;                  /* LAYER_NORM, BATCH_NORM */
	bool affine;                 /* LAYER_NORM */
} vendor_problem;

enum { CONV_N, CONV_C, CONV_H, CONV_W, CONV_F, CONV_R, CONV_S, CONV_OH, CONV_OW };

/* One vendor implementation of a problem, ready to run on given data.
 * A CPU vendor sets "run"; a CUDA vendor sets "enqueue" instead, and
 * "finish" to wait for the device and copy the output back. */
typedef struct vendor_run {
	char name[160];              /* library, routine, what it chose */
	void (*run)(void *arg);      /* compute the output once */
	/* Enqueue one computation on the device's default stream without
	 * waiting; 0, or -1 with why in "error". */
	int (*enqueue)(void *arg);
	void (*finish)(void *arg);   /* after a run, make the C-ordered output
	                                current (not timed); or NULL; a failure
	                                goes into "error" */
	void (*release)(void *arg);
	void *arg;
	char error[512];             /* the last failure, or empty */
} vendor_run;

/* Where vendors run: CPU threads, or an open CUDA device. */
typedef struct vendor_env {
	int threads;
	rt_cuda_device *cuda;
} vendor_env;

typedef struct vendor {
	const char *name;            /* as --compare spells it */
	bool cuda;                   /* runs on a CUDA device, not the CPU */
	/* Return true when the library computes "p". */
	bool (*supports)(const vendor_problem *p);
	/* Load the library (once) to run in "env".  Return 0, or -1 with why
	 * in "err" of size "errlen". */
	int (*load)(const vendor_env *env, char *err, size_t errlen);
	/* Set "r" to compute "p" in "env" from the C-ordered inputs "in" (in
	 * the op's order, of p->dtype) into "out".  Return 0, or -1 with why
	 * in "err". */
	int (*prepare)(const vendor_env *env, const vendor_problem *p,
		const void *const *in, void *out, vendor_run *r, char *err,
		size_t errlen);
	/* Load the library (once) and resolve what it is called through, no
	 * device needed, and write what it is (library, version) into
	 * "what" of size "len".  Return 0, or -1 with why in "what". */
	int (*probe)(char *what, size_t len);
} vendor;

extern const vendor vendor_openblas;
extern const vendor vendor_onednn;
extern const vendor vendor_cublas;
extern const vendor vendor_cudnn;

/* Return the vendor "i" (0 first), or NULL past the last. */
const vendor *vendor_nth(int i);
/* Return the vendor named "name", or NULL. */
const vendor *vendor_find(const char *name);
typedef enum vendor_where { VENDORS_ALL, VENDORS_CPU, VENDORS_CUDA } vendor_where;

/* Write the names of the vendors that run "where", comma-separated (as
 * --compare takes them), into "buf". */
void vendor_names(vendor_where where, char *buf, size_t len);

/* Describe the bound "op", instantiated from the built-in op of its name
 * with the attributes in "set" (when "builtin"), as a vendor problem:
 * kind VENDOR_NONE, with the reason in p->why, when it is none that vendor
 * libraries compute. */
void vendor_problem_init(vendor_problem *p, const tessel_op *op,
	const cli_set *set, bool builtin);

#endif
