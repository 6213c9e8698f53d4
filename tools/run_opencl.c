#include "tools/run_opencl.h"

#include <stdio.h>
#include <string.h>

#include "codegen/opencl_kernel.h"
#include "runtime/opencl.h"
#include "tools/run_gpu.h"

/* What the child needs and where it leaves its results (shared). */
typedef struct opencl_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	void *const *args;
	const rt_timer_opts *timer;
	cli_gpu_report rep;        /* shared; rep.timing an rt_timing */
} opencl_job;

typedef struct launch_call {
	tessel_ctx *ctx;
	cg_opencl_kernel *k;
	int status;
} launch_call;

static void launch(void *arg)
{
	launch_call *c = arg;
	c->status |= cg_opencl_kernel_launch(c->ctx, c->k);
}

/* Build, upload, run (and time), download: the child's work. */
static int run_child(void *arg)
{
	opencl_job *job = arg;
	char err[1024];
	rt_cl_device *dev = rt_cl_open(err, sizeof(err));
	if (!dev) {
		snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "%s", err);
		return 1;
	}
	snprintf(job->rep.device, CLI_GPU_DEVICE_LEN, "%s", rt_cl_device_name(dev));
	cg_opencl_kernel k;
	int r = cg_opencl_kernel_build(job->ctx, job->p, dev, &k);
	if (r == 0)
		r = cg_opencl_kernel_upload(job->ctx, &k, job->args);
	launch_call call = { job->ctx, &k, 0 };
	if (r == 0) {
		launch(&call);
		r = call.status;
	}
	if (r == 0 && job->rep.timing) {
		int timed = rt_time(launch, &call, job->timer, job->rep.timing);
		r = call.status;
		if (r == 0 && timed != RT_TIME_OK) {
			snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "timing ran past the time limit");
			r = 1;
		}
	}
	if (r == 0)
		r = cg_opencl_kernel_download(job->ctx, &k, job->args);
	if (r && !job->rep.error[0])
		snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "%s", tessel_ctx_error(job->ctx)->message);
	cg_opencl_kernel_free(&k);
	rt_cl_close(dev);
	return r != 0;
}

int cli_run_opencl(tessel_ctx *ctx, const loop_prog *p, void *const *args,
	const rt_timer_opts *timer, rt_timing *timing, double timeout_s,
	char *device, char *why, size_t len)
{
	opencl_job job = { ctx, p, args, timer, { 0 } };
	return cli_run_gpu_child(run_child, &job, &job.rep, sizeof(rt_timing),
		timer ? timing : NULL, timeout_s, device, why, len);
}
