#include "tools/bench_cuda.h"

#include <stdio.h>
#include <stdlib.h>

#include "codegen/cuda_kernel.h"
#include "ir/te_impl.h"

typedef struct cuda_job {
	tessel_ctx *ctx;
	vendor_run *r;
	rt_cuda_device *dev;
	cg_cuda_kernel k;
	void *args[128];
} cuda_job;

static int job_enqueue(void *arg)
{
	cuda_job *j = arg;
	if (cg_cuda_kernel_enqueue(j->ctx, &j->k) == 0)
		return 0;
	snprintf(j->r->error, sizeof(j->r->error), "%s", tessel_ctx_error(j->ctx)->message);
	return -1;
}

static void job_finish(void *arg)
{
	cuda_job *j = arg;
	if (rt_cuda_sync(j->dev, j->r->error, sizeof(j->r->error)))
		return;
	if (cg_cuda_kernel_download(j->ctx, &j->k, j->args))
		snprintf(j->r->error, sizeof(j->r->error), "%s",
			tessel_ctx_error(j->ctx)->message);
}

static void job_release(void *arg)
{
	cuda_job *j = arg;
	cg_cuda_kernel_free(&j->k);
	free(j);
}

int bench_cuda_prepare(tessel_ctx *ctx, const loop_prog *p, rt_cuda_device *dev,
	tessel_tensor *const *in, int nin, tessel_tensor *const *out, int nout,
	vendor_run *r)
{
	if (nin + nout > 128)
		return te_error(ctx, TESSEL_ERR_LIMIT, (tessel_loc){ NULL, 0, 0 },
			"more than 128 inputs and outputs");
	cuda_job *j = calloc(1, sizeof(*j));
	if (!j)
		return te_error(ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ NULL, 0, 0 }, "out of memory");
	*j = (cuda_job){ .ctx = ctx, .r = r, .dev = dev };
	for (int i = 0; i < nin; i++)
		j->args[i] = in[i]->data;
	for (int i = 0; i < nout; i++)
		j->args[nin + i] = out[i]->data;
	if (cg_cuda_kernel_build(ctx, p, dev, &j->k)) {
		free(j);
		return -1;
	}
	if (cg_cuda_kernel_upload(ctx, &j->k, j->args)) {
		job_release(j);
		return -1;
	}
	const rt_gpu_target *t = rt_cuda_target(dev);
	snprintf(r->name, sizeof(r->name), "tessel (sm_%d, %d kernel%s)", t->sm,
		j->k.program.plan.nkernels, j->k.program.plan.nkernels == 1 ? "" : "s");
	r->run = NULL;
	r->enqueue = job_enqueue;
	r->finish = job_finish;
	r->release = job_release;
	r->arg = j;
	return 0;
}
