#include "codegen/opencl_kernel.h"

#include <stdlib.h>
#include <string.h>

#include "ir/te_impl.h"

static int device_error(tessel_ctx *ctx, const char *err)
{
	return te_error(ctx, TESSEL_ERR_IO, (tessel_loc){ NULL, 0, 0 }, "%s", err);
}

/* Allocate the parameters of "k": the arguments of "p", then the
 * workspaces of its plan. */
static int allocate(tessel_ctx *ctx, const loop_prog *p, cg_opencl_kernel *k)
{
	char err[1024];
	k->nargs = p->nargs;
	k->nparams = p->nargs + k->plan.nworkspaces;
	k->params = calloc((size_t)k->nparams + 1, sizeof(*k->params));
	k->bytes = calloc((size_t)k->nparams + 1, sizeof(*k->bytes));
	k->is_output = calloc((size_t)k->nargs + 1, sizeof(*k->is_output));
	for (int i = 0; i < k->nparams; i++) {
		if (i < p->nargs) {
			int64_t n = cg_buffer_elems(p->args[i]);
			k->bytes[i] = (size_t)(n > 0 ? n : 0) * tessel_dtype_size(p->args[i]->dtype);
			k->is_output[i] = p->args[i]->is_output;
		} else {
			k->bytes[i] = (size_t)k->plan.workspace_bytes[i - p->nargs];
		}
		k->params[i] = rt_cl_alloc(k->dev, k->bytes[i], err, sizeof(err));
		if (!k->params[i])
			return device_error(ctx, err);
	}
	return 0;
}

int cg_opencl_kernel_build(tessel_ctx *ctx, const loop_prog *p, rt_cl_device *dev,
	cg_opencl_kernel *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = dev;
	cg_target t = cg_target_opencl();
	char *source = cg_print_gpu(p, &t, &k->plan, ctx);
	if (!source) {
		cg_opencl_kernel_free(k);
		return -1;
	}
	char err[8192];
	k->program = rt_cl_build(dev, source, err, sizeof(err));
	free(source);
	if (!k->program) {
		cg_opencl_kernel_free(k);
		return device_error(ctx, err);
	}
	if (allocate(ctx, p, k)) {
		cg_opencl_kernel_free(k);
		return -1;
	}
	return 0;
}

int cg_opencl_code_key(tessel_ctx *ctx, const loop_prog *p, const char *compiler,
	char key[CG_CODE_KEY_LEN])
{
	cg_target t = cg_target_opencl();
	cg_gpu_plan plan = { 0 };
	char *source = cg_print_gpu(p, &t, &plan, ctx);
	cg_gpu_plan_free(&plan);
	if (!source)
		return -1;
	cg_opencl_source_key(source, compiler, key);
	free(source);
	return 0;
}

void cg_opencl_source_key(const char *source, const char *compiler,
	char key[CG_CODE_KEY_LEN])
{
	const void *data[] = { source, compiler };
	size_t len[] = { strlen(source), strlen(compiler) };
	cg_code_key_of_parts(2, data, len, key);
}

int cg_opencl_kernel_upload(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args)
{
	char err[1024];
	for (int i = 0; i < k->nargs; i++)
		if (!k->is_output[i] &&
		    rt_cl_write(k->params[i], args[i], k->bytes[i], err, sizeof(err)))
			return device_error(ctx, err);
	return 0;
}

int cg_opencl_kernel_launch(tessel_ctx *ctx, cg_opencl_kernel *k)
{
	char err[1024];
	for (int i = 0; i < k->plan.nkernels; i++) {
		const cg_launch *l = &k->plan.kernels[i];
		int64_t local = rt_cl_local_bytes(k->dev);
		if (local > 0 && l->shared_bytes > local) {
			snprintf(err, sizeof(err), "kernel %s needs %lld bytes of shared "
				"memory per block, more than the device's %lld "
				"(CL_DEVICE_LOCAL_MEM_SIZE)", l->name, (long long)l->shared_bytes,
				(long long)local);
			return device_error(ctx, err);
		}
		if (rt_cl_launch(k->program, l->name, k->nparams, k->params, l->grid,
				l->block, err, sizeof(err)))
			return device_error(ctx, err);
	}
	if (rt_cl_finish(k->dev, err, sizeof(err)))
		return device_error(ctx, err);
	return 0;
}

int cg_opencl_kernel_download(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args)
{
	char err[1024];
	for (int i = 0; i < k->nargs; i++)
		if (k->is_output[i] &&
		    rt_cl_read(k->params[i], args[i], k->bytes[i], err, sizeof(err)))
			return device_error(ctx, err);
	return 0;
}

int cg_opencl_kernel_run(tessel_ctx *ctx, cg_opencl_kernel *k, void *const *args)
{
	if (cg_opencl_kernel_upload(ctx, k, args) || cg_opencl_kernel_launch(ctx, k))
		return -1;
	return cg_opencl_kernel_download(ctx, k, args);
}

void cg_opencl_kernel_free(cg_opencl_kernel *k)
{
	for (int i = 0; k->params && i < k->nparams; i++)
		rt_cl_free(k->params[i]);
	free(k->params);
	free(k->bytes);
	free(k->is_output);
	rt_cl_program_free(k->program);
	cg_gpu_plan_free(&k->plan);
	memset(k, 0, sizeof(*k));
}
