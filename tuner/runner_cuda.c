#include "tuner/runner_cuda.h"

#include <stdio.h>

#include "codegen/cuda_kernel.h"
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
