#include "tools/run_cuda.h"

#include <stdio.h>
#include <string.h>

#include "codegen/cuda_kernel.h"
#include "runtime/cuda.h"
#include "tools/run_gpu.h"

/* What the child needs and where it leaves its results (shared). */
typedef struct cuda_job {
	tessel_ctx *ctx;
	const loop_prog *p;
	int sm;
	void *const *args;
	const rt_timer_opts *timer;
	cli_gpu_report rep;        /* shared; rep.timing an rt_cuda_timing */
} cuda_job;

/* Open the device into "*dev", refusing one of another architecture
 * than job->sm. */
static int open_device(cuda_job *job, rt_cuda_device **dev)
{
	char err[1024];
	*dev = rt_cuda_open(0, err, sizeof(err));
	if (!*dev) {
		snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "%s", err);
		return 1;
	}
	const rt_gpu_target *t = rt_cuda_target(*dev);
	snprintf(job->rep.device, CLI_GPU_DEVICE_LEN, "%.200s, sm_%d", t->name, t->sm);
	if (job->sm && job->sm != t->sm) {
		snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "the target is sm_%d but the "
			"device is %s (sm_%d); give --target cuda for the device's "
			"architecture", job->sm, t->name, t->sm);
		return 1;
	}
	return 0;
}

/* Time the launches of "k" on the device. */
static int time_launches(cuda_job *job, cg_cuda_kernel *k)
{
	int r = cg_cuda_kernel_time(job->ctx, k, job->timer, job->rep.timing);
	if (r == RT_TIME_OK)
		return 0;
	snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "%s", r == RT_TIME_TIMEOUT
		? "timing ran past the time limit" : tessel_ctx_error(job->ctx)->message);
	return 1;
}

/* Compile, upload, run (and time), download: the child's work. */
static int run_child(void *arg)
{
	cuda_job *job = arg;
	rt_cuda_device *dev = NULL;
	if (open_device(job, &dev)) {
		rt_cuda_close(dev);
		return 1;
	}
	cg_cuda_kernel k;
	int r = cg_cuda_kernel_build(job->ctx, job->p, dev, &k);
	if (r == 0)
		r = cg_cuda_kernel_upload(job->ctx, &k, job->args);
	if (r == 0)
		r = cg_cuda_kernel_launch(job->ctx, &k);
	if (r == 0 && job->rep.timing)
		r = time_launches(job, &k);
	if (r == 0)
		r = cg_cuda_kernel_download(job->ctx, &k, job->args);
	if (r && !job->rep.error[0])
		snprintf(job->rep.error, CLI_GPU_ERROR_LEN, "%s", tessel_ctx_error(job->ctx)->message);
	cg_cuda_kernel_free(&k);
	rt_cuda_close(dev);
	return r != 0;
}

int cli_run_cuda(tessel_ctx *ctx, const loop_prog *p, int sm, void *const *args,
	const rt_timer_opts *timer, rt_cuda_timing *timing,
	double timeout_s, char *device, char *why, size_t len)
{
	cuda_job job = { ctx, p, sm, args, timer, { 0 } };
	return cli_run_gpu_child(run_child, &job, &job.rep, sizeof(rt_cuda_timing),
		timer ? timing : NULL, timeout_s, device, why, len);
}
