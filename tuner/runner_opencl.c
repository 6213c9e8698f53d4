#include "tuner/runner_opencl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/opencl_kernel.h"

/* Return 0 when the launch "l" fits "gpu", else -1 with the reason. */
static int launch_fits(const cg_launch *l, const tune_gpu_target *gpu, char *msg, size_t len)
{
	int64_t threads = l->block[0] * l->block[1] * l->block[2];
	if (threads > gpu->max_threads) {
		snprintf(msg, len, "kernel %s: %lld threads per block, the device allows %lld",
			l->name, (long long)threads, (long long)gpu->max_threads);
		return -1;
	}
	if (l->shared_bytes > gpu->shared_bytes) {
		snprintf(msg, len, "kernel %s: %lld bytes of shared memory per block, the "
			"device has %lld", l->name, (long long)l->shared_bytes,
			(long long)gpu->shared_bytes);
		return -1;
	}
	return 0;
}

/* Return the most bytes of private arrays one thread holds at once in
 * "s": allocations other than shared ones nested in a loop (those
 * outside every loop are the program's global temporaries); "in_loop"
 * says whether "s" lies in one. */
static int64_t private_bytes(const loop_stmt *s, bool in_loop)
{
	if (!s)
		return 0;
	int64_t most = 0, own;
	switch (s->kind) {
	case LS_FOR: return private_bytes(s->u.for_.body, true);
	case LS_SEQ:
		for (int i = 0; i < s->u.seq.n; i++) {
			int64_t b = private_bytes(s->u.seq.items[i], in_loop);
			most = b > most ? b : most;
		}
		return most;
	case LS_IF: {
		int64_t a = private_bytes(s->u.if_.then_, in_loop);
		int64_t b = private_bytes(s->u.if_.else_, in_loop);
		return a > b ? a : b;
	}
	case LS_ALLOC:
		own = in_loop && s->u.alloc.buf->scope != LOOP_SHARED ?
			cg_buffer_elems(s->u.alloc.buf) *
			(int64_t)tessel_dtype_size(s->u.alloc.buf->dtype) : 0;
		return own + private_bytes(s->u.alloc.body, in_loop);
	default: return 0;
	}
}

int tune_opencl_check_limits(const loop_prog *p, const tune_gpu_target *gpu,
	char key[CG_CODE_KEY_LEN], char *msg, size_t len)
{
	int64_t priv = private_bytes(p->body, false);
	if (priv > TUNE_GPU_MAX_PRIVATE_BYTES) {
		snprintf(msg, len, "%lld bytes of private arrays per thread, more than %d",
			(long long)priv, TUNE_GPU_MAX_PRIVATE_BYTES);
		return -1;
	}
	tessel_ctx *ctx = tessel_ctx_new();
	cg_target t = cg_target_opencl();
	cg_gpu_plan plan = { 0 };
	char *source = ctx ? cg_print_gpu(p, &t, &plan, ctx) : NULL;
	int r = source ? 0 : -1;
	if (!source)
		snprintf(msg, len, "%s", ctx ? tessel_ctx_error(ctx)->message : "out of memory");
	for (int i = 0; r == 0 && i < plan.nkernels; i++)
		r = launch_fits(&plan.kernels[i], gpu, msg, len);
	if (r == 0 && key)
		cg_opencl_source_key(source, gpu->compiler, key);
	free(source);
	cg_gpu_plan_free(&plan);
	tessel_ctx_free(ctx);
	return r;
}

static int fill(void *k, int arg, const void *src, size_t bytes, char *msg, size_t len)
{
	return rt_cl_write(((cg_opencl_kernel *)k)->params[arg], src, bytes, msg, len);
}

static int upload(tessel_ctx *ctx, void *k, void *const *args)
{
	return cg_opencl_kernel_upload(ctx, k, args);
}

static int launch(tessel_ctx *ctx, void *k)
{
	return cg_opencl_kernel_launch(ctx, k);
}

static int download(tessel_ctx *ctx, void *k, void *const *args)
{
	return cg_opencl_kernel_download(ctx, k, args);
}

struct tune_opencl_session {
	tessel_ctx *ctx;
	rt_cl_device *dev;
};

tune_gpu_status tune_opencl_session_open(tune_opencl_session **out, char *msg, size_t len)
{
	msg[0] = '\0';
	*out = NULL;
	tune_opencl_session *s = calloc(1, sizeof(*s));
	if (!s || !(s->ctx = tessel_ctx_new())) {
		free(s);
		snprintf(msg, len, "out of memory");
		return TUNE_GPU_RUNTIME;
	}
	if (!(s->dev = rt_cl_open(msg, len))) {
		tune_opencl_session_close(s);
		return TUNE_GPU_NO_DEVICE;
	}
	*out = s;
	return TUNE_GPU_OK;
}

tune_gpu_status tune_opencl_session_time(tune_opencl_session *s, const tune_gpu_run *r,
	rt_timing *timing, char *msg, size_t len)
{
	msg[0] = '\0';
	tessel_ctx_clear_error(s->ctx);
	cg_opencl_kernel k;
	tune_gpu_status st = TUNE_GPU_BUILD;
	if (cg_opencl_kernel_build(s->ctx, r->p, s->dev, &k)) {
		snprintf(msg, len, "%s", tessel_ctx_error(s->ctx)->message);
	} else {
		tune_gpu_kernel g = { s->ctx, &k, k.nargs, k.bytes, k.is_output, fill, upload,
			launch, download, NULL };
		st = tune_gpu_time_built(&g, r, timing, msg, len);
	}
	cg_opencl_kernel_free(&k);
	return st;
}

void tune_opencl_session_close(tune_opencl_session *s)
{
	if (!s)
		return;
	rt_cl_close(s->dev);
	tessel_ctx_free(s->ctx);
	free(s);
}
