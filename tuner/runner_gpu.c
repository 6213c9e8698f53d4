#include "tuner/runner_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/te.h"

typedef struct launch_call {
	const tune_gpu_kernel *g;
	int status;
} launch_call;

static void launch(void *arg)
{
	launch_call *c = arg;
	c->status |= c->g->launch(c->g->ctx, c->g->k);
}

/* Fill the output arguments of "g" on the device with all-ones bytes. */
static int poison_outputs(const tune_gpu_kernel *g, char *msg, size_t len)
{
	for (int i = 0; i < g->nargs; i++) {
		if (!g->is_output[i])
			continue;
		void *ones = malloc(g->bytes[i] ? g->bytes[i] : 1);
		if (!ones) {
			snprintf(msg, len, "out of memory");
			return -1;
		}
		memset(ones, 0xff, g->bytes[i]);
		int r = g->fill(g->k, i, ones, g->bytes[i], msg, len);
		free(ones);
		if (r)
			return -1;
	}
	return 0;
}

tune_gpu_status tune_gpu_time_built(const tune_gpu_kernel *g, const tune_gpu_run *r,
	rt_timing *timing, char *msg, size_t len)
{
	if (g->upload(g->ctx, g->k, r->args) || poison_outputs(g, msg, len)) {
		if (!msg[0])
			snprintf(msg, len, "%s", tessel_ctx_error(g->ctx)->message);
		return TUNE_GPU_RUNTIME;
	}
	launch_call call = { g, 0 };
	int timed = g->time ? g->time(g->ctx, g->k, r->timer, timing, msg, len)
		: rt_time(launch, &call, r->timer, timing);
	if (g->time && timed == RT_TIME_ERROR)
		return TUNE_GPU_RUNTIME;
	if (call.status || g->download(g->ctx, g->k, r->args)) {
		snprintf(msg, len, "%s", tessel_ctx_error(g->ctx)->message);
		return TUNE_GPU_RUNTIME;
	}
	if (timed == RT_TIME_TIMEOUT) {
		snprintf(msg, len, "%d of %d timed runs within %g s", timing->runs,
			r->timer->min_repeats, r->timer->timeout_s);
		return TUNE_GPU_TIMEOUT;
	}
	if (timed != RT_TIME_OK) {
		snprintf(msg, len, "the timer failed (out of memory?)");
		return TUNE_GPU_RUNTIME;
	}
	return TUNE_GPU_OK;
}
