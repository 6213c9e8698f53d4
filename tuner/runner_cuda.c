#include "tuner/runner_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda_kernel.h"
#include "runtime/cuda.h"
#include "runtime/gpu_target.h"

tune_cuda_status tune_cuda_prepare(tessel_ctx *ctx, const loop_prog *p,
	const tune_gpu_target *gpu, cg_cuda_program *c, char *msg, size_t len)
{
	rt_gpu_target arch;
	memset(c, 0, sizeof(*c));
	if (rt_gpu_target_for_sm(gpu->sm, &arch, msg, len))
		return TUNE_CUDA_BUILD;
	tune_cuda_status st = TUNE_CUDA_BUILD;
	if (cg_cuda_compile(ctx, p, gpu->sm, c) == 0)
		st = cg_cuda_check_launch(ctx, c, &arch) == 0 ? TUNE_CUDA_LAUNCHABLE :
		     tessel_ctx_error(ctx)->kind == TESSEL_ERR_LIMIT ? TUNE_CUDA_REJECTED :
		     TUNE_CUDA_BUILD;
	if (st != TUNE_CUDA_LAUNCHABLE) {
		snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
		cg_cuda_program_free(c);
	}
	return st;
}

tune_cuda_status tune_cuda_check(tessel_ctx *ctx, const loop_prog *p,
	const tune_gpu_target *gpu, char *msg, size_t len)
{
	cg_cuda_program c;
	tune_cuda_status st = tune_cuda_prepare(ctx, p, gpu, &c, msg, len);
	cg_cuda_program_free(&c);
	return st;
}

static int fill(void *k, int arg, const void *src, size_t bytes, char *msg, size_t len)
{
	return rt_cuda_write(((cg_cuda_kernel *)k)->params[arg], src, bytes, msg, len);
}

static int upload(tessel_ctx *ctx, void *k, void *const *args)
{
	return cg_cuda_kernel_upload(ctx, k, args);
}

static int launch(tessel_ctx *ctx, void *k)
{
	return cg_cuda_kernel_launch(ctx, k);
}

static int download(tessel_ctx *ctx, void *k, void *const *args)
{
	return cg_cuda_kernel_download(ctx, k, args);
}

/* The kernels' own durations (CUPTI; CUDA events where CUPTI cannot be
 * loaded), the L2 evicted before every run: a candidate is measured on
 * data from device memory, as it meets its inputs in a model. */
static int time_on_device(tessel_ctx *ctx, void *k, const rt_timer_opts *o,
	rt_timing *timing, char *msg, size_t len)
{
	rt_cuda_timing t;
	rt_timer_opts flushed = *o;
	flushed.flush_cache = true;
	int r = cg_cuda_kernel_time(ctx, k, &flushed, &t);
	if (r == RT_TIME_ERROR)
		snprintf(msg, len, "%s", tessel_ctx_error(ctx)->message);
	*timing = *rt_cuda_timing_best(&t);
	return r;
}

struct tune_cuda_session {
	tessel_ctx *ctx;
	rt_cuda_device *dev;
};

tune_gpu_status tune_cuda_session_open(int sm, tune_cuda_session **out, char *msg,
	size_t len)
{
	msg[0] = '\0';
	*out = NULL;
	tune_cuda_session *s = calloc(1, sizeof(*s));
	if (!s || !(s->ctx = tessel_ctx_new())) {
		free(s);
		snprintf(msg, len, "out of memory");
		return TUNE_GPU_RUNTIME;
	}
	s->dev = rt_cuda_open(0, msg, len);
	const rt_gpu_target *t = s->dev ? rt_cuda_target(s->dev) : NULL;
	if (t && sm && t->sm != sm)
		snprintf(msg, len, "the task is for sm_%d but the device is %s (sm_%d)", sm,
			t->name, t->sm);
	else if (t) {
		*out = s;
		return TUNE_GPU_OK;
	}
	tune_cuda_session_close(s);
	return TUNE_GPU_NO_DEVICE;
}

tune_gpu_status tune_cuda_session_time(tune_cuda_session *s, const tune_gpu_run *r,
	const cg_cuda_program *compiled, rt_timing *timing, char *msg, size_t len)
{
	msg[0] = '\0';
	tessel_ctx_clear_error(s->ctx);
	cg_cuda_kernel k;
	tune_gpu_status st = TUNE_GPU_BUILD;
	if ((compiled && compiled->cubin.image
		? cg_cuda_kernel_load(s->ctx, compiled, r->p, s->dev, &k)
		: cg_cuda_kernel_build(s->ctx, r->p, s->dev, &k))) {
		snprintf(msg, len, "%s", tessel_ctx_error(s->ctx)->message);
	} else {
		tune_gpu_kernel g = { s->ctx, &k, k.nargs, k.bytes, k.is_output, fill,
			upload, launch, download, time_on_device };
		st = tune_gpu_time_built(&g, r, timing, msg, len);
	}
	cg_cuda_kernel_free(&k);
	return st;
}

void tune_cuda_session_close(tune_cuda_session *s)
{
	if (!s)
		return;
	rt_cuda_close(s->dev);
	tessel_ctx_free(s->ctx);
	free(s);
}
