#include "tuner/runner_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_kernel.h"
#include "runtime/cuda.h"
#include "runtime/gpu_target.h"

tune_cuda_status tune_cuda_check(tessel_ctx *ctx, const loop_prog *p,
	const tune_gpu_target *gpu, char *msg, size_t len)
{
	rt_gpu_target arch;
	if (rt_gpu_target_for_sm(gpu->sm, &arch, msg, len))
		return TUNE_CUDA_BUILD;
	cg_cuda_program c;
	tune_cuda_status st = TUNE_CUDA_BUILD;
	if (cg_cuda_compile(ctx, p, gpu->sm, &c) == 0)
		st = cg_cuda_check_launch(ctx, &c, &arch) == 0 ? TUNE_CUDA_LAUNCHABLE :
		     tessel_ctx_error(ctx)->kind == TESSEL_ERR_LIMIT ? TUNE_CUDA_REJECTED :
		     TUNE_CUDA_BUILD;
	if (st != TUNE_CUDA_LAUNCHABLE)
		snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
	cg_cuda_program_free(&c);
	return st;
}

typedef struct launch_call {
	tessel_ctx *ctx;
	cg_cuda_kernel *k;
	int status;
} launch_call;

static void launch(void *arg)
{
	launch_call *c = arg;
	c->status |= cg_cuda_kernel_launch(c->ctx, c->k);
}

/* Fill the output arguments of "k" on the device with all-ones bytes. */
static int poison_outputs(cg_cuda_kernel *k, char *msg, size_t len)
{
	for (int i = 0; i < k->nargs; i++) {
		if (!k->is_output[i])
			continue;
		void *ones = malloc(k->bytes[i] ? k->bytes[i] : 1);
		if (!ones) {
			snprintf(msg, len, "out of memory");
			return -1;
		}
		memset(ones, 0xff, k->bytes[i]);
		int r = rt_cuda_write(k->params[i], ones, k->bytes[i], msg, len);
		free(ones);
		if (r)
			return -1;
	}
	return 0;
}

/* Time the built "k" with "r"'s timer and download its outputs. */
static tune_cuda_run_status time_built(const tune_cuda_run *r, tessel_ctx *ctx,
	cg_cuda_kernel *k, rt_timing *timing, char *msg, size_t len)
{
	if (cg_cuda_kernel_upload(ctx, k, r->args) || poison_outputs(k, msg, len)) {
		if (!msg[0])
			snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
		return TUNE_CUDA_RUN_RUNTIME;
	}
	launch_call call = { ctx, k, 0 };
	int timed = rt_time(launch, &call, r->timer, timing);
	if (call.status || cg_cuda_kernel_download(ctx, k, r->args)) {
		snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
		return TUNE_CUDA_RUN_RUNTIME;
	}
	if (timed == RT_TIME_TIMEOUT) {
		snprintf(msg, len, "%d of %d timed runs within %g s", timing->runs,
			r->timer->min_repeats, r->timer->timeout_s);
		return TUNE_CUDA_RUN_TIMEOUT;
	}
	if (timed != RT_TIME_OK) {
		snprintf(msg, len, "the timer failed (out of memory?)");
		return TUNE_CUDA_RUN_RUNTIME;
	}
	return TUNE_CUDA_RUN_OK;
}

tune_cuda_run_status tune_cuda_time(const tune_cuda_run *r, rt_timing *timing,
	char *msg, size_t len)
{
	msg[0] = '\0';
	tessel_ctx *ctx = tessel_ctx_new();
	rt_cuda_device *dev = ctx ? rt_cuda_open(0, msg, len) : NULL;
	if (!dev) {
		tessel_ctx_free(ctx);
		return TUNE_CUDA_RUN_BUILD;
	}
	const rt_gpu_target *t = rt_cuda_target(dev);
	tune_cuda_run_status st = TUNE_CUDA_RUN_BUILD;
	if (r->sm && t->sm != r->sm) {
		snprintf(msg, len, "the task is for sm_%d but the device is %s (sm_%d)",
			r->sm, t->name, t->sm);
	} else {
		cg_cuda_kernel k;
		if (cg_cuda_kernel_build(ctx, r->p, dev, &k))
			snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
		else
			st = time_built(r, ctx, &k, timing, msg, len);
		cg_cuda_kernel_free(&k);
	}
	rt_cuda_close(dev);
	tessel_ctx_free(ctx);
	return st;
}
