/* tessel's own kernel on a CUDA device for `tessel bench`, set up as the
 * vendors' implementations are (tools/vendor.h): built and loaded, its
 * inputs uploaded once, then enqueued on the default stream for each run
 * and its outputs copied back by "finish" (tools/bench_cuda.c). */
#ifndef TESSEL_TOOLS_BENCH_CUDA_H
#define TESSEL_TOOLS_BENCH_CUDA_H

#include "ir/loop.h"
#include "runtime/cuda.h"
#include "tools/vendor.h"

/* Compile "p" for "dev" (NVRTC, checked against its limits), upload the
 * "nin" inputs "in", and set "r" to run it with its outputs going to the
 * "nout" tensors "out" (r->release frees it all).  Return 0, or -1 with
 * the error in "ctx". */
int bench_cuda_prepare(tessel_ctx *ctx, const loop_prog *p, rt_cuda_device *dev,
	tessel_tensor *const *in, int nin, tessel_tensor *const *out, int nout,
	vendor_run *r);

#endif
