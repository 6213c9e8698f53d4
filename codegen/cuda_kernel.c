#include "codegen/cuda_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"

static int device_error(tessel_ctx *ctx, const char *err)
{
	return te_error(ctx, TESSEL_ERR_IO, (tessel_loc){ NULL, 0, 0 }, "%s", err);
}

int cg_cuda_compile(tessel_ctx *ctx, const loop_prog *p, int sm,
	cg_cuda_program *out)
{
	memset(out, 0, sizeof(*out));
	cg_target t = cg_target_cuda(sm);
	out->source = cg_print_gpu(p, &t, &out->plan, ctx);
	if (!out->source)
		return -1;
	char err[8192], file[200];
	snprintf(file, sizeof(file), "%s.cu", out->plan.nkernels ?
		out->plan.kernels[0].name : "kernel");
	if (rt_nvrtc_compile(out->source, file, sm, &out->cubin, err, sizeof(err)))
		return device_error(ctx, err);
	return 0;
}

void cg_cuda_program_free(cg_cuda_program *c)
{
	free(c->source);
	cg_gpu_plan_free(&c->plan);
	rt_cubin_free(&c->cubin);
	memset(c, 0, sizeof(*c));
}

void cg_cuda_program_key(const cg_cuda_program *c, char key[CG_CODE_KEY_LEN])
{
	const void *data[] = { c->source ? c->source : "", c->cubin.image };
	size_t len[] = { c->source ? strlen(c->source) : 0,
		c->cubin.image ? c->cubin.size : 0 };
	cg_code_key_of_parts(2, data, len, key);
}

int cg_cuda_check_launch(tessel_ctx *ctx, const cg_cuda_program *c,
	const rt_gpu_target *t)
{
	char why[512];
	for (int i = 0; i < c->plan.nkernels; i++) {
		const cg_launch *l = &c->plan.kernels[i];
		const rt_kernel_usage *use = rt_cubin_kernel(&c->cubin, l->name);
		if (!use)
			return te_error(ctx, TESSEL_ERR_INTERNAL, (tessel_loc){ NULL, 0, 0 },
				"kernel '%s': neither the cubin nor ptxas's report gives its "
				"resources", l->name);
		if (rt_gpu_launch_check(t, use, l->grid, l->block, false, why, sizeof(why)))
			return te_error(ctx, TESSEL_ERR_LIMIT, (tessel_loc){ NULL, 0, 0 },
				"kernel '%s' cannot launch on %s: %s", l->name, t->name, why);
	}
	return 0;
}

/* Allocate the parameters of "k": the arguments of "p", then the
 * workspaces of its plan. */
static int allocate(tessel_ctx *ctx, const loop_prog *p, cg_cuda_kernel *k)
{
	char err[1024];
	k->nargs = p->nargs;
	k->nparams = p->nargs + k->program.plan.nworkspaces;
	k->params = calloc((size_t)k->nparams + 1, sizeof(*k->params));
	k->bytes = calloc((size_t)k->nparams + 1, sizeof(*k->bytes));
	k->is_output = calloc((size_t)k->nargs + 1, sizeof(*k->is_output));
	for (int i = 0; i < k->nparams; i++) {
		if (i < p->nargs) {
			int64_t n = cg_buffer_elems(p->args[i]);
			k->bytes[i] = (size_t)(n > 0 ? n : 0) * tessel_dtype_size(p->args[i]->dtype);
			k->is_output[i] = p->args[i]->is_output;
		} else {
			k->bytes[i] = (size_t)k->program.plan.workspace_bytes[i - p->nargs];
		}
		k->params[i] = rt_cuda_alloc(k->dev, k->bytes[i], err, sizeof(err));
		if (!k->params[i])
			return device_error(ctx, err);
	}
	return 0;
}

/* Check the launches of the compiled k->program on the device of "k",
 * load it and allocate the parameters of "p"; on failure free "k". */
static int load(tessel_ctx *ctx, const loop_prog *p, cg_cuda_kernel *k)
{
	char err[1024];
	int r = cg_cuda_check_launch(ctx, &k->program, rt_cuda_target(k->dev));
	if (r == 0) {
		k->module = rt_cuda_load(k->dev, k->program.cubin.image, err, sizeof(err));
		if (!k->module)
			r = device_error(ctx, err);
	}
	if (r == 0)
		r = allocate(ctx, p, k);
	if (r)
		cg_cuda_kernel_free(k);
	return r;
}

int cg_cuda_kernel_build(tessel_ctx *ctx, const loop_prog *p, rt_cuda_device *dev,
	cg_cuda_kernel *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = dev;
	if (cg_cuda_compile(ctx, p, rt_cuda_target(dev)->sm, &k->program)) {
		cg_cuda_kernel_free(k);
		return -1;
	}
	return load(ctx, p, k);
}

int cg_cuda_kernel_load(tessel_ctx *ctx, const cg_cuda_program *c, const loop_prog *p,
	rt_cuda_device *dev, cg_cuda_kernel *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = dev;
	k->program = *c;
	k->borrowed = true;
	const rt_gpu_target *t = rt_cuda_target(dev);
	if (c->cubin.sm != t->sm) {
		cg_cuda_kernel_free(k);
		return device_error(ctx, "the cubin is for another architecture than the "
			"device's");
	}
	return load(ctx, p, k);
}

int cg_cuda_kernel_upload(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args)
{
	char err[1024];
	for (int i = 0; i < k->nargs; i++)
		if (!k->is_output[i] &&
		    rt_cuda_write(k->params[i], args[i], k->bytes[i], err, sizeof(err)))
			return device_error(ctx, err);
	return 0;
}

int cg_cuda_kernel_enqueue(tessel_ctx *ctx, cg_cuda_kernel *k)
{
	char err[1024];
	for (int i = 0; i < k->program.plan.nkernels; i++) {
		const cg_launch *l = &k->program.plan.kernels[i];
		if (rt_cuda_launch(k->module, l->name, k->nparams, k->params, l->grid,
				l->block, err, sizeof(err)))
			return device_error(ctx, err);
	}
	return 0;
}

typedef struct enqueue_call {
	tessel_ctx *ctx;
	cg_cuda_kernel *k;
} enqueue_call;

static int enqueue(void *arg)
{
	enqueue_call *c = arg;
	return cg_cuda_kernel_enqueue(c->ctx, c->k);
}

int cg_cuda_kernel_time(tessel_ctx *ctx, cg_cuda_kernel *k, const rt_timer_opts *o,
	rt_cuda_timing *t)
{
	char err[1024] = "";
	enqueue_call call = { ctx, k };
	int r = rt_cuda_time_runs(k->dev, enqueue, &call, o, t, err, sizeof(err));
	if (r == RT_TIME_ERROR && err[0])
		device_error(ctx, err);
	return r;
}

int cg_cuda_kernel_launch(tessel_ctx *ctx, cg_cuda_kernel *k)
{
	char err[1024];
	if (cg_cuda_kernel_enqueue(ctx, k))
		return -1;
	if (rt_cuda_sync(k->dev, err, sizeof(err)))
		return device_error(ctx, err);
	return 0;
}

int cg_cuda_kernel_download(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args)
{
	char err[1024];
	for (int i = 0; i < k->nargs; i++)
		if (k->is_output[i] &&
		    rt_cuda_read(k->params[i], args[i], k->bytes[i], err, sizeof(err)))
			return device_error(ctx, err);
	return 0;
}

int cg_cuda_kernel_run(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args)
{
	if (cg_cuda_kernel_upload(ctx, k, args) || cg_cuda_kernel_launch(ctx, k))
		return -1;
	return cg_cuda_kernel_download(ctx, k, args);
}

void cg_cuda_kernel_free(cg_cuda_kernel *k)
{
	for (int i = 0; k->params && i < k->nparams; i++)
		rt_cuda_free(k->params[i]);
	free(k->params);
	free(k->bytes);
	free(k->is_output);
	rt_cuda_module_free(k->module);
	if (!k->borrowed)
		cg_cuda_program_free(&k->program);
	memset(k, 0, sizeof(*k));
}
