/* A loop program made into CUDA kernels: printed as CUDA C and compiled
 * by NVRTC into a cubin for an architecture, with what each kernel uses
 * and whether its launch fits a GPU (no device needed); and, on a device,
 * loaded, its global temporaries allocated, run with the launches of its
 * plan (codegen/cuda_kernel.c). */
#ifndef TESSEL_CG_CUDA_KERNEL_H
#define TESSEL_CG_CUDA_KERNEL_H

#include "codegen/c_printer.h"
#include "codegen/compile.h"
#include "ir/loop.h"
#include "runtime/cuda.h"
#include "runtime/cuda_timing.h"
#include "runtime/gpu_target.h"
#include "runtime/nvrtc.h"

/* The program compiled: its source, launches and cubin. */
typedef struct cg_cuda_program {
	char *source;
	cg_gpu_plan plan;
	rt_cubin cubin;
} cg_cuda_program;

/* Print "p" as CUDA C and compile it for sm_"sm" into "out" (freed with
 * cg_cuda_program_free, also after a failure).  Return 0, or -1 with the
 * error in "ctx": the printer's, NVRTC's missing library, or its
 * compile log. */
int cg_cuda_compile(tessel_ctx *ctx, const loop_prog *p, int sm,
	cg_cuda_program *out);
void cg_cuda_program_free(cg_cuda_program *c);

/* Write into "key" the code key of the compiled "c": its source and its
 * cubin (what NVRTC made of it). */
void cg_cuda_program_key(const cg_cuda_program *c, char key[CG_CODE_KEY_LEN]);

/* Return 0 when every kernel of "c" can launch on "t" as its plan says
 * (registers, shared memory, block and grid sizes: rt_gpu_launch_check,
 * without opting in to more shared memory), else -1 with the first that
 * cannot and why in "ctx" (TESSEL_ERR_LIMIT).  The tuner rejects
 * candidates with it. */
int cg_cuda_check_launch(tessel_ctx *ctx, const cg_cuda_program *c,
	const rt_gpu_target *t);

typedef struct cg_cuda_kernel {
	rt_cuda_device *dev;        /* not owned */
	cg_cuda_program program;
	bool borrowed;              /* "program" is the caller's
	                             * (cg_cuda_kernel_load) */
	rt_cuda_module *module;
	int nargs;                  /* the program's arguments */
	int nparams;                /* arguments, then workspaces */
	rt_cuda_buffer **params;
	size_t *bytes;              /* of each parameter */
	bool *is_output;            /* of each argument */
} cg_cuda_kernel;

/* Compile "p" for the architecture of "dev", check its launches against
 * the device's limits, load it and allocate its arguments and temporaries
 * on the device into "k".  Return 0, or -1 with the error in "ctx"; "k"
 * is then empty. */
int cg_cuda_kernel_build(tessel_ctx *ctx, const loop_prog *p, rt_cuda_device *dev,
	cg_cuda_kernel *k);
/* Do what cg_cuda_kernel_build does with the program "c" that
 * cg_cuda_compile made of "p" (borrowed: it must outlive "k"), compiling
 * nothing: refused when "c" is for another architecture than "dev". */
int cg_cuda_kernel_load(tessel_ctx *ctx, const cg_cuda_program *c, const loop_prog *p,
	rt_cuda_device *dev, cg_cuda_kernel *k);
/* Copy the inputs among "args" (one host pointer per argument of the
 * program, inputs then outputs) to the device. */
int cg_cuda_kernel_upload(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args);
/* Launch every kernel in order without waiting. */
int cg_cuda_kernel_enqueue(tessel_ctx *ctx, cg_cuda_kernel *k);
/* Time the launches of "k" on its device with the options "o" into "t"
 * (rt_cuda_time_runs: CUPTI's kernel durations, CUDA events beside).
 * Return RT_TIME_OK, RT_TIME_TIMEOUT, or RT_TIME_ERROR with the error in
 * "ctx". */
int cg_cuda_kernel_time(tessel_ctx *ctx, cg_cuda_kernel *k, const rt_timer_opts *o,
	rt_cuda_timing *t);
/* Launch every kernel in order and wait for the last. */
int cg_cuda_kernel_launch(tessel_ctx *ctx, cg_cuda_kernel *k);
/* Copy the outputs back into their host pointers among "args". */
int cg_cuda_kernel_download(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args);
/* Upload, launch and download. */
int cg_cuda_kernel_run(tessel_ctx *ctx, cg_cuda_kernel *k, void *const *args);
void cg_cuda_kernel_free(cg_cuda_kernel *k);

#endif
