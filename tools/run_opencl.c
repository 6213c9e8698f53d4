#include "tools/run_opencl.h"

#include <stdio.h>
#include <string.h>

#include "codegen/opencl_kernel.h"
#include "runtime/isolate.h"
#include "runtime/opencl.h"

/* What the child needs and where it leaves its results (shared). */
typedef struct opencl_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	void *const *args;
	const rt_timer_opts *timer;
	rt_timing *timing;         /* shared, or NULL */
	char *device;              /* shared, 256 bytes */
	char *error;               /* shared, 1024 bytes */
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
		snprintf(job->error, 1024, "%s", err);
		return 1;
	}
	snprintf(job->device, 256, "%s", rt_cl_device_name(dev));
	cg_opencl_kernel k;
	int r = cg_opencl_kernel_build(job->ctx, job->p, dev, &k);
	if (r == 0)
		r = cg_opencl_kernel_upload(job->ctx, &k, job->args);
	launch_call call = { job->ctx, &k, 0 };
	if (r == 0) {
		launch(&call);
		r = call.status;
	}
	if (r == 0 && job->timing) {
		int timed = rt_time(launch, &call, job->timer, job->timing);
		r = call.status;
		if (r == 0 && timed != RT_TIME_OK) {
			snprintf(job->error, 1024, "timing ran past the time limit");
			r = 1;
		}
	}
	if (r == 0)
		r = cg_opencl_kernel_download(job->ctx, &k, job->args);
	if (r && !job->error[0])
		snprintf(job->error, 1024, "%s", tessel_ctx_error(job->ctx)->message);
	cg_opencl_kernel_free(&k);
	rt_cl_close(dev);
	return r != 0;
}

int cli_run_opencl(tessel_ctx *ctx, const loop_prog *p, void *const *args,
	const rt_timer_opts *timer, rt_timing *timing, double timeout_s,
	char *device, char *why, size_t len)
{
	opencl_job job = { ctx, p, args, timer, NULL, rt_shared_alloc(256),
		rt_shared_alloc(1024) };
	if (timer && timing)
		job.timing = rt_shared_alloc(sizeof(rt_timing));
	char status[512];
	rt_run_status st = rt_run_isolated(run_child, &job, timeout_s, status,
		sizeof(status));
	if (st != RT_RUN_OK)
		snprintf(why, len, "the kernel %s%s%.900s", status, job.error[0] ? ": " : "",
			job.error);
	if (job.timing) {
		*timing = *job.timing;
		rt_shared_free(job.timing, sizeof(rt_timing));
	}
	if (device)
		snprintf(device, 256, "%s", job.device);
	rt_shared_free(job.device, 256);
	rt_shared_free(job.error, 1024);
	return st != RT_RUN_OK;
}
